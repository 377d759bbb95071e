//! Upgraded connections inside an inspected tunnel: only a well-formed
//! WebSocket handshake is relayed; after the upstream's 101 the client's
//! frames are unmasked and their payloads scanned for placeholders, and
//! the upstream's are masked (in whole, uncompressed frames only, on a
//! host that receives a value).

use std::io;

use bytes::Bytes;
use http::header::{self, HeaderMap};
use http::{Method, Response, StatusCode};
use http_body_util::BodyExt;
use hyper::body::Incoming;
use hyper_util::rt::TokioIo;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};

use super::body::ProxyBody;
use super::headers::swap_headers;
use super::session::Session;
use super::Refusal;
use crate::audit::Door;
use crate::credentials::inject::{Exfiltration, SpelledScan, Swaps};
use crate::policy::host::Target;

impl Session {
    /// Relays an upgraded connection (after the upstream's 101): what the
    /// upstream sends has every real value and its encodings masked with
    /// same-length masks (WebSocket frames count their bytes); the
    /// payloads of what the client sends are unmasked and scanned for
    /// placeholders that may not go to this host ([`ClientFrames`]), in
    /// every spelling the request scan reads (a find ends the connection
    /// and is recorded), and passed on as they come: nothing is held
    /// back, since a client waits for answers between messages. Placeholders
    /// allowed here are not swapped: the stream is no longer HTTP, and
    /// WebSocket frames from a client are XOR-masked anyway.
    pub(super) fn switch(
        &self,
        client_side: hyper::upgrade::OnUpgrade,
        resp: &mut Response<Incoming>,
        frames: Option<FrameCheck>,
    ) -> Response<ProxyBody> {
        let upstream_side = hyper::upgrade::on(&mut *resp);
        let secrets = &self.inspector.secrets;
        let down = secrets.response_swaps().same_length().stream();
        let up =
            ClientFrames::new(|| secrets.scan_spelled_for_body(&self.target, self.tunnel.port));
        let report = {
            let (inspector, audit) = (self.inspector.clone(), self.audit.clone());
            let (target, port, proto) = (self.target.clone(), self.tunnel.port, self.tunnel.proto);
            move |ex: &Exfiltration| {
                inspector.refuse_placeholder(
                    &audit,
                    &target,
                    port,
                    proto,
                    ex,
                    "sent on an upgraded connection to a host its entry does not name",
                );
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
        swap_headers(out.headers_mut(), &mask, &mut ignored);
        out
    }
}

/// The two directions of an upgraded connection (see `Session::switch`),
/// until both have ended, the client sent a forbidden placeholder
/// (`report`), or the upstream a frame `frames` refuses (`refuse_frame`).
pub(super) async fn relay_upgraded<C, U>(
    client: C,
    upstream: U,
    mut down: crate::credentials::inject::StreamSwap,
    mut up: ClientFrames,
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
            if let Some(stop) = up.feed(&buf[..n]) {
                return Ok(Some(stop));
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
            };
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
                match sent {
                    Ok(Some(ClientStop::Placeholder(ex))) => {
                        report(&ex);
                        return; // dropping both halves closes the connection
                    }
                    Ok(Some(ClientStop::Frame(why))) => {
                        refuse_frame(why);
                        return;
                    }
                    _ => {}
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

/// What is recorded when an upgraded stream carries what the scan of the
/// client's frames or the mask of the upstream's cannot follow (`why`).
pub(super) fn upgraded_refusal(target: &Target, port: u16, why: &str) -> Refusal {
    Refusal {
        door: Door::Credentials,
        rule: "a WebSocket cordon scans or masks carries frames it can read".into(),
        source: "built-in".into(),
        reason: why.to_string(),
        fix: Some(
            "nothing allows it: a WebSocket on an inspected host must send frames cordon can read (uncompressed, and whole messages down from a host that receives a real value)"
                .into(),
        ),
        message: format!(
            "cordon: closed a WebSocket from {}: {why}; cordon reads every frame it scans (the client's, on a host a placeholder may not go to) or masks (the upstream's, on a host that receives a real value), so only uncompressed frames pass, and down from a host that receives a value only whole messages, so that no value gets past the scan or the mask\n",
            target.with_port(port)
        ),
    }
}

/// Checks that an upgrade request is a WebSocket handshake (RFC 6455
/// 4.1): `GET`, `Upgrade: websocket` alone, one `Sec-WebSocket-Key` that is
/// the base64 of 16 bytes, `Sec-WebSocket-Version: 13`. Anything else
/// (`h2c`, a list, another protocol) would carry traffic past the rules.
pub(super) fn websocket_handshake(
    method: &Method,
    headers: &HeaderMap,
) -> Result<(), &'static str> {
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

/// Follows the WebSocket frames (RFC 6455 5.2) an upstream sends down an
/// upgraded connection to a host that receives a real value. The mask
/// over the stream finds a value only inside one frame's payload, as
/// sent: a compressed frame (a reserved bit set, permessage-deflate) or a
/// message split into fragments would carry it past. Such frames are
/// refused, as are masked frames (a server never masks), so a value comes
/// down only whole and in clear, where the mask finds it.
#[derive(Debug, Default)]
pub struct FrameCheck {
    /// The current frame header, collected so far.
    header: Vec<u8>,
    /// Payload bytes of the current frame still to pass.
    payload_left: u64,
}

impl FrameCheck {
    /// Follows `data` (the next bytes from the upstream); an error names
    /// the first frame that may not pass.
    pub fn check(&mut self, mut data: &[u8]) -> Result<(), &'static str> {
        while !data.is_empty() {
            if self.payload_left > 0 {
                let n = data
                    .len()
                    .min(usize::try_from(self.payload_left).unwrap_or(usize::MAX));
                self.payload_left -= n as u64;
                data = &data[n..];
                continue;
            }
            self.header.push(data[0]);
            data = &data[1..];
            let Some(len) = self.frame_header()? else {
                continue;
            };
            self.payload_left = len;
            self.header.clear();
        }
        Ok(())
    }

    /// The payload length once the header is complete, `None` until then.
    fn frame_header(&self) -> Result<Option<u64>, &'static str> {
        let h = &self.header;
        let first = h[0];
        if first & 0x70 != 0 {
            return Err("a frame with a reserved bit set (a compressed or extended frame)");
        }
        let opcode = first & 0x0f;
        if first & 0x80 == 0 || opcode == 0 {
            return Err("a fragmented message (a frame without FIN, or a continuation)");
        }
        let Some(&second) = h.get(1) else {
            return Ok(None);
        };
        if second & 0x80 != 0 {
            return Err("a masked frame from the server");
        }
        let (len, need) = match second & 0x7f {
            126 => (None, 4),
            127 => (None, 10),
            n => (Some(u64::from(n)), 2),
        };
        if h.len() < need {
            return Ok(None);
        }
        Ok(Some(len.unwrap_or_else(|| {
            h[2..need]
                .iter()
                .fold(0u64, |acc, b| acc << 8 | u64::from(*b))
        })))
    }
}

/// Why [`ClientFrames`] ends an upgraded connection.
#[derive(Debug)]
pub enum ClientStop {
    /// A client frame's payload carries a placeholder that may not go to
    /// the host.
    Placeholder(Exfiltration),
    /// A client frame the scan cannot read.
    Frame(&'static str),
}

/// Follows the WebSocket frames (RFC 6455 5.2) a client sends up an
/// upgraded connection and scans their payloads unmasked, as a server
/// reads them: every client masks its frames with a key of its own, so
/// the raw bytes hide what they carry. Data frames' payloads are one
/// stream across frames and fragments (a server joins a message's
/// fragments); control frames', which may come between two fragments,
/// are another; and the bytes as they come a third (what is not a frame,
/// or not masked, is found as sent). With placeholders to look for, no extension was offered
/// to the upstream, so a frame with a reserved bit set (compressed) is
/// one the scan cannot read: it ends the connection.
pub struct ClientFrames {
    /// The bytes as they come.
    raw: SpelledScan,
    /// Data frames' payloads.
    data: SpelledScan,
    /// Control frames' payloads.
    control: SpelledScan,
    /// The current frame header, collected so far.
    header: Vec<u8>,
    /// The current frame's masking key (all zero when not masked).
    mask: [u8; 4],
    /// Whether the current frame is a control frame.
    is_control: bool,
    /// Payload bytes of the current frame still to come.
    payload_left: u64,
    /// Where in `mask` the payload's next byte is.
    mask_at: usize,
    /// The payload bytes of one read, unmasked.
    unmasked: Vec<u8>,
}

impl ClientFrames {
    /// Scans client frames with scans `scan` makes (each for the same
    /// placeholders).
    pub fn new(scan: impl Fn() -> SpelledScan) -> ClientFrames {
        ClientFrames {
            raw: scan(),
            data: scan(),
            control: scan(),
            header: Vec::new(),
            mask: [0; 4],
            is_control: false,
            payload_left: 0,
            mask_at: 0,
            unmasked: Vec::new(),
        }
    }

    /// Takes the next bytes from the client: why the connection must end,
    /// if it must.
    pub fn feed(&mut self, mut data: &[u8]) -> Option<ClientStop> {
        if self.data.is_empty() {
            return None;
        }
        if let Some(ex) = self.raw.feed(data) {
            return Some(ClientStop::Placeholder(ex));
        }
        while !data.is_empty() {
            if self.payload_left > 0 {
                let n = data
                    .len()
                    .min(usize::try_from(self.payload_left).unwrap_or(usize::MAX));
                let (payload, rest) = data.split_at(n);
                self.payload_left -= n as u64;
                data = rest;
                self.unmasked.clear();
                let key = self.mask;
                let at = self.mask_at;
                self.unmasked.extend(
                    payload
                        .iter()
                        .enumerate()
                        .map(|(i, b)| b ^ key[(at + i) % 4]),
                );
                self.mask_at = (at + n) % 4;
                let scan = if self.is_control {
                    &mut self.control
                } else {
                    &mut self.data
                };
                if let Some(ex) = scan.feed(&self.unmasked) {
                    return Some(ClientStop::Placeholder(ex));
                }
                continue;
            }
            self.header.push(data[0]);
            data = &data[1..];
            match self.frame_header() {
                Err(why) => return Some(ClientStop::Frame(why)),
                Ok(None) => {}
                Ok(Some(len)) => {
                    self.payload_left = len;
                    self.mask_at = 0;
                    self.header.clear();
                }
            }
        }
        None
    }

    /// The payload length once the header is complete (the key and kind
    /// taken), `None` until then.
    fn frame_header(&mut self) -> Result<Option<u64>, &'static str> {
        let h = &self.header;
        if h[0] & 0x70 != 0 {
            return Err("a client frame with a reserved bit set (compressed or extended: its payload cannot be scanned)");
        }
        let Some(&second) = h.get(1) else {
            return Ok(None);
        };
        let (ext, key) = (
            match second & 0x7f {
                126 => 2,
                127 => 8,
                _ => 0,
            },
            if second & 0x80 != 0 { 4 } else { 0 },
        );
        if h.len() < 2 + ext + key {
            return Ok(None);
        }
        let len = match ext {
            0 => u64::from(second & 0x7f),
            _ => h[2..2 + ext]
                .iter()
                .fold(0u64, |acc, b| acc << 8 | u64::from(*b)),
        };
        self.mask = [0; 4];
        self.mask[..key].copy_from_slice(&h[2 + ext..2 + ext + key]);
        self.is_control = h[0] & 0x08 != 0;
        Ok(Some(len))
    }
}

#[cfg(test)]
#[path = "websocket_tests.rs"]
mod tests;
