# upgrade(label, port, path, send, headers) opens an inspected tunnel to
# 127.0.0.1:port, asks to upgrade `path` to WebSocket (`headers` holding
# an `Upgrade:` replace the handshake's own), and prints `label-status:`;
# on a 101 it sends `send` and prints what came back in 3 s as
# `label-echo:`, otherwise the refusal's body as `label-body:` (JSON).
import json, socket, ssl, time
WS = b'Upgrade: websocket\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n'
def read_while(t, more, size):
    # What `t` sends, `size` bytes a read at most, while more(what came so
    # far) holds, until it closes or fails.
    got = b''
    try:
        while more(got):
            c = t.recv(size)
            if not c: break
            got += c
    except OSError:
        pass
    return got
def upgrade(label, port, path, send=b'ping-pong', headers=b''):
    s = socket.create_connection(('127.0.0.1', 3128), timeout=20)
    s.sendall(b'CONNECT 127.0.0.1:%d HTTP/1.1\r\n\r\n' % port)
    s.recv(100)
    t = ssl.create_default_context().wrap_socket(s, server_hostname='127.0.0.1')
    t.sendall(b'GET ' + path + b' HTTP/1.1\r\nHost: 127.0.0.1:%d\r\nConnection: Upgrade\r\n' % port + (b'' if b'Upgrade:' in headers else WS) + headers + b'\r\n')
    head = b''
    while not head.endswith(b'\r\n\r\n'):
        c = t.recv(1)
        if not c: break
        head += c
    print(label + '-status:', head.split(b' ')[1].decode() if b' ' in head else 'none', flush=True)
    if b' 101 ' not in head.split(b'\r\n')[0]:
        length = [int(l.split(b':')[1]) for l in head.lower().split(b'\r\n') if l.startswith(b'content-length:')]
        rest = read_while(t, lambda got: len(got) < (length or [0])[0], 4096)
        print(label + '-body:', json.dumps(rest.decode('utf-8', 'replace')), flush=True)
        return
    try:
        t.sendall(send)
        t.settimeout(1)
    except OSError:
        got = b''
    else:
        end = time.time() + 3
        got = read_while(t, lambda _: time.time() < end, 65536)
    print(label + '-echo:', json.dumps(got.decode('utf-8', 'replace')), flush=True)
