#!/usr/bin/env python3
"""Proxy benchmark: cordon's HTTP (CONNECT and plain) and SOCKS5 proxy
against a direct loopback connection to the same upstream, in one run.

    cargo build --release && python3 bench/proxy.py

(as any user; `--rounds`, `--size-mib`, `--requests`, `--tunnels` scale it).

Upstreams run in a child process of this script, on the host's 127.0.0.1:
a bulk server (one 1 MiB buffer sent in a loop, Content-Length: --size-mib),
a small-response server (answers each request with 2 bytes and closes) and
an echo server (for held tunnels). cordon is run with each allowed by IP
and port (--allow-domain 127.0.0.1:PORT); the same client code runs
  - bare: not in any sandbox, connecting to the upstream directly,
  - bwrap: inside bubblewrap sharing the host network, directly (a sandbox
    without a proxy, for fairness; skipped if bwrap is missing),
  - cordon CONNECT / plain / SOCKS5: inside `cordon run`, through the proxy.

1. Throughput: curl downloads --size-mib MiB to /dev/null; speed from
   curl's own -w '%{speed_download}' (sandbox start-up not counted).
   Rounds are interleaved; the median round is reported. Target: >= 80%
   of bare.
2. Latency: --requests sequential small requests, each over a fresh
   connection (a new CONNECT, plain GET or SOCKS5 CONNECT), from a python
   loop inside ONE sandbox (start-up not counted); p50/p90 of each, and
   the added p50/p90 over bare. Target: p50 < 200 us added.
3. Concurrency: --tunnels CONNECT tunnels opened and held at once from
   inside one sandbox, each then used for a round trip; the count that
   worked and the supervisor's (the proxy's process) VmRSS/VmHWM, sampled
   while they are all open. Also under a soft RLIMIT_NOFILE of 1024, the
   usual default of a login session.
"""
import argparse
import json
import os
import resource
import selectors
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time

MIB = 1 << 20


# ---------------------------------------------------------------------------
# Upstream servers (run in a child process).

def read_head(conn):
    data = b""
    while b"\r\n\r\n" not in data:
        chunk = conn.recv(4096)
        if not chunk:
            return None
        data += chunk
    return data


def bulk_server(sock, size):
    import threading

    buf = memoryview(b"\x00" * MIB)

    def serve(conn):
        with conn:
            if read_head(conn) is None:
                return
            conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\nConnection: close\r\n\r\n" % size)
            left = size
            try:
                while left > 0:
                    n = min(left, MIB)
                    conn.sendall(buf[:n])
                    left -= n
            except OSError:
                pass

    while True:
        conn, _ = sock.accept()
        threading.Thread(target=serve, args=(conn,), daemon=True).start()


def event_server(small, echo):
    """Small responses on `small`, echo on `echo`, all non-blocking."""
    sel = selectors.DefaultSelector()
    small.setblocking(False)
    echo.setblocking(False)
    sel.register(small, selectors.EVENT_READ, "accept-small")
    sel.register(echo, selectors.EVENT_READ, "accept-echo")
    reply = b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\nConnection: close\r\n\r\nok"
    heads = {}
    while True:
        for key, _ in sel.select():
            kind = key.data
            if kind in ("accept-small", "accept-echo"):
                try:
                    conn, _ = key.fileobj.accept()
                except OSError:
                    continue
                conn.setblocking(False)
                sel.register(conn, selectors.EVENT_READ, "small" if kind == "accept-small" else "echo")
                heads[conn] = b""
                continue
            conn = key.fileobj
            try:
                data = conn.recv(65536)
            except OSError:
                data = b""
            if kind == "echo" and data:
                try:
                    conn.sendall(data)
                    continue
                except OSError:
                    data = b""
            if kind == "small" and data:
                heads[conn] += data
                if b"\r\n\r\n" not in heads[conn]:
                    continue
                try:
                    conn.sendall(reply)
                except OSError:
                    pass
            sel.unregister(conn)
            heads.pop(conn, None)
            conn.close()


def start_upstreams(size):
    """Forks the servers; returns (child pid, bulk port, small port, echo port)."""
    socks = []
    for _ in range(3):
        s = socket.socket()
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        s.bind(("127.0.0.1", 0))
        s.listen(4096)
        socks.append(s)
    bulk, small, echo = socks
    pid = os.fork()
    if pid == 0:
        try:
            import threading
            threading.Thread(target=bulk_server, args=(bulk, size), daemon=True).start()
            event_server(small, echo)
        finally:
            os._exit(0)
    ports = [s.getsockname()[1] for s in socks]
    for s in socks:
        s.close()
    return pid, *ports


# ---------------------------------------------------------------------------
# Clients.

# The latency client: N sequential requests over fresh connections, each
# timed from connect to the end of the response. Prints JSON microseconds.
LATENCY_CLIENT = r"""
import json, socket, sys, time
mode, port, n, warm = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
target = ('127.0.0.1', port)
def read_until_close(s):
    while s.recv(65536):
        pass
def one():
    if mode == 'direct':
        s = socket.create_connection(target)
        s.sendall(b'GET / HTTP/1.1\r\nHost: 127.0.0.1:%d\r\n\r\n' % port)
    elif mode == 'plain':
        s = socket.create_connection(('127.0.0.1', 3128))
        s.sendall(b'GET http://127.0.0.1:%d/ HTTP/1.1\r\nHost: 127.0.0.1:%d\r\n\r\n' % (port, port))
    elif mode == 'connect':
        s = socket.create_connection(('127.0.0.1', 3128))
        s.sendall(b'CONNECT 127.0.0.1:%d HTTP/1.1\r\nHost: 127.0.0.1:%d\r\n\r\n' % (port, port))
        head = b''
        while b'\r\n\r\n' not in head:
            head += s.recv(4096)
        assert head.startswith(b'HTTP/1.1 200'), head
        s.sendall(b'GET / HTTP/1.1\r\nHost: 127.0.0.1:%d\r\n\r\n' % port)
    elif mode == 'socks':
        s = socket.create_connection(('127.0.0.1', 1080))
        s.sendall(b'\x05\x01\x00')
        assert s.recv(2) == b'\x05\x00'
        s.sendall(b'\x05\x01\x00\x01\x7f\x00\x00\x01' + port.to_bytes(2, 'big'))
        rep = b''
        while len(rep) < 10:
            rep += s.recv(10 - len(rep))
        assert rep[1] == 0, rep
        s.sendall(b'GET / HTTP/1.1\r\nHost: 127.0.0.1:%d\r\n\r\n' % port)
    read_until_close(s)
    s.close()
out = []
for i in range(warm + n):
    t = time.perf_counter_ns()
    one()
    if i >= warm:
        out.append((time.perf_counter_ns() - t) / 1000)
print(json.dumps(out))
"""

# The concurrency client: opens N CONNECT tunnels, holds them all, does a
# round trip on each, prints "held OK FAILED", waits for a line on stdin,
# then closes everything.
TUNNELS_CLIENT = r"""
import resource, socket, sys
port, n = int(sys.argv[1]), int(sys.argv[2])
soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
held, failed, errors = [], 0, {}
for i in range(n):
    try:
        s = socket.create_connection(('127.0.0.1', 3128), timeout=30)
        s.sendall(b'CONNECT 127.0.0.1:%d HTTP/1.1\r\nHost: 127.0.0.1:%d\r\n\r\n' % (port, port))
        head = b''
        while b'\r\n\r\n' not in head:
            c = s.recv(4096)
            if not c:
                raise OSError('closed before the reply')
            head += c
        if not head.startswith(b'HTTP/1.1 200'):
            raise OSError(head.split(b'\r\n')[0].decode())
        held.append(s)
    except OSError as e:
        failed += 1
        errors[str(e)] = errors.get(str(e), 0) + 1
ok = 0
for i, s in enumerate(held):
    try:
        msg = b'ping-%d' % i
        s.sendall(msg)
        got = b''
        while len(got) < len(msg):
            c = s.recv(64)
            if not c:
                break
            got += c
        if got == msg:
            ok += 1
        else:
            failed += 1
    except OSError as e:
        failed += 1
        errors[str(e)] = errors.get(str(e), 0) + 1
print('held', ok, failed, repr(errors), flush=True)
sys.stdin.readline()
for s in held:
    s.close()
"""


def proc_status(pid):
    vals = {}
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                key, _, rest = line.partition(":")
                if key in ("VmRSS", "VmHWM"):
                    vals[key] = int(rest.split()[0])
    except OSError:
        pass
    return vals


def run_timed(argv):
    """Runs argv; returns (stdout, CPU seconds of it and everything it
    waited for: for cordon, the supervisor with its proxy, init and the
    client)."""
    p = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    out, err = p.stdout.read(), p.stderr.read()
    _, status, ru = os.wait4(p.pid, 0)
    p.returncode = os.waitstatus_to_exitcode(status)
    if p.returncode != 0:
        sys.exit(f"failed ({p.returncode}): {' '.join(argv[:6])} ...\n{out}\n{err}")
    return out, ru.ru_utime + ru.ru_stime


def run_checked(argv):
    return run_timed(argv)[0]


def cpu_text(values):
    """Median CPU s/GiB; n/a when the wrapper did not wait for the client
    (bwrap's monitor does not reap it, so its rusage is empty)."""
    med = statistics.median(values)
    return f"{med:.2f}" if med >= 0.01 else "n/a"


def q(values, p):
    values = sorted(values)
    return values[min(len(values) - 1, int(p * len(values)))]


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--cordon", default=os.path.join(os.path.dirname(__file__), "..", "target", "release", "cordon"))
    parser.add_argument("--rounds", type=int, default=5, help="interleaved throughput rounds")
    parser.add_argument("--size-mib", type=int, default=1024, help="download size per transfer")
    parser.add_argument("--requests", type=int, default=1000, help="sequential requests per latency run")
    parser.add_argument("--latency-rounds", type=int, default=3)
    parser.add_argument("--tunnels", type=int, default=1000)
    args = parser.parse_args()

    cordon = os.path.abspath(args.cordon)
    curl = shutil.which("curl")
    py = "/usr/bin/python3" if os.path.exists("/usr/bin/python3") else sys.executable
    bwrap = shutil.which("bwrap")
    if not curl:
        sys.exit("curl is needed (apt-get install curl)")
    # Room for the held tunnels in this process's children (the upstream
    # and, for the first concurrency run, cordon).
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))

    size = args.size_mib * MIB
    upstream, bulk, small, echo = start_upstreams(size)
    project = tempfile.mkdtemp(prefix="cordon-bench-")
    os.chdir(project)
    try:
        allow = []
        for port in (bulk, small, echo):
            allow += ["--allow-domain", f"127.0.0.1:{port}"]
        in_cordon = [cordon, "run", *allow, "--"]
        in_bwrap = [bwrap, "--unshare-all", "--share-net", "--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc", "--"] if bwrap else None
        if not bwrap:
            print("bubblewrap not found: install it (apt-get install bubblewrap) for the comparison", file=sys.stderr)

        # 1. Throughput.
        url = f"http://127.0.0.1:{bulk}/bulk"
        curl_args = [curl, "-sS", "--noproxy", "", "-o", "/dev/null", "-w", "%{speed_download} %{size_download}"]
        cases = {"bare": curl_args + [url]}
        if in_bwrap:
            cases["bwrap"] = in_bwrap + curl_args + [url]
        cases["cordon CONNECT"] = in_cordon + curl_args + ["-p", "-x", "http://127.0.0.1:3128", url]
        cases["cordon plain"] = in_cordon + curl_args + ["-x", "http://127.0.0.1:3128", url]
        cases["cordon SOCKS5"] = in_cordon + curl_args + ["--socks5-hostname", "127.0.0.1:1080", url]
        speeds = {name: [] for name in cases}
        cpu = {name: [] for name in cases}
        for _ in range(args.rounds):
            for name, argv in cases.items():
                out, secs = run_timed(argv)
                speed, got = out.split()
                if int(got) != size:
                    sys.exit(f"{name}: got {got} bytes of {size}")
                speeds[name].append(float(speed))
                cpu[name].append(secs / (size / (1 << 30)))
        bare_speed = statistics.median(speeds["bare"])
        print(f"\nthroughput: {args.size_mib} MiB download with curl, {args.rounds} interleaved rounds, median; {os.cpu_count()} CPUs")
        print("(CPU: seconds per GiB of the client and, for cordon, the supervisor with its proxy; the upstream's is the same for all)")
        print(f"{'case':<16} {'MiB/s':>10} {'min':>10} {'max':>10} {'vs bare':>8} {'CPU s/GiB':>10}")
        for name, v in speeds.items():
            med = statistics.median(v)
            print(f"{name:<16} {med / MIB:>10.0f} {min(v) / MIB:>10.0f} {max(v) / MIB:>10.0f} {med / bare_speed:>7.0%} {cpu_text(cpu[name]):>10}")
        print("target: cordon CONNECT and SOCKS5 >= 80% of bare")

        # 2. Latency.
        warm = 50
        lat_cases = {"bare": [py, "-c", LATENCY_CLIENT, "direct"]}
        if in_bwrap:
            lat_cases["bwrap"] = in_bwrap + [py, "-c", LATENCY_CLIENT, "direct"]
        for mode, name in (("connect", "cordon CONNECT"), ("plain", "cordon plain"), ("socks", "cordon SOCKS5")):
            lat_cases[name] = in_cordon + [py, "-c", LATENCY_CLIENT, mode]
        lats = {name: [] for name in lat_cases}
        for _ in range(args.latency_rounds):
            for name, argv in lat_cases.items():
                lats[name] += json.loads(run_checked(argv + [str(small), str(args.requests), str(warm)]))
        b50, b90 = q(lats["bare"], 0.5), q(lats["bare"], 0.9)
        print(f"\nlatency: {args.requests} sequential requests on fresh connections per run, {args.latency_rounds} interleaved runs, one sandbox per run (after {warm} warm-up requests)")
        print(f"{'case':<16} {'p50 us':>8} {'p90 us':>8} {'added p50':>10} {'added p90':>10}")
        for name, v in lats.items():
            p50, p90 = q(v, 0.5), q(v, 0.9)
            print(f"{name:<16} {p50:>8.0f} {p90:>8.0f} {p50 - b50:>10.0f} {p90 - b90:>10.0f}")
        print("target: p50 < 200 us added through the proxy")

        # 3. Concurrency.
        print(f"\nconcurrency: {args.tunnels} CONNECT tunnels held at once, then a round trip on each")
        print(f"{'cordon soft NOFILE':<20} {'ok':>6} {'failed':>7} {'VmRSS MiB':>10} {'VmHWM MiB':>10}  errors")
        for limit in (hard, 1024):
            argv = in_cordon + [py, "-c", TUNNELS_CLIENT, str(echo), str(args.tunnels)]
            def lower():
                resource.setrlimit(resource.RLIMIT_NOFILE, (min(limit, hard), hard))
            p = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, preexec_fn=lower)
            line = p.stdout.readline().split(maxsplit=3)
            mem = proc_status(p.pid)
            p.stdin.write("\n")
            p.stdin.flush()
            out, err = p.communicate(timeout=120)
            if len(line) < 3 or line[0] != "held":
                print(f"{limit:<20} client failed: {line} {err.strip()[-300:]}")
                continue
            ok, failed, errors = line[1], line[2], line[3].strip() if len(line) > 3 else ""
            print(f"{limit:<20} {ok:>6} {failed:>7} {mem.get('VmRSS', 0) / 1024:>10.1f} {mem.get('VmHWM', 0) / 1024:>10.1f}  {errors if errors != '{}' else ''}")
            if err.strip():
                print(f"  cordon stderr: {err.strip()[-300:]}")
    finally:
        os.kill(upstream, 9)
        os.waitpid(upstream, 0)
        os.chdir("/")
        shutil.rmtree(project, ignore_errors=True)


if __name__ == "__main__":
    main()
