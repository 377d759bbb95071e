# Raw requests to the HTTP proxy (127.0.0.1:3128), one connection each:
# argv[1] is how they go, `plain` (absolute-form HTTP through the proxy)
# or `inspected` (origin-form, in a CONNECT tunnel the proxy inspects,
# over TLS with the sandbox's CA), argv[2] the upstream's port, the rest
# the labels of the cases to send. The placeholder is TEST_TOKEN's value
# in the sandbox. Prints the placeholder, then one line per case: label,
# status line, first body line.
import base64
import os
import socket
import ssl
import sys
import time

INSPECTED = sys.argv[1] == 'inspected'
PORT = int(sys.argv[2])
P = os.environ.get('TEST_TOKEN', 'no-placeholder').encode()
HALF = len(P) // 2
AUTH = b'127.0.0.1:%d' % PORT
CHUNKED = b'Transfer-Encoding: chunked\r\n'
# The placeholder with its dashes percent-encoded, the escape split.
ENCODED = P.replace(b'-', b'%2d')
CUT = ENCODED.index(b'%2d') + 2
B64 = base64.b64encode(b'u:' + P)


# The first (and only) chunk of each `body-interactive-*` case: it must
# reach the upstream before the body ends.
PREFIX = b'cordon-placeholder-'
INTERACTIVE = {
    'c': b'abc',
    'escape': b'a=Cordon%2',
    'prefix': b'a=' + PREFIX[:-1],
    'whole-prefix': b'a=' + PREFIX.upper(),
}


# Where a request's target starts: the authority is the tunnel's when inspected.
ORIGIN = b'' if INSPECTED else b'http://' + AUTH


def req(method, label, headers=b'', body=b'', query=b''):
    return (method + b' ' + ORIGIN + b'/' + label.encode() + query
            + b' HTTP/1.1\r\nHost: ' + AUTH + b'\r\n' + headers + b'\r\n' + body)


def chunk(data):
    return b'%x\r\n' % len(data) + data + b'\r\n'


def length(body):
    return b'Content-Length: %d\r\n' % len(body)


CASES = {
    'clean-body': lambda l: req(b'POST', l, length(b'hello'), b'hello'),
    'body-length': lambda l: req(b'POST', l, length(b'token=' + P), b'token=' + P),
    'body-chunks-split': lambda l: req(b'POST', l, CHUNKED,
                                       chunk(b'a=' + P[:HALF]) + chunk(P[HALF:]) + b'0\r\n\r\n'),
    # Sent in two writes 0.15 s apart: the proxy has forwarded the
    # first chunk before the second completes the placeholder.
    'body-paused': lambda l: [req(b'POST', l, CHUNKED, chunk(b'a=' + P[:-1])),
                              chunk(P[-1:]) + b'0\r\n\r\n'],
    'body-upper': lambda l: req(b'POST', l, length(P.upper()), P.upper()),
    'body-percent-split': lambda l: req(b'POST', l, CHUNKED,
                                        chunk(ENCODED[:CUT]) + chunk(ENCODED[CUT:]) + b'0\r\n\r\n'),
    'trailer': lambda l: req(b'POST', l, CHUNKED + b'Trailer: X-T\r\n',
                             chunk(b'hi') + b'0\r\nX-T: ' + P + b'\r\n\r\n'),
    'trailer-upper': lambda l: req(b'POST', l, CHUNKED + b'Trailer: X-T\r\n',
                                   chunk(b'hi') + b'0\r\nX-T: ' + P.upper() + b'\r\n\r\n'),
    'target-percent': lambda l: req(b'GET', l, query=b'?t=' + ENCODED),
    'target-upper': lambda l: req(b'GET', l, query=b'?t=' + P.upper()),
    'basic': lambda l: req(b'GET', l, b'Authorization: Basic ' + base64.b64encode(b'u:' + P) + b'\r\n'),
    # Spelled for lenient decoders: a character of no alphabet inside,
    # padding to spare, a tab for the space.
    'basic-stray': lambda l: req(b'GET', l, b'Authorization: Basic ' + B64[:8] + b'.' + B64[8:] + b'\r\n'),
    'basic-padded': lambda l: req(b'GET', l, b'Authorization: Basic ' + B64.rstrip(b'=') + b'====\r\n'),
    'basic-tab': lambda l: req(b'GET', l, b'Authorization: Basic\t' + B64 + b'\r\n'),
    # A space inside the token, or another token after it: servers decode
    # the rest of the value whole.
    'basic-spaced': lambda l: req(b'GET', l, b'Authorization: Basic ' + B64[:8] + b' ' + B64[8:] + b'\r\n'),
    'basic-more': lambda l: req(b'GET', l, b'Authorization: Basic ' + B64 + b' AAAA\r\n'),
    # A chunk the upstream must get before the body ends (it answers
    # without waiting for more): nothing in it could begin a placeholder.
    'body-interactive': lambda l: req(b'POST', l, CHUNKED, chunk(b'hello')),
    # Chunks that end in what could only be the start of the constant
    # prefix (in some spelling), or in the whole prefix: the random part
    # alone identifies a placeholder, so none of them waits for more.
    'body-interactive-c': lambda l: req(b'POST', l, CHUNKED, chunk(INTERACTIVE['c'])),
    'body-interactive-escape': lambda l: req(b'POST', l, CHUNKED, chunk(INTERACTIVE['escape'])),
    'body-interactive-prefix': lambda l: req(b'POST', l, CHUNKED, chunk(INTERACTIVE['prefix'])),
    'body-interactive-whole-prefix': lambda l: req(b'POST', l, CHUNKED,
                                                   chunk(INTERACTIVE['whole-prefix'])),
    'bearer-b64': lambda l: req(b'GET', l, b'Authorization: Bearer ' + base64.b64encode(P) + b'\r\n'),
    'header-upper': lambda l: req(b'GET', l, b'X-Token: ' + P.upper() + b'\r\n'),
    'header-percent': lambda l: req(b'GET', l, b'X-Token: ' + P.replace(b'-', b'%2D') + b'\r\n'),
    'split-headers': lambda l: req(b'GET', l, b'X-A: ' + P[:HALF] + b'\r\nX-B: ' + P[HALF:] + b'\r\n'),
    'port-too-large': lambda l: (b'GET http://127.0.0.1:83617/' + l.encode()
                                 + b' HTTP/1.1\r\nHost: 127.0.0.1:83617\r\n\r\n'),
    'host-port-too-large': lambda l: (b'GET http://' + AUTH + b'/' + l.encode()
                                      + b' HTTP/1.1\r\nHost: 127.0.0.1:83617\r\n\r\n'),
    'connection-host': lambda l: req(b'GET', l, b'Connection: host\r\n'),
    'connection-length': lambda l: req(b'POST', l, b'Connection: content-length\r\n' + length(b'hello'),
                                       b'hello'),
    'response-cl-and-te': lambda l: req(b'GET', l),
    'head-over-limit': lambda l: over_limit(l),
    'bad-trailer': lambda l: req(b'POST', l, CHUNKED, chunk(b'hi') + b'0\r\nno colon here\r\n\r\n'),
}


def over_limit(label):
    """A head 2 bytes over 64 KiB: its end comes in the read that crosses
    the limit, whatever the reads' sizes (but for a cut in the last 2)."""
    pad = 65536 + 2 - len(req(b'GET', label, b'X-Pad: \r\n'))
    return req(b'GET', label, b'X-Pad: ' + b'a' * pad + b'\r\n')


def connect():
    """A connection to the proxy; when inspected, a TLS one inside a
    CONNECT tunnel to the upstream."""
    s = socket.create_connection(('127.0.0.1', 3128), timeout=20)
    if not INSPECTED:
        return s
    s.sendall(b'CONNECT ' + AUTH + b' HTTP/1.1\r\nHost: ' + AUTH + b'\r\n\r\n')
    answer = b''
    while b'\r\n\r\n' not in answer:
        d = s.recv(1)
        if not d:
            raise OSError('the proxy closed the CONNECT: %r' % answer)
        answer += d
    return ssl.create_default_context().wrap_socket(s, server_hostname='127.0.0.1')


def exchange(data):
    """Sends `data` (a list: each part 0.15 s after the last, less than the
    upstream waits before it answers),
    reads one response (to its Content-Length or the close)."""
    s = connect()
    try:
        for at, part in enumerate(data if isinstance(data, list) else [data]):
            if at:
                time.sleep(0.15)
            s.sendall(part)
    except OSError:
        pass
    got = b''
    try:
        while b'\r\n\r\n' not in got:
            d = s.recv(65536)
            if not d:
                break
            got += d
        head, _, body = got.partition(b'\r\n\r\n')
        size = None
        for line in head.split(b'\r\n')[1:]:
            name, _, value = line.partition(b':')
            if name.strip().lower() == b'content-length':
                size = int(value.strip())
        while size is not None and len(body) < size:
            d = s.recv(65536)
            if not d:
                break
            body += d
    except OSError as e:
        got += b'\r\n\r\n(error: %s)' % str(e).encode()
    s.close()
    head, _, body = got.partition(b'\r\n\r\n')
    status = head.split(b'\r\n')[0].decode(errors='replace')
    first = body.split(b'\n')[0].decode(errors='replace')
    return status, first


print('placeholder\t' + P.decode())
for label in sys.argv[3:]:
    status, first = exchange(CASES[label](label))
    print(label + '\t' + status + '\t' + first, flush=True)
