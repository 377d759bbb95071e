#!/usr/bin/env python3
"""Ports benchmark: what the ports across the sandbox's edge cost.

    cargo build --release && python3 bench/ports.py [--also NAME=BINARY]

(as any user; `--rounds`, `--size-mib`, `--connects` scale it).

1. Local connects: --connects connections, one after the other, from a
   python loop inside ONE sandbox to a server inside the same sandbox, on
   non-blocking sockets (as event loops connect) and on blocking ones;
   p50/p90 per connect. Every connect passes the sandbox's gate, which
   asks sock_diag for listeners when one is pending: the number to watch
   against `--also` a build without that.
2. Host port: curl inside downloads --size-mib MiB from a server on the
   host's 127.0.0.1 through --host-port, against curl on the host
   downloading it directly; speed from curl's -w '%{speed_download}'.
3. Publish: curl on the host downloads --size-mib MiB from a server
   inside through --publish, against the same server reached directly on
   the host.
Rounds are interleaved; the median round is reported.
"""
import argparse
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import time

# A bulk HTTP server: argv[1] port (0: any), argv[2] MiB; prints its port.
SERVER = r"""
import socket, sys, threading
mib = int(sys.argv[2])
chunk = b"x" * (1 << 20)
srv = socket.socket()
srv.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
srv.bind(("127.0.0.1", int(sys.argv[1])))
srv.listen(128)
print("port:", srv.getsockname()[1], flush=True)
def serve(c):
    try:
        c.recv(65536)
        c.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\nConnection: close\r\n\r\n" % (mib << 20))
        for _ in range(mib):
            c.sendall(chunk)
    finally:
        c.close()
while True:
    c, _ = srv.accept()
    threading.Thread(target=serve, args=(c,), daemon=True).start()
"""

# Local connects inside: a listener on argv[2], then argv[1] connects of
# each kind.
CONNECTS = r"""
import select, socket, sys, threading, time
srv = socket.socket()
srv.bind(("127.0.0.1", int(sys.argv[2])))
srv.listen(1024)
port = srv.getsockname()[1]
def accept():
    while True:
        c, _ = srv.accept()
        c.close()
threading.Thread(target=accept, daemon=True).start()
n = int(sys.argv[1])
for kind in ("nonblocking", "blocking"):
    times = []
    for _ in range(n):
        s = socket.socket()
        t = time.perf_counter()
        if kind == "nonblocking":
            s.setblocking(False)
            try:
                s.connect(("127.0.0.1", port))
            except BlockingIOError:
                pass
            select.select([], [s], [], 5)
        else:
            s.connect(("127.0.0.1", port))
        times.append(time.perf_counter() - t)
        s.close()
    times.sort()
    print(kind, times[len(times) // 2] * 1e6, times[len(times) * 9 // 10] * 1e6)
"""


def start_server(cmd, mib):
    proc = subprocess.Popen(
        cmd + [SERVER, "0", str(mib)], stdout=subprocess.PIPE, text=True
    )
    line = proc.stdout.readline()
    return proc, int(line.split()[1])


def curl_speed(prefix, url):
    out = subprocess.run(
        prefix + ["curl", "-sS", "--noproxy", "*", "-o", "/dev/null",
                  "-w", "%{speed_download}", url],
        capture_output=True, text=True, check=True,
    )
    return float(out.stdout.strip().splitlines()[-1]) / (1 << 20)


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--cordon", default="target/release/cordon")
    ap.add_argument("--also", action="append", default=[],
                    help="NAME=BINARY [FLAGS...]: another cordon to measure (local connects "
                    "only), with FLAGS (e.g. an older build's --allow-local-port 7777)")
    ap.add_argument("--port", type=int, default=7777, help="the local server's port inside")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--size-mib", type=int, default=256)
    ap.add_argument("--connects", type=int, default=2000)
    args = ap.parse_args()
    project = tempfile.mkdtemp(prefix="cordon-bench-ports-")
    builds = [("this", os.path.abspath(args.cordon), [])]
    for also in args.also:
        name, command = also.split("=", 1)
        binary, *flags = command.split()
        builds.append((name, os.path.abspath(binary), flags))

    def cordon(binary, *flags):
        return [binary, "run", "-q", "--audit", "none", "--project", project, *flags, "--"]

    print(f"1. local connects inside ({args.connects} each, p50/p90 us)")
    for name, binary, flags in builds:
        rows = {}
        for _ in range(args.rounds):
            out = subprocess.run(
                cordon(binary, *flags)
                + [sys.executable, "-c", CONNECTS, str(args.connects), str(args.port)],
                capture_output=True, text=True, check=True, cwd=project,
            )
            for line in out.stdout.splitlines():
                kind, p50, p90 = line.split()
                rows.setdefault(kind, []).append((float(p50), float(p90)))
        for kind, values in rows.items():
            p50 = statistics.median(v[0] for v in values)
            p90 = statistics.median(v[1] for v in values)
            print(f"   {name:>8} {kind:>12}: p50 {p50:7.1f}  p90 {p90:7.1f}")

    binary = builds[0][1]
    print(f"2. host port: {args.size_mib} MiB download (MiB/s, median round)")
    server, port = start_server([sys.executable, "-c"], args.size_mib)
    try:
        url = f"http://127.0.0.1:{port}/"
        bare, through = [], []
        for _ in range(args.rounds):
            bare.append(curl_speed([], url))
            through.append(curl_speed(cordon(binary, "--host-port", str(port)), url))
        b, t = statistics.median(bare), statistics.median(through)
        print(f"   bare {b:8.0f}   --host-port {t:8.0f}   ({t / b:.0%} of bare)")
    finally:
        server.kill()
        server.wait()

    print(f"3. publish: {args.size_mib} MiB download from a server inside (MiB/s)")
    inside, host = free_port(), free_port()
    # The server inside says its port into `flag`; the sandbox lives while
    # `running` exists.
    flag, running = project + "/serving", project + "/running"
    open(running, "w").close()
    script = (
        f"{sys.executable} -c \"$SERVE\" {inside} {args.size_mib} > {flag} & "
        f"while [ -e {running} ]; do sleep 0.1; done"
    )
    env = dict(os.environ, SERVE=SERVER)
    sandbox = subprocess.Popen(
        cordon(binary, "--publish", f"{inside}:{host}") + ["sh", "-c", script],
        env=env, cwd=project,
    )
    server, port = start_server([sys.executable, "-c"], args.size_mib)
    try:
        deadline = time.time() + 20
        while time.time() < deadline:
            if os.path.exists(flag) and os.path.getsize(flag) > 0:
                break
            time.sleep(0.05)
        bare, through = [], []
        for _ in range(args.rounds):
            bare.append(curl_speed([], f"http://127.0.0.1:{port}/"))
            through.append(curl_speed([], f"http://127.0.0.1:{host}/"))
        b, t = statistics.median(bare), statistics.median(through)
        print(f"   bare {b:8.0f}   --publish {t:8.0f}   ({t / b:.0%} of bare)")
    finally:
        server.kill()
        server.wait()
        os.unlink(running)
        try:
            sandbox.wait(timeout=10)
        except subprocess.TimeoutExpired:
            sandbox.kill()
            sandbox.wait()


if __name__ == "__main__":
    main()
