// The official TypeScript SDK as a client of our servers.
//
// Usage: node client.mjs BOOKSHOP_PATH TESTBED_URL
// Over stdio against the bookshop: lists tools, rebuilds the index with progress, cancels an order with an
// AbortSignal and sees the hold released. Over Streamable HTTP against the testbed: answers an elicitation, sees
// progress, reads a resource template and gets a prompt. Exits non-zero on the first thing that is wrong.

import assert from "node:assert/strict";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { ElicitRequestSchema } from "@modelcontextprotocol/sdk/types.js";

const [bookshop, url] = process.argv.slice(2);
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

async function waitUntil(what, predicate) {
  const deadline = Date.now() + 5000;
  while (!(await predicate())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting until ${what}`);
    await sleep(50);
  }
  console.log(`ok: ${what}`);
}

// ---- stdio ----
{
  const client = new Client({ name: "ts-tests", version: "1.0.0" });
  await client.connect(new StdioClientTransport({ command: bookshop, stderr: "ignore" }));
  const { tools } = await client.listTools();
  assert.deepEqual(tools.map((t) => t.name).sort(), ["cancel_hold", "list_holds", "order_book", "rebuild_index", "search_status"]);

  const progress = [];
  const result = await client.callTool(
    { name: "rebuild_index", arguments: { titles: ["Dune", "Emma"] } },
    undefined,
    { onprogress: (p) => progress.push(p.progress) },
  );
  assert.equal(result.content[0].text, "Indexed 2 books.");
  // The server sends progress 2 just before the response, in that order; the TypeScript client sometimes handles the
  // response first and drops the last progress. What it does see must be the start of the sequence.
  assert.deepEqual(progress.slice(0, 2), [0, 1]);
  assert.ok(progress.length <= 3 && (progress.length < 3 || progress[2] === 2), `progress ${progress}`);
  console.log("ok: progress over stdio", progress);

  const holds = async () => (await client.callTool({ name: "list_holds", arguments: {} })).structuredContent.holds;
  const abort = new AbortController();
  const order = client.callTool({ name: "order_book", arguments: { title: "Emma" } }, undefined, { signal: abort.signal });
  await waitUntil("the order holds its book", async () => (await holds()).length === 1);
  abort.abort("changed my mind");
  await assert.rejects(order);
  await waitUntil("the cancelled order released its hold", async () => (await holds()).length === 0);
  await client.close();
}

// ---- Streamable HTTP ----
{
  const client = new Client({ name: "ts-tests", version: "1.0.0" }, { capabilities: { elicitation: {} } });
  client.setRequestHandler(ElicitRequestSchema, async (request) => {
    assert.equal(request.params.message, "Who are you?");
    return { action: "accept", content: { name: "Grace", age: 85 } };
  });
  await client.connect(new StreamableHTTPClientTransport(new URL(url)));
  const asked = await client.callTool({ name: "ask_name", arguments: {} });
  assert.equal(asked.content[0].text, "Hello, Grace (Some(85))");
  console.log("ok: elicitation over HTTP");

  const progress = [];
  const reported = await client.callTool({ name: "progress", arguments: {} }, undefined, {
    onprogress: (p) => progress.push(p.progress),
  });
  assert.equal(reported.content[0].text, "reported");
  // As above: the last progress can lose the race with the response inside the client.
  assert.ok(progress.length >= 1 && progress.every((p, i) => p === i + 1), `progress ${progress}`);
  console.log("ok: progress over HTTP");

  const item = await client.readResource({ uri: "test://items/7" });
  assert.equal(item.contents[0].text, '{"id":7}');
  const prompt = await client.getPrompt({ name: "greeting", arguments: { name: "Ada", times: "2" } });
  assert.equal(prompt.messages[0].content.text, "Hello, Ada! Hello, Ada!");
  console.log("ok: resources and prompts over HTTP");
  await client.close();
}

console.log("all ok");
