//! A server's metrics (`mcp::Metrics`), by the OpenTelemetry semantic conventions for MCP, in Prometheus's format.

use std::fmt;
use std::sync::atomic::AtomicU64;
use std::sync::{Arc, OnceLock, RwLock};
use std::time::{Duration, Instant};

use prometheus_client::collector::Collector;
use prometheus_client::encoding::{DescriptorEncoder, EncodeMetric};
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::{Family, MetricConstructor};
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::Histogram;
use prometheus_client::metrics::info::Info;
use prometheus_client::registry::Registry;
use rustc_hash::FxHashMap;

use crate::base::name::Name;

mod labels;
#[cfg(feature = "opentelemetry")]
mod otel;
mod state;
mod timing;

use labels::{Cancelled, Era, ErrorType, Key, Operation, Refusal, Relayed, SessionEnd, TaskEnd};
pub(crate) use labels::{ClientOperation, Ended, Peer, Request, Transport, Versions};
pub(crate) use state::{ReadRedis, ReadTasks};
pub(crate) use timing::{SessionTiming, StreamOpen, Timing};

/// The buckets of the duration histograms, in seconds: the conventions' boundaries (10 ms to 300 s), after four
/// finer ones, since most tool calls take less than 10 ms and their percentiles would otherwise all read 10 ms.
const BUCKETS: [f64; 18] =
    [0.0005, 0.001, 0.002, 0.005, 0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1.0, 2.0, 5.0, 10.0, 30.0, 60.0, 120.0, 300.0];

/// The name recorded for a tool or prompt the server does not serve.
pub(crate) const OTHER: &str = "_OTHER";

/// Metrics of a server, named by the OpenTelemetry semantic conventions for MCP and exported in Prometheus's text
/// format.
///
/// A [`Metrics`] is given to [`ServerBuilder::metrics`](crate::ServerBuilder::metrics) (`#[mcp::main]` does it for
/// `--metrics ADDR`) and served on a listener of its own ([`Metrics::serve`]) or in an application's router
/// ([`Metrics::router`]); Prometheus scrapes it. What it records:
///
/// - `mcp_server_operation_duration_seconds` (the conventions' `mcp.server.operation.duration`): a histogram of each
///   request the server answered, from its arrival to its answer, with the attributes the conventions list:
///   `mcp_method_name`, `gen_ai_tool_name` or `gen_ai_prompt_name`, `gen_ai_operation_name` (`execute_tool` on
///   tool calls), `error_type` (the JSON-RPC code, or `tool_error` for a tool result with `isError`),
///   `rpc_response_status_code`, `mcp_protocol_version` and `network_transport` (`tcp` over HTTP, `pipe` on stdio).
///   Calls, errors and latency percentiles per tool come from it.
/// - `mcp_server_session_duration_seconds` (`mcp.server.session.duration`): each 2025 session's life, when it ends.
/// - The runtime's own state: `mcp_server_requests_in_flight`, `mcp_server_sessions_open`,
///   `mcp_server_streams_open`, `mcp_server_requests_cancelled_total`, `mcp_server_refusals_total`,
///   `mcp_server_outbound_queued_bytes` (what waits for slow readers), `mcp_server_tasks_running` and
///   `mcp_server_tasks_ended_total` by status, a shared Redis's `mcp_server_redis_up`, `_errors_total` and
///   `_reconnects_total`, and what mounted upstreams sent that was passed on (`mcp_server_proxy_events_total`). The
///   gauges of tasks, queued bytes and Redis are read when scraped, at no cost to a request.
///
/// Low cardinality by construction: no request id, session id or URI is a label, and a tool or prompt the server
/// does not serve (any name a client sends) is recorded as `_OTHER`, so no client can grow the number of series.
///
/// ```no_run
/// # #[allow(dead_code)]
/// # async fn run() -> std::io::Result<()> {
/// let metrics = mcp::Metrics::new();
/// let server = mcp::Server::builder().registered().metrics(&metrics).build().unwrap();
/// // Prometheus scrapes http://127.0.0.1:9464/metrics.
/// tokio::spawn(metrics.serve("127.0.0.1:9464".parse().unwrap()));
/// server.serve_http("127.0.0.1:8000".parse().unwrap(), mcp::HttpOptions::new()).await
/// # }
/// ```
///
/// Cheap to clone: every clone records into the same metrics. Give it to one server.
#[derive(Clone)]
pub struct Metrics {
    inner: Arc<Inner>,
}

struct Inner {
    registry: Registry,
    operations: Family<Operation, Histogram, Buckets>,
    /// Each label set's histogram of `operations`, found by the addresses of its static names: a few instructions to
    /// hash, where the family's map hashes the names' bytes (SipHash, about 900 instructions a call).
    seen: RwLock<FxHashMap<Key, Seen>>,
    /// The conventions' histograms in OpenTelemetry too, once [`Metrics::export_to`] gave a meter.
    #[cfg(feature = "opentelemetry")]
    otel: OnceLock<otel::Instruments>,
    #[cfg_attr(not(feature = "http"), allow(dead_code))]
    sessions: Family<SessionEnd, Histogram, Buckets>,
    in_flight: Gauge,
    #[cfg_attr(not(feature = "http"), allow(dead_code))]
    sessions_open: Family<Era, Gauge>,
    cancelled: Family<Cancelled, Counter>,
    #[cfg_attr(not(feature = "http"), allow(dead_code))]
    streams_open: Family<Era, Gauge>,
    #[cfg_attr(not(feature = "http"), allow(dead_code))]
    refusals: Family<Refusal, Counter>,
    #[cfg_attr(not(feature = "client"), allow(dead_code))]
    client_operations: Family<ClientOperation, Histogram, Buckets>,
    #[cfg_attr(not(feature = "client"), allow(dead_code))]
    client_sessions: Family<Peer, Histogram, Buckets>,
    /// The server's name and version, once a server is built with these metrics (`mcp_server_info`).
    server: Arc<OnceLock<(String, String)>>,
    tasks_ended: Family<TaskEnd, Counter>,
    #[cfg_attr(not(feature = "client"), allow(dead_code))]
    relayed: Family<Relayed, Counter>,
    /// What is read of the runtime when scraped (tasks running, a shared Redis's health).
    watched: Arc<state::Watched>,
}

/// A label set of `operations` seen before: its histogram, and (with an OpenTelemetry meter) its attributes.
struct Seen {
    histogram: Histogram,
    /// The tool or prompt, when its name was made at run time: held so that its address, part of the key, stays its.
    _target: Option<Name>,
    #[cfg(feature = "opentelemetry")]
    attributes: Option<Arc<[opentelemetry::KeyValue]>>,
}

/// `mcp_server_info{server_name, server_version} 1`: which program an instance runs, a series every instance has
/// from its start (a dashboard finds its instances by it).
#[derive(Debug)]
struct ServerInfo(Arc<OnceLock<(String, String)>>);

impl Collector for ServerInfo {
    fn encode(&self, mut encoder: DescriptorEncoder) -> fmt::Result {
        let Some((name, version)) = self.0.get() else { return Ok(()) };
        let info = Info::new([("server_name", name.as_str()), ("server_version", version.as_str())]);
        let metric =
            encoder.encode_descriptor("mcp_server", "The server's name and version", None, info.metric_type())?;
        info.encode(metric)
    }
}

/// The buckets of session durations, in seconds: a second to a day (sessions last minutes to hours).
const SESSION_BUCKETS: [f64; 13] =
    [1.0, 5.0, 15.0, 30.0, 60.0, 300.0, 900.0, 1800.0, 3600.0, 7200.0, 14400.0, 28800.0, 86400.0];

/// Makes each duration histogram with its buckets.
#[derive(Clone, Copy)]
struct Buckets(&'static [f64]);

impl MetricConstructor<Histogram> for Buckets {
    fn new_metric(&self) -> Histogram {
        Histogram::new(self.0.iter().copied())
    }
}

#[cfg_attr(not(feature = "client"), allow(dead_code))]
impl Metrics {
    /// A request of the program's client ended (answered, or failed: `labels.error_type`).
    pub(crate) fn client_call(&self, labels: &ClientOperation, took: Duration) {
        self.inner.client_operations.get_or_create(labels).observe(took.as_secs_f64());
        #[cfg(feature = "opentelemetry")]
        if let Some(otel) = self.inner.otel.get() {
            otel.client_operation(took.as_secs_f64(), labels);
        }
    }

    /// A connection of the program's client closed after `took`.
    pub(crate) fn client_session(&self, peer: &Peer, took: Duration) {
        self.inner.client_sessions.get_or_create(peer).observe(took.as_secs_f64());
        #[cfg(feature = "opentelemetry")]
        if let Some(otel) = self.inner.otel.get() {
            otel.client_session(took.as_secs_f64(), peer);
        }
    }
}

/// The limits whose refusals are counted (over HTTP).
const LIMITS: [&str; 4] = ["connections", "sessions", "backlog", "draining"];

impl Default for Metrics {
    fn default() -> Self {
        Metrics::new()
    }
}

/// Each metric family's name, unit and help text, in the order they are registered (and rendered).
mod describe {
    use prometheus_client::registry::Unit;

    /// A family's name, its unit (if it has one) and its help text.
    pub(super) type Family = (&'static str, Option<Unit>, &'static str);

    /// `mcp_server_operation_duration`.
    pub(super) const OPERATIONS: Family = (
        "mcp_server_operation_duration",
        Some(Unit::Seconds),
        "The duration of each request the server answered, from its arrival to its answer \
             (mcp.server.operation.duration)",
    );
    /// `mcp_server_session_duration`.
    pub(super) const SESSIONS: Family = (
        "mcp_server_session_duration",
        Some(Unit::Seconds),
        "The duration of each 2025 session, recorded when it ends (mcp.server.session.duration)",
    );
    /// `mcp_server_requests_in_flight`.
    pub(super) const IN_FLIGHT: Family = ("mcp_server_requests_in_flight", None, "Requests being served now");
    /// `mcp_server_sessions_open`.
    pub(super) const SESSIONS_OPEN: Family = ("mcp_server_sessions_open", None, "2025 sessions open on this instance");
    /// `mcp_server_requests_cancelled`.
    pub(super) const CANCELLED: Family = (
        "mcp_server_requests_cancelled",
        None,
        "Requests cancelled before their answer (by their client, or by the server stopping)",
    );
    /// `mcp_server_streams_open`.
    pub(super) const STREAMS_OPEN: Family = (
        "mcp_server_streams_open",
        None,
        "SSE streams open on this instance (2025 POST and GET streams, 2026 request streams and listens)",
    );
    /// `mcp_client_operation_duration`.
    pub(super) const CLIENT_OPERATIONS: Family = (
        "mcp_client_operation_duration",
        Some(Unit::Seconds),
        "The duration of each request the program's client sent, from its sending to its answer \
             (mcp.client.operation.duration)",
    );
    /// `mcp_client_session_duration`.
    pub(super) const CLIENT_SESSIONS: Family = (
        "mcp_client_session_duration",
        Some(Unit::Seconds),
        "The duration of each connection of the program's client to a server, recorded when it closes \
             (mcp.client.session.duration)",
    );
    /// `mcp_server_refusals`.
    pub(super) const REFUSALS: Family = (
        "mcp_server_refusals",
        None,
        "Connections and requests refused at a limit: connections (the connection cap), sessions (the session \
             cap), backlog (a client that does not read its streams), draining (a stopping instance)",
    );
    /// `mcp_server_tasks_ended`.
    pub(super) const TASKS_ENDED: Family = (
        "mcp_server_tasks_ended",
        None,
        "Tasks this instance ran that ended, by status: completed, failed (its tool failed, its TTL ran out, or \
             its instance died), cancelled",
    );
    /// `mcp_server_proxy_events`.
    pub(super) const RELAYED: Family = (
        "mcp_server_proxy_events",
        None,
        "What mounted upstreams sent that the server passed on to its clients, by kind: progress, message (a \
             log message), resource_updated, list_changed",
    );
}

/// Registers `metric` under its name (in its unit, if it has one) with its help text, and gives it back to record
/// into.
fn registered<M: prometheus_client::registry::Metric + Clone>(
    registry: &mut Registry,
    (name, unit, help): describe::Family,
    metric: M,
) -> M {
    match unit {
        Some(unit) => registry.register_with_unit(name, help, unit, metric.clone()),
        None => registry.register(name, help, metric.clone()),
    }
    metric
}

impl fmt::Debug for Metrics {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Metrics").finish_non_exhaustive()
    }
}

impl Metrics {
    /// New metrics, all at zero.
    pub fn new() -> Metrics {
        let mut registry = Registry::default();
        let r = &mut registry;
        let operations = registered(r, describe::OPERATIONS, Family::new_with_constructor(Buckets(&BUCKETS)));
        let sessions = registered(r, describe::SESSIONS, Family::new_with_constructor(Buckets(&SESSION_BUCKETS)));
        let in_flight = registered(r, describe::IN_FLIGHT, Gauge::default());
        let sessions_open = registered(r, describe::SESSIONS_OPEN, Family::default());
        let cancelled = registered(r, describe::CANCELLED, Family::default());
        let streams_open = registered(r, describe::STREAMS_OPEN, Family::default());
        let client_operations =
            registered(r, describe::CLIENT_OPERATIONS, Family::new_with_constructor(Buckets(&BUCKETS)));
        let client_sessions =
            registered(r, describe::CLIENT_SESSIONS, Family::new_with_constructor(Buckets(&SESSION_BUCKETS)));
        let refusals = registered(r, describe::REFUSALS, Family::default());
        let tasks_ended = registered(r, describe::TASKS_ENDED, Family::default());
        let relayed = registered(r, describe::RELAYED, Family::default());
        let server = Arc::new(OnceLock::new());
        registry.register_collector(Box::new(ServerInfo(server.clone())));
        let watched = Arc::new(state::Watched::default());
        registry.register_collector(Box::new(state::State(watched.clone())));
        let inner = Inner {
            registry,
            operations,
            seen: RwLock::default(),
            #[cfg(feature = "opentelemetry")]
            otel: OnceLock::new(),
            sessions,
            in_flight,
            sessions_open,
            cancelled,
            streams_open,
            refusals,
            client_operations,
            client_sessions,
            server,
            tasks_ended,
            relayed,
            watched,
        };
        Metrics { inner: Arc::new(inner) }
    }

    /// The metrics in the OpenMetrics text format, which Prometheus scrapes ([`Metrics::CONTENT_TYPE`]).
    pub fn render(&self) -> String {
        let mut text = String::new();
        // Writing to a String cannot fail, and every label value here encodes.
        let _ = prometheus_client::encoding::text::encode(&mut text, &self.inner.registry);
        text
    }

    /// The server these metrics are of: its `serverInfo` name and version (the first server built with them).
    pub(crate) fn serves(&self, name: &str, version: &str) {
        let _ = self.inner.server.set((name.to_owned(), version.to_owned()));
        crate::base::backlog::QUEUED.count();
    }

    /// The server's task engine, read when scraped (`mcp_server_tasks_running`).
    pub(crate) fn watch_tasks(&self, read: ReadTasks) {
        let _ = self.inner.watched.tasks.set(read);
        for status in ["completed", "failed", "cancelled"] {
            drop(self.inner.tasks_ended.get_or_create(&TaskEnd { status }));
        }
    }

    /// The server's shared Redis, read when scraped (`mcp_server_redis_errors_total`, `..._reconnects_total`).
    #[cfg_attr(not(feature = "redis"), allow(dead_code))]
    pub(crate) fn watch_redis(&self, read: ReadRedis) {
        let _ = self.inner.watched.redis.set(read);
    }

    /// A mount's upstream sent something the server passed on: `progress`, `message`, `resource_updated`,
    /// `list_changed`.
    #[cfg_attr(not(feature = "client"), allow(dead_code))]
    pub(crate) fn relayed(&self, kind: &'static str) {
        self.inner.relayed.get_or_create(&Relayed { kind }).inc();
    }

    /// The kinds of [`Metrics::relayed`] exist at zero (a server with mounts).
    #[cfg_attr(not(feature = "client"), allow(dead_code))]
    pub(crate) fn prime_relayed(&self) {
        for kind in ["progress", "message", "resource_updated", "list_changed"] {
            drop(self.inner.relayed.get_or_create(&Relayed { kind }));
        }
    }

    /// A task this instance ran ended in `status` (`completed`, `failed`, `cancelled`).
    pub(crate) fn task_ended(&self, status: &'static str) {
        self.inner.tasks_ended.get_or_create(&TaskEnd { status }).inc();
    }

    /// The `Content-Type` of [`Metrics::render`]'s text.
    pub const CONTENT_TYPE: &'static str = "application/openmetrics-text; version=1.0.0; charset=utf-8";

    /// A request begins: counted in flight until the returned guard is finished or dropped.
    pub(crate) fn begin(&self, request: Request) -> Timing {
        self.inner.in_flight.inc();
        Timing { metrics: self.clone(), request, started: Instant::now(), ended: AtomicU64::new(0) }
    }

    /// Records a request answered at once, without a handler's task: its duration is `started`'s elapsed time.
    pub(crate) fn answered(&self, request: Request, started: Instant, ended: Ended) {
        self.record(&request, started.elapsed(), ended);
    }

    fn record(&self, request: &Request, took: Duration, ended: Ended) {
        let key = Key::of(request, ended);
        if let Some(seen) = self.inner.seen.read().unwrap_or_else(|e| e.into_inner()).get(&key) {
            seen.histogram.observe(took.as_secs_f64());
            #[cfg(feature = "opentelemetry")]
            self.record_otel(seen.attributes.as_deref(), request, ended, took);
            return;
        }
        let labels = Self::operation(request, ended);
        let histogram = self.inner.operations.get_or_create_owned(&labels);
        histogram.observe(took.as_secs_f64());
        #[cfg(feature = "opentelemetry")]
        let attributes = self.inner.otel.get().map(|_| Arc::from(otel::Instruments::operation_attributes(&labels)));
        #[cfg(feature = "opentelemetry")]
        self.record_otel(attributes.as_deref(), request, ended, took);
        let seen = Seen {
            histogram,
            _target: request.target.clone().filter(|t| t.literal().is_none()),
            #[cfg(feature = "opentelemetry")]
            attributes,
        };
        self.inner.seen.write().unwrap_or_else(|e| e.into_inner()).insert(key, seen);
    }

    /// The labels of a request's series.
    fn operation(request: &Request, ended: Ended) -> Operation {
        let (error_type, rpc_response_status_code) = ended.labels();
        Operation {
            mcp_method_name: request.method,
            gen_ai_tool_name: request.tool(),
            gen_ai_prompt_name: request.prompt(),
            error_type,
            rpc_response_status_code,
            mcp_protocol_version: request.version,
            network_transport: request.transport,
        }
    }

    /// With a meter: the request in `mcp.server.operation.duration` too (its attributes made now when its series
    /// was first seen before the meter was given).
    #[cfg(feature = "opentelemetry")]
    fn record_otel(
        &self,
        attributes: Option<&[opentelemetry::KeyValue]>,
        request: &Request,
        ended: Ended,
        took: Duration,
    ) {
        let Some(otel) = self.inner.otel.get() else { return };
        match attributes {
            Some(attributes) => otel.server_operation(took.as_secs_f64(), attributes),
            None => {
                let attributes = otel::Instruments::operation_attributes(&Self::operation(request, ended));
                otel.server_operation(took.as_secs_f64(), &attributes);
            }
        }
    }

    /// Records the conventions' four histograms (`mcp.server.operation.duration`, `mcp.server.session.duration`,
    /// `mcp.client.operation.duration`, `mcp.client.session.duration`) into `meter`'s instruments too, under their
    /// OpenTelemetry names and dotted attributes, for the program's meter provider to export (OTLP, or any
    /// exporter of the OpenTelemetry SDK). `#[mcp::main]` does it when the `OTEL_*` variables ask for OTLP metrics.
    /// The first meter given counts; the runtime's own gauges and counters stay in Prometheus's format.
    #[cfg(feature = "opentelemetry")]
    pub fn export_to(&self, meter: &opentelemetry::metrics::Meter) {
        let _ = self.inner.otel.set(otel::Instruments::new(meter));
    }

    /// A 2025 session opened; the returned guard records its duration when it ends (is dropped).
    #[cfg_attr(not(feature = "http"), allow(dead_code))]
    pub(crate) fn session(&self, version: &'static str, transport: Transport) -> SessionTiming {
        self.inner.sessions_open.get_or_create(&Era { mcp_protocol_version: version }).inc();
        SessionTiming { metrics: self.clone(), version, transport, started: Instant::now() }
    }
}

impl Metrics {
    /// Makes the series of each tool a transport serves exist at zero, in both eras (calls, tool errors, cancels),
    /// and the gauges: a tool's first call then counts in `rate()` and `increase()` (a series that appears at 1
    /// has no increase), and a dashboard lists the tools before their first call.
    pub(crate) fn prime(&self, tools: &[Name], transport: Transport, versions: Versions) {
        let inner = &self.inner;
        for version in [versions.sessions, versions.stateless] {
            for tool in tools {
                for error_type in [None, Some(ErrorType::Tool)] {
                    let labels = Operation {
                        mcp_method_name: "tools/call",
                        gen_ai_tool_name: Some(tool.clone()),
                        gen_ai_prompt_name: None,
                        error_type,
                        rpc_response_status_code: None,
                        mcp_protocol_version: version,
                        network_transport: transport,
                    };
                    drop(inner.operations.get_or_create(&labels));
                }
                let cancelled = Cancelled {
                    mcp_method_name: "tools/call",
                    gen_ai_tool_name: Some(tool.clone()),
                    mcp_protocol_version: version,
                };
                drop(inner.cancelled.get_or_create(&cancelled));
            }
            drop(inner.streams_open.get_or_create(&Era { mcp_protocol_version: version }));
        }
        drop(inner.sessions_open.get_or_create(&Era { mcp_protocol_version: versions.sessions }));
        if transport == Transport::Tcp {
            for limit in LIMITS {
                drop(inner.refusals.get_or_create(&Refusal { limit }));
            }
        }
    }
}

#[cfg_attr(not(feature = "http"), allow(dead_code))]
impl Metrics {
    /// A stream of `version` opened: counted open until the returned guard is dropped.
    pub(crate) fn stream(&self, version: &'static str) -> StreamOpen {
        let gauge = self.inner.streams_open.get_or_create_owned(&Era { mcp_protocol_version: version });
        gauge.inc();
        StreamOpen(gauge)
    }

    /// A limit refused a connection or a request: `connections`, `sessions`, `backlog`, `draining`.
    pub(crate) fn refused(&self, limit: &'static str) {
        self.inner.refusals.get_or_create(&Refusal { limit }).inc();
    }
}

#[cfg(feature = "http")]
impl Metrics {
    /// A router that answers `GET /metrics` with [`Metrics::render`], to serve beside an application's own routes.
    pub fn router(&self) -> axum::Router {
        let metrics = self.clone();
        axum::Router::new().route(
            "/metrics",
            axum::routing::get(move || {
                let text = metrics.render();
                async move { ([(axum::http::header::CONTENT_TYPE, Metrics::CONTENT_TYPE)], text) }
            }),
        )
    }

    /// Serves `GET /metrics` on `addr` (a listener of its own, apart from the MCP endpoint: Prometheus scrapes it
    /// on a private address) until the program ends.
    pub async fn serve(self, addr: std::net::SocketAddr) -> std::io::Result<()> {
        let listener = tokio::net::TcpListener::bind(addr).await?;
        self.serve_on(listener).await
    }

    /// [`Metrics::serve`] on a listener bound already.
    pub async fn serve_on(self, listener: tokio::net::TcpListener) -> std::io::Result<()> {
        tracing::info!("serving metrics at http://{}/metrics", listener.local_addr()?);
        axum::serve(listener, self.router()).await
    }
}
