# A GET of /trailers inside an inspected tunnel to 127.0.0.1:argv[1], with
# the placeholder of TEST_TOKEN in a header; prints the whole answer.
import os
import socket
import ssl
import sys

port = sys.argv[1]
s = socket.create_connection(('127.0.0.1', 3128), timeout=20)
s.sendall(('CONNECT 127.0.0.1:%s HTTP/1.1\r\n\r\n' % port).encode())
s.recv(100)
t = ssl.create_default_context().wrap_socket(s, server_hostname='127.0.0.1')
t.sendall(('GET /trailers HTTP/1.1\r\nHost: 127.0.0.1:%s\r\nTE: trailers\r\nConnection: close\r\n'
           'X-Token: ' % port).encode() + os.environ['TEST_TOKEN'].encode() + b'\r\n\r\n')
print(b''.join(iter(lambda: t.recv(65536), b'')).decode('utf-8', 'replace'))
