//! One inspected tunnel's HTTP side: each request checked against the
//! tunnel's host (authority), its HTTP rules and upgrade rules, then its
//! placeholders swapped or refused and its body swapped or scanned,
//! before it goes upstream.

use std::convert::Infallible;
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use http::header::{self, HeaderValue};
use http::{HeaderMap, Method, Request, Response, StatusCode, Uri};
use http_body_util::BodyExt;
use hyper::body::Incoming;

use super::body::{box_error, collect_capped, exact_len, text_response, ProxyBody, Whole};
use super::budget::BODY_CAP;
use super::headers::{mentions, strip_hop_by_hop, swap_headers, swap_headers_by};
use super::websocket::FrameCheck;
use super::websocket::{upgraded_refusal, websocket_handshake};
use super::{Inspector, Refusal, Tunnel};
use crate::audit::{Auditor, Door};
use crate::credentials::inject::{Exfiltration, Swaps};
use crate::net::proxy::framing::{body_framing, framing_refusal};
use crate::net::proxy::request_body::{take_fault, Fault, OnPlaceholder, RequestBody};
use crate::policy::host::{normalize, Target};

/// Time an HTTP/1.1 upstream connection has to become ready for the next
/// request (it is busy only while the previous response is read).
pub(super) const UPSTREAM_READY: Duration = Duration::from_secs(30);

/// The upstream side of one inspected tunnel.
pub(super) enum Upstream {
    H1(tokio::sync::Mutex<hyper::client::conn::http1::SendRequest<ProxyBody>>),
    H2(hyper::client::conn::http2::SendRequest<ProxyBody>),
}

/// One inspected tunnel's HTTP side.
pub(super) struct Session {
    pub(super) inspector: Arc<Inspector>,
    pub(super) audit: Auditor,
    pub(super) target: Target,
    pub(super) tunnel: Tunnel,
    pub(super) upstream: Upstream,
    /// Upgraded connections (WebSocket, ...) being relayed: the tunnel
    /// lasts until they end.
    pub(super) upgraded: std::sync::Mutex<Vec<tokio::task::JoinHandle<()>>>,
}

// The error side of these results is the response to send instead (a
// refusal, built once per refused request), not an error to propagate.
#[allow(clippy::result_large_err)]
impl Session {
    pub(super) async fn handle(
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
    pub(super) fn over_budget(&self, n: u64) -> Response<ProxyBody> {
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

    pub(super) fn refuse(&self, r: Refusal) -> Response<ProxyBody> {
        self.refuse_with(StatusCode::FORBIDDEN, r)
    }

    /// Records the refusal `r` and answers it with `status`.
    pub(super) fn refuse_with(&self, status: StatusCode, r: Refusal) -> Response<ProxyBody> {
        self.inspector.record_refusal(
            &self.audit,
            &self.target,
            self.tunnel.port,
            self.tunnel.proto,
            &r,
        );
        text_response(status, r.message)
    }

    /// The 502 for an upgrade whose answer cordon cannot mask (`why`),
    /// recorded; the connection closes with it.
    pub(super) fn refuse_upgraded(&self, why: &str) -> Response<ProxyBody> {
        let (target, port) = (&self.target, self.tunnel.port);
        let r = upgraded_refusal(target, port, why);
        self.inspector
            .record_refusal(&self.audit, target, port, self.tunnel.proto, &r);
        text_response(StatusCode::BAD_GATEWAY, r.message)
    }

    /// The refusal of an upgrade that is not a well-formed WebSocket
    /// handshake (`why` says what is wrong).
    pub(super) fn protocol_refusal(&self, why: &str) -> Refusal {
        Refusal {
            door: Door::Network,
            rule: "inside inspected tunnels only WebSocket upgrades are relayed".into(),
            source: "built-in".into(),
            reason: why.to_string(),
            fix: Some("nothing allows it: inside inspected tunnels only WebSocket upgrades are relayed".into()),
            message: format!(
                "cordon: blocked an upgrade inside the tunnel to {}: {why}; only WebSocket (RFC 6455: Upgrade: websocket, a Sec-WebSocket-Key, Sec-WebSocket-Version: 13) is relayed, since after the switch no other protocol can be checked\n",
                self.target.with_port(self.tunnel.port)
            ),
        }
    }

    /// The authority a request names must be the tunnel's host and port:
    /// at most one Host header (servers disagree on which of two counts),
    /// readable, and no userinfo (`user@host`) in it or the target.
    pub(super) fn check_authority(
        &self,
        uri: &Uri,
        headers: &HeaderMap,
    ) -> Result<(), Response<ProxyBody>> {
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
            fix: Some("nothing allows it: a request inside a tunnel names the tunnel's host in its Host header".into()),
            message: format!(
                "cordon: blocked a request inside the tunnel to {}: its Host ({}) names another host\n",
                self.target.with_port(port),
                named.join(", ")
            ),
        }))
    }

    pub(super) async fn forward(
        &self,
        req: Request<Incoming>,
    ) -> Result<Response<ProxyBody>, Response<ProxyBody>> {
        let inspector = &self.inspector;
        let (mut parts, body) = req.into_parts();
        // On a host with HTTP rules, a request with a body ends an HTTP/1.1
        // tunnel after its answer: an upstream that ignores a GET's body
        // reads it as the start of its next request, which the tunnel's
        // next request would complete, and the answer to that request the
        // rules never judged would come back as the next one's. (HTTP/2
        // frames every request; without rules every request is admitted
        // anyway, and its body is scanned for placeholders all the same.)
        let ends_tunnel = matches!(self.upstream, Upstream::H1(_))
            && !hyper::body::Body::is_end_stream(&body)
            && inspector.policy.has_rules(&self.target, self.tunnel.port);
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
        // Request line (method included) and headers: no placeholder that may not go to
        // this host, however spelled (as the plain path reads them); those
        // that may are swapped where spelled as they are.
        let uri_text = parts.uri.to_string();
        let forbidden = inspector
            .secrets
            .scan_spelled_for(&self.target, port)
            .feed_head(
                parts.method.as_str().as_bytes(),
                uri_text.as_bytes(),
                &parts.headers,
            );
        if let Some(ex) = forbidden {
            return Err(exfil(&ex));
        }
        let body_swaps = inspector.secrets.body_swaps(&self.target, port);
        let mut learned = Swaps::default();
        let mut used: Vec<String> = inspector
            .secrets
            .iter()
            .filter(|s| s.allowed_for(&self.target, port))
            .filter(|s| mentions(s.placeholder.as_bytes(), &parts.uri, &parts.headers))
            .map(|s| s.name.clone())
            .collect();
        if let Some(new) = body_swaps.apply(uri_text.as_bytes()) {
            parts.uri = Uri::try_from(new).map_err(|_| {
                text_response(
                    StatusCode::BAD_REQUEST,
                    "cordon: the request target is invalid once the placeholder is swapped\n"
                        .into(),
                )
            })?;
        }
        let (target, secrets) = (&self.target, &inspector.secrets);
        swap_headers_by(
            &mut parts.headers,
            |name| secrets.header_swaps(name, target, port),
            &mut learned,
        );
        // What is left is a placeholder where its value may not go: one
        // kept to named headers, in another header or the target.
        let left = inspector
            .secrets
            .scan_spelled_for_body(&self.target, port)
            .feed_head(
                parts.method.as_str().as_bytes(),
                parts.uri.to_string().as_bytes(),
                &parts.headers,
            );
        if let Some(ex) = left {
            return Err(exfil(&ex));
        }
        // An HTTP/1.1 upgrade (WebSocket): its Connection and Upgrade
        // headers go through, and so, after a 101, do the raw bytes.
        let upgrade = parts
            .extensions
            .remove::<hyper::upgrade::OnUpgrade>()
            .zip(parts.headers.get(header::UPGRADE).cloned());
        strip_hop_by_hop(&mut parts.headers);
        // On a host that receives a value, no WebSocket extension: a
        // compressed frame would carry a value past the mask; nor on one a
        // placeholder may not go to, where it would carry one past the scan.
        let receives = inspector.secrets.targets(&self.target, port);
        let scanned = inspector
            .secrets
            .iter()
            .any(|s| !s.allowed_for(&self.target, port));
        if let Some((_, protocol)) = &upgrade {
            parts
                .headers
                .insert(header::CONNECTION, HeaderValue::from_static("upgrade"));
            parts.headers.insert(header::UPGRADE, protocol.clone());
            if receives || scanned {
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
        // Why a streamed body was cut short (a placeholder, the client's
        // framing): the answer for the client in place of the upstream's
        // failure.
        let mut fault: Option<Fault> = None;
        let body: ProxyBody = match len {
            Some(n) if n <= BODY_CAP => {
                let Some(reserved) = inspector.buffers.reserve(n) else {
                    return Err(self.over_budget(n));
                };
                let body = body.map_err(box_error).boxed();
                let (bytes, mut trailers) = collect_capped(body, n).await.ok_or_else(|| {
                    text_response(
                        StatusCode::BAD_REQUEST,
                        "cordon: the request body did not match its length\n".into(),
                    )
                })?;
                let mut scan = inspector.secrets.scan_spelled_for_body(&self.target, port);
                let forbidden = scan
                    .feed(&bytes)
                    .or_else(|| trailers.as_ref().and_then(|t| scan.feed_headers(t)));
                if let Some(ex) = forbidden {
                    return Err(exfil(&ex));
                }
                if let Some(t) = trailers.as_mut() {
                    swap_headers(t, &body_swaps, &mut learned);
                }
                let out = match body_swaps.apply(&bytes) {
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
            _ if inspector.secrets.is_empty() => body.map_err(box_error).boxed(),
            _ => {
                // Too large (or of unknown length) to swap in place: scan
                // only, so the length stays right; the scan holds back only
                // a placeholder's random part begun.
                let audit = self.audit.clone();
                let (target, proto) = (self.target.clone(), self.tunnel.proto);
                let refusal_of: OnPlaceholder = {
                    let inspector = inspector.clone();
                    Box::new(move |ex: &Exfiltration| {
                        inspector.refuse_placeholder(
                            &audit,
                            &target,
                            port,
                            proto,
                            ex,
                            "not a host its entry names",
                        )
                    })
                };
                let scan = inspector.secrets.scan_spelled_for_body(&self.target, port);
                let body = RequestBody::new(body, Some((scan, refusal_of)));
                fault = Some(body.fault());
                body.boxed()
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
            if let Some((status, message)) = fault.as_ref().and_then(take_fault) {
                return text_response(status, message);
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
                if (receives || scanned)
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
        let mut resp = self
            .mask_response(resp, &method, learned.reversed(), !used.is_empty())
            .await;
        if ends_tunnel {
            resp.headers_mut()
                .insert(header::CONNECTION, HeaderValue::from_static("close"));
        }
        Ok(resp)
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
