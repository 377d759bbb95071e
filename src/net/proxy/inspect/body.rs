//! The bodies an inspected request or response is relayed as: swapped
//! as they stream, or held whole within the buffer budget.

use std::pin::Pin;
use std::task::{Context, Poll};

use bytes::Bytes;
use http::header::{self, HeaderValue};
use http::{HeaderMap, Response, StatusCode};
use http_body_util::combinators::BoxBody;
use http_body_util::{BodyExt, Full};
use hyper::body::{Body, Frame, SizeHint};

use super::headers::swap_values;

/// A body error, boxed.
pub(in crate::net::proxy) type BoxError = Box<dyn std::error::Error + Send + Sync>;
/// The body type both directions are relayed as.
pub(in crate::net::proxy) type ProxyBody = BoxBody<Bytes, BoxError>;

/// A text response of cordon's own (a refusal).
pub(in crate::net::proxy) fn text_response(
    status: StatusCode,
    body: String,
) -> Response<ProxyBody> {
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

/// A body with swaps applied as it streams (a response's masks).
pub(super) struct SwapBody {
    pub(super) inner: ProxyBody,
    pub(super) swap: crate::credentials::inject::StreamSwap,
    pub(super) trailers: Option<HeaderMap>,
    pub(super) done: bool,
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
            let out = match frame {
                Some(Ok(frame)) => match frame.into_data() {
                    Ok(data) => this.swap.push(&data),
                    Err(frame) => {
                        // Trailers are values of their own: swapped whole.
                        let mut trailers = frame.into_trailers().ok();
                        this.done = true;
                        if let Some(t) = trailers.as_mut() {
                            swap_values(t, |v| this.swap.apply_whole(v));
                        }
                        this.trailers = trailers;
                        this.swap.finish()
                    }
                },
                Some(Err(e)) => return Poll::Ready(Some(Err(e))),
                None => {
                    this.done = true;
                    this.swap.finish()
                }
            };
            if !out.is_empty() {
                return Poll::Ready(Some(Ok(Frame::data(Bytes::from(out)))));
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
pub(super) fn exact_len(body: &impl Body, headers: &HeaderMap) -> Option<u64> {
    body.size_hint().exact().or_else(|| {
        headers
            .get(header::CONTENT_LENGTH)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.trim().parse().ok())
    })
}

/// A whole body of at most `cap` bytes (the length reserved for it), with
/// its trailers; `None` if it fails or is longer.
pub(super) async fn collect_capped(
    mut body: ProxyBody,
    cap: u64,
) -> Option<(Bytes, Option<HeaderMap>)> {
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
pub(super) struct Whole {
    data: Option<Bytes>,
    trailers: Option<HeaderMap>,
    _reserved: Option<tokio::sync::OwnedSemaphorePermit>,
}

impl Whole {
    pub(super) fn boxed(
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
pub(in crate::net::proxy) fn box_error(e: hyper::Error) -> BoxError {
    Box::new(e)
}
