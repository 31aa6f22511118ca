"""What the Python scripts of the tests share: waiting for a condition, and the bookshop's holds."""

from collections.abc import Awaitable, Callable

import anyio
from mcp import Client


async def wait_until(what: str, predicate: Callable[[], Awaitable[bool]], timeout: float = 15) -> None:
    """Polls `predicate` until it holds, failing after `timeout` seconds (a bound on failure, not a speed)."""
    try:
        with anyio.fail_after(timeout):
            while not await predicate():
                await anyio.sleep(0.05)
    except TimeoutError:
        raise AssertionError(f"timed out waiting until {what}") from None
    print(f"ok: {what}")


async def holds(client: Client) -> list[str]:
    """The titles the bookshop holds (`list_holds`)."""
    result = await client.call_tool("list_holds", {})
    assert not result.is_error, result
    return list(result.structured_content["holds"])
