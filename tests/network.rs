//! The network door: only lo inside, the host's loopback unreachable,
//! local ports only when allowed; the proxy (HTTP CONNECT and plain, SOCKS5)
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
    each_mode(|mode| {
        let fx = Fixture::new(mode);
        let out = fx.sandbox().run(&["cat", "/proc/net/dev"]);
        out.ok();
        assert_eq!(interfaces(&out.stdout), vec!["lo"], "{mode:?}: {out:#?}");
        // Control: lo is up (UDP, which Landlock does not restrict).
        let out = fx.sandbox().py(
            "import socket\n\
             a = socket.socket(socket.AF_INET, socket.SOCK_DGRAM); a.bind(('127.0.0.1', 0))\n\
             b = socket.socket(socket.AF_INET, socket.SOCK_DGRAM); b.sendto(b'ping', a.getsockname())\n\
             print('udp:', a.recv(10).decode())\n",
        );
        assert_eq!(line(&out, "udp"), "ping", "{mode:?}: lo not up: {out:#?}");
    });
}

fn connect_script(port: u16) -> String {
    format!(
        "import socket, errno\n\
         s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)\n\
         s.settimeout(5)\n\
         try:\n\
         \x20   s.connect(('127.0.0.1', {port}))\n\
         \x20   s.sendall(b'from-sandbox')\n\
         \x20   print('connect: OK')\n\
         except OSError as e:\n\
         \x20   print('connect: ERR', errno.errorcode.get(e.errno, e.errno) if e.errno else type(e).__name__)\n"
    )
}

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
    each_mode(|mode| {
        let fx = Fixture::new(mode);
        let out = fx.sandbox().py(&connect_script(port));
        assert!(
            line(&out, "connect").starts_with("ERR"),
            "{mode:?}: reached the host: {out:#?}"
        );
        // Even with the port allowed by Landlock, the host's loopback is
        // another network namespace.
        let out = fx
            .sandbox()
            .arg("--allow-local-port")
            .arg(port.to_string())
            .py(&connect_script(port));
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

fn local_server_script(port: u16) -> String {
    format!(
        "import socket, errno, threading\n\
         def err(e): return errno.errorcode.get(e.errno, e.errno)\n\
         srv = socket.socket(socket.AF_INET, socket.SOCK_STREAM)\n\
         srv.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)\n\
         try:\n\
         \x20   srv.bind(('127.0.0.1', {port})); srv.listen(1); print('bind: OK')\n\
         except OSError as e:\n\
         \x20   print('bind: ERR', err(e))\n\
         def serve():\n\
         \x20   c, _ = srv.accept(); c.sendall(b'hello-' + c.recv(10)); c.close()\n\
         threading.Thread(target=serve, daemon=True).start()\n\
         cl = socket.socket(socket.AF_INET, socket.SOCK_STREAM); cl.settimeout(5)\n\
         try:\n\
         \x20   cl.connect(('127.0.0.1', {port})); cl.sendall(b'x'); print('connect: OK', cl.recv(20).decode())\n\
         except OSError as e:\n\
         \x20   print('connect: ERR', err(e) if e.errno else type(e).__name__)\n"
    )
}

#[test]
fn allow_local_port_opens_only_that_port() {
    // Any port works inside (own netns); take one free on the host too.
    let port = TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    each_mode(|mode| {
        let fx = Fixture::new(mode);
        let allowed = fx
            .sandbox()
            .arg("--allow-local-port")
            .arg(port.to_string())
            .py(&local_server_script(port));
        assert_eq!(line(&allowed, "bind"), "OK", "{mode:?}: {allowed:#?}");
        assert_eq!(
            line(&allowed, "connect"),
            "OK hello-x",
            "{mode:?}: {allowed:#?}"
        );
        let denied = fx.sandbox().py(&local_server_script(port));
        assert_eq!(line(&denied, "bind"), "ERR EACCES", "{mode:?}: {denied:#?}");
        assert_eq!(
            line(&denied, "connect"),
            "ERR EACCES",
            "{mode:?}: {denied:#?}"
        );
        // Another port stays closed even when one is allowed.
        let other = if port == 65535 { port - 1 } else { port + 1 };
        let out = fx
            .sandbox()
            .arg("--allow-local-port")
            .arg(port.to_string())
            .py(&local_server_script(other));
        assert_eq!(line(&out, "bind"), "ERR EACCES", "{mode:?}: {out:#?}");
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

/// Python client helpers, prepended to each client script. Each call
/// prints one line `label: CODE "body as JSON"`: CODE is the HTTP status
/// (for CONNECT: the proxy's, followed by the body the tunnel carried) or,
/// for SOCKS, the reply code as 0xNN.
const PY_CLIENT: &str = r#"
import errno, json, socket
PROXY = ('127.0.0.1', 3128)
SOCKS = ('127.0.0.1', 1080)

def read_all(s):
    data = b''
    while True:
        try:
            chunk = s.recv(65536)
        except OSError:
            break
        if not chunk:
            break
        data += chunk
    return data

def split(resp):
    head, _, body = resp.partition(b'\r\n\r\n')
    parts = head.split(b' ', 2)
    return (parts[1].decode() if len(parts) > 1 else 'none'), body

def out(label, code, body=b''):
    print(label + ': ' + code + ' ' + json.dumps(body.decode('utf-8', 'replace')), flush=True)

def guard(label, f):
    try:
        f()
    except OSError as e:
        print(label + ': EXC ' + errno.errorcode.get(e.errno, type(e).__name__), flush=True)

def get(label, target, host=None, extra=b''):
    """Absolute-form GET http://TARGET through the HTTP proxy."""
    def run():
        authority = target.split('/')[0]
        s = socket.create_connection(PROXY, timeout=30)
        s.sendall(('GET http://%s HTTP/1.1\r\nHost: %s\r\n\r\n' % (target, host or authority)).encode() + extra)
        code, body = split(read_all(s))
        s.close()
        out(label, code, body)
    guard(label, run)

def tunnel(label, authority, path='/'):
    """CONNECT AUTHORITY, then a GET through the tunnel."""
    def run():
        s = socket.create_connection(PROXY, timeout=30)
        s.sendall(('CONNECT %s HTTP/1.1\r\nHost: %s\r\n\r\n' % (authority, authority)).encode())
        head = b''
        while b'\r\n\r\n' not in head:
            c = s.recv(1)
            if not c:
                break
            head += c
        code, _ = split(head)
        if code != '200':
            out(label, code, read_all(s))
            return
        s.sendall(('GET %s HTTP/1.1\r\nHost: %s\r\n\r\n' % (path, authority)).encode())
        _, body = split(read_all(s))
        s.close()
        out(label, code, body)
    guard(label, run)

def recv_exact(s, n):
    data = b''
    while len(data) < n:
        c = s.recv(n - len(data))
        if not c:
            break
        data += c
    return data

def socks(label, host, port, cmd=1, atyp=3):
    """A SOCKS5 request (CONNECT unless cmd says otherwise); on success, a
    GET through the connection."""
    def run():
        s = socket.create_connection(SOCKS, timeout=30)
        s.sendall(b'\x05\x01\x00')
        if recv_exact(s, 2) != b'\x05\x00':
            out(label, 'nomethod')
            return
        if atyp == 3:
            name = host.encode() if isinstance(host, str) else host
            addr = bytes([3, len(name)]) + name
        elif atyp == 1:
            addr = b'\x01' + socket.inet_pton(socket.AF_INET, host)
        else:
            addr = b'\x04' + socket.inet_pton(socket.AF_INET6, host)
        s.sendall(bytes([5, cmd, 0]) + addr + port.to_bytes(2, 'big'))
        rep = recv_exact(s, 10)
        if len(rep) < 2:
            out(label, 'closed')
            return
        body = b''
        if rep[1] == 0:
            s.sendall(('GET / HTTP/1.1\r\nHost: x:%d\r\n\r\n' % port).encode())
            _, body = split(read_all(s))
        s.close()
        out(label, '0x%02x' % rep[1], body)
    guard(label, run)
"#;

/// `label`'s result from a [`PY_CLIENT`] script: (code, body).
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

/// Runs a [`PY_CLIENT`] script in the sandbox.
fn client(sb: Sandbox, script: &str) -> Output {
    sb.py(&format!("{PY_CLIENT}\n{script}"))
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
fn client_in(net: Option<&TestNet>, sb: Sandbox, script: &str) -> Output {
    match net {
        Some(net) => net.client(sb, script),
        None => client(sb, script),
    }
}

/// A sandbox with `--allow-domain` for each rule.
fn allowing(fx: &Fixture, rules: &[&str]) -> Sandbox {
    rules
        .iter()
        .fold(fx.sandbox(), |sb, r| sb.arg("--allow-domain").arg(r))
}

fn have_curl() -> bool {
    let found = Command::new("curl")
        .arg("--version")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    if !found {
        eprintln!("skipped: curl is not installed (.ci/run installs it)");
    }
    found
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

    fn client(&self, sb: Sandbox, script: &str) -> Output {
        self.run(&sb, &[PY, "-c", &format!("{PY_CLIENT}\n{script}")])
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
    each_mode(|mode| {
        let fx = Fixture::new(mode);
        let up = Upstream::start("allowed");
        let other = Upstream::start("unlisted");
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
            &fx,
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
    each_mode(|mode| {
        let fx = Fixture::new(mode);
        let up = Upstream::start("allowed");
        let p = up.port;
        let script = format!(
            "get('get', '127.0.0.1:{p}/x')\n\
             tunnel('connect', '127.0.0.1:{p}')\n\
             socks('socks-ipv4', '127.0.0.1', {p}, atyp=1)\n\
             socks('socks-name', '127.0.0.1', {p})\n\
             import urllib.request\n\
             print('urllib-env: 200 ' + json.dumps(urllib.request.urlopen('http://host.cordon.internal:{p}/u', timeout=30).read().decode()))\n"
        );
        let out = client(
            allowing(
                &fx,
                &[
                    &format!("127.0.0.1:{p}"),
                    &format!("host.cordon.internal:{p}"),
                ],
            ),
            &script,
        );
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
    each_mode(|mode| {
        let fx = Fixture::new(mode);
        let up = Upstream::start("bypassed");
        let p = up.port;
        let script = format!(
            "import socket, errno, urllib.request\n\
             def direct(label, family, addr):\n\
             \x20   s = socket.socket(family, socket.SOCK_STREAM); s.settimeout(10)\n\
             \x20   try:\n\
             \x20       s.connect(addr); s.sendall(b'GET /direct HTTP/1.1\\r\\n\\r\\n'); print(label + ': OPEN')\n\
             \x20   except OSError as e:\n\
             \x20       print(label + ': ERR', errno.errorcode.get(e.errno, type(e).__name__))\n\
             direct('v4', socket.AF_INET, ('127.0.0.1', {p}))\n\
             direct('v6', socket.AF_INET6, ('::1', {v6_port}))\n\
             try:\n\
             \x20   o = urllib.request.build_opener(urllib.request.ProxyHandler({{}}))\n\
             \x20   o.open('http://127.0.0.1:{p}/urllib', timeout=10).read(); print('urllib: OPEN')\n\
             except OSError as e:\n\
             \x20   print('urllib: ERR', type(e).__name__)\n"
        );
        for extra in [
            vec![],
            vec!["--allow-local-port".to_string(), p.to_string()],
        ] {
            // The upstream is allowed at the proxy; with --allow-local-port
            // Landlock lets the connect through and only the network
            // namespace stands in the way.
            let out = extra
                .iter()
                .fold(allowing(&fx, &[&format!("127.0.0.1:{p}")]), |sb, a| {
                    sb.arg(a)
                })
                .py(&script);
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
        let script = format!(
            "get('denied-ip', '127.0.0.1:{p}/')\n\
             tunnel('denied-ip-connect', '127.0.0.1:{p}')\n\
             socks('denied-ip-socks', '127.0.0.1', {p}, atyp=1)\n\
             get('unlisted-ip', '127.0.0.1:{q}/')\n\
             tunnel('unlisted-ip-connect', '127.0.0.1:{q}')\n\
             socks('unlisted-ip-socks', '127.0.0.1', {q}, atyp=1)\n\
             get('unlisted-name', 'example.com/')\n\
             tunnel('unlisted-name-connect', 'example.com:443')\n\
             socks('unlisted-name-socks', 'example.com', 443)\n\
             get('denied-name', 'evil.example.com/')\n\
             tunnel('denied-name-connect', 'evil.example.com:443')\n\
             socks('denied-name-socks', 'evil.example.com', 443)\n"
        );
        // Each denied destination is also allowed: deny beats allow.
        let out = client_in(
            net.as_ref(),
            allowing(&fx, &[&format!("127.0.0.1:{p}"), "*.example.com"])
                .arg("--deny-domain")
                .arg(format!("127.0.0.1:{p}"))
                .arg("--deny-domain")
                .arg("evil.example.com"),
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
    each_mode(|mode| {
        let fx = Fixture::new(mode);
        let up = Upstream::start("ports");
        let other = Upstream::start("other-port");
        let (p, q) = (up.port, other.port);
        let script = format!(
            "get('p', '127.0.0.1:{p}/')\n\
             tunnel('p-connect', '127.0.0.1:{p}')\n\
             socks('p-socks', '127.0.0.1', {p}, atyp=1)\n\
             get('q', '127.0.0.1:{q}/')\n"
        );
        // A rule without a port: 80 and 443 only.
        let out = client(allowing(&fx, &["127.0.0.0/8"]), &script);
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
            allowing(&fx, &["127.0.0.0/8"])
                .arg("--ports")
                .arg(format!("443,{p}")),
            &script,
        );
        out.ok();
        expect_reached(&out, "p", "200", &up);
        expect_reached(&out, "p-connect", "200", &up);
        expect_reached(&out, "p-socks", "0x00", &up);
        expect_refused(&out, "q", "403", &["not on this port"]);
        // A rule with a port admits that port only.
        let out = client(allowing(&fx, &[&format!("127.0.0.1:{p}")]), &script);
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
        let mut script = format!(
            "get('canonical', '127.0.0.1:{p}/')\n\
             socks('canonical-socks', '127.0.0.1', {p}, atyp=1)\n\
             socks('mapped-socks', '::ffff:127.0.0.1', {p}, atyp=4)\n\
             get('metadata', '169.254.169.254/latest/meta-data/')\n\
             tunnel('metadata-connect', '169.254.169.254:80')\n\
             socks('metadata-socks', '169.254.169.254', 80, atyp=1)\n\
             get('metadata-alibaba', '100.100.100.200/')\n\
             get('metadata-v6', '[fd00:ec2::254]/')\n"
        );
        for (label, authority) in &odd {
            script.push_str(&format!(
                "get('{label}', '{authority}/')\n\
                 tunnel('{label}-connect', '{authority}')\n"
            ));
            if let Some((host, _)) = authority.rsplit_once(':') {
                if !host.starts_with('[') {
                    script.push_str(&format!("socks('{label}-socks', '{host}', {p})\n"));
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
    each_mode(|mode| {
        let fx = Fixture::new(mode);
        let up = Upstream::start("host-internal");
        let other = Upstream::start("other");
        let (p, q) = (up.port, other.port);
        let script = format!(
            "get('get', 'host.cordon.internal:{p}/')\n\
             get('get-case', 'Host.CORDON.Internal.:{p}/')\n\
             tunnel('connect', 'host.cordon.internal:{p}')\n\
             socks('socks', 'host.cordon.internal', {p})\n\
             get('other-port', 'host.cordon.internal:{q}/')\n\
             socks('other-port-socks', 'host.cordon.internal', {q})\n"
        );
        let out = client(
            allowing(&fx, &[&format!("host.cordon.internal:{p}")]),
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
            allowing(&fx, &[&format!("127.0.0.1:{p}"), &format!("127.0.0.1:{q}")]),
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
    each_mode(|mode| {
        let fx = Fixture::new(mode);
        let up = Upstream::start("target");
        let other = Upstream::start("header");
        let (p, q) = (up.port, other.port);
        let script = format!(
            "get('other-port', '127.0.0.1:{p}/', host='127.0.0.1:{q}')\n\
             get('other-host', '127.0.0.1:{p}/', host='example.com')\n\
             get('no-port', '127.0.0.1:{p}/', host='127.0.0.1')\n\
             get('control', '127.0.0.1:{p}/', host='127.0.0.1:{p}')\n\
             def raw(label, data):\n\
             \x20   def run():\n\
             \x20       s = socket.create_connection(PROXY, timeout=30); s.sendall(data)\n\
             \x20       code, body = split(read_all(s)); out(label, code, body)\n\
             \x20   guard(label, run)\n\
             raw('no-host', b'GET http://127.0.0.1:{p}/ HTTP/1.1\\r\\n\\r\\n')\n\
             raw('two-hosts', b'GET http://127.0.0.1:{p}/ HTTP/1.1\\r\\nHost: 127.0.0.1:{p}\\r\\nHost: 127.0.0.1:{q}\\r\\n\\r\\n')\n\
             raw('origin-form', b'GET / HTTP/1.1\\r\\nHost: 127.0.0.1:{p}\\r\\n\\r\\n')\n\
             raw('userinfo', b'GET http://127.0.0.1:{q}@127.0.0.1:{p}/ HTTP/1.1\\r\\nHost: 127.0.0.1:{p}\\r\\n\\r\\n')\n"
        );
        let out = client(
            allowing(&fx, &[&format!("127.0.0.1:{p}"), &format!("127.0.0.1:{q}")]),
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
    each_mode(|mode| {
        let fx = Fixture::new(mode);
        let allowed = Upstream::start("first");
        let denied = Upstream::start("second");
        let (p, q) = (allowed.port, denied.port);
        let first =
            format!("GET http://127.0.0.1:{p}/first HTTP/1.1\\r\\nHost: 127.0.0.1:{p}\\r\\n");
        let second = format!(
            "GET http://127.0.0.1:{q}/second HTTP/1.1\\r\\nHost: 127.0.0.1:{q}\\r\\n\\r\\n"
        );
        let script = format!(
            "def pipelined(label, data):\n\
             \x20   def run():\n\
             \x20       s = socket.create_connection(PROXY, timeout=30); s.sendall(data)\n\
             \x20       resp = read_all(s); code, body = split(resp)\n\
             \x20       out(label, code, body)\n\
             \x20       print(label + '-responses:', resp.count(b'HTTP/1.1 '))\n\
             \x20   guard(label, run)\n\
             # Both requests in one write.\n\
             pipelined('pipelined', b'{first}\\r\\n{second}')\n\
             # Keep-alive asked for; the second request in the body's place.\n\
             pipelined('keepalive', b'{first}Connection: keep-alive\\r\\n\\r\\n{second}')\n\
             # A body of 5 bytes, then a request glued after it.\n\
             pipelined('after-body', b'{first}Content-Length: 5\\r\\n\\r\\nhello{second}')\n\
             # The second request sent after the first answer arrived.\n\
             def sequential():\n\
             \x20   s = socket.create_connection(PROXY, timeout=30)\n\
             \x20   s.sendall(b'{first}Connection: keep-alive\\r\\n\\r\\n')\n\
             \x20   resp = b''\n\
             \x20   while {body_len} > len(resp.partition(b'\\r\\n\\r\\n')[2]):\n\
             \x20       c = s.recv(65536)\n\
             \x20       if not c: break\n\
             \x20       resp += c\n\
             \x20   code, body = split(resp); out('sequential', code, body)\n\
             \x20   try:\n\
             \x20       s.sendall(b'{second}'); more = read_all(s)\n\
             \x20   except OSError:\n\
             \x20       more = b''\n\
             \x20   print('sequential-more:', json.dumps(more.decode('utf-8', 'replace')))\n\
             guard('sequential', sequential)\n\
             # Through a CONNECT tunnel: the tunnel goes to the allowed host only.\n\
             def tunneled():\n\
             \x20   s = socket.create_connection(PROXY, timeout=30)\n\
             \x20   s.sendall(b'CONNECT 127.0.0.1:{p} HTTP/1.1\\r\\nHost: 127.0.0.1:{p}\\r\\n\\r\\n' + b'GET /tunnel-second HTTP/1.1\\r\\nHost: 127.0.0.1:{q}\\r\\n\\r\\n')\n\
             \x20   resp = read_all(s); print('tunneled:', resp.count(b'{up_body}'))\n\
             guard('tunneled', tunneled)\n",
            body_len = allowed.body.len(),
            up_body = allowed.body,
        );
        let out = client(
            allowing(&fx, &[&format!("127.0.0.1:{p}")])
                .arg("--deny-domain")
                .arg(format!("127.0.0.1:{q}")),
            &script,
        );
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
    each_mode(|mode| {
        let fx = Fixture::new(mode);
        let up = Upstream::start("socks");
        let p = up.port;
        let script = format!(
            "socks('connect', '127.0.0.1', {p}, atyp=1)\n\
             socks('bind', '127.0.0.1', {p}, cmd=2, atyp=1)\n\
             socks('udp-associate', '127.0.0.1', {p}, cmd=3, atyp=1)\n\
             socks('udp-associate-any', '0.0.0.0', 0, cmd=3, atyp=1)\n\
             socks('bind-name', 'host.cordon.internal', {p}, cmd=2)\n"
        );
        let out = client(
            allowing(
                &fx,
                &[
                    &format!("127.0.0.1:{p}"),
                    &format!("host.cordon.internal:{p}"),
                ],
            ),
            &script,
        );
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
    each_mode(|mode| {
        let fx = Fixture::new(mode);
        let mut script = String::from(
            "import socket, errno\n\
             def err(e): return errno.errorcode.get(e.errno, e.errno) if isinstance(e.errno, int) and e.errno > 0 else type(e).__name__\n\
             for label, name in [('example', 'example.com'), ('host-internal', 'host.cordon.internal')]:\n\
             \x20   try:\n\
             \x20       print(label + ': OPEN', socket.getaddrinfo(name, 80))\n\
             \x20   except OSError as e:\n\
             \x20       print(label + ': ERR', err(e))\n",
        );
        if let Some(ip) = resolver {
            let family = if ip.is_ipv4() { "AF_INET" } else { "AF_INET6" };
            // A DNS query for example.com, by hand.
            script.push_str(&format!(
                "q = bytes.fromhex('abcd01000001000000000000076578616d706c6503636f6d0000010001')\n\
                 s = socket.socket(socket.{family}, socket.SOCK_DGRAM); s.settimeout(5)\n\
                 try:\n\
                 \x20   s.connect(('{ip}', 53)); s.send(q); s.recv(512); print('resolver: OPEN')\n\
                 except OSError as e:\n\
                 \x20   print('resolver: ERR', err(e))\n\
                 t = socket.socket(socket.{family}, socket.SOCK_DGRAM)\n\
                 try:\n\
                 \x20   t.sendto(q, ('{ip}', 53)); print('resolver-sendto: OPEN')\n\
                 except OSError as e:\n\
                 \x20   print('resolver-sendto: ERR', err(e))\n"
            ));
        } else {
            eprintln!("no nameserver in /etc/resolv.conf: the resolver case is skipped");
        }
        let out = fx.sandbox().py(&script);
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
    let mut script = format!(
        "import socket, errno\n\
         def err(e): return errno.errorcode.get(e.errno, e.errno)\n\
         def udp(label, family, addr):\n\
         \x20   s = socket.socket(family, socket.SOCK_DGRAM)\n\
         \x20   try:\n\
         \x20       s.sendto(b'from-sandbox', addr); print(label + ': SENT')\n\
         \x20   except OSError as e:\n\
         \x20       print(label + ': ERR', err(e))\n\
         def tcp(label, family, addr):\n\
         \x20   s = socket.socket(family, socket.SOCK_STREAM); s.settimeout(10)\n\
         \x20   try:\n\
         \x20       s.connect(addr); print(label + ': OPEN')\n\
         \x20   except OSError as e:\n\
         \x20       print(label + ': ERR', err(e) if e.errno else type(e).__name__)\n\
         udp('udp4-lo', socket.AF_INET, ('127.0.0.1', {u4}))\n\
         udp('udp6-lo', socket.AF_INET6, ('::1', {u6}))\n\
         tcp('tcp6-lo', socket.AF_INET6, ('::1', {t6}))\n"
    );
    for (label, ip) in &targets {
        let family = if ip.contains(':') {
            "AF_INET6"
        } else {
            "AF_INET"
        };
        script.push_str(&format!(
            "udp('udp-{label}', socket.{family}, ('{ip}', 9))\n\
             tcp('tcp-{label}', socket.{family}, ('{ip}', {t6}))\n"
        ));
    }
    each_mode(|mode| {
        let fx = Fixture::new(mode);
        // --allow-local-port: Landlock lets the TCP connects through, so
        // only the network namespace is tested.
        let out = fx
            .sandbox()
            .arg("--allow-local-port")
            .arg(t6.to_string())
            .py(&script);
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
    each_mode(|mode| {
        let Some(net) = TestNet::new(TEST_HOSTS) else {
            return;
        };
        let fx = Fixture::new(mode);
        let up = Upstream::start_in("names", Some(&net));
        let p = up.port;
        let script = format!(
            "get('idna-punycode', 'xn--bcher-kva.example:{p}/')\n\
             get('idna-unicode', 'bücher.example:{p}/')\n\
             get('idna-upper', 'BÜCHER.Example.:{p}/')\n\
             tunnel('idna-connect', 'BÜCHER.EXAMPLE:{p}')\n\
             socks('idna-socks', 'bücher.example', {p})\n\
             get('wildcard-sub', 'www.cordon-test.example:{p}/')\n\
             get('wildcard-sub-upper', 'WWW.Cordon-Test.Example.:{p}/')\n\
             get('wildcard-apex', 'cordon-test.example:{p}/')\n\
             socks('wildcard-apex-socks', 'cordon-test.example', {p})\n\
             get('deny', 'evil.cordon-test.example:{p}/')\n\
             get('deny-upper', 'EVIL.Cordon-Test.EXAMPLE.:{p}/')\n\
             tunnel('deny-connect', 'evil.cordon-test.example:{p}')\n\
             socks('deny-socks', 'Evil.cordon-test.example.', {p})\n\
             get('metadata', 'metadata.cordon-test.example:{p}/')\n\
             socks('metadata-socks', 'metadata.cordon-test.example', {p})\n\
             get('private', 'private.cordon-test.example:{p}/')\n\
             get('bad-empty-label', 'a..cordon-test.example:{p}/')\n\
             get('bad-underscore', 'under_score.cordon-test.example:{p}/')\n\
             get('bad-hyphen', '-dash.cordon-test.example:{p}/')\n\
             get('bad-numeric', 'www.cordon-test.123:{p}/')\n\
             socks('bad-socks', 'a..cordon-test.example', {p})\n"
        );
        let out = net.client(
            allowing(
                &fx,
                &[
                    &format!("bücher.example:{p}"),
                    &format!("*.cordon-test.example:{p}"),
                    &format!("127.0.0.1:{p}"),
                ],
            )
            .arg("--deny-domain")
            .arg("EVIL.cordon-test.example."),
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
        let script = format!(
            "get('unicode', 'Bücher.example:{p}/')\n\
             get('localhost', 'LocalHost.:{p}/')\n"
        );
        let out = net.client(
            allowing(
                &fx,
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
    each_mode(|mode| {
        let Some(net) = TestNet::new(TEST_HOSTS) else {
            return;
        };
        let fx = Fixture::new(mode);
        let up = Upstream::start_in("loopback", Some(&net));
        let p = up.port;
        let script = format!(
            "get('localhost', 'localhost:{p}/')\n\
             tunnel('localhost-connect', 'localhost:{p}')\n\
             socks('localhost-socks', 'localhost', {p})\n\
             get('name', 'www.cordon-test.example:{p}/')\n\
             socks('name-socks', 'www.cordon-test.example', {p})\n"
        );
        let out = net.client(
            allowing(
                &fx,
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
// Many tunnels at once.

#[test]
fn many_tunnels_are_held_at_once_under_a_low_descriptor_limit() {
    // 600 tunnels need 1200 descriptors in the proxy: more than the soft
    // limit of 1024 a login session usually has, which cordon starts with.
    const N: usize = 600;
    each_mode(|mode| {
        let fx = Fixture::new(mode);
        let up = Upstream::start("many");
        let p = up.port;
        let script = format!(
            "import resource, socket\n\
             soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)\n\
             resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))\n\
             held, errors = [], {{}}\n\
             for i in range({N}):\n\
             \x20   try:\n\
             \x20       s = socket.create_connection(('127.0.0.1', 3128), timeout=30)\n\
             \x20       s.sendall(b'CONNECT 127.0.0.1:{p} HTTP/1.1\\r\\nHost: 127.0.0.1:{p}\\r\\n\\r\\n')\n\
             \x20       head = b''\n\
             \x20       while b'\\r\\n\\r\\n' not in head:\n\
             \x20           c = s.recv(1)\n\
             \x20           if not c: raise OSError('closed')\n\
             \x20           head += c\n\
             \x20       if not head.startswith(b'HTTP/1.1 200'): raise OSError(head.split(b'\\r\\n')[0].decode())\n\
             \x20       held.append(s)\n\
             \x20   except OSError as e:\n\
             \x20       errors[str(e)] = errors.get(str(e), 0) + 1\n\
             ok = 0\n\
             for s in held:\n\
             \x20   try:\n\
             \x20       s.sendall(b'GET / HTTP/1.1\\r\\nHost: 127.0.0.1:{p}\\r\\n\\r\\n')\n\
             \x20       data = b''\n\
             \x20       while True:\n\
             \x20           c = s.recv(4096)\n\
             \x20           if not c: break\n\
             \x20           data += c\n\
             \x20       ok += data.endswith(b'{body}')\n\
             \x20   except OSError as e:\n\
             \x20       errors[str(e)] = errors.get(str(e), 0) + 1\n\
             print('held:', len(held), 'ok:', ok, 'errors:', errors)\n",
            body = up.body
        );
        let sb = fx
            .sandbox()
            .arg("--allow-domain")
            .arg(format!("127.0.0.1:{p}"));
        let inner = sb.command(&[PY, "-c", &script]);
        let mut c = Command::new("sh");
        c.arg("-c")
            .arg("ulimit -S -n 1024 && exec \"$@\"")
            .arg("sh")
            .arg(inner.get_program())
            .args(inner.get_args())
            .env_clear();
        for (k, v) in inner.get_envs() {
            if let Some(v) = v {
                c.env(k, v);
            }
        }
        if let Some(d) = inner.get_current_dir() {
            c.current_dir(d);
        }
        c.stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .stdin(Stdio::null());
        let out = Running::start(c, None, RUN_TIMEOUT).wait();
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
/// [`framing::AMBIGUOUS_FRAMING`]) to the HTTP proxy from inside a sandbox:
/// the valid one reaches the loopback upstream, the ambiguous one gets a
/// 400 and reaches nothing.
fn refuses_ambiguous_framing(label: &str) {
    each_mode(|mode| {
        let fx = Fixture::new(mode);
        let up = Upstream::start("framing");
        let p = up.port;
        let authority = format!("127.0.0.1:{p}");
        let script = format!(
            "{}\n\
             def raw(label, data):\n\
             \x20   def run():\n\
             \x20       s = socket.create_connection(PROXY, timeout=30); s.sendall(data)\n\
             \x20       code, body = split(read_all(s)); out(label, code, body)\n\
             \x20   guard(label, run)\n\
             raw('control', HEAD + b'Content-Length: 5\\r\\n\\r\\nhello')\n\
             raw('{label}', dict(CASES)['{label}'])\n",
            framing::python_cases(&format!("http://{authority}/framing"), &authority)
        );
        let out = client(allowing(&fx, &[&authority]), &script);
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
            let cases: Vec<&str> = framing::AMBIGUOUS_FRAMING.iter().map(|(l, _)| *l).collect();
            assert_eq!(tested.to_vec(), cases);
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
