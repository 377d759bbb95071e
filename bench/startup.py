#!/usr/bin/env python3
"""Start-up benchmark: `cordon run -- /bin/true` against bare /bin/true and
bubblewrap, measured in the same run, in interleaved rounds.

Prints medians, p90s, the added start-up over bare exec, the ratio to
bubblewrap, and the peak RSS of the cordon process tree.

usage: bench/startup.py [--runs N] [--cordon PATH]
"""
import argparse
import os
import shutil
import statistics
import sys
import tempfile
import time


def spawn_wait(argv):
    """Runs argv once; returns (seconds, peak RSS in KiB, exit status)."""
    start = time.perf_counter_ns()
    pid = os.posix_spawn(argv[0], argv, os.environ, file_actions=[
        (os.POSIX_SPAWN_OPEN, 0, "/dev/null", os.O_RDONLY, 0),
    ])
    _, status, usage = os.wait4(pid, 0)
    elapsed = (time.perf_counter_ns() - start) / 1e9
    return elapsed, usage.ru_maxrss, status


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=300)
    parser.add_argument("--warmup", type=int, default=20)
    parser.add_argument("--cordon", default=os.path.join(os.path.dirname(__file__), "..", "target", "release", "cordon"))
    args = parser.parse_args()

    cordon = os.path.abspath(args.cordon)
    true = shutil.which("true") or "/bin/true"
    bwrap = shutil.which("bwrap")
    project = tempfile.mkdtemp(prefix="cordon-bench-")
    os.chdir(project)
    cases = {
        "bare": [true],
        "cordon": [cordon, "run", "--", true],
    }
    if bwrap:
        cases["bwrap"] = [bwrap, "--unshare-all", "--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc", "--", true]
    else:
        print("bubblewrap not found: install it (apt-get install bubblewrap) for the comparison", file=sys.stderr)

    times = {name: [] for name in cases}
    rss = {name: [] for name in cases}
    for i in range(args.warmup + args.runs):
        for name, argv in cases.items():
            t, maxrss, status = spawn_wait(argv)
            if os.waitstatus_to_exitcode(status) != 0:
                sys.exit(f"{name} failed (status {status}): {' '.join(argv)}")
            if i >= args.warmup:
                times[name].append(t)
                rss[name].append(maxrss)
    os.rmdir(project)

    def q(values, p):
        values = sorted(values)
        return values[min(len(values) - 1, int(p * len(values)))]

    print(f"start-up, {args.runs} interleaved runs each (after {args.warmup} warm-up), {os.cpu_count()} CPUs")
    print(f"{'case':<8} {'median':>10} {'p90':>10} {'peak RSS':>10}")
    for name in cases:
        print(f"{name:<8} {statistics.median(times[name]) * 1e3:>8.3f}ms {q(times[name], 0.9) * 1e3:>8.3f}ms {max(rss[name]) / 1024:>7.2f}MiB")
    bare = statistics.median(times["bare"])
    cordon_med = statistics.median(times["cordon"])
    print(f"cordon added start-up over bare exec: {(cordon_med - bare) * 1e3:.3f} ms (target < 5 ms)")
    if "bwrap" in cases:
        bw = statistics.median(times["bwrap"])
        print(f"bwrap added start-up over bare exec:  {(bw - bare) * 1e3:.3f} ms")
        print(f"cordon / bwrap (median wall time): {cordon_med / bw:.2f}x (target <= 1.5x)")
        print(f"cordon / bwrap (added start-up):   {(cordon_med - bare) / (bw - bare):.2f}x")
    print(f"cordon peak RSS (supervisor or init, whichever is larger): {max(rss['cordon']) / 1024:.2f} MiB (target < 10 MiB)")


if __name__ == "__main__":
    main()
