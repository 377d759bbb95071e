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
        Ok(0) | Err(_) => false,
        Ok(n) => {
            write_all(to, &buf[..n]);
            true
        }
    }
}

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
        Relay {
            master,
            stdin_open: caller.input(),
            master_open: caller.output().is_some(),
            caller,
            _raw: raw,
        }
    }

    /// The caller's terminal descriptor the pty's output goes to.
    pub fn output(&self) -> BorrowedFd<'static> {
        sys::stdio(self.caller.output().unwrap_or(1))
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
