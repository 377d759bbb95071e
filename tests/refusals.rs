//! Every refusal says why, where the user looks: the exit summary names,
//! per blocked subject, the reason and what would allow it (the flag and
//! the TOML line), or that nothing does, in the words the 403 body uses.
//! Real curl inside real sandboxes; nothing leaves the host's loopback
//! (the proxy refuses every name here before looking it up, but
//! `localhost`).

mod common;

use std::net::{TcpListener, ToSocketAddrs};
use std::os::unix::fs::PermissionsExt;
use std::os::unix::net::UnixListener;
use std::path::Path;

use common::*;

/// The exit summary's lines on stderr: from the first `cordon: blocked`
/// through the line naming the audit log.
fn summary(out: &Output) -> Vec<String> {
    let lines: Vec<&str> = out.stderr.lines().collect();
    let Some(start) = lines.iter().position(|l| l.starts_with("cordon: blocked")) else {
        return Vec::new();
    };
    let end = lines[start..]
        .iter()
        .position(|l| l.starts_with("cordon: audit log: "))
        .map_or(lines.len(), |i| start + i + 1);
    lines[start..end].iter().map(|l| l.to_string()).collect()
}

/// The sandbox id the run's events carry (from its log).
fn sandbox_id(log: &Path) -> String {
    let text = std::fs::read_to_string(log).unwrap_or_default();
    let first: serde_json::Value =
        serde_json::from_str(text.lines().next().unwrap_or("{}")).unwrap();
    first["sandbox"].as_str().unwrap_or_default().to_string()
}

/// A host listener on 127.0.0.1 that must not be reached: returns its
/// port, and a check that nothing connected.
fn unreached_upstream() -> (u16, impl FnOnce() -> bool) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    listener.set_nonblocking(true).unwrap();
    let port = listener.local_addr().unwrap().port();
    (port, move || listener.accept().is_err())
}

#[test]
fn network_refusals_say_the_reason_and_the_flag_or_toml_line_that_allows_them() {
    if !have_curl() {
        return;
    }
    each_fixture(|mode, fx| {
        let (port, unreached) = unreached_upstream();
        // The proxy refuses localhost by the address it resolves to, as
        // it is the first the host's resolver gives.
        let first = ("localhost", port)
            .to_socket_addrs()
            .unwrap()
            .next()
            .unwrap();
        let range = if first.is_ipv4() {
            "127.0.0.0/8"
        } else {
            "::1/128"
        };
        let log = fx.outside.join("audit.jsonl");
        let curl =
            |url: &str| format!("curl -sS --noproxy '' -x http://127.0.0.1:3128 {url}; echo");
        let script = [
            curl("http://nope.example/"),
            curl("http://nope.example/again"),
            curl("http://evil.example.com/"),
            curl("http://ok.example:8080/"),
            curl(&format!("http://localhost:{port}/")),
        ]
        .join("\n");
        let out = fx
            .audited(&log)
            .flag("--allow-domain", "*.example.com")
            .flag("--deny-domain", "evil.example.com")
            .flag("--allow-domain", "ok.example")
            .flag("--allow-domain", format!("localhost:{port}"))
            .sh(&script);
        out.ok();
        assert!(unreached(), "{mode:?}: the upstream was reached");
        let ip = first.ip();
        let expected = vec![
            "cordon: blocked 5 network connections:".to_string(),
            r#"  nope.example:80 ×2: no allow rule names this host; allow with --allow-domain nope.example (or [network] allow = ["nope.example"])"#.to_string(),
            "  evil.example.com:80: a deny rule matches (rule: evil.example.com from flag --deny-domain); deny beats allow: nothing allows it while that deny rule is in force (`cordon explain` lists the rules and where each comes from)".to_string(),
            r#"  ok.example:8080: the host is allowed, but not on this port (rule: ok.example from flag --allow-domain); allow with --allow-domain ok.example:8080 (or [network] allow = ["ok.example:8080"]); or let rules without a port allow it too: --ports 80,443,8080 (or [network] ports = [80, 443, 8080])"#.to_string(),
            format!(
                r#"  localhost:{port}: localhost resolved to {ip}, a loopback address ({range}): allowing the name does not help; to reach a service on the host's own loopback, name host.cordon.internal in place of localhost: allow with --allow-domain host.cordon.internal:{port} (or [network] allow = ["host.cordon.internal:{port}"])"#
            ),
            format!("cordon: audit log: {}", log.display()),
        ];
        assert_eq!(summary(&out), expected, "{mode:?}: {out:#?}");
        // The 403 bodies say the same reason and fix.
        for said in &expected[1..expected.len() - 1] {
            let (_, words) = said.split_once(": ").unwrap();
            let (reason, fix) = words.split_once("; ").unwrap();
            assert!(
                out.stdout.contains(reason) && out.stdout.contains(fix),
                "{mode:?}: the 403 body does not say {words:?}: {}",
                out.stdout
            );
        }
        // And so does `cordon log`, where the summary sends the user.
        let shown = fx
            .sandbox()
            .subcommand("log")
            .flag("--file", &log)
            .flag("--sandbox", sandbox_id(&log))
            .arg("--denied")
            .run(&[]);
        shown.ok();
        for said in &expected[1..expected.len() - 1] {
            let (_, words) = said.split_once(": ").unwrap();
            assert!(
                shown.stdout.contains(words),
                "{mode:?}: `cordon log` does not say {words:?}: {}",
                shown.stdout
            );
        }
    });
}

#[test]
fn more_than_eight_subjects_point_at_cordon_log() {
    if !have_curl() {
        return;
    }
    each_fixture(|mode, fx| {
        let log = fx.outside.join("audit.jsonl");
        let script: Vec<String> = (0..10)
            .map(|i| format!("curl -sS --noproxy '' -x http://127.0.0.1:3128 http://h{i}.example/ >/dev/null"))
            .collect();
        let out = fx.audited(&log).sh(&script.join("; "));
        let lines = summary(&out);
        assert_eq!(lines.len(), 11, "{mode:?}: {out:#?}");
        assert_eq!(lines[0], "cordon: blocked 10 network connections:");
        assert!(
            lines[8].starts_with("  h7.example:80: no allow rule"),
            "{lines:#?}"
        );
        assert_eq!(
            lines[9],
            format!(
                "  2 more (cordon log --file {} --sandbox {} --door network --denied)",
                log.display(),
                sandbox_id(&log)
            ),
            "{mode:?}"
        );
        // --quiet still silences it.
        let quiet = fx.audited(&log).arg("--quiet").sh(&script.join("; "));
        assert_eq!(
            summary(&quiet),
            Vec::<String>::new(),
            "{mode:?}: {quiet:#?}"
        );
    });
}

#[test]
fn a_host_unix_socket_refusal_names_the_flag_and_what_a_container_socket_gives() {
    if !have_curl() {
        return;
    }
    each_fixture(|mode, fx| {
        let mut listeners = Vec::new();
        let mut paths = Vec::new();
        for name in ["daemon.sock", "docker.sock"] {
            let path = fx.outside.join(name);
            let listener = UnixListener::bind(&path).unwrap();
            std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o777)).unwrap();
            listener.set_nonblocking(true).unwrap();
            listeners.push(listener);
            paths.push(path.display().to_string());
        }
        let log = fx.outside.join("audit.jsonl");
        let script = paths
            .iter()
            .map(|p| format!("curl -sS --unix-socket {p} http://x/; echo"))
            .collect::<Vec<_>>()
            .join("\n");
        let out = fx.audited(&log).sh(&script);
        for l in &listeners {
            assert!(l.accept().is_err(), "{mode:?}: a host socket was reached");
        }
        let (daemon, docker) = (&paths[0], &paths[1]);
        assert_eq!(
            summary(&out),
            vec![
                "cordon: blocked 2 network connections:".to_string(),
                format!(
                    r#"  {daemon}: a host socket, not one bound inside the sandbox; allow with --allow-unix-socket {daemon} (or [network] allow_unix_sockets = ["{daemon}"])"#
                ),
                format!(
                    r#"  {docker}: a host socket, not one bound inside the sandbox; Docker's socket: whoever reaches it can start a privileged container, i.e. is root on the host; only if you mean that, allow with --allow-unix-socket {docker} (or [network] allow_unix_sockets = ["{docker}"])"#
                ),
                format!("cordon: audit log: {}", log.display()),
            ],
            "{mode:?}: {out:#?}"
        );
    });
}

#[test]
fn a_protected_name_refused_at_creation_says_nothing_allows_it_inside() {
    each_fixture(|mode, fx| {
        let log = fx.outside.join("audit.jsonl");
        let out = fx
            .audited(&log)
            .sh("echo x > .envrc 2>/dev/null; mkdir .vscode 2>/dev/null; true");
        out.ok();
        assert!(!fx.project.join(".envrc").exists(), "{mode:?}");
        assert!(!fx.project.join(".vscode").exists(), "{mode:?}");
        let p = fx.project.display();
        assert_eq!(
            summary(&out),
            vec![
                "cordon: blocked 2 file accesses:".to_string(),
                format!("  {p}/.envrc: protected: {p}/.envrc runs code later outside the sandbox; nothing allows it inside the sandbox: the built-in protected names cannot be lifted (files.protect only adds names); make it outside the sandbox if you mean to"),
                format!("  {p}/.vscode: protected: {p}/.vscode runs code later outside the sandbox; nothing allows it inside the sandbox: the built-in protected names cannot be lifted (files.protect only adds names); make it outside the sandbox if you mean to"),
                format!("cordon: audit log: {}", log.display()),
            ],
            "{mode:?}: {out:#?}"
        );
    });
}
