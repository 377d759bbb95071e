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
        vec!["projects/*/memory".into()],
        vec!["session-env".into()],
        &ctx(),
    )
    .unwrap();
    assert_eq!(state.dir, Path::new("/home/u/.claude"));
    assert!(state.is_state(std::ffi::OsStr::new("projects")));
    assert!(!state.is_state(std::ffi::OsStr::new("settings.json")));
    assert!(state.is_state(std::ffi::OsStr::new("session-env")));
}

#[test]
fn a_glob_the_root_or_a_name_that_is_not_one_entry_is_refused() {
    assert!(StateDir::new("~/.claude/*", vec![], vec![], vec![], &ctx()).is_err());
    assert!(StateDir::new("/", vec![], vec![], vec![], &ctx()).is_err());
    for bad in ["", ".", "..", "projects/x", "*.jsonl", "hist[o]ry"] {
        let err = StateDir::new("~/.claude", vec![bad.into()], vec![], vec![], &ctx()).unwrap_err();
        assert!(err.contains("in writable"), "{bad:?}: {err}");
    }
    for bad in [
        "",
        "/abs",
        "projects/../x",
        "a//b",
        "./x",
        "projects/**/memory",
    ] {
        let err = StateDir::new("~/.claude", vec![], vec![bad.into()], vec![], &ctx()).unwrap_err();
        assert!(err.contains("in protect"), "{bad:?}: {err}");
    }
}

fn claude_config() -> StateFile {
    StateFile::new(
        "~/.claude.json",
        vec![
            "mcpServers".into(),
            "projects.*.mcpServers".into(),
            "projects.*.hasTrustDialogAccepted".into(),
        ],
        &ctx(),
    )
    .unwrap()
}

#[test]
fn a_state_file_change_is_found_at_each_unchanged_path() {
    let entry = claude_config();
    assert_eq!(entry.path, Path::new("/home/u/.claude.json"));
    let old = serde_json::json!({
        "numStartups": 1,
        "mcpServers": {"a": {"command": "x"}},
        "projects": {"/p": {"hasTrustDialogAccepted": false, "lastCost": 1}},
    });
    // false where there was nothing: a value only on a `!` path.
    let entry_with_switch = StateFile::new(
        "~/.claude.json",
        vec![
            "autoUpdates!".into(),
            "remote".into(),
            "projects.*.hasTrustDialogAccepted".into(),
        ],
        &ctx(),
    )
    .unwrap();
    let switched = serde_json::json!({"autoUpdates": false, "remote": false});
    assert_eq!(
        entry_with_switch.changes(&old, &switched),
        vec!["autoUpdates".to_string()]
    );
    let new_entry = serde_json::json!({"projects": {
        "/p": {"hasTrustDialogAccepted": false},
        "/q": {"hasTrustDialogAccepted": false},
    }});
    assert!(entry_with_switch.changes(&old, &new_entry).is_empty());
    // Counters, costs and a new project's empty entries: no change.
    let fine = serde_json::json!({
        "numStartups": 2,
        "mcpServers": {"a": {"command": "x"}},
        "projects": {
            "/p": {"lastCost": 2},
            "/q": {"mcpServers": {}, "hasTrustDialogAccepted": false, "allowedTools": []},
        },
    });
    assert!(entry.changes(&old, &fine).is_empty());
    let bad = serde_json::json!({
        "mcpServers": {"a": {"command": "y"}},
        "projects": {
            "/p": {"hasTrustDialogAccepted": true},
            "/q": {"mcpServers": {"evil": {"command": "sh"}}},
        },
    });
    assert_eq!(
        entry.changes(&old, &bad),
        vec![
            "mcpServers".to_string(),
            "projects.\"/q\".mcpServers".to_string(),
            "projects.\"/p\".hasTrustDialogAccepted".to_string(),
        ]
    );
    // A value removed counts too; a table replaced by another kind hides
    // nothing that was there (its old values were all empty).
    let removed = serde_json::json!({"projects": "x"});
    assert_eq!(
        entry.changes(&old, &removed),
        vec!["mcpServers".to_string()]
    );
}

#[test]
fn a_state_file_entry_is_checked() {
    assert!(StateFile::new("~/x.json", vec![], &ctx()).is_err());
    assert!(StateFile::new("~/*.json", vec!["a".into()], &ctx()).is_err());
    assert!(StateFile::new("~/x.json", vec!["a..b".into()], &ctx()).is_err());
}

#[test]
fn a_star_stands_for_part_of_a_name_only() {
    use std::ffi::OsStr;
    let m = |p: &str, n: &str| name_matches(p, OsStr::new(n));
    assert!(m("projects.json", "projects.json"));
    assert!(!m("projects.json", "projects.json.x.tmp"));
    assert!(m("projects.json.*.tmp", "projects.json.49e9f903-bd04.tmp"));
    assert!(m("projects.json.*.tmp", "projects.json..tmp"));
    assert!(!m("projects.json.*.tmp", "projects.json.tmp"));
    assert!(!m("projects.json.*.tmp", "settings.json"));
    assert!(!m("projects.json.*.tmp", "projects.json.x.tmp.sh"));
    assert!(m("a*b*c.db", "a1b2c.db"));
    assert!(!m("a*b*c.db", "a1c.db"));
    let ctx = PathContext {
        home: std::path::Path::new("/h"),
        base: None,
    };
    let entry = |writable: &[&str], scratch: &[&str]| {
        StateDir::new(
            "~/.agent",
            writable.iter().map(|s| s.to_string()).collect(),
            Vec::new(),
            scratch.iter().map(|s| s.to_string()).collect(),
            &ctx,
        )
    };
    assert!(entry(&["projects.json.*.tmp"], &[]).is_ok());
    for too_wide in ["*", "*.*", "a*", "*.js", "*.jsonl", "abc*"] {
        assert!(entry(&[too_wide], &[]).is_err(), "{too_wide}");
    }
    assert!(entry(&[], &["tmp*dir"]).is_err());
    assert!(entry(&["a?b"], &[]).is_err());
}
