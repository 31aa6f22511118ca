"""The official Python SDK client (mcp 2.3) calling the testbed's `echo` tool over stdio, sequentially and with K
calls in flight, in both eras: the figure `cargo bench --bench client` is compared with.

    target/py-venv/bin/python benches/client_python.py target/release/testbed [CALLS] [K]

(`cargo test --test it python_interop::` makes the venv; `cargo build --release --bin testbed` the server.)
"""

import sys
import time

import anyio
from mcp import Client, StdioServerParameters


async def measure(server: str, mode: str, calls: int, k: int) -> None:
    async with Client(StdioServerParameters(command=server), mode=mode) as client:
        for _ in range(calls // 10):
            await client.call_tool("echo", {"text": "x"})
        start = time.perf_counter()
        for _ in range(calls):
            await client.call_tool("echo", {"text": "x"})
        elapsed = time.perf_counter() - start
        print(f"python stdio {mode:<10} sequential      {calls:>6} calls  {calls / elapsed:>8.0f} calls/s")

        async def worker(n: int) -> None:
            for _ in range(n):
                await client.call_tool("echo", {"text": "x"})

        total = calls * 2
        start = time.perf_counter()
        async with anyio.create_task_group() as tg:
            for w in range(k):
                tg.start_soon(worker, total // k)
        elapsed = time.perf_counter() - start
        print(f"python stdio {mode:<10} pipelined K={k:<3} {total // k * k:>6} calls  {total // k * k / elapsed:>8.0f} calls/s")


async def main() -> None:
    server = sys.argv[1]
    calls = int(sys.argv[2]) if len(sys.argv) > 2 else 2000
    k = int(sys.argv[3]) if len(sys.argv) > 3 else 32
    for mode in ("legacy", "2026-07-28"):
        await measure(server, mode, calls, k)


anyio.run(main)
