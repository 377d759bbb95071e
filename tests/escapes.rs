//! The persistence door's escape classes: what the sandbox writes must not
//! run code later on the host. Privilege bits, repositories git sees that
//! a `.git` directory scan does not, files a repository's config names,
//! repositories made inside, checks that cannot finish, paths a rename
//! would undo. Each runs as root and as an unprivileged uid.

mod common;

use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};

use common::*;

/// Every regular file under `dir` with a set-user-ID or set-group-ID bit.
fn privileged_files(dir: &Path) -> Vec<PathBuf> {
    listing(dir)
        .into_iter()
        .map(|rel| dir.join(rel))
        .filter(|p| {
            p.symlink_metadata()
                .is_ok_and(|m| m.is_file() && m.mode() & 0o6000 != 0)
        })
        .collect()
}

#[test]
fn privilege_bits_cannot_be_set_on_files_the_sandbox_writes() {
    each_fixture(|mode, fx| {
        let prelude = include_str!("py/privilege_bits.py");
        let tmpfile = "t = os.open('.', os.O_TMPFILE | os.O_WRONLY, 0o4755); \
             os.link('/proc/self/fd/%d' % t, 'tmp-linked', follow_symlinks=True)";
        let cases: Vec<(&str, String)> = vec![
            ("chmod_suid", "os.chmod('f', 0o4755)".into()),
            ("chmod_sgid", "os.chmod('f', 0o2755)".into()),
            ("fchmod", "os.fchmod(fd, 0o4755)".into()),
            (
                "fchmodat",
                "os.chmod('f', 0o6755, follow_symlinks=False)".into(),
            ),
            // fchmodat2(AT_FDCWD, "f", 04755, 0), Linux 6.6.
            ("fchmodat2", "sys(452, -100, b'f', 0o4755, 0)".into()),
            (
                "open_creat",
                "os.open('o', os.O_CREAT | os.O_WRONLY, 0o4755)".into(),
            ),
            (
                "openat_creat",
                "os.open('o2', os.O_CREAT | os.O_WRONLY, 0o2755, dir_fd=os.open('.', os.O_RDONLY))"
                    .into(),
            ),
            // creat(2) itself (x86_64: 85).
            ("creat", "sys(85, b'c', 0o4755)".into()),
            ("mknod", "os.mknod('n', 0o100000 | 0o4755)".into()),
            ("tmpfile", tmpfile.into()),
            ("plain_chmod", "os.chmod('f', 0o755)".into()),
        ];
        let out = fx.sandbox().tries(&py_tries(&[], prelude, &cases));
        for (label, _) in &cases[..cases.len() - 1] {
            assert_eq!(
                line(&out, label),
                "ERR EPERM",
                "{mode:?}: {label}: {out:#?}"
            );
        }
        assert_eq!(line(&out, "plain_chmod"), "OK", "{mode:?}: {out:#?}");
        // Tools that copy modes, and the shell's own chmod.
        let script = attempts_script(&[
            ("cp", "cp -p /usr/bin/su ./su-copy && test -u ./su-copy"),
            ("install", "install -m 4755 /dev/null ./inst && test -u ./inst"),
            ("chmod", "touch g && chmod g+s g && test -g g"),
            ("tar", "mkdir -p tx && cp /usr/bin/su tx/ && chmod 755 tx/su && tar -cf t.tar tx && rm -r tx && python3 -c \"import tarfile; t=tarfile.open('t.tar'); m=t.getmember('tx/su'); m.mode=0o4755; t2=tarfile.open('t2.tar','w'); t2.addfile(m, t.extractfile(m)); t2.close()\" && tar -xpf t2.tar && test -u tx/su"),
        ]);
        let out = fx.sandbox().sh(&script);
        assert!(open_lines(&out).is_empty(), "{mode:?}: {out:#?}");
        assert!(
            privileged_files(&fx.project).is_empty(),
            "{mode:?}: {:?}",
            privileged_files(&fx.project)
        );
        // Each refusal is in the audit log.
        let log = std::fs::read_to_string(fx.home.join(".local/state/cordon/audit.jsonl"))
            .unwrap_or_default();
        assert!(log.contains("set-user-ID"), "{mode:?}: {log}");
    });
}

#[test]
fn privilege_bits_that_appear_anyway_are_stripped_after_the_run() {
    each_fixture(|mode, fx| {
        // With the filter off (a test-only switch of debug builds), the
        // bit is set inside; the sweep after the run takes it off.
        let out = fx
            .sandbox()
            .env("CORDON_TEST_WEAKEN", "seccomp")
            .sh("echo x > s && chmod 4755 s && test -u s && echo 'set: yes'");
        assert_eq!(line(&out, "set"), "yes", "{mode:?}: {out:#?}");
        let meta = fx.project.join("s").metadata().unwrap();
        assert_eq!(meta.mode() & 0o7777, 0o755, "{mode:?}: {out:#?}");
        assert!(
            out.stderr.contains("removed its set-user-ID"),
            "{mode:?}: {out:#?}"
        );
    });
}

#[test]
fn repositories_git_sees_are_protected_wherever_their_git_dir_lives() {
    each_fixture(|mode, fx| {
        let p = &fx.project;
        // An --allow-write area outside the project holds one git dir.
        let area = fx.outside.join("area");
        std::fs::create_dir(&area).unwrap();
        chown_tree(&fx.outside, mode);
        fx.host_git(p, &["init", "-q", "--bare", "tools.git"]);
        std::fs::create_dir(p.join("sub")).unwrap();
        std::fs::create_dir(p.join("linked")).unwrap();
        chown_tree(p, mode);
        let separate = area.join("sub.git");
        fx.host_git(
            &p.join("sub"),
            &[
                "init",
                "-q",
                "--separate-git-dir",
                separate.to_str().unwrap(),
            ],
        );
        fx.host_git(p, &["init", "-q", "--bare", "store/real.git"]);
        std::os::unix::fs::symlink("../store/real.git", p.join("linked/.git")).unwrap();
        // A bare repository made to act on the tree around it.
        fx.host_git(p, &["init", "-q", "--bare", "wt.git"]);
        fx.host_git(&p.join("wt.git"), &["config", "core.bare", "false"]);
        fx.host_git(&p.join("wt.git"), &["config", "core.worktree", ".."]);
        chown_tree(p, mode);
        let configs: Vec<(PathBuf, String)> = [
            p.join("tools.git"),
            separate.clone(),
            p.join("store/real.git"),
            p.join("wt.git"),
        ]
        .iter()
        .map(|g| {
            let c = g.join("config");
            let text = std::fs::read_to_string(&c).unwrap();
            (c, text)
        })
        .collect();
        let mut attempts = Vec::new();
        for (label, dir) in [
            ("bare", "tools.git"),
            ("separate", "../outside/area/sub.git"),
            ("linked", "linked/.git"),
            ("worktree", "wt.git"),
        ] {
            attempts.push((
                format!("{label}-hook"),
                format!("printf '#!/bin/sh\\necho pwned\\n' > {dir}/hooks/post-checkout"),
            ));
            attempts.push((
                format!("{label}-config"),
                format!("echo '[core] fsmonitor = ./x' >> {dir}/config"),
            ));
            attempts.push((
                format!("{label}-hooks-dir"),
                format!("mv {dir}/hooks {dir}/hooks.old && mkdir {dir}/hooks"),
            ));
        }
        attempts.push((
            "repoint-ln".into(),
            "ln -sfn ../tools.git linked/.git".into(),
        ));
        attempts.push((
            "repoint-rm".into(),
            "rm linked/.git; ln -s ../tools.git linked/.git".into(),
        ));
        attempts.push((
            "repoint-mv".into(),
            "ln -s ../tools.git x && mv -T x linked/.git".into(),
        ));
        attempts.push(("gitfile".into(), "echo 'gitdir: /tmp' > sub/.git".into()));
        attempts.push((
            "worktree-dotfile".into(),
            "echo 'echo pwned' > .envrc".into(),
        ));
        let refs: Vec<(&str, &str)> = attempts
            .iter()
            .map(|(l, c)| (l.as_str(), c.as_str()))
            .collect();
        let out = fx
            .sandbox()
            .flag("--allow-write", &area)
            .sh(&attempts_script(&refs));
        assert!(open_lines(&out).is_empty(), "{mode:?}: {out:#?}");
        for (config, text) in &configs {
            assert_eq!(&std::fs::read_to_string(config).unwrap(), text, "{mode:?}");
        }
        for hook in [
            p.join("tools.git/hooks/post-checkout"),
            separate.join("hooks/post-checkout"),
            p.join("store/real.git/hooks/post-checkout"),
        ] {
            assert!(!hook.exists(), "{mode:?}: {}", hook.display());
        }
    });
}

#[test]
fn files_a_repository_config_names_are_protected() {
    each_fixture(|mode, fx| {
        let p = &fx.project;
        git_project(fx);
        std::fs::create_dir_all(p.join(".githooks")).unwrap();
        std::fs::write(p.join(".githooks/pre-commit"), "#!/bin/sh\nexit 0\n").unwrap();
        std::fs::create_dir_all(p.join("tools")).unwrap();
        std::fs::write(p.join("tools/fsmon"), "#!/bin/sh\n").unwrap();
        chown_tree(p, mode);
        for (key, value) in [
            ("core.hooksPath", ".githooks"),
            ("core.fsmonitor", "./tools/fsmon"),
            ("include.path", "../conf/extra.cfg"),
            ("includeIf.gitdir:/nowhere/.path", "../conf/cond.cfg"),
            ("core.attributesFile", "conf/attributes"),
            ("core.excludesFile", "conf/excludes"),
            ("core.sshCommand", "./tools/ssh-wrapper -v"),
        ] {
            fx.host_git(p, &["config", key, value]);
        }
        let script = attempts_script(&[
            ("hookspath", "echo 'echo pwned' > .githooks/pre-commit"),
            (
                "hookspath-new",
                "echo 'echo pwned' > .githooks/post-checkout",
            ),
            ("hookspath-mv", "mv .githooks .gh && mkdir .githooks"),
            ("fsmonitor", "echo 'echo pwned' > tools/fsmon"),
            (
                "include",
                "mkdir -p conf && echo '[core] fsmonitor = x' > conf/extra.cfg",
            ),
            (
                "include-if",
                "mkdir -p conf && echo '[core] fsmonitor = x' > conf/cond.cfg",
            ),
            (
                "include-mv",
                "mkdir -p c2 && echo x > c2/extra.cfg && mv -T c2 conf",
            ),
            (
                "attributes",
                "mkdir -p conf && echo '* filter=x' > conf/attributes",
            ),
            ("excludes", "mkdir -p conf && echo x > conf/excludes"),
            ("ssh", "echo 'echo pwned' > tools/ssh-wrapper"),
            ("work", "echo ok > tools/notes.txt"),
        ]);
        let out = fx.sandbox().sh(&script);
        assert_eq!(open_lines(&out), vec!["work: OPEN"], "{mode:?}: {out:#?}");
        assert!(!p.join("conf/extra.cfg").exists(), "{mode:?}");
        // A config git cannot read either: nothing runs.
        std::fs::write(
            p.join(".git/config"),
            std::fs::read_to_string(p.join(".git/config")).unwrap() + "[core\n",
        )
        .unwrap();
        let out = fx.sandbox().sh("echo 'ran: yes'");
        assert_eq!(out.code, 125, "{mode:?}: {out:#?}");
        assert_eq!(line(&out, "ran"), "<missing>", "{mode:?}: {out:#?}");
        assert!(out.stderr.contains(".git/config"), "{mode:?}: {out:#?}");
    });
}

#[test]
fn a_repository_made_inside_stays_usable_and_loses_only_what_runs_code() {
    each_fixture(|mode, fx| {
        // A repository to clone, outside the project.
        let upstream = fx.outside.join("up");
        std::fs::create_dir(&upstream).unwrap();
        std::fs::write(upstream.join("a.txt"), "a\n").unwrap();
        chown_tree(&fx.outside, mode);
        fx.host_git(&upstream, &["init", "-q"]);
        fx.host_git(&upstream, &["add", "."]);
        fx.host_git(&upstream, &["commit", "-q", "-m", "up"]);
        let git = "git -c user.name=x -c user.email=x@y -c commit.gpgsign=false";
        let script = format!(
            "{git} clone -q {up} cl && cd cl && git config user.name kept \
             && git config core.fsmonitor ./evil && git config alias.st '!sh -c pwned' \
             && echo b > b.txt && {git} add b.txt && {git} commit -q -m b && echo 'commit: ok'; \
             cd ..; mkdir -p late/hooks && printf '#!/bin/sh\\necho pwned\\n' > late/hooks/post-checkout \
             && git init -q --bare late && echo 'late: made'; \
             ( printf '#!/bin/sh\\n' > cl/.git/hooks/pre-commit ) 2>/dev/null && echo 'hook: OPEN' || echo 'hook: refused'",
            up = upstream.display()
        );
        let out = fx.sandbox().sh(&script);
        assert_eq!(line(&out, "commit"), "ok", "{mode:?}: {out:#?}");
        assert_eq!(line(&out, "late"), "made", "{mode:?}: {out:#?}");
        assert_eq!(line(&out, "hook"), "refused", "{mode:?}: {out:#?}");
        assert_eq!(out.code, 0, "{mode:?}: {out:#?}");
        let cl = fx.project.join("cl");
        // The clone is usable on the host: its history, its files.
        let log = fx.host_git(&cl, &["log", "--format=%s"]);
        assert_eq!(String::from_utf8_lossy(&log.stdout), "b\nup\n", "{mode:?}");
        let config = std::fs::read_to_string(cl.join(".git/config")).unwrap();
        assert!(config.contains("kept"), "{mode:?}: {config}");
        assert!(
            !config.contains("fsmonitor") && !config.contains("pwned"),
            "{mode:?}: {config}"
        );
        assert!(
            !fx.project.join("late/hooks/post-checkout").exists(),
            "{mode:?}: {out:#?}"
        );
        for named in ["core.fsmonitor", "alias.st", "late/hooks/post-checkout"] {
            assert!(out.stderr.contains(named), "{mode:?}: {named}: {out:#?}");
        }
    });
}

#[test]
fn checks_that_cannot_finish_fail_closed() {
    each_fixture(|mode, fx| {
        for i in 0..20 {
            std::fs::write(fx.project.join(format!("f{i}")), "").unwrap();
        }
        chown_tree(&fx.project, mode);
        // Before the run: too much to walk, nothing runs.
        let out = fx
            .sandbox()
            .env("CORDON_TEST_SCAN_LIMIT", "10")
            .sh("echo 'ran: yes'");
        assert_eq!(out.code, 125, "{mode:?}: {out:#?}");
        assert_eq!(line(&out, "ran"), "<missing>", "{mode:?}: {out:#?}");
        assert!(
            out.stderr.contains("more than 10 entries"),
            "{mode:?}: {out:#?}"
        );
        // After the run: the sandbox made it too much to walk.
        let out = fx
            .sandbox()
            .env("CORDON_TEST_SCAN_LIMIT", "40")
            .sh("for i in $(seq 40); do : > g$i; done; echo 'ran: yes'");
        assert_eq!(line(&out, "ran"), "yes", "{mode:?}: {out:#?}");
        assert_eq!(out.code, 125, "{mode:?}: {out:#?}");
        assert!(out.stderr.contains("could not check"), "{mode:?}: {out:#?}");
        // A directory the caller owns but cannot read hides a new
        // repository: the sweep makes it readable again and goes on.
        let out = fx.sandbox().sh(
            "mkdir -p hid/r/hooks && printf '#!/bin/sh\\n' > hid/r/hooks/post-checkout \
             && git init -q --bare hid/r && chmod 0000 hid/r/hooks && chmod 0300 hid \
             && echo 'hidden: yes'",
        );
        assert_eq!(line(&out, "hidden"), "yes", "{mode:?}: {out:#?}");
        assert_eq!(out.code, 0, "{mode:?}: {out:#?}");
        let hook = fx.project.join("hid/r/hooks/post-checkout");
        assert!(!hook.exists(), "{mode:?}: {out:#?}");
        if mode == Mode::User {
            assert!(
                out.stderr.contains("made it readable"),
                "{mode:?}: {out:#?}"
            );
        }
        std::fs::set_permissions(
            fx.project.join("hid"),
            std::fs::Permissions::from_mode(0o755),
        )
        .unwrap();
    });
}

#[test]
fn a_rename_cannot_undo_deny_write_or_move_the_audit_log() {
    each_fixture(|mode, fx| {
        let p = &fx.project;
        std::fs::create_dir_all(p.join("sub/dir")).unwrap();
        std::fs::write(p.join("sub/dir/keep.txt"), "original\n").unwrap();
        std::fs::create_dir_all(p.join("logs")).unwrap();
        chown_tree(p, mode);
        let script = attempts_script(&[
            ("write", "echo forged > sub/dir/keep.txt"),
            (
                "mv-dir",
                "mv sub/dir sub/d2 && mkdir sub/dir && echo forged > sub/dir/keep.txt",
            ),
            (
                "mv-top",
                "mv sub sub2 && mkdir -p sub/dir && echo forged > sub/dir/keep.txt",
            ),
            ("missing", "echo forged > sub/new.txt"),
            (
                "log-mv",
                "mv logs logs2 && mkdir logs && echo forged > logs/audit.jsonl",
            ),
            ("log-write", "echo forged >> logs/audit.jsonl"),
            ("work", "echo ok > sub/other.txt"),
        ]);
        let out = fx
            .sandbox()
            .flag("--deny-write", p.join("sub/dir/keep.txt"))
            .flag("--deny-write", p.join("sub/new.txt"))
            .flag("--audit", p.join("logs/audit.jsonl"))
            .sh(&script);
        assert_eq!(open_lines(&out), vec!["work: OPEN"], "{mode:?}: {out:#?}");
        assert_eq!(
            std::fs::read_to_string(p.join("sub/dir/keep.txt")).unwrap(),
            "original\n"
        );
        assert!(!p.join("sub/new.txt").exists());
        let log = std::fs::read_to_string(p.join("logs/audit.jsonl")).unwrap();
        assert!(!log.contains("forged"), "{mode:?}");
    });
}

/// The gate makes names itself: what it makes, and the errors it gives,
/// must be what the kernel gives without it. One script runs on the host
/// and in the sandbox, in a fresh directory each; the outcomes must match.
#[test]
fn creating_calls_behave_as_they_do_without_the_gate() {
    each_fixture(|mode, fx| runs_as_on_the_host(mode, fx, include_str!("py/creating_calls.py")));
}

/// The gate keeps each caller's umask between its calls: what it makes
/// still gets the mode the kernel would give, however the umask changes
/// (in one thread, in another sharing it, in a thread or a child whose
/// umask is its own, while another thread flips it).
#[test]
fn modes_follow_every_umask_change() {
    each_fixture(|mode, fx| runs_as_on_the_host(mode, fx, include_str!("py/umask_changes.py")));
}

/// Runs `script` on the host and in the sandbox, each in a fresh
/// directory it makes (its argument), and compares what they print.
fn runs_as_on_the_host(mode: Mode, fx: &Fixture, script: &str) {
    let host_dir = fx.outside.join("host-run");
    let host = fx
        .host_cmd(PY)
        .arg("-c")
        .arg(script)
        .arg(&host_dir)
        .output()
        .unwrap();
    let host_out = String::from_utf8_lossy(&host.stdout).into_owned();
    assert!(host.status.success(), "host: {host:?}");
    let out = fx.sandbox().run(&[PY, "-c", script, "inside-run"]);
    out.ok();
    assert_eq!(out.stdout, host_out, "{mode:?}: {out:#?}");
}

/// The sweep after the run handles hostile leftovers as such: it moves
/// nothing through links the sandbox planted, touches nothing outside the
/// writable areas, recognises every layout git accepts, never blocks on a
/// FIFO, and neutralises what it cannot parse.
#[test]
fn the_sweep_cannot_be_turned_against_the_host() {
    each_fixture(|mode, fx| {
        // A repository of the user's outside the project, with a hook of
        // its own, and a file in another format named `config`.
        let victim = fx.outside.join("victim");
        std::fs::create_dir(&victim).unwrap();
        chown_tree(&fx.outside, mode);
        fx.host_git(&victim, &["init", "-q"]);
        std::fs::write(victim.join(".git/hooks/pre-commit"), "#!/bin/sh\nexit 0\n").unwrap();
        let ssh_like = fx.outside.join("fakessh");
        std::fs::create_dir(&ssh_like).unwrap();
        std::fs::write(ssh_like.join("config"), "Host *\n  User me\n").unwrap();
        chown_tree(&fx.outside, mode);
        let fsmon = "git config core.fsmonitor 'echo PWNED; false'";
        let script = [
            // A planted quarantine link into the victim.
            "mkdir -p evil/objects evil/refs evil/hooks".to_string(),
            "printf '#!/bin/sh\\n' > evil/hooks/post-checkout".into(),
            "echo 'ref: refs/heads/main' > evil/HEAD".into(),
            format!("ln -s {} evil/cordon-quarantine", victim.join(".git").display()),
            // Pointers to git dirs (or look-alikes) outside the project.
            format!("mkdir b && ln -s {} b/.git", ssh_like.display()),
            format!(
                "mkdir c && echo 'ref: x' > c/HEAD && echo {} > c/commondir",
                victim.join(".git").display()
            ),
            // Layouts git accepts: a symlinked HEAD, symlinked objects.
            format!("git init -q s1 && rm s1/.git/HEAD && ln -s refs/heads/master s1/.git/HEAD && (cd s1 && {fsmon})"),
            format!("git init -q s2 && mv s2/.git/objects s2/.git/objs && ln -s objs s2/.git/objects && (cd s2 && {fsmon})"),
            // A config that is not UTF-8.
            "git init -q u1 && printf '# \\377\\n[core]\\n\\tfsmonitor = echo PWNED\\n' >> u1/.git/config".into(),
            // Hooks made before the repository, and FIFOs where files belong.
            "mkdir -p z/.git/hooks && printf '#!/bin/sh\\n' > z/.git/hooks/post-checkout && git init -q z".into(),
            "mkdir a && mkfifo a/.git".into(),
            "git init -q f && rm f/.git/config && mkfifo f/.git/config".into(),
            "echo 'done: yes'".into(),
        ]
        .join("; ");
        let out = fx.sandbox().sh(&script);
        assert_eq!(line(&out, "done"), "yes", "{mode:?}: {out:#?}");
        assert_eq!(out.code, 0, "{mode:?}: {out:#?}");
        // Nothing outside the project was moved or rewritten.
        assert!(
            victim.join(".git/hooks/pre-commit").exists(),
            "{mode:?}: {out:#?}"
        );
        assert!(
            !victim.join(".git/hooks/post-checkout").exists(),
            "{mode:?}: {out:#?}"
        );
        assert_eq!(
            std::fs::read_to_string(ssh_like.join("config")).unwrap(),
            "Host *\n  User me\n"
        );
        let p = &fx.project;
        assert!(
            !p.join("evil/hooks/post-checkout").exists(),
            "{mode:?}: {out:#?}"
        );
        assert!(
            !p.join("z/.git/hooks/post-checkout").exists(),
            "{mode:?}: {out:#?}"
        );
        for repo in ["s1", "s2"] {
            let config = std::fs::read_to_string(p.join(repo).join(".git/config")).unwrap();
            assert!(!config.contains("fsmonitor"), "{mode:?}: {repo}: {config}");
        }
        assert!(!p.join("u1/.git/config").exists(), "{mode:?}: {out:#?}");
        assert!(
            p.join("f/.git/config").symlink_metadata().is_err(),
            "{mode:?}: {out:#?}"
        );
        // And the next run is not stuck on what is left.
        fx.sandbox().sh("true").ok();
    });
}

#[test]
fn the_users_git_config_deep_deny_write_paths_and_socket_names_cannot_be_made() {
    each_fixture(|mode, fx| {
        let bind = |name: &str| {
            format!("python3 -c 'import socket; socket.socket(socket.AF_UNIX).bind(\"{name}\")'")
        };
        let (bad_socket, good_socket) = (bind(".envrc"), bind("ok.sock"));
        let script = attempts_script(&[
            (
                "deep-deny-write",
                "mkdir -p newdir/sub && echo planted > newdir/sub/never.txt",
            ),
            ("socket", &bad_socket),
            ("socket-ok", &good_socket),
        ]);
        let out = fx
            .sandbox()
            .flag("--deny-write", fx.project.join("newdir/sub/never.txt"))
            .sh(&script);
        assert_eq!(
            open_lines(&out),
            vec!["socket-ok: OPEN"],
            "{mode:?}: {out:#?}"
        );
        assert!(!fx.config.join("git").exists());
        assert!(!fx.project.join("newdir/sub/never.txt").exists());
        assert!(fx.project.join(".envrc").symlink_metadata().is_err());
        // A writable home (or a startup place in it) is refused outright:
        // dotfiles, ~/.config, programs on PATH would all be open; so is
        // $XDG_CONFIG_HOME, where git reads its git/config and cordon its
        // own config.
        std::fs::create_dir_all(fx.home.join(".local/bin")).unwrap();
        chown_tree(&fx.home, mode);
        for writable in [
            fx.home.clone(),
            fx.home.join(".local/bin"),
            fx.config.clone(),
        ] {
            let out = fx
                .sandbox()
                .flag("--allow-write", &writable)
                .sh("echo 'ran: yes'");
            assert_eq!(out.code, 125, "{mode:?}: {out:#?}");
            assert_eq!(line(&out, "ran"), "<missing>", "{mode:?}: {out:#?}");
            assert!(out.stderr.contains("startup file"), "{mode:?}: {out:#?}");
        }
        assert!(!fx.home.join(".gitconfig").exists());
    });
}

/// Round two of the review: a common dir reached through `commondir`,
/// names tools look for from any depth, quarantine names used up, /proc
/// of init through the gate, a planted link for --allow-read.
#[test]
fn the_reviews_second_round_of_persistence_escapes_is_closed() {
    each_fixture(|mode, fx| {
        let p = &fx.project;
        std::fs::create_dir_all(p.join("crates/foo/.cargo")).unwrap();
        std::fs::write(p.join("crates/foo/.cargo/config.toml"), "[build]\n").unwrap();
        std::fs::create_dir_all(p.join("pkg/a")).unwrap();
        std::fs::write(p.join("pkg/a/package.json"), "{}\n").unwrap();
        chown_tree(p, mode);
        let pwned = fx.outside.join("PWNED");
        let fsmon = format!("[core]\n\tfsmonitor = touch {}; false\n", pwned.display());
        std::fs::write(fx.outside.join("evil.cfg"), &fsmon).unwrap();
        chown_tree(&fx.outside, mode);
        let script = [
            // A common dir with no HEAD, through a linked commondir.
            "git init -q x && mkdir evilc && mv x/.git/objects x/.git/refs evilc/".to_string(),
            format!("cp {} evilc/config", fx.outside.join("evil.cfg").display()),
            "printf '../../evilc\\n' > ptr && ln -s ../../ptr x/.git/commondir".into(),
            // ... and through a commondir with a NUL and junk after it.
            "git init -q y && mkdir evild && mv y/.git/objects y/.git/refs evild/".into(),
            format!("cp {} evild/config", fx.outside.join("evil.cfg").display()),
            "printf '../../evild\\000junk' > y/.git/commondir".into(),
            // Every quarantine name the sandbox can guess, taken.
            "git init -q q && for i in '' $(seq 1 99 | sed 's/^/-/'); do mkdir q/.git/cordon-quarantine$i; done".into(),
            format!("cat {} >> q/.git/config", fx.outside.join("evil.cfg").display()),
            "echo 'done: yes'".into(),
        ]
        .join("; ");
        let out = fx.sandbox().sh(&script);
        assert_eq!(line(&out, "done"), "yes", "{mode:?}: {out:#?}");
        assert_eq!(out.code, 0, "{mode:?}: {out:#?}");
        for repo in ["x", "y", "q"] {
            let _ = fx
                .host_cmd("git")
                .arg("status")
                .current_dir(p.join(repo))
                .output();
            assert!(
                !pwned.exists(),
                "{mode:?}: git status in {repo} ran the sandbox's code: {out:#?}"
            );
        }
        // Names tools look for from any depth, refused at any depth.
        let script = attempts_script(&[
            (
                "cargo-existing",
                "echo '[build]\nrustc-wrapper = \"/p/w.sh\"' > crates/foo/.cargo/config.toml",
            ),
            (
                "cargo-new",
                "mkdir -p crates/bar/.cargo && echo x > crates/bar/.cargo/config.toml",
            ),
            (
                "cargo-link",
                "ln -s /tmp crates/bar2-.cargo && mv crates/bar2-.cargo crates/.cargo",
            ),
            (
                "npmrc",
                "echo 'node-options=--require ./e.js' > pkg/a/.npmrc",
            ),
            ("toolchain", "echo x > crates/foo/rust-toolchain.toml"),
            ("envrc", "mkdir -p deep/er && echo x > deep/er/.envrc"),
            (
                "proc-init",
                "python3 -c 'import os; os.open(\"/proc/1/maps\", os.O_CREAT | os.O_RDONLY)'",
            ),
            ("work", "echo ok > pkg/a/index.js"),
        ]);
        let out = fx.sandbox().sh(&script);
        assert_eq!(open_lines(&out), vec!["work: OPEN"], "{mode:?}: {out:#?}");
        // A planted link an --allow-read rule would follow into a denied file.
        let denied = fx.home.join(DENIED_CANARIES[0]);
        std::os::unix::fs::symlink(&denied, p.join("cert.pem")).unwrap();
        let out = fx
            .sandbox()
            .flag("--allow-read", p.join("cert.pem"))
            .sh("cat cert.pem; echo 'ran: yes'");
        assert_eq!(out.code, 125, "{mode:?}: {out:#?}");
        assert!(
            !out.stdout.contains(&fx.canary(DENIED_CANARIES[0])),
            "{mode:?}: {out:#?}"
        );
    });
}

#[test]
fn git_config_inside_changes_the_projects_settings_but_nothing_that_runs_code() {
    each_fixture(|mode, fx| {
        git_project(fx);
        fx.host_git(&fx.project, &["config", "core.pager", "less"]);
        let config = fx.project.join(".git/config");
        let before = std::fs::read(&config).unwrap();
        let log = fx.outside.join("audit.jsonl");
        let script = attempts_script(&[
            ("user.name", "git config user.name 'Inside Name'"),
            ("user.email", "git config user.email in@side.example"),
            ("branch", "git config branch.main.rebase true"),
            ("remote", "git remote add origin https://git.example/r.git"),
            ("fsmonitor", "git config core.fsmonitor ./evil"),
            ("hooksPath", "git config core.hooksPath ./hooks"),
            ("include", "git config include.path ../evil.cfg"),
            ("alias", "git config alias.st '!sh -c pwned'"),
            ("ext-url", "git config remote.x.url 'ext::sh -c pwned'"),
            ("unset", "git config --unset core.pager"),
            ("mv-over", "printf '[core]\\n\\tfsmonitor = ./evil\\n' > c.new && mv c.new .git/config"),
            ("exchange", "python3 -c \"import os; open('x','w').close(); os.rename('x', '.git/config')\" && false"),
        ]);
        let out = fx.audited(&log).sh(&format!(
            "{script}git config --get user.name | sed 's/^/seen: /'"
        ));
        let mut open = open_lines(&out);
        open.sort();
        assert_eq!(
            open,
            vec![
                "branch: OPEN",
                "remote: OPEN",
                "user.email: OPEN",
                "user.name: OPEN"
            ],
            "{mode:?}: {out:#?}"
        );
        // Inside sees its own change at once (the same file, written in place).
        assert_eq!(line(&out, "seen"), "Inside Name", "{mode:?}: {out:#?}");
        // On the host: the settings changed, nothing that runs code did.
        let get = |key: &str| {
            let out = fx
                .host_cmd("git")
                .args(["config", "--get", key])
                .current_dir(&fx.project)
                .output()
                .unwrap();
            String::from_utf8_lossy(&out.stdout).trim().to_string()
        };
        assert_eq!(get("user.name"), "Inside Name", "{mode:?}");
        assert_eq!(
            get("remote.origin.url"),
            "https://git.example/r.git",
            "{mode:?}"
        );
        for key in [
            "core.fsmonitor",
            "core.hookspath",
            "include.path",
            "alias.st",
            "remote.x.url",
        ] {
            assert_eq!(get(key), "", "{mode:?}: {key} reached the host");
        }
        assert_eq!(get("core.pager"), "less", "{mode:?}");
        let after = std::fs::read_to_string(&config).unwrap();
        assert_ne!(after.as_bytes(), &before[..], "{mode:?}");
        // No lock file or other trace is left behind.
        assert!(!fx.project.join(".git/config.lock").exists(), "{mode:?}");
        // Each refusal is recorded with the key that would have changed.
        let audit = std::fs::read_to_string(&log).unwrap();
        for key in [
            "core.fsmonitor",
            "core.hookspath",
            "include.path",
            "alias.st",
            "remote.x.url",
            "core.pager",
        ] {
            assert!(
                audit.contains(key),
                "{mode:?}: {key} not in the audit log: {audit}"
            );
        }
        let _ = std::fs::remove_file(fx.project.join("c.new"));
    });
}
