//! The network door: only lo inside, the host's loopback unreachable,
//! any local port unless narrowed; the proxy (HTTP CONNECT and plain, SOCKS5)
//! reaching only what the policy allows, with refusals that say why and how
//! to allow; no DNS, UDP or IPv6 out.
//!
//! Upstreams are servers the tests run on the host's 127.0.0.1, allowed by
//! IP and port; cases that name external hosts or addresses (and those that
//! need names to resolve) run cordon in a network and mount namespace the
//! test makes (only lo, an /etc/hosts of its own), so that even an open
//! door would not let the proxy's connection leave the machine.

mod common;

use std::fs::File;
use std::io::{BufRead, Read as _, Write as _};
use std::net::{TcpListener, TcpStream};
use std::os::unix::fs::PermissionsExt;
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::Duration;

use common::*;

fn interfaces(proc_net_dev: &str) -> Vec<String> {
    proc_net_dev
        .lines()
        .skip(2)
        .filter_map(|l| l.split(':').next())
        .map(|s| s.trim().to_string())
        .filter(|s| !s.is_empty())
        .collect()
}

#[test]
fn only_lo_inside() {
    let host = interfaces(&std::fs::read_to_string("/proc/net/dev").unwrap());
    assert!(host.len() > 1, "control: the host has only {host:?}");
    each_fixture(|mode, fx| {
        let out = fx.sandbox().run(&["cat", "/proc/net/dev"]);
        out.ok();
        assert_eq!(interfaces(&out.stdout), vec!["lo"], "{mode:?}: {out:#?}");
        // Control: lo is up (UDP, which Landlock does not restrict).
        let out = fx.sandbox().py(include_str!("py/net_udp_lo.py"));
        assert_eq!(line(&out, "udp"), "ping", "{mode:?}: lo not up: {out:#?}");
    });
}

/// A TCP connect to 127.0.0.1:argv[1] from inside.
const CONNECT_PY: &str = include_str!("py/net_connect.py");

#[test]
fn host_loopback_listener_is_unreachable() {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    // Positive control: the test itself can connect.
    let control = TcpStream::connect(("127.0.0.1", port));
    assert!(control.is_ok(), "control connect: {control:?}");
    let (accepted, _) = listener.accept().unwrap();
    drop(accepted);
    drop(control);
    listener.set_nonblocking(true).unwrap();
    each_fixture(|mode, fx| {
        let out = fx.sandbox().py_args(CONNECT_PY, &[&port.to_string()]);
        assert!(
            line(&out, "connect").starts_with("ERR"),
            "{mode:?}: reached the host: {out:#?}"
        );
        // Even with the port named to Landlock, the host's loopback is
        // another network namespace.
        let out = fx
            .sandbox()
            .flag("--local-ports", port.to_string())
            .py_args(CONNECT_PY, &[&port.to_string()]);
        assert_eq!(
            line(&out, "connect"),
            "ERR ECONNREFUSED",
            "{mode:?}: {out:#?}"
        );
        assert!(
            listener.accept().is_err(),
            "{mode:?}: the host listener got a connection from the sandbox"
        );
    });
}

/// A server on 127.0.0.1:argv[1] inside, and a client of it.
const LOCAL_SERVER_PY: &str = include_str!("py/net_local_server.py");

#[test]
fn local_ports_are_open_unless_narrowed() {
    // Any port works inside (own netns); take one free on the host too.
    let port = TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let other = if port == 65535 { port - 1 } else { port + 1 };
    each_fixture(|mode, fx| {
        // By default: a server inside binds any port, and its clients reach it.
        let open = fx.sandbox().py_args(LOCAL_SERVER_PY, &[&port.to_string()]);
        assert_eq!(line(&open, "bind"), "OK", "{mode:?}: {open:#?}");
        assert_eq!(line(&open, "connect"), "OK hello-x", "{mode:?}: {open:#?}");
        // Narrowed to one port: that port works ...
        let narrowed = fx
            .sandbox()
            .flag("--local-ports", port.to_string())
            .py_args(LOCAL_SERVER_PY, &[&port.to_string()]);
        assert_eq!(line(&narrowed, "bind"), "OK", "{mode:?}: {narrowed:#?}");
        assert_eq!(
            line(&narrowed, "connect"),
            "OK hello-x",
            "{mode:?}: {narrowed:#?}"
        );
        // ... and another is refused, bind and connect.
        let out = fx
            .sandbox()
            .flag("--local-ports", port.to_string())
            .py_args(LOCAL_SERVER_PY, &[&other.to_string()]);
        assert_eq!(line(&out, "bind"), "ERR EACCES", "{mode:?}: {out:#?}");
        assert_eq!(line(&out, "connect"), "ERR EACCES", "{mode:?}: {out:#?}");
    });
}

// ---------------------------------------------------------------------------
// The proxy: upstreams the tests run, clients inside the sandbox.

/// A loopback HTTP server that answers every request with its own body and
/// records every byte each connection sent it, so a test can show what
/// reached it and what did not.
struct Upstream {
    port: u16,
    /// What it answers: unique per upstream and per test run.
    body: String,
    seen: Arc<Mutex<Vec<Vec<u8>>>>,
    stop: Arc<AtomicBool>,
    acceptor: Option<JoinHandle<Vec<JoinHandle<()>>>>,
}

impl Upstream {
    /// On the host's 127.0.0.1, on a free port.
    fn start(name: &str) -> Upstream {
        Upstream::start_in(name, None)
    }

    /// On 127.0.0.1 of the network namespace `ns` (or the host's).
    fn start_in(name: &str, ns: Option<&TestNet>) -> Upstream {
        let listener = match ns {
            None => TcpListener::bind("127.0.0.1:0").expect("bind upstream"),
            Some(net) => {
                let ns = net.ns_file();
                // A thread that moves into the namespace makes the socket
                // there; the socket stays there whoever accepts on it.
                std::thread::spawn(move || {
                    nix::sched::setns(&ns, nix::sched::CloneFlags::CLONE_NEWNET)
                        .expect("setns into the test's network namespace");
                    TcpListener::bind("127.0.0.1:0").expect("bind upstream in netns")
                })
                .join()
                .expect("bind thread")
            }
        };
        let port = listener.local_addr().unwrap().port();
        listener.set_nonblocking(true).unwrap();
        let body = format!("upstream-{name}-{}", rand_token());
        let seen = Arc::new(Mutex::new(Vec::new()));
        let stop = Arc::new(AtomicBool::new(false));
        let acceptor = {
            let (seen, stop, body) = (seen.clone(), stop.clone(), body.clone());
            std::thread::spawn(move || accept_loop(listener, seen, stop, body))
        };
        Upstream {
            port,
            body,
            seen,
            stop,
            acceptor: Some(acceptor),
        }
    }

    /// Stops accepting (after taking every connection already made) and
    /// waits for each connection to end; returns what each one sent.
    /// Call after the sandbox has exited, so every connection it made is
    /// already queued and every tunnel is closed.
    fn finish(mut self) -> Vec<String> {
        self.stop_and_join();
        self.seen
            .lock()
            .unwrap()
            .iter()
            .map(|b| String::from_utf8_lossy(b).into_owned())
            .collect()
    }

    fn stop_and_join(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        if let Some(acceptor) = self.acceptor.take() {
            if let Ok(handlers) = acceptor.join() {
                for h in handlers {
                    let _ = h.join();
                }
            }
        }
    }
}

impl Drop for Upstream {
    fn drop(&mut self) {
        self.stop_and_join();
    }
}

fn accept_loop(
    listener: TcpListener,
    seen: Arc<Mutex<Vec<Vec<u8>>>>,
    stop: Arc<AtomicBool>,
    body: String,
) -> Vec<JoinHandle<()>> {
    let mut handlers = Vec::new();
    loop {
        match listener.accept() {
            Ok((conn, _)) => {
                let idx = {
                    let mut s = seen.lock().unwrap();
                    s.push(Vec::new());
                    s.len() - 1
                };
                let (seen, body) = (seen.clone(), body.clone());
                handlers.push(std::thread::spawn(move || {
                    serve_one(conn, seen, idx, &body)
                }));
            }
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {
                // Stop only once the queue is empty: a connection made
                // before `finish` is always counted.
                if stop.load(Ordering::SeqCst) {
                    return handlers;
                }
                std::thread::sleep(Duration::from_millis(10));
            }
            Err(_) => return handlers,
        }
    }
}

/// Reads one request head, answers it, then records whatever else arrives
/// until the peer closes (a pipelined request would show up here).
fn serve_one(mut conn: TcpStream, seen: Arc<Mutex<Vec<Vec<u8>>>>, idx: usize, body: &str) {
    conn.set_nonblocking(false).unwrap();
    // A safety net only: the peer (the proxy) closes when the sandbox ends.
    conn.set_read_timeout(Some(Duration::from_secs(30)))
        .unwrap();
    let mut got = Vec::new();
    let mut chunk = [0u8; 4096];
    let mut answered = false;
    loop {
        let n = match conn.read(&mut chunk) {
            Ok(0) | Err(_) => break,
            Ok(n) => n,
        };
        got.extend_from_slice(&chunk[..n]);
        seen.lock().unwrap()[idx].extend_from_slice(&chunk[..n]);
        if !answered && got.windows(4).any(|w| w == b"\r\n\r\n") {
            answered = true;
            let reply = format!(
                "HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
                body.len()
            );
            let _ = conn.write_all(reply.as_bytes());
            let _ = conn.shutdown(std::net::Shutdown::Write);
        }
    }
}

/// The request lines in what one connection sent (`GET /path HTTP/1.1`).
fn request_lines(conn: &str) -> Vec<&str> {
    conn.split("\r\n")
        .filter(|l| {
            ["GET ", "POST ", "CONNECT ", "HEAD "]
                .iter()
                .any(|m| l.starts_with(m))
        })
        .collect()
}

/// A script of tests/py/ with the client helpers (tests/py/net_client.py)
/// before it. Each helper call prints one line `label: CODE "body as
/// JSON"`: CODE is the HTTP status (for CONNECT: the proxy's, followed by
/// the body the tunnel carried) or, for SOCKS, the reply code as 0xNN.
macro_rules! with_client {
    ($($file:literal),+) => {
        concat!(include_str!("py/net_client.py"), $(include_str!(concat!("py/", $file))),+)
    };
}

/// Runs the calls given as JSON in argv[1].
const CALLS_PY: &str = with_client!("net_calls.py");

/// Calls of the client helpers, run in order inside the sandbox.
#[derive(Default)]
struct Calls(Vec<serde_json::Value>);

impl Calls {
    fn call(mut self, name: &str, args: serde_json::Value, kwargs: serde_json::Value) -> Self {
        self.0.push(serde_json::json!([name, args, kwargs]));
        self
    }

    /// An absolute-form GET of http://TARGET through the HTTP proxy.
    fn get(self, label: &str, target: &str) -> Self {
        self.call(
            "get",
            serde_json::json!([label, target]),
            serde_json::json!({}),
        )
    }

    /// [`Calls::get`] with a `Host` header of its own.
    fn get_host(self, label: &str, target: &str, host: &str) -> Self {
        self.call(
            "get",
            serde_json::json!([label, target]),
            serde_json::json!({ "host": host }),
        )
    }

    /// CONNECT AUTHORITY, then a GET through the tunnel.
    fn tunnel(self, label: &str, authority: &str) -> Self {
        self.call(
            "tunnel",
            serde_json::json!([label, authority]),
            serde_json::json!({}),
        )
    }

    /// A SOCKS5 CONNECT to a name (then a GET through it).
    fn socks(self, label: &str, host: &str, port: u16) -> Self {
        self.socks_as(label, host, port, 1, 3)
    }

    /// A SOCKS5 request with command `cmd` (1 CONNECT, 2 BIND, 3 UDP
    /// ASSOCIATE) and address type `atyp` (1 IPv4, 3 name, 4 IPv6).
    fn socks_as(self, label: &str, host: &str, port: u16, cmd: u8, atyp: u8) -> Self {
        self.call(
            "socks",
            serde_json::json!([label, host, port]),
            serde_json::json!({ "cmd": cmd, "atyp": atyp }),
        )
    }

    /// `data` sent to the HTTP proxy as it is.
    fn raw(self, label: &str, data: &str) -> Self {
        self.call(
            "raw",
            serde_json::json!([label, data]),
            serde_json::json!({}),
        )
    }

    /// `url` fetched by urllib with the proxy the environment names.
    fn urlopen(self, label: &str, url: &str) -> Self {
        self.call(
            "urlopen",
            serde_json::json!([label, url]),
            serde_json::json!({}),
        )
    }

    fn json(&self) -> String {
        serde_json::Value::Array(self.0.clone()).to_string()
    }
}

/// `label`'s result from a [`with_client`] script: (code, body).
fn reply(out: &Output, label: &str) -> (String, String) {
    let rest = line(out, label);
    let (code, body) = rest.split_once(' ').unwrap_or((rest, "\"\""));
    let body = serde_json::from_str::<String>(body).unwrap_or_else(|_| body.to_string());
    (code.to_string(), body)
}

/// Asserts that `label` got `up`'s body with `code` (200, or 0x00 for SOCKS).
#[track_caller]
fn expect_reached(out: &Output, label: &str, code: &str, up: &Upstream) {
    let (got, body) = reply(out, label);
    assert!(
        got == code && body == up.body,
        "{label}: expected {code} and the upstream's body {:?}, got {got} {body:?}; {out:#?}",
        up.body
    );
}

/// Asserts that `label` was refused with `code` and a body holding every
/// one of `needles`.
#[track_caller]
fn expect_refused(out: &Output, label: &str, code: &str, needles: &[&str]) {
    let (got, body) = reply(out, label);
    assert_eq!(got, code, "{label}: body {body:?}; {out:#?}");
    for n in needles {
        assert!(
            body.contains(n),
            "{label}: the refusal does not say {n:?}: {body:?}"
        );
    }
}

/// Runs `calls` in the sandbox.
fn client(sb: Sandbox, calls: &Calls) -> Output {
    sb.py_args(CALLS_PY, &[&calls.json()])
}

/// For a test that names external hosts or addresses: namespaces of the
/// test's own as root, so that if the door were open the proxy's attempt
/// would still not leave the machine; the host's network otherwise.
fn contained() -> Option<TestNet> {
    if is_root() {
        TestNet::new(TEST_HOSTS)
    } else {
        eprintln!("not root: running on the host's network, not in a test-made namespace");
        None
    }
}

/// [`client`], in `net` if given.
fn client_in(net: Option<&TestNet>, sb: Sandbox, calls: &Calls) -> Output {
    match net {
        Some(net) => net.run(&sb, &py_command(CALLS_PY, &[&calls.json()])),
        None => client(sb, calls),
    }
}

/// A sandbox with `--allow-domain` for each rule.
fn allowing(fx: &Fixture, rules: &[&str]) -> Sandbox {
    rules
        .iter()
        .fold(fx.sandbox(), |sb, r| sb.flag("--allow-domain", r))
}

/// A sandbox that allows port `p` of the host's loopback by both its
/// names, 127.0.0.1 and host.cordon.internal.
fn allowing_loopback_port(fx: &Fixture, p: u16) -> Sandbox {
    allowing(
        fx,
        &[
            &format!("127.0.0.1:{p}"),
            &format!("host.cordon.internal:{p}"),
        ],
    )
}

/// Runs `test` once per mode with a fixture and an upstream named `name`
/// on the host's 127.0.0.1.
fn each_mode_with_upstream(name: &str, test: impl Fn(Mode, &Fixture, Upstream)) {
    each_mode(|mode| test(mode, &Fixture::new(mode), Upstream::start(name)));
}

/// Runs `test` once per mode with a fixture and two upstreams on the
/// host's 127.0.0.1, named `names`.
fn each_mode_with_upstreams(names: [&str; 2], test: impl Fn(Mode, &Fixture, Upstream, Upstream)) {
    each_fixture(|mode, fx| {
        let [a, b] = names.map(Upstream::start);
        test(mode, fx, a, b)
    });
}

/// Runs `test` once per mode (as root: where the test can make its own
/// network namespace) with that namespace, a fixture and an upstream
/// named `name` on the namespace's 127.0.0.1.
fn each_mode_in_test_net(name: &str, test: impl Fn(Mode, &TestNet, &Fixture, Upstream)) {
    each_mode(|mode| {
        let Some(net) = TestNet::new(TEST_HOSTS) else {
            return;
        };
        let fx = Fixture::new(mode);
        let up = Upstream::start_in(name, Some(&net));
        test(mode, &net, &fx, up)
    });
}

/// A network namespace and mount namespace the test makes (root only):
/// only `lo`, up, and an /etc/hosts of the test's choosing, so the proxy
/// resolves test names without DNS, and nothing the proxy might wrongly
/// connect to can leave the machine. Lives as long as its holder process,
/// which exits when this is dropped (or when the test process dies, as its
/// stdin closes).
struct TestNet {
    holder: Child,
    _dir: tempfile::TempDir,
}

impl TestNet {
    /// None (after printing why) when not root.
    fn new(hosts: &str) -> Option<TestNet> {
        if !is_root() {
            eprintln!("skipped: making a network namespace for the test needs root");
            return None;
        }
        let dir = tempfile::tempdir().expect("tempdir");
        let hosts_file = dir.path().join("hosts");
        std::fs::write(&hosts_file, hosts).unwrap();
        std::fs::set_permissions(&hosts_file, std::fs::Permissions::from_mode(0o644)).unwrap();
        let mut holder = Command::new("unshare")
            .args(["--net", "--mount", "--propagation", "private", "--"])
            .args(["sh", "-c"])
            .arg("ip link set lo up && mount --bind \"$1\" /etc/hosts && echo ready && read _")
            .arg("sh")
            .arg(&hosts_file)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .expect("unshare");
        let mut ready = String::new();
        let _ = std::io::BufReader::new(holder.stdout.take().unwrap()).read_line(&mut ready);
        let net = TestNet { holder, _dir: dir };
        assert_eq!(
            ready.trim(),
            "ready",
            "could not set up the test's namespaces"
        );
        Some(net)
    }

    fn ns_file(&self) -> File {
        File::open(format!("/proc/{}/ns/net", self.holder.id())).expect("open netns")
    }

    /// Runs the sandbox from inside these namespaces.
    fn run(&self, sb: &Sandbox, cmd: &[&str]) -> Output {
        let inner = sb.command(cmd);
        let mut c = Command::new("nsenter");
        c.arg(format!("--target={}", self.holder.id()))
            .args(["--net", "--mount"]);
        if let Some(d) = inner.get_current_dir() {
            c.arg(format!("--wd={}", d.display()));
        }
        c.arg("--").arg(inner.get_program()).args(inner.get_args());
        c.env_clear();
        for (k, v) in inner.get_envs() {
            if let Some(v) = v {
                c.env(k, v);
            }
        }
        c.stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .stdin(Stdio::null());
        Running::start(c, None, RUN_TIMEOUT).wait()
    }
}

impl Drop for TestNet {
    fn drop(&mut self) {
        drop(self.holder.stdin.take());
        if wait_child(&mut self.holder).is_none() {
            let _ = self.holder.kill();
            let _ = self.holder.wait();
        }
    }
}

fn wait_child(child: &mut Child) -> Option<std::process::ExitStatus> {
    let mut status = None;
    wait_until(Duration::from_secs(5), || {
        status = child.try_wait().ok().flatten();
        status.is_some()
    });
    status
}

// ---------------------------------------------------------------------------
// Reaching an allowed upstream.

#[test]
fn curl_reaches_an_allowed_upstream_through_each_proxy() {
    if !have_curl() {
        return;
    }
    each_mode_with_upstreams(["allowed", "unlisted"], |mode, fx, up, other| {
        let (p, q) = (up.port, other.port);
        // NO_PROXY names 127.0.0.1, so curl is told the proxy explicitly;
        // host.cordon.internal is not in NO_PROXY, so the environment alone
        // sends it through the proxy.
        let script = format!(
            "c() {{ label=$1; shift; echo \"$label: $(curl -sS --max-time 30 -w ' %{{http_code}}' \"$@\" 2>&1)\"; }}\n\
             c absolute --noproxy '' -x http://127.0.0.1:3128 http://127.0.0.1:{p}/absolute\n\
             c tunnel --noproxy '' -p -x http://127.0.0.1:3128 http://127.0.0.1:{p}/tunnel\n\
             c socks5-hostname --noproxy '' --socks5-hostname 127.0.0.1:1080 http://127.0.0.1:{p}/socks-hostname\n\
             c socks5h --noproxy '' -x socks5h://127.0.0.1:1080 http://127.0.0.1:{p}/socks5h\n\
             c env http://host.cordon.internal:{p}/env\n\
             c env-socks -x \"$ALL_PROXY\" http://host.cordon.internal:{p}/env-socks\n\
             c unlisted --noproxy '' -x http://127.0.0.1:3128 -o /dev/null http://127.0.0.1:{q}/unlisted\n"
        );
        let out = allowing(
            fx,
            &[
                &format!("127.0.0.1:{p}"),
                &format!("host.cordon.internal:{p}"),
            ],
        )
        .sh(&script);
        out.ok();
        for label in [
            "absolute",
            "tunnel",
            "socks5-hostname",
            "socks5h",
            "env",
            "env-socks",
        ] {
            assert_eq!(
                line(&out, label),
                format!("{} 200", up.body),
                "{mode:?} {label}: {out:#?}"
            );
        }
        assert_eq!(line(&out, "unlisted"), " 403", "{mode:?}: {out:#?}");
        let seen = up.finish();
        let mut paths: Vec<String> = seen
            .iter()
            .flat_map(|c| request_lines(c))
            .map(|l| l.split(' ').nth(1).unwrap_or_default().to_string())
            .collect();
        paths.sort();
        assert_eq!(
            paths,
            [
                "/absolute",
                "/env",
                "/env-socks",
                "/socks-hostname",
                "/socks5h",
                "/tunnel"
            ],
            "{mode:?}: what the upstream received: {seen:#?}"
        );
        assert_eq!(other.finish(), Vec::<String>::new(), "{mode:?}");
    });
}

#[test]
fn python_reaches_an_allowed_upstream_by_each_way_of_asking() {
    each_mode_with_upstream("allowed", |mode, fx, up| {
        let p = up.port;
        let script = Calls::default()
            .get("get", &format!("127.0.0.1:{p}/x"))
            .tunnel("connect", &format!("127.0.0.1:{p}"))
            .socks_as("socks-ipv4", "127.0.0.1", p, 1, 1)
            .socks("socks-name", "127.0.0.1", p)
            .urlopen("urllib-env", &format!("http://host.cordon.internal:{p}/u"));
        let out = client(allowing_loopback_port(fx, p), &script);
        out.ok();
        expect_reached(&out, "get", "200", &up);
        expect_reached(&out, "connect", "200", &up);
        expect_reached(&out, "socks-ipv4", "0x00", &up);
        expect_reached(&out, "socks-name", "0x00", &up);
        expect_reached(&out, "urllib-env", "200", &up);
        assert_eq!(up.finish().len(), 5, "{mode:?}");
    });
}

// ---------------------------------------------------------------------------
// No way around the proxy.

#[test]
fn programs_that_ignore_the_proxy_do_not_get_out() {
    // A v6 listener on the host's ::1 as well: another network namespace.
    let v6 = TcpListener::bind("[::1]:0").expect("bind [::1]");
    let v6_port = v6.local_addr().unwrap().port();
    v6.set_nonblocking(true).unwrap();
    each_mode_with_upstream("bypassed", |mode, fx, up| {
        let p = up.port;
        for extra in [vec![], vec!["--local-ports".to_string(), p.to_string()]] {
            // The upstream is allowed at the proxy; Landlock lets the
            // connect through (any port by default, this one when narrowed
            // to it) and only the network namespace stands in the way.
            let out = allowing(fx, &[&format!("127.0.0.1:{p}")])
                .args(&extra)
                .py_args(
                    include_str!("py/net_direct.py"),
                    &[&p.to_string(), &v6_port.to_string()],
                );
            out.ok();
            for label in ["v4", "v6", "urllib"] {
                assert!(
                    line(&out, label).starts_with("ERR"),
                    "{mode:?} {extra:?} {label}: went around the proxy: {out:#?}"
                );
            }
            if !extra.is_empty() {
                // Nothing listens on the sandbox's own lo.
                assert_eq!(line(&out, "v4"), "ERR ECONNREFUSED", "{mode:?}: {out:#?}");
            }
        }
        assert_eq!(up.finish(), Vec::<String>::new(), "{mode:?}");
        assert!(
            v6.accept().is_err(),
            "{mode:?}: the host's [::1] listener got a connection"
        );
    });
}

// ---------------------------------------------------------------------------
// Refusals.

#[test]
fn denied_and_unlisted_hosts_are_refused_with_the_rule_and_the_fix() {
    each_mode(|mode| {
        let net = contained();
        let fx = Fixture::new(mode);
        let denied = Upstream::start_in("denied", net.as_ref());
        let unlisted = Upstream::start_in("unlisted", net.as_ref());
        let (p, q) = (denied.port, unlisted.port);
        let script = Calls::default()
            .get("denied-ip", &format!("127.0.0.1:{p}/"))
            .tunnel("denied-ip-connect", &format!("127.0.0.1:{p}"))
            .socks_as("denied-ip-socks", "127.0.0.1", p, 1, 1)
            .get("unlisted-ip", &format!("127.0.0.1:{q}/"))
            .tunnel("unlisted-ip-connect", &format!("127.0.0.1:{q}"))
            .socks_as("unlisted-ip-socks", "127.0.0.1", q, 1, 1)
            .get("unlisted-name", "example.com/")
            .tunnel("unlisted-name-connect", "example.com:443")
            .socks("unlisted-name-socks", "example.com", 443)
            .get("denied-name", "evil.example.com/")
            .tunnel("denied-name-connect", "evil.example.com:443")
            .socks("denied-name-socks", "evil.example.com", 443);
        // Each denied destination is also allowed: deny beats allow.
        let out = client_in(
            net.as_ref(),
            allowing(&fx, &[&format!("127.0.0.1:{p}"), "*.example.com"])
                .flag("--deny-domain", format!("127.0.0.1:{p}"))
                .flag("--deny-domain", "evil.example.com"),
            &script,
        );
        out.ok();
        let deny_ip = format!("blocked 127.0.0.1:{p}");
        let deny_ip_rule = format!("rule: 127.0.0.1:{p} from flag --deny-domain");
        for label in ["denied-ip", "denied-ip-connect"] {
            expect_refused(
                &out,
                label,
                "403",
                &[
                    &deny_ip,
                    "a deny rule matches",
                    &deny_ip_rule,
                    "deny beats allow",
                ],
            );
        }
        let unlisted_ip = format!("blocked 127.0.0.1:{q}");
        // The address has a rule, for another port. And it is a loopback
        // address: the way to reach it is host.cordon.internal.
        let fix = format!("--allow-domain host.cordon.internal:{q}");
        let toml = format!("[network] allow = [\"host.cordon.internal:{q}\"]");
        for label in ["unlisted-ip", "unlisted-ip-connect"] {
            expect_refused(
                &out,
                label,
                "403",
                &[&unlisted_ip, "not on this port", &fix, &toml],
            );
        }
        for (label, what) in [
            ("unlisted-name", "blocked example.com:80"),
            ("unlisted-name-connect", "blocked example.com:443"),
        ] {
            expect_refused(
                &out,
                label,
                "403",
                &[
                    what,
                    "no allow rule names this host",
                    "rule: default: nothing is allowed",
                    "--allow-domain example.com ",
                    "[network] allow = [\"example.com\"]",
                ],
            );
        }
        for (label, what) in [
            ("denied-name", "blocked evil.example.com:80"),
            ("denied-name-connect", "blocked evil.example.com:443"),
        ] {
            expect_refused(
                &out,
                label,
                "403",
                &[
                    what,
                    "rule: evil.example.com from flag --deny-domain",
                    "deny beats allow",
                ],
            );
        }
        for label in [
            "denied-ip-socks",
            "unlisted-ip-socks",
            "unlisted-name-socks",
            "denied-name-socks",
        ] {
            expect_refused(&out, label, "0x02", &[]);
        }
        assert_eq!(denied.finish(), Vec::<String>::new(), "{mode:?}");
        assert_eq!(unlisted.finish(), Vec::<String>::new(), "{mode:?}");
    });
}

#[test]
fn ports_are_limited_to_the_rule_or_the_port_list() {
    each_mode_with_upstreams(["ports", "other-port"], |mode, fx, up, other| {
        let (p, q) = (up.port, other.port);
        let script = Calls::default()
            .get("p", &format!("127.0.0.1:{p}/"))
            .tunnel("p-connect", &format!("127.0.0.1:{p}"))
            .socks_as("p-socks", "127.0.0.1", p, 1, 1)
            .get("q", &format!("127.0.0.1:{q}/"));
        // A rule without a port: 80 and 443 only.
        let out = client(allowing(fx, &["127.0.0.0/8"]), &script);
        out.ok();
        let what = format!("blocked 127.0.0.1:{p}");
        for label in ["p", "p-connect"] {
            expect_refused(
                &out,
                label,
                "403",
                &[
                    &what,
                    "not on this port",
                    "rule: 127.0.0.0/8 from flag --allow-domain",
                ],
            );
        }
        expect_refused(&out, "p-socks", "0x02", &[]);
        // --ports changes the list: now p passes, q does not.
        let out = client(
            allowing(fx, &["127.0.0.0/8"]).flag("--ports", format!("443,{p}")),
            &script,
        );
        out.ok();
        expect_reached(&out, "p", "200", &up);
        expect_reached(&out, "p-connect", "200", &up);
        expect_reached(&out, "p-socks", "0x00", &up);
        expect_refused(&out, "q", "403", &["not on this port"]);
        // A rule with a port admits that port only.
        let out = client(allowing(fx, &[&format!("127.0.0.1:{p}")]), &script);
        out.ok();
        expect_reached(&out, "p", "200", &up);
        expect_refused(
            &out,
            "q",
            "403",
            &[&format!("blocked 127.0.0.1:{q}"), "not on this port"],
        );
        assert_eq!(up.finish().len(), 6, "{mode:?}");
        assert_eq!(other.finish(), Vec::<String>::new(), "{mode:?}");
    });
}

#[test]
fn ip_literals_need_a_rule_naming_the_address_and_odd_forms_are_refused() {
    each_mode(|mode| {
        let net = contained();
        let fx = Fixture::new(mode);
        let up = Upstream::start_in("ip", net.as_ref());
        let p = up.port;
        // Each odd form means 127.0.0.1 to some parser; only the canonical
        // one is allowed by the rule.
        let odd = [
            ("mapped", format!("[::ffff:127.0.0.1]:{p}")),
            ("mapped-hex", format!("[::ffff:7f00:1]:{p}")),
            ("decimal", format!("2130706433:{p}")),
            ("hex", format!("0x7f.1:{p}")),
            ("hex-dotted", format!("0x7f.0x0.0x0.0x1:{p}")),
            ("octal", format!("017700000001:{p}")),
            ("octal-dotted", format!("0177.0.0.01:{p}")),
            ("short", format!("127.1:{p}")),
            ("compatible", format!("[::127.0.0.1]:{p}")),
            ("nat64", format!("[64:ff9b::7f00:1]:{p}")),
        ];
        let mut script = Calls::default()
            .get("canonical", &format!("127.0.0.1:{p}/"))
            .socks_as("canonical-socks", "127.0.0.1", p, 1, 1)
            .socks_as("mapped-socks", "::ffff:127.0.0.1", p, 1, 4)
            .get("metadata", "169.254.169.254/latest/meta-data/")
            .tunnel("metadata-connect", "169.254.169.254:80")
            .socks_as("metadata-socks", "169.254.169.254", 80, 1, 1)
            .get("metadata-alibaba", "100.100.100.200/")
            .get("metadata-v6", "[fd00:ec2::254]/");
        for (label, authority) in &odd {
            script = script
                .get(label, &format!("{authority}/"))
                .tunnel(&format!("{label}-connect"), authority);
            if let Some((host, _)) = authority.rsplit_once(':') {
                if !host.starts_with('[') {
                    script = script.socks(&format!("{label}-socks"), host, p);
                }
            }
        }
        let rules = [
            format!("127.0.0.1:{p}"),
            format!("127.0.0.0/8:{p}"),
            format!("host.cordon.internal:{p}"),
        ];
        for rule in &rules {
            let out = client_in(net.as_ref(), allowing(&fx, &[rule]), &script);
            out.ok();
            if rule.starts_with("host.") {
                // A name rule, even the host's own, does not open the IP.
                expect_refused(&out, "canonical", "403", &["IP addresses are refused"]);
                expect_refused(&out, "canonical-socks", "0x02", &[]);
            } else {
                expect_reached(&out, "canonical", "200", &up);
                expect_reached(&out, "canonical-socks", "0x00", &up);
            }
            expect_refused(&out, "mapped-socks", "0x02", &[]);
            for (label, _) in &odd {
                expect_refused(&out, label, "403", &["blocked"]);
                expect_refused(&out, &format!("{label}-connect"), "403", &["blocked"]);
                if !line(&out, &format!("{label}-socks")).starts_with("<missing>") {
                    expect_refused(&out, &format!("{label}-socks"), "0x02", &[]);
                }
            }
            for label in [
                "metadata",
                "metadata-connect",
                "metadata-alibaba",
                "metadata-v6",
            ] {
                expect_refused(&out, label, "403", &["IP addresses are refused"]);
            }
            expect_refused(&out, "metadata-socks", "0x02", &[]);
        }
        // Without any rule the canonical form is refused too.
        let out = client_in(net.as_ref(), fx.sandbox(), &script);
        expect_refused(
            &out,
            "canonical",
            "403",
            &[
                &format!("blocked 127.0.0.1:{p}"),
                "IP addresses are refused",
            ],
        );
        // Only the two canonical requests of each of the IP-rule runs.
        let seen = up.finish();
        assert_eq!(seen.len(), 4, "{mode:?}: {seen:#?}");
    });
}

#[test]
fn host_cordon_internal_reaches_the_host_loopback_only_on_allowed_ports() {
    each_mode_with_upstreams(["host-internal", "other"], |mode, fx, up, other| {
        let (p, q) = (up.port, other.port);
        let script = Calls::default()
            .get("get", &format!("host.cordon.internal:{p}/"))
            .get("get-case", &format!("Host.CORDON.Internal.:{p}/"))
            .tunnel("connect", &format!("host.cordon.internal:{p}"))
            .socks("socks", "host.cordon.internal", p)
            .get("other-port", &format!("host.cordon.internal:{q}/"))
            .socks("other-port-socks", "host.cordon.internal", q);
        let out = client(
            allowing(fx, &[&format!("host.cordon.internal:{p}")]),
            &script,
        );
        out.ok();
        expect_reached(&out, "get", "200", &up);
        expect_reached(&out, "get-case", "200", &up);
        expect_reached(&out, "connect", "200", &up);
        expect_reached(&out, "socks", "0x00", &up);
        let fix = format!("--allow-domain host.cordon.internal:{q}");
        expect_refused(
            &out,
            "other-port",
            "403",
            &[&format!("blocked host.cordon.internal:{q}"), &fix],
        );
        expect_refused(&out, "other-port-socks", "0x02", &[]);
        // Not allowed at all, nor by an IP rule for the same address.
        for sb in [
            fx.sandbox(),
            allowing(fx, &[&format!("127.0.0.1:{p}"), &format!("127.0.0.1:{q}")]),
        ] {
            let out = client(sb, &script);
            out.ok();
            expect_refused(
                &out,
                "get",
                "403",
                &[
                    &format!("blocked host.cordon.internal:{p}"),
                    &format!("--allow-domain host.cordon.internal:{p}"),
                ],
            );
            expect_refused(&out, "socks", "0x02", &[]);
        }
        assert_eq!(up.finish().len(), 4, "{mode:?}");
        assert_eq!(other.finish(), Vec::<String>::new(), "{mode:?}");
    });
}

// ---------------------------------------------------------------------------
// One request per check.

#[test]
fn host_header_must_match_the_target() {
    each_mode_with_upstreams(["target", "header"], |mode, fx, up, other| {
        let (p, q) = (up.port, other.port);
        let script = Calls::default()
            .get_host("other-port", &format!("127.0.0.1:{p}/"), &format!("127.0.0.1:{q}"))
            .get_host("other-host", &format!("127.0.0.1:{p}/"), "example.com")
            .get_host("no-port", &format!("127.0.0.1:{p}/"), "127.0.0.1")
            .get_host("control", &format!("127.0.0.1:{p}/"), &format!("127.0.0.1:{p}"))
            .raw("no-host", &format!("GET http://127.0.0.1:{p}/ HTTP/1.1\r\n\r\n"))
            .raw(
                "two-hosts",
                &format!(
                    "GET http://127.0.0.1:{p}/ HTTP/1.1\r\nHost: 127.0.0.1:{p}\r\nHost: 127.0.0.1:{q}\r\n\r\n"
                ),
            )
            .raw(
                "origin-form",
                &format!("GET / HTTP/1.1\r\nHost: 127.0.0.1:{p}\r\n\r\n"),
            )
            .raw(
                "userinfo",
                &format!(
                    "GET http://127.0.0.1:{q}@127.0.0.1:{p}/ HTTP/1.1\r\nHost: 127.0.0.1:{p}\r\n\r\n"
                ),
            );
        let out = client(
            allowing(fx, &[&format!("127.0.0.1:{p}"), &format!("127.0.0.1:{q}")]),
            &script,
        );
        out.ok();
        expect_reached(&out, "control", "200", &up);
        for label in [
            "other-port",
            "other-host",
            "no-host",
            "two-hosts",
            "origin-form",
            "userinfo",
        ] {
            expect_refused(&out, label, "400", &["cordon:"]);
        }
        // A Host header without a port is taken as the target's port: the
        // same destination, so it may pass, but only to the target.
        let (code, body) = reply(&out, "no-port");
        assert!(
            code == "400" || body == up.body,
            "{mode:?}: no-port: {code} {body:?}"
        );
        let seen = up.finish();
        assert_eq!(
            seen.len(),
            1 + usize::from(code == "200"),
            "{mode:?}: {seen:#?}"
        );
        for conn in &seen {
            assert!(!conn.contains(&format!(":{q}")), "{mode:?}: {conn:?}");
        }
        assert_eq!(other.finish(), Vec::<String>::new(), "{mode:?}");
    });
}

#[test]
fn a_second_request_on_the_connection_never_reaches_a_denied_host() {
    each_mode_with_upstreams(["first", "second"], |mode, fx, allowed, denied| {
        let (p, q) = (allowed.port, denied.port);
        let first = format!("GET http://127.0.0.1:{p}/first HTTP/1.1\r\nHost: 127.0.0.1:{p}\r\n");
        let second =
            format!("GET http://127.0.0.1:{q}/second HTTP/1.1\r\nHost: 127.0.0.1:{q}\r\n\r\n");
        let args = [
            &p.to_string(),
            &q.to_string(),
            &first,
            &second,
            &allowed.body,
        ];
        let out = allowing(fx, &[&format!("127.0.0.1:{p}")])
            .flag("--deny-domain", format!("127.0.0.1:{q}"))
            .py_args(with_client!("net_pipelined.py"), &args);
        out.ok();
        for label in ["pipelined", "keepalive", "after-body"] {
            expect_reached(&out, label, "200", &allowed);
            assert_eq!(
                line(&out, &format!("{label}-responses")),
                "1",
                "{mode:?}: {out:#?}"
            );
        }
        expect_reached(&out, "sequential", "200", &allowed);
        assert_eq!(line(&out, "sequential-more"), "\"\"", "{mode:?}: {out:#?}");
        assert_eq!(line(&out, "tunneled"), "1", "{mode:?}: {out:#?}");
        let seen = allowed.finish();
        assert_eq!(seen.len(), 5, "{mode:?}: {seen:#?}");
        let lines: Vec<&str> = seen.iter().flat_map(|c| request_lines(c)).collect();
        assert_eq!(
            lines
                .iter()
                .filter(|l| l.starts_with("GET /first "))
                .count(),
            4,
            "{mode:?}: {seen:#?}"
        );
        // The proxy forwarded the first request's body, and nothing after it.
        assert!(
            seen.iter()
                .any(|c| c.ends_with("\r\n\r\nhello") && !c.contains("second")),
            "{mode:?}: {seen:#?}"
        );
        for conn in &seen {
            assert!(
                !conn.contains("/second"),
                "{mode:?}: the upstream got the second request: {conn:?}"
            );
        }
        assert_eq!(denied.finish(), Vec::<String>::new(), "{mode:?}");
    });
}

#[test]
fn socks_bind_and_udp_associate_are_refused() {
    each_mode_with_upstream("socks", |mode, fx, up| {
        let p = up.port;
        let script = Calls::default()
            .socks_as("connect", "127.0.0.1", p, 1, 1)
            .socks_as("bind", "127.0.0.1", p, 2, 1)
            .socks_as("udp-associate", "127.0.0.1", p, 3, 1)
            .socks_as("udp-associate-any", "0.0.0.0", 0, 3, 1)
            .socks_as("bind-name", "host.cordon.internal", p, 2, 3);
        let out = client(allowing_loopback_port(fx, p), &script);
        out.ok();
        expect_reached(&out, "connect", "0x00", &up);
        for label in ["bind", "udp-associate", "udp-associate-any", "bind-name"] {
            // 0x07: command not supported.
            expect_refused(&out, label, "0x07", &[]);
        }
        assert_eq!(up.finish().len(), 1, "{mode:?}");
    });
}

// ---------------------------------------------------------------------------
// Nothing but the proxy: no DNS, no UDP, no IPv6 out.

/// The first nameserver in the host's /etc/resolv.conf.
fn host_resolver() -> Option<std::net::IpAddr> {
    std::fs::read_to_string("/etc/resolv.conf")
        .ok()?
        .lines()
        .filter_map(|l| l.trim().strip_prefix("nameserver"))
        .find_map(|a| a.trim().split('%').next()?.parse().ok())
}

/// The host's own non-loopback addresses (sending to them from the host
/// side would stay on the machine).
fn host_addresses() -> Vec<std::net::IpAddr> {
    nix::ifaddrs::getifaddrs()
        .map(|addrs| {
            addrs
                .filter_map(|a| a.address)
                .filter_map(|a| {
                    a.as_sockaddr_in()
                        .map(|v4| std::net::IpAddr::V4(v4.ip()))
                        .or_else(|| a.as_sockaddr_in6().map(|v6| std::net::IpAddr::V6(v6.ip())))
                })
                .filter(|ip| match ip {
                    std::net::IpAddr::V4(v4) => !v4.is_loopback() && !v4.is_link_local(),
                    // Link-local v6 needs a scope id: not a plain literal.
                    std::net::IpAddr::V6(v6) => {
                        !v6.is_loopback() && (v6.segments()[0] & 0xffc0) != 0xfe80
                    }
                })
                .collect()
        })
        .unwrap_or_default()
}

#[test]
fn no_dns_inside() {
    let resolver = host_resolver();
    each_fixture(|mode, fx| {
        // With the host's resolver, a DNS query for example.com by hand too.
        let resolver_arg: Vec<String> = resolver.iter().map(ToString::to_string).collect();
        if resolver_arg.is_empty() {
            eprintln!("no nameserver in /etc/resolv.conf: the resolver case is skipped");
        }
        let out = fx
            .sandbox()
            .py_args(include_str!("py/net_dns.py"), &resolver_arg);
        out.ok();
        for label in ["example", "host-internal"] {
            assert!(
                line(&out, label).starts_with("ERR"),
                "{mode:?} {label}: resolved inside: {out:#?}"
            );
        }
        match resolver {
            // No route to it: the query never leaves.
            Some(ip) if !ip.is_loopback() => {
                for label in ["resolver", "resolver-sendto"] {
                    assert_eq!(line(&out, label), "ERR ENETUNREACH", "{mode:?}: {out:#?}");
                }
            }
            // A loopback resolver (systemd-resolved): the sandbox's own lo,
            // where nothing answers.
            Some(_) => assert_eq!(
                line(&out, "resolver"),
                "ERR ECONNREFUSED",
                "{mode:?}: {out:#?}"
            ),
            None => {}
        }
    });
}

#[test]
fn udp_and_ipv6_do_not_get_out() {
    // Host-side listeners on loopback; the test checks they work, then
    // that the sandbox's packets never arrive.
    let udp4 = std::net::UdpSocket::bind("127.0.0.1:0").unwrap();
    let udp6 = std::net::UdpSocket::bind("[::1]:0").unwrap();
    let tcp6 = TcpListener::bind("[::1]:0").unwrap();
    for s in [&udp4, &udp6] {
        let probe = std::net::UdpSocket::bind(if s.local_addr().unwrap().is_ipv4() {
            "127.0.0.1:0"
        } else {
            "[::1]:0"
        })
        .unwrap();
        probe.send_to(b"control", s.local_addr().unwrap()).unwrap();
        let mut buf = [0u8; 16];
        let (n, _) = s.recv_from(&mut buf).expect("control: loopback UDP");
        assert_eq!(&buf[..n], b"control");
        s.set_nonblocking(true).unwrap();
    }
    tcp6.set_nonblocking(true).unwrap();
    let (u4, u6, t6) = (
        udp4.local_addr().unwrap().port(),
        udp6.local_addr().unwrap().port(),
        tcp6.local_addr().unwrap().port(),
    );
    // Off-loopback targets: the host's own addresses (so that even an open
    // door would keep the packet on this machine) and a documentation
    // IPv6 address.
    let mut targets: Vec<(String, String)> = host_addresses()
        .into_iter()
        .map(|ip| (format!("own-{ip}"), ip.to_string()))
        .collect();
    targets.push(("global-v6".into(), "2001:db8::1".into()));
    let mut args = vec![u4.to_string(), u6.to_string(), t6.to_string()];
    for (label, ip) in &targets {
        args.extend([label.clone(), ip.clone()]);
    }
    each_fixture(|mode, fx| {
        // --local-ports: Landlock lets the TCP connects to it through, so
        // only the network namespace is tested.
        let out = fx
            .sandbox()
            .flag("--local-ports", t6.to_string())
            .py_args(include_str!("py/net_off_loopback.py"), &args);
        out.ok();
        // Sent on the sandbox's own lo, where nobody listens.
        assert_eq!(line(&out, "udp4-lo"), "SENT", "{mode:?}: {out:#?}");
        assert_eq!(line(&out, "udp6-lo"), "SENT", "{mode:?}: {out:#?}");
        assert_eq!(
            line(&out, "tcp6-lo"),
            "ERR ECONNREFUSED",
            "{mode:?}: {out:#?}"
        );
        for (label, _) in &targets {
            for proto in ["udp", "tcp"] {
                assert_eq!(
                    line(&out, &format!("{proto}-{label}")),
                    "ERR ENETUNREACH",
                    "{mode:?}: {out:#?}"
                );
            }
        }
        let mut buf = [0u8; 64];
        assert!(
            udp4.recv_from(&mut buf).is_err(),
            "{mode:?}: the host's 127.0.0.1 UDP listener got a packet"
        );
        assert!(
            udp6.recv_from(&mut buf).is_err(),
            "{mode:?}: the host's ::1 UDP listener got a packet"
        );
        assert!(
            tcp6.accept().is_err(),
            "{mode:?}: the host's ::1 TCP listener got a connection"
        );
    });
}

// ---------------------------------------------------------------------------
// Names: normalisation, wildcards, deny over allow, and what they resolve
// to. Run in namespaces the test makes, where an /etc/hosts of its own
// gives the names addresses without DNS.

const TEST_HOSTS: &str = "127.0.0.1 localhost\n\
127.0.0.1 xn--bcher-kva.example\n\
127.0.0.1 www.cordon-test.example cordon-test.example evil.cordon-test.example\n\
169.254.169.254 metadata.cordon-test.example\n\
10.1.2.3 private.cordon-test.example\n";

#[test]
fn names_are_normalised_before_matching() {
    each_mode_in_test_net("names", |mode, net, fx, up| {
        let p = up.port;
        let script = Calls::default()
            .get("idna-punycode", &format!("xn--bcher-kva.example:{p}/"))
            .get("idna-unicode", &format!("bücher.example:{p}/"))
            .get("idna-upper", &format!("BÜCHER.Example.:{p}/"))
            .tunnel("idna-connect", &format!("BÜCHER.EXAMPLE:{p}"))
            .socks("idna-socks", "bücher.example", p)
            .get("wildcard-sub", &format!("www.cordon-test.example:{p}/"))
            .get(
                "wildcard-sub-upper",
                &format!("WWW.Cordon-Test.Example.:{p}/"),
            )
            .get("wildcard-apex", &format!("cordon-test.example:{p}/"))
            .socks("wildcard-apex-socks", "cordon-test.example", p)
            .get("deny", &format!("evil.cordon-test.example:{p}/"))
            .get("deny-upper", &format!("EVIL.Cordon-Test.EXAMPLE.:{p}/"))
            .tunnel("deny-connect", &format!("evil.cordon-test.example:{p}"))
            .socks("deny-socks", "Evil.cordon-test.example.", p)
            .get("metadata", &format!("metadata.cordon-test.example:{p}/"))
            .socks("metadata-socks", "metadata.cordon-test.example", p)
            .get("private", &format!("private.cordon-test.example:{p}/"))
            .get("bad-empty-label", &format!("a..cordon-test.example:{p}/"))
            .get(
                "bad-underscore",
                &format!("under_score.cordon-test.example:{p}/"),
            )
            .get("bad-hyphen", &format!("-dash.cordon-test.example:{p}/"))
            .get("bad-numeric", &format!("www.cordon-test.123:{p}/"))
            .socks("bad-socks", "a..cordon-test.example", p);
        let out = client_in(
            Some(net),
            allowing(
                fx,
                &[
                    &format!("bücher.example:{p}"),
                    &format!("*.cordon-test.example:{p}"),
                    &format!("127.0.0.1:{p}"),
                ],
            )
            .flag("--deny-domain", "EVIL.cordon-test.example."),
            &script,
        );
        out.ok();
        for label in [
            "idna-punycode",
            "idna-unicode",
            "idna-upper",
            "idna-connect",
            "wildcard-sub",
            "wildcard-sub-upper",
        ] {
            expect_reached(&out, label, "200", &up);
        }
        expect_reached(&out, "idna-socks", "0x00", &up);
        // The IP rule does not open the apex: names are matched as names.
        expect_refused(
            &out,
            "wildcard-apex",
            "403",
            &[
                &format!("blocked cordon-test.example:{p}"),
                "no allow rule names this host",
                &format!("--allow-domain cordon-test.example:{p}"),
            ],
        );
        for label in ["deny", "deny-upper", "deny-connect"] {
            expect_refused(
                &out,
                label,
                "403",
                &[
                    &format!("blocked evil.cordon-test.example:{p}"),
                    "rule: evil.cordon-test.example from flag --deny-domain",
                ],
            );
        }
        expect_refused(
            &out,
            "metadata",
            "403",
            &[
                "resolved to 169.254.169.254",
                "a cloud metadata address",
                "--allow-domain",
            ],
        );
        expect_refused(
            &out,
            "private",
            "403",
            &["resolved to 10.1.2.3", "a private address"],
        );
        for label in [
            "bad-empty-label",
            "bad-underscore",
            "bad-hyphen",
            "bad-numeric",
        ] {
            expect_refused(&out, label, "403", &["cordon: blocked", "invalid host"]);
        }
        for label in [
            "wildcard-apex-socks",
            "deny-socks",
            "metadata-socks",
            "bad-socks",
        ] {
            expect_refused(&out, label, "0x02", &[]);
        }

        // The rule in punycode, the request in Unicode; and a name for
        // loopback, with the IP rule that loopback needs.
        let script = Calls::default()
            .get("unicode", &format!("Bücher.example:{p}/"))
            .get("localhost", &format!("LocalHost.:{p}/"));
        let out = client_in(
            Some(net),
            allowing(
                fx,
                &[
                    &format!("xn--bcher-kva.example:{p}"),
                    &format!("localhost:{p}"),
                    &format!("127.0.0.1:{p}"),
                ],
            ),
            &script,
        );
        out.ok();
        expect_reached(&out, "unicode", "200", &up);
        expect_reached(&out, "localhost", "200", &up);
        assert_eq!(up.finish().len(), 9, "{mode:?}");
    });
}

#[test]
fn an_allowed_name_does_not_open_loopback() {
    each_mode_in_test_net("loopback", |mode, net, fx, up| {
        let p = up.port;
        let script = Calls::default()
            .get("localhost", &format!("localhost:{p}/"))
            .tunnel("localhost-connect", &format!("localhost:{p}"))
            .socks("localhost-socks", "localhost", p)
            .get("name", &format!("www.cordon-test.example:{p}/"))
            .socks("name-socks", "www.cordon-test.example", p);
        let out = client_in(
            Some(net),
            allowing(
                fx,
                &[
                    &format!("localhost:{p}"),
                    &format!("www.cordon-test.example:{p}"),
                ],
            ),
            &script,
        );
        out.ok();
        for label in ["localhost", "localhost-connect"] {
            expect_refused(
                &out,
                label,
                "403",
                &[
                    "localhost resolved to 127.0.0.1",
                    &format!("--allow-domain host.cordon.internal:{p}"),
                ],
            );
        }
        expect_refused(
            &out,
            "name",
            "403",
            &["www.cordon-test.example resolved to 127.0.0.1"],
        );
        for label in ["localhost-socks", "name-socks"] {
            expect_refused(&out, label, "0x02", &[]);
        }
        assert_eq!(up.finish(), Vec::<String>::new(), "{mode:?}");
    });
}

// ---------------------------------------------------------------------------
// Presets: one flag opens the hosts a tool needs. In namespaces the test
// makes, where the preset's registry is a name for the namespace's own
// loopback, so the proxy's connection cannot leave the machine.

/// The npm preset's registry, and a registry no preset names.
const PRESET_HOSTS: &str =
    "127.0.0.1 registry.npmjs.org\n127.0.0.1 unlisted-registry.cordon-test.example\n";

#[test]
fn a_preset_lets_curl_reach_its_hosts_through_the_proxy() {
    if !have_curl() {
        return;
    }
    each_mode(|mode| {
        let Some(net) = TestNet::new(PRESET_HOSTS) else {
            return;
        };
        let fx = Fixture::new(mode);
        let up = Upstream::start_in("registry", Some(&net));
        let p = up.port;
        // The names are not in NO_PROXY: the environment alone sends curl
        // through the proxy, as it sends npm.
        let script = format!(
            "c() {{ label=$1; shift; echo \"$label: $(curl -sS --max-time 30 -w ' %{{http_code}}' \"$@\" 2>&1)\"; }}\n\
             c plain http://registry.npmjs.org:{p}/left-pad\n\
             c tunnel -p http://registry.npmjs.org:{p}/left-pad\n\
             c unlisted -o /dev/null http://unlisted-registry.cordon-test.example:{p}/left-pad\n"
        );
        // The preset's rules have no port: --ports gives them the
        // upstream's. The name resolves to loopback, which only a rule
        // naming the address lets through.
        let sandbox = |preset: bool| {
            let sb = fx
                .sandbox()
                .flag("--ports", p.to_string())
                .flag("--allow-domain", format!("127.0.0.1:{p}"));
            if preset {
                sb.flag("--preset", "npm")
            } else {
                sb
            }
        };
        let out = net.run(&sandbox(true), &["sh", "-c", &script]);
        out.ok();
        for label in ["plain", "tunnel"] {
            assert_eq!(
                line(&out, label),
                format!("{} 200", up.body),
                "{mode:?} {label}: {out:#?}"
            );
        }
        assert_eq!(line(&out, "unlisted"), " 403", "{mode:?}: {out:#?}");

        // Without the preset, the proxy refuses the registry and says how
        // to allow it, the preset included.
        let refused = net.run(
            &sandbox(false),
            &[
                "curl",
                "-sS",
                "--max-time",
                "30",
                &format!("http://registry.npmjs.org:{p}/left-pad"),
            ],
        );
        for needle in [
            "blocked registry.npmjs.org",
            "no allow rule names this host",
            "--allow-domain registry.npmjs.org",
            "--preset npm",
        ] {
            assert!(
                refused.stdout.contains(needle),
                "{mode:?}: the refusal does not say {needle:?}: {refused:#?}"
            );
        }
        let paths: Vec<String> = up
            .finish()
            .iter()
            .flat_map(|c| request_lines(c))
            .map(|l| l.split(' ').nth(1).unwrap_or_default().to_string())
            .collect();
        assert_eq!(paths, ["/left-pad", "/left-pad"], "{mode:?}");
    });
}

// ---------------------------------------------------------------------------
// Many tunnels at once.

#[test]
fn many_tunnels_are_held_at_once_under_a_low_descriptor_limit() {
    // 600 tunnels need 1200 descriptors in the proxy: more than the soft
    // limit of 1024 a login session usually has, which cordon starts with.
    const N: usize = 600;
    each_mode_with_upstream("many", |mode, fx, up| {
        let p = up.port;
        let script = include_str!("py/net_many_tunnels.py");
        let out = fx
            .sandbox()
            .flag("--allow-domain", format!("127.0.0.1:{p}"))
            .run_under_sh(
                "ulimit -S -n 1024 && exec \"$@\"",
                &[],
                &py_command(script, &[p.to_string(), N.to_string(), up.body.clone()]),
            );
        out.ok();
        assert_eq!(
            line(&out, "held"),
            format!("{N} ok: {N} errors: {{}}"),
            "{mode:?}: {out:#?}"
        );
        assert_eq!(up.finish().len(), N, "{mode:?}");
    });
}

/// Sends a valid request and then the ambiguous one `label` (from
/// [`framing::labels`]) to the HTTP proxy from inside a sandbox:
/// the valid one reaches the loopback upstream, the ambiguous one gets a
/// 400 and reaches nothing.
fn refuses_ambiguous_framing(label: &str) {
    each_mode_with_upstream("framing", |mode, fx, up| {
        let p = up.port;
        let authority = format!("127.0.0.1:{p}");
        let target = format!("http://{authority}/framing");
        let out = allowing(fx, &[&authority]).py_args(
            with_client!("framing_cases.py", "net_framing.py"),
            &[&target, &authority, label],
        );
        out.ok();
        expect_reached(&out, "control", "200", &up);
        let (code, body) = reply(&out, label);
        assert_eq!(code, "400", "{mode:?} {label}: {body:?}; {out:#?}");
        // Only the control request got through, whole.
        let seen = up.finish();
        assert_eq!(seen.len(), 1, "{mode:?}: {seen:#?}");
        assert!(seen[0].ends_with("\r\n\r\nhello"), "{mode:?}: {seen:#?}");
    });
}

/// One test per ambiguous framing.
macro_rules! ambiguous_framing_tests {
    ($($name:ident => $label:literal,)*) => {
        $(
            #[test]
            fn $name() {
                refuses_ambiguous_framing($label);
            }
        )*

        #[test]
        fn every_ambiguous_framing_has_its_test() {
            let tested = [$($label),*];
            assert_eq!(tested.to_vec(), framing::labels());
        }
    };
}

ambiguous_framing_tests! {
    framing_te_and_cl => "te-and-cl",
    framing_cl_and_te => "cl-and-te",
    framing_te_not_utf8_then_chunked => "te-not-utf8-then-chunked",
    framing_te_not_utf8 => "te-not-utf8",
    framing_te_chunked_not_last => "te-chunked-not-last",
    framing_te_list => "te-list",
    framing_te_twice => "te-twice",
    framing_te_identity => "te-identity",
    framing_te_obs_fold => "te-obs-fold",
    framing_cl_twice_same => "cl-twice-same",
    framing_cl_twice_differing => "cl-twice-differing",
    framing_cl_list => "cl-list",
    framing_cl_plus => "cl-plus",
    framing_cl_minus => "cl-minus",
    framing_cl_spaces => "cl-spaces",
    framing_cl_hex => "cl-hex",
    framing_cl_empty => "cl-empty",
    framing_cl_too_large => "cl-too-large",
    framing_space_before_colon => "space-before-colon",
    framing_tab_before_colon => "tab-before-colon",
    framing_bare_lf => "bare-lf",
    framing_bare_cr => "bare-cr",
    framing_nul => "nul",
}
