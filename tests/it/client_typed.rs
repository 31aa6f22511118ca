//! The in-process client (`Client::in_process`, `ClientBuilder::in_process`) against servers built in the test, in
//! both eras: calls, questions answered by the builder's handlers, cancellation by drop, the session's end on
//! `close()` and on drop; and the typed lists (`Tool`, `Prompt`, `Resource`, `ResourceTemplate`) over stdio against
//! the testbed, paged (`TESTBED_PAGE_SIZE`), whole, by page and as a `Stream`, with the raw JSON still reachable.

use crate::common;

use std::pin::Pin;
use std::sync::{Arc, Weak};
use std::time::{Duration, Instant};

use common::testbed;
use mcp::client::{Client, EraChoice, Error, Prompt, Resource, ResourceTemplate, Tool};
use mcp::{Context, State};
use serde_json::{json, Value};
use tokio::sync::mpsc;

const WAIT: Duration = Duration::from_secs(10);

const ERAS: [EraChoice; 3] = [EraChoice::Auto, EraChoice::V2025, EraChoice::V2026];

/// Add two numbers.
#[mcp::tool(title = "Adder", read_only)]
fn add(a: i64, b: i64) -> String {
    (a + b).to_string()
}

/// A person, as a form.
#[derive(serde::Deserialize, schemars::JsonSchema)]
struct Person {
    /// Your name.
    name: String,
}

/// Ask the user's name.
#[mcp::tool]
async fn who(ctx: &Context) -> Result<String, mcp::ask::AskError> {
    Ok(match ctx.elicit::<Person>("Who are you?").await? {
        mcp::ask::Elicitation::Accept(p) => format!("Hello, {}", p.name),
        _ => "nobody".into(),
    })
}

/// Greet someone.
#[mcp::prompt(title = "Greeting")]
fn greet(
    /// Who to greet.
    name: String,
) -> String {
    format!("Hello, {name}!")
}

/// What the `wait` tool tells the test: it started, and its future was dropped (cancelled) or it finished.
struct Probe {
    started: mpsc::UnboundedSender<()>,
    ended: mpsc::UnboundedSender<&'static str>,
}

/// Sends "dropped" when the handler's future is dropped before it finishes.
struct OnDrop(Option<mpsc::UnboundedSender<&'static str>>);

impl Drop for OnDrop {
    fn drop(&mut self) {
        if let Some(ended) = self.0.take() {
            let _ = ended.send("dropped");
        }
    }
}

/// Wait `ms` milliseconds.
#[mcp::tool]
async fn wait(ms: u64, probe: &State<Probe>) -> &'static str {
    let _ = probe.started.send(());
    let mut guard = OnDrop(Some(probe.ended.clone()));
    tokio::time::sleep(Duration::from_millis(ms)).await;
    guard.0 = None;
    let _ = probe.ended.send("finished");
    "waited"
}

/// A witness in the server's state: while any part of the server is alive, so is it.
struct Witness(#[allow(dead_code)] Arc<()>);

struct Probed {
    server: mcp::Server,
    started: mpsc::UnboundedReceiver<()>,
    ended: mpsc::UnboundedReceiver<&'static str>,
}

fn server() -> Probed {
    let (started_tx, started) = mpsc::unbounded_channel();
    let (ended_tx, ended) = mpsc::unbounded_channel();
    let server = mcp::Server::builder()
        .name("in-process")
        .version("1.2.3")
        .tool::<add>()
        .tool::<who>()
        .tool::<wait>()
        .prompt::<greet>()
        .state(Probe { started: started_tx, ended: ended_tx })
        .build()
        .unwrap();
    Probed { server, started, ended }
}

fn builder(era: EraChoice) -> mcp::client::ClientBuilder {
    Client::builder().name("client-typed").era(era).on_elicitation(|params: Value| async move {
        assert_eq!(params["message"], "Who are you?");
        Ok(json!({"action": "accept", "content": {"name": "Ada"}}))
    })
}

#[tokio::test]
async fn an_in_process_client_calls_the_tools_of_a_server_built_in_the_test_in_both_eras() {
    let probed = server();
    for era in ERAS {
        let client = builder(era).in_process(probed.server.clone()).await.unwrap();
        let why = format!("{era:?}");
        let expected = if era == EraChoice::V2025 { "2025-11-25" } else { "2026-07-28" };
        assert_eq!(client.protocol_version(), expected, "{why}");
        assert_eq!(
            (client.server_info().name.as_str(), client.server_info().version.as_str()),
            ("in-process", "1.2.3")
        );

        let sum = client.call_tool("add", json!({"a": 2, "b": 3})).await.unwrap();
        assert_eq!(sum.text(), Some("5"), "{why}: {:?}", sum.raw);
        // The builder's handlers answer the server's questions: a request in 2025, an input_required round in 2026.
        let hello = client.call_tool("who", json!({})).await.unwrap();
        assert_eq!(hello.text(), Some("Hello, Ada"), "{why}: {:?}", hello.raw);
        let bad = client.call_tool("add", json!({"a": "two"})).await;
        assert!(bad.as_ref().map_or_else(|e| e.code() == Some(-32602), |r| r.is_error()), "{why}: {bad:?}");

        let tools = client.list_tools().await.unwrap();
        let mut names: Vec<&str> = tools.iter().map(|t| t.name.as_str()).collect();
        names.sort_unstable();
        assert_eq!(names, ["add", "wait", "who"], "{why}");
        let add = tools.iter().find(|t| t.name == "add").unwrap();
        assert_eq!((add.title.as_deref(), add.display_name()), (Some("Adder"), "Adder"), "{why}");
        assert_eq!(add.description.as_deref(), Some("Add two numbers."), "{why}");
        assert_eq!(add.annotations.as_ref().and_then(|a| a.read_only_hint), Some(true), "{why}");
        assert_eq!(add.input_schema["required"], json!(["a", "b"]), "{why}");
        assert_eq!(add.raw()["inputSchema"], add.input_schema, "{why}");

        let prompts = client.list_prompts().await.unwrap();
        assert_eq!(prompts.len(), 1, "{why}");
        assert_eq!((prompts[0].name.as_str(), prompts[0].display_name()), ("greet", "Greeting"), "{why}");
        assert_eq!(prompts[0].arguments[0].name, "name", "{why}");
        assert_eq!(prompts[0].arguments[0].description.as_deref(), Some("Who to greet."), "{why}");
        let greeting = client.get_prompt("greet", json!({"name": "Ada"})).await.unwrap();
        assert_eq!(greeting["messages"][0]["content"]["text"], "Hello, Ada!", "{why}");
        // Typed: the messages as the protocol's types, and the first text.
        assert_eq!(greeting.text(), Some("Hello, Ada!"), "{why}");
        let messages = greeting.messages().unwrap();
        assert_eq!(messages.len(), 1, "{why}");
        assert_eq!(messages[0].role, mcp::Role::User, "{why}");
        client.close().await;
    }
}

#[tokio::test]
async fn client_in_process_connects_with_the_defaults() {
    let client = Client::in_process(server().server).await.unwrap();
    assert!(client.era() == mcp::Era::V2026, "Auto finds the 2026 era of the server's stream transport");
    assert_eq!(client.call_tool("add", json!({"a": 1, "b": 1})).await.unwrap().text(), Some("2"));
}

#[tokio::test]
async fn dropping_an_in_process_call_cancels_it_on_the_server_in_both_eras() {
    let mut probed = server();
    for era in [EraChoice::V2025, EraChoice::V2026] {
        let client = builder(era).in_process(probed.server.clone()).await.unwrap();
        let call = client.call_tool("wait", json!({"ms": 30_000}));
        tokio::select! {
            outcome = call => panic!("{era:?}: the call ended before it was dropped: {outcome:?}"),
            started = tokio::time::timeout(WAIT, probed.started.recv()) => started.unwrap().unwrap(),
        }
        // The call was dropped at the end of the select: the server's handler is cancelled.
        let dropped_at = Instant::now();
        let ended = tokio::time::timeout(WAIT, probed.ended.recv()).await.unwrap().unwrap();
        assert_eq!(ended, "dropped", "{era:?}");
        assert!(dropped_at.elapsed() < Duration::from_secs(5), "{era:?}");
        // The connection goes on.
        assert_eq!(client.call_tool("add", json!({"a": 1, "b": 2})).await.unwrap().text(), Some("3"), "{era:?}");
        // And a timeout is the same drop.
        let timed_out = client.call_tool("wait", json!({"ms": 30_000})).timeout(Duration::from_millis(200)).await;
        assert!(matches!(timed_out, Err(Error::Timeout(_))), "{era:?}: {timed_out:?}");
        tokio::time::timeout(WAIT, probed.started.recv()).await.unwrap().unwrap();
        assert_eq!(tokio::time::timeout(WAIT, probed.ended.recv()).await.unwrap(), Some("dropped"), "{era:?}");
    }
}

#[tokio::test]
async fn close_answers_what_is_in_flight_and_ends_the_session() {
    let mut probed = server();
    for era in [EraChoice::V2025, EraChoice::V2026] {
        let client = builder(era).in_process(probed.server.clone()).await.unwrap();
        let other = client.clone();
        let in_flight = tokio::spawn(async move { other.call_tool("wait", json!({"ms": 200})).await });
        tokio::time::timeout(WAIT, probed.started.recv()).await.unwrap().unwrap();
        let later = client.clone();
        // The server sees the end of its input, answers the call in flight, and ends the session.
        tokio::time::timeout(WAIT, client.close()).await.expect("close() returns once the session has ended");
        let answered = in_flight.await.unwrap().unwrap();
        assert_eq!(answered.text(), Some("waited"), "{era:?}");
        assert_eq!(probed.ended.recv().await, Some("finished"), "{era:?}");
        let after = later.call_tool("add", json!({"a": 1, "b": 2})).await;
        assert!(matches!(after, Err(Error::Closed)), "{era:?}: {after:?}");
    }
}

#[tokio::test]
async fn dropping_the_last_client_ends_the_in_process_session() {
    for era in [EraChoice::V2025, EraChoice::V2026] {
        let alive = Arc::new(());
        let witness: Weak<()> = Arc::downgrade(&alive);
        let server = mcp::Server::builder().tool::<add>().state(Witness(alive)).build().unwrap();
        // The session owns the only handle on the server.
        let client = builder(era).in_process(server).await.unwrap();
        assert_eq!(client.call_tool("add", json!({"a": 1, "b": 2})).await.unwrap().text(), Some("3"));
        let clone = client.clone();
        drop(client);
        assert!(witness.upgrade().is_some(), "{era:?}: a clone keeps the session");
        drop(clone);
        let deadline = Instant::now() + WAIT;
        while witness.upgrade().is_some() {
            assert!(Instant::now() < deadline, "{era:?}: the session outlived the client");
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    }
}

/// The testbed with pages of `size` items.
async fn paged_testbed(era: EraChoice, size: usize) -> Client {
    let mut command = tokio::process::Command::new(testbed());
    command.env("TESTBED_PAGE_SIZE", size.to_string());
    Client::builder().era(era).on_stderr(|_| {}).stdio(command).await.expect("the testbed starts")
}

/// `Stream::poll_next`, through the `futures_core::Stream` trait (what stream combinators build on).
async fn poll_next<S: futures_core::Stream + Unpin>(stream: &mut S) -> Option<S::Item> {
    std::future::poll_fn(|cx| Pin::new(&mut *stream).poll_next(cx)).await
}

#[tokio::test]
async fn typed_lists_over_stdio_page_through_the_testbed_in_both_eras() {
    for era in [EraChoice::V2025, EraChoice::V2026] {
        let why = format!("{era:?}");
        let client = paged_testbed(era, 2).await;

        // Typed, every page; the same items, in the same order, as the untyped pages.
        let tools: Vec<Tool> = client.list_tools().await.unwrap();
        let raw = client.list_all("tools/list").await.unwrap();
        assert!(tools.len() > 10, "{why}: {}", tools.len());
        assert_eq!(tools.iter().map(Tool::raw).collect::<Vec<_>>(), raw.iter().collect::<Vec<_>>(), "{why}");

        // Paged: two items a page, each page's cursor leading to the next.
        let mut pages = client.list::<Tool>().pages();
        let mut paged = Vec::new();
        let mut count = 0;
        while let Some(page) = pages.next().await {
            let page = page.unwrap();
            assert!(page.items.len() <= 2, "{why}");
            count += 1;
            paged.extend(page.items.into_iter().map(|t| t.name));
        }
        assert_eq!(count, tools.len().div_ceil(2), "{why}");
        assert_eq!(paged, tools.iter().map(|t| t.name.clone()).collect::<Vec<_>>(), "{why}");
        let first = client.list::<Tool>().page(None).await.unwrap();
        let cursor = first.next_cursor.expect("a first page of two has a next cursor");
        let second = client.list::<Tool>().page(Some(&cursor)).await.unwrap();
        assert_eq!(second.items[0].name, tools[2].name, "{why}");

        // The testbed's `add`: title, annotations, schemas.
        let add = tools.iter().find(|t| t.name == "add").unwrap();
        assert_eq!(add.display_name(), "Adder", "{why}");
        let hints = add.annotations.clone().unwrap();
        assert_eq!(
            (hints.read_only_hint, hints.idempotent_hint, hints.open_world_hint),
            (Some(true), Some(true), Some(false))
        );
        assert_eq!(add.input_schema["type"], "object", "{why}");
        assert_eq!(add.output_schema.as_ref().map(|s| &s["type"]), Some(&json!("object")), "{why}");
        assert_eq!(add.raw()["title"], "Adder", "{why}");
        // `execution.taskSupport` is a 2025-11-25 field.
        let task = tools.iter().find(|t| t.task_support == Some(mcp::TaskSupport::Optional));
        assert_eq!(task.is_some(), era == EraChoice::V2025, "{why}");

        let prompts: Vec<Prompt> = client.list_prompts().await.unwrap();
        let greeting = prompts.iter().find(|p| p.name == "greeting").unwrap();
        assert_eq!(greeting.title.as_deref(), Some("Greeting"), "{why}");
        assert_eq!(greeting.icons[0].src, "https://example.com/wave.png", "{why}");
        assert_eq!(greeting.arguments[0].name, "name", "{why}");
        assert_eq!(greeting.arguments[0].required, Some(true), "{why}");

        let resources: Vec<Resource> = client.list_resources().await.unwrap();
        let static_text = resources.iter().find(|r| r.uri == "test://static").unwrap();
        assert_eq!((static_text.mime_type.as_deref(), static_text.size), (Some("text/plain"), Some(5)), "{why}");
        let annotations = static_text.annotations.clone().unwrap();
        assert_eq!((annotations.audience, annotations.priority), (Some(vec![mcp::Role::User]), Some(0.9)), "{why}");
        assert!(resources.iter().any(|r| r.uri == "files:///docs/a.txt"), "{why}: a listed resource of a template");

        let templates: Vec<ResourceTemplate> = client.list_resource_templates().await.unwrap();
        let items = templates.iter().find(|t| t.uri_template == "test://items/{id}").unwrap();
        assert_eq!(items.mime_type.as_deref(), Some("application/json"), "{why}");
        assert_eq!(items.raw()["uriTemplate"], "test://items/{id}", "{why}");
        client.close().await;
    }
}

#[tokio::test]
async fn a_list_streams_its_items_page_after_page_and_can_be_left_early() {
    for era in [EraChoice::V2025, EraChoice::V2026] {
        let why = format!("{era:?}");
        let client = paged_testbed(era, 3).await;
        let tools = client.list_tools().await.unwrap();

        // Through the inherent `next`, no stream crate needed.
        let mut stream = client.list::<Tool>().stream();
        let mut streamed = Vec::new();
        while let Some(tool) = stream.next().await {
            streamed.push(tool.unwrap());
        }
        assert_eq!(streamed, tools, "{why}");
        assert!(stream.next().await.is_none(), "{why}: a finished stream stays finished");

        // Through `futures_core::Stream`, fresh (never from the kept 2026 pages).
        let mut stream = client.list::<Tool>().fresh().stream();
        let mut names = Vec::new();
        while let Some(tool) = poll_next(&mut stream).await {
            names.push(tool.unwrap().name);
        }
        assert_eq!(names, tools.iter().map(|t| t.name.clone()).collect::<Vec<_>>(), "{why}");

        // Left after four items (two pages of three): the rest is never fetched, and the client goes on.
        let mut stream = client.list::<Tool>().stream();
        for tool in &tools[..4] {
            assert_eq!(&stream.next().await.unwrap().unwrap(), tool, "{why}");
        }
        drop(stream);
        let mut templates = client.list::<ResourceTemplate>().stream();
        assert!(poll_next(&mut templates).await.unwrap().is_ok(), "{why}");
        assert_eq!(client.call_tool("echo", json!({"text": "on"})).await.unwrap().text(), Some("on"), "{why}");
    }
}

#[tokio::test]
async fn a_failing_page_ends_the_stream_with_its_error() {
    let client = paged_testbed(EraChoice::V2025, 2).await;
    let mut stream = client.list::<Tool>().stream();
    stream.next().await.unwrap().unwrap();
    stream.next().await.unwrap().unwrap();
    // The connection ends between two pages: the next page fails, and the stream ends with its error.
    client.clone().close().await;
    let failed = stream.next().await.unwrap();
    assert!(failed.is_err(), "{failed:?}");
    assert!(stream.next().await.is_none());
}
