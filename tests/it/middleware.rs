//! Middleware (`ServerBuilder::layer`): layers see every request the dispatcher serves and its outcome, in order
//! both ways, over stdio and HTTP in both eras; tower's own layers (timeout, concurrency limit) work as they are; a
//! layer can refuse, change arguments or answer by itself; cancellation drops a layer's future and answers nothing.

use crate::common;

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use common::duplex::Stdio;
use mcp::client::{Client, EraChoice};
use mcp::middleware::{BoxError, Next, Request, Response};
use mcp::tower::util::BoxCloneSyncService;
use mcp::tower::{self, Layer, ServiceExt};
use mcp::{Context, Server, State};
use serde_json::{json, Value};

/// What the test's tools report: whether a handler was stopped, and how many ran at once.
#[derive(Default)]
struct Probe {
    slow_dropped: AtomicBool,
    spin_stopped: AtomicBool,
    running: AtomicUsize,
    most: AtomicUsize,
}

/// Echo the text back.
#[mcp::tool]
async fn echo(text: String) -> String {
    text
}

/// Sleep, noting whether the future was dropped before it woke.
#[mcp::tool]
async fn slow(ms: u64, probe: &State<Arc<Probe>>) -> String {
    struct Dropped<'a>(&'a Probe, bool);
    impl Drop for Dropped<'_> {
        fn drop(&mut self) {
            if !self.1 {
                self.0.slow_dropped.store(true, Ordering::SeqCst);
            }
        }
    }
    let mut guard = Dropped(probe, false);
    tokio::time::sleep(Duration::from_millis(ms)).await;
    guard.1 = true;
    "woke".into()
}

/// Spin on a thread until told to stop.
#[mcp::tool]
fn spin(ctx: &Context, probe: &State<Arc<Probe>>) -> String {
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    while !ctx.is_cancelled() && std::time::Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(5));
    }
    probe.spin_stopped.store(ctx.is_cancelled(), Ordering::SeqCst);
    "stopped".into()
}

/// Count how many run at once.
#[mcp::tool]
async fn busy(probe: &State<Arc<Probe>>) -> String {
    let now = probe.running.fetch_add(1, Ordering::SeqCst) + 1;
    probe.most.fetch_max(now, Ordering::SeqCst);
    tokio::time::sleep(Duration::from_millis(100)).await;
    probe.running.fetch_sub(1, Ordering::SeqCst);
    "done".into()
}

#[derive(serde::Deserialize, schemars::JsonSchema)]
struct Who {
    /// Your name.
    name: String,
}

/// Ask the user's name.
#[mcp::tool]
async fn greet(ctx: &Context) -> Result<String, mcp::ask::AskError> {
    Ok(match ctx.elicit::<Who>("Who are you?").await? {
        mcp::ask::Elicitation::Accept(who) => format!("hello {}", who.name),
        _ => "no name".into(),
    })
}

/// A note.
#[mcp::resource(uri = "mem://note")]
fn note() -> String {
    "a note".into()
}

/// A custom method.
#[mcp::method(name = "test/custom")]
async fn custom() -> mcp::Json<Value> {
    mcp::Json(json!({ "custom": true }))
}

type Log = Arc<Mutex<Vec<String>>>;

/// A layer that writes `tag> method name` on the way in and `tag< method name outcome` on the way out.
fn record(tag: &'static str, log: Log) -> impl Layer<Next, Service = Next> + Send + 'static {
    tower::layer::layer_fn(move |inner: Next| {
        let log = log.clone();
        BoxCloneSyncService::new(tower::service_fn(move |request: Request| {
            let (inner, log) = (inner.clone(), log.clone());
            async move {
                let what = format!("{} {}", request.method(), request.name());
                log.lock().unwrap().push(format!("{tag}> {what}"));
                let response = inner.oneshot(request).await?;
                let outcome = if response.is_input_required() {
                    "input_required"
                } else if response.is_error() {
                    "error"
                } else {
                    "ok"
                };
                log.lock().unwrap().push(format!("{tag}< {what} {outcome}"));
                Ok::<_, BoxError>(response)
            }
        }))
    })
}

/// A layer that shouts `echo`'s text and answers `test/custom` by itself when asked for a cached answer.
fn meddle() -> impl Layer<Next, Service = Next> + Send + 'static {
    tower::layer::layer_fn(|inner: Next| {
        BoxCloneSyncService::new(tower::service_fn(move |mut request: Request| {
            let inner = inner.clone();
            async move {
                if request.method() == "test/custom" && request.arguments().contains_key("cached") {
                    return Ok(Response::result(json!({ "cached": true })));
                }
                if request.name() == "echo" {
                    if let Some(Value::String(text)) = request.arguments_mut().get_mut("text") {
                        *text = text.to_uppercase();
                    }
                }
                inner.oneshot(request).await
            }
        }))
    })
}

fn server(configure: impl FnOnce(mcp::ServerBuilder) -> mcp::ServerBuilder) -> (Server, Arc<Probe>) {
    let probe = Arc::new(Probe::default());
    let builder = Server::builder()
        .tool::<echo>()
        .tool::<slow>()
        .tool::<spin>()
        .tool::<busy>()
        .tool::<greet>()
        .resource::<note>()
        .method::<custom>()
        .state(probe.clone());
    (configure(builder).build().unwrap(), probe)
}

/// An HTTP server in this process, on a loopback port.
async fn serve_http(server: &Server) -> String {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/mcp", listener.local_addr().unwrap());
    tokio::spawn(server.clone().serve_http_on(listener, mcp::HttpOptions::new()));
    url
}

async fn http_client(url: &str, era: EraChoice) -> Client {
    Client::builder()
        .name("middleware-tests")
        .era(era)
        .on_elicitation(|_| async { Ok(json!({"action": "accept", "content": {"name": "Ada"}})) })
        .http(url)
        .await
        .unwrap()
}

/// The log's lines about `what` (`method name`), in order.
fn lines_about(log: &Log, what: &str) -> Vec<String> {
    log.lock()
        .unwrap()
        .iter()
        .filter(|l| l.split_once(' ').is_some_and(|(_, rest)| rest.starts_with(what)))
        .cloned()
        .collect()
}

fn assert_nested(log: &Log, what: &str, outcome: &str) {
    assert_eq!(
        lines_about(log, what),
        [format!("a> {what}"), format!("b> {what}"), format!("b< {what} {outcome}"), format!("a< {what} {outcome}")],
        "{what}: the first layer added is the outermost, both ways"
    );
}

fn recorded() -> (Server, Log) {
    let log: Log = Arc::default();
    let (server, _) = server(|b| b.layer(record("a", log.clone())).layer(record("b", log.clone())).layer(meddle()));
    (server, log)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn layers_see_every_dispatched_request_in_order_both_ways_over_stdio_in_both_eras() {
    for v2026 in [false, true] {
        let (server, log) = recorded();
        let mut s = Stdio::open(&server, v2026).await;
        let echoed = s.call(1, "tools/call", json!({"name": "echo", "arguments": {"text": "hi"}})).await;
        assert_eq!(echoed["result"]["content"][0]["text"], "HI", "a layer changed the arguments: {echoed}");
        assert_nested(&log, "tools/call echo", "ok");
        let listed = s.call(2, "tools/list", json!({})).await;
        assert!(listed["result"]["tools"].as_array().is_some_and(|t| t.len() == 5), "{listed}");
        assert_nested(&log, "tools/list tools/list", "ok");
        let read = s.call(3, "resources/read", json!({"uri": "mem://note"})).await;
        assert_eq!(read["result"]["contents"][0]["text"], "a note", "{read}");
        assert_nested(&log, "resources/read note", "ok");
        let custom = s.call(4, "test/custom", json!({})).await;
        assert_eq!(custom["result"]["custom"], true, "{custom}");
        assert_nested(&log, "test/custom test/custom", "ok");
        // A tool's `isError` result is an error to the layers.
        let refused = s.call(5, "tools/call", json!({"name": "slow", "arguments": {}})).await;
        assert_eq!(refused["result"]["isError"], true, "{refused}");
        assert_nested(&log, "tools/call slow", "error");
        // Answered by a layer, without a handler: the era's additions are still made.
        let cached = s.call(6, "test/custom", json!({"cached": true})).await;
        assert_eq!(cached["result"]["cached"], true, "{cached}");
        if v2026 {
            assert_eq!(cached["result"]["resultType"], "complete", "{cached}");
            assert_eq!(listed["result"]["resultType"], "complete", "{listed}");
            assert_eq!(echoed["result"]["resultType"], "complete", "{echoed}");
        } else {
            assert!(cached["result"].get("resultType").is_none(), "{cached}");
        }
        // What the era's front answers itself goes through the layers too.
        let own: &[&str] = if v2026 {
            &["server/discover"]
        } else {
            assert_nested(&log, "initialize initialize", "ok");
            &["ping", "logging/setLevel", "resources/subscribe", "resources/unsubscribe"]
        };
        for (n, method) in own.iter().enumerate() {
            let params = match *method {
                "logging/setLevel" => json!({"level": "info"}),
                "resources/subscribe" | "resources/unsubscribe" => json!({"uri": "mem://note"}),
                _ => json!({}),
            };
            let answered = s.call(7 + n as i64, method, params).await;
            assert!(answered.get("result").is_some(), "{answered}");
            assert_nested(&log, &format!("{method} {method}"), "ok");
            let checked = if v2026 {
                common::schema::check_v2026_message(&answered, Some(method))
            } else {
                common::schema::check_server_message(&answered, Some(method))
            };
            checked.unwrap_or_else(|e| panic!("{method}: {e}"));
        }
        for (message, method) in [(&echoed, "tools/call"), (&listed, "tools/list"), (&read, "resources/read")] {
            let checked = if v2026 {
                common::schema::check_v2026_message(message, Some(method))
            } else {
                common::schema::check_server_message(message, Some(method))
            };
            checked.unwrap_or_else(|e| panic!("{method}: {e}"));
        }
    }
}

/// A layer that refuses the methods an era's front answers by itself.
fn no_front_methods() -> impl Layer<Next, Service = Next> + Send + 'static {
    tower::layer::layer_fn(|inner: Next| {
        BoxCloneSyncService::new(tower::service_fn(move |request: Request| {
            let inner = inner.clone();
            async move {
                if ["ping", "server/discover", "logging/setLevel"].contains(&request.method()) {
                    let refused = format!("{} is refused here", request.method());
                    return Ok(Response::error(mcp::Error::new(mcp::ErrorCode::INVALID_REQUEST, refused)));
                }
                inner.oneshot(request).await
            }
        }))
    })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_layer_refuses_what_an_era_front_answers_by_itself_over_stdio_in_both_eras() {
    for v2026 in [false, true] {
        let (server, _) = server(|b| b.layer(no_front_methods()));
        let mut s = Stdio::open(&server, v2026).await;
        let methods: &[&str] = if v2026 { &["server/discover"] } else { &["ping", "logging/setLevel"] };
        for (n, method) in methods.iter().enumerate() {
            let params = if *method == "logging/setLevel" { json!({"level": "debug"}) } else { json!({}) };
            let refused = s.call(n as i64 + 1, method, params).await;
            assert_eq!(refused["error"]["code"], -32600, "{refused}");
            assert!(refused["error"]["message"].as_str().is_some_and(|m| m.contains("refused here")), "{refused}");
        }
        // What the layer lets through is served as before.
        let echoed = s.call(10, "tools/call", json!({"name": "echo", "arguments": {"text": "hi"}})).await;
        assert_eq!(echoed["result"]["content"][0]["text"], "hi", "{echoed}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn layers_see_every_dispatched_request_over_http_in_both_eras_and_an_input_required_round() {
    for era in [EraChoice::V2025, EraChoice::V2026] {
        let (server, log) = recorded();
        let url = serve_http(&server).await;
        let client = http_client(&url, era).await;
        let echoed = client.call_tool("echo", json!({"text": "hi"})).await.unwrap();
        assert_eq!(echoed.text(), Some("HI"));
        assert_nested(&log, "tools/call echo", "ok");
        assert_eq!(client.list_tools().await.unwrap().len(), 5);
        let read = client.read_resource("mem://note").await.unwrap();
        assert_eq!(read["contents"][0]["text"], "a note");
        assert_nested(&log, "resources/read note", "ok");
        let greeted = client.call_tool("greet", json!({})).await.unwrap();
        assert_eq!(greeted.text(), Some("hello Ada"));
        let rounds = lines_about(&log, "tools/call greet");
        if era == EraChoice::V2026 {
            // The question is an `input_required` answer, seen by the layers; the retry is a request of its own.
            assert_eq!(
                rounds,
                [
                    "a> tools/call greet",
                    "b> tools/call greet",
                    "b< tools/call greet input_required",
                    "a< tools/call greet input_required",
                    "a> tools/call greet",
                    "b> tools/call greet",
                    "b< tools/call greet ok",
                    "a< tools/call greet ok"
                ]
            );
        } else {
            assert_nested(&log, "tools/call greet", "ok");
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_timeout_layer_answers_32001_and_stops_async_and_blocking_handlers() {
    for v2026 in [false, true] {
        let (server, probe) = server(|b| b.layer(tower::timeout::TimeoutLayer::new(Duration::from_millis(200))));
        let mut s = Stdio::open(&server, v2026).await;
        let slow = s.call(1, "tools/call", json!({"name": "slow", "arguments": {"ms": 5000}})).await;
        assert_eq!(slow["error"]["code"], -32001, "{slow}");
        assert!(slow["error"]["message"].as_str().unwrap().contains("timed out"), "{slow}");
        assert!(probe.slow_dropped.load(Ordering::SeqCst), "the async handler was dropped");
        let spin = s.call(2, "tools/call", json!({"name": "spin", "arguments": {}})).await;
        assert_eq!(spin["error"]["code"], -32001, "{spin}");
        let deadline = std::time::Instant::now() + Duration::from_secs(5);
        while !probe.spin_stopped.load(Ordering::SeqCst) && std::time::Instant::now() < deadline {
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        assert!(probe.spin_stopped.load(Ordering::SeqCst), "the blocking handler saw its flag");
        // Nothing else comes for either request.
        assert!(s.silent(2, Duration::from_millis(200)).await);
        let fast = s.call(3, "tools/call", json!({"name": "slow", "arguments": {"ms": 1}})).await;
        assert_eq!(fast["result"]["content"][0]["text"], "woke", "{fast}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_concurrency_limit_layer_runs_one_call_at_a_time_and_answers_every_one() {
    let (server, probe) = server(|b| b.layer(tower::limit::ConcurrencyLimitLayer::new(1)));
    let mut s = Stdio::open(&server, false).await;
    for id in 1..=4 {
        s.request(id, "tools/call", json!({"name": "busy", "arguments": {}})).await;
    }
    for id in 1..=4 {
        let done = s.response(id).await;
        assert_eq!(done["result"]["content"][0]["text"], "done", "{done}");
    }
    assert_eq!(probe.most.load(Ordering::SeqCst), 1, "the limit held");
    // Without the layer they overlap.
    let (server, probe) = self::server(|b| b);
    let mut s = Stdio::open(&server, false).await;
    for id in 1..=4 {
        s.request(id, "tools/call", json!({"name": "busy", "arguments": {}})).await;
    }
    for id in 1..=4 {
        s.response(id).await;
    }
    assert!(probe.most.load(Ordering::SeqCst) > 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cancelled_request_waiting_in_a_layer_is_dropped_there_and_never_answered() {
    let dropped = Arc::new(AtomicBool::new(false));
    let watch = dropped.clone();
    // Outermost: notes whether the future of request 2 was dropped before it finished.
    let guard = tower::layer::layer_fn(move |inner: Next| {
        let watch = watch.clone();
        BoxCloneSyncService::new(tower::service_fn(move |request: Request| {
            let (inner, watch) = (inner.clone(), watch.clone());
            async move {
                struct Flag(Arc<AtomicBool>, bool);
                impl Drop for Flag {
                    fn drop(&mut self) {
                        if self.1 {
                            self.0.store(true, Ordering::SeqCst);
                        }
                    }
                }
                let mut flag = Flag(watch, request.id().to_string() == "2");
                let response = inner.oneshot(request).await;
                flag.1 = false;
                response
            }
        }))
    });
    let (server, _) = server(|b| b.layer(guard).layer(tower::limit::ConcurrencyLimitLayer::new(1)));
    let mut s = Stdio::open(&server, false).await;
    s.request(1, "tools/call", json!({"name": "slow", "arguments": {"ms": 400}})).await;
    tokio::time::sleep(Duration::from_millis(50)).await;
    // Request 2 waits for the limit's one slot, inside the layer; then it is cancelled there.
    s.request(2, "tools/call", json!({"name": "echo", "arguments": {"text": "never"}})).await;
    tokio::time::sleep(Duration::from_millis(50)).await;
    s.send(json!({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 2}})).await;
    let first = s.response(1).await;
    assert_eq!(first["result"]["content"][0]["text"], "woke", "{first}");
    assert!(s.silent(2, Duration::from_millis(300)).await, "a cancelled request gets no response");
    assert!(dropped.load(Ordering::SeqCst), "the layers' future was dropped with the request");
    // The slot is free again.
    let after = s.call(3, "tools/call", json!({"name": "echo", "arguments": {"text": "after"}})).await;
    assert_eq!(after["result"]["content"][0]["text"], "after", "{after}");
}

/// A check that refuses tools whose name starts with `spin` unless the caller has the scope `admin`.
fn admin_only() -> impl Layer<Next, Service = Next> + Send + 'static {
    tower::layer::layer_fn(|inner: Next| {
        BoxCloneSyncService::new(tower::service_fn(move |request: Request| {
            let inner = inner.clone();
            async move {
                let auth = request.meta().http.as_ref().and_then(|h| h.auth.as_ref());
                let admin = auth.is_some_and(|a| a.scopes.iter().any(|s| s == "admin"));
                if request.method() == "tools/call" && request.name() == "echo" && !admin {
                    let who = auth.map_or("anonymous", |a| a.subject.as_str());
                    return Err::<Response, BoxError>(Box::new(mcp::Error::new(
                        mcp::ErrorCode(-32003),
                        format!("{who} may not call echo"),
                    )));
                }
                inner.oneshot(request).await
            }
        }))
    })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_check_layer_reads_auth_info_and_refuses_with_an_mcp_error_over_http_in_both_eras() {
    use mcp::axum::{extract::Request, middleware::Next as AxumNext, response::Response};
    async fn bearer(mut request: Request, next: AxumNext) -> Response {
        let token = request.headers().get("authorization").and_then(|v| v.to_str().ok()).map(str::to_owned);
        let auth = match token.as_deref() {
            Some("Bearer root") => Some(mcp::AuthInfo::new("root", vec!["admin".into()])),
            Some("Bearer guest") => Some(mcp::AuthInfo::new("guest", vec![])),
            _ => None,
        };
        if let Some(auth) = auth {
            request.extensions_mut().insert(auth);
        }
        next.run(request).await
    }
    let (server, _) = server(|b| b.layer(admin_only()));
    let app = server.http_router(mcp::HttpOptions::new()).layer(mcp::axum::middleware::from_fn(bearer));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/mcp", listener.local_addr().unwrap());
    tokio::spawn(async move { mcp::axum::serve(listener, app).await });
    for era in [EraChoice::V2025, EraChoice::V2026] {
        for (token, allowed) in [("guest", false), ("root", true)] {
            let client = Client::builder()
                .era(era)
                .header("authorization", format!("Bearer {token}"))
                .http(url.as_str())
                .await
                .unwrap();
            let result = client.call_tool("echo", json!({"text": "hi"})).await;
            if allowed {
                assert_eq!(result.unwrap().text(), Some("hi"));
            } else {
                let error = result.unwrap_err();
                let mcp::client::Error::Rpc(e) = &error else { panic!("{error:?}") };
                assert_eq!(e.code, mcp::ErrorCode(-32003), "{e}");
                assert!(e.message.contains("guest may not call echo"), "{e}");
            }
            // Others pass.
            let slow = client.call_tool("slow", json!({"ms": 1})).await.unwrap();
            assert_eq!(slow.text(), Some("woke"));
        }
    }
}

/// Sleep as a task when asked.
#[mcp::tool(task = "optional", task_poll_ms = 50)]
async fn nap(ms: u64) -> String {
    tokio::time::sleep(Duration::from_millis(ms)).await;
    "rested".into()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_call_that_becomes_a_task_runs_inside_the_layers_which_see_its_outcome() {
    let log: Log = Arc::default();
    let probe = Arc::new(Probe::default());
    let server = Server::builder()
        .tool::<nap>()
        .state(probe)
        .layer(record("a", log.clone()))
        .layer(tower::timeout::TimeoutLayer::new(Duration::from_millis(300)))
        .build()
        .unwrap();
    let mut s = Stdio::open(&server, false).await;
    // The task is answered at once; its handler goes on inside the layers.
    let created = s.call(1, "tools/call", json!({"name": "nap", "arguments": {"ms": 50}, "task": {}})).await;
    let id = created["result"]["task"]["taskId"].as_str().expect("a task").to_owned();
    let result = s.call(2, "tasks/result", json!({"taskId": id})).await;
    assert_eq!(result["result"]["content"][0]["text"], "rested", "{result}");
    assert_eq!(lines_about(&log, "tools/call nap"), ["a> tools/call nap", "a< tools/call nap ok"]);
    assert_eq!(lines_about(&log, "tasks/result"), ["a> tasks/result tasks/result", "a< tasks/result tasks/result ok"]);
    // A task past the layer's timeout fails with the layer's error.
    let created = s.call(3, "tools/call", json!({"name": "nap", "arguments": {"ms": 5000}, "task": {}})).await;
    let id = created["result"]["task"]["taskId"].as_str().expect("a task").to_owned();
    let mut status = Value::Null;
    for n in 0..100 {
        status = s.call(10 + n, "tasks/get", json!({"taskId": id})).await;
        if status["result"]["status"] != "working" {
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert_eq!(status["result"]["status"], "failed", "{status}");
    let result = s.call(4, "tasks/result", json!({"taskId": id})).await;
    assert_eq!(result["error"]["code"], -32001, "the task's outcome is the layer's error: {result}");
}

/// The guide's middleware example (`mcp::guide::middleware`, in `mcp-runtime/docs/middleware.md`):
/// `examples/middleware.rs` over stdio and HTTP, in both eras.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_middleware_example_times_out_naps_and_logs_each_tool_call() {
    let mut command = std::process::Command::new(common::example("middleware"));
    command.env("RUST_LOG", "info");
    let mut stdio = common::Server::spawn_with(command);
    stdio.initialize();
    let echoed = stdio.call_tool("echo", json!({"text": "hi"}));
    assert_eq!(echoed["content"][0]["text"], "hi", "{echoed}");
    let napped = stdio.call("tools/call", json!({"name": "nap", "arguments": {"seconds": 5}}));
    assert_eq!(napped["error"]["code"], -32001, "{napped}");
    let log = stdio.stderr_text();
    assert!(log.contains("tool call") && (log.contains("tool=\"echo\"") || log.contains("tool=echo")), "{log}");
    assert!(log.contains("outcome=\"failed\"") || log.contains("outcome=failed"), "{log}");

    let http = common::http::HttpServer::start_binary(common::example("middleware"), &[]);
    let url = http.client().url;
    for era in [EraChoice::V2025, EraChoice::V2026] {
        let client = http_client(&url, era).await;
        assert_eq!(client.call_tool("echo", json!({"text": "hi"})).await.unwrap().text(), Some("hi"));
        let napped = client.call_tool("nap", json!({"seconds": 5})).await.unwrap_err();
        let mcp::client::Error::Rpc(e) = &napped else { panic!("{napped:?}") };
        assert_eq!(e.code, mcp::ErrorCode::REQUEST_TIMEOUT, "{e}");
    }
    assert!(http.wait_stderr("tool call", Duration::from_secs(5)).await, "{}", http.stderr_text());
}
