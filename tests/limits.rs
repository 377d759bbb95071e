//! Limits: tasks, /tmp size, wall-clock timeout, memory.

mod common;

use std::time::Duration;

use common::*;

/// Forks 100 sleeping children, counts successes and the errno of
/// failures, then kills and reaps them.
const FORK_PY: &str = r#"
import os, errno, signal, time
kids, errs = [], set()
for i in range(100):
    try:
        pid = os.fork()
    except OSError as e:
        errs.add(errno.errorcode.get(e.errno, str(e.errno)))
        continue
    if pid == 0:
        time.sleep(30)
        os._exit(0)
    kids.append(pid)
print('forked:', len(kids))
print('errors:', ' '.join(sorted(errs)) or 'none')
for k in kids:
    os.kill(k, signal.SIGKILL)
for k in kids:
    os.waitpid(k, 0)
print('done: yes')
"#;

#[test]
fn max_procs_caps_tasks() {
    each_mode(|mode| {
        let fx = Fixture::new(mode);
        // Control: with the default limit all 100 start.
        let out = fx.sandbox().py(FORK_PY);
        out.ok();
        assert_eq!(line(&out, "forked"), "100", "{mode:?}: {out:#?}");
        let out = fx.sandbox().arg("--max-procs").arg("40").py(FORK_PY);
        out.ok();
        let forked: usize = line(&out, "forked").parse().unwrap_or(999);
        assert!(forked < 40, "{mode:?}: {out:#?}");
        assert_eq!(line(&out, "errors"), "EAGAIN", "{mode:?}: {out:#?}");
        assert_eq!(line(&out, "done"), "yes", "{mode:?}: {out:#?}");
    });
}

fn tmp_write(size: usize) -> String {
    format!(
        "import errno\n\
         try:\n\
         \x20   with open('/tmp/fill', 'wb') as f:\n\
         \x20       f.write(b'x' * {size})\n\
         \x20   print('write: OK')\n\
         except OSError as e:\n\
         \x20   print('write: ERR', errno.errorcode.get(e.errno, e.errno))\n"
    )
}

#[test]
fn max_tmp_caps_tmp() {
    each_mode(|mode| {
        let fx = Fixture::new(mode);
        let small = fx
            .sandbox()
            .arg("--max-tmp")
            .arg("1M")
            .py(&tmp_write(100 * 1024));
        assert_eq!(line(&small, "write"), "OK", "{mode:?}: {small:#?}");
        let big = fx
            .sandbox()
            .arg("--max-tmp")
            .arg("1M")
            .py(&tmp_write(4 << 20));
        assert_eq!(line(&big, "write"), "ERR ENOSPC", "{mode:?}: {big:#?}");
        // Control: without the flag 4M fits.
        let dflt = fx.sandbox().py(&tmp_write(4 << 20));
        assert_eq!(line(&dflt, "write"), "OK", "{mode:?}: {dflt:#?}");
    });
}

#[test]
fn timeout_kills_with_124() {
    each_mode(|mode| {
        let fx = Fixture::new(mode);
        let arg = format!(
            "30.{}",
            &fx.token[..8].replace(|c: char| !c.is_ascii_digit(), "7")
        );
        let out = fx
            .sandbox()
            .arg("--timeout")
            .arg("1s")
            .run(&["sleep", &arg]);
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
        let out = fx.sandbox().arg("--timeout").arg("30s").sh("exit 5");
        assert_eq!(out.code, 5, "{mode:?}: {out:#?}");
    });
}

fn alloc(mb: usize) -> String {
    format!(
        "import sys\n\
         try:\n\
         \x20   b = b'x' * ({mb} << 20)\n\
         \x20   print('alloc: OK', len(b) >> 20)\n\
         except MemoryError:\n\
         \x20   print('alloc: MemoryError')\n\
         sys.stdout.flush()\n"
    )
}

#[test]
fn max_memory_caps_memory() {
    each_mode(|mode| {
        let fx = Fixture::new(mode);
        let small = fx.sandbox().arg("--max-memory").arg("64M").py(&alloc(8));
        small.ok();
        assert_eq!(line(&small, "alloc"), "OK 8", "{mode:?}: {small:#?}");
        let big = fx.sandbox().arg("--max-memory").arg("64M").py(&alloc(512));
        let refused = line(&big, "alloc") == "MemoryError" || big.code == 137;
        assert!(
            refused,
            "{mode:?}: 512M allocated under a 64M cap: {big:#?}"
        );
        // Control: without the cap 512M works.
        let free = fx.sandbox().py(&alloc(512));
        assert_eq!(line(&free, "alloc"), "OK 512", "{mode:?}: {free:#?}");
    });
}
