//! The seccomp layer: system calls no sandboxed agent needs and that widen
//! the kernel's attack surface or reach past the other layers.
//!
//! Filters are compiled by `seccompiler` from the rule tables below; no BPF
//! is written by hand. Three filters are installed, one per error number,
//! because a filter has one match action.

use std::collections::BTreeMap;

use seccompiler::{
    apply_filter, BpfProgram, SeccompAction, SeccompCmpArgLen, SeccompCmpOp, SeccompCondition,
    SeccompFilter, SeccompRule, TargetArch,
};

/// Why the seccomp filter could not be built or installed.
#[derive(Debug, thiserror::Error)]
pub enum SeccompError {
    #[error("unsupported architecture {0}")]
    Arch(&'static str),
    #[error("building the filter: {0}")]
    Build(#[from] seccompiler::BackendError),
    #[error("installing the filter: {0}")]
    Install(#[from] seccompiler::Error),
}

/// Denied outright with `EPERM`.
const DENIED: &[(&str, libc::c_long)] = &[
    // reading and writing other processes
    ("ptrace", libc::SYS_ptrace),
    ("process_vm_readv", libc::SYS_process_vm_readv),
    ("process_vm_writev", libc::SYS_process_vm_writev),
    ("pidfd_getfd", libc::SYS_pidfd_getfd),
    ("kcmp", libc::SYS_kcmp),
    // io_uring bypasses seccomp for the operations it performs
    ("io_uring_setup", libc::SYS_io_uring_setup),
    ("io_uring_enter", libc::SYS_io_uring_enter),
    ("io_uring_register", libc::SYS_io_uring_register),
    // kernel keyrings hold other sessions' secrets
    ("keyctl", libc::SYS_keyctl),
    ("add_key", libc::SYS_add_key),
    ("request_key", libc::SYS_request_key),
    // kernel attack surface
    ("bpf", libc::SYS_bpf),
    ("perf_event_open", libc::SYS_perf_event_open),
    ("userfaultfd", libc::SYS_userfaultfd),
    ("kexec_load", libc::SYS_kexec_load),
    ("kexec_file_load", libc::SYS_kexec_file_load),
    ("init_module", libc::SYS_init_module),
    ("finit_module", libc::SYS_finit_module),
    ("delete_module", libc::SYS_delete_module),
    ("open_by_handle_at", libc::SYS_open_by_handle_at),
    ("name_to_handle_at", libc::SYS_name_to_handle_at),
    ("lookup_dcookie", libc::SYS_lookup_dcookie),
    ("fanotify_init", libc::SYS_fanotify_init),
    ("quotactl", libc::SYS_quotactl),
    ("acct", libc::SYS_acct),
    ("swapon", libc::SYS_swapon),
    ("swapoff", libc::SYS_swapoff),
    ("reboot", libc::SYS_reboot),
    ("syslog", libc::SYS_syslog),
    ("vhangup", libc::SYS_vhangup),
    ("settimeofday", libc::SYS_settimeofday),
    ("clock_settime", libc::SYS_clock_settime),
    ("clock_adjtime", libc::SYS_clock_adjtime),
    ("adjtimex", libc::SYS_adjtimex),
    // the mount family: the view is fixed once built
    ("mount", libc::SYS_mount),
    ("umount2", libc::SYS_umount2),
    ("pivot_root", libc::SYS_pivot_root),
    ("chroot", libc::SYS_chroot),
    ("move_mount", libc::SYS_move_mount),
    ("open_tree", libc::SYS_open_tree),
    ("fsopen", libc::SYS_fsopen),
    ("fsconfig", libc::SYS_fsconfig),
    ("fsmount", libc::SYS_fsmount),
    ("fspick", libc::SYS_fspick),
    ("mount_setattr", libc::SYS_mount_setattr),
    // namespaces: no new user namespace (the door to fresh capabilities), no joining
    ("setns", libc::SYS_setns),
];

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

/// Socket families the sandbox may create.
const SOCKET_FAMILIES: &[u64] = &[
    libc::AF_UNIX as u64,
    libc::AF_INET as u64,
    libc::AF_INET6 as u64,
];

/// Names of everything the filters deny, for `doctor` and `explain`.
pub fn denied_summary() -> Vec<String> {
    let mut names: Vec<String> = DENIED.iter().map(|(n, _)| n.to_string()).collect();
    names.push("clone/unshare with namespace flags".into());
    names.push("clone3 (ENOSYS, so libc falls back to clone)".into());
    names.push("ioctl TIOCSTI, TIOCLINUX".into());
    names.push("socket/socketpair outside AF_UNIX, AF_INET, AF_INET6 (EAFNOSUPPORT)".into());
    names
}

fn arch() -> Result<TargetArch, SeccompError> {
    match std::env::consts::ARCH {
        "x86_64" => Ok(TargetArch::x86_64),
        "aarch64" => Ok(TargetArch::aarch64),
        "riscv64" => Ok(TargetArch::riscv64),
        other => Err(SeccompError::Arch(other)),
    }
}

fn cond(arg: u8, op: SeccompCmpOp, value: u64) -> Result<SeccompCondition, SeccompError> {
    Ok(SeccompCondition::new(
        arg,
        SeccompCmpArgLen::Dword,
        op,
        value,
    )?)
}

fn filter(rules: BTreeMap<i64, Vec<SeccompRule>>, errno: i32) -> Result<BpfProgram, SeccompError> {
    let filter = SeccompFilter::new(
        rules,
        SeccompAction::Allow,
        SeccompAction::Errno(errno as u32),
        arch()?,
    )?;
    Ok(filter.try_into()?)
}

/// Compiles the three filters.
pub fn compile() -> Result<Vec<BpfProgram>, SeccompError> {
    let mut eperm: BTreeMap<i64, Vec<SeccompRule>> =
        DENIED.iter().map(|(_, nr)| (*nr, Vec::new())).collect();
    // Any namespace bit set in the flags matches: one rule per bit, since
    // the rules of a syscall are alternatives.
    let mut ns_rules = Vec::new();
    for bit in 0..64 {
        let flag = 1u64 << bit;
        if NEW_NAMESPACES & flag != 0 {
            ns_rules.push(SeccompRule::new(vec![cond(
                0,
                SeccompCmpOp::MaskedEq(flag),
                flag,
            )?])?);
        }
    }
    eperm.insert(libc::SYS_unshare, ns_rules.clone());
    eperm.insert(libc::SYS_clone, ns_rules);
    eperm.insert(
        libc::SYS_ioctl,
        vec![
            SeccompRule::new(vec![cond(1, SeccompCmpOp::Eq, TIOCSTI)?])?,
            SeccompRule::new(vec![cond(1, SeccompCmpOp::Eq, TIOCLINUX)?])?,
        ],
    );

    let family_not_allowed = || -> Result<Vec<SeccompRule>, SeccompError> {
        let conds = SOCKET_FAMILIES
            .iter()
            .map(|f| cond(0, SeccompCmpOp::Ne, *f))
            .collect::<Result<Vec<_>, _>>()?;
        Ok(vec![SeccompRule::new(conds)?])
    };
    let eafnosupport: BTreeMap<i64, Vec<SeccompRule>> = [
        (libc::SYS_socket, family_not_allowed()?),
        (libc::SYS_socketpair, family_not_allowed()?),
    ]
    .into();
    let enosys: BTreeMap<i64, Vec<SeccompRule>> = [(libc::SYS_clone3, Vec::new())].into();

    Ok(vec![
        filter(eperm, libc::EPERM)?,
        filter(eafnosupport, libc::EAFNOSUPPORT)?,
        filter(enosys, libc::ENOSYS)?,
    ])
}

/// Installs the filters on this thread (inherited across fork and exec).
/// Requires `no_new_privs`.
pub fn install(filters: &[BpfProgram]) -> Result<(), SeccompError> {
    for f in filters {
        apply_filter(f)?;
    }
    Ok(())
}
