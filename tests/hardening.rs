//! Kernel interfaces and process hardening: /proc and /sys knobs,
//! capabilities, no_new_privs, seccomp, setuid binaries.

mod common;

use common::*;

/// Opens /proc and /sys knobs (argv[1]: a /sys file).
const KERNEL_KNOBS_PY: &str = include_str!("py/kernel_knobs.py");
/// What `su` grants (argv[1]: the setuid binary).
const SETUID_SU_PY: &str = include_str!("py/setuid_su.py");

/// Picks a /sys file that exists and that the host's root could open for
/// writing (the positive control is done on the host).
fn sys_file() -> &'static str {
    for p in [
        "/sys/kernel/mm/transparent_hugepage/enabled",
        "/sys/power/state",
        "/sys/kernel/uevent_helper",
    ] {
        if std::path::Path::new(p).exists() {
            return p;
        }
    }
    panic!("no candidate /sys file on this machine")
}

#[test]
fn proc_and_sys_knobs_are_not_writable() {
    let sys = sys_file();
    if is_root() {
        // Control: as root on the host the same opens succeed (nothing written).
        for p in ["/proc/sys/kernel/core_pattern", "/proc/sysrq-trigger", sys] {
            if !std::path::Path::new(p).exists() {
                continue; // e.g. no CONFIG_MAGIC_SYSRQ: nothing to open
            }
            let f = std::fs::OpenOptions::new().write(true).open(p);
            assert!(f.is_ok(), "host control: open {p} O_WRONLY: {f:?}");
        }
    }
    // Control: the host's kallsyms has content (so "empty inside" means masked).
    let host_kallsyms = std::fs::read("/proc/kallsyms").unwrap_or_default();
    assert!(!host_kallsyms.is_empty(), "host /proc/kallsyms empty");
    each_fixture(|mode, fx| {
        let out = fx.sandbox().py_args(KERNEL_KNOBS_PY, &[sys]);
        out.ok();
        // Positive controls inside: reading works, and an ordinary
        // per-process proc file can be opened for writing.
        assert_eq!(line(&out, "core_pattern_read"), "OK", "{mode:?}: {out:#?}");
        assert_eq!(line(&out, "sys_read"), "OK", "{mode:?}: {out:#?}");
        assert_eq!(line(&out, "proc_self_attr"), "OK", "{mode:?}: {out:#?}");
        for l in ["core_pattern", "sysrq", "sys"] {
            assert!(
                line(&out, l).starts_with("ERR"),
                "{mode:?}: {l} writable: {out:#?}"
            );
        }
        let kcore = line(&out, "kcore");
        assert!(
            kcore.starts_with("ERR") || kcore == "READ 0",
            "{mode:?}: /proc/kcore readable: {out:#?}"
        );
        let kallsyms = line(&out, "kallsyms");
        assert!(
            kallsyms.starts_with("ERR") || kallsyms == "READ 0",
            "{mode:?}: /proc/kallsyms readable: {out:#?}"
        );
    });
}

#[test]
fn no_capabilities_no_new_privs_seccomp_on() {
    each_fixture(|mode, fx| {
        let out = fx
            .sandbox()
            .sh("grep -E '^(Cap(Inh|Prm|Eff|Bnd|Amb)|NoNewPrivs|Seccomp):' /proc/self/status");
        out.ok();
        for cap in ["CapInh", "CapPrm", "CapEff", "CapBnd", "CapAmb"] {
            let v = out
                .stdout
                .lines()
                .find_map(|l| l.strip_prefix(&format!("{cap}:")))
                .map(str::trim)
                .unwrap_or("<missing>");
            assert_eq!(v, "0000000000000000", "{mode:?}: {cap}: {out:#?}");
        }
        assert!(out.stdout.contains("NoNewPrivs:\t1"), "{mode:?}: {out:#?}");
        assert!(out.stdout.contains("Seccomp:\t2"), "{mode:?}: {out:#?}");
    });
}

/// Tries dangerous system calls and socket families.
const SYSCALLS_PY: &str = include_str!("py/syscalls.py");

#[test]
fn seccomp_denies_dangerous_syscalls() {
    each_fixture(|mode, fx| {
        let out = fx.sandbox().py(SYSCALLS_PY);
        out.ok();
        assert_eq!(line(&out, "getpid"), "OK", "{mode:?}: {out:#?}");
        // unshare(CLONE_FILES) has no namespace flag: allowed (control for
        // the namespace-flag rule).
        assert_eq!(line(&out, "unshare_files"), "OK", "{mode:?}: {out:#?}");
        for l in [
            "ptrace_traceme",
            "ptrace_attach_child",
            "unshare_user",
            "unshare_net",
            "mount",
            "keyctl",
            "add_key",
            "bpf",
            "perf_event_open",
            "io_uring_setup",
            "userfaultfd",
            "setns",
        ] {
            assert_eq!(line(&out, l), "ERR EPERM", "{mode:?}: {l}: {out:#?}");
        }
        for l in ["af_netlink", "af_packet"] {
            assert_eq!(line(&out, l), "ERR EAFNOSUPPORT", "{mode:?}: {l}: {out:#?}");
        }
        for l in ["af_inet", "af_inet6", "af_unix"] {
            assert_eq!(line(&out, l), "OK", "{mode:?}: {l}: {out:#?}");
        }
    });
}

#[test]
fn unshare_command_fails() {
    each_fixture(|mode, fx| {
        let out = fx.sandbox().sh(
            "unshare -U true && echo UNSHARE-OK || echo unshare-refused; \
                 unshare -r id && echo UNSHARE-R-OK || echo unshare-r-refused; echo end",
        );
        assert!(out.stdout.contains("unshare-refused"), "{mode:?}: {out:#?}");
        assert!(
            out.stdout.contains("unshare-r-refused"),
            "{mode:?}: {out:#?}"
        );
        assert!(!out.stdout.contains("-OK"), "{mode:?}: {out:#?}");
    });
}

#[test]
fn setuid_binaries_grant_nothing() {
    let su = "/usr/bin/su";
    let meta = std::fs::metadata(su).expect("su");
    use std::os::unix::fs::MetadataExt;
    assert!(
        meta.mode() & 0o4000 != 0 && meta.uid() == 0,
        "{su} is not setuid root"
    );
    each_fixture(|mode, fx| {
        let out = fx.sandbox().py_args(SETUID_SU_PY, &[su]);
        out.ok();
        assert_eq!(line(&out, "nosuid"), "True", "{mode:?}: {out:#?}");
        let su_out = line(&out, "su-out");
        if mode == Mode::User {
            assert_ne!(su_out, "0", "{mode:?}: su gave root: {out:#?}");
            assert_ne!(line(&out, "su-rc"), "0", "{mode:?}: {out:#?}");
        } else {
            // Root inside is only the caller; su gains nothing beyond it.
            assert!(su_out.is_empty() || su_out == "0", "{mode:?}: {out:#?}");
        }
        assert_eq!(
            line(&out, "uid"),
            format!("{} {}", mode.uid(), mode.uid()),
            "{mode:?}"
        );
    });
}
