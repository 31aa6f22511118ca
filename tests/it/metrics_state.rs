//! The runtime's own state in the metrics, read when they are scraped: tasks running by status and ended by status,
//! the bytes waiting for a client that does not read, a shared Redis's failed commands and reconnects (a real
//! `redis-server`, stopped and started again), and what a proxy passed on from its upstream.

use crate::common;

use std::sync::Arc;
use std::time::{Duration, Instant};

use mcp::client::{Client, EraChoice, Started};
use mcp::Context;
use serde_json::json;
use tokio::sync::Notify;

/// The value of the sample `name{labels}` (or `name` alone, with no labels) in `text`.
fn sample(text: &str, name: &str, labels: &str) -> Option<f64> {
    let head = if labels.is_empty() { format!("{name} ") } else { format!("{name}{{{labels}}} ") };
    text.lines().find_map(|l| l.strip_prefix(&head)).map(|v| v.parse().unwrap())
}

/// Waits (up to 30 s) until `check` holds of the metrics' text; panics with the text otherwise.
async fn until(metrics: &mcp::Metrics, what: &str, check: impl Fn(&str) -> bool) -> String {
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let text = metrics.render();
        if check(&text) {
            return text;
        }
        assert!(Instant::now() < deadline, "{what}: not within 30 s:\n{text}");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// Lets `waits` go on.
static GO: Notify = Notify::const_new();

/// Waits until the test lets it go.
#[mcp::tool(task = "optional")]
async fn waits() -> String {
    GO.notified().await;
    "went".into()
}

#[tokio::test]
async fn tasks_are_counted_running_and_ended_by_status() {
    let metrics = mcp::Metrics::new();
    let server = mcp::Server::builder().tool::<waits>().metrics(&metrics).build().unwrap();
    let client = Client::builder().era(EraChoice::V2026).in_process(server).await.unwrap();
    let running = |n: f64| move |t: &str| sample(t, "mcp_server_tasks_running", "status=\"working\"") == Some(n);
    let ended = |status: &str, n: f64| {
        let labels = format!("status=\"{status}\"");
        move |t: &str| sample(t, "mcp_server_tasks_ended_total", &labels) == Some(n)
    };
    let text = metrics.render();
    assert_eq!(sample(&text, "mcp_server_tasks_running", "status=\"input_required\""), Some(0.0), "{text}");

    let Started::Task(task) = client.call_tool_as_task("waits", json!({}), None).await.unwrap() else {
        panic!("a task")
    };
    until(&metrics, "one task working", running(1.0)).await;
    GO.notify_one();
    task.wait_with(|_| {}).await.unwrap();
    until(&metrics, "the task completed", ended("completed", 1.0)).await;
    until(&metrics, "none running", running(0.0)).await;

    let Started::Task(task) = client.call_tool_as_task("waits", json!({}), None).await.unwrap() else {
        panic!("a task")
    };
    until(&metrics, "one task working", running(1.0)).await;
    task.cancel().await.unwrap();
    let text = until(&metrics, "the task cancelled", ended("cancelled", 1.0)).await;
    assert_eq!(sample(&text, "mcp_server_tasks_ended_total", "status=\"failed\""), Some(0.0), "{text}");
    until(&metrics, "none running", running(0.0)).await;
}

/// Sends `n` progress notifications of 64 KiB each on its call's stream.
#[mcp::tool]
fn floods(n: u32, ctx: &Context) -> String {
    let message = "x".repeat(64 << 10);
    for i in 0..n {
        ctx.report_progress(f64::from(i + 1), None, Some(&message));
    }
    "flooded".into()
}

/// A client that asks for a call's progress and then does not read its stream: what waits for it is counted in
/// `mcp_server_outbound_queued_bytes`, and leaves the count once the client goes away.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bytes_waiting_for_a_client_that_does_not_read_are_counted() {
    let metrics = mcp::Metrics::new();
    let server = mcp::Server::builder().tool::<floods>().metrics(&metrics).build().unwrap();
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/mcp", listener.local_addr().unwrap());
    tokio::spawn(server.serve_http_on(listener, mcp::HttpOptions::new()));
    let queued = |t: &str| sample(t, "mcp_server_outbound_queued_bytes", "").unwrap_or(-1.0);
    assert_eq!(queued(&metrics.render()), 0.0, "{}", metrics.render());

    let client = common::http::Client { http: reqwest::Client::new(), url, session: None };
    // 32 MiB of progress: more than loopback's socket buffers hold, so the rest waits in the server.
    let call = common::v2026::request(
        1,
        "tools/call",
        json!({"name": "floods", "arguments": {"n": 512}, "_meta": {"progressToken": 1}}),
        json!({}),
    );
    let unread = client.v2026_send(&call).await;
    assert_eq!(unread.status(), 200);
    let text = until(&metrics, "over a MiB waiting", |t| queued(t) > f64::from(1 << 20)).await;
    eprintln!("waiting: {} bytes", queued(&text));
    drop(unread);
    until(&metrics, "nothing waiting once the client went away", |t| queued(t) == 0.0).await;
}

/// A server shared through `redis`, and its metrics.
fn shared_with_metrics(redis: &mcp::redis::Redis) -> (mcp::Metrics, mcp::Server) {
    let metrics = mcp::Metrics::new();
    let server = mcp::Server::builder()
        .tool::<waits>()
        .shared(redis)
        .request_state_key([7; 32])
        .metrics(&metrics)
        .build()
        .unwrap();
    (metrics, server)
}

/// With `ServerBuilder::shared`: Redis's failed commands (a change published while it is down), whether it answers
/// (a `PING` a second), and its reconnects (it answers again) are in the metrics.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_shared_redis_errors_and_reconnects_are_counted() {
    let mut redis_server = common::redis::RedisServer::start();
    let redis = mcp::redis::Redis::connect(&redis_server.url()).await.unwrap();
    let (metrics, server) = shared_with_metrics(&redis);
    let text = metrics.render();
    assert_eq!(sample(&text, "mcp_server_redis_errors_total", ""), Some(0.0), "{text}");
    assert_eq!(sample(&text, "mcp_server_redis_reconnects_total", ""), Some(0.0), "{text}");
    assert_eq!(sample(&text, "mcp_server_redis_up", ""), Some(1.0), "{text}");

    redis_server.stop();
    server.notify_resource_updated("test://a");
    until(&metrics, "a failed command", |t| sample(t, "mcp_server_redis_errors_total", "") >= Some(1.0)).await;
    until(&metrics, "Redis down", |t| sample(t, "mcp_server_redis_up", "") == Some(0.0)).await;
    let _redis_server = tokio::task::spawn_blocking(move || {
        redis_server.restart(Duration::from_millis(100));
        redis_server
    })
    .await
    .unwrap();
    until(&metrics, "a reconnect", |t| sample(t, "mcp_server_redis_reconnects_total", "") >= Some(1.0)).await;
    until(&metrics, "Redis up", |t| sample(t, "mcp_server_redis_up", "") == Some(1.0)).await;
}

/// Reports progress and logs a message.
#[mcp::tool]
async fn chats(ctx: &Context) -> String {
    ctx.report_progress(1.0, Some(1.0), Some("done"));
    ctx.info("said");
    "chatted".into()
}

/// A server that proxies another over HTTP counts what it passed on from it: the call's progress and log message
/// (which come on the call's own stream).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn what_a_proxy_passes_on_is_counted() {
    let upstream = mcp::Server::builder().tool::<chats>().build().unwrap();
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/mcp", listener.local_addr().unwrap());
    tokio::spawn(upstream.serve_http_on(listener, mcp::HttpOptions::new()));
    let metrics = mcp::Metrics::new();
    let proxy =
        mcp::Server::builder().proxy("up", mcp::compose::Upstream::http(url)).metrics(&metrics).build().unwrap();
    let client = Client::builder().era(EraChoice::V2026).in_process(proxy).await.unwrap();
    let text = metrics.render();
    assert_eq!(sample(&text, "mcp_server_proxy_events_total", "kind=\"progress\""), Some(0.0), "{text}");
    // The upstream's tools are listed once the proxy has connected to it.
    let deadline = Instant::now() + Duration::from_secs(30);
    while !client.list_tools().await.unwrap().iter().any(|t| t.name == "up_chats") {
        assert!(Instant::now() < deadline, "the proxy never listed the upstream's tool");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let heard = Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let seen = heard.clone();
    let result = client
        .call_tool("up_chats", json!({}))
        .on_progress(move |_| {
            seen.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        })
        .await
        .unwrap();
    assert_eq!(result.text(), Some("chatted"));
    let text = until(&metrics, "the progress passed on", |t| {
        sample(t, "mcp_server_proxy_events_total", "kind=\"progress\"") == Some(1.0)
    })
    .await;
    assert_eq!(sample(&text, "mcp_server_proxy_events_total", "kind=\"message\""), Some(1.0), "{text}");
    assert_eq!(heard.load(std::sync::atomic::Ordering::SeqCst), 1, "the caller heard it");
}

/// A 2025 stream ended twice (by its own end and by its session's, at once), or written after its end, is no Redis
/// error: the event log's second end is refused by Redis (its id is not past the first), which is nothing lost, and
/// the writes beside it in the same pipeline are made. (The dashboard's Redis panel showed such an end as an error.)
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stream_ended_twice_in_the_redis_event_log_is_no_redis_error() {
    use mcp::store::EventLog;
    let redis_server = common::redis::RedisServer::start();
    let redis = mcp::redis::Redis::connect(&redis_server.url()).await.unwrap();
    let (metrics, _server) = shared_with_metrics(&redis);
    let log = redis.event_log();
    let data: Arc<str> = Arc::from("{}");
    log.append("session", "a", 1, &data);
    log.end("session", "a");
    log.end("session", "a");
    log.append("session", "a", 2, &data);
    log.append("session", "b", 1, &data);
    log.append("session", "b", 2, &data);
    let mut read = None;
    for _ in 0..50 {
        read = log.read_after("session", "b", 1, 10).await.unwrap();
        if read.is_some() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert_eq!(read.expect("the write beside them is made").events.len(), 1);
    let a = log.read_after("session", "a", 1, 10).await.unwrap().expect("stream a");
    assert_eq!((a.events.len(), a.ended), (0, true), "after its one event, the end; nothing written after it");
    let text = metrics.render();
    assert_eq!(sample(&text, "mcp_server_redis_errors_total", ""), Some(0.0), "{text}");
}
