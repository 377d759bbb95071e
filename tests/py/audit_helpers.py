# Helpers for the audit tests, put before each of their scripts: a
# plain-HTTP GET through the HTTP proxy, a CONNECT tunnel, and a SOCKS5
# GET (the proxy is at 127.0.0.1:3128 / :1080 inside; sockets, so NO_PROXY
# plays no part).
import socket, struct
def recv_all(s):
    data = b''
    while True:
        d = s.recv(65536)
        if not d:
            return data.decode(errors='replace')
        data += d
def get(host, port, path='/'):
    s = socket.create_connection(('127.0.0.1', 3128), timeout=10)
    s.sendall(f'GET http://{host}:{port}{path} HTTP/1.1\r\nHost: {host}:{port}\r\n\r\n'.encode())
    return recv_all(s)
def status(reply):
    return reply.split('\r\n')[0]
def head(s):
    data = b''
    while b'\r\n\r\n' not in data:
        d = s.recv(4096)
        if not d:
            break
        data += d
    return data.decode(errors='replace')
def tunnel(host, port):
    s = socket.create_connection(('127.0.0.1', 3128), timeout=10)
    s.sendall(f'CONNECT {host}:{port} HTTP/1.1\r\nHost: {host}:{port}\r\n\r\n'.encode())
    return s, head(s)
def socks_get(host, port):
    s = socket.create_connection(('127.0.0.1', 1080), timeout=10)
    s.sendall(b'\x05\x01\x00'); s.recv(2)
    name = host.encode()
    s.sendall(b'\x05\x01\x00\x03' + bytes([len(name)]) + name + struct.pack('>H', port))
    reply = s.recv(10)
    if reply[1] != 0:
        return f'socks reply {reply[1]}'
    s.sendall(f'GET / HTTP/1.1\r\nHost: {host}\r\n\r\n'.encode())
    return recv_all(s)
