//! The conventions' histograms through the OpenTelemetry SDK (feature `opentelemetry`): a [`mcp::Metrics`] given a
//! meter ([`mcp::Metrics::export_to`], what `#[mcp::main]` does when the `OTEL_*` variables ask for OTLP metrics)
//! records `mcp.server.operation.duration`, `mcp.server.session.duration`, `mcp.client.operation.duration` and
//! `mcp.client.session.duration` under their OpenTelemetry names, in seconds, with the conventions' dotted
//! attributes, in both eras; checked with the SDK's in-memory exporter, attribute by attribute.

use std::collections::BTreeMap;

use mcp::client::{Client, EraChoice};
use opentelemetry::metrics::MeterProvider as _;
use opentelemetry_sdk::metrics::data::{AggregatedMetrics, MetricData};
use opentelemetry_sdk::metrics::{InMemoryMetricExporter, PeriodicReader, SdkMeterProvider};
use serde_json::json;

/// Echoes.
#[mcp::tool]
async fn echo(text: String) -> String {
    text
}

/// Fails: a result with `isError`.
#[mcp::tool]
fn refuse() -> Result<String, String> {
    Err("no".into())
}

/// One histogram's data points: each point's attributes (sorted `key=value`, joined by `,`) and its count.
fn points(exporter: &InMemoryMetricExporter, name: &str) -> (String, BTreeMap<String, u64>) {
    let mut unit = String::new();
    let mut found = BTreeMap::new();
    for resource in exporter.get_finished_metrics().unwrap() {
        for scope in resource.scope_metrics() {
            for metric in scope.metrics().filter(|m| m.name() == name) {
                unit = metric.unit().to_owned();
                let AggregatedMetrics::F64(MetricData::Histogram(histogram)) = metric.data() else {
                    panic!("{name} is not an f64 histogram")
                };
                for point in histogram.data_points() {
                    let mut attributes: Vec<String> =
                        point.attributes().map(|kv| format!("{}={}", kv.key, kv.value)).collect();
                    attributes.sort();
                    found.insert(attributes.join(","), point.count());
                }
            }
        }
    }
    (unit, found)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_conventions_histograms_reach_the_opentelemetry_sdk() {
    let exporter = InMemoryMetricExporter::default();
    let provider = SdkMeterProvider::builder().with_reader(PeriodicReader::builder(exporter.clone()).build()).build();
    let metrics = mcp::Metrics::new();
    metrics.export_to(&provider.meter("mcp"));
    let server = mcp::Server::builder().tool::<echo>().tool::<refuse>().metrics(&metrics).build().unwrap();
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(server.serve_http_on(listener, mcp::HttpOptions::new()));

    for era in [EraChoice::V2025, EraChoice::V2026] {
        let client = Client::builder().era(era).metrics(&metrics).http(format!("http://{addr}/mcp")).await.unwrap();
        client.call_tool("echo", json!({"text": "hi"})).await.unwrap();
        client.call_tool("echo", json!({"text": "again"})).await.unwrap();
        assert!(client.call_tool("refuse", json!({})).await.unwrap().is_error());
        client.close().await;
    }
    // The 2025 session ends on the server once the client deleted it.
    tokio::time::sleep(std::time::Duration::from_millis(200)).await;
    provider.force_flush().unwrap();

    let (unit, server_ops) = points(&exporter, "mcp.server.operation.duration");
    assert_eq!(unit, "s");
    for version in ["2025-11-25", "2026-07-28"] {
        let echo = format!(
            "gen_ai.operation.name=execute_tool,gen_ai.tool.name=echo,mcp.method.name=tools/call,\
             mcp.protocol.version={version},network.transport=tcp"
        );
        assert_eq!(server_ops.get(&echo), Some(&2), "{version}: {server_ops:#?}");
        let refused = format!(
            "error.type=tool_error,gen_ai.operation.name=execute_tool,gen_ai.tool.name=refuse,\
             mcp.method.name=tools/call,mcp.protocol.version={version},network.transport=tcp"
        );
        assert_eq!(server_ops.get(&refused), Some(&1), "{version}: {server_ops:#?}");
    }

    let (unit, sessions) = points(&exporter, "mcp.server.session.duration");
    assert_eq!(unit, "s");
    assert_eq!(
        sessions.get("mcp.protocol.version=2025-11-25,network.transport=tcp"),
        Some(&1),
        "the 2025 session: {sessions:#?}"
    );

    let (unit, client_ops) = points(&exporter, "mcp.client.operation.duration");
    assert_eq!(unit, "s");
    let port = addr.port();
    for version in ["2025-11-25", "2026-07-28"] {
        let echo = format!(
            "gen_ai.operation.name=execute_tool,gen_ai.tool.name=echo,mcp.method.name=tools/call,\
             mcp.protocol.version={version},network.transport=tcp,server.address=127.0.0.1,server.port={port}"
        );
        assert_eq!(client_ops.get(&echo), Some(&2), "{version}: {client_ops:#?}");
    }
    let (_, client_sessions) = points(&exporter, "mcp.client.session.duration");
    assert_eq!(client_sessions.values().sum::<u64>(), 2, "one connection per era: {client_sessions:#?}");
}
