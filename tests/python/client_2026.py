"""The official Python SDK (mcp 2.3) as a client of the bookshop example in the 2026-07-28 era.

Usage: python client_2026.py MODE TRANSPORT TARGET
  MODE       "2026-07-28" (adopt the modern era directly), "auto" (probe server/discover first) or "legacy"
             (the 2025-11-25 initialize handshake; a short check only).
  TRANSPORT  "stdio" (TARGET is the bookshop binary, spawned by the client) or "http" (TARGET is the server's URL).

Lists the tools, rebuilds the index with a progress callback, cancels an order by cancelling its task and checks
that the hold was released, listens (subscriptions/listen) for changes of bookshop://holds while an order holds a book
and is cancelled, answers the confirmation of cancel_hold (an input_required round trip in the 2026 era) with accept
and with decline, drives that round trip by hand too, and checks that a client without elicitation gets -32021.
In legacy mode: the tools list and cancel_hold with and without an elicitation callback.
Prints "all ok" at the end; exits non-zero with a message on the first thing that is wrong.
"""

import sys
import tempfile

import anyio
import mcp.types as types
from mcp import Client, StdioServerParameters
from mcp.client.stdio import stdio_client
from mcp.client.subscriptions import ResourceUpdated
from mcp.shared.exceptions import MCPError
from shared import holds, wait_until

MODERN = "2026-07-28"
HOLDS_URI = "bookshop://holds"
TOOLS = ["cancel_hold", "list_holds", "order_book", "rebuild_index", "search_status"]



class Confirmations:
    """The elicitation callback: answers with `action` (and confirm=true on accept), and records the questions."""

    def __init__(self) -> None:
        self.action = "accept"
        self.questions: list[str] = []

    async def __call__(self, context, params: types.ElicitRequestParams) -> types.ElicitResult:
        self.questions.append(params.message)
        if self.action == "accept":
            return types.ElicitResult(action="accept", content={"confirm": True})
        return types.ElicitResult(action=self.action)


class Bookshop:
    """How to reach the bookshop, and how to read what it printed on stderr (stdio only)."""

    def __init__(self, transport: str, target: str) -> None:
        self.transport = transport
        self.target = target
        # Over stdio the client spawns the server: its stderr goes to this file, which the checks read.
        self.errlog = tempfile.TemporaryFile(mode="w+") if transport == "stdio" else None

    def server(self):
        if self.transport == "http":
            return self.target
        assert self.errlog is not None
        return stdio_client(StdioServerParameters(command=self.target), errlog=self.errlog)

    def stderr(self) -> str | None:
        """What the server printed so far, or None when it is not ours to read (HTTP: the Rust test checks it)."""
        if self.errlog is None:
            return None
        self.errlog.flush()
        self.errlog.seek(0)
        return self.errlog.read()



def text(result: types.CallToolResult) -> str:
    assert result.content and result.content[0].type == "text", result
    return result.content[0].text


async def check_tools(client: Client) -> None:
    tools = await client.list_tools()
    names = sorted(t.name for t in tools.tools)
    assert names == TOOLS, names
    order_book = next(t for t in tools.tools if t.name == "order_book")
    assert order_book.input_schema["required"] == ["title"], order_book.input_schema
    print("ok: tools listed:", names)


async def check_progress(client: Client) -> None:
    progress: list[tuple[float, float | None, str | None]] = []

    async def on_progress(value: float, total: float | None, message: str | None) -> None:
        progress.append((value, total, message))

    result = await client.call_tool("rebuild_index", {"titles": ["Dune", "Emma"]}, progress_callback=on_progress)
    assert not result.is_error, result
    assert text(result) == "Indexed 2 books.", result
    # Progress notifications may still be in flight behind the result on some transports: give them a moment.

    async def progressed() -> bool:
        return len(progress) >= 3

    await wait_until("the progress notifications arrived", progressed)
    assert [p[0] for p in progress] == [0, 1, 2], progress
    assert all(p[1] == 2 for p in progress), progress
    print("ok: progress seen:", progress)
    status = await client.call_tool("search_status", {})
    assert text(status) == "online", status


async def check_cancel(client: Client, shop: Bookshop) -> None:
    """Cancels order_book("Dune") by cancelling its task; the server's shielded cleanup releases the hold."""
    async with anyio.create_task_group() as tg:

        async def order() -> None:
            await client.call_tool("order_book", {"title": "Dune"})
            raise AssertionError("order_book finished although it was cancelled")

        tg.start_soon(order)

        async def held() -> bool:
            return await holds(client) == ["Dune"]

        await wait_until("the order holds its book", held)
        await anyio.sleep(0.5)
        tg.cancel_scope.cancel()

    async def released() -> bool:
        return await holds(client) == []

    await wait_until("the cancelled order released its hold", released)
    if shop.stderr() is not None:

        async def printed() -> bool:
            return 'released hold on "Dune"' in (shop.stderr() or "")

        await wait_until("the server printed that it released the hold", printed)


async def check_confirmations(client: Client, confirmations: Confirmations) -> None:
    """cancel_hold asks to confirm: accept releases the hold, decline keeps it."""
    confirmations.action = "accept"
    confirmations.questions.clear()
    nothing = text(await client.call_tool("cancel_hold", {"title": "Emma"}))
    assert nothing == 'Released nothing: "Emma" was not on hold.', nothing
    assert len(confirmations.questions) == 1 and "Emma" in confirmations.questions[0], confirmations.questions
    print("ok: accepted, nothing to release:", confirmations.questions[0])

    async with anyio.create_task_group() as tg:

        async def order() -> None:
            await client.call_tool("order_book", {"title": "Emma"})
            raise AssertionError("order_book finished although it was cancelled")

        tg.start_soon(order)

        async def held() -> bool:
            return await holds(client) == ["Emma"]

        await wait_until("the background order holds Emma", held)

        confirmations.action = "decline"
        kept = text(await client.call_tool("cancel_hold", {"title": "Emma"}))
        assert "Kept" in kept and "Emma" in kept, kept
        assert await holds(client) == ["Emma"]
        assert len(confirmations.questions) == 2 and "Emma" in confirmations.questions[1], confirmations.questions
        print("ok: declined:", kept)

        confirmations.action = "accept"
        released = text(await client.call_tool("cancel_hold", {"title": "Emma"}))
        assert "Released" in released and "Emma" in released and "nothing" not in released, released
        assert await holds(client) == []
        assert len(confirmations.questions) == 3, confirmations.questions
        print("ok: accepted:", released)
        tg.cancel_scope.cancel()


async def next_event(subscription, what: str):
    """The next event of a listen stream, failing after 10 s."""
    try:
        with anyio.fail_after(10):
            return await subscription.__anext__()
    except TimeoutError:
        raise AssertionError(f"no event within 10 s: {what}") from None


async def check_listen(client: Client) -> None:
    """A subscriptions/listen stream for bookshop://holds hears the hold order_book puts, and its release."""
    async with client.listen(resource_subscriptions=[HOLDS_URI]) as subscription:
        assert subscription.honored.resource_subscriptions == [HOLDS_URI], subscription.honored
        print("ok: listen acknowledged:", subscription.honored)
        async with anyio.create_task_group() as tg:

            async def order() -> None:
                await client.call_tool("order_book", {"title": "Middlemarch"})
                raise AssertionError("order_book finished although it was cancelled")

            tg.start_soon(order)
            event = await next_event(subscription, "order_book put a hold")
            assert event == ResourceUpdated(uri=HOLDS_URI), event
            assert await holds(client) == ["Middlemarch"]
            print("ok: the listener heard the hold:", event)
            tg.cancel_scope.cancel()
        event = await next_event(subscription, "the cancelled order released its hold")
        assert event == ResourceUpdated(uri=HOLDS_URI), event

        async def released() -> bool:
            return await holds(client) == []

        await wait_until("the listener heard the release", released)


async def check_input_required_by_hand(client: Client, confirmations: Confirmations) -> None:
    """The input_required round trip driven by hand: the question, the sealed state, the retry, a misused state."""
    asked = len(confirmations.questions)
    first = await client.session.call_tool("cancel_hold", {"title": "Moby-Dick"}, allow_input_required=True)
    assert isinstance(first, types.InputRequiredResult), first
    assert first.input_requests is not None and len(first.input_requests) == 1, first
    [(key, question)] = first.input_requests.items()
    assert isinstance(question, types.ElicitRequest), question
    assert "Moby-Dick" in question.params.message, question
    assert question.params.requested_schema["properties"]["confirm"]["type"] == "boolean", question
    assert isinstance(first.request_state, str) and first.request_state, first
    answer = {key: types.ElicitResult(action="accept", content={"confirm": True})}
    done = await client.session.call_tool(
        "cancel_hold",
        {"title": "Moby-Dick"},
        input_responses=answer,
        request_state=first.request_state,
        allow_input_required=True,
    )
    assert isinstance(done, types.CallToolResult), done
    assert text(done) == 'Released nothing: "Moby-Dick" was not on hold.', done
    assert len(confirmations.questions) == asked, "the callback is not called when the caller drives the loop"
    print(f"ok: input_required by hand: key {key!r}, question {question.params.message!r}")
    # The state is bound to its request: the same state with other arguments is refused.
    try:
        other = await client.session.call_tool(
            "cancel_hold",
            {"title": "Dune"},
            input_responses=answer,
            request_state=first.request_state,
            allow_input_required=True,
        )
        raise AssertionError(f"a requestState reused for other arguments was accepted: {other}")
    except MCPError as e:
        assert e.error.code == types.INVALID_PARAMS, e
        print("ok: a requestState reused for other arguments is refused:", e.error.message)


async def check_missing_capability(shop: Bookshop) -> None:
    """Without an elicitation callback the client declares no elicitation: the 2026 answer is -32021."""
    async with Client(shop.server(), mode=MODERN) as client:
        try:
            result = await client.call_tool("cancel_hold", {"title": "Dune"})
            raise AssertionError(f"cancel_hold answered a client without elicitation: {result}")
        except MCPError as e:
            assert e.error.code == types.MISSING_REQUIRED_CLIENT_CAPABILITY, e
            assert e.error.data == {"requiredCapabilities": {"elicitation": {}}}, e.error
            print("ok: a client without elicitation gets -32021:", e.error.message)


async def modern(mode: str, shop: Bookshop) -> None:
    confirmations = Confirmations()
    async with Client(shop.server(), mode=mode, elicitation_callback=confirmations) as client:
        assert client.protocol_version == MODERN, client.protocol_version
        assert client.session.discover_result is not None and client.session.initialize_result is None
        print(f"ok: {mode} over {shop.transport} speaks {client.protocol_version}; server_info: {client.server_info}")
        if mode == "auto":
            # The probe's answer, not a synthesized one.
            discovered = client.session.discover_result
            assert MODERN in discovered.supported_versions, discovered
            assert discovered.capabilities.tools is not None, discovered
            assert client.server_info is not None and client.server_info.name == "bookshop", client.server_info
        await check_tools(client)
        await check_progress(client)
        await check_cancel(client, shop)
        await check_listen(client)
        await check_confirmations(client, confirmations)
        await check_input_required_by_hand(client, confirmations)
    await check_missing_capability(shop)


async def legacy(shop: Bookshop) -> None:
    confirmations = Confirmations()
    async with Client(shop.server(), mode="legacy", elicitation_callback=confirmations) as client:
        assert client.protocol_version == "2025-11-25", client.protocol_version
        assert client.session.initialize_result is not None and client.session.discover_result is None
        assert client.server_info is not None and client.server_info.name == "bookshop", client.server_info
        print(f"ok: legacy over {shop.transport} speaks {client.protocol_version}")
        await check_tools(client)
        nothing = text(await client.call_tool("cancel_hold", {"title": "Emma"}))
        assert nothing == 'Released nothing: "Emma" was not on hold.', nothing
        assert len(confirmations.questions) == 1 and "Emma" in confirmations.questions[0], confirmations.questions
        print("ok: legacy elicitation answered:", confirmations.questions[0])
    # Without an elicitation callback the 2025 request is never sent: the tool sees the error and keeps the hold.
    async with Client(shop.server(), mode="legacy") as client:
        kept = text(await client.call_tool("cancel_hold", {"title": "Emma"}))
        assert kept.startswith('Kept the hold on "Emma"') and "elicitation" in kept, kept
        print("ok: legacy client without elicitation:", kept)


async def main(mode: str, transport: str, target: str) -> None:
    assert transport in ("stdio", "http"), transport
    shop = Bookshop(transport, target)
    try:
        if mode == "legacy":
            await legacy(shop)
        else:
            await modern(mode, shop)
    finally:
        if shop.stderr() is not None:
            print("--- bookshop stderr ---\n" + (shop.stderr() or ""), file=sys.stderr)


if __name__ == "__main__":
    anyio.run(main, *sys.argv[1:4])
    print("all ok")
