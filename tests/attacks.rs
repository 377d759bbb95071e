//! Red-team regression tests: attacks on the boundary, each run as root and
//! as an unprivileged uid. Some are attacks the sandbox stops (they must
//! keep failing); the others are holes found in review and fail until
//! cordon closes them (each says what it plants and how it would run code
//! or reach the host later).

mod common;

use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::time::Duration;

use common::*;

/// The modules the attack snippets use beyond `os` and `errno`.
const MODULES: &[&str] = &["ctypes", "socket", "fcntl"];

const GIT: &str = "git -c user.name=x -c user.email=x@y -c commit.gpgsign=false";

/// Runs `git status` on the host as the mode's uid in `dir`, the way the
/// user would after the agent is done (success not required).
fn host_git_status(fx: &Fixture, dir: &Path) {
    let _ = fx
        .host_cmd("git")
        .args(["status", "--short"])
        .current_dir(dir)
        .output();
}

// ---------------------------------------------------------------------------
// Holes: these fail until cordon closes them.

/// HOLE (critical): `.git/commondir` is not protected. Git reads it in
/// every repository and then takes `config` and `hooks/` from the
/// directory it names, so the sandbox points it at a directory of its own
/// whose config sets `core.fsmonitor`: the user's next `git status` on the
/// host runs the sandbox's command.
#[test]
fn git_commondir_cannot_redirect_config_and_hooks() {
    each_fixture(|mode, fx| {
        git_project(fx);
        let marker = fx.outside.join(format!("pwned-commondir-{}", fx.token));
        let script = format!(
            "mkdir -p evil && cp -r .git/refs .git/objects .git/HEAD evil/ && \
             printf '[core]\\n\\trepositoryformatversion = 0\\n\\tfsmonitor = \"touch {m}; false\"\\n' > evil/config && \
             ( echo ../evil > .git/commondir ) 2>/dev/null && echo 'commondir: OPEN' || echo 'commondir: refused'\n",
            m = marker.display()
        );
        let out = fx.sandbox().sh(&script);
        host_git_status(fx, &fx.project);
        assert!(
            !marker.exists(),
            "{mode:?}: host `git status` ran a command planted through .git/commondir: {out:#?}"
        );
        assert!(
            !fx.project.join(".git/commondir").exists(),
            "{mode:?}: .git/commondir planted: {out:#?}"
        );
    });
}

/// HOLE (high): a git repository the sandbox creates in a subdirectory
/// is not protected (only repositories that exist when the run starts
/// are). `cd src && git status` on the host -- or an editor scanning for
/// nested repositories -- then runs its `core.fsmonitor`.
#[test]
fn repo_created_inside_project_does_not_run_code_on_host() {
    each_fixture(|mode, fx| {
        git_project(fx);
        std::fs::create_dir(fx.project.join("src")).unwrap();
        chown(&fx.project.join("src"), mode);
        let marker = fx.outside.join(format!("pwned-nested-{}", fx.token));
        let script = format!(
            "cd src && git init -q && git config core.fsmonitor 'touch {}; false' && echo planted",
            marker.display()
        );
        let out = fx.sandbox().sh(&script);
        host_git_status(fx, &fx.project.join("src"));
        assert!(
            !marker.exists(),
            "{mode:?}: host `git status` in src/ ran the sandbox's fsmonitor: {out:#?}"
        );
    });
}

/// A protected name that is a symlink cannot be mounted over, so the
/// sandbox could replace the link (or write through a dangling one):
/// cordon must refuse to run, naming the link, or the writes must fail.
#[test]
fn protected_name_that_is_a_symlink_cannot_be_replaced() {
    each_fixture(|mode, fx| {
        git_project(fx);
        let p = &fx.project;
        std::fs::write(p.join("envrc.real"), "export OK=1\n").unwrap();
        std::os::unix::fs::symlink("envrc.real", p.join(".envrc")).unwrap();
        std::fs::create_dir(p.join("githooks")).unwrap();
        std::fs::remove_dir_all(p.join(".git/hooks")).unwrap();
        std::os::unix::fs::symlink("../githooks", p.join(".git/hooks")).unwrap();
        std::os::unix::fs::symlink("mcp-missing.json", p.join(".mcp.json")).unwrap();
        chown_tree(p, mode);
        let script = "( rm -f .envrc && echo 'touch /tmp/x' > .envrc ) 2>/dev/null && echo 'envrc: OPEN' || echo 'envrc: refused'\n\
            ( rm -f .git/hooks && mkdir .git/hooks && echo evil > .git/hooks/pre-commit ) 2>/dev/null && echo 'hooks: OPEN' || echo 'hooks: refused'\n\
            ( echo '{\"mcpServers\":{}}' > .mcp.json ) 2>/dev/null && echo 'mcp: OPEN' || echo 'mcp: refused'\n";
        let out = fx.sandbox().sh(script);
        let meta = |rel: &str| p.join(rel).symlink_metadata().unwrap().file_type();
        assert!(
            meta(".envrc").is_symlink() && meta(".git/hooks").is_symlink(),
            "{mode:?}: protected symlinks replaced: {out:#?}"
        );
        assert!(
            !p.join("mcp-missing.json").exists(),
            "{mode:?}: written through dangling protected link .mcp.json: {out:#?}"
        );
        if out.code == 125 {
            assert!(out.stderr.contains("is a symlink"), "{mode:?}: {out:#?}");
        } else {
            for l in ["envrc", "hooks", "mcp"] {
                assert_eq!(line(&out, l), "refused", "{mode:?}: {out:#?}");
            }
        }
    });
}

/// HOLE (high): pathname UNIX sockets on the host are reachable (Landlock
/// ABI < 9 does not cover them, seccomp allows AF_UNIX, and the mount view
/// keeps /run). A root caller appears as uid 0 to the listener (docker.sock,
/// systemd's private socket, the D-Bus system bus); a user reaches their
/// session bus, systemd --user and ssh-agent. Here: a world-writable socket
/// in a host directory.
#[test]
fn host_pathname_unix_socket_is_unreachable() {
    each_fixture(|mode, fx| {
        let path = fx.outside.join("host.sock");
        let listener = std::os::unix::net::UnixListener::bind(&path).unwrap();
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o777)).unwrap();
        listener.set_nonblocking(true).unwrap();
        let got = std::sync::Arc::new(std::sync::Mutex::new(Vec::<u8>::new()));
        let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
        let (g, s) = (got.clone(), stop.clone());
        let server = std::thread::spawn(move || {
            use std::io::Read;
            // One last look after `stop`, for a connection made just before.
            let mut last = false;
            while !last {
                last = s.load(std::sync::atomic::Ordering::SeqCst);
                match listener.accept() {
                    Ok((mut c, _)) => {
                        let _ = c.set_nonblocking(false);
                        let _ = c.set_read_timeout(Some(Duration::from_secs(5)));
                        let mut buf = [0u8; 64];
                        if let Ok(n) = c.read(&mut buf) {
                            g.lock().unwrap().extend_from_slice(&buf[..n]);
                        }
                    }
                    Err(_) => std::thread::sleep(Duration::from_millis(20)),
                }
            }
        });
        let script = py_tries(
            MODULES,
            "",
            &[(
                "connect",
                format!(
                    "s = socket.socket(socket.AF_UNIX); s.connect({:?}); s.sendall(b'from-sandbox'); s.close()",
                    path.to_str().unwrap()
                ),
            )],
        );
        let out = fx.sandbox().tries(&script);
        stop.store(true, std::sync::atomic::Ordering::SeqCst);
        server.join().unwrap();
        let received = String::from_utf8_lossy(&got.lock().unwrap()).into_owned();
        assert!(
            line(&out, "connect").starts_with("ERR"),
            "{mode:?}: host UNIX socket reachable (listener got {received:?}): {out:#?}"
        );
        assert!(
            received.is_empty(),
            "{mode:?}: host listener got {received:?}"
        );
    });
}

/// HOLE (medium): `protect` names in an untrusted project cordon.toml
/// (narrowing, so no trust needed) are joined to the project without
/// resolving symlinks; through a symlinked directory in the repository,
/// cordon (maybe as root) creates placeholder files and directories
/// anywhere on the host for the duration of the run.
#[test]
fn untrusted_protect_name_cannot_create_files_outside_the_project() {
    each_fixture(|mode, fx| {
        std::os::unix::fs::symlink("../outside", fx.project.join("l")).unwrap();
        std::fs::write(
            fx.project.join("cordon.toml"),
            "[files]\nprotect = [\"l/planted-dir/\", \"l/planted-parent/file\"]\n",
        )
        .unwrap();
        chown_tree(&fx.project, mode);
        let probe = format!(
            "ls -A {} | sed 's/^/outside: /'; echo done",
            fx.outside.display()
        );
        let out = fx.sandbox().sh(&probe);
        assert!(
            !out.stdout.contains("planted"),
            "{mode:?}: cordon created placeholders outside the project: {out:#?}"
        );
        assert!(!fx.outside.join("planted-dir").exists());
        assert!(!fx.outside.join("planted-parent").exists());
    });
}

/// Runs whose projects nest: the outer run ends while the inner one still
/// runs, and the inner one's command keeps trying to plant a protected
/// name of its repository. (It was a hole when protection used placeholder
/// files shared between runs: the outer run removed one under the inner
/// run's mount.) Protection now leaves nothing on the host at all.
#[test]
fn nested_runs_keep_protecting_after_the_outer_one_ends() {
    each_fixture(|mode, fx| {
        git_project(fx);
        let sub = fx.project.join("sub");
        std::fs::create_dir(&sub).unwrap();
        chown(&sub, mode);
        fx.host_git(&sub, &["init", "-q"]);
        // A waits until B is up, then ends.
        let a = fx.sandbox().spawn(&[
            "sh",
            "-c",
            "touch sub/a-ready; while [ ! -e sub/b-ready ]; do sleep 0.05; done",
        ]);
        assert!(
            wait_until(Duration::from_secs(30), || sub.join("a-ready").exists()),
            "run A never started"
        );
        assert!(
            !sub.join(".vscode").exists() && !fx.project.join(".bashrc").exists(),
            "{mode:?}: a running sandbox left protection files in the project"
        );
        let b_script = "touch b-ready; i=0; while [ $i -lt 200 ]; do \
             if ( mkdir -p .vscode/d && echo '{}' > .vscode/tasks.json ) 2>/dev/null; then echo 'vscode: OPEN'; exit 0; fi; \
             i=$((i+1)); sleep 0.05; done; echo 'vscode: refused'";
        let b = fx
            .sandbox()
            .project(&sub)
            .cwd(&sub)
            .spawn(&["sh", "-c", b_script]);
        let a_out = a.wait();
        let b_out = b.wait();
        assert_eq!(a_out.code, 0, "{mode:?}: {a_out:#?}");
        assert!(
            !sub.join(".vscode/tasks.json").exists(),
            "{mode:?}: B planted .vscode/tasks.json after A removed the shared placeholder: {b_out:#?}"
        );
        assert_eq!(line(&b_out, "vscode"), "refused", "{mode:?}: {b_out:#?}");
    });
}

/// HOLE (medium, policy coverage): configuration files that developer
/// tools execute from the project without being asked -- rust-analyzer
/// runs `cargo check` on open (`.cargo/config.toml` sets
/// `build.rustc-wrapper`; `rust-toolchain.toml` can name a toolchain
/// `path`), Cursor starts the servers in `.cursor/mcp.json` (the twin of
/// the protected `.mcp.json`), every `yarn` runs `yarnPath` from
/// `.yarnrc.yml` -- are writable.
#[test]
fn tool_configs_that_run_code_are_protected() {
    each_fixture(|mode, fx| {
        git_project(fx);
        let attempts = [
            (
                "cargo-config",
                "mkdir -p .cargo && printf '[build]\\nrustc-wrapper = \"./x\"\\n' > .cargo/config.toml",
            ),
            (
                "rust-toolchain",
                "printf '[toolchain]\\npath = \"./tc\"\\n' > rust-toolchain.toml",
            ),
            (
                "cursor-mcp",
                "mkdir -p .cursor && echo '{}' > .cursor/mcp.json",
            ),
            ("yarnrc", "echo 'yarnPath: ./x.js' > .yarnrc.yml"),
        ];
        let out = fx.sandbox().sh(&attempts_script(&attempts));
        let open = open_lines(&out);
        assert!(
            open.is_empty(),
            "{mode:?}: code-running tool configs writable: {open:?}"
        );
    });
}

// ---------------------------------------------------------------------------
// Attacks the sandbox stops today (regressions).

/// Ways around a read-only bind of a protected path: hard links (EXDEV
/// across the bind), rename over it or of its pinned parents (EBUSY), an
/// O_TMPFILE linked in, re-opening an O_PATH descriptor for writing
/// through /proc/self/fd, `git config --file`, `truncate`.
#[test]
fn protected_paths_resist_link_rename_and_fd_tricks() {
    each_fixture(|mode, fx| {
        git_project(fx);
        let nested = fx.project.join("pkg");
        std::fs::create_dir(&nested).unwrap();
        chown(&nested, mode);
        fx.host_git(&nested, &["init", "-q"]);
        let cfg_before = std::fs::read(fx.project.join(".git/config")).unwrap();
        let cases: Vec<(&str, String)> = vec![
            ("hardlink-config", "os.link('.git/config', 'cfg-link')".into()),
            (
                "rename-over-config",
                "open('evil', 'w').write('x'); os.rename('evil', '.git/config')".into(),
            ),
            ("rename-git", "os.rename('.git', 'git-moved')".into()),
            ("rename-hooks", "os.rename('.git/hooks', '.git/h2')".into()),
            ("rename-nested", "os.rename('pkg', 'pkg-moved')".into()),
            (
                "rename-nested-git",
                "os.rename('pkg/.git', 'pkg/git-moved')".into(),
            ),
            (
                "tmpfile-link",
                "fd = os.open('.git/hooks', os.O_TMPFILE | os.O_WRONLY, 0o755); os.write(fd, b'#!/bin/sh\\n'); os.link('/proc/self/fd/%d' % fd, '.git/hooks/pre-commit')".into(),
            ),
            (
                "opath-reopen",
                "fd = os.open('.git/config', os.O_PATH); os.close(os.open('/proc/self/fd/%d' % fd, os.O_WRONLY | os.O_APPEND))".into(),
            ),
            (
                "truncate",
                "os.truncate('.git/config', 0)".into(),
            ),
            (
                "symlink-into-hooks",
                "os.symlink('/bin/true', '.git/hooks/post-checkout')".into(),
            ),
            (
                "rmdir-placeholder",
                "os.rmdir('.vscode')".into(),
            ),
            (
                "nested-hook",
                "open('pkg/.git/hooks/pre-commit', 'w').write('x')".into(),
            ),
            (
                "nested-config",
                "open('pkg/.git/config', 'a').write('x')".into(),
            ),
        ];
        let script = py_tries(MODULES, "", &cases).then(&format!(
            "import subprocess\nr = subprocess.run('{GIT} config --file .git/config core.hooksPath /tmp', shell=True, capture_output=True)\nprint('git-config-file:', 'OK' if r.returncode == 0 else 'ERR')\n"
        ));
        let out = fx.sandbox().tries(&script);
        for l in [
            "hardlink-config",
            "rename-over-config",
            "rename-git",
            "rename-hooks",
            "rename-nested",
            "rename-nested-git",
            "tmpfile-link",
            "opath-reopen",
            "truncate",
            "symlink-into-hooks",
            "rmdir-placeholder",
            "nested-hook",
            "nested-config",
            "git-config-file",
        ] {
            assert!(
                line(&out, l).starts_with("ERR"),
                "{mode:?}: {l} got through: {out:#?}"
            );
        }
        assert_eq!(
            std::fs::read(fx.project.join(".git/config")).unwrap(),
            cfg_before,
            "{mode:?}"
        );
        assert!(!fx.project.join(".vscode").exists(), "{mode:?}: leftover");
        assert!(
            !fx.project.join(".git/hooks/pre-commit").exists(),
            "{mode:?}"
        );
    });
}

/// The process door from the inside: init's /proc files, other processes'
/// memory, namespaces (also through raw clone and x32 syscall numbers,
/// which a filter checking only the arch field would miss), the mount API,
/// io_uring, TIOCSTI with the upper bits set, kernel knobs, cgroups.
#[test]
fn process_escapes_are_refused() {
    each_fixture(|mode, fx| {
        // The prelude's guard keeps these calls from ever running on the
        // host (e.g. against a fake cordon): inside, the command's parent is
        // init.
        let prelude = include_str!("py/attacks_syscalls.py");
        let cases: Vec<(&str, String)> = vec![
            ("init-root", "os.listdir('/proc/1/root/')".into()),
            ("init-cwd", "os.readlink('/proc/1/cwd')".into()),
            ("init-environ", "open('/proc/1/environ', 'rb').read()".into()),
            ("init-mem", "open('/proc/1/mem', 'rb').close()".into()),
            (
                "init-fd",
                "os.close(os.open('/proc/1/fd/%s' % sorted(os.listdir('/proc/1/fd'))[-1], os.O_RDONLY))".into(),
            ),
            ("unshare-user", "sc(272, CLONE_NEWUSER)".into()),
            ("unshare-mnt", "sc(272, 0x20000)".into()),
            ("clone-newuser", "r = sc(56, CLONE_NEWUSER | 17, 0, 0, 0, 0)\n    if r == 0: os._exit(0)".into()),
            ("x32-unshare", "sc(0x40000000 | 272, CLONE_NEWUSER)".into()),
            ("x32-ptrace", "sc(0x40000000 | 521, 16, 1, 0, 0)".into()),
            ("setns", "sc(308, os.open('/proc/self/ns/mnt', os.O_RDONLY), 0)".into()),
            ("ptrace-attach", "sc(101, 16, 1, 0, 0)".into()),
            (
                "process_vm_readv",
                "sc(310, 1, 0, 0, 0, 0, 0)".into(),
            ),
            ("io_uring", "sc(425, 4, ctypes.create_string_buffer(256))".into()),
            ("open_tree", "sc(428, -100, b'/', 1 | 0x80000)".into()),
            ("fsopen", "sc(430, b'tmpfs', 0)".into()),
            ("mount", "sc(165, b'none', b'/tmp', b'tmpfs', 0, 0)".into()),
            ("bpf", "sc(321, 0, 0, 0)".into()),
            ("keyctl", "sc(250, 0, -3, 0)".into()),
            ("userfaultfd", "sc(323, 0)".into()),
            ("tiocsti-hibits", "sc(16, 0, 0x100005412, b'x')".into()),
            ("netlink", "socket.socket(16, socket.SOCK_RAW, 0)".into()),
            ("packet", "socket.socket(17, socket.SOCK_RAW, 0)".into()),
            ("vsock", "socket.socket(40, socket.SOCK_STREAM, 0)".into()),
            ("core_pattern", "os.close(os.open('/proc/sys/kernel/core_pattern', os.O_WRONLY))".into()),
            ("core_pattern-via-root", "os.close(os.open('/proc/%d/root/proc/sys/kernel/core_pattern' % os.getpid(), os.O_WRONLY))".into()),
            ("cgroup-procs", "os.close(os.open('/sys/fs/cgroup/cgroup.procs' if os.path.exists('/sys/fs/cgroup/cgroup.procs') else '/sys/fs/cgroup/unified/cgroup.procs', os.O_WRONLY))".into()),
            ("oom-adj", "open('/proc/self/oom_score_adj', 'w').write('-1000')".into()),
            ("kill-init", "os.kill(1, 9); import time; time.sleep(0.2); os.kill(1, 0); raise OSError(errno.EPERM, 'init survived')".into()),
            ("sandbox-ok", "open('/tmp/ok', 'w').write('x')".into()),
        ];
        let out = fx.sandbox().tries(&py_tries(MODULES, prelude, &cases));
        assert_eq!(line(&out, "sandbox-ok"), "OK", "{mode:?}: {out:#?}");
        for (l, _) in &cases {
            if *l == "sandbox-ok" {
                continue;
            }
            assert!(
                line(&out, l).starts_with("ERR"),
                "{mode:?}: {l} was not refused: {out:#?}"
            );
        }
        // The command survived killing init: SIGKILL from inside is ignored.
        out.ok();
    });
}

/// Every namespace flag of `unshare`, alone and with `CLONE_FS` (which the
/// gate lets through, for its umask cache), is refused by cordon's filter
/// itself, not only by the kernel for want of a capability: each refusal
/// is in the run's summary, which only the filter's refusals reach.
#[test]
fn every_namespace_flag_of_unshare_is_refused_by_the_filter() {
    let flags: [(&str, u64); 8] = [
        ("user", 0x1000_0000),
        ("mount", 0x2_0000),
        ("pid", 0x2000_0000),
        ("net", 0x4000_0000),
        ("ipc", 0x800_0000),
        ("uts", 0x400_0000),
        ("cgroup", 0x200_0000),
        ("time", 0x80),
    ];
    each_fixture(|mode, fx| {
        for (name, flag) in flags {
            for with_fs in [0, 0x200] {
                let code = format!(
                    "import ctypes, os\nlibc = ctypes.CDLL(None, use_errno=True)\nr = libc.syscall(272, {})\nprint('unshare', r, os.strerror(ctypes.get_errno()) if r else '')",
                    flag | with_fs
                );
                let out = fx.sandbox().py(&code);
                assert!(
                    out.stdout.starts_with("unshare -1"),
                    "{mode:?}: {name} (fs {with_fs:#x}) was not refused: {out:#?}"
                );
                assert!(
                    out.stderr.contains("unshare: refused with EPERM"),
                    "{mode:?}: {name} (fs {with_fs:#x}) was refused by the kernel alone: {out:#?}"
                );
            }
        }
    });
}

/// A 32-bit syscall (int 0x80) from inside: the filter's arch check
/// answers ENOSYS instead of letting the i386 table bypass the rules.
#[test]
fn int80_syscalls_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    build_c(
        dir.path(),
        "i",
        "int main(void){long r; __asm__ volatile(\"int $0x80\":\"=a\"(r):\"a\"(310L),\"b\"(0x10000000L):\"memory\"); return r == 0 ? 0 : r == -38 ? 4 : 3;}\n",
        &["-static"],
    );
    each_fixture(|mode, fx| {
        let bin = fx.project.join("i");
        std::fs::copy(dir.path().join("i"), &bin).unwrap();
        std::fs::set_permissions(&bin, std::fs::Permissions::from_mode(0o755)).unwrap();
        chown(&bin, mode);
        let out = fx.sandbox().run(&["./i"]);
        // ENOSYS from the filter's arch check (exit 4), not success (0)
        // and not the unshare rule's EPERM (3).
        assert_eq!(out.code, 4, "{mode:?}: {out:#?}");
    });
}

/// Nothing outlives the sandbox: a double-forked, setsid'ed daemon that
/// ignores SIGHUP is gone once cordon returns.
#[test]
fn daemonised_process_does_not_outlive_cordon() {
    each_fixture(|mode, fx| {
        let tag = format!("9{}", &fx.token[..6]);
        let tag_num: u64 = u64::from_str_radix(&tag, 16).unwrap() % 100000 + 100000;
        let sleep_arg = format!("{tag_num}.{}", mode.uid() % 7 + 1);
        let script = format!(
            "setsid sh -c 'trap \"\" HUP; (sleep {sleep_arg} </dev/null >/dev/null 2>&1 &) ' ; sleep 0.2; echo started"
        );
        let out = fx.sandbox().sh(&script);
        out.ok();
        let gone = wait_until(Duration::from_secs(5), || {
            host_pids_with_cmdline(&format!("sleep {sleep_arg}")).is_empty()
        });
        let left = host_pids_with_cmdline(&format!("sleep {sleep_arg}"));
        for pid in &left {
            let _ = nix::sys::signal::kill(
                nix::unistd::Pid::from_raw(*pid),
                nix::sys::signal::Signal::SIGKILL,
            );
        }
        assert!(gone, "{mode:?}: daemon survived cordon: {left:?}");
    });
}

/// /dev/shm is a second writable tmpfs: it is size-capped too.
#[test]
fn dev_shm_is_size_capped() {
    each_fixture(|mode, fx| {
        let script = py_tries(
            MODULES,
            "",
            &[(
                "fill",
                "f = open('/dev/shm/fill', 'wb')\n    [f.write(b'\\0' * (1 << 20)) for _ in range(64)]\n    f.flush(); f.close()".into(),
            )],
        );
        let out = fx.sandbox().flag("--max-tmp", "8M").tries(&script);
        assert_eq!(line(&out, "fill"), "ERR ENOSPC", "{mode:?}: {out:#?}");
    });
}

/// Denied files stay unreadable through the paths a process can take
/// around a mount: /proc/self/root, /proc/1/root, a hard link, and their
/// content never appears in /proc/self/mountinfo.
#[test]
fn denied_files_unreadable_through_proc_and_links() {
    each_fixture(|mode, fx| {
        let key = fx.home.join(".ssh/id_rsa");
        let k = key.to_str().unwrap();
        let cases: Vec<(&str, String)> = vec![
            ("direct", format!("open({k:?}).read()")),
            (
                "self-root",
                format!("open('/proc/self/root' + {k:?}).read()"),
            ),
            ("init-root", format!("open('/proc/1/root' + {k:?}).read()")),
            ("hardlink", format!("os.link({k:?}, 'idlink')")),
            (
                "openat-dirfd",
                format!(
                    "os.close(os.open({:?}, os.O_RDONLY, dir_fd=os.open('/', os.O_PATH)))",
                    k.trim_start_matches('/')
                ),
            ),
        ];
        let script = py_tries(MODULES, "", &cases)
            .then("print('mountinfo-bytes:', len(open('/proc/self/mountinfo').read()))\n");
        let out = fx.sandbox().tries(&script);
        let canary = fx.canary(".ssh/id_rsa");
        assert!(!out.has(&canary), "{mode:?}: canary leaked: {out:#?}");
        for (l, _) in &cases {
            assert!(line(&out, l).starts_with("ERR"), "{mode:?}: {l}: {out:#?}");
        }
    });
}

/// An untrusted project cordon.toml cannot widen through a symlink to a
/// file that was trusted elsewhere, through `..` in protect names, or by
/// a "narrowing" key that in fact widens (deny_read of the whole root).
#[test]
fn untrusted_project_policy_tricks_are_refused() {
    each_fixture(|mode, fx| {
        // A trusted policy somewhere else that widens...
        let trusted = fx.outside.join("cordon.toml");
        std::fs::write(
            &trusted,
            format!(
                "[files]\nallow_write = [{:?}]\n",
                fx.outside.to_str().unwrap()
            ),
        )
        .unwrap();
        chown_tree(&fx.outside, mode);
        fx.sandbox().subcommand("trust").arg(&trusted).run(&[]).ok();
        // ...borrowed by the project through a symlink.
        std::os::unix::fs::symlink(&trusted, fx.project.join("cordon.toml")).unwrap();
        chown_tree(&fx.project, mode);
        let out = fx.sandbox().sh(&format!(
            "echo x > {}/borrowed && echo 'write: OPEN'",
            fx.outside.display()
        ));
        assert!(!out.has("write: OPEN"), "{mode:?}: {out:#?}");
        assert_eq!(out.code, 125, "{mode:?}: {out:#?}");
        assert!(!fx.outside.join("borrowed").exists());

        std::fs::remove_file(fx.project.join("cordon.toml")).unwrap();
        std::fs::write(
            fx.project.join("cordon.toml"),
            "[files]\nprotect = [\"../outside/x\"]\n",
        )
        .unwrap();
        chown_tree(&fx.project, mode);
        let out = fx.sandbox().sh("echo ran");
        assert_eq!(out.code, 125, "{mode:?}: `..` accepted: {out:#?}");
        assert!(!fx.outside.join("x").exists());
    });
}

/// Loopback TCP of the sandbox's own netns works for nothing outside:
/// the host's listeners are in another namespace, and Landlock refuses
/// ports not allowed. A quick check that the supervisor's proxy design
/// does not leak one.
#[test]
fn no_tcp_path_to_host_loopback() {
    each_fixture(|mode, fx| {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let port = l.local_addr().unwrap().port();
        l.set_nonblocking(true).unwrap();
        let script = py_tries(
            MODULES,
            "",
            &[
                (
                    "tcp",
                    format!("socket.create_connection(('127.0.0.1', {port}), timeout=3)"),
                ),
                (
                    "udp",
                    format!(
                        "s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM); s.sendto(b'x', ('10.0.2.2', {port}))"
                    ),
                ),
            ],
        );
        let out = fx.sandbox().tries(&script);
        assert!(line(&out, "tcp").starts_with("ERR"), "{mode:?}: {out:#?}");
        assert!(line(&out, "udp").starts_with("ERR"), "{mode:?}: {out:#?}");
        assert!(
            l.accept().is_err(),
            "{mode:?}: host listener got a connection"
        );
    });
}
