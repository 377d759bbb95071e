# Inspected tunnels to 127.0.0.1:argv[1]: a TLS handshake naming another
# host (SNI), and plaintext HTTP where TLS is expected.
import socket
import ssl
import sys

connect = ('CONNECT 127.0.0.1:%s HTTP/1.1\r\n\r\n' % sys.argv[1]).encode()
s = socket.create_connection(('127.0.0.1', 3128))
s.sendall(connect)
print('connect:', s.recv(100).split(b'\r\n')[0].decode())
ctx = ssl.create_default_context()
ctx.check_hostname = False
ctx.verify_mode = ssl.CERT_NONE
try:
    ctx.wrap_socket(s, server_hostname='evil.example')
    print('sni: accepted')
except (OSError, ssl.SSLError) as e:
    print('sni: refused')
p = socket.create_connection(('127.0.0.1', 3128))
p.sendall(connect)
p.recv(100)
p.sendall(b'GET /plain HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n')
print('plaintext:', b''.join(iter(lambda: p.recv(1000), b'')).decode().replace('\r\n', ' '))
