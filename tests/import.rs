//! `cordon import`: the policies users already have, printed as cordon
//! policy files that then hold in a real sandbox.

mod common;

use common::*;

/// The article's exercise block, verbatim (`.claude/settings.local.json`).
const ARTICLE_EXERCISE: &str = include_str!("data/article_exercise.json");

/// The attack: a credential the user's Claude Code settings keep from the
/// sandbox is readable when the same user runs the agent under cordon.
/// The imported policy closes the file and the variable the settings name
/// (a variable no built-in pattern would unset), read from the user's and
/// the project's settings together.
#[test]
fn an_imported_claude_policy_closes_what_its_settings_name() {
    each_fixture(|mode, fx| {
        let creds = fx.home.join("fake-creds.txt");
        std::fs::write(&creds, fx.canary("fake-creds.txt")).unwrap();
        std::fs::create_dir_all(fx.home.join(".claude")).unwrap();
        std::fs::write(
            fx.home.join(".claude/settings.json"),
            r#"{"sandbox": {"credentials": {"envVars": [{"name": "PLAIN_SETTING", "mode": "deny"}]}}}"#,
        )
        .unwrap();
        std::fs::create_dir_all(fx.project.join(".claude")).unwrap();
        std::fs::write(
            fx.project.join(".claude/settings.local.json"),
            ARTICLE_EXERCISE,
        )
        .unwrap();
        chown_tree(&fx.home, mode);
        chown_tree(&fx.project, mode);

        let imported = fx.sandbox().subcommand("import").arg("claude").run(&[]);
        imported.ok();
        assert!(
            imported
                .stderr
                .contains("settings.local.json:3 sandbox.enabled: cordon sandboxes everything"),
            "{mode:?}: {imported:#?}"
        );
        let policy = fx.outside.join("claude.toml");
        std::fs::write(&policy, &imported.stdout).unwrap();
        chown(&policy, mode);

        let script = "cat ~/fake-creds.txt; echo \"setting=[$PLAIN_SETTING]\"";
        let bare = fx.sandbox().env("PLAIN_SETTING", "visible").sh(script);
        bare.ok();
        assert!(
            bare.stdout.contains(&fx.canary("fake-creds.txt")),
            "{mode:?}: {bare:#?}"
        );
        assert!(
            bare.stdout.contains("setting=[visible]"),
            "{mode:?}: {bare:#?}"
        );

        let held = fx
            .sandbox()
            .env("PLAIN_SETTING", "visible")
            .flag("--policy", &policy)
            .sh(script);
        assert!(
            !held.both().contains(&fx.canary("fake-creds.txt")),
            "{mode:?}: {held:#?}"
        );
        assert!(
            held.stderr.contains("fake-creds.txt"),
            "{mode:?}: {held:#?}"
        );
        assert!(held.stdout.contains("setting=[]"), "{mode:?}: {held:#?}");

        // The same settings as a layer of the run, without the file.
        let layered = fx
            .sandbox()
            .env("PLAIN_SETTING", "visible")
            .arg("--from-claude")
            .sh(script);
        assert!(
            !layered.both().contains(&fx.canary("fake-creds.txt")),
            "{mode:?}: {layered:#?}"
        );
        assert!(
            layered.stdout.contains("setting=[]"),
            "{mode:?}: {layered:#?}"
        );
        assert!(
            layered.stderr.contains("cordon: imported settings: ")
                && layered.stderr.contains("sandbox.enabled"),
            "{mode:?}: {layered:#?}"
        );
        let explained = fx
            .sandbox()
            .subcommand("explain")
            .arg("--from-claude")
            .run(&[]);
        explained.ok();
        assert!(
            explained.stdout.contains("imported ")
                && explained
                    .stdout
                    .contains("settings.json:1 sandbox.credentials.envVars[0].name"),
            "{mode:?}: {explained:#?}"
        );
    });
}

/// The attack: a cloned repository's `.claude/settings.json` allows a host
/// of its own and a place to write, and the user runs the agent with
/// `--from-claude`. What it adds that widens is left out and reported
/// until the user approves that file with `cordon trust FILE`; what
/// narrows applies at once; editing the file withdraws the approval.
#[test]
fn a_repositorys_settings_widen_a_run_only_once_approved() {
    each_fixture(|mode, fx| {
        std::fs::create_dir_all(fx.project.join(".claude")).unwrap();
        let settings = fx.project.join(".claude/settings.json");
        let text = r#"{"sandbox": {"network": {"allowedDomains": ["upload.example"]},
 "filesystem": {"denyRead": ["./private"]}}}"#;
        std::fs::write(&settings, text).unwrap();
        chown_tree(&fx.project, mode);
        let explain = || {
            fx.sandbox()
                .subcommand("explain")
                .arg("--from-claude")
                .run(&[])
        };
        let before = explain();
        before.ok();
        assert!(
            !before.stdout.contains("upload.example"),
            "{mode:?}: {before:#?}"
        );
        assert!(before.stdout.contains("/private"), "{mode:?}: {before:#?}");
        assert!(
            before
                .stderr
                .contains("sandbox.network.allowedDomains[0]: not applied")
                && before.stderr.contains("cordon trust "),
            "{mode:?}: {before:#?}"
        );
        fx.sandbox()
            .subcommand("trust")
            .arg(&settings)
            .run(&[])
            .ok();
        let after = explain();
        after.ok();
        assert!(
            after.stdout.contains("upload.example"),
            "{mode:?}: {after:#?}"
        );
        std::fs::write(&settings, text.replace("upload", "other")).unwrap();
        let edited = explain();
        assert!(
            !edited.stdout.contains("other.example"),
            "{mode:?}: {edited:#?}"
        );
    });
}

/// Bad input is an error naming the file, line and key, and prints no
/// policy; a repository's settings may not turn on what Claude Code
/// ignores there.
#[test]
fn a_bad_or_widening_repository_file_prints_no_policy() {
    each_fixture(|mode, fx| {
        std::fs::create_dir_all(fx.project.join(".claude")).unwrap();
        let settings = fx.project.join(".claude/settings.json");
        for (text, want) in [
            (
                "{\n \"sandbox\": {\"network\": {\"allowedDomains\": [\"a b\"]}}}",
                ".claude/settings.json:2:",
            ),
            (
                "{\"sandbox\": {\"credentials\": {\"envVars\": [{\"name\": \"GH_TOKEN\", \"mode\": \"mask\", \"injectHosts\": [\"api.github.com\"]}]}}}",
                "refused in a repository's settings",
            ),
        ] {
            std::fs::write(&settings, text).unwrap();
            chown_tree(&fx.project, mode);
            let out = fx.sandbox().subcommand("import").arg("claude").run(&[]);
            out.expect_code(2);
            assert!(out.stdout.is_empty(), "{mode:?}: {out:#?}");
            assert!(out.stderr.contains(want), "{mode:?}: {out:#?}");
        }
    });
}

/// sandbox-runtime's file, with its required keys.
#[test]
fn an_srt_settings_file_imports_and_a_missing_required_key_is_refused() {
    each_fixture(|mode, fx| {
        let file = fx.outside.join("srt.json");
        std::fs::write(
            &file,
            r#"{"network": {"allowedDomains": ["example.com"], "deniedDomains": []},
 "filesystem": {"denyRead": ["~/.kube"], "allowWrite": ["."], "denyWrite": []},
 "mandatoryDenySearchDepth": 3}"#,
        )
        .unwrap();
        chown(&file, mode);
        let import = || {
            fx.sandbox()
                .subcommand("import")
                .arg("srt")
                .arg(&file)
                .run(&[])
        };
        let out = import();
        out.ok();
        assert!(
            out.stdout.contains("\"example.com\",  # "),
            "{mode:?}: {out:#?}"
        );
        assert!(
            out.stdout.contains("\"~/.kube\",  # "),
            "{mode:?}: {out:#?}"
        );
        assert!(
            out.stderr.contains("mandatoryDenySearchDepth"),
            "{mode:?}: {out:#?}"
        );
        std::fs::write(&file, r#"{"network": {"allowedDomains": []}}"#).unwrap();
        let out = import();
        out.expect_code(2);
        assert!(
            out.stderr.contains("network.deniedDomains: missing"),
            "{mode:?}: {out:#?}"
        );
    });
}

/// The attack: the project's directory name holds glob characters
/// (`p[1]`), and a deny relative to it, from a flag or imported from the
/// settings, was read as a character class that never matched: the
/// secret stayed readable while `explain` listed it as denied.
#[test]
fn a_deny_relative_to_a_project_named_like_a_glob_holds() {
    each_fixture(|mode, fx| {
        let project = fx.project.join("p[1]");
        std::fs::create_dir_all(project.join(".claude")).unwrap();
        for name in ["secret", "imported"] {
            std::fs::write(project.join(name), fx.canary(name)).unwrap();
        }
        std::fs::write(
            project.join(".claude/settings.local.json"),
            r#"{"permissions": {"deny": ["Read(./imported)"]}}"#,
        )
        .unwrap();
        chown_tree(&fx.project, mode);
        let out = fx
            .sandbox()
            .project(&project)
            .flag("--deny-read", "./secret")
            .arg("--from-claude")
            .sh("cat secret; cat imported; echo done");
        assert!(out.stdout.contains("done"), "{mode:?}: {out:#?}");
        for name in ["secret", "imported"] {
            assert!(
                !out.both().contains(&fx.canary(name)),
                "{mode:?} {name}: {out:#?}"
            );
        }
    });
}
