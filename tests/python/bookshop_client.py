"""The official Python SDK as a client of the bookshop example, over stdio.

Usage: python bookshop_client.py PATH_TO_BOOKSHOP
Lists the tools, rebuilds the index with a progress callback, cancels an order by cancelling its task, and checks
that the hold was released. Exits non-zero with a message on the first thing that is wrong.
"""

import sys

import anyio
from mcp import Client, StdioServerParameters


async def holds(client: Client) -> list[str]:
    result = await client.call_tool("list_holds", {})
    return list(result.structured_content["holds"])


async def wait_until(what: str, predicate) -> None:
    with anyio.fail_after(5, shield=False):
        while not await predicate():
            await anyio.sleep(0.05)
    print(f"ok: {what}")


async def main(bookshop: str) -> None:
    async with Client(StdioServerParameters(command=bookshop), mode="auto") as client:
        assert client.server_info.name == "bookshop", client.server_info

        tools = await client.list_tools()
        names = sorted(t.name for t in tools.tools)
        assert names == ["list_holds", "order_book", "rebuild_index", "search_status"], names
        order_book = next(t for t in tools.tools if t.name == "order_book")
        assert order_book.input_schema["required"] == ["title"], order_book.input_schema
        list_holds = next(t for t in tools.tools if t.name == "list_holds")
        assert list_holds.output_schema["type"] == "object", list_holds.output_schema
        print("ok: tools listed with their schemas")

        progress: list[tuple[float, float | None, str | None]] = []

        async def on_progress(value: float, total: float | None, message: str | None) -> None:
            progress.append((value, total, message))

        result = await client.call_tool("rebuild_index", {"titles": ["Dune", "Emma"]}, progress_callback=on_progress)
        assert not result.is_error, result
        assert result.content[0].text == "Indexed 2 books.", result
        values = [p[0] for p in progress]
        assert values == [0, 1, 2], progress
        assert all(p[1] == 2 for p in progress), progress
        print("ok: progress seen:", progress)

        async with anyio.create_task_group() as tg:

            async def order() -> None:
                await client.call_tool("order_book", {"title": "Middlemarch"})
                raise AssertionError("order_book finished although it was cancelled")

            tg.start_soon(order)

            async def held() -> bool:
                return await holds(client) == ["Middlemarch"]

            await wait_until("the order holds its book", held)
            tg.cancel_scope.cancel()

        async def released() -> bool:
            return await holds(client) == []

        # The server dropped the handler and its shielded cleanup released the hold.
        await wait_until("the cancelled order released its hold", released)
        status = await client.call_tool("search_status", {})
        assert status.content[0].text == "online", status


if __name__ == "__main__":
    anyio.run(main, sys.argv[1])
    print("all ok")
