"""The official Python SDK (mcp 2.3) as a client of the gateway example (examples/gateway.rs), which serves the
bookshop under `shop_` and the reference server @modelcontextprotocol/server-everything under `everything_`.

Usage: python gateway.py MODE URL
  MODE  "legacy" (the 2025-11-25 initialize handshake and its session) or "2026-07-28" (the modern era, adopted
        without asking).
  URL   the gateway's Streamable HTTP endpoint.

Lists the tools (each upstream's under its prefix, nothing else), calls shop_list_holds (structured content the SDK
checks against the relayed output schema), everything_echo and everything_get-structured-content.
Prints "all ok" at the end; exits non-zero with a message on the first thing that is wrong.
"""

import sys

import anyio
import mcp.types as types
from mcp import Client

SHOP_TOOLS = ["shop_cancel_hold", "shop_list_holds", "shop_order_book", "shop_rebuild_index", "shop_search_status"]


def text(result: types.CallToolResult) -> str:
    assert not result.is_error, result
    assert result.content and result.content[0].type == "text", result
    return result.content[0].text


async def main(mode: str, url: str) -> None:
    expected = "2025-11-25" if mode == "legacy" else mode
    async with Client(url, mode=mode) as client:
        assert client.protocol_version == expected, client.protocol_version
        print(f"ok: {mode} speaks {client.protocol_version}")

        names = sorted(t.name for t in (await client.list_tools()).tools)
        shop = [n for n in names if n.startswith("shop_")]
        everything = [n for n in names if n.startswith("everything_")]
        assert shop == SHOP_TOOLS, names
        assert "everything_echo" in everything and "everything_get-structured-content" in everything, names
        assert len(shop) + len(everything) == len(names), names
        print("ok: tools listed:", names)

        holds = await client.call_tool("shop_list_holds", {})
        assert not holds.is_error, holds
        assert holds.structured_content == {"holds": []}, holds
        print("ok: shop_list_holds:", holds.structured_content)

        echoed = text(await client.call_tool("everything_echo", {"message": "through the gateway"}))
        assert echoed == "Echo: through the gateway", echoed
        print("ok: everything_echo:", echoed)

        weather = await client.call_tool("everything_get-structured-content", {"location": "Chicago"})
        assert not weather.is_error, weather
        assert weather.structured_content == {
            "temperature": 36,
            "conditions": "Light rain / drizzle",
            "humidity": 82,
        }, weather
        print("ok: everything_get-structured-content:", weather.structured_content)


if __name__ == "__main__":
    anyio.run(main, *sys.argv[1:3])
    print("all ok")
