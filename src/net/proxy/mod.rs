//! The allowlist proxy: an HTTP proxy (CONNECT tunnels and absolute-form
//! plain HTTP) and a SOCKS5 proxy (CONNECT only), both asking a [`Gate`]
//! before every connection and connecting only to the address it checked.

pub mod framing;
pub mod inspect;

use std::io;
use std::net::{IpAddr, SocketAddr};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{watch, Semaphore};

use crate::audit::{self, Auditor, Door, Event, Proto, Verdict};
use crate::net::proxy::inspect::{Endpoint, Inspector, Tunnel};
use crate::net::Counted;

/// Where a client asked to go, after the policy normalised it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Destination {
    /// A host name to resolve (normalised: lower case, punycode).
    Name(String),
    /// An IP literal the policy allows as such.
    Ip(IpAddr),
    /// `host.cordon.internal`: the host's own loopback.
    HostLoopback,
}

/// A refusal, with the words an agent (and its user) can act on.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Denial {
    /// The rule, or the default, that refused.
    pub rule: String,
    /// Where that rule came from (`built-in`, a file, a flag).
    pub source: String,
    /// Why, in a few words (for the audit log).
    pub reason: String,
    /// What was blocked and how to allow it; becomes the 403 body.
    pub message: String,
}

/// A destination the policy let through, and the rule that did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Allowed {
    /// Where to connect.
    pub dest: Destination,
    /// The allow rule.
    pub rule: String,
    /// Where it came from.
    pub source: String,
}

/// The network policy, as the proxy sees it.
pub trait Gate: Send + Sync + 'static {
    /// Decides on a destination named by the client.
    fn check_destination(&self, host: &str, port: u16) -> Result<Allowed, Denial>;
    /// After resolving an allowed name: may the proxy connect to `addr`?
    fn check_address(&self, host: &str, addr: IpAddr, port: u16) -> Result<(), Denial>;
}

/// Bounds that keep a misbehaving client to the cost of its own socket.
#[derive(Debug, Clone)]
pub struct ProxyLimits {
    /// Connections served at once; more are refused (HTTP 503, SOCKS5
    /// reply 1) and the first refusal is reported.
    pub max_connections: usize,
    /// Where `max_connections` came from (for the report).
    pub max_connections_source: String,
    /// Time a client has to send its request head or SOCKS handshake.
    pub handshake_timeout: Duration,
    /// Time to connect to the upstream.
    pub connect_timeout: Duration,
}

impl Default for ProxyLimits {
    fn default() -> Self {
        ProxyLimits {
            max_connections: 4096,
            max_connections_source: "built-in".into(),
            handshake_timeout: Duration::from_secs(30),
            connect_timeout: Duration::from_secs(15),
        }
    }
}

/// What one proxied connection is assumed to cost the supervisor (its
/// head buffer, copy buffers, TLS and HTTP state when inspected) when the
/// connection cap is derived from `max_memory`.
const CONNECTION_COST: u64 = 128 << 10;

impl ProxyLimits {
    /// The limits for a sandbox: the policy's connection cap, except that
    /// the built-in one shrinks to what a quarter of `max_memory` holds at
    /// [`CONNECTION_COST`] each (at least 16), as the supervisor's memory
    /// is not the sandbox's cgroup's.
    pub fn for_sandbox(
        cap: &crate::policy::Sourced<u64>,
        max_memory: Option<&crate::policy::Sourced<u64>>,
    ) -> ProxyLimits {
        let (value, source) = match max_memory {
            Some(m)
                if cap.source == crate::policy::Source::Builtin
                    && (m.value / 4 / CONNECTION_COST) < cap.value =>
            {
                (
                    (m.value / 4 / CONNECTION_COST).max(16),
                    format!("a quarter of max_memory ({}) at 128 KiB each", m.source),
                )
            }
            _ => (cap.value, cap.source.to_string()),
        };
        ProxyLimits {
            max_connections: usize::try_from(value).unwrap_or(usize::MAX),
            max_connections_source: source,
            ..Default::default()
        }
    }
}

/// The largest request head the HTTP proxy reads.
const MAX_HEAD: usize = 64 * 1024;
/// Clients over the cap being told so at once; past this they are just
/// closed, so a flood costs no more than this many small tasks.
const MAX_REFUSALS: usize = 64;
/// Time an over-the-cap client has to send what it has before the refusal.
const REFUSAL_TIMEOUT: Duration = Duration::from_secs(2);
/// Pause after a failed accept (out of descriptors, ...) before the next.
const ACCEPT_BACKOFF: Duration = Duration::from_millis(50);
/// The summary's subject for connections refused over the cap.
pub const OVER_CAP: &str = "(over the connection cap)";

/// The proxy: one per sandbox, shared by its listeners.
pub struct Proxy<G: Gate> {
    gate: G,
    limits: ProxyLimits,
    slots: Arc<Semaphore>,
    refusals: Arc<Semaphore>,
    audit: Auditor,
    cap_reported: AtomicBool,
    stop: watch::Receiver<bool>,
    /// TLS inspection and injected credentials (the credentials door), if
    /// the policy inspects any host.
    inspector: Option<Arc<Inspector>>,
}

/// Why one client connection ended early.
#[derive(Debug, thiserror::Error)]
enum ClientError {
    #[error("{0}")]
    Io(#[from] io::Error),
    #[error("timed out")]
    Timeout,
    #[error("malformed request: {0}")]
    Malformed(&'static str),
}

/// Why the proxy did not connect to an allowed destination.
enum ConnectError {
    /// The name resolved only to addresses the policy refuses.
    Denied(Denial, SocketAddr),
    /// The upstream could not be reached (message for the client).
    Upstream(String),
}

/// One client connection's tally, kept outside the future that serves it
/// so that it survives the future being cancelled at shutdown.
struct Conn {
    // Shared so TLS inspection, which needs owned streams, can count too.
    up: Arc<AtomicU64>,
    down: Arc<AtomicU64>,
    /// Set once the upstream is connected: the close event to record.
    open: Mutex<Option<(Event, Instant)>>,
}

impl Conn {
    fn new() -> Conn {
        Conn {
            up: Arc::new(AtomicU64::new(0)),
            down: Arc::new(AtomicU64::new(0)),
            open: Mutex::new(None),
        }
    }
}

/// `host:port`, with brackets around an IPv6 host.
fn subject(host: &str, port: u16) -> String {
    if host.contains(':') {
        format!("[{host}]:{port}")
    } else {
        format!("{host}:{port}")
    }
}

/// Whether an accept error means the listener itself is gone (as opposed
/// to a full descriptor table or a client that left before accept).
fn fatal_accept(e: &io::Error) -> bool {
    matches!(
        e.raw_os_error(),
        Some(libc::EBADF | libc::EINVAL | libc::ENOTSOCK | libc::EOPNOTSUPP)
    )
}

impl<G: Gate> Proxy<G> {
    /// A proxy asking `gate`, recording to `audit`, serving until `stop`
    /// turns true (or its sender is dropped).
    pub fn new(
        gate: G,
        limits: ProxyLimits,
        audit: Auditor,
        stop: watch::Receiver<bool>,
    ) -> Arc<Self> {
        Self::with_inspector(gate, limits, audit, stop, None)
    }

    /// As [`Proxy::new`], with TLS inspection for the hosts `inspector` names.
    pub fn with_inspector(
        gate: G,
        limits: ProxyLimits,
        audit: Auditor,
        stop: watch::Receiver<bool>,
        inspector: Option<Arc<Inspector>>,
    ) -> Arc<Self> {
        let slots = Arc::new(Semaphore::new(limits.max_connections));
        Arc::new(Proxy {
            gate,
            limits,
            slots,
            refusals: Arc::new(Semaphore::new(MAX_REFUSALS)),
            audit,
            cap_reported: AtomicBool::new(false),
            stop,
            inspector,
        })
    }

    /// Accepts HTTP proxy clients until the listener fails or the proxy stops.
    pub async fn serve_http(self: Arc<Self>, listener: TcpListener) {
        self.serve(listener, Kind::Http).await
    }

    /// Accepts SOCKS5 clients until the listener fails or the proxy stops.
    pub async fn serve_socks(self: Arc<Self>, listener: TcpListener) {
        self.serve(listener, Kind::Socks).await
    }

    /// After a stop: waits (up to `grace`) until every client task has
    /// ended and recorded its close event.
    pub async fn drain(&self, grace: Duration) {
        let all = u32::try_from(self.limits.max_connections).unwrap_or(u32::MAX);
        let _ = tokio::time::timeout(grace, self.slots.acquire_many(all)).await;
    }

    async fn serve(self: Arc<Self>, listener: TcpListener, kind: Kind) {
        let mut stop = self.stop.clone();
        loop {
            let accepted = tokio::select! {
                r = listener.accept() => r,
                _ = stop.wait_for(|s| *s) => return,
            };
            let client = match accepted {
                Ok((client, _)) => client,
                Err(e) if fatal_accept(&e) => return,
                // Out of descriptors, or a client gone before accept: the
                // listener is fine; a pause lets descriptors free up.
                Err(_) => {
                    tokio::time::sleep(ACCEPT_BACKOFF).await;
                    continue;
                }
            };
            // Accepting before taking a slot lets a client over the cap be
            // told so, instead of waiting unseen in the listen queue.
            let Ok(permit) = self.slots.clone().try_acquire_owned() else {
                self.over_cap(client, kind);
                continue;
            };
            let proxy = self.clone();
            tokio::spawn(async move {
                let _permit = permit;
                let conn = Conn::new();
                let mut stop = proxy.stop.clone();
                tokio::select! {
                    _ = proxy.client(kind, client, &conn) => {}
                    _ = stop.wait_for(|s| *s) => {}
                }
                proxy.closed(&conn);
            });
        }
    }

    async fn client(&self, kind: Kind, client: TcpStream, conn: &Conn) {
        let _ = match kind {
            Kind::Http => self.http_client(client, conn).await,
            Kind::Socks => self.socks_client(client, conn).await,
        };
    }

    /// Refuses a client over the cap (reporting the first time).
    fn over_cap(self: &Arc<Self>, client: TcpStream, kind: Kind) {
        self.audit.count_blocked(Door::Network, OVER_CAP);
        let cap = self.limits.max_connections;
        let source = &self.limits.max_connections_source;
        if !self.cap_reported.swap(true, Ordering::Relaxed) {
            eprintln!(
                "cordon: WARNING: the proxy reached its cap of {cap} connections at once ({}); further connections are refused (HTTP 503, SOCKS5 reply 1) until one closes; raise it with --max-connections N or [network] max_connections = N",
                crate::escape::printable(source)
            );
            let mut event = Event::new(
                Door::Network,
                audit::Kind::Limit,
                Verdict::Deny,
                "max_connections",
            );
            event.rule = Some(format!("max_connections = {cap}"));
            event.source = Some(source.clone());
            event.reason = Some(
                "the proxy's connection cap was reached; further connections are refused until one closes"
                    .into(),
            );
            self.audit.record(event);
        }
        let Ok(permit) = self.refusals.clone().try_acquire_owned() else {
            return; // A flood: dropping the socket closes it.
        };
        let proxy = self.clone();
        tokio::spawn(async move {
            let _permit = permit;
            let _ =
                tokio::time::timeout(REFUSAL_TIMEOUT, proxy.refuse_over_cap(client, kind)).await;
        });
    }

    async fn refuse_over_cap(&self, mut client: TcpStream, kind: Kind) -> Result<(), ClientError> {
        match kind {
            Kind::Http => {
                // Read the head first: closing on unread data would reset
                // the connection and lose the answer.
                read_head(&mut client).await?;
                let body = format!(
                    "cordon: too many connections through the proxy at once (the cap is {}, {}); this one was refused. Close idle connections, or raise the cap with --max-connections N or [network] max_connections = N.\n",
                    self.limits.max_connections, self.limits.max_connections_source
                );
                respond(&mut client, 503, &body).await
            }
            Kind::Socks => {
                socks_handshake(&mut client).await?;
                client
                    .write_all(&socks_reply(SOCKS_GENERAL_FAILURE))
                    .await?;
                Ok(())
            }
        }
    }

    /// Records a refusal.
    fn denied(&self, proto: Proto, host: &str, port: u16, addr: Option<SocketAddr>, d: &Denial) {
        let mut event = Event::new(
            Door::Network,
            audit::Kind::Decision,
            Verdict::Deny,
            subject(host, port),
        );
        event.address = addr.map(|a| a.to_string());
        event.rule = Some(d.rule.clone());
        event.source = Some(d.source.clone());
        event.reason = Some(d.reason.clone());
        event.proto = Some(proto);
        self.audit.record(event);
    }

    /// Records an allowed connection that could not be made.
    fn unreachable(&self, proto: Proto, host: &str, port: u16, allowed: &Allowed, why: &str) {
        let mut event = Event::new(
            Door::Network,
            audit::Kind::Decision,
            Verdict::Allow,
            subject(host, port),
        );
        event.rule = Some(allowed.rule.clone());
        event.source = Some(allowed.source.clone());
        event.reason = Some(why.trim().to_string());
        event.proto = Some(proto);
        self.audit.record(event);
    }

    /// Records an allowed, connected destination, and arms its close event.
    fn opened(
        &self,
        conn: &Conn,
        proto: Proto,
        host: &str,
        port: u16,
        addr: SocketAddr,
        allowed: &Allowed,
    ) {
        let mut event = Event::new(
            Door::Network,
            audit::Kind::Decision,
            Verdict::Allow,
            subject(host, port),
        );
        event.address = Some(addr.to_string());
        event.rule = Some(allowed.rule.clone());
        event.source = Some(allowed.source.clone());
        event.proto = Some(proto);
        let mut close = event.clone();
        close.event = audit::Kind::Close;
        self.audit.record(event);
        if let Ok(mut open) = conn.open.lock() {
            *open = Some((close, Instant::now()));
        }
    }

    /// Records the close event of a connection that was opened.
    fn closed(&self, conn: &Conn) {
        let Some((mut event, since)) = conn.open.lock().ok().and_then(|mut o| o.take()) else {
            return;
        };
        event.time = crate::audit::rfc3339_now();
        event.bytes_up = Some(conn.up.load(Ordering::Relaxed));
        event.bytes_down = Some(conn.down.load(Ordering::Relaxed));
        event.duration_ms = Some(since.elapsed().as_millis() as u64);
        self.audit.record(event);
    }

    async fn timed<T>(
        &self,
        fut: impl std::future::Future<Output = Result<T, ClientError>>,
    ) -> Result<T, ClientError> {
        tokio::time::timeout(self.limits.handshake_timeout, fut)
            .await
            .map_err(|_| ClientError::Timeout)?
    }

    /// Resolves (if needed), checks and connects to one destination.
    async fn connect(
        &self,
        dest: &Destination,
        host: &str,
        port: u16,
    ) -> Result<(TcpStream, SocketAddr), ConnectError> {
        let candidates: Vec<SocketAddr> = match dest {
            Destination::Ip(ip) => vec![SocketAddr::new(*ip, port)],
            Destination::HostLoopback => vec![SocketAddr::from(([127, 0, 0, 1], port))],
            Destination::Name(name) => match tokio::net::lookup_host((name.as_str(), port)).await {
                Ok(addrs) => addrs.collect(),
                Err(e) => {
                    return Err(ConnectError::Upstream(upstream_message(
                        host,
                        port,
                        &format!("cannot resolve: {e}"),
                    )))
                }
            },
        };
        let mut denied = None;
        let mut failed = None;
        for addr in candidates {
            if let Destination::Name(_) = dest {
                if let Err(denial) = self.gate.check_address(host, addr.ip(), port) {
                    denied.get_or_insert((denial, addr));
                    continue;
                }
            }
            match tokio::time::timeout(self.limits.connect_timeout, TcpStream::connect(addr)).await
            {
                Ok(Ok(stream)) => return Ok((stream, addr)),
                Ok(Err(e)) => failed = Some(upstream_message(host, port, &e.to_string())),
                Err(_) => failed = Some(upstream_message(host, port, "connect timed out")),
            }
        }
        // An address that was tried and failed says more than one the
        // policy refused; with nothing tried, the refusal is the answer.
        match (failed, denied) {
            (Some(message), _) => Err(ConnectError::Upstream(message)),
            (None, Some((denial, addr))) => Err(ConnectError::Denied(denial, addr)),
            (None, None) => Err(ConnectError::Upstream(upstream_message(
                host,
                port,
                "no address",
            ))),
        }
    }

    async fn http_client(&self, mut client: TcpStream, conn: &Conn) -> Result<(), ClientError> {
        let (head, extra) = self.timed(read_head(&mut client)).await?;
        // Framing first: a head two parsers could read two ways is never
        // forwarded (RFC 9112 asks a proxy to refuse it).
        let framing = match check_head(&head) {
            Ok(framing) => framing,
            Err(why) => return respond(&mut client, 400, &framing_refusal(why)).await,
        };
        if target_has_fragment(&head) {
            return respond(&mut client, 400, FRAGMENT_REFUSAL).await;
        }
        let Ok(request) = parse_request(&head) else {
            return respond(
                &mut client,
                400,
                "cordon: the proxy could not parse the request head\n",
            )
            .await;
        };
        let (target, proto) = match request.method.as_str() {
            "CONNECT" => (split_host_port(&request.target, None), Proto::Connect),
            _ => (absolute_form(&request.target), Proto::Http),
        };
        let Some((host, port)) = target else {
            return respond(
                &mut client,
                400,
                "cordon: the proxy needs an absolute URL (http://host/path) or CONNECT host:port\n",
            )
            .await;
        };
        if proto == Proto::Http {
            let header_host = request
                .header("host")
                .and_then(|h| split_host_port(h, Some(port)));
            // Exactly one: with two, the upstream may route by the other.
            let host_headers = request
                .headers
                .iter()
                .filter(|(n, _)| n.eq_ignore_ascii_case("host"))
                .count();
            if host_headers != 1
                || header_host
                    .as_ref()
                    .map(|(h, p)| (h.to_ascii_lowercase(), *p))
                    != Some((host.to_ascii_lowercase(), port))
            {
                let denial = Denial {
                    rule: "the Host header must match the request target".into(),
                    source: "built-in".into(),
                    reason: "Host header mismatch".into(),
                    message: "cordon: the Host header does not match the request target\n".into(),
                };
                self.denied(proto, &host, port, None, &denial);
                return respond(&mut client, 400, &denial.message).await;
            }
            if framing == BodyFraming::Chunked {
                return respond(&mut client, 501, "cordon: chunked request bodies are not supported through the plain-HTTP proxy; use https (CONNECT)\n").await;
            }
        }
        let allowed = match self.gate.check_destination(&host, port) {
            Ok(allowed) => allowed,
            Err(denial) => {
                self.denied(proto, &host, port, None, &denial);
                return respond(&mut client, 403, &denial.message).await;
            }
        };
        // cordon: credentials door (plain HTTP: HTTP rules, no placeholders).
        if let Some(inspector) = self.inspector.as_ref().filter(|_| proto == Proto::Http) {
            let path = origin_form(&request.target);
            let path = path.split('?').next().unwrap_or("/");
            if let Err(message) =
                inspector.check_plain(&self.audit, &host, port, &request.method, path, &head)
            {
                return respond(&mut client, 403, &message).await;
            }
        }
        let (upstream, addr) = match self.connect(&allowed.dest, &host, port).await {
            Ok(connected) => connected,
            Err(ConnectError::Denied(denial, addr)) => {
                self.denied(proto, &host, port, Some(addr), &denial);
                return respond(&mut client, 403, &denial.message).await;
            }
            Err(ConnectError::Upstream(message)) => {
                self.unreachable(proto, &host, port, &allowed, &message);
                return respond(&mut client, 502, &message).await;
            }
        };
        self.opened(conn, proto, &host, port, addr, &allowed);
        if proto == Proto::Connect {
            client
                .write_all(b"HTTP/1.1 200 Connection established\r\n\r\n")
                .await?;
            return self
                .tunnel(client, extra, upstream, &host, port, proto, conn)
                .await;
        }
        // Read from the upstream is down, written to it is up.
        let mut upstream = Counted::new(upstream, conn.down.clone(), conn.up.clone());
        // One request per connection: a pipelined second request is never
        // forwarded, so it cannot slip past the check of the first.
        let body_len = match framing {
            BodyFraming::Length(n) => n,
            BodyFraming::Empty | BodyFraming::Chunked => 0,
        };
        upstream.write_all(&request.origin_form_head()).await?;
        let first = usize::try_from(body_len)
            .unwrap_or(usize::MAX)
            .min(extra.len());
        upstream.write_all(&extra[..first]).await?;
        let rest = body_len - first as u64;
        let (mut client_read, mut client_write) = client.split();
        let (mut up_read, mut up_write) = tokio::io::split(upstream);
        let send_body = async {
            tokio::io::copy(&mut (&mut client_read).take(rest), &mut up_write).await?;
            Ok::<_, io::Error>(())
        };
        let mut up_read = tokio::io::BufReader::with_capacity(TUNNEL_BUFFER, &mut up_read);
        let relay_response = tokio::io::copy_buf(&mut up_read, &mut client_write);
        tokio::pin!(send_body, relay_response);
        // The exchange is over when the response is: a client that
        // announced more body than it sends must not hold the slot.
        let mut body_done = false;
        loop {
            tokio::select! {
                sent = &mut send_body, if !body_done => {
                    sent?;
                    body_done = true;
                }
                relayed = &mut relay_response => {
                    relayed?;
                    return Ok(());
                }
            }
        }
    }

    async fn socks_client(&self, mut client: TcpStream, conn: &Conn) -> Result<(), ClientError> {
        let proto = Proto::Socks5;
        let (host, port) = self.timed(socks_handshake(&mut client)).await?;
        let allowed = match self.gate.check_destination(&host, port) {
            Ok(allowed) => allowed,
            Err(denial) => {
                self.denied(proto, &host, port, None, &denial);
                client.write_all(&socks_reply(SOCKS_NOT_ALLOWED)).await?;
                return Ok(());
            }
        };
        let (upstream, addr) = match self.connect(&allowed.dest, &host, port).await {
            Ok(connected) => connected,
            Err(ConnectError::Denied(denial, addr)) => {
                self.denied(proto, &host, port, Some(addr), &denial);
                client.write_all(&socks_reply(SOCKS_NOT_ALLOWED)).await?;
                return Ok(());
            }
            Err(ConnectError::Upstream(message)) => {
                self.unreachable(proto, &host, port, &allowed, &message);
                client
                    .write_all(&socks_reply(SOCKS_HOST_UNREACHABLE))
                    .await?;
                return Ok(());
            }
        };
        self.opened(conn, proto, &host, port, addr, &allowed);
        client.write_all(&socks_reply(SOCKS_SUCCEEDED)).await?;
        self.tunnel(client, Vec::new(), upstream, &host, port, proto, conn)
            .await
    }

    /// Relays an allowed, connected tunnel: handed to the inspector when
    /// the credentials door inspects the host (or scans opaque tunnels for
    /// placeholders), else copied byte for byte. `extra` is what the client
    /// sent behind its request.
    #[allow(clippy::too_many_arguments)]
    async fn tunnel(
        &self,
        mut client: TcpStream,
        extra: Vec<u8>,
        upstream: TcpStream,
        host: &str,
        port: u16,
        proto: Proto,
        conn: &Conn,
    ) -> Result<(), ClientError> {
        // A relay writes what it just read: waiting for the peer's ACK
        // before sending a short TLS record (Nagle, against delayed ACKs)
        // costs up to 40 ms a round.
        let _ = client.set_nodelay(true);
        let _ = upstream.set_nodelay(true);
        // cordon: credentials door hook (TLS inspection, placeholder scan).
        if let Some(inspector) = &self.inspector {
            if inspector.inspects(host, port) {
                let tunnel = Tunnel {
                    host: host.to_string(),
                    port,
                    proto,
                    up: conn.up.clone(),
                    down: conn.down.clone(),
                };
                inspector
                    .clone()
                    .serve(self.audit.clone(), client, extra, upstream, tunnel)
                    .await;
                return Ok(());
            }
        }
        // Read from the upstream is down, written to it is up.
        let mut upstream = Counted::new(upstream, conn.down.clone(), conn.up.clone());
        if let Some(inspector) = self.inspector.as_ref().filter(|i| i.scans_tunnels()) {
            inspector
                .opaque(
                    &self.audit,
                    &mut client,
                    &extra,
                    &mut upstream,
                    Endpoint { host, port, proto },
                )
                .await?;
            return Ok(());
        }
        if !extra.is_empty() {
            upstream.write_all(&extra).await?;
        }
        splice_or_copy(&mut client, &mut upstream).await?;
        Ok(())
    }
}

#[derive(Clone, Copy)]
enum Kind {
    Http,
    Socks,
}

const SOCKS_SUCCEEDED: u8 = 0x00;
const SOCKS_GENERAL_FAILURE: u8 = 0x01;
const SOCKS_NOT_ALLOWED: u8 = 0x02;
const SOCKS_HOST_UNREACHABLE: u8 = 0x04;
const SOCKS_COMMAND_NOT_SUPPORTED: u8 = 0x07;
const SOCKS_ATYP_NOT_SUPPORTED: u8 = 0x08;

/// Each way's buffer where bytes are copied rather than spliced: plain-HTTP
/// responses, and tunnels when no pipe can be had. tokio's default (8 KiB)
/// held a 1 GiB download to about a quarter of a direct loopback
/// connection's speed; 256 KiB doubles that (bench/proxy.py). Pages are
/// touched only as data flows, so an idle connection stays small.
const TUNNEL_BUFFER: usize = 256 * 1024;

/// Relays a tunnel both ways until each side has closed: zero-copy with
/// splice, or through buffers when no pipe can be had (out of descriptors).
async fn splice_or_copy(
    client: &mut TcpStream,
    upstream: &mut Counted<TcpStream>,
) -> io::Result<()> {
    // To the client is what was read from the upstream, and the reverse.
    match crate::net::splice::relay(client, &upstream.inner, &upstream.read, &upstream.written)
        .await
    {
        Err(e) if matches!(e.raw_os_error(), Some(libc::EMFILE | libc::ENFILE)) => {
            relay(client, upstream).await.map(drop)
        }
        done => done,
    }
}

/// Relays a tunnel both ways through buffers until each side has closed.
async fn relay<U: AsyncRead + AsyncWrite + Unpin>(
    client: &mut TcpStream,
    upstream: &mut U,
) -> io::Result<(u64, u64)> {
    tokio::io::copy_bidirectional_with_sizes(client, upstream, TUNNEL_BUFFER, TUNNEL_BUFFER).await
}

/// A SOCKS5 reply with `code` and an unspecified IPv4 bound address.
fn socks_reply(code: u8) -> [u8; 10] {
    [5, code, 0, 1, 0, 0, 0, 0, 0, 0]
}

fn upstream_message(host: &str, port: u16, why: &str) -> String {
    format!("cordon: cannot reach {host}:{port}: {why}\n")
}

async fn respond(client: &mut TcpStream, status: u16, body: &str) -> Result<(), ClientError> {
    let reason = match status {
        400 => "Bad Request",
        403 => "Forbidden",
        501 => "Not Implemented",
        503 => "Service Unavailable",
        _ => "Bad Gateway",
    };
    let head = format!(
        "HTTP/1.1 {status} {reason}\r\nContent-Type: text/plain; charset=utf-8\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
        body.len()
    );
    client.write_all(head.as_bytes()).await?;
    client.write_all(body.as_bytes()).await?;
    client.shutdown().await?;
    // Closing with unread input (a request body) makes the kernel send a
    // reset, which can destroy the response before the client reads it:
    // read what the client still sends, within bounds, first.
    let mut sink = [0u8; 8192];
    let mut left = LINGER_BYTES;
    let _ = tokio::time::timeout(LINGER_TIME, async {
        while left > 0 {
            match client.read(&mut sink).await {
                Ok(0) | Err(_) => break,
                Ok(n) => left = left.saturating_sub(n),
            }
        }
    })
    .await;
    Ok(())
}

/// What a refused client may still send after its answer, and for how
/// long, before the connection is closed anyway.
const LINGER_BYTES: usize = 1 << 20;
const LINGER_TIME: Duration = Duration::from_secs(1);

/// Reads up to the end of the request head; returns the head and any bytes
/// read past it.
async fn read_head<S: AsyncRead + Unpin>(
    stream: &mut S,
) -> Result<(Vec<u8>, Vec<u8>), ClientError> {
    let mut buf = Vec::with_capacity(4096);
    let mut chunk = [0u8; 4096];
    loop {
        if let Some(end) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
            let extra = buf.split_off(end + 4);
            return Ok((buf, extra));
        }
        if buf.len() > MAX_HEAD {
            return Err(ClientError::Malformed("request head too large"));
        }
        let n = stream.read(&mut chunk).await?;
        if n == 0 {
            return Err(ClientError::Malformed(
                "connection closed before the request head ended",
            ));
        }
        buf.extend_from_slice(&chunk[..n]);
    }
}

/// How a request's body is delimited, once its framing is unambiguous.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum BodyFraming {
    /// Neither `Content-Length` nor `Transfer-Encoding`: no body.
    Empty,
    /// `Content-Length`, exactly once, plain digits.
    Length(u64),
    /// `Transfer-Encoding: chunked`, exactly once, and no `Content-Length`.
    Chunked,
}

/// The 400 body for a request whose framing is ambiguous.
pub(crate) fn framing_refusal(why: &str) -> String {
    format!("cordon: refused a request whose framing is ambiguous: {why}. RFC 9112 asks a proxy to reject such a request, since the upstream could read its end differently; send one Content-Length of plain digits or Transfer-Encoding: chunked alone, in a head whose lines end with CRLF\n")
}

/// The answer to a request target with a `#`: a client never sends a
/// fragment, and a server may cut the path there or not, so the path the
/// HTTP rules judge could differ from the one served.
pub(crate) const FRAGMENT_REFUSAL: &str = "cordon: refused a request whose target holds a '#': a fragment is never sent to a server, and servers and the HTTP rules could read the path differently; drop the fragment (or encode it as %23)\n";

/// Whether the request line of a raw head (its first line) holds a `#`.
pub(crate) fn target_has_fragment(head: &[u8]) -> bool {
    let line = head.split(|b| *b == b'\n').next().unwrap_or(head);
    line.contains(&b'#')
}

/// Checks a raw request head (up to and including the blank line) the way
/// RFC 9112 asks of a proxy: every line ends with CRLF, no NUL, no folded
/// header lines, header names are tokens right up to the colon, and the
/// body's framing is unambiguous ([`body_framing`]).
pub(crate) fn check_head(head: &[u8]) -> Result<BodyFraming, &'static str> {
    if head.contains(&0) {
        return Err("the head holds a NUL byte");
    }
    for (i, b) in head.iter().enumerate() {
        let bare = match b {
            b'\r' => head.get(i + 1) != Some(&b'\n'),
            b'\n' => i == 0 || head[i - 1] != b'\r',
            _ => false,
        };
        if bare {
            return Err("a line of the head ends with a bare CR or LF, not CRLF");
        }
    }
    let body = head.strip_suffix(b"\r\n\r\n").unwrap_or(head);
    let mut fields = Vec::new();
    // Every LF is now the end of a CRLF: splitting on it and dropping the
    // CR splits on CRLF.
    let lines = body
        .split(|b| *b == b'\n')
        .map(|l| l.strip_suffix(b"\r").unwrap_or(l));
    for line in lines.skip(1) {
        if line.first().is_some_and(|b| *b == b' ' || *b == b'\t') {
            return Err("a header line is folded onto the one before it (obs-fold)");
        }
        let Some(colon) = memchr::memchr(b':', line) else {
            return Err("a header line has no colon");
        };
        let name = &line[..colon];
        if name.is_empty() || !name.iter().all(|b| is_token_byte(*b)) {
            return Err("a header name is empty or holds whitespace or another byte a name may not (before the colon)");
        }
        fields.push((name, &line[colon + 1..]));
    }
    body_framing(fields)
}

/// Whether `b` may appear in an HTTP token (a header name, a method).
fn is_token_byte(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b)
}

/// The body's framing from a request's header fields (`(name, value)`,
/// values as sent after the colon): refused when two parsers could read it
/// differently. `Transfer-Encoding` must be exactly `chunked`, once, and
/// never with `Content-Length`; `Content-Length` must appear once and be
/// plain digits (no sign, no spaces after it, no list, not too large).
pub(crate) fn body_framing<'a>(
    fields: impl IntoIterator<Item = (&'a [u8], &'a [u8])>,
) -> Result<BodyFraming, &'static str> {
    let ows = |b: &u8| *b == b' ' || *b == b'\t';
    let mut length = None;
    let mut chunked = false;
    for (name, value) in fields {
        let start = value.iter().position(|b| !ows(b)).unwrap_or(value.len());
        let value = &value[start..];
        if name.eq_ignore_ascii_case(b"transfer-encoding") {
            let end = value.iter().rposition(|b| !ows(b)).map_or(0, |e| e + 1);
            if chunked {
                return Err("Transfer-Encoding appears more than once");
            }
            if !value[..end].eq_ignore_ascii_case(b"chunked") {
                return Err("Transfer-Encoding is not exactly `chunked` (another coding, a list, or bytes that are not text)");
            }
            chunked = true;
        } else if name.eq_ignore_ascii_case(b"content-length") {
            if length.is_some() {
                return Err("Content-Length appears more than once");
            }
            // At most 19 digits: always fits a u64.
            let digits =
                !value.is_empty() && value.len() <= 19 && value.iter().all(u8::is_ascii_digit);
            let parsed = std::str::from_utf8(value)
                .ok()
                .filter(|_| digits)
                .and_then(|v| v.parse::<u64>().ok());
            let Some(n) = parsed else {
                return Err("Content-Length is not plain digits (a sign, spaces, a list, another base, empty, or too large)");
            };
            length = Some(n);
        }
    }
    match (chunked, length) {
        (true, Some(_)) => Err("Transfer-Encoding and Content-Length are both present"),
        (true, None) => Ok(BodyFraming::Chunked),
        (false, Some(n)) => Ok(BodyFraming::Length(n)),
        (false, None) => Ok(BodyFraming::Empty),
    }
}

/// A parsed request head.
#[derive(Debug)]
struct Request {
    method: String,
    target: String,
    headers: Vec<(String, Vec<u8>)>,
}

impl Request {
    fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .and_then(|(_, v)| std::str::from_utf8(v).ok())
    }

    /// The head to send upstream: origin-form target, no proxy headers,
    /// and `Connection: close` so one request is all that crosses.
    fn origin_form_head(&self) -> Vec<u8> {
        let path = origin_form(&self.target);
        let mut out = format!("{} {} HTTP/1.1\r\n", self.method, path).into_bytes();
        for (name, value) in &self.headers {
            let lower = name.to_ascii_lowercase();
            if lower.starts_with("proxy-") || lower == "connection" || lower == "keep-alive" {
                continue;
            }
            out.extend_from_slice(name.as_bytes());
            out.extend_from_slice(b": ");
            out.extend_from_slice(value);
            out.extend_from_slice(b"\r\n");
        }
        out.extend_from_slice(b"Connection: close\r\n\r\n");
        out
    }
}

fn parse_request(head: &[u8]) -> Result<Request, ClientError> {
    let mut headers = [httparse::EMPTY_HEADER; 128];
    let mut req = httparse::Request::new(&mut headers);
    match req.parse(head) {
        Ok(httparse::Status::Complete(_)) => {}
        _ => return Err(ClientError::Malformed("unparsable request head")),
    }
    Ok(Request {
        method: req.method.unwrap_or_default().to_string(),
        target: req.path.unwrap_or_default().to_string(),
        headers: req
            .headers
            .iter()
            .map(|h| (h.name.to_string(), h.value.to_vec()))
            .collect(),
    })
}

/// `http://host[:port]/path` → (host, port).
fn absolute_form(target: &str) -> Option<(String, u16)> {
    let rest = target.strip_prefix("http://").or_else(|| {
        target
            .get(..7)
            .filter(|p| p.eq_ignore_ascii_case("http://"))
            .map(|_| &target[7..])
    })?;
    let authority = rest.split(['/', '?', '#']).next().unwrap_or_default();
    if authority.contains('@') {
        return None;
    }
    split_host_port(authority, Some(80))
}

/// The path part of an absolute-form target (`/` if none).
fn origin_form(target: &str) -> String {
    let rest = target.get(7..).unwrap_or_default();
    match rest.find(['/', '?']) {
        Some(i) if rest[i..].starts_with('/') => rest[i..].to_string(),
        Some(i) => format!("/{}", &rest[i..]),
        None => "/".into(),
    }
}

/// `host:port`, `[v6]:port`, or `host` with `default_port`.
fn split_host_port(authority: &str, default_port: Option<u16>) -> Option<(String, u16)> {
    if let Some(rest) = authority.strip_prefix('[') {
        let (host, after) = rest.split_once(']')?;
        let port = match after.strip_prefix(':') {
            Some(p) => p.parse().ok()?,
            None if after.is_empty() => default_port?,
            None => return None,
        };
        return Some((host.to_string(), port));
    }
    match authority.rsplit_once(':') {
        Some((host, port)) if !host.contains(':') => Some((host.to_string(), port.parse().ok()?)),
        Some(_) => None,
        None => Some((authority.to_string(), default_port?)),
    }
    .filter(|(host, _)| !host.is_empty())
}

/// The SOCKS5 greeting and request; returns the destination. Replies to
/// refused commands and address types itself.
async fn socks_handshake<S: AsyncRead + AsyncWrite + Unpin>(
    s: &mut S,
) -> Result<(String, u16), ClientError> {
    let mut hello = [0u8; 2];
    s.read_exact(&mut hello).await?;
    if hello[0] != 5 {
        return Err(ClientError::Malformed("not SOCKS5"));
    }
    let mut methods = vec![0u8; hello[1] as usize];
    s.read_exact(&mut methods).await?;
    if !methods.contains(&0) {
        s.write_all(&[5, 0xff]).await?;
        return Err(ClientError::Malformed("no acceptable SOCKS method"));
    }
    s.write_all(&[5, 0]).await?;
    let mut req = [0u8; 4];
    s.read_exact(&mut req).await?;
    if req[0] != 5 {
        return Err(ClientError::Malformed("bad SOCKS request"));
    }
    let host = match req[3] {
        1 => {
            let mut a = [0u8; 4];
            s.read_exact(&mut a).await?;
            IpAddr::from(a).to_string()
        }
        4 => {
            let mut a = [0u8; 16];
            s.read_exact(&mut a).await?;
            IpAddr::from(a).to_string()
        }
        3 => {
            let mut len = [0u8; 1];
            s.read_exact(&mut len).await?;
            let mut name = vec![0u8; len[0] as usize];
            s.read_exact(&mut name).await?;
            String::from_utf8(name)
                .map_err(|_| ClientError::Malformed("SOCKS name is not UTF-8"))?
        }
        _ => {
            s.write_all(&socks_reply(SOCKS_ATYP_NOT_SUPPORTED)).await?;
            return Err(ClientError::Malformed("SOCKS address type"));
        }
    };
    let mut port = [0u8; 2];
    s.read_exact(&mut port).await?;
    if req[1] != 1 {
        // BIND and UDP ASSOCIATE open doors the allowlist cannot check.
        s.write_all(&socks_reply(SOCKS_COMMAND_NOT_SUPPORTED))
            .await?;
        return Err(ClientError::Malformed("SOCKS command other than CONNECT"));
    }
    Ok((host, u16::from_be_bytes(port)))
}

#[cfg(test)]
mod tests {
    use super::*;

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
        let refused =
            String::from_utf8(closed_within(&mut c, Duration::from_secs(3)).await).unwrap();
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
            .line(None)
            .unwrap()
            .contains("(over the connection cap) ×2"));
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
        let audit = Auditor::start(Some(log), "cordon-test", "test").unwrap();
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
        let denied =
            String::from_utf8(closed_within(&mut d, Duration::from_secs(2)).await).unwrap();
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

    #[test]
    fn targets_parse() {
        assert_eq!(
            absolute_form("http://Example.com/x"),
            Some(("Example.com".into(), 80))
        );
        assert_eq!(
            absolute_form("http://a.b:8080?q"),
            Some(("a.b".into(), 8080))
        );
        assert_eq!(absolute_form("http://[::1]:81/"), Some(("::1".into(), 81)));
        assert_eq!(absolute_form("http://user@evil.com/"), None);
        assert_eq!(absolute_form("https://a/"), None);
        assert_eq!(absolute_form("/relative"), None);
        assert_eq!(split_host_port("a.b:443", None), Some(("a.b".into(), 443)));
        assert_eq!(split_host_port("a.b", None), None);
        assert_eq!(split_host_port("::1:443", None), None);
        assert_eq!(split_host_port(":443", None), None);
        assert_eq!(origin_form("http://a/b?c"), "/b?c");
        assert_eq!(origin_form("http://a?c"), "/?c");
        assert_eq!(origin_form("http://a"), "/");
    }

    #[test]
    fn framing_is_read_one_way_or_refused() {
        let head = |fields: &str| format!("POST http://h/ HTTP/1.1\r\nHost: h\r\n{fields}\r\n");
        let framing = |fields: &str| check_head(head(fields).as_bytes());
        assert_eq!(framing(""), Ok(BodyFraming::Empty));
        assert_eq!(
            framing("Content-Length: 49\r\n"),
            Ok(BodyFraming::Length(49))
        );
        assert_eq!(
            framing("content-length:\t7\r\n"),
            Ok(BodyFraming::Length(7))
        );
        assert_eq!(
            framing("Transfer-Encoding: Chunked \r\n"),
            Ok(BodyFraming::Chunked)
        );
        assert_eq!(
            framing(&format!("Content-Length: {}\r\n", u64::MAX)),
            Err("Content-Length is not plain digits (a sign, spaces, a list, another base, empty, or too large)")
        );
        for bad in [
            "Content-Length: 5\r\nTransfer-Encoding: chunked\r\n",
            "Transfer-Encoding: gzip, chunked\r\n",
            "Transfer-Encoding: chunked\r\nTransfer-Encoding: chunked\r\n",
            "Content-Length: 5\r\nContent-Length: 5\r\n",
            "Content-Length: +5\r\n",
            "Content-Length: 5 \r\n",
            "Content-Length: 5,5\r\n",
            "Content-Length : 5\r\n",
            "X-A: b\r\n c\r\n",
            "X-A: b\rc\r\n",
            "X-A: b\nc\r\n",
            "X-A: b\0c\r\n",
            "NoColon\r\n",
        ] {
            assert!(framing(bad).is_err(), "{bad:?}");
        }
        let bytes = b"POST http://h/ HTTP/1.1\r\nTransfer-Encoding: \xffchunked\r\n\r\n";
        assert!(check_head(bytes).is_err());
    }

    #[test]
    fn origin_head_drops_proxy_headers_and_closes() {
        let head = b"GET http://a/b HTTP/1.1\r\nHost: a\r\nProxy-Authorization: x\r\nConnection: keep-alive\r\nX-Y: z\r\n\r\n";
        let req = parse_request(head).unwrap();
        let out = String::from_utf8(req.origin_form_head()).unwrap();
        assert_eq!(
            out,
            "GET /b HTTP/1.1\r\nHost: a\r\nX-Y: z\r\nConnection: close\r\n\r\n"
        );
    }
}
