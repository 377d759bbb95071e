//! The kernel operations the sandbox's init makes to build and harden
//! itself and start the command, behind one trait: [`Linux`] makes them;
//! a unit test's recorder notes them instead, to check their order
//! without root (see `init`'s tests).
//!
//! The order is part of the security argument:
//!
//! 1. inherited descriptors closed first: nothing of the caller's stays
//!    open through set-up or into the command;
//! 2. the mount view, while init holds its user namespace's capabilities
//!    (mounting needs `CAP_SYS_ADMIN` there);
//! 3. `no_new_privs`, which the kernel requires of a task without
//!    `CAP_SYS_ADMIN` (the degraded, namespace-less run) before it takes a
//!    Landlock domain or a seccomp filter, and which keeps exec from
//!    granting set-user-ID or file-capability privileges;
//! 4. Landlock, after the view: the ruleset is created first of all and
//!    handed to the supervisor, which adds the rules for the host's own
//!    inodes while the view is built; init adds those of the file systems
//!    it mounted, which only the final view has (a path that does not
//!    open there gets no rule), and enforces the ruleset only once the
//!    supervisor is done; a Landlocked task can no longer mount;
//! 5. every capability dropped, and the securebits locked;
//! 6. init's seccomp filter, last of init's own steps, after the UNIX
//!    socket gate's sock_diag socket is open (the filter closes netlink);
//! 7. in the command's process, its own filter, then exec.
//!
//! The mounts go through the files door's [`MountOps`], which this trait
//! hands out rather than repeats.

use std::ffi::{CStr, CString};
use std::io;
use std::os::fd::{OwnedFd, RawFd};
use std::path::{Path, PathBuf};

use super::config_gate::ConfigFiles;
use super::files::{FileView, KernelMounts, MountOps};
use super::landlock::{self, LandlockError};
use super::limits::{LimitPlan, LimitsError};
use super::seccomp::{Program, SeccompError};
use super::state_gate::StateFiles;
use super::unix_gate::UnixGate;
use crate::policy::state::StateFile;
use crate::sys;

/// What init asks of the kernel, from set-up to exec.
pub trait InitKernel {
    /// Closes every descriptor from 3 up except `keep`.
    fn close_fds_except(&mut self, keep: RawFd) -> io::Result<()>;
    /// `setsid`: init leads a session of its own.
    fn new_session(&mut self) -> nix::Result<()>;
    /// Names the sandbox's uts namespace.
    fn set_hostname(&mut self, name: &str) -> nix::Result<()>;
    /// Brings up `lo` in the sandbox's network namespace.
    fn bring_up_loopback(&mut self) -> io::Result<()>;
    /// A TCP listener on `ip:port` (cordon's own, on the sandbox's
    /// loopback).
    fn listen_loopback(&mut self, ip: std::net::IpAddr, port: u16) -> io::Result<OwnedFd>;
    /// The repositories' configs that `git config` inside may update,
    /// opened for writing before the view binds them read-only.
    fn open_git_configs(&mut self, paths: &[PathBuf]) -> ConfigFiles;
    /// The agents' config files a rename inside may replace, opened for
    /// writing before the view is built.
    fn open_state_files(&mut self, files: &[(PathBuf, StateFile)]) -> StateFiles;
    /// The mount operations the file view is built with.
    fn mounts(&mut self) -> &mut dyn MountOps;
    /// A cgroup namespace rooted at init's cgroup.
    fn unshare_cgroup(&mut self) -> nix::Result<()>;
    /// Changes the working directory.
    fn chdir(&mut self, dir: &Path) -> nix::Result<()>;
    /// The resource limits of `limits` (when rlimits are the mechanism).
    fn apply_rlimits(&mut self, limits: &LimitPlan) -> Result<(), LimitsError>;
    /// A pty of the sandbox's own devpts whose slave replaces init's
    /// terminal stdio: the master, and the slave's path.
    fn open_terminal(&mut self) -> nix::Result<(OwnedFd, PathBuf)>;
    /// `PR_SET_NO_NEW_PRIVS`.
    fn set_no_new_privs(&mut self) -> nix::Result<()>;
    /// Creates the Landlock ruleset: init's, and a duplicate of its
    /// descriptor for the supervisor (none without Landlock); with
    /// `restrict_tcp`, it handles TCP bind and connect.
    fn landlock_ruleset(
        &mut self,
        restrict_tcp: bool,
    ) -> Result<(landlock::Pending, Option<OwnedFd>), LandlockError>;
    /// Adds the rules for init's own mounts to `ruleset` (the supervisor
    /// has added the host paths') and puts init, and all it starts, in its
    /// domain.
    fn landlock(
        &mut self,
        ruleset: landlock::Pending,
        view: &FileView,
        mounted: bool,
        ports: Option<landlock::TcpPorts<'_>>,
    ) -> Result<(), LandlockError>;
    /// Drops every capability for good.
    fn drop_capabilities(&mut self) -> Result<(), caps::errors::CapsError>;
    /// The sock_diag socket the UNIX socket gate asks about sockets.
    fn open_sock_diag(&mut self) -> io::Result<OwnedFd>;
    /// Installs a compiled seccomp filter on the calling thread; returns
    /// its listener if it has notify rules.
    fn install_seccomp(&mut self, program: &Program) -> Result<Option<OwnedFd>, SeccompError>;
    /// Wipes what `/proc/self/environ` and `cmdline` show.
    fn wipe_startup_strings(&mut self) -> io::Result<()>;
    /// `PR_SET_DUMPABLE`.
    fn set_dumpable(&mut self, dumpable: bool) -> nix::Result<()>;
    /// In the command's process: no signal blocked, SIGPIPE at its default.
    fn reset_signals(&mut self) -> io::Result<()>;
    /// In the command's process: the pty slave at `slave` becomes its
    /// controlling terminal, and its stdio where init's was a terminal.
    fn attach_terminal(&mut self, slave: &Path) -> nix::Result<()>;
    /// In the command's process: its address-space limit, if any.
    fn limit_address_space(&mut self, limits: &LimitPlan) -> Result<(), LimitsError>;
    /// `execve`; returns only if it failed.
    fn exec(&mut self, program: &CStr, argv: &[CString], env: &[CString]) -> nix::Error;
}

/// [`InitKernel`] on the real kernel.
pub struct Linux {
    mounts: KernelMounts,
}

impl Default for Linux {
    fn default() -> Linux {
        Linux {
            mounts: KernelMounts,
        }
    }
}

impl InitKernel for Linux {
    fn close_fds_except(&mut self, keep: RawFd) -> io::Result<()> {
        sys::close_from(keep + 1)?;
        for fd in 3..keep {
            let _ = nix::unistd::close(fd);
        }
        Ok(())
    }

    fn new_session(&mut self) -> nix::Result<()> {
        nix::unistd::setsid().map(drop)
    }

    fn set_hostname(&mut self, name: &str) -> nix::Result<()> {
        nix::unistd::sethostname(name)
    }

    fn bring_up_loopback(&mut self) -> io::Result<()> {
        sys::bring_up_loopback()
    }

    fn listen_loopback(&mut self, ip: std::net::IpAddr, port: u16) -> io::Result<OwnedFd> {
        std::net::TcpListener::bind((ip, port)).map(OwnedFd::from)
    }

    fn open_git_configs(&mut self, paths: &[PathBuf]) -> ConfigFiles {
        ConfigFiles::open(paths)
    }

    fn open_state_files(&mut self, files: &[(PathBuf, StateFile)]) -> StateFiles {
        StateFiles::open(files)
    }

    fn mounts(&mut self) -> &mut dyn MountOps {
        &mut self.mounts
    }

    fn unshare_cgroup(&mut self) -> nix::Result<()> {
        nix::sched::unshare(nix::sched::CloneFlags::CLONE_NEWCGROUP)
    }

    fn chdir(&mut self, dir: &Path) -> nix::Result<()> {
        nix::unistd::chdir(dir)
    }

    fn apply_rlimits(&mut self, limits: &LimitPlan) -> Result<(), LimitsError> {
        limits.apply_rlimits()
    }

    fn open_terminal(&mut self) -> nix::Result<(OwnedFd, PathBuf)> {
        let (master, slave) = open_pty()?;
        take_terminal_stdio(&slave)?;
        Ok((master, slave))
    }

    fn set_no_new_privs(&mut self) -> nix::Result<()> {
        nix::sys::prctl::set_no_new_privs()
    }

    fn landlock_ruleset(
        &mut self,
        restrict_tcp: bool,
    ) -> Result<(landlock::Pending, Option<OwnedFd>), LandlockError> {
        landlock::create(restrict_tcp)
    }

    fn landlock(
        &mut self,
        ruleset: landlock::Pending,
        view: &FileView,
        mounted: bool,
        ports: Option<landlock::TcpPorts<'_>>,
    ) -> Result<(), LandlockError> {
        landlock::restrict(ruleset, view, mounted, ports).map(drop)
    }

    fn drop_capabilities(&mut self) -> Result<(), caps::errors::CapsError> {
        drop_capabilities()
    }

    fn open_sock_diag(&mut self) -> io::Result<OwnedFd> {
        UnixGate::open_diag()
    }

    fn install_seccomp(&mut self, program: &Program) -> Result<Option<OwnedFd>, SeccompError> {
        program.install()
    }

    fn wipe_startup_strings(&mut self) -> io::Result<()> {
        sys::wipe_startup_strings()
    }

    fn set_dumpable(&mut self, dumpable: bool) -> nix::Result<()> {
        nix::sys::prctl::set_dumpable(dumpable)
    }

    fn reset_signals(&mut self) -> io::Result<()> {
        nix::sys::signal::SigSet::empty().thread_set_mask()?;
        sys::default_sigpipe()
    }

    fn attach_terminal(&mut self, slave: &Path) -> nix::Result<()> {
        attach_terminal(slave)
    }

    fn limit_address_space(&mut self, limits: &LimitPlan) -> Result<(), LimitsError> {
        limits.limit_address_space()
    }

    fn exec(&mut self, program: &CStr, argv: &[CString], env: &[CString]) -> nix::Error {
        match nix::unistd::execve(program, argv, env) {
            Err(e) => e,
            Ok(never) => match never {},
        }
    }
}

/// Drops every capability for good: the bounding set, ambient,
/// inheritable, permitted and effective sets, and locks the securebits so
/// uid 0 regains nothing on exec.
fn drop_capabilities() -> Result<(), caps::errors::CapsError> {
    use caps::CapSet;
    let _ = sys::set_securebits(sys::SECURE_NOROOT_LOCKED);
    // Without CAP_SETPCAP (no user namespace of our own, degraded mode) the
    // bounding set cannot shrink; no_new_privs, set before, already keeps
    // exec from granting anything.
    let may_shrink = caps::has_cap(None, CapSet::Effective, caps::Capability::CAP_SETPCAP)?;
    if may_shrink {
        for cap in caps::all() {
            caps::drop(None, CapSet::Bounding, cap)?;
        }
    }
    caps::clear(None, CapSet::Ambient)?;
    caps::clear(None, CapSet::Inheritable)?;
    caps::clear(None, CapSet::Effective)?;
    caps::clear(None, CapSet::Permitted)?;
    Ok(())
}

/// A pty from the sandbox's own devpts: the master goes to the supervisor,
/// the slave's path to the command.
fn open_pty() -> nix::Result<(OwnedFd, PathBuf)> {
    use nix::fcntl::OFlag;
    use nix::pty::{grantpt, posix_openpt, ptsname_r, unlockpt};
    let master = posix_openpt(OFlag::O_RDWR | OFlag::O_NOCTTY | OFlag::O_CLOEXEC)?;
    grantpt(&master)?;
    unlockpt(&master)?;
    let slave = PathBuf::from(ptsname_r(&master)?);
    Ok((
        sys::own_fd(std::os::fd::IntoRawFd::into_raw_fd(master)),
        slave,
    ))
}

/// Puts the pty's slave in place of each of init's stdio descriptors that
/// is a terminal (the caller's): init lives inside the sandbox, so it may
/// hold no descriptor of the caller's terminal either, and the command
/// inherits the slave.
fn take_terminal_stdio(slave: &Path) -> nix::Result<()> {
    use nix::fcntl::{open, OFlag};
    use nix::sys::stat::Mode;
    use std::os::fd::AsRawFd;
    let fd = open(
        slave,
        OFlag::O_RDWR | OFlag::O_NOCTTY | OFlag::O_CLOEXEC,
        Mode::empty(),
    )?;
    let fd = sys::own_fd(fd);
    for target in 0..=2 {
        if nix::unistd::isatty(target).unwrap_or(false) {
            nix::unistd::dup2(fd.as_raw_fd(), target)?;
        }
    }
    Ok(())
}

/// Makes the pty slave the command's controlling terminal and its stdio
/// where the caller's stdio was a terminal (init put the slave there
/// already); the others (a pipe, a file) stay as they are.
fn attach_terminal(slave: &Path) -> nix::Result<()> {
    use nix::fcntl::{open, OFlag};
    use nix::sys::stat::Mode;
    use std::os::fd::{AsFd, AsRawFd};
    nix::unistd::setsid()?;
    let fd = open(slave, OFlag::O_RDWR, Mode::empty())?;
    let fd = sys::own_fd(fd);
    sys::set_controlling_terminal(fd.as_fd())
        .map_err(|e| nix::errno::Errno::from_raw(e.raw_os_error().unwrap_or(libc::EIO)))?;
    for target in 0..=2 {
        if nix::unistd::isatty(target).unwrap_or(false) {
            nix::unistd::dup2(fd.as_raw_fd(), target)?;
        }
    }
    Ok(())
}
