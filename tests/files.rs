//! The files door: read-only root, writable project and /tmp, the flags
//! that widen or narrow it, and the credential deny list.

mod common;

use std::path::{Path, PathBuf};

use common::*;

fn errno_of(out: &Output, label: &str) -> String {
    line(out, label).to_string()
}

#[test]
fn writes_outside_the_project_fail_and_inside_succeed() {
    each_fixture(|mode, fx| {
        let t = &fx.token;
        let home_new = fx.home.join(format!("new-{t}"));
        let out_new = fx.outside.join(format!("new-{t}"));
        let out_old = fx.outside.join("host.txt");
        let sys_dirs: Vec<String> = ["/etc", "/usr", "/var", "/opt"]
            .iter()
            .map(|d| format!("{d}/cordon-it-{t}"))
            .collect();
        let append = "os.close(os.open({p!r}, os.O_WRONLY | os.O_APPEND))";
        let mut cases: Vec<(&str, String)> = vec![
            ("home", format!("open({:?}, 'w').write('x')", home_new)),
            (
                "outside-new",
                format!("open({:?}, 'w').write('x')", out_new),
            ),
            (
                "outside-old",
                append.replace("{p!r}", &format!("{:?}", out_old)),
            ),
            ("etc-file", append.replace("{p!r}", "'/etc/hostname'")),
            // A file nothing executes: a running binary answers a write with
            // ETXTBSY, whatever the mount (the harness runs /usr/bin/env).
            ("usr-file", append.replace("{p!r}", "'/usr/lib/os-release'")),
            ("project", "open('new-in-project', 'w').write('x')".into()),
            ("tmp", "open('/tmp/new-in-tmp', 'w').write('x')".into()),
        ];
        let labels = ["mk-etc", "mk-usr", "mk-var", "mk-opt"];
        for (l, d) in labels.iter().zip(&sys_dirs) {
            cases.push((l, format!("os.mkdir({d:?})")));
        }
        let out = fx.sandbox().tries(&py_tries(&[], "", &cases));
        // Clean up anything an open door let through, before asserting.
        for d in &sys_dirs {
            let _ = std::fs::remove_dir(d);
        }
        out.ok();
        for label in [
            "home",
            "outside-new",
            "outside-old",
            "etc-file",
            "usr-file",
            "mk-etc",
            "mk-usr",
            "mk-var",
            "mk-opt",
        ] {
            let e = errno_of(&out, label);
            assert!(
                e == "ERR EROFS" || e == "ERR EACCES",
                "{mode:?}: write to {label} gave {e}: {out:#?}"
            );
        }
        assert_eq!(errno_of(&out, "project"), "OK", "{mode:?}: {out:#?}");
        assert_eq!(errno_of(&out, "tmp"), "OK", "{mode:?}: {out:#?}");
        assert!(fx.project.join("new-in-project").exists(), "{mode:?}");
        assert!(!home_new.exists() && !out_new.exists(), "{mode:?}");
        assert_eq!(
            std::fs::read_to_string(&out_old).unwrap(),
            "outside-original\n"
        );
    });
}

#[test]
fn tmp_is_private_and_fresh_and_tmpdir_points_there() {
    each_fixture(|mode, fx| {
        let t = &fx.token;
        let planted = tempfile::Builder::new()
            .prefix(&format!("cordon-host-{t}-"))
            .tempfile_in("/tmp")
            .unwrap();
        std::fs::set_permissions(
            planted.path(),
            std::os::unix::fs::PermissionsExt::from_mode(0o644),
        )
        .unwrap();
        let planted_path = planted.path().display().to_string();
        let inside = format!("/tmp/cordon-inside-{t}");
        let script = format!(
            "echo TMPDIR=$TMPDIR; \
             if [ -e {planted_path} ]; then echo PLANTED-VISIBLE; else echo planted-hidden; fi; \
             echo data > {inside} && cat {inside}"
        );
        let out = fx.sandbox().env("TMPDIR", "/var/tmp").sh(&script);
        out.ok();
        assert!(out.stdout.contains("TMPDIR=/tmp\n"), "{mode:?}: {out:#?}");
        assert!(out.stdout.contains("planted-hidden"), "{mode:?}: {out:#?}");
        assert!(out.stdout.contains("data"), "{mode:?}: {out:#?}");
        assert!(
            !Path::new(&inside).exists(),
            "{mode:?}: sandbox /tmp file on host"
        );
        // Fresh per run.
        let out = fx.sandbox().sh(&format!(
            "ls -A /tmp; [ -e {inside} ] && echo STALE || echo fresh"
        ));
        out.ok();
        assert!(out.stdout.contains("fresh"), "{mode:?}: {out:#?}");
    });
}

#[test]
fn allow_write_opens_a_directory() {
    each_fixture(|mode, fx| {
        let target = fx.outside.join("w.txt");
        let script = format!("echo hello > {}", target.display());
        let denied = fx.sandbox().sh(&script);
        assert_ne!(denied.code, 0, "{mode:?}: {denied:#?}");
        assert!(!target.exists(), "{mode:?}");
        let allowed = fx.sandbox().flag("--allow-write", &fx.outside).sh(&script);
        allowed.ok();
        assert_eq!(std::fs::read_to_string(&target).unwrap(), "hello\n");
    });
}

/// `--allow-write ~/.claude`, so that Claude Code keeps its state: the
/// parts of it that act in later sessions on the host (settings with
/// hooks, hook scripts, custom commands, skills, plugins, the instructions
/// every session reads) stay read-only and cannot be made, whether opened
/// with or without O_CREAT, renamed or replaced; the rest is writable.
/// (The writable area is itself the `.claude` directory: its own parts
/// were once left writable, so a plain open of settings.json could add a
/// hook that ran on the host.)
#[test]
fn a_writable_claude_state_dir_keeps_its_parts_that_run_later() {
    each_fixture(|mode, fx| {
        let state = fx.home.join(".claude");
        for (rel, text) in [
            ("settings.json", "{}\n"),
            ("hooks/h.sh", "#!/bin/sh\n"),
            ("commands/c.md", "orig\n"),
        ] {
            fx.write_home(&format!(".claude/{rel}"), text);
        }
        // A part that is a dangling link: what it names stays unmade.
        std::os::unix::fs::symlink("agents-real", state.join("agents")).unwrap();
        chown_tree(&fx.home, mode);
        // The directory itself changes (a new state file); its parts not.
        let parts = |mut tree: std::collections::BTreeMap<PathBuf, String>| {
            tree.retain(|path, _| {
                !path.as_os_str().is_empty()
                    && !path.ends_with("history.jsonl")
                    && !path.ends_with("s.tmp")
            });
            tree
        };
        let before = parts(tree_snapshot(&state));
        let prelude = r#"h = os.path.expanduser('~/.claude/')
def write(rel, flags):
    fd = os.open(h + rel, flags, 0o644); os.write(fd, b'evil'); os.close(fd)
"#;
        let cases: Vec<(&str, String)> = vec![
            ("settings-plain", "write('settings.json', os.O_WRONLY | os.O_TRUNC)".to_string()),
            ("settings-creat", "write('settings.json', os.O_WRONLY | os.O_CREAT | os.O_TRUNC)".to_string()),
            ("hook-plain", "write('hooks/h.sh', os.O_WRONLY | os.O_APPEND)".to_string()),
            ("command-plain", "write('commands/c.md', os.O_WRONLY | os.O_TRUNC)".to_string()),
            ("command-new", "write('commands/new.md', os.O_WRONLY | os.O_CREAT)".to_string()),
            ("skills-new", "os.mkdir(h + 'skills')".to_string()),
            ("plugins-new", "os.mkdir(h + 'plugins')".to_string()),
            ("claude-md-new", "write('CLAUDE.md', os.O_WRONLY | os.O_CREAT)".to_string()),
            ("rules-new", "os.mkdir(h + 'rules')".to_string()),
            ("dangling-part", "os.mkdir(h + 'agents-real')".to_string()),
            ("commands-rename", "os.rename(h + 'commands', h + 'c2')".to_string()),
            ("settings-replace", "(write('s.tmp', os.O_WRONLY | os.O_CREAT), os.rename(h + 's.tmp', h + 'settings.json'))".to_string()),
            ("state-new", "write('history.jsonl', os.O_WRONLY | os.O_CREAT)".to_string()),
        ];
        let out = fx
            .sandbox()
            .flag("--allow-write", &state)
            .tries(&py_tries(&[], prelude, &cases));
        for label in [
            "settings-plain",
            "settings-creat",
            "hook-plain",
            "command-plain",
            "command-new",
            "skills-new",
            "plugins-new",
            "claude-md-new",
            "rules-new",
            "dangling-part",
            "commands-rename",
            "settings-replace",
        ] {
            assert!(
                line(&out, label).starts_with("ERR"),
                "{mode:?}: {label} was not refused: {out:#?}"
            );
        }
        assert_eq!(line(&out, "state-new"), "OK", "{mode:?}: {out:#?}");
        assert_eq!(parts(tree_snapshot(&state)), before, "{mode:?}: {out:#?}");
    });
}

/// An agent's state directory (`[[files.state]]`, here through the
/// claude profile): its state names are writable and can be made; what
/// else is there stays as it was (a file, a directory's contents, a link
/// and what it leads to), and no other name can be made, however the name
/// is reached (a relative path from inside, a rename up from a state
/// directory, a hard link, a symlink, a UNIX socket). The refusal names
/// the rule and its fix at exit. A writable area inside it, in none of its
/// state, is refused at start.
#[test]
fn an_agent_state_dir_is_writable_in_its_state_names_only() {
    each_fixture(|mode, fx| {
        let state = fx.home.join(".claude");
        for (rel, text) in [
            ("settings.json", "{\"canary\": 1}\n"),
            ("statusline.sh", "#!/bin/sh\necho canary\n"),
            ("hooks/h.sh", "#!/bin/sh\n"),
            ("projects/p/old.jsonl", "{}\n"),
            ("elsewhere/target.sh", "#!/bin/sh\n"),
        ] {
            fx.write_home(&format!(".claude/{rel}"), text);
        }
        // A link the user keeps there, to a file of theirs in the state.
        std::os::unix::fs::symlink("elsewhere/target.sh", state.join("linked.sh")).unwrap();
        chown_tree(&fx.home, mode);
        let not_state = |mut tree: std::collections::BTreeMap<PathBuf, String>| {
            tree.retain(|path, _| {
                !path.as_os_str().is_empty()
                    && !path.starts_with("projects")
                    && !path.starts_with("todos")
                    && !path.ends_with("history.jsonl")
                    // The scratch directories' mount points.
                    && !path.starts_with("session-env")
                    && !path.starts_with("shell-snapshots")
            });
            tree
        };
        let before = not_state(tree_snapshot(&state));
        let prelude = format!(
            "PROJECT = {:?}\n{}",
            fx.project.to_str().unwrap(),
            r#"h = os.path.expanduser('~/.claude/')
def write(path, flags):
    fd = os.open(path, flags, 0o644); os.write(fd, b'evil'); os.close(fd)
new = os.O_WRONLY | os.O_CREAT
def relative():
    os.chdir(h + 'projects')
    write('../rel.sh', new)
def sock():
    s = socket.socket(socket.AF_UNIX); s.bind(h + 'sock')
def from_outside():
    # From the project, on the same file system: moved in, it could bring
    # a tree of links along.
    write(PROJECT + '/x', new)
    os.rename(PROJECT + '/x', h + 'projects/p/x')
"#
        );
        let cases: Vec<(&str, String)> = vec![
            (
                "statusline-plain",
                "write(h + 'statusline.sh', os.O_WRONLY | os.O_TRUNC)".to_string(),
            ),
            (
                "statusline-new",
                "write(h + 'statusline2.sh', new)".to_string(),
            ),
            ("backups-new", "os.mkdir(h + 'backups')".to_string()),
            (
                "linked-through",
                "write(h + 'linked.sh', os.O_WRONLY | os.O_APPEND)".to_string(),
            ),
            (
                "linked-unlink-remake",
                "(os.unlink(h + 'linked.sh'), os.symlink('projects', h + 'linked.sh'))".to_string(),
            ),
            (
                "elsewhere-new",
                "write(h + 'elsewhere/new.sh', new)".to_string(),
            ),
            ("relative-up", "relative()".to_string()),
            (
                "rename-up",
                "(write(h + 'projects/x.sh', new), os.rename(h + 'projects/x.sh', h + 'x.sh'))"
                    .to_string(),
            ),
            (
                "link-up",
                "os.link(h + 'projects/p/old.jsonl', h + 'hard.jsonl')".to_string(),
            ),
            (
                "symlink-new",
                "os.symlink('/bin/sh', h + 'sym')".to_string(),
            ),
            (
                "rename-state-away",
                "os.rename(h + 'projects', h + 'plugins')".to_string(),
            ),
            ("socket-new", "sock()".to_string()),
            ("state-file", "write(h + 'history.jsonl', new)".to_string()),
            (
                "state-dir",
                "(os.mkdir(h + 'todos'), write(h + 'todos/t.json', new))".to_string(),
            ),
            (
                "state-deep",
                "write(h + 'projects/p/new.jsonl', new)".to_string(),
            ),
            (
                "scratch",
                "(os.makedirs(h + 'session-env/s1'), write(h + 'session-env/s1/hook-0.sh', new))"
                    .to_string(),
            ),
            (
                "memory-new",
                "os.makedirs(h + 'projects/p/memory')".to_string(),
            ),
            (
                "link-in-state",
                "os.symlink(h + 'settings.json', h + 'projects/p/l')".to_string(),
            ),
            (
                "link-at-state-name",
                "os.symlink(h + 'settings.json', h + 'tasks')".to_string(),
            ),
            ("rename-from-outside", "from_outside()".to_string()),
            (
                "move-away",
                "os.rename(h + 'statusline.sh', h + 'plans')".to_string(),
            ),
        ];
        let tries = py_tries(&["socket"], &prelude, &cases);
        let out = fx.sandbox().flag("--agent", "claude").tries(&tries);
        for label in [
            "statusline-plain",
            "statusline-new",
            "backups-new",
            "linked-through",
            "linked-unlink-remake",
            "elsewhere-new",
            "relative-up",
            "rename-up",
            "link-up",
            "symlink-new",
            "rename-state-away",
            "socket-new",
            "memory-new",
            "link-in-state",
            "link-at-state-name",
            "rename-from-outside",
            "move-away",
        ] {
            assert!(
                line(&out, label).starts_with("ERR"),
                "{mode:?}: {label} was not refused: {out:#?}"
            );
        }
        for label in ["state-file", "state-dir", "state-deep", "scratch"] {
            assert_eq!(line(&out, label), "OK", "{mode:?}: {out:#?}");
        }
        assert!(
            out.stderr.contains("not the agent's state") && out.stderr.contains("[[files.state]]"),
            "{mode:?}: the exit summary does not say why: {out:#?}"
        );
        // Only what the run removed on purpose differs: the link it
        // unlinked (it may not be made anew).
        let mut after = not_state(tree_snapshot(&state));
        let mut expected = before.clone();
        expected.remove(Path::new("linked.sh"));
        after.remove(Path::new("linked.sh"));
        assert_eq!(after, expected, "{mode:?}: {out:#?}");
        assert!(
            state.join("todos/t.json").is_file(),
            "{mode:?}: state not kept"
        );
        // A scratch directory was the run's own: its mount point, made for
        // the run, is gone with what was written there.
        assert!(
            !state.join("session-env").exists(),
            "{mode:?}: the scratch directory is left on the host"
        );
        // A writable area inside, in none of its state: refused at start.
        let hooks = state.join("hooks");
        let refused = fx
            .sandbox()
            .flag("--agent", "claude")
            .flag("--allow-write", &hooks)
            .sh("true");
        refused.expect_code(125);
        assert!(
            refused.stderr.contains("none of its state"),
            "{mode:?}: {refused:#?}"
        );
    });
}

/// A profile's state directory that is missing is made for the agent's
/// first run (its parent, the home, exists), and said so.
#[test]
fn a_missing_state_dir_is_made_for_the_agents_first_run() {
    each_fixture(|mode, fx| {
        let state = fx.home.join(".codex");
        assert!(!state.exists());
        let out = fx
            .sandbox()
            .flag("--agent", "codex")
            .sh("echo state > ~/.codex/history.jsonl && ! touch ~/.codex/config.toml");
        out.ok();
        assert!(out.stderr.contains("made"), "{mode:?}: {out:#?}");
        assert_eq!(
            std::fs::read_to_string(state.join("history.jsonl")).unwrap(),
            "state\n"
        );
        assert!(!state.join("config.toml").exists(), "{mode:?}: {out:#?}");
    });
}

/// A file given as a writable path stops the run with a reason naming the
/// flag (it used to fail later, in the walk, with a bare ENOTDIR).
#[test]
fn allow_write_of_a_file_is_refused_with_the_reason() {
    each_fixture(|mode, fx| {
        let file = fx.outside.join("host.txt");
        let out = fx.sandbox().flag("--allow-write", &file).sh("true");
        out.expect_code(125);
        assert!(
            out.stderr
                .contains("is not a directory: writable paths are directories")
                && out.stderr.contains("from flag --allow-write"),
            "{mode:?}: {out:#?}"
        );
    });
}

#[test]
fn deny_read_dir_and_file() {
    each_fixture(|mode, fx| {
        let secret_dir = fx.outside.join("secretdir");
        std::fs::create_dir(&secret_dir).unwrap();
        let content = format!("SECRET-DIR-{}", fx.token);
        std::fs::write(secret_dir.join("inner.txt"), &content).unwrap();
        chown_tree(&secret_dir, mode);
        let file = fx.outside.join("host.txt");
        let script = format!(
            "echo list:$(ls -A {d} 2>&1 | tr '\\n' ' '); cat {d}/inner.txt; echo; cat {f}; echo end",
            d = secret_dir.display(),
            f = file.display()
        );
        // Control: readable without the flags.
        let open = fx.sandbox().sh(&script);
        assert!(open.stdout.contains(&content), "{mode:?}: {open:#?}");
        assert!(
            open.stdout.contains("outside-original"),
            "{mode:?}: {open:#?}"
        );
        let out = fx
            .sandbox()
            .flag("--deny-read", &secret_dir)
            .flag("--deny-read", &file)
            .sh(&script);
        assert!(out.stdout.contains("end"), "{mode:?}: {out:#?}");
        assert!(!out.stdout.contains(&content), "{mode:?}: {out:#?}");
        assert!(
            !out.stdout.contains("inner.txt"),
            "{mode:?}: listed: {out:#?}"
        );
        assert!(
            !out.stdout.contains("outside-original"),
            "{mode:?}: {out:#?}"
        );
    });
}

#[test]
fn deny_write_inside_project() {
    each_fixture(|mode, fx| {
        let ro = fx.project.join("ro");
        std::fs::create_dir(&ro).unwrap();
        std::fs::write(ro.join("existing"), "orig\n").unwrap();
        chown_tree(&ro, mode);
        let script = "echo new > ro/new && echo NEW-OK; echo mod >> ro/existing && echo MOD-OK; \
                      rm -f ro/existing && echo RM-OK; echo fine > writable && echo W-OK";
        let out = fx.sandbox().flag("--deny-write", &ro).sh(script);
        assert!(out.stdout.contains("W-OK"), "{mode:?}: {out:#?}");
        for bad in ["NEW-OK", "MOD-OK", "RM-OK"] {
            assert!(!out.stdout.contains(bad), "{mode:?}: {bad}: {out:#?}");
        }
        assert_eq!(
            std::fs::read_to_string(ro.join("existing")).unwrap(),
            "orig\n"
        );
        assert!(!ro.join("new").exists());
    });
}

/// Shell lines that try to read `abs` (a path in the fake home) in many
/// ways, each printing what it got between markers.
fn read_attempts(fx: &Fixture, rel: &str, tag: &str) -> String {
    let abs = fx.home.join(rel);
    let abs = abs.display();
    let home = fx.home.display();
    let base = fx.dir.path().display();
    let dotdot = format!(
        "{home}/{rel}/../{}",
        Path::new(rel).file_name().unwrap().to_str().unwrap()
    );
    let via_project = format!("{}/../home/{rel}", fx.project.display());
    format!(
        "echo '[{tag} direct]'; cat {abs} 2>&1; echo\n\
         ln -s {abs} sl-{tag} 2>&1; echo '[{tag} symlink]'; cat sl-{tag} 2>&1; echo\n\
         echo '[{tag} hardlink]'; ln {abs} hl-{tag} 2>&1 && cat hl-{tag} 2>&1; echo\n\
         echo '[{tag} proc-self-root]'; cat /proc/self/root{abs} 2>&1; echo\n\
         echo '[{tag} proc-1-root]'; cat /proc/1/root{abs} 2>&1; echo\n\
         echo '[{tag} dotdot]'; cat {home}/./{rel} {base}/home/../home/{rel} 2>&1; echo\n\
         echo '[{tag} dotdot2]'; cat {via_project} 2>&1; echo\n\
         echo '[{tag} dotdot3]'; cat {dotdot} 2>&1; echo\n\
         echo '[{tag} python]'; {PY} -c 'print(open(\"{abs}\").read())' 2>&1; echo\n"
    )
}

#[test]
fn credential_deny_list_holds_and_non_denied_canary_is_readable() {
    each_fixture(|mode, fx| {
        let mut script = String::new();
        for (i, rel) in DENIED_CANARIES.iter().enumerate() {
            script.push_str(&read_attempts(fx, rel, &format!("d{i}")));
        }
        script.push_str(&read_attempts(fx, ALLOWED_CANARY, "allowed"));
        script.push_str("echo END\n");
        let out = fx.sandbox().sh(&script);
        assert!(out.stdout.contains("END"), "{mode:?}: {out:#?}");
        // Positive control: the same methods read a non-denied canary
        // (the hardlink and proc-1-root ways may legitimately fail).
        let allowed = fx.canary(ALLOWED_CANARY);
        let sections: Vec<&str> = out.stdout.split("[allowed ").collect();
        let count = sections.iter().filter(|s| s.contains(&allowed)).count();
        assert!(
            count >= 6,
            "{mode:?}: non-denied canary read only {count} ways: {out:#?}"
        );
        let mut leaks = Vec::new();
        for rel in DENIED_CANARIES {
            let c = fx.canary(rel);
            for section in out.stdout.split("\n[") {
                if section.contains(&c) {
                    leaks.push(section.lines().next().unwrap_or("").to_string());
                }
            }
        }
        assert!(
            leaks.is_empty(),
            "{mode:?}: canaries read via {leaks:?}:\n{}",
            out.stdout
        );
    });
}

#[test]
fn allow_read_reallows_only_that_entry() {
    each_fixture(|mode, fx| {
        let aws = fx.home.join(".aws/credentials");
        let ssh = fx.home.join(".ssh/id_rsa");
        let script = format!(
            "cat {} 2>&1; echo; cat {} 2>&1; echo; echo END",
            aws.display(),
            ssh.display()
        );
        let out = fx
            .sandbox()
            .flag("--allow-read", fx.home.join(".aws"))
            .sh(&script);
        assert!(out.stdout.contains("END"), "{mode:?}: {out:#?}");
        assert!(
            out.stdout.contains(&fx.canary(".aws/credentials")),
            "{mode:?}: allowed entry unreadable: {out:#?}"
        );
        assert!(
            !out.stdout.contains(&fx.canary(".ssh/id_rsa")),
            "{mode:?}: other entry readable: {out:#?}"
        );
        // Without the flag, ~/.aws is denied again.
        let out = fx.sandbox().sh(&script);
        assert!(
            !out.stdout.contains(&fx.canary(".aws/credentials")),
            "{mode:?}: {out:#?}"
        );
    });
}

/// Credential files the review read by default (agents' logins, cloud and
/// package-manager tokens, histories, cordon's own earlier audit logs) are
/// unreadable, while the directories around them stay readable where the
/// tool that keeps them needs them.
#[test]
fn agents_cloud_and_package_manager_credentials_and_histories_are_denied() {
    let denied = [
        ".codex/auth.json",
        ".claude/.credentials.json",
        ".gemini/oauth_creds.json",
        ".config/github-copilot/hosts.json",
        ".m2/settings.xml",
        ".gradle/gradle.properties",
        ".terraformrc",
        ".config/containers/auth.json",
        ".config/sops/age/keys.txt",
        ".pulumi/credentials.json",
        ".config/solana/id.json",
        ".databrickscfg",
        ".config/helm/repositories.yaml",
        ".fly/config.yml",
        ".local/share/com.vercel.cli/auth.json",
        ".config/hcloud/cli.toml",
        ".config/stripe/config.toml",
        ".config/pip/pip.conf",
        ".composer/auth.json",
        ".bundle/config",
        ".yarnrc",
        ".config/pnpm/rc",
        ".viminfo",
        ".local/state/nvim/shada/main.shada",
        ".irb_history",
        ".local/share/atuin/history.db",
        ".local/state/cordon/audit.jsonl",
    ];
    // Neighbours the tools need: settings, plugins, binaries.
    let readable = [
        ".claude/settings.json",
        ".codex/config.toml",
        ".gemini/settings.json",
        ".pulumi/plugins/resource-x/README",
        ".fly/bin/README",
        ".m2/repository/README",
        ".gradle/caches/README",
        ".local/share/nvim/site/README",
    ];
    each_fixture(|mode, fx| {
        for rel in denied.iter().chain(&readable) {
            let path = fx.home.join(rel);
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            std::fs::write(&path, fx.canary(rel)).unwrap();
        }
        chown_tree(&fx.home, mode);
        let mut script = String::new();
        for rel in denied.iter().chain(&readable) {
            let path = fx.home.join(rel);
            script.push_str(&format!(
                "echo '[{rel}]'; cat {} 2>&1; echo\n",
                path.display()
            ));
        }
        let out = fx.sandbox().sh(&script);
        for rel in &denied {
            assert!(
                !out.stdout.contains(&fx.canary(rel)),
                "{mode:?}: ~/{rel} readable: {}",
                out.stdout
            );
        }
        for rel in &readable {
            assert!(
                out.stdout.contains(&fx.canary(rel)),
                "{mode:?}: ~/{rel} unreadable: {}",
                out.stdout
            );
        }
    });
}

/// Config files other agents, editors, hook managers, version and package
/// managers run code from, found writable by the review: none can be
/// created or changed from inside, in the project or in a nested
/// repository, and nothing of the attempts is left on the host.
#[test]
fn configs_that_run_code_later_cannot_be_planted() {
    // (file to write, relative to a repository's top)
    let new = [
        ".roo/mcp.json",
        ".kiro/settings/mcp.json",
        ".kiro/hooks/on-save.kiro.hook",
        ".amazonq/mcp.json",
        ".continue/config.yaml",
        ".qwen/settings.json",
        ".crush.json",
        "opencode.json",
        ".opencode/plugin/x.js",
        ".aider.conf.yml",
        ".lefthook.yml",
        "lefthook-local.yml",
        ".devcontainer.json",
        ".exrc",
        ".nvim.lua",
        ".nvimrc",
        "mise.toml",
        ".mise.toml",
        ".tool-versions",
        ".yarnrc",
        "bunfig.toml",
        ".github/actions/setup/action.yml",
        ".gitlab-ci.yml",
    ];
    // Ones the user already has must not change either.
    let existing = ["mise.toml", ".kiro/hooks/on-save.kiro.hook", ".exrc"];
    each_fixture(|mode, fx| {
        git_project(fx);
        let nested = fx.project.join("vendor/lib");
        std::fs::create_dir_all(&nested).unwrap();
        chown_tree(&fx.project, mode);
        fx.host_git(&nested, &["init", "-q"]);
        let original = "user's own\n";
        for rel in existing {
            let path = nested.join(rel);
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            std::fs::write(&path, original).unwrap();
        }
        chown_tree(&fx.project, mode);
        let planted = format!("planted-{}", fx.token);
        let mut attempts = Vec::new();
        for top in [fx.project.clone(), nested.clone()] {
            for rel in new {
                let path = top.join(rel);
                let cmd = format!(
                    "mkdir -p '{}' && echo {planted} > '{}'",
                    path.parent().unwrap().display(),
                    path.display()
                );
                attempts.push((format!("{}", path.display()), cmd));
            }
        }
        let pairs: Vec<(&str, &str)> = attempts
            .iter()
            .map(|(l, c)| (l.as_str(), c.as_str()))
            .collect();
        let out = fx.sandbox().sh(&attempts_script(&pairs));
        let open = open_lines(&out);
        assert!(open.is_empty(), "{mode:?}: writable: {open:#?}");
        for top in [&fx.project, &nested] {
            for rel in new {
                let content = std::fs::read_to_string(top.join(rel)).unwrap_or_default();
                assert!(
                    !content.contains(&planted),
                    "{mode:?}: {} planted on the host",
                    top.join(rel).display()
                );
            }
        }
        for rel in existing {
            assert_eq!(
                std::fs::read_to_string(nested.join(rel)).unwrap(),
                original,
                "{mode:?}: {rel} changed"
            );
        }
    });
}

/// Landlock holds the deny list on its own: with the mount view off (a
/// test-only switch of debug builds), the denied files stay unreadable
/// while the rest of the home reads. A link beside the denied paths that
/// points into them opens no way in (its target's own path decides).
#[test]
fn landlock_alone_keeps_the_deny_list_unreadable() {
    each_fixture(|mode, fx| {
        std::os::unix::fs::symlink(".ssh", fx.home.join("dotfiles-ssh")).unwrap();
        std::os::unix::fs::symlink(".aws/credentials", fx.home.join("aws-link")).unwrap();
        let home = fx.home.display();
        let mut script = String::new();
        for (i, rel) in DENIED_CANARIES.iter().enumerate() {
            script.push_str(&format!("echo '[d{i}]'; cat {home}/{rel} 2>&1; echo\n"));
        }
        script.push_str(&format!(
            "echo '[link dir]'; cat {home}/dotfiles-ssh/id_rsa 2>&1; echo\n\
             echo '[link file]'; cat {home}/aws-link 2>&1; echo\n\
             echo '[allowed]'; cat {home}/{ALLOWED_CANARY} 2>&1; echo\n"
        ));
        let out = fx.sandbox().env("CORDON_TEST_WEAKEN", "files").sh(&script);
        assert!(
            out.stdout.contains(&fx.canary(ALLOWED_CANARY)),
            "{mode:?}: positive control unreadable: {out:#?}"
        );
        for rel in DENIED_CANARIES {
            assert!(
                !out.stdout.contains(&fx.canary(rel)),
                "{mode:?}: {rel} read with only Landlock in force: {}",
                out.stdout
            );
        }
    });
}

/// A denied path inside the project makes the project's root a directory
/// "on the way" to it, whose existing entries are granted one by one when
/// the sandbox starts: a file the command makes there afterwards gets no
/// read rule, so it can be written but not read back.
#[test]
fn a_file_made_beside_a_denied_path_in_the_project_reads_back() {
    each_fixture(|mode, fx| {
        let secret = fx.project.join("sec");
        std::fs::create_dir(&secret).unwrap();
        std::fs::write(secret.join("k"), fx.canary("sec/k")).unwrap();
        chown_tree(&fx.project, mode);
        let made = fx.project.join(format!("made-{}", fx.token));
        let out = fx.sandbox().flag("--deny-read", &secret).sh(&format!(
            "echo written-{t} > {m} && cat {m}; cat {s}/k",
            t = fx.token,
            m = made.display(),
            s = secret.display()
        ));
        assert!(
            !out.stdout.contains(&fx.canary("sec/k")),
            "{mode:?}: denied file read: {out:#?}"
        );
        assert!(
            out.stdout.contains(&format!("written-{}", fx.token)),
            "{mode:?}: a file made in the project does not read back: {out:#?}"
        );
    });
}

/// A `--deny-read` path inside a writable area is planned by name: one run
/// renames its parent away (it may: only the denied path itself is a mount
/// point) and puts an empty directory in its place, and the next run with
/// the same flags reads the denied file under the new name.
#[test]
fn a_denied_path_in_the_project_stays_denied_after_its_parent_is_renamed() {
    each_fixture(|mode, fx| {
        let secret = fx.project.join("sec");
        std::fs::create_dir(&secret).unwrap();
        std::fs::write(secret.join("k"), fx.canary("sec/k")).unwrap();
        chown_tree(&fx.project, mode);
        let moved = fx.project.join("sec.moved");
        fx.sandbox()
            .flag("--deny-read", secret.join("k"))
            .sh(&format!(
                "mv {s} {m} && mkdir {s}",
                s = secret.display(),
                m = moved.display()
            ));
        let out = fx
            .sandbox()
            .flag("--deny-read", secret.join("k"))
            .sh(&format!("cat {}/k", moved.display()));
        assert!(
            !out.stdout.contains(&fx.canary("sec/k")),
            "{mode:?}: the denied file read after a rename of its parent: {out:#?}"
        );
    });
}

/// A project, and a `--allow-write` path, beneath a `--deny-read`
/// directory: the view mounts them beneath it, so that directory cannot
/// be a bind of the one sealed empty directory every other hidden
/// directory shares (their mount points cannot be made there). The
/// command runs in its project, and the rest of the directory stays
/// unreadable and unlistable.
#[test]
fn a_project_and_a_writable_path_beneath_a_denied_directory_still_run() {
    each_fixture(|mode, fx| {
        let denied = fx.outside.join("denied");
        let project = denied.join("proj");
        let writable = denied.join("cache");
        std::fs::create_dir_all(&project).unwrap();
        std::fs::create_dir_all(&writable).unwrap();
        std::fs::write(denied.join("k"), fx.canary("denied/k")).unwrap();
        chown_tree(&fx.outside, mode);
        // By its relative name: the denied directory on the way to it is
        // not searchable (mode 000, as a hidden directory is).
        let name = format!("made-{}", fx.token);
        let out = fx
            .sandbox()
            .project(&project)
            .flag("--deny-read", &denied)
            .flag("--allow-write", &writable)
            .sh(&format!(
                "echo written-{t} > {name} && cat {name}; cat {d}/k; ls -A {d}; echo end",
                t = fx.token,
                d = denied.display()
            ));
        assert_ne!(out.code, 125, "{mode:?}: refused to run: {out:#?}");
        assert!(out.stdout.contains("end"), "{mode:?}: {out:#?}");
        assert!(
            out.stdout.contains(&format!("written-{}", fx.token)),
            "{mode:?}: the project is not writable: {out:#?}"
        );
        assert!(
            !out.stdout.contains(&fx.canary("denied/k")),
            "{mode:?}: denied file read: {out:#?}"
        );
        assert!(
            !out.stdout.contains("cache") && !out.stdout.contains("proj"),
            "{mode:?}: the denied directory was listed: {out:#?}"
        );
        assert_eq!(
            std::fs::read_to_string(project.join(&name)).unwrap(),
            format!("written-{}\n", fx.token)
        );
    });
}

/// An `--allow-read` path beneath a `--deny-read` directory is bound from
/// the host's own mount: the mount view must make it read-only itself, as
/// it does the rest of the host, for where Landlock is not in force (an
/// old kernel and `allow_degraded`). Debug builds only: release builds
/// ignore `CORDON_TEST_WEAKEN`.
#[test]
fn the_mount_view_alone_keeps_a_reallowed_path_read_only() {
    each_fixture(|mode, fx| {
        let denied = fx.outside.join("denied");
        let shown = denied.join("shown");
        std::fs::create_dir_all(&shown).unwrap();
        let file = shown.join("f.txt");
        std::fs::write(&file, fx.canary("shown/f.txt")).unwrap();
        chown_tree(&fx.outside, mode);
        let made = shown.join(format!("made-{}", fx.token));
        let out = fx
            .sandbox()
            .env("CORDON_TEST_WEAKEN", "landlock")
            .flag("--deny-read", &denied)
            .flag("--allow-read", &shown)
            .sh(&format!(
                "cat {f}; echo; (echo appended >> {f}); (true > {m}); echo end",
                f = file.display(),
                m = made.display()
            ));
        assert!(out.stdout.contains("end"), "{mode:?}: {out:#?}");
        assert!(
            out.stdout.contains(&fx.canary("shown/f.txt")),
            "{mode:?}: positive control: the re-allowed file is unreadable: {out:#?}"
        );
        assert_eq!(
            std::fs::read_to_string(&file).unwrap(),
            fx.canary("shown/f.txt"),
            "{mode:?}: a re-allowed file was written: {out:#?}"
        );
        assert!(
            !made.exists(),
            "{mode:?}: a file was made in a re-allowed directory: {out:#?}"
        );
    });
}

/// The attack: cordon's own config directory sits in a writable area and
/// its name holds a glob character (`XDG_CONFIG_HOME=.../cfg[1]`); the
/// built-in rule that keeps it read-only was read as a pattern that never
/// matched it, so the sandbox could write the next run's config.toml (a
/// `[[credentials.inject]] command` the next run would run on the host).
#[test]
fn cordons_config_directory_stays_read_only_whatever_its_name_holds() {
    each_fixture(|mode, fx| {
        let config = fx.project.join("cfg[1]");
        std::fs::create_dir_all(config.join("cordon")).unwrap();
        chown_tree(&fx.project, mode);
        let target = config.join("cordon/config.toml");
        let out = fx
            .sandbox()
            .env("XDG_CONFIG_HOME", config.as_os_str())
            .sh(&format!(
                "echo '[limits]' > {0} && echo wrote; ls {0}",
                target.display()
            ));
        assert!(!out.stdout.contains("wrote"), "{mode:?}: {out:#?}");
        assert!(!target.exists(), "{mode:?}: {out:#?}");
    });
}

/// A run with a profile that writes nothing leaves the home as it was:
/// the state directory and the scratch mount points cordon made for it
/// are removed at exit, being empty.
#[test]
fn a_profiles_run_that_writes_nothing_leaves_the_home_as_it_was() {
    each_fixture(|mode, fx| {
        let before = tree_snapshot(&fx.home);
        let out = fx
            .sandbox()
            .flag("--agent", "claude")
            .flag("--audit", "none")
            .sh("test -d ~/.claude/session-env && test -d ~/.claude/shell-snapshots");
        out.ok();
        assert_eq!(tree_snapshot(&fx.home), before, "{mode:?}: {out:#?}");
    });
}

/// What the gate cannot see in a state directory: its own mode, changed
/// inside, is put back at exit and said; and no core file is written
/// anywhere (the kernel makes one past the gate): the command cannot
/// raise its core limit from 0.
#[test]
fn a_state_dirs_mode_is_restored_and_no_core_file_is_made() {
    each_fixture(|mode, fx| {
        use std::os::unix::fs::PermissionsExt;
        let state = fx.home.join(".claude");
        std::fs::create_dir(&state).unwrap();
        std::fs::set_permissions(&state, std::fs::Permissions::from_mode(0o700)).unwrap();
        chown_tree(&fx.home, mode);
        let script = r#"
import os, resource, signal, subprocess
os.chmod(os.path.expanduser('~/.claude'), 0o777)
try:
    resource.setrlimit(resource.RLIMIT_CORE, (resource.RLIM_INFINITY, resource.RLIM_INFINITY))
    print('raise: OK')
except (ValueError, OSError) as e:
    print('raise: ERR', e)
os.chdir(os.path.expanduser('~/.claude/projects') if os.path.isdir(os.path.expanduser('~/.claude/projects')) else os.getcwd())
child = subprocess.run(['python3', '-c', 'import os, signal; os.kill(os.getpid(), signal.SIGSEGV)'])
print('crashed:', child.returncode)
"#;
        let out = fx.sandbox().flag("--agent", "claude").py(script);
        out.ok();
        assert!(line(&out, "raise").starts_with("ERR"), "{mode:?}: {out:#?}");
        assert_eq!(line(&out, "crashed"), "-11", "{mode:?}: {out:#?}");
        let now = std::fs::metadata(&state).unwrap().permissions().mode() & 0o7777;
        assert_eq!(now, 0o700, "{mode:?}: the mode was not restored: {out:#?}");
        assert!(
            out.stderr.contains("restored to 700"),
            "{mode:?}: the restore is not said: {out:#?}"
        );
        for dir in [&fx.project, &state] {
            let cores: Vec<_> = std::fs::read_dir(dir)
                .unwrap()
                .flatten()
                .filter(|e| e.file_name().to_string_lossy().starts_with("core"))
                .collect();
            assert!(cores.is_empty(), "{mode:?}: {cores:?}");
        }
    });
}
