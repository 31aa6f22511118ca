// The official TypeScript SDK (1.32.2) as a client of the bookshop's 2025-11-25 tasks, through its experimental
// client API (client.experimental.tasks). The SDK knows no 2026-07-28 era, so this is the in-core tasks/* only.
//
// Usage: node tasks_client.mjs BOOKSHOP_PATH [URL]
// Over stdio (the client spawns BOOKSHOP_PATH) and, given URL, over Streamable HTTP, the same checks:
// - tools/list: rebuild_index has execution.taskSupport "optional", and the server declares tasks.requests.tools.call;
// - callToolStream for rebuild_index (the SDK adds `task: {}` by itself, having listed the tool): taskCreated at once,
//   taskStatus "working" (search_status "offline" meanwhile) ... "completed", then the result with its related-task
//   _meta; progress of the task arrives after the CreateTaskResult;
// - another task: cancelTask gives status "cancelled", getTask agrees, the stream ends with an error, a second
//   cancelTask is -32602, search comes back online;
// - listTasks holds both tasks; a plain callTool of rebuild_index still answers directly.
// Exits non-zero on the first thing that is wrong; prints "all ok" at the end.

import assert from "node:assert/strict";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";

const [bookshop, url] = process.argv.slice(2);
const RELATED_TASK = "io.modelcontextprotocol/related-task";
const TITLES = ["Dune", "Emma"];
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

async function waitUntil(what, predicate, timeout = 10000) {
  const deadline = Date.now() + timeout;
  while (!(await predicate())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting until ${what}`);
    await sleep(50);
  }
  console.log(`ok: ${what}`);
}

const text = (result) => {
  assert.equal(result.content?.[0]?.type, "text", JSON.stringify(result));
  return result.content[0].text;
};

function checkTask(task, what) {
  assert.ok(task && typeof task.taskId === "string" && task.taskId, `${what}: ${JSON.stringify(task)}`);
  assert.ok(task.createdAt && task.lastUpdatedAt, `${what}: ${JSON.stringify(task)}`);
  assert.ok("ttl" in task, `${what}: ttl is a required key: ${JSON.stringify(task)}`);
}

async function checks(client, transport, serverStderr) {
  const searchStatus = async () => text(await client.callTool({ name: "search_status", arguments: {} }));
  const backOnline = () => (serverStderr ? serverStderr().split("search back online").length - 1 : null);
  const waitBackOnline = async (count) => {
    if (!serverStderr) return;
    await waitUntil(`the server printed "search back online" (${count})`, async () => backOnline() >= count);
  };

  // ---- capabilities and tools ----
  const caps = client.getServerCapabilities();
  assert.ok(caps?.tasks?.requests?.tools?.call, `tasks.requests.tools.call: ${JSON.stringify(caps)}`);
  assert.ok(caps.tasks.cancel, `tasks.cancel: ${JSON.stringify(caps.tasks)}`);
  const { tools } = await client.listTools();
  const rebuild = tools.find((t) => t.name === "rebuild_index");
  assert.equal(rebuild?.execution?.taskSupport, "optional", JSON.stringify(rebuild));
  console.log(`ok: ${transport}: rebuild_index taskSupport optional; server tasks ${JSON.stringify(caps.tasks)}`);

  // ---- a task to completion ----
  const online0 = backOnline();
  const progress = [];
  const messages = [];
  let offlineSeen = false;
  const started = Date.now();
  let createdAfter;
  const stream = client.experimental.tasks.callToolStream(
    { name: "rebuild_index", arguments: { titles: TITLES } },
    undefined,
    { onprogress: (p) => progress.push(p.progress) },
  );
  for await (const message of stream) {
    messages.push(message);
    if (message.type === "taskCreated") createdAfter = Date.now() - started;
    if (message.type === "taskStatus" && message.task.status === "working") {
      offlineSeen ||= (await searchStatus()) === "offline";
    }
  }
  const types = messages.map((m) => (m.type === "taskStatus" ? `${m.type}:${m.task.status}` : m.type));
  const last = messages.at(-1);
  assert.notEqual(last?.type, "error", `the stream ended with an error: ${last?.error} (messages ${types})`);
  assert.equal(messages[0].type, "taskCreated", `messages ${types}`);
  const created = messages[0].task;
  checkTask(created, "taskCreated");
  assert.equal(created.status, "working", JSON.stringify(created));
  assert.ok(createdAfter < 800, `the CreateTaskResult took ${createdAfter} ms: it should come at once`);
  const statuses = messages.filter((m) => m.type === "taskStatus").map((m) => m.task.status);
  assert.ok(statuses.includes("working"), `statuses ${statuses}`);
  assert.equal(statuses.at(-1), "completed", `statuses ${statuses}`);
  messages.filter((m) => m.type === "taskStatus").forEach((m) => checkTask(m.task, "taskStatus"));
  assert.equal(last.type, "result", `messages ${types}`);
  assert.equal(text(last.result), `Indexed ${TITLES.length} books.`, JSON.stringify(last.result));
  assert.deepEqual(last.result._meta?.[RELATED_TASK], { taskId: created.taskId }, JSON.stringify(last.result));
  assert.ok(offlineSeen, "search_status never answered 'offline' while the task was working");
  console.log(`ok: ${transport}: callToolStream ${types.join(" ")} -> ${text(last.result)}`);
  console.log(`ok: ${transport}: the task was created after ${createdAfter} ms`);
  // The progress token stays valid for the task's life: progress arrives after the CreateTaskResult. The last one
  // can lose the race with the status the client polls.
  assert.deepEqual(progress.slice(0, 2), [0, 1], `progress ${progress}`);
  console.log(`ok: ${transport}: task progress`, progress);
  assert.equal(await searchStatus(), "online");
  if (online0 !== null) await waitBackOnline(online0 + 1);

  // ---- a task cancelled ----
  const online1 = backOnline();
  const second = client.experimental.tasks.callToolStream({ name: "rebuild_index", arguments: { titles: TITLES } });
  const first = (await second.next()).value;
  assert.equal(first?.type, "taskCreated", JSON.stringify(first));
  const taskId = first.task.taskId;
  const offline = async () => (await searchStatus()) === "offline";
  await waitUntil(`${transport}: the second task took search offline`, offline);
  const cancelled = await client.experimental.tasks.cancelTask(taskId);
  checkTask(cancelled, "tasks/cancel");
  assert.equal(cancelled.taskId, taskId);
  assert.equal(cancelled.status, "cancelled", JSON.stringify(cancelled));
  const got = await client.experimental.tasks.getTask(taskId);
  assert.equal(got.status, "cancelled", JSON.stringify(got));
  console.log(`ok: ${transport}: cancelTask -> ${cancelled.status} (${cancelled.statusMessage})`);
  console.log(`ok: ${transport}: getTask -> ${got.status}`);
  const rest = [];
  for await (const message of second) rest.push(message);
  assert.equal(rest.at(-1)?.type, "error", `the cancelled task's stream: ${JSON.stringify(rest)}`);
  assert.match(String(rest.at(-1).error?.message), /cancelled/);
  await assert.rejects(client.experimental.tasks.cancelTask(taskId), (e) => {
    assert.equal(e.code, -32602, `a second cancelTask: ${e}`);
    console.log(`ok: ${transport}: a second cancelTask: ${e.code} ${e.message}`);
    return true;
  });
  await waitUntil(`${transport}: search is back online`, async () => (await searchStatus()) === "online");
  if (online1 !== null) await waitBackOnline(online1 + 1);
  assert.equal((await client.experimental.tasks.getTask(taskId)).status, "cancelled", "the task stays cancelled");

  // ---- tasks/list and a plain call ----
  const listed = await client.experimental.tasks.listTasks();
  const byId = Object.fromEntries(listed.tasks.map((t) => [t.taskId, t.status]));
  assert.equal(byId[created.taskId], "completed", JSON.stringify(listed));
  assert.equal(byId[taskId], "cancelled", JSON.stringify(listed));
  console.log(`ok: ${transport}: listTasks`, byId);
  const plain = await client.callTool({ name: "rebuild_index", arguments: { titles: ["Middlemarch"] } });
  assert.equal(text(plain), "Indexed 1 books.", JSON.stringify(plain));
  console.log(`ok: ${transport}: a plain callTool of rebuild_index: ${text(plain)}`);
}

// ---- stdio ----
{
  const transport = new StdioClientTransport({ command: bookshop, stderr: "pipe" });
  let stderr = "";
  transport.stderr.on("data", (chunk) => (stderr += chunk));
  const client = new Client({ name: "ts-tasks-tests", version: "1.0.0" });
  try {
    await client.connect(transport);
    await checks(client, "stdio", () => stderr);
  } finally {
    await client.close();
    console.error(`--- bookshop stderr (stdio) ---\n${stderr}`);
  }
}

// ---- Streamable HTTP ----
if (url) {
  const client = new Client({ name: "ts-tasks-tests", version: "1.0.0" });
  await client.connect(new StreamableHTTPClientTransport(new URL(url)));
  try {
    await checks(client, "http", null);
  } finally {
    await client.close();
  }
}

console.log("all ok");
