//! The network door: only lo inside, the host's loopback unreachable,
//! local ports only when allowed. Uses loopback only.

mod common;

use std::net::{TcpListener, TcpStream};

use common::*;

fn line<'a>(out: &'a Output, label: &str) -> &'a str {
    out.stdout
        .lines()
        .find_map(|l| l.strip_prefix(&format!("{label}: ")))
        .unwrap_or("<missing>")
}

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
