# Client helpers for the network tests, put before each of their scripts.
# Each call prints one line `label: CODE "body as JSON"`: CODE is the HTTP
# status (for CONNECT: the proxy's, followed by the body the tunnel
# carried) or, for SOCKS, the reply code as 0xNN.
import errno, json, socket
PROXY = ('127.0.0.1', 3128)
SOCKS = ('127.0.0.1', 1080)

def read_all(s):
    data = b''
    while True:
        try:
            chunk = s.recv(65536)
        except OSError:
            break
        if not chunk:
            break
        data += chunk
    return data

def split(resp):
    head, _, body = resp.partition(b'\r\n\r\n')
    parts = head.split(b' ', 2)
    return (parts[1].decode() if len(parts) > 1 else 'none'), body

def out(label, code, body=b''):
    print(label + ': ' + code + ' ' + json.dumps(body.decode('utf-8', 'replace')), flush=True)

def guard(label, f):
    try:
        f()
    except OSError as e:
        print(label + ': EXC ' + errno.errorcode.get(e.errno, type(e).__name__), flush=True)

def get(label, target, host=None, extra=b''):
    """Absolute-form GET http://TARGET through the HTTP proxy."""
    def run():
        authority = target.split('/')[0]
        s = socket.create_connection(PROXY, timeout=30)
        s.sendall(('GET http://%s HTTP/1.1\r\nHost: %s\r\n\r\n' % (target, host or authority)).encode() + extra)
        code, body = split(read_all(s))
        s.close()
        out(label, code, body)
    guard(label, run)

def tunnel(label, authority, path='/'):
    """CONNECT AUTHORITY, then a GET through the tunnel."""
    def run():
        s = socket.create_connection(PROXY, timeout=30)
        s.sendall(('CONNECT %s HTTP/1.1\r\nHost: %s\r\n\r\n' % (authority, authority)).encode())
        head = b''
        while b'\r\n\r\n' not in head:
            c = s.recv(1)
            if not c:
                break
            head += c
        code, _ = split(head)
        if code != '200':
            out(label, code, read_all(s))
            return
        s.sendall(('GET %s HTTP/1.1\r\nHost: %s\r\n\r\n' % (path, authority)).encode())
        _, body = split(read_all(s))
        s.close()
        out(label, code, body)
    guard(label, run)

def recv_exact(s, n):
    data = b''
    while len(data) < n:
        c = s.recv(n - len(data))
        if not c:
            break
        data += c
    return data

def socks(label, host, port, cmd=1, atyp=3):
    """A SOCKS5 request (CONNECT unless cmd says otherwise); on success, a
    GET through the connection."""
    def run():
        s = socket.create_connection(SOCKS, timeout=30)
        s.sendall(b'\x05\x01\x00')
        if recv_exact(s, 2) != b'\x05\x00':
            out(label, 'nomethod')
            return
        if atyp == 3:
            name = host.encode() if isinstance(host, str) else host
            addr = bytes([3, len(name)]) + name
        elif atyp == 1:
            addr = b'\x01' + socket.inet_pton(socket.AF_INET, host)
        else:
            addr = b'\x04' + socket.inet_pton(socket.AF_INET6, host)
        s.sendall(bytes([5, cmd, 0]) + addr + port.to_bytes(2, 'big'))
        rep = recv_exact(s, 10)
        if len(rep) < 2:
            out(label, 'closed')
            return
        body = b''
        if rep[1] == 0:
            s.sendall(('GET / HTTP/1.1\r\nHost: x:%d\r\n\r\n' % port).encode())
            _, body = split(read_all(s))
        s.close()
        out(label, '0x%02x' % rep[1], body)
    guard(label, run)

def raw(label, data):
    """DATA (bytes, or text whose code points are the bytes) sent to the
    HTTP proxy as it is."""
    if isinstance(data, str):
        data = data.encode('latin-1')
    def run():
        s = socket.create_connection(PROXY, timeout=30)
        s.sendall(data)
        code, body = split(read_all(s))
        out(label, code, body)
    guard(label, run)

def urlopen(label, url):
    """URL fetched by urllib, which takes its proxy from the environment."""
    import urllib.request
    body = urllib.request.urlopen(url, timeout=30).read()
    out(label, '200', body)
