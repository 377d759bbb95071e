use super::*;

/// [`super::render`] of a run that was refused no write.
fn render(command: &str, seen: &[Seen], default_ports: &[u16]) -> String {
    let none = RefusedWrites {
        paths: &[],
        homes: &[],
    };
    super::render(command, seen, &none, default_ports)
}

fn seen(host: &str, port: u16, connections: u64) -> Seen {
    Seen {
        host: host.to_string(),
        port,
        connections,
        refused: None,
        allowed_by: None,
    }
}

/// The learned file's allow list, parsed back.
fn allowed(text: &str) -> Vec<String> {
    let doc: toml::Value = toml::from_str(text).unwrap_or_else(|e| panic!("{e}\n{text}"));
    doc.get("network")
        .and_then(|n| n.get("allow"))
        .and_then(|a| a.as_array())
        .map(|a| a.iter().map(|v| v.as_str().unwrap().to_string()).collect())
        .unwrap_or_default()
}

#[test]
fn siblings_collapse_into_a_pattern_only_when_many_and_not_under_a_shared_suffix() {
    let text = render(
        "npm install",
        &[
            seen("registry.npmjs.org", 443, 14),
            seen("a.cdn.example.com", 443, 2),
            seen("b.cdn.example.com", 443, 1),
            seen("c.cdn.example.com", 443, 1),
            seen("one.example.net", 443, 1),
            seen("two.example.net", 443, 1),
            seen("x.github.io", 443, 1),
            seen("y.github.io", 443, 1),
            seen("z.github.io", 443, 1),
            seen("b1.s3.us-east-1.amazonaws.com", 443, 1),
            seen("b2.s3.us-east-1.amazonaws.com", 443, 1),
            seen("b3.s3.us-east-1.amazonaws.com", 443, 1),
            seen("a.com", 443, 1),
            seen("b.com", 443, 1),
            seen("c.com", 443, 1),
        ],
        &[80, 443],
    );
    assert_eq!(
        allowed(&text),
        [
            "*.cdn.example.com",
            "a.com",
            "b.com",
            "b1.s3.us-east-1.amazonaws.com",
            "b2.s3.us-east-1.amazonaws.com",
            "b3.s3.us-east-1.amazonaws.com",
            "c.com",
            "one.example.net",
            "registry.npmjs.org",
            "two.example.net",
            "x.github.io",
            "y.github.io",
            "z.github.io",
        ],
        "{text}"
    );
    assert!(text.contains("14 connections"), "{text}");
    assert!(text.contains("a.cdn.example.com ×2"), "{text}");
}

#[test]
fn ports_ips_and_the_hosts_loopback_are_written_as_rules_that_admit_them() {
    let text = render(
        "x",
        &[
            seen("api.example.com", 8443, 1),
            seen("203.0.114.9", 443, 1),
            seen("2001:4860::1", 8080, 1),
            seen("host.cordon.internal", 5432, 3),
        ],
        &[80, 443],
    );
    assert_eq!(
        allowed(&text),
        [
            "203.0.114.9",
            "[2001:4860::1]:8080",
            "api.example.com:8443",
            "host.cordon.internal:5432",
        ],
        "{text}"
    );
}

#[test]
fn hosts_allowed_already_stay_separate_and_refusals_are_comments_only() {
    let mut known = seen("a.known.example", 443, 1);
    known.allowed_by = Some("*.known.example from flag --allow-domain".into());
    let mut refused = seen("internal.example", 443, 2);
    refused.refused = Some("resolved to 10.0.0.5: a private address".into());
    let text = render(
        "x",
        &[
            known,
            seen("b.known.example", 443, 1),
            seen("c.known.example", 443, 1),
            refused,
        ],
        &[80, 443],
    );
    assert_eq!(
        allowed(&text),
        ["a.known.example", "b.known.example", "c.known.example"],
        "{text}"
    );
    assert!(
        text.contains("allowed already by *.known.example"),
        "{text}"
    );
    assert!(
        text.contains("#   internal.example: resolved to 10.0.0.5: a private address"),
        "{text}"
    );
    let nothing = render("x", &[], &[80, 443]);
    assert!(allowed(&nothing).is_empty());
    assert!(nothing.contains("reached no host"), "{nothing}");
}

#[test]
fn hostile_names_cannot_break_out_of_the_toml_string() {
    let text = render("x\ny", &[seen("a\"b\n[x]", 443, 1)], &[80, 443]);
    assert_eq!(allowed(&text), ["a\"b\n[x]"], "{text}");
    assert!(
        !text.contains("\ny"),
        "the command name broke the comment: {text}"
    );
}

#[test]
fn presets_that_cover_reached_hosts_are_suggested_as_comments() {
    let text = render(
        "npm install && pip install x",
        &[
            seen("registry.npmjs.org", 443, 3),
            seen("registry.yarnpkg.com", 443, 1),
            seen("files.pythonhosted.org", 443, 2),
            seen("example.com", 443, 1),
            // A port the presets' rules do not admit.
            seen("pypi.org", 8443, 1),
        ],
        &[80, 443],
    );
    // The allow list is unchanged: the suggestion is a comment.
    assert_eq!(
        allowed(&text),
        [
            "example.com",
            "files.pythonhosted.org",
            "pypi.org:8443",
            "registry.npmjs.org",
            "registry.yarnpkg.com",
        ]
    );
    let suggested: Vec<&str> = text
        .lines()
        .filter(|l| l.starts_with("#   presets = "))
        .collect();
    assert_eq!(suggested.len(), 2, "{text}");
    assert!(
        suggested[0].starts_with("#   presets = [\"npm\"]")
            && suggested[0].ends_with("# registry.npmjs.org, registry.yarnpkg.com"),
        "{text}"
    );
    assert!(
        suggested[1].starts_with("#   presets = [\"pypi\"]")
            && suggested[1].ends_with("# files.pythonhosted.org"),
        "{text}"
    );
    // Uncommented, a suggestion is a policy line.
    let line = suggested[0].trim_start_matches("#   ");
    let doc: toml::Value = toml::from_str(&format!("[network]\n{line}\n")).unwrap();
    assert_eq!(doc["network"]["presets"][0].as_str(), Some("npm"));
    // Nothing is suggested when no preset covers what was reached.
    let none = render("x", &[seen("example.com", 443, 1)], &[80, 443]);
    assert!(!none.contains("presets ="), "{none}");
}

#[test]
fn refused_writes_below_the_home_are_suggested_others_only_listed() {
    let home = Path::new("/home/u");
    let paths = [
        (PathBuf::from("/home/u/.cache/tool/a"), 2),
        (PathBuf::from("/home/u/.cache/tool/b"), 1),
        (PathBuf::from("/home/u/.toolrc"), 1),
        (PathBuf::from("/usr/lib/x/y"), 1),
        (PathBuf::from("/home/u/.cache/we\nird"), 1),
        (PathBuf::from("/home/u/.config/systemd/user/x.service"), 1),
        (PathBuf::from("/home/u/.local/bin/x"), 1),
    ];
    let writes = RefusedWrites {
        paths: &paths,
        homes: &[home.to_path_buf()],
    };
    let text = super::render("x", &[], &writes, &[80, 443]);
    let doc: toml::Value = toml::from_str(&text).unwrap_or_else(|e| panic!("{e}\n{text}"));
    let allow: Vec<&str> = doc["files"]["allow_write"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_str().unwrap())
        .collect();
    assert_eq!(allow, ["/home/u/.cache", "/home/u/.cache/tool"], "{text}");
    assert!(text.contains("3 writes refused (a, b)"), "{text}");
    assert!(
        text.contains("#   /home/u: 1 write refused (.toolrc)"),
        "{text}"
    );
    assert!(
        text.contains("#   /usr/lib/x: 1 write refused (y)"),
        "{text}"
    );
    assert!(!text.contains("we\nird"), "a name broke a comment: {text}");
    assert!(
        text.contains("#   /home/u/.config/systemd/user: 1 write refused (x.service)"),
        "a place whose files run later is suggested: {text}"
    );
}
