use super::*;
use crate::policy::Sourced;

fn filter(deny: &[&str], keep: &[&str], clear: bool) -> EnvFilter {
    let flag = |f: &str| Source::Flag(f.into());
    EnvFilter::new(&EnvPolicy {
        deny: deny
            .iter()
            .map(|d| Sourced::new(d.to_string(), flag("--deny-env")))
            .collect(),
        keep: keep
            .iter()
            .map(|k| Sourced::new(k.to_string(), flag("--keep-env")))
            .collect(),
        clear: Sourced::new(
            clear,
            if clear {
                flag("--clear-env")
            } else {
                Source::Builtin
            },
        ),
        pass: Vec::new(),
        set: Vec::new(),
    })
}

fn removed(f: &EnvFilter, name: &str) -> Option<String> {
    f.removal(OsStr::new(name), OsStr::new("plain"))
        .map(|r| r.rule)
}

#[test]
fn secret_looking_names_are_removed_by_default() {
    let f = filter(&[], &[], false);
    for name in [
        "GITHUB_TOKEN",
        "GH_TOKEN",
        "ANTHROPIC_API_KEY",
        "OPENAI_API_KEY",
        "AWS_SECRET_ACCESS_KEY",
        "AWS_ACCESS_KEY_ID",
        "AWS_SESSION_TOKEN",
        "NPM_TOKEN",
        "MY_SERVICE_TOKEN",
        "DB_PASSWORD",
        "client_secret",
        "STRIPE_API_KEY",
        "GOOGLE_APPLICATION_CREDENTIALS",
        "SSH_AUTH_SOCK",
        "DATABASE_URL",
        "VAULT_TOKEN",
    ] {
        assert!(removed(&f, name).is_some(), "{name} kept");
    }
    for name in [
        "PATH",
        "HOME",
        "TERM",
        "LANG",
        "EDITOR",
        "TOKENIZERS_PARALLELISM",
        "KEYMAP",
    ] {
        assert_eq!(removed(&f, name), None, "{name} removed");
    }
}

#[test]
fn names_from_the_review_are_removed() {
    let f = filter(&[], &[], false);
    for name in [
        "MYSQL_PWD",
        "SENTRY_DSN",
        "SLACK_WEBHOOK_URL",
        "DISCORD_WEBHOOK",
        "JWT_SIGNING_KEY",
        "COOKIE_SIGNING_KEY",
        "APP_ENCRYPTION_KEY",
        "ENCRYPTION_KEY",
        "CI_JOB_JWT",
        "CI_JOB_JWT_V2",
        "DOCKER_AUTH_CONFIG",
        "npm_config__authToken",
        "npm_config_//registry.npmjs.org/:_authToken",
        "NGROK_AUTHTOKEN",
        "CREDENTIALS",
        "COOKIE",
        "AUTH",
        "AZURE_STORAGE_CONNECTION_STRING",
        "OP_SESSION_my",
        "BW_SESSION",
        "GPG_PASSPHRASE",
    ] {
        assert!(removed(&f, name).is_some(), "{name} kept");
    }
    for name in [
        "PWD",
        "OLDPWD",
        "XAUTHORITY",
        "AUTHOR",
        "REDIS_URL",
        "JWT_ALGORITHM",
    ] {
        assert_eq!(removed(&f, name), None, "{name} removed");
    }
}

fn by_value(f: &EnvFilter, name: &str, value: &str) -> Option<String> {
    f.removal(OsStr::new(name), OsStr::new(value))
        .map(|r| r.rule)
}

#[test]
fn plainly_secret_values_are_removed_whatever_the_name() {
    let f = filter(&[], &[], false);
    let gh = format!("ghp_{}", "a1B2".repeat(9));
    let jwt = "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U";
    let pem =
        "-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXk=\n-----END OPENSSH PRIVATE KEY-----";
    let cases: Vec<(String, &str)> = vec![
        (
            "redis://:hunter2@cache:6379/0".into(),
            "a URL with a password in it",
        ),
        (
            "postgres://app:s3cret@db/app".into(),
            "a URL with a password in it",
        ),
        (
            "https://u:p@proxy.corp:8080 http://other".into(),
            "a URL with a password in it",
        ),
        (gh.clone(), "a GitHub token (ghp_)"),
        (
            format!("Authorization: token {gh}"),
            "a GitHub token (ghp_)",
        ),
        (format!("gho_{}", "Zz9".repeat(12)), "a GitHub token (gho_)"),
        (format!("ghs_{}", "Zz9".repeat(12)), "a GitHub token (ghs_)"),
        (
            format!("github_pat_11AAAA_{}", "b7".repeat(30)),
            "a GitHub token (github_pat_)",
        ),
        (
            format!("sk-ant-api03-{}", "Q9x_".repeat(20)),
            "an Anthropic key (sk-ant-)",
        ),
        (
            format!("sk-proj-{}", "T3Blbk9".repeat(8)),
            "an API key (sk-)",
        ),
        (
            "xoxb-123456789012-1234567890123-AbCdEfGh".into(),
            "a Slack token (xoxb-)",
        ),
        (
            "xapp-1-A0123456789-1234567890-abcdef".into(),
            "a Slack token (xapp-)",
        ),
        ("AKIAIOSFODNN7EXAMPLE".into(), "an AWS access key id (AKIA)"),
        ("ASIAY34FZKBOKMUTVV7A".into(), "an AWS access key id (ASIA)"),
        (
            "glpat-xX1yY2zZ3wW4vV5uU6tT".into(),
            "a GitLab token (glpat-)",
        ),
        (format!("npm_{}", "aB3".repeat(12)), "an npm token (npm_)"),
        (
            format!("pypi-AgEIcHlwaS5vcmc{}", "x1Y_".repeat(12)),
            "a PyPI token (pypi-)",
        ),
        (
            format!("hf_{}", "kL8".repeat(11)),
            "a Hugging Face token (hf_)",
        ),
        (
            format!("dop_v1_{}", "0a".repeat(32)),
            "a DigitalOcean token (dop_v1_)",
        ),
        (jwt.into(), "a JSON Web Token (eyJ...)"),
        (pem.into(), "a PEM private key"),
    ];
    for (value, what) in &cases {
        assert_eq!(
            by_value(&f, "INNOCENT_NAME", value),
            Some(format!("value: {what}")),
            "{value}"
        );
    }
    // Ordinary values stay, and so do short words that share a prefix.
    for value in [
        "/usr/local/bin:/usr/bin:/bin",
        "/home/u",
        "en_US.UTF-8",
        "xterm-256color",
        "https://example.com/path?q=1",
        "http://localhost:8080",
        "ssh://git@github.com:22/org/repo.git",
        "https://user@example.com/",
        "postgres://app:@db/app",
        "sk-",
        "sk-1",
        "sk-learn",
        "/opt/venv/lib/python3.11/site-packages/sk-learn-0.24.2-py3.9-linux-x86_64.egg",
        "ghp_short",
        "npm_config_cache_directory_for_the_whole_machine",
        "AKIA",
        "AKIAIOSFODNN7EXAMPLEX",
        "eyJ",
        "1.2.3",
        "some-package-name-with-many-dashes-and-words",
    ] {
        assert_eq!(by_value(&f, "INNOCENT_NAME", value), None, "{value}");
    }
    // --keep-env still keeps one.
    let keep = filter(&[], &["INNOCENT_NAME"], false);
    assert_eq!(by_value(&keep, "INNOCENT_NAME", &gh), None);
}

/// Names the red team's canaries passed the scrub with: those the
/// integration test plants too (tests/data/red_team_env_names.txt), and one
/// with spaces.
fn red_team_names() -> impl Iterator<Item = &'static str> {
    include_str!("../../tests/data/red_team_env_names.txt")
        .lines()
        .filter(|l| !l.is_empty() && !l.starts_with('#'))
        .chain(["my service token"])
}

/// Ordinary names that must stay.
const ORDINARY_NAMES: &[&str] = &[
    "PATH",
    "HOME",
    "LANG",
    "TERM",
    "EDITOR",
    "SHELL",
    "KEYMAP",
    "XKB_DEFAULT_LAYOUT",
    "XDG_CONFIG_HOME",
    "XDG_DATA_HOME",
    "XDG_RUNTIME_DIR",
    "XDG_SESSION_ID",
    "GIT_ASKPASS",
    "SSH_ASKPASS",
    "PASSIVE_MODE",
    "TOKENIZERS_PARALLELISM",
    "COOKIECUTTER_CONFIG",
    "KEYBOARD",
    "PWD",
];

#[test]
fn names_from_the_red_team_are_removed_and_ordinary_ones_stay() {
    let f = filter(&[], &[], false);
    assert_eq!(red_team_names().count(), 35, "the shared list was not read");
    for name in red_team_names() {
        assert!(removed(&f, name).is_some(), "{name} kept");
    }
    for name in ORDINARY_NAMES {
        assert_eq!(removed(&f, name), None, "{name} removed");
    }
    assert_eq!(normalize_name("API__KEY"), "API_KEY");
    assert_eq!(normalize_name("OPENAI.API-KEY"), "OPENAI_API_KEY");
}

#[test]
fn values_from_the_red_team_are_removed() {
    use base64::Engine;
    let f = filter(&[], &[], false);
    let gh = format!("ghp_{}", "c4N4ry".repeat(6));
    let hex40 = "0123456789abcdef0123456789abcdef01234567";
    let cases: Vec<(String, &str)> = vec![
        (
            "https://api.example.com/v1/data?token=c4n4ry0123456789".into(),
            "a URL query parameter with a credential",
        ),
        (
            "https://example.com/cb?x=1&access_token=c4n4ry0123456789".into(),
            "a URL query parameter with a credential",
        ),
        (
            "https://example.com/?api_key=c4n4ry0123456789".into(),
            "a URL query parameter with a credential",
        ),
        (
            "https://maps.example.com/api?key=c4n4ry0123456789".into(),
            "a URL query parameter with a credential",
        ),
        (
            "https://acct.blob.example.net/c/b?sv=2022&sig=c4n4ry%2B0123456789".into(),
            "a URL query parameter with a credential",
        ),
        (
            format!("https://{hex40}@github.com/org/repo.git"),
            "a URL with a token as its user name",
        ),
        (
            "https://hooks.slack.com/services/T000/B000/c4n4ry".into(),
            "a webhook URL",
        ),
        (
            "https://discord.com/api/webhooks/123/c4n4ry".into(),
            "a webhook URL",
        ),
        (
            "https://user:pa#ss?w0rd@db.example.com/".into(),
            "a URL with a password in it",
        ),
        (
            format!("hvs.{}", "CAESIc4n4ry9".repeat(8)),
            "a Vault service token (hvs.)",
        ),
        (
            format!("ya29.a0Af{}", "c4n4ry-_9".repeat(10)),
            "a Google OAuth access token (ya29.)",
        ),
        (
            format!(
                "SG.{}.{}",
                "c4n4ry0123456789abcdef", "c4n4ry0123456789abcdefABCDEF0123456789abcde"
            ),
            "a SendGrid key (SG.)",
        ),
        (format!("gsk_{}", "c4N4ry".repeat(9)), "a Groq key (gsk_)"),
        (format!("xai-{}", "c4N4ry".repeat(14)), "an xAI key (xai-)"),
        (
            format!("AGE-SECRET-KEY-1{}", "QC4N4RY9".repeat(7) + "QQ"),
            "an age secret key (AGE-SECRET-KEY-1)",
        ),
        (gh.replace('_', "%5F"), "a percent-encoded secret"),
        (
            base64::engine::general_purpose::STANDARD.encode(&gh),
            "a base64-encoded secret",
        ),
        (
            base64::engine::general_purpose::STANDARD_NO_PAD.encode("postgres://app:c4n4ry@db/app"),
            "a base64-encoded secret",
        ),
    ];
    for (value, what) in &cases {
        assert_eq!(
            by_value(&f, "INNOCENT_NAME", value),
            Some(format!("value: {what}")),
            "{value}"
        );
    }
    for value in ORDINARY_VALUES {
        assert_eq!(by_value(&f, "INNOCENT_NAME", value), None, "{value}");
    }
}

/// Values that must stay, whatever the variable's name.
const ORDINARY_VALUES: &[&str] = &[
    "/usr/local/bin:/usr/bin:/bin",
    "/home/someuser/projects/thing",
    "/home/someuser/.local/share",
    "en_US.UTF-8",
    "xterm-256color",
    "/bin/bash",
    "vim",
    "de-latin1",
    "https://example.com/search?q=hello&page=2",
    "https://example.com/?key=1",
    "https://git@github.com/org/repo.git",
    "https://john.doe@example.com/",
    "https://example.com/page#section:1@x",
    "ssh://git@github.com:22/org/repo.git",
    "dGhpcyBpcyBqdXN0IHRleHQ=",
    "SGVsbG8gd29ybGQsIGhlbGxvIHdvcmxk",
    "100%25 done",
    "ThisIsALongCamelCaseWordNoDigits",
    "0123456789",
    "yes",
];

#[test]
fn deny_adds_keep_wins_and_clear_keeps_only_the_kept() {
    let f = filter(&["CORP_*"], &["GITHUB_TOKEN"], false);
    assert_eq!(removed(&f, "CORP_PROXY_URL").as_deref(), Some("CORP_*"));
    assert_eq!(removed(&f, "GITHUB_TOKEN"), None);
    assert_eq!(removed(&f, "NPM_TOKEN").as_deref(), Some("*TOKEN"));
    // A deny pattern meets other spellings of the name too.
    assert_eq!(removed(&f, "corp-proxy-url").as_deref(), Some("CORP_*"));

    let f = filter(&[], &["PATH", "LC_*"], true);
    assert_eq!(removed(&f, "PATH"), None);
    assert_eq!(removed(&f, "LC_ALL"), None);
    assert_eq!(removed(&f, "HOME").as_deref(), Some("clear_env"));
}

#[test]
fn a_cleared_environment_passes_the_pass_names_but_not_their_secrets() {
    let mut policy = filter(&["CORP_*"], &["KEPT_TOKEN"], true).policy;
    policy.pass = ["PATH", "GITHUB_TOKEN", "CORP_URL", "LC_*"]
        .iter()
        .map(|n| Sourced::new(n.to_string(), Source::Flag("--pass-env".into())))
        .collect();
    let f = EnvFilter::new(&policy);
    assert_eq!(removed(&f, "PATH"), None);
    assert_eq!(removed(&f, "LC_CTYPE"), None);
    assert_eq!(removed(&f, "KEPT_TOKEN"), None);
    // Passed, but a secret or denied all the same.
    assert_eq!(removed(&f, "GITHUB_TOKEN").as_deref(), Some("*TOKEN"));
    assert_eq!(removed(&f, "CORP_URL").as_deref(), Some("CORP_*"));
    let by_value = f.removal(
        OsStr::new("PATH"),
        OsStr::new("ghp_abcdefghijklmnopqrstuvwxyz0123456789"),
    );
    assert!(by_value.is_some_and(|r| r.rule.starts_with("value")));
    assert_eq!(removed(&f, "HOME").as_deref(), Some("clear_env"));
}

#[test]
fn builtin_patterns_have_stars_only_at_their_ends() {
    for p in SECRET_PATTERNS {
        let inner = p.trim_start_matches('*').trim_end_matches('*');
        assert!(!inner.contains(['*', '?', '[']), "{p}");
        // The simple matcher agrees with a glob on a few names.
        let glob = Glob::new(p).unwrap().compile_matcher();
        for name in [
            "GITHUB_TOKEN",
            "MY_TOKEN_FILE",
            "A_SECRET_B",
            "PATH",
            "X_API_KEY",
            "AWS_ACCESS_KEY_ID",
        ] {
            assert_eq!(builtin_match(p, name), glob.is_match(name), "{p} {name}");
        }
    }
}

#[test]
fn values_never_appear_in_a_removal() {
    let f = filter(&[], &[], false);
    let (kept, removed) = f.apply([
        (OsString::from("GITHUB_TOKEN"), OsString::from("ghp_canary")),
        (
            OsString::from("NOTE"),
            OsString::from("postgres://app:canary@db/app"),
        ),
        (OsString::from("PATH"), OsString::from("/bin")),
    ]);
    assert_eq!(kept.len(), 1);
    assert_eq!(removed.len(), 2);
    assert!(!format!("{removed:?}").contains("canary"));
}
