//! The terminal: interactive shells through cordon's pty relay, Ctrl-C,
//! job control, and no TIOCSTI injection into any terminal.

mod common;

use std::fs::File;
use std::io::{Read, Write};
use std::os::fd::{AsFd, AsRawFd, OwnedFd};
use std::os::unix::process::CommandExt;
use std::process::Stdio;
use std::time::{Duration, Instant};

use common::*;

/// A pty the test owns: the master side, and cordon running on the slave.
struct PtyRun {
    master: File,
    run: Option<Running>,
    seen: String,
    pos: usize,
}

/// Starts cordon with stdout/stderr (and stdin if `interactive`) on a new
/// pty's slave, as its controlling terminal in a new session.
fn spawn_on_pty(sb: &Sandbox, cmd: &[&str], interactive: bool) -> PtyRun {
    let ws = nix::pty::Winsize {
        ws_row: 24,
        ws_col: 100,
        ws_xpixel: 0,
        ws_ypixel: 0,
    };
    let pty = nix::pty::openpty(Some(&ws), None).expect("openpty");
    let slave: OwnedFd = pty.slave;
    let mut c = sb.command(cmd);
    let dup = |fd: &OwnedFd| Stdio::from(fd.try_clone().unwrap());
    c.stdout(dup(&slave)).stderr(dup(&slave));
    if interactive {
        c.stdin(dup(&slave));
    } else {
        c.stdin(Stdio::null());
    }
    let slave_raw = slave.as_raw_fd();
    // SAFETY: only async-signal-safe calls (setsid, ioctl) between fork and exec.
    unsafe {
        c.pre_exec(move || {
            if libc::setsid() < 0 {
                return Err(std::io::Error::last_os_error());
            }
            if libc::ioctl(slave_raw, libc::TIOCSCTTY as _, 0) < 0 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
    let run = Running::start(c, None, RUN_TIMEOUT);
    drop(slave);
    let master = File::from(pty.master);
    let flags = nix::fcntl::fcntl(master.as_raw_fd(), nix::fcntl::FcntlArg::F_GETFL).unwrap();
    let flags = nix::fcntl::OFlag::from_bits_truncate(flags) | nix::fcntl::OFlag::O_NONBLOCK;
    nix::fcntl::fcntl(master.as_raw_fd(), nix::fcntl::FcntlArg::F_SETFL(flags)).unwrap();
    PtyRun {
        master,
        run: Some(run),
        seen: String::new(),
        pos: 0,
    }
}

impl PtyRun {
    /// Reads until `needle` shows up after the current position; panics
    /// with everything seen after `limit`.
    fn expect(&mut self, needle: &str, limit: Duration) -> String {
        let start = self.pos;
        let end = Instant::now() + limit;
        loop {
            if let Some(i) = self.seen[start..].find(needle) {
                let got = self.seen[start..start + i + needle.len()].to_string();
                self.pos = start + i + needle.len();
                return got;
            }
            let left = end.saturating_duration_since(Instant::now());
            if left.is_zero() {
                panic!(
                    "timed out waiting for {needle:?}; saw {:?}",
                    &self.seen[start..]
                );
            }
            let mut fds = [nix::poll::PollFd::new(
                self.master.as_fd(),
                nix::poll::PollFlags::POLLIN,
            )];
            let ms = left.as_millis().min(200) as u16;
            let _ = nix::poll::poll(&mut fds, nix::poll::PollTimeout::from(ms));
            let mut buf = [0u8; 4096];
            match self.master.read(&mut buf) {
                Ok(0) => std::thread::sleep(Duration::from_millis(20)),
                Ok(n) => self.seen.push_str(&String::from_utf8_lossy(&buf[..n])),
                Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {}
                // EIO: every slave fd is closed (cordon ended).
                Err(_) => std::thread::sleep(Duration::from_millis(20)),
            }
        }
    }

    fn send(&mut self, s: &str) {
        self.master.write_all(s.as_bytes()).unwrap();
    }

    /// Everything readable right now (up to `limit`), then the exit code.
    fn finish(mut self, limit: Duration) -> (i32, String) {
        let run = self.run.take().unwrap();
        let end = Instant::now() + limit;
        let mut child = run;
        let code = loop {
            if let Ok(Some(_)) = child.child.try_wait() {
                break child.wait().code;
            }
            let mut buf = [0u8; 4096];
            if let Ok(n) = self.master.read(&mut buf) {
                self.seen.push_str(&String::from_utf8_lossy(&buf[..n]));
            }
            if Instant::now() > end {
                panic!("cordon did not exit; saw {:?}", self.seen);
            }
            std::thread::sleep(Duration::from_millis(20));
        };
        let mut buf = [0u8; 4096];
        while let Ok(n) = self.master.read(&mut buf) {
            if n == 0 {
                break;
            }
            self.seen.push_str(&String::from_utf8_lossy(&buf[..n]));
        }
        (code, self.seen)
    }
}

const TIOCSTI_PY: &str = r#"
import fcntl, termios, os, errno, struct, sys
fd = int(sys.argv[1])
print('isatty:', os.isatty(fd))
try:
    fcntl.ioctl(fd, termios.TIOCGWINSZ, b'\0' * 8)
    print('winsz: OK')
except OSError as e:
    print('winsz: ERR', errno.errorcode.get(e.errno, e.errno))
try:
    fcntl.ioctl(fd, termios.TIOCSTI, b'x')
    print('tiocsti: OK')
except OSError as e:
    print('tiocsti: ERR', errno.errorcode.get(e.errno, e.errno))
print('END')
"#;

fn line<'a>(text: &'a str, label: &str) -> &'a str {
    text.lines()
        .find_map(|l| l.trim_end_matches('\r').strip_prefix(&format!("{label}: ")))
        .unwrap_or("<missing>")
}

#[test]
fn tiocsti_fails_on_the_callers_terminal() {
    each_mode(|mode| {
        let fx = Fixture::new(mode);
        let mut p = spawn_on_pty(&fx.sandbox(), &[PY, "-c", TIOCSTI_PY, "1"], false);
        p.expect("END", Duration::from_secs(30));
        let (code, seen) = p.finish(Duration::from_secs(30));
        assert_eq!(code, 0, "{mode:?}: {seen:?}");
        // Controls: fd 1 is the caller's terminal and other ioctls work.
        assert_eq!(line(&seen, "isatty"), "True", "{mode:?}: {seen:?}");
        assert_eq!(line(&seen, "winsz"), "OK", "{mode:?}: {seen:?}");
        assert!(
            line(&seen, "tiocsti").starts_with("ERR"),
            "{mode:?}: TIOCSTI worked: {seen:?}"
        );
    });
}

#[test]
fn tiocsti_fails_in_interactive_mode() {
    each_mode(|mode| {
        let fx = Fixture::new(mode);
        let mut p = spawn_on_pty(&fx.sandbox(), &[PY, "-c", TIOCSTI_PY, "0"], true);
        p.expect("END", Duration::from_secs(30));
        let (code, seen) = p.finish(Duration::from_secs(30));
        assert_eq!(code, 0, "{mode:?}: {seen:?}");
        assert_eq!(line(&seen, "isatty"), "True", "{mode:?}: {seen:?}");
        assert_eq!(line(&seen, "winsz"), "OK", "{mode:?}: {seen:?}");
        assert!(
            line(&seen, "tiocsti").starts_with("ERR"),
            "{mode:?}: TIOCSTI worked: {seen:?}"
        );
    });
}

fn unique(prefix: &str) -> String {
    let digits: String = rand_token()
        .bytes()
        .map(|b| char::from(b'0' + b % 10))
        .take(9)
        .collect();
    format!("{prefix}.{digits}")
}

#[test]
fn interactive_bash_ctrl_c_and_job_control() {
    each_mode(|mode| {
        let fx = Fixture::new(mode);
        let sb = fx.sandbox().env("PS1", "cordon-prompt$ ");
        let mut p = spawn_on_pty(&sb, &["bash", "--norc", "--noprofile", "-i"], true);
        let t = Duration::from_secs(30);
        p.expect("cordon-prompt$ ", t);
        p.send("echo $((6*7))\n");
        p.expect("42", t);
        p.expect("cordon-prompt$ ", t);

        // Ctrl-C ends the foreground job and returns the prompt.
        let arg = unique("100");
        p.send(&format!("sleep {arg}\n"));
        assert!(
            wait_until(t, || !host_pids_with_cmdline(&arg).is_empty()),
            "{mode:?}: sleep never started: {:?}",
            p.seen
        );
        p.send("\x03");
        p.expect("cordon-prompt$ ", t);
        p.send("echo done$?\n");
        p.expect("done130", t);
        p.expect("cordon-prompt$ ", t);
        assert!(
            wait_until(Duration::from_secs(5), || host_pids_with_cmdline(&arg)
                .is_empty()),
            "{mode:?}: sleep survived Ctrl-C"
        );

        // Job control.
        let bg = unique("200");
        p.send(&format!("sleep {bg} &\n"));
        p.expect("cordon-prompt$ ", t);
        p.send("jobs\n");
        let jobs = p.expect("cordon-prompt$ ", t);
        assert!(
            jobs.contains("Running") && jobs.contains(&bg),
            "{mode:?}: jobs: {jobs:?}"
        );
        p.send("kill %1; wait\n");
        p.expect("cordon-prompt$ ", t);
        p.send("exit\n");
        let (code, seen) = p.finish(t);
        for pid in host_pids_with_cmdline(&bg) {
            let _ = nix::sys::signal::kill(
                nix::unistd::Pid::from_raw(pid),
                nix::sys::signal::Signal::SIGKILL,
            );
        }
        assert_eq!(code, 0, "{mode:?}: {seen:?}");
    });
}
