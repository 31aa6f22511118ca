//! Several instances of one server act as one: what a request changes on one instance (a tool disabled, a resource
//! updated, a task cancelled) reaches the clients of the others, through the change hub and the shared task store.
//! First through a hub of the test's own (the seam is public: no Redis), then through a real `redis-server` the test
//! starts on loopback, including its restart and its absence.

use crate::common;

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use mcp::client::{Client, EraChoice, ListenFilter, Started};
use mcp::hub::{ChangeHub, Inbox, Published};
use mcp::{Context, Server, ServerBuilder, TaskSettings};
use serde_json::{json, Value};

const WAIT: Duration = Duration::from_secs(10);

/// Enables or disables a tool of the server.
#[mcp::tool]
fn toggle(name: String, enabled: bool, ctx: &Context) -> String {
    ctx.server().set_tool_enabled(&name, enabled);
    format!("{name}: {enabled}")
}

/// A tool to enable and disable.
#[mcp::tool]
fn greet() -> String {
    "hello".into()
}

/// Says a resource changed.
#[mcp::tool]
fn touch(uri: String, ctx: &Context) -> String {
    ctx.server().notify_resource_updated(&uri);
    uri
}

/// A note.
#[mcp::resource(uri = "note://one")]
fn note() -> String {
    "one".into()
}

static LONG_STARTED: AtomicUsize = AtomicUsize::new(0);
static LONG_STOPPED: AtomicUsize = AtomicUsize::new(0);

/// Runs until cancelled; counts its starts and its stops.
#[mcp::tool(task = "optional", task_poll_ms = 50)]
async fn long_task() -> String {
    struct Stopped;
    impl Drop for Stopped {
        fn drop(&mut self) {
            LONG_STOPPED.fetch_add(1, Ordering::SeqCst);
        }
    }
    let _stopped = Stopped;
    LONG_STARTED.fetch_add(1, Ordering::SeqCst);
    tokio::time::sleep(Duration::from_secs(60)).await;
    "done".into()
}

fn builder() -> ServerBuilder {
    Server::builder()
        .tool::<toggle>()
        .tool::<greet>()
        .tool::<touch>()
        .tool::<long_task>()
        .resource::<note>()
        .request_state_key([7; 32])
}

async fn client(server: &Server, era: EraChoice, seen: Arc<Mutex<Vec<String>>>) -> Client {
    Client::builder()
        .era(era)
        .on_notification(move |method, _| seen.lock().unwrap().push(method.to_owned()))
        .in_process(server.clone())
        .await
        .unwrap()
}

async fn tool_names(client: &Client) -> Vec<String> {
    let listed = client.request("tools/list", json!({})).await.unwrap();
    listed["tools"].as_array().unwrap().iter().map(|t| t["name"].as_str().unwrap().to_owned()).collect()
}

async fn eventually(what: &str, mut check: impl AsyncFnMut() -> bool) {
    let deadline = Instant::now() + WAIT;
    while !check().await {
        assert!(Instant::now() < deadline, "not within {WAIT:?}: {what}");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// A hub of the test's own: every change goes through its JSON form to every server on it.
#[derive(Clone, Default)]
struct JsonWire {
    inboxes: Arc<Mutex<Vec<Inbox>>>,
    carried: Arc<AtomicUsize>,
}

impl ChangeHub for JsonWire {
    fn publish(&self, published: &Published) {
        let text = serde_json::to_string(published).unwrap();
        self.carried.fetch_add(1, Ordering::SeqCst);
        for inbox in self.inboxes.lock().unwrap().iter() {
            inbox.deliver(serde_json::from_str(&text).unwrap());
        }
    }

    fn start(&self, inbox: Inbox) {
        self.inboxes.lock().unwrap().push(inbox);
    }
}

/// The two instances' scenario, on any hub: a tool disabled by a call on one is neither listed nor callable on
/// the other, whose 2025 session hears `tools/list_changed` and whose 2026 listener hears it too; a resource
/// updated by a call on one reaches a session subscribed to it on the other.
async fn lists_and_updates_cross(one: &Server, two: &Server) {
    let seen_two = Arc::new(Mutex::new(Vec::new()));
    let a = client(one, EraChoice::V2025, Arc::default()).await;
    let b = client(two, EraChoice::V2025, seen_two.clone()).await;
    let listener = client(two, EraChoice::V2026, Arc::default()).await;
    let mut listen = listener.listen(ListenFilter::new().tools()).await.unwrap();

    assert!(tool_names(&b).await.contains(&"greet".to_owned()));
    a.call_tool("toggle", json!({"name": "greet", "enabled": false})).await.unwrap();
    eventually("the tool disabled on one is unlisted on two", async || {
        !tool_names(&b).await.contains(&"greet".to_owned())
    })
    .await;
    let refused = b.call_tool("greet", json!({})).await;
    assert!(refused.is_err() || refused.unwrap().is_error(), "a disabled tool is not callable on two");
    eventually("two's 2025 session heard tools/list_changed", async || {
        seen_two.lock().unwrap().iter().any(|m| m == "notifications/tools/list_changed")
    })
    .await;
    let heard = tokio::time::timeout(WAIT, listen.next()).await.expect("two's listener heard").unwrap();
    assert_eq!(heard.method, "notifications/tools/list_changed");

    // And back: enabled on two, listed on one.
    b.call_tool("toggle", json!({"name": "greet", "enabled": true})).await.unwrap();
    eventually("enabled on two, listed on one", async || tool_names(&a).await.contains(&"greet".to_owned())).await;

    b.subscribe("note://one").await.unwrap();
    a.call_tool("touch", json!({"uri": "note://one"})).await.unwrap();
    eventually("two's subscriber heard the update made on one", async || {
        seen_two.lock().unwrap().iter().any(|m| m == "notifications/resources/updated")
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_hub_of_ones_own_carries_changes_between_instances_once() {
    let wire = JsonWire::default();
    let one = builder().change_hub(wire.clone()).build().unwrap();
    let two = builder().change_hub(wire.clone()).build().unwrap();
    lists_and_updates_cross(&one, &two).await;
    assert!(wire.carried.load(Ordering::SeqCst) >= 3, "every change went through the hub");
    // Each instance applied each edit once: one tool of that name, enabled, on both.
    for server in [&one, &two] {
        let names: Vec<Value> =
            server.tools_list()["tools"].as_array().unwrap().iter().map(|t| t["name"].clone()).collect();
        assert_eq!(names.iter().filter(|n| *n == "greet").count(), 1, "{names:?}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_a_hub_an_instance_keeps_its_changes() {
    let one = builder().build().unwrap();
    let two = builder().build().unwrap();
    let a = client(&one, EraChoice::V2025, Arc::default()).await;
    let b = client(&two, EraChoice::V2025, Arc::default()).await;
    a.call_tool("toggle", json!({"name": "greet", "enabled": false})).await.unwrap();
    assert!(!tool_names(&a).await.contains(&"greet".to_owned()));
    assert!(tool_names(&b).await.contains(&"greet".to_owned()));
}

// ---- Redis ----

use common::redis::RedisServer;

async fn shared(redis: &mcp::redis::Redis) -> Server {
    builder().shared(redis).build().unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn instances_sharing_a_redis_act_as_one() {
    let server = RedisServer::start();
    let redis = mcp::redis::Redis::connect(&server.url()).await.unwrap();
    let (one, two) = (shared(&redis).await, shared(&redis).await);
    // The subscriptions are made in the background: a first change may come before them.
    tokio::time::sleep(Duration::from_millis(300)).await;
    lists_and_updates_cross(&one, &two).await;

    // A task started on one, seen and cancelled on two: the handler on one stops at once.
    let a = client(&one, EraChoice::V2026, Arc::default()).await;
    let b = client(&two, EraChoice::V2026, Arc::default()).await;
    let (started_before, stopped_before) = (LONG_STARTED.load(Ordering::SeqCst), LONG_STOPPED.load(Ordering::SeqCst));
    let Started::Task(task) = a.call_tool_as_task("long_task", json!({}), None).await.unwrap() else {
        panic!("long_task answers with a task")
    };
    eventually("the task runs on one", async || LONG_STARTED.load(Ordering::SeqCst) > started_before).await;
    let on_two = b.task(task.id());
    assert_eq!(on_two.get().await.unwrap().status, "working", "two reads the task one runs");
    let cancelled_at = Instant::now();
    on_two.cancel().await.unwrap();
    eventually("the handler on one stopped", async || LONG_STOPPED.load(Ordering::SeqCst) > stopped_before).await;
    assert!(cancelled_at.elapsed() < Duration::from_secs(5), "stopped at once, not at the task's next write");
    assert_eq!(task.get().await.unwrap().status, "cancelled");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn after_a_redis_restart_changes_cross_again() {
    let mut server = RedisServer::start();
    let redis = mcp::redis::Redis::connect(&server.url()).await.unwrap();
    let (one, two) = (shared(&redis).await, shared(&redis).await);
    tokio::time::sleep(Duration::from_millis(300)).await;
    let a = client(&one, EraChoice::V2025, Arc::default()).await;
    let b = client(&two, EraChoice::V2025, Arc::default()).await;

    server.restart(Duration::from_millis(500));
    // What needs Redis while it comes back fails with an error, or works once reconnected; nothing panics.
    let enabled = AtomicBool::new(true);
    eventually("a change made on one after the restart is listed on two", async || {
        let next = !enabled.load(Ordering::SeqCst);
        enabled.store(next, Ordering::SeqCst);
        a.call_tool("toggle", json!({"name": "greet", "enabled": next})).await.unwrap();
        tokio::time::sleep(Duration::from_millis(200)).await;
        tool_names(&b).await.contains(&"greet".to_owned()) == next
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_unreachable_redis_is_an_error_naming_it() {
    let url = format!("redis://127.0.0.1:{}", common::redis::free_port());
    let error = mcp::redis::Redis::connect(&url).await.unwrap_err();
    assert!(error.to_string().contains(&url), "{error}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sharing_state_needs_one_request_state_key_for_every_instance() {
    let server = RedisServer::start();
    let redis = mcp::redis::Redis::connect(&server.url()).await.unwrap();
    let error = Server::builder().tool::<greet>().shared(&redis).build().unwrap_err();
    assert!(error.to_string().contains("MCP_REQUEST_STATE_KEY"), "{error}");
    assert!(!error.to_string().contains("  "), "one sentence, without runs of spaces: {error}");
}

/// A task whose instance died (its record left `working`, its lease run out) is failed, saying so, by the instance
/// that reads it next; a running task's lease is renewed, so it stays `working` for as long as it runs.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_task_whose_instance_died_fails_once_its_lease_ran_out() {
    use mcp::store::TaskStore;
    let server = RedisServer::start();
    let redis = mcp::redis::Redis::connect(&server.url()).await.unwrap();
    let lease = Duration::from_millis(300);
    let (one, two) = (
        builder().shared(&redis).tasks(TaskSettings::new().lease(lease)).build().unwrap(),
        builder().shared(&redis).tasks(TaskSettings::new().lease(lease)).build().unwrap(),
    );
    let a = client(&one, EraChoice::V2026, Arc::default()).await;
    let b = client(&two, EraChoice::V2026, Arc::default()).await;

    // Alive: renewed past several leases.
    let Started::Task(task) = a.call_tool_as_task("long_task", json!({}), None).await.unwrap() else {
        panic!("long_task answers with a task")
    };
    tokio::time::sleep(lease * 3 + Duration::from_millis(1_200)).await;
    assert_eq!(b.task(task.id()).get().await.unwrap().status, "working", "its instance renews its lease");
    task.cancel().await.unwrap();

    // Dead: what a killed instance leaves behind, a working record whose lease ran out.
    let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_millis() as u64;
    let orphan: mcp::store::TaskRecord = serde_json::from_value(json!({
        "id": "0123456789abcdef0123456789abcdef", "tool": "long_task", "status": "working",
        "created_at_ms": now - 10_000, "updated_at_ms": now - 10_000, "ttl_ms": 3_600_000,
        "poll_interval_ms": 50, "seq": 3, "lease_until_ms": now - 5_000,
    }))
    .unwrap();
    redis.task_store(100).create(orphan).await.unwrap();
    let seen = b.task("0123456789abcdef0123456789abcdef").get().await.unwrap();
    assert_eq!(seen.status, "failed", "{seen:?}");
    assert!(
        seen.status_message.as_deref().unwrap_or_default().contains("lease ran out"),
        "the failure says why: {seen:?}"
    );
}

// ---- 2025 sessions across instances ----

/// A name the client is asked for.
#[derive(Debug, serde::Deserialize, schemars::JsonSchema)]
struct Name {
    name: String,
}

/// Asks the client for a name, and greets it.
async fn greet_by_name(ctx: &Context) -> String {
    match ctx.elicit::<Name>("Your name?").await {
        Ok(mcp::ask::Elicitation::Accept(n)) => format!("hello {}", n.name),
        other => format!("no name: {other:?}"),
    }
}

/// Asks the client for a name.
#[mcp::tool]
async fn ask_name(ctx: &Context) -> String {
    greet_by_name(ctx).await
}

/// Two instances serving HTTP on their own ports, sharing one Redis.
async fn http_pair(redis: &mcp::redis::Redis) -> (Server, String, Server, String) {
    let mut out = Vec::new();
    for _ in 0..2 {
        let server = builder().tool::<ask_name>().shared(redis).build().unwrap();
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}/mcp", listener.local_addr().unwrap());
        tokio::spawn(server.clone().serve_http_on(listener, mcp::HttpOptions::new()));
        out.push((server, url));
    }
    let (two, one) = (out.pop().unwrap(), out.pop().unwrap());
    (one.0, one.1, two.0, two.1)
}

/// A 2025 session opened on one instance is served by another: its requests, its log level and subscriptions,
/// a cancel and an answer to the server's question that reach the instance that does not hold the request, and a
/// DELETE that ends it on both.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_2025_session_is_served_by_every_instance() {
    use common::http::{notification, request, Body, Client as Raw};
    let redis_server = RedisServer::start();
    let redis = mcp::redis::Redis::connect(&redis_server.url()).await.unwrap();
    let (_one, url_one, _two, url_two) = http_pair(&redis).await;
    tokio::time::sleep(Duration::from_millis(300)).await;

    let mut on_one = Raw { http: reqwest::Client::new(), url: url_one, session: None };
    on_one.initialize(json!({"elicitation": {}})).await;
    let on_two = Raw { url: url_two, ..on_one.clone() };

    // A request of the session, on the instance that did not open it.
    let (answer, _) = on_two.call(1, "tools/call", json!({"name": "greet", "arguments": {}})).await;
    assert_eq!(answer["result"]["content"][0]["text"], "hello", "{answer}");

    // A subscription made on two; the update made on one reaches the session's stream on one.
    let (subscribed, _) = on_two.call(2, "resources/subscribe", json!({"uri": "note://one"})).await;
    assert!(subscribed.get("result").is_some(), "{subscribed}");
    let mut stream = Body::of(on_one.get(None).await).await;
    tokio::time::sleep(Duration::from_millis(200)).await;
    on_one.call(3, "tools/call", json!({"name": "touch", "arguments": {"uri": "note://one"}})).await;
    let deadline = Instant::now() + WAIT;
    loop {
        let message = stream.next_message(deadline - Instant::now()).await.expect("the update on one's stream");
        if message["method"] == "notifications/resources/updated" {
            break;
        }
    }

    // A cancel sent to two stops the call running on one.
    let stopped_before = LONG_STOPPED.load(Ordering::SeqCst);
    let started_before = LONG_STARTED.load(Ordering::SeqCst);
    let caller = on_one.clone();
    let running = tokio::spawn(async move {
        caller.send(&request(4, "tools/call", json!({"name": "long_task", "arguments": {}}))).await
    });
    eventually("the call runs on one", async || LONG_STARTED.load(Ordering::SeqCst) > started_before).await;
    let sent = on_two.send(&notification("notifications/cancelled", json!({"requestId": 4, "reason": "enough"}))).await;
    assert_eq!(sent.status(), 202);
    eventually("one's handler stopped", async || LONG_STOPPED.load(Ordering::SeqCst) > stopped_before).await;
    running.abort();

    // The server's question, asked on one's stream, answered through two.
    let response = on_one.send(&request(5, "tools/call", json!({"name": "ask_name", "arguments": {}}))).await;
    let mut body = Body::of(response).await;
    let asked = loop {
        let message = body.next_message(WAIT).await.expect("the elicitation on one's stream");
        if message["method"] == "elicitation/create" {
            break message;
        }
    };
    let reply =
        json!({"jsonrpc": "2.0", "id": asked["id"], "result": {"action": "accept", "content": {"name": "Ada"}}});
    assert_eq!(on_two.send(&reply).await.status(), 202);
    let answered = body.response(&json!(5), "tools/call").await;
    assert_eq!(answered["result"]["content"][0]["text"], "hello Ada", "{answered}");

    // DELETE on two ends the session on one too.
    let deleted = on_two
        .http
        .delete(&on_two.url)
        .header("mcp-session-id", on_two.session.clone().unwrap())
        .header("mcp-protocol-version", "2025-11-25")
        .send()
        .await
        .unwrap();
    assert_eq!(deleted.status(), 200);
    eventually("the session is gone on one", async || {
        on_one.send(&request(6, "tools/list", json!({}))).await.status() == 404
    })
    .await;
}

// ---- behind a balancer: the client's address ----

/// A 2026 task call of `long_task` through "a balancer": the POST carries the client's address in
/// `X-Forwarded-For`.
async fn task_call_from(url: &str, forwarded_for: &str, id: i64) -> Value {
    task_call_of("long_task", url, forwarded_for, id).await
}

/// A 2026 task call of `tool` through "a balancer".
async fn task_call_of(tool: &str, url: &str, forwarded_for: &str, id: i64) -> Value {
    let body = common::v2026::request(
        id,
        "tools/call",
        json!({"name": tool, "arguments": {}}),
        json!({"extensions": {"io.modelcontextprotocol/tasks": {}}}),
    );
    let mut post = reqwest::Client::new()
        .post(url)
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream")
        .header("x-forwarded-for", forwarded_for)
        .body(body.to_string());
    for (name, value) in common::http::v2026_headers(&body) {
        post = post.header(name, value);
    }
    serde_json::from_str(&post.send().await.unwrap().text().await.unwrap()).unwrap()
}

/// Behind a balancer every client comes from the balancer's address: with `trust_forwarded` the per-client limits
/// count the address the balancer names, and without it they count the balancer.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn trust_forwarded_counts_each_client_behind_the_balancer_apart() {
    for trusted in [true, false] {
        let server = builder().tasks(TaskSettings::new().max_running(1)).build().unwrap();
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}/mcp", listener.local_addr().unwrap());
        tokio::spawn(server.serve_http_on(listener, mcp::HttpOptions::new().trust_forwarded(trusted)));
        let first = task_call_from(&url, "203.0.113.1", 1).await;
        assert_eq!(first["result"]["resultType"], "task", "{first}");
        let other = task_call_from(&url, "203.0.113.2", 2).await;
        let again = task_call_from(&url, "203.0.113.1", 3).await;
        assert!(again.get("error").is_some(), "the same client's second task is over its limit: {again}");
        if trusted {
            assert_eq!(other["result"]["resultType"], "task", "another client has a limit of its own: {other}");
        } else {
            assert!(other.get("error").is_some(), "untrusted, every client is the balancer: {other}");
        }
    }
}

/// Asks for a name as a task (its questions are the task's).
#[mcp::tool(task = "required", task_poll_ms = 50)]
async fn ask_as_task(ctx: &Context) -> String {
    greet_by_name(ctx).await
}

/// A 2026 task's question, asked by its handler on one instance, is answered with `tasks/update` through another.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_task_question_is_answered_through_another_instance() {
    let server = RedisServer::start();
    let redis = mcp::redis::Redis::connect(&server.url()).await.unwrap();
    let (one, two) = (
        builder().tool::<ask_as_task>().shared(&redis).build().unwrap(),
        builder().tool::<ask_as_task>().shared(&redis).build().unwrap(),
    );
    tokio::time::sleep(Duration::from_millis(300)).await;
    // Both declare elicitation (the task's creating request must, for its handler to ask).
    let answering = |server: &Server| {
        Client::builder()
            .era(EraChoice::V2026)
            .on_elicitation(|_| async { Ok(json!({"action": "accept", "content": {"name": "Ada"}})) })
            .in_process(server.clone())
    };
    let (a, b) = (answering(&one).await.unwrap(), answering(&two).await.unwrap());
    let Started::Task(task) = a.call_tool_as_task("ask_as_task", json!({}), None).await.unwrap() else {
        panic!("ask_as_task answers with a task")
    };
    // Followed, and answered, on two: the handler waits on one.
    let result = tokio::time::timeout(WAIT, b.task(task.id()).wait()).await.expect("in time").unwrap();
    assert_eq!(result.text(), Some("hello Ada"));
}

/// The session cap counts the sessions of every instance: with one open (and busy) on each of two instances and a
/// cap of two, a third `initialize` is refused, on either.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_session_cap_counts_every_instance() {
    use common::http::{Body, Client as Raw};
    let redis_server = RedisServer::start();
    let redis = mcp::redis::Redis::connect(&redis_server.url()).await.unwrap();
    let mut urls = Vec::new();
    for _ in 0..2 {
        let server = builder().shared(&redis).build().unwrap();
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        urls.push(format!("http://{}/mcp", listener.local_addr().unwrap()));
        tokio::spawn(server.serve_http_on(listener, mcp::HttpOptions::new().max_sessions(2)));
    }
    let mut streams = Vec::new();
    for url in &urls {
        let mut session = Raw { http: reqwest::Client::new(), url: url.clone(), session: None };
        session.initialize(json!({})).await;
        // An open stream keeps the session busy: it cannot be reclaimed to make room.
        streams.push(Body::of(session.get(None).await).await);
    }
    let third = Raw { http: reqwest::Client::new(), url: urls[0].clone(), session: None };
    let init = common::http::request(
        0,
        "initialize",
        json!({"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "third", "version": "0"}}),
    );
    let refused = third.send(&init).await;
    assert_eq!(refused.status(), 503, "the cap is over both instances");
}

// ---- a 2025 stream resumed on another instance ----

/// Lets the `steps` handler go on, one step per permit.
static STEP: tokio::sync::Semaphore = tokio::sync::Semaphore::const_new(0);

/// Logs "first", waits, logs "second", waits, and answers "done".
#[mcp::tool]
async fn steps(ctx: &Context) -> String {
    ctx.info("first");
    STEP.acquire().await.unwrap().forget();
    ctx.info("second");
    STEP.acquire().await.unwrap().forget();
    "done".into()
}

/// An event log of the test's own (the seam is public: no Redis): a map of streams.
#[derive(Clone, Default)]
struct PlainLog {
    streams: Arc<Mutex<std::collections::HashMap<String, PlainStream>>>,
}

/// A stream's numbered events, and whether it ended.
type PlainStream = (Vec<(u64, String)>, bool);

impl mcp::store::EventLog for PlainLog {
    fn append(&self, session: &str, stream: &str, number: u64, data: &Arc<str>) {
        let mut streams = self.streams.lock().unwrap();
        streams.entry(format!("{session}/{stream}")).or_default().0.push((number, data.to_string()));
    }

    fn end(&self, session: &str, stream: &str) {
        self.streams.lock().unwrap().entry(format!("{session}/{stream}")).or_default().1 = true;
    }

    fn read_after<'a>(
        &'a self,
        session: &'a str,
        stream: &'a str,
        after: u64,
        max: usize,
    ) -> mcp::handler::BoxFuture<'a, Result<Option<mcp::store::LogSlice>, mcp::store::StoreError>> {
        let streams = self.streams.lock().unwrap();
        let found = streams.get(&format!("{session}/{stream}")).and_then(|(events, ended)| {
            let at = events.iter().position(|(n, _)| *n == after)?;
            let next: Vec<(u64, Arc<str>)> =
                events[at + 1..].iter().take(max).map(|(n, d)| (*n, Arc::from(d.as_str()))).collect();
            let ended = *ended && at + 1 + next.len() == events.len();
            Some(mcp::store::LogSlice::new(next, ended))
        });
        Box::pin(std::future::ready(Ok(found)))
    }
}

/// A request's stream broken on the instance running it, resumed with `Last-Event-ID` on the other: what was sent
/// meanwhile is replayed, what is sent after follows live, the response ends it; nothing lost, nothing twice. Then
/// the standalone stream of one, resumed on two: what one sent after the id is replayed, and two's own stream goes
/// on (a change made on one reaches it through the hub).
async fn a_stream_resumes_on_the_other_instance(url_one: String, url_two: String) {
    use common::http::{request, Body, Client as Raw};
    let mut on_one = Raw { http: reqwest::Client::new(), url: url_one, session: None };
    on_one.initialize(json!({})).await;
    let on_two = Raw { url: url_two, ..on_one.clone() };

    // The call runs on one; its stream breaks after the first log message.
    let response = on_one.send(&request(1, "tools/call", json!({"name": "steps", "arguments": {}}))).await;
    let mut body = Body::of(response).await;
    let first = body.next_message(WAIT).await.expect("the first log message");
    assert_eq!(first["params"]["data"], "first", "{first}");
    let last_id = body.events.last().and_then(|e| e.id.clone()).expect("an event id");
    drop(body);
    // Sent while no one reads: kept.
    STEP.add_permits(1);
    tokio::time::sleep(Duration::from_millis(200)).await;

    // Resumed on two: the missed message, then the answer as one sends it.
    let resumed = on_two.get(Some(&last_id)).await;
    assert_eq!(resumed.status(), 200, "{:?}", resumed.text().await);
    let mut body = Body::of(resumed).await;
    let second = body.next_message(WAIT).await.expect("the message sent while the stream was broken");
    assert_eq!(second["params"]["data"], "second", "{second}");
    STEP.add_permits(1);
    let answer = body.response(&json!(1), "tools/call").await;
    assert_eq!(answer["result"]["content"][0]["text"], "done", "{answer}");
    assert!(body.seen.is_empty(), "nothing else, nothing twice: {:?}", body.seen);
    assert!(body.ended(WAIT).await, "the stream ends with its response");
    let ids: Vec<_> = body.events.iter().filter(|e| !e.data.is_empty()).filter_map(|e| e.id.clone()).collect();
    assert_eq!(ids.len(), 2, "{ids:?}");
    assert!(!ids.contains(&last_id), "{ids:?}");

    // An id no instance gave is refused, saying so.
    let unknown = on_two.get(Some("nowhere.12")).await;
    assert_eq!(unknown.status(), 400);

    // One's standalone stream, resumed on two.
    let mut standalone = Body::of(on_one.get(None).await).await;
    let priming = standalone.next_event(WAIT).await.and_then(|e| e.id).expect("a priming id");
    drop(standalone);
    on_one.call(2, "resources/subscribe", json!({"uri": "note://one"})).await;
    let mut standalone = Body::of(on_two.get(Some(&priming)).await).await;
    tokio::time::sleep(Duration::from_millis(200)).await;
    on_one.call(3, "tools/call", json!({"name": "touch", "arguments": {"uri": "note://one"}})).await;
    let deadline = Instant::now() + WAIT;
    loop {
        let message = standalone.next_message(deadline - Instant::now()).await.expect("the update on two's stream");
        if message["method"] == "notifications/resources/updated" {
            break;
        }
    }
}

/// Two instances sharing sessions, changes and events through seams of the test's own (no Redis).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stream_resumes_on_another_instance_through_an_event_log_of_ones_own() {
    let (hub, sessions, log) =
        (JsonWire::default(), Arc::new(mcp::store::MemorySessionStore::new()), PlainLog::default());
    let mut urls = Vec::new();
    for _ in 0..2 {
        let server = builder()
            .tool::<steps>()
            .change_hub(hub.clone())
            .session_store(SharedSessions(sessions.clone()))
            .event_log(log.clone())
            .build()
            .unwrap();
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        urls.push(format!("http://{}/mcp", listener.local_addr().unwrap()));
        tokio::spawn(server.serve_http_on(listener, mcp::HttpOptions::new()));
    }
    let two = urls.pop().unwrap();
    a_stream_resumes_on_the_other_instance(urls.pop().unwrap(), two).await;
    assert!(!log.streams.lock().unwrap().is_empty(), "the streams went through the test's log");
}

/// The same through a real Redis.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stream_resumes_on_another_instance_through_redis() {
    let redis_server = RedisServer::start();
    let redis = mcp::redis::Redis::connect(&redis_server.url()).await.unwrap();
    let mut urls = Vec::new();
    for _ in 0..2 {
        let server = builder().tool::<steps>().shared(&redis).build().unwrap();
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        urls.push(format!("http://{}/mcp", listener.local_addr().unwrap()));
        tokio::spawn(server.serve_http_on(listener, mcp::HttpOptions::new()));
    }
    tokio::time::sleep(Duration::from_millis(300)).await;
    let two = urls.pop().unwrap();
    a_stream_resumes_on_the_other_instance(urls.pop().unwrap(), two).await;
}

/// One session store for two servers (the builder takes a store by value).
struct SharedSessions(Arc<mcp::store::MemorySessionStore>);

impl mcp::store::SessionStore for SharedSessions {
    fn save<'a>(
        &'a self,
        key: &'a str,
        record: &'a mcp::store::SessionRecord,
        idle: Duration,
    ) -> mcp::handler::BoxFuture<'a, Result<(), mcp::store::StoreError>> {
        self.0.save(key, record, idle)
    }

    fn load<'a>(
        &'a self,
        key: &'a str,
    ) -> mcp::handler::BoxFuture<'a, Result<Option<mcp::store::SessionRecord>, mcp::store::StoreError>> {
        self.0.load(key)
    }

    fn touch<'a>(
        &'a self,
        key: &'a str,
        idle: Duration,
    ) -> mcp::handler::BoxFuture<'a, Result<(), mcp::store::StoreError>> {
        self.0.touch(key, idle)
    }

    fn remove<'a>(&'a self, key: &'a str) -> mcp::handler::BoxFuture<'a, Result<(), mcp::store::StoreError>> {
        self.0.remove(key)
    }

    fn count(&self) -> mcp::handler::BoxFuture<'_, Result<usize, mcp::store::StoreError>> {
        self.0.count()
    }
}

/// Runs only as a task, and is done at once.
#[mcp::tool(task = "required")]
fn quick_task() -> String {
    "quick".into()
}

/// The per-client task limits count every instance's tasks when the instances share a Redis: a client with a task
/// running on one is refused a second on the other at a limit of one running task; a client with a finished task
/// stored is refused a second on the other at a limit of one stored task; another client is not.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_per_client_task_limits_count_every_instance() {
    let redis_server = RedisServer::start();
    let redis = mcp::redis::Redis::connect(&redis_server.url()).await.unwrap();
    // Which limit, the tool that runs as a task, and the servers' builder.
    type Limit = (&'static str, &'static str, fn() -> ServerBuilder);
    let limits: [Limit; 2] = [
        ("running", "long_task", || builder().tasks(TaskSettings::new().max_running(1))),
        ("stored", "quick_task", || builder().tool::<quick_task>().tasks(TaskSettings::new().max_per_client(1))),
    ];
    for (limit, tool, limited) in limits {
        let redis = redis.clone().prefix(format!("limits-{limit}"));
        let mut urls = Vec::new();
        for _ in 0..2 {
            let server = limited().shared(&redis).build().unwrap();
            let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
            urls.push(format!("http://{}/mcp", listener.local_addr().unwrap()));
            tokio::spawn(server.serve_http_on(listener, mcp::HttpOptions::new().trust_forwarded(true)));
        }
        let first = task_call_of(tool, &urls[0], "203.0.113.1", 1).await;
        assert_eq!(first["result"]["resultType"], "task", "{limit}: {first}");
        let again = task_call_of(tool, &urls[1], "203.0.113.1", 2).await;
        assert!(again.get("error").is_some(), "{limit}: the client's task on one counts on two: {again}");
        let other = task_call_of(tool, &urls[1], "203.0.113.2", 3).await;
        assert_eq!(other["result"]["resultType"], "task", "{limit}: another client has a limit of its own: {other}");
    }
}

/// A task store of the test's own (the seam is public: no Redis) that two instances share and that counts each
/// client's tasks itself: the per-client limits count both instances' tasks through it.
#[derive(Clone, Default)]
struct CountingStore {
    inner: Arc<mcp::store::MemoryTaskStore>,
    clients: Arc<Mutex<std::collections::HashMap<String, Vec<ClientTask>>>>,
}

/// One of a client's tasks: its id, and whether it is over.
type ClientTask = (String, bool);

impl mcp::store::TaskStore for CountingStore {
    fn create(
        &self,
        record: mcp::store::TaskRecord,
    ) -> mcp::handler::BoxFuture<'_, Result<(), mcp::store::StoreError>> {
        if let Some(client) = &record.client {
            let over = record.status.is_terminal();
            self.clients.lock().unwrap().entry(client.clone()).or_default().push((record.id.clone(), over));
        }
        self.inner.create(record)
    }

    fn get<'a>(
        &'a self,
        id: &'a str,
    ) -> mcp::handler::BoxFuture<'a, Result<Option<mcp::store::TaskRecord>, mcp::store::StoreError>> {
        self.inner.get(id)
    }

    fn update(
        &self,
        record: mcp::store::TaskRecord,
    ) -> mcp::handler::BoxFuture<'_, Result<bool, mcp::store::StoreError>> {
        if let (Some(client), true) = (&record.client, record.status.is_terminal()) {
            if let Some(tasks) = self.clients.lock().unwrap().get_mut(client) {
                if let Some(task) = tasks.iter_mut().find(|(id, _)| *id == record.id) {
                    task.1 = true;
                }
            }
        }
        self.inner.update(record)
    }

    fn list<'a>(
        &'a self,
        session: &'a str,
        cursor: Option<&'a str>,
        limit: usize,
    ) -> mcp::handler::BoxFuture<'a, Result<Option<mcp::store::TaskPage>, mcp::store::StoreError>> {
        self.inner.list(session, cursor, limit)
    }

    fn client_tasks<'a>(
        &'a self,
        client: &'a str,
    ) -> mcp::handler::BoxFuture<'a, Result<Option<mcp::store::ClientTasks>, mcp::store::StoreError>> {
        let clients = self.clients.lock().unwrap();
        let tasks = clients.get(client).map(Vec::as_slice).unwrap_or_default();
        let running = tasks.iter().filter(|(_, over)| !over).count();
        Box::pin(std::future::ready(Ok(Some(mcp::store::ClientTasks::new(running, tasks.len())))))
    }
}

/// The per-client running limit over two instances through a task store of the test's own.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_per_client_task_limits_count_through_a_task_store_of_ones_own() {
    let store = CountingStore::default();
    let mut urls = Vec::new();
    for _ in 0..2 {
        let server = builder().tasks(TaskSettings::new().max_running(1)).task_store(store.clone()).build().unwrap();
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        urls.push(format!("http://{}/mcp", listener.local_addr().unwrap()));
        tokio::spawn(server.serve_http_on(listener, mcp::HttpOptions::new().trust_forwarded(true)));
    }
    let first = task_call_from(&urls[0], "203.0.113.1", 1).await;
    assert_eq!(first["result"]["resultType"], "task", "{first}");
    let again = task_call_from(&urls[1], "203.0.113.1", 2).await;
    assert!(again.get("error").is_some(), "the client's task on one counts on two: {again}");
    let other = task_call_from(&urls[1], "203.0.113.2", 3).await;
    assert_eq!(other["result"]["resultType"], "task", "another client has a limit of its own: {other}");
    assert_eq!(store.clients.lock().unwrap().len(), 2, "both clients' tasks went through the test's store");
}

/// A shared server is ready while its Redis answers: `/readyz` says 503, naming Redis, once it has been gone for the
/// grace (here 1 s; a balancer then sends its clients elsewhere), and not before (a Sentinel failover is shorter);
/// `/healthz` still says the process serves.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_shared_server_is_not_ready_while_its_redis_is_unreachable() {
    let redis_server = RedisServer::start();
    let redis = mcp::redis::Redis::connect(&redis_server.url()).await.unwrap();
    let server = builder().shared(&redis).build().unwrap();
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    tokio::spawn(server.serve_http_on(listener, mcp::HttpOptions::new().redis_grace(Duration::from_secs(1))));
    let http = reqwest::Client::new();
    let check = async |path: &str| {
        let response = http.get(format!("{base}{path}")).send().await.unwrap();
        (response.status().as_u16(), response.text().await.unwrap())
    };
    assert_eq!(check("/readyz").await, (200, "ready\n".to_owned()));
    drop(redis_server);
    assert_eq!(check("/readyz").await.0, 200, "within the grace");
    eventually("/readyz says 503", async || check("/readyz").await.0 == 503).await;
    let (_, why) = check("/readyz").await;
    assert!(why.starts_with("not ready: Redis at redis://127.0.0.1:"), "{why}");
    assert_eq!(check("/healthz").await, (200, "ok\n".to_owned()));
}

/// Redis Sentinel: instances that reach their Redis through the sentinels (`redis+sentinel://...`) keep serving
/// through a failover of the primary (SIGKILL; a replica is promoted). Calls go on all along; once the sentinels
/// name the new primary, the instances move their connections there (and log it), and what the old primary had
/// replicated is there: a 2025 session opened on one instance is served by the other, which never saw it, and a
/// task started before is read through the other.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_instances_follow_a_sentinel_failover_and_keep_what_was_replicated() {
    use common::http::{request, Client as Raw};
    use common::redis::SentinelRedis;
    let mut redis_set = SentinelRedis::start();
    let mut urls = Vec::new();
    for _ in 0..2 {
        // Each instance with its own connections, as separate processes would have.
        let redis = mcp::redis::Redis::connect(&redis_set.url()).await.unwrap();
        let server = builder().shared(&redis).build().unwrap();
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        urls.push(format!("http://{}/mcp", listener.local_addr().unwrap()));
        tokio::spawn(server.serve_http_on(listener, mcp::HttpOptions::new()));
    }
    let mut on_one = Raw { http: reqwest::Client::new(), url: urls[0].clone(), session: None };
    on_one.initialize(json!({})).await;
    let on_two = Raw { url: urls[1].clone(), ..on_one.clone() };
    let tasks = Client::builder().era(EraChoice::V2026).http(&urls[0]).await.unwrap();
    let Started::Task(task) = tasks.call_tool_as_task("long_task", json!({}), None).await.unwrap() else {
        panic!("long_task answers with a task")
    };
    redis_set.wait_replicated();

    // Calls all along: 2026 calls through both instances, while the primary dies and another takes over.
    let stop = Arc::new(AtomicBool::new(false));
    let (served, failed) = (Arc::new(AtomicUsize::new(0)), Arc::new(Mutex::new(Vec::new())));
    let mut load = Vec::new();
    for url in &urls {
        let client = Client::builder().era(EraChoice::V2026).http(url).await.unwrap();
        let (stop, served, failed) = (stop.clone(), served.clone(), failed.clone());
        load.push(tokio::spawn(async move {
            while !stop.load(Ordering::SeqCst) {
                match client.call_tool("greet", json!({})).await {
                    Ok(r) if r.text() == Some("hello") => served.fetch_add(1, Ordering::SeqCst),
                    other => {
                        failed.lock().unwrap().push(format!("{other:?}"));
                        0
                    }
                };
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
        }));
    }
    let old_primary = redis_set.primary.port;
    redis_set.primary.stop();
    let deadline = Instant::now() + Duration::from_secs(30);
    while redis_set.primary_port().is_none_or(|port| port == old_primary) {
        assert!(Instant::now() < deadline, "the sentinels promoted no replica");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert_eq!(redis_set.primary_port(), Some(redis_set.replica.port));

    // The session, opened on one before the failover, is served by two, which reads it from the new primary.
    let deadline = Instant::now() + Duration::from_secs(15);
    loop {
        let response = on_two.send(&request(7, "tools/call", json!({"name": "greet", "arguments": {}}))).await;
        if response.status() == 200 {
            let (answer, _) = on_two.call(8, "tools/call", json!({"name": "greet", "arguments": {}})).await;
            assert_eq!(answer["result"]["content"][0]["text"], "hello", "{answer}");
            break;
        }
        assert!(Instant::now() < deadline, "the session is not served on two after the failover");
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    // The task, started before, is read through two.
    let through_two = Client::builder().era(EraChoice::V2026).http(&urls[1]).await.unwrap();
    let status = through_two.task(task.id()).get().await.map(|t| t.status);
    assert_eq!(status.as_deref().ok(), Some("working"), "{status:?}");

    stop.store(true, Ordering::SeqCst);
    for l in load {
        l.await.unwrap();
    }
    assert!(served.load(Ordering::SeqCst) > 20, "calls went on: {}", served.load(Ordering::SeqCst));
    assert!(failed.lock().unwrap().is_empty(), "a call failed during the failover: {:?}", failed.lock().unwrap());
    task.cancel().await.unwrap();
}

/// A Redis Cluster is refused at start, saying why and what to use instead; so is a Sentinel URL without the
/// primary's name.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_redis_cluster_is_refused_with_the_reason() {
    let cluster = RedisServer::start_with(&["--cluster-enabled", "yes"]);
    let refused = mcp::redis::Redis::connect(&cluster.url()).await.unwrap_err().to_string();
    assert!(refused.contains("it is a Redis Cluster, which is not supported"), "{refused}");
    assert!(refused.contains("redis+sentinel://"), "{refused}");
    let unnamed = mcp::redis::Redis::connect("redis+sentinel://127.0.0.1:1").await.unwrap_err().to_string();
    assert!(unnamed.contains("names the primary after the sentinels"), "{unnamed}");
}

/// A session store that holds each removal until the test lets it go: the test's own, since no real store can be
/// stopped in the middle of a removal.
struct HeldRemove {
    store: mcp::store::MemorySessionStore,
    entered: AtomicBool,
    go: tokio::sync::Semaphore,
}

/// The server's handle on a [`HeldRemove`] the test holds too.
struct Held(Arc<HeldRemove>);

impl mcp::store::SessionStore for Held {
    fn save<'a>(
        &'a self,
        key: &'a str,
        record: &'a mcp::store::SessionRecord,
        idle: Duration,
    ) -> mcp::handler::BoxFuture<'a, Result<(), mcp::store::StoreError>> {
        self.0.store.save(key, record, idle)
    }

    fn load<'a>(
        &'a self,
        key: &'a str,
    ) -> mcp::handler::BoxFuture<'a, Result<Option<mcp::store::SessionRecord>, mcp::store::StoreError>> {
        self.0.store.load(key)
    }

    fn touch<'a>(
        &'a self,
        key: &'a str,
        idle: Duration,
    ) -> mcp::handler::BoxFuture<'a, Result<(), mcp::store::StoreError>> {
        self.0.store.touch(key, idle)
    }

    fn remove<'a>(&'a self, key: &'a str) -> mcp::handler::BoxFuture<'a, Result<(), mcp::store::StoreError>> {
        Box::pin(async move {
            self.0.entered.store(true, Ordering::SeqCst);
            let _go = self.0.go.acquire().await;
            self.0.store.remove(key).await
        })
    }

    fn count(&self) -> mcp::handler::BoxFuture<'_, Result<usize, mcp::store::StoreError>> {
        self.0.store.count()
    }
}

/// A request of a session that comes while its DELETE is forgetting it in the store (its stream reconnecting, a
/// late cancel) is served by the session still held here, and rebuilds no copy of it from the store that nothing
/// would end: once the DELETE is done, no session is counted open. (A dry run's dashboard test showed one.)
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_request_during_a_delete_rebuilds_no_copy_of_the_session() {
    use common::http::Client as Raw;
    let held = Arc::new(HeldRemove {
        store: mcp::store::MemorySessionStore::new(),
        entered: AtomicBool::new(false),
        go: tokio::sync::Semaphore::new(0),
    });
    let metrics = mcp::Metrics::new();
    let server = builder().session_store(Held(held.clone())).metrics(&metrics).build().unwrap();
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/mcp", listener.local_addr().unwrap());
    tokio::spawn(server.serve_http_on(listener, mcp::HttpOptions::new()));
    let open = || {
        let text = metrics.render();
        let lines = text.lines().filter(|l| l.starts_with("mcp_server_sessions_open{"));
        lines.filter_map(|l| l.rsplit(' ').next()?.parse::<f64>().ok()).sum::<f64>()
    };

    let mut raw = Raw { http: reqwest::Client::new(), url: url.clone(), session: None };
    raw.initialize(json!({})).await;
    assert_eq!(open(), 1.0);
    let id = raw.session.clone().expect("a session id");
    let delete = reqwest::Client::new()
        .delete(&url)
        .header("mcp-session-id", &id)
        .header("mcp-protocol-version", "2025-11-25")
        .send();
    let delete = tokio::spawn(delete);
    let deadline = Instant::now() + WAIT;
    while !held.entered.load(Ordering::SeqCst) {
        assert!(Instant::now() < deadline, "the DELETE reached the store");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    let (pong, _) = raw.call(2, "ping", json!({})).await;
    assert!(pong["result"].is_object(), "{pong}");
    held.go.add_permits(1);
    assert_eq!(delete.await.unwrap().unwrap().status(), 200);
    let deadline = Instant::now() + WAIT;
    while open() != 0.0 {
        assert!(Instant::now() < deadline, "a session is still counted open: {}", metrics.render());
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert_eq!(raw.send(&common::http::request(3, "ping", json!({}))).await.status(), 404, "the session ended");
}
