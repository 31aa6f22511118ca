//! Tasks in the 2026-07-28 era (the Tasks extension, `io.modelcontextprotocol/tasks`), over stdio and Streamable
//! HTTP: the server decides, per request, to answer a call with a task when the request declares the extension;
//! `tasks/get` shows the detailed task (its questions, result or error), `tasks/update` answers its questions,
//! `tasks/cancel` stops it through the same path as any cancellation; `subscriptions/listen` with `taskIds` follows
//! it; a task is bound to the principal that created it. Every message is checked against the 2026-07-28 schema, and
//! every task against the extension's shape (`common::schema::check_extension_task`).

use crate::common;

use std::time::{Duration, Instant};

use common::http::{Body, Client, HttpServer};
use common::v2026::{self, subscription_tag};
use common::{testbed, Server};
use serde_json::{json, Value};

const WAIT: Duration = Duration::from_secs(10);

fn tasks() -> Value {
    json!({"extensions": {"io.modelcontextprotocol/tasks": {}}})
}

fn tasks_and_elicitation() -> Value {
    json!({"elicitation": {}, "extensions": {"io.modelcontextprotocol/tasks": {}}})
}

fn result(r: &Value) -> &Value {
    r.get("result").unwrap_or_else(|| panic!("not a result: {r}"))
}

fn error_code(r: &Value) -> i64 {
    r["error"]["code"].as_i64().unwrap_or_else(|| panic!("not an error: {r}"))
}

/// Calls a tool declaring `capabilities`; returns the whole response.
fn call(s: &mut Server, name: &str, arguments: Value, capabilities: Value) -> Value {
    s.v2026_call_with("tools/call", json!({"name": name, "arguments": arguments}), capabilities)
}

/// Calls a task tool declaring the extension and returns the new task's id.
fn start(s: &mut Server, name: &str, arguments: Value) -> String {
    let r = call(s, name, arguments, tasks_and_elicitation());
    let created = result(&r);
    assert_eq!(created["resultType"], "task", "{r}");
    created["taskId"].as_str().unwrap().to_owned()
}

fn get(s: &mut Server, id: &str) -> Value {
    s.v2026_call_with("tasks/get", json!({"taskId": id}), tasks())
}

/// Polls `tasks/get` until `done` says so.
fn poll_until(s: &mut Server, id: &str, what: &str, done: impl Fn(&Value) -> bool) -> Value {
    let deadline = Instant::now() + WAIT;
    loop {
        let r = get(s, id);
        if done(&r) {
            return r;
        }
        assert!(Instant::now() < deadline, "task {id} never got {what}; last: {r}\n{}", s.stderr_text());
        std::thread::sleep(Duration::from_millis(20));
    }
}

fn status_is(status: &'static str) -> impl Fn(&Value) -> bool {
    move |r| r["result"]["status"] == status
}

#[test]
fn a_task_tool_runs_as_a_task_only_for_a_request_that_declares_the_extension() {
    let mut s = Server::spawn(testbed());
    // No extension: the optional task tool answers in its request; the required one cannot run (-32021 naming it).
    let plain = call(&mut s, "task_sleep", json!({"ms": 10}), json!({}));
    assert_eq!(result(&plain)["resultType"], "complete");
    assert_eq!(result(&plain)["content"][0]["text"], "slept 10 ms");
    let refused = call(&mut s, "task_approve", json!({"what": "x"}), json!({"elicitation": {}}));
    assert_eq!(error_code(&refused), -32021, "{refused}");
    assert_eq!(refused["error"]["data"]["requiredCapabilities"], tasks(), "{refused}");
    // A 2025 `task` field is ignored, and a tool that is no task tool never becomes one.
    let legacy_hint = s.v2026_call_with(
        "tools/call",
        json!({"name": "task_sleep", "arguments": {"ms": 10}, "task": {"ttl": 60000}}),
        json!({}),
    );
    assert_eq!(result(&legacy_hint)["resultType"], "complete", "{legacy_hint}");
    let echo = call(&mut s, "echo", json!({"text": "hi"}), tasks());
    assert_eq!(result(&echo)["resultType"], "complete");

    // With it: a flat task at once, durable (an immediate tasks/get finds it), then its result.
    let created = call(&mut s, "task_sleep", json!({"ms": 200}), tasks());
    let task = result(&created);
    assert_eq!((task["resultType"].as_str(), task["status"].as_str()), (Some("task"), Some("working")), "{task}");
    assert!(task.get("task").is_none() && task["ttlMs"].as_u64().is_some_and(|t| t > 0), "{task}");
    assert_eq!(task["pollIntervalMs"], 50, "the tool's own poll interval");
    let id = task["taskId"].as_str().unwrap().to_owned();
    assert_eq!(id.len(), 32, "128 random bits, hex: {id}");
    let now = get(&mut s, &id);
    assert_eq!(result(&now)["taskId"], json!(id));
    assert_eq!(result(&now)["resultType"], "complete");
    let done = poll_until(&mut s, &id, "completed", status_is("completed"));
    let inner = &result(&done)["result"];
    assert_eq!(inner["content"][0]["text"], "slept 200 ms", "{done}");
    assert!(inner["_meta"].get("io.modelcontextprotocol/related-task").is_none(), "{done}");
    assert!(s.wait_stderr(&format!("TASK_DONE {id}"), Duration::from_secs(5)));
}

#[test]
fn a_tool_error_completes_the_task_and_unknown_ids_and_removed_methods_are_refused() {
    let mut s = Server::spawn(testbed());
    let id = start(&mut s, "task_fail", json!({"reason": "disk full"}));
    let done = poll_until(&mut s, &id, "an end", |r| r["result"]["status"] != "working");
    assert_eq!(result(&done)["status"], "completed", "a tool error is a result in 2026: {done}");
    assert_eq!(result(&done)["result"]["isError"], true);
    assert_eq!(result(&done)["result"]["content"][0]["text"], "disk full");

    assert_eq!(error_code(&get(&mut s, "0123456789abcdef0123456789abcdef")), -32602);
    // The extension is checked before the task is looked up.
    for method in ["tasks/get", "tasks/update", "tasks/cancel"] {
        let r = s.v2026_call_with(method, json!({"taskId": id, "inputResponses": {}}), json!({}));
        assert_eq!(error_code(&r), -32021, "{method}: {r}");
        assert_eq!(r["error"]["data"]["requiredCapabilities"], tasks(), "{r}");
    }
    for method in ["tasks/result", "tasks/list"] {
        let r = s.v2026_call_with(method, json!({"taskId": id}), tasks());
        assert_eq!(error_code(&r), -32601, "{method} is not in the 2026 era: {r}");
    }
    let listen = s.v2026_call_with("subscriptions/listen", json!({"notifications": {"taskIds": [id]}}), json!({}));
    assert_eq!(error_code(&listen), -32021, "following tasks needs the extension: {listen}");
}

#[test]
fn questions_put_the_task_in_input_required_and_tasks_update_answers_them() {
    for tool in ["task_approve", "task_approve_blocking"] {
        let mut s = Server::spawn(testbed());
        let id = start(&mut s, tool, json!({"what": "the refund"}));
        let waiting = poll_until(&mut s, &id, "input_required", status_is("input_required"));
        let questions = result(&waiting)["inputRequests"].as_object().unwrap().clone();
        assert_eq!(questions.len(), 1, "{waiting}");
        let (key, question) = questions.iter().next().unwrap();
        assert_eq!(question["method"], "elicitation/create", "{question}");
        assert_eq!(question["params"]["message"], "Approve the refund?");

        // Unknown keys and answers that do not fit are ignored; the ack is empty either way.
        let ack = s.v2026_call_with(
            "tasks/update",
            json!({"taskId": id, "inputResponses": {"unknown-key": {"ignored": true}}}),
            tasks(),
        );
        assert_eq!(result(&ack)["resultType"], "complete");
        assert_eq!(result(&get(&mut s, &id))["status"], "input_required");

        let answer = json!({"action": "accept", "content": {"approve": true}});
        let ack = s.v2026_call_with("tasks/update", json!({"taskId": id, "inputResponses": {key: answer}}), tasks());
        assert_eq!(result(&ack)["resultType"], "complete", "{ack}");
        // The answered question is gone by the time the ack arrived.
        let after = get(&mut s, &id);
        assert!(result(&after).get("inputRequests").is_none_or(|q| q.get(key).is_none()), "{after}");
        let done = poll_until(&mut s, &id, "completed", status_is("completed"));
        assert_eq!(result(&done)["result"]["content"][0]["text"], "the refund: approved", "{tool}: {done}");
        // A key is never used twice in a task's life: answering it again is ignored.
        let again = s.v2026_call_with("tasks/update", json!({"taskId": id, "inputResponses": {key: answer}}), tasks());
        assert_eq!(result(&again)["resultType"], "complete");
    }
}

#[test]
fn a_question_needs_the_capability_declared_on_the_request_that_created_the_task() {
    let mut s = Server::spawn(testbed());
    // The extension, but no elicitation: the handler's question fails (it returns the error as a tool error).
    let created = call(&mut s, "task_approve", json!({"what": "x"}), tasks());
    let id = result(&created)["taskId"].as_str().unwrap().to_owned();
    let done = poll_until(&mut s, &id, "an end", |r| r["result"]["status"] == "completed");
    assert_eq!(result(&done)["result"]["isError"], true, "{done}");
    assert!(result(&done)["result"]["content"][0]["text"].as_str().unwrap().contains("elicitation"), "{done}");
}

#[test]
fn cancelling_a_task_stops_its_handler_and_the_task_stays_cancelled() {
    let mut s = Server::spawn(testbed());
    let id = start(&mut s, "task_sleep", json!({"ms": 20_000}));
    assert!(s.wait_stderr(&format!("TASK_START {id}"), WAIT));
    let ack = s.v2026_call_with("tasks/cancel", json!({"taskId": id}), tasks());
    assert_eq!(result(&ack).as_object().unwrap().keys().filter(|k| *k != "_meta").count(), 1, "empty ack: {ack}");
    // `cancelled` is written before the ack: the next get sees it.
    assert_eq!(result(&get(&mut s, &id))["status"], "cancelled");
    assert!(s.wait_stderr(&format!("TASK_ABORTED {id}"), WAIT), "the handler was dropped");
    assert!(s.wait_stderr(&format!("TASK_CLEANUP {id}"), WAIT), "its deferred cleanup ran");
    // A second cancel is a no-op with the same ack.
    let again = s.v2026_call_with("tasks/cancel", json!({"taskId": id}), tasks());
    assert_eq!(result(&again)["resultType"], "complete");
    assert_eq!(result(&get(&mut s, &id))["status"], "cancelled");

    // A plain fn sees its flag.
    let blocking = start(&mut s, "task_sleep_blocking", json!({"ms": 20_000}));
    assert!(s.wait_stderr(&format!("TASK_START {blocking}"), WAIT));
    s.v2026_call_with("tasks/cancel", json!({"taskId": blocking}), tasks());
    assert!(s.wait_stderr(&format!("TASK_STOPPED {blocking}"), WAIT));
    assert_eq!(result(&get(&mut s, &blocking))["status"], "cancelled");

    // Cancelling a task that has completed acknowledges and leaves it completed.
    let quick = start(&mut s, "task_sleep", json!({"ms": 10}));
    poll_until(&mut s, &quick, "completed", status_is("completed"));
    let late = s.v2026_call_with("tasks/cancel", json!({"taskId": quick}), tasks());
    assert_eq!(result(&late)["resultType"], "complete");
    let still = get(&mut s, &quick);
    assert_eq!(result(&still)["status"], "completed", "{still}");
    assert_eq!(result(&still)["result"]["content"][0]["text"], "slept 10 ms");
}

#[test]
fn a_task_reports_no_progress_or_logs_in_the_2026_era() {
    let mut s = Server::spawn(testbed());
    let params = json!({
        "name": "task_sleep",
        "arguments": {"ms": 300},
        "_meta": {"progressToken": "p-1", v2026::META_LOG_LEVEL: "debug"},
    });
    let created = s.v2026_call_with("tools/call", params, tasks());
    let id = result(&created)["taskId"].as_str().unwrap().to_owned();
    poll_until(&mut s, &id, "completed", status_is("completed"));
    let stray: Vec<Value> = s
        .drain(Duration::from_millis(100))
        .into_iter()
        .filter(|m| m["method"] == "notifications/progress" || m["method"] == "notifications/message")
        .collect();
    assert!(stray.is_empty(), "a 2026 task's progress and logs have no stream to go to: {stray:?}");
}

#[test]
fn a_deferred_task_asks_in_rounds_first_and_becomes_a_task_when_the_handler_says_so() {
    let mut s = Server::spawn(testbed());
    let round = call(&mut s, "task_after_question", json!({}), tasks_and_elicitation());
    let first = result(&round);
    assert_eq!(first["resultType"], "input_required", "{round}");
    assert!(first.get("taskId").is_none(), "{round}");
    assert!(first["inputRequests"].get("who").is_some(), "{round}");
    let state = first["requestState"].clone();
    let retry = s.v2026_call_with(
        "tools/call",
        json!({
            "name": "task_after_question",
            "arguments": {},
            "inputResponses": {"who": {"action": "accept", "content": {"name": "Ada"}}},
            "requestState": state,
        }),
        tasks_and_elicitation(),
    );
    let created = result(&retry);
    assert_eq!(created["resultType"], "task", "{retry}");
    assert!(created.get("requestState").is_none() && created.get("inputRequests").is_none(), "{retry}");
    let id = created["taskId"].as_str().unwrap().to_owned();
    let done = poll_until(&mut s, &id, "completed", status_is("completed"));
    assert_eq!(
        result(&done)["result"]["content"][0]["text"],
        "for Ada (a task before start_task: false; after: true)",
        "{done}"
    );
}

#[test]
fn a_listen_stream_follows_the_tasks_it_names() {
    let mut s = Server::spawn(testbed());
    let id = start(&mut s, "task_approve", json!({"what": "the order"}));
    let listen = json!("follow");
    s.v2026_request_with_id(
        listen.clone(),
        "subscriptions/listen",
        json!({"notifications": {"taskIds": [id, "not-a-task"]}}),
        tasks(),
    );
    let ack = s.wait_for("the acknowledgement", |m| m["method"] == "notifications/subscriptions/acknowledged");
    assert_eq!(ack["params"]["notifications"]["taskIds"], json!([id, "not-a-task"]), "{ack}");
    let waiting = poll_until(&mut s, &id, "input_required", status_is("input_required"));
    let key = result(&waiting)["inputRequests"].as_object().unwrap().keys().next().unwrap().clone();
    s.v2026_call_with(
        "tasks/update",
        json!({"taskId": id, "inputResponses": {key: {"action": "accept", "content": {"approve": false}}}}),
        tasks(),
    );
    let done = s.wait_for("the completed task on the listen stream", |m| {
        m["method"] == "notifications/tasks" && m["params"]["status"] == "completed"
    });
    assert_eq!(subscription_tag(&done), Some(&listen), "{done}");
    assert_eq!(done["params"]["taskId"], json!(id));
    assert_eq!(done["params"]["result"]["content"][0]["text"], "the order: refused");
    // Tasks the stream did not name are not sent to it.
    let other = start(&mut s, "task_sleep", json!({"ms": 10}));
    poll_until(&mut s, &other, "completed", status_is("completed"));
    let seen = s.drain(Duration::from_millis(100));
    assert!(!seen.iter().any(|m| m["params"]["taskId"] == json!(other)), "{seen:?}");
}

#[test]
fn a_task_whose_ttl_runs_out_is_stopped_and_forgotten() {
    let mut s = Server::spawn_with({
        let mut c = std::process::Command::new(testbed());
        c.env("TESTBED_TASK_TTL_MS", "300");
        c
    });
    let id = start(&mut s, "task_sleep", json!({"ms": 20_000}));
    assert_eq!(result(&get(&mut s, &id))["ttlMs"], 300);
    assert!(s.wait_stderr(&format!("TASK_ABORTED {id}"), WAIT), "the handler stops when the TTL ends");
    poll_until(&mut s, &id, "forgotten", |r| r.get("error").is_some_and(|e| e["code"] == -32602));
}

// ---- over HTTP ----

/// Posts a 2026 request and returns the one JSON-RPC answer (JSON or the response of an SSE stream), with its status.
async fn post(client: &Client, body: &Value) -> (u16, Value) {
    post_with(client, body, &[]).await
}

async fn post_with(client: &Client, body: &Value, overrides: &[(&str, Option<&str>)]) -> (u16, Value) {
    let response = client.v2026_send_with(body, overrides).await;
    let status = response.status().as_u16();
    let answer = Body::of(response).await.v2026_response(&body["id"], body["method"].as_str().unwrap()).await;
    (status, answer)
}

fn task_request(id: u64, method: &str, task: &str) -> Value {
    v2026::request(id, method, json!({"taskId": task}), tasks())
}

#[tokio::test]
async fn over_http_a_task_outlives_its_post_and_is_routed_by_its_id() {
    let server = HttpServer::start(&[]);
    let client = server.client();
    let call = v2026::request(1, "tools/call", json!({"name": "task_sleep", "arguments": {"ms": 400}}), tasks());
    let (status, created) = post(&client, &call).await;
    assert_eq!((status, created["result"]["resultType"].as_str()), (200, Some("task")), "{created}");
    let id = created["result"]["taskId"].as_str().unwrap().to_owned();
    // The POST is over; the task runs on.
    let deadline = Instant::now() + WAIT;
    let done = loop {
        let (_, r) = post(&client, &task_request(2, "tasks/get", &id)).await;
        if r["result"]["status"] == "completed" {
            break r;
        }
        assert!(Instant::now() < deadline, "{r}");
        tokio::time::sleep(Duration::from_millis(30)).await;
    };
    assert_eq!(done["result"]["result"]["content"][0]["text"], "slept 400 ms");
    // Mcp-Name is the task id.
    let wrong = post_with(&client, &task_request(3, "tasks/get", &id), &[("mcp-name", Some("another-task"))]).await;
    assert_eq!((wrong.0, error_code(&wrong.1)), (400, -32020), "{wrong:?}");
    let missing = post_with(&client, &task_request(4, "tasks/get", &id), &[("mcp-name", None)]).await;
    assert_eq!((missing.0, error_code(&missing.1)), (400, -32020), "{missing:?}");
    let undeclared = v2026::request(5, "tasks/get", json!({"taskId": id}), json!({}));
    let (status, refused) = post(&client, &undeclared).await;
    assert_eq!((status, error_code(&refused)), (400, -32021), "{refused}");
}

#[tokio::test]
async fn over_http_tasks_cancel_stops_the_handler() {
    let server = HttpServer::start(&[]);
    let client = server.client();
    let call = v2026::request(1, "tools/call", json!({"name": "task_sleep", "arguments": {"ms": 20_000}}), tasks());
    let (_, created) = post(&client, &call).await;
    let id = created["result"]["taskId"].as_str().unwrap().to_owned();
    assert!(server.wait_stderr_line(&["TASK_START", &id], WAIT).await, "{}", server.stderr_text());
    let (status, ack) = post(&client, &task_request(2, "tasks/cancel", &id)).await;
    assert_eq!((status, ack["result"]["resultType"].as_str()), (200, Some("complete")), "{ack}");
    assert!(server.wait_stderr_line(&["TASK_ABORTED", &id], WAIT).await, "{}", server.stderr_text());
    let (_, after) = post(&client, &task_request(3, "tasks/get", &id)).await;
    assert_eq!(after["result"]["status"], "cancelled", "{after}");
}

/// A task tool for the in-process server below.
#[mcp::tool(task = "optional")]
async fn slow(ms: u64) -> String {
    tokio::time::sleep(Duration::from_millis(ms)).await;
    format!("slow {ms}")
}

#[tokio::test]
async fn a_task_belongs_to_the_principal_that_created_it() {
    async fn auth(mut request: axum::extract::Request, next: axum::middleware::Next) -> axum::response::Response {
        let user = request.headers().get("authorization").and_then(|v| v.to_str().ok()).map(str::to_owned);
        if let Some(user) = user.and_then(|u| u.strip_prefix("Bearer ").map(str::to_owned)) {
            request.extensions_mut().insert(mcp::AuthInfo::new(user, vec![]));
        }
        next.run(request).await
    }
    let server = mcp::Server::builder().tool::<slow>().build().unwrap();
    let app = server.http_router(mcp::HttpOptions::new()).layer(axum::middleware::from_fn(auth));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, app).await });
    let client = Client { http: reqwest::Client::new(), url: format!("http://{addr}/mcp"), session: None };
    let as_user = |user: &'static str, body: Value| {
        let client = &client;
        async move {
            let mut request = client.http.post(&client.url).body(body.to_string());
            for (name, value) in common::http::v2026_headers(&body) {
                request = request.header(name, value);
            }
            let response = request.header("authorization", format!("Bearer {user}")).send().await.unwrap();
            Body::of(response).await.v2026_response(&body["id"], body["method"].as_str().unwrap()).await
        }
    };
    let call = v2026::request(1, "tools/call", json!({"name": "slow", "arguments": {"ms": 50}}), tasks());
    let created = as_user("alice", call).await;
    let id = created["result"]["taskId"].as_str().unwrap().to_owned();
    let mine = as_user("alice", task_request(2, "tasks/get", &id)).await;
    assert_eq!(mine["result"]["taskId"], json!(id), "{mine}");
    for (n, method) in ["tasks/get", "tasks/cancel", "tasks/update"].into_iter().enumerate() {
        let mut body = task_request(10 + n as u64, method, &id);
        body["params"]["inputResponses"] = json!({});
        let theirs = as_user("bob", body).await;
        assert_eq!(error_code(&theirs), -32602, "bob cannot {method} alice's task: {theirs}");
    }
}
