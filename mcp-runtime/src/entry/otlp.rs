//! OTLP export of an `#[mcp::main]` program's spans (features `opentelemetry` and `subscriber`), switched on and
//! configured by the standard `OTEL_*` variables, as every OpenTelemetry SDK reads them:
//!
//! | variable | what it does here |
//! |---|---|
//! | `OTEL_EXPORTER_OTLP_ENDPOINT`, `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT` | set: spans are exported there (`/v1/traces` is added to the first) |
//! | `OTEL_TRACES_EXPORTER` | `otlp` exports (to `http://localhost:4318` without an endpoint), `none` does not |
//! | `OTEL_SDK_DISABLED` | `true`: nothing is exported |
//! | `OTEL_EXPORTER_OTLP_PROTOCOL` | `http/protobuf` (the default); `grpc` is refused, naming the fix |
//! | `OTEL_SERVICE_NAME`, `OTEL_RESOURCE_ATTRIBUTES` | the resource (`service.name` is the program's name otherwise) |
//! | `OTEL_EXPORTER_OTLP_HEADERS`, `_TIMEOUT`, `_COMPRESSION`, `OTEL_BSP_*` | read by the exporter and its batch processor |
//!
//! The request spans (`mcp.request`, `mcp.client.request`) go to the exporter whatever the stderr filter says: the
//! exporter's own filter is `RUST_LOG`'s where set, else `info`. The W3C trace-context propagator becomes the global
//! one, so a `traceparent` in a request's `_meta` is the parent of its span.

use opentelemetry::trace::TracerProvider as _;
use opentelemetry_sdk::trace::SdkTracerProvider;

/// The exporter, while the program runs: dropped (at the end of `main`), it sends what it holds.
pub(super) struct Exporting {
    provider: SdkTracerProvider,
}

impl Drop for Exporting {
    fn drop(&mut self) {
        if let Err(e) = self.provider.shutdown_with_timeout(std::time::Duration::from_secs(5)) {
            eprintln!("warning: OTLP: the last spans may not have been exported: {e}");
        }
    }
}

fn var(name: &str) -> Option<String> {
    std::env::var(name).ok().filter(|v| !v.trim().is_empty())
}

/// Whether the `OTEL_*` variables ask for spans to be exported over OTLP.
pub(super) fn wanted() -> Result<bool, String> {
    if var("OTEL_SDK_DISABLED").is_some_and(|v| v.eq_ignore_ascii_case("true")) {
        return Ok(false);
    }
    let endpoint = var("OTEL_EXPORTER_OTLP_ENDPOINT").or_else(|| var("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT")).is_some();
    let wanted = match var("OTEL_TRACES_EXPORTER").as_deref().map(str::trim) {
        None => endpoint,
        Some("otlp") => true,
        Some("none") => false,
        Some(other) => {
            return Err(format!(
                "OTEL_TRACES_EXPORTER={other}: this program exports spans over OTLP only; set it to `otlp` or `none`"
            ))
        }
    };
    if wanted {
        let protocol = var("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL").or_else(|| var("OTEL_EXPORTER_OTLP_PROTOCOL"));
        if let Some(protocol) = protocol.filter(|p| p.trim() != "http/protobuf") {
            return Err(format!(
                "OTEL_EXPORTER_OTLP_PROTOCOL={protocol}: this program exports OTLP over HTTP only; set it to \
                 `http/protobuf` and point OTEL_EXPORTER_OTLP_ENDPOINT at the collector's HTTP port (4318 by default)"
            ));
        }
    }
    Ok(wanted)
}

/// Starts exporting: the tracer provider with its batch processor, the global propagator, and the tracer for the
/// subscriber's OpenTelemetry layer.
pub(super) fn start(program: &str) -> Result<(Exporting, opentelemetry_sdk::trace::Tracer), String> {
    let exporter = opentelemetry_otlp::SpanExporter::builder()
        .with_http()
        .build()
        .map_err(|e| format!("could not set up the OTLP exporter from the OTEL_* variables: {e}"))?;
    let named = var("OTEL_SERVICE_NAME").is_some()
        || var("OTEL_RESOURCE_ATTRIBUTES")
            .is_some_and(|a| a.split(',').any(|kv| kv.trim().starts_with("service.name=")));
    let mut resource = opentelemetry_sdk::Resource::builder();
    if !named {
        resource = resource.with_service_name(program.to_owned());
    }
    let provider = SdkTracerProvider::builder().with_batch_exporter(exporter).with_resource(resource.build()).build();
    opentelemetry::global::set_text_map_propagator(opentelemetry_sdk::propagation::TraceContextPropagator::new());
    opentelemetry::global::set_tracer_provider(provider.clone());
    let tracer = provider.tracer("mcp");
    Ok((Exporting { provider }, tracer))
}
