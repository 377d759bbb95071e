#!/usr/bin/env python3
"""An MCP server bare against wrapped by `cordon mcp wrap`, in one run:
the reference server (`@modelcontextprotocol/server-everything`, which
.ci/deps installs into target/mcp) driven by the MCP Python SDK's client
(tests/py/mcp_client.py). Each round starts the server from a config,
bare and wrapped alternately, times the whole session (start, initialize,
tools/list, one call: what a client pays to start a server) and then
--calls sequential `echo` calls (a JSON-RPC round trip each) on the same
connection.

Reports the median start and per-call times of each, and the time the
wrapper adds: at start, cordon's set-up; per call nothing should be added,
as stdin and stdout pass through untouched.

usage: bench/mcp.py [--rounds N] [--calls N] [--cordon PATH]
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
ROOT = os.path.join(HERE, "..")
MCP = os.path.join(ROOT, "target", "mcp")
CLIENT = os.path.join(ROOT, "tests", "py", "mcp_client.py")
SERVER = os.path.join(MCP, "node_modules", "@modelcontextprotocol", "server-everything",
                      "dist", "index.js")
PYTHON = os.path.join(MCP, "venv", "bin", "python")


def session(config, calls, env):
    """One client session on the server `everything` of `config`: its wall
    time and the mean time of `calls` echo calls."""
    start = time.perf_counter()
    done = subprocess.run(
        [PYTHON, CLIENT, config, "everything", 'echo={"message": "hi"}'],
        env=dict(env, ROUNDS=str(calls)), capture_output=True, text=True, check=False)
    elapsed = time.perf_counter() - start
    if done.returncode != 0:
        sys.exit(f"the client failed on {config}:\n{done.stderr}")
    out = json.loads(done.stdout)
    return elapsed, out["mean_us"]


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--rounds", type=int, default=8)
    parser.add_argument("--calls", type=int, default=2000)
    parser.add_argument("--cordon", default=os.path.join(ROOT, "target", "release", "cordon"))
    args = parser.parse_args()
    for path in (SERVER, PYTHON):
        if not os.path.exists(path):
            sys.exit(f"{path} is missing: run .ci/deps")
    work = tempfile.mkdtemp(prefix="cordon-bench-mcp-", dir="/var/tmp")
    try:
        home = os.path.join(work, "home")
        os.mkdir(home)
        env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": home,
               "XDG_CONFIG_HOME": os.path.join(home, ".config")}
        bare = os.path.join(work, "bare.json")
        wrapped = os.path.join(work, "wrapped.json")
        text = json.dumps({"mcpServers": {"everything": {"command": "node", "args": [SERVER]}}})
        for path in (bare, wrapped):
            with open(path, "w") as f:
                f.write(text)
        subprocess.run([args.cordon, "mcp", "wrap", wrapped, "--cordon", args.cordon],
                       env=env, check=True, capture_output=True, cwd=work)
        results = {"bare": ([], []), "wrapped": ([], [])}
        for round_ in range(args.rounds):
            order = ["bare", "wrapped"] if round_ % 2 == 0 else ["wrapped", "bare"]
            for name in order:
                config = bare if name == "bare" else wrapped
                wall, per_call = session(config, args.calls, env)
                results[name][0].append(wall)
                results[name][1].append(per_call)
        med = {k: (statistics.median(v[0]), statistics.median(v[1])) for k, v in results.items()}
        print(f"{args.rounds} rounds, {args.calls} echo calls per session")
        print(f"{'':10} {'session (s)':>12} {'per call (us)':>14}")
        for name in ("bare", "wrapped"):
            print(f"{name:10} {med[name][0]:12.3f} {med[name][1]:14.1f}")
        start_added = med["wrapped"][0] - med["bare"][0] - args.calls * (
            med["wrapped"][1] - med["bare"][1]) / 1e6
        print(f"added at start: {start_added * 1000:.0f} ms; "
              f"per call: {med['wrapped'][1] - med['bare'][1]:+.1f} us "
              f"({med['wrapped'][1] / med['bare'][1]:.3f}x)")
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
