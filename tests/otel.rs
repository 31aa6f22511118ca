//! W3C trace context (feature `opentelemetry`): a `traceparent` in a request's `_meta` becomes the parent of its
//! `mcp.request` span, in both eras and for async and blocking handlers, and a span the tool opens is that span's
//! child; our client puts the caller's context in `_meta`, so the server's spans join the caller's trace; the HTTP
//! request's own `traceparent` header is a link of the request span (or its parent when `_meta` has none). Checked
//! through a real OpenTelemetry SDK pipeline (tracer provider, W3C propagators, tracing-opentelemetry's layer) with
//! an exporter that keeps what it is given.

use std::future::IntoFuture;
use std::sync::{Arc, Mutex};

use mcp::client::{Client, EraChoice};
use opentelemetry::propagation::TextMapCompositePropagator;
use opentelemetry::trace::{SpanId, SpanKind, Status, TraceContextExt, TraceId, TracerProvider as _};
use opentelemetry_sdk::error::OTelSdkResult;
use opentelemetry_sdk::propagation::{BaggagePropagator, TraceContextPropagator};
use opentelemetry_sdk::trace::{SdkTracerProvider, SpanData, SpanExporter};
use serde_json::json;
use tracing_opentelemetry::OpenTelemetrySpanExt;
use tracing_subscriber::layer::SubscriberExt;
use tracing_subscriber::util::SubscriberInitExt;

/// Does its work in a span of its own.
#[mcp::tool]
async fn traced_async() -> &'static str {
    let _work = tracing::info_span!("async work").entered();
    "ok"
}

/// Fails: a result with `isError`.
#[mcp::tool]
fn refuses() -> Result<String, String> {
    Err("no".into())
}

/// Does its work in a span of its own, on a blocking thread.
#[mcp::tool]
fn traced_blocking() -> &'static str {
    let _work = tracing::info_span!("blocking work").entered();
    "ok"
}

/// Keeps every finished span.
#[derive(Clone, Debug, Default)]
struct Keep(Arc<Mutex<Vec<SpanData>>>);

impl SpanExporter for Keep {
    async fn export(&self, batch: Vec<SpanData>) -> OTelSdkResult {
        self.0.lock().unwrap().extend(batch);
        Ok(())
    }
}

impl Keep {
    fn take(&self) -> Vec<SpanData> {
        std::mem::take(&mut *self.0.lock().unwrap())
    }
}

const TRACE: &str = "0af7651916cd43dd8448eb211c80319c";
const PARENT: &str = "b7ad6b7169203331";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn trace_context_in_meta_is_the_parent_of_the_request_span() {
    opentelemetry::global::set_text_map_propagator(TextMapCompositePropagator::new(vec![
        Box::new(TraceContextPropagator::new()),
        Box::new(BaggagePropagator::new()),
    ]));
    let kept = Keep::default();
    let provider = SdkTracerProvider::builder().with_simple_exporter(kept.clone()).build();
    tracing_subscriber::registry()
        .with(tracing_opentelemetry::layer().with_tracer(provider.tracer("otel-test")))
        .with(tracing_subscriber::filter::LevelFilter::INFO)
        .init();

    let server =
        mcp::Server::builder().tool::<traced_async>().tool::<traced_blocking>().tool::<refuses>().build().unwrap();
    let app = server.http_router(mcp::HttpOptions::new());
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, app).await });

    let trace_id = TraceId::from_hex(TRACE).unwrap();
    let parent_id = SpanId::from_hex(PARENT).unwrap();
    for era in [EraChoice::V2025, EraChoice::V2026] {
        let client = Client::builder().name("otel-test").era(era).http(format!("http://{addr}/mcp")).await.unwrap();
        // A context given by hand, as another SDK's client sends it.
        for tool in ["traced_async", "traced_blocking"] {
            let meta = json!({ "traceparent": format!("00-{TRACE}-{PARENT}-01"), "baggage": "tenant=acme" });
            client.call_tool(tool, json!({})).meta(meta).await.unwrap();
        }
        provider.force_flush().unwrap();
        let spans = kept.take();
        let requests: Vec<&SpanData> =
            spans.iter().filter(|s| s.span_kind == SpanKind::Server && s.span_context.trace_id() == trace_id).collect();
        assert_eq!(requests.len(), 2, "{era:?}: {:#?}", names(&spans));
        for request in &requests {
            assert!(request.name.starts_with("tools/call traced_"), "{era:?}: named by the conventions: {request:#?}");
            assert_eq!(request.parent_span_id, parent_id, "{era:?}");
            assert!(request.parent_span_is_remote, "{era:?}");
            // The tool's own span is the request span's child.
            let work = spans
                .iter()
                .find(|s| s.name.ends_with(" work") && s.parent_span_id == request.span_context.span_id())
                .unwrap_or_else(|| panic!("{era:?}: no child of {request:#?} in {:#?}", names(&spans)));
            assert_eq!(work.span_context.trace_id(), trace_id);
        }

        // Our client sends the caller's own context: the server's span joins the caller's trace.
        let caller = tracing::info_span!("caller");
        let caller_cx = caller.context();
        let caller_trace = caller_cx.span().span_context().trace_id();
        let caller_id = caller_cx.span().span_context().span_id();
        assert_ne!(caller_trace, TraceId::INVALID);
        tracing::Instrument::instrument(client.call_tool("traced_async", json!({})).into_future(), caller.clone())
            .await
            .unwrap();
        drop(caller);
        client.close().await;
        provider.force_flush().unwrap();
        let spans = kept.take();
        let request = spans
            .iter()
            .find(|s| s.span_kind == SpanKind::Server && s.span_context.trace_id() == caller_trace)
            .unwrap_or_else(|| panic!("{era:?}: no request span in the caller's trace: {:#?}", names(&spans)));
        // The client's own span (kind CLIENT, named as the server's) is the caller's child and the server's parent.
        let call = spans
            .iter()
            .find(|s| s.span_kind == SpanKind::Client && s.span_context.span_id() == request.parent_span_id)
            .unwrap_or_else(|| panic!("{era:?}: the server's parent is no client span: {:#?}", names(&spans)));
        assert_eq!(call.name, "tools/call traced_async", "{era:?}");
        assert_eq!(call.parent_span_id, caller_id, "{era:?}");
        let version = if era == EraChoice::V2025 { "2025-11-25" } else { "2026-07-28" };
        let server_side = [
            ("mcp.method.name", "tools/call"),
            ("gen_ai.tool.name", "traced_async"),
            ("gen_ai.operation.name", "execute_tool"),
            ("mcp.protocol.version", version),
            ("network.transport", "tcp"),
        ];
        for (key, value) in server_side {
            assert_eq!(attribute(request, key).as_deref(), Some(value), "{era:?}: server span's {key}: {request:#?}");
        }
        assert!(attribute(request, "jsonrpc.request.id").is_some(), "{request:#?}");
        let port = addr.port().to_string();
        let client_side = [
            ("mcp.method.name", "tools/call"),
            ("gen_ai.tool.name", "traced_async"),
            ("mcp.protocol.version", version),
            ("network.transport", "tcp"),
            ("server.address", "127.0.0.1"),
            ("server.port", port.as_str()),
        ];
        for (key, value) in client_side {
            assert_eq!(attribute(call, key).as_deref(), Some(value), "{era:?}: client span's {key}: {call:#?}");
        }
        // Its trace and span ids are on the request's span (and so on every log event of the request).
        assert_eq!(attribute(request, "trace_id"), Some(caller_trace.to_string()), "{request:#?}");
        assert_eq!(attribute(request, "span_id"), Some(request.span_context.span_id().to_string()), "{request:#?}");

        assert!(attribute(request, "gen_ai.tool.call.arguments").is_none(), "opt-in only: {request:#?}");
        // A tool's failure: an error status and `error.type` on both sides.
        let client = Client::builder().name("otel-test").era(era).http(format!("http://{addr}/mcp")).await.unwrap();
        assert!(client.call_tool("refuses", json!({})).await.unwrap().is_error());
        client.close().await;
        provider.force_flush().unwrap();
        let spans = kept.take();
        for kind in [SpanKind::Server, SpanKind::Client] {
            let failed = spans
                .iter()
                .find(|s| s.span_kind == kind && s.name == "tools/call refuses")
                .unwrap_or_else(|| panic!("{era:?}: no {kind:?} span of the failed call: {:#?}", names(&spans)));
            assert!(matches!(failed.status, Status::Error { .. }), "{era:?} {kind:?}: {failed:#?}");
            assert_eq!(attribute(failed, "error.type").as_deref(), Some("tool_error"), "{failed:#?}");
        }
    }
    tool_content_is_captured_when_asked(&kept, &provider).await;
    http_trace_context_is_a_link_or_the_parent(&format!("http://{addr}/mcp"), &kept, &provider).await;
}

/// The HTTP request's own trace context (its `traceparent` header, as an instrumented HTTP client, a proxy or a mesh
/// sends it) is, as the conventions for MCP say, a link of the request span when `_meta` has a context of its own
/// (which stays the parent), and the parent when `_meta` has none.
async fn http_trace_context_is_a_link_or_the_parent(url: &str, kept: &Keep, provider: &SdkTracerProvider) {
    const HTTP_TRACE: &str = "4bf92f3577b34da6a3ce929d0e0e4736";
    const HTTP_PARENT: &str = "00f067aa0ba902b7";
    let client = Client::builder()
        .name("otel-test")
        .era(EraChoice::V2026)
        .header("traceparent", format!("00-{HTTP_TRACE}-{HTTP_PARENT}-01"))
        .http(url)
        .await
        .unwrap();
    let meta = json!({ "traceparent": format!("00-{TRACE}-{PARENT}-01") });
    client.call_tool("traced_async", json!({})).meta(meta).await.unwrap();
    client.close().await;
    // Without a context in `_meta` (which our client always sends: its own span's), as a plain HTTP client posts.
    let envelope = json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {},
        "io.modelcontextprotocol/clientInfo": {"name": "plain", "version": "1"},
    });
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
        "params": {"name": "traced_blocking", "arguments": {}, "_meta": envelope}});
    let answer = reqwest::Client::new()
        .post(url)
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream")
        .header("mcp-protocol-version", "2026-07-28")
        .header("mcp-method", "tools/call")
        .header("mcp-name", "traced_blocking")
        .header("traceparent", format!("00-{HTTP_TRACE}-{HTTP_PARENT}-01"))
        .body(body.to_string())
        .send()
        .await
        .unwrap();
    assert_eq!(answer.status(), 200);
    provider.force_flush().unwrap();
    let spans = kept.take();
    let server_span = |name: &str| {
        spans
            .iter()
            .find(|s| s.span_kind == SpanKind::Server && s.name == name)
            .unwrap_or_else(|| panic!("no server span {name}: {:#?}", names(&spans)))
    };
    let both = server_span("tools/call traced_async");
    assert_eq!(both.span_context.trace_id(), TraceId::from_hex(TRACE).unwrap(), "`_meta` is the parent: {both:#?}");
    assert_eq!(both.parent_span_id, SpanId::from_hex(PARENT).unwrap(), "{both:#?}");
    let links: Vec<_> = both.links.iter().map(|l| (l.span_context.trace_id(), l.span_context.span_id())).collect();
    let http = (TraceId::from_hex(HTTP_TRACE).unwrap(), SpanId::from_hex(HTTP_PARENT).unwrap());
    assert_eq!(links, [http], "the HTTP request's context is a link: {both:#?}");
    let only_http = server_span("tools/call traced_blocking");
    assert_eq!((only_http.span_context.trace_id(), only_http.parent_span_id), http, "{only_http:#?}");
    assert!(only_http.links.is_empty(), "{only_http:#?}");
}

/// With `capture_tool_content` (opt-in, as the conventions say), a tool call's arguments and result are on its span,
/// as JSON; without it (above), neither is.
async fn tool_content_is_captured_when_asked(kept: &Keep, provider: &SdkTracerProvider) {
    let server = mcp::Server::builder().tool::<shout>().capture_tool_content(true).build().unwrap();
    let client = Client::in_process(server).await.unwrap();
    client.call_tool("shout", json!({"text": "hi"})).await.unwrap();
    provider.force_flush().unwrap();
    let spans = kept.take();
    let call = spans
        .iter()
        .find(|s| s.span_kind == SpanKind::Server && s.name == "tools/call shout")
        .unwrap_or_else(|| panic!("no server span of shout: {:#?}", names(&spans)));
    assert_eq!(attribute(call, "gen_ai.tool.call.arguments").as_deref(), Some(r#"{"text":"hi"}"#), "{call:#?}");
    let result = attribute(call, "gen_ai.tool.call.result").unwrap_or_default();
    assert!(result.contains(r#""text":"HI""#), "{result}");
}

/// Says it louder.
#[mcp::tool]
fn shout(text: String) -> String {
    text.to_uppercase()
}

/// The value of a span's attribute, as a string.
fn attribute(span: &SpanData, key: &str) -> Option<String> {
    span.attributes.iter().find(|kv| kv.key.as_str() == key).map(|kv| kv.value.to_string())
}

fn names(spans: &[SpanData]) -> Vec<String> {
    spans
        .iter()
        .map(|s| format!("{} trace={} parent={}", s.name, s.span_context.trace_id(), s.parent_span_id))
        .collect()
}
