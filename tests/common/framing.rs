//! Requests whose body framing is ambiguous (RFC 9112 §6, §11.2): every
//! one must be refused with 400 by the proxy, on the plain-HTTP path and
//! inside inspected tunnels alike, and reach no upstream.
//!
//! Each case is a Python bytes expression for a whole request head and
//! body; `TARGET` stands for the request target and `AUTHORITY` for the
//! `Host` header's value, filled in by [`python_cases`].

/// `(label, python bytes expression)`.
pub const AMBIGUOUS_FRAMING: &[(&str, &str)] = &[
    (
        "te-and-cl",
        r"HEAD + b'Transfer-Encoding: chunked\r\nContent-Length: 5\r\n\r\n' + CHUNKED",
    ),
    (
        "cl-and-te",
        r"HEAD + b'Content-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n' + CHUNKED",
    ),
    (
        "te-not-utf8-then-chunked",
        r"HEAD + b'Transfer-Encoding: \xff\r\nTransfer-Encoding: chunked\r\nContent-Length: 49\r\n\r\n' + CHUNKED",
    ),
    (
        "te-not-utf8",
        r"HEAD + b'Transfer-Encoding: ch\xffunked\r\n\r\n' + CHUNKED",
    ),
    (
        "te-chunked-not-last",
        r"HEAD + b'Transfer-Encoding: chunked, gzip\r\n\r\n' + CHUNKED",
    ),
    (
        "te-list",
        r"HEAD + b'Transfer-Encoding: gzip, chunked\r\n\r\n' + CHUNKED",
    ),
    (
        "te-twice",
        r"HEAD + b'Transfer-Encoding: chunked\r\nTransfer-Encoding: chunked\r\n\r\n' + CHUNKED",
    ),
    (
        "te-identity",
        r"HEAD + b'Transfer-Encoding: identity\r\nContent-Length: 5\r\n\r\nhello'",
    ),
    (
        "te-obs-fold",
        r"HEAD + b'Transfer-Encoding: gzip,\r\n chunked\r\n\r\n' + CHUNKED",
    ),
    (
        "cl-twice-same",
        r"HEAD + b'Content-Length: 5\r\nContent-Length: 5\r\n\r\nhello'",
    ),
    (
        "cl-twice-differing",
        r"HEAD + b'Content-Length: 5\r\nContent-Length: 10\r\n\r\nhellohello'",
    ),
    ("cl-list", r"HEAD + b'Content-Length: 5, 5\r\n\r\nhello'"),
    ("cl-plus", r"HEAD + b'Content-Length: +5\r\n\r\nhello'"),
    ("cl-minus", r"HEAD + b'Content-Length: -1\r\n\r\nhello'"),
    ("cl-spaces", r"HEAD + b'Content-Length:  5 \r\n\r\nhello'"),
    ("cl-hex", r"HEAD + b'Content-Length: 0x5\r\n\r\nhello'"),
    ("cl-empty", r"HEAD + b'Content-Length:\r\n\r\nhello'"),
    (
        "cl-too-large",
        r"HEAD + b'Content-Length: 99999999999999999999999\r\n\r\nhello'",
    ),
    (
        "space-before-colon",
        r"HEAD + b'Content-Length : 5\r\n\r\nhello'",
    ),
    (
        "tab-before-colon",
        r"HEAD + b'Transfer-Encoding\t: chunked\r\nContent-Length: 5\r\n\r\nhello'",
    ),
    (
        "bare-lf",
        r"b'POST ' + TARGET + b' HTTP/1.1\nHost: ' + AUTHORITY + b'\nContent-Length: 5\r\n\r\nhello'",
    ),
    (
        "bare-cr",
        r"HEAD + b'X-Pad: a\rContent-Length: 5\r\n\r\nhello'",
    ),
    (
        "nul",
        r"HEAD + b'X-Pad: a\x00b\r\nContent-Length: 5\r\n\r\nhello'",
    ),
];

/// A Python prelude defining `HEAD` (request line and `Host`), `CHUNKED`
/// (a chunked body of `hello`) and `CASES` (label, bytes), for the request
/// target `target` and the `Host` value `authority`.
pub fn python_cases(target: &str, authority: &str) -> String {
    let mut out = format!(
        "TARGET = b'{target}'\nAUTHORITY = b'{authority}'\n\
         HEAD = b'POST ' + TARGET + b' HTTP/1.1\\r\\nHost: ' + AUTHORITY + b'\\r\\n'\n\
         CHUNKED = b'5\\r\\nhello\\r\\n0\\r\\n\\r\\n'\nCASES = [\n"
    );
    for (label, expr) in AMBIGUOUS_FRAMING {
        out.push_str(&format!("    ('{label}', {expr}),\n"));
    }
    out.push_str("]\n");
    out
}
