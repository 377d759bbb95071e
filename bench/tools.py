#!/usr/bin/env python3
"""Real tools, bare against inside cordon, in one run: `npm install` and
`pip install` of the same packages from local stand-ins of their
registries, and a `git clone` of a mid-sized repository from a local git
HTTP server (tests/py/standins.py, on 127.0.0.1; cordon reaches them
through its proxy as host.cordon.internal:PORT). Rounds are interleaved,
each in a fresh directory, with nothing cached between rounds.

Before each timed run the page cache's dirty data is written out (`sync`,
untimed), so no run pays for the writeback of the one before; the order of
bare and inside alternates from round to round.

The projects, caches and the stand-ins' files live on a tmpfs (--dir to
put them elsewhere): on a disk, the time a file system takes to make a file
drifts as each round's files are deleted (ext4's allocator, looking for
inodes not lately freed, came to take most of a creating call's time
here), and that drift, not cordon, decided the ratio from run to run. A
tmpfs makes bare runs faster, so the ratio it gives is the stricter one.

Inside, /tmp is a private tmpfs; bare runs get the same, a fresh directory
on /dev/shm as TMPDIR, so the temporary files a tool unpacks cost the same
on both sides and the ratio is cordon's own overhead, not that of the
disk under the host's /tmp.

Also measures `cordon run -- /bin/true` against bare /bin/true in the same
rounds, so each tool's overhead can be read net of start-up: the target is
inside <= bare + start-up + 10% of bare.

--tls serves the stand-ins over HTTPS (a CA made for the run, trusted by
each client bare and inside): the clients then reach them through CONNECT
tunnels inside, as they reach the real registries, rather than through
the plain-HTTP forwarding path, which opens an upstream connection per
request.

usage: bench/tools.py [--rounds N] [--packages N] [--files N] [--tls] [--only npm,pip,git]
                      [--cordon PATH] [--dir DIR]
"""
import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
STANDINS = os.path.join(HERE, "..", "tests", "py", "standins.py")


def timed(argv, cwd, env=None):
    subprocess.run(["sync"], check=True)
    start = time.perf_counter()
    done = subprocess.run(argv, cwd=cwd, env=env, stdout=subprocess.DEVNULL,
                          stderr=subprocess.PIPE)
    elapsed = time.perf_counter() - start
    if done.returncode != 0:
        sys.exit(f"failed ({done.returncode}): {' '.join(argv)}\n{done.stderr.decode()}")
    return elapsed


def make_certificates(work):
    """A CA (work/ca.pem) and a certificate it signs for 127.0.0.1 and
    host.cordon.internal; returns the certificate's and key's paths."""
    def openssl(*args):
        subprocess.run(["openssl", *args], cwd=work, check=True,
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    openssl("req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", "ca.key",
            "-out", "ca.pem", "-days", "2", "-subj", "/CN=cordon bench CA")
    openssl("req", "-newkey", "rsa:2048", "-nodes", "-keyout", "leaf.key",
            "-out", "leaf.csr", "-subj", "/CN=127.0.0.1")
    with open(os.path.join(work, "san.ext"), "w") as f:
        f.write("subjectAltName=IP:127.0.0.1,DNS:host.cordon.internal\n")
    openssl("x509", "-req", "-in", "leaf.csr", "-CA", "ca.pem", "-CAkey", "ca.key",
            "-CAcreateserial", "-out", "leaf.pem", "-days", "2", "-extfile", "san.ext")
    return os.path.join(work, "leaf.pem"), os.path.join(work, "leaf.key")


def make_repo(path, files):
    """A repository of `files` text files over 50 commits, by fast-import."""
    subprocess.run(["git", "init", "-q", "--bare", path], check=True)
    lines = []
    per_commit = max(1, files // 50)
    mark = 0
    for c in range(50):
        lines.append("commit refs/heads/main")
        lines.append(f"committer bench <b@e> {1700000000 + c} +0000")
        msg = f"commit {c}"
        lines.append(f"data {len(msg)}")
        lines.append(msg)
        for f in range(per_commit):
            mark += 1
            body = (f"file {c}-{f}\n" + "".join(f"line {i} of {c}/{f} {mark * 7919 % 104729}\n"
                                              for i in range(40)))
            lines.append(f"M 644 inline d{c % 20}/f{c}-{f}.txt")
            lines.append(f"data {len(body.encode())}")
            lines.append(body)
    data = ("\n".join(lines) + "\n").encode()
    subprocess.run(["git", "fast-import", "--quiet"], cwd=path, input=data, check=True)
    subprocess.run(["git", "symbolic-ref", "HEAD", "refs/heads/main"], cwd=path, check=True)
    subprocess.run(["git", "gc", "-q"], cwd=path, check=True)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--packages", type=int, default=40)
    ap.add_argument("--files", type=int, default=5000)
    ap.add_argument("--tls", action="store_true")
    ap.add_argument("--only", default="npm,pip,git",
                    help="the tools to measure, comma-separated (start-up is always measured)")
    ap.add_argument("--cordon", default=os.path.join(HERE, "..", "target", "release", "cordon"))
    ap.add_argument("--dir", default="/dev/shm",
                    help="where the projects, caches and stand-ins' files live (default: a tmpfs)")
    args = ap.parse_args()
    cordon = os.path.abspath(args.cordon)
    work = tempfile.mkdtemp(prefix="cordon-bench-tools-", dir=args.dir)
    # Where the sandbox can read it: not in /tmp or /dev/shm, private inside.
    certs = tempfile.mkdtemp(prefix="cordon-bench-ca-", dir="/var/tmp")
    serve = [sys.executable, STANDINS, os.path.join(work, "standins"),
             "--packages", str(args.packages)]
    ca = os.path.join(certs, "ca.pem")
    scheme = "https" if args.tls else "http"
    if args.tls:
        serve += ["--tls", *make_certificates(certs)]
    server = subprocess.Popen(serve, stdout=subprocess.PIPE, text=True)
    try:
        ports = json.loads(server.stdout.readline())
        make_repo(os.path.join(work, "standins", "git", "mid.git"), args.files)
        size = sum(os.path.getsize(os.path.join(d, f))
                   for d, _, fs in os.walk(os.path.join(work, "standins", "git", "mid.git"))
                   for f in fs)
        print(f"{scheme.upper()} stand-ins; {args.packages} chained packages per install; git repository of "
              f"{args.files} files, {size / 1e6:.1f} MB packed; {args.rounds} interleaved rounds")

        # Every variable a client here takes its roots from (this machine
        # sets them all to the system bundle), set to the run's CA.
        roots = ["NODE_EXTRA_CA_CERTS", "GIT_SSL_CAINFO", "CURL_CA_BUNDLE", "SSL_CERT_FILE",
                 "PIP_CERT", "REQUESTS_CA_BUNDLE"]
        trust = ["env", *[f"{v}={ca}" for v in roots]] if args.tls else []

        def local(kind):
            return f"{scheme}://127.0.0.1:{ports[kind]}"

        def via_cordon(kind):
            return f"{scheme}://host.cordon.internal:{ports[kind]}"

        def in_cordon(kind, argv):
            return [cordon, "run", "--quiet", "--audit", "none",
                    "--allow-domain", f"host.cordon.internal:{ports[kind]}", "--"] + argv

        def npm(url, cache):
            # npm's own cafile setting (this machine's npmrc names one) wins
            # over NODE_EXTRA_CA_CERTS.
            cafile = ["--cafile", ca] if args.tls else []
            return trust + ["npm", "install", "--no-audit", "--no-fund", "--cache", cache,
                            *cafile, "--registry", url + "/", "cordon-fixture-0"]

        def pip(url, target):
            tls = [] if args.tls else ["--trusted-host", url.split("//")[1].split(":")[0]]
            return trust + [sys.executable, "-m", "pip", "install", "-q", "--no-cache-dir",
                    "--disable-pip-version-check", "--target", target,
                    "--index-url", url + "/simple/", *tls, "cordon-fixture-0"]

        cases = {
            # Each takes the round's project directory and its temporary
            # directory (/tmp inside): npm's cache is in the latter on
            # both sides.
            "start-up (/bin/true)": (lambda d, tmp: ["/bin/true"],
                                     lambda d, tmp: [cordon, "run", "--quiet", "--audit", "none",
                                                     "--", "/bin/true"]),
            "npm install": (lambda d, tmp: npm(local("npm"), os.path.join(tmp, "npm-cache")),
                            lambda d, tmp: in_cordon("npm", npm(via_cordon("npm"), "/tmp/npm-cache"))),
            "pip install": (lambda d, tmp: pip(local("pypi"), os.path.join(d, "t")),
                            lambda d, tmp: in_cordon("pypi", pip(via_cordon("pypi"), "t"))),
            "git clone": (lambda d, tmp: trust + ["git", "clone", "-q", local("git") + "/mid.git", "c"],
                          lambda d, tmp: in_cordon("git", trust + ["git", "clone", "-q",
                                                                   via_cordon("git") + "/mid.git", "c"])),
        }
        only = set(args.only.split(","))
        unknown = only - {"npm", "pip", "git"}
        if unknown:
            sys.exit(f"--only: no such tool: {', '.join(sorted(unknown))}")
        cases = {n: c for n, c in cases.items() if n.startswith("start-up") or n.split()[0] in only}
        times = {name: {"bare": [], "cordon": []} for name in cases}
        for r in range(args.rounds):
            for name, (bare, inside) in cases.items():
                order = (("bare", bare), ("cordon", inside))
                for how, make in order if r % 2 == 0 else order[::-1]:
                    d = os.path.join(work, f"p-{r}-{how}-{name.split()[0]}")
                    os.makedirs(d)
                    with open(os.path.join(d, "package.json"), "w") as f:
                        f.write('{"name": "bench", "version": "1.0.0"}\n')
                    tmp = tempfile.mkdtemp(prefix="cordon-bench-tmp-", dir="/dev/shm")
                    env = dict(os.environ, TMPDIR=tmp) if how == "bare" else None
                    try:
                        times[name][how].append(timed(make(d, tmp), d, env))
                    finally:
                        shutil.rmtree(tmp)
                    shutil.rmtree(d)
        med = {n: {h: statistics.median(v) for h, v in t.items()} for n, t in times.items()}
        startup = med["start-up (/bin/true)"]["cordon"] - med["start-up (/bin/true)"]["bare"]
        print(f"\n{'case':<22}{'bare':>10}{'cordon':>10}{'ratio':>8}{'net of start-up':>18}")
        for name, m in med.items():
            net = (m["cordon"] - startup) / m["bare"] if name != "start-up (/bin/true)" else float("nan")
            net_text = f"{net:.3f}x" if net == net else "-"
            print(f"{name:<22}{m['bare'] * 1000:>8.1f}ms{m['cordon'] * 1000:>8.1f}ms"
                  f"{m['cordon'] / m['bare']:>7.2f}x{net_text:>18}")
        print(f"\nstart-up added by cordon: {startup * 1000:.1f} ms (median); "
              "net of start-up = (cordon - start-up) / bare; the target is <= 1.10x")
    finally:
        server.kill()
        server.wait()
        shutil.rmtree(work, ignore_errors=True)
        shutil.rmtree(certs, ignore_errors=True)


if __name__ == "__main__":
    main()
