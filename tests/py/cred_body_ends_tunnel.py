# A request with a body on an inspected HTTP/1.1 tunnel to 127.0.0.1:argv[1],
# then another on the same tunnel: the first answer closes the tunnel (an
# upstream that ignores a GET's body would read it as the start of its next
# request, which the next request on the tunnel would complete). Prints the
# first answer's status and Connection header, and whether the tunnel took
# the second request.
import socket
import ssl
import sys

port = int(sys.argv[1])
raw = socket.create_connection(('127.0.0.1', 3128), timeout=20)
raw.sendall(b'CONNECT 127.0.0.1:%d HTTP/1.1\r\nHost: 127.0.0.1:%d\r\n\r\n' % (port, port))
head = b''
while b'\r\n\r\n' not in head:
    head += raw.recv(1)
tls = ssl.create_default_context().wrap_socket(raw, server_hostname='127.0.0.1')
tls.sendall(b'GET /with-body HTTP/1.1\r\nHost: 127.0.0.1:%d\r\nContent-Length: 5\r\n\r\nhello' % port)
buf = b''
while b'\r\n\r\n' not in buf:
    buf += tls.recv(65536)
head, _, rest = buf.partition(b'\r\n\r\n')
lines = head.decode('latin-1').split('\r\n')
fields = {l.split(':', 1)[0].strip().lower(): l.split(':', 1)[1].strip() for l in lines[1:]}
length = int(fields.get('content-length', '0'))
while len(rest) < length:
    rest += tls.recv(65536)
print('first:', lines[0].split(' ')[1], fields.get('connection', '-'), flush=True)
try:
    tls.sendall(b'GET /next HTTP/1.1\r\nHost: 127.0.0.1:%d\r\n\r\n' % port)
    more = tls.recv(65536)
except (OSError, ssl.SSLError):
    more = b''
print('second:', 'answered' if more else 'closed', flush=True)
