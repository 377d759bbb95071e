# Requests whose body framing is ambiguous (RFC 9112 sections 6 and 11.2):
# every one must be refused with 400 by the proxy, on the plain-HTTP path
# and inside inspected tunnels alike, and reach no upstream. Put before a
# script that calls framing_cases(target, authority) for `HEAD` (request
# line and Host), `CHUNKED` (a chunked body of `hello`) and `CASES`
# (label, whole request). tests/common/framing.rs reads the labels from
# this file: one case a line, as `    ('label', ...`.


def framing_cases(target, authority):
    TARGET, AUTHORITY = target.encode(), authority.encode()
    HEAD = b'POST ' + TARGET + b' HTTP/1.1\r\nHost: ' + AUTHORITY + b'\r\n'
    CHUNKED = b'5\r\nhello\r\n0\r\n\r\n'
    CASES = [
    ('te-and-cl', HEAD + b'Transfer-Encoding: chunked\r\nContent-Length: 5\r\n\r\n' + CHUNKED),
    ('cl-and-te', HEAD + b'Content-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n' + CHUNKED),
    ('te-not-utf8-then-chunked', HEAD + b'Transfer-Encoding: \xff\r\nTransfer-Encoding: chunked\r\nContent-Length: 49\r\n\r\n' + CHUNKED),
    ('te-not-utf8', HEAD + b'Transfer-Encoding: ch\xffunked\r\n\r\n' + CHUNKED),
    ('te-chunked-not-last', HEAD + b'Transfer-Encoding: chunked, gzip\r\n\r\n' + CHUNKED),
    ('te-list', HEAD + b'Transfer-Encoding: gzip, chunked\r\n\r\n' + CHUNKED),
    ('te-twice', HEAD + b'Transfer-Encoding: chunked\r\nTransfer-Encoding: chunked\r\n\r\n' + CHUNKED),
    ('te-identity', HEAD + b'Transfer-Encoding: identity\r\nContent-Length: 5\r\n\r\nhello'),
    ('te-obs-fold', HEAD + b'Transfer-Encoding: gzip,\r\n chunked\r\n\r\n' + CHUNKED),
    ('cl-twice-same', HEAD + b'Content-Length: 5\r\nContent-Length: 5\r\n\r\nhello'),
    ('cl-twice-differing', HEAD + b'Content-Length: 5\r\nContent-Length: 10\r\n\r\nhellohello'),
    ('cl-list', HEAD + b'Content-Length: 5, 5\r\n\r\nhello'),
    ('cl-plus', HEAD + b'Content-Length: +5\r\n\r\nhello'),
    ('cl-minus', HEAD + b'Content-Length: -1\r\n\r\nhello'),
    ('cl-spaces', HEAD + b'Content-Length:  5 \r\n\r\nhello'),
    ('cl-hex', HEAD + b'Content-Length: 0x5\r\n\r\nhello'),
    ('cl-empty', HEAD + b'Content-Length:\r\n\r\nhello'),
    ('cl-too-large', HEAD + b'Content-Length: 99999999999999999999999\r\n\r\nhello'),
    ('space-before-colon', HEAD + b'Content-Length : 5\r\n\r\nhello'),
    ('tab-before-colon', HEAD + b'Transfer-Encoding\t: chunked\r\nContent-Length: 5\r\n\r\nhello'),
    ('bare-lf', b'POST ' + TARGET + b' HTTP/1.1\nHost: ' + AUTHORITY + b'\nContent-Length: 5\r\n\r\nhello'),
    ('bare-cr', HEAD + b'X-Pad: a\rContent-Length: 5\r\n\r\nhello'),
    ('nul', HEAD + b'X-Pad: a\x00b\r\nContent-Length: 5\r\n\r\nhello'),
    ]
    return HEAD, CHUNKED, CASES
