# argv[2] CONNECT tunnels to 127.0.0.1:argv[1] held open at once, then a
# GET through each; prints how many were held, how many got the body
# argv[3], and the errors met.
import resource
import socket
import sys

p, n, body = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3].encode()
soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
held, errors = [], {}
for i in range(n):
    try:
        s = socket.create_connection(('127.0.0.1', 3128), timeout=30)
        s.sendall(('CONNECT 127.0.0.1:%d HTTP/1.1\r\nHost: 127.0.0.1:%d\r\n\r\n' % (p, p)).encode())
        head = b''
        while b'\r\n\r\n' not in head:
            c = s.recv(1)
            if not c:
                raise OSError('closed')
            head += c
        if not head.startswith(b'HTTP/1.1 200'):
            raise OSError(head.split(b'\r\n')[0].decode())
        held.append(s)
    except OSError as e:
        errors[str(e)] = errors.get(str(e), 0) + 1
ok = 0
for s in held:
    try:
        s.sendall(('GET / HTTP/1.1\r\nHost: 127.0.0.1:%d\r\n\r\n' % p).encode())
        data = b''
        while True:
            c = s.recv(4096)
            if not c:
                break
            data += c
        ok += data.endswith(body)
    except OSError as e:
        errors[str(e)] = errors.get(str(e), 0) + 1
print('held:', len(held), 'ok:', ok, 'errors:', errors)
