//! OTLP export of an `#[mcp::main]` program's spans and of the conventions' histograms (features `opentelemetry` and
//! `subscriber`), switched on and configured by the standard `OTEL_*` variables, as every OpenTelemetry SDK reads
//! them:
//!
//! | variable | what it does here |
//! |---|---|
//! | `OTEL_EXPORTER_OTLP_ENDPOINT`, `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT` | set: spans are exported there (`/v1/traces` is added to the first) |
//! | `OTEL_EXPORTER_OTLP_METRICS_ENDPOINT` | set: the histograms are exported there (the general endpoint does both) |
//! | `OTEL_TRACES_EXPORTER`, `OTEL_METRICS_EXPORTER` | `otlp` exports (to `http://localhost:4318` without an endpoint), `none` does not |
//! | `OTEL_SDK_DISABLED` | `true`: nothing is exported |
//! | `OTEL_EXPORTER_OTLP_PROTOCOL` | `http/protobuf` (the default); `grpc` is refused, naming the fix |
//! | `OTEL_SERVICE_NAME`, `OTEL_RESOURCE_ATTRIBUTES` | the resource (`service.name` is the program's name otherwise) |
//! | `OTEL_EXPORTER_OTLP_HEADERS`, `_TIMEOUT`, `_COMPRESSION`, `OTEL_BSP_*`, `OTEL_METRIC_EXPORT_INTERVAL` | read by the exporters, the batch processor and the periodic reader |
//!
//! The request spans (`mcp.request`, `mcp.client.request`) go to the exporter whatever the stderr filter says: the
//! exporter's own filter is `RUST_LOG`'s where set, else `info`. The W3C trace-context propagator becomes the global
//! one, so a `traceparent` in a request's `_meta` is the parent of its span.

use opentelemetry::metrics::MeterProvider as _;
use opentelemetry::trace::TracerProvider as _;
use opentelemetry_sdk::metrics::SdkMeterProvider;
use opentelemetry_sdk::trace::SdkTracerProvider;

/// The exporters, while the program runs: dropped (at the end of `main`), they send what they hold.
#[derive(Default)]
pub(super) struct Exporting {
    spans: Option<SdkTracerProvider>,
    meters: Option<SdkMeterProvider>,
}

impl Exporting {
    /// The meter the server's histograms go to, when metrics are exported.
    pub(super) fn meter(&self) -> Option<opentelemetry::metrics::Meter> {
        self.meters.as_ref().map(|m| m.meter("mcp"))
    }
}

impl Drop for Exporting {
    fn drop(&mut self) {
        let within = std::time::Duration::from_secs(5);
        if let Some(Err(e)) = self.spans.as_ref().map(|p| p.shutdown_with_timeout(within)) {
            eprintln!("warning: OTLP: the last spans may not have been exported: {e}");
        }
        if let Some(Err(e)) = self.meters.as_ref().map(|p| p.shutdown_with_timeout(within)) {
            eprintln!("warning: OTLP: the last metrics may not have been exported: {e}");
        }
    }
}

fn var(name: &str) -> Option<String> {
    std::env::var(name).ok().filter(|v| !v.trim().is_empty())
}

/// What the `OTEL_*` variables ask to be exported over OTLP: spans, and metrics.
pub(super) fn wanted() -> Result<(bool, bool), String> {
    wanted_by(&var)
}

/// [`wanted`], with the variables read by `var`.
fn wanted_by(var: &dyn Fn(&str) -> Option<String>) -> Result<(bool, bool), String> {
    if var("OTEL_SDK_DISABLED").is_some_and(|v| v.eq_ignore_ascii_case("true")) {
        return Ok((false, false));
    }
    let general = var("OTEL_EXPORTER_OTLP_ENDPOINT").is_some();
    let spans = signal(var, "TRACES", general || var("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT").is_some())?;
    let metrics = signal(var, "METRICS", general || var("OTEL_EXPORTER_OTLP_METRICS_ENDPOINT").is_some())?;
    Ok((spans, metrics))
}

/// Whether one signal (`TRACES`, `METRICS`) is exported: `OTEL_{signal}_EXPORTER`, else whether an endpoint is set;
/// its protocol must be HTTP/protobuf.
fn signal(var: &dyn Fn(&str) -> Option<String>, signal: &str, endpoint: bool) -> Result<bool, String> {
    let exporter = format!("OTEL_{signal}_EXPORTER");
    let wanted = match var(&exporter).as_deref().map(str::trim) {
        None => endpoint,
        Some("otlp") => true,
        Some("none") => false,
        Some(other) => {
            return Err(format!("{exporter}={other}: this program exports over OTLP only; set it to `otlp` or `none`"))
        }
    };
    if wanted {
        let protocol =
            var(&format!("OTEL_EXPORTER_OTLP_{signal}_PROTOCOL")).or_else(|| var("OTEL_EXPORTER_OTLP_PROTOCOL"));
        if let Some(protocol) = protocol.filter(|p| p.trim() != "http/protobuf") {
            return Err(format!(
                "OTEL_EXPORTER_OTLP_PROTOCOL={protocol}: this program exports OTLP over HTTP only; set it to \
                 `http/protobuf` and point OTEL_EXPORTER_OTLP_ENDPOINT at the collector's HTTP port (4318 by default)"
            ));
        }
    }
    Ok(wanted)
}

/// The resource: `service.name` is the program's unless the variables name it.
fn resource(program: &str) -> opentelemetry_sdk::Resource {
    let named = var("OTEL_SERVICE_NAME").is_some()
        || var("OTEL_RESOURCE_ATTRIBUTES")
            .is_some_and(|a| a.split(',').any(|kv| kv.trim().starts_with("service.name=")));
    let mut resource = opentelemetry_sdk::Resource::builder();
    if !named {
        resource = resource.with_service_name(program.to_owned());
    }
    resource.build()
}

/// Starts exporting what is wanted: the tracer provider with its batch processor and the global propagator (and the
/// tracer for the subscriber's OpenTelemetry layer), the meter provider with its periodic reader.
pub(super) fn start(
    program: &str,
    (spans, metrics): (bool, bool),
) -> Result<(Exporting, Option<opentelemetry_sdk::trace::Tracer>), String> {
    let mut exporting = Exporting::default();
    let mut tracer = None;
    if spans {
        let exporter = opentelemetry_otlp::SpanExporter::builder()
            .with_http()
            .build()
            .map_err(|e| format!("could not set up the OTLP span exporter from the OTEL_* variables: {e}"))?;
        let provider =
            SdkTracerProvider::builder().with_batch_exporter(exporter).with_resource(resource(program)).build();
        opentelemetry::global::set_text_map_propagator(opentelemetry_sdk::propagation::TraceContextPropagator::new());
        opentelemetry::global::set_tracer_provider(provider.clone());
        tracer = Some(provider.tracer("mcp"));
        exporting.spans = Some(provider);
    }
    if metrics {
        let exporter = opentelemetry_otlp::MetricExporter::builder()
            .with_http()
            .build()
            .map_err(|e| format!("could not set up the OTLP metric exporter from the OTEL_* variables: {e}"))?;
        let provider =
            SdkMeterProvider::builder().with_periodic_exporter(exporter).with_resource(resource(program)).build();
        opentelemetry::global::set_meter_provider(provider.clone());
        exporting.meters = Some(provider);
    }
    Ok((exporting, tracer))
}

#[cfg(test)]
mod tests {
    use super::wanted_by;

    fn with(vars: &[(&str, &str)]) -> Result<(bool, bool), String> {
        let vars: Vec<(String, String)> = vars.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect();
        wanted_by(&move |name| vars.iter().find(|(k, _)| k == name).map(|(_, v)| v.clone()))
    }

    #[test]
    fn the_otel_variables_choose_what_is_exported() {
        assert_eq!(with(&[]), Ok((false, false)), "nothing without an endpoint");
        assert_eq!(with(&[("OTEL_EXPORTER_OTLP_ENDPOINT", "http://c:4318")]), Ok((true, true)));
        assert_eq!(with(&[("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "http://c:4318/v1/traces")]), Ok((true, false)));
        assert_eq!(with(&[("OTEL_EXPORTER_OTLP_METRICS_ENDPOINT", "http://c:4318/v1/metrics")]), Ok((false, true)));
        let no_metrics = [("OTEL_EXPORTER_OTLP_ENDPOINT", "http://c:4318"), ("OTEL_METRICS_EXPORTER", "none")];
        assert_eq!(with(&no_metrics), Ok((true, false)));
        assert_eq!(with(&[("OTEL_TRACES_EXPORTER", "otlp")]), Ok((true, false)), "the default endpoint");
        let disabled = [("OTEL_EXPORTER_OTLP_ENDPOINT", "http://c:4318"), ("OTEL_SDK_DISABLED", "true")];
        assert_eq!(with(&disabled), Ok((false, false)));
        let grpc = with(&[("OTEL_EXPORTER_OTLP_ENDPOINT", "http://c:4317"), ("OTEL_EXPORTER_OTLP_PROTOCOL", "grpc")]);
        assert!(grpc.unwrap_err().contains("http/protobuf"));
        let zipkin = with(&[("OTEL_TRACES_EXPORTER", "zipkin")]).unwrap_err();
        assert!(zipkin.contains("OTEL_TRACES_EXPORTER=zipkin") && zipkin.contains("`otlp` or `none`"), "{zipkin}");
    }
}
