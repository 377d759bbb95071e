# Requests to two allowed hosts and a denied one on one kept-alive client
# connection, then a chunked body with a request to the denied host glued
# behind it. argv: the authorities of the allowed a and b, the denied d.
import sys

pa, pb, pd = sys.argv[1:4]
s = connect()
for label, req in [('first', get(pa, '/first')), ('again', get(pa, '/again')),
                   ('other', get(pb, '/other')), ('denied', get(pd, '/second'))]:
    s.sendall(req)
    code, headers, body = s.response()
    out(label, code, body)
print('closed:', s.closed(), flush=True)
s = connect()
s.sendall(('POST http://%s/glued HTTP/1.1\r\nHost: %s\r\nTransfer-Encoding: chunked\r\n\r\n' % (pa, pa)).encode()
          + chunked([b'hello']) + get(pd, '/glued-second'))
for label in ['glued', 'glued-denied']:
    code, headers, body = s.response()
    out(label, code, body)
