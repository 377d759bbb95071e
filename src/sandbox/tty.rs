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

/// Moves what is readable on `from` to `to`. Returns false at end of
/// `from` or on a read error. What `to` no longer takes (a terminal that
/// went away, one opened read-only) is dropped: the pty is still read, so
/// the command never blocks writing to it.
pub fn pump(from: BorrowedFd<'_>, to: BorrowedFd<'_>) -> bool {
    let mut buf = [0u8; 16 * 1024];
    match nix::unistd::read(from.as_raw_fd(), &mut buf) {
        // Nothing after all (the pty master does not block).
        Err(nix::errno::Errno::EAGAIN | nix::errno::Errno::EINTR) => true,
        Ok(0) | Err(_) => false,
        Ok(n) => {
            write_all(to, &buf[..n]);
            true
        }
    }
}

/// The most of the caller's input held for the pty while the command does
/// not read it: the caller's terminal is then no longer read until it
/// does. Writing it all at once would block cordon's loop (its deadline,
/// signals and questions) on a command in raw mode that never reads while
/// it makes the terminal send replies by the megabyte.
const MAX_HELD_INPUT: usize = 64 * 1024;

fn write_all(to: BorrowedFd<'_>, mut data: &[u8]) {
    while !data.is_empty() {
        match nix::unistd::write(to, data) {
            Ok(n) => data = &data[n..],
            Err(nix::errno::Errno::EINTR) | Err(nix::errno::Errno::EAGAIN) => {}
            Err(_) => return,
        }
    }
}

/// The pty master and the caller's terminal, while the relay runs.
pub struct Relay {
    pub master: OwnedFd,
    /// Whether the caller's stdin (a terminal) still feeds the pty.
    pub stdin_open: bool,
    pub master_open: bool,
    /// The caller's input the pty did not take yet.
    held: Vec<u8>,
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
            held: Vec::new(),
            caller,
            _raw: raw,
        }
    }

    /// The caller's terminal descriptor the pty's output goes to.
    pub fn output(&self) -> BorrowedFd<'static> {
        sys::stdio(self.caller.output().unwrap_or(1))
    }

    /// Whether the caller's terminal is to be read: it is open, and the
    /// pty took enough of what came before.
    pub fn wants_input(&self) -> bool {
        self.stdin_open && self.held.len() < MAX_HELD_INPUT
    }

    /// Whether input waits for the pty to take it (poll it for POLLOUT).
    pub fn holds_input(&self) -> bool {
        !self.held.is_empty()
    }

    /// Reads what the caller's terminal `stdin` sent, and gives the pty
    /// what it takes of it.
    pub fn read_input(&mut self, stdin: BorrowedFd<'_>) {
        let mut buf = [0u8; 16 * 1024];
        let room = MAX_HELD_INPUT
            .saturating_sub(self.held.len())
            .min(buf.len());
        match nix::unistd::read(stdin.as_raw_fd(), &mut buf[..room]) {
            Err(nix::errno::Errno::EAGAIN | nix::errno::Errno::EINTR) => {}
            Ok(0) | Err(_) => self.stdin_open = false,
            Ok(n) => self.held.extend_from_slice(&buf[..n]),
        }
        self.write_input();
    }

    /// Gives the pty what it takes of the held input, without waiting.
    pub fn write_input(&mut self) {
        while !self.held.is_empty() {
            match nix::unistd::write(self.master.as_fd(), &self.held) {
                Ok(n) => {
                    self.held.drain(..n);
                }
                Err(nix::errno::Errno::EINTR) => {}
                Err(nix::errno::Errno::EAGAIN) => return,
                // The pty is gone: nothing will read it.
                Err(_) => self.held.clear(),
            }
        }
    }

    /// Copies the caller's window size to the pty (on SIGWINCH).
    pub fn sync_window_size(&self) {
        sync_window_size(self.caller, self.master.as_fd());
    }

    /// Drains what the sandbox still wrote to the pty.
    pub fn drain(&mut self) {
        use nix::poll::{poll, PollFd, PollFlags, PollTimeout};
        while self.master_open {
            let mut fds = [PollFd::new(self.master.as_fd(), PollFlags::POLLIN)];
            match poll(&mut fds, PollTimeout::ZERO) {
                Ok(n) if n > 0 => self.master_open = pump(self.master.as_fd(), self.output()),
                _ => break,
            }
        }
    }
}
