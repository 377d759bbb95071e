//! The credentials door's environment scrub: secret-looking variables of
//! the caller never reach the command, nor any process it can see.

mod common;

use common::*;

/// Lists every readable /proc/*/environ and /proc/*/cmdline inside, and
/// prints the ones that hold `needle` (and how many were readable). The
/// script is given the needle reversed, so its own command line does not
/// hold it.
fn proc_scan(sandbox: Sandbox, needle: &str) -> Output {
    let reversed: String = needle.chars().rev().collect();
    sandbox.py_args(PROC_SCAN_PY, &[&reversed])
}

/// See [`proc_scan`].
const PROC_SCAN_PY: &str = include_str!("py/proc_scan.py");

#[test]
fn secret_variables_never_reach_the_command_or_any_process_inside() {
    each_fixture(|mode, fx| {
        let canary = format!("canary-{}", fx.token);
        let secrets = [
            "GITHUB_TOKEN",
            "ANTHROPIC_API_KEY",
            "AWS_SECRET_ACCESS_KEY",
            "AWS_ACCESS_KEY_ID",
            "MY_SERVICE_TOKEN",
            "DB_PASSWORD",
            "client_secret",
        ];
        let mut sandbox = fx.sandbox().env("PLAIN_SETTING", "plain");
        for name in secrets {
            sandbox = sandbox.env(name, &canary);
        }
        let out = proc_scan(sandbox, &canary);
        out.ok();
        let env: Vec<&str> = line(&out, "env").split(' ').collect();
        // Control: the caller's other variables pass, and the scan read
        // the command's own environ (which would show a leaked value).
        assert!(env.contains(&"PLAIN_SETTING"), "{mode:?}: {out:#?}");
        assert!(
            line(&out, "read").parse::<u32>().unwrap_or(0) >= 2,
            "{mode:?}: {out:#?}"
        );
        for name in secrets {
            assert!(!env.contains(&name), "{mode:?}: {name} inside: {out:#?}");
        }
        assert_eq!(line(&out, "hits"), "none", "{mode:?}: {out:#?}");
        assert!(!out.stdout.contains(&canary), "{mode:?}: {out:#?}");
    });
}

#[test]
fn deny_keep_and_clear_env() {
    each_fixture(|mode, fx| {
        let run = |args: &[&str]| {
            let mut sandbox = fx
                .sandbox()
                .env("CORP_PROXY_PASSWORDLESS", "x")
                .env("CORP_REGION", "eu")
                .env("GITHUB_TOKEN", "ghp_kept")
                .env("NPM_TOKEN", "npm_gone")
                .env("PLAIN_SETTING", "plain");
            for a in args {
                sandbox = sandbox.arg(a);
            }
            let out = sandbox.run(&["/usr/bin/env"]);
            out.ok();
            out.stdout
        };
        let env = run(&["--deny-env", "CORP_*", "--keep-env", "GITHUB_TOKEN"]);
        assert!(!env.contains("CORP_REGION"), "{mode:?}: {env}");
        assert!(env.contains("GITHUB_TOKEN=ghp_kept"), "{mode:?}: {env}");
        assert!(!env.contains("NPM_TOKEN"), "{mode:?}: {env}");
        assert!(env.contains("PLAIN_SETTING=plain"), "{mode:?}: {env}");

        let env = run(&["--clear-env", "--keep-env", "CORP_REGION"]);
        assert!(env.contains("CORP_REGION=eu"), "{mode:?}: {env}");
        assert!(!env.contains("PLAIN_SETTING"), "{mode:?}: {env}");
        assert!(!env.contains("GITHUB_TOKEN"), "{mode:?}: {env}");
        // cordon's own variables stay: the temp dir and the proxy.
        assert!(env.contains("TMPDIR=/tmp"), "{mode:?}: {env}");
        assert!(env.contains("HTTPS_PROXY="), "{mode:?}: {env}");
    });
}

#[test]
fn an_untrusted_project_may_unset_more_but_not_keep_a_secret() {
    let fx = Fixture::new(Mode::Root);
    std::fs::write(
        fx.project.join("cordon.toml"),
        "[credentials]\ndeny_env = [\"PLAIN_*\"]\n",
    )
    .unwrap();
    let out = fx
        .sandbox()
        .env("PLAIN_SETTING", "plain")
        .run(&["/usr/bin/env"]);
    out.ok();
    assert!(!out.stdout.contains("PLAIN_SETTING"), "{out:#?}");

    std::fs::write(
        fx.project.join("cordon.toml"),
        "[credentials]\nkeep_env = [\"GITHUB_TOKEN\"]\n",
    )
    .unwrap();
    let out = fx
        .sandbox()
        .env("GITHUB_TOKEN", "ghp_x")
        .run(&["/usr/bin/env"]);
    out.expect_code(125);
    assert!(
        out.stderr.contains("cordon.toml:2:1: credentials.keep_env")
            && out.stderr.contains("cordon trust"),
        "{out:#?}"
    );
    assert!(!out.stdout.contains("ghp_x"), "{out:#?}");

    std::fs::write(
        fx.project.join("cordon.toml"),
        "[credentials]\nclear_env = \"yes\"\n",
    )
    .unwrap();
    let out = fx.sandbox().run(&["true"]);
    out.expect_code(125);
    assert!(
        out.stderr
            .contains("cordon.toml:2:13: credentials.clear_env: expected true or false"),
        "{out:#?}"
    );
}

#[test]
fn explain_names_the_unset_variables_but_never_their_values() {
    let fx = Fixture::new(Mode::Root);
    let canary = format!("canary-{}", fx.token);
    let out = fx
        .sandbox()
        .subcommand("explain")
        .env("GITHUB_TOKEN", &canary)
        .env("CORP_REGION", &canary)
        .flag("--deny-env", "CORP_*")
        .run(&[]);
    out.ok();
    let row = |name: &str| {
        out.stdout
            .lines()
            .find(|l| l.trim_start().starts_with(name))
            .unwrap_or_default()
            .to_string()
    };
    assert!(row("GITHUB_TOKEN").contains("*TOKEN"), "{out:#?}");
    assert!(row("CORP_REGION").contains("--deny-env"), "{out:#?}");
    assert!(!out.stdout.contains(&canary), "{out:#?}");
    let json = fx
        .sandbox()
        .subcommand("explain")
        .env("GITHUB_TOKEN", &canary)
        .arg("--json")
        .run(&[]);
    json.ok();
    assert!(json.stdout.contains("\"GITHUB_TOKEN\""), "{json:#?}");
    assert!(!json.stdout.contains(&canary), "{json:#?}");
}

/// Each withheld variable is a credentials-door event of the audit log
/// (its name and the rule, never its value), not counted as blocked.
#[test]
fn withheld_variables_are_logged_by_name_only() {
    let fx = Fixture::new(Mode::Root);
    let canary = format!("canary-{}", fx.token);
    let log = fx.outside.join("audit.jsonl");
    let out = fx
        .sandbox()
        .env("GITHUB_TOKEN", &canary)
        .env("CORP_REGION", &canary)
        .flag("--deny-env", "CORP_*")
        .flag("--audit", &log)
        .run(&["true"]);
    out.ok();
    let text = std::fs::read_to_string(&log).unwrap();
    assert!(!text.contains(&canary), "{text}");
    let event = |name: &str| {
        text.lines()
            .map(|l| serde_json::from_str::<serde_json::Value>(l).unwrap())
            .find(|e| e["subject"] == name)
            .unwrap_or_else(|| panic!("no event for {name}: {text}"))
    };
    let token = event("GITHUB_TOKEN");
    assert_eq!(token["door"], "credentials");
    assert_eq!(token["event"], "withheld");
    assert_eq!(token["rule"], "*TOKEN");
    assert_eq!(event("CORP_REGION")["source"], "flag --deny-env");
    assert!(!out.stderr.contains("blocked"), "{out:#?}");
}

/// Secret names the first patterns missed, and secret values under
/// innocent names (a URL with a password, token prefixes, a JWT, a private
/// key): none reaches the command or any process inside, each is logged
/// by name with the shape that gave it away, and ordinary values pass.
#[test]
fn secret_names_and_secret_values_under_innocent_names_are_withheld() {
    each_fixture(|mode, fx| {
        let t = &fx.token;
        let log = fx.outside.join("audit.jsonl");
        // Every secret value holds the token, so one scan finds any leak.
        let by_name = [
            "MYSQL_PWD",
            "SENTRY_DSN",
            "SLACK_WEBHOOK_URL",
            "RELEASE_SIGNING_KEY",
            "APP_ENCRYPTION_KEY_V2",
            "CI_JOB_JWT",
            "DOCKER_AUTH_CONFIG",
            "npm_config__authToken",
            "CREDENTIALS",
            "COOKIE",
            "AUTH",
        ];
        let by_value = [
            ("REDIS_URL", format!("redis://:pw{t}@cache:6379/0")),
            ("UPSTREAM", format!("https://deploy:{t}@git.example/")),
            ("NOTE_A", format!("ghp_{t}{t}0000")),
            ("NOTE_B", format!("github_pat_11AB_{t}{t}{t}")),
            ("NOTE_C", format!("sk-ant-api03-{t}{t}")),
            ("NOTE_D", format!("xoxb-1234-{t}")),
            ("NOTE_E", format!("glpat-{t}{t}")),
            ("NOTE_F", format!("hf_{t}{t}")),
            (
                "NOTE_G",
                format!("eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiJ{t}.c2ln"),
            ),
            (
                "NOTE_H",
                format!("-----BEGIN RSA PRIVATE KEY-----\n{t}\n-----END RSA PRIVATE KEY-----"),
            ),
        ];
        let plain = [
            ("PLAIN_URL", "https://example.com/docs?page=2".to_string()),
            ("PLAIN_WORD", "sk-1".to_string()),
            (
                "PLAIN_REMOTE",
                "ssh://git@example.com/org/repo.git".to_string(),
            ),
        ];
        let mut sandbox = fx.audited(&log);
        for name in by_name {
            sandbox = sandbox.env(name, format!("value-{t}"));
        }
        for (name, value) in by_value.iter().chain(&plain) {
            sandbox = sandbox.env(name, value);
        }
        let out = proc_scan(sandbox, t);
        out.ok();
        let env: Vec<&str> = line(&out, "env").split(' ').collect();
        for (name, _) in &plain {
            assert!(env.contains(name), "{mode:?}: {name} removed: {out:#?}");
        }
        let withheld: Vec<&str> = by_name
            .iter()
            .copied()
            .chain(by_value.iter().map(|(n, _)| *n))
            .collect();
        for name in &withheld {
            assert!(!env.contains(name), "{mode:?}: {name} inside: {out:#?}");
        }
        assert_eq!(line(&out, "hits"), "none", "{mode:?}: {out:#?}");
        // The audit log names each, never a value.
        let text = std::fs::read_to_string(&log).unwrap();
        assert!(!text.contains(t.as_str()), "{mode:?}: {text}");
        let rule = |name: &str| {
            text.lines()
                .map(|l| serde_json::from_str::<serde_json::Value>(l).unwrap())
                .find(|e| e["subject"] == name && e["event"] == "withheld")
                .map(|e| e["rule"].as_str().unwrap_or_default().to_string())
                .unwrap_or_else(|| panic!("{mode:?}: no event for {name}: {text}"))
        };
        for name in &withheld {
            rule(name);
        }
        assert_eq!(rule("REDIS_URL"), "value: a URL with a password in it");
        assert_eq!(rule("NOTE_A"), "value: a GitHub token (ghp_)");
        assert_eq!(rule("NOTE_H"), "value: a PEM private key");
    });
}

/// The names in tests/data/red_team_env_names.txt.
fn red_team_names() -> impl Iterator<Item = &'static str> {
    include_str!("data/red_team_env_names.txt")
        .lines()
        .filter(|l| !l.is_empty() && !l.starts_with('#'))
}

/// Variables the red team's canaries passed the scrub with: secret names
/// (other spellings included), and innocent names holding secret values.
/// Each value carries the canary, so a leak shows in any process inside.
fn red_team_variables(canary: &str) -> Vec<(String, String)> {
    use base64::Engine;
    let mut vars: Vec<(String, String)> = red_team_names()
        .map(|n| (n.to_string(), canary.to_string()))
        .collect();
    // The canary is `canary-<hex>`; token shapes need letters and digits.
    let tok = canary.replace('-', "");
    let gh = format!("ghp_{tok}0A0A0A0A0A0A");
    let values = [
        format!("https://api.example.com/v1?token={canary}"),
        format!("https://api.example.com/v1?x=1&access_token={canary}"),
        format!("https://api.example.com/v1?api_key={canary}"),
        format!("https://api.example.com/v1?key={canary}"),
        format!("https://acct.blob.example.net/c?sv=1&sig={canary}"),
        format!("https://{tok}0a1b2c3d@github.com/org/repo.git"),
        format!("https://hooks.slack.com/services/T0/B0/{canary}"),
        format!("https://discord.com/api/webhooks/1/{canary}"),
        format!("https://user:pa#ss-{canary}@db.example.com/"),
        format!("hvs.{tok}{tok}"),
        format!("ya29.{tok}{tok}"),
        format!("SG.{tok}.{tok}{tok}"),
        format!("gsk_{tok}{tok}{tok}"),
        format!("xai-{tok}{tok}{tok}"),
        format!(
            "AGE-SECRET-KEY-1{}",
            tok.to_ascii_uppercase()
                .repeat(3)
                .chars()
                .take(58)
                .collect::<String>()
        ),
        gh.replace('_', "%5F"),
        base64::engine::general_purpose::STANDARD.encode(&gh),
    ];
    for (i, value) in values.into_iter().enumerate() {
        vars.push((format!("INNOCENT_{i}"), value));
    }
    vars
}

#[test]
fn secrets_the_red_team_passed_the_scrub_with_never_reach_the_command() {
    each_fixture(|mode, fx| {
        let canary = format!("canary-{}", fx.token);
        let secrets = red_team_variables(&canary);
        // Ordinary variables with ordinary values stay.
        let ordinary = [
            ("EDITOR", "vim"),
            ("SHELL", "/bin/bash"),
            ("KEYMAP", "de-latin1"),
            ("XDG_DATA_HOME", "/home/u/.local/share"),
            ("XDG_SESSION_ID", "3"),
            ("SITE_URL", "https://example.com/search?q=a&page=2"),
            ("SHORT_WORD", "yes"),
        ];
        let mut sandbox = fx.sandbox();
        for (name, value) in secrets.iter() {
            sandbox = sandbox.env(name, value);
        }
        for (name, value) in ordinary {
            sandbox = sandbox.env(name, value);
        }
        let out = proc_scan(sandbox, &canary);
        out.ok();
        let env: Vec<&str> = line(&out, "env").split(' ').collect();
        for name in ["PATH", "HOME", "LANG", "TERM"]
            .into_iter()
            .chain(ordinary.iter().map(|(n, _)| *n))
        {
            assert!(env.contains(&name), "{mode:?}: {name} removed: {out:#?}");
        }
        assert!(
            line(&out, "read").parse::<u32>().unwrap_or(0) >= 2,
            "{mode:?}: {out:#?}"
        );
        let leaked: Vec<&str> = secrets
            .iter()
            .map(|(n, _)| n.as_str())
            .filter(|n| env.contains(n))
            .collect();
        assert!(leaked.is_empty(), "{mode:?}: inside: {leaked:?}: {out:#?}");
        assert_eq!(line(&out, "hits"), "none", "{mode:?}: {out:#?}");
    });
}

/// `--set-env` (and `set_env`) gives the command a value in place of the
/// caller's; one of the variables cordon sets itself (the temporary
/// directory, the proxy's, a placeholder's) is refused before anything
/// runs, naming where it came from.
#[test]
fn set_env_gives_values_but_not_cordons_own_variables() {
    each_fixture(|mode, fx| {
        let out = fx
            .sandbox()
            .env("MINE", "callers")
            .flag("--set-env", "MINE=policy's")
            .flag("--set-env", "NEW=two words")
            .sh("printf 'set: mine=%s new=%s\\n' \"$MINE\" \"$NEW\"");
        out.ok();
        assert_eq!(
            line(&out, "set"),
            "mine=policy's new=two words",
            "{mode:?}: {out:#?}"
        );
        for own in [
            "TMPDIR=/var/tmp",
            "HTTPS_PROXY=http://evil.example:1",
            "http_proxy=x",
        ] {
            let marker = fx.project.join("ran");
            let refused = fx
                .sandbox()
                .flag("--set-env", own)
                .sh(&format!("touch {}", marker.display()));
            refused.expect_code(125);
            assert!(
                refused.stderr.contains("set_env") && refused.stderr.contains("flag --set-env"),
                "{mode:?}: {own}: {refused:#?}"
            );
            assert!(!marker.exists(), "{mode:?}: {own}: the command ran");
        }
        // An injected secret's placeholder variable is cordon's too.
        let policy = fx.outside.join("inject.toml");
        std::fs::write(
            &policy,
            "[[credentials.inject]]\nenv = \"MY_KEY\"\nhosts = [\"api.example\"]\n",
        )
        .unwrap();
        chown(&policy, mode);
        let refused = fx
            .sandbox()
            .env("MY_KEY", "canary-value")
            .flag("--policy", &policy)
            .flag("--set-env", "MY_KEY=other")
            .sh("true");
        refused.expect_code(125);
        assert!(refused.stderr.contains("MY_KEY"), "{mode:?}: {refused:#?}");
    });
}
