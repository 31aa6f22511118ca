"""The bookshop's app (MCP Apps) in a real browser: headless Chromium (Debian's, or the one npm's @sparticuz/chromium
ships, as tests/common/browser.rs found it: MCP_TEST_CHROMIUM) driven by Playwright, on a host page of the test's
own that implements the host side of the app protocol (JSON-RPC over postMessage) and proxies the app's tools/call
to the bookshop through the official Python SDK (a 2026-07-28 client that confirms cancel_hold's question).

Usage: python apps_browser.py URL APP_HTML OUT_DIR
  URL       the bookshop's Streamable HTTP endpoint
  APP_HTML  the app's page, as the bookshop served it (the Rust test read it with our client)
  OUT_DIR   where the screenshots go

With a hold in place (an order_book call in flight), the app renders it; a click on its Release button calls
cancel_hold through the host and the hold is gone, in the app and on the server; a hold made afterwards appears in
the app by itself. Prints "all ok"; exits non-zero on the first thing that is wrong.
"""

import json
import os
import shutil
import sys

import anyio
import mcp.types as types
from mcp import Client
from playwright.async_api import async_playwright
from shared import holds, wait_until

MODERN = "2026-07-28"

HOST = """<!doctype html>
<html><head><title>Test host</title></head>
<body style="margin:0;background:#f5f5f7">
<iframe id="app" sandbox="allow-scripts" style="width:480px;height:360px;border:1px solid #d2d2d7;margin:12px;background:#fff"></iframe>
<script>
// The host side of MCP Apps: answers ui/initialize, sends the tool's input and result once the app is initialized,
// and proxies the app's tools/call to the server (window.mcpCall, given by the test).
window.log = [];
const frame = document.getElementById("app");
function send(message) { frame.contentWindow.postMessage(message, "*"); }
window.addEventListener("message", async (event) => {
  if (event.source !== frame.contentWindow) return;
  const m = event.data;
  if (!m || m.jsonrpc !== "2.0") return;
  window.log.push(m.method || ("answer " + m.id));
  if (m.method === "ui/initialize") {
    send({ jsonrpc: "2.0", id: m.id, result: {
      protocolVersion: "2026-01-26",
      hostInfo: { name: "test-host", version: "1.0.0" },
      hostCapabilities: { serverTools: {} },
      hostContext: { theme: "light", displayMode: "inline" },
    } });
  } else if (m.method === "ui/notifications/initialized") {
    send({ jsonrpc: "2.0", method: "ui/notifications/tool-input", params: { arguments: {} } });
    const result = await window.mcpCall("list_holds", {});
    send({ jsonrpc: "2.0", method: "ui/notifications/tool-result", params: result });
  } else if (m.method === "tools/call") {
    try {
      send({ jsonrpc: "2.0", id: m.id, result: await window.mcpCall(m.params.name, m.params.arguments || {}) });
    } catch (e) {
      send({ jsonrpc: "2.0", id: m.id, error: { code: -32000, message: String(e) } });
    }
  } else if (m.id !== undefined && m.method) {
    send({ jsonrpc: "2.0", id: m.id, result: {} });
  }
});
</script>
</body></html>"""


def chromium() -> str:
    """The Chromium the Rust test found or brought (tests/common/browser.rs), else Debian's on PATH."""
    for path in [os.environ.get("MCP_TEST_CHROMIUM", ""), "/usr/lib/chromium/chromium", shutil.which("chromium") or ""]:
        if path and os.path.exists(path):
            return path
    raise SystemExit("no Chromium: run this through tests/it/apps_browser.rs, which finds or brings one")



async def main(url: str, app_html: str, out_dir: str) -> None:
    html = open(app_html, encoding="utf-8").read()
    os.makedirs(out_dir, exist_ok=True)
    questions: list[str] = []
    calls: list[str] = []

    async def confirm(context, params: types.ElicitRequestParams) -> types.ElicitResult:
        questions.append(params.message)
        return types.ElicitResult(action="accept", content={"confirm": True})

    async with Client(url, mode=MODERN, elicitation_callback=confirm) as client, async_playwright() as p:

        async def mcp_call(name: str, arguments: dict) -> dict:
            calls.append(name)
            result = await client.call_tool(name, arguments)
            return result.model_dump(by_alias=True, exclude_none=True, mode="json")

        async with anyio.create_task_group() as tg:

            async def order(title: str) -> None:
                await client.call_tool("order_book", {"title": title})

            tg.start_soon(order, "Dune")

            async def dune_held() -> bool:
                return await holds(client) == ["Dune"]

            await wait_until("Dune is on hold", dune_held)

            browser = await p.chromium.launch(executable_path=chromium(), args=["--no-sandbox"])
            page = await browser.new_page(viewport={"width": 520, "height": 400})
            page.on("console", lambda m: print("console:", m.text))
            await page.expose_function("mcpCall", mcp_call)
            await page.set_content(HOST)
            await page.evaluate("html => { document.getElementById('app').srcdoc = html; }", html)
            app = page.frame_locator("#app")

            await app.locator("li", has_text="Dune").wait_for(timeout=15000)
            print("ok: the app renders the hold")
            await page.screenshot(path=os.path.join(out_dir, "holds.png"))

            await app.locator("button[data-title='Dune']").click()
            await app.locator("li.empty", has_text="No books on hold.").wait_for(timeout=15000)
            assert "cancel_hold" in calls, calls
            assert len(questions) == 1 and "Dune" in questions[0], questions
            assert await holds(client) == [], "the server still holds Dune"
            print("ok: a click released the hold through the host:", calls)
            await page.screenshot(path=os.path.join(out_dir, "released.png"))

            # A hold made elsewhere shows up in the app by itself.
            tg.start_soon(order, "Emma")
            await app.locator("li", has_text="Emma").wait_for(timeout=15000)
            print("ok: the app follows the holds")
            await page.screenshot(path=os.path.join(out_dir, "followed.png"))
            log = await page.evaluate("window.log")
            assert log[0] == "ui/initialize" and "ui/notifications/initialized" in log, json.dumps(log)
            await browser.close()
            tg.cancel_scope.cancel()


if __name__ == "__main__":
    anyio.run(main, sys.argv[1], sys.argv[2], sys.argv[3])
    print("all ok")
