# CONNECT through the HTTP proxy to argv[1] with the placeholder of
# TEST_TOKEN put in front of it as a label; prints the status line.
import os
import socket
import sys

name = os.environ['TEST_TOKEN'] + '.' + sys.argv[1]
s = socket.create_connection(('127.0.0.1', 3128), timeout=20)
s.sendall(('CONNECT %s:443 HTTP/1.1\r\nHost: %s:443\r\n\r\n' % (name, name)).encode())
got = b''
while b'\r\n' not in got:
    d = s.recv(4096)
    if not d:
        break
    got += d
print('status:', got.split(b'\r\n')[0].decode(errors='replace'), flush=True)
