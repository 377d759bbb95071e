//! Tests of reading request targets and preparing a request for the upstream.

use super::*;

#[test]
fn targets_parse() {
    let to = |host: &str, port, origin: &str| Some((host.to_string(), port, origin.to_string()));
    assert_eq!(
        absolute_form("http://Example.com/x"),
        to("Example.com", 80, "/x")
    );
    assert_eq!(absolute_form("HTTP://a.b:8080?q"), to("a.b", 8080, "/?q"));
    assert_eq!(absolute_form("http://[::1]:81/"), to("::1", 81, "/"));
    assert_eq!(absolute_form("http://a"), to("a", 80, "/"));
    assert_eq!(absolute_form("http://a/b?c"), to("a", 80, "/b?c"));
    assert_eq!(absolute_form("http://user@evil.com/"), None);
    assert_eq!(absolute_form("http://a.b:/"), None);
    assert_eq!(absolute_form("https://a/"), None);
    assert_eq!(absolute_form("/relative"), None);
    assert_eq!(host_port("a.b:443", None), Some(("a.b".into(), 443)));
    assert_eq!(host_port("[::1]:443", None), Some(("::1".into(), 443)));
    assert_eq!(host_port("[::1]", Some(80)), Some(("::1".into(), 80)));
    assert_eq!(host_port("a.b", None), None);
    assert_eq!(host_port("a.b", Some(8080)), Some(("a.b".into(), 8080)));
    assert_eq!(host_port("::1:443", None), None);
    assert_eq!(host_port(":443", None), None);
    assert_eq!(host_port("a.b:443x", None), None);
    assert_eq!(host_port("a.b:70000", None), None);
    assert_eq!(host_port("a.b:83617", Some(80)), None);
    assert_eq!(host_port("[::1]:65536", Some(80)), None);
    assert_eq!(absolute_form("http://a.b:83617/"), None);
    assert_eq!(host_port("u@a.b:443", None), None);
}

#[test]
fn targets_that_are_not_ascii_are_read_as_sent() {
    assert_eq!(
        host_port("bücher.example:81", None),
        Some(("bücher.example".into(), 81))
    );
    assert_eq!(
        absolute_form("http://BÜCHER.Example./päth?q=ü"),
        Some(("BÜCHER.Example.".into(), 80, "/päth?q=ü".into()))
    );
    let (mut parts, ()) = Request::get("/").body(()).unwrap().into_parts();
    to_origin_form(&mut parts, "/päth?q=ü").unwrap();
    assert_eq!(parts.uri.to_string(), "/p%C3%A4th?q=%C3%BC");
    let mut h = http::HeaderMap::new();
    h.insert(
        header::HOST,
        HeaderValue::from_bytes("bücher.example:81".as_bytes()).unwrap(),
    );
    assert!(host_header_matches(&h, "bücher.example", 81));
    // A Host port past 65535 is no port, not the target's.
    h.insert(header::HOST, HeaderValue::from_static("a.b:65617"));
    assert!(!host_header_matches(&h, "a.b", 80));
}

#[test]
fn the_upstream_gets_origin_form_without_proxy_or_hop_by_hop_headers() {
    let (mut parts, ()) = Request::get("http://a/b")
        .header("Host", "a")
        .header("Proxy-Authorization", "x")
        .header("Proxy-Other", "x")
        .header("Connection", "keep-alive, X-Hop")
        .header("X-Hop", "h")
        .header("Keep-Alive", "timeout=5")
        .header("Transfer-Encoding", "chunked")
        .header("X-Y", "z")
        .body(())
        .unwrap()
        .into_parts();
    to_origin_form(&mut parts, "/b").unwrap();
    assert_eq!(parts.uri.to_string(), "/b");
    let names: Vec<&str> = parts.headers.keys().map(|n| n.as_str()).collect();
    assert_eq!(names, ["host", "x-y"]);
}

#[test]
fn the_host_header_must_name_the_target_once() {
    let headers = |hosts: &[&str]| {
        let mut h = http::HeaderMap::new();
        for v in hosts {
            h.append(header::HOST, HeaderValue::from_str(v).unwrap());
        }
        h
    };
    assert!(host_header_matches(&headers(&["A.b:81"]), "a.B", 81));
    assert!(host_header_matches(&headers(&["a.b"]), "a.b", 80));
    assert!(host_header_matches(&headers(&["[::1]:81"]), "::1", 81));
    assert!(!host_header_matches(&headers(&[]), "a.b", 80));
    assert!(!host_header_matches(&headers(&["a.b", "a.b"]), "a.b", 80));
    assert!(!host_header_matches(&headers(&["a.b:81"]), "a.b", 80));
    assert!(!host_header_matches(&headers(&["c.d"]), "a.b", 80));
    assert!(!host_header_matches(&headers(&["u@a.b"]), "a.b", 80));
}

#[test]
fn an_upstream_that_closes_closes_the_client_connection_too() {
    let headers = |v: &str| {
        let mut h = http::HeaderMap::new();
        h.insert(header::CONNECTION, HeaderValue::from_str(v).unwrap());
        h
    };
    assert!(closes_after(Version::HTTP_11, &headers("Close")));
    assert!(closes_after(Version::HTTP_11, &headers("x, close")));
    assert!(!closes_after(Version::HTTP_11, &headers("keep-alive")));
    assert!(!closes_after(Version::HTTP_11, &http::HeaderMap::new()));
    assert!(closes_after(Version::HTTP_10, &http::HeaderMap::new()));
    assert!(!closes_after(Version::HTTP_10, &headers("keep-alive")));
}
