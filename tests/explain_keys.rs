//! `cordon explain` shows every declared policy key: a key added to
//! `policy::keys` without a line in `explain` fails here.

mod common;

use common::*;

use cordon::policy::keys::{Declared, Takes, KEYS};

/// `cordon explain` (text, and with `--json`) for the fixture plus `args`.
fn explain(fx: &Fixture, args: &[String]) -> (String, String) {
    let text = fx.sandbox().subcommand("explain").args(args).run(&[]);
    text.ok();
    let json = fx
        .sandbox()
        .subcommand("explain")
        .args(args)
        .arg("--json")
        .run(&[]);
    json.ok();
    let parsed: serde_json::Value = serde_json::from_str(&json.stdout)
        .unwrap_or_else(|e| panic!("explain --json {args:?}: {e}: {json:#?}"));
    (text.stdout, parsed.to_string())
}

/// A policy file that sets only `key`, to its example `value`, and which
/// no other key's file shares a name with.
fn policy_file(fx: &Fixture, key: &dyn Declared, value: &str, n: usize) -> std::path::PathBuf {
    let about = key.about();
    let path = fx.outside.join(format!("{}-{n}.toml", about.dotted()));
    let text = format!("[{}]\n{} = {value}\n", about.section, about.name);
    std::fs::write(&path, text).unwrap();
    chown(&path, fx.mode);
    path
}

/// The flag arguments that give the TOML `value` to the flag of `key`
/// (none when the value cannot be given by that flag, e.g. a switch set to
/// false).
fn flag_args(key: &dyn Declared, value: &str) -> Option<Vec<String>> {
    let flag = key.about().flag.as_ref()?;
    let value: toml::Value = toml::from_str::<toml::Table>(&format!("v = {value}"))
        .unwrap_or_else(|e| panic!("{}: example {value}: {e}", key.about().dotted()))
        .remove("v")?;
    let scalar = |v: &toml::Value| match v {
        toml::Value::String(s) => s.clone(),
        other => other.to_string(),
    };
    let values: Vec<String> = match &value {
        toml::Value::Array(items) => items.iter().map(scalar).collect(),
        // A table of names and values: NAME=VALUE each.
        toml::Value::Table(entries) => entries
            .iter()
            .map(|(name, v)| format!("{name}={}", scalar(v)))
            .collect(),
        toml::Value::Boolean(false) => return None,
        toml::Value::Boolean(true) => return Some(vec![flag.long()]),
        other => vec![scalar(other)],
    };
    if values.is_empty() {
        return None;
    }
    Some(match flag.takes {
        Takes::CommaList(_) => vec![flag.long(), values.join(",")],
        _ => values
            .iter()
            .flat_map(|v| [flag.long(), v.clone()])
            .collect(),
    })
}

/// How the JSON gives a source whose detail is `detail` (a flag, a file).
fn detail(detail: &str) -> String {
    format!("\"detail\":{}", serde_json::Value::from(detail))
}

#[test]
fn explain_shows_every_declared_key_with_its_source() {
    let fx = Fixture::new(Mode::Root);
    let mut missing = Vec::new();
    for &key in KEYS {
        let dotted = key.about().dotted();
        // From a file that sets only this key: some line names that file.
        let shown = key.about().examples.iter().enumerate().any(|(n, value)| {
            let file = policy_file(&fx, key, value, n);
            let (text, json) = explain(&fx, &["--policy".into(), file.display().to_string()]);
            let from = format!("policy {}", file.display());
            text.contains(&from) && json.contains(&detail(&file.display().to_string()))
        });
        if !shown {
            missing.push(format!("{dotted} (set in a --policy file)"));
        }
        // From its flag: some line names the flag.
        let Some(flag) = key.about().flag.as_ref() else {
            continue;
        };
        let from = format!("flag {}", flag.long());
        let shown = key.about().examples.iter().any(|value| {
            flag_args(key, value).is_some_and(|args| {
                let (text, json) = explain(&fx, &args);
                text.contains(&from) && json.contains(&detail(&flag.long()))
            })
        });
        if !shown {
            missing.push(format!("{dotted} (set by {})", flag.long()));
        }
    }
    assert!(
        missing.is_empty(),
        "cordon explain (text and JSON) shows no line for: {missing:#?}"
    );
}
