//! Tests of the WebSocket checks.

use super::*;

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

#[test]
fn only_a_well_formed_websocket_handshake_is_an_upgrade() {
    let headers = |pairs: &[(&str, &str)]| {
        let mut h = HeaderMap::new();
        for (n, v) in pairs {
            h.append(
                header::HeaderName::from_bytes(n.as_bytes()).unwrap(),
                v.parse().unwrap(),
            );
        }
        h
    };
    let key = ("sec-websocket-key", "dGhlIHNhbXBsZSBub25jZQ==");
    let good = [
        ("upgrade", "websocket"),
        key,
        ("sec-websocket-version", "13"),
    ];
    assert!(websocket_handshake(&Method::GET, &headers(&good)).is_ok());
    assert!(websocket_handshake(&Method::POST, &headers(&good)).is_err());
    for bad in [
        vec![("upgrade", "h2c"), key, ("sec-websocket-version", "13")],
        vec![
            ("upgrade", "websocket, h2c"),
            key,
            ("sec-websocket-version", "13"),
        ],
        vec![("upgrade", "websocket"), ("sec-websocket-version", "13")],
        vec![
            ("upgrade", "websocket"),
            ("sec-websocket-key", "c2hvcnQ="),
            ("sec-websocket-version", "13"),
        ],
        vec![
            ("upgrade", "websocket"),
            key,
            key,
            ("sec-websocket-version", "13"),
        ],
        vec![
            ("upgrade", "websocket"),
            key,
            ("sec-websocket-version", "8"),
        ],
    ] {
        assert!(
            websocket_handshake(&Method::GET, &headers(&bad)).is_err(),
            "{bad:?}"
        );
    }
}
