//! W3C trace context in `_meta` (feature `opentelemetry`). The 2026-07-28 specification reserves `traceparent`,
//! `tracestate` and `baggage` in `_meta` for it (and 2025-11-25 clients send them too). The server makes the
//! context it finds the parent of the request's `mcp.request` span; the client puts the current span's context in
//! what it sends. Both go through the program's global propagator (`opentelemetry::global::set_text_map_propagator`,
//! typically a `TraceContextPropagator`), and spans reach OpenTelemetry through `tracing-opentelemetry`'s layer in
//! the program's subscriber; without them both are no-ops.

use opentelemetry::propagation::Extractor;
#[cfg(feature = "client")]
use opentelemetry::propagation::Injector;
use serde_json::{Map, Value};
use tracing_opentelemetry::OpenTelemetrySpanExt;

/// The `_meta` keys of trace context.
const KEYS: [&str; 3] = ["traceparent", "tracestate", "baggage"];

struct MetaExtractor<'a>(&'a Map<String, Value>);

impl Extractor for MetaExtractor<'_> {
    fn get(&self, key: &str) -> Option<&str> {
        self.0.get(key)?.as_str()
    }

    fn keys(&self) -> Vec<&str> {
        self.0.keys().map(String::as_str).collect()
    }
}

#[cfg(feature = "client")]
struct MetaInjector<'a>(&'a mut Map<String, Value>);

#[cfg(feature = "client")]
impl Injector for MetaInjector<'_> {
    fn set(&mut self, key: &str, value: String) {
        self.0.insert(key.to_owned(), Value::String(value));
    }
}

/// The trace context of an HTTP request's headers (`traceparent`, ...: what an instrumented HTTP client, a proxy or a
/// mesh put there).
struct HeaderExtractor<'a>(&'a http::HeaderMap);

impl Extractor for HeaderExtractor<'_> {
    fn get(&self, key: &str) -> Option<&str> {
        self.0.get(key)?.to_str().ok()
    }

    fn keys(&self) -> Vec<&str> {
        self.0.keys().map(http::HeaderName::as_str).collect()
    }
}

/// Sets `span`'s parent as the conventions for MCP say: the trace context in the request's `_meta`, where it has
/// one, with the HTTP request's own (its headers') as a link; else the HTTP request's, where it has one.
pub(crate) fn adopt_parent(span: &tracing::Span, meta: Option<&Map<String, Value>>, headers: Option<&http::HeaderMap>) {
    use opentelemetry::trace::TraceContextExt;
    let extract = |carrier: &dyn Extractor| opentelemetry::global::get_text_map_propagator(|p| p.extract(carrier));
    let from_meta = meta.filter(|m| KEYS.iter().any(|k| m.contains_key(*k))).map(|m| extract(&MetaExtractor(m)));
    let from_http = headers.filter(|h| h.contains_key(KEYS[0])).map(|h| extract(&HeaderExtractor(h)));
    // An error only says that the span is not recorded by an OpenTelemetry layer.
    match (from_meta, from_http) {
        (Some(parent), http) => {
            let _ = span.set_parent(parent);
            if let Some(link) = http.map(|cx| cx.span().span_context().clone()).filter(|c| c.is_valid()) {
                span.add_link(link);
            }
        }
        (None, Some(parent)) => {
            let _ = span.set_parent(parent);
        }
        (None, None) => {}
    }
}

/// The trace id and span id of `span` in OpenTelemetry (hex), when an OpenTelemetry layer records it.
pub(crate) fn ids(span: &tracing::Span) -> Option<(String, String)> {
    use opentelemetry::trace::TraceContextExt;
    let cx = span.context();
    let context = cx.span().span_context().clone();
    context.is_valid().then(|| (context.trace_id().to_string(), context.span_id().to_string()))
}

/// Puts the current span's trace context in `meta` (what the client sends), unless the caller put one there.
#[cfg(feature = "client")]
pub(crate) fn inject_current(meta: &mut Map<String, Value>) {
    if KEYS.iter().any(|k| meta.contains_key(*k)) {
        return;
    }
    let cx = tracing::Span::current().context();
    opentelemetry::global::get_text_map_propagator(|p| p.inject_context(&cx, &mut MetaInjector(meta)));
}
