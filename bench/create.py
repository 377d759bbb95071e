#!/usr/bin/env python3
"""File-creation benchmark: what refusing protected names and privilege
bits at creation costs. A build that creates 10,000 files in the project
(100 directories of 100 files, each created, written and closed; then a
`tar -x` of the same tree), bare, under bubblewrap and inside
`cordon run`, in interleaved rounds of one run.

The Python case times only the creation loop (start-up excluded); the tar
case times the whole command. Prints medians and ratios to bare.

A third case spaces the creating calls out as real tools do (npm and pip
make one every half millisecond or so, with their own work between): 1,000
files, each after 0.5 ms of computing, timing the calls alone. A gated call
that comes after the gate has gone idle costs a wake-up (on a VM, of an
idle virtual CPU) that a tight loop never pays.

The files are made on a tmpfs (--dir to move them): on a disk, the time
ext4 takes to make a file drifts as each round's files are deleted, and
that drift, not cordon, decided the ratio from run to run. The order of
the wrappers turns from round to round.

usage: bench/create.py [--rounds N] [--cordon PATH] [--dir DIR]
"""
import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

CREATE = r"""
import os, sys, time
root = sys.argv[1]
start = time.perf_counter()
for d in range(100):
    dd = os.path.join(root, "d%03d" % d)
    os.mkdir(dd)
    for f in range(100):
        fd = os.open(os.path.join(dd, "f%03d.o" % f), os.O_CREAT | os.O_WRONLY | os.O_TRUNC, 0o644)
        os.write(fd, b"x" * 64)
        os.close(fd)
print(time.perf_counter() - start)
"""

SPACED = r"""
import os, sys, time
root = sys.argv[1]
spent = 0.0
for f in range(1000):
    until = time.perf_counter() + 0.0005
    while time.perf_counter() < until:
        pass
    start = time.perf_counter()
    fd = os.open(os.path.join(root, "f%04d" % f), os.O_CREAT | os.O_WRONLY, 0o644)
    spent += time.perf_counter() - start
    os.close(fd)
print(spent)
"""


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--rounds", type=int, default=10)
    parser.add_argument("--cordon", default=os.path.join(os.path.dirname(__file__), "..", "target", "release", "cordon"))
    parser.add_argument("--dir", default="/dev/shm",
                        help="where the files are made (default: a tmpfs)")
    args = parser.parse_args()
    cordon = os.path.abspath(args.cordon)
    python = shutil.which("python3")
    tar = shutil.which("tar")
    bwrap = shutil.which("bwrap")
    project = tempfile.mkdtemp(prefix="cordon-bench-create-", dir=args.dir)
    os.chdir(project)
    # The archive the tar case extracts: the same 10,000-file tree, in the
    # project (the sandbox's /tmp and /dev/shm are its own).
    src = os.path.join(project, "src")
    os.mkdir(src)
    subprocess.run([python, "-c", CREATE, src], check=True, stdout=subprocess.DEVNULL)
    archive = os.path.join(project, "src.tar")
    subprocess.run([tar, "-cf", archive, "-C", src, "."], check=True)

    wrappers = {
        "bare": [],
        "cordon": [cordon, "run", "--quiet", "--audit", "none", "--"],
    }
    if bwrap:
        wrappers["bwrap"] = [bwrap, "--unshare-all", "--ro-bind", "/", "/", "--dev", "/dev",
                             "--proc", "/proc", "--bind", project, project, "--"]
    loop = {k: [] for k in wrappers}
    untar = {k: [] for k in wrappers}
    spaced = {k: [] for k in wrappers}
    for r in range(args.rounds):
        order = list(wrappers.items())
        for name, wrap in order[r % len(order):] + order[:r % len(order)]:
            out = os.path.join(project, "out")
            os.mkdir(out)
            r = subprocess.run(wrap + [python, "-c", CREATE, out], check=True, capture_output=True, text=True)
            loop[name].append(float(r.stdout.strip().splitlines()[-1]))
            shutil.rmtree(out)
            os.mkdir(out)
            start = time.perf_counter()
            subprocess.run(wrap + [tar, "-xf", archive, "-C", out], check=True)
            untar[name].append(time.perf_counter() - start)
            shutil.rmtree(out)
            os.mkdir(out)
            r = subprocess.run(wrap + [python, "-c", SPACED, out], check=True, capture_output=True, text=True)
            spaced[name].append(float(r.stdout.strip().splitlines()[-1]))
            shutil.rmtree(out)
    shutil.rmtree(project)
    print(f"10,000 files in 100 directories, {args.rounds} interleaved rounds (medians)")
    for title, data in [("create loop (inside, start-up excluded)", loop), ("tar -x (whole command)", untar)]:
        base = statistics.median(data["bare"])
        print(f"\n{title}")
        for name, xs in data.items():
            m = statistics.median(xs)
            print(f"  {name:7s} {m*1000:9.1f} ms  {m/base:5.2f}x bare  {(m-base)/10000*1e6:6.1f} us/file added")
    base = statistics.median(spaced["bare"])
    print("\n1,000 creates, each after 0.5 ms of work (the calls alone)")
    for name, xs in spaced.items():
        m = statistics.median(xs)
        print(f"  {name:7s} {m/1000*1e6:7.1f} us a call  {(m-base)/1000*1e6:6.1f} us added")


if __name__ == "__main__":
    sys.exit(main())
