#!/usr/bin/env python3
"""An agent's one-shot prompt, bare against inside cordon, in one run:
Claude Code (`claude -p`, the build .ci/deps installs into target/agents)
against a local fake of the Anthropic API over HTTPS (tests/py/
fake_anthropic.py, on 127.0.0.1; inside, reached through the proxy as
host.cordon.internal:PORT, its key injected by the proxy so the sandbox
holds a placeholder). Rounds are interleaved, each with a fresh home.

Reports the median wall time of each, the time cordon adds, and the peak
resident memory of cordon's own processes (the supervisor with its proxy,
and init with its gates), sampled every 10 ms, beside the agent's own.

usage: bench/agents.py [--rounds N] [--cordon PATH]
"""
import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from tools import make_certificates  # noqa: E402

CLAUDE = os.path.join(HERE, "..", "target", "agents", "node_modules", "@anthropic-ai",
                      "claude-code-linux-x64", "claude")
FAKE = os.path.join(HERE, "..", "tests", "py", "fake_anthropic.py")
QUIET = {"CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1", "DISABLE_AUTOUPDATER": "1"}


def rss_kib(pid):
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1])
    except OSError:
        pass
    return 0


def descendants(pid):
    """`pid` and every process below it, with their names."""
    found, todo = [], [pid]
    while todo:
        p = todo.pop()
        try:
            with open(f"/proc/{p}/comm") as f:
                found.append((p, f.read().strip()))
            # A child of any thread (init starts the command from one).
            for task in os.listdir(f"/proc/{p}/task"):
                with open(f"/proc/{p}/task/{task}/children") as f:
                    todo.extend(int(c) for c in f.read().split())
        except OSError:
            pass
    return found


def run(argv, env, cwd):
    """Wall time, and the peak RSS (KiB) of the processes named cordon and
    of the rest, sampled while it runs."""
    peak = {"cordon": 0, "agent": 0}
    start = time.perf_counter()
    proc = subprocess.Popen(argv, env=env, cwd=cwd, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE)
    done = threading.Event()

    def sample():
        while not done.is_set():
            sums = {"cordon": 0, "agent": 0}
            for p, name in descendants(proc.pid):
                sums["cordon" if name.startswith("cordon") else "agent"] += rss_kib(p)
            for k in sums:
                peak[k] = max(peak[k], sums[k])
            done.wait(0.01)

    sampler = threading.Thread(target=sample)
    sampler.start()
    out, err = proc.communicate()
    elapsed = time.perf_counter() - start
    done.set()
    sampler.join()
    if proc.returncode != 0 or b"hello from the fake API" not in out:
        sys.exit(f"failed ({proc.returncode}): {' '.join(argv)}\n{out.decode()}{err.decode()}")
    return elapsed, peak


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=10)
    ap.add_argument("--cordon", default=os.path.join(HERE, "..", "target", "release", "cordon"))
    args = ap.parse_args()
    if not os.path.exists(CLAUDE):
        sys.exit(f"{CLAUDE} is missing: run .ci/deps")
    cordon = os.path.abspath(args.cordon)
    # Not under /tmp or /dev/shm: private inside.
    work = tempfile.mkdtemp(prefix="cordon-bench-agents-", dir="/var/tmp")
    fake = None
    try:
        cert, key = make_certificates(work)
        ca = os.path.join(work, "ca.pem")
        fake = subprocess.Popen([sys.executable, FAKE, cert, key], stdout=subprocess.PIPE, text=True)
        port = int(fake.stdout.readline())
        host = f"host.cordon.internal:{port}"
        policy = os.path.join(work, "agent.toml")
        with open(policy, "w") as f:
            f.write(f'[[credentials.inject]]\nenv = "ANTHROPIC_API_KEY"\nhosts = ["{host}"]\n')
        project = os.path.join(work, "project")
        os.makedirs(project)
        times = {"bare": [], "cordon": []}
        peaks = {"bare": [], "cordon": []}
        for r in range(args.rounds):
            order = ["bare", "cordon"] if r % 2 == 0 else ["cordon", "bare"]
            for how in order:
                home = os.path.join(work, f"home-{r}-{how}")
                os.makedirs(os.path.join(home, ".claude"))
                env = dict(os.environ, HOME=home, ANTHROPIC_API_KEY="sk-ant-bench-key", **QUIET)
                if how == "bare":
                    env.update(ANTHROPIC_BASE_URL=f"https://127.0.0.1:{port}", NODE_EXTRA_CA_CERTS=ca)
                    argv = [CLAUDE, "-p", "say hi"]
                else:
                    argv = [cordon, "run", "--quiet", "--audit", "none", "--allow-domain", host,
                            "--upstream-ca", ca, "--policy", policy,
                            "--allow-write", os.path.join(home, ".claude"), "--",
                            "env", f"ANTHROPIC_BASE_URL=https://{host}", CLAUDE, "-p", "say hi"]
                elapsed, peak = run(argv, env, project)
                times[how].append(elapsed)
                peaks[how].append(peak)
                shutil.rmtree(home)
        med = {h: statistics.median(t) for h, t in times.items()}
        own = statistics.median(p["cordon"] for p in peaks["cordon"])
        agent = statistics.median(p["agent"] for p in peaks["cordon"])
        bare_agent = statistics.median(p["agent"] for p in peaks["bare"])
        print(f"claude -p against the fake API, {args.rounds} interleaved rounds")
        print(f"  bare    {med['bare'] * 1000:8.1f} ms   agent RSS {bare_agent / 1024:6.1f} MiB")
        print(f"  cordon  {med['cordon'] * 1000:8.1f} ms   agent RSS {agent / 1024:6.1f} MiB, "
              f"cordon's own {own / 1024:.1f} MiB")
        print(f"  added   {(med['cordon'] - med['bare']) * 1000:8.1f} ms "
              f"({med['cordon'] / med['bare']:.2f}x)")
    finally:
        if fake:
            fake.kill()
            fake.wait()
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
