//! The umask of each caller of the file creation gate, kept between its
//! calls.
//!
//! The gate makes names for its callers and gives each the mode the
//! caller's own call would: the mode asked for, less the caller's umask.
//! The kernel shows another thread's umask only in its `/proc/<tid>/status`,
//! whose every read renders the whole file: a third of what a creating
//! call through the gate costs. A thread's umask changes only by a `umask`
//! call of a thread that shares its file system attributes, and the
//! command filter hands every `umask` call to the gate too: a umask read
//! once stays right until the next `umask` call anywhere in the sandbox,
//! and is kept until then.
//!
//! The gate sees a `umask` call before the kernel makes it. From its
//! arrival until it is known made, nothing is kept or trusted: it is made
//! once its effect shows in its caller's status (looked at once after the
//! answer, and again by each creating call of another thread meanwhile),
//! or once its caller makes another gated call (a thread makes one call at
//! a time: `old = umask(0); umask(old)` is two calls one after the other).
//! Two threads' calls at once could take effect in either order, and two
//! threads whose attributes are apart and that then share a tid (one
//! execs and takes its thread group leader's) would look like one: the
//! command filter hands the calls that make such threads to the gate as
//! well (`unshare` of `CLONE_FS`, a `clone` of a thread without it). Either
//! one turns keeping off for the rest of the run, and every creating call
//! reads its caller's status, as it would without the cache. A kept umask
//! is its thread's while that thread lives (a pidfd of the thread tells),
//! not that of a later one given the same tid.

use std::collections::HashMap;
use std::os::fd::{AsFd, OwnedFd};
use std::sync::{Mutex, MutexGuard, PoisonError};

use nix::sys::stat::Mode;
use nix::unistd::Pid;

use crate::sandbox::unix_gate::{Caller, Errno};
use crate::sys;

/// Threads whose umask is kept at most: each holds a pidfd of init's.
const MAX_KEPT: usize = 64;

/// The callers' umasks the gate has read, and what may have changed them.
#[derive(Default)]
pub(crate) struct Umasks {
    state: Mutex<State>,
}

#[derive(Default)]
struct State {
    /// Counts the `umask` calls that arrived: a umask read before the last
    /// one may be stale.
    generation: u64,
    /// The `umask` call that arrived last and is not known made: its
    /// caller, and the umask it asked for.
    changing: Option<(Pid, Mode)>,
    /// Keeping stopped for the rest of the run (see the module's docs).
    off: bool,
    kept: HashMap<Pid, Kept>,
}

struct Kept {
    /// The thread's pidfd: readable once it exited.
    thread: OwnedFd,
    umask: Mode,
    generation: u64,
}

impl State {
    /// Whether a umask read now may be kept, and a kept one trusted.
    fn settled(&self) -> bool {
        !self.off && self.changing.is_none()
    }

    /// Forgets the `umask` call of `tid` that is not known made, if its
    /// caller `by` is (making a call now, it made the one before: checked
    /// with `waiting`, that `by` is still the thread whose call the gate
    /// holds, not one given a dead caller's tid) or its effect shows;
    /// whether none is left.
    fn confirm(&mut self, by: Pid, waiting: impl Fn() -> bool) -> bool {
        if let Some((tid, wanted)) = self.changing {
            if (tid == by && waiting()) || made(tid, wanted) {
                self.changing = None;
            }
        }
        self.changing.is_none()
    }
}

/// Whether thread `tid`'s status shows the umask `wanted` (or the thread is
/// gone): a `umask(wanted)` it was let through to make is made, or made
/// nothing that was not so already.
fn made(tid: Pid, wanted: Mode) -> bool {
    read(tid).is_none_or(|umask| umask == wanted)
}

impl Umasks {
    fn lock(&self) -> MutexGuard<'_, State> {
        // Each change to the state is one step: a holder that panicked
        // left it whole.
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// `caller`'s umask: the one kept, or read from its status (and kept
    /// when nothing could have changed it meanwhile).
    pub(crate) fn of(&self, caller: &Caller<'_>) -> Result<Mode, Errno> {
        let tid = caller.tid();
        let (generation, settled) = {
            let mut state = self.lock();
            if !state.off && state.confirm(tid, || caller.still_waiting()) {
                if let Some(kept) = state.kept.get(&tid) {
                    if kept.generation == state.generation && alive(&kept.thread) {
                        return Ok(kept.umask);
                    }
                }
            }
            (state.generation, state.settled())
        };
        let umask = read(tid).ok_or(libc::ESRCH)?;
        if settled {
            self.keep(caller, umask, generation);
        }
        Ok(umask)
    }

    /// Keeps `umask`, read at `generation`, for `caller`'s thread: only
    /// with a pidfd of that very thread (opened while its call still
    /// waits), and if no `umask` call arrived since the read.
    fn keep(&self, caller: &Caller<'_>, umask: Mode, generation: u64) {
        let Ok(thread) = sys::pidfd_open(caller.tid()) else {
            return;
        };
        if !caller.still_waiting() {
            return;
        }
        let mut state = self.lock();
        if !state.settled() || state.generation != generation {
            return;
        }
        if state.kept.len() >= MAX_KEPT {
            state.kept.retain(|_, kept| alive(&kept.thread));
            if state.kept.len() >= MAX_KEPT {
                state.kept.clear();
            }
        }
        state.kept.insert(
            caller.tid(),
            Kept {
                thread,
                umask,
                generation,
            },
        );
    }

    /// A `umask(mask)` call of thread `tid` arrived, before it is answered
    /// (and made); `waiting` tells whether it still waits.
    pub(crate) fn changing(&self, tid: Pid, mask: u64, waiting: impl Fn() -> bool) {
        let mut state = self.lock();
        if state.off {
            return;
        }
        state.generation += 1;
        state.kept.clear();
        // Another thread's call not known made may yet be made after this
        // one: which umask is left is the kernel's to say.
        if !state.confirm(tid, waiting) {
            state.off = true;
            return;
        }
        state.changing = Some((tid, wanted(mask)));
    }

    /// After the `umask` call of thread `tid` was answered: made now, if
    /// its effect shows already.
    pub(crate) fn settle(&self, tid: Pid) {
        let mut state = self.lock();
        if let Some((by, wanted)) = state.changing {
            if by == tid && made(by, wanted) {
                state.changing = None;
            }
        }
    }

    /// A thread whose file system attributes are its own came, or may
    /// come, to be: keeping stops for the run.
    pub(crate) fn stop(&self) {
        let mut state = self.lock();
        state.off = true;
        state.kept.clear();
    }
}

/// The umask a `umask(mask)` call sets.
fn wanted(mask: u64) -> Mode {
    Mode::from_bits_truncate((mask & 0o777) as libc::mode_t)
}

/// Whether the thread behind `pidfd` has not exited.
fn alive(pidfd: &OwnedFd) -> bool {
    let mut fds = [nix::poll::PollFd::new(
        pidfd.as_fd(),
        nix::poll::PollFlags::POLLIN,
    )];
    matches!(
        nix::poll::poll(&mut fds, nix::poll::PollTimeout::ZERO),
        Ok(0)
    )
}

/// Thread `tid`'s umask, from its status.
fn read(tid: Pid) -> Option<Mode> {
    crate::sandbox::create_gate::status_field(tid, "Umask:")
        .and_then(|v| libc::mode_t::from_str_radix(&v, 8).ok())
        .map(Mode::from_bits_truncate)
}

#[cfg(test)]
#[path = "umask_tests.rs"]
mod tests;
