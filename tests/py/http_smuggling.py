# Each ambiguous framing of framing_cases.py, and two chunk-line tricks,
# sent as the second request on a kept-alive connection after a valid
# one. argv: the upstream's authority.
import sys

a = sys.argv[1]
HEAD, CHUNKED, CASES = framing_cases('http://%s/smuggled' % a, a)
# Chunk lines the guard must follow, glued to a request that would reach
# the upstream if a chunk's end were read another way.
CASES.append(('chunk-bare-lf', HEAD + b'Transfer-Encoding: chunked\r\n\r\n5\nhello\r\n0\r\n\r\n' + get(a, '/smuggled-after')))
CASES.append(('chunk-overrun', HEAD + b'Transfer-Encoding: chunked\r\n\r\n3\r\nhello\r\n0\r\n\r\n' + get(a, '/smuggled-after')))
for label, data in CASES:
    s = connect()
    s.sendall(get(a, '/before'))
    before, _, _ = s.response()
    s.sendall(data)
    code, _, body = s.response()
    print(label + ':', before, code, s.closed(), flush=True)
