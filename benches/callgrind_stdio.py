"""Instruction counts of N pipelined `tools/call` echo requests over stdio, under callgrind (stable on a noisy box,
unlike wall-clock figures): writes all requests at once, waits for every response, then closes stdin (closing it
earlier would cancel what is still in flight).

    python3 benches/callgrind_stdio.py target/release/testbed 2025|2026 [N [FLAG...]]

Prints the responses counted and callgrind's total (`Collected`); the profile is left in /tmp/callgrind.<era>.out
for `callgrind_annotate --inclusive=yes`. RUST_LOG is not passed on, so the server runs with its default filter; the
testbed's own settings are (`TESTBED_LAYERS=timeout,limit` for the middleware figure), and so are the flags after N
(`--metrics 127.0.0.1:0` for the cost of metrics).
"""

import json
import os
import re
import subprocess
import sys

binary, era = sys.argv[1], sys.argv[2]
n = int(sys.argv[3]) if len(sys.argv) > 3 else 2000
lines = []
if era == "2025":
    lines.append({"jsonrpc": "2.0", "id": 0, "method": "initialize",
                  "params": {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "cg", "version": "1"}}})
    lines.append({"jsonrpc": "2.0", "method": "notifications/initialized"})
meta = {"io.modelcontextprotocol/protocolVersion": "2026-07-28", "io.modelcontextprotocol/clientCapabilities": {}}
for i in range(1, n + 1):
    params = {"name": "echo", "arguments": {"text": "x"}}
    if era == "2026":
        params["_meta"] = meta
    lines.append({"jsonrpc": "2.0", "id": i, "method": "tools/call", "params": params})
data = ("\n".join(json.dumps(l) for l in lines) + "\n").encode()
expect = n + (1 if era == "2025" else 0)
out = f"/tmp/callgrind.{era}.out"
p = subprocess.Popen(["valgrind", "--tool=callgrind", f"--callgrind-out-file={out}", binary, *sys.argv[4:]],
                     stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env={"PATH": "/usr/bin:/bin", **{k: v for k, v in os.environ.items() if k.startswith("TESTBED_")}})
p.stdin.write(data)
p.stdin.flush()
answered = 0
while answered < expect:
    line = p.stdout.readline()
    if not line:
        break
    if b'"result"' in line:
        answered += 1
p.stdin.close()
p.stdout.read()
err = p.stderr.read()
p.wait()
total = re.search(rb"Collected : (\d+)", err)
print(f"{era}: {answered} responses, {int(total.group(1)) if total else '?'} instructions")
