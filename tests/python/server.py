"""A server built with the official Python SDK (mcp 2.3, `MCPServer`) for the Rust client's interop tests
(`tests/it/client_python_server.rs`).

Usage: python server.py stdio
       python server.py http PORT     (PORT 0 picks a free one; "listening on http://127.0.0.1:PORT/mcp" goes to stderr)

The SDK serves both eras on both transports: on stdio the client's first request decides the era of the connection
(`initialize` opens a 2025-11-25 session, a request carrying the 2026-07-28 `_meta` envelope opens a modern one), and on
Streamable HTTP every POST whose `MCP-Protocol-Version` header names no handshake version goes to the single-exchange
2026-07-28 entry, everything else to the 2025 session manager.

What it offers:
  add(a, b)            a + b
  slow(seconds)        progress every 0.1 s; prints SLOW_START, then SLOW_DONE or SLOW_CANCELLED (on stderr)
  ask_name()           `ctx.elicit` for a name, "Hello, <name>" (2025 era only: see below)
  ask_name_resolved()  the same question through a `Resolve(...)` dependency that returns `Elicit(...)`, which the
                       SDK carries in both eras (a request mid-call in 2025, an `input_required` round in 2026)
  greet(name)          a prompt, "Hello, <name>!"
  test://hello         a resource, "hello"

`ctx.elicit` sends `elicitation/create` as a server-to-client request. In the 2026-07-28 era the SDK refuses to:
a modern stdio connection holds a `NotifyOnlyOutbound` and a `_NoServerRequestsDispatchContext` (mcp/server/runner.py,
`_serve_modern_stream`), and a modern HTTP POST a `TransportContext(can_send_request=False)`
(mcp/server/_streamable_http_modern.py); either raises `NoBackChannelError`, an `MCPError` (INVALID_REQUEST) that
answers the call as a JSON-RPC error.
"""

import sys
from typing import Annotated

import anyio
from pydantic import BaseModel

from mcp.server.mcpserver import Context, Elicit, MCPServer, Resolve


def log(line: str) -> None:
    print(line, file=sys.stderr, flush=True)


server = MCPServer("python-interop", version="1.0.0")


@server.tool()
def add(a: int, b: int) -> int:
    """Adds two numbers."""
    return a + b


@server.tool()
async def slow(seconds: float, ctx: Context) -> str:
    """Sleeps for `seconds`, reporting progress every 0.1 s."""
    steps = max(1, round(seconds * 10))
    log(f"SLOW_START {seconds}")
    try:
        for step in range(1, steps + 1):
            await anyio.sleep(0.1)
            await ctx.report_progress(step, steps, f"step {step} of {steps}")
    except anyio.get_cancelled_exc_class():
        # Under asyncio this is asyncio.CancelledError: the SDK cancels the handler's scope.
        log(f"SLOW_CANCELLED {seconds}")
        raise
    log(f"SLOW_DONE {seconds}")
    return f"slept {seconds} s"


class Name(BaseModel):
    name: str


@server.tool()
async def ask_name(ctx: Context) -> str:
    """Asks the client for a name with `ctx.elicit`."""
    answer = await ctx.elicit("What is your name?", Name)
    if answer.action == "accept":
        return f"Hello, {answer.data.name}"
    return f"No name ({answer.action})"


def name_question() -> Elicit[Name]:
    return Elicit("What is your name?", Name)


@server.tool()
async def ask_name_resolved(who: Annotated[Name, Resolve(name_question)]) -> str:
    """Asks the client for a name through a resolver, in either era."""
    return f"Hello, {who.name}"


@server.prompt()
def greet(name: str) -> str:
    """Greets someone."""
    return f"Hello, {name}!"


@server.resource("test://hello")
def hello() -> str:
    """A fixed text."""
    return "hello"


async def serve_http(port: int) -> None:
    import socket

    import uvicorn

    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", port))
    sock.listen(128)
    port = sock.getsockname()[1]
    app = server.streamable_http_app(host="127.0.0.1")
    config = uvicorn.Config(app, log_level="warning")
    log(f"listening on http://127.0.0.1:{port}/mcp")
    await uvicorn.Server(config).serve(sockets=[sock])


def main() -> None:
    match sys.argv[1:]:
        case ["stdio"]:
            server.run("stdio")
        case ["http", port]:
            anyio.run(serve_http, int(port))
        case _:
            sys.exit("usage: server.py stdio | server.py http PORT")


if __name__ == "__main__":
    main()
