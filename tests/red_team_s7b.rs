//! Red team, session 7 (b): the exit summary's write refusals, ports across
//! the sandbox's edge, caches.

mod common;

use common::*;

/// Directories of the home whose every subdirectory runs what is left
/// there on the host later: systemd's user units, autostart entries, the
/// programs on `PATH`.
const RUN_LATER: &[&str] = &[
    ".config/systemd/user",
    ".config/systemd/user/default.target.wants",
    ".config/autostart/sub",
    ".local/bin/sub",
];

#[test]
fn a_refused_write_never_suggests_allowing_a_place_whose_files_run_later() {
    each_fixture(|mode, fx| {
        for rel in RUN_LATER {
            std::fs::create_dir_all(fx.home.join(rel)).unwrap();
        }
        chown_tree(&fx.home, mode);
        // A hostile sandbox tries to leave a unit and a program there, so
        // that the summary tells the user the flag that would let it.
        let script = attempts_script(
            &RUN_LATER
                .iter()
                .map(|rel| (*rel, format!("echo x > \"$HOME/{rel}/evil.service\"")))
                .collect::<Vec<_>>()
                .iter()
                .map(|(l, c)| (*l, c.as_str()))
                .collect::<Vec<_>>(),
        );
        let out = fx.sandbox().sh(&script);
        assert_eq!(open_lines(&out), Vec::<&str>::new(), "{mode:?}: {out:#?}");
        for rel in RUN_LATER {
            let dir = fx.home.join(rel);
            assert!(
                !out.stderr
                    .contains(&format!("--allow-write {}", dir.display())),
                "{mode:?}: the summary suggests writing {rel}: {}",
                out.stderr
            );
            assert!(
                !out.stderr.contains(&format!("--cache {}", dir.display())),
                "{mode:?}: the summary suggests a cache at {rel}: {}",
                out.stderr
            );
        }
    });
}

#[test]
fn allow_write_on_a_directory_under_a_place_whose_files_run_later_is_refused() {
    each_fixture(|mode, fx| {
        for rel in RUN_LATER {
            std::fs::create_dir_all(fx.home.join(rel)).unwrap();
        }
        chown_tree(&fx.home, mode);
        for rel in RUN_LATER {
            let dir = fx.home.join(rel);
            let out = fx
                .sandbox()
                .flag("--allow-write", dir.as_os_str())
                .sh(&format!(
                    "echo x > '{}/evil.service' && echo RAN",
                    dir.display()
                ));
            assert!(!out.stdout.contains("RAN"), "{mode:?} {rel}: {out:#?}");
            assert!(
                !dir.join("evil.service").exists(),
                "{mode:?}: --allow-write {rel} let the sandbox leave a file there"
            );
            assert_ne!(out.code, 0, "{mode:?} {rel}: {out:#?}");
        }
    });
}
