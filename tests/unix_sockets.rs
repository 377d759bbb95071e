//! The network door's UNIX socket gate: no host daemon's socket is
//! reachable, by path or abstract name, stream or datagram, however the
//! call is made; sockets the sandbox makes itself keep working; and
//! `--allow-unix-socket` opens exactly one.

mod common;

use std::os::unix::fs::PermissionsExt;
use std::os::unix::net::{UnixDatagram, UnixListener};
use std::path::Path;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use common::*;

/// The modules the snippets use beyond `os` and `errno`.
const MODULES: &[&str] = &["ctypes", "socket", "array", "threading"];

/// ctypes helpers: raw connect(AF_UNSPEC) and sendmmsg, which python's
/// socket module does not offer.
const CTYPES: &str = include_str!("py/unix_ctypes.py");

/// A host stream listener that records what any client sends, until the
/// returned stop flag is set and the thread joined.
struct HostListener {
    got: Arc<Mutex<Vec<u8>>>,
    accepted: Arc<AtomicUsize>,
    stop: Arc<AtomicBool>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl HostListener {
    fn bind(path: &Path) -> HostListener {
        let listener = UnixListener::bind(path).unwrap();
        std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o777)).unwrap();
        listener.set_nonblocking(true).unwrap();
        Self::serve(listener)
    }

    fn serve(listener: UnixListener) -> HostListener {
        let got = Arc::new(Mutex::new(Vec::new()));
        let accepted = Arc::new(AtomicUsize::new(0));
        let stop = Arc::new(AtomicBool::new(false));
        let (g, a, s) = (got.clone(), accepted.clone(), stop.clone());
        let thread = std::thread::spawn(move || {
            use std::io::Read;
            // One last look after `stop`, for a connection made just before.
            let mut last = false;
            while !last {
                last = s.load(Ordering::SeqCst);
                match listener.accept() {
                    Ok((mut c, _)) => {
                        a.fetch_add(1, Ordering::SeqCst);
                        let _ = c.set_nonblocking(false);
                        let _ = c.set_read_timeout(Some(Duration::from_millis(500)));
                        let mut buf = [0u8; 64];
                        if let Ok(n) = c.read(&mut buf) {
                            g.lock().unwrap().extend_from_slice(&buf[..n]);
                        }
                    }
                    Err(_) => std::thread::sleep(Duration::from_millis(10)),
                }
            }
        });
        HostListener {
            got,
            accepted,
            stop,
            thread: Some(thread),
        }
    }

    /// Stops the thread; returns (connections accepted, bytes received).
    fn finish(mut self) -> (usize, String) {
        self.stop.store(true, Ordering::SeqCst);
        if let Some(t) = self.thread.take() {
            t.join().unwrap();
        }
        let got = String::from_utf8_lossy(&self.got.lock().unwrap()).into_owned();
        (self.accepted.load(Ordering::SeqCst), got)
    }
}

impl Drop for HostListener {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

/// Datagrams that reached a host socket.
fn drain(sock: &UnixDatagram) -> Vec<String> {
    sock.set_nonblocking(true).unwrap();
    let mut got = Vec::new();
    let mut buf = [0u8; 256];
    while let Ok(n) = sock.recv(&mut buf) {
        got.push(String::from_utf8_lossy(&buf[..n]).into_owned());
    }
    got
}

#[test]
fn host_datagram_socket_is_unreachable_every_way() {
    each_fixture(|mode, fx| {
        let path = fx.outside.join("host.dgram");
        let host = UnixDatagram::bind(&path).unwrap();
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o777)).unwrap();
        // Positive control: the host socket takes datagrams from the host.
        UnixDatagram::unbound()
            .unwrap()
            .send_to(b"control", &path)
            .unwrap();
        assert_eq!(drain(&host), vec!["control"]);

        let p = path.to_str().unwrap();
        let script = py_tries(
            MODULES,
            CTYPES,
            &[
                (
                    "sendto",
                    format!("socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM).sendto(b'sendto', {p:?})"),
                ),
                (
                    "sendmsg",
                    format!("socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM).sendmsg([b'sendmsg'], [], 0, {p:?})"),
                ),
                (
                    "connect",
                    format!("s = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM); s.connect({p:?}); s.send(b'connect')"),
                ),
                (
                    "sendmmsg",
                    format!("sendmmsg(socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM), [b'mmsg1', b'mmsg2'], {p:?})"),
                ),
                (
                    "socketpair_unspec",
                    format!("a, b = socket.socketpair(socket.AF_UNIX, socket.SOCK_DGRAM); unspec(a); a.sendto(b'pair', {p:?})"),
                ),
                (
                    "seqpacket",
                    format!("s = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET); s.connect({p:?}); s.send(b'seq')"),
                ),
            ],
        );
        let out = fx.sandbox().tries(&script);
        let got = drain(&host);
        for label in [
            "sendto",
            "sendmsg",
            "connect",
            "sendmmsg",
            "socketpair_unspec",
            "seqpacket",
        ] {
            assert!(
                line(&out, label).starts_with("ERR"),
                "{mode:?}: {label} reached the host socket (it got {got:?}): {out:#?}"
            );
        }
        assert!(got.is_empty(), "{mode:?}: the host socket got {got:?}");
    });
}

#[test]
fn host_socket_inside_the_project_is_unreachable_even_by_symlink() {
    each_fixture(|mode, fx| {
        // A dev server's socket in the (writable) project, and a symlink
        // planted next to it pointing at a socket outside.
        let inside = HostListener::bind(&fx.project.join("dev.sock"));
        let outside = HostListener::bind(&fx.outside.join("daemon.sock"));
        std::os::unix::fs::symlink(fx.outside.join("daemon.sock"), fx.project.join("link.sock"))
            .unwrap();
        let script = py_tries(
            MODULES,
            "",
            &[
                (
                    "relative",
                    "s = socket.socket(socket.AF_UNIX); s.connect('dev.sock'); s.sendall(b'relative')"
                        .to_string(),
                ),
                (
                    "symlink",
                    "s = socket.socket(socket.AF_UNIX); s.connect('link.sock'); s.sendall(b'symlink')"
                        .to_string(),
                ),
            ],
        );
        let log = fx.outside.join("audit.jsonl");
        let out = fx.audited(&log).tries(&script);
        let (n_in, got_in) = inside.finish();
        let (n_out, got_out) = outside.finish();
        assert!(
            line(&out, "relative").starts_with("ERR") && line(&out, "symlink").starts_with("ERR"),
            "{mode:?}: reached a host socket: {out:#?}"
        );
        assert_eq!((n_in, n_out), (0, 0), "{mode:?}: {got_in:?} {got_out:?}");
        // Each refusal is an audit event naming the absolute path, and the
        // exit summary counts them.
        let log = std::fs::read_to_string(&log).unwrap_or_default();
        for name in ["dev.sock", "link.sock"] {
            let wanted = format!("\"subject\":\"{}\"", fx.project.join(name).display());
            assert!(
                log.lines().any(|l| l.contains(&wanted)
                    && l.contains("\"proto\":\"unix\"")
                    && l.contains("\"verdict\":\"deny\"")),
                "{mode:?}: no deny event for {name}: {log}"
            );
        }
        assert!(
            out.stderr.contains("blocked 2 network connections"),
            "{mode:?}: {out:#?}"
        );
    });
}

#[test]
fn host_abstract_socket_is_unreachable() {
    use std::os::linux::net::SocketAddrExt;
    each_fixture(|mode, fx| {
        let name = format!("cordon-test-{}", fx.token);
        let addr = std::os::unix::net::SocketAddr::from_abstract_name(name.as_bytes()).unwrap();
        let listener = UnixListener::bind_addr(&addr).unwrap();
        listener.set_nonblocking(true).unwrap();
        // Positive control: reachable from the host.
        std::os::unix::net::UnixStream::connect_addr(&addr).unwrap();
        let control = listener.accept();
        assert!(control.is_ok(), "control: {control:?}");
        let host = HostListener::serve(listener);
        let script = py_tries(
            MODULES,
            "",
            &[(
                "abstract",
                format!(
                    "s = socket.socket(socket.AF_UNIX); s.connect('\\0{name}'); s.sendall(b'abstract')"
                ),
            )],
        );
        let out = fx.sandbox().tries(&script);
        let (n, got) = host.finish();
        assert!(
            line(&out, "abstract").starts_with("ERR"),
            "{mode:?}: reached the host's abstract socket: {out:#?}"
        );
        assert_eq!(n, 0, "{mode:?}: host abstract listener got {got:?}");
    });
}

/// A [`py_tries`] case body: listen on the UNIX socket `bound`, connect
/// to `connected` and accept.
fn bind_connect(bound: &str, connected: &str) -> String {
    format!(
        "srv = socket.socket(socket.AF_UNIX); srv.bind('{bound}'); srv.listen()\n    \
         c = socket.socket(socket.AF_UNIX); c.connect('{connected}'); srv.accept()"
    )
}

#[test]
fn sockets_the_sandbox_makes_keep_working() {
    each_fixture(|mode, fx| {
        let script = py_tries(
            MODULES,
            CTYPES,
            &[
                (
                    "stream",
                    "os.makedirs('sub', exist_ok=True); os.chdir('sub')\n    \
                     srv = socket.socket(socket.AF_UNIX); srv.bind('own.sock'); srv.listen()\n    \
                     c = socket.socket(socket.AF_UNIX); c.connect('own.sock'); a, _ = srv.accept()\n    \
                     c.sendall(b'hello'); assert a.recv(10) == b'hello'\n    \
                     os.chdir('..'); c2 = socket.socket(socket.AF_UNIX); c2.connect('sub/own.sock'); srv.accept()"
                        .to_string(),
                ),
                (
                    "proc_self",
                    format!(
                        "os.makedirs('ps', exist_ok=True); os.chdir('ps')\n    {}; os.chdir('..')",
                        bind_connect("p.sock", "/proc/self/cwd/p.sock")
                    ),
                ),
                (
                    "thread",
                    "srv = socket.socket(socket.AF_UNIX); srv.bind('/tmp/th.sock'); srv.listen()\n    \
                     res = []\n    \
                     def go():\n    \
                     \x20   c = socket.socket(socket.AF_UNIX); c.connect('/tmp/th.sock'); c.sendmsg([b'from-thread']); res.append(c)\n    \
                     t = threading.Thread(target=go); t.start(); t.join(); a, _ = srv.accept()\n    \
                     assert res and a.recv(20) == b'from-thread'"
                        .to_string(),
                ),
                (
                    "tmp",
                    bind_connect("/tmp/t.sock", "/tmp/t.sock"),
                ),
                (
                    "dgram",
                    "r = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM); r.bind('own.dgram')\n    \
                     w = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)\n    \
                     w.sendto(b'one', 'own.dgram'); w.sendmsg([b't', b'wo'], [], 0, 'own.dgram')\n    \
                     sendmmsg(w, [b'three', b'four'], 'own.dgram')\n    \
                     got = [r.recv(10) for _ in range(4)]; assert got == [b'one', b'two', b'three', b'four'], got"
                        .to_string(),
                ),
                (
                    "rights",
                    "a, b = socket.socketpair()\n    \
                     f = open('passed.txt', 'w+'); f.write('via-fd'); f.flush()\n    \
                     a.sendmsg([b'x'], [(socket.SOL_SOCKET, socket.SCM_RIGHTS, array.array('i', [f.fileno()]))])\n    \
                     msg, anc, _, _ = b.recvmsg(10, socket.CMSG_SPACE(4))\n    \
                     fd = array.array('i', anc[0][2])[0]; os.lseek(fd, 0, 0); assert os.read(fd, 10) == b'via-fd'"
                        .to_string(),
                ),
                (
                    "abstract",
                    bind_connect("\\0own-abstract", "\\0own-abstract"),
                ),
                (
                    "unbound_then_closed",
                    "r = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM); r.bind('gone.dgram'); r.close()\n    \
                     socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM).sendto(b'x', 'gone.dgram')"
                        .to_string(),
                ),
            ],
        );
        let out = fx.sandbox().tries(&script);
        for label in [
            "stream",
            "proc_self",
            "thread",
            "tmp",
            "dgram",
            "rights",
            "abstract",
        ] {
            assert_eq!(line(&out, label), "OK", "{mode:?}: {label}: {out:#?}");
        }
        // A socket file whose socket is gone cannot be told from a host
        // daemon's: refused (EACCES, where the kernel says ECONNREFUSED).
        assert!(
            line(&out, "unbound_then_closed").starts_with("ERR"),
            "{mode:?}: {out:#?}"
        );
    });
}

/// The gate must read the address once: a second thread rewriting it from
/// the sandbox's own socket to the host's while connects are in flight
/// never gets through. Both paths have the same length.
#[test]
fn address_rewritten_during_connect_never_reaches_the_host() {
    each_fixture(|mode, fx| {
        let host_path = fx.outside.join("race.sock");
        let host = HostListener::bind(&host_path);
        let own_path = fx.project.join("race.sock");
        // Same length, so only the bytes change, never the length.
        assert_eq!(host_path.as_os_str().len(), own_path.as_os_str().len());
        let out = fx.sandbox().py_args(
            concat!(
                include_str!("py/unix_ctypes.py"),
                include_str!("py/unix_connect_race.py")
            ),
            &[host_path.to_str().unwrap(), own_path.to_str().unwrap()],
        );
        let (n, got) = host.finish();
        assert_eq!(
            n, 0,
            "{mode:?}: the host socket was reached ({got:?}): {out:#?}"
        );
        // The race ran both ways: some connects hit the sandbox's own
        // socket, some were refused as the host's.
        let count = |label| line(&out, label).parse::<u32>().unwrap_or(0);
        assert!(
            count("ok") > 0 && count("refused") > 0,
            "{mode:?}: the race did not run: {out:#?}"
        );
    });
}

#[test]
fn allow_unix_socket_opens_exactly_that_socket() {
    each_fixture(|mode, fx| {
        // In a runtime dir the view hides: the allowed socket stays visible.
        let runtime = fx.outside.join("run-user");
        std::fs::create_dir(&runtime).unwrap();
        std::fs::set_permissions(&runtime, std::fs::Permissions::from_mode(0o700)).unwrap();
        chown(&runtime, mode);
        let allowed_path = runtime.join("agent.sock");
        let other_path = runtime.join("other.sock");
        let allowed = HostListener::bind(&allowed_path);
        let other = HostListener::bind(&other_path);
        let script = py_tries(
            MODULES,
            "",
            &[
                (
                    "allowed",
                    format!(
                        "s = socket.socket(socket.AF_UNIX); s.connect({:?}); s.sendall(b'allowed')",
                        allowed_path.to_str().unwrap()
                    ),
                ),
                (
                    "other",
                    format!(
                        "s = socket.socket(socket.AF_UNIX); s.connect({:?}); s.sendall(b'other')",
                        other_path.to_str().unwrap()
                    ),
                ),
            ],
        );
        let out = fx
            .sandbox()
            .env("XDG_RUNTIME_DIR", &runtime)
            .flag("--allow-unix-socket", &allowed_path)
            .tries(&script);
        let (_, got_allowed) = allowed.finish();
        let (n_other, got_other) = other.finish();
        assert_eq!(line(&out, "allowed"), "OK", "{mode:?}: {out:#?}");
        assert_eq!(got_allowed, "allowed", "{mode:?}: {out:#?}");
        assert!(line(&out, "other").starts_with("ERR"), "{mode:?}: {out:#?}");
        assert_eq!(n_other, 0, "{mode:?}: other socket got {got_other:?}");
    });
}

#[test]
fn allow_unix_socket_that_is_not_a_socket_refuses_to_run() {
    let fx = Fixture::new(Mode::Root);
    let file = fx.outside.join("plain-file");
    std::fs::write(&file, "not a socket").unwrap();
    for (path, why) in [
        (file.clone(), "not a UNIX socket"),
        (fx.outside.join("missing.sock"), "not found"),
    ] {
        let out = fx
            .sandbox()
            .flag("--allow-unix-socket", &path)
            .run(&["true"]);
        out.expect_code(125);
        assert!(
            out.stderr.contains(path.to_str().unwrap())
                && out.stderr.contains("--allow-unix-socket")
                && out.stderr.contains(why),
            "{out:#?}"
        );
    }
}

#[test]
fn explain_warns_about_root_equivalent_sockets() {
    let fx = Fixture::new(Mode::Root);
    let docker = fx.outside.join("docker.sock");
    let _listener = UnixListener::bind(&docker).unwrap();
    let out = fx
        .sandbox()
        .subcommand("explain")
        .flag("--allow-unix-socket", &docker)
        .run(&[]);
    out.ok();
    let row = out
        .stdout
        .lines()
        .find(|l| l.contains("docker.sock"))
        .unwrap_or_default();
    assert!(
        row.contains("WARNING") && row.contains("root on the host"),
        "{out:#?}"
    );
    // And `run` says so too, before starting.
    let out = fx
        .sandbox()
        .flag("--allow-unix-socket", &docker)
        .run(&["true"]);
    out.ok();
    assert!(
        out.stderr.contains("WARNING") && out.stderr.contains("docker.sock"),
        "{out:#?}"
    );
}

/// Variables that point at host daemons' sockets are gone inside: a tool
/// must not even be told where the agent, the bus or the engine is.
#[test]
fn host_daemon_variables_are_unset() {
    let names = [
        "SSH_AUTH_SOCK",
        "DBUS_SESSION_BUS_ADDRESS",
        "DBUS_SYSTEM_BUS_ADDRESS",
        "DOCKER_HOST",
        "CONTAINER_HOST",
        "GPG_AGENT_INFO",
        "DISPLAY",
        "WAYLAND_DISPLAY",
    ];
    each_fixture(|mode, fx| {
        let mut sandbox = fx.sandbox().env("CORDON_TEST_KEPT", "kept");
        for name in names {
            sandbox = sandbox.env(name, format!("unix:path=/tmp/{name}-{}", fx.token));
        }
        let out = sandbox.run(&["env"]);
        out.ok();
        // Control: the caller's other variables do pass.
        assert!(
            out.stdout.contains("CORDON_TEST_KEPT=kept"),
            "{mode:?}: {out:#?}"
        );
        for name in names {
            assert!(
                !out.stdout
                    .lines()
                    .any(|l| l.starts_with(&format!("{name}="))),
                "{mode:?}: {name} is set inside: {out:#?}"
            );
        }
        assert!(!out.stdout.contains(&fx.token), "{mode:?}: {out:#?}");
    });
}

/// Hostile arguments to gated calls: a control message whose length would
/// wrap around (it took init, and the whole sandbox, down), and
/// MSG_FASTOPEN, which would connect a TCP socket past Landlock's port
/// check. Both are refused and the sandbox lives on.
#[test]
fn hostile_gated_calls_are_refused_and_init_survives() {
    each_fixture(|mode, fx| {
        let script = py_tries(
            &["ctypes", "socket", "struct"],
            CTYPES,
            &[
                (
                    "wrapping_cmsg",
                    "a, b = socket.socketpair()\n    \
                     ctl = ctypes.create_string_buffer(struct.pack('QiiQii', 16, 0, 0, 2**64 - 16, socket.SOL_SOCKET, socket.SCM_RIGHTS), 32)\n    \
                     data = ctypes.create_string_buffer(b'x', 1); v = iovec(ctypes.cast(data, ctypes.c_void_p), 1)\n    \
                     m = msghdr(None, 0, ctypes.pointer(v), 1, ctypes.cast(ctl, ctypes.c_void_p), 32, 0)\n    \
                     raw(libc.sendmsg(a.fileno(), ctypes.byref(m), 0))"
                        .to_string(),
                ),
                (
                    "fastopen",
                    "srv = socket.socket(); srv.listen(); port = srv.getsockname()[1]\n    \
                     socket.socket().sendto(b'hello', socket.MSG_FASTOPEN, ('127.0.0.1', port))"
                        .to_string(),
                ),
                ("alive", "pass".to_string()),
            ],
        );
        let out = fx.sandbox().tries(&script);
        assert_eq!(
            line(&out, "wrapping_cmsg"),
            "ERR EINVAL",
            "{mode:?}: {out:#?}"
        );
        assert!(
            line(&out, "fastopen").starts_with("ERR"),
            "{mode:?}: {out:#?}"
        );
        assert_eq!(line(&out, "alive"), "OK", "{mode:?}: {out:#?}");
        out.ok();
    });
}

/// Many callers blocked in gated connects (a listener that never accepts)
/// do not stall the gate for everyone else.
#[test]
fn blocked_connects_do_not_stall_other_gated_calls() {
    let fx = Fixture::new(Mode::Root);
    let out = fx.sandbox().py(include_str!("py/unix_blocked_connects.py"));
    assert!(out.stdout.contains("sendmsg: OK"), "{out:#?}");
}
