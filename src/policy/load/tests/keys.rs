//! The declarations themselves: every key is covered by the trust rule as
//! its declaration says, and the documented file format is the declared one.

use super::*;
use crate::policy::keys::{self, Declared, WidensKind, KEYS, SECTIONS};
use crate::policy::load::document::parse_file;

/// A project (or user) file that sets `key` to `value`.
fn file_setting(key: &dyn Declared, value: &str) -> String {
    let about = key.about();
    format!("[{}]\n{} = {value}\n", about.section, about.name)
}

/// Loads with the project file setting `key` to `value`: `Ok` when it
/// loads, else whether the refusal is the trust rule's, at the key.
fn load_project(fx: &Fx, key: &dyn Declared, value: &str) -> Result<Policy, String> {
    fx.write_project(&file_setting(key, value));
    match fx.load() {
        Ok(p) => Ok(p),
        Err(LoadError::Untrusted { at, key: named, .. }) => {
            assert_eq!(named, key.about().dotted(), "the refusal names the key");
            assert_eq!(
                (at.line, at.column),
                (2, 1),
                "{named}: the refusal points at the key"
            );
            Err("untrusted".to_string())
        }
        Err(other) => panic!(
            "{}: {value}: not a trust refusal: {other}",
            key.about().dotted()
        ),
    }
}

#[test]
fn an_untrusted_project_cannot_widen_through_any_declared_key() {
    for &key in KEYS {
        let about = key.about();
        let name = about.dotted();
        let [narrow, wide] = about.examples;
        let fx = Fx::new();
        let compares = matches!(
            key.widens(),
            WidensKind::Raise | WidensKind::NewEntries | WidensKind::TurnsOff
        );
        if compares {
            // The value in force, from the trusted user config.
            fx.write_user(&file_setting(key, narrow));
        }
        let narrowed = load_project(&fx, key, narrow);
        let widened = load_project(&fx, key, wide);
        match key.widens() {
            WidensKind::Never => {
                assert!(narrowed.is_ok(), "{name}: {narrow} is refused");
                assert!(widened.is_ok(), "{name}: {wide} is refused");
            }
            WidensKind::AnyValue => {
                assert!(narrowed.is_err(), "{name}: {narrow} is let through");
                assert!(widened.is_err(), "{name}: {wide} is let through");
            }
            WidensKind::AnyEntry
            | WidensKind::Raise
            | WidensKind::NewEntries
            | WidensKind::TurnsOff
            | WidensKind::Contents => {
                assert!(narrowed.is_ok(), "{name}: {narrow} is refused");
                assert!(widened.is_err(), "{name}: {wide} is let through");
            }
        }
        // Trusted, the same file may widen.
        if key.widens() != WidensKind::Never {
            fx.write_project(&file_setting(key, wide));
            trust::trust(&fx.config, &fx.project_file()).unwrap();
            fx.load()
                .unwrap_or_else(|e| panic!("{name}: trusted {wide} is refused: {e}"));
        }
    }
}

#[test]
fn keys_that_compare_with_the_value_in_force_replace_it() {
    // The trust rule fails closed for a comparing key that appends; none
    // should be declared so.
    for &key in KEYS {
        let compares = matches!(
            key.widens(),
            WidensKind::Raise | WidensKind::NewEntries | WidensKind::TurnsOff
        );
        assert!(
            !(compares && key.appends()),
            "{}: compares with the value in force but appends",
            key.about().dotted()
        );
    }
}

#[test]
fn names_and_flags_are_declared_once() {
    let mut names = Vec::new();
    let mut flags = Vec::new();
    for &key in KEYS {
        let about = key.about();
        assert!(SECTIONS.contains(&about.section), "{}", about.dotted());
        assert!(!names.contains(&about.dotted()), "{}", about.dotted());
        names.push(about.dotted());
        assert_eq!(
            keys::find(&about.dotted()).map(|k| k.about().dotted()),
            Some(about.dotted())
        );
        if let Some(flag) = &about.flag {
            assert!(!flags.contains(&flag.name), "--{}", flag.name);
            flags.push(flag.name);
            assert_eq!(
                keys::by_flag(&flag.long()).map(|k| k.about().dotted()),
                Some(about.dotted())
            );
        }
    }
    for section in SECTIONS {
        assert!(
            keys::in_section(section).next().is_some(),
            "[{section}] has no key"
        );
    }
}

/// The ```toml example in the module's documentation.
fn documented_example() -> String {
    let docs: Vec<&str> = include_str!("../mod.rs")
        .lines()
        .map_while(|l| l.strip_prefix("//!"))
        .map(|l| l.strip_prefix(' ').unwrap_or(l))
        .collect();
    let start = docs
        .iter()
        .position(|l| *l == "```toml")
        .expect("a toml example")
        + 1;
    let len = docs[start..]
        .iter()
        .position(|l| *l == "```")
        .expect("its end");
    docs[start..start + len].join("\n")
}

#[test]
fn the_documented_format_is_the_declared_one() {
    let fx = Fx::new();
    let text = documented_example();
    let ctx = PathContext {
        home: &fx.home,
        base: Some(&fx.project),
    };
    // It parses: every section and key it names is declared ...
    let fragment = parse_file(Path::new("example.toml"), text.as_bytes(), &ctx)
        .unwrap_or_else(|e| panic!("the documented example does not load: {e}"));
    // ... and it names every declared key.
    let documented: Vec<String> = fragment
        .settings()
        .iter()
        .map(|s| s.pending.key().about().dotted())
        .collect();
    for &key in KEYS {
        let name = key.about().dotted();
        assert!(
            documented.contains(&name),
            "{name} is not in the documented example"
        );
    }
}

#[test]
fn a_key_is_set_by_its_declared_name_from_outside() {
    let fx = Fx::new();
    let mut p = fx.load().unwrap();
    let ctx = PathContext {
        home: &fx.home,
        base: Some(&fx.project),
    };
    let from = Source::PolicyFile(fx.root.join("imported.json"));
    let set = |p: &mut Policy, key: &str, values: &[&str]| {
        let key = keys::find(key).unwrap();
        let values: Vec<String> = values.iter().map(|v| v.to_string()).collect();
        apply(p, key, &values, &ctx, &from)
    };
    set(&mut p, "network.allow", &["api.github.com"]).unwrap();
    set(&mut p, "limits.max_procs", &["12"]).unwrap();
    set(&mut p, "files.deny_read", &["./.env"]).unwrap();
    assert_eq!(
        rule_texts(&p.network.hosts.allow),
        vec![("api.github.com".to_string(), from.clone())]
    );
    assert_eq!(p.limits.max_procs, Sourced::new(12, from.clone()));
    assert_eq!(
        p.files.deny_read.last(),
        Some(&Sourced::new(exact(&fx.project.join(".env")), from.clone()))
    );
    assert_eq!(
        set(&mut p, "limits.max_procs", &["0"]),
        Err("must be at least 1".to_string())
    );
    assert!(set(&mut p, "network.rules", &["x"]).is_err());
}
