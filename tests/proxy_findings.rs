//! The plain-HTTP proxy against the red team's findings: a placeholder
//! anywhere in a request (body, trailers, head, however split or
//! spelled) is refused and recorded, and so it is inside an inspected
//! tunnel to a host the secret may not go to; ports past 65535 are refused, not
//! read as the default; `Connection` cannot strip Host or framing
//! headers; an upstream's ambiguous response framing is a 502; a head
//! over 64 KiB is refused however it is read; a client's own bad body
//! framing is a 400 that says so.
//!
//! The upstream is a loopback server of the test's own (plain, or TLS
//! with a CA of the test's own for the inspected cases) that records what
//! each connection sent and answers once the client has gone quiet.

mod common;

use std::io::{Read, Write};
use std::net::TcpListener;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use common::tls::TestCa;
use common::*;

/// The client (Python, run inside the sandbox).
const CLIENT: &str = include_str!("py/proxy_findings.py");

/// The upstream's answer to a case whose path names it: a response with
/// both Content-Length and chunked framing (RFC 9112 §6.3: an attack, or
/// an error).
const CL_AND_TE: &[u8] =
    b"HTTP/1.1 200 OK\r\nContent-Length: 3\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n0\r\n\r\n";

/// How the cases reach the upstream.
#[derive(Clone, Copy)]
enum Via {
    /// Absolute-form HTTP through the proxy.
    Plain,
    /// Inside a CONNECT tunnel the proxy inspects (TLS both ways).
    Inspected,
}

/// A loopback upstream (over TLS with `tls`): each connection's bytes,
/// recorded; answered `200 ok` (or [`CL_AND_TE`]) once nothing more came
/// for a moment.
fn upstream(tls: Option<Arc<rustls::ServerConfig>>) -> (u16, Arc<Mutex<Vec<Vec<u8>>>>) {
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind upstream");
    let port = listener.local_addr().unwrap().port();
    let seen = Arc::new(Mutex::new(Vec::new()));
    let log = seen.clone();
    std::thread::spawn(move || {
        for conn in listener.incoming().flatten() {
            let log = log.clone();
            let tls = tls.clone();
            std::thread::spawn(move || {
                let _ = conn.set_read_timeout(Some(Duration::from_millis(300)));
                match tls {
                    None => record_and_answer(conn, &log),
                    Some(config) => {
                        let session = rustls::ServerConnection::new(config).unwrap();
                        let mut stream = rustls::StreamOwned::new(session, conn);
                        record_and_answer(&mut stream, &log);
                        stream.conn.send_close_notify();
                        let _ = stream.flush();
                    }
                }
            });
        }
    });
    (port, seen)
}

/// Reads `conn` until it has been quiet for its read timeout, records
/// what came, and answers it.
fn record_and_answer(mut conn: impl Read + Write, log: &Mutex<Vec<Vec<u8>>>) {
    let mut got = Vec::new();
    let mut buf = [0u8; 65536];
    while let Ok(n) = conn.read(&mut buf) {
        if n == 0 {
            break;
        }
        got.extend_from_slice(&buf[..n]);
    }
    let answer: &[u8] = if contains(&got, b"/response-cl-and-te") {
        CL_AND_TE
    } else {
        b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\nConnection: close\r\n\r\nok"
    };
    log.lock().unwrap().push(got);
    let _ = conn.write_all(answer);
    let _ = conn.flush();
}

fn contains(hay: &[u8], needle: &[u8]) -> bool {
    hay.windows(needle.len()).any(|w| w == needle)
}

/// `bytes` lower-cased and percent-decoded: what a server may read.
fn decoded(bytes: &[u8]) -> Vec<u8> {
    let lower = bytes.to_ascii_lowercase();
    let mut out = Vec::with_capacity(lower.len());
    let mut i = 0;
    while i < lower.len() {
        let hex = lower
            .get(i + 1..i + 3)
            .and_then(|h| std::str::from_utf8(h).ok())
            .and_then(|h| u8::from_str_radix(h, 16).ok());
        match (lower[i], hex) {
            (b'%', Some(b)) => {
                out.push(b.to_ascii_lowercase());
                i += 3;
            }
            (b, _) => {
                out.push(b);
                i += 1;
            }
        }
    }
    out
}

/// What one sandbox run of the client saw.
struct Run {
    /// TEST_TOKEN's placeholder.
    placeholder: String,
    /// `label` → (status line, first line of the body).
    answers: Vec<(String, String, String)>,
    /// Each upstream connection's bytes.
    upstream: Vec<Vec<u8>>,
    /// The audit log.
    audit: String,
}

impl Run {
    fn answer(&self, label: &str) -> (&str, &str) {
        self.answers
            .iter()
            .find(|(l, _, _)| l == label)
            .map(|(_, status, body)| (status.as_str(), body.as_str()))
            .unwrap_or_else(|| panic!("no answer for {label}: {:?}", self.answers))
    }

    /// The bytes of the upstream connections that carried `label`'s path
    /// (not one it begins: `/basic` is not `/basic-more`).
    fn upstream_of(&self, label: &str) -> Vec<&Vec<u8>> {
        let paths = [format!("/{label} "), format!("/{label}?")];
        self.upstream
            .iter()
            .filter(|c| paths.iter().any(|p| contains(c, p.as_bytes())))
            .collect()
    }
}

/// A policy file (outside the project) that injects TEST_TOKEN for a host
/// the tests never reach, so its placeholder may go nowhere they send it.
fn inject_elsewhere(fx: &Fixture, mode: Mode) -> PathBuf {
    let policy = fx.outside.join("policy.toml");
    std::fs::write(
        &policy,
        "[[credentials.inject]]\nenv = \"TEST_TOKEN\"\nhosts = [\"127.0.0.1:1\"]\n",
    )
    .unwrap();
    chown(&policy, mode);
    policy
}

/// Sends the cases `labels` through the proxy of a sandbox that allows
/// the upstream and injects TEST_TOKEN for another host only.
fn run(mode: Mode, labels: &[&str]) -> Run {
    run_via(mode, Via::Plain, labels)
}

/// [`run`], the cases sent `via` plain HTTP or an inspected tunnel.
fn run_via(mode: Mode, via: Via, labels: &[&str]) -> Run {
    let fx = Fixture::new(mode);
    let policy = inject_elsewhere(&fx, mode);
    let log = fx.outside.join("audit.jsonl");
    let mut sandbox = fx
        .audited(&log)
        .env("TEST_TOKEN", format!("canary-{}", fx.token))
        .flag("--policy", &policy);
    let (how, (port, seen)) = match via {
        Via::Plain => ("plain", upstream(None)),
        Via::Inspected => {
            let ca = TestCa::new("cordon test upstream CA");
            let ca_file = fx.outside.join("upstream-ca.pem");
            std::fs::write(&ca_file, ca.pem()).unwrap();
            chown(&ca_file, mode);
            sandbox = sandbox
                .flag("--inspect", "127.0.0.1")
                .flag("--upstream-ca", &ca_file);
            ("inspected", upstream(Some(Arc::new(ca.server_config()))))
        }
    };
    let mut args = vec![how.to_string(), port.to_string()];
    args.extend(labels.iter().map(ToString::to_string));
    let out = sandbox
        .flag("--allow-domain", format!("127.0.0.1:{port}"))
        .py_args(CLIENT, &args);
    out.ok();
    let mut placeholder = String::new();
    let mut answers = Vec::new();
    for line in out.stdout.lines() {
        let mut fields = line.splitn(3, '\t');
        match (fields.next(), fields.next(), fields.next()) {
            (Some("placeholder"), Some(p), None) => placeholder = p.to_string(),
            (Some(label), Some(status), Some(body)) => {
                answers.push((label.to_string(), status.to_string(), body.to_string()))
            }
            _ => {}
        }
    }
    assert!(
        placeholder.starts_with("cordon-placeholder-"),
        "{}",
        out.both()
    );
    let audit = std::fs::read_to_string(&log).unwrap_or_default();
    let upstream = seen.lock().unwrap().clone();
    Run {
        placeholder,
        answers,
        upstream,
        audit,
    }
}

/// The cases of a placeholder in the body (Content-Length or chunked,
/// split across chunks, upper-cased, percent-encoded with the escape
/// split), in a trailer (as it is or upper-cased), or in the head spelled otherwise
/// (percent-encoded or upper-cased target or header, base64 in `Basic`
/// or as a bearer token, split across two headers).
const SPELLED: &[&str] = &[
    "body-length",
    "body-chunks-split",
    "body-paused",
    "body-upper",
    "body-percent-split",
    "trailer",
    "trailer-upper",
    "target-percent",
    "target-upper",
    "basic",
    "basic-stray",
    "basic-padded",
    "basic-tab",
    "basic-spaced",
    "basic-more",
    "bearer-b64",
    "header-upper",
    "header-percent",
    "split-headers",
];

/// The cases of a body still streaming, each with its first chunk (as
/// tests/py/proxy_findings.py sends it): it ends in nothing, a `c`, a cut
/// escape, the constant prefix less its last byte, or all of it.
const INTERACTIVE: &[(&str, &[u8])] = &[
    ("body-interactive", b"hello"),
    ("body-interactive-c", b"abc"),
    ("body-interactive-escape", b"a=Cordon%2"),
    ("body-interactive-prefix", b"a=cordon-placeholder"),
    ("body-interactive-whole-prefix", b"a=CORDON-PLACEHOLDER-"),
];

/// Sends [`SPELLED`] `via` plain HTTP or an inspected tunnel: each is
/// refused with 403, recorded as attempted exfiltration, and never
/// reaches the upstream whole (a refused head not at all); a clean body
/// still goes through, and so does a chunk of a body still streaming.
fn spelled_placeholders_are_refused(via: Via) {
    each_mode(|mode| {
        let mut labels = vec!["clean-body"];
        labels.extend(INTERACTIVE.iter().map(|(label, _)| *label));
        labels.extend(SPELLED);
        let run = run_via(mode, via, &labels);
        for clean in &labels[..=INTERACTIVE.len()] {
            assert_eq!(
                run.answer(clean).0,
                "HTTP/1.1 200 OK",
                "{clean}: {:?}",
                run.answers
            );
        }
        // The scan holds back only a placeholder's random part: a chunk
        // that ends anywhere else (the constant prefix included) reaches
        // the upstream whole before the body ends.
        for (label, first) in INTERACTIVE {
            assert!(
                run.upstream_of(label)
                    .iter()
                    .any(|conn| contains(conn, first)),
                "{label}: the upstream did not get the first chunk: {:?}",
                run.upstream_of(label)
                    .iter()
                    .map(|conn| String::from_utf8_lossy(conn))
                    .collect::<Vec<_>>()
            );
        }
        let placeholder = run.placeholder.as_bytes();
        for &label in SPELLED {
            let (status, body) = run.answer(label);
            assert_eq!(status, "HTTP/1.1 403 Forbidden", "{label}: {body}");
            assert!(
                body.contains("placeholder of TEST_TOKEN"),
                "{label}: {body}"
            );
            // Not a byte of the placeholder past its fixed prefix may reach
            // the upstream: its first half is already more than a guess.
            let half = &placeholder[..placeholder.len() / 2];
            for conn in run.upstream_of(label) {
                assert!(
                    !contains(&decoded(conn), half),
                    "{label}: the upstream got {}",
                    String::from_utf8_lossy(conn)
                );
            }
            // A head is refused before any of it goes.
            if !label.starts_with("body-") && !label.starts_with("trailer") {
                assert!(run.upstream_of(label).is_empty(), "{label} was forwarded");
            }
        }
        let recorded = run
            .audit
            .lines()
            .filter(|l| l.contains("attempted exfiltration") && l.contains("TEST_TOKEN"))
            .count();
        assert_eq!(recorded, SPELLED.len(), "{}", run.audit);
    });
}

/// Finding 1: a placeholder anywhere in a plain-HTTP request, however
/// split or spelled ([`SPELLED`]), is refused.
#[test]
fn placeholders_in_plain_bodies_trailers_and_spelled_heads_are_refused() {
    spelled_placeholders_are_refused(Via::Plain);
}

/// N7: inside an inspected tunnel to a host the secret may not go to, the
/// same scan applies: a placeholder upper-cased, percent-encoded (`%2d`,
/// `%2D`), in base64 (`Basic`, a bearer token), split across body chunks
/// or headers, or in a trailer ([`SPELLED`]) is refused as on the plain
/// path, where only its exact spelling (and plain `Basic`) was; and a
/// client streaming a body still gets its answer.
#[test]
fn placeholders_in_inspected_requests_are_refused_however_spelled() {
    spelled_placeholders_are_refused(Via::Inspected);
}

/// Finding 2: a port past 65535, in the target or in Host, is refused
/// with 400, not read as port 80 (or as the target's).
#[test]
fn ports_past_65535_are_refused() {
    each_mode(|mode| {
        let run = run(mode, &["port-too-large", "host-port-too-large"]);
        for label in ["port-too-large", "host-port-too-large"] {
            let (status, body) = run.answer(label);
            assert_eq!(status, "HTTP/1.1 400 Bad Request", "{label}: {body}");
            assert!(run.upstream_of(label).is_empty(), "{label} was forwarded");
        }
    });
}

/// Finding 3: `Connection` naming Host or Content-Length does not strip
/// them: the upstream gets the Host that was checked and the body's length.
#[test]
fn connection_cannot_strip_host_or_framing() {
    each_mode(|mode| {
        let run = run(mode, &["connection-host", "connection-length"]);
        for label in ["connection-host", "connection-length"] {
            assert_eq!(run.answer(label).0, "HTTP/1.1 200 OK", "{:?}", run.answers);
            let conns = run.upstream_of(label);
            assert_eq!(conns.len(), 1, "{label}");
            let text = String::from_utf8_lossy(conns[0]).to_ascii_lowercase();
            assert!(text.contains("\r\nhost: 127.0.0.1:"), "{label}: {text}");
            if label == "connection-length" {
                assert!(text.contains("\r\ncontent-length: 5\r\n"), "{text}");
                assert!(text.ends_with("\r\n\r\nhello"), "{text}");
            }
        }
    });
}

/// Finding 4: an upstream response with both Content-Length and chunked
/// framing is answered 502, not relayed with a length that cuts its body.
#[test]
fn ambiguous_response_framing_is_a_bad_gateway() {
    each_mode(|mode| {
        let run = run(mode, &["response-cl-and-te"]);
        let (status, body) = run.answer("response-cl-and-te");
        assert_eq!(status, "HTTP/1.1 502 Bad Gateway", "{body}");
        assert!(body.contains("Content-Length"), "{body}");
    });
}

/// Finding 5: a head over 64 KiB whose end comes in the read that
/// crosses the limit is refused like any other.
#[test]
fn heads_over_64k_are_refused_however_read() {
    each_mode(|mode| {
        let run = run(mode, &["head-over-limit"]);
        let (status, body) = run.answer("head-over-limit");
        assert_eq!(status, "HTTP/1.1 400 Bad Request", "{body}");
        assert!(run.upstream_of("head-over-limit").is_empty());
    });
}

/// Finding 6: a client's malformed trailer is its own fault: 400 naming
/// the request's body framing, not a 502 blaming the upstream.
#[test]
fn clients_bad_body_framing_is_a_bad_request() {
    each_mode(|mode| {
        let run = run(mode, &["bad-trailer"]);
        let (status, body) = run.answer("bad-trailer");
        assert_eq!(status, "HTTP/1.1 400 Bad Request", "{body}");
        assert!(body.contains("body"), "{body}");
        assert!(!body.contains("upstream"), "{body}");
    });
}

/// A placeholder in the name a CONNECT asks for, under an allowed
/// wildcard, is refused and recorded before the name is resolved (a
/// lookup would carry it to a name server). cordon runs in a network
/// namespace of the test's own with nothing but a down `lo`, so a lookup
/// it wrongly made would go nowhere (and fail as a 502).
#[test]
fn a_placeholder_in_a_connect_name_is_refused_before_any_lookup() {
    if !is_root() {
        eprintln!("skipped: needs root for a network namespace of the test's own");
        return;
    }
    let fx = Fixture::new(Mode::Root);
    let policy = inject_elsewhere(&fx, Mode::Root);
    let log = fx.outside.join("audit.jsonl");
    let out = std::process::Command::new("unshare")
        .args(["--net", "--"])
        .arg(cordon_bin())
        .args(["run", "--project"])
        .arg(&fx.project)
        .arg("--audit")
        .arg(&log)
        .arg("--policy")
        .arg(&policy)
        .args(["--allow-domain", "*.example.test", "--", PY, "-c"])
        .arg(include_str!("py/connect_named.py"))
        .arg("example.test")
        .env_clear()
        .env("PATH", PATH)
        .env("HOME", &fx.home)
        .env("TEST_TOKEN", format!("canary-{}", fx.token))
        .output()
        .expect("run unshare");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stdout.contains("status: HTTP/1.1 403"),
        "{stdout}\n{stderr}"
    );
    let audit = std::fs::read_to_string(&log).unwrap_or_default();
    assert!(
        audit.contains("attempted exfiltration") && !audit.contains("cannot resolve"),
        "{audit}"
    );
}
