//! The raw request framing of an inspected HTTP/1.1 tunnel, checked before
//! hyper reads it.
//!
//! hyper resolves some ambiguous framings the way RFC 9112 allows instead
//! of refusing them (`Transfer-Encoding` overrides a `Content-Length`,
//! which it drops; identical repeated lengths are one; a bare LF ends a
//! line), and what it parsed no longer shows them. [`HeadGuard`] sits
//! between the client's TLS stream and hyper: it holds each request head
//! until it is complete, checks it as the plain-HTTP proxy does
//! ([`check_head`]), follows the body's framing to find the next head, and
//! hands hyper only heads that passed. A head that fails is replaced by a
//! request line hyper itself refuses (400, and the connection closes), so
//! the client gets the same status on both paths.

use std::io;
use std::pin::Pin;
use std::task::{Context, Poll};

use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};

use crate::net::proxy::{check_head, target_has_fragment, BodyFraming};

/// The longest request head held back (as the plain-HTTP proxy reads).
const MAX_HEAD: usize = 64 * 1024;
/// The longest chunk-size or trailer line followed.
const MAX_LINE: usize = 8 * 1024;
/// What hyper is given in place of a head that failed: a method that is
/// not a token, which it answers with 400 before closing.
const REFUSED: &[u8] = b"\x01 / HTTP/1.1\r\n\r\n";

/// Where the guard is in the client's byte stream.
#[derive(Debug)]
enum State {
    /// Collecting a request head (held back until complete).
    Head(Vec<u8>),
    /// Inside a body of known length: this many bytes left.
    Length(u64),
    /// A chunk-size line, collected so far.
    ChunkSize(Vec<u8>),
    /// Inside a chunk's data: this many bytes left, then its CRLF.
    ChunkData(u64),
    /// The CRLF after a chunk's data: this many bytes left.
    ChunkEnd(u8),
    /// The trailer section after the last chunk: the current line.
    Trailers(Vec<u8>),
    /// After an upgrade (or CONNECT) request, or a refusal: no more HTTP
    /// to follow.
    Through,
}

/// A client stream whose request heads are checked before hyper sees
/// them; writes pass through untouched.
pub struct HeadGuard<S> {
    inner: S,
    state: State,
    /// Checked bytes not yet taken by hyper.
    ready: Vec<u8>,
    /// Set once a head failed: nothing more is read from the client.
    refused: bool,
}

impl<S> HeadGuard<S> {
    /// Guards `inner`, which starts at a request head.
    pub fn new(inner: S) -> HeadGuard<S> {
        HeadGuard {
            inner,
            state: State::Head(Vec::new()),
            ready: Vec::new(),
            refused: false,
        }
    }

    /// Follows `data` (just read from the client) through the framing,
    /// moving what may go to hyper into `ready`.
    fn feed(&mut self, data: &[u8]) {
        let mut at = 0;
        while at < data.len() && !self.refused {
            let rest = &data[at..];
            let state = std::mem::replace(&mut self.state, State::Through);
            let (state, used) = self.step(state, rest);
            self.state = state;
            at += used;
        }
    }

    /// One step through `data` from `state`: the next state and how many
    /// bytes of `data` it used (at least one, or all when they only
    /// extend the state).
    fn step(&mut self, state: State, data: &[u8]) -> (State, usize) {
        match state {
            State::Through => {
                self.ready.extend_from_slice(data);
                (State::Through, data.len())
            }
            State::Head(head) if head.is_empty() && (data[0] == b'\r' || data[0] == b'\n') => {
                // Empty lines before a request line are allowed and ignored.
                self.ready.push(data[0]);
                (State::Head(head), 1)
            }
            State::Head(mut head) => {
                let before = head.len();
                head.extend_from_slice(data);
                // The end may straddle the previous read.
                let Some(end) = head_end(&head, before.saturating_sub(2)) else {
                    if head.len() > MAX_HEAD {
                        return (self.refuse(), data.len());
                    }
                    return (State::Head(head), data.len());
                };
                head.truncate(end);
                let used = end - before;
                let Ok(framing) = check_head(&head) else {
                    return (self.refuse(), used);
                };
                // hyper would drop a fragment silently; refused as on the
                // plain-HTTP path, so both answer the same.
                if target_has_fragment(&head) {
                    return (self.refuse(), used);
                }
                self.ready.extend_from_slice(&head);
                let next = if leaves_http(&head) {
                    State::Through
                } else {
                    match framing {
                        BodyFraming::Empty | BodyFraming::Length(0) => State::Head(Vec::new()),
                        BodyFraming::Length(n) => State::Length(n),
                        BodyFraming::Chunked => State::ChunkSize(Vec::new()),
                    }
                };
                (next, used)
            }
            State::Length(left) => {
                let n = Self::pass(&mut self.ready, data, left);
                let left = left - n as u64;
                let next = if left == 0 {
                    State::Head(Vec::new())
                } else {
                    State::Length(left)
                };
                (next, n)
            }
            State::ChunkData(left) => {
                let n = Self::pass(&mut self.ready, data, left);
                let left = left - n as u64;
                let next = if left == 0 {
                    State::ChunkEnd(2)
                } else {
                    State::ChunkData(left)
                };
                (next, n)
            }
            State::ChunkEnd(left) => {
                // Two bytes, CRLF, possibly split across reads.
                let expected: &[u8] = if left == 2 { b"\r\n" } else { b"\n" };
                let n = data.len().min(usize::from(left));
                if data[..n] != expected[..n] {
                    return (self.refuse(), n);
                }
                self.ready.extend_from_slice(&data[..n]);
                let left = left - n as u8;
                let next = if left == 0 {
                    State::ChunkSize(Vec::new())
                } else {
                    State::ChunkEnd(left)
                };
                (next, n)
            }
            State::ChunkSize(line) => self.line(line, data, true),
            State::Trailers(line) => self.line(line, data, false),
        }
    }

    /// Hands on up to `left` bytes of `data`; how many.
    fn pass(ready: &mut Vec<u8>, data: &[u8], left: u64) -> usize {
        let n = data.len().min(usize::try_from(left).unwrap_or(usize::MAX));
        ready.extend_from_slice(&data[..n]);
        n
    }

    /// A chunk-size line (`size` true) or a trailer line, continued with
    /// `data`: handed on as it comes, judged once complete.
    fn line(&mut self, mut line: Vec<u8>, data: &[u8], size: bool) -> (State, usize) {
        let (used, complete) = match memchr::memchr(b'\n', data) {
            Some(i) => (i + 1, true),
            None => (data.len(), false),
        };
        line.extend_from_slice(&data[..used]);
        if line.len() > MAX_LINE {
            return (self.refuse(), used);
        }
        self.ready.extend_from_slice(&data[..used]);
        if !complete {
            let state = if size {
                State::ChunkSize(line)
            } else {
                State::Trailers(line)
            };
            return (state, used);
        }
        let Some(text) = line.strip_suffix(b"\r\n") else {
            return (self.refuse(), used); // a bare LF ends a chunk line
        };
        let next = match (size, chunk_size(text)) {
            (true, Some(0)) => State::Trailers(Vec::new()),
            (true, Some(n)) => State::ChunkData(n),
            (true, None) => return (self.refuse(), used),
            // An empty line ends the trailers, and the message.
            (false, _) if text.is_empty() => State::Head(Vec::new()),
            (false, _) => State::Trailers(Vec::new()),
        };
        (next, used)
    }

    /// Gives hyper a request it refuses in place of the failed head, and
    /// reads nothing more from the client; the state to go on in.
    fn refuse(&mut self) -> State {
        self.ready.extend_from_slice(REFUSED);
        self.refused = true;
        State::Through
    }
}

/// Where a head that starts at 0 ends (just past its empty line), looking
/// from `from` on: an LF followed by an LF, or by CR LF. A head that ends
/// with bare LFs is found too, so that it is refused rather than held.
fn head_end(buf: &[u8], from: usize) -> Option<usize> {
    memchr::memchr_iter(b'\n', &buf[from.min(buf.len())..])
        .map(|i| i + from)
        .find_map(|i| match &buf[i + 1..] {
            [b'\n', ..] => Some(i + 2),
            [b'\r', b'\n', ..] => Some(i + 3),
            _ => None,
        })
}

/// Whether a request leaves HTTP behind once answered: an `Upgrade`
/// header (WebSocket and the like) or `CONNECT`.
fn leaves_http(head: &[u8]) -> bool {
    let mut lines = head.split(|b| *b == b'\n');
    let connect = lines.next().is_some_and(|l| l.starts_with(b"CONNECT "));
    connect
        || lines.any(|l| {
            l.get(..8)
                .is_some_and(|name| name.eq_ignore_ascii_case(b"upgrade:"))
        })
}

/// The size of a chunk from its line (hex digits, then optional
/// extensions after `;`); `None` if it is not one.
fn chunk_size(line: &[u8]) -> Option<u64> {
    let end = line
        .iter()
        .position(|b| *b == b';' || *b == b' ' || *b == b'\t')
        .unwrap_or(line.len());
    let digits = &line[..end];
    if digits.is_empty() || digits.len() > 15 || !digits.iter().all(u8::is_ascii_hexdigit) {
        return None;
    }
    u64::from_str_radix(std::str::from_utf8(digits).ok()?, 16).ok()
}

impl<S: AsyncRead + Unpin> AsyncRead for HeadGuard<S> {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        loop {
            if !this.ready.is_empty() {
                let n = this.ready.len().min(buf.remaining());
                buf.put_slice(&this.ready[..n]);
                this.ready.drain(..n);
                return Poll::Ready(Ok(()));
            }
            if this.refused {
                return Poll::Ready(Ok(())); // end of stream
            }
            if let State::Length(left) | State::ChunkData(left) = this.state {
                // Body bytes go straight into hyper's buffer (nothing in
                // them is judged); whatever follows the body is taken back
                // out and followed like any other read.
                let before = buf.filled().len();
                match Pin::new(&mut this.inner).poll_read(cx, buf) {
                    Poll::Pending => return Poll::Pending,
                    Poll::Ready(Err(e)) => return Poll::Ready(Err(e)),
                    Poll::Ready(Ok(())) => {}
                }
                let got = buf.filled().len() - before;
                if got == 0 {
                    this.state = State::Through;
                    return Poll::Ready(Ok(()));
                }
                let body = got.min(usize::try_from(left).unwrap_or(usize::MAX));
                let after = buf.filled()[before + body..].to_vec();
                buf.set_filled(before + body);
                let left = left - body as u64;
                this.state = match (&this.state, left) {
                    (State::Length(_), 0) => State::Head(Vec::new()),
                    (State::Length(_), _) => State::Length(left),
                    (_, 0) => State::ChunkEnd(2),
                    _ => State::ChunkData(left),
                };
                this.feed(&after);
                return Poll::Ready(Ok(()));
            }
            let mut chunk = [0u8; 16 * 1024];
            let mut read = ReadBuf::new(&mut chunk);
            match Pin::new(&mut this.inner).poll_read(cx, &mut read) {
                Poll::Pending => return Poll::Pending,
                Poll::Ready(Err(e)) => return Poll::Ready(Err(e)),
                Poll::Ready(Ok(())) if read.filled().is_empty() => {
                    // The end: an unfinished head goes as it is, for hyper
                    // to answer or drop.
                    if let State::Head(head) = &mut this.state {
                        this.ready.append(head);
                    }
                    this.state = State::Through;
                    if this.ready.is_empty() {
                        return Poll::Ready(Ok(()));
                    }
                }
                Poll::Ready(Ok(())) => {
                    let n = read.filled().len();
                    this.feed(&chunk[..n]);
                }
            }
        }
    }
}

impl<S: AsyncWrite + Unpin> AsyncWrite for HeadGuard<S> {
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

#[cfg(test)]
mod tests {
    use super::*;

    /// What hyper would be given for `input`, fed in pieces of `size`.
    fn passed(input: &[u8], size: usize) -> Vec<u8> {
        let mut guard = HeadGuard::new(());
        let mut out = Vec::new();
        for piece in input.chunks(size) {
            guard.feed(piece);
            out.append(&mut guard.ready);
        }
        out
    }

    #[test]
    fn good_requests_pass_whole_in_any_pieces() {
        let good: &[u8] = b"\r\nPOST /a HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\n\r\nhello\
            POST /b HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n\
            5;ext=1\r\nhello\r\n0\r\nX-Trailer: t\r\n\r\n\
            GET /c HTTP/1.1\r\nHost: x\r\n\r\n";
        for size in 1..good.len() {
            assert_eq!(passed(good, size), good, "pieces of {size}");
        }
    }

    #[test]
    fn an_ambiguous_head_is_replaced_by_a_refused_one() {
        let first: &[u8] = b"GET /ok HTTP/1.1\r\nHost: x\r\n\r\n";
        let bad: &[u8] = b"POST /b HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n";
        let mut input = first.to_vec();
        input.extend_from_slice(bad);
        for size in [1, 7, input.len()] {
            let mut expected = first.to_vec();
            expected.extend_from_slice(REFUSED);
            assert_eq!(passed(&input, size), expected, "pieces of {size}");
        }
        // A head ended by bare LFs is refused, not held.
        assert_eq!(passed(b"GET / HTTP/1.1\nHost: x\n\n", 2), REFUSED);
        // A bare LF in a chunk line, or a bad size, too.
        let chunked = b"POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n5\nhello\r\n0\r\n\r\n";
        assert!(passed(chunked, 3).ends_with(REFUSED));
        let chunked =
            b"POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n+5\r\nhello\r\n0\r\n\r\n";
        assert!(passed(chunked, 3).ends_with(REFUSED));
    }

    #[test]
    fn reads_through_the_stream_give_hyper_what_feeding_does() {
        use tokio::io::AsyncReadExt;
        let input: Vec<u8> = [
            &b"POST /a HTTP/1.1\r\nContent-Length: 70000\r\n\r\n"[..],
            &vec![b'x'; 70000],
            b"POST /b HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n4\r\nabcd\r\n0\r\n\r\n",
            b"GET /c HTTP/1.1\r\nContent-Length: 1\r\nContent-Length: 1\r\n\r\nx",
        ]
        .concat();
        let runtime = tokio::runtime::Builder::new_current_thread()
            .build()
            .unwrap();
        let out = runtime.block_on(async {
            let (mut client, server) = tokio::io::duplex(4096);
            let writer = async {
                use tokio::io::AsyncWriteExt;
                client.write_all(&input).await.unwrap();
                client.shutdown().await.unwrap();
                client
            };
            let reader = async {
                let mut guard = HeadGuard::new(server);
                let mut out = Vec::new();
                let mut buf = [0u8; 3000];
                loop {
                    let n = guard.read(&mut buf).await.unwrap();
                    if n == 0 {
                        return out;
                    }
                    out.extend_from_slice(&buf[..n]);
                }
            };
            let (_, out) = tokio::join!(writer, reader);
            out
        });
        let good = input.len()
            - b"GET /c HTTP/1.1\r\nContent-Length: 1\r\nContent-Length: 1\r\n\r\nx".len();
        assert_eq!(&out[..good], &input[..good]);
        assert_eq!(&out[good..], REFUSED);
    }

    #[test]
    fn after_an_upgrade_request_bytes_pass_as_they_are() {
        let input: &[u8] =
            b"GET /ws HTTP/1.1\r\nHost: x\r\nUpgrade: websocket\r\nConnection: upgrade\r\n\r\n\x81\x05hello\n\n\r";
        assert_eq!(passed(input, 4), input);
    }

    #[test]
    fn websocket_frames_pass_whole_and_in_clear_only() {
        let mut ok = FrameCheck::default();
        // A text frame, a 300-byte binary frame split across reads, a ping.
        let mut bytes = vec![0x81, 3, b'a', b'b', b'c', 0x82, 126, 1, 44];
        bytes.extend(vec![0u8; 300]);
        bytes.extend([0x89, 0]);
        for piece in bytes.chunks(7) {
            assert!(ok.check(piece).is_ok());
        }
        for bad in [
            &[0xc1, 1, b'x'][..], // RSV1: permessage-deflate
            &[0x01, 1, b'x'],     // FIN clear: first fragment
            &[0x80, 1, b'x'],     // continuation
            &[0x81, 0x81, 0, 0, 0, 0, b'x'],
        ] {
            let mut check = FrameCheck::default();
            assert!(check.check(&[0x81, 1, b'y']).is_ok());
            assert!(check.check(bad).is_err(), "{bad:?}");
        }
    }
}
