//! The TLS ends of an inspected tunnel: a leaf from the sandbox CA for
//! the client, a verified connection upstream, and between them the
//! HTTP/1.1 (behind the framing guard) or HTTP/2 connections whose
//! requests a [`Session`] judges.

use std::io;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use hyper_util::rt::{TokioExecutor, TokioIo};
use rustls::pki_types::ServerName;
use rustls::server::{ClientHello, ResolvesServerCert};
use rustls::sign::CertifiedKey;
use tokio::io::{AsyncRead, AsyncWriteExt, ReadBuf};
use tokio::net::TcpStream;

use super::budget::{
    CONNECTION_RESERVE, H1_BUFFER, H2_CONNECTION_WINDOW, H2_SEND_BUFFER, H2_STREAMS,
    H2_STREAM_WINDOW,
};
use super::session::{Session, Upstream};
use super::{Inspector, Refusal, Tunnel};
use crate::audit::{Auditor, Door};
use crate::net::proxy::framing::HeadGuard;
use crate::net::Counted;
use crate::policy::host::{normalize, Target};

/// Time a client has for its TLS handshake with the proxy.
const HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(30);

/// Answers every ClientHello with one leaf.
#[derive(Debug)]
struct Fixed(Arc<CertifiedKey>);

impl ResolvesServerCert for Fixed {
    fn resolve(&self, _: ClientHello<'_>) -> Option<Arc<CertifiedKey>> {
        Some(self.0.clone())
    }
}

/// A stream that first yields bytes already read (what the client sent
/// right behind its CONNECT).
struct Prefixed<S> {
    prefix: Vec<u8>,
    inner: S,
}

impl<S: AsyncRead + Unpin> AsyncRead for Prefixed<S> {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        if !this.prefix.is_empty() {
            let n = this.prefix.len().min(buf.remaining());
            buf.put_slice(&this.prefix[..n]);
            this.prefix.drain(..n);
            return Poll::Ready(Ok(()));
        }
        Pin::new(&mut this.inner).poll_read(cx, buf)
    }
}

writes_through_to_inner!(Prefixed);

impl Inspector {
    /// Serves one inspected tunnel: TLS with the client (a leaf for the
    /// CONNECT host), TLS upstream, HTTP in between.
    pub async fn serve(
        self: Arc<Self>,
        audit: Auditor,
        client: TcpStream,
        prefix: Vec<u8>,
        upstream: TcpStream,
        tunnel: Tunnel,
    ) {
        let Ok(target) = normalize(&tunnel.host) else {
            return;
        };
        // Charged now, released when the tunnel ends (upgraded relays too);
        // without room the client is told so once its handshake is done.
        let reserved = self.buffers.reserve(CONNECTION_RESERVE);
        let mut client = client;
        // A TLS record starts with 0x16 (handshake). Anything else cannot
        // be inspected, and passing it through would skip the host's rules:
        // refused, in words a plain-HTTP client can show.
        let mut first = [0u8; 1];
        let first = match prefix.first() {
            Some(b) => Some(*b),
            None => match tokio::time::timeout(HANDSHAKE_TIMEOUT, client.peek(&mut first)).await {
                Ok(Ok(1)) => Some(first[0]),
                _ => None,
            },
        };
        if first != Some(0x16) {
            if first.is_some() {
                let fix = format!(
                    "use https, or keep the host out of inspection: {}",
                    crate::policy::keys::NO_INSPECT
                        .about
                        .add_with(&target.to_string())
                );
                let r = Refusal {
                    door: Door::Network,
                    rule: "inspected hosts are reached over TLS".into(),
                    source: "built-in".into(),
                    reason: "the tunnel does not carry TLS".into(),
                    message: format!(
                        "cordon: refused a tunnel to {}: the host is inspected, so only TLS (https) may go through it\n{fix}\n",
                        target.with_port(tunnel.port)
                    ),
                    fix: Some(fix),
                };
                self.record_refusal(&audit, &target, tunnel.port, tunnel.proto, &r);
                let head = format!(
                    "HTTP/1.1 403 Forbidden\r\nContent-Type: text/plain; charset=utf-8\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
                    r.message.len()
                );
                let _ = client.write_all(head.as_bytes()).await;
                let _ = client.write_all(r.message.as_bytes()).await;
                let _ = client.shutdown().await;
            }
            return;
        }
        let acceptor = tokio_rustls::LazyConfigAcceptor::new(
            rustls::server::Acceptor::default(),
            Prefixed {
                prefix,
                inner: client,
            },
        );
        let Ok(Ok(start)) = tokio::time::timeout(HANDSHAKE_TIMEOUT, acceptor).await else {
            return;
        };
        let hello = start.client_hello();
        let sni = hello.server_name().map(str::to_string);
        let offered: Vec<Vec<u8>> = hello
            .alpn()
            .map(|it| it.map(<[u8]>::to_vec).collect())
            .unwrap_or_default();
        if let Some(sni) = &sni {
            if normalize(sni).ok().as_ref() != Some(&target) {
                let r = Refusal {
                    door: Door::Network,
                    rule: "the TLS SNI must match the CONNECT host".into(),
                    source: "built-in".into(),
                    reason: "SNI mismatch".into(),
                    fix: Some(
                        "nothing allows it: the TLS server name must be the CONNECT host".into(),
                    ),
                    message: String::new(),
                };
                self.record_refusal(&audit, &target, tunnel.port, tunnel.proto, &r);
                return; // closing: no certificate this CA mints could satisfy the client
            }
        }
        let leaf = match self.ca.leaf(&target.to_string()) {
            Ok(leaf) => leaf,
            Err(e) => {
                crate::say!(
                    "cordon: TLS inspection of {}: {}",
                    crate::escape::printable(target.to_string()),
                    crate::escape::printable(e.to_string())
                );
                return;
            }
        };
        let server_config = |alpn: Vec<Vec<u8>>| {
            rustls::ServerConfig::builder_with_provider(self.provider.clone())
                .with_safe_default_protocol_versions()
                .map(|b| {
                    let mut c = b
                        .with_no_client_auth()
                        .with_cert_resolver(Arc::new(Fixed(leaf.clone())));
                    c.alpn_protocols = alpn;
                    Arc::new(c)
                })
        };
        let Some(_reserved) = reserved else {
            let what = format!(
                "a connection to {}: its buffers ({CONNECTION_RESERVE} bytes)",
                target.with_port(tunnel.port)
            );
            let message = self.budget_refusal(&audit, &target, tunnel.port, tunnel.proto, &what);
            refuse_over_tls(
                start,
                &offered,
                server_config,
                "503 Service Unavailable",
                &message,
            )
            .await;
            return;
        };
        // Upstream first, so the client gets the protocol the upstream speaks.
        let alpn: Vec<Vec<u8>> = offered
            .iter()
            .filter(|p| p.as_slice() == b"h2" || p.as_slice() == b"http/1.1")
            .cloned()
            .collect();
        let mut config = (*self.upstream).clone();
        config.alpn_protocols = alpn;
        let name = match &target {
            Target::Name(n) => ServerName::try_from(n.clone()).ok(),
            Target::Ip(ip) => Some(ServerName::IpAddress((*ip).into())),
        };
        // Read from the upstream is down, written to it is up.
        let upstream = Counted::new(upstream, tunnel.down.clone(), tunnel.up.clone());
        let connected = match name {
            Some(name) => tokio_rustls::TlsConnector::from(Arc::new(config))
                .connect(name, upstream)
                .await
                .map_err(|e| e.to_string()),
            None => Err("the host is not a valid TLS server name".into()),
        };
        let upstream_tls = match connected {
            Ok(tls) => tls,
            Err(why) => {
                // A failed verification is a refusal, never a pass-through:
                // the client gets a 502 it can read (over HTTP/1.1 when it
                // offered that), and the log says why.
                let fix = format!(
                    "trust the upstream's CA: {}; or keep the host out of inspection: {}",
                    crate::policy::keys::UPSTREAM_CA.about.add_with("FILE"),
                    crate::policy::keys::NO_INSPECT
                        .about
                        .add_with(&target.to_string())
                );
                let r = Refusal {
                    door: Door::Network,
                    rule: "upstream certificates must verify".into(),
                    source: "built-in".into(),
                    reason: format!("upstream TLS failed: {why}"),
                    message: format!(
                        "cordon: refused {}: the upstream's TLS could not be verified ({why}); cordon trusts the system roots{}\n{fix}\n",
                        target.with_port(tunnel.port),
                        if self.policy.upstream_ca.is_empty() { "" } else { " and the --upstream-ca files" }
                    ),
                    fix: Some(fix),
                };
                self.record_refusal(&audit, &target, tunnel.port, tunnel.proto, &r);
                refuse_over_tls(
                    start,
                    &offered,
                    server_config,
                    "502 Bad Gateway",
                    &r.message,
                )
                .await;
                return;
            }
        };
        let negotiated = upstream_tls.get_ref().1.alpn_protocol().map(<[u8]>::to_vec);
        let Ok(config) = server_config(negotiated.iter().cloned().collect()) else {
            return;
        };
        let Ok(Ok(client_tls)) =
            tokio::time::timeout(HANDSHAKE_TIMEOUT, start.into_stream(config)).await
        else {
            return;
        };
        let h2 = negotiated.as_deref() == Some(b"h2");
        let session = |upstream| {
            Arc::new(Session {
                inspector: self.clone(),
                audit: audit.clone(),
                target: target.clone(),
                tunnel: Tunnel {
                    host: tunnel.host.clone(),
                    port: tunnel.port,
                    proto: tunnel.proto,
                    up: tunnel.up.clone(),
                    down: tunnel.down.clone(),
                },
                upstream,
                upgraded: std::sync::Mutex::new(Vec::new()),
            })
        };
        if h2 {
            let Ok((sender, conn)) = hyper::client::conn::http2::Builder::new(TokioExecutor::new())
                .initial_stream_window_size(H2_STREAM_WINDOW)
                .initial_connection_window_size(H2_CONNECTION_WINDOW)
                .max_send_buf_size(H2_SEND_BUFFER)
                .handshake(TokioIo::new(upstream_tls))
                .await
            else {
                return;
            };
            let session = session(Upstream::H2(sender));
            let service = hyper::service::service_fn(move |req| session.clone().handle(req));
            let server = hyper::server::conn::http2::Builder::new(TokioExecutor::new())
                .initial_stream_window_size(H2_STREAM_WINDOW)
                .initial_connection_window_size(H2_CONNECTION_WINDOW)
                .max_send_buf_size(H2_SEND_BUFFER)
                .max_concurrent_streams(H2_STREAMS)
                .serve_connection(TokioIo::new(client_tls), service);
            relay(server, conn, |s| s.graceful_shutdown()).await;
        } else {
            let Ok((sender, conn)) = hyper::client::conn::http1::Builder::new()
                .max_buf_size(H1_BUFFER)
                .handshake(TokioIo::new(upstream_tls))
                .await
            else {
                return;
            };
            let session = session(Upstream::H1(tokio::sync::Mutex::new(sender)));
            let served = session.clone();
            let service = hyper::service::service_fn(move |req| served.clone().handle(req));
            let server = hyper::server::conn::http1::Builder::new()
                .max_buf_size(H1_BUFFER)
                .serve_connection(TokioIo::new(HeadGuard::new(client_tls)), service)
                .with_upgrades();
            relay(server, conn.with_upgrades(), |s| s.graceful_shutdown()).await;
            let upgraded = std::mem::take(
                &mut *session
                    .upgraded
                    .lock()
                    .unwrap_or_else(std::sync::PoisonError::into_inner),
            );
            for relayed in upgraded {
                let _ = relayed.await;
            }
        }
    }
}

/// Completes the client's TLS handshake only to answer `status` with
/// `message` over HTTP/1.1 and close (a client that offered only h2 is
/// just closed: the refusal is in the audit log).
async fn refuse_over_tls(
    start: tokio_rustls::StartHandshake<Prefixed<TcpStream>>,
    offered: &[Vec<u8>],
    server_config: impl FnOnce(Vec<Vec<u8>>) -> Result<Arc<rustls::ServerConfig>, rustls::Error>,
    status: &str,
    message: &str,
) {
    let h1 = offered.is_empty() || offered.iter().any(|p| p == b"http/1.1");
    if !h1 {
        return;
    }
    let alpn = if offered.is_empty() {
        vec![]
    } else {
        vec![b"http/1.1".to_vec()]
    };
    let Ok(config) = server_config(alpn) else {
        return;
    };
    if let Ok(Ok(mut tls)) =
        tokio::time::timeout(HANDSHAKE_TIMEOUT, start.into_stream(config)).await
    {
        let head = format!(
            "HTTP/1.1 {status}\r\nContent-Type: text/plain; charset=utf-8\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
            message.len()
        );
        let _ = tls.write_all(head.as_bytes()).await;
        let _ = tls.write_all(message.as_bytes()).await;
        let _ = tls.shutdown().await;
    }
}

/// Runs the client-facing server until it ends, driving the upstream
/// connection alongside. When the upstream closes first, the server shuts
/// down gracefully (the response in flight completes, then the client is
/// told to reconnect: `Connection: close` or GOAWAY) rather than answering
/// later requests with errors.
async fn relay<S, C, E1, E2>(server: S, conn: C, shutdown: impl FnOnce(Pin<&mut S>))
where
    S: std::future::Future<Output = Result<(), E1>>,
    C: std::future::Future<Output = Result<(), E2>>,
{
    tokio::pin!(server, conn);
    tokio::select! {
        _ = &mut server => return,
        _ = &mut conn => {}
    }
    shutdown(server.as_mut());
    let _ = server.await;
}
