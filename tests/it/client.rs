//! `mcp::client` against the testbed, on every pair of transport (stdio, Streamable HTTP) and era (2025-11-25,
//! 2026-07-28): the handshake, lists, tools, prompts, resources, progress, questions from the server answered by
//! the client's handlers, typed structured output, and cancellation by drop and by timeout observed on the server.

use crate::common;

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use common::http::HttpServer;
use common::testbed;
use mcp::client::{Client, ClientBuilder, EraChoice, Error, ListenFilter, Started};
use serde_json::{json, Value};

const WAIT: Duration = Duration::from_secs(10);

#[derive(Clone, Copy, Debug)]
enum Transport {
    Stdio,
    Http,
}

/// A running testbed the client can reach, and a way to read its stderr.
enum Target {
    /// The child's stderr goes to this file.
    Stdio(std::path::PathBuf),
    Http(HttpServer),
}

impl Drop for Target {
    fn drop(&mut self) {
        if let Target::Stdio(path) = self {
            let _ = std::fs::remove_file(path);
        }
    }
}

impl Target {
    fn stderr(&self) -> String {
        match self {
            Target::Stdio(path) => std::fs::read_to_string(path).unwrap_or_default(),
            Target::Http(server) => server.stderr_text(),
        }
    }

    async fn wait_stderr(&self, needle: &str) -> bool {
        let deadline = Instant::now() + WAIT;
        while Instant::now() < deadline {
            if self.stderr().contains(needle) {
                return true;
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        false
    }
}

fn builder(era: EraChoice) -> ClientBuilder {
    Client::builder()
        .name("client-tests")
        .era(era)
        .on_elicitation(|params: Value| async move {
            let message = params["message"].as_str().unwrap_or_default();
            if message.starts_with("Approve") {
                return Ok(json!({"action": "accept", "content": {"approve": true}}));
            }
            Ok(json!({"action": "accept", "content": {"name": "Ada", "age": 36}}))
        })
        .on_sampling(|_| async {
            Ok(json!({"role": "assistant", "content": {"type": "text", "text": "short"}, "model": "m"}))
        })
        .on_roots(|_| async { Ok(json!({"roots": [{"uri": "file:///work", "name": "work"}]})) })
}

async fn connect(transport: Transport, era: EraChoice) -> (Client, Target) {
    connect_with(transport, builder(era)).await
}

async fn connect_with(transport: Transport, builder: ClientBuilder) -> (Client, Target) {
    match transport {
        Transport::Stdio => {
            static NEXT: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
            let n = NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            let path = std::env::temp_dir().join(format!("mcp-client-test-{}-{n}.log", std::process::id()));
            let command = tokio::process::Command::new(testbed());
            // The client owns the child and pipes its stderr; each line goes to the file.
            let file = Mutex::new(std::fs::File::create(&path).unwrap());
            let builder = builder.on_stderr(move |line| {
                use std::io::Write;
                let _ = writeln!(file.lock().unwrap(), "{line}");
            });
            let client = builder.stdio(command).await.expect("connect over stdio");
            (client, Target::Stdio(path))
        }
        Transport::Http => {
            let server = HttpServer::start(&[]);
            let client = builder.http(server.url.clone()).await.expect("connect over HTTP");
            (client, Target::Http(server))
        }
    }
}

const PAIRS: [(Transport, EraChoice); 4] = [
    (Transport::Stdio, EraChoice::V2025),
    (Transport::Stdio, EraChoice::V2026),
    (Transport::Http, EraChoice::V2025),
    (Transport::Http, EraChoice::V2026),
];

#[tokio::test]
async fn auto_finds_the_2026_era_and_a_pinned_era_is_kept() {
    for transport in [Transport::Stdio, Transport::Http] {
        let (auto, _t) = connect(transport, EraChoice::Auto).await;
        assert!(auto.era() == mcp::Era::V2026, "{transport:?}");
        assert_eq!(auto.protocol_version(), "2026-07-28");
        assert_eq!(auto.server_info().name, "testbed");
        let (legacy, _t) = connect(transport, EraChoice::V2025).await;
        assert!(legacy.era() == mcp::Era::V2025);
        assert_eq!(legacy.protocol_version(), "2025-11-25");
        assert!(legacy.server_capabilities()["tools"].is_object());
    }
}

#[tokio::test]
async fn every_method_works_on_every_transport_and_era() {
    for (transport, era) in PAIRS {
        let (client, target) = connect(transport, era).await;
        let why = format!("{transport:?} {era:?}");
        let tools = client.list_tools().await.unwrap();
        assert!(tools.iter().any(|t| t.name == "echo"), "{why}");
        let echo = client.call_tool("echo", json!({"text": "hi"})).await.unwrap();
        assert_eq!(echo.text(), Some("hi"), "{why}");
        assert!(!echo.is_error());

        #[derive(serde::Deserialize)]
        struct Sum {
            total: i64,
        }
        let sum = client.call_tool("add", json!({"numbers": [2, 3, 5]})).await.unwrap();
        assert_eq!(sum.json::<Sum>().unwrap().total, 10, "{why}");
        let failed = client.call_tool("fail", json!({"reason": "no"})).await.unwrap();
        assert!(failed.is_error() && failed.json::<Sum>().is_err(), "{why}");
        // A custom method.
        let custom = client.request("testbed/sum", json!({"pair": {"a": 2, "b": 3}, "scale": 10})).await.unwrap();
        assert_eq!(custom["sum"], 50, "{why}: {custom}");

        let prompt = client.get_prompt("greeting", json!({"name": "Ada"})).await.unwrap();
        assert_eq!(prompt["messages"][0]["content"]["text"], "Hello, Ada!", "{why}: {prompt}");
        let read = client.read_resource("test://static").await.unwrap();
        assert_eq!(read["contents"][0]["text"], "hello", "{why}");
        assert_eq!(read.text(), Some("hello"), "{why}");
        match &read.contents().unwrap()[0] {
            mcp::ResourceContents::Text { uri, text, .. } => {
                assert_eq!((uri.as_str(), text.as_str()), ("test://static", "hello"))
            }
            other => panic!("{why}: {other:?}"),
        }
        let bytes = client.read_resource("test://bytes").await.unwrap();
        assert!(bytes.bytes().is_some_and(|b| !b.is_empty()), "{why}: {bytes}");
        let templates = client.list_resource_templates().await.unwrap();
        assert!(!templates.is_empty(), "{why}");
        let completion =
            client.complete(json!({"type": "ref/resource", "uri": "test://items/{id}"}), "id", "14").await.unwrap();
        assert!(completion["completion"]["values"].as_array().is_some_and(|v| !v.is_empty()), "{why}");
        client.ping().await.unwrap();
        let unknown = client.call_tool("no_such_tool", json!({})).await.unwrap_err();
        assert_eq!(unknown.code(), Some(-32602), "{why}: {unknown}");
        drop(target);
    }
}

#[tokio::test]
async fn questions_from_the_server_are_answered_by_the_handlers_in_both_eras() {
    for (transport, era) in PAIRS {
        let (client, _target) = connect(transport, era).await;
        let why = format!("{transport:?} {era:?}");
        let answer = client.call_tool("ask_name", json!({})).await.unwrap();
        assert_eq!(answer.text(), Some("Hello, Ada (Some(36))"), "{why}: {:?}", answer.raw);
        let summary = client.call_tool("summarize", json!({"text": "a long text"})).await.unwrap();
        assert!(summary.text().unwrap_or_default().contains("short"), "{why}: {:?}", summary.raw);
    }
}

#[tokio::test]
async fn progress_reaches_the_callback_and_an_idle_timeout_is_reset_by_it() {
    for (transport, era) in PAIRS {
        let (client, _target) = connect(transport, era).await;
        let seen = Arc::new(Mutex::new(Vec::new()));
        let record = seen.clone();
        let result = client
            .call_tool("task_sleep", json!({"ms": 600}))
            .on_progress(move |p| record.lock().unwrap().push(p.progress))
            .idle_timeout(Duration::from_millis(300))
            .await
            .unwrap_or_else(|e| panic!("{transport:?} {era:?}: {e}"));
        assert_eq!(result.text(), Some("slept 600 ms"));
        let seen = seen.lock().unwrap().clone();
        assert!(seen.len() >= 5, "{transport:?} {era:?}: progress {seen:?}");
        assert!(seen.windows(2).all(|w| w[0] < w[1]), "{seen:?}");
    }
}

#[tokio::test]
async fn a_timeout_cancels_the_request_on_the_server() {
    for (transport, era) in PAIRS {
        let (client, target) = connect(transport, era).await;
        let started = Instant::now();
        let outcome = client.call_tool("sleep", json!({"ms": 20_000})).timeout(Duration::from_millis(300)).await;
        assert!(matches!(outcome, Err(Error::Timeout(_))), "{transport:?} {era:?}: {outcome:?}");
        assert!(started.elapsed() < Duration::from_secs(5));
        assert!(target.wait_stderr("SLEEP_ABORTED").await, "{transport:?} {era:?}: {}", target.stderr());
        // The connection is still good.
        assert_eq!(client.call_tool("echo", json!({"text": "after"})).await.unwrap().text(), Some("after"));
    }
}

#[tokio::test]
async fn dropping_a_call_cancels_it_on_the_server() {
    for (transport, era) in PAIRS {
        let (client, target) = connect(transport, era).await;
        let caller = client.clone();
        let call = tokio::spawn(async move { caller.call_tool("sleep", json!({"ms": 20_000})).await });
        assert!(target.wait_stderr("SLEEP_START").await, "{transport:?} {era:?}: {}", target.stderr());
        call.abort();
        let dropped = Instant::now();
        assert!(target.wait_stderr("SLEEP_ABORTED").await, "{transport:?} {era:?}: the drop sent nothing");
        assert!(dropped.elapsed() < Duration::from_secs(5));
        assert_eq!(client.call_tool("echo", json!({"text": "still"})).await.unwrap().text(), Some("still"));
    }
}

#[tokio::test]
async fn many_tasks_call_through_one_client_at_once() {
    for (transport, era) in PAIRS {
        let (client, _target) = connect(transport, era).await;
        let calls = (0..32).map(|i| {
            let client = client.clone();
            tokio::spawn(async move { client.call_tool("echo", json!({"text": format!("n{i}")})).await })
        });
        for (i, call) in calls.enumerate() {
            let result = call.await.unwrap().unwrap();
            assert_eq!(result.text(), Some(format!("n{i}").as_str()), "{transport:?} {era:?}");
        }
    }
}

#[test]
fn the_client_example_rebuilds_the_bookshop_index() {
    let out = std::process::Command::new(common::example("client")).output().expect("run examples/client");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{stdout}\n{}", String::from_utf8_lossy(&out.stderr));
    assert!(stdout.contains("(2026-07-28)") && stdout.contains("Indexed 4 books."), "{stdout}");
    assert!(stdout.contains("search is online"), "{stdout}");
}

#[tokio::test]
async fn tools_run_as_tasks_in_both_eras() {
    for (transport, era) in PAIRS {
        let why = format!("{transport:?} {era:?}");
        let (client, target) = connect_with(transport, builder(era).tasks()).await;
        // Called as a task: followed to its end, statuses seen on the way.
        let Started::Task(task) = client.call_tool_as_task("task_sleep", json!({"ms": 300}), None).await.unwrap()
        else {
            panic!("{why}: no task");
        };
        let mut statuses = Vec::new();
        let done = task.wait_with(|s| statuses.push(s.status.clone())).await.unwrap();
        assert_eq!(done.text(), Some("slept 300 ms"), "{why}");
        assert_eq!(statuses.last().map(String::as_str), Some("completed"), "{why}: {statuses:?}");
        // Its question answered by the client's handler (2025: a request; 2026: inputRequests and tasks/update).
        let Started::Task(asking) =
            client.call_tool_as_task("task_approve", json!({"what": "the refund"}), None).await.unwrap()
        else {
            panic!("{why}: no task");
        };
        assert_eq!(asking.wait().await.unwrap().text(), Some("the refund: approved"), "{why}");
        // Cancelled: the handler stops, and waiting says so.
        let Started::Task(long) = client.call_tool_as_task("task_sleep", json!({"ms": 20_000}), None).await.unwrap()
        else {
            panic!("{why}: no task");
        };
        assert!(target.wait_stderr(&format!("TASK_START {}", long.id())).await, "{why}");
        long.cancel().await.unwrap();
        assert!(target.wait_stderr(&format!("TASK_ABORTED {}", long.id())).await, "{why}: {}", target.stderr());
        let waited = long.wait().await.unwrap_err();
        assert!(waited.to_string().contains("cancelled"), "{why}: {waited}");
        if era == EraChoice::V2025 {
            let listed = client.list_tasks().await.unwrap();
            assert_eq!(listed.len(), 3, "{why}: {listed:?}");
        }
    }
}

#[tokio::test]
async fn a_2026_call_answered_with_a_task_is_followed_and_dropping_it_cancels_the_task() {
    for transport in [Transport::Stdio, Transport::Http] {
        let (client, target) = connect_with(transport, builder(EraChoice::V2026).tasks()).await;
        let plain = client.call_tool("task_approve", json!({"what": "the order"})).await.unwrap();
        assert_eq!(plain.text(), Some("the order: approved"), "{transport:?}");
        let caller = client.clone();
        let call = tokio::spawn(async move { caller.call_tool("task_sleep", json!({"ms": 20_000})).await });
        assert!(target.wait_stderr("TASK_START").await, "{transport:?}");
        call.abort();
        assert!(target.wait_stderr("TASK_ABORTED").await, "{transport:?}: dropping the call cancels its task");
    }
}

/// Says hello (for the in-process server below).
#[mcp::tool]
fn hello() -> &'static str {
    "hello"
}

/// Says goodbye (added while the client holds a cached list).
#[mcp::tool]
fn goodbye() -> &'static str {
    "goodbye"
}

#[tokio::test]
async fn a_2026_list_is_served_from_the_client_cache_within_its_ttl() {
    let server = mcp::Server::builder()
        .tool::<hello>()
        .cache(mcp::CacheHint::new(60_000, mcp::CacheScope::Public))
        .build()
        .unwrap();
    let app = server.http_router(mcp::HttpOptions::new());
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, app).await });
    let client = Client::builder().era(EraChoice::V2026).http(format!("http://{addr}/mcp")).await.unwrap();
    assert_eq!(client.list_tools().await.unwrap().len(), 1);
    server.add_tool(<goodbye as mcp::handler::ToolItem>::DEF.clone()).unwrap();
    assert_eq!(client.list_tools().await.unwrap().len(), 1, "within its ttlMs the kept page is served");
    let fresh = client.list_page_fresh("tools/list", None).await.unwrap();
    assert_eq!(fresh.items.len(), 2, "asked fresh, the server answers");
}

#[tokio::test]
async fn a_subscription_yields_what_it_asked_for_in_both_eras() {
    for (transport, era) in PAIRS {
        let why = format!("{transport:?} {era:?}");
        let (client, _target) = connect(transport, era).await;
        let mut changes = client.listen(ListenFilter::new().tools().resource("test://static")).await.unwrap();
        assert_eq!(changes.acknowledged["toolsListChanged"], true, "{why}: {}", changes.acknowledged);
        client.call_tool("touch", json!({"uri": "test://other"})).await.unwrap();
        client.call_tool("touch", json!({"uri": "test://static"})).await.unwrap();
        client.call_tool("toggle", json!({"kind": "tool", "name": "echo", "enabled": false})).await.unwrap();
        let first = tokio::time::timeout(WAIT, changes.next()).await.unwrap().unwrap();
        assert_eq!(
            (first.method.as_str(), first.params["uri"].as_str()),
            ("notifications/resources/updated", Some("test://static")),
            "{why}: the other URI was not asked for: {first:?}"
        );
        let second = tokio::time::timeout(WAIT, changes.next()).await.unwrap().unwrap();
        assert_eq!(second.method, "notifications/tools/list_changed", "{why}");
        drop(changes);
        // The connection goes on.
        assert!(client.list_tools().await.unwrap().iter().all(|t| t.name != "echo"), "{why}");
    }
}
