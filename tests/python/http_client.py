"""The official Python SDK as a 2025-11-25 (`mode="legacy"`) client of the testbed over Streamable HTTP.

Usage: python http_client.py URL
Calls with progress, checks that log levels are per session, and cancels a call by cancelling its task.
"""

import sys

import anyio
from mcp import Client


async def main(url: str) -> None:
    progress: list[float] = []

    async def on_progress(value: float, total: float | None, message: str | None) -> None:
        progress.append(value)

    async with Client(url, mode="legacy") as client:
        result = await client.call_tool("progress", {}, progress_callback=on_progress)
        assert result.content[0].text == "reported", result
        assert progress == [1, 2, 3], progress
        print("ok: progress over HTTP", progress)

    quiet_logs: list[str] = []
    loud_logs: list[str] = []

    async def quiet_log(params) -> None:
        quiet_logs.append(params.level)

    async def loud_log(params) -> None:
        loud_logs.append(params.level)

    async with Client(url, mode="legacy", logging_callback=quiet_log) as quiet, Client(url, mode="legacy", logging_callback=loud_log) as loud:
        await quiet.set_logging_level("error")
        await quiet.call_tool("log_all", {})
        await loud.call_tool("log_all", {})
        await anyio.sleep(0.2)
        assert quiet_logs == ["error", "critical", "alert", "emergency"], quiet_logs
        assert len(loud_logs) == 8, loud_logs
        print("ok: log levels are per session")

    async with Client(url, mode="legacy") as client:
        async with anyio.create_task_group() as tg:

            async def slow() -> None:
                await client.call_tool("sleep", {"ms": 10000})
                raise AssertionError("the cancelled call finished")

            tg.start_soon(slow)
            await anyio.sleep(0.3)
            tg.cancel_scope.cancel()
        # The session still serves.
        result = await client.call_tool("echo", {"text": "after"})
        assert result.content[0].text == "after", result
        print("ok: cancelled a call over HTTP")


if __name__ == "__main__":
    anyio.run(main, sys.argv[1])
    print("all ok")
