//! The network door's audit log, exit summary and connection cap, through
//! real sandboxes and the real proxy. Upstreams are on the host's
//! 127.0.0.1, allowed explicitly by IP and port.

mod common;

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::Path;

use common::*;
use sha2::{Digest, Sha256};

/// What the upstream answers to a GET.
const BODY: &str = "hello-from-upstream";

/// A host upstream on 127.0.0.1: answers a GET with [`BODY`] and closes;
/// echoes anything else (for tunnels), and holds the connection open after
/// the client's half-close.
fn upstream() -> u16 {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(mut s) = stream else { continue };
            std::thread::spawn(move || {
                let mut buf = [0u8; 4096];
                let mut first = true;
                loop {
                    let n = match s.read(&mut buf) {
                        // Like many servers, ignore the client's half-close
                        // and keep the connection: only cordon ending the
                        // tunnel closes it.
                        Ok(0) => {
                            std::thread::sleep(std::time::Duration::from_secs(30));
                            return;
                        }
                        Err(_) => return,
                        Ok(n) => n,
                    };
                    if first && buf.starts_with(b"GET ") {
                        let reply = format!(
                            "HTTP/1.1 200 OK\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{BODY}",
                            BODY.len()
                        );
                        let _ = s.write_all(reply.as_bytes());
                        return;
                    }
                    first = false;
                    if s.write_all(&buf[..n]).is_err() {
                        return;
                    }
                }
            });
        }
    });
    // Control: the upstream answers.
    let mut c = TcpStream::connect(("127.0.0.1", port)).unwrap();
    c.write_all(b"GET / HTTP/1.1\r\n\r\n").unwrap();
    let mut reply = String::new();
    c.read_to_string(&mut reply).unwrap();
    assert!(reply.ends_with(BODY), "upstream control: {reply}");
    port
}

/// A script of tests/py/ with the proxy client helpers
/// (tests/py/audit_helpers.py) before it.
macro_rules! with_helpers {
    ($file:literal) => {
        concat!(
            include_str!("py/audit_helpers.py"),
            include_str!(concat!("py/", $file))
        )
    };
}

/// `LABEL: <status line>` of a GET of HOST:PORT (argv) through the proxy.
const STATUS_PY: &str = with_helpers!("audit_status.py");
/// A GET of each host in argv, port 80.
const GET_HOSTS_PY: &str = with_helpers!("audit_get_hosts.py");

fn sha256(bytes: &[u8]) -> Vec<u8> {
    Sha256::digest(bytes).to_vec()
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// HMAC-SHA256 (RFC 2104), written out here so the tests check cordon's
/// log independently of the MAC code cordon uses.
fn hmac_sha256(key: &[u8], message: &[u8]) -> String {
    let mut block = [0u8; 64];
    block[..key.len()].copy_from_slice(key);
    let pad = |byte: u8| block.iter().map(|b| b ^ byte).collect::<Vec<u8>>();
    let inner = sha256(&[pad(0x36), message.to_vec()].concat());
    hex(&sha256(&[pad(0x5c), inner].concat()))
}

/// The audit key of the fixture's user (under the default state home).
fn key_of(fx: &Fixture) -> std::path::PathBuf {
    fx.home.join(".local/state/cordon/audit.key")
}

/// Splits a line into the JSON its MAC covers and the MAC.
fn unseal(line: &str) -> (String, String) {
    let at = line
        .rfind(",\"mac\":\"")
        .unwrap_or_else(|| panic!("no mac: {line}"));
    let mac = line[at + 8..].trim_end_matches("\"}").to_string();
    (format!("{}}}", &line[..at]), mac)
}

/// Checks every line's MAC, seq and prev under the key file `key`,
/// independently of cordon's own verifier (and then with it), and returns
/// the events.
#[track_caller]
fn chained_events(path: &Path, key: &Path) -> Vec<serde_json::Value> {
    let text = std::fs::read_to_string(path)
        .unwrap_or_else(|e| panic!("audit log {}: {e}", path.display()));
    let key_bytes = std::fs::read(key).unwrap_or_else(|e| panic!("key {}: {e}", key.display()));
    assert_eq!(key_bytes.len(), 32);
    assert!(text.ends_with('\n'), "last line unterminated: {text}");
    let mut prev = String::new();
    let mut events = Vec::new();
    for (i, l) in text.lines().enumerate() {
        let v: serde_json::Value =
            serde_json::from_str(l).unwrap_or_else(|e| panic!("line {}: {e}: {l}", i + 1));
        let (body, mac) = unseal(l);
        assert_eq!(
            hmac_sha256(&key_bytes, body.as_bytes()),
            mac,
            "line {}: {l}",
            i + 1
        );
        assert_eq!(v["mac"], mac);
        assert_eq!(v["prev"], prev, "chain broken at line {}:\n{text}", i + 1);
        assert_eq!(v["seq"], i as u64 + 1, "line {}", i + 1);
        prev = mac;
        events.push(v);
    }
    // cordon's verifier takes only a key of the caller's own.
    if std::fs::metadata(key).unwrap().uid() == nix::unistd::geteuid().as_raw() {
        let cordon_key = cordon::audit::AuditKey::load(key).unwrap();
        assert_eq!(cordon::audit::verify(&text, &cordon_key), Ok(events.len()));
    }
    events
}

fn find<'a>(
    events: &'a [serde_json::Value],
    what: &[(&str, &str)],
) -> Option<&'a serde_json::Value> {
    events
        .iter()
        .find(|e| what.iter().all(|(k, v)| e[*k] == *v))
}

#[track_caller]
fn must_find<'a>(events: &'a [serde_json::Value], what: &[(&str, &str)]) -> &'a serde_json::Value {
    find(events, what).unwrap_or_else(|| panic!("no event with {what:?} in {events:#?}"))
}

fn is_sandbox_id(s: &str) -> bool {
    let parts: Vec<&str> = s.split('-').collect();
    parts.len() == 3
        && parts[0] == "cordon"
        && parts[1].parse::<u32>().is_ok()
        && parts[2].len() == 12
        && parts[2].chars().all(|c| c.is_ascii_hexdigit())
}

fn is_rfc3339_ms(s: &str) -> bool {
    let b = s.as_bytes();
    s.len() == 24
        && b[4] == b'-'
        && b[7] == b'-'
        && b[10] == b'T'
        && b[13] == b':'
        && b[16] == b':'
        && b[19] == b'.'
        && s.ends_with('Z')
}

#[test]
fn allowed_and_denied_connections_are_logged_and_summarised() {
    let port = upstream();
    each_fixture(|mode, fx| {
        let log = fx.outside.join("audit.jsonl");
        let secret = format!("tok{}", fx.token);
        let out = fx
            .audited(&log)
            .flag("--allow-domain", format!("127.0.0.1:{port}"))
            .flag("--deny-domain", "denied.example")
            .py_args(
                with_helpers!("audit_mixed.py"),
                &[&port.to_string(), &secret, BODY],
            );
        out.ok();
        assert_eq!(
            line(&out, "allowed"),
            "HTTP/1.1 200 OK True",
            "{mode:?}: {out:#?}"
        );
        assert_eq!(
            line(&out, "denied"),
            "HTTP/1.1 403 Forbidden",
            "{mode:?}: {out:#?}"
        );
        assert_eq!(
            line(&out, "unlisted"),
            "HTTP/1.1 403 Forbidden",
            "{mode:?}: {out:#?}"
        );
        assert_eq!(line(&out, "socks"), "True", "{mode:?}: {out:#?}");
        assert_eq!(
            line(&out, "socks-denied"),
            "socks reply 2",
            "{mode:?}: {out:#?}"
        );

        // One summary, most frequent first, each subject with its
        // reason, naming the log.
        let summary: Vec<&str> = out
            .stderr
            .lines()
            .skip_while(|l| !l.starts_with("cordon: blocked"))
            .collect();
        let subjects: Vec<&str> = summary
            .iter()
            .filter_map(|l| l.strip_prefix("  ")?.split(": ").next())
            .collect();
        assert_eq!(
            summary[0], "cordon: blocked 4 network connections:",
            "{mode:?}: {out:#?}"
        );
        assert_eq!(
            subjects,
            [
                "unlisted.example:80 ×2",
                "denied.example:80",
                "denied.example:443"
            ],
            "{mode:?}: {out:#?}"
        );
        assert!(
            summary[2]
                .contains("a deny rule matches (rule: denied.example from flag --deny-domain)"),
            "{mode:?}: {out:#?}"
        );
        assert_eq!(
            summary.last().copied().unwrap_or_default(),
            format!("cordon: audit log: {}", log.display()),
            "{mode:?}: {out:#?}"
        );

        let meta = std::fs::metadata(&log).unwrap();
        assert_eq!(
            meta.uid(),
            mode.uid(),
            "{mode:?}: the log belongs to the caller"
        );
        assert_eq!(meta.permissions().mode() & 0o777, 0o600);
        let events = chained_events(&log, &key_of(fx));
        let sandbox = events[0]["sandbox"].as_str().unwrap().to_string();
        assert!(is_sandbox_id(&sandbox), "{sandbox}");
        for e in &events {
            assert_eq!(e["sandbox"], sandbox.as_str(), "{e}");
            assert_eq!(e["command"], "python3", "{e}");
            assert_eq!(e["door"], "network", "{e}");
            assert!(is_rfc3339_ms(e["time"].as_str().unwrap()), "{e}");
        }
        let subject = format!("127.0.0.1:{port}");
        let allow = [
            ("event", "decision"),
            ("verdict", "allow"),
            ("subject", &subject),
            ("proto", "http"),
        ];
        let allowed = must_find(&events, &allow);
        assert_eq!(allowed["rule"], subject.as_str());
        assert_eq!(allowed["source"], "flag --allow-domain");
        assert_eq!(allowed["address"], subject.as_str());
        let close = must_find(
            &events,
            &[("event", "close"), ("subject", &subject), ("proto", "http")],
        );
        assert_eq!(close["verdict"], "allow");
        let (up, down) = (
            close["bytes_up"].as_u64().unwrap(),
            close["bytes_down"].as_u64().unwrap(),
        );
        assert!(up > 0, "{close}");
        assert!(down as usize > BODY.len(), "{close}");
        assert!(close["duration_ms"].is_u64(), "{close}");
        let socks_close = must_find(
            &events,
            &[
                ("event", "close"),
                ("subject", &subject),
                ("proto", "socks5"),
            ],
        );
        assert!(socks_close["bytes_down"].as_u64().unwrap() as usize > BODY.len());

        let denied = must_find(
            &events,
            &[("verdict", "deny"), ("subject", "denied.example:80")],
        );
        assert_eq!(denied["rule"], "denied.example");
        assert_eq!(denied["source"], "flag --deny-domain");
        assert_eq!(denied["proto"], "http");
        assert_eq!(denied["event"], "decision");
        let socks_denied = must_find(
            &events,
            &[("verdict", "deny"), ("subject", "denied.example:443")],
        );
        assert_eq!(socks_denied["proto"], "socks5");
        let unlisted = must_find(
            &events,
            &[("verdict", "deny"), ("subject", "unlisted.example:80")],
        );
        assert_eq!(unlisted["rule"], "default: nothing is allowed");
        assert_eq!(unlisted["source"], "built-in");
        assert_eq!(
            events.iter().filter(|e| e["verdict"] == "deny").count(),
            4,
            "{events:#?}"
        );
        // Paths, queries and argument values stay out of the log.
        let text = std::fs::read_to_string(&log).unwrap();
        assert!(!text.contains(&secret), "{text}");
        assert!(!text.contains("private"), "{text}");
    });
}

#[test]
fn quiet_silences_the_summary_and_runs_append_to_one_chain() {
    let port = upstream();
    each_fixture(|mode, fx| {
        let log = fx.outside.join("audit.jsonl");
        let run = |status: [&str; 3], quiet: bool| {
            let mut sb = fx
                .audited(&log)
                .flag("--allow-domain", format!("127.0.0.1:{port}"));
            if quiet {
                sb = sb.arg("--quiet");
            }
            sb.py_args(STATUS_PY, &status)
        };
        // Nothing blocked: no summary.
        let out = run(["allowed", "127.0.0.1", &port.to_string()], false);
        assert_eq!(
            line(&out, "allowed"),
            "HTTP/1.1 200 OK",
            "{mode:?}: {out:#?}"
        );
        assert!(
            !out.stderr.contains("cordon: blocked"),
            "{mode:?}: {out:#?}"
        );
        let first_run = chained_events(&log, &key_of(fx));
        assert!(!first_run.is_empty());

        // Blocked, but --quiet: no summary, still logged.
        let out = run(["denied", "nope.example", "80"], true);
        assert_eq!(
            line(&out, "denied"),
            "HTTP/1.1 403 Forbidden",
            "{mode:?}: {out:#?}"
        );
        assert!(
            !out.stderr.contains("cordon: blocked"),
            "{mode:?}: {out:#?}"
        );
        // Control: the same run without --quiet prints it.
        let out = run(["denied", "nope.example", "80"], false);
        assert!(
            out.stderr.contains(
                "cordon: blocked 1 network connection:\n  nope.example:80: no allow rule names this host; "
            ) && out.stderr.contains("\ncordon: audit log: "),
            "{mode:?}: {out:#?}"
        );

        // Three runs, one chain; each run has its own sandbox id.
        let events = chained_events(&log, &key_of(fx));
        let ids: std::collections::BTreeSet<&str> = events
            .iter()
            .filter_map(|e| e["sandbox"].as_str())
            .collect();
        assert_eq!(ids.len(), 3, "{events:#?}");
        assert_eq!(
            events
                .iter()
                .filter(|e| e["subject"] == "nope.example:80" && e["verdict"] == "deny")
                .count(),
            2
        );
        // The second run's first line chains from the first run's last one.
        let text = std::fs::read_to_string(&log).unwrap();
        let lines: Vec<&str> = text.lines().collect();
        let n = first_run.len();
        let last_of_first: serde_json::Value = serde_json::from_str(lines[n - 1]).unwrap();
        assert_eq!(events[n]["prev"], last_of_first["mac"]);
    });
}

#[test]
fn default_log_location_fail_closed_and_read_only_inside() {
    each_fixture(|mode, fx| {
        let deny = |sb: Sandbox| sb.py_args(STATUS_PY, &["denied", "nope.example", "443"]);

        // Default: ~/.local/state/cordon/audit.jsonl, directory 0700.
        let out = deny(fx.sandbox());
        assert_eq!(
            line(&out, "denied"),
            "HTTP/1.1 403 Forbidden",
            "{mode:?}: {out:#?}"
        );
        let dir = fx.home.join(".local/state/cordon");
        let log = dir.join("audit.jsonl");
        let events = chained_events(&log, &key_of(fx));
        must_find(
            &events,
            &[("verdict", "deny"), ("subject", "nope.example:443")],
        );
        assert_eq!(
            std::fs::metadata(&dir).unwrap().permissions().mode() & 0o777,
            0o700
        );
        assert_eq!(std::fs::metadata(&log).unwrap().uid(), mode.uid());
        assert!(
            out.stderr
                .contains(&format!("\ncordon: audit log: {}", log.display())),
            "{mode:?}: {out:#?}"
        );

        // $XDG_STATE_HOME moves it.
        let state = fx.outside.join("state");
        let out = deny(fx.sandbox().env("XDG_STATE_HOME", &state));
        out.ok();
        let moved = state.join("cordon/audit.jsonl");
        must_find(
            &chained_events(&moved, &state.join("cordon/audit.key")),
            &[("subject", "nope.example:443")],
        );
        assert_eq!(
            chained_events(&log, &key_of(fx)).len(),
            events.len(),
            "written to the old place too"
        );

        // A log that cannot be opened: nothing runs, exit 125, the path named.
        let bad = fx.outside.join("missing-dir/audit.jsonl");
        let ran = fx.project.join("ran");
        let out = fx.audited(&bad).run(&["touch", ran.to_str().unwrap()]);
        out.expect_code(125);
        assert!(
            out.stderr.contains(&bad.display().to_string()),
            "{mode:?}: {out:#?}"
        );
        assert!(
            !ran.exists(),
            "{mode:?}: the command ran without its audit log"
        );
        // Control: with the log off, the same command runs.
        fx.audited("none")
            .run(&["touch", ran.to_str().unwrap()])
            .ok();
        assert!(ran.exists());

        // A log inside the project stays read-only to the sandbox.
        let inside = fx.project.join("audit.jsonl");
        let out = fx
            .audited(&inside)
            .py_args(with_helpers!("audit_forge.py"), &[inside.to_str().unwrap()]);
        assert_eq!(
            line(&out, "denied"),
            "HTTP/1.1 403 Forbidden",
            "{mode:?}: {out:#?}"
        );
        assert!(
            line(&out, "forge").starts_with("ERR E"),
            "{mode:?}: the sandbox wrote its log: {out:#?}"
        );
        let events = chained_events(&inside, &key_of(fx));
        must_find(&events, &[("subject", "nope.example:443")]);
    });
}

#[test]
fn connection_cap_refuses_with_503_and_is_reported_once() {
    let port = upstream();
    each_fixture(|mode, fx| {
        let log = fx.outside.join("audit.jsonl");
        let out = fx
            .audited(&log)
            .flag("--max-connections", "2")
            .flag("--allow-domain", format!("127.0.0.1:{port}"))
            .py_args(with_helpers!("audit_cap.py"), &[&port.to_string()]);
        out.ok();
        let established = "HTTP/1.1 200 Connection established";
        assert_eq!(line(&out, "first"), established, "{mode:?}: {out:#?}");
        assert_eq!(line(&out, "second"), established, "{mode:?}: {out:#?}");
        assert_eq!(
            line(&out, "third"),
            "HTTP/1.1 503 Service Unavailable",
            "{mode:?}: {out:#?}"
        );
        assert_eq!(line(&out, "names flag"), "True", "{mode:?}: {out:#?}");
        assert_eq!(
            line(&out, "fourth"),
            "HTTP/1.1 503 Service Unavailable",
            "{mode:?}: {out:#?}"
        );
        assert_eq!(line(&out, "tunnel a"), "ping", "{mode:?}: {out:#?}");

        let warnings = out
            .stderr
            .lines()
            .filter(|l| l.contains("reached its cap of 2 connections"))
            .count();
        assert_eq!(warnings, 1, "{mode:?}: {out:#?}");
        assert!(
            out.stderr
                .contains("cordon: blocked 2 network connections:\n  (over the connection cap) ×2: the proxy's cap of connections at once was reached (2, flag --max-connections); close idle connections, or raise the cap: --max-connections N (or [network] max_connections = N)\n"),
            "{mode:?}: {out:#?}"
        );
        let events = chained_events(&log, &key_of(fx));
        let limits: Vec<_> = events.iter().filter(|e| e["event"] == "limit").collect();
        assert_eq!(limits.len(), 1, "{events:#?}");
        assert_eq!(limits[0]["verdict"], "deny");
        assert_eq!(limits[0]["rule"], "max_connections = 2");
        assert_eq!(limits[0]["source"], "flag --max-connections");
        // The two tunnels in the cap were still open when the command
        // exited (the upstream ignores half-closes): cordon ended them and
        // recorded them.
        let closes = events.iter().filter(|e| e["event"] == "close").count();
        assert_eq!(closes, 2, "{events:#?}");
    });
}

/// `cordon log` shows, filters and verifies what runs wrote; a removed or
/// edited line breaks `--verify`.
#[test]
fn cordon_log_filters_and_verifies_the_chain() {
    let fx = Fixture::new(Mode::Root);
    let log = fx.outside.join("audit.jsonl");
    for _ in 0..2 {
        fx.audited(&log)
            .py(include_str!("py/audit_raw_denied.py"))
            .ok();
    }
    let cordon_log = |args: &[&str]| cordon_log(&fx, &log, args);
    let (code, all, err) = cordon_log(&["--json"]);
    assert_eq!(code, 0, "{err}");
    let events: Vec<serde_json::Value> = all
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(events.len(), 2, "{all}");
    let first = events[0]["sandbox"].as_str().unwrap().to_string();
    assert_ne!(first, events[1]["sandbox"].as_str().unwrap());

    let (_, one, _) = cordon_log(&["--sandbox", &first]);
    assert_eq!(one.lines().count(), 1, "{one}");
    assert!(
        one.contains("DENY") && one.contains("denied.example:80"),
        "{one}"
    );
    let (_, none, _) = cordon_log(&["--door", "files"]);
    assert!(none.is_empty(), "{none}");
    let (_, later, _) = cordon_log(&["--since", "2999-01-01T00:00:00Z"]);
    assert!(later.is_empty(), "{later}");

    let (code, ok, _) = cordon_log(&["--verify"]);
    assert_eq!(code, 0, "{ok}");
    assert!(
        ok.contains("2 events, every line authenticated by your audit key"),
        "{ok}"
    );

    let text = std::fs::read_to_string(&log).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    std::fs::write(&log, format!("{}\n", lines[1])).unwrap();
    let (code, out, _) = cordon_log(&["--verify"]);
    assert_eq!(code, 1, "a removed first line verified: {out}");
    let edited = lines[0].replace("denied.example", "allowed.example");
    std::fs::write(&log, format!("{edited}\n{}\n", lines[1])).unwrap();
    let (code, out, _) = cordon_log(&["--verify"]);
    assert_eq!(code, 1, "an edited line verified: {out}");
    assert!(
        out.contains("line 1: its MAC does not match: the line was edited"),
        "{out}"
    );
}

/// Runs `cordon log --file LOG ARGS` on the host as root, with the
/// fixture's home (so its audit key); returns (code, stdout, stderr).
fn cordon_log(fx: &Fixture, log: &Path, args: &[&str]) -> (i32, String, String) {
    let mut c = std::process::Command::new(cordon_bin());
    c.arg("log")
        .arg("--file")
        .arg(log)
        .args(args)
        .env("HOME", &fx.home)
        .env_remove("XDG_STATE_HOME");
    let out = c.output().unwrap();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// Rewrites every line of `text` as `line` makes it from its event (seq
/// and prev removed, as `chain` then sets them) and the previous line.
fn rechain(text: &str, mut seal: impl FnMut(serde_json::Value, &str, u64) -> String) -> String {
    let mut out = String::new();
    let mut prev = String::new();
    for (i, l) in text.lines().enumerate() {
        let mut v: serde_json::Value = serde_json::from_str(l).unwrap();
        for field in ["seq", "prev", "mac"] {
            v.as_object_mut().unwrap().remove(field);
        }
        let line = seal(v, &prev, i as u64 + 1);
        prev = line.clone();
        out.push_str(&line);
        out.push('\n');
    }
    out
}

/// The attack: whoever can write the log file writes a whole new chain,
/// with the unkeyed SHA-256 scheme, with SHA-256 in place of the MAC, or
/// with a key of their own; or cuts its last lines off. `--verify` must
/// reject each and name the line; the honest log passes.
#[test]
fn forged_and_truncated_logs_fail_verify() {
    let fx = Fixture::new(Mode::Root);
    let log = fx.outside.join("audit.jsonl");
    fx.audited(&log)
        .py_args(GET_HOSTS_PY, &["a.example", "b.example", "c.example"])
        .ok();
    let honest = std::fs::read_to_string(&log).unwrap();
    assert_eq!(honest.lines().count(), 3, "{honest}");
    let (code, out, err) = cordon_log(&fx, &log, &["--verify"]);
    assert_eq!(code, 0, "the honest log: {out}{err}");

    let forged_subject = |v: &mut serde_json::Value| v["subject"] = "innocent.example:80".into();
    // The unkeyed scheme of older versions: prev = SHA-256 of the line before.
    let unkeyed = rechain(&honest, |mut v, prev_line, _| {
        forged_subject(&mut v);
        v["prev"] = hex(&sha256(prev_line.as_bytes())).into();
        v.to_string()
    });
    // The keyed layout, with plain SHA-256 where the MAC goes.
    let plain = |mac: &dyn Fn(&[u8]) -> String| {
        let mut macs = vec![String::new()];
        rechain(&honest, |mut v, _, seq| {
            forged_subject(&mut v);
            v["seq"] = seq.into();
            v["prev"] = macs.last().unwrap().clone().into();
            let body = v.to_string();
            let m = mac(body.as_bytes());
            macs.push(m.clone());
            format!("{},\"mac\":\"{m}\"}}", &body[..body.len() - 1])
        })
    };
    let sha_only = plain(&|b| hex(&sha256(b)));
    let other_key = [7u8; 32];
    let with_other_key = plain(&|b| hmac_sha256(&other_key, b));
    let cases = [
        (unkeyed, "line 1: no MAC"),
        (sha_only, "line 1: its MAC does not match"),
        (with_other_key, "line 1: its MAC does not match"),
    ];
    for (forged, why) in cases {
        std::fs::write(&log, &forged).unwrap();
        let (code, out, err) = cordon_log(&fx, &log, &["--verify"]);
        assert_eq!(code, 1, "a forged log verified:\n{forged}\n{out}{err}");
        assert!(out.contains(why), "{why}: {out}");
    }

    // The last line cut off: the run's tail record still names it.
    let lines: Vec<&str> = honest.lines().collect();
    std::fs::write(&log, lines[..2].join("\n") + "\n").unwrap();
    let (code, out, _) = cordon_log(&fx, &log, &["--verify"]);
    assert_eq!(code, 1, "a truncated log verified: {out}");
    assert!(
        out.contains("the log ends at seq 2, but cordon wrote up to seq 3"),
        "{out}"
    );
    // A line moved.
    std::fs::write(&log, format!("{}\n{}\n{}\n", lines[0], lines[2], lines[1])).unwrap();
    let (code, out, _) = cordon_log(&fx, &log, &["--verify"]);
    assert_eq!(code, 1, "a reordered log verified: {out}");
    assert!(out.contains("line 2: seq 3 where 2 was expected"), "{out}");
    // Control: the honest log, put back, passes.
    std::fs::write(&log, &honest).unwrap();
    assert_eq!(cordon_log(&fx, &log, &["--verify"]).0, 0);
}

/// The attack: a sandbox reads the audit key (to forge lines that verify)
/// or replaces it, also where the state directory lies in a writable
/// area; or a rule reads it back in.
#[test]
fn the_audit_key_is_out_of_the_sandboxs_reach() {
    each_fixture(|mode, fx| {
        let deny = |sb: Sandbox| sb.py_args(STATUS_PY, &["denied", "nope.example", "443"]);
        // The first run makes the key, 0600, the user's.
        deny(fx.sandbox()).ok();
        let key = key_of(fx);
        let meta = std::fs::metadata(&key).expect("the first run makes the key");
        assert_eq!(meta.permissions().mode() & 0o777, 0o600);
        assert_eq!(meta.uid(), mode.uid());
        assert_eq!(meta.len(), 32);
        let original = std::fs::read(&key).unwrap();
        let state = key.parent().unwrap().to_path_buf();
        let attempts = |key: &Path, state: &Path| {
            py_tries(
                &[],
                "",
                &[
                    ("read key", format!("open('{}', 'rb').read()", key.display())),
                    (
                        "list state",
                        format!(
                            "if 'audit.key' not in os.listdir('{}'): raise OSError(errno.ENOENT, 'hidden')",
                            state.display()
                        ),
                    ),
                    (
                        "replace key",
                        format!("open('{}', 'wb').write(b'x' * 32)", key.display()),
                    ),
                    (
                        "move state aside",
                        format!("os.rename('{0}', '{0}.old')", state.display()),
                    ),
                ],
            )
        };
        let out = fx.sandbox().tries(&attempts(&key, &state));
        out.ok();
        for label in ["read key", "list state", "replace key", "move state aside"] {
            assert!(
                line(&out, label).starts_with("ERR"),
                "{mode:?}: {label}: {out:#?}"
            );
        }
        assert_eq!(std::fs::read(&key).unwrap(), original);

        // The state directory inside the project, a writable area.
        let inner_state = fx.project.join("state");
        std::fs::create_dir(&inner_state).unwrap();
        std::fs::set_permissions(&inner_state, std::fs::Permissions::from_mode(0o700)).unwrap();
        chown(&inner_state, mode);
        let run = || fx.sandbox().env("XDG_STATE_HOME", &inner_state);
        deny(run()).ok();
        let inner_key = inner_state.join("cordon/audit.key");
        let original = std::fs::read(&inner_key).expect("the key in the project's state dir");
        let out = run().tries(&attempts(&inner_key, inner_key.parent().unwrap()));
        for label in ["read key", "list state", "replace key", "move state aside"] {
            assert!(
                line(&out, label).starts_with("ERR"),
                "{mode:?}: {label} in a writable area: {out:#?}"
            );
        }
        assert_eq!(std::fs::read(&inner_key).unwrap(), original);
        assert!(inner_key.parent().unwrap().is_dir());

        // A rule that would read the key back in: nothing runs.
        let ran = fx.project.join("ran");
        let out = fx
            .sandbox()
            .flag("--allow-read", &state)
            .run(&["touch", ran.to_str().unwrap()]);
        out.expect_code(125);
        assert!(out.stderr.contains("audit state"), "{mode:?}: {out:#?}");
        assert!(!ran.exists());
    });
}

/// The attack: a loop of allowed connections fills the host's disk
/// through the log. Past the flood limit they are counted, not logged.
#[test]
fn a_loop_of_allowed_connections_does_not_grow_the_log_past_the_limit() {
    let port = upstream();
    let fx = Fixture::new(Mode::Root);
    let log = fx.outside.join("audit.jsonl");
    let out = fx
        .audited(&log)
        .flag("--allow-domain", format!("127.0.0.1:{port}"))
        .py_args(with_helpers!("audit_loop.py"), &[&port.to_string(), "150"]);
    out.ok();
    assert_eq!(line(&out, "ok"), "150", "{out:#?}");
    let events = chained_events(&log, &key_of(&fx));
    let subject = format!("127.0.0.1:{port}");
    let count = |kind: &str| {
        events
            .iter()
            .filter(|e| e["subject"] == subject.as_str() && e["event"] == kind)
            .count()
    };
    assert_eq!(count("decision"), 20, "{events:#?}");
    assert_eq!(count("close"), 20, "{events:#?}");
    assert_eq!(count("limit"), 2, "{events:#?}");
    assert!(events.len() <= 42, "{} lines", events.len());
}

/// The seccomp deny list's refusals are process-door events of the same
/// log, and count in the exit summary.
#[test]
fn seccomp_refusals_are_logged() {
    each_fixture(|mode, fx| {
        let log = fx.outside.join("audit.jsonl");
        // Both calls are harmless where they succeed (a new user namespace
        // for this process alone; reading a keyring's id).
        let out = fx.audited(&log).py(include_str!("py/audit_seccomp.py"));
        out.ok();
        assert!(out.stdout.contains("unshare: -1 1\n"), "{mode:?}: {out:#?}");
        assert!(out.stdout.contains("keyctl: -1 1\n"), "{mode:?}: {out:#?}");
        let events = chained_events(&log, &key_of(fx));
        for syscall in ["unshare", "keyctl"] {
            must_find(
                &events,
                &[
                    ("door", "process"),
                    ("verdict", "deny"),
                    ("subject", syscall),
                ],
            );
        }
        // In the order the command met them: each is recorded before the
        // call returns.
        assert!(
            out.stderr.contains(
                "blocked 2 process operations:\n  unshare: refused with EPERM (`cordon explain` lists them); nothing allows it: the list is built in\n  keyctl: "
            ),
            "{mode:?}: {out:#?}"
        );
        let order: Vec<&str> = events
            .iter()
            .filter(|e| e["door"] == "process")
            .filter_map(|e| e["subject"].as_str())
            .collect();
        assert_eq!(order, ["unshare", "keyctl"], "{mode:?}");
    });
}

/// A sandbox repeating a refused call does not flood the host's log: past
/// a few, repeats are counted (the summary has them all) and one event
/// says so. Subjects with control characters print escaped.
#[test]
fn repeated_refusals_are_counted_not_logged_and_print_escaped() {
    let fx = Fixture::new(Mode::Root);
    let log = fx.outside.join("audit.jsonl");
    let out = fx.audited(&log).py(include_str!("py/audit_repeats.py"));
    out.ok();
    let events = chained_events(&log, &key_of(&fx));
    let unshares = events
        .iter()
        .filter(|e| e["subject"] == "unshare" && e["event"] == "decision")
        .count();
    assert!(unshares <= 20, "{unshares} unshare events logged");
    must_find(&events, &[("subject", "unshare"), ("event", "limit")]);
    assert!(
        out.stderr.contains("unshare ×500"),
        "the summary counts every refusal: {out:#?}"
    );
    assert!(
        !out.stderr.contains('\u{1b}'),
        "raw escape printed: {out:#?}"
    );
    assert!(out.stderr.contains("\\x1b]0;owned\\x07"), "{out:#?}");
}

/// What a host-side message may not carry raw: C0 controls (but the line
/// breaks cordon writes), DEL, C1 controls, bidirectional controls and
/// invisible format characters.
#[track_caller]
fn assert_no_raw_controls(what: &str, text: &str) {
    let bad: Vec<String> = text
        .chars()
        .filter(|&c| {
            let n = u32::from(c);
            (c.is_control() && c != '\n')
                || matches!(n, 0x200B..=0x200F | 0x202A..=0x202E | 0x2060..=0x2069 | 0x061C | 0xFEFF)
        })
        .map(|c| format!("U+{:04X}", u32::from(c)))
        .collect();
    assert!(bad.is_empty(), "{what}: raw {bad:?} in {text:?}");
}

/// The attack: names the sandbox chooses reach the user's terminal raw
/// through host-side messages. A repository named with an erase-line
/// sequence, an OSC 52 clipboard write and SGR 8 (hidden text), whose
/// config the sweep after the run neutralises and names; host names with U+202E, U+2066 and U+200B,
/// which the exit summary names. Both must print escaped.
#[test]
fn host_messages_escape_what_the_sandbox_chose() {
    each_fixture(|mode, fx| {
        let log = fx.outside.join("audit.jsonl");
        let out = fx
            .audited(&log)
            .env("GIT_CONFIG_NOSYSTEM", "1")
            .py(with_helpers!("audit_hostile_names.py"));
        out.ok();
        assert!(
            out.stdout.contains("denied: HTTP/1.1 403"),
            "{mode:?}: {out:#?}"
        );
        // Bytes that are not UTF-8, escaped rather than replaced.
        assert!(
            out.stderr.contains("bytes\\xff\\xfename"),
            "{mode:?}: {out:#?}"
        );
        assert!(!out.stderr.contains('\u{fffd}'), "{mode:?}: {out:#?}");
        // Controls: the warning and the summary were printed, escaped.
        assert!(
            out.stderr
                .contains("repo\\x1b[2K\\x1b]52;c;ZWNobyBvd25lZA==\\x07\\x1b[8mhidden"),
            "{mode:?}: {out:#?}"
        );
        assert!(
            out.stderr.contains("evil\\u{202e}gpj.example"),
            "{mode:?}: {out:#?}"
        );
        assert!(
            out.stderr.contains("a\\u{2066}b.example"),
            "{mode:?}: {out:#?}"
        );
        assert!(
            out.stderr.contains("zero\\u{200b}width.example"),
            "{mode:?}: {out:#?}"
        );
        assert_no_raw_controls("the supervisor's stderr", &out.stderr);
        // `cordon log` shows the same subjects escaped.
        let (code, shown, err) = cordon_log(fx, &log, &[]);
        if mode == Mode::Root {
            assert_eq!(code, 0, "{err}");
            assert!(shown.contains("evil\\u{202e}gpj.example"), "{shown}");
            assert_no_raw_controls("cordon log", &shown);
        }
    });
}

/// The attack: a log in a writable area (the project) was replaced, by an
/// earlier run, with a link to the user's shell startup file (or a
/// dangling link where a new file would run as root); the next run must
/// not append a line whose subject holds `$(...)` to it, nor create the
/// link's target. A hard link, or a file of someone else's, at the path
/// is refused the same way. Nothing runs: exit 125, the path named.
#[test]
fn a_link_at_the_log_path_is_refused_and_nothing_runs() {
    each_fixture(|mode, fx| {
        let bashrc = fx.home.join(".bashrc");
        let original = "# the user's own\n";
        std::fs::write(&bashrc, original).unwrap();
        chown(&bashrc, mode);
        let created = fx.outside.join("profile.d-x.sh");
        let log = fx.project.join("cordon-audit.jsonl");
        let hard_target = fx.outside.join("hard.txt");
        std::fs::write(&hard_target, original).unwrap();
        chown(&hard_target, mode);
        let ran = fx.project.join("ran");
        let request = |sb: Sandbox| {
            sb.py_args(
                with_helpers!("audit_request_then_mark.py"),
                &[ran.to_str().unwrap()],
            )
        };
        let attempts: [(&str, &dyn Fn()); 3] = [
            ("a link to the shell's startup file", &|| {
                std::os::unix::fs::symlink(&bashrc, &log).unwrap()
            }),
            ("a dangling link", &|| {
                std::os::unix::fs::symlink(&created, &log).unwrap()
            }),
            ("a hard link", &|| {
                std::fs::hard_link(&hard_target, &log).unwrap()
            }),
        ];
        for (what, plant) in attempts {
            let _ = std::fs::remove_file(&log);
            plant();
            let out = request(fx.audited(&log));
            out.expect_code(125);
            assert!(
                out.stderr.contains(&log.display().to_string()),
                "{mode:?} {what}: {out:#?}"
            );
            assert!(!ran.exists(), "{mode:?} {what}: the command ran");
            assert_eq!(
                std::fs::read_to_string(&bashrc).unwrap(),
                original,
                "{mode:?} {what}"
            );
            assert_eq!(
                std::fs::read_to_string(&hard_target).unwrap(),
                original,
                "{mode:?} {what}"
            );
            assert!(
                !created.exists(),
                "{mode:?} {what}: the link's target was created"
            );
        }
        assert!(
            std::fs::symlink_metadata(&log).is_ok(),
            "the planted name is left for the user to inspect"
        );
        // A file of another user's at the path.
        if mode == Mode::Root {
            std::fs::remove_file(&log).unwrap();
            std::fs::write(&log, "").unwrap();
            std::os::unix::fs::chown(&log, Some(65534), Some(65534)).unwrap();
            let out = request(fx.audited(&log));
            out.expect_code(125);
            assert!(out.stderr.contains("belongs to uid 65534"), "{out:#?}");
            assert!(!ran.exists());
        }
        // Control: a plain file of the user's own at the path is used.
        let _ = std::fs::remove_file(&log);
        request(fx.audited(&log)).ok();
        assert!(ran.exists(), "{mode:?}");
        must_find(
            &chained_events(&log, &key_of(fx)),
            &[("subject", "pwned.example:80")],
        );
        let _ = std::fs::remove_file(&ran);
    });
}

/// The attack: a log emptied, or replaced with another complete chain
/// under the same key (an earlier log of the user's), verified as whole
/// although cordon wrote more to that file.
#[test]
fn an_emptied_or_replaced_log_fails_verify() {
    let fx = Fixture::new(Mode::Root);
    let log = fx.outside.join("audit.jsonl");
    let other = fx.outside.join("other.jsonl");
    let script = |sb: Sandbox| sb.py_args(GET_HOSTS_PY, &["a.example", "b.example"]);
    script(fx.audited(&other)).ok();
    script(fx.audited(&log)).ok();
    script(fx.audited(&log)).ok();
    let honest = std::fs::read_to_string(&log).unwrap();
    assert_eq!(honest.lines().count(), 4, "{honest}");
    assert_eq!(cordon_log(&fx, &log, &["--verify"]).0, 0);

    std::fs::write(&log, "").unwrap();
    let (code, out, _) = cordon_log(&fx, &log, &["--verify"]);
    assert_eq!(code, 1, "an emptied log verified: {out}");
    assert!(
        out.contains("the log is empty, but cordon wrote 4 line(s)"),
        "{out}"
    );

    std::fs::copy(&other, &log).unwrap();
    let (code, out, _) = cordon_log(&fx, &log, &["--verify"]);
    assert_eq!(code, 1, "another log verified in its place: {out}");
    assert!(out.contains("replaced by another log"), "{out}");

    // Control: the honest log, put back, passes; and the other log, at
    // its own path, too.
    std::fs::write(&log, &honest).unwrap();
    assert_eq!(cordon_log(&fx, &log, &["--verify"]).0, 0);
    assert_eq!(cordon_log(&fx, &other, &["--verify"]).0, 0);

    // The next run to write there says what it found, since its own
    // lines make the file verify again.
    std::fs::write(&log, "").unwrap();
    let out = script(fx.audited(&log));
    out.ok();
    assert!(
        out.stderr
            .contains("is empty, but cordon last wrote 4 line(s) to it"),
        "{out:#?}"
    );
}

/// The attack: a sandbox cycling through refused subjects fills the
/// host's log (the per-subject limit allows 20 lines for each of 1000
/// subjects per class: 130 subjects 20 times each is 2600 lines). Past
/// the run's budget, events are only counted, one line says so, and the
/// exit summary counts every refusal.
#[test]
fn a_flood_of_distinct_subjects_stops_at_the_run_budget() {
    let fx = Fixture::new(Mode::Root);
    let log = fx.outside.join("audit.jsonl");
    let n = 2600;
    let out = fx
        .audited(&log)
        .py_args(with_helpers!("audit_flood.py"), &[&n.to_string(), "130"]);
    out.ok();
    let events = chained_events(&log, &key_of(&fx));
    assert!(events.len() <= 2000, "{} lines", events.len());
    assert!(std::fs::metadata(&log).unwrap().len() <= 1024 * 1024 + 4096);
    let limits: Vec<_> = events
        .iter()
        .filter(|e| e["event"] == "limit" && e["subject"] == "(this run)")
        .collect();
    assert_eq!(limits.len(), 1, "{limits:#?}");
    assert_eq!(events.last().unwrap()["event"], "limit");
    assert!(
        out.stderr
            .contains(&format!("blocked {n} network connections")),
        "the summary counts every refusal: {}",
        out.stderr
    );
}
