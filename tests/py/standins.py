# Local stand-ins for the registries and git hosts the package-manager
# tests and benchmarks use, on the host's 127.0.0.1 only:
#   npm    an npm registry (packuments and tarballs)
#   pypi   a PEP 503 simple index with wheels
#   cargo  a sparse cargo registry (config.json, index files, .crate files)
#   git    git's smart HTTP protocol (git http-backend) over the repos in DIR/git
# Every package is built here from nothing (no network). Usage:
#   standins.py DIR [--packages N] [--tls CERT KEY]
# prints one JSON line {"npm": port, "pypi": port, "cargo": port, "git": port,
# "packages": [names...]} once every server listens, then serves until killed.
# --tls serves HTTPS with that certificate (PEM) and key instead of HTTP.
# Each server appends the paths it served to DIR/<name>.log. URLs in the
# responses use the Host the client asked for, so a client reaching the
# stand-in as host.cordon.internal:PORT gets links it can follow.
import base64
import hashlib
import http.server
import io
import json
import os
import socketserver
import subprocess
import sys
import tarfile
import threading
import zipfile

DIR = sys.argv[1]
COUNT = int(sys.argv[sys.argv.index('--packages') + 1]) if '--packages' in sys.argv else 2
# fixture-0 depends on fixture-1, which depends on fixture-2, ...: a real
# dependency walk for every client.
NAMES = ['cordon-fixture-%d' % i for i in range(COUNT)]
VERSION = '1.0.0'


def tgz(files):
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode='w:gz') as tar:
        for name, data in files.items():
            info = tarfile.TarInfo(name)
            info.size = len(data)
            info.mode = 0o644
            info.mtime = 1700000000
            tar.addfile(info, io.BytesIO(data))
    return buf.getvalue()


def dep_of(i):
    return NAMES[i + 1] if i + 1 < len(NAMES) else None


# ---- npm
NPM = {}
for i, name in enumerate(NAMES):
    manifest = {'name': name, 'version': VERSION, 'main': 'index.js'}
    if dep_of(i):
        manifest['dependencies'] = {dep_of(i): '^1.0.0'}
    data = tgz({
        'package/package.json': json.dumps(manifest).encode(),
        'package/index.js': b'module.exports = %d;\n' % i,
    })
    NPM[name] = (manifest, data)


def npm_packument(name, base):
    manifest, data = NPM[name]
    version = dict(manifest)
    version['dist'] = {
        'tarball': '%s/%s/-/%s-%s.tgz' % (base, name, name, VERSION),
        'shasum': hashlib.sha1(data).hexdigest(),
        'integrity': 'sha512-' + base64.b64encode(hashlib.sha512(data).digest()).decode(),
    }
    return {'name': name, 'dist-tags': {'latest': VERSION}, 'versions': {VERSION: version}}


# ---- pypi
def wheel(i, name):
    module = name.replace('-', '_')
    dist = '%s-%s.dist-info' % (module, VERSION)
    meta = 'Metadata-Version: 2.1\nName: %s\nVersion: %s\n' % (name, VERSION)
    if dep_of(i):
        meta += 'Requires-Dist: %s\n' % dep_of(i)
    files = {
        '%s/__init__.py' % module: b'VALUE = %d\n' % i,
        '%s/METADATA' % dist: meta.encode(),
        '%s/WHEEL' % dist: b'Wheel-Version: 1.0\nGenerator: standins\nRoot-Is-Purelib: true\nTag: py3-none-any\n',
    }
    record = ''
    for path, data in files.items():
        digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b'=').decode()
        record += '%s,sha256=%s,%d\n' % (path, digest, len(data))
    record += '%s/RECORD,,\n' % dist
    files['%s/RECORD' % dist] = record.encode()
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, 'w') as z:
        for path, data in files.items():
            z.writestr(zipfile.ZipInfo(path, (2023, 11, 14, 0, 0, 0)), data)
    return '%s-%s-py3-none-any.whl' % (module, VERSION), buf.getvalue()


WHEELS = {name: wheel(i, name) for i, name in enumerate(NAMES)}


# ---- cargo
def crate(i, name):
    toml = '[package]\nname = "%s"\nversion = "%s"\nedition = "2021"\n' % (name, VERSION)
    deps = []
    if dep_of(i):
        toml += '\n[dependencies]\n%s = "1"\n' % dep_of(i)
        deps = [{'name': dep_of(i), 'req': '^1', 'features': [], 'optional': False,
                 'default_features': True, 'target': None, 'kind': 'normal'}]
    root = '%s-%s' % (name, VERSION)
    data = tgz({
        root + '/Cargo.toml': toml.encode(),
        root + '/src/lib.rs': b'pub const VALUE: u32 = %d;\n' % i,
    })
    line = {'name': name, 'vers': VERSION, 'deps': deps,
            'cksum': hashlib.sha256(data).hexdigest(), 'features': {}, 'yanked': False}
    return data, json.dumps(line) + '\n'


CRATES = {name: crate(i, name) for i, name in enumerate(NAMES)}


def index_path(name):
    n = name.lower()
    if len(n) <= 2:
        return '%d/%s' % (len(n), n)
    if len(n) == 3:
        return '3/%s/%s' % (n[0], n)
    return '%s/%s/%s' % (n[:2], n[2:4], n)


INDEX = {index_path(name): line for name, (_, line) in CRATES.items()}


# ---- the servers
class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = 'HTTP/1.1'
    kind = ''
    # Headers and body leave in one write (flushed after each request):
    # separate small writes meet the client's delayed ACK, a 40 ms stall
    # per request that a relaying proxy would hide and a bare client not.
    wbufsize = 1 << 16

    def log_message(self, *args):
        pass

    def base(self):
        scheme = 'https://' if TLS else 'http://'
        return scheme + self.headers.get('Host', '127.0.0.1')

    def note(self):
        with open(os.path.join(DIR, self.kind + '.log'), 'a') as log:
            log.write(self.command + ' ' + self.path + '\n')

    def reply(self, status, body, ctype='application/octet-stream'):
        self.send_response(status)
        self.send_header('Content-Type', ctype)
        self.send_header('Content-Length', str(len(body)))
        self.end_headers()
        if self.command != 'HEAD':
            self.wfile.write(body)

    def do_HEAD(self):
        self.do_GET()

    def do_GET(self):
        self.note()
        if self.kind == 'git':
            self.git_backend()
            return
        found = getattr(self, 'serve_' + self.kind)(self.path.split('?')[0])
        if found is None:
            self.reply(404, b'not found\n', 'text/plain')
        else:
            self.reply(200, *found)

    def serve_npm(self, path):
        parts = path.strip('/').split('/')
        name = parts[0].replace('%2f', '/').replace('%2F', '/')
        if name not in NPM:
            return None
        if len(parts) == 1:
            return json.dumps(npm_packument(name, self.base())).encode(), 'application/json'
        if len(parts) == 3 and parts[1] == '-' and parts[2] == '%s-%s.tgz' % (name, VERSION):
            return NPM[name][1], 'application/octet-stream'
        return None

    def serve_pypi(self, path):
        parts = path.strip('/').split('/')
        if parts == ['simple']:
            links = ''.join('<a href="/simple/%s/">%s</a>\n' % (n, n) for n in NAMES)
            return ('<html><body>%s</body></html>' % links).encode(), 'text/html'
        if len(parts) == 2 and parts[0] == 'simple' and parts[1] in WHEELS:
            file, data = WHEELS[parts[1]]
            link = '<a href="/files/%s#sha256=%s">%s</a>' % (file, hashlib.sha256(data).hexdigest(), file)
            return ('<html><body>%s</body></html>' % link).encode(), 'text/html'
        if len(parts) == 2 and parts[0] == 'files':
            for file, data in WHEELS.values():
                if file == parts[1]:
                    return data, 'application/octet-stream'
        return None

    def serve_cargo(self, path):
        if path == '/index/config.json':
            return json.dumps({'dl': self.base() + '/dl'}).encode(), 'application/json'
        if path.startswith('/index/') and path[len('/index/'):] in INDEX:
            return INDEX[path[len('/index/'):]].encode(), 'text/plain'
        parts = path.strip('/').split('/')
        if len(parts) == 4 and parts[0] == 'dl' and parts[1] in CRATES and parts[3] == 'download':
            return CRATES[parts[1]][0], 'application/octet-stream'
        return None

    # git's smart HTTP: each request runs git http-backend (CGI).
    def do_POST(self):
        self.note()
        self.git_backend()

    def git_backend(self):
        path, _, query = self.path.partition('?')
        length = int(self.headers.get('Content-Length') or 0)
        body = self.rfile.read(length) if length else b''
        env = dict(os.environ, GIT_PROJECT_ROOT=os.path.join(DIR, 'git'),
                   GIT_HTTP_EXPORT_ALL='1', PATH_INFO=path, QUERY_STRING=query,
                   REQUEST_METHOD=self.command, REMOTE_ADDR='127.0.0.1',
                   CONTENT_TYPE=self.headers.get('Content-Type', ''),
                   CONTENT_LENGTH=str(len(body)))
        if self.headers.get('Content-Encoding'):
            env['HTTP_CONTENT_ENCODING'] = self.headers['Content-Encoding']
        if self.headers.get('Git-Protocol'):
            env['HTTP_GIT_PROTOCOL'] = self.headers['Git-Protocol']
        out = subprocess.run(['git', 'http-backend'], input=body, env=env,
                             stdout=subprocess.PIPE, check=False).stdout
        head, _, payload = out.partition(b'\r\n\r\n')
        status, headers = 200, []
        for line in head.decode('latin-1').split('\r\n'):
            key, _, value = line.partition(':')
            if key.lower() == 'status':
                status = int(value.split()[0])
            elif key:
                headers.append((key, value.strip()))
        self.send_response(status)
        for key, value in headers:
            self.send_header(key, value)
        self.send_header('Content-Length', str(len(payload)))
        self.end_headers()
        if self.command != 'HEAD':
            self.wfile.write(payload)


class Server(socketserver.ThreadingMixIn, http.server.HTTPServer):
    daemon_threads = True
    allow_reuse_address = True
    # socketserver's default backlog is 5: npm opens more connections at
    # once, and a connection past the backlog waits a second for its SYN
    # to be sent again, bare and inside alike.
    request_queue_size = 128


TLS = None
if '--tls' in sys.argv:
    import ssl
    at = sys.argv.index('--tls')
    TLS = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    TLS.load_cert_chain(sys.argv[at + 1], sys.argv[at + 2])

ports = {}
for kind in ['npm', 'pypi', 'cargo', 'git']:
    handler = type(kind, (Handler,), {'kind': kind})
    server = Server(('127.0.0.1', 0), handler)
    if TLS:
        server.socket = TLS.wrap_socket(server.socket, server_side=True)
    ports[kind] = server.server_address[1]
    threading.Thread(target=server.serve_forever, daemon=True).start()
os.makedirs(os.path.join(DIR, 'git'), exist_ok=True)
ports['packages'] = NAMES
print(json.dumps(ports), flush=True)
threading.Event().wait()
