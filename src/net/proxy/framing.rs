//! Request framing, checked on the raw bytes before hyper reads them, on
//! both HTTP paths (plain HTTP through the proxy and inspected tunnels).
//!
//! hyper resolves some ambiguous framings the way RFC 9112 allows instead
//! of refusing them (`Transfer-Encoding` overrides a `Content-Length`,
//! which it drops; identical repeated lengths are one; a bare LF ends a
//! line), and what it parsed no longer shows them. [`HeadGuard`] sits
//! between the client's stream and hyper: it holds each request head
//! until it is complete, checks it ([`check_head`]), follows the body's
//! framing to find the next head, and hands hyper only heads that passed.
//! A head that fails is replaced by one that makes hyper answer 400 and
//! close: a request line hyper itself refuses, or (with a [`HeadLog`]) a
//! request the proxy answers with the refusal's words.

use std::borrow::Cow;
use std::collections::VecDeque;
use std::io;
use std::pin::Pin;
use std::sync::{Arc, Mutex, PoisonError};
use std::task::{Context, Poll};

use tokio::io::{AsyncRead, ReadBuf};

/// The longest request head held back.
pub(crate) const MAX_HEAD: usize = 64 * 1024;
/// The longest chunk-size or trailer line followed.
const MAX_LINE: usize = 8 * 1024;
/// What hyper is given in place of a head that failed: a method that is
/// not a token, which it answers with 400 before closing.
const REFUSED: &[u8] = b"\x01 / HTTP/1.1\r\n\r\n";
/// With a [`HeadLog`], what hyper is given in place of a head that failed:
/// a request it passes on, which the log says to refuse.
const ANSWERED: &[u8] = b"GET / HTTP/1.1\r\n\r\n";
/// The refusal of a head longer than [`MAX_HEAD`].
const HEAD_TOO_LARGE: &str = "cordon: refused a request whose head is larger than 64 KiB\n";

/// What a guard with a [`HeadLog`] passed to hyper, one entry per request
/// head, in order.
#[derive(Debug, PartialEq, Eq)]
pub enum Checked {
    /// A head that passed, as the client sent it.
    Head(Vec<u8>),
    /// A head that failed, replaced by a request hyper passes on; the
    /// words of the 400 that must answer it.
    Refused(String),
}

/// The heads a guard passed, shared with the service that answers them:
/// hyper hands the service requests in the order their heads were passed,
/// so the service takes one entry per request, and an entry cannot be
/// forged by anything the client sends.
#[derive(Clone, Debug, Default)]
pub struct HeadLog(Arc<Mutex<VecDeque<Checked>>>);

impl HeadLog {
    /// The entry for the next request hyper hands on.
    pub fn next(&self) -> Option<Checked> {
        self.0
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .pop_front()
    }

    /// The refusal of the request being served, when its body failed the
    /// checks: the words of its 400.
    pub fn refusal(&self) -> Option<String> {
        let mut log = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        match log.front() {
            Some(Checked::Refused(_)) => match log.pop_front() {
                Some(Checked::Refused(message)) => Some(message),
                _ => None,
            },
            _ => None,
        }
    }

    fn push(&self, checked: Checked) {
        self.0
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .push_back(checked);
    }
}

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
    /// Where passed heads are told (plain HTTP), if anywhere.
    log: Option<HeadLog>,
}

impl<S> HeadGuard<S> {
    /// Guards `inner`, which starts at a request head; hyper answers a
    /// failed head with its own 400.
    pub fn new(inner: S) -> HeadGuard<S> {
        HeadGuard {
            inner,
            state: State::Head(Vec::new()),
            ready: Vec::new(),
            refused: false,
            log: None,
        }
    }

    /// As [`HeadGuard::new`], telling `log` each head it passes and, for a
    /// failed one, the words its 400 must carry.
    pub fn logged(inner: S, log: HeadLog) -> HeadGuard<S> {
        HeadGuard {
            log: Some(log),
            ..HeadGuard::new(inner)
        }
    }

    /// The stream, and what was read from it but not yet taken.
    pub fn into_parts(self) -> (S, Vec<u8>) {
        (self.inner, self.ready)
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
                        return (self.refuse(HEAD_TOO_LARGE.into()), data.len());
                    }
                    return (State::Head(head), data.len());
                };
                head.truncate(end);
                let used = end - before;
                // The end may come in the read that crosses the limit.
                if head.len() > MAX_HEAD {
                    return (self.refuse(HEAD_TOO_LARGE.into()), used);
                }
                let framing = match check_head(&head) {
                    Ok(framing) => framing,
                    Err(why) => return (self.refuse(framing_refusal(why)), used),
                };
                // hyper would drop a fragment silently.
                if target_has_fragment(&head) {
                    return (self.refuse(FRAGMENT_REFUSAL.into()), used);
                }
                match &self.log {
                    Some(log) => {
                        self.ready.extend_from_slice(&ascii_target(&head));
                        log.push(Checked::Head(head.clone()));
                    }
                    None => self.ready.extend_from_slice(&head),
                }
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
                    let why = "a chunk's data does not end with CRLF";
                    return (self.refuse_body(framing_refusal(why)), n);
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
            let why = "a chunk-size or trailer line is longer than 8 KiB";
            return (self.refuse_body(framing_refusal(why)), used);
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
            let why = "a chunk-size or trailer line ends with a bare LF, not CRLF";
            return (self.refuse_body(framing_refusal(why)), used);
        };
        let next = match (size, chunk_size(text)) {
            (true, Some(0)) => State::Trailers(Vec::new()),
            (true, Some(n)) => State::ChunkData(n),
            (true, None) => {
                let why = "a chunk size is not hex digits";
                return (self.refuse_body(framing_refusal(why)), used);
            }
            // An empty line ends the trailers, and the message.
            (false, _) if text.is_empty() => State::Head(Vec::new()),
            (false, _) => State::Trailers(Vec::new()),
        };
        (next, used)
    }

    /// Gives hyper a request to refuse in place of the failed head (the
    /// log, if any, says with `message`), and reads nothing more from the
    /// client; the state to go on in.
    fn refuse(&mut self, message: String) -> State {
        match &self.log {
            Some(log) => {
                log.push(Checked::Refused(message));
                self.ready.extend_from_slice(ANSWERED);
            }
            None => self.ready.extend_from_slice(REFUSED),
        }
        self.refused = true;
        State::Through
    }

    /// As [`HeadGuard::refuse`], inside a body whose head hyper already
    /// has: with a log, the body just ends there (hyper fails it as cut
    /// short, and the service answers `message` from the log).
    fn refuse_body(&mut self, message: String) -> State {
        if let Some(log) = &self.log {
            log.push(Checked::Refused(message));
            self.refused = true;
            return State::Through;
        }
        self.refuse(message)
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

/// `bytes` with every byte that is not ASCII written as `%XX` (how a URL
/// carries UTF-8), so that `http::Uri` reads it.
pub(crate) fn encode_non_ascii(bytes: &[u8]) -> Cow<'_, [u8]> {
    if bytes.is_ascii() {
        return Cow::Borrowed(bytes);
    }
    let mut out = Vec::with_capacity(bytes.len() + 16);
    for b in bytes {
        if b.is_ascii() {
            out.push(*b);
        } else {
            out.extend_from_slice(format!("%{b:02X}").as_bytes());
        }
    }
    Cow::Owned(out)
}

/// `bytes` with every byte that is not ASCII replaced by `x`: the same
/// length and the same ASCII structure (`:`, `/`, `@`, brackets), so that
/// `http::Uri` finds where each part of a target is in the bytes as sent.
pub(crate) fn ascii_shape(bytes: &[u8]) -> Cow<'_, [u8]> {
    if bytes.is_ascii() {
        return Cow::Borrowed(bytes);
    }
    Cow::Owned(
        bytes
            .iter()
            .map(|b| if b.is_ascii() { *b } else { b'x' })
            .collect(),
    )
}

/// Where the request target is in a head: between the request line's
/// first and last space.
pub(crate) fn target_span(head: &[u8]) -> Option<std::ops::Range<usize>> {
    let line = &head[..memchr::memchr(b'\r', head).unwrap_or(head.len())];
    let first = memchr::memchr(b' ', line)?;
    let last = memchr::memrchr(b' ', line)?;
    (first < last).then_some(first + 1..last)
}

/// A checked head with its request target passed through [`ascii_shape`]:
/// hyper reads only ASCII targets, and the service reads the target from
/// the head as sent (an IDNA host, a UTF-8 path), which the [`HeadLog`]
/// keeps.
fn ascii_target(head: &[u8]) -> Cow<'_, [u8]> {
    let Some(span) = target_span(head).filter(|s| !head[s.clone()].is_ascii()) else {
        return Cow::Borrowed(head);
    };
    let mut out = head[..span.start].to_vec();
    out.extend_from_slice(&ascii_shape(&head[span.clone()]));
    out.extend_from_slice(&head[span.end..]);
    Cow::Owned(out)
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

writes_through_to_inner!(HeadGuard);

#[cfg(test)]
#[path = "framing_tests.rs"]
mod tests;
