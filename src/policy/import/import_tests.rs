//! Tests of the policy file an import prints.

use std::path::{Path, PathBuf};

use super::*;
use crate::policy::keys::{DENY_ENV, DENY_READ, INJECT, NET_ALLOW};
use crate::policy::load::document::parse_policy;
use crate::policy::pattern::PathContext;

fn origin(line: usize, key: &str) -> Origin {
    Origin {
        at: Position {
            file: PathBuf::from("/p/.claude/settings.json"),
            line,
            column: 3,
        },
        key: key.to_string(),
    }
}

fn sample() -> Imported {
    let mut imported = Imported {
        files: vec![(PathBuf::from("/p/.claude/settings.json"), Vec::new())],
        ..Imported::default()
    };
    imported.set(
        &NET_ALLOW.about,
        Value::Item("github.com".into()),
        origin(4, "a[0]"),
    );
    imported.set(
        &DENY_READ.about,
        Value::Item("~/.ssh".into()),
        origin(5, "b[0]"),
    );
    imported.set(
        &NET_ALLOW.about,
        Value::Item("*.npmjs.org".into()),
        origin(6, "a[1]"),
    );
    imported.set(
        &DENY_ENV.about,
        Value::Item("NPM_TOKEN".into()),
        origin(7, "c[0]"),
    );
    let mut table = toml::Table::new();
    table.insert("env".into(), "GH_TOKEN".into());
    table.insert(
        "hosts".into(),
        toml::Value::Array(vec!["api.github.com".into()]),
    );
    imported.set(&INJECT.about, Value::Table(table), origin(8, "d[0]"));
    imported.note(origin(9, "sandbox.enabled"), "always on");
    imported
}

#[test]
fn the_printed_file_is_a_policy_the_loader_reads_with_every_origin_named() {
    let text = sample().to_toml("cordon import claude");
    let ctx = PathContext {
        home: Path::new("/home/u"),
        base: None,
    };
    parse_policy(Path::new("imported.toml"), text.as_bytes(), &ctx, &[])
        .unwrap_or_else(|e| panic!("{e}\n{text}"));
    // Each list once, its values in the order read, each with its origin.
    assert_eq!(text.matches("\nallow = [").count(), 1, "{text}");
    let github = text
        .find("\"github.com\",  # /p/.claude/settings.json:4 a[0]")
        .unwrap();
    let npm = text
        .find("\"*.npmjs.org\",  # /p/.claude/settings.json:6 a[1]")
        .unwrap();
    assert!(github < npm, "{text}");
    assert!(
        text.contains("# /p/.claude/settings.json:8 d[0]\n[[credentials.inject]]\n"),
        "{text}"
    );
    assert!(
        text.contains("#   /p/.claude/settings.json:9 sandbox.enabled: always on"),
        "{text}"
    );
}

#[test]
fn paths_below_the_home_are_written_from_it() {
    assert_eq!(
        policy_path(Path::new("/home/u/.ssh"), Path::new("/home/u")),
        "~/.ssh"
    );
    assert_eq!(
        policy_path(Path::new("/home/u"), Path::new("/home/u")),
        "/home/u"
    );
    assert_eq!(
        policy_path(Path::new("/home/uv/x"), Path::new("/home/u")),
        "/home/uv/x"
    );
}

#[test]
fn printed_values_are_ascii_and_read_back_as_they_were() {
    for raw in [
        "~/proj\u{200b}ect",
        "na\u{ef}ve caf\u{e9}",
        "\u{65e5}\u{672c}",
        "q\"uo\\te",
        "crab \u{1f980}",
        "ctl\u{1}\u{7f}",
        "\u{202e}gpj.exe",
    ] {
        let printed = ascii_string(raw);
        assert!(
            printed.chars().all(|c| (' '..='~').contains(&c)),
            "{printed}"
        );
        let back: toml::Table = toml::from_str(&format!("v = {printed}")).unwrap();
        assert_eq!(back["v"].as_str(), Some(raw), "{printed}");
    }
}
