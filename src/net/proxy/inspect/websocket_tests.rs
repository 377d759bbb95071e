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

/// `payload` as a client frame: `first` byte, masked with `key`.
fn client_frame(first: u8, payload: &[u8], key: [u8; 4]) -> Vec<u8> {
    let mut frame = vec![first];
    match payload.len() {
        n @ 0..=125 => frame.push(0x80 | n as u8),
        n => {
            frame.push(0x80 | 126);
            frame.extend(u16::try_from(n).unwrap().to_be_bytes());
        }
    }
    frame.extend(key);
    frame.extend(payload.iter().enumerate().map(|(i, b)| b ^ key[i % 4]));
    frame
}

#[test]
fn client_frames_are_scanned_unmasked_across_fragments() {
    use crate::credentials::inject::{Secret, Secrets};
    let secrets = Secrets::from_list(vec![Secret::new(
        "T",
        "cordon-placeholder-abcd",
        b"real".to_vec(),
        vec![],
    )]);
    let frames = || ClientFrames::new(|| secrets.scan_spelled());
    let key = [0x5a, 0xa5, 0x3c, 0xc3];
    // A message in two fragments, a ping between them, the placeholder
    // split across them (upper-cased in the second).
    let mut stream = client_frame(0x01, b"{\"t\":\"cordon-place", key);
    stream.extend(client_frame(0x89, b"ping", [1, 2, 3, 4]));
    stream.extend(client_frame(
        0x80,
        &[b"HOLDER-ABCD\"}".as_slice(), &[b' '; 200]].concat(),
        key,
    ));
    for size in 1..stream.len() {
        let mut scan = frames();
        let stop = stream.chunks(size).find_map(|piece| scan.feed(piece));
        assert!(
            matches!(stop, Some(ClientStop::Placeholder(ref ex)) if ex.name == "T"),
            "chunk size {size}: {stop:?}"
        );
    }
    // Clean frames pass; a compressed one cannot be read.
    let mut scan = frames();
    assert!(scan
        .feed(&client_frame(0x81, b"cordon-placeholder-ab", key))
        .is_none());
    assert!(scan.feed(&client_frame(0x82, &[0u8; 300], key)).is_none());
    let stop = scan.feed(&client_frame(0xc1, b"x", key));
    assert!(matches!(stop, Some(ClientStop::Frame(_))), "{stop:?}");
}
