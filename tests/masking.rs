//! What the kernel's own file systems show inside: the sandbox's own
//! sysfs (its network devices only), no firmware tables or hardware ids,
//! and no root-only map of physical memory in /proc.

mod common;

use std::path::Path;

use common::*;

/// The host's MAC addresses (all-zero ones, such as lo's, left out).
fn host_macs() -> Vec<String> {
    let Ok(entries) = std::fs::read_dir("/sys/class/net") else {
        return Vec::new();
    };
    entries
        .flatten()
        .filter_map(|e| std::fs::read_to_string(e.path().join("address")).ok())
        .map(|a| a.trim().to_string())
        .filter(|a| !a.is_empty() && a.chars().any(|c| c != '0' && c != ':'))
        .collect()
}

/// Prints the interfaces, every `address` of a network device found under
/// /sys, and whether firmware tables, DMI ids and /proc's page maps read.
const SCRIPT: &str = r#"
import os, errno
print('net:', ' '.join(sorted(os.listdir('/sys/class/net'))))
macs = []
for top in ('/sys/class/net', '/sys/devices'):
    for root, dirs, files in os.walk(top):
        if '/net/' in root + '/' and 'address' in files:
            try:
                macs.append(open(os.path.join(root, 'address')).read().strip())
            except OSError:
                pass
print('macs:', ' '.join(sorted(set(macs))) or 'none')
def attempt(label, f):
    try:
        f()
        print(label + ': OK')
    except OSError as e:
        print(label + ': ERR', errno.errorcode.get(e.errno, e.errno))
def read(path, n=64):
    with open(path, 'rb') as f:
        if not f.read(n):
            raise OSError(errno.ENODATA, 'empty')
def listing(path):
    if not os.listdir(path):
        raise OSError(errno.ENOENT, 'empty')
attempt('firmware-list', lambda: listing('/sys/firmware'))
attempt('acpi-list', lambda: listing('/sys/firmware/acpi/tables'))
attempt('acpi-dsdt', lambda: read('/sys/firmware/acpi/tables/DSDT'))
attempt('dmi-uuid', lambda: read('/sys/class/dmi/id/product_uuid'))
attempt('dmi-vendor', lambda: read('/sys/class/dmi/id/sys_vendor'))
attempt('kpageflags', lambda: read('/proc/kpageflags', 8))
attempt('kpagecount', lambda: read('/proc/kpagecount', 8))
attempt('kpagecgroup', lambda: read('/proc/kpagecgroup', 8))
attempt('cpu-online', lambda: read('/sys/devices/system/cpu/online'))
attempt('cgroup-list', lambda: listing('/sys/fs/cgroup'))
"#;

#[test]
fn sys_shows_no_host_interface_firmware_or_hardware_id_and_proc_no_page_maps() {
    let macs = host_macs();
    let host_ifaces: Vec<String> = std::fs::read_dir("/sys/class/net")
        .map(|d| {
            d.flatten()
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .collect()
        })
        .unwrap_or_default();
    // Controls: the host shows more than lo, its firmware, and (to root)
    // its page maps; otherwise this test would prove nothing here.
    assert!(
        host_ifaces.iter().any(|i| i != "lo") && !macs.is_empty(),
        "the host has no interface besides lo: {host_ifaces:?}"
    );
    let host_firmware = Path::new("/sys/firmware").read_dir().is_ok();
    let host_acpi = Path::new("/sys/firmware/acpi/tables/DSDT").exists();
    let host_dmi = Path::new("/sys/class/dmi/id/sys_vendor").exists();
    let host_cgroups = Path::new("/sys/fs/cgroup")
        .read_dir()
        .is_ok_and(|mut d| d.next().is_some());
    each_mode(|mode| {
        let fx = Fixture::new(mode);
        let out = fx.sandbox().py(SCRIPT);
        out.ok();
        assert_eq!(line(&out, "net"), "lo", "{mode:?}: {out:#?}");
        let inside: Vec<&str> = line(&out, "macs").split(' ').collect();
        for mac in &macs {
            assert!(
                !inside.contains(&mac.as_str()),
                "{mode:?}: host MAC {mac} readable: {out:#?}"
            );
        }
        let refused = |label: &str| {
            let got = line(&out, label);
            assert!(got.starts_with("ERR"), "{mode:?}: {label}: {got}: {out:#?}");
        };
        if host_firmware {
            refused("firmware-list");
        }
        if host_acpi {
            refused("acpi-list");
            refused("acpi-dsdt");
        }
        if host_dmi {
            refused("dmi-uuid");
            refused("dmi-vendor");
        }
        for name in ["kpageflags", "kpagecount", "kpagecgroup"] {
            refused(name);
        }
        // What programs need stays.
        assert_eq!(line(&out, "cpu-online"), "OK", "{mode:?}: {out:#?}");
        if host_cgroups {
            assert_eq!(line(&out, "cgroup-list"), "OK", "{mode:?}: {out:#?}");
        }
    });
}

/// Root's control: outside any sandbox, uid 0 reads the page maps, so a
/// refusal inside is the sandbox's doing and not the kernel's.
#[test]
fn root_reads_the_page_maps_outside() {
    if !is_root() {
        return;
    }
    let mut buf = [0u8; 8];
    let read = std::fs::File::open("/proc/kpageflags")
        .and_then(|mut f| std::io::Read::read_exact(&mut f, &mut buf));
    assert!(read.is_ok(), "{read:?}");
}
