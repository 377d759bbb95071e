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
    /// The slave, as the test keeps it (to read its settings).
    slave: OwnedFd,
    run: Option<Running>,
    seen: String,
    pos: usize,
}

/// Starts cordon with stdout/stderr (and stdin if `interactive`) on a new
/// pty's slave, as its controlling terminal in a new session.
fn spawn_on_pty(sb: &Sandbox, cmd: &[&str], interactive: bool) -> PtyRun {
    spawn_on(sb, cmd, [interactive, true, true])
}

/// Starts cordon with those of stdin, stdout and stderr that `on_tty`
/// names on a new pty's slave (its controlling terminal, in a new
/// session); the others are /dev/null (stdin) or pipes.
fn spawn_on(sb: &Sandbox, cmd: &[&str], on_tty: [bool; 3]) -> PtyRun {
    let ws = nix::pty::Winsize {
        ws_row: 24,
        ws_col: 100,
        ws_xpixel: 0,
        ws_ypixel: 0,
    };
    let pty = nix::pty::openpty(Some(&ws), None).expect("openpty");
    let slave: OwnedFd = pty.slave;
    // The terminal is its user's, as a login makes it.
    nix::unistd::fchown(
        slave.as_raw_fd(),
        Some(nix::unistd::Uid::from_raw(sb.mode().uid())),
        None,
    )
    .unwrap();
    let mut c = sb.command(cmd);
    let dup = |fd: &OwnedFd| Stdio::from(fd.try_clone().unwrap());
    c.stdin(if on_tty[0] {
        dup(&slave)
    } else {
        Stdio::null()
    });
    c.stdout(if on_tty[1] {
        dup(&slave)
    } else {
        Stdio::piped()
    });
    c.stderr(if on_tty[2] {
        dup(&slave)
    } else {
        Stdio::piped()
    });
    let slave_raw = slave.as_raw_fd();
    // The test's own pty plumbing; cordon's code has no `unsafe` outside src/sys.
    #[allow(unsafe_code)]
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
    let master = File::from(pty.master);
    let flags = nix::fcntl::fcntl(master.as_raw_fd(), nix::fcntl::FcntlArg::F_GETFL).unwrap();
    let flags = nix::fcntl::OFlag::from_bits_truncate(flags) | nix::fcntl::OFlag::O_NONBLOCK;
    nix::fcntl::fcntl(master.as_raw_fd(), nix::fcntl::FcntlArg::F_SETFL(flags)).unwrap();
    PtyRun {
        master,
        slave,
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

    /// The pty's settings, as the caller's terminal has them (read on the
    /// master: the slave hangs up when cordon's session ends).
    fn termios(&self) -> nix::sys::termios::Termios {
        nix::sys::termios::tcgetattr(self.master.as_fd()).unwrap()
    }

    /// The pty's identity as `stat` gives it: `dev:ino:rdev`.
    fn identity(&self) -> String {
        let st = nix::sys::stat::fstat(self.slave.as_raw_fd()).unwrap();
        format!("{}:{}:{}", st.st_dev, st.st_ino, st.st_rdev)
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

/// Tries TIOCSTI on the descriptor argv[1] (with controls).
const TIOCSTI_PY: &str = include_str!("py/tiocsti.py");

fn line<'a>(text: &'a str, label: &str) -> &'a str {
    text.lines()
        .find_map(|l| l.trim_end_matches('\r').strip_prefix(&format!("{label}: ")))
        .unwrap_or("<missing>")
}

/// Runs [`TIOCSTI_PY`] on `fd` in a sandbox on a pty (`interactive` or
/// not) and checks TIOCSTI is refused where the controls work.
fn tiocsti_is_refused(fd: &str, interactive: bool) {
    each_fixture(|mode, fx| {
        let mut p = spawn_on_pty(&fx.sandbox(), &py_command(TIOCSTI_PY, &[fd]), interactive);
        p.expect("END", Duration::from_secs(30));
        let (code, seen) = p.finish(Duration::from_secs(30));
        assert_eq!(code, 0, "{mode:?}: {seen:?}");
        // Controls: the fd is a terminal (the sandbox's pty in place of the
        // caller's) and other ioctls work.
        assert_eq!(line(&seen, "isatty"), "True", "{mode:?}: {seen:?}");
        assert_eq!(line(&seen, "winsz"), "OK", "{mode:?}: {seen:?}");
        assert!(
            line(&seen, "tiocsti").starts_with("ERR"),
            "{mode:?}: TIOCSTI worked: {seen:?}"
        );
    });
}

#[test]
fn tiocsti_fails_on_the_callers_terminal() {
    tiocsti_is_refused("1", false);
}

#[test]
fn tiocsti_fails_in_interactive_mode() {
    tiocsti_is_refused("0", true);
}

fn unique(prefix: &str) -> String {
    let digits: String = rand_token()
        .bytes()
        .map(|b| char::from(b'0' + b % 10))
        .take(9)
        .collect();
    format!("{prefix}.{digits}")
}

/// A command in raw mode that never reads its input, while the caller's
/// terminal sends megabytes (the replies to queries the command prints
/// would do): cordon holds a bounded amount for it and stops reading the
/// terminal, and its own loop goes on, so the deadline still ends the run.
#[test]
fn a_command_that_never_reads_its_input_cannot_stall_cordon() {
    const NEVER_READS: &str =
        "import sys, time, tty\ntty.setraw(0)\nprint('READY', flush=True)\ntime.sleep(60)\n";
    each_fixture(|mode, fx| {
        let sb = fx.sandbox().flag("--timeout", "4s");
        let mut p = spawn_on_pty(&sb, &py_command(NEVER_READS, &[] as &[&str]), true);
        p.expect("READY", Duration::from_secs(30));
        let chunk = [b'a'; 4096];
        let mut written = 0;
        let end = Instant::now() + Duration::from_secs(10);
        while Instant::now() < end {
            if let Some(Ok(Some(_))) = p.run.as_mut().map(|r| r.child.try_wait()) {
                break;
            }
            match p.master.write(&chunk) {
                Ok(n) => written += n,
                Err(_) => std::thread::sleep(Duration::from_millis(10)),
            }
        }
        let (code, seen) = p.finish(Duration::from_secs(30));
        assert_eq!(code, 124, "{mode:?}: {seen:?}");
        assert!(seen.contains("timed out after 4s"), "{mode:?}: {seen:?}");
        // The input filled every buffer on the way, cordon's included.
        assert!(
            written > 64 * 1024,
            "{mode:?}: only {written} bytes written"
        );
    });
}

/// The caller's terminal stops taking output (a terminal that no longer
/// reads) while the command floods it: cordon holds a bounded amount and
/// stops reading the pty, so the command waits and cordon's loop goes on:
/// the deadline still kills the command on time (cordon's own last words
/// then wait for the terminal, like any program's).
#[test]
fn a_terminal_that_stops_reading_cannot_stall_cordon() {
    const FLOODS: &str = "import os\nwhile True:\n    os.write(1, b'x' * 65536)\n";
    each_fixture(|mode, fx| {
        let sb = fx.sandbox().flag("--timeout", "4s");
        let marker = unique("flood");
        let p = spawn_on_pty(&sb, &py_command(FLOODS, &[marker.as_str()]), true);
        // The command's processes (cordon's own command line holds the
        // marker too).
        let command = || {
            host_pids_with_cmdline(&marker)
                .into_iter()
                .filter(|pid| {
                    std::fs::read_to_string(format!("/proc/{pid}/comm"))
                        .is_ok_and(|c| c.starts_with("python"))
                })
                .collect::<Vec<_>>()
        };
        assert!(
            wait_until(Duration::from_secs(20), || !command().is_empty()),
            "{mode:?}: the command never started"
        );
        // Not read for longer than the deadline.
        std::thread::sleep(Duration::from_secs(8));
        assert_eq!(
            command(),
            Vec::<i32>::new(),
            "{mode:?}: the command outlived its 4s deadline"
        );
        let (code, seen) = p.finish(Duration::from_secs(30));
        assert_eq!(code, 124, "{mode:?}");
        assert!(seen.contains("timed out after 4s"), "{mode:?}");
    });
}

#[test]
fn interactive_bash_ctrl_c_and_job_control() {
    each_fixture(|mode, fx| {
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

/// Inside: for each of fds 0-2 that is a terminal, the settings
/// `stty -echo -icanon -isig` makes; then every descriptor of every process
/// it can see, as `dev:ino:rdev`, written to the file argv[1].
const TERMINAL_GRAB_PY: &str = include_str!("py/terminal_grab.py");

/// The attack: with only some of stdin, stdout and stderr on the caller's
/// terminal (`cordon run -- CMD | cat`), the command got the terminal
/// itself and changed its settings for good (`stty -echo -icanon -isig`).
/// Now each terminal fd inside is a pty of the sandbox's own: the
/// caller's settings are unchanged after exit, and no descriptor inside
/// refers to the caller's terminal.
#[test]
fn a_partly_terminal_caller_keeps_its_terminal_out_of_the_sandbox() {
    each_fixture(|mode, fx| {
        let cases: &[(&str, [bool; 3])] = &[
            ("stdin only", [true, false, false]),
            ("stderr only", [false, false, true]),
            ("stdin and stderr", [true, false, true]),
            ("stdout only", [false, true, false]),
            ("all three", [true, true, true]),
        ];
        for (name, on_tty) in cases {
            let report = fx.project.join("report.txt");
            let _ = std::fs::remove_file(&report);
            let report_arg = report.to_str().unwrap();
            let p = spawn_on(
                &fx.sandbox(),
                &py_command(TERMINAL_GRAB_PY, &[report_arg]),
                *on_tty,
            );
            let before = p.termios();
            let identity = p.identity();
            let master = p.master.try_clone().unwrap();
            let deadline = Instant::now() + Duration::from_secs(30);
            let (code, seen) = loop {
                let done = std::fs::read_to_string(&report).is_ok_and(|r| r.ends_with("END\n"));
                if done || Instant::now() > deadline {
                    break p.finish(Duration::from_secs(30));
                }
                std::thread::sleep(Duration::from_millis(50));
            };
            let text = std::fs::read_to_string(&report)
                .unwrap_or_else(|e| panic!("{mode:?} {name}: no report ({e}): {seen:?}"));
            assert_eq!(code, 0, "{mode:?} {name}: {seen:?}");
            // Control: the command did find a terminal on each such fd.
            let changed = text.lines().filter(|l| l.starts_with("changed ")).count();
            let wanted = on_tty.iter().filter(|&&t| t).count();
            assert_eq!(changed, wanted, "{mode:?} {name}: {text}");
            // No descriptor inside is the caller's terminal.
            let leaks: Vec<&str> = text
                .lines()
                .filter(|l| l.ends_with(&format!(" {identity}")))
                .collect();
            assert!(
                leaks.is_empty(),
                "{mode:?} {name}: the caller's terminal {identity} inside: {leaks:?}"
            );
            // The caller's terminal is as it was.
            let after = nix::sys::termios::tcgetattr(master.as_fd()).unwrap();
            assert_eq!(
                after, before,
                "{mode:?} {name}: the caller's settings changed"
            );
        }
    });
}

/// The caller's terminal settings come back on the other ways out too: the
/// command killed by `--timeout`, and the command dying of a signal.
#[test]
fn the_callers_settings_come_back_after_a_timeout_and_a_signal() {
    let fx = Fixture::new(Mode::Root);
    let runs: &[(&str, &[&str], i32)] = &[
        ("timeout", &["--timeout", "1s", "--", "sleep", "30"], 124),
        (
            "signal",
            &["--", "sh", "-c", "stty -echo -icanon -isig; kill -9 $$"],
            137,
        ),
    ];
    for (name, args, expected) in runs {
        let (flags, cmd) = args.split_at(args.iter().position(|a| *a == "--").unwrap());
        let mut sb = fx.sandbox();
        for f in flags {
            sb = sb.arg(*f);
        }
        let p = spawn_on(&sb, &cmd[1..], [true, true, true]);
        let before = p.termios();
        let master = p.master.try_clone().unwrap();
        let (code, seen) = p.finish(Duration::from_secs(30));
        assert_eq!(code, *expected, "{name}: {seen:?}");
        let after = nix::sys::termios::tcgetattr(master.as_fd()).unwrap();
        assert_eq!(after, before, "{name}: the caller's settings changed");
    }
}
