//! Limits: tasks, /tmp size, wall-clock timeout, memory.

mod common;

use std::time::Duration;

use common::*;

/// Forks 100 sleeping children, counts successes and the errno of
/// failures, then kills and reaps them.
const FORK_PY: &str = include_str!("py/fork_100.py");

#[test]
fn max_procs_caps_tasks() {
    each_fixture(|mode, fx| {
        // Control: with the default limit all 100 start.
        let out = fx.sandbox().py(FORK_PY);
        out.ok();
        assert_eq!(line(&out, "forked"), "100", "{mode:?}: {out:#?}");
        let out = fx.sandbox().flag("--max-procs", "40").py(FORK_PY);
        out.ok();
        let forked: usize = line(&out, "forked").parse().unwrap_or(999);
        assert!(forked < 40, "{mode:?}: {out:#?}");
        assert_eq!(line(&out, "errors"), "EAGAIN", "{mode:?}: {out:#?}");
        assert_eq!(line(&out, "done"), "yes", "{mode:?}: {out:#?}");
    });
}

/// Writes argv[1] bytes to /tmp/fill: `write: OK` or `write: ERR <errno>`.
const TMP_WRITE_PY: &str = include_str!("py/tmp_write.py");

fn tmp_write(sb: Sandbox, size: usize) -> Output {
    sb.py_args(TMP_WRITE_PY, &[&size.to_string()])
}

#[test]
fn max_tmp_caps_tmp() {
    each_fixture(|mode, fx| {
        let small = tmp_write(fx.sandbox().flag("--max-tmp", "1M"), 100 * 1024);
        assert_eq!(line(&small, "write"), "OK", "{mode:?}: {small:#?}");
        let big = tmp_write(fx.sandbox().flag("--max-tmp", "1M"), 4 << 20);
        assert_eq!(line(&big, "write"), "ERR ENOSPC", "{mode:?}: {big:#?}");
        // Control: without the flag 4M fits.
        let dflt = tmp_write(fx.sandbox(), 4 << 20);
        assert_eq!(line(&dflt, "write"), "OK", "{mode:?}: {dflt:#?}");
    });
}

#[test]
fn timeout_kills_with_124() {
    each_fixture(|mode, fx| {
        let arg = format!(
            "30.{}",
            &fx.token[..8].replace(|c: char| !c.is_ascii_digit(), "7")
        );
        let out = fx.sandbox().flag("--timeout", "1s").run(&["sleep", &arg]);
        assert_eq!(out.code, 124, "{mode:?}: {out:#?}");
        let gone = wait_until(Duration::from_secs(5), || {
            host_pids_with_cmdline(&arg).is_empty()
        });
        for pid in host_pids_with_cmdline(&arg) {
            let _ = nix::sys::signal::kill(
                nix::unistd::Pid::from_raw(pid),
                nix::sys::signal::Signal::SIGKILL,
            );
        }
        assert!(gone, "{mode:?}: sleep survived the timeout");
        // Control: a command that ends in time keeps its own code.
        let out = fx.sandbox().flag("--timeout", "30s").sh("exit 5");
        assert_eq!(out.code, 5, "{mode:?}: {out:#?}");
    });
}

/// Allocates argv[1] MiB: `alloc: OK <MiB>` or `alloc: MemoryError`.
const ALLOC_PY: &str = include_str!("py/alloc.py");

fn alloc(sb: Sandbox, mb: usize) -> Output {
    sb.py_args(ALLOC_PY, &[&mb.to_string()])
}

#[test]
fn max_memory_caps_memory() {
    each_fixture(|mode, fx| {
        let small = alloc(fx.sandbox().flag("--max-memory", "64M"), 8);
        small.ok();
        assert_eq!(line(&small, "alloc"), "OK 8", "{mode:?}: {small:#?}");
        let big = alloc(fx.sandbox().flag("--max-memory", "64M"), 512);
        let refused = line(&big, "alloc") == "MemoryError" || big.code == 137;
        assert!(
            refused,
            "{mode:?}: 512M allocated under a 64M cap: {big:#?}"
        );
        // Control: without the cap 512M works.
        let free = alloc(fx.sandbox(), 512);
        assert_eq!(line(&free, "alloc"), "OK 512", "{mode:?}: {free:#?}");
    });
}

/// An address-space limit (the mechanism where no cgroup can be made, as
/// for a user here) binds the command, not init: init is a copy of the
/// supervisor, whose mappings count too (a thread's malloc arena alone
/// reserves 64 MiB), and under a small limit it could not grow its stack
/// and died of SIGSEGV before the command ran.
#[test]
fn a_small_memory_limit_binds_the_command_not_init() {
    each_fixture(|mode, fx| {
        for (limit, kib) in [("8M", "8192"), ("32M", "32768")] {
            let out = fx
                .sandbox()
                .flag("--max-memory", limit)
                .sh("echo limit: $(ulimit -v); exit 7");
            assert_eq!(out.code, 7, "{mode:?} {limit}: {out:#?}");
            let seen = line(&out, "limit");
            assert!(
                seen == kib || seen == "unlimited",
                "{mode:?} {limit}: the command's limit is {seen}: {out:#?}"
            );
        }
    });
}

/// Holds 40 gated 4 MiB sends blocked at once (160 MiB of copies in the
/// gate's workers, if each is made): see tests/py/gate_held_memory.py.
const GATE_HELD_MEMORY_PY: &str = include_str!("py/gate_held_memory.py");

/// What the command makes init's UNIX socket gate hold counts against
/// `--max-memory` too: init, which copies each gated send before making
/// it, must not become the command's unlimited memory. With rlimits as the
/// mechanism (uid 65534 here) the address-space limit is set in the
/// command's process only, so a command of a few MiB could park 4 MiB per
/// gate worker (up to 1024 workers: 4 GiB) in init.
#[test]
fn the_gate_holds_no_more_than_the_memory_limit_for_the_command() {
    each_fixture(|mode, fx| {
        let out = fx
            .sandbox()
            .flag("--max-memory", "64M")
            .timeout(Duration::from_secs(60))
            .py_args(GATE_HELD_MEMORY_PY, &["40"]);
        // The sandbox may end (a memory cgroup's OOM kill): then no figure
        // is printed, and nothing was held.
        let before: u64 = line(&out, "init_rss_before").parse().unwrap_or(0);
        let held = line(&out, "init_rss")
            .parse::<u64>()
            .unwrap_or(0)
            .saturating_sub(before);
        assert!(
            held < 64 << 10,
            "{mode:?}: init holds {held} KiB more for the command, above its 64 MiB limit: {out:#?}"
        );
    });
}
