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
//! (`crate::sandbox::unix_gate`), which also answers and records the refusals.
//!
//! libseccomp compiles every filter in the supervisor ([`Compiling`]),
//! while the policy loads, before the sandbox exists: init inherits the
//! programs and only loads them, so no compiling stands in start-up's
//! path inside the sandbox, where the cores are busy building the view.

use std::io::Read;
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
    #[error("exporting the compiled filter: {0}")]
    Export(std::io::Error),
    #[error("installing the filter: {0}")]
    Install(std::io::Error),
    #[error("the thread compiling the filters panicked")]
    Panicked,
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
/// `bind` too: binding a UNIX socket makes a name in the file system,
/// which the file creation gate checks like any other.
const GATED: &[&str] = &["connect", "sendmsg", "sendmmsg", "bind"];

/// Calls that create a name in the file system, handed to the gate
/// (`crate::sandbox::create_gate`), which refuses the names that run code
/// later outside the sandbox and makes the others itself. `open` and
/// `openat` only with `O_CREAT` (without it they create nothing).
const CREATING: &[&str] = &[
    "creat",
    "mkdir",
    "mkdirat",
    "mknod",
    "mknodat",
    "link",
    "linkat",
    "symlink",
    "symlinkat",
    "rename",
    "renameat",
    "renameat2",
];

/// Calls whose mode argument can carry set-user-ID or set-group-ID bits,
/// with the index of that argument: a file the sandbox leaves on the host
/// with those bits would run with its owner's privileges for anyone later.
/// (The creating ones, `open`/`openat`/`creat`/`mknod`/`mknodat`, are
/// checked by the gate, which sees every call of theirs that creates.)
const MODE_SETTING: &[(&str, u32)] = &[
    ("chmod", 1),
    ("fchmod", 1),
    ("fchmodat", 2),
    ("fchmodat2", 2),
];

/// The set-user-ID and set-group-ID bits, each refused in a mode.
const PRIVILEGE_BITS: [u64; 2] = [libc::S_ISUID as u64, libc::S_ISGID as u64];

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
/// `CLONE_NEWTIME`: a namespace flag for `unshare` (and `clone3`, refused
/// whole) only; in `clone`'s flags the same bit is part of the exit signal.
const NEW_TIME_NAMESPACE: u64 = 0x80;

/// Socket families the sandbox may create, in ascending order.
const SOCKET_FAMILIES: &[u64] = &[
    libc::AF_UNIX as u64,
    libc::AF_INET as u64,
    libc::AF_INET6 as u64,
];

/// `O_TMPFILE` without the `O_DIRECTORY` bit it includes: the bit that
/// tells it from a plain directory open.
const TMPFILE: u64 = (libc::O_TMPFILE & !libc::O_DIRECTORY) as u64;

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
    names.push(format!(
        "{}, open/openat with O_CREAT: checked by the file creation gate (names that run code later are refused)",
        CREATING.join(", ")
    ));
    names.push(format!(
        "{} (and creating calls) with a set-user-ID or set-group-ID bit",
        MODE_SETTING
            .iter()
            .map(|(n, _)| *n)
            .collect::<Vec<_>>()
            .join(", ")
    ));
    names.push("openat2 (ENOSYS: its flags are in memory, out of a filter's reach; libc falls back to openat)".into());
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
    // openat2 takes its flags and mode in memory: a filter cannot see
    // O_CREAT or a set-user-ID bit there. ENOSYS makes callers fall back.
    deny(&mut ctx, ScmpAction::Errno(libc::ENOSYS), "openat2", &[])?;
    for (name, arg) in MODE_SETTING {
        for bit in PRIVILEGE_BITS {
            let has_bit = ScmpArgCompare::new(*arg, ScmpCompareOp::MaskedEqual(bit), bit);
            deny(&mut ctx, refuse, name, &[has_bit])?;
        }
    }
    if !gated {
        // Without the gate the creating calls run unchecked, but still never
        // with a privilege bit: O_TMPFILE too, whose file a later link names.
        for (name, flags_arg, mode_arg) in [("open", 1, 2), ("openat", 2, 3)] {
            for flag in [libc::O_CREAT as u64, TMPFILE] {
                for bit in PRIVILEGE_BITS {
                    let makes =
                        ScmpArgCompare::new(flags_arg, ScmpCompareOp::MaskedEqual(flag), flag);
                    let has_bit =
                        ScmpArgCompare::new(mode_arg, ScmpCompareOp::MaskedEqual(bit), bit);
                    deny(&mut ctx, refuse, name, &[makes, has_bit])?;
                }
            }
        }
        for (name, mode_arg) in [("creat", 1), ("mknod", 1), ("mknodat", 2)] {
            for bit in PRIVILEGE_BITS {
                let has_bit = ScmpArgCompare::new(mode_arg, ScmpCompareOp::MaskedEqual(bit), bit);
                deny(&mut ctx, refuse, name, &[has_bit])?;
            }
        }
        return Ok(ctx);
    }
    for name in GATED.iter().chain(CREATING) {
        deny(&mut ctx, ScmpAction::Notify, name, &[])?;
    }
    // open/openat: every call that may create a name, and O_TMPFILE with a
    // privilege bit (its file gets a name later, by a gated link).
    for (name, flags_arg, mode_arg) in [("open", 1, 2), ("openat", 2, 3)] {
        let creat = libc::O_CREAT as u64;
        let creates = ScmpArgCompare::new(flags_arg, ScmpCompareOp::MaskedEqual(creat), creat);
        deny(&mut ctx, ScmpAction::Notify, name, &[creates])?;
        for bit in PRIVILEGE_BITS {
            let tmpfile =
                ScmpArgCompare::new(flags_arg, ScmpCompareOp::MaskedEqual(TMPFILE), TMPFILE);
            let has_bit = ScmpArgCompare::new(mode_arg, ScmpCompareOp::MaskedEqual(bit), bit);
            deny(&mut ctx, ScmpAction::Notify, name, &[tmpfile, has_bit])?;
        }
    }
    let has_address = ScmpArgCompare::new(4, ScmpCompareOp::NotEqual, 0);
    deny(&mut ctx, ScmpAction::Notify, "sendto", &[has_address])?;
    // What the gate needs to see to keep its callers' umasks: every call
    // that changes one, and every call that makes a thread whose umask is
    // its own (see `crate::sandbox::umask`).
    deny(&mut ctx, ScmpAction::Notify, "umask", &[])?;
    let fs = libc::CLONE_FS as u64;
    let own_fs = ScmpArgCompare::new(0, ScmpCompareOp::MaskedEqual(fs), fs);
    deny(&mut ctx, ScmpAction::Notify, "unshare", &[own_fs])?;
    let thread = libc::CLONE_THREAD as u64;
    let thread_of_its_own_fs =
        ScmpArgCompare::new(0, ScmpCompareOp::MaskedEqual(thread | fs), thread);
    deny(
        &mut ctx,
        ScmpAction::Notify,
        "clone",
        &[thread_of_its_own_fs],
    )?;
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
    let new_time = ScmpArgCompare::new(
        0,
        ScmpCompareOp::MaskedEqual(NEW_TIME_NAMESPACE),
        NEW_TIME_NAMESPACE,
    );
    deny(ctx, action, "unshare", &[new_time])?;
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
    crate::sys::pidfd_open(me)
        .and_then(|pidfd| crate::sys::pidfd_getfd(pidfd.as_fd(), 0))
        .map(drop)
        .map_err(|e| format!("pidfd_getfd (Linux 5.6): {e}"))
}

/// A filter libseccomp compiled to BPF, loaded by another process than
/// the one that built it.
#[derive(Debug, Clone)]
pub struct Program {
    /// libseccomp's export, read into instructions when it is compiled
    /// (in the supervisor), so that loading it only passes it on.
    instructions: Vec<libc::sock_filter>,
    /// The `SECCOMP_FILTER_FLAG_*`s libseccomp's own load would have
    /// passed ([`load_flags`]): the export carries the program only.
    flags: libc::c_ulong,
}

impl Program {
    /// [`init_filter`], compiled.
    pub fn init() -> Result<Program, SeccompError> {
        Program::compile(&init_filter()?, false)
    }

    /// [`command_filter`], compiled.
    pub fn command(gated: bool) -> Result<Program, SeccompError> {
        Program::compile(&command_filter(gated)?, gated)
    }

    /// [`init_threads_filter`], compiled.
    pub fn init_threads() -> Result<Program, SeccompError> {
        Program::compile(&init_threads_filter()?, false)
    }

    fn compile(ctx: &ScmpFilterContext, notifies: bool) -> Result<Program, SeccompError> {
        let (out, into) = nix::unistd::pipe().map_err(|e| SeccompError::Export(e.into()))?;
        // A program is at most 4096 instructions of 8 bytes: it fits in
        // the pipe's buffer, so the export never waits for the read below.
        ctx.export_bpf(&into).map_err(SeccompError::Build)?;
        drop(into);
        let mut bpf = Vec::new();
        std::fs::File::from(out)
            .read_to_end(&mut bpf)
            .map_err(SeccompError::Export)?;
        const INSN: usize = std::mem::size_of::<libc::sock_filter>();
        if bpf.len() % INSN != 0 {
            return Err(SeccompError::Export(std::io::Error::other(format!(
                "{} bytes are no whole number of instructions",
                bpf.len()
            ))));
        }
        let instructions = bpf
            .chunks_exact(INSN)
            .map(|i| libc::sock_filter {
                code: u16::from_ne_bytes([i[0], i[1]]),
                jt: i[2],
                jf: i[3],
                k: u32::from_ne_bytes([i[4], i[5], i[6], i[7]]),
            })
            .collect();
        Ok(Program {
            instructions,
            flags: load_flags(ctx, notifies),
        })
    }

    /// Installs the filter on the calling thread (inherited across fork
    /// and exec); returns the listener of a filter with notify rules.
    /// Requires `no_new_privs`.
    pub fn install(&self) -> Result<Option<OwnedFd>, SeccompError> {
        crate::sys::seccomp_load(&self.instructions, self.flags).map_err(SeccompError::Install)
    }
}

/// The flags loading `ctx` takes, as libseccomp's own load sets them from
/// its attributes: a listener for notify rules (`notifies`), and each
/// attribute set on the filter, such as [`command_filter`]'s wait-killable
/// receive. An attribute this libseccomp cannot report cannot have been
/// set either.
fn load_flags(ctx: &ScmpFilterContext, notifies: bool) -> libc::c_ulong {
    let set = |attribute: Result<bool, libseccomp::error::SeccompError>| attribute.unwrap_or(false);
    [
        (notifies, libc::SECCOMP_FILTER_FLAG_NEW_LISTENER),
        (set(ctx.get_ctl_tsync()), libc::SECCOMP_FILTER_FLAG_TSYNC),
        (set(ctx.get_ctl_log()), libc::SECCOMP_FILTER_FLAG_LOG),
        (set(ctx.get_ctl_ssb()), libc::SECCOMP_FILTER_FLAG_SPEC_ALLOW),
        // The kernel takes it only with a listener, as libseccomp gives it.
        (
            notifies && set(ctx.get_ctl_waitkill()),
            libc::SECCOMP_FILTER_FLAG_WAIT_KILLABLE_RECV,
        ),
    ]
    .into_iter()
    .filter(|(on, _)| *on)
    .fold(0, |flags, (_, flag)| flags | flag)
}

/// The filters on start-up's path: init's and the command's (with the
/// UNIX socket gate, as it nearly always runs). The command's without the
/// gate, and init's threads' (loaded once the command runs), are compiled
/// in init when needed.
#[derive(Debug, Clone)]
pub struct Programs {
    /// [`init_filter`].
    pub init: Program,
    /// [`command_filter`] with the UNIX socket gate.
    pub command_gated: Program,
}

impl Programs {
    /// Builds and compiles them.
    pub fn compile() -> Result<Programs, SeccompError> {
        Ok(Programs {
            init: Program::init()?,
            command_gated: Program::command(true)?,
        })
    }
}

/// The filters, compiling on a thread of their own: started before the
/// policy loads (they do not depend on it), on a core that would idle
/// meanwhile, and finished before the sandbox is cloned.
pub struct Compiling(Option<std::thread::JoinHandle<Result<Programs, SeccompError>>>);

impl Compiling {
    /// Starts compiling; without a thread, [`Compiling::finish`] compiles.
    pub fn start() -> Compiling {
        /// Ample for libseccomp, which builds its trees on the heap.
        const STACK: usize = 256 * 1024;
        let thread = std::thread::Builder::new()
            .name("cordon-seccomp".into())
            .stack_size(STACK)
            .spawn(Programs::compile);
        Compiling(thread.ok())
    }

    /// The compiled filters, once the thread has ended: none is left
    /// running, so the process may fork.
    pub fn finish(self) -> Result<Programs, SeccompError> {
        match self.0 {
            Some(thread) => thread.join().unwrap_or(Err(SeccompError::Panicked)),
            None => Programs::compile(),
        }
    }
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
    /// `bind`: a UNIX socket's path is a new name in the file system.
    Bind,
    /// A call that creates a name in the file system.
    Create(Creating),
    /// `chmod` and its kin with a set-user-ID or set-group-ID bit: refused.
    PrivilegeMode,
    /// `umask`: let through, after the gate forgot the umasks it kept
    /// (`crate::sandbox::umask`).
    Umask,
    /// `unshare` of `CLONE_FS`, or a `clone` of a thread without it: a
    /// thread whose file system attributes are its own. Let through, and
    /// the gate stops keeping umasks.
    OwnFs,
    /// A call on the deny list: refused with EPERM, and recorded.
    Other,
}

/// The calls that create a name, as the file creation gate tells them
/// apart (each `*at` form and its plain twin share one shape).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Creating {
    /// `open(path, flags, mode)`, `openat(dirfd, path, flags, mode)`,
    /// `creat(path, mode)`: `at` says whether a dirfd comes first.
    Open {
        at: bool,
        creat: bool,
    },
    Mkdir {
        at: bool,
    },
    Mknod {
        at: bool,
    },
    Link {
        at: bool,
    },
    Symlink {
        at: bool,
    },
    /// `rename`, `renameat` (`at`), `renameat2` (`flags`).
    Rename {
        at: bool,
        flags: bool,
    },
}

/// Waits for the next gated call.
pub fn receive(listener: &OwnedFd) -> Result<Notification, SeccompError> {
    let req = ScmpNotifReq::receive(listener.as_raw_fd()).map_err(SeccompError::Notify)?;
    // Native ABI only: the filters kill any other.
    let create = |c| Gated::Create(c);
    let nr = libc::c_long::from(req.data.syscall.as_raw_syscall());
    let call = match nr {
        libc::SYS_connect => Gated::Connect,
        libc::SYS_sendto => Gated::SendTo,
        libc::SYS_sendmsg => Gated::SendMsg,
        libc::SYS_sendmmsg => Gated::SendMmsg,
        libc::SYS_bind => Gated::Bind,
        libc::SYS_open => create(Creating::Open {
            at: false,
            creat: false,
        }),
        libc::SYS_openat => create(Creating::Open {
            at: true,
            creat: false,
        }),
        libc::SYS_creat => create(Creating::Open {
            at: false,
            creat: true,
        }),
        libc::SYS_mkdir => create(Creating::Mkdir { at: false }),
        libc::SYS_mkdirat => create(Creating::Mkdir { at: true }),
        libc::SYS_mknod => create(Creating::Mknod { at: false }),
        libc::SYS_mknodat => create(Creating::Mknod { at: true }),
        libc::SYS_link => create(Creating::Link { at: false }),
        libc::SYS_linkat => create(Creating::Link { at: true }),
        libc::SYS_symlink => create(Creating::Symlink { at: false }),
        libc::SYS_symlinkat => create(Creating::Symlink { at: true }),
        libc::SYS_rename => create(Creating::Rename {
            at: false,
            flags: false,
        }),
        libc::SYS_renameat => create(Creating::Rename {
            at: true,
            flags: false,
        }),
        libc::SYS_renameat2 => create(Creating::Rename {
            at: true,
            flags: true,
        }),
        libc::SYS_chmod | libc::SYS_fchmod | libc::SYS_fchmodat | libc::SYS_fchmodat2 => {
            Gated::PrivilegeMode
        }
        libc::SYS_umask => Gated::Umask,
        // With a namespace flag, one of the deny list's rules sent it.
        libc::SYS_unshare | libc::SYS_clone if !makes_namespace(nr, req.data.args[0]) => {
            Gated::OwnFs
        }
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

/// Whether the flags of system call `nr` (`unshare` or `clone`) ask for a
/// namespace: refused.
pub fn makes_namespace(nr: libc::c_long, flags: u64) -> bool {
    let time = if nr == libc::SYS_unshare {
        NEW_TIME_NAMESPACE
    } else {
        0
    };
    flags & (NEW_NAMESPACES | time) != 0
}

/// Is the call still waiting (so its pid and memory are still the caller's)?
pub fn still_waiting(listener: &OwnedFd, id: u64) -> bool {
    libseccomp::notify_id_valid(listener.as_raw_fd(), id).is_ok()
}

/// Lets the kernel make a gated call as its caller asked: only for calls
/// whose arguments are values (nothing in memory the caller could change
/// after the gate looked).
pub fn let_through(listener: &OwnedFd, id: u64) {
    let resp = ScmpNotifResp::new_continue(id, ScmpNotifRespFlags::empty());
    // The caller may have died meanwhile; nothing to do then.
    let _ = resp.respond(listener.as_raw_fd());
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

    /// The `Seccomp_filters:` count of the calling thread.
    fn filters_on_this_thread() -> u32 {
        let status = std::fs::read_to_string("/proc/thread-self/status").unwrap();
        let line = status
            .lines()
            .find_map(|l| l.strip_prefix("Seccomp_filters:"))
            .unwrap();
        line.trim().parse().unwrap()
    }

    #[test]
    fn compiled_programs_load_on_a_thread_and_a_gated_one_gives_its_listener() {
        let programs = Compiling::start().finish().unwrap();
        let ungated = Program::command(false).unwrap();
        assert_eq!(ungated.flags & libc::SECCOMP_FILTER_FLAG_NEW_LISTENER, 0);
        std::thread::spawn(move || {
            nix::sys::prctl::set_no_new_privs().unwrap();
            let before = filters_on_this_thread();
            assert!(programs.init.install().unwrap().is_none());
            assert!(programs.command_gated.install().unwrap().is_some());
            assert_eq!(filters_on_this_thread(), before + 2);
        })
        .join()
        .unwrap();
    }

    /// libseccomp's export is the program alone: the attributes set on a
    /// filter must still reach its load, as they would through
    /// libseccomp's (here the log flag, which every libseccomp this
    /// builds with reports, and wait-killable receive where it does).
    #[test]
    fn the_attributes_set_on_a_filter_reach_its_load() {
        let mut ctx = new_filter().unwrap();
        deny(&mut ctx, ScmpAction::Notify, "uselib", &[]).unwrap();
        ctx.set_ctl_log(true).unwrap();
        let waitkill = ctx.set_ctl_waitkill(true).is_ok();
        let program = Program::compile(&ctx, true).unwrap();
        let mut expected = libc::SECCOMP_FILTER_FLAG_NEW_LISTENER | libc::SECCOMP_FILTER_FLAG_LOG;
        if waitkill {
            expected |= libc::SECCOMP_FILTER_FLAG_WAIT_KILLABLE_RECV;
        }
        assert_eq!(program.flags, expected);
        // The kernel takes them together, and gives the listener.
        std::thread::spawn(move || {
            nix::sys::prctl::set_no_new_privs().unwrap();
            assert!(program.install().unwrap().is_some());
        })
        .join()
        .unwrap();
    }

    #[test]
    fn every_rule_compiles() {
        Program::init().expect("init filter");
        Program::command(true).expect("gated command filter");
        Program::command(false).expect("ungated command filter");
        Program::init_threads().expect("init threads filter");
    }

    #[test]
    fn summary_names_the_gate_and_other_abis() {
        let s = denied_summary().join("\n");
        assert!(s.contains("UNIX socket gate"), "{s}");
        assert!(s.contains("x32"), "{s}");
        assert!(s.contains("pidfd_getfd"), "{s}");
    }
}
