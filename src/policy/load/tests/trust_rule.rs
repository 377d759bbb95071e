//! The trust rule: an untrusted project file may only narrow.

use super::*;

#[test]
fn untrusted_project_may_narrow() {
    let fx = Fx::new();
    fx.write_user("[limits]\nmax_memory = \"16G\"\n");
    fx.write_project(
        "[files]\nallow_write = []\ndeny_read = [\"./.env\"]\ndeny_write = [\"./vendor\"]\n\
         protect = [\".github/workflows\"]\n\
         [limits]\nmax_procs = 4096\nmax_tmp = \"512M\"\nmax_memory = \"8G\"\ntimeout = \"1h\"\n\
         [network]\nlocal_ports = []\n[sandbox]\nallow_degraded = []\n",
    );
    let p = fx.load().unwrap();
    let src = Source::Project(fx.project_file());
    assert_eq!(p.limits.max_tmp, Sourced::new(512 << 20, src.clone()));
    assert_eq!(
        p.limits.max_memory,
        Some(Sourced::new(8 << 30, src.clone()))
    );
    assert_eq!(p.limits.max_procs, Sourced::new(4096, src.clone()));
    assert_eq!(
        p.limits.timeout.as_ref().map(|t| t.value),
        Some(Duration::from_secs(3600))
    );
    assert_eq!(
        p.files.protected.last(),
        Some(&Sourced::new(".github/workflows".to_string(), src.clone()))
    );
    assert!(!trust::trust_store(&fx.config).exists());
}

#[test]
fn untrusted_project_may_not_widen() {
    let fx = Fx::new();
    let file = fx.project_file();
    let cases = [
        ("[files]\nallow_write = [\"/\"]\n", "2:1: files.allow_write: "),
        ("[files]\nallow_read = [\"~/.ssh\"]\n", "2:1: files.allow_read: "),
        ("[network]\nlocal_ports = [22]\n", "2:1: network.local_ports: "),
        ("[sandbox]\nallow_degraded = [\"seccomp\"]\n", "2:1: sandbox.allow_degraded: "),
        (
            "[limits]\nmax_procs = 4097\n",
            "2:1: limits.max_procs: 4097 is more than the 4096 in force (built-in); ",
        ),
        (
            "[limits]\nmax_tmp = \"2G\"\n",
            "2:1: limits.max_tmp: 2 GiB is more than the 1 GiB in force (built-in); ",
        ),
        (
            "[files]\ndeny_read = [\"/x\"]\n\n[limits]\n  max_procs = 1\n  max_tmp = \"4G\"\n",
            "6:3: limits.max_tmp: 4 GiB is more than the 1 GiB in force (built-in); ",
        ),
        (
            // The whole file is checked before trust: errors come first.
            "[files]\nallow_write = [\"/\"]\n[files.x]\n",
            "3:8: files.x: unknown key",
        ),
        (
            "files.deny_read = []\nsandbox.allow_degraded = [\"limits\"]\nfiles.allow_write = [\"/\"]\n",
            "2:9: sandbox.allow_degraded: ",
        ),
    ];
    for (text, want) in cases {
        let got = fx.project_error(text);
        assert!(got.starts_with(want), "{text:?}:\n got {got}\nwant {want}");
        if want.contains("unknown key") {
            continue;
        }
        let hash = trust::file_hash(text.as_bytes());
        let tail = format!(
            "the project's cordon.toml is not trusted, so it may only narrow the sandbox; review the file, then run `cordon trust {}` to approve it (sha256 {hash})",
            file.display()
        );
        assert_eq!(got, format!("{want}{tail}"));
    }
}

#[test]
fn limits_compare_with_the_value_in_force() {
    let fx = Fx::new();
    fx.write_user("[limits]\ntimeout = \"1h\"\nmax_memory = \"4G\"\nmax_procs = 100\n");
    assert!(fx
        .project_error("[limits]\ntimeout = \"61m\"\n")
        .starts_with("2:1: limits.timeout: 1h1m is longer than the 1h in force (user config "));
    assert!(fx
        .project_error("[limits]\nmax_memory = 4294967297\n")
        .starts_with("2:1: limits.max_memory: 4294967297 bytes (about 4.0 GiB) is more than the 4 GiB in force (user config "));
    assert!(fx
        .project_error("[limits]\nmax_procs = 200\n")
        .starts_with("2:1: limits.max_procs: 200 is more than the 100 in force (user config "));
    fx.write_project("[limits]\ntimeout = 3600\nmax_memory = \"4G\"\nmax_procs = 100\n");
    fx.load().unwrap();
}

#[test]
fn trusted_project_may_widen_until_edited() {
    let fx = Fx::new();
    let text = "[files]\nallow_write = [\"~/.cache/pip\"]\n[limits]\nmax_procs = 9000\n";
    let file = fx.write_project(text);
    assert!(fx.project_error(text).contains("is not trusted"));

    let hash = trust::trust(&fx.config, &file).unwrap();
    assert_eq!(hash, trust::file_hash(text.as_bytes()));
    let p = fx.load().unwrap();
    let src = Source::Project(file.clone());
    assert_eq!(
        p.files.allow_write,
        vec![Sourced::new(
            exact(&fx.home.join(".cache/pip")),
            src.clone()
        )]
    );
    assert_eq!(p.limits.max_procs, Sourced::new(9000, src));

    // Any edit, even a narrowing one, withdraws the approval for widening.
    let edited = format!("{text}# reviewed\n");
    let got = fx.project_error(&edited);
    assert!(got.starts_with("2:1: files.allow_write: "), "{got}");
    assert!(got.ends_with(&format!("(sha256 {})", trust::file_hash(edited.as_bytes()))));

    // Narrowing-only files need no trust at all.
    fx.write_project("[files]\ndeny_read = [\"./.env\"]\n");
    fx.load().unwrap();

    // Untrusting withdraws it too.
    fx.write_project(text);
    trust::trust(&fx.config, &file).unwrap();
    fx.load().unwrap();
    assert!(trust::untrust(&fx.config, &file).unwrap());
    assert!(fx.project_error(text).contains("is not trusted"));
}

#[test]
fn user_config_and_policy_files_are_trusted() {
    let fx = Fx::new();
    fx.write_user("[files]\nallow_write = [\"/var/tmp/x\"]\n[limits]\nmax_procs = 99999\n");
    let pfile = fx.root.join("p.toml");
    fs::write(
        &pfile,
        "[sandbox]\nallow_degraded = [\"landlock\"]\n[network]\nlocal_ports = [80]\n",
    )
    .unwrap();
    let mut req = fx.req(Vec::new());
    req.policy_files = vec![pfile];
    let p = load(&req).unwrap();
    assert_eq!(p.limits.max_procs.value, 99999);
    assert!(p.degraded_ok(Layer::Landlock));
    assert_eq!(values(&p.network.local_ports), vec![80]);
}

#[test]
fn untrusted_message_quotes_odd_paths() {
    let fx = Fx::new();
    let dir = fx.root.join("it's here");
    fs::create_dir_all(&dir).unwrap();
    fs::write(dir.join("cordon.toml"), "[files]\nallow_write = [\"/\"]\n").unwrap();
    let mut req = fx.req(Vec::new());
    req.project = Some(dir.clone());
    let err = load(&req).unwrap_err().to_string();
    let quoted = format!("'{}'", dir.join("cordon.toml").display()).replace("it's", r"it'\''s");
    assert!(err.contains(&format!("`cordon trust {quoted}`")), "{err}");
    assert!(matches!(load(&req), Err(LoadError::Untrusted { .. })));
}

#[test]
fn an_untrusted_project_may_not_name_a_preset_that_widens_until_trusted() {
    let fx = Fx::new();
    let text = "[network]\ndeny = [\"upload.example\"]\npresets = [\n  \"crates\"]\n";
    let got = fx.project_error(text);
    let want = "3:1: network.presets: preset crates sets network.allow, which widens the sandbox; the project's cordon.toml is not trusted, so it may only narrow the sandbox; ";
    assert!(got.starts_with(want), "\n got {got}\nwant {want}");
    // Named by a flag, it needs no trust.
    fx.write_project("[network]\ndeny = [\"upload.example\"]\n");
    load(&fx.req(given(&[("--preset", &["crates"])]))).unwrap();

    let file = fx.write_project(text);
    trust::trust(&fx.config, &file).unwrap();
    let p = fx.load().unwrap();
    let from = Source::Preset {
        name: "crates".into(),
        from: Box::new(Source::Project(file.clone())),
    };
    assert_eq!(
        rule_texts(&p.network.hosts.allow),
        vec![
            ("index.crates.io".to_string(), from.clone()),
            ("static.crates.io".to_string(), from),
        ]
    );
    let named: Vec<(&str, &Source)> = p
        .network
        .presets
        .iter()
        .map(|n| (n.value.name.as_str(), &n.source))
        .collect();
    assert_eq!(named, vec![("crates", &Source::Project(file))]);
}
