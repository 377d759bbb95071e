//! The sandbox's init: pid 1 of the new namespaces. It builds the file
//! view, hardens itself (no_new_privs, Landlock, capabilities, seccomp),
//! starts the command, forwards signals to it, reaps orphans, and exits with
//! the command's status.

use std::ffi::{CString, OsStr, OsString};
use std::io::{Read, Write};
use std::os::fd::{AsFd, AsRawFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::os::unix::net::UnixStream;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use nix::sys::signal::{kill, SigSet, Signal};
use nix::sys::signalfd::SignalFd;
use nix::sys::wait::{waitpid, WaitPidFlag, WaitStatus};
use nix::unistd::Pid;

use super::channel::{Channel, Message};
use super::create_gate::Guard;
use super::files::{FileView, KernelMounts};
use super::limits::LimitPlan;
use super::{landlock, seccomp, weaken, FORWARDED_SIGNALS};
use crate::escape::printable;
use crate::net::inside::{HTTP_PORT, SOCKS_PORT};
use crate::policy::Layer;
use crate::sandbox::unix_gate::{Refusal, Reporter, SocketId, UnixGate};
use crate::sys::{self, Forked};

/// Everything init needs, prepared by the supervisor before the clone.
pub struct InitPlan<'a> {
    pub view: &'a FileView,
    pub limits: &'a LimitPlan,
    pub cwd: &'a Path,
    pub argv: Vec<CString>,
    pub env: Vec<CString>,
    pub path_var: OsString,
    /// TCP ports programs inside may bind and connect to (their own servers).
    pub tcp_ports: Vec<u16>,
    pub pty: bool,
    pub namespaces: bool,
    pub degraded: Vec<Layer>,
    /// Host UNIX sockets the command may reach (`--allow-unix-socket`).
    pub unix_sockets: Vec<SocketId>,
}

/// What set-up leaves for running the command.
struct Prepared {
    pty_slave: Option<PathBuf>,
    command_filter: CommandFilter,
}

/// The seccomp filter the command gets on top of init's.
enum CommandFilter {
    /// None: the seccomp layer is degraded.
    None,
    /// Without the UNIX socket gate: with no network namespace of its own
    /// (namespaces degraded), the sandbox's sockets cannot be told from
    /// the host's, and the network door is open anyway.
    Ungated,
    /// With the gate, which asks sock_diag (this socket) about sockets.
    Gated(OwnedFd),
}

/// A setup failure, attributed to the layer it belongs to.
struct Failure {
    layer: Layer,
    what: String,
}

fn fail(layer: Layer, what: impl std::fmt::Display) -> Failure {
    Failure {
        layer,
        what: what.to_string(),
    }
}

/// Runs init. Never returns: the process exits with the command's status.
pub fn run(plan: &InitPlan<'_>, channel: Channel) -> ! {
    // If the supervisor dies, so does the sandbox. Checked against the
    // channel below, which closes if the supervisor died before this line.
    let _ = nix::sys::prctl::set_pdeathsig(Signal::SIGKILL);
    let code = match setup(plan, &channel) {
        // The channel stays open: the gate reports refusals on it.
        Ok(prepared) => supervise(plan, prepared, Arc::new(channel)),
        Err(f) => {
            let _ = channel.send(
                &Message::Failed {
                    layer: f.layer,
                    what: f.what,
                },
                &[],
            );
            125
        }
    };
    std::process::exit(code)
}

fn setup(plan: &InitPlan<'_>, channel: &Channel) -> Result<Prepared, Failure> {
    match channel.recv() {
        Ok((Message::Go, _)) => {}
        _ => std::process::exit(125),
    }
    // No file descriptor leaks in, except the channel and stdio.
    let keep = channel.as_fd().as_raw_fd();
    sys::close_from(keep + 1).map_err(|e| fail(Layer::Namespaces, format!("close_range: {e}")))?;
    for fd in 3..keep {
        let _ = nix::unistd::close(fd);
    }
    nix::unistd::setsid().map_err(|e| fail(Layer::Namespaces, format!("setsid: {e}")))?;
    let mut listeners: Vec<OwnedFd> = Vec::new();

    if plan.namespaces {
        nix::unistd::sethostname("cordon")
            .map_err(|e| fail(Layer::Namespaces, format!("sethostname: {e}")))?;
        sys::bring_up_loopback()
            .map_err(|e| fail(Layer::Namespaces, format!("bring up lo: {e}")))?;
        listeners = proxy_listeners()
            .map_err(|e| fail(Layer::Namespaces, format!("proxy listeners on lo: {e}")))?;
        // TEST-ONLY (debug builds): `CORDON_TEST_WEAKEN=files` keeps the host's view.
        if !weaken::off("files") {
            plan.view
                .apply(&mut KernelMounts)
                .map_err(|e| fail(Layer::Namespaces, e))?;
        }
        // A cgroup namespace rooted at the sandbox's own cgroup, if any.
        let _ = nix::sched::unshare(nix::sched::CloneFlags::CLONE_NEWCGROUP);
    }
    if nix::unistd::chdir(plan.cwd).is_err() {
        let project = plan
            .view
            .writable
            .first()
            .map(PathBuf::as_path)
            .unwrap_or(Path::new("/"));
        nix::unistd::chdir(project).map_err(|e| {
            fail(
                Layer::Namespaces,
                format!("chdir {}: {e}", project.display()),
            )
        })?;
    }
    plan.limits
        .apply_rlimits()
        .map_err(|e| fail(Layer::Limits, e))?;

    let pty = if plan.pty {
        let pty = open_pty()
            .and_then(|(master, slave)| take_terminal_stdio(&slave).map(|()| (master, slave)))
            .map_err(|e| fail(Layer::Namespaces, format!("pty: {e}")))?;
        Some(pty)
    } else {
        None
    };

    // TEST-ONLY (debug builds): each `CORDON_TEST_WEAKEN` name below skips
    // its layer (see `weaken`); release builds skip nothing.
    if !weaken::off("nnp") {
        nix::sys::prctl::set_no_new_privs()
            .map_err(|e| fail(Layer::Seccomp, format!("no_new_privs: {e}")))?;
    }
    let connect_only: &[u16] = if listeners.is_empty() {
        &[]
    } else {
        &[HTTP_PORT, SOCKS_PORT]
    };
    if !weaken::off("landlock") {
        let landlocked = landlock::restrict(plan.view, &plan.tcp_ports, connect_only);
        degrade_or_fail(plan, channel, Layer::Landlock, landlocked)?;
    }
    if !weaken::off("caps") {
        drop_capabilities()
            .map_err(|e| fail(Layer::Namespaces, format!("dropping capabilities: {e}")))?;
    }
    let filtered = (|| {
        if weaken::off("seccomp") {
            return Ok(None);
        }
        // Netlink is closed to everything after the filter, init included.
        let diag = plan
            .namespaces
            .then(UnixGate::open_diag)
            .transpose()
            .map_err(|e| format!("sock_diag socket for the UNIX socket gate: {e}"))?;
        let filter = seccomp::init_filter().map_err(|e| e.to_string())?;
        seccomp::install(&filter).map_err(|e| e.to_string())?;
        Ok::<_, String>(diag)
    })();
    let command_filter = match filtered {
        _ if weaken::off("seccomp") => CommandFilter::None,
        Ok(Some(_)) if weaken::off("unixgate") => CommandFilter::Ungated,
        Ok(Some(diag)) => CommandFilter::Gated(diag),
        Ok(None) => CommandFilter::Ungated,
        Err(e) => {
            degrade_or_fail(plan, channel, Layer::Seccomp, Err::<(), _>(e))?;
            CommandFilter::None
        }
    };
    let (master, slave) = match pty {
        Some((m, s)) => (Some(m), Some(s)),
        None => (None, None),
    };
    let mut fds: Vec<_> = listeners.iter().map(|l| l.as_fd()).collect();
    fds.extend(master.as_ref().map(|m| m.as_fd()));
    channel
        .send(
            &Message::Ready {
                pty: master.is_some(),
            },
            &fds,
        )
        .map_err(|e| {
            fail(
                Layer::Namespaces,
                format!("reporting to the supervisor: {e}"),
            )
        })?;
    // TEST-ONLY (debug builds): `CORDON_TEST_WEAKEN=initenv` leaves init's
    // environ as it was.
    if !weaken::off("initenv") {
        // What /proc/1/environ and /proc/1/cmdline would show: the caller's.
        sys::wipe_startup_strings()
            .map_err(|e| fail(Layer::Namespaces, format!("wiping environ: {e}")))?;
        // Nothing inside may open init's /proc files (its fds, memory, environ).
        nix::sys::prctl::set_dumpable(false)
            .map_err(|e| fail(Layer::Namespaces, format!("PR_SET_DUMPABLE: {e}")))?;
    }
    Ok(Prepared {
        pty_slave: slave,
        command_filter,
    })
}

/// A layer that could not be applied fails set-up, unless the user allowed
/// running without it: then the supervisor is told, to warn.
fn degrade_or_fail<T, E: std::fmt::Display>(
    plan: &InitPlan<'_>,
    channel: &Channel,
    layer: Layer,
    result: Result<T, E>,
) -> Result<(), Failure> {
    match result {
        Ok(_) => Ok(()),
        Err(e) if plan.degraded.contains(&layer) => {
            let what = e.to_string();
            let _ = channel.send(&Message::Degraded { layer, what }, &[]);
            Ok(())
        }
        Err(e) => Err(fail(layer, e)),
    }
}

/// The proxy's listening sockets, created on the sandbox's own loopback so
/// programs inside reach them without any route out; the supervisor
/// accepts on them from the host side.
fn proxy_listeners() -> std::io::Result<Vec<OwnedFd>> {
    [HTTP_PORT, SOCKS_PORT]
        .into_iter()
        .map(|port| std::net::TcpListener::bind(("127.0.0.1", port)).map(OwnedFd::from))
        .collect()
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

/// Starts the command and waits for it; returns init's exit code.
fn supervise(plan: &InitPlan<'_>, prepared: Prepared, channel: Arc<Channel>) -> i32 {
    let mut mask = SigSet::empty();
    for sig in FORWARDED_SIGNALS.iter().chain(&[Signal::SIGCHLD]) {
        mask.add(*sig);
    }
    let _ = mask.thread_block();
    let Ok(sfd) = SignalFd::with_flags(&mask, nix::sys::signalfd::SfdFlags::SFD_CLOEXEC) else {
        return 125;
    };
    // The command gets its filter's listener to init over this socket.
    let (gate_end, command_end) = match prepared.command_filter {
        CommandFilter::Gated(diag) => match UnixStream::pair() {
            Ok((ours, theirs)) => (Some((ours, diag)), Handoff::Gated(theirs)),
            Err(e) => {
                eprintln!("cordon: cannot start the UNIX socket gate: {e}");
                return 125;
            }
        },
        CommandFilter::Ungated => (None, Handoff::Ungated),
        CommandFilter::None => (None, Handoff::None),
    };
    let child = match sys::fork() {
        Ok(Forked::Child) => exec_command(plan, prepared.pty_slave.as_deref(), command_end),
        Ok(Forked::Parent(pid)) => pid,
        Err(e) => {
            eprintln!("cordon: cannot start the command: {e}");
            return 125;
        }
    };
    let seccomp_on = !matches!(command_end, Handoff::None);
    drop(command_end);
    // Init's threads, the gate's included (they inherit it), keep none of
    // the deny list: init reads hostile input at the gate.
    if seccomp_on {
        let filtered = seccomp::init_threads_filter().and_then(|f| seccomp::install(&f));
        if let Err(e) = filtered {
            eprintln!("cordon: refusing to run: the seccomp layer: init's own filter: {e}");
            let _ = kill(child, Signal::SIGKILL);
            let _ = waitpid(child, None);
            return 125;
        }
    }
    if let Some((end, diag)) = gate_end {
        let report: Reporter = Box::new(move |refusal| {
            let msg = match refusal {
                Refusal::Socket(path) => Message::SocketRefused {
                    path: path.to_string_lossy().into_owned(),
                },
                Refusal::Syscall(syscall) => Message::SyscallRefused { syscall },
                Refusal::Create { path, why } => Message::CreateRefused {
                    path: path.to_string_lossy().into_owned(),
                    why: why.to_string(),
                },
                Refusal::PrivilegeMode(syscall) => Message::PrivilegeModeRefused { syscall },
            };
            let _ = channel.send(&msg, &[]);
        });
        if let Err(e) = start_gate(
            child,
            end,
            diag,
            plan.unix_sockets.clone(),
            plan.view.guard.clone(),
            report,
        ) {
            // Killed: it may have started, but no gated call of its was answered.
            eprintln!("cordon: cannot start the UNIX socket gate: {e}");
            let _ = kill(child, Signal::SIGKILL);
            let _ = waitpid(child, None);
            return 125;
        }
    }
    loop {
        let Ok(Some(info)) = sfd.read_signal() else {
            continue;
        };
        let signo = info.ssi_signo as i32;
        if signo != Signal::SIGCHLD as i32 {
            if let Ok(sig) = Signal::try_from(signo) {
                let _ = kill(child, sig);
            }
            continue;
        }
        if let Some(code) = reap(child) {
            return code;
        }
    }
}

/// Reaps every exited child; returns the exit code once `child` is gone.
fn reap(child: Pid) -> Option<i32> {
    let mut result = None;
    loop {
        match waitpid(Pid::from_raw(-1), Some(WaitPidFlag::WNOHANG)) {
            Ok(WaitStatus::Exited(pid, code)) if pid == child => result = Some(code),
            Ok(WaitStatus::Signaled(pid, sig, _)) if pid == child => {
                result = Some(128 + sig as i32)
            }
            Ok(WaitStatus::StillAlive) | Err(_) => return result,
            Ok(_) => {}
        }
    }
}

/// Takes the command filter's listener from the command (it cannot send it:
/// its sends already stop at the filter) and starts the gate on it.
fn start_gate(
    child: Pid,
    mut end: UnixStream,
    diag: OwnedFd,
    allowed: Vec<SocketId>,
    guard: Guard,
    report: Reporter,
) -> std::io::Result<()> {
    let mut number = [0u8; 4];
    end.read_exact(&mut number)?;
    let pidfd = sys::pidfd_open(child)?;
    let listener = sys::pidfd_getfd(pidfd.as_fd(), i32::from_ne_bytes(number))?;
    // The command may exec now: its gated calls wait in the listener's
    // queue until the gate's threads, started meanwhile, take them.
    end.write_all(b"+")?;
    UnixGate::start(listener, diag, allowed, guard, report)
}

/// The command's side of [`CommandFilter`].
enum Handoff {
    None,
    Ungated,
    /// The socket to hand init the filter's listener on.
    Gated(UnixStream),
}

/// In the command's process, last before exec: the command filter, whose
/// listener init takes over. Writes and reads on the handoff socket are
/// not gated.
fn filter_command(handoff: Handoff) -> Result<(), String> {
    let mut end = match handoff {
        Handoff::None => return Ok(()),
        Handoff::Ungated => {
            let filter = seccomp::command_filter(false).map_err(|e| e.to_string())?;
            return seccomp::install(&filter).map_err(|e| e.to_string());
        }
        Handoff::Gated(end) => end,
    };
    let filter = seccomp::command_filter(true).map_err(|e| e.to_string())?;
    seccomp::install(&filter).map_err(|e| e.to_string())?;
    let listener = seccomp::listener(&filter).map_err(|e| e.to_string())?;
    // Init's pidfd_getfd needs us dumpable; exec sets it anew.
    nix::sys::prctl::set_dumpable(true).map_err(|e| format!("PR_SET_DUMPABLE: {e}"))?;
    end.write_all(&listener.as_raw_fd().to_ne_bytes())
        .and_then(|()| end.read_exact(&mut [0u8; 1]))
        .map_err(|e| format!("handing the listener to init: {e}"))
}

/// In the command's process: terminal, signal mask, then exec.
fn exec_command(plan: &InitPlan<'_>, pty_slave: Option<&Path>, handoff: Handoff) -> ! {
    let _ = SigSet::empty().thread_set_mask();
    let _ = sys::default_sigpipe();
    if let Some(slave) = pty_slave {
        if let Err(e) = attach_terminal(slave) {
            eprintln!("cordon: cannot attach the terminal: {e}");
            std::process::exit(125);
        }
    }
    let Some(program) = resolve_command(&plan.argv[0], &plan.path_var) else {
        eprintln!(
            "cordon: {}: command not found",
            printable(OsStr::from_bytes(plan.argv[0].as_bytes()))
        );
        std::process::exit(127);
    };
    if let Err(e) = filter_command(handoff) {
        eprintln!("cordon: refusing to run: the seccomp layer could not be applied: the command's filter: {e}");
        std::process::exit(125);
    }
    let err = nix::unistd::execve(&program, &plan.argv, &plan.env).unwrap_err();
    eprintln!(
        "cordon: {}: {err}",
        printable(OsStr::from_bytes(program.as_bytes()))
    );
    std::process::exit(if err == nix::errno::Errno::ENOENT {
        127
    } else {
        126
    })
}

/// Makes the pty slave the command's controlling terminal and its stdio
/// where the caller's stdio was a terminal (init put the slave there
/// already); the others (a pipe, a file) stay as they are.
fn attach_terminal(slave: &Path) -> nix::Result<()> {
    use nix::fcntl::{open, OFlag};
    use nix::sys::stat::Mode;
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

/// Finds `name` like `execvp` would, in the command's own `PATH`.
fn resolve_command(name: &CString, path_var: &OsString) -> Option<CString> {
    let bytes = name.as_bytes();
    if bytes.contains(&b'/') {
        return Some(name.clone());
    }
    let path = if path_var.is_empty() {
        OsString::from("/usr/local/bin:/usr/bin:/bin")
    } else {
        path_var.clone()
    };
    for dir in path.as_bytes().split(|b| *b == b':') {
        let dir = if dir.is_empty() { b"." as &[u8] } else { dir };
        let mut candidate = dir.to_vec();
        candidate.push(b'/');
        candidate.extend_from_slice(bytes);
        let Ok(c) = CString::new(candidate) else {
            continue;
        };
        if nix::unistd::access(c.as_c_str(), nix::unistd::AccessFlags::X_OK).is_ok()
            && Path::new(std::ffi::OsStr::from_bytes(c.as_bytes())).is_file()
        {
            return Some(c);
        }
    }
    None
}
