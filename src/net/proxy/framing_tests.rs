//! Tests of the raw framing checks and the head guard.

use super::*;

/// What hyper would be given for `input`, fed in pieces of `size`.
fn passed(input: &[u8], size: usize) -> Vec<u8> {
    let mut guard = HeadGuard::new(());
    let mut out = Vec::new();
    for piece in input.chunks(size) {
        guard.feed(piece);
        out.append(&mut guard.ready);
    }
    out
}

#[test]
fn good_requests_pass_whole_in_any_pieces() {
    let good: &[u8] = b"\r\nPOST /a HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\n\r\nhello\
        POST /b HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n\
        5;ext=1\r\nhello\r\n0\r\nX-Trailer: t\r\n\r\n\
        GET /c HTTP/1.1\r\nHost: x\r\n\r\n";
    for size in 1..good.len() {
        assert_eq!(passed(good, size), good, "pieces of {size}");
    }
}

#[test]
fn an_ambiguous_head_is_replaced_by_a_refused_one() {
    let first: &[u8] = b"GET /ok HTTP/1.1\r\nHost: x\r\n\r\n";
    let bad: &[u8] = b"POST /b HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n";
    let mut input = first.to_vec();
    input.extend_from_slice(bad);
    for size in [1, 7, input.len()] {
        let mut expected = first.to_vec();
        expected.extend_from_slice(REFUSED);
        assert_eq!(passed(&input, size), expected, "pieces of {size}");
    }
    // A head ended by bare LFs is refused, not held.
    assert_eq!(passed(b"GET / HTTP/1.1\nHost: x\n\n", 2), REFUSED);
    // A bare LF in a chunk line, or a bad size, too.
    let chunked = b"POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n5\nhello\r\n0\r\n\r\n";
    assert!(passed(chunked, 3).ends_with(REFUSED));
    let chunked = b"POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n+5\r\nhello\r\n0\r\n\r\n";
    assert!(passed(chunked, 3).ends_with(REFUSED));
}

#[test]
fn a_head_over_the_limit_is_refused_however_it_is_read() {
    let mut head = b"GET / HTTP/1.1\r\nX-Pad: ".to_vec();
    head.resize(MAX_HEAD - 2, b'a');
    head.extend_from_slice(b"\r\n\r\n");
    assert_eq!(head.len(), MAX_HEAD + 2);
    // In one read, its end in the read that crosses the limit, or after.
    for size in [head.len(), MAX_HEAD - 100, MAX_HEAD + 1, 4096] {
        assert_eq!(passed(&head, size), REFUSED, "pieces of {size}");
    }
    head.drain(30..32);
    assert_eq!(passed(&head, head.len()), head, "at the limit");
}

#[test]
fn reads_through_the_stream_give_hyper_what_feeding_does() {
    use tokio::io::AsyncReadExt;
    let input: Vec<u8> = [
        &b"POST /a HTTP/1.1\r\nContent-Length: 70000\r\n\r\n"[..],
        &vec![b'x'; 70000],
        b"POST /b HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n4\r\nabcd\r\n0\r\n\r\n",
        b"GET /c HTTP/1.1\r\nContent-Length: 1\r\nContent-Length: 1\r\n\r\nx",
    ]
    .concat();
    let runtime = tokio::runtime::Builder::new_current_thread()
        .build()
        .unwrap();
    let out = runtime.block_on(async {
        let (mut client, server) = tokio::io::duplex(4096);
        let writer = async {
            use tokio::io::AsyncWriteExt;
            client.write_all(&input).await.unwrap();
            client.shutdown().await.unwrap();
            client
        };
        let reader = async {
            let mut guard = HeadGuard::new(server);
            let mut out = Vec::new();
            let mut buf = [0u8; 3000];
            loop {
                let n = guard.read(&mut buf).await.unwrap();
                if n == 0 {
                    return out;
                }
                out.extend_from_slice(&buf[..n]);
            }
        };
        let (_, out) = tokio::join!(writer, reader);
        out
    });
    let good =
        input.len() - b"GET /c HTTP/1.1\r\nContent-Length: 1\r\nContent-Length: 1\r\n\r\nx".len();
    assert_eq!(&out[..good], &input[..good]);
    assert_eq!(&out[good..], REFUSED);
}

#[test]
fn after_an_upgrade_request_bytes_pass_as_they_are() {
    let input: &[u8] =
        b"GET /ws HTTP/1.1\r\nHost: x\r\nUpgrade: websocket\r\nConnection: upgrade\r\n\r\n\x81\x05hello\n\n\r";
    assert_eq!(passed(input, 4), input);
}

#[test]
fn framing_is_read_one_way_or_refused() {
    let head = |fields: &str| format!("POST http://h/ HTTP/1.1\r\nHost: h\r\n{fields}\r\n");
    let framing = |fields: &str| check_head(head(fields).as_bytes());
    assert_eq!(framing(""), Ok(BodyFraming::Empty));
    assert_eq!(
        framing("Content-Length: 49\r\n"),
        Ok(BodyFraming::Length(49))
    );
    assert_eq!(
        framing("content-length:\t7\r\n"),
        Ok(BodyFraming::Length(7))
    );
    assert_eq!(
        framing("Transfer-Encoding: Chunked \r\n"),
        Ok(BodyFraming::Chunked)
    );
    assert_eq!(
        framing(&format!("Content-Length: {}\r\n", u64::MAX)),
        Err("Content-Length is not plain digits (a sign, spaces, a list, another base, empty, or too large)")
    );
    for bad in [
        "Content-Length: 5\r\nTransfer-Encoding: chunked\r\n",
        "Transfer-Encoding: gzip, chunked\r\n",
        "Transfer-Encoding: chunked\r\nTransfer-Encoding: chunked\r\n",
        "Content-Length: 5\r\nContent-Length: 5\r\n",
        "Content-Length: +5\r\n",
        "Content-Length: 5 \r\n",
        "Content-Length: 5,5\r\n",
        "Content-Length : 5\r\n",
        "X-A: b\r\n c\r\n",
        "X-A: b\rc\r\n",
        "X-A: b\nc\r\n",
        "X-A: b\0c\r\n",
        "NoColon\r\n",
    ] {
        assert!(framing(bad).is_err(), "{bad:?}");
    }
    let bytes = b"POST http://h/ HTTP/1.1\r\nTransfer-Encoding: \xffchunked\r\n\r\n";
    assert!(check_head(bytes).is_err());
}

#[test]
fn a_logged_guard_tells_each_head_and_the_words_of_a_refusal() {
    let log = HeadLog::default();
    let mut guard = HeadGuard::logged((), log.clone());
    let first: &[u8] = b"GET http://b\xc3\xbccher.example/p\xc3\xa4th HTTP/1.1\r\nHost: x\r\n\r\n";
    let bad: &[u8] = b"POST / HTTP/1.1\r\nContent-Length: 5\r\nContent-Length: 5\r\n\r\nhello";
    guard.feed(&[first, bad].concat());
    // hyper gets the target made ASCII, then a request it passes on.
    let mut expected = b"GET http://bxxcher.example/pxxth HTTP/1.1\r\nHost: x\r\n\r\n".to_vec();
    expected.extend_from_slice(ANSWERED);
    assert_eq!(guard.ready, expected);
    assert_eq!(log.next(), Some(Checked::Head(first.to_vec())));
    assert_eq!(
        log.next(),
        Some(Checked::Refused(framing_refusal(
            "Content-Length appears more than once"
        )))
    );
    assert_eq!(log.next(), None);
    // Inside a body whose head hyper has, the body just ends.
    let log = HeadLog::default();
    let mut guard = HeadGuard::logged((), log.clone());
    let chunked: &[u8] =
        b"POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nhello\r\n0\r\n\r\n";
    guard.feed(chunked);
    // The head and the chunk's three bytes, no more.
    assert_eq!(
        guard.ready,
        &chunked[..chunked.len() - b"lo\r\n0\r\n\r\n".len()]
    );
    assert!(matches!(log.next(), Some(Checked::Head(_))));
    assert_eq!(
        log.refusal().as_deref().map(|m| m.contains("CRLF")),
        Some(true)
    );
}
