//! The only place with `unsafe`: raw system calls the safe crates do not wrap.
//!
//! Each function is small, takes plain Rust types, and states in a `SAFETY:`
//! comment why its `unsafe` block is sound. The compiler holds the rest of
//! the crate to this: `unsafe_code` is denied everywhere but here (see
//! `lib.rs`), and clippy's `undocumented_unsafe_blocks` refuses a block
//! without its `SAFETY:` comment (`Cargo.toml`'s `[lints]`).
//!
//! The calls the runtime makes are in this file; the hostile ones
//! `cordon probe` makes to prove the doors shut are in [`attempt`].

use std::io;
use std::os::fd::{AsRawFd, BorrowedFd, FromRawFd, OwnedFd, RawFd};
use std::path::Path;

use nix::sched::CloneFlags;
use nix::unistd::Pid;

pub mod attempt;
pub mod replace;

/// What a fork-like call returns in each process.
pub enum Forked {
    Parent(Pid),
    Child,
}

fn check(ret: libc::c_long) -> io::Result<libc::c_long> {
    if ret < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(ret)
    }
}

/// `clone(2)` with fork semantics (no new stack, `SIGCHLD` on exit) into the
/// namespaces named by `flags`. The child continues from this call.
///
/// Must be called while the process has a single thread.
pub fn clone_fork(flags: CloneFlags) -> io::Result<Forked> {
    let raw = flags.bits() as libc::c_ulong | libc::SIGCHLD as libc::c_ulong;
    // SAFETY: with a null stack pointer clone behaves like fork: the child
    // gets a copy of the address space and continues on its own copy of the
    // stack. The other pointer arguments (parent/child tid, tls) are null and
    // unused because the flags ask for none of them. The caller guarantees a
    // single-threaded process, so no lock is held by another thread.
    let ret = check(unsafe {
        libc::syscall(
            libc::SYS_clone,
            raw,
            std::ptr::null_mut::<libc::c_void>(),
            std::ptr::null_mut::<libc::c_int>(),
            std::ptr::null_mut::<libc::c_int>(),
            0usize,
        )
    })?;
    Ok(if ret == 0 {
        Forked::Child
    } else {
        Forked::Parent(Pid::from_raw(ret as i32))
    })
}

/// `fork(2)`. Must be called while the process has a single thread.
pub fn fork() -> io::Result<Forked> {
    // SAFETY: the caller (the sandbox's init) is single-threaded, which is
    // the condition under which the child may run arbitrary code.
    match unsafe { nix::unistd::fork() }? {
        nix::unistd::ForkResult::Parent { child } => Ok(Forked::Parent(child)),
        nix::unistd::ForkResult::Child => Ok(Forked::Child),
    }
}

/// `MOUNT_ATTR_*` bits for [`mount_setattr`].
pub mod attr {
    pub const RDONLY: u64 = 0x0000_0001;
    pub const NOSUID: u64 = 0x0000_0002;
    pub const NODEV: u64 = 0x0000_0004;
    pub const NOEXEC: u64 = 0x0000_0008;
}

#[repr(C)]
struct MountAttr {
    attr_set: u64,
    attr_clr: u64,
    propagation: u64,
    userns_fd: u64,
}

/// `mount_setattr(2)` on `path`, recursively when `recursive`: sets the
/// `attr::*` bits in `set`. Unlike a remount, this reaches every submount.
pub fn mount_setattr(path: &Path, set: u64, recursive: bool) -> io::Result<()> {
    let c_path = std::ffi::CString::new(path.as_os_str().as_encoded_bytes())
        .map_err(|_| io::Error::from(io::ErrorKind::InvalidInput))?;
    let attr = MountAttr {
        attr_set: set,
        attr_clr: 0,
        propagation: 0,
        userns_fd: 0,
    };
    let flags = libc::AT_SYMLINK_NOFOLLOW as libc::c_uint
        | if recursive {
            libc::AT_RECURSIVE as libc::c_uint
        } else {
            0
        };
    // SAFETY: `c_path` is a valid NUL-terminated string and `attr` a
    // correctly laid out `struct mount_attr` that outlives the call; the
    // kernel only reads them.
    check(unsafe {
        libc::syscall(
            libc::SYS_mount_setattr,
            libc::AT_FDCWD,
            c_path.as_ptr(),
            flags,
            &attr as *const MountAttr,
            std::mem::size_of::<MountAttr>(),
        )
    })?;
    Ok(())
}

/// The Landlock ABI version the kernel offers, or the error that says why none.
pub fn landlock_abi() -> io::Result<i32> {
    const LANDLOCK_CREATE_RULESET_VERSION: libc::c_uint = 1;
    // SAFETY: with a null attribute pointer, size 0 and the VERSION flag the
    // call only returns a number; no memory is passed.
    let ret = check(unsafe {
        libc::syscall(
            libc::SYS_landlock_create_ruleset,
            std::ptr::null::<libc::c_void>(),
            0usize,
            LANDLOCK_CREATE_RULESET_VERSION,
        )
    })?;
    Ok(ret as i32)
}

/// `landlock_add_rule(2)`: `access` (the kernel's `LANDLOCK_ACCESS_FS_*`
/// bits) beneath `parent`, added to the ruleset `ruleset`. The landlock
/// crate adds rules only to a ruleset it made in this process; the
/// supervisor adds to the one init made and handed it.
pub fn landlock_add_path_rule(
    ruleset: BorrowedFd<'_>,
    parent: BorrowedFd<'_>,
    access: u64,
) -> io::Result<()> {
    const LANDLOCK_RULE_PATH_BENEATH: libc::c_int = 1;
    /// `struct landlock_path_beneath_attr`, packed as the kernel declares it.
    #[repr(C, packed)]
    struct PathBeneathAttr {
        allowed_access: u64,
        parent_fd: i32,
    }
    let attr = PathBeneathAttr {
        allowed_access: access,
        parent_fd: parent.as_raw_fd(),
    };
    // SAFETY: both descriptors are open for the call (borrowed), `attr` is
    // the packed struct the rule type names and outlives the call, which
    // only reads it.
    check(unsafe {
        libc::syscall(
            libc::SYS_landlock_add_rule,
            ruleset.as_raw_fd(),
            LANDLOCK_RULE_PATH_BENEATH,
            &attr as *const PathBeneathAttr,
            0u32,
        )
    })?;
    Ok(())
}

/// Brings the loopback interface of the current network namespace up.
pub fn bring_up_loopback() -> io::Result<()> {
    let sock = nix::sys::socket::socket(
        nix::sys::socket::AddressFamily::Inet,
        nix::sys::socket::SockType::Datagram,
        nix::sys::socket::SockFlag::SOCK_CLOEXEC,
        None,
    )?;
    // SAFETY: `ifreq` is plain old data, so all-zero is a valid value.
    let mut req: libc::ifreq = unsafe { std::mem::zeroed() };
    for (dst, src) in req.ifr_name.iter_mut().zip(b"lo\0") {
        *dst = *src as libc::c_char;
    }
    req.ifr_ifru.ifru_flags = (libc::IFF_UP | libc::IFF_RUNNING) as libc::c_short;
    // SAFETY: `sock` is an open socket and `req` a valid `ifreq` naming "lo"
    // that outlives the call.
    check(unsafe { libc::ioctl(sock.as_raw_fd(), libc::SIOCSIFFLAGS, &req) } as libc::c_long)?;
    Ok(())
}

/// Overwrites this process's original environment and argument strings
/// with zeros and empties `environ`, so `/proc/<pid>/environ` and
/// `/proc/<pid>/cmdline` no longer show what the process was started with.
///
/// Call only in a single-threaded process that no longer reads its
/// environment or arguments.
pub fn wipe_startup_strings() -> io::Result<()> {
    let stat = std::fs::read_to_string("/proc/self/stat")?;
    // Fields after the command name, which is in parentheses and may hold spaces.
    let after = stat
        .rsplit_once(')')
        .map(|(_, rest)| rest)
        .ok_or_else(|| io::Error::other("malformed /proc/self/stat"))?;
    let fields: Vec<u64> = after
        .split_whitespace()
        .map(|f| f.parse().unwrap_or(0))
        .collect();
    // In proc_pid_stat(5) numbering arg_start is field 48; `fields[0]` is field 3.
    let field = |n: usize| fields.get(n - 3).copied().unwrap_or(0);
    let (arg_start, arg_end, env_start, env_end) = (field(48), field(49), field(50), field(51));
    // SAFETY: clearenv only touches libc's environment table; the caller
    // guarantees no other thread reads it.
    unsafe { libc::clearenv() };
    for (start, end) in [(arg_start, arg_end), (env_start, env_end)] {
        if start == 0 || end <= start {
            continue;
        }
        // SAFETY: the kernel reports [start, end) as the argument and
        // environment areas of this process's initial stack, which stay
        // mapped and writable for the life of the process. After clearenv
        // nothing refers to the environment strings, and the caller no
        // longer reads its arguments.
        unsafe { std::ptr::write_bytes(start as *mut u8, 0, (end - start) as usize) };
    }
    Ok(())
}

/// `SECBIT_*` for [`set_securebits`]: uid 0 gains no capabilities on exec,
/// and the bits cannot be changed back.
pub const SECURE_NOROOT_LOCKED: libc::c_ulong = 0x3 | 0xc | 0x30;

/// `prctl(PR_SET_SECUREBITS)`.
pub fn set_securebits(bits: libc::c_ulong) -> io::Result<()> {
    // SAFETY: PR_SET_SECUREBITS takes an integer argument; no memory is passed.
    check(unsafe { libc::prctl(libc::PR_SET_SECUREBITS, bits, 0, 0, 0) } as libc::c_long)?;
    Ok(())
}

/// Closes every descriptor from `first` up.
pub fn close_from(first: RawFd) -> io::Result<()> {
    // SAFETY: close_range takes integers only. Closing descriptors that the
    // program still owns would be a bug, so callers pass a bound above every
    // descriptor they keep.
    check(unsafe {
        libc::syscall(
            libc::SYS_close_range,
            first as libc::c_uint,
            libc::c_uint::MAX,
            0,
        )
    })?;
    Ok(())
}

/// Makes the terminal `fd` the controlling terminal of this (session leader) process.
pub fn set_controlling_terminal(fd: BorrowedFd<'_>) -> io::Result<()> {
    // SAFETY: TIOCSCTTY takes an integer argument; `fd` is open.
    check(unsafe { libc::ioctl(fd.as_raw_fd(), libc::TIOCSCTTY, 0) } as libc::c_long)?;
    Ok(())
}

/// Window size of the terminal `fd`.
pub fn window_size(fd: BorrowedFd<'_>) -> io::Result<libc::winsize> {
    // SAFETY: `winsize` is plain old data; TIOCGWINSZ fills it.
    let mut ws: libc::winsize = unsafe { std::mem::zeroed() };
    // SAFETY: `fd` is open and `ws` is a valid winsize that outlives the call.
    check(unsafe { libc::ioctl(fd.as_raw_fd(), libc::TIOCGWINSZ, &mut ws) } as libc::c_long)?;
    Ok(ws)
}

/// Sets the window size of the terminal `fd`.
pub fn set_window_size(fd: BorrowedFd<'_>, ws: &libc::winsize) -> io::Result<()> {
    // SAFETY: `fd` is open and `ws` is a valid winsize that outlives the call.
    check(unsafe { libc::ioctl(fd.as_raw_fd(), libc::TIOCSWINSZ, ws) } as libc::c_long)?;
    Ok(())
}

/// Takes ownership of a descriptor number this process inherited or
/// received and nothing else owns.
pub fn own_fd(fd: RawFd) -> OwnedFd {
    // SAFETY: callers pass a descriptor that is open and owned by no other
    // Rust object (descriptors inherited across exec or moved with dup2).
    unsafe { OwnedFd::from_raw_fd(fd) }
}

/// Loads `program`, a seccomp filter program (libseccomp's export), on
/// the calling thread with `flags` (`SECCOMP_FILTER_FLAG_*`); with
/// `SECCOMP_FILTER_FLAG_NEW_LISTENER` among them, returns the listener of
/// its user notifications. Requires `no_new_privs` (or `CAP_SYS_ADMIN`).
pub fn seccomp_load(
    program: &[libc::sock_filter],
    flags: libc::c_ulong,
) -> io::Result<Option<OwnedFd>> {
    let len = u16::try_from(program.len())
        .ok()
        .filter(|&n| n > 0)
        .ok_or_else(|| io::Error::from_raw_os_error(libc::EINVAL))?;
    let fprog = libc::sock_fprog {
        len,
        filter: program.as_ptr().cast_mut(),
    };
    let new_listener = flags & libc::SECCOMP_FILTER_FLAG_NEW_LISTENER != 0;
    // SAFETY: `fprog` points at `program`, whose length it states; both
    // outlive the call, which only reads them; the kernel checks the
    // program itself.
    let fd = check(unsafe {
        libc::syscall(
            libc::SYS_seccomp,
            libc::SECCOMP_SET_MODE_FILTER,
            flags,
            std::ptr::from_ref(&fprog),
        )
    })?;
    Ok(new_listener.then(|| own_fd(fd as RawFd)))
}

/// Borrows one of the standard descriptors (0, 1 or 2).
pub fn stdio(fd: RawFd) -> BorrowedFd<'static> {
    debug_assert!((0..=2).contains(&fd));
    // SAFETY: the standard descriptors stay open for the life of the process.
    unsafe { BorrowedFd::borrow_raw(fd) }
}

/// Restores the default action for SIGPIPE, which the Rust runtime sets to
/// "ignore" at start-up and exec would otherwise pass on to the command.
pub fn default_sigpipe() -> io::Result<()> {
    // SAFETY: installing SIG_DFL runs no handler code, so no
    // async-signal-safety requirement arises.
    unsafe {
        nix::sys::signal::signal(
            nix::sys::signal::Signal::SIGPIPE,
            nix::sys::signal::SigHandler::SigDfl,
        )
    }?;
    Ok(())
}

/// A pidfd for thread `tid` (`PIDFD_THREAD`, Linux 6.9) or, on older
/// kernels, for the process it leads.
pub fn pidfd_open(tid: Pid) -> io::Result<OwnedFd> {
    const PIDFD_THREAD: libc::c_long = libc::O_EXCL as libc::c_long;
    let open = |flags: libc::c_long| {
        // SAFETY: pidfd_open takes a pid and flags and returns a new
        // descriptor (or -1); no memory is passed.
        check(unsafe { libc::syscall(libc::SYS_pidfd_open, tid.as_raw(), flags) })
    };
    let fd = open(PIDFD_THREAD).or_else(|_| open(0))?;
    // SAFETY: the kernel just returned this descriptor to us alone.
    Ok(unsafe { OwnedFd::from_raw_fd(fd as RawFd) })
}

/// A copy of descriptor `fd` of the process behind `pidfd`
/// (`pidfd_getfd(2)`): the same open file, in this process.
pub fn pidfd_getfd(pidfd: BorrowedFd<'_>, fd: RawFd) -> io::Result<OwnedFd> {
    // SAFETY: pidfd_getfd takes two descriptor numbers and zero flags and
    // returns a new descriptor (or -1); no memory is passed.
    let got = check(unsafe { libc::syscall(libc::SYS_pidfd_getfd, pidfd.as_raw_fd(), fd, 0) })?;
    // SAFETY: the kernel just returned this descriptor to us alone.
    Ok(unsafe { OwnedFd::from_raw_fd(got as RawFd) })
}

/// `connect(2)` to an address given as the raw bytes of a `sockaddr`.
pub fn connect_raw(fd: BorrowedFd<'_>, addr: &[u8]) -> io::Result<()> {
    let len = libc::socklen_t::try_from(addr.len())
        .map_err(|_| io::Error::from_raw_os_error(libc::EINVAL))?;
    // SAFETY: `addr` is valid for `len` bytes for the duration of the call;
    // the kernel copies it and needs no alignment.
    let ret = unsafe { libc::connect(fd.as_raw_fd(), addr.as_ptr().cast(), len) };
    check(ret.into()).map(drop)
}

/// `bind(2)` to an address given as the raw bytes of a `sockaddr`.
pub fn bind_raw(fd: BorrowedFd<'_>, addr: &[u8]) -> io::Result<()> {
    let len = libc::socklen_t::try_from(addr.len())
        .map_err(|_| io::Error::from_raw_os_error(libc::EINVAL))?;
    // SAFETY: `addr` is valid for `len` bytes for the duration of the call;
    // the kernel copies it and needs no alignment.
    let ret = unsafe { libc::bind(fd.as_raw_fd(), addr.as_ptr().cast(), len) };
    check(ret.into()).map(drop)
}

/// `sendmsg(2)` with the destination and control data as raw bytes.
pub fn send_raw(
    fd: BorrowedFd<'_>,
    to: Option<&[u8]>,
    data: &[io::IoSlice<'_>],
    control: &[u8],
    flags: libc::c_int,
) -> io::Result<usize> {
    let too_big = || io::Error::from_raw_os_error(libc::EINVAL);
    // SAFETY: an all-zero msghdr is valid (null pointers, zero lengths).
    let mut msg: libc::msghdr = unsafe { std::mem::zeroed() };
    if let Some(to) = to {
        msg.msg_name = to.as_ptr() as *mut libc::c_void;
        msg.msg_namelen = libc::socklen_t::try_from(to.len()).map_err(|_| too_big())?;
    }
    // IoSlice is ABI-compatible with struct iovec on Unix.
    msg.msg_iov = data.as_ptr() as *mut libc::iovec;
    msg.msg_iovlen = data.len() as _;
    if !control.is_empty() {
        msg.msg_control = control.as_ptr() as *mut libc::c_void;
        msg.msg_controllen = control.len() as _;
    }
    // SAFETY: every pointer in `msg` points into a slice borrowed for the
    // duration of the call, with its length beside it; sendmsg only reads.
    let sent = unsafe { libc::sendmsg(fd.as_raw_fd(), &msg, flags) };
    check(sent as libc::c_long).map(|n| n as usize)
}

/// Asks the kernel to hand the CPU straight from a caller stopped at a
/// seccomp user-notification filter to the thread answering it, and back
/// (`SECCOMP_USER_NOTIF_FD_SYNC_WAKE_UP`, Linux 6.6): the round trip then
/// costs two context switches on the caller's CPU, not two wake-ups of
/// another, idle, CPU.
pub fn seccomp_notify_sync_wakeup(listener: BorrowedFd<'_>) -> io::Result<()> {
    // _IOW('!', 4, __u64): SECCOMP_IOCTL_NOTIF_SET_FLAGS.
    const SECCOMP_IOCTL_NOTIF_SET_FLAGS: libc::c_ulong = 0x4008_2104;
    const SECCOMP_USER_NOTIF_FD_SYNC_WAKE_UP: libc::c_ulong = 1;
    // SAFETY: the request takes its argument by value (the flags), not a
    // pointer; the kernel rejects unknown requests and flags with EINVAL.
    let ret = unsafe {
        libc::ioctl(
            listener.as_raw_fd(),
            SECCOMP_IOCTL_NOTIF_SET_FLAGS as _,
            SECCOMP_USER_NOTIF_FD_SYNC_WAKE_UP,
        )
    };
    check(ret.into()).map(drop)
}

/// Installs `fd` in the process waiting in gated call `id` and answers the
/// call with its number there, in one step (`SECCOMP_IOCTL_NOTIF_ADDFD`
/// with `SECCOMP_ADDFD_FLAG_SEND`, Linux 5.14): the caller's `open`
/// returns a descriptor the gate opened. `cloexec` sets `FD_CLOEXEC` on it.
pub fn seccomp_notify_addfd_send(
    listener: BorrowedFd<'_>,
    id: u64,
    fd: BorrowedFd<'_>,
    cloexec: bool,
) -> io::Result<i64> {
    let addfd = libc::seccomp_notif_addfd {
        id,
        flags: libc::SECCOMP_ADDFD_FLAG_SEND as u32,
        srcfd: fd.as_raw_fd() as u32,
        newfd: 0,
        newfd_flags: if cloexec { libc::O_CLOEXEC as u32 } else { 0 },
    };
    // SAFETY: the request reads one `seccomp_notif_addfd`, which lives on
    // this stack for the duration of the call; the kernel writes nothing
    // back into it.
    let ret = unsafe {
        libc::ioctl(
            listener.as_raw_fd(),
            libc::SECCOMP_IOCTL_NOTIF_ADDFD as _,
            &addfd as *const libc::seccomp_notif_addfd,
        )
    };
    check(ret.into())
}

/// The extended attribute that holds a file's capabilities.
const FILE_CAPABILITIES: &std::ffi::CStr = c"security.capability";

/// Whether the file at `path` (not followed if a symlink) carries file
/// capabilities, which make exec grant privileges as set-user-ID does.
/// An attribute that cannot be read counts as present (fail closed),
/// except where the file system has no attributes at all.
pub fn has_file_capabilities(path: &Path) -> bool {
    use std::os::unix::ffi::OsStrExt;
    let Ok(path) = std::ffi::CString::new(path.as_os_str().as_bytes()) else {
        return true;
    };
    // SAFETY: both strings are NUL-terminated and live across the call; a
    // null buffer of size 0 asks only for the attribute's length.
    let ret = unsafe {
        libc::lgetxattr(
            path.as_ptr(),
            FILE_CAPABILITIES.as_ptr(),
            std::ptr::null_mut(),
            0,
        )
    };
    if ret >= 0 {
        return true;
    }
    let err = io::Error::last_os_error().raw_os_error();
    !matches!(err, Some(libc::ENODATA) | Some(libc::EOPNOTSUPP))
}

/// Removes the file capabilities of the file at `path`, if it has any.
pub fn remove_file_capabilities(path: &Path) -> io::Result<()> {
    use std::os::unix::ffi::OsStrExt;
    let path = std::ffi::CString::new(path.as_os_str().as_bytes())
        .map_err(|_| io::Error::from_raw_os_error(libc::EINVAL))?;
    // SAFETY: both strings are NUL-terminated and live across the call.
    let ret = unsafe { libc::lremovexattr(path.as_ptr(), FILE_CAPABILITIES.as_ptr()) };
    match check(ret.into()) {
        Err(e)
            if matches!(
                e.raw_os_error(),
                Some(libc::ENODATA) | Some(libc::EOPNOTSUPP)
            ) =>
        {
            Ok(())
        }
        other => other.map(drop),
    }
}

/// A user extended attribute cordon sets and removes again to learn
/// whether a file system keeps such attributes.
const XATTR_PROBE: &std::ffi::CStr = c"user.cordon.probe";

/// Whether the file system of the directory `dir` keeps user extended
/// attributes (which an overlay's upper layer needs for its whiteouts and
/// opaque directories in a user namespace): sets one on `dir` and removes
/// it again.
pub fn keeps_user_xattrs(dir: &Path) -> io::Result<()> {
    use std::os::unix::ffi::OsStrExt;
    let path = std::ffi::CString::new(dir.as_os_str().as_bytes())
        .map_err(|_| io::Error::from_raw_os_error(libc::EINVAL))?;
    let value = b"1";
    // SAFETY: both strings are NUL-terminated and `value` is valid for its
    // length; all live across the call.
    let set = unsafe {
        libc::lsetxattr(
            path.as_ptr(),
            XATTR_PROBE.as_ptr(),
            value.as_ptr().cast(),
            value.len(),
            0,
        )
    };
    check(set.into())?;
    // SAFETY: both strings are NUL-terminated and live across the call.
    let removed = unsafe { libc::lremovexattr(path.as_ptr(), XATTR_PROBE.as_ptr()) };
    check(removed.into()).map(drop)
}

/// Starts `program` with `argv` and `env` as a child of this thread, with
/// no signal blocked and SIGPIPE at its default, and returns its pid; an
/// exec failure comes back as its errno.
///
/// `posix_spawn` shares this process's memory with the child until its
/// exec (glibc's `CLONE_VM | CLONE_VFORK`), where a fork would copy the
/// page tables only for the exec to throw them away.
pub fn spawn(
    program: &std::ffi::CStr,
    argv: &[std::ffi::CString],
    env: &[std::ffi::CString],
) -> Result<Pid, nix::errno::Errno> {
    use nix::errno::Errno;
    use nix::sys::signal::{SigSet, Signal};
    let nul_terminated = |strings: &[std::ffi::CString]| {
        let mut ptrs: Vec<*mut libc::c_char> =
            strings.iter().map(|s| s.as_ptr().cast_mut()).collect();
        ptrs.push(std::ptr::null_mut());
        ptrs
    };
    let (argv, env) = (nul_terminated(argv), nul_terminated(env));
    let unblocked = SigSet::empty();
    let mut defaults = SigSet::empty();
    defaults.add(Signal::SIGPIPE);
    let mut defaults: libc::sigset_t = *defaults.as_ref();
    // glibc's own signals (32 and 33, for threads and timers) are left
    // ignored in a posix_spawn child, and an ignored signal stays ignored
    // across exec: the command would inherit them so. sigaddset refuses
    // them, so their bits are set directly.
    // SAFETY: on Linux a `sigset_t` is an array of unsigned longs, signal
    // N being bit N-1; `defaults` is a valid, initialised set.
    unsafe {
        let words = (&mut defaults as *mut libc::sigset_t).cast::<libc::c_ulong>();
        let bits_per_word = libc::c_ulong::BITS as usize;
        for signo in [32usize, 33] {
            *words.add((signo - 1) / bits_per_word) |= 1 << ((signo - 1) % bits_per_word);
        }
    }
    let flags = (libc::POSIX_SPAWN_SETSIGMASK | libc::POSIX_SPAWN_SETSIGDEF) as libc::c_short;
    let mut attr = std::mem::MaybeUninit::<libc::posix_spawnattr_t>::uninit();
    // SAFETY: `attr` is initialised by posix_spawnattr_init before any other
    // use and destroyed once; the sets are valid `sigset_t`s that outlive
    // the calls; `program` and every argv and env pointer are NUL-terminated
    // strings borrowed for the call, each array ends in a null pointer, and
    // `pid` is a valid place for the child's pid. posix_spawn reads them
    // before it returns.
    unsafe {
        let rc = libc::posix_spawnattr_init(attr.as_mut_ptr());
        if rc != 0 {
            return Err(Errno::from_raw(rc));
        }
        let mut attr = attr.assume_init();
        let mut rc = libc::posix_spawnattr_setsigmask(&mut attr, unblocked.as_ref());
        if rc == 0 {
            rc = libc::posix_spawnattr_setsigdefault(&mut attr, &defaults);
        }
        if rc == 0 {
            rc = libc::posix_spawnattr_setflags(&mut attr, flags);
        }
        let mut pid: libc::pid_t = 0;
        if rc == 0 {
            rc = libc::posix_spawn(
                &mut pid,
                program.as_ptr(),
                std::ptr::null(),
                &attr,
                argv.as_ptr(),
                env.as_ptr(),
            );
        }
        libc::posix_spawnattr_destroy(&mut attr);
        match rc {
            0 => Ok(Pid::from_raw(pid)),
            e => Err(Errno::from_raw(e)),
        }
    }
}
