//! Tests of the header plumbing.

use super::*;

#[test]
fn hop_by_hop_headers_go_and_te_trailers_stays() {
    let mut h = HeaderMap::new();
    for (n, v) in [
        ("connection", "keep-alive, x-hop"),
        ("x-hop", "1"),
        ("keep-alive", "timeout=5"),
        ("proxy-authorization", "Basic eA=="),
        ("transfer-encoding", "chunked"),
        ("upgrade", "websocket"),
        ("te", "gzip, trailers"),
        ("x-end-to-end", "kept"),
    ] {
        h.append(HeaderName::from_static(n), HeaderValue::from_static(v));
    }
    strip_hop_by_hop(&mut h);
    let left: Vec<(&str, &str)> = h
        .iter()
        .map(|(n, v)| (n.as_str(), v.to_str().unwrap()))
        .collect();
    assert_eq!(left, [("x-end-to-end", "kept"), ("te", "trailers")]);
}

#[test]
fn connection_cannot_name_host_length_or_te_away() {
    let mut h = HeaderMap::new();
    for (n, v) in [
        ("connection", "Host, content-length, te, x-hop"),
        ("host", "a.example"),
        ("content-length", "5"),
        ("te", "trailers"),
        ("x-hop", "1"),
    ] {
        h.append(HeaderName::from_static(n), HeaderValue::from_static(v));
    }
    strip_hop_by_hop(&mut h);
    let mut left: Vec<(&str, &str)> = h
        .iter()
        .map(|(n, v)| (n.as_str(), v.to_str().unwrap()))
        .collect();
    left.sort();
    assert_eq!(
        left,
        [
            ("content-length", "5"),
            ("host", "a.example"),
            ("te", "trailers")
        ]
    );
}

#[test]
fn placeholders_are_found_in_the_target_headers_and_basic_credentials() {
    use base64::Engine as _;
    let placeholder = b"cordon-placeholder-abcd";
    let uri: Uri = "/x?k=cordon-placeholder-abcd".parse().unwrap();
    assert!(mentions(placeholder, &uri, &HeaderMap::new()));
    let plain: Uri = "/x".parse().unwrap();
    let mut h = HeaderMap::new();
    h.insert(header::ACCEPT, HeaderValue::from_static("text/plain"));
    assert!(!mentions(placeholder, &plain, &h));
    let basic = base64::engine::general_purpose::STANDARD.encode("user:cordon-placeholder-abcd");
    h.insert(
        header::AUTHORIZATION,
        HeaderValue::from_str(&format!("Basic {basic}")).unwrap(),
    );
    assert!(mentions(placeholder, &plain, &h));
}
