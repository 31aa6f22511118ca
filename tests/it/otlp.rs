//! OTLP export from an `#[mcp::main]` program (feature `opentelemetry`), as an operator turns it on: the standard
//! `OTEL_*` variables and nothing in the code. The bookshop runs with `OTEL_EXPORTER_OTLP_ENDPOINT` pointing at a real
//! collector (Arize Phoenix, tests/common/phoenix.rs), over Streamable HTTP in both eras and over stdio; the tests
//! read back from the collector what it stored: the server spans by the OpenTelemetry conventions for MCP, the
//! caller's trace context from `_meta` as their parent, an error's status. A configuration this build cannot serve
//! stops the program at start with an error naming the fix.

use crate::common;

use std::time::Duration;

use common::example;
use common::http::HttpServer;
use common::phoenix::Phoenix;
use mcp::client::{Client, EraChoice};
use serde_json::{json, Value};

/// A batch is sent every 100 ms here (`OTEL_BSP_SCHEDULE_DELAY`): spans reach the collector while the server runs.
const STORED_WITHIN: Duration = Duration::from_secs(30);

/// The caller's trace: the parent its spans must have.
const TRACE: &str = "0af7651916cd43dd8448eb211c80319c";
const PARENT: &str = "b7ad6b7169203331";

fn traceparent() -> Value {
    json!({ "traceparent": format!("00-{TRACE}-{PARENT}-01") })
}

fn attribute<'a>(span: &'a Value, key: &str) -> &'a Value {
    &span["attributes"][key]
}

/// The span of a call to `tool` in `version`'s era, once the collector has it.
async fn call_span(phoenix: &Phoenix, tool: &str, version: &str) -> Value {
    let name = format!("tools/call {tool}");
    phoenix
        .span(&format!("{name} ({version})"), STORED_WITHIN, |s| {
            s["name"] == name.as_str() && attribute(s, "mcp.protocol.version") == version
        })
        .await
}

async fn http_client(server: &HttpServer, era: EraChoice) -> Client {
    Client::builder().era(era).http(server.url.clone()).await.expect("connect over HTTP")
}

/// Over Streamable HTTP, in both eras: each call's server span is in the collector, named `tools/call TOOL`, a child
/// of the caller's `traceparent`, with the conventions' attributes (and the 2025 session's id); a tool error is a
/// span with an error status and its `error.type`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn http_spans_reach_a_real_collector() {
    let phoenix = tokio::task::spawn_blocking(Phoenix::start).await.unwrap();
    let endpoint = phoenix.endpoint();
    let env = [("OTEL_EXPORTER_OTLP_ENDPOINT", endpoint.as_str()), ("OTEL_BSP_SCHEDULE_DELAY", "100")];
    let server = HttpServer::start_binary_with_env(example("bookshop"), &[], &env);

    for (era, version) in [(EraChoice::V2026, "2026-07-28"), (EraChoice::V2025, "2025-11-25")] {
        let client = http_client(&server, era).await;
        let status = client.call_tool("search_status", json!({})).meta(traceparent()).await.unwrap();
        assert_eq!(status.text(), Some("online"));
        let span = call_span(&phoenix, "search_status", version).await;
        assert_eq!(span["context"]["trace_id"], TRACE, "the caller's trace: {span:#}");
        assert_eq!(span["parent_id"], PARENT, "the caller's span is the parent: {span:#}");
        assert_ne!(span["status_code"], "ERROR", "{span:#}");
        for (key, value) in [
            ("mcp.method.name", "tools/call"),
            ("gen_ai.tool.name", "search_status"),
            ("gen_ai.operation.name", "execute_tool"),
            ("network.transport", "tcp"),
            ("client.address", "127.0.0.1"),
        ] {
            assert_eq!(attribute(&span, key), value, "{key} in {span:#}");
        }
        assert!(attribute(&span, "jsonrpc.request.id").is_string(), "{span:#}");
        let session = attribute(&span, "mcp.session.id");
        match era {
            EraChoice::V2025 => assert!(session.as_str().is_some_and(|s| !s.is_empty()), "{span:#}"),
            _ => assert!(session.is_null(), "no session in the 2026 era: {span:#}"),
        }
        client.close().await;
    }

    // Invalid arguments are a tool error (a result with `isError`, as the specification has it): the span has an
    // error status and `error.type = tool_error`.
    let client = http_client(&server, EraChoice::V2026).await;
    let result = client.call_tool("order_book", json!({"title": 5})).await.unwrap();
    assert!(result.is_error(), "{result:?}");
    let span = phoenix.span("the failed call", STORED_WITHIN, |s| s["status_code"] == "ERROR").await;
    assert_eq!(span["name"], "tools/call order_book", "{span:#}");
    assert_eq!(attribute(&span, "error.type"), "tool_error", "{span:#}");
}

/// Over stdio, with the exporter's default batch delay (5 s): the span of a call is exported when the program ends
/// (the client closes its stdin), with `network.transport = pipe`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stdio_spans_are_sent_when_the_program_ends() {
    let phoenix = tokio::task::spawn_blocking(Phoenix::start).await.unwrap();
    let mut command = tokio::process::Command::new(example("bookshop"));
    command.env("OTEL_EXPORTER_OTLP_ENDPOINT", phoenix.endpoint()).env("OTEL_BSP_SCHEDULE_DELAY", "60000");
    let client = Client::builder().era(EraChoice::V2026).stdio(command).await.expect("connect over stdio");
    client.call_tool("search_status", json!({})).meta(traceparent()).await.unwrap();
    assert!(phoenix.spans().await.is_empty(), "nothing sent before the batch's delay or the end");
    client.close().await;
    let span = call_span(&phoenix, "search_status", "2026-07-28").await;
    assert_eq!(attribute(&span, "network.transport"), "pipe", "{span:#}");
    assert_eq!(span["parent_id"], PARENT, "{span:#}");
}

/// A protocol this build does not export (gRPC) stops the program at start, saying what to set instead.
#[test]
fn a_grpc_endpoint_is_refused_naming_the_fix() {
    let out = std::process::Command::new(example("bookshop"))
        .args(["--http", "127.0.0.1:0"])
        .env("OTEL_EXPORTER_OTLP_ENDPOINT", "http://127.0.0.1:4317")
        .env("OTEL_EXPORTER_OTLP_PROTOCOL", "grpc")
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("OTEL_EXPORTER_OTLP_PROTOCOL=grpc") && stderr.contains("http/protobuf"), "{stderr}");
}
