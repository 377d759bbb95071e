//! The seccomp layer: system calls no sandboxed agent needs and that widen
//! the kernel's attack surface or reach past the other layers.
//!
//! Filters are compiled by `libseccomp` from the rule tables below; no BPF
//! is written by hand. libseccomp also refuses every system call made
//! through another ABI (x32, i386 `int 0x80`), whose numbers the rules would
//! not match.
//!
//! Two filters stack. Init installs [`init_filter`] on itself, so it binds
//! everything inside (little: it binds init too). The command gets
//! [`command_filter`] on top, before exec: the deny list, what init itself needs to serve the UNIX socket gate
//! (reading a caller's memory, taking a copy of its socket), and the socket
//! calls that can name a path, handed to that gate
//! (`crate::net::unix_gate`), which also answers and records the refusals.

use std::os::fd::{AsFd, AsRawFd, OwnedFd};

use libseccomp::{
    ScmpAction, ScmpArgCompare, ScmpCompareOp, ScmpFilterContext, ScmpNotifReq, ScmpNotifResp,
    ScmpNotifRespFlags, ScmpSyscall,
};

/// Why a seccomp filter could not be built, installed or served.
#[derive(Debug, thiserror::Error)]
pub enum SeccompError {
    #[error("building the filter: {0}")]
    Build(libseccomp::error::SeccompError),
    #[error("installing the filter: {0}")]
    Install(libseccomp::error::SeccompError),
    #[error("user notification (SECCOMP_RET_USER_NOTIF) is not supported: {0}")]
    Notify(libseccomp::error::SeccompError),
}

/// The deny list: refused to the command (answered `EPERM` by the gate,
/// which records each) and to init's own threads once the command runs
/// ([`init_threads_filter`]).
const DENIED: &[&str] = &[
    // tracing other processes
    "ptrace",
    "kcmp",
    // io_uring bypasses seccomp for the operations it performs
    "io_uring_setup",
    "io_uring_enter",
    "io_uring_register",
    // kernel keyrings hold other sessions' secrets
    "keyctl",
    "add_key",
    "request_key",
    // kernel attack surface
    "bpf",
    "perf_event_open",
    "userfaultfd",
    "kexec_load",
    "kexec_file_load",
    "init_module",
    "finit_module",
    "delete_module",
    "open_by_handle_at",
    "name_to_handle_at",
    "lookup_dcookie",
    "fanotify_init",
    "quotactl",
    "acct",
    "swapon",
    "swapoff",
    "reboot",
    "syslog",
    "vhangup",
    "settimeofday",
    "clock_settime",
    "clock_adjtime",
    "adjtimex",
    // the mount family: the view is fixed once built
    "mount",
    "umount2",
    "pivot_root",
    "chroot",
    "move_mount",
    "open_tree",
    "fsopen",
    "fsconfig",
    "fsmount",
    "fspick",
    "mount_setattr",
    // namespaces: no new user namespace (the door to fresh capabilities), no joining
    "setns",
];

/// Denied to the command only: init uses them to serve the socket gate.
const DENIED_TO_COMMAND: &[&str] = &["process_vm_readv", "process_vm_writev", "pidfd_getfd"];

/// Socket calls that may name a UNIX socket path, handed to the gate.
/// `sendto` only when it carries an address: without one it goes where the
/// socket is already connected, which the gate checked.
const GATED: &[&str] = &["connect", "sendmsg", "sendmmsg"];

// The ioctl request type differs between targets (c_ulong or c_int).
#[allow(clippy::unnecessary_cast)]
const TIOCSTI: u64 = libc::TIOCSTI as u64;
const TIOCLINUX: u64 = 0x541C;
const NEW_NAMESPACES: u64 = (libc::CLONE_NEWUSER
    | libc::CLONE_NEWNS
    | libc::CLONE_NEWPID
    | libc::CLONE_NEWNET
    | libc::CLONE_NEWIPC
    | libc::CLONE_NEWUTS
    | libc::CLONE_NEWCGROUP) as u64;

/// Socket families the sandbox may create, in ascending order.
const SOCKET_FAMILIES: &[u64] = &[
    libc::AF_UNIX as u64,
    libc::AF_INET as u64,
    libc::AF_INET6 as u64,
];

/// The kernel reads these arguments as 32-bit ints: compare only those
/// bits, so garbage in the upper half cannot slip past an equality test.
const INT_MASK: u64 = 0xffff_ffff;

/// Names of everything the filters deny, for `doctor` and `explain`.
pub fn denied_summary() -> Vec<String> {
    let mut names: Vec<String> = DENIED
        .iter()
        .chain(DENIED_TO_COMMAND)
        .map(|n| n.to_string())
        .collect();
    names.push("clone/unshare with namespace flags".into());
    names.push("clone3 (ENOSYS, so libc falls back to clone)".into());
    names.push("ioctl TIOCSTI, TIOCLINUX".into());
    names.push("socket/socketpair outside AF_UNIX, AF_INET, AF_INET6 (EAFNOSUPPORT)".into());
    names.push("system calls of other ABIs (x32, i386)".into());
    names.push(format!(
        "{} and sendto with an address: checked by the UNIX socket gate",
        GATED.join(", ")
    ));
    names
}

fn syscall(name: &str) -> Result<ScmpSyscall, SeccompError> {
    ScmpSyscall::from_name(name).map_err(SeccompError::Build)
}

fn new_filter() -> Result<ScmpFilterContext, SeccompError> {
    let mut ctx = ScmpFilterContext::new(ScmpAction::Allow).map_err(SeccompError::Build)?;
    // Another ABI's system calls do not exist here, as on a kernel
    // built without them.
    ctx.set_act_badarch(ScmpAction::Errno(libc::ENOSYS))
        .map_err(SeccompError::Build)?;
    Ok(ctx)
}

fn deny(
    ctx: &mut ScmpFilterContext,
    action: ScmpAction,
    name: &str,
    conditions: &[ScmpArgCompare],
) -> Result<(), SeccompError> {
    let nr = syscall(name)?;
    if conditions.is_empty() {
        ctx.add_rule(action, nr)
    } else {
        ctx.add_rule_conditional(action, nr, conditions)
    }
    .map(|_| ())
    .map_err(SeccompError::Build)
}

/// The filter init installs on itself before starting the command: what
/// init and everything inside share.
pub fn init_filter() -> Result<ScmpFilterContext, SeccompError> {
    let mut ctx = new_filter()?;
    // A family outside the list. libseccomp takes one comparison per
    // argument in a rule, so the gaps between allowed families are spelled
    // out, one rule each; values beyond the int range fall in the last.
    let mut other_families: Vec<ScmpArgCompare> = Vec::new();
    let mut next = 0u64;
    for &family in SOCKET_FAMILIES {
        other_families
            .extend((next..family).map(|f| ScmpArgCompare::new(0, ScmpCompareOp::Equal, f)));
        next = family + 1;
    }
    other_families.push(ScmpArgCompare::new(0, ScmpCompareOp::Greater, next - 1));
    let eafnosupport = ScmpAction::Errno(libc::EAFNOSUPPORT);
    for name in ["socket", "socketpair"] {
        for family in &other_families {
            deny(&mut ctx, eafnosupport, name, std::slice::from_ref(family))?;
        }
    }
    // clone3 takes its flags in memory, out of a filter's reach; ENOSYS
    // makes libc fall back to clone, whose flags the command's rules see.
    deny(&mut ctx, ScmpAction::Errno(libc::ENOSYS), "clone3", &[])?;
    Ok(ctx)
}

/// The filter the command gets on top of init's, before exec. With the
/// UNIX socket gate (`gated`), its refusals stop at the gate's listener
/// too, which answers `EPERM` and records each: a chain of filters may
/// have one listener only, and an errno from any filter would win over
/// the notification. Without the gate, they are plain `EPERM`.
pub fn command_filter(gated: bool) -> Result<ScmpFilterContext, SeccompError> {
    let mut ctx = new_filter()?;
    for name in DENIED_TO_COMMAND {
        deny(&mut ctx, ScmpAction::Errno(libc::EPERM), name, &[])?;
    }
    let refuse = if gated {
        ScmpAction::Notify
    } else {
        ScmpAction::Errno(libc::EPERM)
    };
    deny_list(&mut ctx, refuse)?;
    if !gated {
        return Ok(ctx);
    }
    for name in GATED {
        deny(&mut ctx, ScmpAction::Notify, name, &[])?;
    }
    let has_address = ScmpArgCompare::new(4, ScmpCompareOp::NotEqual, 0);
    deny(&mut ctx, ScmpAction::Notify, "sendto", &[has_address])?;
    // Without this, a signal during a gated call makes the kernel restart
    // it after the gate already acted. Needs Linux 5.19 and libseccomp 2.6:
    // on older ones the gate still holds, a restarted call just fails.
    let _ = ctx.set_ctl_waitkill(true);
    Ok(ctx)
}

/// The deny list for init's own threads (its main thread and the gate's),
/// installed after the command is forked, so it never stacks on the
/// command's chain: init, which reads hostile input at the gate, gives up
/// what it no longer needs.
pub fn init_threads_filter() -> Result<ScmpFilterContext, SeccompError> {
    let mut ctx = new_filter()?;
    deny_list(&mut ctx, ScmpAction::Errno(libc::EPERM))?;
    Ok(ctx)
}

fn deny_list(ctx: &mut ScmpFilterContext, action: ScmpAction) -> Result<(), SeccompError> {
    for name in DENIED {
        deny(ctx, action, name, &[])?;
    }
    // Any namespace bit set in the flags matches: one rule per bit, since
    // the rules of a syscall are alternatives.
    for bit in 0..64 {
        let flag = 1u64 << bit;
        if NEW_NAMESPACES & flag != 0 {
            let has_flag = ScmpArgCompare::new(0, ScmpCompareOp::MaskedEqual(flag), flag);
            deny(ctx, action, "unshare", &[has_flag])?;
            deny(ctx, action, "clone", &[has_flag])?;
        }
    }
    for request in [TIOCSTI, TIOCLINUX] {
        let is = ScmpArgCompare::new(1, ScmpCompareOp::MaskedEqual(INT_MASK), request);
        deny(ctx, action, "ioctl", &[is])?;
    }
    Ok(())
}

/// Whether no process is left under the listener's filter: then every
/// receive fails at once, and whoever serves it should stop.
pub fn hung_up(listener: &OwnedFd) -> bool {
    use nix::poll::{poll, PollFd, PollFlags, PollTimeout};
    let mut fds = [PollFd::new(listener.as_fd(), PollFlags::POLLIN)];
    poll(&mut fds, PollTimeout::ZERO).is_ok()
        && fds[0]
            .revents()
            .is_some_and(|r| r.intersects(PollFlags::POLLHUP | PollFlags::POLLERR))
}

/// The name of system call `nr` (native ABI).
pub fn syscall_name(nr: i32) -> String {
    ScmpSyscall::from(nr)
        .get_name()
        .unwrap_or_else(|_| format!("syscall {nr}"))
}

/// Whether this kernel can run the UNIX socket gate: seccomp user
/// notification with `NOTIF_ID_VALID` (libseccomp API level 6, Linux 5.5)
/// and `pidfd_getfd` (Linux 5.6).
pub fn gate_support() -> Result<(), String> {
    let level = libseccomp::get_api();
    if level < 6 {
        return Err(format!(
            "seccomp user notification is missing (libseccomp API level {level}, need 6: Linux 5.5)"
        ));
    }
    let me = nix::unistd::getpid();
    super::sys::pidfd_open(me)
        .and_then(|pidfd| super::sys::pidfd_getfd(pidfd.as_fd(), 0))
        .map(drop)
        .map_err(|e| format!("pidfd_getfd (Linux 5.6): {e}"))
}

/// Installs a filter on this thread (inherited across fork and exec).
/// Requires `no_new_privs`.
pub fn install(ctx: &ScmpFilterContext) -> Result<(), SeccompError> {
    ctx.load().map_err(SeccompError::Install)
}

/// The listening end of a loaded filter with notify rules.
pub fn listener(ctx: &ScmpFilterContext) -> Result<OwnedFd, SeccompError> {
    let fd = ctx.get_notify_fd().map_err(SeccompError::Notify)?;
    Ok(super::sys::own_fd(fd))
}

/// A system call a gated process is waiting in.
#[derive(Debug, Clone, Copy)]
pub struct Notification {
    /// Identifies the call when answering.
    pub id: u64,
    /// The calling thread, in the sandbox's pid namespace.
    pub tid: u32,
    /// The system call's name, as far as the gate cares.
    pub call: Gated,
    /// The system call's number (native ABI: the filters refuse others).
    pub nr: i32,
    /// Its raw arguments.
    pub args: [u64; 6],
}

/// The gated system calls.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Gated {
    Connect,
    SendTo,
    SendMsg,
    SendMmsg,
    /// A call on the deny list: refused with EPERM, and recorded.
    Other,
}

/// Waits for the next gated call.
pub fn receive(listener: &OwnedFd) -> Result<Notification, SeccompError> {
    let req = ScmpNotifReq::receive(listener.as_raw_fd()).map_err(SeccompError::Notify)?;
    // Native ABI only: the filters kill any other.
    let call = match libc::c_long::from(req.data.syscall.as_raw_syscall()) {
        libc::SYS_connect => Gated::Connect,
        libc::SYS_sendto => Gated::SendTo,
        libc::SYS_sendmsg => Gated::SendMsg,
        libc::SYS_sendmmsg => Gated::SendMmsg,
        _ => Gated::Other,
    };
    Ok(Notification {
        id: req.id,
        tid: req.pid,
        call,
        nr: req.data.syscall.as_raw_syscall(),
        args: req.data.args,
    })
}

/// Is the call still waiting (so its pid and memory are still the caller's)?
pub fn still_waiting(listener: &OwnedFd, id: u64) -> bool {
    libseccomp::notify_id_valid(listener.as_raw_fd(), id).is_ok()
}

/// Answers a gated call: its return value, or an errno.
pub fn answer(listener: &OwnedFd, id: u64, result: Result<i64, i32>) {
    let resp = match result {
        Ok(val) => ScmpNotifResp::new_val(id, val, ScmpNotifRespFlags::empty()),
        Err(errno) => ScmpNotifResp::new_error(id, -errno.abs(), ScmpNotifRespFlags::empty()),
    };
    // The caller may have died meanwhile; nothing to do then.
    let _ = resp.respond(listener.as_raw_fd());
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_rule_compiles() {
        init_filter().expect("init filter");
        command_filter(true).expect("gated command filter");
        command_filter(false).expect("ungated command filter");
        init_threads_filter().expect("init threads filter");
    }

    #[test]
    fn summary_names_the_gate_and_other_abis() {
        let s = denied_summary().join("\n");
        assert!(s.contains("UNIX socket gate"), "{s}");
        assert!(s.contains("x32"), "{s}");
        assert!(s.contains("pidfd_getfd"), "{s}");
    }
}
