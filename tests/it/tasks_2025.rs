//! Tasks in the 2025-11-25 era (the experimental `tasks` utility), over stdio and Streamable HTTP: the capability and
//! each tool's `execution.taskSupport`; a `tools/call` with `task` answered at once with the task, which `tasks/get`
//! polls and `tasks/result` waits on; progress, logs and questions of a task tagged with
//! `io.modelcontextprotocol/related-task`; `notifications/tasks/status` on every change; `tasks/list` pages of the
//! caller's own tasks; `tasks/cancel`, TTL expiry and the end of a session stopping the handler; the error codes the
//! specification names. Every message the server writes goes through the harness's check against the official
//! 2025-11-25 schema (stdio: the reader thread, by the method of the request answered; HTTP: `Body`), and each
//! `tasks/result` payload is checked as the `CallToolResult` it stands for.

use crate::common;

use std::collections::HashSet;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use common::http::{notification, request, Body, Client, HttpServer};
use common::{schema, testbed, Server};
use serde_json::{json, Value};

const WAIT: Duration = Duration::from_secs(10);
const SHORT: Duration = Duration::from_millis(200);
const RELATED: &str = "io.modelcontextprotocol/related-task";
const UNKNOWN: &str = "0123456789abcdef0123456789abcdef";

// ---- shared checks ----

fn result(r: &Value) -> &Value {
    r.get("result").unwrap_or_else(|| panic!("not a result: {r}"))
}

fn error_code(r: &Value) -> i64 {
    r["error"]["code"].as_i64().unwrap_or_else(|| panic!("not an error: {r}"))
}

fn text(r: &Value) -> &str {
    r["content"][0]["text"].as_str().unwrap_or_else(|| panic!("no text in {r}"))
}

/// `YYYY-MM-DDTHH:MM:SS[.fff]Z`, as the server writes ISO 8601 stamps (UTC).
fn is_timestamp(stamp: &str) -> bool {
    let b = stamp.as_bytes();
    b.len() >= 20
        && b[4] == b'-'
        && b[7] == b'-'
        && b[10] == b'T'
        && b[13] == b':'
        && b[16] == b':'
        && stamp.ends_with('Z')
        && stamp[..4].chars().all(|c| c.is_ascii_digit())
}

/// What the schema cannot say of a task: a 128-bit hex id, ISO 8601 stamps in order, the TTL and poll interval.
fn check_task(task: &Value, ttl: u64) {
    let id = task["taskId"].as_str().unwrap_or_else(|| panic!("no taskId: {task}"));
    assert!(id.len() == 32 && id.chars().all(|c| c.is_ascii_hexdigit()), "128 random bits, hex: {task}");
    let created = task["createdAt"].as_str().unwrap_or_default();
    let updated = task["lastUpdatedAt"].as_str().unwrap_or_default();
    assert!(is_timestamp(created) && is_timestamp(updated), "{task}");
    assert!(created <= updated, "updated before created: {task}");
    assert_eq!(task["ttl"], ttl, "{task}");
    assert_eq!(task["pollInterval"], 50, "the testbed's task tools suggest 50 ms: {task}");
    assert!(task["_meta"].get(RELATED).is_none(), "a task names itself, not its related task: {task}");
}

/// The `tasks/result` payload of a tool call: the `CallToolResult`, tagged with its task.
fn check_payload(r: &Value, id: &str) -> Value {
    let payload = result(r).clone();
    schema::validate("CallToolResult", &payload).unwrap();
    assert_eq!(payload["_meta"][RELATED], json!({"taskId": id}), "tasks/result must name its task: {r}");
    payload
}

/// The statuses `notifications/tasks/status` reported for a task, in order (none tagged with `related-task`).
fn statuses(messages: &[Value], id: &str) -> Vec<String> {
    messages
        .iter()
        .filter(|m| m["method"] == "notifications/tasks/status" && m["params"]["taskId"] == id)
        .map(|m| {
            assert!(m["params"]["_meta"].get(RELATED).is_none(), "a status notification is not tagged: {m}");
            m["params"]["status"].as_str().unwrap().to_owned()
        })
        .collect()
}

/// A message a task sent: tagged with its id.
fn tagged(m: &Value, id: &str) -> bool {
    m["params"]["_meta"][RELATED] == json!({"taskId": id})
}

fn default_ttl() -> u64 {
    mcp::TaskSettings::DEFAULT_TTL.as_millis() as u64
}

#[test]
fn the_schema_check_the_harness_applies_rejects_malformed_tasks() {
    // What every test below relies on: a task the server wrote wrong would fail the check, in every place it goes.
    let response = |result: Value| json!({"jsonrpc": "2.0", "id": 1, "result": result});
    let good = json!({
        "taskId": "t", "status": "working", "createdAt": "2025-11-25T10:30:00Z",
        "lastUpdatedAt": "2025-11-25T10:30:00Z", "ttl": null,
    });
    schema::check_server_message(&response(json!({"task": good})), Some("tools/call")).unwrap();
    schema::check_server_message(&response(good.clone()), Some("tasks/get")).unwrap();
    let mut no_ttl = good.clone();
    no_ttl.as_object_mut().unwrap().remove("ttl");
    let mut no_stamp = good.clone();
    no_stamp.as_object_mut().unwrap().remove("lastUpdatedAt");
    let mut bad_status = good.clone();
    bad_status["status"] = "done".into();
    for bad in [no_ttl, no_stamp, bad_status] {
        for (method, result) in [
            ("tools/call", json!({"task": bad})),
            ("tasks/get", bad.clone()),
            ("tasks/cancel", bad.clone()),
            ("tasks/list", json!({"tasks": [bad]})),
        ] {
            let checked = schema::check_server_message(&response(result.clone()), Some(method));
            assert!(checked.is_err(), "{method} {result} passed");
        }
        let status = json!({"jsonrpc": "2.0", "method": "notifications/tasks/status", "params": bad});
        assert!(schema::check_server_message(&status, None).is_err(), "{status} passed");
    }
}

// ---- stdio ----

fn spawn(env: &[(&str, &str)], capabilities: Value) -> Server {
    let mut command = std::process::Command::new(testbed());
    command.envs(env.iter().copied());
    let mut s = Server::spawn_with(command);
    s.initialize_with(capabilities);
    s
}

/// Calls `tool` as a task (`task` is the `task` field) and returns the task of the `CreateTaskResult`.
fn create(s: &mut Server, tool: &str, arguments: Value, task: Value) -> Value {
    let r = s.call("tools/call", json!({"name": tool, "arguments": arguments, "task": task}));
    let created = result(&r);
    assert!(created.get("content").is_none(), "a task answers with the task, not the result: {r}");
    assert_eq!(created["task"]["status"], "working", "a task begins working: {r}");
    created["task"].clone()
}

fn task_id(task: &Value) -> String {
    task["taskId"].as_str().unwrap_or_else(|| panic!("no taskId: {task}")).to_owned()
}

fn get(s: &mut Server, id: &str) -> Value {
    s.call("tasks/get", json!({"taskId": id}))
}

fn cancel(s: &mut Server, id: &str) -> Value {
    s.call("tasks/cancel", json!({"taskId": id}))
}

fn answer(s: &mut Server, request: &Value, result: Value) {
    s.send(json!({"jsonrpc": "2.0", "id": request["id"], "result": result}));
}

/// Closes stdin, waits for the exit and returns what the server wrote that was not read yet: every message has then
/// been through the schema check.
fn end(mut s: Server) -> (Server, Vec<Value>) {
    s.close(WAIT);
    let rest = s.drain(Duration::from_secs(2));
    (s, rest)
}

#[test]
fn the_server_declares_tasks_and_marks_only_its_task_tools() {
    let mut s = Server::spawn(testbed());
    let init = s.initialize();
    assert_eq!(
        init["result"]["capabilities"]["tasks"],
        json!({"list": {}, "cancel": {}, "requests": {"tools": {"call": {}}}}),
        "{init}"
    );
    let mut tools = Vec::new();
    let mut cursor = Value::Null;
    loop {
        let params = if cursor.is_null() { json!({}) } else { json!({"cursor": cursor}) };
        let page = s.call("tools/list", params);
        tools.extend(result(&page)["tools"].as_array().unwrap().iter().cloned());
        cursor = result(&page).get("nextCursor").cloned().unwrap_or(Value::Null);
        if cursor.is_null() {
            break;
        }
    }
    let execution = |name: &str| {
        let tool = tools.iter().find(|t| t["name"] == name).unwrap_or_else(|| panic!("no tool {name}"));
        tool.get("execution").cloned()
    };
    for name in ["task_sleep", "task_sleep_blocking", "task_fail"] {
        assert_eq!(execution(name), Some(json!({"taskSupport": "optional"})), "{name}");
    }
    for name in ["task_approve", "task_approve_blocking", "task_after_question"] {
        assert_eq!(execution(name), Some(json!({"taskSupport": "required"})), "{name}");
    }
    assert_eq!(execution("echo"), None, "a tool that is no task tool says nothing (\"forbidden\" by default)");
    for tool in &tools {
        if let Some(support) = tool.get("execution").map(|e| &e["taskSupport"]) {
            assert!(support == "optional" || support == "required", "{tool}");
        }
    }
    end(s);
}

#[test]
fn a_call_with_task_is_answered_at_once_then_polled_and_its_result_fetched() {
    let mut s = spawn(&[], json!({}));
    for tool in ["task_sleep", "task_sleep_blocking"] {
        let task = create(&mut s, tool, json!({"ms": 300}), json!({}));
        check_task(&task, default_ttl());
        assert_eq!(task["createdAt"], task["lastUpdatedAt"], "{tool}: new: {task}");
        let id = task_id(&task);
        // Durable before the answer: the task is there at once, still running.
        let now = get(&mut s, &id);
        check_task(result(&now), default_ttl());
        assert_eq!(result(&now)["taskId"], json!(id));
        assert_eq!(result(&now)["createdAt"], task["createdAt"]);
        assert!(["working", "completed"].contains(&result(&now)["status"].as_str().unwrap()), "{now}");

        // tasks/result waits for the end and answers with the tool's result.
        let done = s.call("tasks/result", json!({"taskId": id}));
        let payload = check_payload(&done, &id);
        assert_eq!(text(&payload), "slept 300 ms", "{tool}: {done}");
        assert_ne!(payload["isError"], true);
        assert!(s.wait_stderr(&format!("TASK_START {id}"), Duration::from_secs(5)), "the handler knows its task id");
        assert!(s.wait_stderr(&format!("TASK_DONE {id}"), Duration::from_secs(5)));

        let after = get(&mut s, &id);
        assert_eq!(result(&after)["status"], "completed", "{after}");
        check_task(result(&after), default_ttl());
        // The result stays for the task's TTL: asking again gives it again.
        let again = s.call("tasks/result", json!({"taskId": id}));
        assert_eq!(check_payload(&again, &id), payload);
    }
    // The TTL the client asks for is the task's TTL.
    let task = create(&mut s, "task_sleep", json!({"ms": 10}), json!({"ttl": 60_000}));
    check_task(&task, 60_000);
    let id = task_id(&task);
    assert_eq!(result(&get(&mut s, &id))["ttl"], 60_000);
    end(s);
}

#[test]
fn an_optional_task_tool_called_without_task_answers_in_its_request() {
    let mut s = spawn(&[], json!({}));
    let r = s.call("tools/call", json!({"name": "task_sleep", "arguments": {"ms": 10}}));
    assert_eq!(text(result(&r)), "slept 10 ms", "{r}");
    assert!(result(&r).get("task").is_none(), "{r}");
    assert!(result(&r)["_meta"].get(RELATED).is_none(), "{r}");
    let r = s.call("tools/call", json!({"name": "task_sleep_blocking", "arguments": {"ms": 10}}));
    assert_eq!(text(result(&r)), "slept 10 ms", "{r}");
    let list = s.call("tasks/list", json!({}));
    assert_eq!(result(&list)["tasks"], json!([]), "no task was made: {list}");
    let (_, rest) = end(s);
    assert!(!rest.iter().any(|m| m["method"] == "notifications/tasks/status"), "{rest:?}");
}

#[test]
fn progress_and_logs_of_a_task_carry_its_token_and_id_and_every_change_is_announced() {
    let mut s = spawn(&[], json!({}));
    let call = s.request(
        "tools/call",
        json!({"name": "task_sleep", "arguments": {"ms": 250}, "task": {}, "_meta": {"progressToken": "tp-1"}}),
    );
    let created = s.response(&call);
    let id = task_id(&result(&created)["task"]);
    let done = s.call("tasks/result", json!({"taskId": id}));
    assert_eq!(text(&check_payload(&done, &id)), "slept 250 ms");
    let messages = s.drain(SHORT);

    let progress: Vec<&Value> = messages.iter().filter(|m| m["method"] == "notifications/progress").collect();
    assert!(progress.len() >= 2, "the token stays valid for the task's life: {messages:?}");
    for p in &progress {
        assert_eq!(p["params"]["progressToken"], "tp-1", "{p}");
        assert!(tagged(p, &id), "progress of a task is tagged with it: {p}");
    }
    let values: Vec<f64> = progress.iter().map(|p| p["params"]["progress"].as_f64().unwrap()).collect();
    assert!(values.windows(2).all(|w| w[0] < w[1]), "progress rises: {values:?}");
    let logs: Vec<&Value> = messages.iter().filter(|m| m["method"] == "notifications/message").collect();
    assert!(!logs.is_empty(), "{messages:?}");
    assert_eq!(logs[0]["params"]["data"], "step 0");
    assert!(logs.iter().all(|l| tagged(l, &id)), "logs of a task are tagged with it: {logs:?}");

    assert_eq!(statuses(&messages, &id), ["completed"], "{messages:?}");
    let completed = messages.iter().position(|m| m["method"] == "notifications/tasks/status").unwrap();
    let note = &messages[completed]["params"];
    assert_eq!(note["taskId"], json!(id));
    check_task(note, default_ttl());
    assert!(
        messages[completed..]
            .iter()
            .all(|m| m["method"] != "notifications/progress" && m["method"] != "notifications/message"),
        "nothing of the task after its end: {messages:?}"
    );
    end(s);
}

#[test]
fn a_question_puts_the_task_in_input_required_until_the_client_answers() {
    for (tool, approve, expected) in
        [("task_approve", true, "the refund: approved"), ("task_approve_blocking", false, "the refund: refused")]
    {
        let mut s = spawn(&[], json!({"elicitation": {"form": {}}}));
        let id = task_id(&create(&mut s, tool, json!({"what": "the refund"}), json!({"ttl": 60_000})));
        let question = s.server_request("elicitation/create");
        assert_eq!(question["params"]["_meta"][RELATED], json!({"taskId": id}), "{tool}: {question}");
        assert_eq!(question["params"]["message"], "Approve the refund?");
        assert_eq!(question["params"]["mode"], "form");
        assert_eq!(question["params"]["requestedSchema"]["properties"]["approve"]["type"], "boolean", "{question}");
        // The status changes before the question goes out.
        let waiting = get(&mut s, &id);
        assert_eq!(result(&waiting)["status"], "input_required", "{tool}: {waiting}");
        check_task(result(&waiting), 60_000);

        // tasks/result waits while the question is open, and answers once the task is over.
        let pending = s.request("tasks/result", json!({"taskId": id}));
        let early = s.drain(SHORT);
        assert!(!early.iter().any(|m| m.get("id") == Some(&pending)), "answered before the end: {early:?}");
        answer(&mut s, &question, json!({"action": "accept", "content": {"approve": approve}}));
        let done = s.response(&pending);
        assert_eq!(text(&check_payload(&done, &id)), expected, "{tool}: {done}");
        assert_eq!(result(&get(&mut s, &id))["status"], "completed");

        let mut messages = early;
        messages.extend(s.drain(SHORT));
        assert_eq!(statuses(&messages, &id), ["input_required", "working", "completed"], "{tool}: {messages:?}");
        end(s);
    }
}

#[test]
fn a_tool_error_fails_the_task_and_tasks_result_still_returns_it() {
    let mut s = spawn(&[], json!({}));
    let id = task_id(&create(&mut s, "task_fail", json!({"reason": "disk full"}), json!({})));
    let done = s.call("tasks/result", json!({"taskId": id}));
    let payload = check_payload(&done, &id);
    assert_eq!(payload["isError"], true, "{done}");
    assert_eq!(text(&payload), "disk full");
    let failed = get(&mut s, &id);
    assert_eq!(result(&failed)["status"], "failed", "a tool error fails a 2025 task: {failed}");
    assert!(result(&failed)["statusMessage"].as_str().is_some_and(|m| !m.is_empty()), "why: {failed}");
    let refused = cancel(&mut s, &id);
    assert_eq!(error_code(&refused), -32602, "a failed task is terminal: {refused}");
    assert_eq!(result(&get(&mut s, &id))["status"], "failed");

    // A question the client cannot take (no elicitation capability) fails the task too; nothing is asked.
    let id = task_id(&create(&mut s, "task_approve", json!({"what": "x"}), json!({})));
    let done = s.call("tasks/result", json!({"taskId": id}));
    let payload = check_payload(&done, &id);
    assert_eq!(payload["isError"], true, "{done}");
    assert!(text(&payload).contains("elicitation"), "{done}");
    assert_eq!(result(&get(&mut s, &id))["status"], "failed");

    let messages = s.drain(SHORT);
    assert!(!messages.iter().any(|m| m["method"] == "elicitation/create"), "{messages:?}");
    assert_eq!(statuses(&messages, &id), ["failed"], "{messages:?}");
    end(s);
}

#[test]
fn tasks_cancel_stops_the_handler_and_the_task_stays_cancelled() {
    let mut s = spawn(&[], json!({}));
    let id = task_id(&create(&mut s, "task_sleep", json!({"ms": 20_000}), json!({})));
    assert!(s.wait_stderr(&format!("TASK_START {id}"), WAIT));
    let waiting = s.request("tasks/result", json!({"taskId": id}));
    let cancelled = cancel(&mut s, &id);
    let task = result(&cancelled);
    assert_eq!(task["taskId"], json!(id), "{cancelled}");
    assert_eq!(task["status"], "cancelled", "cancelled before the answer: {cancelled}");
    check_task(task, default_ttl());
    assert!(s.wait_stderr(&format!("TASK_ABORTED {id}"), WAIT), "the handler was dropped");
    assert!(s.wait_stderr(&format!("TASK_CLEANUP {id}"), WAIT), "its deferred cleanup ran");
    assert!(!s.has_stderr(&format!("TASK_DONE {id}")));
    // A tasks/result that was waiting ends, with an error: the call has no result.
    let ended = s.response(&waiting);
    assert!(ended.get("error").is_some(), "{ended}");
    assert_eq!(result(&get(&mut s, &id))["status"], "cancelled");
    let again = cancel(&mut s, &id);
    assert_eq!(error_code(&again), -32602, "a cancelled task is terminal: {again}");
    let late = s.call("tasks/result", json!({"taskId": id}));
    assert!(late.get("error").is_some(), "{late}");

    // A plain fn sees its flag.
    let blocking = task_id(&create(&mut s, "task_sleep_blocking", json!({"ms": 20_000}), json!({})));
    assert!(s.wait_stderr(&format!("TASK_START {blocking}"), WAIT));
    assert_eq!(result(&cancel(&mut s, &blocking))["status"], "cancelled");
    assert!(s.wait_stderr(&format!("TASK_STOPPED {blocking}"), WAIT));
    std::thread::sleep(Duration::from_millis(100));
    assert_eq!(result(&get(&mut s, &blocking))["status"], "cancelled", "it stays cancelled after the fn returns");

    // Cancelling a completed task is refused and leaves it completed, its result intact.
    let quick = task_id(&create(&mut s, "task_sleep", json!({"ms": 10}), json!({})));
    let done = s.call("tasks/result", json!({"taskId": quick}));
    let refused = cancel(&mut s, &quick);
    assert_eq!(error_code(&refused), -32602, "{refused}");
    assert_eq!(result(&get(&mut s, &quick))["status"], "completed");
    assert_eq!(check_payload(&s.call("tasks/result", json!({"taskId": quick})), &quick), *result(&done));

    let messages = s.drain(SHORT);
    assert_eq!(statuses(&messages, &id), ["cancelled"], "{messages:?}");
    assert_eq!(statuses(&messages, &blocking), ["cancelled"], "{messages:?}");
    assert_eq!(statuses(&messages, &quick), ["completed"], "{messages:?}");
    end(s);
}

#[test]
fn cancelling_the_request_that_created_a_task_does_not_cancel_the_task() {
    let mut s = spawn(&[], json!({}));
    let call = s.request("tools/call", json!({"name": "task_sleep", "arguments": {"ms": 300}, "task": {}}));
    let id = task_id(&result(&s.response(&call))["task"]);
    assert!(s.wait_stderr(&format!("TASK_START {id}"), WAIT));
    s.cancel(&call, "changed my mind");
    let done = s.call("tasks/result", json!({"taskId": id}));
    assert_eq!(text(&check_payload(&done, &id)), "slept 300 ms", "{done}");
    assert!(s.wait_stderr(&format!("TASK_DONE {id}"), Duration::from_secs(5)));
    assert!(!s.has_stderr(&format!("TASK_ABORTED {id}")), "{}", s.stderr_text());
    assert_eq!(result(&get(&mut s, &id))["status"], "completed");
    end(s);
}

#[test]
fn a_task_where_the_tool_does_not_allow_one_is_method_not_found_and_unknown_ids_are_invalid_params() {
    let mut s = spawn(&[], json!({"elicitation": {}}));
    // `task` on a tool without task support; no `task` on a tool that requires one.
    let forbidden = s.call("tools/call", json!({"name": "echo", "arguments": {"text": "hi"}, "task": {}}));
    assert_eq!(error_code(&forbidden), -32601, "{forbidden}");
    for tool in ["task_approve", "task_approve_blocking", "task_after_question"] {
        let r = s.call("tools/call", json!({"name": tool, "arguments": {"what": "x"}}));
        assert_eq!(error_code(&r), -32601, "{tool} runs only as a task: {r}");
    }
    let malformed = s.call("tools/call", json!({"name": "task_sleep", "arguments": {"ms": 10}, "task": "soon"}));
    assert_eq!(error_code(&malformed), -32602, "{malformed}");
    // The same tool without `task` still works.
    assert_eq!(text(result(&s.call("tools/call", json!({"name": "echo", "arguments": {"text": "hi"}})))), "hi");

    for method in ["tasks/get", "tasks/result", "tasks/cancel"] {
        for params in [json!({"taskId": UNKNOWN}), json!({}), json!({"taskId": 7})] {
            let r = s.call(method, params.clone());
            assert_eq!(error_code(&r), -32602, "{method} {params}: {r}");
        }
    }
    for cursor in [json!("nope"), json!(5)] {
        let r = s.call("tasks/list", json!({"cursor": cursor}));
        assert_eq!(error_code(&r), -32602, "cursor {cursor}: {r}");
    }
    let update = s.call("tasks/update", json!({"taskId": UNKNOWN, "inputResponses": {}}));
    assert_eq!(error_code(&update), -32601, "tasks/update is not a 2025 method: {update}");
    let list = s.call("tasks/list", json!({}));
    assert_eq!(result(&list)["tasks"], json!([]), "none of that made a task: {list}");
    let (_, rest) = end(s);
    assert!(!rest.iter().any(|m| m["method"] == "notifications/tasks/status"), "{rest:?}");
}

#[test]
fn tasks_list_pages_through_the_sessions_tasks_oldest_first() {
    let mut s = spawn(&[("TESTBED_PAGE_SIZE", "2")], json!({}));
    let ids: Vec<String> =
        (0..5).map(|_| task_id(&create(&mut s, "task_sleep", json!({"ms": 10}), json!({})))).collect();
    let mut pages = Vec::new();
    let mut cursor = Value::Null;
    loop {
        let params = if cursor.is_null() { json!({}) } else { json!({"cursor": cursor}) };
        let page = s.call("tasks/list", params);
        let tasks = result(&page)["tasks"].as_array().unwrap().clone();
        for task in &tasks {
            check_task(task, default_ttl());
        }
        pages.push(tasks.iter().map(task_id).collect::<Vec<_>>());
        cursor = result(&page).get("nextCursor").cloned().unwrap_or(Value::Null);
        if cursor.is_null() {
            break;
        }
        assert!(cursor.is_string(), "{page}");
        assert!(pages.len() < 10, "the pages never end: {pages:?}");
    }
    assert_eq!(pages.iter().map(Vec::len).collect::<Vec<_>>(), [2, 2, 1], "{pages:?}");
    assert_eq!(pages.concat(), ids, "every task once, oldest first");
    end(s);
}

#[test]
fn a_task_whose_ttl_runs_out_is_stopped_and_marked_failed() {
    let mut s = spawn(&[("TESTBED_TASK_TTL_MS", "400")], json!({}));
    // The server's default TTL, and one the client asks for.
    let by_default = create(&mut s, "task_sleep", json!({"ms": 20_000}), json!({}));
    check_task(&by_default, 400);
    let asked = create(&mut s, "task_sleep_blocking", json!({"ms": 20_000}), json!({"ttl": 300}));
    check_task(&asked, 300);
    let (async_id, blocking_id) = (task_id(&by_default), task_id(&asked));
    let waiting = s.request("tasks/result", json!({"taskId": async_id}));

    assert!(s.wait_stderr(&format!("TASK_ABORTED {async_id}"), WAIT), "stopped at the end of its TTL");
    assert!(s.wait_stderr(&format!("TASK_CLEANUP {async_id}"), WAIT));
    assert!(s.wait_stderr(&format!("TASK_STOPPED {blocking_id}"), WAIT), "a plain fn sees its flag");
    for id in [&async_id, &blocking_id] {
        let failed = s.wait_for("the failed status", |m| {
            m["method"] == "notifications/tasks/status" && m["params"]["taskId"] == json!(id)
        });
        assert_eq!(failed["params"]["status"], "failed", "{failed}");
        assert!(failed["params"]["statusMessage"].as_str().is_some_and(|m| m.contains("TTL")), "{failed}");
    }
    // The waiting tasks/result ends with an error; afterwards the task may be gone (its TTL is over).
    let ended = s.response(&waiting);
    assert!(matches!(error_code(&ended), -32602 | -32603), "{ended}");
    for id in [&async_id, &blocking_id] {
        let r = get(&mut s, id);
        let gone_or_failed = match r.get("error") {
            Some(_) => error_code(&r) == -32602,
            None => result(&r)["status"] == "failed",
        };
        assert!(gone_or_failed, "{r}");
    }
    assert!(!s.has_stderr(&format!("TASK_DONE {async_id}")) && !s.has_stderr(&format!("TASK_DONE {blocking_id}")));
    end(s);
}

#[test]
fn the_end_of_input_cancels_the_sessions_tasks_and_their_cleanups_run() {
    let mut s = spawn(&[], json!({}));
    let id = task_id(&create(&mut s, "task_sleep", json!({"ms": 20_000}), json!({})));
    let blocking = task_id(&create(&mut s, "task_sleep_blocking", json!({"ms": 20_000}), json!({})));
    assert!(s.wait_stderr(&format!("TASK_START {id}"), WAIT));
    assert!(s.wait_stderr(&format!("TASK_START {blocking}"), WAIT));
    let (s, _) = end(s);
    let stderr = s.stderr_text();
    for marker in [format!("TASK_ABORTED {id}"), format!("TASK_CLEANUP {id}"), format!("TASK_STOPPED {blocking}")] {
        assert!(stderr.contains(&marker), "{marker} before the exit:\n{stderr}");
    }
}

#[test]
fn cancelling_a_task_withdraws_its_open_question_tagged_with_the_task() {
    for tool in ["task_approve", "task_approve_blocking"] {
        let mut s = spawn(&[], json!({"elicitation": {"form": {}}}));
        let id = task_id(&create(&mut s, tool, json!({"what": "x"}), json!({})));
        let question = s.server_request("elicitation/create");
        assert_eq!(result(&cancel(&mut s, &id))["status"], "cancelled");
        let withdrawn = s.wait_for("the question's withdrawal", |m| {
            m["method"] == "notifications/cancelled" && m["params"]["requestId"] == question["id"]
        });
        // The spec: every request, notification and response related to a task carries related-task.
        assert!(tagged(&withdrawn, &id), "{tool}: the withdrawal of the task's question names the task: {withdrawn}");
        // A late answer changes nothing.
        answer(&mut s, &question, json!({"action": "accept", "content": {"approve": true}}));
        assert_eq!(result(&get(&mut s, &id))["status"], "cancelled");
        end(s);
    }
}

#[test]
fn the_running_task_limit_refuses_a_new_task_until_one_ends() {
    let mut s = spawn(&[("TESTBED_MAX_RUNNING_TASKS", "1")], json!({}));
    let first = task_id(&create(&mut s, "task_sleep", json!({"ms": 20_000}), json!({})));
    let refused = s.call("tools/call", json!({"name": "task_sleep", "arguments": {"ms": 10}, "task": {}}));
    assert_eq!(error_code(&refused), -31000, "{refused}");
    assert!(refused["error"]["message"].as_str().unwrap().contains("limit is 1"), "{refused}");
    // An ordinary call is no task: the limit does not apply.
    let plain = s.call("tools/call", json!({"name": "task_sleep", "arguments": {"ms": 10}}));
    assert_eq!(text(result(&plain)), "slept 10 ms");
    assert_eq!(result(&cancel(&mut s, &first))["status"], "cancelled");
    let next = task_id(&create(&mut s, "task_sleep", json!({"ms": 10}), json!({})));
    let listed: Vec<String> =
        result(&s.call("tasks/list", json!({})))["tasks"].as_array().unwrap().iter().map(task_id).collect();
    assert_eq!(listed, [first, next], "the refused call made no task");
    end(s);
}

// ---- Streamable HTTP ----

async fn http_create(client: &Client, id: i64, tool: &str, arguments: Value, task: Value) -> String {
    let (r, _) = client.call(id, "tools/call", json!({"name": tool, "arguments": arguments, "task": task})).await;
    let task = &result(&r)["task"];
    assert_eq!(task["status"], "working", "{r}");
    task_id(task)
}

async fn http_call(client: &Client, id: i64, method: &str, params: Value) -> Value {
    client.call(id, method, params).await.0
}

/// Opens a POST whose stream stays open (such as a waiting `tasks/result`).
async fn open(client: &Client, id: i64, method: &str, params: Value) -> Body {
    let response = client.send(&request(id, method, params)).await;
    assert_eq!(response.status(), 200, "{method}");
    Body::of(response).await
}

/// Answers a request of the server over POST.
async fn http_answer(client: &Client, question: &Value, result: Value) {
    let reply = json!({"jsonrpc": "2.0", "id": question["id"], "result": result});
    assert_eq!(client.send(&reply).await.status(), 202);
}

async fn delete(client: &Client) -> u16 {
    let session = client.session.clone().expect("a session");
    client.http.delete(&client.url).header("mcp-session-id", session).send().await.unwrap().status().as_u16()
}

/// Reads `body` until a message `matches`, keeping the others in `body.seen`.
async fn next_matching(body: &mut Body, what: &str, matches: impl Fn(&Value) -> bool) -> Value {
    let deadline = Instant::now() + WAIT;
    loop {
        let left = deadline.saturating_duration_since(Instant::now());
        let m = body.next_message(left).await.unwrap_or_else(|| panic!("no {what} on the stream"));
        if matches(&m) {
            return m;
        }
        body.seen.push(m);
    }
}

/// Reads what is left on a stream until it is quiet, each message checked against the schema on the way.
async fn quiet(body: &mut Body) -> Vec<Value> {
    let mut rest = Vec::new();
    while let Some(m) = body.next_message(SHORT).await {
        rest.push(m);
    }
    rest
}

#[tokio::test]
async fn over_http_a_task_outlives_its_post_and_its_messages_follow_a_waiting_tasks_result() {
    let server = HttpServer::start(&[]);
    let mut client = server.client();
    let init = client.initialize(json!({})).await;
    assert_eq!(
        init["result"]["capabilities"]["tasks"],
        json!({"list": {}, "cancel": {}, "requests": {"tools": {"call": {}}}})
    );
    let mut standalone = Body::of(client.get(None).await).await;
    let params = json!({
        "name": "task_sleep", "arguments": {"ms": 400}, "task": {}, "_meta": {"progressToken": 77},
    });
    let (created, on_post) = client.call(1, "tools/call", params).await;
    check_task(&result(&created)["task"], default_ttl());
    let id = task_id(&result(&created)["task"]);
    assert!(on_post.is_empty(), "the creating POST carries only the task: {on_post:?}");
    // Its creating request is over: a cancel for it reaches nothing.
    assert_eq!(client.send(&notification("notifications/cancelled", json!({"requestId": 1}))).await.status(), 202);

    let mut waiting = open(&client, 2, "tasks/result", json!({"taskId": id})).await;
    let done = waiting.response(&json!(2), "tasks/result").await;
    assert_eq!(text(&check_payload(&done, &id)), "slept 400 ms", "{done}");
    let progress: Vec<&Value> = waiting.seen.iter().filter(|m| m["method"] == "notifications/progress").collect();
    assert!(!progress.is_empty(), "the task's progress comes on the waiting stream: {:?}", waiting.seen);
    for p in &progress {
        assert_eq!(p["params"]["progressToken"], 77, "{p}");
        assert!(tagged(p, &id), "{p}");
    }
    assert!(waiting.seen.iter().all(|m| tagged(m, &id)), "only the task's messages: {:?}", waiting.seen);
    assert!(waiting.ended(SHORT).await, "the stream ends with its response");
    assert!(!server.stderr_text().contains(&format!("TASK_ABORTED {id}")));

    // Status changes go to the session's stream.
    let status = next_matching(&mut standalone, "the completed status", |m| {
        m["method"] == "notifications/tasks/status" && m["params"]["status"] == "completed"
    })
    .await;
    assert_eq!(status["params"]["taskId"], json!(id), "{status}");
    assert_eq!(result(&http_call(&client, 3, "tasks/get", json!({"taskId": id})).await)["status"], "completed");

    // A blocking tool, polled to its end; the error codes over HTTP.
    let blocking = http_create(&client, 4, "task_sleep_blocking", json!({"ms": 100}), json!({"ttl": 5000})).await;
    let deadline = Instant::now() + WAIT;
    loop {
        let r = http_call(&client, 5, "tasks/get", json!({"taskId": blocking})).await;
        check_task(result(&r), 5000);
        if result(&r)["status"] == "completed" {
            break;
        }
        assert!(Instant::now() < deadline, "{r}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let done = http_call(&client, 6, "tasks/result", json!({"taskId": blocking})).await;
    assert_eq!(text(&check_payload(&done, &blocking)), "slept 100 ms");
    let forbidden = http_call(&client, 7, "tools/call", json!({"name": "echo", "arguments": {}, "task": {}})).await;
    assert_eq!(error_code(&forbidden), -32601, "{forbidden}");
    let required = http_call(&client, 8, "tools/call", json!({"name": "task_approve", "arguments": {}})).await;
    assert_eq!(error_code(&required), -32601, "{required}");
    let unknown = http_call(&client, 9, "tasks/result", json!({"taskId": UNKNOWN})).await;
    assert_eq!(error_code(&unknown), -32602, "{unknown}");
    let rest = quiet(&mut standalone).await;
    assert_eq!(statuses(&rest, &blocking), ["completed"], "{rest:?}");
}

#[tokio::test]
async fn over_http_tasks_list_pages_through_the_sessions_own_tasks_and_other_sessions_see_none() {
    let server = HttpServer::start_with_env(&[], &[("TESTBED_PAGE_SIZE", "2")]);
    let mut mine = server.client();
    let mut theirs = server.client();
    mine.initialize(json!({})).await;
    theirs.initialize(json!({})).await;
    let mut ids = Vec::new();
    for n in 0..3 {
        ids.push(http_create(&mine, n, "task_sleep", json!({"ms": 10}), json!({})).await);
    }
    let other = http_create(&theirs, 0, "task_sleep", json!({"ms": 10}), json!({})).await;

    let first = http_call(&mine, 10, "tasks/list", json!({})).await;
    let cursor = result(&first)["nextCursor"].clone();
    assert!(cursor.is_string(), "more to come: {first}");
    let second = http_call(&mine, 11, "tasks/list", json!({"cursor": cursor})).await;
    assert!(result(&second).get("nextCursor").is_none(), "{second}");
    let listed: Vec<String> = [&first, &second]
        .iter()
        .flat_map(|page| result(page)["tasks"].as_array().unwrap().iter().map(task_id).collect::<Vec<_>>())
        .collect();
    assert_eq!(result(&first)["tasks"].as_array().unwrap().len(), 2, "{first}");
    assert_eq!(listed, ids, "my tasks, oldest first, and no other session's");

    let their_list = http_call(&theirs, 10, "tasks/list", json!({})).await;
    let theirs_listed: Vec<String> = result(&their_list)["tasks"].as_array().unwrap().iter().map(task_id).collect();
    assert_eq!(theirs_listed, [other], "{their_list}");
    for (n, method) in ["tasks/get", "tasks/result", "tasks/cancel"].into_iter().enumerate() {
        let r = http_call(&theirs, 20 + n as i64, method, json!({"taskId": ids[0]})).await;
        assert_eq!(error_code(&r), -32602, "another session cannot {method} my task: {r}");
    }
    // Mine is untouched by their attempt.
    let r = http_call(&mine, 30, "tasks/result", json!({"taskId": ids[0]})).await;
    assert_eq!(text(&check_payload(&r, &ids[0])), "slept 10 ms");
}

#[tokio::test]
async fn over_http_a_question_goes_to_the_sessions_stream_when_no_tasks_result_waits() {
    let server = HttpServer::start(&[]);
    let mut client = server.client();
    client.initialize(json!({"elicitation": {"form": {}}})).await;
    let mut standalone = Body::of(client.get(None).await).await;
    let id = http_create(&client, 1, "task_approve", json!({"what": "the order"}), json!({})).await;
    let question = next_matching(&mut standalone, "the question", |m| m["method"] == "elicitation/create").await;
    assert_eq!(question["params"]["_meta"][RELATED], json!({"taskId": id}), "{question}");
    assert_eq!(question["params"]["message"], "Approve the order?");
    assert_eq!(statuses(&standalone.seen, &id), ["input_required"], "{:?}", standalone.seen);
    let waiting = http_call(&client, 2, "tasks/get", json!({"taskId": id})).await;
    assert_eq!(result(&waiting)["status"], "input_required");

    let mut pending = open(&client, 3, "tasks/result", json!({"taskId": id})).await;
    http_answer(&client, &question, json!({"action": "accept", "content": {"approve": true}})).await;
    let done = pending.response(&json!(3), "tasks/result").await;
    assert_eq!(text(&check_payload(&done, &id)), "the order: approved", "{done}");
    next_matching(&mut standalone, "the completed status", |m| {
        m["method"] == "notifications/tasks/status" && m["params"]["status"] == "completed"
    })
    .await;
    assert_eq!(statuses(&standalone.seen, &id), ["input_required", "working"], "{:?}", standalone.seen);
    quiet(&mut standalone).await;
}

#[tokio::test]
async fn over_http_cancelling_a_task_withdraws_its_open_question_on_the_stream_that_carried_it() {
    let server = HttpServer::start(&[]);
    let mut client = server.client();
    client.initialize(json!({"elicitation": {"form": {}}})).await;
    let mut standalone = Body::of(client.get(None).await).await;
    let id = http_create(&client, 1, "task_approve", json!({"what": "the deletion"}), json!({})).await;
    let question = next_matching(&mut standalone, "the question", |m| m["method"] == "elicitation/create").await;
    let cancelled = http_call(&client, 2, "tasks/cancel", json!({"taskId": id})).await;
    assert_eq!(result(&cancelled)["status"], "cancelled", "{cancelled}");
    // The client saw the question on the GET stream; the creating POST's stream ended long ago.
    let deadline = Instant::now() + Duration::from_secs(2);
    let mut seen = Vec::new();
    let withdrawn = loop {
        let left = deadline.saturating_duration_since(Instant::now());
        match standalone.next_message(left).await {
            Some(m) if m["method"] == "notifications/cancelled" && m["params"]["requestId"] == question["id"] => {
                break Some(m)
            }
            Some(m) => seen.push(m),
            None => break None,
        }
    };
    let withdrawn = withdrawn.unwrap_or_else(|| {
        panic!(
            "the cancelled task's open question {} was never withdrawn; the GET stream had: {seen:?}",
            question["id"]
        )
    });
    assert!(tagged(&withdrawn, &id), "{withdrawn}");
}

/// What the in-process tools below may ask about, once a test says so.
static ASK_NOW: Mutex<Vec<String>> = Mutex::new(Vec::new());

fn may_ask(what: &str) -> bool {
    ASK_NOW.lock().unwrap().iter().any(|w| w == what)
}

#[derive(serde::Deserialize, schemars::JsonSchema)]
struct Approval {
    /// Whether it is approved.
    approve: bool,
}

fn decision(what: &str, answer: mcp::ask::Elicitation<Approval>) -> String {
    match answer {
        mcp::ask::Elicitation::Accept(Approval { approve: true }) => format!("{what}: approved"),
        mcp::ask::Elicitation::Accept(_) => format!("{what}: refused"),
        _ => format!("{what}: no answer"),
    }
}

/// Asks the client to approve `what` once the test allows it (so that a `tasks/result` can be waiting by then).
#[mcp::tool(task = "required", task_poll_ms = 50)]
async fn approve_when_told(what: String, ctx: &mcp::Context) -> Result<String, mcp::ask::AskError> {
    while !may_ask(&what) {
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    Ok(decision(&what, ctx.elicit::<Approval>(&format!("Approve {what}?")).await?))
}

/// `approve_when_told` as a plain `fn`.
#[mcp::tool(task = "required", task_poll_ms = 50)]
fn approve_when_told_blocking(what: String, ctx: &mcp::Context) -> Result<String, mcp::ask::AskError> {
    while !may_ask(&what) {
        std::thread::sleep(Duration::from_millis(10));
    }
    Ok(decision(&what, ctx.elicit_blocking::<Approval>(&format!("Approve {what}?"))?))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn over_http_a_question_goes_on_the_stream_of_a_waiting_tasks_result() {
    let server =
        mcp::Server::builder().tool::<approve_when_told>().tool::<approve_when_told_blocking>().build().unwrap();
    let app = server.http_router(mcp::HttpOptions::new());
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, app).await });
    let mut client = Client { http: reqwest::Client::new(), url: format!("http://{addr}/mcp"), session: None };
    client.initialize(json!({"elicitation": {"form": {}}})).await;
    let mut standalone = Body::of(client.get(None).await).await;

    for (n, (tool, what, approve, expected)) in [
        ("approve_when_told", "the refund", true, "the refund: approved"),
        ("approve_when_told_blocking", "the upgrade", false, "the upgrade: refused"),
    ]
    .into_iter()
    .enumerate()
    {
        let base = 10 * n as i64;
        let id = http_create(&client, base + 1, tool, json!({"what": what}), json!({})).await;
        let mut pending = open(&client, base + 2, "tasks/result", json!({"taskId": id})).await;
        // The stream is open (its priming event came), and the request waits on the task well before it asks.
        let priming = pending.next_event(WAIT).await.expect("the priming event");
        assert!(priming.data.is_empty(), "{priming:?}");
        tokio::time::sleep(Duration::from_millis(100)).await;
        ASK_NOW.lock().unwrap().push(what.to_owned());

        let question = next_matching(&mut pending, "the question", |m| m["method"] == "elicitation/create").await;
        assert_eq!(question["params"]["_meta"][RELATED], json!({"taskId": id}), "{tool}: {question}");
        assert_eq!(question["params"]["message"], format!("Approve {what}?"));
        let status = http_call(&client, base + 3, "tasks/get", json!({"taskId": id})).await;
        assert_eq!(result(&status)["status"], "input_required", "{tool}: {status}");
        http_answer(&client, &question, json!({"action": "accept", "content": {"approve": approve}})).await;
        let done = pending.response(&json!(base + 2), "tasks/result").await;
        assert_eq!(text(&check_payload(&done, &id)), expected, "{tool}: {done}");
        assert!(pending.ended(SHORT).await);

        next_matching(&mut standalone, "the completed status", |m| {
            m["method"] == "notifications/tasks/status"
                && m["params"]["taskId"] == json!(id)
                && m["params"]["status"] == "completed"
        })
        .await;
        assert_eq!(statuses(&standalone.seen, &id), ["input_required", "working"], "{tool}: {:?}", standalone.seen);
        assert!(!standalone.seen.iter().any(|m| m["method"] == "elicitation/create"), "asked once, on tasks/result");
    }
    quiet(&mut standalone).await;
}

#[tokio::test]
async fn over_http_tasks_result_after_input_required_delivers_the_pending_question() {
    // The flow the specification draws (Task-Augmented Tool Call With Elicitation): the client polls, sees
    // `input_required`, then calls `tasks/result` "to receive input requests". This client reads no GET stream.
    let server = HttpServer::start(&[]);
    let mut client = server.client();
    client.initialize(json!({"elicitation": {"form": {}}})).await;
    let id = http_create(&client, 1, "task_approve", json!({"what": "the transfer"}), json!({"ttl": 60_000})).await;
    let deadline = Instant::now() + WAIT;
    loop {
        let r = http_call(&client, 2, "tasks/get", json!({"taskId": id})).await;
        if result(&r)["status"] == "input_required" {
            break;
        }
        assert!(Instant::now() < deadline, "never input_required: {r}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let mut pending = open(&client, 3, "tasks/result", json!({"taskId": id})).await;
    let question = pending.next_message(Duration::from_secs(3)).await;
    let question = question.unwrap_or_else(|| {
        panic!(
            "tasks/result of an input_required task brought no elicitation/create, so the task can never go on \
             (it stays input_required until its TTL); seen: {:?}",
            pending.seen
        )
    });
    assert_eq!(question["method"], "elicitation/create", "{question}");
    assert_eq!(question["params"]["_meta"][RELATED], json!({"taskId": id}), "{question}");
    http_answer(&client, &question, json!({"action": "accept", "content": {"approve": true}})).await;
    let done = pending.response(&json!(3), "tasks/result").await;
    assert_eq!(text(&check_payload(&done, &id)), "the transfer: approved", "{done}");
}

#[tokio::test]
async fn over_http_ending_the_session_cancels_its_tasks() {
    let server = HttpServer::start(&[]);
    let mut client = server.client();
    let mut other = server.client();
    client.initialize(json!({})).await;
    other.initialize(json!({})).await;
    let id = http_create(&client, 1, "task_sleep", json!({"ms": 20_000}), json!({})).await;
    let blocking = http_create(&client, 2, "task_sleep_blocking", json!({"ms": 20_000}), json!({})).await;
    assert!(server.wait_stderr(&format!("TASK_START {id}"), WAIT).await);
    assert!(server.wait_stderr(&format!("TASK_START {blocking}"), WAIT).await);
    assert_eq!(delete(&client).await, 200);
    for marker in [format!("TASK_ABORTED {id}"), format!("TASK_CLEANUP {id}"), format!("TASK_STOPPED {blocking}")] {
        assert!(server.wait_stderr(&marker, WAIT).await, "{marker}:\n{}", server.stderr_text());
    }
    let theirs = http_call(&other, 1, "tasks/get", json!({"taskId": id})).await;
    assert_eq!(error_code(&theirs), -32602, "{theirs}");
    let list = http_call(&other, 2, "tasks/list", json!({})).await;
    assert_eq!(result(&list)["tasks"], json!([]), "{list}");
}

/// Fails with a JSON-RPC error (a panic is -32603), as a task when asked.
#[mcp::tool(task = "optional", task_poll_ms = 50)]
async fn task_panics() -> String {
    panic!("the task broke")
}

#[tokio::test]
async fn over_http_a_handler_error_fails_its_task_and_tasks_result_returns_that_error() {
    let server = mcp::Server::builder().tool::<task_panics>().build().unwrap();
    let app = server.http_router(mcp::HttpOptions::new());
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, app).await });
    let mut client = Client { http: reqwest::Client::new(), url: format!("http://{addr}/mcp"), session: None };
    client.initialize(json!({})).await;
    let plain = http_call(&client, 1, "tools/call", json!({"name": "task_panics", "arguments": {}})).await;
    assert_eq!(error_code(&plain), -32603, "{plain}");
    let id = http_create(&client, 2, "task_panics", json!({}), json!({})).await;
    let done = http_call(&client, 3, "tasks/result", json!({"taskId": id})).await;
    assert_eq!(done["error"], plain["error"], "exactly what the call would have answered: {done}");
    let failed = http_call(&client, 4, "tasks/get", json!({"taskId": id})).await;
    check_task(result(&failed), default_ttl());
    assert_eq!(result(&failed)["status"], "failed", "{failed}");
    assert!(result(&failed)["statusMessage"].as_str().unwrap().contains("the task broke"), "{failed}");
    let refused = http_call(&client, 5, "tasks/cancel", json!({"taskId": id})).await;
    assert_eq!(error_code(&refused), -32602, "{refused}");
}

#[tokio::test]
async fn over_stateless_http_a_task_the_caller_can_get_is_listed_or_listing_is_not_declared() {
    // Every task a requestor can retrieve with tasks/get MUST be in its tasks/list; a receiver that cannot tell
    // requestors apart SHOULD NOT declare `tasks.list`.
    let server = HttpServer::start(&["--stateless"]);
    let client = server.client();
    let init = request(
        0,
        "initialize",
        json!({"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "stateless", "version": "0"}}),
    );
    let init = Body::of(client.send(&init).await).await.response(&json!(0), "initialize").await;
    let declares_list = result(&init)["capabilities"]["tasks"].get("list").is_some();
    let id = http_create(&client, 1, "task_sleep", json!({"ms": 10}), json!({})).await;
    let done = http_call(&client, 2, "tasks/result", json!({"taskId": id})).await;
    assert_eq!(text(&check_payload(&done, &id)), "slept 10 ms");
    let got = http_call(&client, 3, "tasks/get", json!({"taskId": id})).await;
    assert_eq!(result(&got)["status"], "completed", "{got}");
    let list = http_call(&client, 4, "tasks/list", json!({})).await;
    let listed: HashSet<String> = result(&list)["tasks"].as_array().unwrap().iter().map(task_id).collect();
    assert!(
        !declares_list || listed.contains(&id),
        "tasks.list is declared ({}) and tasks/get finds {id}, but tasks/list does not list it: {list}",
        result(&init)["capabilities"]["tasks"]
    );
}
