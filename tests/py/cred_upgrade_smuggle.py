
# A head asking for an upgrade the upstream answers 200, with a request
# glued after it, inside an inspected tunnel to argv[2] (host:port):
# prints how many answers came back.
authority = sys.argv[2].encode()
s = socket.create_connection(('127.0.0.1', 3128), timeout=20)
s.sendall(b'CONNECT ' + authority + b' HTTP/1.1\r\n\r\n')
s.recv(100)
t = ssl.create_default_context().wrap_socket(s, server_hostname='127.0.0.1')
t.sendall(b'GET /not-upgraded HTTP/1.1\r\nHost: ' + authority + b'\r\n' + WS + b'\r\n'
          + b'POST /smuggled HTTP/1.1\r\nHost: ' + authority
          + b'\r\nTransfer-Encoding: chunked\r\nContent-Length: 5\r\n\r\n0\r\n\r\n')
got = b''
try:
    for c in iter(lambda: t.recv(65536), b''):
        got += c
except OSError:
    pass
print('answers:', got.count(b'HTTP/1.1 '), flush=True)
