//! The body of a forwarded plain-HTTP request, as the upstream gets it:
//! every data frame and trailer scanned for placeholders (the scan's
//! state carried across frames, so a placeholder split between chunks is
//! found too; the body's last bytes that could begin a placeholder in a
//! spelling the scan reads are held back until the next frame or the
//! body's end, so no byte of a placeholder leaves before all of it has
//! been seen, and anything else goes at once), and a fault of the client's own framing told apart from
//! the upstream's. A fault ends the body with an error, which aborts the
//! upstream request; the proxy then answers with the fault, not a 502.

use std::pin::Pin;
use std::sync::{Arc, Mutex, PoisonError};
use std::task::{Context, Poll};

use bytes::{Bytes, BytesMut};
use http::StatusCode;
use hyper::body::{Body, Frame, Incoming, SizeHint};

use super::inspect::BoxError;
use crate::credentials::inject::{Exfiltration, SpelledScan};

/// Records a placeholder found in the body (an audit event) and gives the
/// refusal's message.
pub(super) type OnPlaceholder = Box<dyn FnOnce(&Exfiltration) -> String + Send + Sync>;

/// Why a request's body was cut short: the status and message the client
/// gets in place of the upstream's answer.
pub(super) type Fault = Arc<Mutex<Option<(StatusCode, String)>>>;

/// The fault recorded in `fault`, if any (taken).
pub(super) fn take_fault(fault: &Fault) -> Option<(StatusCode, String)> {
    fault.lock().unwrap_or_else(PoisonError::into_inner).take()
}

/// A client's request body on its way upstream.
pub(super) struct RequestBody {
    inner: Incoming,
    /// `None` when there is nothing to look for.
    scan: Option<(SpelledScan, Option<OnPlaceholder>)>,
    /// Data scanned but not yet let out: the last bytes, which may be the
    /// start of a placeholder the next frame completes.
    held: BytesMut,
    /// Trailers read while data was still held, let out after it.
    trailers: Option<Frame<Bytes>>,
    /// The client's body has ended (what is held may go).
    ended: bool,
    fault: Fault,
}

impl RequestBody {
    pub(super) fn new(inner: Incoming, scan: Option<(SpelledScan, OnPlaceholder)>) -> RequestBody {
        RequestBody {
            inner,
            scan: scan.map(|(scan, report)| (scan, Some(report))),
            held: BytesMut::new(),
            trailers: None,
            ended: false,
            fault: Fault::default(),
        }
    }

    /// Where the body's fault (if it has one) is recorded.
    pub(super) fn fault(&self) -> Fault {
        self.fault.clone()
    }

    /// Ends the body with `status` and `message` for the client.
    fn fail(
        &mut self,
        status: StatusCode,
        message: String,
    ) -> Poll<Option<Result<Frame<Bytes>, BoxError>>> {
        let error: BoxError = message.trim_end().to_string().into();
        *self.fault.lock().unwrap_or_else(PoisonError::into_inner) = Some((status, message));
        self.scan = None;
        Poll::Ready(Some(Err(error)))
    }
}

impl Body for RequestBody {
    type Data = Bytes;
    type Error = BoxError;

    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, BoxError>>> {
        let this = self.get_mut();
        loop {
            if this.ended {
                // Everything was scanned: what is held goes, then the
                // trailers.
                if !this.held.is_empty() {
                    return Poll::Ready(Some(Ok(Frame::data(this.held.split().freeze()))));
                }
                return Poll::Ready(this.trailers.take().map(Ok));
            }
            let frame = match std::task::ready!(Pin::new(&mut this.inner).poll_frame(cx)) {
                None => {
                    this.ended = true;
                    continue;
                }
                Some(Ok(frame)) => frame,
                // hyper read the client's body and could not: a chunk size,
                // chunk extension or trailer it refuses (or the client left).
                Some(Err(e)) => {
                    let mut why = e.to_string();
                    let mut cause = std::error::Error::source(&e);
                    while let Some(c) = cause {
                        why = format!("{why}: {c}");
                        cause = c.source();
                    }
                    let message = format!(
                        "cordon: refused the request: its body's framing (a chunk size, chunk extension or trailer) could not be read: {why}\n"
                    );
                    return this.fail(StatusCode::BAD_REQUEST, message);
                }
            };
            let Some((scan, report)) = this.scan.as_mut() else {
                return Poll::Ready(Some(Ok(frame)));
            };
            let found = match (frame.data_ref(), frame.trailers_ref()) {
                (Some(data), _) => scan.feed(data),
                (None, Some(trailers)) => trailers.iter().find_map(|(name, value)| {
                    scan.feed(name.as_str().as_bytes())
                        .or_else(|| scan.feed_value(value.as_bytes()))
                }),
                (None, None) => None,
            };
            if let Some(ex) = found {
                let message = report.take().map(|report| report(&ex)).unwrap_or_default();
                return this.fail(StatusCode::FORBIDDEN, message);
            }
            match frame.into_data() {
                Ok(data) => {
                    this.held.extend_from_slice(&data);
                    let keep = scan.undecided_tail(&this.held);
                    if this.held.len() > keep {
                        let out = this.held.split_to(this.held.len() - keep).freeze();
                        return Poll::Ready(Some(Ok(Frame::data(out))));
                    }
                }
                // Trailers end the body: nothing more can complete a
                // placeholder in the data.
                Err(trailers) => {
                    this.trailers = Some(trailers);
                    this.ended = true;
                }
            }
        }
    }

    fn is_end_stream(&self) -> bool {
        (self.ended || self.inner.is_end_stream())
            && self.held.is_empty()
            && self.trailers.is_none()
    }

    fn size_hint(&self) -> SizeHint {
        // Held bytes are still to come.
        let inner = self.inner.size_hint();
        let held = self.held.len() as u64;
        let mut hint = SizeHint::new();
        // The upper bound first: a lower bound above it is refused.
        if let Some(upper) = inner.upper() {
            hint.set_upper(upper.saturating_add(held));
        }
        hint.set_lower(inner.lower().saturating_add(held));
        hint
    }
}
