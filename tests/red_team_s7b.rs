//! Red team, session 7 (b): the exit summary's write refusals, ports across
//! the sandbox's edge, caches.

mod common;

use common::*;

/// Directories of the home where what is left there runs later on the
/// host: systemd's user units (at any depth), autostart entries, the
/// programs on `PATH`.
const RUN_LATER: &[&str] = &[
    ".config/systemd/user",
    ".config/systemd/user/default.target.wants",
    ".config/autostart",
    ".local/bin",
    ".ssh/config.d",
    ".config/nvim/lua",
    ".config/git",
    ".gnupg",
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

/// System directories whose files run later on the host, for every user.
const SYSTEM_RUN_LATER: &[&str] = &["/etc/cron.d", "/etc/profile.d", "/usr/local/bin"];

#[test]
fn a_refused_write_never_suggests_allowing_a_system_directory() {
    each_fixture(|mode, fx| {
        let attempts: Vec<(&str, String)> = SYSTEM_RUN_LATER
            .iter()
            .filter(|d| std::path::Path::new(d).is_dir())
            .map(|d| (*d, format!("echo x > '{d}/cordon-red-team-canary'")))
            .collect();
        let script = attempts_script(
            &attempts
                .iter()
                .map(|(l, c)| (*l, c.as_str()))
                .collect::<Vec<_>>(),
        );
        let out = fx.sandbox().sh(&script);
        assert_eq!(open_lines(&out), Vec::<&str>::new(), "{mode:?}: {out:#?}");
        assert!(out.stderr.contains("blocked"), "{mode:?}: {out:#?}");
        for (dir, _) in &attempts {
            let _ = std::fs::remove_file(format!("{dir}/cordon-red-team-canary"));
            assert!(
                !out.stderr.contains(&format!("--allow-write {dir}")),
                "{mode:?}: the summary suggests writing {dir}: {}",
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

/// Without the sandbox's own network namespace (`--allow-degraded=namespaces`)
/// the ports `--local-ports` names are the host's: Landlock's TCP rules know
/// ports, not addresses, so the sandbox could connect to a host service on
/// such a port (or any address on the network), and listen on every host
/// interface. The run must be refused.
#[test]
fn local_ports_without_the_network_namespace_are_refused() {
    each_fixture(|mode, fx| {
        let host = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let port = host.local_addr().unwrap().port();
        let script = format!(
            "import socket\nc = socket.socket()\nc.settimeout(3)\ntry:\n    c.connect(('127.0.0.1', {port}))\n    print('host-service: OPEN')\nexcept OSError as e:\n    print('host-service: refused', e)\n"
        );
        let out = fx
            .sandbox()
            .env("CORDON_TEST_WEAKEN", "namespaces")
            .flag("--allow-degraded", "namespaces")
            .flag("--local-ports", port.to_string())
            .py(&script);
        assert_eq!(open_lines(&out), Vec::<&str>::new(), "{mode:?}: {out:#?}");
        assert!(
            !out.stdout.contains("host-service"),
            "{mode:?}: the command ran: {out:#?}"
        );
        assert!(out.stderr.contains("--local-ports"), "{mode:?}: {out:#?}");
        assert_ne!(out.code, 0, "{mode:?}: {out:#?}");
        drop(host);
    });
}

/// A connect to a port where nothing listens inside is answered with the
/// `--host-port` that would reach the host's: for Docker's API port the
/// summary must say that it hands over the host, as it does for Docker's
/// UNIX socket.
#[test]
fn a_refused_local_port_warns_before_suggesting_dockers_api_port() {
    each_fixture(|mode, fx| {
        let out = fx.sandbox().py(
            "import socket\nfor p in (2375, 2376):\n    try:\n        socket.create_connection(('127.0.0.1', p), 2)\n        print(p, 'OPEN')\n    except OSError as e:\n        print(p, 'refused', e)\n",
        );
        assert!(!out.stdout.contains("OPEN"), "{mode:?}: {out:#?}");
        for port in [2375, 2376] {
            let hints: Vec<&str> = out
                .stderr
                .lines()
                .filter(|l| l.contains(&format!("--host-port {port}")))
                .collect();
            assert!(!hints.is_empty(), "{mode:?}: no hint for {port}: {out:#?}");
            for hint in hints {
                assert!(
                    hint.contains("root on the host"),
                    "{mode:?}: --host-port {port} suggested bare: {hint}"
                );
            }
        }
    });
}
