//! Header plumbing of inspected requests and responses: hop-by-hop
//! headers dropped, swaps applied to every value, placeholders found.

use http::header::{self, HeaderName, HeaderValue};
use http::{HeaderMap, Uri};

use crate::credentials::inject::Swaps;

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

/// Headers a `Connection` header may name but not remove: the Host that
/// was checked against the target, the length the body's framing depends
/// on, and `te`, whose `trailers` goes on (below).
const NOT_STRIPPED: &[HeaderName] = &[header::HOST, header::CONTENT_LENGTH, header::TE];

/// Removes hop-by-hop headers (and those `Connection` names, but for
/// [`NOT_STRIPPED`]); keeps `te: trailers`, which HTTP/2 (gRPC) needs end
/// to end.
pub(in crate::net::proxy) fn strip_hop_by_hop(headers: &mut HeaderMap) {
    let named: Vec<HeaderName> = headers
        .get_all(header::CONNECTION)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(','))
        .filter_map(|n| HeaderName::from_bytes(n.trim().as_bytes()).ok())
        .filter(|n| !NOT_STRIPPED.contains(n))
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

/// Whether a value of the coding header `name` names any coding but
/// `keep` (`chunked` for Transfer-Encoding, `identity` for
/// Content-Encoding): bytes the proxy would pass on still coded.
pub(in crate::net::proxy) fn has_coding_but(
    headers: &HeaderMap,
    name: HeaderName,
    keep: &[u8],
) -> bool {
    headers.get_all(name).iter().any(|v| {
        v.as_bytes()
            .split(|b| *b == b',')
            .map(<[u8]>::trim_ascii)
            .any(|t| !t.is_empty() && !t.eq_ignore_ascii_case(keep))
    })
}

/// Whether a response says both Content-Length and Transfer-Encoding: a
/// length two readers may take differently (RFC 9112 §6.3 calls it an
/// attack or an error), which the proxy refuses to relay rather than
/// pass on a Content-Length that no longer frames the body.
pub(in crate::net::proxy) fn length_is_ambiguous(headers: &HeaderMap) -> bool {
    headers.contains_key(header::CONTENT_LENGTH) && headers.contains_key(header::TRANSFER_ENCODING)
}

/// The refusal's text for a response of `shown` whose length is ambiguous.
pub(in crate::net::proxy) fn ambiguous_length_refusal(shown: &str) -> String {
    format!("cordon: refused the response of {shown}: it has both Content-Length and Transfer-Encoding, so its length is ambiguous (RFC 9112 section 6.3)\n")
}

/// Applies `swaps` to every header (or trailer) value; the Basic forms it
/// swaps are added to `learned`.
pub(super) fn swap_headers(headers: &mut HeaderMap, swaps: &Swaps, learned: &mut Swaps) {
    swap_values(headers, |v| swaps.apply_header(v, learned));
}

/// Applies to each header value the swaps `swaps_for` gives its name;
/// the Basic forms swapped are added to `learned`.
pub(super) fn swap_headers_by(
    headers: &mut HeaderMap,
    swaps_for: impl Fn(&str) -> Swaps,
    learned: &mut Swaps,
) {
    for (name, value) in headers.iter_mut() {
        let swaps = swaps_for(name.as_str());
        if let Some(new) = swaps.apply_header(value.as_bytes(), learned) {
            // As in `swap_values`: never a value that is not one.
            *value = HeaderValue::from_bytes(&new)
                .unwrap_or_else(|_| HeaderValue::from_static("cordon-masked"));
        }
    }
}

/// Replaces every value of `headers` by what `swap` makes of it (`None`:
/// unchanged).
pub(super) fn swap_values(headers: &mut HeaderMap, mut swap: impl FnMut(&[u8]) -> Option<Vec<u8>>) {
    for value in headers.values_mut() {
        if let Some(new) = swap(value.as_bytes()) {
            // A swapped value is still free of CR/LF/NUL: both sides of
            // every swap are (real values are checked when read). Should
            // one not be, the value goes as a mask, never as it was.
            *value = HeaderValue::from_bytes(&new)
                .unwrap_or_else(|_| HeaderValue::from_static("cordon-masked"));
        }
    }
}

/// Whether `placeholder` appears in the request target or a header value
/// (inside `Basic` credentials too).
pub(super) fn mentions(placeholder: &[u8], uri: &Uri, headers: &HeaderMap) -> bool {
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

#[cfg(test)]
#[path = "headers_tests.rs"]
mod tests;
