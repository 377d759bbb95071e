#!/usr/bin/env python3
"""TLS inspection against an opaque tunnel to the same kind of upstream, in
one run: per-request latency (fresh connections) and throughput of an
HTTPS download and of an HTTPS upload (random bytes, streamed with
--data-binary, while an [[credentials.inject]] entry for another host
makes the proxy scan the inspected body for its placeholder), all from
curl inside ONE `cordon run` (sandbox start-up not counted); plus the leaf-certificate minting times (`cargo bench`).

    cargo build --release && python3 bench/inspect.py && cargo bench --bench mint

Two identical HTTPS upstreams (Python's ssl, HTTP/1.1, a certificate from a
test CA made here with openssl) listen on the host's 127.0.0.1; cordon
allows both by IP and port, inspects one (--inspect, trusting the test CA
with --upstream-ca) and tunnels the other opaquely. The opaque client is
given a bundle as large as the inspected one (system roots plus the test
CA), since curl's parse of the bundle is much of a fresh connection's cost.
"""
import argparse
import os
import re
import shutil
import ssl
import statistics
import subprocess
import sys
import tempfile
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    chunk = b"\0" * (1 << 20)

    def do_GET(self):
        m = re.match(r"/bytes/(\d+)", self.path)
        size = int(m.group(1)) if m else 2
        self.send_response(200)
        self.send_header("Content-Length", str(size))
        self.end_headers()
        while size > 0:
            n = min(size, len(self.chunk))
            self.wfile.write(self.chunk[:n])
            size -= n

    def do_POST(self):
        size = int(self.headers.get("Content-Length", "0"))
        while size > 0:
            got = self.rfile.read(min(size, 1 << 20))
            if not got:
                break
            size -= len(got)
        self.send_response(200)
        self.send_header("Content-Length", "2")
        self.end_headers()
        self.wfile.write(b"ok")

    def log_message(self, *args):
        pass


def make_certs(d):
    def run(*a):
        subprocess.run(a, check=True, capture_output=True, cwd=d)
    run("openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes",
        "-keyout", "ca.key", "-out", "ca.pem", "-days", "2", "-subj", "/CN=cordon bench CA")
    run("openssl", "req", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes",
        "-keyout", "leaf.key", "-out", "leaf.csr", "-subj", "/CN=127.0.0.1")
    with open(os.path.join(d, "ext.cnf"), "w") as f:
        f.write("subjectAltName=IP:127.0.0.1\n")
    run("openssl", "x509", "-req", "-in", "leaf.csr", "-CA", "ca.pem", "-CAkey", "ca.key",
        "-CAcreateserial", "-out", "leaf.pem", "-days", "2", "-extfile", "ext.cnf")


def serve(d):
    ctx = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    ctx.load_cert_chain(os.path.join(d, "leaf.pem"), os.path.join(d, "leaf.key"))
    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    server.socket = ctx.wrap_socket(server.socket, server_side=True)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--cordon", default=os.path.join(os.path.dirname(__file__), "..", "target", "release", "cordon"))
    p.add_argument("--requests", type=int, default=300)
    p.add_argument("--size-mib", type=int, default=256)
    p.add_argument("--upload-mib", type=int, default=64)
    p.add_argument("--rounds", type=int, default=3)
    a = p.parse_args()
    if not shutil.which("curl") or not shutil.which("openssl"):
        sys.exit("needs curl and openssl")
    d = tempfile.mkdtemp(prefix="cordon-bench-inspect-", dir="/var/tmp")
    os.chmod(d, 0o755)
    try:
        make_certs(d)
        for f in os.listdir(d):
            os.chmod(os.path.join(d, f), 0o644)
        inspected, opaque = serve(d), serve(d)
        pi, po = inspected.server_address[1], opaque.server_address[1]
        system = ""
        for path in ("/etc/ssl/certs/ca-certificates.crt", "/etc/pki/tls/certs/ca-bundle.crt"):
            if os.path.exists(path):
                system = open(path).read()
                break
        fair = os.path.join(d, "fair.pem")
        with open(fair, "w") as f:
            f.write(system + "\n" + open(os.path.join(d, "ca.pem")).read())
        os.chmod(fair, 0o644)
        upload = os.path.join(d, "upload.bin")
        with open(upload, "wb") as f:
            for _ in range(a.upload_mib):
                f.write(os.urandom(1 << 20))
        os.chmod(upload, 0o644)
        # A secret for a host never reached: every inspected request is
        # scanned for its placeholder (the body as it streams).
        policy = os.path.join(d, "policy.toml")
        with open(policy, "w") as f:
            f.write('[[credentials.inject]]\nenv = "BENCH_TOKEN"\nhosts = ["127.0.0.1:1"]\n')
        os.chmod(policy, 0o644)
        curl = "curl -s -o /dev/null --noproxy '' -x http://127.0.0.1:3128"
        size = a.size_mib << 20
        script = []
        for r in range(a.rounds):
            for name, port, extra in (("inspected", pi, ""), ("opaque", po, f"--cacert {fair}")):
                script.append(
                    f"for i in $(seq {a.requests}); do {curl} {extra} -w '{name} latency %{{time_total}}\\n' https://127.0.0.1:{port}/bytes/2; done")
                script.append(
                    f"{curl} {extra} -w '{name} speed %{{speed_download}}\\n' https://127.0.0.1:{port}/bytes/{size}")
                script.append(
                    f"{curl} {extra} --data-binary @{upload} -H 'Content-Type: application/octet-stream' -H 'Expect:'"
                    f" -w '{name} upload %{{speed_upload}}\\n' https://127.0.0.1:{port}/upload")
        cmd = [a.cordon, "run", "-q", "--audit", "none", "--policy", policy,
               "--allow-domain", f"127.0.0.1:{pi}", "--allow-domain", f"127.0.0.1:{po}",
               "--inspect", f"127.0.0.1:{pi}", "--upstream-ca", os.path.join(d, "ca.pem"),
               "--", "sh", "-c", "\n".join(script)]
        env = dict(os.environ, BENCH_TOKEN="bench-not-a-secret")
        out = subprocess.run(cmd, capture_output=True, text=True, timeout=3600, env=env)
        if out.returncode != 0:
            sys.exit(f"cordon failed ({out.returncode}): {out.stderr}")
        lat = {"inspected": [], "opaque": []}
        speed = {"inspected": [], "opaque": []}
        up = {"inspected": [], "opaque": []}
        for line in out.stdout.splitlines():
            name, kind, value = line.split()
            {"latency": lat, "speed": speed, "upload": up}[kind][name].append(float(value))
        for name in lat:
            if (len(lat[name]) != a.requests * a.rounds or len(speed[name]) != a.rounds
                    or len(up[name]) != a.rounds):
                sys.exit(f"missing results: {out.stdout[-500:]} {out.stderr}")
        print(f"HTTPS through cordon's proxy, {a.rounds} interleaved rounds; 2 CPUs")
        print(f"{'case':<11} {'p50 ms':>8} {'p90 ms':>8} {'MiB/s':>8} {'up MiB/s':>9}")
        for name in lat:
            ls = sorted(lat[name])
            print(f"{name:<11} {ls[len(ls) // 2] * 1000:>8.2f} {ls[int(len(ls) * 0.9)] * 1000:>8.2f}"
                  f" {statistics.median(speed[name]) / (1 << 20):>8.0f}"
                  f" {statistics.median(up[name]) / (1 << 20):>9.0f}")
        li = statistics.median(lat["inspected"]); lo = statistics.median(lat["opaque"])
        si = statistics.median(speed["inspected"]); so = statistics.median(speed["opaque"])
        ui = statistics.median(up["inspected"]); uo = statistics.median(up["opaque"])
        print(f"inspection adds {(li - lo) * 1000:.2f} ms per fresh request (p50) and gets {si / so:.0%} of the opaque throughput"
              f" ({ui / uo:.0%} uploading, the body scanned)")
    finally:
        shutil.rmtree(d, ignore_errors=True)


if __name__ == "__main__":
    main()
