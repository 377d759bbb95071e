//! Accepting clients: the connection cap (a slot per client, a bounded
//! number of refusals over it), the limits, and the hand-off of each
//! client to its protocol.

use std::io;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use tokio::io::AsyncWriteExt;
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{watch, Semaphore};

use super::events::Conn;
use super::http::{read_head, respond};
use super::inspect::Inspector;
use super::ports::Published;
use super::socks::{socks_handshake, socks_reply, SOCKS_GENERAL_FAILURE};
use super::Gate;
use crate::audit::{self, Auditor, Door, Event, Verdict, Why};

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

/// Clients over the cap being told so at once; past this they are just
/// closed, so a flood costs no more than this many small tasks.
const MAX_REFUSALS: usize = 64;
/// Time an over-the-cap client has to send what it has before the refusal.
const REFUSAL_TIMEOUT: Duration = Duration::from_secs(2);
/// Pause after a failed accept (out of descriptors, ...) before the next.
const ACCEPT_BACKOFF: Duration = Duration::from_millis(50);
/// The summary's subject for connections refused over the cap.
pub const OVER_CAP: &str = "(over the connection cap)";

/// Whether the proxy has taken any client, shared with whoever stops it:
/// a proxy that never took one has no tunnel to end and no event to
/// record, so the supervisor need not wait for it to wind down at exit.
#[derive(Debug, Default)]
pub struct Admissions {
    closed: AtomicBool,
    taken: AtomicBool,
}

impl Admissions {
    /// Marks a client as taken, before anything about it is served or
    /// recorded; false once [`Admissions::close`] ran, and the client must
    /// then be dropped unserved (its sandbox is gone, nothing went
    /// through). Either this sees the close or the closer sees the take:
    /// both sides store, then load, sequentially consistent.
    fn admit(&self) -> bool {
        self.taken.store(true, Ordering::SeqCst);
        !self.closed.load(Ordering::SeqCst)
    }

    /// Takes no more clients; returns whether any was ever taken (and may
    /// still be recording its events).
    pub fn close(&self) -> bool {
        self.closed.store(true, Ordering::SeqCst);
        self.taken.load(Ordering::SeqCst)
    }
}

/// The proxy: one per sandbox, shared by its listeners.
pub struct Proxy<G: Gate> {
    pub(super) gate: G,
    pub(super) limits: ProxyLimits,
    pub(super) slots: Arc<Semaphore>,
    refusals: Arc<Semaphore>,
    pub(super) audit: Auditor,
    pub(super) cap_reported: AtomicBool,
    pub(super) stop: watch::Receiver<bool>,
    admissions: Arc<Admissions>,
    /// TLS inspection and injected credentials (the credentials door), if
    /// the policy inspects any host.
    pub(super) inspector: Option<Arc<Inspector>>,
}

/// Why one client connection ended early.
#[derive(Debug, thiserror::Error)]
pub(super) enum ClientError {
    #[error("{0}")]
    Io(#[from] io::Error),
    #[error("timed out")]
    Timeout,
    #[error("malformed request: {0}")]
    Malformed(&'static str),
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
        Self::with_inspector(gate, limits, audit, stop, Arc::default(), None)
    }

    /// As [`Proxy::new`], taking clients only while `admissions` is open,
    /// with TLS inspection for the hosts `inspector` names.
    pub fn with_inspector(
        gate: G,
        limits: ProxyLimits,
        audit: Auditor,
        stop: watch::Receiver<bool>,
        admissions: Arc<Admissions>,
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
            admissions,
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

    /// Accepts connections to the host port `port` on the sandbox's
    /// loopback until the listener fails or the proxy stops.
    pub async fn serve_host_port(self: Arc<Self>, listener: TcpListener, port: u16) {
        self.serve(listener, Kind::HostPort(port)).await
    }

    /// Accepts connections from the host to a published port until the
    /// listener fails or the proxy stops.
    pub async fn serve_published(self: Arc<Self>, listener: TcpListener, port: Published) {
        self.serve(listener, Kind::Published(Arc::new(port))).await
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
                Ok((client, _)) if self.admissions.admit() => client,
                // Stopped and closed: the supervisor is not waiting.
                Ok(_) => return,
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
                self.over_cap(client, kind.clone());
                continue;
            };
            let proxy = self.clone();
            let kind = kind.clone();
            tokio::spawn(async move {
                let _permit = permit;
                let conn = Conn::new();
                let mut stop = proxy.stop.clone();
                tokio::select! {
                    _ = proxy.client(kind, client, &conn) => {}
                    _ = stop.wait_for(|s| *s) => {}
                }
                conn.closed(&proxy.audit);
            });
        }
    }

    async fn client(&self, kind: Kind, client: TcpStream, conn: &Conn) {
        let _ = match kind {
            Kind::Http => self.http_client(client, conn).await,
            Kind::Socks => self.socks_client(client, conn).await,
            Kind::HostPort(port) => self.host_port_client(client, port, conn).await,
            Kind::Published(port) => self.published_client(client, &port, conn).await,
        };
    }

    /// Refuses a client over the cap (reporting the first time).
    fn over_cap(self: &Arc<Self>, client: TcpStream, kind: Kind) {
        let cap = self.limits.max_connections;
        let source = &self.limits.max_connections_source;
        let raise = crate::policy::keys::MAX_CONNECTIONS
            .about
            .set_with("N", "N");
        self.audit.count_blocked(
            Door::Network,
            OVER_CAP,
            Why {
                reason: Some(format!(
                    "the proxy's cap of connections at once was reached ({cap}, {source})"
                )),
                fix: Some(format!("close idle connections, or raise the cap: {raise}")),
            },
        );
        if !self.cap_reported.swap(true, Ordering::Relaxed) {
            crate::say!(
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
                respond(client, http::StatusCode::SERVICE_UNAVAILABLE, &body).await
            }
            Kind::Socks => {
                socks_handshake(&mut client).await?;
                client
                    .write_all(&socks_reply(SOCKS_GENERAL_FAILURE))
                    .await?;
                Ok(())
            }
            // No protocol of cordon's to answer in: the connection closes.
            Kind::HostPort(_) | Kind::Published(_) => Ok(()),
        }
    }

    /// `fut`, within the time a client has for its handshake.
    pub(super) async fn timed<T>(
        &self,
        fut: impl std::future::Future<Output = Result<T, ClientError>>,
    ) -> Result<T, ClientError> {
        tokio::time::timeout(self.limits.handshake_timeout, fut)
            .await
            .map_err(|_| ClientError::Timeout)?
    }
}

/// The protocol a listener speaks.
#[derive(Clone)]
pub(super) enum Kind {
    Http,
    Socks,
    /// A host port's listener inside the sandbox: raw TCP to the host's
    /// 127.0.0.1 at this port.
    HostPort(u16),
    /// A published port's listener on the host: raw TCP to the sandbox.
    Published(Arc<Published>),
}

#[cfg(test)]
#[path = "accept_tests.rs"]
mod tests;
