//! Tests of accepting clients: the cap, timeouts, resets and shutdown.

use std::io;
use std::net::{IpAddr, SocketAddr};
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::watch;

use super::*;
use crate::audit::{self, Auditor, Door, Proto, Verdict};
use crate::net::proxy::socks::SOCKS_GENERAL_FAILURE;
use crate::net::proxy::{Allowed, Denial, Destination, Gate};

/// Allows 127.0.0.1 on any port (as an IP the policy names); refuses the rest.
struct LoopbackGate;

impl Gate for LoopbackGate {
    fn check_destination(&self, host: &str, _port: u16) -> Result<Allowed, Denial> {
        match host.parse::<IpAddr>() {
            Ok(ip) if ip.is_loopback() => Ok(Allowed {
                dest: Destination::Ip(ip),
                rule: "127.0.0.1".into(),
                source: "test".into(),
            }),
            _ => Err(Denial {
                rule: "default".into(),
                source: "built-in".into(),
                reason: "not loopback".into(),
                fix: None,
                message: format!("cordon: blocked {host}\n"),
            }),
        }
    }
    fn check_address(&self, _: &str, _: IpAddr, _: u16) -> Result<(), Denial> {
        Ok(())
    }
}

struct Running {
    http: SocketAddr,
    socks: SocketAddr,
    /// Kept alive: the proxy stops when it is dropped.
    _stop: watch::Sender<bool>,
    proxy: Arc<Proxy<LoopbackGate>>,
    audit: Auditor,
}

async fn start(limits: ProxyLimits) -> Running {
    let (stop, stopped) = watch::channel(false);
    let audit = Auditor::disabled();
    let proxy = Proxy::new(LoopbackGate, limits, audit.clone(), stopped);
    let http = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let socks = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let (h, s) = (http.local_addr().unwrap(), socks.local_addr().unwrap());
    tokio::spawn(proxy.clone().serve_http(http));
    tokio::spawn(proxy.clone().serve_socks(socks));
    Running {
        http: h,
        socks: s,
        _stop: stop,
        proxy,
        audit,
    }
}

/// An upstream that echoes each connection until it closes; connections
/// whose first bytes are `reset` are reset instead.
async fn echo_upstream() -> SocketAddr {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move {
        while let Ok((mut s, _)) = listener.accept().await {
            tokio::spawn(async move {
                let mut buf = [0u8; 1024];
                loop {
                    let n = match s.read(&mut buf).await {
                        Ok(0) | Err(_) => return,
                        Ok(n) => n,
                    };
                    if buf[..n].starts_with(b"reset") {
                        // SO_LINGER 0: close sends RST (and, with a
                        // zero timeout, never blocks).
                        #[allow(deprecated)]
                        let _ = s.set_linger(Some(Duration::ZERO));
                        return;
                    }
                    if s.write_all(&buf[..n]).await.is_err() {
                        return;
                    }
                }
            });
        }
    });
    addr
}

fn limits(cap: usize) -> ProxyLimits {
    ProxyLimits {
        max_connections: cap,
        max_connections_source: "flag --max-connections".into(),
        handshake_timeout: Duration::from_millis(300),
        connect_timeout: Duration::from_secs(2),
    }
}

/// Opens a CONNECT tunnel and returns the stream after the 200.
async fn tunnel(proxy: SocketAddr, to: SocketAddr) -> TcpStream {
    let mut s = TcpStream::connect(proxy).await.unwrap();
    s.write_all(format!("CONNECT {to} HTTP/1.1\r\nHost: {to}\r\n\r\n").as_bytes())
        .await
        .unwrap();
    let head = read_response(&mut s).await;
    assert!(head.starts_with("HTTP/1.1 200"), "{head}");
    s
}

async fn read_response(s: &mut TcpStream) -> String {
    let mut out = Vec::new();
    let mut buf = [0u8; 1024];
    while !out.windows(4).any(|w| w == b"\r\n\r\n") {
        let n = s.read(&mut buf).await.unwrap();
        if n == 0 {
            break;
        }
        out.extend_from_slice(&buf[..n]);
    }
    String::from_utf8_lossy(&out).into_owned()
}

async fn echo(s: &mut TcpStream, msg: &[u8]) -> io::Result<Vec<u8>> {
    s.write_all(msg).await?;
    let mut buf = vec![0u8; msg.len()];
    tokio::time::timeout(Duration::from_secs(2), s.read_exact(&mut buf))
        .await
        .map_err(|_| io::Error::other("timeout"))??;
    Ok(buf)
}

/// Reads until EOF or error; panics if the peer keeps it open past `limit`.
async fn closed_within(s: &mut TcpStream, limit: Duration) -> Vec<u8> {
    let mut all = Vec::new();
    tokio::time::timeout(limit, async {
        let mut buf = [0u8; 1024];
        loop {
            match s.read(&mut buf).await {
                Ok(0) | Err(_) => return,
                Ok(n) => all.extend_from_slice(&buf[..n]),
            }
        }
    })
    .await
    .expect("the proxy kept the connection open");
    all
}

#[test]
fn the_built_in_connection_cap_follows_max_memory() {
    use crate::policy::{Source, Sourced};
    let built_in = Sourced::new(4096, Source::Builtin);
    let memory = Sourced::new(128 << 20, Source::Flag("--max-memory".into()));
    let small = ProxyLimits::for_sandbox(&built_in, Some(&memory));
    assert_eq!(small.max_connections, 256);
    assert!(small.max_connections_source.contains("max_memory"));
    assert_eq!(
        ProxyLimits::for_sandbox(&built_in, None).max_connections,
        4096
    );
    let big = Sourced::new(64 << 30, Source::Flag("--max-memory".into()));
    assert_eq!(
        ProxyLimits::for_sandbox(&built_in, Some(&big)).max_connections,
        4096
    );
    // A cap the user chose stays.
    let chosen = Sourced::new(1000, Source::Flag("--max-connections".into()));
    assert_eq!(
        ProxyLimits::for_sandbox(&chosen, Some(&memory)).max_connections,
        1000
    );
}

#[tokio::test]
async fn over_the_cap_refused_with_503_and_reported_once() {
    let up = echo_upstream().await;
    let p = start(limits(2)).await;
    let mut a = tunnel(p.http, up).await;
    let _b = tunnel(p.http, up).await;
    let mut c = TcpStream::connect(p.http).await.unwrap();
    c.write_all(format!("CONNECT {up} HTTP/1.1\r\n\r\n").as_bytes())
        .await
        .unwrap();
    let refused = String::from_utf8(closed_within(&mut c, Duration::from_secs(3)).await).unwrap();
    assert!(refused.starts_with("HTTP/1.1 503"), "{refused}");
    assert!(refused.contains("--max-connections"), "{refused}");
    assert!(refused.contains("the cap is 2"), "{refused}");
    // SOCKS5 over the cap: reply 1 after the handshake.
    let mut s = TcpStream::connect(p.socks).await.unwrap();
    s.write_all(&[5, 1, 0]).await.unwrap();
    let mut hello = [0u8; 2];
    s.read_exact(&mut hello).await.unwrap();
    let port = up.port().to_be_bytes();
    s.write_all(&[5, 1, 0, 1, 127, 0, 0, 1, port[0], port[1]])
        .await
        .unwrap();
    let mut reply = [0u8; 10];
    s.read_exact(&mut reply).await.unwrap();
    assert_eq!(reply[1], SOCKS_GENERAL_FAILURE);
    // The tunnels in the cap still work; closing one frees its slot.
    assert_eq!(echo(&mut a, b"ping").await.unwrap(), b"ping");
    drop(a);
    let mut ok = false;
    for _ in 0..50 {
        tokio::time::sleep(Duration::from_millis(20)).await;
        if p.proxy.slots.available_permits() == 1 {
            ok = true;
            break;
        }
    }
    assert!(ok, "the closed tunnel's slot was not freed");
    let mut d = tunnel(p.http, up).await;
    assert_eq!(echo(&mut d, b"pong").await.unwrap(), b"pong");
    assert!(p.proxy.cap_reported.load(Ordering::Relaxed));
    let summary = p.audit.finish();
    assert_eq!(summary.blocked(Door::Network), 2, "{summary:?}");
    assert!(summary
        .text(None)
        .unwrap()
        .contains("\n  (over the connection cap) ×2: the proxy's cap of connections at once was reached (2, flag --max-connections); close idle connections, or raise the cap: --max-connections N (or [network] max_connections = N)\n"));
}

#[tokio::test]
async fn silent_and_slow_clients_time_out() {
    let p = start(limits(4)).await;
    // Silent: connects, sends nothing.
    let mut silent = TcpStream::connect(p.http).await.unwrap();
    let started = Instant::now();
    closed_within(&mut silent, Duration::from_secs(2)).await;
    assert!(started.elapsed() >= Duration::from_millis(250));
    // Slow: a byte every 50 ms never finishes the head in time.
    let mut slow = TcpStream::connect(p.http).await.unwrap();
    let started = Instant::now();
    let mut closed = false;
    for b in b"CONNECT 127.0.0.1:1 HTTP/1.1\r\nX-Slow: aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa" {
        if slow.write_all(&[*b]).await.is_err() {
            closed = true;
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    if !closed {
        closed_within(&mut slow, Duration::from_secs(1)).await;
    }
    assert!(started.elapsed() < Duration::from_secs(3));
    // Silent SOCKS client.
    let mut socks = TcpStream::connect(p.socks).await.unwrap();
    closed_within(&mut socks, Duration::from_secs(2)).await;
    // Their slots are back.
    tokio::time::sleep(Duration::from_millis(50)).await;
    assert_eq!(p.proxy.slots.available_permits(), 4);
}

#[tokio::test]
async fn an_upstream_reset_ends_only_its_own_tunnel() {
    let up = echo_upstream().await;
    let p = start(limits(8)).await;
    let mut keep = tunnel(p.http, up).await;
    let mut doomed = tunnel(p.http, up).await;
    assert_eq!(echo(&mut keep, b"one").await.unwrap(), b"one");
    doomed.write_all(b"reset").await.unwrap();
    closed_within(&mut doomed, Duration::from_secs(2)).await;
    assert_eq!(echo(&mut keep, b"two").await.unwrap(), b"two");
    // A new tunnel still works.
    let mut again = tunnel(p.http, up).await;
    assert_eq!(echo(&mut again, b"three").await.unwrap(), b"three");
}

#[tokio::test]
async fn stop_closes_every_tunnel_and_records_bytes() {
    let up = echo_upstream().await;
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("audit.jsonl");
    let key_path = crate::audit::key_path(&dir.path().join("state"));
    let key = || crate::audit::AuditKey::load_or_create(&key_path).unwrap();
    let log = crate::audit::AuditFile::open(&path, false)
        .unwrap()
        .keyed(key());
    let audit = Auditor::start(Some(log), "cordon-test", "test");
    let (stop, stopped) = watch::channel(false);
    let proxy = Proxy::new(LoopbackGate, limits(8), audit.clone(), stopped);
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let served = tokio::spawn(proxy.clone().serve_http(listener));
    let mut a = tunnel(addr, up).await;
    let mut b = tunnel(addr, up).await;
    assert_eq!(echo(&mut a, b"12345").await.unwrap(), b"12345");
    // A denied one, for the log.
    let mut d = TcpStream::connect(addr).await.unwrap();
    d.write_all(b"CONNECT evil.example:443 HTTP/1.1\r\n\r\n")
        .await
        .unwrap();
    let denied = String::from_utf8(closed_within(&mut d, Duration::from_secs(2)).await).unwrap();
    assert!(denied.starts_with("HTTP/1.1 403"), "{denied}");
    stop.send(true).unwrap();
    closed_within(&mut a, Duration::from_secs(2)).await;
    closed_within(&mut b, Duration::from_secs(2)).await;
    served.await.unwrap();
    proxy.drain(Duration::from_secs(2)).await;
    assert!(TcpStream::connect(addr).await.is_err(), "still accepting");
    audit.finish();
    let text = std::fs::read_to_string(&path).unwrap();
    assert_eq!(crate::audit::verify(&text, &key()), Ok(5), "{text}");
    let events: Vec<crate::audit::Event> = text
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let closes: Vec<_> = events
        .iter()
        .filter(|e| e.event == audit::Kind::Close)
        .collect();
    assert_eq!(closes.len(), 2, "{text}");
    let up_total: u64 = closes.iter().map(|e| e.bytes_up.unwrap()).sum();
    let down_total: u64 = closes.iter().map(|e| e.bytes_down.unwrap()).sum();
    assert_eq!((up_total, down_total), (5, 5), "{text}");
    let deny = events.iter().find(|e| e.verdict == Verdict::Deny).unwrap();
    assert_eq!(deny.subject, "evil.example:443");
    assert_eq!(deny.proto, Some(Proto::Connect));
    assert_eq!(deny.rule.as_deref(), Some("default"));
}
