//! The HTTP proxy: hyper serves each client connection, behind the raw
//! framing checks ([`HeadGuard`]), and every request on it is judged on
//! its own: the Host header against the target, the host rules (the
//! gate), then the HTTP rules and the placeholder check (the credentials
//! door). `CONNECT host:port` opens a tunnel; an absolute-form request
//! (`GET http://host/path`) is forwarded upstream. Every request is judged
//! before it is sent, whichever connection carries it: the upstream
//! connection is kept for the client connection's next request to the same
//! host and port (opening one per request cost a connect and a handshake
//! each, a third more time for a package manager's many small requests),
//! and is never shared with another client connection or another
//! destination. The client connection is kept alive between requests
//! (chunked bodies included) while the upstream keeps its own: an upstream
//! that closes after its answer closes the client's connection too.

use std::convert::Infallible;
use std::future::Future;
use std::io;
use std::pin::Pin;
use std::sync::{Arc, Mutex, PoisonError};
use std::task::{Context, Poll};
use std::time::Duration;

use bytes::Bytes;
use http::header::{self, HeaderValue};
use http::uri::Authority;
use http::{Method, Request, Response, StatusCode, Uri, Version};
use http_body_util::{BodyExt, Empty};
use hyper::body::Incoming;
use hyper_util::rt::{TokioIo, TokioTimer};
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt, ReadBuf};
use tokio::net::TcpStream;

use super::accept::ClientError;
use super::connect::ConnectError;
use super::events::{CloseOnDrop, Conn};
use super::framing::{
    ascii_shape, encode_non_ascii, target_span, Checked, HeadGuard, HeadLog, MAX_HEAD,
};
use super::inspect::{
    ambiguous_length_refusal, box_error, has_coding_but, length_is_ambiguous, strip_hop_by_hop,
    text_response, ProxyBody,
};
use super::request_body::{take_fault, OnPlaceholder, RequestBody};
use super::{Allowed, Denial, Gate, Proxy};
use crate::audit::Proto;
use crate::net::Counted;

/// What a request whose Host header does not match its target can do.
const HOST_HEADER_FIX: &str =
    "nothing allows it: send one Host header, naming the request's target";

/// The client's connection as hyper reads it.
type ClientIo = HeadGuard<Lingering>;

/// hyper's read and write buffers on a client or upstream connection: a
/// whole request head ([`MAX_HEAD`]) and then some, and within what a
/// connection is assumed to cost the supervisor.
const H1_BUFFER: usize = MAX_HEAD + (8 << 10);
/// Header fields a request may have (as many as the proxy ever read).
const MAX_HEADERS: usize = 128;
/// What a refused client may still send after its answer, and for how
/// long, before the connection is closed anyway.
const LINGER_BYTES: usize = 1 << 20;
const LINGER_TIME: Duration = Duration::from_secs(1);

/// A CONNECT that was allowed and connected: relayed once hyper has sent
/// the 200 and handed the client's stream back.
struct PendingTunnel {
    client: hyper::upgrade::OnUpgrade,
    upstream: TcpStream,
    host: String,
    port: u16,
}

/// What the requests of one client connection share.
struct Client<'a> {
    conn: &'a Conn,
    heads: HeadLog,
    tunnel: Mutex<Option<PendingTunnel>>,
    /// The upstream connection of the last forwarded request, if it stays
    /// open for another.
    kept: Mutex<Option<Upstream>>,
}

/// An upstream connection for forwarded requests: where it goes, the
/// address it was checked at and connected to, and hyper's handle on it.
struct Upstream {
    host: String,
    port: u16,
    addr: std::net::SocketAddr,
    sender: hyper::client::conn::http1::SendRequest<ProxyBody>,
    /// It carried a request before this one.
    reused: bool,
}

/// How long a kept upstream connection may take to be ready for the next
/// request (it finishes the previous response's end first) before a new
/// connection is opened instead.
const KEPT_READY_TIME: Duration = Duration::from_secs(1);

impl<G: Gate> Proxy<G> {
    /// Serves one HTTP proxy client until it closes, times out, or its
    /// CONNECT tunnel ends.
    pub(super) async fn http_client(
        &self,
        client: TcpStream,
        conn: &Conn,
    ) -> Result<(), ClientError> {
        // hyper writes a response's head and body as they come: Nagle's
        // algorithm would hold each small write until the last is acked.
        let _ = client.set_nodelay(true);
        let shared = Client {
            conn,
            heads: HeadLog::default(),
            tunnel: Mutex::new(None),
            kept: Mutex::new(None),
        };
        let io = HeadGuard::logged(Lingering::new(client), shared.heads.clone());
        let service = hyper::service::service_fn(|req| self.request(req, &shared));
        let served = hyper::server::conn::http1::Builder::new()
            .timer(TokioTimer::new())
            // Each head, the first and every one after, within the time
            // a client has for its request head; an idle kept-alive
            // connection is closed after as long.
            .header_read_timeout(self.limits.handshake_timeout)
            .max_buf_size(H1_BUFFER)
            .max_headers(MAX_HEADERS)
            // A client that sent its request and shut its side (or whose
            // refused head ended what the guard passes) still gets the
            // answer.
            .half_close(true)
            .preserve_header_case(true)
            .auto_date_header(false)
            .serve_connection(TokioIo::new(io), service)
            .with_upgrades();
        let _ = served.await;
        let pending = shared
            .tunnel
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .take();
        let Some(t) = pending else {
            return Ok(());
        };
        let upgraded = t.client.await.map_err(io::Error::other)?;
        let parts = upgraded
            .downcast::<TokioIo<ClientIo>>()
            .map_err(|_| ClientError::Malformed("the upgraded stream is not the client's"))?;
        let (lingering, unread) = parts.io.into_inner().into_parts();
        // What the client sent behind its CONNECT: what hyper had read,
        // then what the guard still held.
        let mut extra = parts.read_buf.to_vec();
        extra.extend_from_slice(&unread);
        self.tunnel(
            lingering.stream,
            extra,
            t.upstream,
            &t.host,
            t.port,
            Proto::Connect,
            conn,
        )
        .await
    }

    /// Answers one request (a refusal is an answer too).
    async fn request(
        &self,
        mut req: Request<Incoming>,
        client: &Client<'_>,
    ) -> Result<Response<ProxyBody>, Infallible> {
        let head = match client.heads.next() {
            Some(Checked::Head(head)) => head,
            Some(Checked::Refused(message)) => return Ok(text(StatusCode::BAD_REQUEST, message)),
            None => {
                return Ok(text(
                    StatusCode::BAD_REQUEST,
                    "cordon: the proxy lost track of the request head; refused\n".into(),
                ))
            }
        };
        // The guard stopped following HTTP at a head that asks to leave
        // it: unless a tunnel takes the connection over, it ends here.
        let leaves_http =
            req.method() == Method::CONNECT || req.headers().contains_key(header::UPGRADE);
        let mut resp = match self.judge(&mut req, &head, client).await {
            Ok(Judged::Tunnel(tunnel)) => {
                *client.tunnel.lock().unwrap_or_else(PoisonError::into_inner) = Some(tunnel);
                let mut resp = Response::new(
                    Empty::<Bytes>::new()
                        .map_err(|never| match never {})
                        .boxed(),
                );
                resp.extensions_mut()
                    .insert(hyper::ext::ReasonPhrase::from_static(
                        b"Connection established",
                    ));
                return Ok(resp);
            }
            Ok(Judged::Forward(to)) => match self.forward(req, client, &to, !leaves_http).await {
                Ok(resp) | Err(resp) => resp,
            },
            Err(resp) => resp,
        };
        if leaves_http {
            resp.headers_mut()
                .insert(header::CONNECTION, HeaderValue::from_static("close"));
        }
        Ok(resp)
    }

    /// The checks of one request, up to the upstream connection: the
    /// tunnel to relay (CONNECT), the destination to forward to, or the
    /// refusal to answer.
    async fn judge(
        &self,
        req: &mut Request<Incoming>,
        head: &[u8],
        client: &Client<'_>,
    ) -> Result<Judged, Response<ProxyBody>> {
        let proto = if req.method() == Method::CONNECT {
            Proto::Connect
        } else {
            Proto::Http
        };
        // The target as sent (hyper read a copy of it made ASCII).
        let sent = target_span(head).and_then(|span| std::str::from_utf8(&head[span]).ok());
        let target = sent.and_then(|sent| match proto {
            Proto::Connect => host_port(sent, None).map(|(h, p)| (h, p, String::new())),
            _ => absolute_form(sent),
        });
        let Some((host, port, origin)) = target else {
            return Err(text(
                StatusCode::BAD_REQUEST,
                "cordon: the proxy needs an absolute URL (http://host/path) or CONNECT host:port\n"
                    .into(),
            ));
        };
        if proto == Proto::Http && !host_header_matches(req.headers(), &host, port) {
            let denial = Denial {
                rule: "the Host header must match the request target".into(),
                source: "built-in".into(),
                reason: "Host header mismatch".into(),
                fix: Some(HOST_HEADER_FIX.into()),
                message: format!(
                    "cordon: the Host header does not match the request target\n{HOST_HEADER_FIX}\n"
                ),
            };
            self.denied(proto, &host, port, None, &denial);
            return Err(text(StatusCode::BAD_REQUEST, denial.message));
        }
        let allowed = self.gate.decide(&host, port).await.map_err(|denial| {
            self.denied(proto, &host, port, None, &denial);
            text(StatusCode::FORBIDDEN, denial.message)
        })?;
        if proto == Proto::Http {
            // cordon: credentials door (plain HTTP: HTTP rules, no placeholders).
            if let Some(inspector) = &self.inspector {
                let path = origin.split('?').next().unwrap_or("/");
                let method = req.method().as_str();
                inspector
                    .check_plain(
                        &self.audit,
                        &host,
                        port,
                        method,
                        path,
                        sent.unwrap_or_default(),
                        req.headers(),
                        head,
                    )
                    .map_err(|message| text(StatusCode::FORBIDDEN, message))?;
            }
            return Ok(Judged::Forward(Forward {
                allowed,
                host,
                port,
                origin,
            }));
        }
        let upstream = self.connect_allowed(proto, &allowed, &host, port).await?;
        self.opened(client.conn, proto, &host, port, upstream.1, &allowed);
        Ok(Judged::Tunnel(PendingTunnel {
            client: hyper::upgrade::on(req),
            upstream: upstream.0,
            host,
            port,
        }))
    }

    /// Connects to an allowed destination; the refusal (recorded) if the
    /// address is denied or the upstream cannot be reached.
    async fn connect_allowed(
        &self,
        proto: Proto,
        allowed: &Allowed,
        host: &str,
        port: u16,
    ) -> Result<(TcpStream, std::net::SocketAddr), Response<ProxyBody>> {
        self.connect(&allowed.dest, host, port, proto)
            .await
            .map_err(|e| match e {
                ConnectError::Exfiltration(message) => text(StatusCode::FORBIDDEN, message),
                ConnectError::Denied(denial, addr) => {
                    self.denied(proto, host, port, Some(addr), &denial);
                    text(StatusCode::FORBIDDEN, denial.message)
                }
                ConnectError::Upstream(message) => {
                    self.unreachable(proto, host, port, allowed, &message);
                    text(StatusCode::BAD_GATEWAY, message)
                }
            })
    }

    /// Forwards an allowed plain-HTTP request, over the client
    /// connection's kept upstream connection to the same destination or a
    /// new one, and its response back; `keep` says whether the upstream
    /// connection may carry the client's next request too.
    async fn forward(
        &self,
        req: Request<Incoming>,
        client: &Client<'_>,
        to: &Forward,
        keep: bool,
    ) -> Result<Response<ProxyBody>, Response<ProxyBody>> {
        let (proto, allowed, host, port) = (Proto::Http, &to.allowed, to.host.as_str(), to.port);
        let (mut parts, body) = req.into_parts();
        to_origin_form(&mut parts, &to.origin)
            .map_err(|message| text(StatusCode::BAD_REQUEST, message))?;
        // Body and trailers: no placeholder, however split or spelled.
        let scan = self.inspector.as_ref().and_then(|inspector| {
            let scan = inspector.plain_scan()?;
            let (inspector, audit, host) =
                (inspector.clone(), self.audit.clone(), host.to_string());
            let report: OnPlaceholder =
                Box::new(move |ex| inspector.refuse_plain(&audit, &host, port, ex));
            Some((scan, report))
        });
        // A request with a body may not leave its connection to another:
        // an upstream that ignores a GET's body reads it as the start of
        // its next request, which the next request on the connection would
        // complete, and the answer to that unjudged request would come
        // back as this client's next one.
        let bodiless = hyper::body::Body::is_end_stream(&body);
        let keep = keep && bodiless;
        // A GET or HEAD without a body can be sent again as it is, if a
        // kept connection the upstream was closing takes it and fails.
        let again =
            (bodiless && matches!(parts.method, Method::GET | Method::HEAD)).then(|| parts.clone());
        let body = RequestBody::new(body, scan);
        let fault = body.fault();
        let mut req = Request::from_parts(parts, body.boxed());
        let kept = client
            .kept
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .take()
            .filter(|k| k.host == host && k.port == port);
        let mut upstream = match kept {
            Some(kept) => kept,
            None => self.open_upstream(allowed, host, port).await?,
        };
        // The decision is recorded once, before the request goes out, on
        // whichever connection carries it.
        self.decided(proto, host, port, upstream.addr, allowed);
        let sent = loop {
            if upstream.reused {
                let ready = tokio::time::timeout(KEPT_READY_TIME, upstream.sender.ready()).await;
                if !matches!(ready, Ok(Ok(()))) {
                    upstream = self.open_upstream(allowed, host, port).await?;
                    continue;
                }
            }
            match upstream.sender.try_send_request(req).await {
                Err(mut e) if upstream.reused => {
                    // The kept connection closed before the request went
                    // out (the upstream ended an idle connection), or as it
                    // did: a new one takes it, unsent or sent again.
                    let retry = e.take_message().or_else(|| {
                        again.clone().map(|parts| {
                            let empty = Empty::<Bytes>::new().map_err(|never| match never {});
                            Request::from_parts(parts, empty.boxed())
                        })
                    });
                    match retry {
                        Some(next) => {
                            req = next;
                            upstream = self.open_upstream(allowed, host, port).await?;
                        }
                        None => break Err(e.into_error()),
                    }
                }
                sent => break sent.map_err(|e| e.into_error()),
            }
        };
        let resp = sent.map_err(|e| {
            // A body cut short by its check (a placeholder, the client's
            // framing) is the client's fault, not the upstream's.
            if let Some((status, message)) = take_fault(&fault) {
                return text(status, message);
            }
            match client.heads.refusal() {
                Some(message) => text(StatusCode::BAD_REQUEST, message),
                None => upstream_failed(host, port, &e),
            }
        })?;
        let (mut parts, body) = resp.into_parts();
        // Framing the client could not be given faithfully: hyper undoes
        // chunked alone and Transfer-Encoding is one hop's, so a body still
        // in another transfer coding (`gzip, chunked`) would reach the
        // client with nothing saying how it is coded; and a length given
        // two ways is an attack or an error.
        let shown = super::events::subject(host, port);
        let unrelayable = if has_coding_but(&parts.headers, header::TRANSFER_ENCODING, b"chunked") {
            Some(format!(
                "cordon: the response of {shown} has a transfer coding other than chunked, which cordon does not relay\n"
            ))
        } else if length_is_ambiguous(&parts.headers) {
            Some(ambiguous_length_refusal(&shown))
        } else {
            None
        };
        if let Some(message) = unrelayable {
            return Err(text(StatusCode::BAD_GATEWAY, message));
        }
        let upstream_closes = closes_after(parts.version, &parts.headers);
        strip_hop_by_hop(&mut parts.headers);
        if upstream_closes {
            parts
                .headers
                .insert(header::CONNECTION, HeaderValue::from_static("close"));
        } else if keep {
            // The client's next request comes once this body is relayed,
            // and the connection is ready for it then.
            upstream.reused = true;
            *client.kept.lock().unwrap_or_else(PoisonError::into_inner) = Some(upstream);
        }
        Ok(Response::from_parts(parts, body.map_err(box_error).boxed()))
    }

    /// Connects to an allowed destination for forwarded requests and
    /// serves the connection until every handle on it is dropped or the
    /// proxy stops; its close event is recorded then (each request's
    /// decision is recorded by [`Proxy::forward`], before it is sent).
    async fn open_upstream(
        &self,
        allowed: &Allowed,
        host: &str,
        port: u16,
    ) -> Result<Upstream, Response<ProxyBody>> {
        let proto = Proto::Http;
        let (stream, addr) = self.connect_allowed(proto, allowed, host, port).await?;
        let _ = stream.set_nodelay(true);
        let exchange = Arc::new(Conn::new());
        self.arm_close(&exchange, proto, host, port, addr, allowed);
        let closes = CloseOnDrop {
            conn: exchange.clone(),
            audit: self.audit.clone(),
        };
        // Read from the upstream is down, written to it is up.
        let stream = Counted::new(stream, exchange.down.clone(), exchange.up.clone());
        let (sender, connection) = hyper::client::conn::http1::Builder::new()
            .max_buf_size(H1_BUFFER)
            .preserve_header_case(true)
            .handshake::<_, ProxyBody>(TokioIo::new(stream))
            .await
            .map_err(|e| upstream_failed(host, port, &e))?;
        let mut stop = self.stop.clone();
        tokio::spawn(async move {
            // Dropped with the task, at its end or the runtime's.
            let _closes = closes;
            tokio::select! {
                _ = connection => {}
                _ = stop.wait_for(|s| *s) => {}
            }
        });
        Ok(Upstream {
            host: host.to_string(),
            port,
            addr,
            sender,
            reused: false,
        })
    }
}

/// What the checks of a request decided, short of a refusal.
enum Judged {
    /// A CONNECT, allowed and connected.
    Tunnel(PendingTunnel),
    /// A plain-HTTP request to forward.
    Forward(Forward),
}

/// Where an allowed plain-HTTP request goes.
struct Forward {
    /// The rule that allowed it.
    allowed: Allowed,
    host: String,
    port: u16,
    /// Its path and query as sent.
    origin: String,
}

/// The answer to a forwarded request whose upstream connection failed.
fn upstream_failed(host: &str, port: u16, e: &dyn std::fmt::Display) -> Response<ProxyBody> {
    text(
        StatusCode::BAD_GATEWAY,
        format!(
            "cordon: the upstream {} failed: {e}\n",
            super::events::subject(host, port)
        ),
    )
}

/// A refusal of the proxy's own, `status` with `message`. The connection
/// closes with it: the request's body (if any) is left unread.
fn text(status: StatusCode, message: String) -> Response<ProxyBody> {
    let mut resp = text_response(status, message);
    resp.headers_mut()
        .insert(header::CONNECTION, HeaderValue::from_static("close"));
    resp
}

/// Whether the upstream ends its connection after this response: a
/// `Connection: close`, or HTTP/1.0 without `keep-alive`.
fn closes_after(version: Version, headers: &http::HeaderMap) -> bool {
    let has = |token: &str| {
        headers
            .get_all(header::CONNECTION)
            .iter()
            .filter_map(|v| v.to_str().ok())
            .flat_map(|v| v.split(','))
            .any(|t| t.trim().eq_ignore_ascii_case(token))
    };
    has("close") || (version <= Version::HTTP_10 && !has("keep-alive"))
}

/// The request as the upstream gets it: `origin` (the target's path and
/// query as sent, its bytes that are not ASCII `%XX`-escaped) with the
/// authority in Host, which was checked against it, and no hop-by-hop
/// headers (the upstream connection is the proxy's own, framed by hyper).
fn to_origin_form(parts: &mut http::request::Parts, origin: &str) -> Result<(), String> {
    parts.uri = Uri::try_from(encode_non_ascii(origin.as_bytes()).as_ref())
        .map_err(|_| "cordon: the request target has no valid origin-form\n".to_string())?;
    strip_hop_by_hop(&mut parts.headers);
    // Every `Proxy-*` header was meant for this proxy, not the upstream.
    let for_the_proxy: Vec<_> = parts
        .headers
        .keys()
        .filter(|name| name.as_str().starts_with("proxy-"))
        .cloned()
        .collect();
    for name in for_the_proxy {
        parts.headers.remove(name);
    }
    Ok(())
}

/// An absolute-form target as sent (`http://host[:port]/path?query`, the
/// scheme in any case, no userinfo): where it goes, and its origin-form
/// (`/path?query`, `/` at least). `http::Uri` reads its shape.
fn absolute_form(target: &str) -> Option<(String, u16, String)> {
    let shape = Uri::try_from(ascii_shape(target.as_bytes()).as_ref()).ok()?;
    let scheme = shape.scheme_str()?;
    if !scheme.eq_ignore_ascii_case("http") {
        return None;
    }
    // The same bytes, but those that are not ASCII: the same positions.
    let start = scheme.len() + "://".len();
    let end = start + shape.authority()?.as_str().len();
    let (host, port) = host_port(target.get(start..end)?, Some(80))?;
    let rest = target.get(end..)?;
    let origin = if rest.starts_with('/') {
        rest.to_string()
    } else {
        format!("/{rest}")
    };
    Some((host, port, origin))
}

/// `host:port`, `[v6]:port`, or `host` with `default_port` → (host, port),
/// the host as sent (an IDNA name is the policy's to normalise), without
/// brackets; `None` for userinfo (`user@host`), an empty host or port, a
/// port that is not 0-65535 in digits, or anything else
/// `http::uri::Authority` does not read.
fn host_port(authority: &str, default_port: Option<u16>) -> Option<(String, u16)> {
    if authority.contains('@') || authority.ends_with(':') {
        return None;
    }
    let shape = Authority::try_from(ascii_shape(authority.as_bytes()).as_ref()).ok()?;
    // Without userinfo the host starts the authority.
    let host = authority.get(..shape.host().len())?;
    let host = match host.strip_prefix('[') {
        Some(v6) => v6.strip_suffix(']')?,
        // Unbracketed colons are a v6 address without its port marked.
        None if host.contains(':') => return None,
        None => host,
    };
    // What follows the host is the port, read here: `Authority::port`
    // has none for digits past 65535, which would read as the default.
    let port = match authority.get(shape.host().len()..)? {
        "" => default_port?,
        rest => {
            let digits = rest.strip_prefix(':')?;
            if !digits.bytes().all(|b| b.is_ascii_digit()) {
                return None;
            }
            digits.parse().ok()?
        }
    };
    (!host.is_empty()).then(|| (host.to_string(), port))
}

/// Whether the request has exactly one Host header and it names the
/// target (its port defaulting to the target's): with two, the upstream
/// may route by the other.
fn host_header_matches(headers: &http::HeaderMap, host: &str, port: u16) -> bool {
    let mut hosts = headers.get_all(header::HOST).iter();
    let (Some(only), None) = (hosts.next(), hosts.next()) else {
        return false;
    };
    let named = std::str::from_utf8(only.as_bytes())
        .ok()
        .and_then(|h| host_port(h, Some(port)));
    named.is_some_and(|(h, p)| h.eq_ignore_ascii_case(host) && p == port)
}

/// The client's socket. Closing with unread input (a request body, a
/// pipelined request) makes the kernel send a reset, which can destroy
/// the response before the client reads it: shutting down sends the FIN,
/// then reads what the client still sends, within [`LINGER_BYTES`] and
/// [`LINGER_TIME`], before the close.
pub(super) struct Lingering {
    stream: TcpStream,
    linger: Option<(Pin<Box<tokio::time::Sleep>>, usize)>,
    done: bool,
}

impl Lingering {
    pub(super) fn new(stream: TcpStream) -> Lingering {
        Lingering {
            stream,
            linger: None,
            done: false,
        }
    }
}

impl AsyncRead for Lingering {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().stream).poll_read(cx, buf)
    }
}

impl AsyncWrite for Lingering {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.get_mut().stream).poll_write(cx, buf)
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().stream).poll_flush(cx)
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        if this.done {
            return Poll::Ready(Ok(()));
        }
        if this.linger.is_none() {
            std::task::ready!(Pin::new(&mut this.stream).poll_shutdown(cx))?;
            this.linger = Some((Box::pin(tokio::time::sleep(LINGER_TIME)), LINGER_BYTES));
        }
        let Some((deadline, left)) = this.linger.as_mut() else {
            return Poll::Ready(Ok(()));
        };
        let mut sink = [0u8; 8192];
        while deadline.as_mut().poll(cx).is_pending() {
            let mut read = ReadBuf::new(&mut sink);
            match Pin::new(&mut this.stream).poll_read(cx, &mut read) {
                Poll::Pending => return Poll::Pending,
                Poll::Ready(Ok(())) if !read.filled().is_empty() && read.filled().len() < *left => {
                    *left -= read.filled().len();
                }
                Poll::Ready(_) => break,
            }
        }
        this.done = true;
        Poll::Ready(Ok(()))
    }
}

/// Answers `status` with `body` on a connection the proxy does not serve
/// (over the cap), then closes it, lingering.
pub(super) async fn respond(
    client: TcpStream,
    status: StatusCode,
    body: &str,
) -> Result<(), ClientError> {
    let mut client = Lingering::new(client);
    let head = format!(
        "HTTP/1.1 {status}\r\nContent-Type: text/plain; charset=utf-8\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
        body.len()
    );
    client.write_all(head.as_bytes()).await?;
    client.write_all(body.as_bytes()).await?;
    client.shutdown().await?;
    Ok(())
}

/// Reads up to the end of a request head (of a client over the cap, read
/// before its refusal so that closing does not reset the answer).
pub(super) async fn read_head<S: AsyncRead + Unpin>(stream: &mut S) -> Result<(), ClientError> {
    let mut buf = Vec::with_capacity(4096);
    let mut chunk = [0u8; 4096];
    while !buf.windows(4).any(|w| w == b"\r\n\r\n") {
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
    Ok(())
}

#[cfg(test)]
#[path = "http_tests.rs"]
mod tests;
