"""The official Python SDK (mcp 2.3) as a 2025-11-25 client of bookshop instances behind a round-robin balancer.

Usage: python balanced_2025.py URL
  URL  the balancer's endpoint; it sends each request (each POST, GET and DELETE) to the next instance.

Opens one session (`mode="legacy"`: the initialize handshake over Streamable HTTP, with its Mcp-Session-Id), whose
requests the instances serve in turn: lists the tools, rebuilds the index with a progress callback (the progress
streams through the balancer), holds a book with order_book while list_holds (other instances) sees the hold, and
releases it with cancel_hold, whose confirmation is an elicitation/create request answered by the elicitation
callback: the answer is a POST that lands on another instance than the question's. Then holds another book and
cancels that call: the cancel reaches the instance running it, whose cleanup releases the hold. On exit the SDK
ends the session (DELETE). Prints "all ok" at the end; exits non-zero with a message on the first thing that is
wrong.
"""

import sys

import anyio
import mcp.types as types
from mcp import Client
from shared import holds, wait_until

LEGACY = "2025-11-25"
TOOLS = ["cancel_hold", "list_holds", "order_book", "rebuild_index", "search_status"]



def text(result: types.CallToolResult) -> str:
    assert not result.is_error, result
    assert result.content and result.content[0].type == "text", result
    return result.content[0].text



async def main(url: str) -> None:
    questions: list[str] = []

    async def confirm(context, params: types.ElicitRequestParams) -> types.ElicitResult:
        questions.append(params.message)
        return types.ElicitResult(action="accept", content={"confirm": True})

    async with Client(url, mode="legacy", elicitation_callback=confirm) as client:
        assert client.protocol_version == LEGACY, client.protocol_version
        names = sorted(t.name for t in (await client.list_tools()).tools)
        assert names == TOOLS, names
        print("ok: tools listed:", names)

        assert text(await client.call_tool("search_status", {})) == "online"
        progress: list[float] = []

        async def on_progress(value: float, total: float | None, message: str | None) -> None:
            progress.append(value)

        rebuilt = await client.call_tool("rebuild_index", {"titles": ["Dune", "Emma"]}, progress_callback=on_progress)
        assert text(rebuilt) == "Indexed 2 books.", rebuilt

        async def progressed() -> bool:
            return len(progress) >= 3

        await wait_until("the progress notifications arrived", progressed)
        assert progress == [0, 1, 2], progress

        # cancel_hold's confirmation, asked while order_book holds the book.
        async with anyio.create_task_group() as tg:

            async def order_emma() -> None:
                await client.call_tool("order_book", {"title": "Emma"})
                raise AssertionError("order_book finished although it was cancelled")

            tg.start_soon(order_emma)

            async def held_emma() -> bool:
                return await holds(client) == ["Emma"]

            await wait_until("the order holds Emma, listed by the other instances", held_emma)
            released = text(await client.call_tool("cancel_hold", {"title": "Emma"}))
            assert released == 'Released the hold on "Emma".', released
            assert questions == ['Release the hold on "Emma"?'], questions
            assert await holds(client) == []
            print("ok: the answer to the confirmation released the hold:", released)
            tg.cancel_scope.cancel()

        # A call cancelled: the hold its cleanup releases disappears from every instance's list.
        async with anyio.create_task_group() as tg:

            async def order_dune() -> None:
                await client.call_tool("order_book", {"title": "Dune"})
                raise AssertionError("order_book finished although it was cancelled")

            tg.start_soon(order_dune)

            async def held_dune() -> bool:
                return await holds(client) == ["Dune"]

            await wait_until("the order holds Dune", held_dune)
            tg.cancel_scope.cancel()

        async def released_dune() -> bool:
            return await holds(client) == []

        await wait_until("the cancelled order released Dune", released_dune)
        assert len(questions) == 1, questions


if __name__ == "__main__":
    anyio.run(main, sys.argv[1])
    print("all ok")
