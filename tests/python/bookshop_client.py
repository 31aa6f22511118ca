"""The official Python SDK as a 2025-11-25 (`mode="legacy"`) client of the bookshop example, over stdio.

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
    updates: list[str] = []

    async def on_message(message) -> None:
        root = getattr(message, "root", message)
        if getattr(root, "method", None) == "notifications/resources/updated":
            updates.append(str(root.params.uri))

    async with Client(StdioServerParameters(command=bookshop), mode="legacy", message_handler=on_message) as client:
        assert client.server_info.name == "bookshop", client.server_info

        tools = await client.list_tools()
        names = sorted(t.name for t in tools.tools)
        assert names == ["cancel_hold", "list_holds", "order_book", "rebuild_index", "search_status"], names

        prompts = await client.list_prompts()
        assert [p.name for p in prompts.prompts] == ["recommend"], prompts
        prompt = await client.get_prompt("recommend", {"genre": "classic", "mood": "quiet"})
        assert prompt.messages[0].role == "user", prompt
        assert "classic" in prompt.messages[0].content.text, prompt
        print("ok: prompt rendered")

        resources = await client.list_resources()
        # The holds, the app for them (MCP Apps), then the files of the shop's skill (the Skills extension), its
        # SKILL.md first.
        assert [str(r.uri) for r in resources.resources] == [
            "bookshop://holds",
            "ui://bookshop/holds",
            "skill://recommending-a-book/SKILL.md",
            "skill://recommending-a-book/references/SHELVES.md",
        ], resources
        templates = await client.list_resource_templates()
        assert [t.uri_template for t in templates.resource_templates] == [
            "bookshop://books/{title}/pages/{page}",
            "skill://{+path}",
        ], templates
        page = await client.read_resource("bookshop://books/Emma/pages/3")
        assert page.contents[0].text.startswith("Emma, page 3"), page
        print("ok: resources listed and read")
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

        from mcp.types import ResourceTemplateReference

        completion = await client.complete(
            ResourceTemplateReference(type="ref/resource", uri="bookshop://books/{title}/pages/{page}"),
            {"name": "title", "value": "m"},
        )
        assert completion.completion.values == ["Middlemarch", "Moby-Dick"], completion
        print("ok: completion")

        await client.subscribe_resource("bookshop://holds")

        async with anyio.create_task_group() as tg:

            async def order() -> None:
                await client.call_tool("order_book", {"title": "Middlemarch"})
                raise AssertionError("order_book finished although it was cancelled")

            tg.start_soon(order)

            async def held() -> bool:
                return await holds(client) == ["Middlemarch"]

            await wait_until("the order holds its book", held)

            async def announced() -> bool:
                return "bookshop://holds" in updates

            await wait_until("the subscriber heard the holds change", announced)
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
