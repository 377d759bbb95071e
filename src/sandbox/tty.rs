//! The caller's terminal: raw mode while the sandbox owns a pty, and the
//! byte relay between the two.

use std::os::fd::{AsFd, AsRawFd, BorrowedFd, OwnedFd};

use nix::sys::termios::{cfmakeraw, tcgetattr, tcsetattr, SetArg, Termios};

use super::sys;

/// Whether the caller is interactive: stdin and stdout are both terminals.
pub fn caller_is_interactive() -> bool {
    nix::unistd::isatty(0).unwrap_or(false) && nix::unistd::isatty(1).unwrap_or(false)
}

/// Puts the caller's terminal in raw mode; restores it when dropped.
pub struct RawMode {
    saved: Termios,
}

impl RawMode {
    pub fn enter() -> nix::Result<RawMode> {
        let stdin = sys::stdio(0);
        let saved = tcgetattr(stdin)?;
        let mut raw = saved.clone();
        cfmakeraw(&mut raw);
        tcsetattr(stdin, SetArg::TCSANOW, &raw)?;
        Ok(RawMode { saved })
    }
}

impl Drop for RawMode {
    fn drop(&mut self) {
        let _ = tcsetattr(sys::stdio(0), SetArg::TCSADRAIN, &self.saved);
    }
}

/// Copies the caller's window size to the sandbox's pty.
pub fn sync_window_size(master: BorrowedFd<'_>) {
    if let Ok(ws) = sys::window_size(sys::stdio(0)) {
        let _ = sys::set_window_size(master, &ws);
    }
}

/// Moves what is readable on `from` to `to`. Returns false at end of
/// stream or on an error that ends the relay.
pub fn pump(from: BorrowedFd<'_>, to: BorrowedFd<'_>) -> bool {
    let mut buf = [0u8; 16 * 1024];
    match nix::unistd::read(from.as_raw_fd(), &mut buf) {
        Ok(0) | Err(_) => false,
        Ok(n) => write_all(to, &buf[..n]),
    }
}

fn write_all(to: BorrowedFd<'_>, mut data: &[u8]) -> bool {
    while !data.is_empty() {
        match nix::unistd::write(to, data) {
            Ok(n) => data = &data[n..],
            Err(nix::errno::Errno::EINTR) | Err(nix::errno::Errno::EAGAIN) => {}
            Err(_) => return false,
        }
    }
    true
}

/// The pty master and the caller's terminal, while the relay runs.
pub struct Relay {
    pub master: OwnedFd,
    pub stdin_open: bool,
    pub master_open: bool,
    _raw: Option<RawMode>,
}

impl Relay {
    pub fn new(master: OwnedFd) -> Relay {
        let raw = RawMode::enter().ok();
        sync_window_size(master.as_fd());
        Relay {
            master,
            stdin_open: true,
            master_open: true,
            _raw: raw,
        }
    }

    /// Drains what the sandbox still wrote to the pty.
    pub fn drain(&mut self) {
        use nix::poll::{poll, PollFd, PollFlags, PollTimeout};
        while self.master_open {
            let mut fds = [PollFd::new(self.master.as_fd(), PollFlags::POLLIN)];
            match poll(&mut fds, PollTimeout::ZERO) {
                Ok(n) if n > 0 => self.master_open = pump(self.master.as_fd(), sys::stdio(1)),
                _ => break,
            }
        }
    }
}
