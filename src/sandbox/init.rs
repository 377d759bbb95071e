//! The sandbox's init: pid 1 of the new namespaces. It builds the file
//! view, hardens itself (no_new_privs, Landlock, capabilities, seccomp),
//! starts the command, forwards signals to it, reaps orphans, and exits with
//! the command's status.

use std::ffi::{CString, OsStr, OsString};
use std::os::fd::{AsFd, AsRawFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use nix::sys::signal::{kill, SigSet, Signal};
use nix::sys::signalfd::SignalFd;
use nix::sys::wait::{waitpid, WaitPidFlag, WaitStatus};
use nix::unistd::Pid;

use super::channel::{Channel, Message};
use super::files::FileView;
use super::kernel::{InitKernel, Linux};
use super::limits::LimitPlan;
use super::seccomp::{Program, Programs};
use super::supervisor::kill_and_reap;
use super::{weaken, FORWARDED_SIGNALS};
use crate::escape::printable;
use crate::net::inside::{HTTP_PORT, SOCKS_PORT};
use crate::policy::Layer;
use crate::sandbox::config_gate::ConfigFiles;
use crate::sandbox::landlock::TcpPorts;
use crate::sandbox::state_gate::StateFiles;
use crate::sandbox::unix_gate::{FileRules, LocalPorts, Refusal, Reporter, SocketId, UnixGate};
use crate::sys::{self, Forked};

/// Everything init needs, prepared by the supervisor before the clone.
pub struct InitPlan<'a> {
    pub view: &'a FileView,
    pub limits: &'a LimitPlan,
    pub cwd: &'a Path,
    pub argv: Vec<CString>,
    pub env: Vec<CString>,
    pub path_var: OsString,
    /// When set, the only TCP ports programs inside may bind and connect
    /// to on the sandbox's own lo (their own servers); `None`: any.
    pub local_ports: Option<Vec<u16>>,
    /// Host ports: init listens on 127.0.0.1 and ::1 at each, for the
    /// supervisor to forward to the host's 127.0.0.1.
    pub host_ports: Vec<u16>,
    /// Whether the supervisor relays published ports: it then asks init
    /// for sockets made in the sandbox's network namespace.
    pub publish: bool,
    pub pty: bool,
    pub namespaces: bool,
    pub degraded: Vec<Layer>,
    /// Host UNIX sockets the command may reach (`--allow-unix-socket`).
    pub unix_sockets: Vec<SocketId>,
    /// The seccomp filters, compiled before the clone (or why they could
    /// not be: the seccomp layer then fails, or degrades).
    pub filters: &'a Result<Programs, String>,
}

/// What set-up leaves for running the command.
struct Prepared {
    pty_slave: Option<PathBuf>,
    filter: Filter,
    /// With the gate: the sock_diag socket it asks about sockets.
    diag: Option<OwnedFd>,
    /// With published ports: init's end of the channel on which the
    /// supervisor asks for sockets in the sandbox's network namespace.
    sockets: Option<Channel>,
    /// The repositories' configs `git config` inside may update.
    git_configs: ConfigFiles,
    /// The agents' config files a rename inside may replace.
    state_files: StateFiles,
}

/// A setup failure, attributed to the layer it belongs to.
struct Failure {
    layer: Layer,
    what: String,
    /// How to fix it, when the layer's own advice would mislead.
    fix: Option<String>,
}

fn fail(layer: Layer, what: impl std::fmt::Display) -> Failure {
    Failure {
        layer,
        what: what.to_string(),
        fix: None,
    }
}

/// Runs init. Never returns: the process exits with the command's status.
pub fn run(plan: &InitPlan<'_>, channel: Channel) -> ! {
    // If the supervisor dies, so does the sandbox. Checked against the
    // channel below, which closes if the supervisor died before this line.
    let _ = nix::sys::prctl::set_pdeathsig(Signal::SIGKILL);
    let kernel = &mut Linux::default();
    let code = match setup(kernel, plan, &channel) {
        // The channel stays open: the gate reports refusals on it.
        Ok(prepared) => supervise(kernel, plan, prepared, Arc::new(channel)),
        Err(f) => {
            let _ = channel.send(
                &Message::Failed {
                    layer: f.layer,
                    what: f.what,
                    fix: f.fix,
                },
                &[],
            );
            125
        }
    };
    std::process::exit(code)
}

/// Builds the view and hardens init, in the order [`super::kernel`]
/// explains; the command's own steps follow in [`start_command`].
fn setup(
    k: &mut dyn InitKernel,
    plan: &InitPlan<'_>,
    channel: &Channel,
) -> Result<Prepared, Failure> {
    // Until the supervisor says Go (it writes the id maps meanwhile),
    // init does what needs no map: joining the cgroup, closing the
    // inherited descriptors, and making the Landlock ruleset.
    plan.limits
        .join_self()
        .map_err(|e| fail(Layer::Limits, e))?;
    // No file descriptor leaks in, except the channel and stdio.
    k.close_fds_except(channel.as_fd().as_raw_fd())
        .map_err(|e| fail(Layer::Namespaces, format!("close_range: {e}")))?;
    k.new_session()
        .map_err(|e| fail(Layer::Namespaces, format!("setsid: {e}")))?;
    // The Landlock ruleset first, so that the supervisor adds the host
    // paths' rules to it while the view is built (see `landlock`).
    // Without a network namespace of its own, the sandbox's TCP is the
    // host's: Landlock then keeps every port closed but those listed.
    let restrict_tcp = plan.local_ports.is_some() || !plan.namespaces;
    let ruleset = (!weaken::off("landlock")).then(|| k.landlock_ruleset(restrict_tcp));
    let for_supervisor = match &ruleset {
        Some(Ok((_, Some(fd)))) => Some(fd.as_fd()),
        _ => None,
    };
    channel
        .send(
            &Message::Ruleset {
                attached: for_supervisor.is_some(),
            },
            for_supervisor.as_slice(),
        )
        .map_err(|e| fail(Layer::Landlock, format!("handing the ruleset over: {e}")))?;
    let ruleset = ruleset.map(|made| made.map(|(pending, _)| pending));
    match channel.recv() {
        Ok((Message::Go, _)) => {}
        _ => std::process::exit(125),
    }
    let mut listeners: Vec<OwnedFd> = Vec::new();
    let mut host_listeners: Vec<(u16, OwnedFd)> = Vec::new();
    let mut sockets: Option<(Channel, Channel)> = None;
    let mut git_configs = ConfigFiles::default();
    let mut state_files = StateFiles::default();
    let mounted = super::files::mount_view_on(plan.namespaces);

    if plan.namespaces {
        k.set_hostname("cordon")
            .map_err(|e| fail(Layer::Namespaces, format!("sethostname: {e}")))?;
        k.bring_up_loopback()
            .map_err(|e| fail(Layer::Namespaces, format!("bring up lo: {e}")))?;
        // The proxy's listening sockets, created on the sandbox's own
        // loopback so programs inside reach them without any route out;
        // the supervisor accepts on them from the host side.
        let v4 = std::net::IpAddr::from(std::net::Ipv4Addr::LOCALHOST);
        listeners = [HTTP_PORT, SOCKS_PORT]
            .into_iter()
            .map(|port| k.listen_loopback(v4, port))
            .collect::<std::io::Result<_>>()
            .map_err(|e| fail(Layer::Namespaces, format!("proxy listeners on lo: {e}")))?;
        host_listeners = listen_host_ports(k, &plan.host_ports)?;
        if plan.publish {
            sockets = Some(Channel::pair().map_err(|e| {
                fail(
                    Layer::Namespaces,
                    format!("the channel for published ports: {e}"),
                )
            })?);
        }
        if mounted {
            // Before the view binds them read-only.
            git_configs = k.open_git_configs(&plan.view.git_configs);
            state_files = k.open_state_files(&plan.view.state_files);
            plan.view.apply(k.mounts()).map_err(|e| Failure {
                fix: e.fix(),
                ..fail(Layer::Namespaces, &e)
            })?;
        }
        // A cgroup namespace rooted at the sandbox's own cgroup, if any.
        let _ = k.unshare_cgroup();
    }
    if k.chdir(plan.cwd).is_err() {
        let project = plan
            .view
            .writable
            .first()
            .map(PathBuf::as_path)
            .unwrap_or(Path::new("/"));
        k.chdir(project).map_err(|e| {
            fail(
                Layer::Namespaces,
                format!("chdir {}: {e}", project.display()),
            )
        })?;
    }
    k.apply_rlimits(plan.limits)
        .map_err(|e| fail(Layer::Limits, e))?;

    let pty = if plan.pty {
        let pty = k
            .open_terminal()
            .map_err(|e| fail(Layer::Namespaces, format!("pty: {e}")))?;
        Some(pty)
    } else {
        None
    };

    // TEST-ONLY (debug builds): each `CORDON_TEST_WEAKEN` name below skips
    // its layer (see `weaken`); release builds skip nothing.
    if !weaken::off("nnp") {
        k.set_no_new_privs()
            .map_err(|e| fail(Layer::Seccomp, format!("no_new_privs: {e}")))?;
    }
    let bind = plan.local_ports.clone().unwrap_or_default();
    let mut connect_only: Vec<u16> = Vec::new();
    if !listeners.is_empty() {
        connect_only.extend([HTTP_PORT, SOCKS_PORT]);
        connect_only.extend(host_listeners.iter().map(|(port, _)| *port));
    }
    let ports = restrict_tcp.then_some(TcpPorts {
        bind: &bind,
        connect_only: &connect_only,
    });
    let host_rules = wait_until_ruled(channel);
    if let Some(made) = ruleset {
        let landlocked = made.map_err(|e| e.to_string()).and_then(|pending| {
            host_rules?;
            k.landlock(pending, plan.view, mounted, ports)
                .map_err(|e| e.to_string())
        });
        degrade_or_fail(plan, channel, Layer::Landlock, landlocked)?;
    }
    if !weaken::off("caps") {
        k.drop_capabilities()
            .map_err(|e| fail(Layer::Namespaces, format!("dropping capabilities: {e}")))?;
    }
    let filtered = (|| {
        if weaken::off("seccomp") {
            return Ok(None);
        }
        // Netlink is closed to everything after the filter, init included.
        let diag = plan
            .namespaces
            .then(|| k.open_sock_diag())
            .transpose()
            .map_err(|e| format!("sock_diag socket for the UNIX socket gate: {e}"))?;
        let programs = plan.filters.as_ref().map_err(String::clone)?;
        k.install_seccomp(&programs.init)
            .map_err(|e| e.to_string())?;
        Ok::<_, String>(diag)
    })();
    let (filter, diag) = match filtered {
        _ if weaken::off("seccomp") => (Filter::None, None),
        Ok(Some(_)) if weaken::off("unixgate") => (Filter::Ungated, None),
        Ok(Some(diag)) => (Filter::Gated, Some(diag)),
        Ok(None) => (Filter::Ungated, None),
        Err(e) => {
            degrade_or_fail(plan, channel, Layer::Seccomp, Err::<(), _>(e))?;
            (Filter::None, None)
        }
    };
    let (master, slave) = match pty {
        Some((m, s)) => (Some(m), Some(s)),
        None => (None, None),
    };
    wait_until_limited(channel);
    let mut fds: Vec<_> = listeners.iter().map(|l| l.as_fd()).collect();
    fds.extend(host_listeners.iter().map(|(_, l)| l.as_fd()));
    let (sockets, theirs) = match sockets {
        Some((ours, theirs)) => (Some(ours), Some(theirs)),
        None => (None, None),
    };
    fds.extend(theirs.as_ref().map(|c| c.as_fd()));
    fds.extend(master.as_ref().map(|m| m.as_fd()));
    channel
        .send(
            &Message::Ready {
                pty: master.is_some(),
                host_ports: host_listeners.iter().map(|(port, _)| *port).collect(),
                sockets: theirs.is_some(),
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
        k.wipe_startup_strings()
            .map_err(|e| fail(Layer::Namespaces, format!("wiping environ: {e}")))?;
        // Nothing inside may open init's /proc files (its fds, memory, environ).
        k.set_dumpable(false)
            .map_err(|e| fail(Layer::Namespaces, format!("PR_SET_DUMPABLE: {e}")))?;
    }
    Ok(Prepared {
        pty_slave: slave,
        filter,
        diag,
        sockets,
        git_configs,
        state_files,
    })
}

/// Init's listeners for the host ports, on the sandbox's 127.0.0.1 and
/// ::1 (when the sandbox has IPv6), each with its port.
fn listen_host_ports(
    k: &mut dyn InitKernel,
    ports: &[u16],
) -> Result<Vec<(u16, OwnedFd)>, Failure> {
    let mut listeners = Vec::with_capacity(ports.len() * 2);
    for &port in ports {
        let failed = |ip: &str, e: std::io::Error| {
            fail(
                Layer::Namespaces,
                format!("listening on {ip}:{port} inside for --host-port {port}: {e}"),
            )
        };
        let v4 = k
            .listen_loopback(std::net::Ipv4Addr::LOCALHOST.into(), port)
            .map_err(|e| failed("127.0.0.1", e))?;
        listeners.push((port, v4));
        match k.listen_loopback(std::net::Ipv6Addr::LOCALHOST.into(), port) {
            Ok(v6) => listeners.push((port, v6)),
            // No IPv6 inside: nothing can connect to ::1 either.
            Err(e)
                if matches!(
                    e.raw_os_error(),
                    Some(libc::EADDRNOTAVAIL | libc::EAFNOSUPPORT)
                ) => {}
            Err(e) => return Err(failed("[::1]", e)),
        }
    }
    Ok(listeners)
}

/// On a thread of init's own, while the command runs: answers each of the
/// supervisor's requests on `service` with a new TCP socket, unconnected,
/// made in the sandbox's network namespace (which a socket keeps), for a
/// connection to a published port. Ends when the supervisor hangs up.
fn serve_sockets(service: Channel) -> std::io::Result<()> {
    use nix::sys::socket::{socket, AddressFamily, SockFlag, SockType};
    std::thread::Builder::new()
        .name("cordon-sockets".into())
        .stack_size(64 << 10)
        .spawn(move || {
            while let Ok((Message::NewSocket, _)) = service.recv() {
                let sent = match socket(
                    AddressFamily::Inet,
                    SockType::Stream,
                    SockFlag::SOCK_CLOEXEC,
                    None,
                ) {
                    Ok(fd) => service.send(&Message::Socket { failed: None }, &[fd.as_fd()]),
                    Err(e) => service.send(
                        &Message::Socket {
                            failed: Some(e.to_string()),
                        },
                        &[],
                    ),
                };
                if sent.is_err() {
                    return;
                }
            }
        })
        .map(drop)
}

/// Waits until the supervisor has added the host paths' rules to the
/// Landlock ruleset; returns why it could not, if so. A supervisor that
/// died never says: init ends here.
fn wait_until_ruled(channel: &Channel) -> Result<(), String> {
    match channel.recv() {
        Ok((Message::Ruled { failed: None }, _)) => Ok(()),
        Ok((Message::Ruled { failed: Some(why) }, _)) => {
            Err(format!("the host paths' rules: {why}"))
        }
        _ => std::process::exit(125),
    }
}

/// Waits until the supervisor has put init in the sandbox's cgroup (it
/// does so while init builds the sandbox): nothing of the command's may
/// start outside it. A supervisor that failed to, or died, never says so:
/// init ends here.
fn wait_until_limited(channel: &Channel) {
    match channel.recv() {
        Ok((Message::Limited, _)) => {}
        _ => std::process::exit(125),
    }
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

/// Starts the command and waits for it; returns init's exit code.
fn supervise(
    k: &mut dyn InitKernel,
    plan: &InitPlan<'_>,
    prepared: Prepared,
    channel: Arc<Channel>,
) -> i32 {
    let mut mask = SigSet::empty();
    for sig in FORWARDED_SIGNALS.iter().chain(&[Signal::SIGCHLD]) {
        mask.add(*sig);
    }
    let _ = mask.thread_block();
    let Ok(sfd) = SignalFd::with_flags(&mask, nix::sys::signalfd::SfdFlags::SFD_CLOEXEC) else {
        return 125;
    };
    let Prepared {
        pty_slave,
        filter,
        diag,
        sockets,
        git_configs,
        state_files,
    } = prepared;
    let pty_slave = pty_slave.as_deref();
    // The command's parent is the thread that starts it, and the kernel
    // sends the parent-death signal a command may ask for when that thread
    // ends: it stays, parked, until init's wait is over.
    let finished = &AtomicBool::new(false);
    std::thread::scope(|scope| {
        let (started_tx, started_rx) = std::sync::mpsc::sync_channel(1);
        let starter = std::thread::Builder::new()
            .name("cordon-start".into())
            .stack_size(256 << 10)
            .spawn_scoped(scope, move || {
                let started = start_filtered(&mut Linux::default(), plan, pty_slave, filter);
                let _ = started_tx.send(started);
                while !finished.load(Ordering::SeqCst) {
                    std::thread::park();
                }
            });
        let started = match &starter {
            Ok(_) => started_rx
                .recv()
                .unwrap_or_else(|_| Err(cannot_start(&"its thread failed"))),
            Err(e) => Err(cannot_start(e)),
        };
        let gate = GateParts {
            diag,
            git_configs,
            state_files,
            sockets,
        };
        let code = serve(k, plan, started, filter, gate, &sfd, channel);
        finished.store(true, Ordering::SeqCst);
        if let Ok(starter) = &starter {
            starter.thread().unpark();
        }
        code
    })
}

/// What the gate is started with, besides the plan.
struct GateParts {
    /// The sock_diag socket it asks about sockets (none: no gate).
    diag: Option<OwnedFd>,
    /// The repositories' configs `git config` inside may update.
    git_configs: ConfigFiles,
    /// The agents' config files a rename inside may replace.
    state_files: StateFiles,
    /// With published ports: init's end of the channel on which the
    /// supervisor asks for sockets in the sandbox's network namespace.
    sockets: Option<Channel>,
}

/// The rest of init's life once the command was started (or not): init's
/// threads filtered, the gate started, the command waited for.
fn serve(
    k: &mut dyn InitKernel,
    plan: &InitPlan<'_>,
    started: Result<(Pid, Option<OwnedFd>), NotStarted>,
    filter: Filter,
    gate: GateParts,
    sfd: &SignalFd,
    channel: Arc<Channel>,
) -> i32 {
    let (child, listener) = match started {
        Ok(started) => started,
        Err(failed) => {
            crate::say!("cordon: {}", failed.message);
            return failed.code;
        }
    };
    // Init's threads, the gate's included (they inherit it), keep none of
    // the deny list: init reads hostile input at the gate.
    if !matches!(filter, Filter::None) {
        let filtered = Program::init_threads().and_then(|p| k.install_seccomp(&p));
        if let Err(e) = filtered {
            crate::say!("cordon: refusing to run: the seccomp layer: init's own filter: {e}");
            kill_and_reap(child);
            return 125;
        }
    }
    if let Some(sockets) = gate.sockets {
        if let Err(e) = serve_sockets(sockets) {
            crate::say!("cordon: cannot serve the published ports: {e}");
            kill_and_reap(child);
            return 125;
        }
    }
    if let (Some(listener), Some(diag)) = (listener, gate.diag) {
        let report: Reporter = Box::new(move |refusal| {
            let msg = match refusal {
                Refusal::Socket(path) => Message::SocketRefused {
                    path: path.to_string_lossy().into_owned(),
                },
                Refusal::Syscall(syscall) => Message::SyscallRefused { syscall },
                Refusal::Create { path, why } => Message::CreateRefused {
                    path: path.to_string_lossy().into_owned(),
                    why,
                },
                Refusal::PrivilegeMode(syscall) => Message::PrivilegeModeRefused { syscall },
                Refusal::Write {
                    path,
                    in_writable_area,
                    read_only,
                } => Message::WriteRefused {
                    path: path.to_string_lossy().into_owned(),
                    in_writable_area,
                    read_only,
                },
                Refusal::LocalPort(refusal) => Message::LocalPortRefused(refusal),
            };
            let _ = channel.send(&msg, &[]);
        });
        // The command may be running already: its gated calls wait in the
        // listener's queue until the gate's threads take them.
        let allowed = plan.unix_sockets.clone();
        let local = LocalPorts {
            only: plan.local_ports.clone(),
            cordons: [HTTP_PORT, SOCKS_PORT]
                .into_iter()
                .chain(plan.host_ports.iter().copied())
                .collect(),
        };
        let files = FileRules {
            guard: plan.view.guard.clone(),
            git_configs: gate.git_configs,
            state_files: gate.state_files,
        };
        if let Err(e) = UnixGate::start(listener, diag, allowed, local, files, report) {
            // Killed: it may have started, but no gated call of its was answered.
            crate::say!("cordon: cannot start the UNIX socket gate: {e}");
            kill_and_reap(child);
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

/// The seccomp filter the command gets on top of init's.
#[derive(Clone, Copy)]
enum Filter {
    /// None: the seccomp layer is degraded.
    None,
    /// Without the UNIX socket gate: with no network namespace of its own
    /// (namespaces degraded), the sandbox's sockets cannot be told from
    /// the host's, and the network door is open anyway.
    Ungated,
    /// With the gate, which serves the filter's listener.
    Gated,
}

/// On a thread of init's own: the command's filter, then the command.
///
/// A seccomp filter binds the thread that installs it and what that thread
/// starts. Installed here, it binds the command from its first instruction
/// while init's other threads stay free of it, and its listener is init's
/// from the start: nothing is handed over between the command's start and
/// its exec, so without a terminal to attach the command is spawned
/// straight into its exec (see [`sys::spawn`]). Returns the command's pid
/// and, with the gate, the listener.
fn start_filtered(
    k: &mut dyn InitKernel,
    plan: &InitPlan<'_>,
    pty_slave: Option<&Path>,
    filter: Filter,
) -> Result<(Pid, Option<OwnedFd>), NotStarted> {
    let listener = filter_command(k, plan.filters, filter).map_err(|e| NotStarted {
        code: 125,
        message: format!(
            "refusing to run: the seccomp layer could not be applied: the command's filter: {e}"
        ),
    })?;
    // Spawned straight into its exec unless something must be done in
    // the command's process first: a terminal to attach, an address-space
    // limit to set.
    if pty_slave.is_none() && plan.limits.address_space().is_none() {
        let program = resolve_or_not_found(plan)?;
        return sys::spawn(&program, &plan.argv, &plan.env)
            .map(|pid| (pid, listener))
            .map_err(|err| match err {
                // No process to exec in (the task cap, memory): set-up
                // failed, as when a fork fails.
                nix::errno::Errno::EAGAIN | nix::errno::Errno::ENOMEM => cannot_start(&err),
                _ => exec_failed(&program, err),
            });
    }
    match sys::fork() {
        Ok(Forked::Child) => exec_command(k, plan, pty_slave),
        Ok(Forked::Parent(pid)) => Ok((pid, listener)),
        Err(e) => Err(cannot_start(&e)),
    }
}

/// The command could not be started at all (no thread, no fork).
fn cannot_start(why: &dyn std::fmt::Display) -> NotStarted {
    NotStarted {
        code: 125,
        message: format!("cannot start the command: {why}"),
    }
}

/// Installs the command's filter on this thread; with the gate, returns
/// its listener.
fn filter_command(
    k: &mut dyn InitKernel,
    programs: &Result<Programs, String>,
    filter: Filter,
) -> Result<Option<OwnedFd>, String> {
    let gated = match filter {
        Filter::None => return Ok(None),
        Filter::Ungated => false,
        Filter::Gated => true,
    };
    let programs = programs.as_ref().map_err(String::clone)?;
    let ungated;
    let program = if gated {
        &programs.command_gated
    } else {
        ungated = Program::command(false).map_err(|e| e.to_string())?;
        &ungated
    };
    k.install_seccomp(program).map_err(|e| e.to_string())
}

/// In the command's process: terminal, signal mask, then exec.
fn exec_command(k: &mut dyn InitKernel, plan: &InitPlan<'_>, pty_slave: Option<&Path>) -> ! {
    let failed = start_command(k, plan, pty_slave);
    crate::say!("cordon: {}", failed.message);
    std::process::exit(failed.code)
}

/// Why the command did not start, and init's exit code for it.
struct NotStarted {
    code: i32,
    message: String,
}

/// The forked command's steps up to exec (its filter is in place
/// already), which returns only if it failed.
fn start_command(
    k: &mut dyn InitKernel,
    plan: &InitPlan<'_>,
    pty_slave: Option<&Path>,
) -> NotStarted {
    let _ = k.reset_signals();
    if let Err(e) = k.limit_address_space(plan.limits) {
        return NotStarted {
            code: 125,
            message: format!("cannot limit the command's memory: {e}"),
        };
    }
    if let Some(slave) = pty_slave {
        if let Err(e) = k.attach_terminal(slave) {
            return NotStarted {
                code: 125,
                message: format!("cannot attach the terminal: {e}"),
            };
        }
    }
    let program = match resolve_or_not_found(plan) {
        Ok(program) => program,
        Err(not_found) => return not_found,
    };
    let err = k.exec(&program, &plan.argv, &plan.env);
    exec_failed(&program, err)
}

/// The command's program, found in its `PATH` (exit code 127 if not).
fn resolve_or_not_found(plan: &InitPlan<'_>) -> Result<CString, NotStarted> {
    resolve_command(&plan.argv[0], &plan.path_var).ok_or_else(|| {
        let name = printable(OsStr::from_bytes(plan.argv[0].as_bytes()));
        NotStarted {
            code: 127,
            message: format!("{name}: command not found"),
        }
    })
}

/// Exec of `program` failed with `err`: 127 if there is no such file,
/// 126 otherwise, as shells answer.
fn exec_failed(program: &CString, err: nix::errno::Errno) -> NotStarted {
    let code = if err == nix::errno::Errno::ENOENT {
        127
    } else {
        126
    };
    let name = printable(OsStr::from_bytes(program.as_bytes()));
    NotStarted {
        code,
        message: format!("{name}: {err}"),
    }
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

#[cfg(test)]
mod tests {
    use std::ffi::CStr;
    use std::os::fd::RawFd;

    use super::*;
    use crate::policy::{Limits, Source, Sourced};
    use crate::sandbox::files::MountOps;
    use crate::sandbox::landlock::LandlockError;
    use crate::sandbox::limits::LimitsError;
    use crate::sandbox::seccomp::SeccompError;

    /// [`InitKernel`] that notes each call instead of making it; every
    /// mount operation is noted as `mount`. `landlock_fails` makes the
    /// Landlock step fail as on a kernel without it.
    #[derive(Default)]
    struct Recorder {
        calls: Vec<&'static str>,
        landlock_fails: bool,
    }

    impl Recorder {
        fn note(&mut self, call: &'static str) -> std::io::Result<()> {
            self.calls.push(call);
            Ok(())
        }

        fn fd(&mut self, call: &'static str) -> std::io::Result<OwnedFd> {
            self.calls.push(call);
            std::fs::File::open("/dev/null").map(OwnedFd::from)
        }

        /// The calls with each run of mount operations as one `mount view`.
        fn steps(&self) -> Vec<&'static str> {
            let mut steps: Vec<&'static str> = Vec::new();
            for call in &self.calls {
                let step = if *call == "mount" { "mount view" } else { call };
                if step != "mount view" || steps.last() != Some(&"mount view") {
                    steps.push(step);
                }
            }
            steps
        }
    }

    impl MountOps for Recorder {
        fn make_private(&mut self, _: &Path) -> std::io::Result<()> {
            self.note("mount")
        }
        fn mount_tmpfs(&mut self, _: &Path, _: &str) -> std::io::Result<()> {
            self.note("mount")
        }
        fn mount_proc(&mut self, _: &Path) -> std::io::Result<()> {
            self.note("mount")
        }
        fn mount_sysfs(&mut self, _: &Path) -> std::io::Result<()> {
            self.note("mount")
        }
        fn mount_devpts(&mut self, _: &Path) -> std::io::Result<()> {
            self.note("mount")
        }
        fn bind(&mut self, _: &Path, _: &Path) -> std::io::Result<()> {
            self.note("mount")
        }
        fn mount_overlay(&mut self, _: &Path, _: &Path, _: &Path, _: &Path) -> std::io::Result<()> {
            self.note("mount")
        }
        fn set_attrs(&mut self, _: &Path, _: u64, _: bool) -> std::io::Result<()> {
            self.note("mount")
        }
        fn pivot_root(&mut self, _: &Path, _: &Path) -> std::io::Result<()> {
            self.note("mount")
        }
        fn enter_root(&mut self, _: &Path) -> std::io::Result<()> {
            self.note("mount")
        }
        fn exists(&self, _: &Path) -> bool {
            true
        }
        fn is_dir(&self, _: &Path) -> bool {
            true
        }
        fn mkdir_all(&mut self, _: &Path) -> std::io::Result<()> {
            self.note("mount")
        }
        fn create_file(&mut self, _: &Path, _: u32) -> std::io::Result<()> {
            self.note("mount")
        }
        fn symlink(&mut self, _: &Path, _: &Path) -> std::io::Result<()> {
            self.note("mount")
        }
    }

    impl InitKernel for Recorder {
        fn close_fds_except(&mut self, _: RawFd) -> std::io::Result<()> {
            self.note("close fds")
        }
        fn new_session(&mut self) -> nix::Result<()> {
            self.calls.push("setsid");
            Ok(())
        }
        fn set_hostname(&mut self, _: &str) -> nix::Result<()> {
            self.calls.push("hostname");
            Ok(())
        }
        fn bring_up_loopback(&mut self) -> std::io::Result<()> {
            self.note("lo up")
        }
        fn listen_loopback(&mut self, _: std::net::IpAddr, _: u16) -> std::io::Result<OwnedFd> {
            self.fd("listen")
        }
        fn open_git_configs(&mut self, _: &[PathBuf]) -> ConfigFiles {
            self.calls.push("open git configs");
            ConfigFiles::default()
        }
        fn open_state_files(
            &mut self,
            _: &[(PathBuf, crate::policy::state::StateFile)],
        ) -> StateFiles {
            self.calls.push("open state files");
            StateFiles::default()
        }
        fn mounts(&mut self) -> &mut dyn MountOps {
            self
        }
        fn unshare_cgroup(&mut self) -> nix::Result<()> {
            self.calls.push("cgroup namespace");
            Ok(())
        }
        fn chdir(&mut self, _: &Path) -> nix::Result<()> {
            self.calls.push("chdir");
            Ok(())
        }
        fn apply_rlimits(&mut self, _: &LimitPlan) -> Result<(), LimitsError> {
            self.calls.push("rlimits");
            Ok(())
        }
        fn open_terminal(&mut self) -> nix::Result<(OwnedFd, PathBuf)> {
            unreachable!("the plan asks for no pty")
        }
        fn set_no_new_privs(&mut self) -> nix::Result<()> {
            self.calls.push("no_new_privs");
            Ok(())
        }
        fn landlock_ruleset(
            &mut self,
            restrict_tcp: bool,
        ) -> Result<(crate::sandbox::landlock::Pending, Option<OwnedFd>), LandlockError> {
            self.calls.push("landlock ruleset");
            crate::sandbox::landlock::create(restrict_tcp)
        }
        fn landlock(
            &mut self,
            _: crate::sandbox::landlock::Pending,
            _: &FileView,
            _: bool,
            _: Option<crate::sandbox::landlock::TcpPorts<'_>>,
        ) -> Result<(), LandlockError> {
            self.calls.push("landlock");
            match self.landlock_fails {
                true => Err(LandlockError::NotEnforced),
                false => Ok(()),
            }
        }
        fn drop_capabilities(&mut self) -> Result<(), caps::errors::CapsError> {
            self.calls.push("drop capabilities");
            Ok(())
        }
        fn open_sock_diag(&mut self) -> std::io::Result<OwnedFd> {
            self.fd("sock_diag")
        }
        fn install_seccomp(&mut self, _: &Program) -> Result<Option<OwnedFd>, SeccompError> {
            self.calls.push("seccomp");
            Ok(None)
        }
        fn wipe_startup_strings(&mut self) -> std::io::Result<()> {
            self.note("wipe environ")
        }
        fn set_dumpable(&mut self, dumpable: bool) -> nix::Result<()> {
            self.calls
                .push(if dumpable { "dumpable" } else { "not dumpable" });
            Ok(())
        }
        fn reset_signals(&mut self) -> std::io::Result<()> {
            self.note("reset signals")
        }
        fn attach_terminal(&mut self, _: &Path) -> nix::Result<()> {
            unreachable!("the plan asks for no pty")
        }
        fn limit_address_space(&mut self, _: &LimitPlan) -> Result<(), LimitsError> {
            self.calls.push("address space");
            Ok(())
        }
        fn exec(&mut self, _: &CStr, _: &[CString], _: &[CString]) -> nix::Error {
            self.calls.push("exec");
            nix::errno::Errno::ENOENT
        }
    }

    fn limits() -> LimitPlan {
        LimitPlan::rlimits_only(&Limits {
            max_procs: Sourced::new(64, Source::Builtin),
            max_tmp: Sourced::new(1 << 20, Source::Builtin),
            max_memory: None,
            timeout: None,
        })
    }

    /// The filters, compiled once for every test (libseccomp needs no
    /// privilege to compile).
    fn compiled() -> &'static Result<Programs, String> {
        static COMPILED: std::sync::OnceLock<Result<Programs, String>> = std::sync::OnceLock::new();
        COMPILED.get_or_init(|| Programs::compile().map_err(|e| e.to_string()))
    }

    fn plan<'a>(view: &'a FileView, limits: &'a LimitPlan, degraded: Vec<Layer>) -> InitPlan<'a> {
        InitPlan {
            view,
            limits,
            cwd: Path::new("/"),
            argv: vec![c"/bin/true".into()],
            env: Vec::new(),
            path_var: OsString::new(),
            local_ports: None,
            host_ports: Vec::new(),
            publish: false,
            pty: false,
            namespaces: true,
            degraded,
            unix_sockets: Vec::new(),
            filters: compiled(),
        }
    }

    /// Runs init's set-up and the command's start on `kernel`; the
    /// failure set-up reported, if any.
    fn run_on(kernel: &mut Recorder, plan: &InitPlan<'_>) -> Option<(Layer, String)> {
        run_ruled(kernel, plan, None)
    }

    /// [`run_on`], with the supervisor reporting `failed` for the host
    /// paths' Landlock rules.
    fn run_ruled(
        kernel: &mut Recorder,
        plan: &InitPlan<'_>,
        failed: Option<String>,
    ) -> Option<(Layer, String)> {
        let (supervisor, init) = Channel::pair().unwrap();
        supervisor.send(&Message::Go, &[]).unwrap();
        supervisor.send(&Message::Ruled { failed }, &[]).unwrap();
        supervisor.send(&Message::Limited, &[]).unwrap();
        match setup(kernel, plan, &init) {
            Ok(_) => {
                assert!(filter_command(kernel, plan.filters, Filter::Ungated)
                    .unwrap()
                    .is_none());
                let not_started = start_command(kernel, plan, None);
                assert_eq!(not_started.code, 127, "{}", not_started.message);
                None
            }
            Err(f) => Some((f.layer, f.what)),
        }
    }

    /// The hardening steps in the order init must take them (why: see
    /// `super::super::kernel`). The second seccomp is the command's own
    /// filter, on the thread that forks it, before the fork and exec.
    const HARDENED: [&str; 8] = [
        "close fds",
        "mount view",
        "no_new_privs",
        "landlock",
        "drop capabilities",
        "seccomp",
        "seccomp",
        "exec",
    ];

    /// The hardening steps among `steps`, in their order.
    fn hardening(steps: &[&'static str]) -> Vec<&'static str> {
        steps
            .iter()
            .copied()
            .filter(|s| HARDENED.contains(s))
            .collect()
    }

    #[test]
    fn init_hardens_itself_in_order_then_filters_the_command_and_execs() {
        let (view, limits) = (FileView::default(), limits());
        let mut kernel = Recorder::default();
        assert_eq!(run_on(&mut kernel, &plan(&view, &limits, Vec::new())), None);
        let steps = kernel.steps();
        assert_eq!(hardening(&steps), HARDENED, "{steps:?}");
        let at = |step| steps.iter().position(|s| *s == step).unwrap();
        // The ruleset goes to the supervisor before the view is built, so
        // that it adds the host's rules meanwhile, and after the inherited
        // descriptors are closed.
        assert!(at("close fds") < at("landlock ruleset"), "{steps:?}");
        assert!(at("landlock ruleset") < at("mount view"), "{steps:?}");
        // Once the view binds them read-only, they cannot be opened for
        // `git config`'s updates.
        assert!(at("open git configs") < at("mount view"), "{steps:?}");
        // Init's filter closes netlink: the gate's socket is opened first.
        assert!(at("sock_diag") < at("seccomp"), "{steps:?}");
        // /proc/1/environ is wiped, and init made undumpable, before the
        // command can start.
        assert!(at("not dumpable") < at("reset signals"), "{steps:?}");
    }

    #[test]
    fn a_layer_that_fails_stops_set_up_before_the_next_unless_degraded() {
        let (view, limits) = (FileView::default(), limits());
        let mut kernel = Recorder {
            landlock_fails: true,
            ..Recorder::default()
        };
        let failed = run_on(&mut kernel, &plan(&view, &limits, Vec::new()));
        assert!(matches!(failed, Some((Layer::Landlock, _))), "{failed:?}");
        assert_eq!(kernel.calls.last(), Some(&"landlock"), "{:?}", kernel.calls);

        // Allowed to run without Landlock: every later step still happens.
        let mut kernel = Recorder {
            landlock_fails: true,
            ..Recorder::default()
        };
        let degraded = plan(&view, &limits, vec![Layer::Landlock]);
        assert_eq!(run_on(&mut kernel, &degraded), None);
        assert_eq!(hardening(&kernel.steps()), HARDENED);
    }

    #[test]
    fn host_rules_the_supervisor_could_not_add_fail_the_landlock_layer() {
        let (view, limits) = (FileView::default(), limits());
        let mut kernel = Recorder::default();
        let failed = run_ruled(
            &mut kernel,
            &plan(&view, &limits, Vec::new()),
            Some("EBADF".into()),
        );
        assert!(
            matches!(&failed, Some((Layer::Landlock, why)) if why.contains("EBADF")),
            "{failed:?}"
        );
        // Enforcing a ruleset without the host's rules was never tried.
        assert!(!kernel.calls.contains(&"landlock"), "{:?}", kernel.calls);
    }
}
