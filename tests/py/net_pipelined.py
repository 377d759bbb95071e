
# A second request smuggled after an allowed one, on one proxy connection:
# in the same write, after keep-alive, after a body, after the first
# answer, and through a CONNECT tunnel. argv: the allowed port, the other
# port, the first request's head (unterminated), the second request, the
# allowed upstream's body.
import sys

p, q = int(sys.argv[1]), int(sys.argv[2])
first, second = sys.argv[3].encode(), sys.argv[4].encode()
up_body = sys.argv[5].encode()


def pipelined(label, data):
    def run():
        s = socket.create_connection(PROXY, timeout=30)
        s.sendall(data)
        resp = read_all(s)
        code, body = split(resp)
        out(label, code, body)
        print(label + '-responses:', resp.count(b'HTTP/1.1 '))
    guard(label, run)


# Both requests in one write.
pipelined('pipelined', first + b'\r\n' + second)
# Keep-alive asked for; the second request in the body's place.
pipelined('keepalive', first + b'Connection: keep-alive\r\n\r\n' + second)
# A body of 5 bytes, then a request glued after it.
pipelined('after-body', first + b'Content-Length: 5\r\n\r\nhello' + second)


# The second request sent after the first answer arrived.
def sequential():
    s = socket.create_connection(PROXY, timeout=30)
    s.sendall(first + b'Connection: keep-alive\r\n\r\n')
    resp = b''
    while len(up_body) > len(resp.partition(b'\r\n\r\n')[2]):
        c = s.recv(65536)
        if not c:
            break
        resp += c
    code, body = split(resp)
    out('sequential', code, body)
    try:
        s.sendall(second)
        more = read_all(s)
    except OSError:
        more = b''
    print('sequential-more:', json.dumps(more.decode('utf-8', 'replace')))


guard('sequential', sequential)


# Through a CONNECT tunnel: the tunnel goes to the allowed host only.
def tunneled():
    s = socket.create_connection(PROXY, timeout=30)
    s.sendall(('CONNECT 127.0.0.1:%d HTTP/1.1\r\nHost: 127.0.0.1:%d\r\n\r\n' % (p, p)).encode()
              + ('GET /tunnel-second HTTP/1.1\r\nHost: 127.0.0.1:%d\r\n\r\n' % q).encode())
    resp = read_all(s)
    print('tunneled:', resp.count(up_body))


guard('tunneled', tunneled)
