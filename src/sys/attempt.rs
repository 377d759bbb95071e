//! Raw attempts for `cordon probe`: each asks the kernel for one thing the
//! sandbox must refuse, with fixed, harmless arguments (no memory the
//! kernel could write to beyond the buffers given here).
//!
//! They live apart from the calls the sandbox runtime makes, so the
//! production syscall module holds nothing hostile; like it, each block
//! states why it is sound.

use std::io;
use std::os::fd::{AsRawFd, BorrowedFd, FromRawFd, OwnedFd, RawFd};

use nix::unistd::Pid;

use super::check;

/// `ptrace(PTRACE_SEIZE, pid)`: attaches without stopping the tracee.
/// The attachment ends when the calling process exits.
pub fn ptrace_seize(pid: Pid) -> io::Result<()> {
    Ok(nix::sys::ptrace::seize(
        pid,
        nix::sys::ptrace::Options::empty(),
    )?)
}

/// `keyctl(KEYCTL_GET_KEYRING_ID, KEY_SPEC_SESSION_KEYRING, 0)`: looks
/// up the session keyring without creating it.
pub fn keyctl_session_keyring() -> io::Result<libc::c_long> {
    const KEYCTL_GET_KEYRING_ID: libc::c_long = 0;
    const KEY_SPEC_SESSION_KEYRING: libc::c_long = -3;
    // SAFETY: this keyctl operation takes integers only.
    check(unsafe {
        libc::syscall(
            libc::SYS_keyctl,
            KEYCTL_GET_KEYRING_ID,
            KEY_SPEC_SESSION_KEYRING,
            0 as libc::c_long,
        )
    })
}

/// `bpf(BPF_MAP_CREATE)` of a one-entry array map; the map goes away
/// with the returned descriptor.
pub fn bpf_array_map() -> io::Result<OwnedFd> {
    const BPF_MAP_CREATE: libc::c_long = 0;
    const BPF_MAP_TYPE_ARRAY: u32 = 2;
    // union bpf_attr for BPF_MAP_CREATE starts with map_type, key_size,
    // value_size, max_entries; the rest stays zero.
    let mut attr = [0u32; 32];
    attr[..4].copy_from_slice(&[BPF_MAP_TYPE_ARRAY, 4, 4, 1]);
    // SAFETY: `attr` is a zeroed, u32-aligned buffer of the size passed,
    // alive for the call; the kernel only reads it for this command.
    let fd = check(unsafe {
        libc::syscall(
            libc::SYS_bpf,
            BPF_MAP_CREATE,
            attr.as_ptr(),
            std::mem::size_of_val(&attr),
        )
    })?;
    // SAFETY: the kernel just returned this descriptor to us alone.
    Ok(unsafe { OwnedFd::from_raw_fd(fd as RawFd) })
}

/// `io_uring_setup(1, params)`: a ring with one entry, closed with the
/// returned descriptor.
pub fn io_uring_setup() -> io::Result<OwnedFd> {
    // struct io_uring_params is 120 bytes; the kernel fills it in.
    let mut params = [0u32; 30];
    // SAFETY: `params` is a zeroed, writable, u32-aligned buffer the
    // size of struct io_uring_params, alive for the call.
    let fd = check(unsafe {
        libc::syscall(
            libc::SYS_io_uring_setup,
            1 as libc::c_long,
            params.as_mut_ptr(),
        )
    })?;
    // SAFETY: the kernel just returned this descriptor to us alone.
    Ok(unsafe { OwnedFd::from_raw_fd(fd as RawFd) })
}

/// `finit_module(fd, "", 0)`: asks the module loader to load what
/// `fd` holds. Callers pass an empty file, which no kernel loads.
pub fn finit_module(fd: BorrowedFd<'_>) -> io::Result<()> {
    Ok(nix::kmod::finit_module(
        fd,
        c"",
        nix::kmod::ModuleInitFlags::empty(),
    )?)
}

/// `ioctl(fd, TIOCSTI, &byte)`: pushes one byte into the terminal's input.
pub fn tiocsti(fd: BorrowedFd<'_>, byte: u8) -> io::Result<()> {
    let c = byte as libc::c_char;
    // SAFETY: TIOCSTI reads one char through the pointer, which points
    // at a local alive for the call.
    check(unsafe { libc::ioctl(fd.as_raw_fd(), libc::TIOCSTI, &c) } as libc::c_long).map(drop)
}

/// `prctl(PR_SET_PTRACER, PR_SET_PTRACER_ANY)`: lets any process of
/// this uid trace the caller where Yama would only allow ancestors, so
/// the probe's canary is traceable without the sandbox.
pub fn allow_any_tracer() -> io::Result<()> {
    const PR_SET_PTRACER: libc::c_int = 0x5961_6d61;
    const PR_SET_PTRACER_ANY: libc::c_ulong = libc::c_ulong::MAX;
    // SAFETY: integer arguments only.
    check(unsafe { libc::prctl(PR_SET_PTRACER, PR_SET_PTRACER_ANY, 0, 0, 0) } as libc::c_long)
        .map(drop)
}

/// `prctl(PR_GET_NO_NEW_PRIVS)`.
pub fn no_new_privs() -> io::Result<bool> {
    Ok(nix::sys::prctl::get_no_new_privs()?)
}
