# A WebSocket upgrade inside an inspected tunnel to 127.0.0.1:argv[1],
# then bytes echoed through it.
import socket
import ssl
import sys

port = sys.argv[1]
s = socket.create_connection(('127.0.0.1', 3128))
s.sendall(('CONNECT 127.0.0.1:%s HTTP/1.1\r\n\r\n' % port).encode())
s.recv(100)
t = ssl.create_default_context().wrap_socket(s, server_hostname='127.0.0.1')
t.sendall(('GET /ws HTTP/1.1\r\nHost: 127.0.0.1:%s\r\nConnection: Upgrade\r\nUpgrade: websocket\r\n'
           'Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n' % port).encode())
head = b''
while not head.endswith(b'\r\n\r\n'):
    head += t.recv(1)
print('status:', head.split(b'\r\n')[0].decode())
t.sendall(b'ping-pong')
print('echo:', t.recv(100).decode())
