//! The body of a forwarded request (plain HTTP, or inspected and streamed
//! to its host), as the upstream gets it: every data frame and trailer
//! scanned for placeholders by the one [`SpelledScan`] (its state carried
//! across frames, so a placeholder split between chunks is found too; the
//! body's last bytes are held back until the next frame or the body's end
//! only once they spell a whole placeholder prefix and the start of a
//! placeholder's random part, so no byte of what identifies a placeholder
//! leaves before all of it has been seen, and anything else, the constant
//! prefix included, goes at once), and a fault of the client's own framing
//! told apart from the upstream's. A fault ends the body with an error,
//! which aborts the upstream request; the proxy then answers with the
//! fault, not a 502.

use std::pin::Pin;
use std::sync::{Arc, Mutex, PoisonError};
use std::task::{Context, Poll};

use bytes::Bytes;
use http::StatusCode;
use hyper::body::{Body, Frame, Incoming, SizeHint};

use super::inspect::BoxError;
use crate::credentials::inject::{Exfiltration, SpelledScan};

/// Records a placeholder found in the body (an audit event) and gives the
/// refusal's message.
pub(in crate::net::proxy) type OnPlaceholder =
    Box<dyn FnOnce(&Exfiltration) -> String + Send + Sync>;

/// Why a request's body was cut short: the status and message the client
/// gets in place of the upstream's answer.
pub(in crate::net::proxy) type Fault = Arc<Mutex<Option<(StatusCode, String)>>>;

/// The fault recorded in `fault`, if any (taken).
pub(in crate::net::proxy) fn take_fault(fault: &Fault) -> Option<(StatusCode, String)> {
    fault.lock().unwrap_or_else(PoisonError::into_inner).take()
}

/// A client's request body on its way upstream.
pub(in crate::net::proxy) struct RequestBody {
    inner: Incoming,
    /// `None` when there is nothing to look for; it holds the data
    /// scanned but not yet let out.
    scan: Option<(SpelledScan, Option<OnPlaceholder>)>,
    /// Trailers read while data was still held, let out after it.
    trailers: Option<Frame<Bytes>>,
    /// The client's body has ended (what is held may go).
    ended: bool,
    fault: Fault,
}

impl RequestBody {
    pub(in crate::net::proxy) fn new(
        inner: Incoming,
        scan: Option<(SpelledScan, OnPlaceholder)>,
    ) -> RequestBody {
        RequestBody {
            inner,
            scan: scan
                .filter(|(scan, _)| !scan.is_empty())
                .map(|(scan, report)| (scan, Some(report))),
            trailers: None,
            ended: false,
            fault: Fault::default(),
        }
    }

    /// Where the body's fault (if it has one) is recorded.
    pub(in crate::net::proxy) fn fault(&self) -> Fault {
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

    /// How many scanned bytes wait to be let out.
    fn held(&self) -> usize {
        self.scan.as_ref().map_or(0, |(scan, _)| scan.held())
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
                let held = this.scan.as_mut().map(|(scan, _)| scan.finish());
                if let Some(held) = held.filter(|h| !h.is_empty()) {
                    return Poll::Ready(Some(Ok(Frame::data(held))));
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
            let scanned = match frame.into_data() {
                Ok(data) => scan.push(data).map(Some),
                Err(trailers) => {
                    match trailers.trailers_ref().and_then(|t| scan.feed_headers(t)) {
                        Some(ex) => Err(ex),
                        // Trailers end the body: nothing more can complete
                        // a placeholder in the data.
                        None => {
                            this.trailers = Some(trailers);
                            this.ended = true;
                            Ok(None)
                        }
                    }
                }
            };
            match scanned {
                Ok(Some(out)) if !out.is_empty() => {
                    return Poll::Ready(Some(Ok(Frame::data(out))));
                }
                Ok(_) => {}
                Err(ex) => {
                    let message = report.take().map(|report| report(&ex)).unwrap_or_default();
                    return this.fail(StatusCode::FORBIDDEN, message);
                }
            }
        }
    }

    fn is_end_stream(&self) -> bool {
        (self.ended || self.inner.is_end_stream()) && self.held() == 0 && self.trailers.is_none()
    }

    fn size_hint(&self) -> SizeHint {
        // Held bytes are still to come.
        let inner = self.inner.size_hint();
        let held = self.held() as u64;
        let mut hint = SizeHint::new();
        // The upper bound first: a lower bound above it is refused.
        if let Some(upper) = inner.upper() {
            hint.set_upper(upper.saturating_add(held));
        }
        hint.set_lower(inner.lower().saturating_add(held));
        hint
    }
}
