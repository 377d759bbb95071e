//! Red team, session 7: `git config` inside a repository that was there
//! before the run (the config gate), and the keys a config may keep.

mod common;

use common::*;

/// Runs `git config --get key` on the host in `dir`, as the mode's uid.
fn host_get(fx: &Fixture, dir: &std::path::Path, key: &str) -> String {
    let out = fx
        .host_cmd("git")
        .args(["config", "--get", key])
        .current_dir(dir)
        .output()
        .unwrap();
    String::from_utf8_lossy(&out.stdout).trim().to_string()
}

#[test]
fn a_deny_write_rule_holds_for_a_config_the_gate_could_update() {
    each_fixture(|mode, fx| {
        git_project(fx);
        let config = fx.project.join(".git/config");
        // A directory the user keeps from being written, holding a file
        // named `config`, and a `.git` file (left by an earlier run) that
        // makes git, and so cordon, take that directory for a git dir.
        let kept = fx.project.join("kept");
        std::fs::create_dir(&kept).unwrap();
        std::fs::write(kept.join("config"), "[user]\n\tname = kept\n").unwrap();
        std::fs::create_dir(fx.project.join("pointer")).unwrap();
        std::fs::write(fx.project.join("pointer/.git"), "gitdir: ../kept\n").unwrap();
        chown_tree(&fx.project, mode);
        let kept_before = std::fs::read(kept.join("config")).unwrap();
        let config_before = std::fs::read(&config).unwrap();
        let script = attempts_script(&[
            ("git-config", "git config user.name Denied"),
            (
                "rename-from-tmp",
                "printf '[core]\\n\\trepositoryformatversion = 0\\n\\tfilemode = true\\n\\tbare = false\\n\\tlogallrefupdates = true\\n[user]\\n\\tname = Denied\\n' > /tmp/c && mv /tmp/c .git/config",
            ),
            (
                "kept-dir",
                "printf '[user]\\n\\tname = kept\\n\\temail = denied@example\\n' > k.new && mv k.new kept/config",
            ),
        ]);
        let out = fx
            .sandbox()
            .flag("--deny-write", config.as_os_str())
            .flag("--deny-write", kept.as_os_str())
            .sh(&script);
        assert_eq!(open_lines(&out), Vec::<&str>::new(), "{mode:?}: {out:#?}");
        assert_eq!(std::fs::read(&config).unwrap(), config_before, "{mode:?}");
        assert_eq!(
            std::fs::read(kept.join("config")).unwrap(),
            kept_before,
            "{mode:?}"
        );
        let _ = std::fs::remove_file(fx.project.join("k.new"));
    });
}

#[test]
fn a_branchs_remote_is_held_to_the_urls_a_remote_may_have() {
    each_fixture(|mode, fx| {
        git_project(fx);
        let branch = String::from_utf8(
            fx.host_git(&fx.project, &["symbolic-ref", "--short", "HEAD"])
                .stdout,
        )
        .unwrap();
        let branch = branch.trim();
        fx.host_git(
            &fx.project,
            &["remote", "add", "origin", "https://git.example/r.git"],
        );
        // `branch.<name>.remote` and `pushremote` may name a URL instead of
        // a remote: `git fetch` and `git push` there would run git's `ext`
        // helper (a shell command) or any git-remote-<x> program.
        let script = attempts_script(&[
            (
                "remote",
                &format!("git config branch.{branch}.remote 'ext::sh -c touch% pwned'"),
            ),
            (
                "pushremote",
                &format!("git config branch.{branch}.pushremote 'transport::x'"),
            ),
            ("plain", &format!("git config branch.{branch}.pushremote origin")),
            // A name no remote had at the start reads as a path.
            ("unknown", &format!("git config branch.{branch}.remote elsewhere")),
            (
                "created",
                "git init -q made && git -C made config branch.main.pushremote 'ext::sh -c touch% pwned'",
            ),
        ]);
        let out = fx.sandbox().sh(&script);
        let mut open = open_lines(&out);
        open.sort();
        // Inside a repository it made, the sandbox may set anything; the
        // sweep takes what could run code away afterwards.
        assert_eq!(
            open,
            vec!["created: OPEN", "plain: OPEN"],
            "{mode:?}: {out:#?}"
        );
        assert_eq!(
            host_get(fx, &fx.project, &format!("branch.{branch}.remote")),
            "",
            "{mode:?}"
        );
        assert_eq!(
            host_get(fx, &fx.project, &format!("branch.{branch}.pushremote")),
            "origin",
            "{mode:?}"
        );
        assert_eq!(
            host_get(fx, &fx.project.join("made"), "branch.main.pushremote"),
            "",
            "{mode:?}: the sweep left a helper URL in a repository the sandbox made"
        );
    });
}

#[test]
fn learn_writes_its_output_where_the_path_led_when_it_started() {
    each_fixture(|mode, fx| {
        let dir = fx.project.join("learned");
        std::fs::create_dir(&dir).unwrap();
        chown_tree(&fx.project, mode);
        let output = dir.join("policy.toml");
        // The sandbox moves the directory away and leaves a link to one of
        // its choosing (outside every writable area) in its place.
        let out = fx
            .sandbox()
            .subcommand("learn")
            .flag("--output", output.as_os_str())
            .sh(&format!(
                "mv {d} {d}.moved && ln -s {o} {d} && echo swapped: yes",
                d = dir.display(),
                o = fx.outside.display()
            ));
        assert_eq!(line(&out, "swapped"), "yes", "{mode:?}: {out:#?}");
        assert!(
            !fx.outside.join("policy.toml").exists(),
            "{mode:?}: the learned policy followed the sandbox's link: {out:#?}"
        );
        let written = std::fs::read_to_string(fx.project.join("learned.moved/policy.toml"));
        assert!(
            written.is_ok_and(|t| t.contains("Learned by `cordon learn`")),
            "{mode:?}: {out:#?}"
        );
    });
}

#[test]
fn the_sweep_leaves_alone_a_directory_the_sandbox_could_not_write() {
    each_fixture(|mode, fx| {
        // Kept from being written; a `.git` file the sandbox leaves names it.
        let kept = fx.project.join("kept");
        std::fs::create_dir(&kept).unwrap();
        std::fs::write(kept.join("config"), "[tool]\n\tmode = safe\n").unwrap();
        chown_tree(&fx.project, mode);
        let out = fx
            .sandbox()
            .flag("--deny-write", kept.as_os_str())
            .sh("mkdir pointer && echo 'gitdir: ../kept' > pointer/.git && echo planted: yes");
        assert_eq!(line(&out, "planted"), "yes", "{mode:?}: {out:#?}");
        assert_eq!(
            std::fs::read_to_string(kept.join("config")).unwrap(),
            "[tool]\n\tmode = safe\n",
            "{mode:?}: {out:#?}"
        );
        assert_eq!(listing(&kept), vec!["config"], "{mode:?}: {out:#?}");
    });
}

#[test]
fn learn_mode_hands_the_command_no_secret_an_inject_entry_keeps_outside() {
    each_fixture(|mode, fx| {
        // A name and a value no secret pattern knows: only the inject
        // entry says it is one. `cordon run` gives a placeholder.
        let secret = format!("{:0>32}", fx.token.to_ascii_lowercase());
        let policy = fx.outside.join("inject.toml");
        std::fs::write(
            &policy,
            "[[credentials.inject]]\nenv = \"ACME_ACCESS\"\nhosts = [\"api.example\"]\n",
        )
        .unwrap();
        chown(&policy, mode);
        for keep in [None, Some("ACME_*")] {
            let mut sandbox = fx
                .sandbox()
                .subcommand("learn")
                .flag("--policy", policy.as_os_str())
                .env("ACME_ACCESS", &secret);
            if let Some(keep) = keep {
                sandbox = sandbox.flag("--keep-env", keep);
            }
            let out = sandbox.sh("echo \"seen: ${ACME_ACCESS:-unset}\"");
            assert_eq!(line(&out, "seen"), "unset", "{mode:?} {keep:?}: {out:#?}");
            assert!(!out.both().contains(&secret), "{mode:?} {keep:?}: {out:#?}");
        }
    });
}
