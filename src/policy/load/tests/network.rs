//! The network, inspection and audit keys.

use super::*;

#[test]
fn network_rules_layer_with_sources() {
    let fx = Fx::new();
    let user = fx.write_user(
        "[network]\nallow = [\"API.GitHub.com.\", \"*.npmjs.org\"]\nports = [443, 8443]\n",
    );
    let project = fx.write_project("[network]\ndeny = [\"upload.npmjs.org\"]\nports = [443]\n");
    let pfile = fx.root.join("net.toml");
    fs::write(
        &pfile,
        "[network]\nallow = [\"host.cordon.internal:5432\", \"[::1]:8080\", \"10.1.0.0/16:5432\"]\n",
    )
    .unwrap();
    let flags = given(&[
        ("--allow-domain", &["Bücher.example:8443"]),
        ("--deny-domain", &["*.internal.example.com"]),
    ]);
    let mut req = fx.req(flags);
    req.policy_files = vec![pfile.clone()];
    let p = load(&req).unwrap();
    let u = Source::UserConfig(user);
    let pr = Source::Project(project);
    let pf = Source::PolicyFile(pfile);
    let flag = |f: &str| Source::Flag(f.to_string());
    let hosts = &p.network.hosts;
    assert_eq!(
        rule_texts(&hosts.allow),
        vec![
            ("api.github.com".to_string(), u.clone()),
            ("*.npmjs.org".to_string(), u.clone()),
            ("host.cordon.internal:5432".to_string(), pf.clone()),
            ("[::1]:8080".to_string(), pf.clone()),
            ("10.1.0.0/16:5432".to_string(), pf.clone()),
            (
                "xn--bcher-kva.example:8443".to_string(),
                flag("--allow-domain")
            ),
        ]
    );
    assert_eq!(
        rule_texts(&hosts.deny),
        vec![
            ("upload.npmjs.org".to_string(), pr.clone()),
            ("*.internal.example.com".to_string(), flag("--deny-domain")),
        ]
    );
    // `ports` replaces: the untrusted project narrowed the user's list.
    assert_eq!(hosts.ports, Sourced::new(vec![443], pr));
    assert!(hosts.host_internal_port_allowed(5432));
}

#[test]
fn network_defaults() {
    let fx = Fx::new();
    let p = fx.load().unwrap();
    let hosts = &p.network.hosts;
    assert!(hosts.allow.is_empty() && hosts.deny.is_empty());
    assert_eq!(hosts.ports, Sourced::new(vec![80, 443], Source::Builtin));
}

#[test]
fn network_errors_point_at_the_value() {
    let fx = Fx::new();
    let err = fx.project_error("[network]\ndeny = [\"a.com\", \"b.com\", \"a.*.com\"]\n");
    assert!(
        err.starts_with(
            "2:27: network.deny[2]: invalid host pattern \"a.*.com\": a wildcard may only be a leading `*.`"
        ),
        "{err}"
    );
    for (text, want) in [
        (
            "[network]\ndeny = [\"*\"]\n",
            "2:9: network.deny[0]: invalid host pattern \"*\": ",
        ),
        (
            "[network]\ndeny = [\"*.com\"]\n",
            "2:9: network.deny[0]: invalid host pattern \"*.com\": a wildcard needs a domain of at least two labels",
        ),
        (
            "[network]\ndeny = [\"host.cordon.internal\"]\n",
            "2:9: network.deny[0]: invalid host pattern \"host.cordon.internal\": host.cordon.internal needs a port",
        ),
        (
            "[network]\ndeny = [\"0x7f.1\"]\n",
            "2:9: network.deny[0]: invalid host pattern \"0x7f.1\": numeric form",
        ),
        (
            "[network]\ndeny = [80]\n",
            "2:9: network.deny[0]: expected a string, found an integer",
        ),
        (
            "[network]\ndeny = \"a.com\"\n",
            "2:8: network.deny: expected an array of strings, found a string",
        ),
        (
            "[network]\nports = [443, 0]\n",
            "2:15: network.ports[1]: 0 is not a TCP port (expected 1 to 65535)",
        ),
        (
            "[network]\nports = [\"443\"]\n",
            "2:10: network.ports[0]: expected an integer, found a string",
        ),
        (
            // Errors come before trust: a bad allow entry is reported as such.
            "[network]\nallow = [\"ok.com\", \"bad..com\"]\n",
            "2:20: network.allow[1]: invalid host pattern \"bad..com\": ",
        ),
    ] {
        let got = fx.project_error(text);
        assert!(got.starts_with(want), "{text:?}:\n got {got}\nwant {want}");
    }
}

#[test]
fn untrusted_project_network_trust() {
    let fx = Fx::new();
    let file = fx.project_file();
    // Narrowing: deny rules, ports already in force, an empty allow list.
    fx.write_project(
        "[network]\nallow = []\ndeny = [\"*.example.com\", \"10.0.0.0/8\"]\nports = [443, 443]\n",
    );
    let p = fx.load().unwrap();
    assert_eq!(p.network.hosts.deny.len(), 2);
    assert_eq!(p.network.hosts.ports.value, vec![443]);
    fx.write_project("[network]\nports = []\n");
    assert!(fx.load().unwrap().network.hosts.ports.value.is_empty());

    // Widening: allow rules, a port not in force.
    let hash = |t: &str| trust::file_hash(t.as_bytes());
    let tail = |t: &str| {
        format!(
            "the project's cordon.toml is not trusted, so it may only narrow the sandbox; review the file, then run `cordon trust {}` to approve it (sha256 {})",
            file.display(),
            hash(t)
        )
    };
    let text = "[network]\ndeny = [\"x.com\"]\nallow = [\"example.com\"]\n";
    assert_eq!(
        fx.project_error(text),
        format!("3:1: network.allow: {}", tail(text))
    );
    let text = "[network]\nports = [443, 8080, 22]\n";
    assert_eq!(
        fx.project_error(text),
        format!(
            "2:1: network.ports: 8080, 22 are not among the ports in force (built-in: 80, 443); {}",
            tail(text)
        )
    );
    let text = "[network]\nallow = [\"host.cordon.internal:5432\"]\n";
    assert!(fx
        .project_error(text)
        .starts_with("2:1: network.allow: the project's"));

    // Compared with the ports in force, as limits are.
    fx.write_user("[network]\nports = [443, 8080]\n");
    fx.write_project("[network]\nports = [8080]\n");
    assert_eq!(fx.load().unwrap().network.hosts.ports.value, vec![8080]);

    // Trusted, it may widen.
    let text = "[network]\nallow = [\"example.com\"]\nports = [8443]\n";
    fx.write_project(text);
    trust::trust(&fx.config, &file).unwrap();
    let p = fx.load().unwrap();
    assert_eq!(p.network.hosts.allow.len(), 1);
    assert_eq!(p.network.hosts.ports.value, vec![8443]);
}

#[test]
fn inspection_keys_as_the_issue_writes_them() {
    let fx = Fx::new();
    let file = fx.write_user(
        "[network]\nallow = [\"api.github.com\", \"127.0.0.1:8443\"]\ninspect = [\"api.github.com\", \"127.0.0.1\"]\n\n\
         [[credentials.inject]]\nenv = \"GITHUB_TOKEN\"\nhosts = [\"api.github.com\", \"127.0.0.1\"]\n\n\
         [[credentials.inject]]\nenv = \"NPM_TOKEN\"\ncommand = [\"gh\", \"auth\", \"token\"]\nhosts = [\"*.npmjs.org\"]\n\n\
         [[credentials.inject]]\nenv = \"FROM_FILE\"\nfile = \"~/tok\"\nhosts = [\"*\"]\n\n\
         [[network.rules]]\nhost = \"api.github.com\"\nmethods = [\"GET\", \"HEAD\"]\npaths = [\"/repos/**\"]\n",
    );
    let flags = given(&[
        ("--inspect", &["*"]),
        ("--no-inspect", &["pinned.example"]),
        ("--upstream-ca", &["ca.pem"]),
    ]);
    let p = load(&fx.req(flags)).unwrap();
    let i = &p.inspection;
    let hosts: Vec<String> = i.inspect.iter().map(|h| h.value.to_string()).collect();
    assert_eq!(hosts, vec!["api.github.com", "127.0.0.1", "*"]);
    assert_eq!(i.inspect[0].source, Source::UserConfig(file.clone()));
    assert_eq!(i.inspect[2].source, Source::Flag("--inspect".into()));
    assert_eq!(i.no_inspect[0].value.to_string(), "pinned.example");
    assert_eq!(i.upstream_ca[0].value, fx.project.join("ca.pem"));
    assert_eq!(i.rules.len(), 1);
    assert_eq!(
        i.rules[0].value.to_string(),
        "api.github.com GET,HEAD /repos/**"
    );
    let names: Vec<&str> = i.inject.iter().map(|s| s.value.env.as_str()).collect();
    assert_eq!(names, vec!["GITHUB_TOKEN", "NPM_TOKEN", "FROM_FILE"]);
    assert_eq!(i.inject[0].value.source, SecretSource::Env);
    assert_eq!(
        i.inject[1].value.source,
        SecretSource::Command(vec!["gh".into(), "auth".into(), "token".into()])
    );
    assert_eq!(
        i.inject[2].value.source,
        SecretSource::File(fx.home.join("tok"))
    );
}

#[test]
fn inspection_errors_name_file_line_and_key() {
    let fx = Fx::new();
    let cases = [
        (
            "[network]\ninspect = [\"bad host\"]\n",
            "2:12: network.inspect[0]: invalid host pattern \"bad host\": must not contain spaces",
        ),
        (
            "[[network.rules]]\nhost = \"a.com\"\nmethod = [\"GET\"]\n",
            "3:1: network.rules[0].method: unknown key (expected one of host, methods, paths)",
        ),
        (
            "[[network.rules]]\nmethods = [\"GET\"]\n",
            "1:1: network.rules[0]: missing key host",
        ),
        (
            "[[network.rules]]\nhost = \"a.com\"\npaths = [\"repos/**\"]\n",
            "3:9: network.rules[0]: invalid path glob \"repos/**\": a path glob starts with /",
        ),
        (
            "[[credentials.inject]]\nhosts = [\"a.com\"]\n",
            "1:1: credentials.inject[0]: missing key env (the variable that holds the placeholder inside)",
        ),
        (
            "[[credentials.inject]]\nenv = \"9X\"\nhosts = [\"a.com\"]\n",
            "2:7: credentials.inject[0].env: invalid variable name \"9X\" (letters, digits and _, not starting with a digit)",
        ),
        (
            "[[credentials.inject]]\nenv = \"T\"\nfile = \"/x\"\ncommand = [\"y\"]\nhosts = [\"a\"]\n",
            "4:1: credentials.inject[0].command: a second source: name one source (env alone, file, or command)",
        ),
        (
            "[credentials]\ninject = 3\n",
            "2:10: credentials.inject: expected an array of tables ([[credentials.inject]]), found an integer",
        ),
    ];
    for (text, expected) in cases {
        let file = fx.write_user(text);
        let err = fx.load().expect_err(text).to_string();
        let prefix = format!("{}:", file.display());
        assert_eq!(err.strip_prefix(&prefix), Some(expected), "{text}");
    }
    fx.write_user("");
    let err = load(&fx.req(given(&[("--inspect", &["a b"])])))
        .unwrap_err()
        .to_string();
    assert!(err.starts_with("--inspect: invalid host pattern"), "{err}");
}

#[test]
fn untrusted_project_may_add_inspection_and_rules_but_not_secrets() {
    let fx = Fx::new();
    // Narrowing: more checks.
    fx.write_project(
        "[network]\ninspect = [\"*\"]\n[[network.rules]]\nhost = \"a.com\"\nmethods = [\"GET\"]\n",
    );
    let p = fx.load().unwrap();
    assert_eq!(p.inspection.rules.len(), 1);
    // Widening: a secret sent somewhere, a CA trusted, a host left opaque.
    for (text, key) in [
        (
            "[[credentials.inject]]\nenv = \"AWS_SECRET_ACCESS_KEY\"\nhosts = [\"evil.example\"]\n",
            "1:15: credentials.inject:",
        ),
        (
            "[network]\nupstream_ca = [\"ca.pem\"]\n",
            "2:1: network.upstream_ca:",
        ),
        (
            "[network]\nno_inspect = [\"a.com\"]\n",
            "2:1: network.no_inspect:",
        ),
    ] {
        let err = fx.project_error(text);
        assert!(err.starts_with(key), "{err}");
        assert!(err.contains("not trusted"), "{err}");
    }
}

#[test]
fn audit_log_and_connection_cap() {
    let fx = Fx::new();
    // Defaults: the log under the state dir, the built-in cap.
    let p = fx.load().unwrap();
    assert_eq!(
        p.audit.log,
        Sourced::new(
            Some(fx.home.join(".local/state/cordon/audit.jsonl")),
            Source::Builtin
        )
    );
    assert_eq!(
        p.network.max_connections,
        Sourced::new(MAX_CONNECTIONS, Source::Builtin)
    );

    // A --policy file: relative to its directory; flags win.
    let pol = fx.root.join("pol.toml");
    fs::write(
        &pol,
        "[audit]\nfile = \"logs/a.jsonl\"\n[network]\nmax_connections = 8\n",
    )
    .unwrap();
    let req = |flags: Vec<FlagValue>| LoadRequest {
        policy_files: vec![pol.clone()],
        ..fx.req(flags)
    };
    let p = load(&req(Vec::new())).unwrap();
    let from_file = Source::PolicyFile(pol.clone());
    assert_eq!(
        p.audit.log,
        Sourced::new(Some(fx.root.join("logs/a.jsonl")), from_file.clone())
    );
    assert_eq!(p.network.max_connections, Sourced::new(8, from_file));
    let p = load(&req(given(&[
        ("--audit", &["none"]),
        ("--max-connections", &["3"]),
    ])))
    .unwrap();
    let flag = |f: &str| Source::Flag(f.to_string());
    assert_eq!(p.audit.log, Sourced::new(None, flag("--audit")));
    assert_eq!(
        p.network.max_connections,
        Sourced::new(3, flag("--max-connections"))
    );
    let p = load(&req(given(&[("--audit", &["~/x.jsonl"])]))).unwrap();
    assert_eq!(p.audit.log.value, Some(fx.home.join("x.jsonl")));

    // Bad values name the flag, or the file, line and key.
    let err = |flags: Vec<FlagValue>| load(&fx.req(flags)).unwrap_err().to_string();
    assert_eq!(
        err(given(&[("--max-connections", &["0"])])),
        "--max-connections: must be at least 1"
    );
    assert!(err(given(&[("--audit", &["/tmp/*.jsonl"])]))
        .starts_with("--audit: \"/tmp/*.jsonl\": the audit log must be one file"));
    fx.write_user("[network]\nmax_connections = \"many\"\n");
    let e = fx.load().unwrap_err().to_string();
    assert!(
        e.ends_with(":2:19: network.max_connections: expected an integer, found a string"),
        "{e}"
    );
    fx.write_user("[audit]\nfile = \"rel.jsonl\"\n");
    let e = fx.load().unwrap_err().to_string();
    assert!(e.contains(":2:8: audit.file: "), "{e}");
    fx.write_user("[audit]\nfiles = \"/x\"\n");
    let e = fx.load().unwrap_err().to_string();
    assert!(
        e.ends_with(":2:1: audit.files: unknown key (expected one of file)"),
        "{e}"
    );
    fx.write_user("");

    // An untrusted project may lower the cap, not raise it, and may
    // not touch the log at all.
    fx.write_project("[network]\nmax_connections = 16\n");
    assert_eq!(fx.load().unwrap().network.max_connections.value, 16);
    let e = fx.project_error("[network]\nmax_connections = 5000\n");
    assert!(
        e.starts_with("2:1: network.max_connections: 5000 is more than the 4096 in force (built-in); the project's cordon.toml is not trusted"),
        "{e}"
    );
    for text in [
        "[audit]\nfile = \"none\"\n",
        "[audit]\nfile = \"log.jsonl\"\n",
    ] {
        let e = fx.project_error(text);
        assert!(
            e.starts_with("2:1: audit.file: the project's cordon.toml is not trusted"),
            "{e}"
        );
    }
    // Trusted, it may.
    fx.write_project("[audit]\nfile = \"log.jsonl\"\n");
    trust::trust(&fx.config, &fx.project_file()).unwrap();
    assert_eq!(
        fx.load().unwrap().audit.log.value,
        Some(fx.project.join("log.jsonl"))
    );
}

#[test]
fn network_flags() {
    let fx = Fx::new();
    let flags = given(&[
        ("--allow-domain", &["example.com", "[::1]:8080"]),
        ("--deny-domain", &["evil.example.com"]),
        ("--ports", &["443", "8443", "443"]),
    ]);
    let p = load(&fx.req(flags)).unwrap();
    let hosts = &p.network.hosts;
    assert_eq!(
        hosts.ports,
        Sourced::new(vec![443, 8443], Source::Flag("--ports".into()))
    );
    assert_eq!(rule_texts(&hosts.allow)[1].0, "[::1]:8080");
    assert_eq!(
        rule_texts(&hosts.deny),
        vec![(
            "evil.example.com".to_string(),
            Source::Flag("--deny-domain".into())
        )]
    );

    let bad = |flags: Vec<FlagValue>| load(&fx.req(flags)).unwrap_err().to_string();
    assert_eq!(
        bad(given(&[("--allow-domain", &["ok.com", "a.*.com"])])),
        "--allow-domain: invalid host pattern \"a.*.com\": a wildcard may only be a leading `*.` (`*.example.com`); `*` alone is not allowed"
    );
    assert!(bad(given(&[("--deny-domain", &["example.com:99999"])]))
        .starts_with("--deny-domain: invalid host pattern \"example.com:99999\": port"));
    assert_eq!(
        bad(given(&[("--ports", &["0"])])),
        "--ports: 0 is not a TCP port (expected 1 to 65535)"
    );
}

#[test]
fn a_host_entry_follows_its_variable_and_an_unset_key_is_left_out() {
    let fx = Fx::new();
    std::env::set_var(
        "CORDON_TEST_LOAD_BASE_URL",
        "https://Gateway.example:8443/v1",
    );
    std::env::remove_var("CORDON_TEST_LOAD_UNSET_URL");
    std::env::set_var("CORDON_TEST_LOAD_KEY", "sk-test");
    std::env::remove_var("CORDON_TEST_LOAD_NO_KEY");
    fx.write_user(
        "[network]\nallow = [\"$CORDON_TEST_LOAD_BASE_URL\", \"$CORDON_TEST_LOAD_UNSET_URL\"]\n\n\
         [[credentials.inject]]\nenv = \"CORDON_TEST_LOAD_KEY\"\nhosts = [\"api.example\", \"$CORDON_TEST_LOAD_BASE_URL\"]\nwhen_set = true\n\n\
         [[credentials.inject]]\nenv = \"CORDON_TEST_LOAD_NO_KEY\"\nhosts = [\"api.example\"]\nwhen_set = true\n",
    );
    let p = fx.load().unwrap();
    let allowed: Vec<String> = p
        .network
        .hosts
        .allow
        .iter()
        .map(|r| r.value.to_string())
        .collect();
    assert_eq!(allowed, vec!["gateway.example:8443"]);
    let injected: Vec<(String, Vec<String>)> = p
        .inspection
        .inject
        .iter()
        .map(|i| {
            let hosts = i.value.hosts.iter().map(ToString::to_string).collect();
            (i.value.env.clone(), hosts)
        })
        .collect();
    assert_eq!(
        injected,
        vec![(
            "CORDON_TEST_LOAD_KEY".to_string(),
            vec![
                "api.example".to_string(),
                "gateway.example:8443".to_string()
            ]
        )]
    );
    let left_out: Vec<&str> = p
        .inspection
        .not_set
        .iter()
        .map(|n| n.value.as_str())
        .collect();
    assert_eq!(left_out, vec!["CORDON_TEST_LOAD_NO_KEY"]);
    // Without when_set, an unset variable stays (and fails at start, as
    // before); when_set with a file source is an error naming the key.
    let err = fx.project_error(
        "[[credentials.inject]]\nenv = \"X\"\nfile = \"/x\"\nhosts = [\"a.example\"]\nwhen_set = true\n",
    );
    assert!(err.contains("credentials.inject[0].when_set"), "{err}");
    // A variable holding no URL is an error naming the key, not the value.
    std::env::set_var("CORDON_TEST_LOAD_BAD_URL", "sk-secret-not-a-url");
    let err = fx.project_error("[network]\nallow = [\"$CORDON_TEST_LOAD_BAD_URL\"]\n");
    assert!(
        err.contains("network.allow") && !err.contains("sk-secret"),
        "{err}"
    );
}

#[test]
fn set_env_takes_a_table_or_name_value_flags() {
    let fx = Fx::new();
    let user = fx.write_user("[credentials]\nset_env = { A = \"1\", B = \"two words\" }\n");
    let mut req = fx.req(given(&[("--set-env", &["A=3", "C="])]));
    req.policy_files = Vec::new();
    let p = load(&req).unwrap();
    let set: Vec<(String, String, Source)> = p
        .env
        .set
        .iter()
        .map(|s| (s.value.0.clone(), s.value.1.clone(), s.source.clone()))
        .collect();
    let u = Source::UserConfig(user);
    let flag = Source::Flag("--set-env".into());
    assert_eq!(
        set,
        vec![
            ("A".into(), "1".into(), u.clone()),
            ("B".into(), "two words".into(), u),
            ("A".into(), "3".into(), flag.clone()),
            ("C".into(), "".into(), flag),
        ]
    );
    let err = fx.project_error("[credentials]\nset_env = { \"9X\" = \"1\" }\n");
    assert!(err.contains("credentials.set_env.9X"), "{err}");
    let err = fx.project_error("[credentials]\nset_env = [\"A=1\"]\n");
    assert!(err.contains("expected a table"), "{err}");
}
