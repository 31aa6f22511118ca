//! Metrics (`mcp::Metrics`, `--metrics ADDR`): each request the server answers is recorded in
//! `mcp_server_operation_duration_seconds` with the OpenTelemetry MCP conventions' attributes, in both eras, over
//! HTTP and stdio; a tool's failure is `error_type="tool_error"`, a server error its code, a caller's mistake only its
//! status code; a tool the server does not serve is `_OTHER`; a 2025 session's life is recorded when it ends. Then a
//! real Prometheus (Debian's) scrapes a server started with `--metrics` and answers the queries the dashboard asks.

use crate::common;

use std::time::Duration;

use mcp::client::{Client, EraChoice};
use serde_json::json;

/// Says it back.
#[mcp::tool]
async fn echo(text: String) -> String {
    text
}

/// Fails as a tool: a result with `isError`.
#[mcp::tool]
fn refuse(reason: String) -> Result<String, String> {
    Err(reason)
}

/// A tool that fails as the server does: a JSON-RPC error (a hand-written tool answers with one).
fn crash() -> mcp::handler::ToolDef {
    fn input() -> serde_json::Value {
        json!({"type": "object"})
    }
    fn call(_: &mcp::Context, _: mcp::handler::Arguments) -> Result<mcp::CallToolResult, mcp::Error> {
        Err(mcp::Error::internal("the database is gone"))
    }
    mcp::handler::ToolDef::new(
        "crash",
        input,
        || None,
        mcp::handler::ToolHandler::Blocking(call),
        concat!(file!(), ":", line!()),
    )
}

/// A greeting prompt.
#[mcp::prompt]
fn greeting(name: String) -> String {
    format!("Hello, {name}!")
}

/// The value of the sample `name{labels}` in `text` (labels in the order the server writes them), or `None`.
fn sample(text: &str, name: &str, labels: &str) -> Option<f64> {
    let head = format!("{name}{{{labels}}} ");
    text.lines().find_map(|l| l.strip_prefix(&head)).map(|v| v.parse().unwrap())
}

fn server(metrics: &mcp::Metrics) -> mcp::Server {
    mcp::Server::builder()
        .tool::<echo>()
        .tool::<refuse>()
        .tool_def(crash())
        .prompt::<greeting>()
        .metrics(metrics)
        .build()
        .unwrap()
}

#[tokio::test]
async fn each_request_is_recorded_by_the_conventions_in_both_eras() {
    let metrics = mcp::Metrics::new();
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/mcp", listener.local_addr().unwrap());
    tokio::spawn(server(&metrics).serve_http_on(listener, mcp::HttpOptions::new()));
    // The clients record their side in metrics of their own.
    let client_metrics = mcp::Metrics::new();
    for era in [EraChoice::V2025, EraChoice::V2026] {
        let client = Client::builder().era(era).metrics(&client_metrics).http(&url).await.unwrap();
        for _ in 0..3 {
            client.call_tool("echo", json!({"text": "hi"})).await.unwrap();
        }
        assert!(client.call_tool("refuse", json!({"reason": "no"})).await.unwrap().is_error());
        assert!(client.call_tool("crash", json!({})).await.is_err());
        assert!(client.call_tool("no-such-tool", json!({})).await.is_err());
        client.get_prompt("greeting", json!({"name": "Ada"})).await.unwrap();
        client.list_tools().await.unwrap();
        client.close().await;
    }
    let text = metrics.render();
    let count = |labels: &str| sample(&text, "mcp_server_operation_duration_seconds_count", labels);
    for (era, version) in [("2025", "2025-11-25"), ("2026", "2026-07-28")] {
        let tail = format!("mcp_protocol_version=\"{version}\",network_transport=\"tcp\"");
        let call = |tool: &str, rest: &str| {
            format!(
                "mcp_method_name=\"tools/call\",gen_ai_tool_name=\"{tool}\",gen_ai_operation_name=\"execute_tool\",\
                 {rest}{tail}"
            )
        };
        assert_eq!(count(&call("echo", "")), Some(3.0), "{era}: three calls of echo\n{text}");
        assert_eq!(count(&call("refuse", "error_type=\"tool_error\",")), Some(1.0), "{era}: a tool's failure\n{text}");
        let crashed = call("crash", "error_type=\"-32603\",rpc_response_status_code=\"-32603\",");
        assert_eq!(count(&crashed), Some(1.0), "{era}: a server error\n{text}");
        // A caller's mistake is not the server's error: its status code only, and the name it sent is not a label.
        let unknown = call("_OTHER", "rpc_response_status_code=\"-32602\",");
        assert_eq!(count(&unknown), Some(1.0), "{era}: an unknown tool\n{text}");
        let prompt = format!("mcp_method_name=\"prompts/get\",gen_ai_prompt_name=\"greeting\",{tail}");
        assert_eq!(count(&prompt), Some(1.0), "{era}: a prompt\n{text}");
        assert_eq!(count(&format!("mcp_method_name=\"tools/list\",{tail}")), Some(1.0), "{era}: a list\n{text}");
    }
    assert!(!text.contains("no-such-tool"), "a client's string is never a label\n{text}");
    // The 2025 client's session ended (DELETE) and was recorded; none is open; nothing is in flight.
    let session = "mcp_protocol_version=\"2025-11-25\",network_transport=\"tcp\"";
    assert_eq!(sample(&text, "mcp_server_session_duration_seconds_count", session), Some(1.0), "{text}");
    assert_eq!(sample(&text, "mcp_server_sessions_open", "mcp_protocol_version=\"2025-11-25\""), Some(0.0), "{text}");
    assert!(text.contains("\nmcp_server_requests_in_flight 0\n"), "{text}");
    assert!(text.contains("# UNIT mcp_server_operation_duration_seconds seconds"), "{text}");
    // Which program this is: a series every instance has from its start.
    assert!(text.contains("\nmcp_server_info{server_name=\"mcp-server\",server_version=\""), "{text}");
    assert!(text.ends_with("# EOF\n"), "{text}");

    // The clients' side (mcp.client.operation.duration): the same calls, with the server's address and port; on a
    // client every JSON-RPC error is an error.
    let port = url.trim_start_matches("http://127.0.0.1:").trim_end_matches("/mcp");
    let text = client_metrics.render();
    let count = |labels: &str| sample(&text, "mcp_client_operation_duration_seconds_count", labels);
    for version in ["2025-11-25", "2026-07-28"] {
        let peer = format!(
            "mcp_protocol_version=\"{version}\",network_transport=\"tcp\",server_address=\"127.0.0.1\",server_port=\"{port}\""
        );
        let call = |tool: &str, rest: &str| {
            format!(
                "mcp_method_name=\"tools/call\",gen_ai_tool_name=\"{tool}\",gen_ai_operation_name=\"execute_tool\",\
                 {rest}{peer}"
            )
        };
        assert_eq!(count(&call("echo", "")), Some(3.0), "{version}\n{text}");
        assert_eq!(count(&call("refuse", "error_type=\"tool_error\",")), Some(1.0), "{version}\n{text}");
        let unknown = call("no-such-tool", "error_type=\"-32602\",rpc_response_status_code=\"-32602\",");
        assert_eq!(count(&unknown), Some(1.0), "{version}\n{text}");
    }
    // Each client's connection, when it closed.
    let mut text = client_metrics.render();
    for _ in 0..100 {
        if text.lines().filter(|l| l.starts_with("mcp_client_session_duration_seconds_count")).count() == 2 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
        text = client_metrics.render();
    }
    let sessions = text.lines().filter(|l| l.starts_with("mcp_client_session_duration_seconds_count")).count();
    assert_eq!(sessions, 2, "{text}");
}

/// A request cancelled by its client is counted as cancelled, not as answered.
#[tokio::test]
async fn a_cancelled_request_is_counted_as_cancelled() {
    /// Waits for its cancel.
    #[mcp::tool]
    async fn wait(ctx: &mcp::Context) -> String {
        ctx.cancelled().await;
        "cancelled".into()
    }
    let metrics = mcp::Metrics::new();
    let server = mcp::Server::builder().tool::<wait>().metrics(&metrics).build().unwrap();
    let client = Client::builder().in_process(server).await.unwrap();
    let call = client.call_tool("wait", json!({}));
    let _ = tokio::time::timeout(Duration::from_millis(200), call).await;
    let mut text = metrics.render();
    for _ in 0..100 {
        if text.contains("mcp_server_requests_cancelled_total") && text.contains("\nmcp_server_requests_in_flight 0\n")
        {
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
        text = metrics.render();
    }
    let labels = "mcp_method_name=\"tools/call\",gen_ai_tool_name=\"wait\",mcp_protocol_version=\"2026-07-28\"";
    assert_eq!(sample(&text, "mcp_server_requests_cancelled_total", labels), Some(1.0), "{text}");
    assert!(!text.contains("mcp_server_operation_duration_seconds_count{mcp_method_name=\"tools/call\""), "{text}");
    // In process is a pipe, as stdio is.
    client.list_tools().await.unwrap();
    let text = metrics.render();
    let list = "mcp_method_name=\"tools/list\",mcp_protocol_version=\"2026-07-28\",network_transport=\"pipe\"";
    assert_eq!(sample(&text, "mcp_server_operation_duration_seconds_count", list), Some(1.0), "{text}");
}

/// A server started with `--metrics` (the testbed, `#[mcp::main]`), scraped by a real Prometheus: after calls of
/// both eras, PromQL gives each tool's calls per era, its errors, and a latency percentile within the buckets the
/// calls fell in: what the dashboard (`deploy/grafana-dashboard.json`) shows.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_real_prometheus_scrapes_the_calls_of_both_eras() {
    let server = common::http::HttpServer::start(&["--metrics", "127.0.0.1:0"]);
    let target = server.metrics_address().await;
    let prometheus =
        tokio::task::spawn_blocking(move || common::prometheus::Prometheus::start(&[target])).await.unwrap();
    for era in [EraChoice::V2025, EraChoice::V2026] {
        let client = Client::builder().era(era).http(&server.url).await.unwrap();
        for _ in 0..4 {
            client.call_tool("sleep", json!({"ms": 60})).await.unwrap();
        }
        client.call_tool("echo", json!({"text": "hi"})).await.unwrap();
        assert!(client.call_tool("fail", json!({"reason": "no"})).await.unwrap().is_error());
        client.close().await;
    }
    prometheus.scraped(Duration::from_secs(30)).await;
    // Every call is in: 12 of them (a scrape after the last one).
    let calls = "sum(mcp_server_operation_duration_seconds_count{mcp_method_name=\"tools/call\"})";
    let deadline = std::time::Instant::now() + Duration::from_secs(20);
    while prometheus.query(calls).await[0]["value"][1] != "12" {
        assert!(std::time::Instant::now() < deadline, "{}\n{}", prometheus.query(calls).await, prometheus.log());
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    let by = |series: &serde_json::Value, labels: &[&str]| -> Vec<(Vec<String>, String)> {
        let mut rows: Vec<(Vec<String>, String)> = series
            .as_array()
            .unwrap()
            .iter()
            .map(|s| {
                let key = labels.iter().map(|l| s["metric"][l].as_str().unwrap_or_default().to_owned()).collect();
                (key, s["value"][1].as_str().unwrap().to_owned())
            })
            .collect();
        rows.sort();
        rows
    };
    let per_tool = prometheus
        .query(
            // Every tool the server serves has its series from the start, at 0: those called are above it.
            "sum by (gen_ai_tool_name, mcp_protocol_version) \
             (mcp_server_operation_duration_seconds_count{mcp_method_name=\"tools/call\"}) > 0",
        )
        .await;
    let rows = by(&per_tool, &["gen_ai_tool_name", "mcp_protocol_version"]);
    let expected: Vec<(Vec<String>, String)> = [
        ("echo", "2025-11-25", "1"),
        ("echo", "2026-07-28", "1"),
        ("fail", "2025-11-25", "1"),
        ("fail", "2026-07-28", "1"),
        ("sleep", "2025-11-25", "4"),
        ("sleep", "2026-07-28", "4"),
    ]
    .iter()
    .map(|(tool, era, n)| (vec![tool.to_string(), era.to_string()], n.to_string()))
    .collect();
    assert_eq!(rows, expected, "{per_tool}");
    let errors = prometheus
        .query(
            "sum by (gen_ai_tool_name, error_type) (mcp_server_operation_duration_seconds_count{error_type!=\"\"}) > 0",
        )
        .await;
    assert_eq!(
        by(&errors, &["gen_ai_tool_name", "error_type"]),
        vec![(vec!["fail".to_owned(), "tool_error".to_owned()], "2".to_owned())],
        "{errors}"
    );
    // Eight calls of 60 ms: the 99th percentile lies in their bucket, (50 ms, 100 ms].
    let p99 = prometheus
        .query(
            "histogram_quantile(0.99, sum by (le) \
             (mcp_server_operation_duration_seconds_bucket{gen_ai_tool_name=\"sleep\"}))",
        )
        .await;
    let p99: f64 = p99[0]["value"][1].as_str().unwrap().parse().unwrap();
    assert!(p99 > 0.05 && p99 <= 0.1, "p99 of sleep: {p99}");
    // A tool never called is there, at zero, in both eras: its first call will count in rate().
    let primed = prometheus
        .query("mcp_server_operation_duration_seconds_count{gen_ai_tool_name=\"two_blocks\",error_type=\"\"}")
        .await;
    assert_eq!(primed.as_array().unwrap().len(), 2, "{primed}");
    assert!(primed.as_array().unwrap().iter().all(|s| s["value"][1] == "0"), "{primed}");
    let sessions = prometheus.query("sum(mcp_server_session_duration_seconds_count)").await;
    assert_eq!(sessions[0]["value"][1], "1", "the 2025 session ended: {sessions}");
}

/// Open streams are counted while they are open, and a limit's refusal is counted by the limit: here the session
/// cap (one session, busy with its open GET stream), which refuses a second client's `initialize` with 503.
#[tokio::test]
async fn streams_open_and_refusals_are_counted() {
    let metrics = mcp::Metrics::new();
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/mcp", listener.local_addr().unwrap());
    tokio::spawn(server(&metrics).serve_http_on(listener, mcp::HttpOptions::new().max_sessions(1)));
    let mut first = common::http::Client { http: reqwest::Client::new(), url: url.clone(), session: None };
    first.initialize(json!({})).await;
    let stream = first.get(None).await;
    assert_eq!(stream.status(), 200);
    let version = "mcp_protocol_version=\"2025-11-25\"";
    assert_eq!(sample(&metrics.render(), "mcp_server_streams_open", version), Some(1.0), "{}", metrics.render());
    let second = reqwest::Client::new()
        .post(&url)
        .header("accept", "application/json, text/event-stream")
        .header("content-type", "application/json")
        .body(
            common::http::request(
                0,
                "initialize",
                json!({"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "b", "version": "1"}}),
            )
            .to_string(),
        )
        .send()
        .await
        .unwrap();
    assert_eq!(second.status(), 503, "{}", second.text().await.unwrap());
    let text = metrics.render();
    assert_eq!(sample(&text, "mcp_server_refusals_total", "limit=\"sessions\""), Some(1.0), "{text}");
    drop(stream);
    let mut text = metrics.render();
    for _ in 0..100 {
        if sample(&text, "mcp_server_streams_open", version) == Some(0.0) {
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
        text = metrics.render();
    }
    assert_eq!(sample(&text, "mcp_server_streams_open", version), Some(0.0), "the stream closed: {text}");
}
