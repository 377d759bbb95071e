# A request target with a fragment, on the plain-HTTP path to
# 127.0.0.1:argv[1] and inside an inspected tunnel to 127.0.0.1:argv[2]:
# prints each one's status code.
import socket
import ssl
import sys

tcp_port, port = sys.argv[1], sys.argv[2]


def status(t):
    got = b''.join(iter(lambda: t.recv(65536), b''))
    return got.split(b' ')[1].decode() if b' ' in got else 'none'


s = socket.create_connection(('127.0.0.1', 3128), timeout=20)
s.sendall(('GET http://127.0.0.1:%s/admin/delete#/issues HTTP/1.1\r\nHost: 127.0.0.1:%s\r\n'
           'Connection: close\r\n\r\n' % (tcp_port, tcp_port)).encode())
print('plain:', status(s), flush=True)
s = socket.create_connection(('127.0.0.1', 3128), timeout=20)
s.sendall(('CONNECT 127.0.0.1:%s HTTP/1.1\r\n\r\n' % port).encode())
s.recv(100)
t = ssl.create_default_context().wrap_socket(s, server_hostname='127.0.0.1')
t.sendall(('GET /fragment#/issues HTTP/1.1\r\nHost: 127.0.0.1:%s\r\nConnection: close\r\n\r\n' % port).encode())
print('inspected:', status(t), flush=True)
