# A CONNECT tunnel to the plain TCP server at 127.0.0.1:argv[1], carrying
# a request with TEST_TOKEN's value inside: prints the proxy's answer and
# what came back through the tunnel.
import os
import socket
import sys

s = socket.create_connection(('127.0.0.1', 3128))
s.sendall(('CONNECT 127.0.0.1:%s HTTP/1.1\r\n\r\n' % sys.argv[1]).encode())
print('connect:', s.recv(100).split(b'\r\n')[0].decode())
s.sendall(b'GET /?t=' + os.environ['TEST_TOKEN'].encode() + b' HTTP/1.1\r\n\r\n')
s.settimeout(10)
print('opaque:', repr(s.recv(100)))
