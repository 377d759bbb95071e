//! `cordon learn`: a run that lets through, and writes down, what no rule
//! names; the policy it prints lets the same run pass without learn mode,
//! and what no run may reach stays refused. With real npm, against the
//! local registry stand-in on the host's loopback: its name `localhost` is
//! what learn mode learns, and a CIDR rule for 127.0.0.1 on the stand-in's
//! port stands in for the public addresses a real registry resolves to
//! (the address guard refuses loopback otherwise, in learn mode too).
//! Each runs as root and as an unprivileged uid.

mod common;

use common::standins::StandIns;
use common::*;

/// `npm install cordon-fixture-0` from the stand-in, as `localhost`,
/// through cordon's proxy (NO_PROXY, which names localhost, is dropped).
fn npm_install(registry: &StandIns) -> String {
    format!(
        "unset NO_PROXY no_proxy; npm install --no-audit --no-fund --cache /tmp/npm-cache \
         --registry {}/ cordon-fixture-0 >/dev/null && echo 'installed: yes'",
        registry.url_as("localhost", "npm")
    )
}

#[test]
fn a_learned_policy_lets_the_same_run_pass_and_nothing_more() {
    each_fixture(|mode, fx| {
        std::fs::write(fx.project.join("package.json"), "{\"name\": \"app\"}\n").unwrap();
        chown_tree(&fx.project, mode);
        let registry = StandIns::start(&fx.dir.path().join("standins"), 2);
        let loopback = format!("127.0.0.1/32:{}", registry.port("npm"));
        let learned = fx.outside.join("learned.toml");
        // Without learn mode (and without the learned policy): refused.
        let refused = fx
            .sandbox()
            .flag("--allow-domain", &loopback)
            .sh(&npm_install(&registry));
        assert_ne!(line(&refused, "installed"), "yes", "{mode:?}: {refused:#?}");
        assert!(
            refused.stderr.contains("localhost"),
            "{mode:?}: {refused:#?}"
        );
        // Learn mode: it runs, and says what it needed.
        let out = fx
            .sandbox()
            .subcommand("learn")
            .flag("--output", learned.as_os_str())
            .flag("--allow-domain", &loopback)
            .sh(&npm_install(&registry));
        assert_eq!(line(&out, "installed"), "yes", "{mode:?}: {out:#?}");
        assert_eq!(out.code, 0, "{mode:?}: {out:#?}");
        assert!(
            out.stderr.contains("run only a command you trust"),
            "{mode:?}: {out:#?}"
        );
        let text = std::fs::read_to_string(&learned).unwrap();
        let rule = format!("\"localhost:{}\"", registry.port("npm"));
        assert!(text.contains(&rule), "{mode:?}: {text}");
        let policy: toml::Value = toml::from_str(&text).expect("the learned policy parses");
        let allow = policy["network"]["allow"].as_array().unwrap();
        assert_eq!(allow.len(), 1, "{mode:?}: {text}");
        // Replayed: the same run passes without learn mode.
        std::fs::remove_dir_all(fx.project.join("node_modules")).unwrap();
        let replay = fx
            .sandbox()
            .flag("--policy", learned.as_os_str())
            .flag("--allow-domain", &loopback)
            .sh(&npm_install(&registry));
        assert_eq!(line(&replay, "installed"), "yes", "{mode:?}: {replay:#?}");
        assert!(fx
            .project
            .join("node_modules/cordon-fixture-1/index.js")
            .is_file());
        // A file that exists is never overwritten, and nothing runs.
        let again = fx
            .sandbox()
            .subcommand("learn")
            .flag("--output", learned.as_os_str())
            .run(&["sh", "-c", "echo ran"]);
        assert_eq!(again.code, 2, "{mode:?}: {again:#?}");
        assert!(!again.stdout.contains("ran") && again.stderr.contains("already exists"));
        assert_eq!(std::fs::read_to_string(&learned).unwrap(), text);
    });
}

#[test]
fn learn_mode_still_refuses_deny_rules_and_guarded_addresses_and_says_so() {
    each_fixture(|mode, fx| {
        let registry = StandIns::start(&fx.dir.path().join("standins"), 1);
        let get = |host: &str| {
            format!(
                "curl -sS -o /dev/null --noproxy '' {}/cordon-fixture-0 2>&1; echo",
                registry.url_as(host, "npm")
            )
        };
        let learned = fx.outside.join("learned.toml");
        let out = fx
            .sandbox()
            .subcommand("learn")
            .flag("--output", learned.as_os_str())
            .flag("--deny-domain", "denied.localhost")
            .sh(&format!(
                "{}; {}; {}",
                get("localhost"),
                get("127.0.0.1"),
                get("denied.localhost")
            ));
        assert_eq!(out.code, 0, "{mode:?}: {out:#?}");
        // Nothing reached the stand-in: loopback is guarded in learn mode too.
        assert_eq!(registry.served("npm"), "", "{mode:?}: {out:#?}");
        let text = std::fs::read_to_string(&learned).unwrap();
        assert!(text.contains("reached no host"), "{mode:?}: {text}");
        let port = registry.port("npm");
        for refused in [
            format!("#   localhost:{port}: localhost resolved to 127.0.0.1, a loopback address"),
            format!("#   127.0.0.1:{port}: 127.0.0.1 is a loopback address"),
            format!("#   denied.localhost:{port}: a deny rule matches"),
        ] {
            assert!(text.contains(&refused), "{mode:?}: {refused}: {text}");
        }
        let policy: toml::Value = toml::from_str(&text).unwrap();
        assert!(policy.get("network").is_none(), "{mode:?}: {text}");
    });
}

#[test]
fn refused_writes_are_named_with_their_fix_and_learned_below_the_home() {
    each_fixture(|mode, fx| {
        std::fs::create_dir_all(fx.home.join(".cache")).unwrap();
        std::fs::create_dir_all(fx.project.join("vendor")).unwrap();
        chown_tree(&fx.home, mode);
        chown_tree(&fx.project, mode);
        let cache = fx.home.join(".cache");
        let script = "mkdir -p ~/.cache/tool && echo x > ~/.cache/tool/f && echo 'wrote: yes'; \
                      touch vendor/v 2>/dev/null; touch ~/.toolrc 2>/dev/null; true";
        let run = fx.sandbox().flag("--deny-write", "./vendor").sh(script);
        assert_ne!(line(&run, "wrote"), "yes", "{mode:?}: {run:#?}");
        for expected in [
            format!("  {}/tool: read-only in the sandbox", cache.display()),
            format!("--allow-write {}", cache.display()),
            format!(
                "  {}/vendor/v: kept read-only inside a writable area",
                fx.project.display()
            ),
            format!("  {}/.toolrc: read-only in the sandbox", fx.home.display()),
        ] {
            assert!(
                run.stderr.contains(&expected),
                "{mode:?}: {expected}: {run:#?}"
            );
        }
        // Learned: the directory below the home, not the home, not the
        // path kept read-only in the project.
        let learned = fx.outside.join("learned.toml");
        let out = fx
            .sandbox()
            .subcommand("learn")
            .flag("--output", learned.as_os_str())
            .flag("--deny-write", "./vendor")
            .sh(script);
        assert_eq!(out.code, 0, "{mode:?}: {out:#?}");
        let text = std::fs::read_to_string(&learned).unwrap();
        let policy: toml::Value = toml::from_str(&text).unwrap();
        let allow: Vec<&str> = policy["files"]["allow_write"]
            .as_array()
            .unwrap()
            .iter()
            .map(|v| v.as_str().unwrap())
            .collect();
        assert_eq!(allow, [cache.to_str().unwrap()], "{mode:?}: {text}");
        assert!(
            text.contains(&format!("#   {}:", fx.home.display())),
            "{mode:?}: {text}"
        );
        // Replayed, the write works.
        let replay = fx
            .sandbox()
            .flag("--policy", learned.as_os_str())
            .sh(script);
        assert_eq!(line(&replay, "wrote"), "yes", "{mode:?}: {replay:#?}");
        assert!(cache.join("tool/f").is_file());
    });
}
