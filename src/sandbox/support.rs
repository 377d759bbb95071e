//! What this kernel can enforce, read without changing anything: used by
//! `cordon doctor` and by the fixes printed when a layer fails.

use std::path::Path;

use crate::policy::Layer;

use super::limits::CgroupMounts;
use crate::sys;

/// A sysctl's value, if the file exists.
pub fn sysctl(path: &str) -> Option<String> {
    std::fs::read_to_string(path)
        .ok()
        .map(|s| s.trim().to_string())
}

/// Sysctls that restrict unprivileged user namespaces, with their values.
pub fn userns_restrictions() -> Vec<(String, String)> {
    let mut found = Vec::new();
    let checks = [
        ("/proc/sys/kernel/unprivileged_userns_clone", "0"),
        ("/proc/sys/user/max_user_namespaces", "0"),
        (
            "/proc/sys/kernel/apparmor_restrict_unprivileged_userns",
            "1",
        ),
    ];
    for (path, bad) in checks {
        if let Some(value) = sysctl(path) {
            if value == bad {
                found.push((
                    path.trim_start_matches("/proc/sys/").replace('/', "."),
                    value,
                ));
            }
        }
    }
    found
}

/// How to get user namespaces working on this machine.
pub fn userns_fix() -> String {
    let restrictions = userns_restrictions();
    if restrictions.is_empty() {
        return "the kernel refused new namespaces; check that it is built with CONFIG_USER_NS, \
                that no container or seccomp policy around cordon forbids unshare/clone, \
                and run `cordon doctor`"
            .into();
    }
    let mut fix = String::from("this machine restricts unprivileged user namespaces:");
    for (name, value) in restrictions {
        let want = match name.as_str() {
            "kernel.unprivileged_userns_clone" => "1",
            "user.max_user_namespaces" => "10000",
            _ => "0",
        };
        fix.push_str(&format!(
            " {name}={value} (as root: sysctl -w {name}={want})"
        ));
    }
    fix
}

/// How to get `layer` working, for the refusal message.
pub fn fix_for(layer: Layer) -> String {
    match layer {
        Layer::Namespaces => userns_fix(),
        Layer::Landlock => {
            "boot a kernel with CONFIG_SECURITY_LANDLOCK=y and `landlock` in the lsm= list \
                            (Linux 5.13 or later), or pass --allow-degraded=landlock"
                .into()
        }
        Layer::Seccomp => {
            "use a kernel with CONFIG_SECCOMP_FILTER=y, or pass --allow-degraded=seccomp".into()
        }
        Layer::Limits => {
            "run as a user who may create cgroups, or pass --allow-degraded=limits".into()
        }
    }
}

/// The Landlock ABI, or why there is none.
pub fn landlock_abi() -> Result<i32, String> {
    sys::landlock_abi().map_err(|e| match e.raw_os_error() {
        Some(libc::ENOSYS) => "not built into this kernel".to_string(),
        Some(libc::EOPNOTSUPP) => "built in but disabled (not in the lsm= boot list)".to_string(),
        _ => e.to_string(),
    })
}

/// Whether the kernel has seccomp filters (`Seccomp:` in /proc/self/status
/// exists, and the actions list is readable).
pub fn seccomp_available() -> bool {
    Path::new("/proc/sys/kernel/seccomp/actions_avail").exists()
        || sysctl("/proc/self/status").is_some_and(|s| s.contains("Seccomp:"))
}

/// The cgroup hierarchies mounted here.
pub fn cgroups() -> CgroupMounts {
    CgroupMounts::read()
}

/// The namespaces every sandbox's init is cloned into.
pub const SANDBOX_NAMESPACES: nix::sched::CloneFlags = nix::sched::CloneFlags::CLONE_NEWUSER
    .union(nix::sched::CloneFlags::CLONE_NEWNS)
    .union(nix::sched::CloneFlags::CLONE_NEWPID)
    .union(nix::sched::CloneFlags::CLONE_NEWNET)
    .union(nix::sched::CloneFlags::CLONE_NEWIPC)
    .union(nix::sched::CloneFlags::CLONE_NEWUTS);

/// Tries to create the namespaces `cordon run` needs, in a child that
/// exits at once.
pub fn try_namespaces() -> Result<(), String> {
    match sys::clone_fork(SANDBOX_NAMESPACES).map_err(|e| e.to_string())? {
        sys::Forked::Child => std::process::exit(0),
        sys::Forked::Parent(pid) => match nix::sys::wait::waitpid(pid, None) {
            Ok(nix::sys::wait::WaitStatus::Exited(_, 0)) => Ok(()),
            other => Err(format!("test child ended with {other:?}")),
        },
    }
}
