//! Masking an inspected response: real values (and the Basic forms a
//! request learned) back to placeholders in its headers and body; a
//! compressed answer that could hide one is refused.

use bytes::Bytes;
use http::header::{self, HeaderValue};
use http::{Method, Response, StatusCode};
use http_body_util::BodyExt;
use hyper::body::Incoming;

use super::body::{
    box_error, collect_capped, exact_len, text_response, ProxyBody, SwapBody, Whole,
};
use super::budget::BODY_CAP;
use super::headers::{
    ambiguous_length_refusal, has_coding_but, length_is_ambiguous, strip_hop_by_hop, swap_headers,
};
use super::session::Session;
use super::Refusal;
use crate::audit::Door;
use crate::credentials::inject::Swaps;

impl Session {
    /// Real values → placeholders in the response's headers and body.
    pub(super) async fn mask_response(
        &self,
        resp: Response<Incoming>,
        method: &Method,
        learned: Swaps,
        injected: bool,
    ) -> Response<ProxyBody> {
        let secrets = &self.inspector.secrets;
        let (mut parts, body) = resp.into_parts();
        if length_is_ambiguous(&parts.headers) {
            let shown = self.target.with_port(self.tunnel.port).to_string();
            return text_response(StatusCode::BAD_GATEWAY, ambiguous_length_refusal(&shown));
        }
        // Any coding but identity in any Content-Encoding value, or any
        // transfer coding but chunked (hyper decodes only that one, and
        // the header is not passed on), hides bytes from the mask.
        let coded = |name, keep: &[u8]| has_coding_but(&parts.headers, name, keep);
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
                fix: Some("nothing allows it: a response to a request that carried a real value must be maskable, hence uncompressed".into()),
                message: format!(
                    "cordon: refused the response of {}: it is compressed ({how}), so a real credential echoed in it could not be masked, although cordon asked for an uncompressed one\n",
                    self.target.with_port(self.tunnel.port)
                ),
            };
            return self.refuse_with(StatusCode::BAD_GATEWAY, r);
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
        swap_headers(&mut parts.headers, &mask, &mut ignored);
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
                        swap_headers(t, &mask, &mut ignored);
                    }
                    let out = mask.apply(&bytes).map_or(bytes, Bytes::from);
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
                }
                .boxed()
            }
        };
        Response::from_parts(parts, body)
    }
}
