#!/usr/bin/env python3
"""Start-up benchmark: `cordon run -- /bin/true` against bare /bin/true and
bubblewrap, measured in the same run, in interleaved rounds.

Prints medians, p90s, the added start-up over bare exec, the ratio to
bubblewrap, and the peak RSS of cordon's supervisor and init.

usage: bench/startup.py [--runs N] [--cordon PATH] [--git] [--fifo] [--also NAME=PATH ...]

--git makes the project a git repository (the usual case for an agent;
cordon then protects its hooks and config). --also adds another cordon
binary (e.g. an earlier build) to the same interleaved rounds. --fifo runs
every case at a real-time priority (SCHED_FIFO, needs root), so that
builds and other load on the machine do not stretch the hand-offs between
cordon's processes (supervisor, init, command) more than bubblewrap's.
"""
import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time


def spawn_wait(argv):
    """Runs argv once; returns (seconds, exit status)."""
    start = time.perf_counter_ns()
    pid = os.posix_spawn(argv[0], argv, os.environ, file_actions=[
        (os.POSIX_SPAWN_OPEN, 0, "/dev/null", os.O_RDONLY, 0),
    ])
    _, status = os.waitpid(pid, 0)
    elapsed = (time.perf_counter_ns() - start) / 1e9
    return elapsed, status


def vm_hwm_kib(pid):
    """Peak resident set of one process, from /proc (0 if it is gone)."""
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1])
    except OSError:
        pass
    return 0


def cordon_peak_rss(cordon, sleep):
    """Peak RSS of cordon's supervisor and of its init, sampled while the
    sandboxed command sleeps (wait4's ru_maxrss would include the memory
    of this Python process, which posix_spawn shares until exec)."""
    pid = os.posix_spawn(cordon, [cordon, "run", "--", sleep, "0.3"], os.environ)
    supervisor = init = 0
    deadline = time.time() + 0.25
    while time.time() < deadline:
        supervisor = max(supervisor, vm_hwm_kib(pid))
        try:
            with open(f"/proc/{pid}/task/{pid}/children") as f:
                kids = f.read().split()
        except OSError:
            kids = []
        for kid in kids:
            init = max(init, vm_hwm_kib(int(kid)))
        time.sleep(0.01)
    os.waitpid(pid, 0)
    return supervisor, init


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=300)
    parser.add_argument("--warmup", type=int, default=20)
    parser.add_argument("--cordon", default=os.path.join(os.path.dirname(__file__), "..", "target", "release", "cordon"))
    parser.add_argument("--git", action="store_true")
    parser.add_argument("--also", action="append", default=[], metavar="NAME=PATH")
    parser.add_argument("--fifo", action="store_true", help="run every case at SCHED_FIFO priority 10 (root)")
    args = parser.parse_args()
    if args.fifo:
        # Inherited by every process spawned below.
        os.sched_setscheduler(0, os.SCHED_FIFO, os.sched_param(10))

    cordon = os.path.abspath(args.cordon)
    true = shutil.which("true") or "/bin/true"
    bwrap = shutil.which("bwrap")
    project = tempfile.mkdtemp(prefix="cordon-bench-")
    os.chdir(project)
    if args.git:
        subprocess.run(["git", "init", "-q", "."], check=True)
    cases = {
        "bare": [true],
        "cordon": [cordon, "run", "--", true],
    }
    for extra in args.also:
        name, _, path = extra.partition("=")
        cases[name] = [os.path.abspath(path), "run", "--", true]
    if bwrap:
        cases["bwrap"] = [bwrap, "--unshare-all", "--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc", "--", true]
    else:
        print("bubblewrap not found: install it (apt-get install bubblewrap) for the comparison", file=sys.stderr)

    times = {name: [] for name in cases}
    for i in range(args.warmup + args.runs):
        for name, argv in cases.items():
            t, status = spawn_wait(argv)
            if os.waitstatus_to_exitcode(status) != 0:
                sys.exit(f"{name} failed (status {status}): {' '.join(argv)}")
            if i >= args.warmup:
                times[name].append(t)

    def q(values, p):
        values = sorted(values)
        return values[min(len(values) - 1, int(p * len(values)))]

    policy = "SCHED_FIFO" if args.fifo else "normal priority"
    print(f"start-up, {args.runs} interleaved runs each (after {args.warmup} warm-up), {os.cpu_count()} CPUs, {policy}")
    print(f"{'case':<8} {'median':>10} {'p90':>10}")
    for name in cases:
        print(f"{name:<8} {statistics.median(times[name]) * 1e3:>8.3f}ms {q(times[name], 0.9) * 1e3:>8.3f}ms")
    for name in cases:
        if name not in ("bare", "cordon", "bwrap"):
            ratio = statistics.median(times["cordon"]) / statistics.median(times[name])
            print(f"cordon / {name} (median wall time): {ratio:.2f}x")
    bare = statistics.median(times["bare"])
    cordon_med = statistics.median(times["cordon"])
    print(f"cordon added start-up over bare exec: {(cordon_med - bare) * 1e3:.3f} ms (target < 5 ms)")
    if "bwrap" in cases:
        bw = statistics.median(times["bwrap"])
        print(f"bwrap added start-up over bare exec:  {(bw - bare) * 1e3:.3f} ms")
        print(f"cordon / bwrap (median wall time): {cordon_med / bw:.2f}x (target <= 1.5x)")
        print(f"cordon / bwrap (added start-up):   {(cordon_med - bare) / (bw - bare):.2f}x")
    supervisor, init = cordon_peak_rss(cordon, shutil.which("sleep") or "/bin/sleep")
    print(f"cordon peak RSS: supervisor {supervisor / 1024:.2f} MiB, init {init / 1024:.2f} MiB (target < 10 MiB)")
    os.chdir("/")
    shutil.rmtree(project)


if __name__ == "__main__":
    main()
