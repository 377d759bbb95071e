use super::*;
use crate::policy::host::normalize;

fn secrets() -> Secrets {
    Secrets::from_list(vec![
        Secret::new(
            "GITHUB_TOKEN",
            "cordon-placeholder-aaaa",
            b"ghp_REAL".to_vec(),
            vec![HostMatch::parse("api.github.com").unwrap()],
        ),
        Secret::new(
            "OTHER",
            "cordon-placeholder-bbbb",
            b"other-real".to_vec(),
            vec![HostMatch::parse("other.example").unwrap()],
        ),
    ])
}

#[test]
fn placeholders_are_random_and_recognisable() {
    let a = new_placeholder().unwrap();
    let b = new_placeholder().unwrap();
    assert_ne!(a, b);
    assert!(a.starts_with(PLACEHOLDER_PREFIX));
    assert_eq!(a.len(), PLACEHOLDER_PREFIX.len() + 32);
}

#[test]
fn body_swaps_put_in_the_allowed_value_and_refuse_the_others() {
    let s = secrets();
    let gh = normalize("api.github.com").unwrap();
    let swaps = s.body_swaps(&gh, 443);
    let out = swaps.apply(b"Bearer cordon-placeholder-aaaa").unwrap();
    assert_eq!(out, b"Bearer ghp_REAL");
    assert_eq!(swaps.apply(b"nothing here"), None);
    // Another secret's placeholder is not swapped: the scan for this host
    // finds it.
    assert_eq!(swaps.apply(b"x=cordon-placeholder-bbbb"), None);
    let mut scan = s.scan_spelled_for(&gh, 443);
    assert_eq!(
        scan.feed(b"x=cordon-placeholder-bbbb").unwrap().name,
        "OTHER"
    );
    // Elsewhere, both are forbidden.
    let evil = normalize("evil.example").unwrap();
    assert!(s
        .body_swaps(&evil, 443)
        .apply(b"cordon-placeholder-aaaa")
        .is_none());
    let mut scan = s.scan_spelled_for(&evil, 443);
    assert!(scan.feed(b"cordon-placeholder-aaaa").is_some());
}

#[test]
fn basic_auth_is_swapped_inside_the_base64() {
    let s = secrets();
    let swaps = s.body_swaps(&normalize("api.github.com").unwrap(), 443);
    let header = format!("Basic {}", BASE64.encode("git:cordon-placeholder-aaaa"));
    let mut learned = Swaps::default();
    let out = swaps.apply_header(header.as_bytes(), &mut learned).unwrap();
    let expected = format!("Basic {}", BASE64.encode("git:ghp_REAL"));
    assert_eq!(String::from_utf8(out).unwrap(), expected);
    // The response masks the encoded real credential back.
    let back = learned.reversed();
    let echoed = format!("you sent {}", BASE64.encode("git:ghp_REAL"));
    let masked = back.apply(echoed.as_bytes()).unwrap();
    assert_eq!(
        String::from_utf8(masked).unwrap(),
        format!("you sent {}", BASE64.encode("git:cordon-placeholder-aaaa"))
    );
    // A forbidden placeholder inside Basic is found by the scan.
    let mut scan = s.scan_spelled_for(&normalize("evil.example").unwrap(), 443);
    assert!(scan.feed_value(header.as_bytes()).is_some());
}

#[test]
fn responses_are_masked() {
    let s = secrets();
    let masked = s
        .response_swaps()
        .apply(b"token=ghp_REAL&o=other-real")
        .unwrap();
    assert_eq!(
        masked,
        b"token=cordon-placeholder-aaaa&o=cordon-placeholder-bbbb"
    );
}

#[test]
fn streaming_finds_patterns_across_chunks() {
    let s = secrets();
    let text = b"aa ghp_REAL bb ghp_REAL cc other-real dd ghp_REA".to_vec();
    let expected = s.response_swaps().apply(&text).unwrap();
    for size in 1..text.len() {
        let mut st = s.response_swaps().stream();
        let mut out = Vec::new();
        for chunk in text.chunks(size) {
            out.extend(st.push(chunk));
        }
        out.extend(st.finish());
        assert_eq!(out, expected, "chunk size {size}");
    }
}

/// A secret whose value holds bytes every encoding treats specially.
fn awkward() -> (Secrets, Vec<u8>, String) {
    let value = b"tok/en+\"x\\y=z~a b%c&d<e>f'g-REAL-0123456789".to_vec();
    let placeholder = "cordon-placeholder-cccc".to_string();
    let s = Secrets::from_list(vec![Secret::new(
        "AWK",
        &placeholder,
        value.clone(),
        vec![],
    )]);
    (s, value, placeholder)
}

#[test]
fn base64_in_every_alignment_is_masked() {
    use base64::engine::general_purpose::{STANDARD, STANDARD_NO_PAD, URL_SAFE, URL_SAFE_NO_PAD};
    let (s, value, _) = awkward();
    let mask = s.response_swaps();
    let engines: [(
        &base64::engine::GeneralPurpose,
        &base64::engine::GeneralPurpose,
    ); 2] = [(&STANDARD, &STANDARD_NO_PAD), (&URL_SAFE, &URL_SAFE_NO_PAD)];
    for (padded, lenient) in engines {
        for before in 0..3 {
            for after in 0..3 {
                let mut data = b"{\"k\":".repeat(before);
                data.truncate(before);
                data.extend_from_slice(&value);
                data.extend_from_slice(&b"}]"[..after.min(2)]);
                let encoded = padded.encode(&data);
                let text = format!("data: {encoded}\n");
                let out = mask.apply(text.as_bytes()).expect("masked");
                let out = String::from_utf8(out).unwrap();
                let run = out.trim_start_matches("data: ").trim_end();
                assert_eq!(run.len(), encoded.len(), "{text} -> {out}");
                // Whatever decodes from the masked run holds at most the
                // value's outermost bytes.
                let decoded = lenient.decode(run.trim_end_matches('=')).unwrap();
                let inner = &value[2..value.len() - 2];
                assert!(
                    memmem::find(&decoded, inner).is_none(),
                    "{before}/{after}: {out}"
                );
            }
        }
    }
}

#[test]
fn hex_percent_json_and_reversed_forms_are_masked_to_the_placeholders() {
    let (s, value, placeholder) = awkward();
    let mask = s.response_swaps();
    let hex: String = value.iter().map(|b| format!("{b:02x}")).collect();
    let hex_ph: String = placeholder.bytes().map(|b| format!("{b:02x}")).collect();
    let upper: String = value.iter().map(|b| format!("{b:02X}")).collect();
    let reversed: Vec<u8> = value.iter().rev().copied().collect();
    let all_pct: String = value.iter().map(|b| format!("%{b:02X}")).collect();
    let some_pct: String = value
        .iter()
        .map(|&b| {
            if b.is_ascii_alphanumeric() || b"-._~".contains(&b) {
                (b as char).to_string()
            } else {
                format!("%{b:02x}")
            }
        })
        .collect();
    let json = serde_json::to_string(std::str::from_utf8(&value).unwrap()).unwrap();
    let slashed = json.replace('/', "\\/");
    let unicode: String = value
        .iter()
        .map(|&b| {
            if b.is_ascii_alphanumeric() {
                (b as char).to_string()
            } else {
                format!("\\u{b:04x}")
            }
        })
        .collect();
    let all_unicode: String = value.iter().map(|b| format!("\\u{b:04X}")).collect();
    let mut text = Vec::new();
    for form in [
        &hex,
        &upper,
        &all_pct,
        &some_pct,
        &json,
        &slashed,
        &unicode,
        &all_unicode,
    ] {
        text.extend_from_slice(form.as_bytes());
        text.push(b'\n');
    }
    text.extend_from_slice(&reversed);
    let out = mask.apply(&text).expect("masked");
    let out_text = String::from_utf8_lossy(&out).to_string();
    for form in [
        &hex,
        &upper,
        &all_pct,
        &some_pct,
        &slashed,
        &unicode,
        &all_unicode,
    ] {
        assert!(!out_text.contains(form.as_str()), "{form} in {out_text}");
    }
    assert!(!out_text.contains(&json[1..json.len() - 1]), "{out_text}");
    assert!(memmem::find(&out, &reversed).is_none(), "{out_text}");
    assert!(out_text.contains(&hex_ph), "{out_text}");
    let reversed_ph: String = placeholder.chars().rev().collect();
    assert!(out_text.contains(&reversed_ph), "{out_text}");
    assert!(out_text.contains(&placeholder), "{out_text}");
}

#[test]
fn streams_mask_forms_across_chunks_and_hold_back_only_what_could_begin_one() {
    let (s, value, _) = awkward();
    let hex: String = value.iter().map(|b| format!("{b:02x}")).collect();
    let b64 = BASE64.encode(&value);
    let mut text = b"start ".to_vec();
    for _ in 0..3 {
        text.extend_from_slice(&value);
        text.extend_from_slice(b" | ");
        text.extend_from_slice(hex.as_bytes());
        text.extend_from_slice(b" | ");
        text.extend_from_slice(b64.as_bytes());
    }
    let mask = s.response_swaps();
    let expected = mask.apply(&text).unwrap();
    for size in [1, 2, 3, 7, 16, 61, 100] {
        let mut st = mask.stream();
        let mut out = Vec::new();
        for chunk in text.chunks(size) {
            out.extend(st.push(chunk));
        }
        out.extend(st.finish());
        assert_eq!(out, expected, "chunk size {size}");
    }
    // Same-length masks keep a stream's length.
    let same = mask.same_length();
    let out = same.apply(&text).unwrap();
    assert_eq!(out.len(), text.len());
    assert!(memmem::find(&out, &value).is_none());
    // An interactive stream is not held back unless its tail could
    // begin a form.
    let mut st = same.stream();
    assert_eq!(st.push(b"hello, world!\n"), b"hello, world!\n");
    assert_eq!(st.push(&value[..5]), b"");
    assert_eq!(st.finish(), &value[..5]);
}

/// Percent-encodes every byte of `v` but the ones in `keep` and ASCII
/// letters and digits, with upper- or lower-case hex.
fn percent_except(v: &[u8], keep: &[u8], upper: bool) -> String {
    v.iter()
        .map(|&b| {
            if b.is_ascii_alphanumeric() || keep.contains(&b) {
                char::from(b).to_string()
            } else if upper {
                format!("%{b:02X}")
            } else {
                format!("%{b:02x}")
            }
        })
        .collect()
}

/// Replaces each byte of `v` found in `table` by its spelling there.
fn replace_bytes(v: &[u8], table: &[(u8, &str)]) -> String {
    v.iter()
        .map(|&b| {
            table
                .iter()
                .find(|(c, _)| *c == b)
                .map_or_else(|| char::from(b).to_string(), |(_, s)| s.to_string())
        })
        .collect()
}

/// Quoted-printable (RFC 2045): `=XX` for `=` and bytes outside
/// printable ASCII (and for space, as a line end would need), soft
/// line breaks (`=` CRLF) so no line is over `width` characters.
fn quoted_printable(v: &[u8], width: usize) -> String {
    let mut out = String::new();
    let mut column = 0;
    for &b in v {
        let unit = if b == b'=' || b == b' ' || !(33..=126).contains(&b) {
            format!("={b:02X}")
        } else {
            char::from(b).to_string()
        };
        if column + unit.len() > width - 1 {
            out.push_str("=\r\n");
            column = 0;
        }
        column += unit.len();
        out.push_str(&unit);
    }
    out
}

/// The escaped forms encoders give of `v`, named.
fn escaped_forms(v: &[u8]) -> Vec<(&'static str, String)> {
    let json = serde_json::to_string(std::str::from_utf8(v).unwrap()).unwrap();
    let json = json[1..json.len() - 1].to_string();
    let go_json = json
        .replace('&', "\\u0026")
        .replace('<', "\\u003c")
        .replace('>', "\\u003e");
    let html = [
        (b'&', "&amp;"),
        (b'<', "&lt;"),
        (b'>', "&gt;"),
        (b'"', "&quot;"),
        (b'\'', "&#39;"),
    ];
    let mut html_more = html.to_vec();
    html_more.extend([(b'/', "&#x2F;"), (b'+', "&#43;"), (b'=', "&#x3D;")]);
    let all_decimal: String = v.iter().map(|b| format!("&#{b};")).collect();
    let all_hex: String = v.iter().map(|b| format!("&#x{b:X};")).collect();
    let quote_plus = percent_except(v, b"_.-~ ", true).replace(' ', "+");
    vec![
        ("python quote()", percent_except(v, b"_.-~/", true)),
        ("python quote_plus()", quote_plus),
        (
            "encodeURI",
            percent_except(v, b";,/?:@&=+$-_.!~*'()#", true),
        ),
        ("encodeURIComponent", percent_except(v, b"-_.!~*'()", true)),
        ("lower-case percent", percent_except(v, b"", false)),
        ("go encoding/json", go_json),
        ("json with \\/", json.replace('/', "\\/")),
        ("html escape", replace_bytes(v, &html)),
        ("html escape, more", replace_bytes(v, &html_more)),
        ("html decimal refs", all_decimal),
        ("html hex refs", all_hex),
        ("quoted-printable", quoted_printable(v, 76)),
        ("quoted-printable, short lines", quoted_printable(v, 12)),
    ]
}

/// `text` masked by `swaps` in one piece, and streamed in chunks of
/// every size given, which must agree.
fn mask_in_chunks(swaps: &Swaps, text: &[u8], sizes: &[usize]) -> Vec<u8> {
    let whole = swaps.apply(text).unwrap_or_else(|| text.to_vec());
    for &size in sizes {
        let mut st = swaps.stream();
        let mut out = Vec::new();
        for chunk in text.chunks(size) {
            out.extend(st.push(chunk));
        }
        out.extend(st.finish());
        assert_eq!(
            String::from_utf8_lossy(&out),
            String::from_utf8_lossy(&whole),
            "chunk size {size}"
        );
    }
    whole
}

#[test]
fn every_escaping_encoder_is_masked_across_chunks() {
    let (s, value, placeholder) = awkward();
    let mask = s.response_swaps();
    let same = mask.same_length();
    for (encoder, form) in escaped_forms(&value) {
        assert_ne!(form.as_bytes(), value.as_slice(), "{encoder}");
        let text = format!("<p>before {form} after</p>\n");
        let out = mask_in_chunks(&mask, text.as_bytes(), &[1, 2, 3, 5, 7, 13, 64]);
        assert_eq!(
            String::from_utf8(out).unwrap(),
            format!("<p>before {placeholder} after</p>\n"),
            "{encoder}: {form}"
        );
        let out = mask_in_chunks(&same, text.as_bytes(), &[1, 3, 7]);
        assert_eq!(out.len(), text.len(), "{encoder}");
        let out = String::from_utf8(out).unwrap();
        assert!(out.starts_with("<p>before ") && out.ends_with(" after</p>\n"));
        assert!(!out.contains(&form), "{encoder}: {out}");
    }
}

#[test]
fn line_wrapped_base64_is_masked_across_chunks() {
    use base64::engine::general_purpose::{STANDARD, URL_SAFE};
    // Long enough that every wrapping breaks the value's run.
    let value = awkward().1.repeat(3);
    let s = Secrets::from_list(vec![Secret::new(
        "W",
        "cordon-placeholder-dddd",
        value.clone(),
        vec![],
    )]);
    let mask = s.response_swaps();
    for engine in [&STANDARD, &URL_SAFE] {
        for (width, eol) in [(76, "\r\n"), (64, "\n"), (64, "\r\n"), (76, "\n")] {
            for before in 0..3 {
                let mut data = b"xyz"[..before].to_vec();
                data.extend_from_slice(&value);
                data.extend_from_slice(b"!");
                let encoded = engine.encode(&data);
                let wrapped: Vec<&str> = encoded
                    .as_bytes()
                    .chunks(width)
                    .map(|c| std::str::from_utf8(c).unwrap())
                    .collect();
                let wrapped = wrapped.join(eol);
                let text = format!("-----BEGIN X-----{eol}{wrapped}{eol}-----END X-----{eol}");
                let out = mask_in_chunks(&mask, text.as_bytes(), &[1, 5, 64, 77]);
                assert_eq!(out.len(), text.len(), "{width}/{before}");
                let out = String::from_utf8(out).unwrap();
                // The line breaks stay where they were.
                let breaks = |t: &str| {
                    t.match_indices(['\r', '\n'])
                        .map(|(i, _)| i)
                        .collect::<Vec<_>>()
                };
                assert_eq!(breaks(&out), breaks(&text), "{width}/{before}");
                let run: String = out
                    .lines()
                    .filter(|l| !l.starts_with("-----"))
                    .map(str::trim_end)
                    .collect();
                let decoded = engine.decode(&run).unwrap();
                assert!(
                    memmem::find(&decoded, &value[2..value.len() - 2]).is_none(),
                    "{width}/{before}: {out}"
                );
            }
        }
    }
}

#[test]
fn random_text_is_left_alone() {
    let (s, _, _) = awkward();
    let mask = s.response_swaps();
    // Text full of escape starters and base64 characters, from a
    // fixed xorshift sequence.
    let alphabet = b"abcdefghijklmnopqrstuvwxyzABCDEF0123456789%&=+\\/;#x\r\n \"<>";
    let mut x: u64 = 0x2545_f491_4f6c_dd1d;
    let text: Vec<u8> = (0..1 << 20)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            alphabet[(x % alphabet.len() as u64) as usize]
        })
        .collect();
    assert_eq!(mask.apply(&text), None);
    assert_eq!(mask.same_length().apply(&text), None);
    let mut st = mask.stream();
    let mut out = Vec::new();
    for chunk in text.chunks(4096) {
        out.extend(st.push(chunk));
    }
    out.extend(st.finish());
    assert_eq!(out, text);
}

#[test]
fn escapes_are_read_exactly() {
    for (s, want) in [
        (&b"%2f"[..], Escape::Byte(b'/', 3)),
        (b"=3D", Escape::Byte(b'=', 3)),
        (b"\\u002F", Escape::Byte(b'/', 6)),
        (b"\\/", Escape::Byte(b'/', 2)),
        (b"&#047;", Escape::Byte(b'/', 6)),
        (b"&#X2f;", Escape::Byte(b'/', 6)),
        (b"&UnderBar;", Escape::Byte(b'_', 10)),
        (b"&amp", Escape::Partial),
        (b"&amp ", Escape::Not),
        (b"&#;", Escape::Not),
        (b"&nbsp;", Escape::Not),
        (b"&#233;", Escape::Not),
        (b"\\u00e9", Escape::Not),
        (b"%zz", Escape::Not),
        (b"%4", Escape::Partial),
    ] {
        assert_eq!(escape_at(s), want, "{}", String::from_utf8_lossy(s));
    }
}

#[test]
fn placeholder_scans_find_splits_and_pass_everything_else() {
    let s = secrets();
    let gh = normalize("api.github.com").unwrap();
    let mut scan = s.scan_spelled_for(&gh, 443);
    assert!(scan.feed(b"cordon-placeholder-aa").is_none());
    assert!(scan
        .feed(b"aa is allowed here; cordon-placeholder-bb")
        .is_none());
    assert_eq!(scan.feed(b"bb").unwrap().name, "OTHER");
    // Where every secret may go, there is nothing to scan for.
    let anywhere = Secrets::from_list(vec![Secret::new(
        "ANY",
        "cordon-placeholder-dddd",
        b"any-real".to_vec(),
        vec![HostMatch::Any],
    )]);
    assert!(anywhere.scan_spelled_for(&gh, 443).is_empty());
    assert!(!anywhere.scan_spelled().is_empty());
}

/// `body` pushed through `scan` in chunks of `size`: what was let out
/// before the first placeholder was found (`Err`), or all it let out.
fn pushed(mut scan: SpelledScan, body: &[u8], size: usize) -> Result<Vec<u8>, Vec<u8>> {
    let mut out = Vec::new();
    for chunk in body.chunks(size) {
        match scan.push(Bytes::copy_from_slice(chunk)) {
            Ok(part) => out.extend_from_slice(&part),
            Err(_) => return Err(out),
        }
    }
    out.extend_from_slice(&scan.finish());
    Ok(out)
}

#[test]
fn held_back_scans_let_out_no_byte_of_a_placeholders_random_part_however_spelled_or_split() {
    let s = secrets();
    let gh = normalize("api.github.com").unwrap();
    let spellings: [&[u8]; 6] = [
        b"cordon-placeholder-bbbb",
        b"CORDON-PLACEHOLDER-BBBB",
        b"cordon%2dplaceholder%2dbbbb",
        b"Cordon%2DPlaceholder%2Dbbbb",
        b"%63ordon-placeholder-bbbb",
        b"cordon-placeholder-%62%42bb",
    ];
    for spelling in spellings {
        let body = [&b"x="[..], spelling, b";"].concat();
        // The constant prefix is no secret: at most it, and what comes
        // before it, may be let out.
        let random_at = if spelling.ends_with(b"%62%42bb") {
            body.len() - ";%62%42bb".len()
        } else {
            body.len() - ";bbbb".len()
        };
        for size in 1..body.len() {
            let before = pushed(s.scan_spelled_for(&gh, 443), &body, size);
            let shown = String::from_utf8_lossy(spelling);
            let caught = before.is_err_and(|out| body[..random_at].starts_with(&out));
            assert!(caught, "{shown}, chunk size {size}");
        }
    }
    // A placeholder that may go to the host goes, as do other bytes.
    let allowed = b"x=cordon-placeholder-aaaa; c % cordon-placeholder-b cordon-";
    for size in 1..allowed.len() {
        let out = pushed(s.scan_spelled_for(&gh, 443), allowed, size);
        assert_eq!(out, Ok(allowed.to_vec()), "chunk size {size}");
    }
}

#[test]
fn held_back_scans_hold_only_a_placeholders_random_part() {
    let s = secrets();
    let mut scan = s.scan_spelled();
    let push =
        |scan: &mut SpelledScan, chunk: &[u8]| scan.push(Bytes::copy_from_slice(chunk)).unwrap();
    assert_eq!(&push(&mut scan, b"hello ")[..], b"hello ");
    // What could only be the constant prefix goes at once, in any
    // spelling, an escape cut short included.
    for end in [
        &b"c"[..],
        b"C",
        b"%",
        b"%6",
        b"CORDON-pla",
        b"cordon-placeholder",
        b"cordon-placeholder%2",
    ] {
        assert_eq!(&push(&mut scan, end)[..], end);
    }
    // The random part waits while it may still be a placeholder's.
    assert_eq!(&push(&mut scan, b"d")[..], b"d");
    assert_eq!(&push(&mut scan, b"b")[..], b"");
    assert_eq!(scan.held(), 1);
    assert_eq!(&push(&mut scan, b"b%6")[..], b"");
    assert_eq!(scan.held(), "bb%6".len());
    // Not a placeholder after all: the held bytes go with the rest.
    assert_eq!(&push(&mut scan, b"0 c")[..], b"bb%60 c");
    assert_eq!(
        &push(&mut scan, b"ordon-placeholder-a")[..],
        b"ordon-placeholder-"
    );
    assert_eq!(&scan.finish()[..], b"a");
    assert_eq!(scan.held(), 0);
}

#[test]
fn header_scans_read_names_and_values_split_across_fields() {
    let s = secrets();
    let found = |fields: &[(&str, &str)]| {
        let mut headers = http::HeaderMap::new();
        for (name, value) in fields {
            headers.append(
                http::HeaderName::from_bytes(name.as_bytes()).unwrap(),
                http::HeaderValue::from_str(value).unwrap(),
            );
        }
        s.scan_spelled()
            .feed_head(b"GET", b"/path", &headers)
            .map(|e| e.name)
    };
    assert_eq!(
        found(&[("x-cordon-placeholder-bbbb", "1")]).unwrap(),
        "OTHER"
    );
    assert_eq!(
        found(&[("x-a", "cordon-place"), ("x-b", "HOLDER-BBBB")]).unwrap(),
        "OTHER"
    );
    let bearer = format!("Bearer {}", BASE64.encode("cordon-placeholder-aaaa"));
    assert_eq!(
        found(&[("authorization", &bearer)]).unwrap(),
        "GITHUB_TOKEN"
    );
    assert!(found(&[("x-a", "cordon-placeholder"), ("accept", "*/*")]).is_none());
}

#[test]
fn head_scans_read_the_method_on_its_own() {
    let s = secrets();
    let headers = http::HeaderMap::new();
    let found = |method: &[u8]| {
        s.scan_spelled()
            .feed_head(method, b"/path", &headers)
            .map(|e| e.name)
    };
    assert_eq!(found(b"CORDON-PLACEHOLDER-BBBB").unwrap(), "OTHER");
    assert_eq!(found(b"cordon%2Dplaceholder-aaaa").unwrap(), "GITHUB_TOKEN");
    assert!(found(b"GET").is_none());
}

#[test]
fn value_scans_decode_each_part_of_a_jwt_on_its_own() {
    use base64::engine::general_purpose::URL_SAFE_NO_PAD as B64U;
    let s = secrets();
    // A 19-character first part puts the payload out of alignment when
    // the token is read whole.
    let header = B64U.encode(r#"{"alg":"none"}"#);
    assert_eq!(header.len() % 4, 3);
    let payload = B64U.encode(r#"{"sub":"cordon-placeholder-bbbb"}"#);
    let jwt = format!("Bearer {header}.{payload}.c2ln");
    let found = s.scan_spelled().feed_value(jwt.as_bytes()).map(|e| e.name);
    assert_eq!(found.unwrap(), "OTHER");
    let clean = format!("Bearer {header}.{}.c2ln", B64U.encode(r#"{"sub":"me"}"#));
    assert!(s.scan_spelled().feed_value(clean.as_bytes()).is_none());
}

#[test]
fn spelled_scans_find_cases_escapes_base64_and_splits() {
    let s = secrets();
    let found = |chunks: &[&[u8]]| {
        let mut scan = s.scan_spelled();
        chunks
            .iter()
            .find_map(|c| scan.feed_value(c))
            .map(|e| e.name)
    };
    assert_eq!(found(&[b"x=CORDON-PLACEHOLDER-BBBB"]).unwrap(), "OTHER");
    assert_eq!(
        found(&[b"cordon%2dplaceholder%2", b"dbb", b"bb"]).unwrap(),
        "OTHER"
    );
    assert_eq!(
        found(&[b"cordon-place", b"holder-aaaa"]).unwrap(),
        "GITHUB_TOKEN"
    );
    let basic = format!("Basic {}", BASE64.encode("u:cordon-placeholder-bbbb"));
    assert_eq!(found(&[basic.as_bytes()]).unwrap(), "OTHER");
    assert!(found(&[b"cordon-placeholder-cccc 100% %zz %2"]).is_none());
    // Mixed spellings, and escapes split across chunks at any offset.
    let mixed = b"x=C%4fRDON%2dplace%68older-b%62bB;";
    for size in 1..mixed.len() {
        let chunks: Vec<&[u8]> = mixed.chunks(size).collect();
        assert_eq!(found(&chunks).unwrap(), "OTHER", "chunk size {size}");
    }
    assert_eq!(decoded_at(b"a%41%4", 1), Some((b'A', 4)));
    assert_eq!(decoded_at(b"a%41%4", 4), None);
    assert_eq!(decoded_at(b"%zz%", 0), Some((b'%', 1)));
    assert_eq!(decoded_at(b"%zz%", 3), None);
}

#[test]
fn values_are_read_and_checked() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("tok");
    std::fs::write(&file, "from-file\n").unwrap();
    let specs = vec![
        Sourced::new(
            InjectSpec {
                env: "A".into(),
                source: SecretSource::File(file.clone()),
                hosts: vec![HostMatch::Any],
                when_set: false,
                headers: Vec::new(),
            },
            crate::policy::Source::Builtin,
        ),
        Sourced::new(
            InjectSpec {
                env: "B".into(),
                source: SecretSource::Command(vec!["printf".into(), "from-cmd\n".into()]),
                hosts: vec![HostMatch::Any],
                when_set: false,
                headers: Vec::new(),
            },
            crate::policy::Source::Builtin,
        ),
    ];
    let resolved =
        Secrets::resolve(&specs, &[("A".into(), "cordon-placeholder-1".into())]).unwrap();
    let values: Vec<&[u8]> = resolved.iter().map(|s| s.value.as_slice()).collect();
    assert_eq!(values, vec![&b"from-file"[..], &b"from-cmd"[..]]);
    assert_eq!(
        resolved.iter().next().unwrap().placeholder,
        "cordon-placeholder-1"
    );
    // Debug never shows the value.
    assert!(!format!("{resolved:?}").contains("from-file"));
    std::fs::write(&file, "two\nlines").unwrap();
    let err = Secrets::resolve(&specs[..1], &[]).unwrap_err().to_string();
    assert!(err.contains("control characters"), "{err}");
    assert!(!err.contains("two"), "{err}");
    let failing = vec![Sourced::new(
        InjectSpec {
            env: "C".into(),
            source: SecretSource::Command(vec!["false".into()]),
            hosts: vec![],
            when_set: false,
            headers: Vec::new(),
        },
        crate::policy::Source::Builtin,
    )];
    assert!(Secrets::resolve(&failing, &[]).is_err());
}
