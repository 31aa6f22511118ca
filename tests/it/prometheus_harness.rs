//! The Prometheus harness (`tests/common/prometheus.rs`) against a real Prometheus: it starts, scrapes a target of
//! the test's own (a tiny HTTP server answering `GET /metrics` in the text format) within its 1 s interval, and a
//! PromQL query through its API gives back the series with its value and labels.

use crate::common;

use std::time::{Duration, Instant};

use common::prometheus::{Prometheus, JOB};

/// What the test's target exports: one counter, one label.
const METRICS: &str = "# TYPE harness_calls_total counter\nharness_calls_total{tool=\"a\"} 3\n";

/// Serves `GET /metrics` with `METRICS` on a free loopback port, for the rest of the test; returns `127.0.0.1:PORT`.
async fn serve_metrics() -> String {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.expect("bind a loopback port");
    let address = listener.local_addr().expect("the bound address").to_string();
    let app = axum::Router::new().route("/metrics", axum::routing::get(|| async { METRICS }));
    tokio::spawn(async move { axum::serve(listener, app).await });
    address
}

// Two worker threads: `Prometheus::start` blocks its thread until ready, while the target keeps answering.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn prometheus_scrapes_a_target_and_answers_promql() {
    let began = Instant::now();
    let target = serve_metrics().await;
    let prometheus = Prometheus::start(std::slice::from_ref(&target));
    assert!(prometheus.url().starts_with("http://127.0.0.1:"), "{}", prometheus.url());
    prometheus.scraped(Duration::from_secs(30)).await;

    let result = prometheus.query("harness_calls_total").await;
    let series = result.as_array().unwrap_or_else(|| panic!("not an array: {result}\n{}", prometheus.log()));
    assert_eq!(series.len(), 1, "{result}");
    let metric = &series[0]["metric"];
    assert_eq!(metric["__name__"], "harness_calls_total", "{result}");
    assert_eq!(metric["tool"], "a", "{result}");
    assert_eq!(metric["job"], JOB, "{result}");
    assert_eq!(metric["instance"], target.as_str(), "{result}");
    // `[unix time, "value"]`: Prometheus writes sample values as strings.
    assert_eq!(series[0]["value"][1], "3", "{result}");
    eprintln!("prometheus started, scraped and answered in {:?}", began.elapsed());
}
