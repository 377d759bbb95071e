//! Plain-HTTP forwarding through the proxy (hyper on both sides): chunked
//! request bodies arrive intact, a client connection is kept alive between
//! requests, and every request on it is checked on its own, the host rules
//! and the framing checks alike; an upstream connection carries the next
//! request of the same client connection to the same destination, and no
//! other.
//!
//! The upstreams are loopback servers of the test's own that keep their
//! connections alive (answering with a Content-Length, never closing
//! first), so that the proxy, not the upstream, decides what happens to
//! the next request on a client connection.

mod common;

use std::io::{BufRead, BufReader, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::Duration;

use common::*;

/// The client helpers (Python, run inside the sandbox).
const PY_HELPERS: &str = include_str!("py/http_forwarding.py");

/// `script` after the client helpers it calls.
fn with_helpers(script: &str) -> String {
    format!("{PY_HELPERS}\n{script}")
}

/// One request as an upstream read it.
#[derive(Debug, Clone)]
struct Seen {
    /// The request line, e.g. `POST /upload HTTP/1.1`.
    line: String,
    /// The body, de-chunked.
    body: Vec<u8>,
    /// Which of the server's connections carried it (in accept order).
    conn: usize,
}

/// A loopback HTTP/1.1 server that keeps each connection alive and
/// answers every request with `NAME:PATH:` and the request's body (and
/// after answering `/then-close`, closes the connection, saying nothing
/// of it beforehand, as a server ending an idle connection does).
struct KeepAlive {
    port: u16,
    seen: Arc<Mutex<Vec<Seen>>>,
    stop: Arc<AtomicBool>,
    acceptor: Option<JoinHandle<Vec<JoinHandle<()>>>>,
}

impl KeepAlive {
    fn start(name: &str) -> KeepAlive {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind upstream");
        listener.set_nonblocking(true).unwrap();
        let port = listener.local_addr().unwrap().port();
        let seen = Arc::new(Mutex::new(Vec::new()));
        let stop = Arc::new(AtomicBool::new(false));
        let acceptor = {
            let (seen, stop, name) = (seen.clone(), stop.clone(), name.to_string());
            std::thread::spawn(move || {
                let mut handlers = Vec::new();
                loop {
                    match listener.accept() {
                        Ok((conn, _)) => {
                            let (seen, name) = (seen.clone(), name.clone());
                            let index = handlers.len();
                            handlers
                                .push(std::thread::spawn(move || serve(conn, index, &name, &seen)));
                        }
                        Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {
                            if stop.load(Ordering::SeqCst) {
                                return handlers;
                            }
                            std::thread::sleep(Duration::from_millis(10));
                        }
                        Err(_) => return handlers,
                    }
                }
            })
        };
        KeepAlive {
            port,
            seen,
            stop,
            acceptor: Some(acceptor),
        }
    }

    fn authority(&self) -> String {
        format!("127.0.0.1:{}", self.port)
    }

    /// Stops accepting, waits for every connection to end (call after the
    /// sandbox exited), and returns every request read.
    fn finish(mut self) -> Vec<Seen> {
        self.stop_and_join();
        self.seen.lock().unwrap().clone()
    }

    fn stop_and_join(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        if let Some(acceptor) = self.acceptor.take() {
            for h in acceptor.join().unwrap_or_default() {
                let _ = h.join();
            }
        }
    }
}

impl Drop for KeepAlive {
    fn drop(&mut self) {
        self.stop_and_join();
    }
}

/// Serves requests on connection number `index` until the peer closes it.
fn serve(conn: TcpStream, index: usize, name: &str, seen: &Mutex<Vec<Seen>>) {
    conn.set_nonblocking(false).unwrap();
    // A safety net only: the proxy closes when the sandbox ends.
    conn.set_read_timeout(Some(Duration::from_secs(30)))
        .unwrap();
    let mut writer = conn.try_clone().unwrap();
    let mut reader = BufReader::new(conn);
    while let Some(mut request) = read_request(&mut reader) {
        request.conn = index;
        let path = request.line.split(' ').nth(1).unwrap_or("").to_string();
        let mut reply = format!("{name}:{path}:").into_bytes();
        reply.extend_from_slice(&request.body);
        seen.lock().unwrap().push(request);
        if path.starts_with("/gzip-te") {
            // A body in a transfer coding besides chunked (its bytes are
            // not really gzip: a proxy that relays them unlabelled is wrong
            // either way).
            let head = "HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip, chunked\r\n\r\n";
            let body = format!("{:x}\r\n", reply.len());
            let sent = writer.write_all(head.as_bytes()).is_ok()
                && writer.write_all(body.as_bytes()).is_ok()
                && writer.write_all(&reply).is_ok()
                && writer.write_all(b"\r\n0\r\n\r\n").is_ok();
            if !sent {
                return;
            }
            continue;
        }
        let head = format!(
            "HTTP/1.1 200 OK\r\nContent-Type: application/octet-stream\r\nContent-Length: {}\r\n\r\n",
            reply.len()
        );
        if writer.write_all(head.as_bytes()).is_err() || writer.write_all(&reply).is_err() {
            return;
        }
        if path == "/then-close" {
            return;
        }
    }
}

/// One request (head, then a Content-Length or chunked body); `None` at
/// the end of the connection or on anything this server does not read.
fn read_request(reader: &mut impl BufRead) -> Option<Seen> {
    let mut line = String::new();
    let read_line = |reader: &mut dyn BufRead, line: &mut String| {
        line.clear();
        matches!(reader.read_line(line), Ok(n) if n > 0)
    };
    if !read_line(reader, &mut line) {
        return None;
    }
    let request_line = line.trim_end().to_string();
    let (mut length, mut chunked) = (0usize, false);
    loop {
        if !read_line(reader, &mut line) {
            return None;
        }
        let field = line.trim_end();
        if field.is_empty() {
            break;
        }
        let (name, value) = field.split_once(':')?;
        match name.to_ascii_lowercase().as_str() {
            "content-length" => length = value.trim().parse().ok()?,
            "transfer-encoding" => chunked = value.trim().eq_ignore_ascii_case("chunked"),
            _ => {}
        }
    }
    let mut body = Vec::new();
    if chunked {
        loop {
            if !read_line(reader, &mut line) {
                return None;
            }
            let size = usize::from_str_radix(line.trim_end().split(';').next()?, 16).ok()?;
            if size == 0 {
                // Trailers, up to the empty line.
                while read_line(reader, &mut line) && !line.trim_end().is_empty() {}
                break;
            }
            let mut chunk = vec![0u8; size + 2];
            reader.read_exact(&mut chunk).ok()?;
            body.extend_from_slice(&chunk[..size]);
        }
    } else {
        body.resize(length, 0);
        reader.read_exact(&mut body).ok()?;
    }
    Some(Seen {
        line: request_line,
        body,
        conn: usize::MAX,
    })
}

/// The body `pattern(n)` of the Python helpers.
fn pattern(n: usize) -> Vec<u8> {
    (0..n).map(|i| ((i * 7 + 3) % 256) as u8).collect()
}

fn lines_of(seen: &[Seen]) -> Vec<&str> {
    seen.iter().map(|s| s.line.as_str()).collect()
}

#[test]
fn a_chunked_post_through_the_plain_proxy_arrives_intact() {
    each_fixture(|mode, fx| {
        let up = KeepAlive::start("up");
        let a = up.authority();
        let script = with_helpers(include_str!("py/http_chunked_post.py"));
        let out = fx
            .sandbox()
            .flag("--allow-domain", &a)
            .py_args(&script, &[&a]);
        out.ok();
        assert_eq!(line(&out, "raw"), "200 True", "{mode:?}: {out:#?}");
        assert_eq!(line(&out, "curl"), "0 True", "{mode:?}: {out:#?}");
        let seen = up.finish();
        assert!(
            seen.iter()
                .any(|s| s.line == "POST /raw HTTP/1.1" && s.body == pattern(100000)),
            "{mode:?}: the upstream did not get the whole body: {:?}",
            lines_of(&seen)
        );
    });
}

#[test]
fn each_request_on_a_kept_alive_connection_is_checked_on_its_own() {
    each_fixture(|mode, fx| {
        let (a, b, d) = (
            KeepAlive::start("a"),
            KeepAlive::start("b"),
            KeepAlive::start("d"),
        );
        let (pa, pb, pd) = (a.authority(), b.authority(), d.authority());
        let script = with_helpers(include_str!("py/http_keepalive.py"));
        let out = fx
            .sandbox()
            .flag("--allow-domain", &pa)
            .flag("--allow-domain", &pb)
            .flag("--deny-domain", &pd)
            .py_args(&script, &[&pa, &pb, &pd]);
        out.ok();
        let expect = |label: &str, want: &str| {
            assert_eq!(line(&out, label), want, "{mode:?} {label}: {out:#?}");
        };
        expect("first", "200 \"a:/first:\"");
        expect("again", "200 \"a:/again:\"");
        expect("other", "200 \"b:/other:\"");
        expect("glued", "200 \"a:/glued:hello\"");
        for label in ["denied", "glued-denied"] {
            let got = line(&out, label);
            assert!(
                got.starts_with("403 \"cordon: blocked 127.0.0.1:") && got.contains("deny rule"),
                "{mode:?} {label}: {out:#?}"
            );
        }
        expect("closed", "True");
        let seen_a = a.finish();
        assert_eq!(
            lines_of(&seen_a),
            [
                "GET /first HTTP/1.1",
                "GET /again HTTP/1.1",
                "POST /glued HTTP/1.1"
            ],
            "{mode:?}"
        );
        assert_eq!(lines_of(&b.finish()), ["GET /other HTTP/1.1"], "{mode:?}");
        assert_eq!(lines_of(&d.finish()), Vec::<&str>::new(), "{mode:?}");
    });
}

/// The attack: a request rides a connection opened for another
/// destination or another client, or one after a request with a body
/// (which an upstream ignoring a GET's body reads as the start of its next
/// request, completed by the next request on the connection: its answer
/// would come back for a request never judged). The upstream connection a request used
/// carries the same client connection's next request to the same host and
/// port, and nothing else; one the upstream closed while idle is replaced,
/// and the request still arrives.
#[test]
fn an_upstream_connection_carries_only_its_own_clients_requests_to_its_destination() {
    each_fixture(|mode, fx| {
        let (a, b) = (KeepAlive::start("a"), KeepAlive::start("b"));
        let (pa, pb) = (a.authority(), b.authority());
        let script = with_helpers(include_str!("py/http_kept_upstream.py"));
        let out = fx
            .sandbox()
            .flag("--allow-domain", &pa)
            .flag("--allow-domain", &pb)
            .py_args(&script, &[&pa, &pb]);
        out.ok();
        for (label, server) in [
            ("a1", "a"),
            ("a2", "a"),
            ("b1", "b"),
            ("a3", "a"),
            ("then-close", "a"),
            ("a4", "a"),
            ("after-body", "a"),
            ("other-client", "a"),
        ] {
            let path = if label == "other-client" { "a5" } else { label };
            assert_eq!(
                line(&out, label),
                format!("200 \"{server}:/{path}:\""),
                "{mode:?} {label}: {out:#?}"
            );
        }
        let seen = a.finish();
        let conn_of = |path: &str| {
            let line = format!("GET {path} HTTP/1.1");
            let found: Vec<usize> = seen
                .iter()
                .filter(|s| s.line == line)
                .map(|s| s.conn)
                .collect();
            assert_eq!(found.len(), 1, "{mode:?} {path}: {:?}", lines_of(&seen));
            found[0]
        };
        let (a1, a2, a3, closing, a4, a5) = (
            conn_of("/a1"),
            conn_of("/a2"),
            conn_of("/a3"),
            conn_of("/then-close"),
            conn_of("/a4"),
            conn_of("/a5"),
        );
        assert_eq!(
            a1, a2,
            "{mode:?}: the next request to a took a new connection"
        );
        assert_ne!(
            a2, a3,
            "{mode:?}: a connection outlived a request to b between"
        );
        assert_eq!(a3, closing, "{mode:?}");
        assert_ne!(closing, a4, "{mode:?}: a closed connection was used again");
        for earlier in [a1, a3, a4] {
            assert_ne!(
                a5, earlier,
                "{mode:?}: another client's connection was shared"
            );
        }
        assert_eq!(
            line(&out, "with-body"),
            "200 \"a:/with-body:hello\"",
            "{mode:?}: {out:#?}"
        );
        assert_ne!(
            conn_of("/with-body"),
            conn_of("/after-body"),
            "{mode:?}: the request after one with a body took its connection"
        );
        assert_eq!(lines_of(&b.finish()), ["GET /b1 HTTP/1.1"], "{mode:?}");
    });
}

#[test]
fn smuggling_on_a_kept_alive_connection_is_refused_and_reaches_nothing() {
    each_fixture(|mode, fx| {
        let up = KeepAlive::start("up");
        let a = up.authority();
        let script = format!(
            "{}\n{}",
            framing::CASES_PY,
            with_helpers(include_str!("py/http_smuggling.py"))
        );
        let out = fx
            .sandbox()
            .flag("--allow-domain", &a)
            .py_args(&script, &[&a]);
        out.ok();
        let labels: Vec<&str> = framing::labels()
            .into_iter()
            .chain(["chunk-bare-lf", "chunk-overrun"])
            .collect();
        for label in &labels {
            assert_eq!(
                line(&out, label),
                "200 400 True",
                "{mode:?} {label}: {out:#?}"
            );
        }
        let seen = up.finish();
        assert_eq!(seen.len(), labels.len(), "{mode:?}: {:?}", lines_of(&seen));
        for s in &seen {
            assert_eq!(
                s.line,
                "GET /before HTTP/1.1",
                "{mode:?}: {:?}",
                lines_of(&seen)
            );
        }
    });
}

#[test]
fn a_response_in_a_transfer_coding_besides_chunked_is_refused_not_relayed_unlabelled() {
    each_fixture(|mode, fx| {
        let up = KeepAlive::start("up");
        let a = up.authority();
        let url = format!("http://{a}/gzip-te");
        let out = fx.sandbox().flag("--allow-domain", &a).run(&[
            "curl",
            "-sS",
            "--noproxy",
            "",
            "-x",
            "http://127.0.0.1:3128",
            "-w",
            "\ncode: %{http_code}\n",
            &url,
        ]);
        assert_eq!(line(&out, "code"), "502", "{mode:?}: {out:#?}");
        assert!(
            out.stdout.contains("transfer coding other than chunked"),
            "{mode:?}: {out:#?}"
        );
        assert!(!out.stdout.contains("up:/gzip-te:"), "{mode:?}: {out:#?}");
        up.finish();
    });
}
