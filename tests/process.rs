//! The process door: exit codes, stdio, ids, pid namespace, signals,
//! cleanup on SIGKILL, descriptor hygiene, hostname.

mod common;

use std::time::Duration;

use common::*;
use nix::sys::signal::Signal;

#[test]
fn exit_code_passes_through() {
    each_fixture(|mode, fx| {
        let out = fx.sandbox().sh("echo ran; exit 7");
        assert_eq!(out.code, 7, "{mode:?}: {out:#?}");
        assert!(out.stdout.contains("ran"), "{mode:?}: {out:#?}");
        let out = fx.sandbox().run(&["true"]);
        assert_eq!(out.code, 0, "{mode:?}: {out:#?}");
    });
}

#[test]
fn death_by_signal_is_128_plus_n() {
    each_fixture(|mode, fx| {
        let out = fx.sandbox().sh("echo before; kill -TERM $$; echo after");
        assert_eq!(out.code, 143, "{mode:?}: {out:#?}");
        assert!(out.stdout.contains("before"), "{mode:?}: {out:#?}");
        assert!(!out.stdout.contains("after"), "{mode:?}: {out:#?}");
    });
}

#[test]
fn stdout_and_stderr_pass_through() {
    each_fixture(|mode, fx| {
        let out = fx
            .sandbox()
            .sh("echo to-stdout-$0; echo to-stderr >&2")
            .expect_code(0)
            .stdout
            .clone();
        assert!(out.contains("to-stdout-sh"), "{mode:?}: {out}");
        let o = fx.sandbox().sh("echo to-stderr-x >&2");
        o.ok();
        assert!(o.stderr.contains("to-stderr-x"), "{mode:?}: {o:#?}");
        assert!(!o.stdout.contains("to-stderr-x"), "{mode:?}: {o:#?}");
    });
}

#[test]
fn stdin_pipe_reaches_command() {
    each_fixture(|mode, fx| {
        let data = format!("piped-{}\nsecond line\n", fx.token);
        let out = fx.sandbox().stdin(data.as_bytes()).run(&["cat"]);
        out.ok();
        assert_eq!(out.stdout, data, "{mode:?}: {out:#?}");
    });
}

#[test]
fn uid_and_gid_are_the_callers() {
    each_fixture(|mode, fx| {
        let out = fx.sandbox().sh("id -u; id -g");
        out.ok();
        assert_eq!(
            out.stdout,
            format!("{}\n{}\n", mode.uid(), mode.gid()),
            "{mode:?}: {out:#?}"
        );
    });
}

/// A `sleep` on the host with a unique argument, killed on drop.
struct HostSleep(std::process::Child);
impl Drop for HostSleep {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn unique_sleep_arg() -> String {
    let t = rand_token();
    let digits: String = t
        .bytes()
        .map(|b| char::from(b'0' + b % 10))
        .take(9)
        .collect();
    format!("4242.{digits}")
}

/// A sandbox in `fx` running a shell that runs a `sleep` with a unique
/// argument (returned, to find it on the host) and then `echo x`.
fn spawn_sleeping(fx: &Fixture) -> (String, Running) {
    let arg = unique_sleep_arg();
    let run = fx
        .sandbox()
        .spawn(&["sh", "-c", &format!("sleep {arg}; echo x")]);
    (arg, run)
}

#[test]
fn host_processes_are_invisible() {
    each_fixture(|mode, fx| {
        let arg = unique_sleep_arg();
        let _host = HostSleep(
            std::process::Command::new("sleep")
                .arg(&arg)
                .spawn()
                .expect("sleep"),
        );
        assert!(
            wait_until(Duration::from_secs(5), || !host_pids_with_cmdline(&arg)
                .is_empty()),
            "host canary sleep not visible on the host"
        );
        // Inside: a sandboxed sleep with another unique arg is visible (the
        // search works), the host one is not, and only a few pids exist.
        let inner = unique_sleep_arg();
        let script = format!(
            "sleep {inner} & sleep 0.2; \
             echo count=$(ls /proc | grep -c '^[0-9]*$'); \
             for f in /proc/[0-9]*/cmdline; do tr '\\0' ' ' < $f 2>/dev/null; echo; done; \
             kill $!"
        );
        let out = fx.sandbox().sh(&script);
        out.ok();
        assert!(
            out.stdout.contains(&inner),
            "{mode:?}: own sleep not seen: {out:#?}"
        );
        assert!(
            !out.stdout.contains(&arg),
            "{mode:?}: host process visible: {out:#?}"
        );
        let count: usize = out
            .stdout
            .lines()
            .find_map(|l| l.strip_prefix("count="))
            .and_then(|c| c.trim().parse().ok())
            .unwrap_or(usize::MAX);
        assert!(count <= 8, "{mode:?}: {count} pids visible: {out:#?}");
    });
}

#[test]
fn init_environ_and_cmdline_do_not_leak_env() {
    each_fixture(|mode, fx| {
        let secret = format!("secret-{}", fx.token);
        let out = fx.sandbox().env("CANARY_ENV", &secret).sh(
            "echo self:; cat /proc/self/environ | tr '\\0' '\\n' | grep CANARY_ENV; \
                 echo init-environ:; cat /proc/1/environ | tr '\\0' '\\n'; \
                 echo init-cmdline:; cat /proc/1/cmdline | tr '\\0' '\\n'; \
                 echo; echo init-comm: $(cat /proc/1/comm); echo end",
        );
        // Positive control: the command itself inherits it for now, so the
        // reading method works.
        assert!(out.stdout.contains("end"), "{mode:?}: {out:#?}");
        let (own, init) = out.stdout.split_once("init-environ:").unwrap();
        assert!(own.contains(&secret), "{mode:?}: control failed: {out:#?}");
        // Control: pid 1 is cordon's own init, not the host's.
        assert!(
            out.stdout.contains("init-comm: cordon\n"),
            "{mode:?}: pid 1 is not cordon's init: {out:#?}"
        );
        assert!(
            !init.contains(&secret),
            "{mode:?}: /proc/1 leaks CANARY_ENV: {out:#?}"
        );
    });
}

#[test]
fn forwarded_signals_reach_the_command() {
    let cases = [
        (Signal::SIGINT, "INT", 11),
        (Signal::SIGTERM, "TERM", 12),
        (Signal::SIGHUP, "HUP", 13),
        (Signal::SIGUSR1, "USR1", 14),
    ];
    each_mode(|mode| {
        for (sig, name, code) in cases {
            let fx = Fixture::new(mode);
            let ready = fx.project.join("ready");
            let script = format!(
                "trap 'echo got-{name}; exit {code}' {name}; touch ready; \
                 i=0; while [ $i -lt 300 ]; do sleep 0.1; i=$((i+1)); done; exit 99"
            );
            let run = fx.sandbox().spawn(&["sh", "-c", &script]);
            assert!(
                wait_until(Duration::from_secs(20), || ready.exists()),
                "{mode:?} {name}: command never got ready"
            );
            run.signal(sig);
            let out = run.wait();
            assert_eq!(out.code, code, "{mode:?} {name}: {out:#?}");
            assert!(
                out.stdout.contains(&format!("got-{name}")),
                "{mode:?}: {out:#?}"
            );
        }
    });
}

#[test]
fn sigkill_of_cordon_leaves_nothing_behind() {
    each_fixture(|mode, fx| {
        let (arg, run) = spawn_sleeping(fx);
        assert!(
            wait_until(Duration::from_secs(20), || !host_pids_with_cmdline(&arg)
                .is_empty()),
            "{mode:?}: sandboxed sleep never appeared on the host"
        );
        // Its cgroups, to clean up after a leak (asserted in the next test).
        let cgroups: Vec<_> = host_pids_with_cmdline(&arg)
            .into_iter()
            .flat_map(cordon_cgroup_dirs)
            .collect();
        run.signal(Signal::SIGKILL);
        let out = run.wait();
        assert_eq!(out.code, 128 + 9, "{mode:?}: {out:#?}");
        let gone = wait_until(Duration::from_secs(5), || {
            host_pids_with_cmdline(&arg).is_empty()
        });
        let left = host_pids_with_cmdline(&arg);
        // Never leave a stray process from a failing test.
        for pid in &left {
            let _ = nix::sys::signal::kill(nix::unistd::Pid::from_raw(*pid), Signal::SIGKILL);
        }
        wait_until(Duration::from_secs(5), || {
            cgroups.iter().all(|d| !d.exists())
        });
        for d in &cgroups {
            let _ = std::fs::remove_dir(d);
        }
        assert!(gone, "{mode:?}: sandboxed processes survived: {left:?}");
    });
}

#[test]
fn inherited_descriptors_are_closed() {
    each_fixture(|mode, fx| {
        let leak = fx.outside.join("leaked-fd.txt");
        // Control: the wrapper really hands fd 5 to what it execs.
        let control = std::process::Command::new("/bin/sh")
            .arg("-c")
            .arg("exec 5>\"$0\"; exec ls /proc/self/fd")
            .arg(&leak)
            .output()
            .unwrap();
        let listed = String::from_utf8_lossy(&control.stdout);
        assert!(
            listed.split_whitespace().any(|f| f == "5"),
            "control: {listed}"
        );
        std::fs::write(&leak, "").unwrap();
        chown(&leak, mode);

        let out = fx.sandbox().run_with_fd5(
            &leak,
            &[
                "sh",
                "-c",
                "echo fds: $(ls /proc/self/fd); echo via-fd5 > /proc/self/fd/5 && echo WROTE5; \
                 echo via-fd5 >&5 && echo WROTE5B; echo done",
            ],
        );
        assert!(out.stdout.contains("done"), "{mode:?}: {out:#?}");
        let fds: Vec<&str> = out
            .stdout
            .lines()
            .find_map(|l| l.strip_prefix("fds:"))
            .unwrap_or("")
            .split_whitespace()
            .collect();
        for f in ["0", "1", "2"] {
            assert!(fds.contains(&f), "{mode:?}: missing fd {f}: {out:#?}");
        }
        assert!(
            fds.iter().all(|f| ["0", "1", "2", "3"].contains(f)),
            "{mode:?}: extra fds inside: {fds:?}: {out:#?}"
        );
        assert!(!out.stdout.contains("WROTE5"), "{mode:?}: {out:#?}");
        assert_eq!(std::fs::read_to_string(&leak).unwrap(), "", "{mode:?}");
    });
}

#[test]
fn hostname_is_not_the_hosts() {
    let host = std::fs::read_to_string("/proc/sys/kernel/hostname").unwrap();
    each_fixture(|mode, fx| {
        let out = fx.sandbox().sh("cat /proc/sys/kernel/hostname");
        out.ok();
        let inner = out.stdout.trim();
        assert!(!inner.is_empty(), "{mode:?}: {out:#?}");
        assert_ne!(inner, host.trim(), "{mode:?}: host hostname visible");
    });
}

/// The cgroup directories (on the host) of `pid` that cordon created.
fn cordon_cgroup_dirs(pid: i32) -> Vec<std::path::PathBuf> {
    let text = std::fs::read_to_string(format!("/proc/{pid}/cgroup")).unwrap_or_default();
    let mut dirs = Vec::new();
    for line in text.lines() {
        let mut parts = line.splitn(3, ':');
        let (_, ctrl, path) = (parts.next(), parts.next(), parts.next());
        let (Some(ctrl), Some(path)) = (ctrl, path) else {
            continue;
        };
        if !path.contains("cordon-") {
            continue;
        }
        let rel = path.trim_start_matches('/');
        let roots: Vec<String> = if ctrl.is_empty() {
            vec!["/sys/fs/cgroup/unified".into(), "/sys/fs/cgroup".into()]
        } else {
            let first = ctrl.split(',').next().unwrap().trim_start_matches("name=");
            vec![
                format!("/sys/fs/cgroup/{first}"),
                format!("/sys/fs/cgroup/{ctrl}"),
            ]
        };
        for r in roots {
            let d = std::path::Path::new(&r).join(rel);
            if d.is_dir() {
                dirs.push(d);
                break;
            }
        }
    }
    dirs
}

#[test]
fn sigkill_of_cordon_leaves_no_cgroup() {
    each_fixture(|mode, fx| {
        let (arg, run) = spawn_sleeping(fx);
        // The sandboxed sleep itself (cordon's own cmdline holds the arg too).
        let find = || {
            host_pids_with_cmdline(&arg).into_iter().find(|p| {
                std::fs::read(format!("/proc/{p}/cmdline")).is_ok_and(|c| c.starts_with(b"sleep\0"))
            })
        };
        assert!(
            wait_until(Duration::from_secs(20), || find().is_some()),
            "{mode:?}: sandboxed sleep never appeared on the host"
        );
        let pid = find().expect("sandboxed sleep pid");
        let dirs = cordon_cgroup_dirs(pid);
        if mode == Mode::Root {
            // Control: as root here cordon limits by a cgroup of its own.
            assert!(
                !dirs.is_empty(),
                "{mode:?}: no cordon cgroup found for {pid}"
            );
        }
        run.signal(Signal::SIGKILL);
        let _ = run.wait();
        wait_until(Duration::from_secs(5), || {
            host_pids_with_cmdline(&arg).is_empty()
        });
        // The next run removes the cgroups of a supervisor that is gone
        // (it could not clean up itself) before it makes its own.
        fx.sandbox().run(&["true"]).ok();
        let gone = wait_until(Duration::from_secs(5), || dirs.iter().all(|d| !d.exists()));
        let left: Vec<_> = dirs.iter().filter(|d| d.exists()).cloned().collect();
        // Do not leave the leak behind on this machine.
        for d in &left {
            let _ = std::fs::remove_dir(d);
        }
        assert!(
            gone,
            "{mode:?}: cgroups left after SIGKILL of cordon: {left:?}"
        );
    });
}

/// The command starts with every signal at its default disposition: no
/// signal init's side ignores (glibc's `posix_spawn` sets its internal
/// signals 32 and 33 to `SIG_IGN` in the child it spawns, and an ignored
/// signal stays ignored across exec) reaches the command or its children.
#[test]
fn the_command_ignores_no_signal_it_did_not_choose_to() {
    each_fixture(|mode, fx| {
        // grep is exec'd straight by init and leaves its dispositions alone.
        let out = fx.sandbox().run(&["grep", "^SigIgn:", "/proc/self/status"]);
        out.ok();
        let mask = out
            .stdout
            .split_whitespace()
            .nth(1)
            .and_then(|hex| u64::from_str_radix(hex, 16).ok())
            .unwrap_or_else(|| panic!("{mode:?}: no SigIgn line: {out:#?}"));
        // Bit N-1 is signal N.
        for signal in [32, 33] {
            assert_eq!(
                mask & (1 << (signal - 1)),
                0,
                "{mode:?}: signal {signal} is ignored in the command (SigIgn {mask:#x})"
            );
        }
        // A child of the command dies of signal 33, as it would outside.
        let out = fx
            .sandbox()
            .sh("sleep 30 & sleep 0.3; kill -33 $!; wait $!; echo status=$?");
        assert!(out.stdout.contains("status=161"), "{mode:?}: {out:#?}");
    });
}

/// A command that asks first thing to die with its parent
/// (`PR_SET_PDEATHSIG`, as `tini -p`, `bwrap --die-with-parent` or a
/// supervised worker does) runs to its end: the parent it sees is init,
/// which outlives it. The kernel sends that signal when the *thread*
/// that started the process exits, so a command started from a
/// short-lived thread of init's is killed as soon as that thread ends.
/// On one CPU the command runs first after its exec, which makes the
/// race the rule rather than the exception.
#[test]
fn a_command_that_dies_with_its_parent_is_not_killed_at_start() {
    let dir = tempfile::tempdir().unwrap();
    build_c(
        dir.path(),
        "pdeath",
        "#include <sys/prctl.h>\n#include <signal.h>\n#include <unistd.h>\n\
         int main(void){ prctl(PR_SET_PDEATHSIG, SIGKILL); usleep(100000); return 0; }\n",
        &["-O2"],
    );
    // This thread (and so cordon, init and the command, which inherit
    // it) on one CPU.
    let this_thread = nix::unistd::Pid::from_raw(0);
    let before = nix::sched::sched_getaffinity(this_thread).unwrap();
    let cpu = (0..nix::sched::CpuSet::count())
        .find(|&c| before.is_set(c).unwrap_or(false))
        .unwrap();
    let mut one = nix::sched::CpuSet::new();
    one.set(cpu).unwrap();
    nix::sched::sched_setaffinity(this_thread, &one).unwrap();
    each_fixture(|mode, fx| {
        use std::os::unix::fs::PermissionsExt;
        let bin = fx.project.join("pdeath");
        std::fs::copy(dir.path().join("pdeath"), &bin).unwrap();
        std::fs::set_permissions(&bin, std::fs::Permissions::from_mode(0o755)).unwrap();
        chown(&bin, mode);
        let killed = (0..10)
            .map(|_| fx.sandbox().run(&["./pdeath"]))
            .filter(|out| out.code != 0)
            .collect::<Vec<_>>();
        assert!(
            killed.is_empty(),
            "{mode:?}: {} of 10 runs did not end with 0 (137: SIGKILL): {:#?}",
            killed.len(),
            killed.first()
        );
    });
    nix::sched::sched_setaffinity(this_thread, &before).unwrap();
}

/// A command that could not be started at all (here: the sandbox's task
/// cap leaves no room for it) is a set-up failure, 125, as README says;
/// 126 means the command is not executable, which it is.
#[test]
fn a_command_with_no_room_to_start_is_a_setup_failure_not_126() {
    each_fixture(|mode, fx| {
        // Init and the thread that starts the command take both tasks.
        let out = fx.sandbox().flag("--max-procs", "2").run(&["true"]);
        assert_eq!(out.code, 125, "{mode:?}: {out:#?}");
    });
}
