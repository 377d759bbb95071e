# On one kept-alive client connection: requests to a, a, b, a, one that a
# answers and then closes its connection after (without saying so), and
# one more to a; one with a body and one after it; then a request to a on
# a second client connection.
# argv: the authorities of a and b.
import sys
import time

pa, pb = sys.argv[1:3]
s = connect()
for label in ['a1', 'a2', 'b1', 'a3', 'then-close', 'a4']:
    if label == 'a4':
        # a's close reaches the proxy before this request does.
        time.sleep(0.3)
    s.sendall(get(pb if label == 'b1' else pa, '/' + label))
    code, headers, body = s.response()
    out(label, code, body)
# A request with a body: the connection it took carries nothing after it
# (an upstream that ignores a GET's body would read it as a request that
# the next one completes).
s.sendall(('GET http://%s/with-body HTTP/1.1\r\nHost: %s\r\nContent-Length: 5\r\n\r\nhello' % (pa, pa)).encode())
code, headers, body = s.response()
out('with-body', code, body)
s.sendall(get(pa, '/after-body'))
code, headers, body = s.response()
out('after-body', code, body)
t = connect()
t.sendall(get(pa, '/a5'))
code, headers, body = t.response()
out('other-client', code, body)
