//! `--log-format json` (and `MCP_LOG_FORMAT=json`): every line the server writes to stderr is one JSON object, and an
//! event logged while a request is served carries the request's span (method, tool, ids by the OpenTelemetry MCP
//! conventions) with the caller's trace id, so a log pipeline joins it to the trace. The middleware example logs
//! each tool call from its layer, inside the request.

use crate::common;

use common::http::HttpServer;
use mcp::client::{Client, EraChoice};
use serde_json::{json, Value};

const TRACE: &str = "4bf92f3577b34da6a3ce929d0e0e4736";

/// The server's stderr lines, each parsed: a line that is not a JSON object fails the test.
fn parsed(server: &HttpServer) -> Vec<Value> {
    let text = server.stderr_text();
    text.lines()
        .map(|line| {
            let value: Value = serde_json::from_str(line).unwrap_or_else(|e| panic!("not JSON ({e}): {line}\n{text}"));
            assert!(value.is_object(), "{line}");
            value
        })
        .collect()
}

async fn call_with_trace(server: &HttpServer) {
    for era in [EraChoice::V2025, EraChoice::V2026] {
        let client = Client::builder().era(era).http(&server.url).await.unwrap();
        let meta = json!({"traceparent": format!("00-{TRACE}-00f067aa0ba902b7-01")});
        client.call_tool("echo", json!({"text": "hi"})).meta(meta).await.unwrap();
        client.close().await;
    }
}

#[tokio::test]
async fn json_logs_carry_the_request_and_its_trace() {
    let server = HttpServer::start_binary(common::example("middleware"), &["--log-format", "json"]);
    call_with_trace(&server).await;
    assert!(server.wait_stderr("tool call", std::time::Duration::from_secs(10)).await, "{}", server.stderr_text());
    let lines = parsed(&server);
    // The start-up line: a plain event, no request.
    let serving = lines.iter().find(|l| l["message"] == "serving Streamable HTTP").expect("the start-up line");
    assert_eq!(serving["level"], "INFO", "{serving}");
    assert!(serving["timestamp"].is_string() && serving.get("span").is_none(), "{serving}");
    let calls: Vec<&Value> = lines.iter().filter(|l| l["message"] == "tool call").collect();
    assert_eq!(calls.len(), 2, "one a call, in each era: {lines:#?}");
    for (call, version) in calls.iter().zip(["2025-11-25", "2026-07-28"]) {
        // The event's own fields at the top, the request's span under `span`.
        assert_eq!(call["tool"], "echo", "{call}");
        assert_eq!(call["outcome"], "ok", "{call}");
        let span = &call["span"];
        assert_eq!(span["name"], "mcp.request", "{call}");
        assert_eq!(span["mcp.method.name"], "tools/call", "{call}");
        assert_eq!(span["gen_ai.tool.name"], "echo", "{call}");
        assert_eq!(span["mcp.protocol.version"], version, "{call}");
        assert_eq!(span["network.transport"], "tcp", "{call}");
        assert_eq!(span["client.address"], "127.0.0.1", "{call}");
        assert!(span["jsonrpc.request.id"].is_number() || span["jsonrpc.request.id"].is_string(), "{call}");
        assert_eq!(span["trace_id"], TRACE, "joins the caller's trace: {call}");
    }
}

/// `MCP_LOG_FORMAT=json` does what the flag does; an unknown format stops the program with an error naming both.
#[tokio::test]
async fn the_environment_chooses_the_format_too() {
    let server = HttpServer::start_binary_with_env(common::example("middleware"), &[], &[("MCP_LOG_FORMAT", "json")]);
    call_with_trace(&server).await;
    assert!(server.wait_stderr("tool call", std::time::Duration::from_secs(10)).await, "{}", server.stderr_text());
    assert!(parsed(&server).iter().any(|l| l["span"]["trace_id"] == TRACE));

    let out =
        std::process::Command::new(common::example("middleware")).args(["--log-format", "yaml"]).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    let said = String::from_utf8_lossy(&out.stderr);
    assert!(said.contains("`--log-format yaml`: the formats are `text` and `json`"), "{said}");
}
