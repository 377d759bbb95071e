use std::path::Path;

use super::*;

fn ctx() -> PathContext<'static> {
    PathContext {
        home: Path::new("/home/u"),
        base: None,
    }
}

#[test]
fn an_entry_names_one_directory_and_plain_names_in_it() {
    let state = StateDir::new(
        "~/.claude",
        vec!["projects".into(), "history.jsonl".into()],
        &ctx(),
    )
    .unwrap();
    assert_eq!(state.dir, Path::new("/home/u/.claude"));
    assert!(state.is_state(std::ffi::OsStr::new("projects")));
    assert!(!state.is_state(std::ffi::OsStr::new("settings.json")));
}

#[test]
fn a_glob_the_root_or_a_name_that_is_not_one_entry_is_refused() {
    assert!(StateDir::new("~/.claude/*", vec![], &ctx()).is_err());
    assert!(StateDir::new("/", vec![], &ctx()).is_err());
    for bad in ["", ".", "..", "projects/x", "*.jsonl", "hist[o]ry"] {
        let err = StateDir::new("~/.claude", vec![bad.into()], &ctx()).unwrap_err();
        assert!(err.contains("in writable"), "{bad:?}: {err}");
    }
}
