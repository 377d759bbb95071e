//! The shipped presets load through the policy reader; naming them, from a
//! flag or a file, applies their lines from a source that names both.

use std::path::Path;

use super::*;
use crate::policy::keys;
use crate::policy::load::flags::given;
use crate::policy::load::tests::Fx;
use crate::policy::load::{load, LoadError};

fn ctx(home: &Path) -> PathContext<'_> {
    PathContext {
        home,
        base: Some(Path::new("/p")),
    }
}

#[test]
fn every_shipped_preset_loads_through_the_policy_reader() {
    let home = Path::new("/home/u");
    let presets = all(&ctx(home)).unwrap_or_else(|e| panic!("a shipped preset: {e}"));
    assert_eq!(presets.len(), SHIPPED.len());
    let mut names = Vec::new();
    for p in &presets {
        let name = p.shipped.name;
        assert!(!names.contains(&name), "{name}: shipped twice");
        names.push(name);
        assert_eq!(p.about.name, name);
        assert!(!p.about.about.is_empty(), "{name}: no description");
        assert!(!p.hosts().is_empty(), "{name}: allows no host");
        // The policy reader reads each host as a rule of network.allow.
        let fragment = p.expand(&ctx(home)).unwrap();
        let keys: Vec<String> = fragment
            .settings()
            .iter()
            .map(|s| s.pending.key().about().dotted())
            .collect();
        assert!(
            keys.contains(&"network.allow".to_string()),
            "{name}: {keys:?}"
        );
        for cache in &p.about.caches {
            assert!(
                cache.path.starts_with("~/"),
                "{name}: cache {} is not under the home",
                cache.path
            );
        }
    }
    // The flags' help names every preset: --preset the tools', --agent
    // the agents' profiles.
    let help = |key: &keys::About| key.flag.as_ref().unwrap().help;
    for p in &presets {
        let (flag, about) = if p.about.commands.is_empty() {
            ("--preset", &keys::PRESETS.about)
        } else {
            ("--agent", &keys::AGENT.about)
        };
        let name = p.shipped.name;
        assert!(
            help(about).contains(name),
            "{flag}'s help does not name {name}"
        );
    }
}

#[test]
fn a_broken_preset_is_an_error_naming_it() {
    let broken = [
        (
            "[preset]\nname = \"x\"\nabout = \"\"\n[network]\nallow = [\"a..b\"]\n",
            "(preset x):5:10: network.allow[0]: ",
        ),
        (
            "[preset]\nname = \"y\"\nabout = \"\"\n",
            "(preset x):1:1: preset.name: is \"y\"",
        ),
        (
            "[preset]\nname = \"x\"\nabout = \"\"\ncolour = 1\n",
            "(preset x):4:1: unknown field `colour`",
        ),
        (
            "[preset]\nname = \"x\"\nabout = \"\"\n[network]\npresets = [\"npm\"]\n",
            "(preset x):1:1: network.presets: a preset may not name presets",
        ),
        (
            "[preset]\nname = \"x\"\nabout = \"\"\n[nets]\n",
            "(preset x):4:2: nets: unknown key",
        ),
    ];
    for (text, want) in broken {
        let shipped: &'static Shipped = Box::leak(Box::new(Shipped { name: "x", text }));
        let got = Preset::read(shipped)
            .and_then(|p| p.expand(&ctx(Path::new("/h"))))
            .map(|_| ())
            .expect_err(text)
            .to_string();
        assert!(got.starts_with(want), "{text:?}:\n got {got}\nwant {want}");
    }
}

#[test]
fn an_unknown_preset_is_an_error_listing_the_known_ones() {
    let fx = Fx::new();
    let known = format!("the presets are {}", names());
    let err = load(&fx.req(given(&[("--preset", &["npm", "nmp"])])))
        .unwrap_err()
        .to_string();
    assert!(
        err.starts_with("--preset: unknown preset \"nmp\"; ") && err.contains(&known),
        "{err}"
    );
    let file = fx.write_user("[network]\npresets = [\"npm\",\n  \"left-pad\"]\n");
    let err = load(&fx.req(Vec::new())).unwrap_err();
    assert!(matches!(err, LoadError::Invalid { .. }), "{err}");
    let err = err.to_string();
    assert!(
        err.starts_with(&format!(
            "{}:3:3: network.presets[1]: unknown preset \"left-pad\"; ",
            file.display()
        )) && err.contains(&known),
        "{err}"
    );
}

#[test]
fn a_preset_adds_its_lines_where_it_is_named_from_a_source_naming_both() {
    let fx = Fx::new();
    let user =
        fx.write_user("[network]\ndeny = [\"registry.yarnpkg.com\"]\npresets = [\"pypi\"]\n");
    let p = load(&fx.req(given(&[("--preset", &["npm"])]))).unwrap();
    let from_flag = Source::Preset {
        name: "npm".into(),
        from: Box::new(Source::Flag("--preset".into())),
    };
    let from_user = Source::Preset {
        name: "pypi".into(),
        from: Box::new(Source::UserConfig(user.clone())),
    };
    let allowed: Vec<(String, Source)> = p
        .network
        .hosts
        .allow
        .iter()
        .map(|r| (r.value.to_string(), r.source.clone()))
        .collect();
    assert_eq!(
        allowed,
        vec![
            ("pypi.org".to_string(), from_user.clone()),
            ("files.pythonhosted.org".to_string(), from_user.clone()),
            ("registry.npmjs.org".to_string(), from_flag.clone()),
            ("registry.yarnpkg.com".to_string(), from_flag.clone()),
            ("repo.yarnpkg.com".to_string(), from_flag.clone()),
        ]
    );
    let named: Vec<(&str, &str, &Source)> = p
        .network
        .presets
        .iter()
        .map(|n| (n.value.name.as_str(), n.value.about.as_str(), &n.source))
        .collect();
    assert_eq!(
        named,
        vec![
            (
                "pypi",
                "pip, uv, poetry: the Python Package Index",
                &Source::UserConfig(user.clone())
            ),
            (
                "npm",
                "npm, yarn, pnpm: the npm registry (metadata and tarballs)",
                &Source::Flag("--preset".into())
            ),
        ]
    );
    assert_eq!(from_flag.to_string(), "preset npm (flag --preset)");
    assert_eq!(
        from_user.to_string(),
        format!("preset pypi (user config {})", user.display())
    );
    // Deny still beats what a preset allows.
    let allows = |host: &str| {
        let target = crate::policy::host::normalize(host).unwrap();
        p.network.hosts.decide(&target, 443).is_allowed()
    };
    assert!(!allows("registry.yarnpkg.com"));
    assert!(allows("registry.npmjs.org"));
    // The key is declared like the others.
    assert_eq!(
        keys::find("network.presets").map(|k| k.about().flag_or_key()),
        Some("--preset".to_string())
    );
}

/// The commented-out policy a preset's file suggests adding: its comment
/// lines from the first that opens a table (`# [[network.rules]]`) to the
/// end of that comment, uncommented.
fn suggested(text: &str) -> String {
    text.lines()
        .skip_while(|l| !l.starts_with("# ["))
        .take_while(|l| l.starts_with('#'))
        .map(|l| l.trim_start_matches('#').strip_prefix(' ').unwrap_or(""))
        .collect::<Vec<_>>()
        .join("\n")
}

#[test]
fn what_a_preset_suggests_adding_loads() {
    let home = Path::new("/home/u");
    let mut suggesting = Vec::new();
    for s in SHIPPED {
        let text = suggested(s.text);
        if text.is_empty() {
            continue;
        }
        let file = Path::new(s.name);
        let fragment = crate::policy::load::document::parse_file(file, text.as_bytes(), &ctx(home))
            .unwrap_or_else(|e| panic!("{}: what it suggests does not load: {e}\n{text}", s.name));
        assert!(!fragment.settings().is_empty(), "{}", s.name);
        suggesting.push(s.name);
    }
    assert_eq!(
        suggesting,
        ["github", "gitlab", "anthropic-api", "openai-api"]
    );
}

#[test]
fn a_refusal_names_the_presets_that_allow_the_host() {
    use crate::policy::host::{normalize, DenyReason};
    let fx = Fx::new();
    let p = load(&fx.req(Vec::new())).unwrap();
    let hint = |host: &str, port: u16| {
        p.network
            .hosts
            .denial_fix(&normalize(host).unwrap(), port, DenyReason::NotAllowed)
    };
    let npm = hint("Registry.NPMJS.org.", 443);
    assert!(
        npm.ends_with("; or use the preset that allows it with the other hosts its tools need: --preset npm (or [network] presets = [\"npm\"]) (`cordon presets` lists them)"),
        "{npm}"
    );
    assert!(!hint("example.com", 443).contains("preset"));
    // The preset's rules cover the ports in force only.
    assert!(!hint("registry.npmjs.org", 8443).contains("preset"));
    assert_eq!(allowing(&normalize("api.github.com").unwrap()), ["github"]);
    assert!(allowing(&normalize("npmjs.org").unwrap()).is_empty());
}
