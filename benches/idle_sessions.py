"""Memory of idle 2025-11-25 sessions over Streamable HTTP: opens N sessions (initialize, then
notifications/initialized) against a fresh server, leaves them idle, and prints the server's RSS before and after
and the difference per session. Also sends M stateless 2026-07-28 requests afterwards and prints what they left.

    python3 benches/idle_sessions.py target/release/testbed [N] [M]

Reads RSS from /proc (Linux). A benchmark, not a test: RSS moves in pages, so use N in the thousands.
"""

import http.client
import json
import subprocess
import sys
import time

binary = sys.argv[1]
n = int(sys.argv[2]) if len(sys.argv) > 2 else 2000
m = int(sys.argv[3]) if len(sys.argv) > 3 else 20000
port = 18771


def rss_kib(pid):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    return 0


server = subprocess.Popen([binary, "--http", str(port)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                          env={"RUST_LOG": "warn", "TESTBED_MAX_SESSIONS": str(n + 100)})
try:
    for _ in range(100):
        try:
            conn = http.client.HTTPConnection("127.0.0.1", port)
            conn.connect()
            break
        except OSError:
            time.sleep(0.05)
    headers = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream"}

    def post(body, extra=None):
        conn.request("POST", "/mcp", json.dumps(body), {**headers, **(extra or {})})
        r = conn.getresponse()
        r.read()
        return r

    init = {"jsonrpc": "2.0", "id": 1, "method": "initialize",
            "params": {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "idle", "version": "1"}}}
    # One session first, so that the runtime's own first-use allocations are not counted per session.
    for _ in range(20):
        r = post(init)
        post({"jsonrpc": "2.0", "method": "notifications/initialized"},
             {"Mcp-Session-Id": r.getheader("Mcp-Session-Id"), "MCP-Protocol-Version": "2025-11-25"})
    time.sleep(0.2)
    before = rss_kib(server.pid)
    for _ in range(n):
        r = post(init)
        sid = r.getheader("Mcp-Session-Id")
        assert sid, r.status
        post({"jsonrpc": "2.0", "method": "notifications/initialized"},
             {"Mcp-Session-Id": sid, "MCP-Protocol-Version": "2025-11-25"})
    time.sleep(0.2)
    after = rss_kib(server.pid)
    print(f"2025 sessions: {n} idle; RSS {before} KiB -> {after} KiB: {(after - before) * 1024 / n:.0f} bytes per session")

    meta = {"io.modelcontextprotocol/protocolVersion": "2026-07-28", "io.modelcontextprotocol/clientCapabilities": {},
            "io.modelcontextprotocol/clientInfo": {"name": "idle", "version": "1"}}
    modern = {"MCP-Protocol-Version": "2026-07-28", "Mcp-Method": "tools/call", "Mcp-Name": "echo"}
    call = {"jsonrpc": "2.0", "id": 1, "method": "tools/call",
            "params": {"name": "echo", "arguments": {"text": "hello"}, "_meta": meta}}
    for _ in range(1000):
        post(call, modern)
    start = rss_kib(server.pid)
    for _ in range(m):
        r = post(call, modern)
        assert r.status == 200, r.status
    end = rss_kib(server.pid)
    print(f"2026 requests: {m} stateless calls; RSS {start} KiB -> {end} KiB: {(end - start) * 1024 / m:.1f} bytes per request")
finally:
    server.terminate()
    server.wait()
