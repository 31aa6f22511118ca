"""The official Python SDK (mcp 2.3) as a 2026-07-28 client of bookshop instances behind a round-robin balancer.

Usage: python balanced_2026.py URL
  URL  the balancer's endpoint; it sends each request (each POST) to the next instance.

Lists the tools, rebuilds the index with a progress callback (the progress streams through the balancer), holds a
book with order_book while list_holds (other instances) sees the hold, and releases it with cancel_hold, whose
confirmation is an input_required round: the retry with the answer lands on another instance than the question.
Prints "all ok" at the end; exits non-zero with a message on the first thing that is wrong.
"""

import sys

import anyio
import mcp.types as types
from mcp import Client
from shared import holds, wait_until

MODERN = "2026-07-28"
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

    async with Client(url, mode=MODERN, elicitation_callback=confirm) as client:
        assert client.protocol_version == MODERN, client.protocol_version
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

        async with anyio.create_task_group() as tg:

            async def order() -> None:
                await client.call_tool("order_book", {"title": "Emma"})
                raise AssertionError("order_book finished although it was cancelled")

            tg.start_soon(order)

            async def held() -> bool:
                return await holds(client) == ["Emma"]

            await wait_until("the order holds Emma, listed by the other instances", held)
            released = text(await client.call_tool("cancel_hold", {"title": "Emma"}))
            assert released == 'Released the hold on "Emma".', released
            assert len(questions) == 1 and "Emma" in questions[0], questions
            assert await holds(client) == []
            print("ok: the confirmation's retry released the hold:", released)
            tg.cancel_scope.cancel()


if __name__ == "__main__":
    anyio.run(main, sys.argv[1])
    print("all ok")
