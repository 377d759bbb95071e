
# Each ambiguous framing of framing_cases.py sent inside an inspected
# tunnel to argv[1] (host:port), after controls: a request with a length,
# a chunked one, and two pipelined on one connection. Prints each one's
# status code (or `EXC <error>`), and how many of the pipelined got 200.
import socket
import ssl
import sys

authority = sys.argv[1]
HEAD, CHUNKED, CASES = framing_cases('/framing', authority)
connect = ('CONNECT %s HTTP/1.1\r\n\r\n' % authority).encode()


def send(label, data):
    try:
        s = socket.create_connection(('127.0.0.1', 3128), timeout=20)
        s.sendall(connect)
        s.recv(100)
        t = ssl.create_default_context().wrap_socket(s, server_hostname='127.0.0.1')
        t.sendall(data)
        head = b''
        while b'\r\n' not in head:
            c = t.recv(1)
            if not c:
                break
            head += c
        print(label + ':', (head.split(b' ') + [b'none', b'none'])[1].decode(), flush=True)
    except OSError as e:
        print(label + ': EXC', type(e).__name__, flush=True)


send('control', HEAD + b'Content-Length: 5\r\n\r\nhello')
send('control-chunked', HEAD + b'Transfer-Encoding: chunked\r\n\r\n' + CHUNKED)
s = socket.create_connection(('127.0.0.1', 3128), timeout=20)
s.sendall(connect)
s.recv(100)
t = ssl.create_default_context().wrap_socket(s, server_hostname='127.0.0.1')
t.sendall(HEAD + b'Transfer-Encoding: chunked\r\n\r\n3;x=y\r\nhel\r\n2\r\nlo\r\n0\r\nX-T: 1\r\n\r\n'
          + HEAD + b'Content-Length: 5\r\nConnection: close\r\n\r\nhello')
print('pipelined:', b''.join(iter(lambda: t.recv(65536), b'')).count(b'HTTP/1.1 200 '), flush=True)
for label, data in CASES:
    send(label, data)
