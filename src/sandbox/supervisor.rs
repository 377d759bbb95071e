//! The supervisor's hold on the sandbox: it forks init, lets it go once
//! the host side is ready, waits for it, and tears it down.
//!
//! There is one way a sandbox ends early: [`kill_and_reap`]. The
//! supervisor holds init as a [`Sandbox`] from the fork until init is
//! reaped, and dropping it (a failed step after the fork, an error
//! returned with `?`, a timeout) kills init, and with it every process of
//! the sandbox's pid namespace, then reaps it. So no failure path can
//! forget the teardown, or leave init behind.

use std::io;
use std::os::fd::AsFd;
use std::os::fd::OwnedFd;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use nix::poll::{poll, PollFd, PollFlags, PollTimeout};
use nix::sys::signal::{kill, SigSet, Signal};
use nix::sys::signalfd::{SfdFlags, SignalFd};
use nix::sys::wait::{waitpid, WaitPidFlag, WaitStatus};
use nix::unistd::Pid;

use super::channel::{Channel, Message};
use super::files::{self, FileView};
use super::init::{self, InitPlan};
use super::landlock;
use super::limits::LimitPlan;
use super::unix_gate;
use super::unix_gate::LocalPortRefusal;
use super::{
    ask_prompt, io_err, namespaces_error, support, tty, warn_degraded, weaken, SandboxError,
    EXIT_TIMEOUT, FORWARDED_SIGNALS,
};
use crate::audit::{self, Auditor};
use crate::policy::{Layer, Policy, Source};
use crate::sys::{self, Forked};

/// Sends `pid` SIGKILL and waits until it is reaped: the one way cordon
/// ends a sandbox (or, in init, a command) it started and must not leave
/// running.
pub(super) fn kill_and_reap(pid: Pid) {
    let _ = kill(pid, Signal::SIGKILL);
    let _ = waitpid(pid, None);
}

/// Init, from the fork until it is reaped: dropped before it exited, it is
/// killed and reaped.
struct Init {
    pid: Pid,
    reaped: bool,
}

impl Init {
    /// Kills and reaps init, unless it is reaped already.
    fn kill(&mut self) {
        if !self.reaped {
            kill_and_reap(self.pid);
            self.reaped = true;
        }
    }
}

impl Drop for Init {
    fn drop(&mut self) {
        self.kill();
    }
}

/// A forked init and the supervisor's ends of it: the channel, and the
/// signals it forwards.
pub(super) struct Sandbox {
    init: Init,
    channel: Channel,
    signals: SignalFd,
    /// `network.local_ports` in force (as written, and its source), for
    /// the reports of binds and connects it refused.
    local_ports: Option<(String, String)>,
}

/// What init hands over once every layer is in place.
pub(super) struct Handover {
    /// The proxy's listening sockets inside the sandbox (HTTP, SOCKS5);
    /// none without a network namespace.
    pub listeners: Vec<OwnedFd>,
    /// The host ports' listeners inside the sandbox, each with its port.
    pub host_listeners: Vec<(u16, OwnedFd)>,
    /// With published ports: the channel on which init makes sockets in
    /// the sandbox's network namespace.
    pub sockets: Option<Channel>,
    /// The pty master, if the caller is on a terminal.
    pub pty_master: Option<OwnedFd>,
}

/// Forks the sandbox's init into new user, mount, pid, net, ipc and uts
/// namespaces (or, if the user allowed running without them, a plain
/// fork: `plan.namespaces` is then false). Init waits for
/// [`Sandbox::start`].
///
/// Must be called while the process has a single thread: the child runs
/// on after the fork.
pub(super) fn spawn(plan: &mut InitPlan<'_>, policy: &Policy) -> Result<Sandbox, SandboxError> {
    // Blocked before the fork, so that no forwarded signal is lost between
    // it and init's own signalfd.
    let mut mask = SigSet::empty();
    for sig in FORWARDED_SIGNALS.iter().chain(&[Signal::SIGCHLD]) {
        mask.add(*sig);
    }
    mask.thread_block()
        .map_err(|e| io_err("blocking signals")(e.into()))?;
    let flags = SfdFlags::SFD_NONBLOCK | SfdFlags::SFD_CLOEXEC;
    let signals = SignalFd::with_flags(&mask, flags).map_err(|e| io_err("signalfd")(e.into()))?;
    let (ours, theirs) = Channel::pair().map_err(io_err("socketpair"))?;
    let flags = super::support::SANDBOX_NAMESPACES;
    // TEST-ONLY (debug builds): `CORDON_TEST_WEAKEN=namespaces` takes the
    // degraded path as if clone had failed.
    let clone = if weaken::off("namespaces") {
        Err(io::Error::other("weakened for a test"))
    } else {
        sys::clone_fork(flags)
    };
    let forked = match clone {
        Ok(f) => f,
        Err(e) if policy.degraded_ok(Layer::Namespaces) || weaken::off("namespaces") => {
            warn_degraded(
                Layer::Namespaces,
                &format!("clone: {e}; only Landlock and seccomp confine the command"),
            );
            plan.namespaces = false;
            sys::fork().map_err(io_err("fork"))?
        }
        Err(e) => return Err(namespaces_error(&e.to_string())),
    };
    match forked {
        Forked::Child => {
            drop(ours);
            drop(signals);
            init::run(plan, theirs)
        }
        Forked::Parent(pid) => Ok(Sandbox {
            init: Init { pid, reaped: false },
            channel: ours,
            signals,
            local_ports: policy.network.local_ports.as_ref().map(|only| {
                let ports: Vec<String> = only.value.iter().map(u16::to_string).collect();
                (
                    format!("local_ports = [{}]", ports.join(", ")),
                    only.source.to_string(),
                )
            }),
        }),
    }
}

impl Sandbox {
    /// Maps ids, lets init go, joins it to the cgroup, and waits until
    /// every layer is in place.
    pub(super) fn start(
        &self,
        view: &FileView,
        limits: &LimitPlan,
        namespaces: bool,
    ) -> Result<Handover, SandboxError> {
        let pid = self.init.pid;
        if namespaces {
            write_id_maps(pid).map_err(|e| SandboxError::Layer {
                layer: Layer::Namespaces,
                what: format!("writing the uid/gid map: {e}"),
                fix: support::userns_fix(),
            })?;
        }
        self.channel
            .send(&Message::Go, &[])
            .map_err(io_err("starting init"))?;
        // The host paths' Landlock rules, added while init builds the view;
        // it enforces the ruleset only once told they are in.
        let (attached, ruleset) = match self.next_report()? {
            (Message::Ruleset { attached }, mut fds) => (attached, fds.pop()),
            (other, _) => return Err(unexpected(&other)),
        };
        let failed = match (attached, ruleset) {
            (true, Some(ruleset)) => {
                landlock::add_host_rules(ruleset.as_fd(), view, files::mount_view_on(namespaces))
                    .err()
                    .map(|e| e.to_string())
            }
            (true, None) => Some("init's ruleset did not arrive".into()),
            (false, _) => None,
        };
        self.channel
            .send(&Message::Ruled { failed }, &[])
            .map_err(io_err("starting init"))?;
        // Joining the cgroup waits in the kernel for an RCU grace period
        // (milliseconds, more on a loaded host): init builds the sandbox
        // meanwhile, and starts nothing of the command's until told it is in.
        limits.attach(pid)?;
        self.channel
            .send(&Message::Limited, &[])
            .map_err(io_err("starting init"))?;
        match self.next_report()? {
            (
                Message::Ready {
                    pty,
                    host_ports,
                    sockets,
                },
                mut fds,
            ) => {
                let pty_master = if pty { fds.pop() } else { None };
                let sockets = if sockets {
                    fds.pop().map(Channel::from)
                } else {
                    None
                };
                let proxy = fds.len().min(2);
                let host_fds = fds.split_off(proxy);
                if host_fds.len() != host_ports.len() {
                    return Err(io_err("starting init")(io::Error::other(
                        "init handed over the wrong number of host port listeners",
                    )));
                }
                Ok(Handover {
                    listeners: fds,
                    host_listeners: host_ports.into_iter().zip(host_fds).collect(),
                    sockets,
                    pty_master,
                })
            }
            (other, _) => Err(unexpected(&other)),
        }
    }

    /// Init's next report during set-up: a degraded layer is warned about
    /// and skipped, a failed one (or init's end) is the error.
    fn next_report(&self) -> Result<(Message, Vec<OwnedFd>), SandboxError> {
        loop {
            match self.channel.recv() {
                Ok((report @ (Message::Ruleset { .. } | Message::Ready { .. }), fds)) => {
                    return Ok((report, fds))
                }
                Ok((Message::Degraded { layer, what }, _)) => warn_degraded(layer, &what),
                Ok((Message::Failed { layer, what, fix }, _)) => {
                    return Err(SandboxError::Layer {
                        layer,
                        fix: fix.unwrap_or_else(|| support::fix_for(layer)),
                        what,
                    })
                }
                Ok((
                    Message::Go
                    | Message::NewSocket
                    | Message::Socket { .. }
                    | Message::Limited
                    | Message::Ruled { .. }
                    | Message::SocketRefused { .. }
                    | Message::SyscallRefused { .. }
                    | Message::CreateRefused { .. }
                    | Message::PrivilegeModeRefused { .. }
                    | Message::WriteRefused { .. }
                    | Message::LocalPortRefused(_),
                    _,
                )) => {}
                Err(e) => {
                    return Err(SandboxError::Layer {
                        layer: Layer::Namespaces,
                        what: format!("the sandbox's init ended during set-up ({e})"),
                        fix: support::userns_fix(),
                    })
                }
            }
        }
    }

    /// Forwards signals, relays the terminal, enforces the timeout, records
    /// init's reports, and returns the exit code once init is gone (128+N
    /// if it died of signal N).
    pub(super) fn wait(
        mut self,
        mut relay: Option<tty::Relay>,
        deadline: Option<(Instant, Duration)>,
        recorder: Recorder<'_>,
        mut prompt: Option<ask_prompt::Prompt>,
    ) -> i32 {
        let mut reports = Some(Reports {
            recorder,
            local_ports: self.local_ports.take(),
            hinted: Vec::new(),
        });
        loop {
            let timeout = match deadline {
                Some((at, limit)) => {
                    let left = at.saturating_duration_since(Instant::now());
                    if left.is_zero() {
                        self.init.kill();
                        if let Some(p) = prompt.as_mut() {
                            p.before_last_output();
                        }
                        if let Some(r) = relay.as_mut() {
                            r.drain();
                        }
                        drop(relay);
                        crate::say!(
                            "cordon: timed out after {}s; the sandbox was killed",
                            limit.as_secs_f64()
                        );
                        return EXIT_TIMEOUT;
                    }
                    PollTimeout::try_from(left.as_millis().min(60_000) as i32 + 1)
                        .unwrap_or(PollTimeout::MAX)
                }
                None => PollTimeout::NONE,
            };
            // A question on screen: its time left bounds the wait.
            let timeout = match prompt.as_ref().and_then(|p| p.time_left()) {
                Some(left) => {
                    let left = PollTimeout::try_from(left.as_millis().min(60_000) as i32 + 1)
                        .unwrap_or(PollTimeout::MAX);
                    if timeout == PollTimeout::NONE {
                        left
                    } else {
                        timeout.min(left)
                    }
                }
                None => timeout,
            };
            // While a question is on screen the relay pauses: the key is
            // the prompt's, and the command's output waits in its pty.
            let answering = prompt.as_ref().and_then(|p| p.answering());
            let is_answering = answering.is_some();
            let relay_wants = match (relay.as_ref(), answering) {
                (Some(r), None) => r.wanted(),
                _ => Vec::new(),
            };
            let ends: Vec<tty::End> = relay_wants.iter().map(|(end, _, _)| *end).collect();
            let mut fds = vec![PollFd::new(self.signals.as_fd(), PollFlags::POLLIN)];
            fds.extend(
                relay_wants
                    .into_iter()
                    .map(|(_, fd, events)| PollFd::new(fd, events)),
            );
            let reports_at = fds.len();
            if reports.is_some() {
                fds.push(PollFd::new(self.channel.as_fd(), PollFlags::POLLIN));
            }
            let prompt_at = fds.len();
            if let Some(p) = prompt.as_ref() {
                fds.push(PollFd::new(p.wake_fd(), PollFlags::POLLIN));
                if let Some(tty) = answering {
                    fds.push(PollFd::new(tty, PollFlags::POLLIN));
                }
            }
            if poll(&mut fds, timeout).is_err() {
                continue;
            }
            let ready: Vec<bool> = fds
                .iter()
                .map(|f| f.revents().is_some_and(|r| !r.is_empty()))
                .collect();
            drop(fds);
            if let (Some(r), Some(true)) = (reports.as_mut(), ready.get(reports_at)) {
                if !record_report(&self.channel, r) {
                    reports = None;
                }
            }
            if let Some(p) = prompt.as_mut() {
                let answered = is_answering && ready.get(prompt_at + 1) == Some(&true);
                if answered {
                    p.key();
                }
                if ready.get(prompt_at) == Some(&true) {
                    p.woken();
                }
                p.tick();
            }
            // A question shown in this pass pauses the relay now: what the
            // poll found ready waits until it is answered.
            let shown_now =
                !is_answering && prompt.as_ref().is_some_and(|p| p.answering().is_some());
            if let (Some(r), false) = (relay.as_mut(), shown_now) {
                for (i, end) in ends.iter().enumerate() {
                    if ready[1 + i] {
                        r.on_ready(*end);
                    }
                }
            }
            if !ready[0] {
                continue;
            }
            while let Ok(Some(info)) = self.signals.read_signal() {
                let signo = info.ssi_signo as i32;
                if signo == Signal::SIGCHLD as i32 {
                    continue;
                }
                match (Signal::try_from(signo), relay.as_ref()) {
                    // With a pty, the window size travels through the pty.
                    (Ok(Signal::SIGWINCH), Some(r)) => r.sync_window_size(),
                    (Ok(sig), _) => {
                        let _ = kill(self.init.pid, sig);
                    }
                    _ => {}
                }
            }
            let code = match waitpid(self.init.pid, Some(WaitPidFlag::WNOHANG)) {
                Ok(WaitStatus::Exited(_, code)) => code,
                Ok(WaitStatus::Signaled(_, sig, _)) => {
                    // Init ends by exiting, with the command's status; a
                    // signal that ended init itself (a crash, the kernel's
                    // OOM killer, a kill from outside) is said, not passed
                    // off as the command's.
                    crate::say!(
                        "cordon: the sandbox's init died of {}; the command's own status is unknown",
                        sig.as_str()
                    );
                    128 + sig as i32
                }
                _ => continue,
            };
            self.init.reaped = true;
            if let Some(p) = prompt.as_mut() {
                p.before_last_output();
            }
            if let Some(r) = relay.as_mut() {
                r.drain();
            }
            // Init is gone, so the channel ends after what it still holds.
            if let Some(mut r) = reports {
                while record_report(&self.channel, &mut r) {}
            }
            return code;
        }
    }
}

/// Init said something out of the set-up's order: it is not the init this
/// supervisor started, or it is broken; either way nothing runs.
fn unexpected(report: &Message) -> SandboxError {
    SandboxError::Layer {
        layer: Layer::Namespaces,
        what: format!("the sandbox's init reported {report:?} out of turn during set-up"),
        fix: support::userns_fix(),
    }
}

/// The caller's own uid and gid, and no other, inside.
fn write_id_maps(pid: Pid) -> io::Result<()> {
    let uid = nix::unistd::geteuid();
    let gid = nix::unistd::getegid();
    let proc = PathBuf::from(format!("/proc/{pid}"));
    std::fs::write(proc.join("setgroups"), "deny")?;
    std::fs::write(proc.join("uid_map"), format!("{uid} {uid} 1\n"))?;
    std::fs::write(proc.join("gid_map"), format!("{gid} {gid} 1\n"))?;
    Ok(())
}

/// Where init's reports go while the command runs.
#[derive(Clone, Copy)]
pub(super) struct Recorder<'a> {
    /// Every report, as an audit event.
    pub auditor: &'a Auditor,
    /// `cordon learn`: the writes the kernel refused, for the learned policy.
    pub learned: Option<&'a crate::net::learn::Learned>,
    /// The caller's homes (the policy's): what a refused write's fix may
    /// suggest depends on where it lies against them.
    pub homes: &'a [PathBuf],
}

/// What recording init's reports keeps while the command runs.
struct Reports<'a> {
    recorder: Recorder<'a>,
    /// `network.local_ports` in force, as written, and its source.
    local_ports: Option<(String, String)>,
    /// The local ports (and whether for a bind) already explained on
    /// stderr: once each.
    hinted: Vec<(u16, bool)>,
}

/// Records one report from init; false once init has closed the channel.
fn record_report(channel: &Channel, reports: &mut Reports<'_>) -> bool {
    let Recorder {
        auditor,
        learned,
        homes,
    } = reports.recorder;
    match channel.recv() {
        Ok((Message::SocketRefused { path }, _)) => {
            let fix = socket_fix(&path);
            let mut event = builtin_denial(
                audit::Door::Network,
                path,
                "host UNIX sockets are unreachable",
                "a host socket, not one bound inside the sandbox",
                fix,
            );
            event.proto = Some(audit::Proto::Unix);
            auditor.record(event);
            true
        }
        Ok((Message::CreateRefused { path, why }, _)) => {
            auditor.record(builtin_denial(
                audit::Door::Files,
                path,
                "names that run code later outside the sandbox cannot be created",
                &why.reason(),
                why.fix(),
            ));
            true
        }
        Ok((
            Message::WriteRefused {
                path,
                in_writable_area,
                read_only,
            },
            _,
        )) => {
            let (reason, fix) = write_refusal(&path, in_writable_area, read_only, homes);
            if let (Some(learned), false) = (learned, in_writable_area) {
                learned.note_write(&path);
            }
            auditor.record(builtin_denial(
                audit::Door::Files,
                path,
                "writes only in the writable areas",
                &reason,
                fix,
            ));
            true
        }
        Ok((Message::PrivilegeModeRefused { syscall }, _)) => {
            auditor.record(builtin_denial(
                audit::Door::Files,
                syscall,
                "no set-user-ID or set-group-ID bits on files the sandbox writes",
                "refused with EPERM: a file left on the host with them would run with its owner's privileges",
                "nothing allows it: files the sandbox writes never carry those bits".into(),
            ));
            true
        }
        Ok((Message::LocalPortRefused(refusal), _)) => {
            let (reason, fix) = local_port_reason(&refusal);
            // A program that meets this sees only ECONNREFUSED or EACCES:
            // the first time for each port, stderr says why.
            let key = (refusal.port, refusal.bind);
            if !reports.hinted.contains(&key) && reports.hinted.len() < MAX_HINTS {
                reports.hinted.push(key);
                crate::say!("cordon: {}: {reason}; {fix}", refusal.address);
            }
            let (rule, source) = match (&reports.local_ports, refusal.unlisted) {
                (Some((rule, source)), true) => (rule.clone(), source.clone()),
                _ => (
                    "the sandbox's loopback is its own".to_string(),
                    Source::Builtin.to_string(),
                ),
            };
            let mut event =
                builtin_denial(audit::Door::Network, refusal.address, &rule, &reason, fix);
            event.source = Some(source);
            event.proto = Some(audit::Proto::Local);
            auditor.record(event);
            true
        }
        Ok((Message::SyscallRefused { syscall }, _)) => {
            auditor.record(builtin_denial(
                audit::Door::Process,
                syscall,
                "seccomp: system calls no sandboxed program needs",
                "refused with EPERM (`cordon explain` lists them)",
                "nothing allows it: the list is built in".into(),
            ));
            true
        }
        Ok(_) => true,
        Err(_) => false,
    }
}

/// What would let the sandbox reach the host socket at `path`, and what
/// that gives away when it is a container engine's.
fn socket_fix(path: &str) -> String {
    let allow = format!(
        "allow with {}",
        crate::policy::keys::UNIX_SOCKETS.about.add_with(path)
    );
    match unix_gate::root_equivalent(std::path::Path::new(path)) {
        Some(danger) => format!("{danger}; only if you mean that, {allow}"),
        None => allow,
    }
}

/// Why a bind or connect on the sandbox's own loopback failed, and the
/// setting that would make it work.
fn local_port_reason(refusal: &LocalPortRefusal) -> (String, String) {
    let (call, port) = (if refusal.bind { "bind" } else { "connect" }, refusal.port);
    if refusal.unlisted {
        let key = &crate::policy::keys::LOCAL_PORTS.about;
        return (
            format!("{call} refused (EACCES): {port} is not among the local ports programs inside may use"),
            format!("add {port} to {} (or [{}] {})", key.flag_or_key(), key.section, key.name),
        );
    }
    let allow = format!(
        "to reach the host's 127.0.0.1:{port}, allow with {}",
        crate::policy::keys::HOST_PORTS
            .about
            .set_with(&port.to_string(), &format!("[{port}]"))
    );
    // As for a host socket: a sandbox that tries the port must not get the
    // flag suggested bare when what listens there gives the host away.
    let fix = match crate::policy::ports::root_equivalent_port(port) {
        Some(danger) => format!("{danger}; only if you mean that, {allow}"),
        None => allow,
    };
    (
        format!("nothing listens on port {port} inside the sandbox, whose loopback is its own"),
        fix,
    )
}

/// Local ports explained on stderr at most, per run.
const MAX_HINTS: usize = 16;

/// Why the kernel refused to make `path`, and what would allow it.
/// `home`: the caller's, below which alone a directory is suggested (as
/// learn mode does): elsewhere are system directories, where what is left
/// may run later for every user.
fn write_refusal(
    path: &str,
    in_writable_area: bool,
    read_only: bool,
    homes: &[PathBuf],
) -> (String, String) {
    // Below the caller's own home ($HOME) only is a directory suggested.
    let home = homes.first().map(PathBuf::as_path);
    if in_writable_area {
        return (
            "kept read-only inside a writable area (a protected name, a --deny-write path, or a directory cordon keeps in place)".into(),
            "nothing allows it inside the sandbox but removing the --deny-write rule that covers it, if one does (`cordon explain` lists them)".into(),
        );
    }
    let reason = if read_only {
        "read-only in the sandbox: outside the writable areas (the project, /tmp, --allow-write and cache paths)"
    } else {
        "permission denied: outside the writable areas, or the file's own permissions"
    };
    let dir = Path::new(path).parent().unwrap_or(Path::new("/"));
    let fix = if crate::policy::defaults::suggestable_writable(dir, homes) {
        format!(
            "allow with {}; a tool's cache: --cache {} keeps the host's copy unchanged",
            crate::policy::keys::ALLOW_WRITE
                .about
                .add_with(&dir.display().to_string()),
            crate::policy::keys::shell_word(&dir.display().to_string())
        )
    } else if dir == Path::new("/") || home == Some(dir) {
        format!(
            "write in the project or /tmp instead: {} writable would open everything in it; a directory under it can be allowed with {}",
            dir.display(),
            crate::policy::keys::ALLOW_WRITE.about.add_with("DIR")
        )
    } else if let Some((_, place)) = super::files::startup_place_in(dir, homes) {
        // What is left there runs later on the host: the sandbox must not
        // talk the user into the flag that lets it.
        format!(
            "nothing allows it: {} is where a program or a startup file runs later on the host; write in the project or /tmp instead",
            place.display()
        )
    } else {
        format!(
            "write in the project or /tmp instead: {} is outside the home, where what is left may run later on the host; if you mean to, allow a directory of your choosing with {}",
            dir.display(),
            crate::policy::keys::ALLOW_WRITE.about.add_with("DIR")
        )
    };
    (reason.into(), fix)
}

fn builtin_denial(
    door: audit::Door,
    subject: impl Into<String>,
    rule: &str,
    reason: &str,
    fix: String,
) -> audit::Event {
    let mut event = audit::Event::new(door, audit::Kind::Decision, audit::Verdict::Deny, subject);
    event.rule = Some(rule.into());
    event.source = Some(Source::Builtin.to_string());
    event.reason = Some(reason.into());
    event.fix = Some(fix);
    event
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_refused_write_says_what_would_allow_it_and_never_the_home_or_the_root() {
        let home = &[PathBuf::from("/home/u")][..];
        let (why, fix) = write_refusal("/home/u/.cache/tool", false, true, home);
        assert!(why.starts_with("read-only in the sandbox"), "{why}");
        assert!(fix.starts_with("allow with --allow-write /home/u/.cache (or [files] allow_write = [\"/home/u/.cache\"])"), "{fix}");
        let (_, fix) = write_refusal("/home/u/a b/c", false, true, home);
        assert!(fix.contains("--cache '/home/u/a b'"), "{fix}");
        let (why, _) = write_refusal("/home/u/.cache/tool", false, false, home);
        assert!(why.starts_with("permission denied"), "{why}");
        let (_, fix) = write_refusal("/x", false, true, home);
        assert!(
            fix.starts_with("write in the project or /tmp instead"),
            "{fix}"
        );
        let (why, fix) = write_refusal("/p/vendor/x", true, true, home);
        assert!(
            why.starts_with("kept read-only inside a writable area"),
            "{why}"
        );
        assert!(fix.starts_with("nothing allows it"), "{fix}");
        for system in ["/etc/cron.d/x", "/usr/local/bin/x"] {
            let (_, fix) = write_refusal(system, false, true, home);
            assert!(
                fix.starts_with("write in the project or /tmp instead")
                    && !fix.contains("--allow-write /"),
                "{fix}"
            );
        }
    }

    #[test]
    fn a_host_socket_refusal_names_the_flag_and_what_an_engine_socket_gives() {
        assert_eq!(
            socket_fix("/run/user/1000/gnupg/S.gpg-agent"),
            r#"allow with --allow-unix-socket /run/user/1000/gnupg/S.gpg-agent (or [network] allow_unix_sockets = ["/run/user/1000/gnupg/S.gpg-agent"])"#
        );
        assert_eq!(
            socket_fix("/var/run/docker.sock"),
            r#"Docker's socket: whoever reaches it can start a privileged container, i.e. is root on the host; only if you mean that, allow with --allow-unix-socket /var/run/docker.sock (or [network] allow_unix_sockets = ["/var/run/docker.sock"])"#
        );
        // A path a shell would split is quoted in the flag, and is a
        // valid TOML string.
        assert_eq!(
            socket_fix("/tmp/a b\"c.sock"),
            r#"allow with --allow-unix-socket '/tmp/a b"c.sock' (or [network] allow_unix_sockets = ['/tmp/a b"c.sock'])"#
        );
    }

    #[test]
    fn init_dropped_before_it_exited_is_killed_and_reaped() {
        let mut child = std::process::Command::new("sleep")
            .arg("600")
            .spawn()
            .unwrap();
        let pid = Pid::from_raw(child.id() as i32);
        drop(Init { pid, reaped: false });
        // Reaped already: the child's own wait finds nothing to wait for.
        let waited = child.try_wait();
        let reaped = matches!(&waited, Err(e) if e.raw_os_error() == Some(libc::ECHILD));
        if !reaped {
            // Still running: end it, so a failing run leaves nothing behind.
            let _ = child.kill();
            let _ = child.wait();
        }
        assert!(reaped, "{waited:?}");
        assert!(!std::path::Path::new(&format!("/proc/{pid}")).exists());
    }
}
