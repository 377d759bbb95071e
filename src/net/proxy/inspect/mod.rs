//! TLS inspection in the proxy: for a tunnel to an inspected host, cordon
//! terminates the client's TLS with a leaf from the sandbox CA, opens its
//! own TLS connection upstream (verified against the system roots and any
//! `--upstream-ca`), and relays HTTP requests one by one (HTTP/1.1 or
//! HTTP/2, whichever the upstream picks from what the client offered),
//! checking each against the host's method and path rules, swapping
//! placeholders for real values where the policy allows and refusing them
//! elsewhere, and masking real values in the responses.
//!
//! The proxy calls in at one point: once the network door has allowed and
//! connected a CONNECT or SOCKS5 tunnel, it hands the client and upstream
//! streams to [`Inspector::serve`] (inspected hosts) or
//! [`Inspector::opaque`] (others, scanned for placeholders) instead of
//! copying bytes itself.

use std::convert::Infallible;
use std::io;
use std::pin::Pin;
use std::sync::atomic::AtomicU64;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use bytes::Bytes;
use http::header::{self, HeaderName, HeaderValue};
use http::{HeaderMap, Method, Request, Response, StatusCode, Uri};
use http_body_util::combinators::BoxBody;
use http_body_util::{BodyExt, Full};
use hyper::body::{Body, Frame, Incoming, SizeHint};
use hyper_util::rt::{TokioExecutor, TokioIo};
use rustls::pki_types::{CertificateDer, ServerName};
use rustls::server::{ClientHello, ResolvesServerCert};
use rustls::sign::CertifiedKey;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt, ReadBuf};
use tokio::net::TcpStream;

use crate::audit::{self, Auditor, Door, Event, Proto, Verdict};
use crate::credentials::ca::SandboxCa;
use crate::credentials::inject::{Exfiltration, Secrets, Swaps};
use crate::net::proxy::framing::{body_framing, framing_refusal};
use crate::net::proxy::framing::{FrameCheck, HeadGuard};
use crate::net::Counted;
use crate::policy::host::{normalize, Target};
use crate::policy::inspection::InspectionPolicy;
use crate::policy::Sourced;

/// Bodies up to this size are swapped whole (and their length fixed);
/// longer request bodies are only scanned, longer response bodies are
/// masked as a stream.
pub const BODY_CAP: u64 = 1 << 20;
/// The most the supervisor holds of inspected bodies at once for one
/// sandbox, summed over every connection: a quarter of `max_memory` when
/// that is lower (but never less than one whole body, [`BODY_CAP`]). The
/// supervisor lives outside the sandbox's cgroup, so without a total the
/// sandbox could make it hold a body per connection.
pub const BUFFER_BUDGET: u64 = 64 << 20;
/// What one inspected connection may make the supervisor hold at most,
/// charged to the buffer budget when it is accepted: the HTTP/2 windows
/// and send buffers and the HTTP/1.1 buffers below are sized to fit in
/// it (with the TLS records on both sides), so a client that never reads
/// costs this and no more.
pub const CONNECTION_RESERVE: u64 = 256 << 10;
/// HTTP/2 flow-control windows cordon grants the upstream (per stream and
/// per connection): the most of a response it can push before the client
/// reads. hyper's defaults (2 MiB / 5 MiB) made one idle client cost MBs.
const H2_STREAM_WINDOW: u32 = 64 << 10;
const H2_CONNECTION_WINDOW: u32 = 128 << 10;
/// What each HTTP/2 stream may queue towards a peer that does not read.
const H2_SEND_BUFFER: usize = 8 << 10;
/// Streams at once on one inspected HTTP/2 connection (more wait in the
/// client), so the send buffers stay within [`CONNECTION_RESERVE`].
const H2_STREAMS: u32 = 16;
/// HTTP/1.1 read and write buffers: a whole request head (the head guard
/// allows 64 KiB) fits, hyper's ~400 KiB default would not fit the reserve.
const H1_BUFFER: usize = 72 << 10;
/// Time an HTTP/1.1 upstream connection has to become ready for the next
/// request (it is busy only while the previous response is read).
const UPSTREAM_READY: Duration = Duration::from_secs(30);
/// Time a client has for its TLS handshake with the proxy.
const HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(30);

type BoxError = Box<dyn std::error::Error + Send + Sync>;
/// The body type both directions are relayed as.
type ProxyBody = BoxBody<Bytes, BoxError>;

/// Why inspection could not be set up.
#[derive(Debug, thiserror::Error)]
pub enum InspectError {
    /// An `--upstream-ca` file could not be read or holds no certificate.
    #[error("upstream CA {path} ({source_of}): {why}")]
    UpstreamCa {
        /// The file.
        path: String,
        /// Where it was named.
        source_of: String,
        /// What is wrong.
        why: String,
    },
    /// rustls refused the configuration.
    #[error("TLS configuration: {0}")]
    Tls(#[from] rustls::Error),
}

/// One tunnel, as the proxy allowed and connected it.
pub struct Tunnel {
    /// The host as the client named it.
    pub host: String,
    /// The port.
    pub port: u16,
    /// How the client asked (CONNECT or SOCKS5).
    pub proto: Proto,
    /// Bytes sent upstream, for the proxy's close event.
    pub up: Arc<AtomicU64>,
    /// Bytes received from upstream.
    pub down: Arc<AtomicU64>,
}

/// Where an opaque tunnel goes.
#[derive(Clone, Copy, Debug)]
pub struct Endpoint<'a> {
    /// The host as the client named it.
    pub host: &'a str,
    /// The port.
    pub port: u16,
    /// How the client asked.
    pub proto: Proto,
}

/// The sandbox's budget of buffered body bytes ([`BUFFER_BUDGET`]),
/// shared by every connection; a reservation is released when its permit
/// is dropped, whatever path the request takes.
struct Buffers {
    permits: Arc<tokio::sync::Semaphore>,
    bytes: u64,
    /// How the size was chosen, for the refusal.
    why: String,
}

impl Buffers {
    fn new(max_memory: Option<&Sourced<u64>>) -> Buffers {
        let (bytes, why) = match max_memory {
            Some(m) if m.value / 4 < BUFFER_BUDGET => (
                (m.value / 4).max(BODY_CAP),
                format!("a quarter of max_memory ({})", m.source),
            ),
            _ => (BUFFER_BUDGET, "built-in".to_string()),
        };
        // Reservations are at most BODY_CAP, far below the semaphore's maximum.
        let permits = usize::try_from(bytes).unwrap_or(tokio::sync::Semaphore::MAX_PERMITS);
        Buffers {
            permits: Arc::new(tokio::sync::Semaphore::new(
                permits.min(tokio::sync::Semaphore::MAX_PERMITS),
            )),
            bytes,
            why,
        }
    }

    /// Reserves `n` bytes (at most [`BODY_CAP`]); `None` when the budget
    /// has less left.
    fn reserve(&self, n: u64) -> Option<tokio::sync::OwnedSemaphorePermit> {
        let n = u32::try_from(n).ok()?;
        self.permits.clone().try_acquire_many_owned(n).ok()
    }
}

/// The inspecting half of the proxy: one per sandbox.
pub struct Inspector {
    policy: InspectionPolicy,
    ca: SandboxCa,
    secrets: Secrets,
    /// Body bytes held at once, over every connection.
    buffers: Buffers,
    provider: Arc<rustls::crypto::CryptoProvider>,
    /// Upstream verification: the system roots plus `--upstream-ca`.
    upstream: Arc<rustls::ClientConfig>,
}

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

impl<S: AsyncWrite + Unpin> AsyncWrite for Prefixed<S> {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.get_mut().inner).poll_write(cx, buf)
    }
    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().inner).poll_flush(cx)
    }
    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().inner).poll_shutdown(cx)
    }
}

/// A refusal inside an inspected tunnel.
struct Refusal {
    door: Door,
    rule: String,
    source: String,
    reason: String,
    message: String,
}

impl Refusal {
    /// A network-door refusal by a host's HTTP rules, with its message.
    fn by_rules(d: crate::policy::inspection::RuleDenial, message: String) -> Refusal {
        Refusal {
            door: Door::Network,
            rule: d.rules.join("; "),
            source: d.source,
            reason: d.reason,
            message,
        }
    }
}

/// `host:port`, IPv6 in brackets.
fn subject(host: &str, port: u16) -> String {
    if host.contains(':') {
        format!("[{host}]:{port}")
    } else {
        format!("{host}:{port}")
    }
}

fn text_response(status: StatusCode, body: String) -> Response<ProxyBody> {
    let mut resp = Response::new(
        Full::new(Bytes::from(body))
            .map_err(|never| match never {})
            .boxed(),
    );
    *resp.status_mut() = status;
    resp.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("text/plain; charset=utf-8"),
    );
    resp
}

/// The upstream side of one inspected tunnel.
enum Upstream {
    H1(tokio::sync::Mutex<hyper::client::conn::http1::SendRequest<ProxyBody>>),
    H2(hyper::client::conn::http2::SendRequest<ProxyBody>),
}

/// Headers that belong to one hop, never relayed.
const HOP_BY_HOP: &[&str] = &[
    "connection",
    "keep-alive",
    "proxy-connection",
    "proxy-authorization",
    "proxy-authenticate",
    "transfer-encoding",
    "upgrade",
];

/// Removes hop-by-hop headers (and those `Connection` names); keeps
/// `te: trailers`, which HTTP/2 (gRPC) needs end to end.
pub(crate) fn strip_hop_by_hop(headers: &mut HeaderMap) {
    let named: Vec<HeaderName> = headers
        .get_all(header::CONNECTION)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(','))
        .filter_map(|n| HeaderName::from_bytes(n.trim().as_bytes()).ok())
        .collect();
    for name in named {
        headers.remove(name);
    }
    for name in HOP_BY_HOP {
        headers.remove(*name);
    }
    let te_trailers = headers
        .get(header::TE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| {
            v.split(',')
                .any(|t| t.trim().eq_ignore_ascii_case("trailers"))
        });
    headers.remove(header::TE);
    if te_trailers {
        headers.insert(header::TE, HeaderValue::from_static("trailers"));
    }
}

/// Applies `swaps` to every header (or trailer) value; the Basic forms it
/// swaps are added to `learned`.
fn swap_headers(
    headers: &mut HeaderMap,
    swaps: &Swaps<'_>,
    learned: &mut Swaps<'_>,
) -> Result<(), Exfiltration> {
    swap_values(headers, |v| swaps.apply_header(v, learned))
}

/// Replaces every value of `headers` by what `swap` makes of it (`None`:
/// unchanged).
fn swap_values(
    headers: &mut HeaderMap,
    mut swap: impl FnMut(&[u8]) -> Result<Option<Vec<u8>>, Exfiltration>,
) -> Result<(), Exfiltration> {
    for value in headers.values_mut() {
        if let Some(new) = swap(value.as_bytes())? {
            // A swapped value is still free of CR/LF/NUL: both sides of
            // every swap are (real values are checked when read). Should
            // one not be, the value goes as a mask, never as it was.
            *value = HeaderValue::from_bytes(&new)
                .unwrap_or_else(|_| HeaderValue::from_static("cordon-masked"));
        }
    }
    Ok(())
}

/// Records a placeholder caught in a streamed body.
type ExfiltrationReport = Box<dyn FnOnce(&Exfiltration) + Send + Sync>;

/// A body with swaps applied as it streams.
struct SwapBody {
    inner: ProxyBody,
    swap: crate::credentials::inject::StreamSwap,
    trailers: Option<HeaderMap>,
    done: bool,
    on_exfiltration: Option<ExfiltrationReport>,
}

impl Body for SwapBody {
    type Data = Bytes;
    type Error = BoxError;

    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, BoxError>>> {
        let this = self.get_mut();
        loop {
            if this.done {
                return Poll::Ready(this.trailers.take().map(|t| Ok(Frame::trailers(t))));
            }
            let frame = match Pin::new(&mut this.inner).poll_frame(cx) {
                Poll::Pending => return Poll::Pending,
                Poll::Ready(f) => f,
            };
            let result = match frame {
                Some(Ok(frame)) => match frame.into_data() {
                    Ok(data) => this.swap.push(&data),
                    Err(frame) => {
                        // Trailers are values of their own: swapped whole.
                        let mut trailers = frame.into_trailers().ok();
                        this.done = true;
                        let swapped = match trailers.as_mut() {
                            Some(t) => swap_values(t, |v| this.swap.apply_whole(v)),
                            None => Ok(()),
                        };
                        this.trailers = trailers;
                        swapped.and_then(|()| this.swap.finish())
                    }
                },
                Some(Err(e)) => return Poll::Ready(Some(Err(e))),
                None => {
                    this.done = true;
                    this.swap.finish()
                }
            };
            match result {
                Ok(out) if out.is_empty() => continue,
                Ok(out) => return Poll::Ready(Some(Ok(Frame::data(Bytes::from(out))))),
                Err(ex) => {
                    if let Some(report) = this.on_exfiltration.take() {
                        report(&ex);
                    }
                    this.done = true;
                    this.trailers = None;
                    return Poll::Ready(Some(Err(format!(
                        "cordon: the placeholder of {} may not go to this host",
                        ex.name
                    )
                    .into())));
                }
            }
        }
    }

    fn is_end_stream(&self) -> bool {
        self.done && self.trailers.is_none()
    }

    fn size_hint(&self) -> SizeHint {
        SizeHint::default()
    }
}

/// The declared length of a body, when exact.
fn exact_len(body: &impl Body, headers: &HeaderMap) -> Option<u64> {
    body.size_hint().exact().or_else(|| {
        headers
            .get(header::CONTENT_LENGTH)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.trim().parse().ok())
    })
}

impl Inspector {
    /// Sets up inspection: the CA (already generated, after the sandbox's
    /// init was forked, so no copy of its key lives there), the secrets,
    /// and the upstream trust (the system bundle, if any, plus `--upstream-ca`).
    /// `max_memory` (the sandbox's memory limit, if any) sizes the budget
    /// of buffered bodies ([`BUFFER_BUDGET`]).
    pub fn new(
        policy: InspectionPolicy,
        ca: SandboxCa,
        secrets: Secrets,
        system_bundle: Option<&std::path::Path>,
        max_memory: Option<&Sourced<u64>>,
    ) -> Result<Inspector, InspectError> {
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let mut roots = rustls::RootCertStore::empty();
        if let Some(path) = system_bundle {
            // Unparsable entries in the system bundle are skipped, as
            // every TLS library does; the rest still count.
            if let Ok(bytes) = std::fs::read(path) {
                let certs = read_pem_certs(&bytes);
                roots.add_parsable_certificates(certs);
            }
        }
        for ca_file in &policy.upstream_ca {
            let path = ca_file.value.display().to_string();
            let err = |why: String| InspectError::UpstreamCa {
                path: path.clone(),
                source_of: ca_file.source.to_string(),
                why,
            };
            let bytes = std::fs::read(&ca_file.value).map_err(|e| err(e.to_string()))?;
            let certs = read_pem_certs(&bytes);
            if certs.is_empty() {
                return Err(err("holds no PEM certificate".into()));
            }
            for cert in certs {
                roots.add(cert).map_err(|e| err(e.to_string()))?;
            }
        }
        let upstream = rustls::ClientConfig::builder_with_provider(provider.clone())
            .with_safe_default_protocol_versions()?
            .with_root_certificates(roots)
            .with_no_client_auth();
        Ok(Inspector {
            policy,
            ca,
            secrets,
            buffers: Buffers::new(max_memory),
            provider,
            upstream: Arc::new(upstream),
        })
    }

    /// Whether the tunnel to `host:port` (allowed by the network door) is
    /// inspected.
    pub fn inspects(&self, host: &str, port: u16) -> bool {
        normalize(host).is_ok_and(|t| self.policy.inspects(&t, port))
    }

    /// Whether opaque tunnels are worth scanning (there are placeholders).
    pub fn scans_tunnels(&self) -> bool {
        !self.secrets.is_empty()
    }

    /// Checks a plain-HTTP request (absolute-form, through the HTTP proxy)
    /// before it is forwarded: the host's method and path rules, and no
    /// placeholder at all (real values are never sent in the clear).
    /// Returns the refusal message for the 403 (already recorded).
    pub fn check_plain(
        &self,
        audit: &Auditor,
        host: &str,
        port: u16,
        method: &str,
        path: &str,
        head: &[u8],
    ) -> Result<(), String> {
        let Ok(target) = normalize(host) else {
            return Ok(()); // the network door refuses it
        };
        let refusal = self
            .rules_refusal(&target, port, method, path, "http")
            .or_else(|| {
                self.secrets.find_placeholder(head).map(|s| {
                    self.exfiltration_refusal(
                        &target,
                        port,
                        &Exfiltration {
                            name: s.name.clone(),
                            source: s.source.clone(),
                        },
                        "plain HTTP never carries a real value",
                    )
                })
            });
        match refusal {
            Some(r) => {
                self.record_refusal(audit, &target, port, Proto::Http, &r);
                Err(r.message)
            }
            None => Ok(()),
        }
    }

    fn rules_refusal(
        &self,
        target: &Target,
        port: u16,
        method: &str,
        path: &str,
        scheme: &str,
    ) -> Option<Refusal> {
        let d = self
            .policy
            .check_request(target, port, method, path)
            .err()?;
        let shown = target.with_port(port);
        let message = format!(
            "cordon: blocked {method} {scheme}://{shown}{path}: {} (rules: {} from {})\nTo allow it, add a [[network.rules]] entry for {target} with this method and path in a trusted policy file (or widen an existing one).\n",
            d.reason,
            d.rules.join("; "),
            d.source
        );
        Some(Refusal::by_rules(d, message))
    }

    fn upgrade_refusal(
        &self,
        target: &Target,
        port: u16,
        method: &str,
        path: &str,
    ) -> Option<Refusal> {
        let d = self
            .policy
            .check_upgrade(target, port, method, path)
            .err()?;
        let shown = target.with_port(port);
        let message = format!(
            "cordon: blocked an upgrade (WebSocket) of {method} https://{shown}{path}: once upgraded, the stream is no longer HTTP requests the [[network.rules]] for {target} can check (rules: {} from {}).\nTo allow it, add a [[network.rules]] entry for {target} whose methods name {method} and whose paths name {path} exactly (no wildcard), in a trusted policy file.\n",
            d.rules.join("; "),
            d.source
        );
        Some(Refusal::by_rules(d, message))
    }

    fn exfiltration_refusal(
        &self,
        target: &Target,
        port: u16,
        ex: &Exfiltration,
        why: &str,
    ) -> Refusal {
        let shown = target.with_port(port);
        Refusal {
            door: Door::Credentials,
            rule: format!("[[credentials.inject]] {}", ex.name),
            source: ex.source.clone(),
            reason: format!("attempted exfiltration: the placeholder of {} was sent to a host it may not go to ({why})", ex.name),
            message: format!(
                "cordon: blocked a request to {shown}: it carries the placeholder of {} ({why}); the real value is only sent to the hosts its [[credentials.inject]] entry names ({})\n",
                ex.name,
                self.secrets
                    .iter()
                    .find(|s| s.name == ex.name)
                    .map(|s| s.hosts.iter().map(ToString::to_string).collect::<Vec<_>>().join(", "))
                    .unwrap_or_default()
            ),
        }
    }

    /// Records that the buffer budget had no room for `what` (a body or
    /// a connection's buffers) and returns the refusal's text.
    fn budget_refusal(
        &self,
        audit: &Auditor,
        target: &Target,
        port: u16,
        proto: Proto,
        what: &str,
    ) -> String {
        let buffers = &self.buffers;
        let mut event = Event::new(
            Door::Credentials,
            audit::Kind::Limit,
            Verdict::Deny,
            subject(&target.to_string(), port),
        );
        event.rule = Some(format!(
            "inspection buffer budget = {} bytes",
            buffers.bytes
        ));
        event.source = Some(buffers.why.clone());
        event.reason = Some("the proxy already holds as many inspected bodies and connections for this sandbox as its budget allows".into());
        event.proto = Some(proto);
        audit.record(event);
        let raise = if buffers.bytes < BUFFER_BUDGET {
            ", or raise --max-memory"
        } else {
            ""
        };
        format!(
            "cordon: refused {what} would pass the inspection buffer budget, the {} bytes (budget: {}) the proxy may hold of bodies and connection buffers for this sandbox at once, over every connection; retry when fewer requests with bodies or inspected connections are in flight{raise}\n",
            buffers.bytes, buffers.why
        )
    }

    fn record_refusal(
        &self,
        audit: &Auditor,
        target: &Target,
        port: u16,
        proto: Proto,
        r: &Refusal,
    ) {
        let mut event = Event::new(
            r.door,
            audit::Kind::Decision,
            Verdict::Deny,
            subject(&target.to_string(), port),
        );
        event.rule = Some(r.rule.clone());
        event.source = Some(r.source.clone());
        event.reason = Some(r.reason.clone());
        event.proto = Some(proto);
        audit.record(event);
    }

    fn record_injection(&self, audit: &Auditor, tunnel: &Tunnel, target: &Target, name: &str) {
        let mut event = Event::new(
            Door::Credentials,
            audit::Kind::Decision,
            Verdict::Allow,
            subject(&target.to_string(), tunnel.port),
        );
        let secret = self.secrets.iter().find(|s| s.name == name);
        event.rule = Some(format!("[[credentials.inject]] {name}"));
        event.source = secret.map(|s| s.source.clone());
        event.reason = Some(format!("the real value of {name} was swapped in"));
        event.proto = Some(tunnel.proto);
        audit.record(event);
    }

    /// Relays an opaque tunnel, refusing it if the client sends a placeholder.
    pub async fn opaque<U>(
        &self,
        audit: &Auditor,
        client: &mut TcpStream,
        prefix: &[u8],
        upstream: &mut U,
        to: Endpoint<'_>,
    ) -> io::Result<()>
    where
        U: AsyncRead + AsyncWrite + Unpin,
    {
        let Endpoint { host, port, proto } = to;
        let mut scan = self.secrets.scan_all();
        let (mut client_read, mut client_write) = client.split();
        let (mut up_read, mut up_write) = tokio::io::split(upstream);
        let send = async {
            let mut buf = vec![0u8; 16 * 1024];
            let mut first = Some(prefix);
            loop {
                let chunk: &[u8] = match first.take() {
                    Some(p) if !p.is_empty() => p,
                    _ => {
                        let n = client_read.read(&mut buf).await?;
                        if n == 0 {
                            up_write.shutdown().await?;
                            return Ok::<_, io::Error>(None);
                        }
                        &buf[..n]
                    }
                };
                if let Some(ex) = scan.feed(chunk) {
                    return Ok(Some(ex));
                }
                up_write.write_all(chunk).await?;
            }
        };
        let receive = async {
            tokio::io::copy(&mut up_read, &mut client_write).await?;
            client_write.shutdown().await
        };
        tokio::pin!(send, receive);
        let mut received = false;
        loop {
            tokio::select! {
                sent = &mut send => {
                    if let Some(ex) = sent? {
                        let target = normalize(host).unwrap_or_else(|_| Target::Name(host.to_string()));
                        let r = self.exfiltration_refusal(&target, port, &ex, "the tunnel is not inspected");
                        self.record_refusal(audit, &target, port, proto, &r);
                        return Ok(());
                    }
                    if received { return Ok(()); }
                    // The client is done sending; the answer may still come.
                    return (&mut receive).await;
                }
                got = &mut receive, if !received => {
                    got?;
                    received = true;
                }
            }
        }
    }

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
                let r = Refusal {
                    door: Door::Network,
                    rule: "inspected hosts are reached over TLS".into(),
                    source: "built-in".into(),
                    reason: "the tunnel does not carry TLS".into(),
                    message: format!(
                        "cordon: refused a tunnel to {}: the host is inspected, so only TLS (https) may go through it; use https, or keep the host out of inspection with [network] no_inspect\n",
                        target.with_port(tunnel.port)
                    ),
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
                    message: String::new(),
                };
                self.record_refusal(&audit, &target, tunnel.port, tunnel.proto, &r);
                return; // closing: no certificate this CA mints could satisfy the client
            }
        }
        let leaf = match self.ca.leaf(&target.to_string()) {
            Ok(leaf) => leaf,
            Err(e) => {
                eprintln!(
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
                let r = Refusal {
                    door: Door::Network,
                    rule: "upstream certificates must verify".into(),
                    source: "built-in".into(),
                    reason: format!("upstream TLS failed: {why}"),
                    message: format!(
                        "cordon: refused {}: the upstream's TLS could not be verified ({why}); cordon trusts the system roots{}. Add a private CA with --upstream-ca FILE, or keep this host out of inspection with [network] no_inspect.\n",
                        target.with_port(tunnel.port),
                        if self.policy.upstream_ca.is_empty() { "" } else { " and the --upstream-ca files" }
                    ),
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

/// The two directions of an upgraded connection (see `Session::switch`),
/// until both have ended, the client sent a forbidden placeholder
/// (`report`), or the upstream a frame `frames` refuses (`refuse_frame`).
async fn relay_upgraded<C, U>(
    client: C,
    upstream: U,
    mut down: crate::credentials::inject::StreamSwap,
    mut up: crate::credentials::inject::PlaceholderScan,
    mut frames: Option<FrameCheck>,
    report: impl FnOnce(&Exfiltration),
    refuse_frame: impl FnOnce(&str),
) where
    C: AsyncRead + AsyncWrite + Unpin,
    U: AsyncRead + AsyncWrite + Unpin,
{
    let (mut client_read, mut client_write) = tokio::io::split(client);
    let (mut up_read, mut up_write) = tokio::io::split(upstream);
    let send = async {
        let mut buf = vec![0u8; 16 * 1024];
        loop {
            let n = client_read.read(&mut buf).await?;
            if n == 0 {
                up_write.shutdown().await?;
                return Ok::<_, io::Error>(None);
            }
            if let Some(ex) = up.feed(&buf[..n]) {
                return Ok(Some(ex));
            }
            up_write.write_all(&buf[..n]).await?;
        }
    };
    let receive = async {
        let mut buf = vec![0u8; 16 * 1024];
        loop {
            let n = up_read.read(&mut buf).await?;
            if let Some(Err(why)) = frames.as_mut().map(|f| f.check(&buf[..n])) {
                return Ok::<_, io::Error>(Some(why));
            }
            let out = if n == 0 {
                down.finish()
            } else {
                down.push(&buf[..n])
            }
            // Masking has no forbidden list: this never fails.
            .map_err(|ex| io::Error::other(format!("the placeholder of {}", ex.name)))?;
            client_write.write_all(&out).await?;
            if n == 0 {
                client_write.shutdown().await?;
                return Ok(None);
            }
        }
    };
    tokio::pin!(send, receive);
    let mut received = false;
    loop {
        tokio::select! {
            sent = &mut send => {
                if let Ok(Some(ex)) = sent {
                    report(&ex);
                    return; // dropping both halves closes the connection
                }
                if !received {
                    if let Ok(Some(why)) = (&mut receive).await {
                        refuse_frame(why);
                    }
                }
                return;
            }
            got = &mut receive, if !received => {
                if let Ok(Some(why)) = got {
                    refuse_frame(why);
                    return; // dropping both halves closes the connection
                }
                received = true;
            }
        }
    }
}

/// Rewrites an HTTP/1.1 request for the upstream in origin-form (`/path?q`
/// with the authority in Host, which [`Session::check_authority`] checked
/// against the tunnel): an origin server need not read absolute-form the
/// way the checks did.
#[allow(clippy::result_large_err)]
fn origin_form(parts: &mut http::request::Parts) -> Result<(), Response<ProxyBody>> {
    let Some(authority) = parts.uri.authority().cloned() else {
        return Ok(());
    };
    if !parts.headers.contains_key(header::HOST) {
        let host = HeaderValue::from_str(authority.as_str()).map_err(|_| {
            text_response(
                StatusCode::BAD_REQUEST,
                "cordon: the request target's authority is not a valid Host\n".into(),
            )
        })?;
        parts.headers.insert(header::HOST, host);
    }
    let origin = parts.uri.path_and_query().map_or("/", |p| p.as_str());
    parts.uri = Uri::try_from(origin).map_err(|_| {
        text_response(
            StatusCode::BAD_REQUEST,
            "cordon: the request target has no valid origin-form\n".into(),
        )
    })?;
    Ok(())
}

/// What is recorded when an upgraded stream to a host that receives a
/// value carries what the mask cannot follow (`why`).
fn upgraded_refusal(target: &Target, port: u16, why: &str) -> Refusal {
    Refusal {
        door: Door::Credentials,
        rule: "a WebSocket to a host that receives a real value carries whole, uncompressed messages".into(),
        source: "built-in".into(),
        reason: why.to_string(),
        message: format!(
            "cordon: closed a WebSocket from {}: {why}; on a host that receives a real value, only whole, uncompressed messages pass, so that the value cannot come back past the mask\n",
            target.with_port(port)
        ),
    }
}

/// Checks that an upgrade request is a WebSocket handshake (RFC 6455
/// 4.1): `GET`, `Upgrade: websocket` alone, one `Sec-WebSocket-Key` that is
/// the base64 of 16 bytes, `Sec-WebSocket-Version: 13`. Anything else
/// (`h2c`, a list, another protocol) would carry traffic past the rules.
fn websocket_handshake(method: &Method, headers: &HeaderMap) -> Result<(), &'static str> {
    use base64::Engine as _;
    let single = |name: header::HeaderName| {
        let mut values = headers.get_all(name).iter();
        match (values.next(), values.next()) {
            (Some(v), None) => Some(v.as_bytes()),
            _ => None,
        }
    };
    if method != Method::GET {
        return Err("a WebSocket handshake is a GET");
    }
    let protocol = single(header::UPGRADE).map(|v| v.trim_ascii());
    if !protocol.is_some_and(|p| p.eq_ignore_ascii_case(b"websocket")) {
        return Err("the Upgrade header names a protocol other than websocket (alone)");
    }
    let key = single(header::SEC_WEBSOCKET_KEY).and_then(|k| {
        base64::engine::general_purpose::STANDARD
            .decode(k.trim_ascii())
            .ok()
    });
    if key.is_none_or(|k| k.len() != 16) {
        return Err("the Sec-WebSocket-Key is missing, repeated or not the base64 of 16 bytes");
    }
    if single(header::SEC_WEBSOCKET_VERSION).map(|v| v.trim_ascii()) != Some(b"13".as_slice()) {
        return Err("the Sec-WebSocket-Version is not 13");
    }
    Ok(())
}

/// Whether `placeholder` appears in the request target or a header value
/// (inside `Basic` credentials too).
fn mentions(placeholder: &[u8], uri: &Uri, headers: &HeaderMap) -> bool {
    use base64::Engine as _;
    let found = |b: &[u8]| memchr::memmem::find(b, placeholder).is_some();
    found(uri.to_string().as_bytes())
        || headers.values().any(|v| {
            let v = v.as_bytes();
            found(v)
                || v.get(..6)
                    .filter(|p| p.eq_ignore_ascii_case(b"basic "))
                    .and_then(|_| {
                        base64::engine::general_purpose::STANDARD
                            .decode(v[6..].trim_ascii())
                            .ok()
                    })
                    .is_some_and(|d| found(&zeroize::Zeroizing::new(d)))
        })
}

/// A whole body of at most `cap` bytes (the length reserved for it), with
/// its trailers; `None` if it fails or is longer.
async fn collect_capped(mut body: ProxyBody, cap: u64) -> Option<(Bytes, Option<HeaderMap>)> {
    let mut out = bytes::BytesMut::with_capacity(usize::try_from(cap).ok()?);
    let mut trailers = None;
    while let Some(frame) = body.frame().await {
        match frame.ok()?.into_data() {
            Ok(data) => {
                if (out.len() + data.len()) as u64 > cap {
                    return None;
                }
                out.extend_from_slice(&data);
            }
            Err(frame) => trailers = frame.into_trailers().ok(),
        }
    }
    Some((out.freeze(), trailers))
}

/// A whole body, with the trailers it came with (gRPC needs them), and
/// its share of the sandbox's buffer budget until it is sent or dropped.
struct Whole {
    data: Option<Bytes>,
    trailers: Option<HeaderMap>,
    _reserved: Option<tokio::sync::OwnedSemaphorePermit>,
}

impl Whole {
    fn boxed(
        data: Bytes,
        trailers: Option<HeaderMap>,
        reserved: Option<tokio::sync::OwnedSemaphorePermit>,
    ) -> ProxyBody {
        Whole {
            data: Some(data).filter(|d| !d.is_empty()),
            trailers,
            _reserved: reserved,
        }
        .boxed()
    }
}

impl Body for Whole {
    type Data = Bytes;
    type Error = BoxError;

    fn poll_frame(
        self: Pin<&mut Self>,
        _: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, BoxError>>> {
        let this = self.get_mut();
        let frame = match this.data.take() {
            Some(data) => Some(Frame::data(data)),
            None => this.trailers.take().map(Frame::trailers),
        };
        Poll::Ready(frame.map(Ok))
    }

    fn is_end_stream(&self) -> bool {
        self.data.is_none() && self.trailers.is_none()
    }

    fn size_hint(&self) -> SizeHint {
        SizeHint::with_exact(self.data.as_ref().map_or(0, |d| d.len() as u64))
    }
}

/// Boxes a body error (a function, not a closure: its type must not
/// depend on a lifetime for the HTTP/2 executor's `Send` bound).
fn box_error(e: hyper::Error) -> BoxError {
    Box::new(e)
}

/// Parses every certificate in a PEM file; other blocks are skipped.
fn read_pem_certs(bytes: &[u8]) -> Vec<CertificateDer<'static>> {
    use rustls::pki_types::pem::PemObject;
    CertificateDer::pem_slice_iter(bytes)
        .filter_map(Result::ok)
        .collect()
}

/// One inspected tunnel's HTTP side.
struct Session {
    inspector: Arc<Inspector>,
    audit: Auditor,
    target: Target,
    tunnel: Tunnel,
    upstream: Upstream,
    /// Upgraded connections (WebSocket, ...) being relayed: the tunnel
    /// lasts until they end.
    upgraded: std::sync::Mutex<Vec<tokio::task::JoinHandle<()>>>,
}

// The error side of these results is the response to send instead (a
// refusal, built once per refused request), not an error to propagate.
#[allow(clippy::result_large_err)]
impl Session {
    async fn handle(
        self: Arc<Self>,
        req: Request<Incoming>,
    ) -> Result<Response<ProxyBody>, Infallible> {
        // HeadGuard stopped following HTTP at this request's head (it
        // asks to leave HTTP): unless the upstream agreed, the connection
        // must end with this response, or the next heads would reach
        // hyper unchecked.
        let connect = req.method() == Method::CONNECT;
        let leaves_http = connect || req.headers().contains_key(header::UPGRADE);
        let mut resp = match self.forward(req).await {
            Ok(resp) => resp,
            Err(resp) => resp,
        };
        let agreed = if connect {
            resp.status().is_success()
        } else {
            resp.status() == StatusCode::SWITCHING_PROTOCOLS
        };
        if leaves_http && !agreed {
            resp.headers_mut()
                .insert(header::CONNECTION, HeaderValue::from_static("close"));
        }
        Ok(resp)
    }

    /// The 503 for a request body the sandbox's buffer budget has no room
    /// for (recorded as a limit).
    fn over_budget(&self, n: u64) -> Response<ProxyBody> {
        let message = self.inspector.budget_refusal(
            &self.audit,
            &self.target,
            self.tunnel.port,
            self.tunnel.proto,
            &format!(
                "a request to {}: its body ({n} bytes)",
                self.target.with_port(self.tunnel.port)
            ),
        );
        let mut resp = text_response(StatusCode::SERVICE_UNAVAILABLE, message);
        // The body stays unread: the connection cannot go on.
        resp.headers_mut()
            .insert(header::CONNECTION, HeaderValue::from_static("close"));
        resp
    }

    fn refuse(&self, r: Refusal) -> Response<ProxyBody> {
        self.inspector.record_refusal(
            &self.audit,
            &self.target,
            self.tunnel.port,
            self.tunnel.proto,
            &r,
        );
        text_response(StatusCode::FORBIDDEN, r.message)
    }

    /// The 502 for an upgrade whose answer cordon cannot mask (`why`),
    /// recorded; the connection closes with it.
    fn refuse_upgraded(&self, why: &str) -> Response<ProxyBody> {
        let (target, port) = (&self.target, self.tunnel.port);
        let r = upgraded_refusal(target, port, why);
        self.inspector
            .record_refusal(&self.audit, target, port, self.tunnel.proto, &r);
        text_response(StatusCode::BAD_GATEWAY, r.message)
    }

    /// The refusal of an upgrade that is not a well-formed WebSocket
    /// handshake (`why` says what is wrong).
    fn protocol_refusal(&self, why: &str) -> Refusal {
        Refusal {
            door: Door::Network,
            rule: "inside inspected tunnels only WebSocket upgrades are relayed".into(),
            source: "built-in".into(),
            reason: why.to_string(),
            message: format!(
                "cordon: blocked an upgrade inside the tunnel to {}: {why}; only WebSocket (RFC 6455: Upgrade: websocket, a Sec-WebSocket-Key, Sec-WebSocket-Version: 13) is relayed, since after the switch no other protocol can be checked\n",
                self.target.with_port(self.tunnel.port)
            ),
        }
    }

    /// The authority a request names must be the tunnel's host and port:
    /// at most one Host header (servers disagree on which of two counts),
    /// readable, and no userinfo (`user@host`) in it or the target.
    fn check_authority(&self, uri: &Uri, headers: &HeaderMap) -> Result<(), Response<ProxyBody>> {
        let hosts = headers.get_all(header::HOST);
        let readable: Option<Vec<&str>> = hosts.iter().map(|h| h.to_str().ok()).collect();
        let named: Vec<&str> = uri
            .authority()
            .map(|a| a.as_str())
            .into_iter()
            .chain(readable.clone().unwrap_or_default())
            .collect();
        let port = self.tunnel.port;
        let agrees = |authority: &str| {
            if authority.contains('@') {
                return false;
            }
            let (host, p) = match authority.rsplit_once(':') {
                Some((h, _)) if !h.ends_with(']') && h.contains(':') => (authority, None),
                Some((h, p)) => (h, p.parse::<u16>().ok()),
                None => (authority, None),
            };
            let p = p.unwrap_or(443);
            normalize(host).ok().as_ref() == Some(&self.target) && p == port
        };
        let one_host = hosts.iter().count() <= 1 && readable.is_some();
        if one_host && !named.is_empty() && named.iter().all(|a| agrees(a)) {
            return Ok(());
        }
        Err(self.refuse(Refusal {
            door: Door::Network,
            rule: "the Host header must match the CONNECT host".into(),
            source: "built-in".into(),
            reason: "Host header mismatch".into(),
            message: format!(
                "cordon: blocked a request inside the tunnel to {}: its Host ({}) names another host\n",
                self.target.with_port(port),
                named.join(", ")
            ),
        }))
    }

    async fn forward(
        &self,
        req: Request<Incoming>,
    ) -> Result<Response<ProxyBody>, Response<ProxyBody>> {
        let inspector = &self.inspector;
        let (mut parts, body) = req.into_parts();
        // hyper refuses most ambiguous framings itself, and HTTP/1.1
        // heads were checked raw before it read them (HeadGuard); this is
        // the same check of the fields for HTTP/2.
        let fields = parts
            .headers
            .iter()
            .map(|(name, value)| (name.as_str().as_bytes(), value.as_bytes()));
        if let Err(why) = body_framing(fields) {
            let mut resp = text_response(StatusCode::BAD_REQUEST, framing_refusal(why));
            // The body's end is unknown: the connection cannot go on.
            resp.headers_mut()
                .insert(header::CONNECTION, HeaderValue::from_static("close"));
            return Err(resp);
        }
        self.check_authority(&parts.uri, &parts.headers)?;
        let port = self.tunnel.port;
        let method = parts.method.clone();
        if let Some(r) = inspector.rules_refusal(
            &self.target,
            port,
            method.as_str(),
            parts.uri.path(),
            "https",
        ) {
            return Err(self.refuse(r));
        }
        if parts.headers.contains_key(header::UPGRADE) {
            if let Err(why) = websocket_handshake(&parts.method, &parts.headers) {
                return Err(self.refuse(self.protocol_refusal(why)));
            }
            if let Some(r) =
                inspector.upgrade_refusal(&self.target, port, method.as_str(), parts.uri.path())
            {
                return Err(self.refuse(r));
            }
        }
        let exfil = |ex: &Exfiltration| {
            self.refuse(inspector.exfiltration_refusal(
                &self.target,
                port,
                ex,
                "not a host its entry names",
            ))
        };
        // Request line and headers: placeholders swapped where allowed.
        let swaps = inspector.secrets.request_swaps(&self.target, port);
        let mut learned = Swaps::default();
        let mut used: Vec<String> = inspector
            .secrets
            .iter()
            .filter(|s| s.allowed_for(&self.target, port))
            .filter(|s| mentions(s.placeholder.as_bytes(), &parts.uri, &parts.headers))
            .map(|s| s.name.clone())
            .collect();
        let uri_text = parts.uri.to_string();
        if let Some(new) = swaps.apply(uri_text.as_bytes()).map_err(|e| exfil(&e))? {
            parts.uri = Uri::try_from(new).map_err(|_| {
                text_response(
                    StatusCode::BAD_REQUEST,
                    "cordon: the request target is invalid once the placeholder is swapped\n"
                        .into(),
                )
            })?;
        }
        swap_headers(&mut parts.headers, &swaps, &mut learned).map_err(|e| exfil(&e))?;
        // An HTTP/1.1 upgrade (WebSocket): its Connection and Upgrade
        // headers go through, and so, after a 101, do the raw bytes.
        let upgrade = parts
            .extensions
            .remove::<hyper::upgrade::OnUpgrade>()
            .zip(parts.headers.get(header::UPGRADE).cloned());
        strip_hop_by_hop(&mut parts.headers);
        // On a host that receives a value, no WebSocket extension: a
        // compressed frame would carry a value past the mask.
        let receives = inspector.secrets.targets(&self.target, port);
        if let Some((_, protocol)) = &upgrade {
            parts
                .headers
                .insert(header::CONNECTION, HeaderValue::from_static("upgrade"));
            parts.headers.insert(header::UPGRADE, protocol.clone());
            if receives {
                parts.headers.remove(header::SEC_WEBSOCKET_EXTENSIONS);
            }
        }
        if receives {
            // Compressed responses could carry a real value past the mask.
            parts.headers.insert(
                header::ACCEPT_ENCODING,
                HeaderValue::from_static("identity"),
            );
        }
        // Body: swapped whole when small, only scanned when large.
        let len = exact_len(&body, &parts.headers);
        let body: ProxyBody = body.map_err(box_error).boxed();
        // A placeholder caught while streaming a large body: the refusal's
        // message, for the client in place of the upstream's failure.
        let caught: Arc<std::sync::Mutex<Option<String>>> = Arc::default();
        let body = match len {
            Some(n) if n <= BODY_CAP => {
                let Some(reserved) = inspector.buffers.reserve(n) else {
                    return Err(self.over_budget(n));
                };
                let (bytes, mut trailers) = collect_capped(body, n).await.ok_or_else(|| {
                    text_response(
                        StatusCode::BAD_REQUEST,
                        "cordon: the request body did not match its length\n".into(),
                    )
                })?;
                if let Some(t) = trailers.as_mut() {
                    swap_headers(t, &swaps, &mut learned).map_err(|e| exfil(&e))?;
                }
                let out = match swaps.apply(&bytes).map_err(|e| exfil(&e))? {
                    Some(out) => {
                        for s in inspector.secrets.iter() {
                            let named = s.allowed_for(&self.target, port)
                                && memchr::memmem::find(&bytes, s.placeholder.as_bytes()).is_some();
                            if named && !used.contains(&s.name) {
                                used.push(s.name.clone());
                            }
                        }
                        Bytes::from(out)
                    }
                    None => bytes,
                };
                if n > 0 || parts.headers.contains_key(header::CONTENT_LENGTH) {
                    parts
                        .headers
                        .insert(header::CONTENT_LENGTH, HeaderValue::from(out.len()));
                }
                Whole::boxed(out, trailers, Some(reserved))
            }
            _ if inspector.secrets.is_empty() => body,
            _ => {
                // Too large (or of unknown length) to swap in place: scan
                // only, so the length stays right.
                let audit = self.audit.clone();
                let (target, proto) = (self.target.clone(), self.tunnel.proto);
                let refusal_of = {
                    let inspector = inspector.clone();
                    let caught = caught.clone();
                    move |ex: &Exfiltration| {
                        let r = inspector.exfiltration_refusal(
                            &target,
                            port,
                            ex,
                            "not a host its entry names",
                        );
                        inspector.record_refusal(&audit, &target, port, proto, &r);
                        if let Ok(mut slot) = caught.lock() {
                            *slot = Some(r.message);
                        }
                    }
                };
                let mut scan = swaps.clone();
                scan.retain_forbidden_only();
                SwapBody {
                    inner: body,
                    swap: scan.stream(),
                    trailers: None,
                    done: false,
                    on_exfiltration: Some(Box::new(refusal_of)),
                }
                .boxed()
            }
        };
        for name in &used {
            inspector.record_injection(&self.audit, &self.tunnel, &self.target, name);
        }
        if matches!(self.upstream, Upstream::H1(_)) {
            origin_form(&mut parts)?;
        }
        let req = Request::from_parts(parts, body);
        let sent = match &self.upstream {
            Upstream::H1(sender) => {
                let mut sender = sender.lock().await;
                // An upstream that closed between two requests: the server
                // is shutting down; this request gets a 502, not a wait.
                let ready = tokio::time::timeout(UPSTREAM_READY, sender.ready()).await;
                match ready {
                    Ok(Ok(())) if !sender.is_closed() => sender.send_request(req).await,
                    _ => {
                        return Err(text_response(
                            StatusCode::BAD_GATEWAY,
                            format!(
                            "cordon: the upstream {} closed the connection; retry on a new one\n",
                            self.target.with_port(port)
                        ),
                        ))
                    }
                }
            }
            Upstream::H2(sender) => sender.clone().send_request(req).await,
        };
        let mut resp = sent.map_err(|e| {
            // The body's refusal, if that is why the request failed (it is
            // already recorded).
            if let Some(message) = caught.lock().ok().and_then(|mut c| c.take()) {
                return text_response(StatusCode::FORBIDDEN, message);
            }
            text_response(
                StatusCode::BAD_GATEWAY,
                format!(
                    "cordon: the upstream {} failed: {e}\n",
                    self.target.with_port(port)
                ),
            )
        })?;
        if resp.status() == StatusCode::SWITCHING_PROTOCOLS {
            if let Some((client_side, _)) = upgrade {
                if receives
                    && resp
                        .headers()
                        .contains_key(header::SEC_WEBSOCKET_EXTENSIONS)
                {
                    return Err(self.refuse_upgraded(
                        "the upstream's 101 negotiates a WebSocket extension cordon did not offer",
                    ));
                }
                let frames = receives.then(FrameCheck::default);
                return Ok(self.switch(client_side, &mut resp, frames));
            }
        }
        Ok(self
            .mask_response(resp, &method, learned.reversed(), !used.is_empty())
            .await)
    }

    /// Relays an upgraded connection (after the upstream's 101): what the
    /// upstream sends has every real value and its encodings masked with
    /// same-length masks (WebSocket frames count their bytes); what the
    /// client sends is scanned for placeholders that may not go to this
    /// host (a find ends the connection and is recorded). Placeholders
    /// allowed here are not swapped: the stream is no longer HTTP, and
    /// WebSocket frames from a client are XOR-masked anyway.
    fn switch(
        &self,
        client_side: hyper::upgrade::OnUpgrade,
        resp: &mut Response<Incoming>,
        frames: Option<FrameCheck>,
    ) -> Response<ProxyBody> {
        let upstream_side = hyper::upgrade::on(&mut *resp);
        let secrets = &self.inspector.secrets;
        let down = secrets.response_swaps().same_length().stream();
        let up = secrets.scan_forbidden(&self.target, self.tunnel.port);
        let report = {
            let (inspector, audit) = (self.inspector.clone(), self.audit.clone());
            let (target, port, proto) = (self.target.clone(), self.tunnel.port, self.tunnel.proto);
            move |ex: &Exfiltration| {
                let r = inspector.exfiltration_refusal(
                    &target,
                    port,
                    ex,
                    "sent on an upgraded connection to a host its entry does not name",
                );
                inspector.record_refusal(&audit, &target, port, proto, &r);
            }
        };
        let refuse_frame = {
            let (inspector, audit) = (self.inspector.clone(), self.audit.clone());
            let (target, port, proto) = (self.target.clone(), self.tunnel.port, self.tunnel.proto);
            move |why: &str| {
                let r = upgraded_refusal(&target, port, why);
                inspector.record_refusal(&audit, &target, port, proto, &r);
            }
        };
        let relayed = tokio::spawn(async move {
            let (Ok(client), Ok(upstream)) = tokio::join!(client_side, upstream_side) else {
                return;
            };
            relay_upgraded(
                TokioIo::new(client),
                TokioIo::new(upstream),
                down,
                up,
                frames,
                report,
                refuse_frame,
            )
            .await;
        });
        self.upgraded
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .push(relayed);
        let mut out = Response::new(
            http_body_util::Empty::<Bytes>::new()
                .map_err(|never| match never {})
                .boxed(),
        );
        *out.status_mut() = StatusCode::SWITCHING_PROTOCOLS;
        let mut ignored = Swaps::default();
        let mask = self.inspector.secrets.response_swaps();
        *out.headers_mut() = resp.headers().clone();
        let _ = swap_headers(out.headers_mut(), &mask, &mut ignored);
        out
    }

    /// Real values → placeholders in the response's headers and body.
    async fn mask_response(
        &self,
        resp: Response<Incoming>,
        method: &Method,
        learned: Swaps<'static>,
        injected: bool,
    ) -> Response<ProxyBody> {
        let secrets = &self.inspector.secrets;
        let (mut parts, body) = resp.into_parts();
        // Any coding but identity in any Content-Encoding value, or any
        // transfer coding but chunked (hyper decodes only that one, and
        // the header is not passed on), hides bytes from the mask.
        let coded = |name, keep: &[u8]| {
            parts.headers.get_all(name).iter().any(|v| {
                v.as_bytes()
                    .split(|b| *b == b',')
                    .map(<[u8]>::trim_ascii)
                    .any(|t| !t.is_empty() && !t.eq_ignore_ascii_case(keep))
            })
        };
        let compressed = if coded(header::TRANSFER_ENCODING, b"chunked") {
            Some("Transfer-Encoding")
        } else if injected && coded(header::CONTENT_ENCODING, b"identity") {
            Some("Content-Encoding")
        } else {
            None
        };
        if let Some(how) = compressed {
            // Asked for identity, got compression: a real value echoed in
            // there could not be masked. Refused rather than risked.
            let r = Refusal {
                door: Door::Credentials,
                rule: "responses to requests that carry a real value must be maskable".into(),
                source: "built-in".into(),
                reason: format!("compressed response ({how}) from an inspected host"),
                message: format!(
                    "cordon: refused the response of {}: it is compressed ({how}), so a real credential echoed in it could not be masked, although cordon asked for an uncompressed one\n",
                    self.target.with_port(self.tunnel.port)
                ),
            };
            self.inspector.record_refusal(
                &self.audit,
                &self.target,
                self.tunnel.port,
                self.tunnel.proto,
                &r,
            );
            return text_response(StatusCode::BAD_GATEWAY, r.message);
        }
        strip_hop_by_hop(&mut parts.headers);
        // HTTP/1.1's reason phrase is free text an upstream may echo a value
        // in; the client gets the status code's standard one instead.
        parts.extensions.remove::<hyper::ext::ReasonPhrase>();
        let body: ProxyBody = body.map_err(box_error).boxed();
        if secrets.is_empty() {
            return Response::from_parts(parts, body);
        }
        let mut mask = secrets.response_swaps();
        mask.extend(learned);
        let mut ignored = Swaps::default();
        let _ = swap_headers(&mut parts.headers, &mask, &mut ignored);
        let bodiless = *method == Method::HEAD
            || parts.status == StatusCode::NO_CONTENT
            || parts.status == StatusCode::NOT_MODIFIED;
        if bodiless {
            return Response::from_parts(parts, body);
        }
        // Within the budget, a small body is masked whole (its length
        // stays exact); past it, it is masked as a stream like a large one.
        let reserved = exact_len(&body, &parts.headers)
            .filter(|n| *n <= BODY_CAP)
            .and_then(|n| Some((n, self.inspector.buffers.reserve(n)?)));
        let body = match reserved {
            Some((n, reserved)) => match collect_capped(body, n).await {
                Some((bytes, mut trailers)) => {
                    if let Some(t) = trailers.as_mut() {
                        let _ = swap_headers(t, &mask, &mut ignored);
                    }
                    let out = match mask.apply(&bytes) {
                        Ok(Some(out)) => Bytes::from(out),
                        _ => bytes,
                    };
                    parts
                        .headers
                        .insert(header::CONTENT_LENGTH, HeaderValue::from(out.len()));
                    Whole::boxed(out, trailers, Some(reserved))
                }
                None => {
                    return text_response(
                        StatusCode::BAD_GATEWAY,
                        "cordon: the upstream's response body was cut short\n".into(),
                    )
                }
            },
            _ => {
                parts.headers.remove(header::CONTENT_LENGTH);
                SwapBody {
                    inner: body,
                    swap: mask.stream(),
                    trailers: None,
                    done: false,
                    on_exfiltration: None,
                }
                .boxed()
            }
        };
        Response::from_parts(parts, body)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::policy::Source;

    #[test]
    fn the_buffer_budget_follows_max_memory_and_is_released_on_drop() {
        assert_eq!(Buffers::new(None).bytes, BUFFER_BUDGET);
        let limit = |bytes| Sourced::new(bytes, Source::Flag("--max-memory".into()));
        let small = Buffers::new(Some(&limit(128 << 20)));
        assert_eq!(small.bytes, 32 << 20);
        assert!(small.why.contains("max_memory") && small.why.contains("--max-memory"));
        assert_eq!(Buffers::new(Some(&limit(8 << 30))).bytes, BUFFER_BUDGET);
        // Never less than one whole body.
        assert_eq!(Buffers::new(Some(&limit(1 << 20))).bytes, BODY_CAP);
        let one = Buffers::new(Some(&limit(1 << 20)));
        let held = one.reserve(BODY_CAP).expect("the budget fits one body");
        assert!(one.reserve(1).is_none());
        drop(held);
        assert!(one.reserve(BODY_CAP).is_some());
    }
}
