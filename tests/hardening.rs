//! Kernel interfaces and process hardening: /proc and /sys knobs,
//! capabilities, no_new_privs, seccomp, setuid binaries.

mod common;

use common::*;

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
    each_mode(|mode| {
        let fx = Fixture::new(mode);
        let script = format!(
            "import os, errno\n\
             def t(label, path, flags):\n\
             \x20   try:\n\
             \x20       os.close(os.open(path, flags))\n\
             \x20       print(label + ': OK')\n\
             \x20   except OSError as e:\n\
             \x20       print(label + ': ERR ' + errno.errorcode.get(e.errno, str(e.errno)))\n\
             t('core_pattern', '/proc/sys/kernel/core_pattern', os.O_WRONLY)\n\
             t('core_pattern_read', '/proc/sys/kernel/core_pattern', os.O_RDONLY)\n\
             t('sysrq', '/proc/sysrq-trigger', os.O_WRONLY)\n\
             t('sys', {sys:?}, os.O_WRONLY)\n\
             t('sys_read', {sys:?}, os.O_RDONLY)\n\
             t('proc_self_attr', '/dev/null', os.O_WRONLY)\n\
             try:\n\
             \x20   d = open('/proc/kcore', 'rb').read(4096)\n\
             \x20   print('kcore: READ %d' % len(d))\n\
             except OSError as e:\n\
             \x20   print('kcore: ERR ' + errno.errorcode.get(e.errno, str(e.errno)))\n\
             try:\n\
             \x20   d = open('/proc/kallsyms', 'rb').read(4096)\n\
             \x20   print('kallsyms: READ %d' % len(d))\n\
             except OSError as e:\n\
             \x20   print('kallsyms: ERR ' + errno.errorcode.get(e.errno, str(e.errno)))\n"
        );
        let out = fx.sandbox().py(&script);
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
    each_mode(|mode| {
        let fx = Fixture::new(mode);
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

const SYSCALLS_PY: &str = r#"
import ctypes, errno, os, socket
libc = ctypes.CDLL(None, use_errno=True)
libc.syscall.restype = ctypes.c_long
def sc(label, nr, *args):
    ctypes.set_errno(0)
    r = libc.syscall(ctypes.c_long(nr), *[ctypes.c_long(a) for a in args])
    if r == -1:
        e = ctypes.get_errno()
        print(label + ': ERR ' + errno.errorcode.get(e, str(e)))
    else:
        print(label + ': OK')
# positive control for the harness: getpid works
sc('getpid', 39)
sc('ptrace_traceme', 101, 0, 0, 0, 0)
# attach to a child this script starts (never to anything else)
kid = os.fork()
if kid == 0:
    import time; time.sleep(30); os._exit(0)
sc('ptrace_attach_child', 101, 16, kid, 0, 0)
os.kill(kid, 9); os.waitpid(kid, 0)
sc('unshare_user', 272, 0x10000000)
sc('unshare_net', 272, 0x40000000)
sc('unshare_files', 272, 0x400)
sc('mount', 165, 0, 0, 0, 0, 0)
sc('keyctl', 250, 0, -3, 0)
sc('add_key', 248, 0, 0, 0, 0, 0)
sc('bpf', 321, 0, 0, 0)
sc('perf_event_open', 298, 0, 0, -1, -1, 0)
sc('io_uring_setup', 425, 1, 0)
sc('userfaultfd', 323, 0)
sc('setns', 308, 0, 0)
def sock(label, fam, typ):
    try:
        socket.socket(fam, typ).close()
        print(label + ': OK')
    except OSError as e:
        print(label + ': ERR ' + errno.errorcode.get(e.errno, str(e.errno)))
sock('af_netlink', socket.AF_NETLINK, socket.SOCK_RAW)
sock('af_packet', socket.AF_PACKET, socket.SOCK_RAW)
sock('af_inet', socket.AF_INET, socket.SOCK_STREAM)
sock('af_inet6', socket.AF_INET6, socket.SOCK_STREAM)
sock('af_unix', socket.AF_UNIX, socket.SOCK_STREAM)
"#;

#[test]
fn seccomp_denies_dangerous_syscalls() {
    each_mode(|mode| {
        let fx = Fixture::new(mode);
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
    each_mode(|mode| {
        let fx = Fixture::new(mode);
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
    each_mode(|mode| {
        let fx = Fixture::new(mode);
        let script = format!(
            "import os, subprocess\n\
             print('nosuid:', bool(os.statvfs('{su}').f_flag & os.ST_NOSUID))\n\
             r = subprocess.run(['{su}', '-c', 'id -u', 'root'], stdin=subprocess.DEVNULL, capture_output=True, text=True)\n\
             print('su-rc:', r.returncode)\n\
             print('su-out:', r.stdout.strip().replace(chr(10), ' '))\n\
             print('su-err:', r.stderr.strip().replace(chr(10), ' '))\n\
             print('uid:', os.getuid(), os.geteuid())\n"
        );
        let out = fx.sandbox().py(&script);
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
