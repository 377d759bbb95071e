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
const SYSFS_VIEW_PY: &str = include_str!("py/sysfs_view.py");

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
    each_fixture(|mode, fx| {
        let out = fx.sandbox().py(SYSFS_VIEW_PY);
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
