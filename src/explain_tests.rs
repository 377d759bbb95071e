use super::*;
use crate::policy::load::flags::given;
use crate::policy::load::tests::Fx;
use crate::policy::load::{load, FlagValue};
use std::fs;

fn policy(fx: &Fx, flags: Vec<FlagValue>) -> Policy {
    load(&fx.req(flags)).unwrap()
}

/// The line of `text` that contains every one of `parts`.
fn line_with<'a>(text: &'a str, parts: &[&str]) -> &'a str {
    text.lines()
        .find(|l| parts.iter().all(|p| l.contains(p)))
        .unwrap_or_else(|| panic!("no line with {parts:?} in:\n{text}"))
}

#[test]
fn default_text_names_sources() {
    let fx = Fx::new();
    let p = policy(&fx, Vec::new());
    let text = render_text(&p);
    let project = fx.project.display().to_string();
    line_with(&text, &[&project, "project", "built-in"]);
    line_with(&text, &["/tmp", "private temp dir, 1 GiB", "built-in"]);
    line_with(&text, &["the whole root, read-only", "built-in"]);
    line_with(&text, &["~/.ssh", "built-in"]);
    line_with(&text, &[".git/hooks/", "directory", "built-in"]);
    line_with(&text, &[".gitmodules", "file", "built-in"]);
    line_with(&text, &["cordon's own config", "built-in"]);
    line_with(&text, &["max_procs", "4096 tasks", "built-in"]);
    line_with(&text, &["timeout", "none"]);
    line_with(&text, &["namespaces", "required", "built-in"]);
    line_with(&text, &["route out", "only lo"]);
    line_with(
        &text,
        &["proxy", "HTTP 127.0.0.1:3128", "SOCKS5 127.0.0.1:1080"],
    );
    line_with(&text, &["ports", "80, 443", "without :PORT", "built-in"]);
    line_with(
        &text,
        &[
            "metadata",
            "refused unless a rule names the address",
            "built-in",
        ],
    );
    line_with(&text, &["none: add --allow-domain HOST"]);
    for heading in ["FILES", "NETWORK", "CREDENTIALS", "LIMITS", "LAYERS"] {
        assert!(text.lines().any(|l| l == heading), "{heading} in\n{text}");
    }
    // Credential builtins are not repeated among the other unreadable paths.
    let files = text.split("CREDENTIALS").next().unwrap();
    assert!(!files.contains(".ssh"), "{files}");
    // The system's secrets, which lie under no home, are.
    line_with(files, &["/etc/shadow", "system secret", "built-in"]);
    // Columns line up: sources of two rows start at the same column.
    let a = line_with(&text, &["max_procs"]);
    let b = line_with(&text, &["max_tmp"]);
    assert_eq!(a.find("built-in"), b.find("built-in"), "\n{a}\n{b}");
}

#[test]
fn audit_log_and_connection_cap() {
    let fx = Fx::new();
    let p = policy(&fx, Vec::new());
    let text = render_text(&p);
    let default = fx.home.join(".local/state/cordon/audit.jsonl");
    line_with(&text, &["log", &default.display().to_string(), "built-in"]);
    line_with(&text, &["max connections", "4096 at once", "built-in"]);
    let json = render_json(&p);
    assert_eq!(json["audit"]["file"], default.display().to_string());
    assert_eq!(json["audit"]["from"], "built-in");
    assert_eq!(json["network"]["max_connections"]["value"], 4096);

    let flags = given(&[("--audit", &["none"]), ("--max-connections", &["64"])]);
    let p = policy(&fx, flags);
    let text = render_text(&p);
    line_with(&text, &["log", "off (--audit none)", "flag --audit"]);
    line_with(
        &text,
        &["max connections", "64 at once", "flag --max-connections"],
    );
    let json = render_json(&p);
    assert_eq!(json["audit"]["file"], serde_json::Value::Null);
    assert_eq!(
        json["network"]["max_connections"]["from"],
        "flag --max-connections"
    );
}

#[test]
fn flags_show_as_their_sources() {
    let fx = Fx::new();
    let flags = given(&[
        ("--allow-write", &["/var/tmp/build"]),
        ("--allow-read", &["~/.npmrc", "~/.config/gh/hosts.yml"]),
        ("--deny-read", &["./secrets"]),
        ("--max-tmp", &["512M"]),
        ("--timeout", &["1h30m"]),
        ("--allow-degraded", &["landlock"]),
        ("--local-ports", &["3000"]),
        ("--host-port", &["5432"]),
        ("--publish", &["8080:18080"]),
    ]);
    let p = policy(&fx, flags);
    let text = render_text(&p);
    line_with(&text, &["/var/tmp/build", "flag --allow-write"]);
    line_with(&text, &["/tmp", "512 MiB", "flag --max-tmp"]);
    line_with(&text, &["timeout", "1h30m", "flag --timeout"]);
    let secrets = fx.project.join("secrets").display().to_string();
    line_with(&text, &[&secrets, "flag --deny-read"]);
    line_with(
        &text,
        &["~/.npmrc", "re-allowed by flag --allow-read", "built-in"],
    );
    line_with(
        &text,
        &["~/.config/gh", "partly re-allowed by flag --allow-read"],
    );
    line_with(&text, &["local ports", "only 3000", "flag --local-ports"]);
    line_with(
        &text,
        &["host port 5432", "[::1]:5432 inside", "flag --host-port"],
    );
    line_with(&text, &["host.cordon.internal:5432", "flag --host-port"]);
    line_with(
        &text,
        &[
            "published 8080",
            "127.0.0.1:18080 reaches",
            "flag --publish",
        ],
    );
    line_with(
        &text,
        &[
            "landlock",
            "may be skipped (--allow-degraded, flag --allow-degraded)",
        ],
    );
    line_with(&text, &["seccomp", "required"]);
    assert!(!line_with(&text, &["~/.ssh"]).contains("re-allowed"));
}

#[test]
fn json_has_the_same_content() {
    let fx = Fx::new();
    let flags = given(&[
        ("--allow-read", &["~/.npmrc"]),
        ("--max-memory", &["8G"]),
        ("--allow-degraded", &["seccomp"]),
        ("--local-ports", &["8080"]),
        ("--host-port", &["5432"]),
        ("--publish", &["8080:18080"]),
    ]);
    let p = policy(&fx, flags);
    let json = render_json(&p);
    assert_eq!(json["files"]["writable"][0]["from"], "built-in");
    assert_eq!(json["files"]["writable"][1]["path"], "/tmp");
    assert_eq!(json["limits"]["max_procs"]["value"], 4096);
    assert_eq!(json["limits"]["max_memory"]["bytes"], 8u64 << 30);
    assert_eq!(json["limits"]["max_memory"]["from"], "flag --max-memory");
    assert_eq!(
        json["limits"]["max_memory"]["source"],
        serde_json::json!({"kind": "flag", "detail": "--max-memory"})
    );
    assert!(json["limits"]["timeout"].is_null());
    assert_eq!(json["network"]["local_ports"]["ports"][0], 8080);
    assert_eq!(json["network"]["host_ports"][0]["port"], 5432);
    assert_eq!(json["network"]["publish"][0]["host"], 18080);
    assert_eq!(json["network"]["interfaces"], serde_json::json!(["lo"]));
    let entries = json["credentials"]["homes"][0]["entries"]
        .as_array()
        .unwrap();
    let npmrc = entries
        .iter()
        .find(|e| e["relative"] == "~/.npmrc")
        .unwrap();
    assert_eq!(npmrc["re_allowed_by"][0]["from"], "flag --allow-read");
    assert_eq!(npmrc["re_allowed_by"][0]["partly"], false);
    let layers = json["layers"].as_array().unwrap();
    let seccomp = layers.iter().find(|l| l["layer"] == "seccomp").unwrap();
    assert_eq!(seccomp["required"], false);
    let landlock = layers.iter().find(|l| l["layer"] == "landlock").unwrap();
    assert_eq!(landlock["required"], true);
}

#[test]
fn inspection_rules_and_injected_names_never_values() {
    let fx = Fx::new();
    let user = fx.write_user(
            "[[network.rules]]\nhost = \"api.github.com\"\nmethods = [\"GET\"]\npaths = [\"/repos/**\"]\n\
             [[credentials.inject]]\nenv = \"CORDON_EXPLAIN_TEST_TOKEN\"\nhosts = [\"api.github.com\"]\n",
        );
    let flags = given(&[
        ("--inspect", &["127.0.0.1"]),
        ("--no-inspect", &["pinned.example"]),
    ]);
    let p = policy(&fx, flags);
    let text = render_text(&p);
    line_with(&text, &["127.0.0.1", "flag --inspect"]);
    line_with(
        &text,
        &["pinned.example", "not inspected", "flag --no-inspect"],
    );
    line_with(
        &text,
        &["api.github.com", "inspected: [[network.rules]] names it"],
    );
    line_with(&text, &["api.github.com GET /repos/**", "user config"]);
    line_with(
        &text,
        &[
            "CORDON_EXPLAIN_TEST_TOKEN",
            "to api.github.com",
            "cordon's environment",
        ],
    );
    let json = render_json(&p);
    assert_eq!(
        json["inspection"]["inject"][0]["env"],
        "CORDON_EXPLAIN_TEST_TOKEN"
    );
    assert_eq!(
        json["inspection"]["rules"][0]["path"],
        "api.github.com GET /repos/**"
    );
    // Off by default, and says how to turn it on.
    fs::remove_file(user).unwrap();
    let text = render_text(&policy(&fx, Vec::new()));
    line_with(&text, &["off: add --inspect HOST"]);
}

#[test]
fn network_rules_with_sources() {
    let fx = Fx::new();
    fx.write_project("[network]\ndeny = [\"upload.example.com\", \"*.evil.test:8080\"]\n");
    let flags = given(&[
        (
            "--allow-domain",
            &[
                "api.github.com",
                "*.Bücher.example",
                "example.com:8443",
                "host.cordon.internal:5432",
                "10.1.0.0/16:5432",
                "[::1]:8080",
            ],
        ),
        ("--deny-domain", &["10.1.2.0/24"]),
        ("--ports", &["443", "8080"]),
    ]);
    let p = policy(&fx, flags);
    let text = render_text(&p);
    let project = format!("project {}", fx.project.join("cordon.toml").display());
    line_with(&text, &["ports", "443, 8080", "flag --ports"]);
    line_with(
        &text,
        &["api.github.com", "ports 443, 8080", "flag --allow-domain"],
    );
    line_with(
        &text,
        &[
            "*.xn--bcher-kva.example",
            "subdomains of xn--bcher-kva.example, ports 443, 8080",
        ],
    );
    line_with(
        &text,
        &["example.com:8443", "port 8443", "flag --allow-domain"],
    );
    line_with(
        &text,
        &[
            "host.cordon.internal:5432",
            "the host's own 127.0.0.1:5432",
            "flag --allow-domain",
        ],
    );
    line_with(
        &text,
        &["10.1.0.0/16:5432", "addresses in range, port 5432"],
    );
    line_with(&text, &["[::1]:8080", "this address, port 8080"]);
    line_with(&text, &["upload.example.com", "all ports", &project]);
    line_with(
        &text,
        &[
            "*.evil.test:8080",
            "subdomains of evil.test, port 8080",
            &project,
        ],
    );
    line_with(
        &text,
        &[
            "10.1.2.0/24",
            "addresses in range, all ports",
            "flag --deny-domain",
        ],
    );
    // Allowed hosts come under their own heading, before the denied ones.
    let allowed = text.find("allowed hosts").unwrap();
    let denied = text.find("denied hosts").unwrap();
    let api = text.find("api.github.com").unwrap();
    let upload = text.find("upload.example.com").unwrap();
    assert!(allowed < api && api < denied && denied < upload, "{text}");

    let json = render_json(&p);
    let net = &json["network"];
    assert_eq!(
        net["proxy"].as_str().map(|s| s.contains("127.0.0.1:3128")),
        Some(true)
    );
    assert_eq!(net["ports"]["ports"], serde_json::json!([443, 8080]));
    assert_eq!(net["ports"]["from"], "flag --ports");
    assert_eq!(net["allow"][0]["rule"], "api.github.com");
    assert_eq!(net["allow"][0]["kind"], "exact");
    assert_eq!(net["allow"][0]["ports"], serde_json::json!([443, 8080]));
    assert_eq!(net["allow"][1]["kind"], "subdomains");
    assert_eq!(net["allow"][3]["kind"], "host_internal");
    assert_eq!(net["allow"][4]["kind"], "cidr");
    assert_eq!(net["allow"][5]["kind"], "ip");
    assert_eq!(net["deny"][0]["all_ports"], true);
    assert_eq!(net["deny"][0]["source"]["kind"], "project");
    assert_eq!(net["deny"][1]["ports"], serde_json::json!([8080]));
    assert_eq!(
        net["host_internal"],
        serde_json::json!([{
            "port": 5432,
            "connects_to": "127.0.0.1:5432",
            "source": {"kind": "flag", "detail": "--allow-domain"},
            "from": "flag --allow-domain"
        }])
    );
}

#[test]
fn network_defaults_in_json() {
    let fx = Fx::new();
    let json = render_json(&policy(&fx, Vec::new()));
    let net = &json["network"];
    assert_eq!(net["allow"], serde_json::json!([]));
    assert_eq!(net["deny"], serde_json::json!([]));
    assert_eq!(net["host_internal"], serde_json::json!([]));
    assert_eq!(net["ports"]["ports"], serde_json::json!([80, 443]));
    assert_eq!(net["ports"]["from"], "built-in");
}

#[test]
fn project_file_lines_name_the_file() {
    let fx = Fx::new();
    fx.write_project("[files]\ndeny_write = [\"./vendor\"]\nprotect = [\".github/workflows\"]\n[limits]\ntimeout = \"2h\"\n");
    let p = policy(&fx, Vec::new());
    let text = render_text(&p);
    let source = format!("project {}", fx.project.join("cordon.toml").display());
    let vendor = fx.project.join("vendor").display().to_string();
    line_with(&text, &[&vendor, &source]);
    line_with(&text, &[".github/workflows", &source]);
    line_with(&text, &["timeout", "2h", &source]);
}

#[test]
fn each_line_of_a_preset_names_the_preset_and_what_named_it() {
    let fx = Fx::new();
    let none = render_text(&policy(&fx, Vec::new()));
    line_with(
        &none,
        &["none: add --allow-domain HOST", "or --preset NAME"],
    );
    let p = policy(&fx, given(&[("--preset", &["go"])]));
    let text = render_text(&p);
    line_with(
        &text,
        &["preset go", "the Go module mirror", "flag --preset"],
    );
    for host in ["proxy.golang.org", "sum.golang.org"] {
        line_with(&text, &[host, "ports 80, 443", "preset go (flag --preset)"]);
    }
    let json = render_json(&p);
    let source = serde_json::json!({
        "kind": "preset",
        "detail": { "name": "go", "from": { "kind": "flag", "detail": "--preset" } },
    });
    let allow = json["network"]["allow"].as_array().unwrap();
    let rules: Vec<(&str, &serde_json::Value, &str)> = allow
        .iter()
        .map(|r| {
            (
                r["rule"].as_str().unwrap(),
                &r["source"],
                r["from"].as_str().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        rules,
        vec![
            ("proxy.golang.org", &source, "preset go (flag --preset)"),
            ("sum.golang.org", &source, "preset go (flag --preset)"),
        ]
    );
    assert_eq!(
        json["network"]["presets"],
        serde_json::json!([{
            "name": "go",
            "about": "go: the Go module mirror (proxy.golang.org) and checksum database (sum.golang.org)",
            "agent": false,
            "source": { "kind": "flag", "detail": "--preset" },
            "from": "flag --preset",
        }])
    );
}

#[test]
fn an_exact_path_with_glob_characters_is_shown_escaped() {
    let fx = Fx::new();
    let flags = given(&[("--allow-write", &["/srv/we\\*rd", "/srv/g*"])]);
    let p = policy(&fx, flags);
    let text = render_text(&p);
    line_with(&text, &["/srv/we\\*rd", "flag --allow-write"]);
    line_with(&text, &["/srv/g*", "flag --allow-write"]);
    assert!(!text.contains("/srv/we*rd"), "{text}");
}
