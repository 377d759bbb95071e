# On one kept-alive client connection: requests to a, a, b, a, one that a
# answers and then closes its connection after (without saying so), and
# one more to a; then a request to a on a second client connection.
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
t = connect()
t.sendall(get(pa, '/a5'))
code, headers, body = t.response()
out('other-client', code, body)
