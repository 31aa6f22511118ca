//! Every request runs in a `mcp.request` tracing span, its fields named by the OpenTelemetry conventions for MCP
//! (`mcp.method.name`, `jsonrpc.request.id`, `gen_ai.tool.name`, `mcp.protocol.version`, `mcp.session.id`,
//! `network.transport`, `client.address`; and the client's name), entered in the handler's task and in its blocking
//! thread, so an event inside a tool is attributed to its request.

use std::io::Write;
use std::sync::{Arc, Mutex};

use mcp::client::{Client, EraChoice};
use serde_json::json;

/// Logs from an async tool.
#[mcp::tool]
async fn traced_async() -> &'static str {
    tracing::info!("inside the async tool");
    "ok"
}

/// Logs from a plain fn (a blocking thread).
#[mcp::tool]
fn traced_blocking() -> &'static str {
    tracing::info!("inside the blocking tool");
    "ok"
}

/// What the subscriber wrote.
#[derive(Clone, Default)]
struct Captured(Arc<Mutex<Vec<u8>>>);

impl Write for Captured {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(buf);
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

#[tokio::test]
async fn an_event_inside_a_tool_carries_its_requests_span() {
    let captured = Captured::default();
    let writer = captured.clone();
    tracing_subscriber::fmt()
        .with_writer(move || writer.clone())
        .with_ansi(false)
        .with_env_filter("info,mcp::client::request=off")
        .init();
    let server = mcp::Server::builder().tool::<traced_async>().tool::<traced_blocking>().build().unwrap();
    let app = server.http_router(mcp::HttpOptions::new());
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, app).await });
    for era in [EraChoice::V2025, EraChoice::V2026] {
        let client = Client::builder().name("span-tests").era(era).http(format!("http://{addr}/mcp")).await.unwrap();
        client.call_tool("traced_async", json!({})).await.unwrap();
        client.call_tool("traced_blocking", json!({})).await.unwrap();
        client.close().await;
    }
    let text = String::from_utf8(captured.0.lock().unwrap().clone()).unwrap();
    let line = |needle: &str, era: &str| {
        text.lines()
            .find(|l| l.contains(needle) && l.contains(&format!("mcp.protocol.version=\"{era}\"")))
            .unwrap_or_else(|| panic!("no {needle:?} line in the {era} era:\n{text}"))
            .to_owned()
    };
    for era in ["2025-11-25", "2026-07-28"] {
        let inside = line("inside the async tool", era);
        assert!(inside.contains("mcp.request{"), "{inside}");
        for field in [
            "mcp.method.name=\"tools/call\"",
            "gen_ai.tool.name=\"traced_async\"",
            "gen_ai.operation.name=\"execute_tool\"",
            "client=\"span-tests\"",
            "network.transport=\"tcp\"",
            "otel.name=\"tools/call traced_async\"",
            "jsonrpc.request.id=",
        ] {
            assert!(inside.contains(field), "{field} in {inside}");
        }
        let blocking = line("inside the blocking tool", era);
        let tool = "gen_ai.tool.name=\"traced_blocking\"";
        assert!(blocking.contains(tool), "the blocking thread enters the span: {blocking}");
    }
    // A 2025 request names its session; a 2026 one has none.
    assert!(line("inside the async tool", "2025-11-25").contains("mcp.session.id=\"session:"), "{text}");
    assert!(!line("inside the async tool", "2026-07-28").contains("mcp.session.id="), "{text}");

    // Over `serve_http`, the span names the client's address: the connection's peer, or behind a balancer that
    // forwards it (`trust_forwarded`), the address it forwarded.
    for (trust, name, address) in [(false, "direct", "127.0.0.1"), (true, "forwarded", "203.0.113.7")] {
        let server = mcp::Server::builder().tool::<traced_async>().build().unwrap();
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}/mcp", listener.local_addr().unwrap());
        tokio::spawn(server.serve_http_on(listener, mcp::HttpOptions::new().trust_forwarded(trust)));
        for era in [EraChoice::V2025, EraChoice::V2026] {
            let client = Client::builder().name(name).era(era).header("x-forwarded-for", "203.0.113.7");
            let client = client.http(&url).await.unwrap();
            client.call_tool("traced_async", json!({})).await.unwrap();
            client.close().await;
        }
        let text = String::from_utf8(captured.0.lock().unwrap().clone()).unwrap();
        for era in ["2025-11-25", "2026-07-28"] {
            let inside = text
                .lines()
                .find(|l| {
                    l.contains(&format!("client=\"{name}\"")) && l.contains(&format!("mcp.protocol.version=\"{era}\""))
                })
                .unwrap_or_else(|| panic!("no line of client {name} in the {era} era:\n{text}"));
            assert!(inside.contains(&format!("client.address={address}")), "{inside}");
        }
    }
}
