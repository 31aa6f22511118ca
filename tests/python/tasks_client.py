"""The official Python SDK (mcp 2.3) as a client of the bookshop's tasks, in both eras.

Usage: python tasks_client.py MODE TRANSPORT TARGET
  MODE       "legacy" (the 2025-11-25 handshake and the in-core tasks/* methods) or "2026-07-28" (the Tasks extension,
             io.modelcontextprotocol/tasks, declared through a ClientExtension).
  TRANSPORT  "stdio" (TARGET is the bookshop binary, spawned by the client) or "http" (TARGET is the server's URL).

mcp 2.x has no tasks runtime: the task types ship, the methods do not. In legacy mode the task-augmented tools/call
goes through the session's dispatcher (send_request would validate the CreateTaskResult as a CallToolResult), and
tasks/get, tasks/result, tasks/list and tasks/cancel through send_request. In 2026 mode a ClientExtension claims
results of resultType "task" and resolves them by polling tasks/get; tasks/get and tasks/cancel set Mcp-Name from
the task id (name_param), as Streamable HTTP requires.

rebuild_index(titles) takes search offline, indexes one title a second and puts search back online on every exit
(printing "search back online" on stderr); search_status answers "online" or "offline".
Prints "all ok" at the end; exits non-zero with a message on the first thing that is wrong.
"""

import sys
import tempfile
import time
from collections.abc import Sequence
from typing import Any, Literal

import anyio
import mcp.types as types
from mcp import Client, StdioServerParameters
from mcp.client import ClaimContext, ClientExtension, ResultClaim
from mcp.client.stdio import stdio_client
from mcp.shared.exceptions import MCPError
from shared import wait_until

LEGACY = "2025-11-25"
MODERN = "2026-07-28"
TASKS_EXT = "io.modelcontextprotocol/tasks"
RELATED_TASK = "io.modelcontextprotocol/related-task"
TERMINAL = {"completed", "failed", "cancelled"}
TITLES = ["Dune", "Emma"]
# Each title takes a second: a task that answers within this long answered before doing the work.
AT_ONCE = 0.8



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

    def back_online_count(self) -> int | None:
        err = self.stderr()
        return None if err is None else err.count("search back online")

    async def wait_back_online(self, count: int) -> None:
        """Over stdio: waits until the server printed "search back online" `count` times in all."""
        if self.errlog is None:
            return

        async def printed() -> bool:
            return (self.back_online_count() or 0) >= count

        await wait_until(f'the server printed "search back online" ({count})', printed)


def text(result: types.CallToolResult) -> str:
    assert result.content and result.content[0].type == "text", result
    return result.content[0].text


async def search_status(client: Client) -> str:
    return text(await client.call_tool("search_status", {}))


async def wait_online(client: Client) -> None:
    async def online() -> bool:
        return await search_status(client) == "online"

    await wait_until("search is back online", online)


def expect_error(e: MCPError, code: int, what: str) -> None:
    assert e.error.code == code, f"{what}: expected error {code}, got {e.error.code} {e.error.message!r}"
    print(f"ok: {what}: {e.error.code} {e.error.message!r}")


# ---------------------------------------------------------------------------------------------------------------
# 2025-11-25: the in-core tasks


async def call_tool_as_task(client: Client, name: str, arguments: dict, ttl: int | None) -> types.CreateTaskResult:
    """tools/call with params.task. ClientSession.send_request validates a tools/call answer as a CallToolResult, so
    a CreateTaskResult goes through the dispatcher, one layer down, and is validated here."""
    request = types.CallToolRequest(
        params=types.CallToolRequestParams(name=name, arguments=arguments, task=types.TaskMetadata(ttl=ttl))
    )
    data = request.model_dump(by_alias=True, mode="json", exclude_none=True)
    raw = await client.session._dispatcher.send_raw_request(data["method"], data["params"], {})
    assert "task" in raw and "content" not in raw, f"a task-augmented call answered with no CreateTaskResult: {raw}"
    return types.CreateTaskResult.model_validate(raw, by_name=False)


async def get_task(client: Client, task_id: str) -> types.GetTaskResult:
    request = types.GetTaskRequest(params=types.GetTaskRequestParams(task_id=task_id))
    return await client.session.send_request(request, types.GetTaskResult)


async def task_result(client: Client, task_id: str) -> types.CallToolResult:
    request = types.GetTaskPayloadRequest(params=types.GetTaskPayloadRequestParams(task_id=task_id))
    return await client.session.send_request(request, types.CallToolResult)


async def cancel_task(client: Client, task_id: str) -> types.CancelTaskResult:
    request = types.CancelTaskRequest(params=types.CancelTaskRequestParams(task_id=task_id))
    return await client.session.send_request(request, types.CancelTaskResult)


async def list_tasks(client: Client) -> types.ListTasksResult:
    return await client.session.send_request(types.ListTasksRequest(), types.ListTasksResult)


def check_task(task: types.Task, what: str) -> None:
    """The fields every task carries (ttl is a required key whose value may be null)."""
    assert task.task_id, (what, task)
    assert task.created_at and task.last_updated_at, (what, task)
    assert task.ttl is None or task.ttl > 0, (what, task)
    assert task.poll_interval is None or task.poll_interval > 0, (what, task)


async def legacy_capabilities_and_tools(client: Client) -> None:
    assert client.protocol_version == LEGACY, client.protocol_version
    caps = client.server_capabilities
    assert caps is not None and caps.tasks is not None, f"no tasks capability: {caps}"
    tasks = caps.tasks
    assert tasks.requests is not None and tasks.requests.tools is not None, tasks
    assert tasks.requests.tools.call is not None, f"tasks.requests.tools.call missing: {tasks}"
    assert tasks.cancel is not None, f"tasks.cancel missing: {tasks}"
    print("ok: server capabilities.tasks:", tasks.model_dump(by_alias=True, exclude_none=True))
    tools = {t.name: t for t in (await client.list_tools()).tools}
    rebuild = tools["rebuild_index"]
    assert rebuild.execution is not None and rebuild.execution.task_support == "optional", rebuild
    status = tools["search_status"]
    assert status.execution is None or status.execution.task_support in (None, "forbidden"), status
    print("ok: rebuild_index execution.taskSupport:", rebuild.execution.task_support)


async def legacy_task_to_completion(client: Client, shop: Bookshop) -> None:
    online_before = shop.back_online_count()
    started = time.monotonic()
    created = await call_tool_as_task(client, "rebuild_index", {"titles": TITLES}, ttl=60_000)
    elapsed = time.monotonic() - started
    task = created.task
    check_task(task, "CreateTaskResult")
    assert task.status == "working", task
    assert elapsed < AT_ONCE, f"the CreateTaskResult took {elapsed:.2f}s: it should come at once"
    tid = task.task_id
    print(f"ok: CreateTaskResult in {elapsed:.2f}s: {tid} {task.status}")
    print(f"ok: the task's ttl {task.ttl}, pollInterval {task.poll_interval}")

    offline_seen = False
    statuses: list[str] = []
    interval = task.poll_interval or 1000
    deadline = time.monotonic() + 15
    while True:
        st = await get_task(client, tid)
        check_task(st, "tasks/get")
        assert st.task_id == tid, st
        statuses.append(st.status)
        if st.status in TERMINAL:
            break
        assert st.status == "working", f"unexpected status while indexing: {st}"
        status = await search_status(client)
        offline_seen = offline_seen or status == "offline"
        assert time.monotonic() < deadline, f"task {tid} still {st.status} after 15 s: {statuses}"
        await anyio.sleep(interval / 1000)
        interval = st.poll_interval or interval
    assert statuses[-1] == "completed", f"task ended {statuses[-1]}: {st}"
    assert "working" in statuses, f"never saw the task working: {statuses}"
    assert offline_seen, "search_status never answered 'offline' while the task was working"
    print("ok: polled tasks/get honouring pollInterval:", statuses)

    result = await task_result(client, tid)
    assert not result.is_error, result
    assert text(result) == f"Indexed {len(TITLES)} books.", result
    assert result.meta is not None and result.meta.get(RELATED_TASK) == {"taskId": tid}, f"related-task: {result}"
    print("ok: tasks/result:", text(result), result.meta)
    # A terminal task's result can be fetched again.
    again = await task_result(client, tid)
    assert text(again) == text(result), again

    listed = await list_tasks(client)
    mine = [t for t in listed.tasks if t.task_id == tid]
    assert len(mine) == 1 and mine[0].status == "completed", f"tasks/list: {listed}"
    print("ok: tasks/list shows the completed task")

    assert await search_status(client) == "online"
    if online_before is not None:
        await shop.wait_back_online(online_before + 1)


async def legacy_cancel(client: Client, shop: Bookshop) -> None:
    online_before = shop.back_online_count()
    created = await call_tool_as_task(client, "rebuild_index", {"titles": TITLES}, ttl=60_000)
    tid = created.task.task_id

    async def offline() -> bool:
        return await search_status(client) == "offline"

    await wait_until("the second task took search offline", offline)
    cancelled = await cancel_task(client, tid)
    check_task(cancelled, "CancelTaskResult")
    assert cancelled.task_id == tid and cancelled.status == "cancelled", f"tasks/cancel answered {cancelled}"
    print("ok: tasks/cancel:", cancelled.status, cancelled.status_message)
    st = await get_task(client, tid)
    assert st.status == "cancelled", f"tasks/get after tasks/cancel: {st}"
    try:
        again = await cancel_task(client, tid)
        raise AssertionError(f"a second tasks/cancel of a cancelled task succeeded: {again}")
    except MCPError as e:
        expect_error(e, types.INVALID_PARAMS, "a second tasks/cancel")
    await wait_online(client)
    if online_before is not None:
        await shop.wait_back_online(online_before + 1)
    # The task stays cancelled after its work stopped.
    st = await get_task(client, tid)
    assert st.status == "cancelled", f"tasks/get after the work stopped: {st}"
    print("ok: the task stays cancelled")

    try:
        unknown = await get_task(client, "no-such-task")
        raise AssertionError(f"tasks/get of an unknown task succeeded: {unknown}")
    except MCPError as e:
        expect_error(e, types.INVALID_PARAMS, "tasks/get of an unknown task")


async def legacy_plain_call(client: Client, shop: Bookshop) -> None:
    """rebuild_index is "optional": without params.task it runs as an ordinary call."""
    online_before = shop.back_online_count()
    started = time.monotonic()
    result = await client.call_tool("rebuild_index", {"titles": ["Middlemarch"]})
    elapsed = time.monotonic() - started
    assert not result.is_error and text(result) == "Indexed 1 books.", result
    assert elapsed >= 0.9, f"the plain call returned after {elapsed:.2f}s, before doing its work"
    assert await search_status(client) == "online"
    if online_before is not None:
        await shop.wait_back_online(online_before + 1)
    print(f"ok: a plain call of rebuild_index: {text(result)!r} in {elapsed:.2f}s")


async def legacy(shop: Bookshop) -> None:
    async with Client(shop.server(), mode="legacy") as client:
        print(f"ok: legacy over {shop.transport} speaks {client.protocol_version}")
        await legacy_capabilities_and_tools(client)
        await legacy_task_to_completion(client, shop)
        await legacy_cancel(client, shop)
        await legacy_plain_call(client, shop)


# ---------------------------------------------------------------------------------------------------------------
# 2026-07-28: the Tasks extension


class TaskHandle(types.Result):
    """CreateTaskResult: Result and Task, flat, resultType "task"."""

    result_type: Literal["task"] = "task"
    task_id: str
    status: Literal["working", "input_required", "completed", "failed", "cancelled"]
    status_message: str | None = None
    created_at: str
    last_updated_at: str
    ttl_ms: int | None = None
    poll_interval_ms: int | None = None


class DetailedTask(types.Result):
    """The tasks/get result: the task, with its questions, result or error by status."""

    result_type: str | None = None
    task_id: str
    status: Literal["working", "input_required", "completed", "failed", "cancelled"]
    status_message: str | None = None
    created_at: str
    last_updated_at: str
    ttl_ms: int | None = None
    poll_interval_ms: int | None = None
    input_requests: dict[str, Any] | None = None
    result: dict[str, Any] | None = None
    error: dict[str, Any] | None = None


class TaskIdParams(types.RequestParams):
    task_id: str


class TasksGet(types.Request[TaskIdParams, Literal["tasks/get"]]):
    method: Literal["tasks/get"] = "tasks/get"
    params: TaskIdParams
    name_param = "taskId"  # Mcp-Name: <taskId> on Streamable HTTP


class TasksGetUnnamed(types.Request[TaskIdParams, Literal["tasks/get"]]):
    """tasks/get without Mcp-Name, which Streamable HTTP refuses."""

    method: Literal["tasks/get"] = "tasks/get"
    params: TaskIdParams


class TasksCancel(types.Request[TaskIdParams, Literal["tasks/cancel"]]):
    method: Literal["tasks/cancel"] = "tasks/cancel"
    params: TaskIdParams
    name_param = "taskId"


async def tasks_get(session, task_id: str) -> DetailedTask:
    return await session.send_request(TasksGet(params=TaskIdParams(task_id=task_id)), DetailedTask)


async def tasks_cancel(session, task_id: str) -> None:
    await session.send_request(TasksCancel(params=TaskIdParams(task_id=task_id)), types.EmptyResult)


class Tasks(ClientExtension):
    """Declares io.modelcontextprotocol/tasks and resolves resultType "task" by polling tasks/get, honouring
    pollIntervalMs. Records what it saw, for the checks."""

    identifier = TASKS_EXT

    def __init__(self) -> None:
        self.handles: list[TaskHandle] = []
        self.statuses: list[str] = []
        self.search: list[str] = []

    def claims(self) -> Sequence[ResultClaim[Any]]:
        return [ResultClaim(result_type="task", model=TaskHandle, resolve=self._resolve)]

    async def _resolve(self, handle: TaskHandle, ctx: ClaimContext) -> types.CallToolResult:
        self.handles.append(handle)
        final = await self.poll(ctx.session, handle)
        if final.status == "completed":
            assert final.result is not None, f"a completed task without its result: {final}"
            return types.CallToolResult.model_validate(final.result, by_name=False)
        message = (final.error or {}).get("message") or final.status_message or final.status
        return types.CallToolResult(
            content=[types.TextContent(type="text", text=f"task {final.status}: {message}")], is_error=True
        )

    async def poll(self, session, handle: TaskHandle) -> DetailedTask:
        interval = handle.poll_interval_ms or 1000
        deadline = time.monotonic() + 15
        while True:
            st = await tasks_get(session, handle.task_id)
            assert st.task_id == handle.task_id, st
            self.statuses.append(st.status)
            if st.status in TERMINAL:
                return st
            assert st.status == "working", f"unexpected status while indexing: {st}"
            status = await session.call_tool("search_status", {})
            self.search.append(text(status))
            assert time.monotonic() < deadline, f"task {handle.task_id} still {st.status} after 15 s: {self.statuses}"
            await anyio.sleep(interval / 1000)
            interval = st.poll_interval_ms or interval


async def modern_transparent(client: Client, tasks: Tasks, shop: Bookshop) -> None:
    online_before = shop.back_online_count()
    result = await client.call_tool("rebuild_index", {"titles": TITLES})
    assert not result.is_error, result
    assert text(result) == f"Indexed {len(TITLES)} books.", result
    assert len(tasks.handles) == 1, f"the call was not answered with a task: handles {tasks.handles}"
    handle = tasks.handles[0]
    assert handle.status == "working", handle
    assert tasks.statuses[-1] == "completed" and "working" in tasks.statuses, tasks.statuses
    assert "offline" in tasks.search, f"search_status never answered 'offline' while the task ran: {tasks.search}"
    print(f"ok: call_tool resolved task {handle.task_id} by polling: {text(result)!r}; statuses {tasks.statuses}")
    assert await search_status(client) == "online"
    if online_before is not None:
        await shop.wait_back_online(online_before + 1)


async def modern_cancel(client: Client, shop: Bookshop) -> None:
    online_before = shop.back_online_count()
    started = time.monotonic()
    handle = await client.session.call_tool("rebuild_index", {"titles": TITLES}, allow_claimed=True)
    elapsed = time.monotonic() - started
    assert isinstance(handle, TaskHandle), f"allow_claimed gave {handle!r}"
    assert handle.status == "working", handle
    assert elapsed < AT_ONCE, f"the task handle took {elapsed:.2f}s: it should come at once"
    print(f"ok: task handle in {elapsed:.2f}s: {handle.task_id}")
    print(f"ok: the task's ttlMs {handle.ttl_ms}, pollIntervalMs {handle.poll_interval_ms}")
    st = await tasks_get(client.session, handle.task_id)
    assert st.status == "working", st

    async def offline() -> bool:
        return await search_status(client) == "offline"

    await wait_until("the task took search offline", offline)
    await tasks_cancel(client.session, handle.task_id)
    print("ok: tasks/cancel acknowledged")

    async def cancelled() -> bool:
        st = await tasks_get(client.session, handle.task_id)
        assert st.status in ("working", "cancelled"), f"tasks/get after tasks/cancel: {st}"
        return st.status == "cancelled"

    await wait_until("tasks/get shows the task cancelled", cancelled)
    await wait_online(client)
    if online_before is not None:
        await shop.wait_back_online(online_before + 1)

    try:
        unknown = await tasks_get(client.session, "no-such-task")
        raise AssertionError(f"tasks/get of an unknown task succeeded: {unknown}")
    except MCPError as e:
        expect_error(e, types.INVALID_PARAMS, "tasks/get of an unknown task")

    if shop.transport == "http":
        # The Mcp-Name header the checks above sent is what the server reads: without it the request is refused.
        try:
            unnamed = await client.session.send_request(
                TasksGetUnnamed(params=TaskIdParams(task_id=handle.task_id)), DetailedTask
            )
            raise AssertionError(f"tasks/get without Mcp-Name succeeded over HTTP: {unnamed}")
        except MCPError as e:
            expect_error(e, types.HEADER_MISMATCH, "tasks/get without Mcp-Name over HTTP")


async def modern_without_extension(shop: Bookshop) -> None:
    """A 2026 client that does not declare the extension gets the ordinary result, never a task."""
    async with Client(shop.server(), mode=MODERN) as client:
        result = await client.call_tool("rebuild_index", {"titles": ["Middlemarch"]})
        assert not result.is_error and text(result) == "Indexed 1 books.", result
        print("ok: without the extension rebuild_index answers directly:", text(result))


async def modern(shop: Bookshop) -> None:
    tasks = Tasks()
    async with Client(shop.server(), mode=MODERN, extensions=[tasks]) as client:
        assert client.protocol_version == MODERN, client.protocol_version
        print(f"ok: 2026-07-28 over {shop.transport} speaks {client.protocol_version}")
        names = sorted(t.name for t in (await client.list_tools()).tools)
        assert "rebuild_index" in names and "search_status" in names, names
        await modern_transparent(client, tasks, shop)
        await modern_cancel(client, shop)
    await modern_without_extension(shop)


async def main(mode: str, transport: str, target: str) -> None:
    assert transport in ("stdio", "http"), transport
    assert mode in ("legacy", MODERN), mode
    shop = Bookshop(transport, target)
    try:
        if mode == "legacy":
            await legacy(shop)
        else:
            await modern(shop)
    finally:
        if shop.stderr() is not None:
            print("--- bookshop stderr ---\n" + (shop.stderr() or ""), file=sys.stderr)


if __name__ == "__main__":
    anyio.run(main, *sys.argv[1:4])
    print("all ok")
