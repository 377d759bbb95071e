# Client helpers for tests/http_forwarding.rs, run inside the sandbox:
# raw HTTP/1.1 over one socket to the proxy, so that a test controls
# every byte and every request on a kept-alive connection.
import json, socket

PROXY = ('127.0.0.1', 3128)


class Conn:
    """One connection to the proxy; what was read past a response is kept
    for the next one."""

    def __init__(self):
        self.s = socket.create_connection(PROXY, timeout=30)
        self.buf = b''

    def sendall(self, data):
        self.s.sendall(data)

    def _more(self):
        chunk = self.s.recv(65536)
        if not chunk:
            raise EOFError('closed')
        self.buf += chunk

    def _take(self, n):
        while len(self.buf) < n:
            self._more()
        out, self.buf = self.buf[:n], self.buf[n:]
        return out

    def _line(self):
        while b'\r\n' not in self.buf:
            self._more()
        line, _, self.buf = self.buf.partition(b'\r\n')
        return line

    def response(self):
        """One response: (code, headers as a lower-cased dict, body), read
        by its Content-Length, its chunks, or to the close; ('none', {}, b'')
        when the connection closed before a whole head."""
        try:
            while b'\r\n\r\n' not in self.buf:
                self._more()
        except (EOFError, OSError):
            return 'none', {}, b''
        head, _, self.buf = self.buf.partition(b'\r\n\r\n')
        lines = head.decode('latin-1').split('\r\n')
        code = lines[0].split(' ')[1]
        headers = {}
        for line in lines[1:]:
            name, _, value = line.partition(':')
            headers[name.strip().lower()] = value.strip()
        if 'content-length' in headers:
            return code, headers, self._take(int(headers['content-length']))
        if headers.get('transfer-encoding', '').lower() == 'chunked':
            body = b''
            while True:
                n = int(self._line().split(b';')[0], 16)
                if n == 0:
                    while self._line():
                        pass
                    return code, headers, body
                body += self._take(n + 2)[:n]
        try:
            while True:
                self._more()
        except (EOFError, OSError):
            pass
        body, self.buf = self.buf, b''
        return code, headers, body

    def closed(self):
        """Whether the proxy closed the connection (EOF or reset), with
        nothing more to read."""
        if self.buf:
            return False
        try:
            return self.s.recv(1) == b''
        except OSError:
            return True


def connect():
    return Conn()


def out(label, code, body=b''):
    print(label + ': ' + code + ' ' + json.dumps(body.decode('utf-8', 'replace')), flush=True)


def get(authority, path='/', extra=b''):
    return ('GET http://%s%s HTTP/1.1\r\nHost: %s\r\n' % (authority, path, authority)).encode() + extra + b'\r\n'


def chunked(chunks):
    return b''.join(b'%x\r\n' % len(c) + c + b'\r\n' for c in chunks) + b'0\r\n\r\n'


def pattern(n):
    """The test body: every byte value, in an order the Rust side knows."""
    return bytes((i * 7 + 3) % 256 for i in range(n))
