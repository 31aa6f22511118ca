#!/usr/bin/env python3
"""User-space instructions per HTTP request of a server, counted by callgrind under `mcpload http --raw`.

    python3 benches/callgrind_http.py ours 2025        # our release testbed, 2025 sessions
    python3 benches/callgrind_http.py floor 2026       # the floor (benches/peers/floor)
    python3 benches/callgrind_http.py ours 2025 --top 40   # and the 40 costliest functions, per request

It starts the server under `valgrind --tool=callgrind` on a free loopback port, runs `mcpload http --raw -c 4`
against it for a few seconds, stops it, and divides the program's instructions by the requests it parsed (the
calls hyper made to httparse's request parser, so warm-up and initialize count too). Start-up is in the total,
about 1 % of it. The kernel's work (loopback TCP, epoll) is not counted: this is the server's own code.
Instruction counts barely move between runs on a noisy machine (about 0.3 %), unlike CPU time.

Build first: `cargo build --release --bin testbed` and the bench tools (`BUILD=1 benches/raw-sitting.sh` builds
them, or `cargo build --release --locked --manifest-path benches/mcpload/Cargo.toml --target-dir
target/bench-tools`, the same for benches/peers/floor).
"""

import argparse
import collections
import os
import re
import socket
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TOOLS = os.path.join(ROOT, "target", "bench-tools", "release")
PARSE = "httparse::Request::parse_with_config_and_uninit_headers"


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_for_port(port, within):
    deadline = time.time() + within
    while time.time() < deadline:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
            return True
        except OSError:
            time.sleep(0.2)
    return False


def calls_to(out_file, needle):
    """How many calls callgrind recorded to functions whose name contains `needle`."""
    names, calls, callee = {}, collections.Counter(), None
    with open(out_file) as f:
        for line in f:
            m = re.match(r"(c?fn)=\((\d+)\)(?: (.*))?", line)
            if m:
                kind, index, name = m.groups()
                if name:
                    names[index] = name.strip()
                if kind == "cfn":
                    callee = names.get(index)
                continue
            if line.startswith("calls=") and callee and needle in callee:
                calls[callee] += int(line.split("=")[1].split()[0])
    return sum(calls.values())


def total_of(out_file):
    with open(out_file) as f:
        for line in f:
            if line.startswith(("summary:", "totals:")):
                return int(line.split()[1])
    raise SystemExit(f"no total in {out_file}")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("server", choices=["ours", "floor"])
    ap.add_argument("era", choices=["2025", "2026"])
    ap.add_argument("--connections", type=int, default=4)
    ap.add_argument("--seconds", type=int, default=4)
    ap.add_argument("--top", type=int, default=0, help="also list the costliest functions (inclusive), per request")
    ap.add_argument("--testbed", default=os.path.join(ROOT, "target", "release", "testbed"),
                    help="our server's binary (a build of another commit, to compare)")
    args = ap.parse_args()

    port = free_port()
    if args.server == "ours":
        server = [args.testbed, "--http", f"127.0.0.1:{port}"]
    else:
        server = [os.path.join(TOOLS, "floor"), "http", str(port)]
    mcpload = os.path.join(TOOLS, "mcpload")
    for binary in (server[0], mcpload):
        if not os.access(binary, os.X_OK):
            raise SystemExit(f"missing {binary}: build it first (see this script's help)")

    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "callgrind.out")
        grind = subprocess.Popen(
            ["valgrind", "--tool=callgrind", f"--callgrind-out-file={out}", *server],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        try:
            if not wait_for_port(port, 60):
                raise SystemExit("the server did not start listening under valgrind")
            load = subprocess.run(
                [mcpload, "http", "--url", f"http://127.0.0.1:{port}/mcp", "--raw", "-c", str(args.connections),
                 "-d", str(args.seconds), "--warmup-secs", "1", "--era", args.era],
                capture_output=True, text=True, check=True,
            )
        finally:
            grind.send_signal(2)
            try:
                grind.wait(timeout=30)
            except subprocess.TimeoutExpired:
                grind.kill()
                grind.wait()
        requests = calls_to(out, PARSE)
        total = total_of(out)
        if requests == 0:
            raise SystemExit("no request was parsed: " + load.stdout[-500:])
        print(f"{args.server} {args.era}: {total:,} instructions, {requests:,} requests, "
              f"{total / requests / 1000:.1f}k instructions per request")
        if args.top:
            report = subprocess.run(["callgrind_annotate", "--inclusive=yes", out], capture_output=True, text=True)
            shown = 0
            for line in report.stdout.splitlines():
                m = re.match(r"\s*([\d,]+) \(.*?\)\s+(?:\?\?\?:|\S+?\.\w+:(?!:))?(.*?) \[", line)
                if m and shown < args.top:
                    print(f"{int(m.group(1).replace(',', '')) / requests:9.0f}  {m.group(2)[:150]}")
                    shown += 1


if __name__ == "__main__":
    sys.exit(main())
