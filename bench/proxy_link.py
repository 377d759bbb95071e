#!/usr/bin/env python3
"""Proxy throughput over a link slower than loopback: a veth pair to a
network namespace this script makes, shaped with tc (tbf) to --gbit, so
the network, not the CPU, bounds a direct download. Compares curl
directly, and inside `cordon run` through the CONNECT and SOCKS5 proxy,
interleaved, in one run. Needs root (ip netns, tc); everything it makes
is removed on exit.

    cargo build --release && sudo python3 bench/proxy_link.py --gbit 1 --gbit 10

Addresses: 10.250.77.1 (host side) and 10.250.77.2 (the upstream's
namespace), on a link that exists only during the run.
"""
import argparse
import os
import statistics
import subprocess
import sys
import time

NS = "cordon-bench-up"
HOST_IF, NS_IF = "cbench0", "cbench1"
HOST_IP, UP_IP = "10.250.77.1", "10.250.77.2"
PORT = 18081

SERVER = r"""
import socket, sys, threading
size = int(sys.argv[1]) << 20
s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(('0.0.0.0', %d)); s.listen(64)
buf = b'\0' * (1 << 20)
def serve(c):
    try:
        c.recv(65536)
        c.sendall(b'HTTP/1.1 200 OK\r\nContent-Length: %%d\r\nConnection: close\r\n\r\n' %% size)
        left = size
        while left > 0:
            n = min(left, len(buf)); c.sendall(buf[:n]); left -= n
    except OSError:
        pass
    c.close()
while True:
    c, _ = s.accept(); threading.Thread(target=serve, args=(c,), daemon=True).start()
""" % PORT


def sh(*args, check=True):
    return subprocess.run(args, check=check, capture_output=True, text=True)


def setup(gbit):
    teardown()
    sh("ip", "netns", "add", NS)
    sh("ip", "link", "add", HOST_IF, "type", "veth", "peer", "name", NS_IF)
    sh("ip", "link", "set", NS_IF, "netns", NS)
    sh("ip", "addr", "add", f"{HOST_IP}/30", "dev", HOST_IF)
    sh("ip", "link", "set", HOST_IF, "up")
    sh("ip", "netns", "exec", NS, "ip", "addr", "add", f"{UP_IP}/30", "dev", NS_IF)
    sh("ip", "netns", "exec", NS, "ip", "link", "set", NS_IF, "up")
    sh("ip", "netns", "exec", NS, "ip", "link", "set", "lo", "up")
    # Shape the upstream's sending side: the download direction.
    sh("ip", "netns", "exec", NS, "tc", "qdisc", "add", "dev", NS_IF, "root", "tbf",
       "rate", f"{gbit}gbit", "burst", f"{max(1, gbit) * 256}kb", "latency", "5ms")


def teardown():
    sh("ip", "link", "del", HOST_IF, check=False)
    sh("ip", "netns", "del", NS, check=False)


def curl_speed(prefix, extra):
    out = subprocess.run(
        prefix + ["curl", "-s", "-o", "/dev/null", "-w", "%{speed_download}"] + extra
        + [f"http://{UP_IP}:{PORT}/"],
        capture_output=True, text=True, timeout=600)
    try:
        return float(out.stdout.strip()) / (1 << 20)
    except ValueError:
        sys.exit(f"curl failed: {out.stdout!r} {out.stderr!r}")


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--cordon", default=os.path.join(os.path.dirname(__file__), "..", "target", "release", "cordon"))
    p.add_argument("--gbit", type=float, action="append")
    p.add_argument("--size-mib", type=int, default=512)
    p.add_argument("--rounds", type=int, default=3)
    a = p.parse_args()
    if os.geteuid() != 0:
        sys.exit("needs root (ip netns, tc)")
    cordon = [a.cordon, "run", "-q", "--audit", "none", "--allow-domain", f"{UP_IP}:{PORT}", "--"]
    cases = {
        "direct": ([], []),
        "cordon CONNECT": (cordon, ["--noproxy", "", "-p", "-x", "http://127.0.0.1:3128"]),
        "cordon SOCKS5": (cordon, ["--noproxy", "", "-x", "socks5h://127.0.0.1:1080"]),
    }
    try:
        for gbit in a.gbit or [1.0, 10.0]:
            setup(gbit)
            server = subprocess.Popen(["ip", "netns", "exec", NS, sys.executable, "-c", SERVER, str(a.size_mib)])
            time.sleep(0.5)
            try:
                speeds = {k: [] for k in cases}
                for _ in range(a.rounds):
                    for name, (prefix, extra) in cases.items():
                        speeds[name].append(curl_speed(prefix, extra))
            finally:
                server.kill()
                server.wait()
            print(f"\nlink shaped to {gbit:g} Gbit/s ({gbit * 1000 / 8:.0f} MB/s), {a.size_mib} MiB, median of {a.rounds}")
            print(f"{'case':<16} {'MiB/s':>8} {'vs direct':>10}")
            base = statistics.median(speeds["direct"])
            for name, v in speeds.items():
                m = statistics.median(v)
                print(f"{name:<16} {m:>8.0f} {m / base:>9.0%}")
    finally:
        teardown()


if __name__ == "__main__":
    main()
