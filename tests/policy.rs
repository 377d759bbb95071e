//! Policy loading fails closed; project policy trust; nested cordon;
//! `doctor` and `explain`.

mod common;

use common::*;

fn write_owned(fx: &Fixture, path: &std::path::Path, text: &str) {
    std::fs::write(path, text).unwrap();
    chown(path, fx.mode);
}

#[test]
fn unknown_key_in_policy_file_refuses_and_runs_nothing() {
    each_fixture(|mode, fx| {
        let policy = fx.outside.join("policy.toml");
        write_owned(
            fx,
            &policy,
            "[files]\ndeny_read = []\nallow_wrte = [\"/x\"]\n",
        );
        let marker = fx.project.join("marker");
        let out = fx.sandbox().flag("--policy", &policy).sh("touch marker");
        assert_eq!(out.code, 125, "{mode:?}: {out:#?}");
        assert!(
            out.stderr.contains(&format!("{}:3", policy.display())),
            "{mode:?}: no file:line: {out:#?}"
        );
        assert!(out.stderr.contains("allow_wrte"), "{mode:?}: {out:#?}");
        assert!(!marker.exists(), "{mode:?}: the command ran");
        // Control: the same file without the typo runs.
        write_owned(fx, &policy, "[files]\ndeny_read = []\n");
        fx.sandbox()
            .flag("--policy", &policy)
            .sh("touch marker")
            .ok();
        assert!(marker.exists(), "{mode:?}");
    });
}

#[test]
fn untrusted_widening_project_policy_is_refused_until_trusted() {
    each_fixture(|mode, fx| {
        let toml = fx.project.join("cordon.toml");
        let text = format!(
            "[files]\nallow_write = [{:?}]\n",
            fx.outside.display().to_string()
        );
        write_owned(fx, &toml, &text);
        let marker = fx.project.join("marker");
        let out = fx.sandbox().no_project_flag().sh("touch marker");
        assert_eq!(out.code, 125, "{mode:?}: {out:#?}");
        assert!(out.stderr.contains("cordon trust"), "{mode:?}: {out:#?}");
        assert!(!marker.exists(), "{mode:?}: the command ran");

        let trust = fx.sandbox().subcommand("trust").run(&[]);
        trust.ok();
        let write_outside = format!(
            "touch marker && echo widened > {}/w.txt",
            fx.outside.display()
        );
        fx.sandbox().no_project_flag().sh(&write_outside).ok();
        assert!(marker.exists(), "{mode:?}");
        assert_eq!(
            std::fs::read_to_string(fx.outside.join("w.txt")).unwrap(),
            "widened\n"
        );
        std::fs::remove_file(&marker).unwrap();

        // Editing the file withdraws the approval.
        write_owned(fx, &toml, &format!("{text}# edited\n"));
        let out = fx.sandbox().no_project_flag().sh("touch marker");
        assert_eq!(out.code, 125, "{mode:?}: {out:#?}");
        assert!(out.stderr.contains("cordon trust"), "{mode:?}: {out:#?}");
        assert!(!marker.exists(), "{mode:?}: the command ran");
    });
}

#[test]
fn narrowing_project_policy_applies_without_trust() {
    each_fixture(|mode, fx| {
        let secret = fx.outside.join("host.txt");
        let script = format!("cat {} 2>&1; echo END", secret.display());
        // Control: readable without the project file.
        let out = fx.sandbox().no_project_flag().sh(&script);
        assert!(
            out.stdout.contains("outside-original"),
            "{mode:?}: {out:#?}"
        );
        let toml = fx.project.join("cordon.toml");
        let text = format!(
            "[files]\ndeny_read = [{:?}]\n",
            secret.display().to_string()
        );
        write_owned(fx, &toml, &text);
        let out = fx.sandbox().no_project_flag().sh(&script);
        assert!(out.stdout.contains("END"), "{mode:?}: {out:#?}");
        assert!(
            !out.stdout.contains("outside-original"),
            "{mode:?}: {out:#?}"
        );
    });
}

#[test]
fn bogus_degraded_layer_is_an_error() {
    each_fixture(|mode, fx| {
        let out = fx
            .sandbox()
            .arg("--allow-degraded=bogus")
            .sh("touch marker");
        assert_ne!(out.code, 0, "{mode:?}: {out:#?}");
        assert!(out.stderr.contains("bogus"), "{mode:?}: {out:#?}");
        assert!(
            !fx.project.join("marker").exists(),
            "{mode:?}: the command ran"
        );
    });
}

#[test]
fn nested_cordon_refuses_without_namespaces() {
    each_fixture(|mode, fx| {
        let bin = fx.bin.display().to_string();
        let out = fx
            .sandbox()
            .run(&[&bin, "run", "--", "sh", "-c", "touch marker"]);
        assert_eq!(out.code, 125, "{mode:?}: {out:#?}");
        assert!(
            out.stderr.contains("namespaces layer"),
            "{mode:?}: stderr does not name the namespaces layer: {out:#?}"
        );
        assert!(
            out.stderr.contains("fix:"),
            "{mode:?}: no fix given: {out:#?}"
        );
        assert!(
            !fx.project.join("marker").exists(),
            "{mode:?}: the command ran"
        );
    });
}

#[test]
fn nested_cordon_runs_degraded_with_a_warning() {
    each_fixture(|mode, fx| {
        let bin = fx.bin.display().to_string();
        // The default audit log, in the outer sandbox's read-only home,
        // cannot be opened; the private /tmp could hold one, but the
        // user's audit key is out of the outer sandbox's reach (by design),
        // so a nested run keeps no log.
        let degraded_with = |layers: &str, audit: &str| {
            fx.sandbox().run(&[
                &bin,
                "run",
                &format!("--allow-degraded={layers}"),
                "--audit",
                audit,
                "--",
                "sh",
                "-c",
                "echo ran",
            ])
        };
        let degraded = |layers: &str| degraded_with(layers, "none");
        if mode == Mode::Root {
            // Inside, the caller is still kuid 0, which RLIMIT_NPROC does not
            // bind, and the outer sandbox leaves no cgroup to create: the
            // limits layer must be named and refused too (fail closed)...
            let out = degraded("namespaces");
            assert_eq!(out.code, 125, "{mode:?}: {out:#?}");
            assert!(out.stderr.contains("limits layer"), "{mode:?}: {out:#?}");
            assert!(
                out.stderr.contains("--allow-degraded=limits"),
                "{mode:?}: {out:#?}"
            );
            assert!(!out.stdout.contains("ran"), "{mode:?}: {out:#?}");
        }
        // ...and with every missing layer allowed it runs, with warnings.
        let layers = if mode == Mode::Root {
            "namespaces,limits"
        } else {
            "namespaces"
        };
        let out = degraded(layers);
        assert_eq!(out.code, 0, "{mode:?}: {out:#?}");
        // Without a writable audit log it refuses (fail closed), naming it.
        let home_log = fx.home.join(".local/state/cordon/audit.jsonl");
        let refused = degraded_with(layers, &home_log.display().to_string());
        assert_eq!(refused.code, 125, "{mode:?}: {refused:#?}");
        assert!(
            refused.stderr.contains("cannot open the audit log"),
            "{mode:?}: {refused:#?}"
        );
        assert!(!refused.stdout.contains("ran"), "{mode:?}: {refused:#?}");
        // A log it could write, but no key to authenticate it: refused too.
        let unkeyed = degraded_with(layers, "/tmp/inner-audit.jsonl");
        assert_eq!(unkeyed.code, 125, "{mode:?}: {unkeyed:#?}");
        assert!(
            unkeyed.stderr.contains("the audit key") && unkeyed.stderr.contains("--audit none"),
            "{mode:?}: {unkeyed:#?}"
        );
        assert!(!unkeyed.stdout.contains("ran"), "{mode:?}: {unkeyed:#?}");
        assert!(out.stdout.contains("ran"), "{mode:?}: {out:#?}");
        assert!(out.stderr.contains("WARNING"), "{mode:?}: {out:#?}");
        assert!(
            out.stderr.contains("namespaces layer"),
            "{mode:?}: {out:#?}"
        );
    });
}

#[test]
fn doctor_reports_landlock_abi() {
    each_fixture(|mode, fx| {
        let out = fx.sandbox().subcommand("doctor").run(&[]);
        assert_eq!(out.code, 0, "{mode:?}: {out:#?}");
        let lower = out.stdout.to_lowercase();
        assert!(lower.contains("landlock"), "{mode:?}: {out:#?}");
        assert!(out.stdout.contains("ABI"), "{mode:?}: {out:#?}");
    });
}

#[test]
fn explain_lists_credentials_with_sources() {
    each_fixture(|mode, fx| {
        let out = fx.sandbox().subcommand("explain").run(&[]);
        out.ok();
        let home = fx.home.display().to_string();
        assert!(out.stdout.contains(&home), "{mode:?}: {out:#?}");
        let ssh = out
            .stdout
            .lines()
            .find(|l| l.trim_start().starts_with("~/.ssh "))
            .unwrap_or_else(|| panic!("{mode:?}: no ~/.ssh line: {out:#?}"));
        assert!(ssh.contains("built-in"), "{mode:?}: {ssh}");

        let out = fx.sandbox().subcommand("explain").arg("--json").run(&[]);
        out.ok();
        let v: serde_json::Value = serde_json::from_str(&out.stdout)
            .unwrap_or_else(|e| panic!("{mode:?}: explain --json: {e}: {out:#?}"));
        let text = v.to_string();
        assert!(
            text.contains(&format!("{home}/.ssh")),
            "{mode:?}: no {home}/.ssh in JSON"
        );
    });
}
