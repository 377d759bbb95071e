//! The caller's terminal: which of the caller's stdio are terminals, raw
//! mode while the sandbox owns a pty, and the byte relay between the two.
//!
//! Whenever any of stdin, stdout and stderr is a terminal, the command gets
//! a pty of the sandbox's own in their place (the others pass through as
//! they are: `cordon run -- CMD | cat` keeps the pipe). No descriptor of the
//! caller's terminal reaches the sandbox, so nothing inside can change its
//! settings (`stty -echo <&2`) or push input into it; cordon restores the
//! settings it changed itself on every way out, a panic included.

use std::os::fd::{AsFd, AsRawFd, BorrowedFd, OwnedFd, RawFd};
use std::sync::Mutex;
use std::time::Duration;

use nix::poll::{PollFd, PollFlags};
use nix::sys::termios::{cfmakeraw, tcgetattr, tcsetattr, SetArg, Termios};

use crate::sys;

/// Which of the caller's stdin, stdout and stderr are terminals.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CallerTerminal {
    is_tty: [bool; 3],
}

impl CallerTerminal {
    /// Looks at this process's descriptors 0, 1 and 2.
    pub fn probe() -> CallerTerminal {
        let tty = |fd| nix::unistd::isatty(fd).unwrap_or(false);
        CallerTerminal {
            is_tty: [tty(0), tty(1), tty(2)],
        }
    }

    /// Whether the command gets a pty: when any of the three is a terminal.
    pub fn needs_pty(self) -> bool {
        self.is_tty.iter().any(|&t| t)
    }

    /// Whether stdin is a terminal: then the caller types into the pty.
    fn input(self) -> bool {
        self.is_tty[0]
    }

    /// Where what the command writes to the pty goes: the first of stdout,
    /// stderr and stdin that is a terminal.
    fn output(self) -> Option<RawFd> {
        [1, 2, 0].into_iter().find(|&fd| self.is_tty[fd as usize])
    }
}

/// The settings of the caller's terminal before raw mode, for the panic
/// hook (which runs before a release build aborts).
static SAVED: Mutex<Option<Termios>> = Mutex::new(None);

/// Puts the caller's terminal (stdin's) in raw mode; restores it when
/// dropped, and from a panic.
pub struct RawMode {
    saved: Termios,
}

impl RawMode {
    /// Raw mode on stdin's terminal. Where stdout is not that terminal
    /// (a pipe), output processing stays on, so others writing to the
    /// terminal meanwhile (the `cat` of `| cat`) still get their newlines.
    pub fn enter(keep_output: bool) -> nix::Result<RawMode> {
        let stdin = sys::stdio(0);
        let saved = tcgetattr(stdin)?;
        let mut raw = saved.clone();
        cfmakeraw(&mut raw);
        if keep_output {
            raw.output_flags = saved.output_flags;
        }
        if let Ok(mut slot) = SAVED.lock() {
            *slot = Some(saved.clone());
        }
        install_panic_restore();
        tcsetattr(stdin, SetArg::TCSANOW, &raw)?;
        Ok(RawMode { saved })
    }
}

impl Drop for RawMode {
    fn drop(&mut self) {
        let _ = tcsetattr(sys::stdio(0), SetArg::TCSADRAIN, &self.saved);
        if let Ok(mut slot) = SAVED.lock() {
            *slot = None;
        }
    }
}

/// Chains a panic hook that puts back the caller's terminal settings.
fn install_panic_restore() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        let previous = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            if let Ok(slot) = SAVED.try_lock() {
                if let Some(saved) = slot.as_ref() {
                    let _ = tcsetattr(sys::stdio(0), SetArg::TCSANOW, saved);
                }
            }
            previous(info);
        }));
    });
}

/// Copies the caller's window size to the sandbox's pty.
pub fn sync_window_size(caller: CallerTerminal, master: BorrowedFd<'_>) {
    let Some(fd) = [0, 1, 2].into_iter().find(|&fd| caller.is_tty[fd as usize]) else {
        return;
    };
    if let Ok(ws) = sys::window_size(sys::stdio(fd)) {
        let _ = sys::set_window_size(master, &ws);
    }
}

/// The most of the caller's input held for the pty while the command does
/// not read it: the caller's terminal is then no longer read until it
/// does. Writing it all at once would block cordon's loop (its deadline,
/// signals and questions) on a command in raw mode that never reads while
/// it makes the terminal send replies by the megabyte.
const MAX_HELD_INPUT: usize = 64 * 1024;

/// The most of the command's output held for the caller's terminal while
/// it does not take it (a terminal that stopped reading): the pty is then
/// no longer read, so the command waits, and cordon's loop does not.
const MAX_HELD_OUTPUT: usize = 256 * 1024;

/// How long the drain at exit waits for the caller's terminal to take
/// more of the command's last output before it drops the rest.
const DRAIN_WAIT: Duration = Duration::from_secs(2);

/// One end of the relay, for the supervisor's poll.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum End {
    /// The caller's stdin (a terminal), read.
    Input,
    /// The pty master: the command's output read, the caller's input
    /// written.
    Master,
    /// The caller's terminal the command's output goes to, written.
    Output,
}

/// The pty master and the caller's terminal, while the relay runs.
pub struct Relay {
    pub master: OwnedFd,
    /// Whether the caller's stdin (a terminal) still feeds the pty.
    stdin_open: bool,
    master_open: bool,
    /// The caller's input the pty did not take yet.
    held_input: Vec<u8>,
    /// The command's output the caller's terminal did not take yet.
    held_output: Vec<u8>,
    /// The caller's terminal reopened without blocking (a description of
    /// its own, so the caller's keeps its flags); `None` where it cannot
    /// be, and the caller's own descriptor is written, blocking.
    output: Option<OwnedFd>,
    caller: CallerTerminal,
    _raw: Option<RawMode>,
}

impl Relay {
    /// Relays between `master` and the caller's terminal descriptors.
    pub fn new(master: OwnedFd, caller: CallerTerminal) -> Relay {
        let raw = caller
            .input()
            .then(|| RawMode::enter(!caller.is_tty[1]).ok())
            .flatten();
        sync_window_size(caller, master.as_fd());
        // Writes to the pty take what fits and return (the master is this
        // process's own descriptor, shared with no one).
        if let Ok(flags) = nix::fcntl::fcntl(master.as_raw_fd(), nix::fcntl::FcntlArg::F_GETFL) {
            let flags =
                nix::fcntl::OFlag::from_bits_truncate(flags) | nix::fcntl::OFlag::O_NONBLOCK;
            let _ = nix::fcntl::fcntl(master.as_raw_fd(), nix::fcntl::FcntlArg::F_SETFL(flags));
        }
        Relay {
            master,
            stdin_open: caller.input(),
            master_open: caller.output().is_some(),
            held_input: Vec::new(),
            held_output: Vec::new(),
            output: caller.output().and_then(reopen_nonblocking),
            caller,
            _raw: raw,
        }
    }

    /// The caller's terminal descriptor the pty's output goes to.
    fn output(&self) -> BorrowedFd<'_> {
        output_fd(&self.output, self.caller)
    }

    /// What the relay waits for now: each end with its events.
    pub fn wanted(&self) -> Vec<(End, BorrowedFd<'_>, PollFlags)> {
        let mut wanted = Vec::new();
        if self.stdin_open && self.held_input.len() < MAX_HELD_INPUT {
            wanted.push((End::Input, sys::stdio(0), PollFlags::POLLIN));
        }
        let mut master = PollFlags::empty();
        master.set(
            PollFlags::POLLIN,
            self.master_open && self.held_output.len() < MAX_HELD_OUTPUT,
        );
        master.set(PollFlags::POLLOUT, !self.held_input.is_empty());
        if !master.is_empty() {
            wanted.push((End::Master, self.master.as_fd(), master));
        }
        if !self.held_output.is_empty() {
            wanted.push((End::Output, self.output(), PollFlags::POLLOUT));
        }
        wanted
    }

    /// Moves what `end`, ready, has or takes.
    pub fn on_ready(&mut self, end: End) {
        match end {
            End::Input => {
                let room = MAX_HELD_INPUT.saturating_sub(self.held_input.len());
                self.stdin_open = read_into(sys::stdio(0), &mut self.held_input, room);
                self.write_input();
            }
            End::Master => {
                self.write_input();
                if self.master_open {
                    let room = MAX_HELD_OUTPUT.saturating_sub(self.held_output.len());
                    self.master_open = read_into(self.master.as_fd(), &mut self.held_output, room);
                    self.write_output();
                }
            }
            End::Output => self.write_output(),
        }
    }

    /// Gives the pty what it takes of the held input, without waiting.
    fn write_input(&mut self) {
        let master = self.master.as_fd();
        write_what_fits(master, &mut self.held_input);
    }

    /// Gives the caller's terminal what it takes of the held output
    /// (all of it, where its descriptor blocks).
    fn write_output(&mut self) {
        write_what_fits(output_fd(&self.output, self.caller), &mut self.held_output);
    }

    /// Copies the caller's window size to the pty (on SIGWINCH).
    pub fn sync_window_size(&self) {
        sync_window_size(self.caller, self.master.as_fd());
    }

    /// Drains what the sandbox still wrote to the pty to the caller's
    /// terminal; what it does not take within [`DRAIN_WAIT`] is dropped.
    pub fn drain(&mut self) {
        use nix::poll::{poll, PollTimeout};
        loop {
            if !self.held_output.is_empty() {
                let wait = PollTimeout::try_from(DRAIN_WAIT).unwrap_or(PollTimeout::MAX);
                let mut fds = [PollFd::new(self.output(), PollFlags::POLLOUT)];
                if !matches!(poll(&mut fds, wait), Ok(n) if n > 0) {
                    return;
                }
                self.write_output();
                continue;
            }
            let mut fds = [PollFd::new(self.master.as_fd(), PollFlags::POLLIN)];
            match poll(&mut fds, PollTimeout::ZERO) {
                Ok(n) if n > 0 && self.master_open => {
                    self.master_open =
                        read_into(self.master.as_fd(), &mut self.held_output, MAX_HELD_OUTPUT);
                    self.write_output();
                }
                _ => return,
            }
        }
    }
}

/// The descriptor the command's output is written to: the terminal opened
/// again, else the caller's own.
fn output_fd(reopened: &Option<OwnedFd>, caller: CallerTerminal) -> BorrowedFd<'_> {
    match reopened {
        Some(fd) => fd.as_fd(),
        None => sys::stdio(caller.output().unwrap_or(1)),
    }
}

/// Reads what `from` has, at most `room` bytes, onto `held`. Returns false
/// at its end or on an error (nothing more comes from it).
fn read_into(from: BorrowedFd<'_>, held: &mut Vec<u8>, room: usize) -> bool {
    let mut buf = [0u8; 16 * 1024];
    let room = room.min(buf.len());
    if room == 0 {
        return true;
    }
    match nix::unistd::read(from.as_raw_fd(), &mut buf[..room]) {
        // Nothing after all.
        Err(nix::errno::Errno::EAGAIN | nix::errno::Errno::EINTR) => true,
        Ok(0) | Err(_) => false,
        Ok(n) => {
            held.extend_from_slice(&buf[..n]);
            true
        }
    }
}

/// Writes to `to` what it takes of `held` now, and keeps the rest. What
/// `to` no longer takes at all (a terminal that went away, one opened
/// read-only) is dropped, so that its source is still read and the command
/// never blocks on it.
fn write_what_fits(to: BorrowedFd<'_>, held: &mut Vec<u8>) {
    while !held.is_empty() {
        match nix::unistd::write(to, held) {
            Ok(0) => return,
            Ok(n) => {
                held.drain(..n);
            }
            Err(nix::errno::Errno::EINTR) => {}
            Err(nix::errno::Errno::EAGAIN) => return,
            Err(_) => held.clear(),
        }
    }
}

/// The terminal at the caller's descriptor `fd`, opened again, not
/// blocking: a file description of cordon's own, so that the flag does not
/// reach the caller's shell, which shares the one it has.
fn reopen_nonblocking(fd: RawFd) -> Option<OwnedFd> {
    use std::os::unix::fs::OpenOptionsExt;
    std::fs::OpenOptions::new()
        .write(true)
        .custom_flags(libc::O_NONBLOCK | libc::O_NOCTTY | libc::O_CLOEXEC)
        .open(format!("/proc/self/fd/{fd}"))
        .ok()
        .map(OwnedFd::from)
}
