//! A server's metrics (`mcp::Metrics`), by the OpenTelemetry semantic conventions for MCP, in Prometheus's format.

use std::fmt;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, RwLock};
use std::time::{Duration, Instant};

use prometheus_client::encoding::{EncodeLabel, EncodeLabelSet, EncodeLabelValue, LabelSetEncoder, LabelValueEncoder};
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::{Family, MetricConstructor};
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::Histogram;
use prometheus_client::registry::{Registry, Unit};
use rustc_hash::FxHashMap;

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
/// - The runtime's own state: `mcp_server_requests_in_flight`, `mcp_server_sessions_open`, and
///   `mcp_server_requests_cancelled_total`.
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
    seen: RwLock<FxHashMap<Key, Histogram>>,
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

/// The labels of `mcp_server_operation_duration_seconds`: the conventions' attributes, those that do not apply
/// left out (not written empty).
#[derive(Clone, Debug, Hash, PartialEq, Eq)]
struct Operation {
    mcp_method_name: &'static str,
    gen_ai_tool_name: Option<&'static str>,
    gen_ai_prompt_name: Option<&'static str>,
    error_type: Option<ErrorType>,
    rpc_response_status_code: Option<i32>,
    mcp_protocol_version: &'static str,
    network_transport: Transport,
}

impl EncodeLabelSet for Operation {
    fn encode(&self, encoder: &mut LabelSetEncoder) -> fmt::Result {
        ("mcp_method_name", self.mcp_method_name).encode(encoder.encode_label())?;
        if let Some(tool) = self.gen_ai_tool_name {
            ("gen_ai_tool_name", tool).encode(encoder.encode_label())?;
            ("gen_ai_operation_name", "execute_tool").encode(encoder.encode_label())?;
        }
        if let Some(prompt) = self.gen_ai_prompt_name {
            ("gen_ai_prompt_name", prompt).encode(encoder.encode_label())?;
        }
        if let Some(error) = self.error_type {
            ("error_type", error).encode(encoder.encode_label())?;
        }
        if let Some(code) = self.rpc_response_status_code {
            ("rpc_response_status_code", code).encode(encoder.encode_label())?;
        }
        ("mcp_protocol_version", self.mcp_protocol_version).encode(encoder.encode_label())?;
        ("network_transport", self.network_transport).encode(encoder.encode_label())
    }
}

/// A label set of `operations` by the addresses of its names (all `&'static str`: a method, a tool the server
/// serves, `_OTHER`, a protocol version), for [`Inner::seen`]. Two keys for one label set (the same name at two
/// addresses) find the same histogram.
#[derive(Clone, Copy, Debug, Hash, PartialEq, Eq)]
struct Key {
    method: usize,
    target: usize,
    version: usize,
    transport: Transport,
    ended: Ended,
}

impl Key {
    fn of(request: &Request, ended: Ended) -> Key {
        Key {
            method: request.method.as_ptr() as usize,
            target: request.target.map_or(0, |t| t.as_ptr() as usize),
            version: request.version.as_ptr() as usize,
            transport: request.transport,
            ended,
        }
    }
}

/// The labels of `mcp_server_session_duration_seconds`.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct SessionEnd {
    mcp_protocol_version: &'static str,
    network_transport: Transport,
}

/// The label of the gauges kept per protocol era.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct Era {
    mcp_protocol_version: &'static str,
}

/// The protocol versions of the two eras, as the metrics label them (from the eras, which sit above this module).
#[derive(Clone, Copy, Debug)]
pub(crate) struct Versions {
    /// The era of sessions (2025-11-25).
    pub sessions: &'static str,
    /// The era of self-contained requests (2026-07-28).
    pub stateless: &'static str,
}

/// The labels of `mcp_client_operation_duration_seconds`: the conventions' attributes of a client's request. The
/// tool or prompt is the one the program called (its own choice, not a peer's).
#[derive(Clone, Debug, Hash, PartialEq, Eq)]
pub(crate) struct ClientOperation {
    pub method: String,
    pub target: Option<String>,
    pub error_type: Option<String>,
    pub status_code: Option<i32>,
    pub peer: Peer,
}

/// The server a client talks to, as its metrics label it.
#[derive(Clone, Debug, Hash, PartialEq, Eq)]
pub(crate) struct Peer {
    pub version: String,
    pub transport: Transport,
    /// Over HTTP: the server's host and port.
    pub server: Option<(String, u16)>,
}

impl EncodeLabelSet for Peer {
    fn encode(&self, encoder: &mut LabelSetEncoder) -> fmt::Result {
        ("mcp_protocol_version", self.version.as_str()).encode(encoder.encode_label())?;
        ("network_transport", self.transport).encode(encoder.encode_label())?;
        if let Some((address, port)) = &self.server {
            ("server_address", address.as_str()).encode(encoder.encode_label())?;
            ("server_port", *port).encode(encoder.encode_label())?;
        }
        Ok(())
    }
}

impl EncodeLabelSet for ClientOperation {
    fn encode(&self, encoder: &mut LabelSetEncoder) -> fmt::Result {
        ("mcp_method_name", self.method.as_str()).encode(encoder.encode_label())?;
        match (self.method.as_str(), &self.target) {
            ("tools/call", Some(tool)) => {
                ("gen_ai_tool_name", tool.as_str()).encode(encoder.encode_label())?;
                ("gen_ai_operation_name", "execute_tool").encode(encoder.encode_label())?;
            }
            ("prompts/get", Some(prompt)) => ("gen_ai_prompt_name", prompt.as_str()).encode(encoder.encode_label())?,
            _ => {}
        }
        if let Some(error) = &self.error_type {
            ("error_type", error.as_str()).encode(encoder.encode_label())?;
        }
        if let Some(code) = self.status_code {
            ("rpc_response_status_code", code).encode(encoder.encode_label())?;
        }
        self.peer.encode(encoder)
    }
}

#[cfg_attr(not(feature = "client"), allow(dead_code))]
impl Metrics {
    /// A request of the program's client ended (answered, or failed: `labels.error_type`).
    pub(crate) fn client_call(&self, labels: &ClientOperation, took: Duration) {
        self.inner.client_operations.get_or_create(labels).observe(took.as_secs_f64());
    }

    /// A connection of the program's client closed after `took`.
    pub(crate) fn client_session(&self, peer: &Peer, took: Duration) {
        self.inner.client_sessions.get_or_create(peer).observe(took.as_secs_f64());
    }
}

/// The limits whose refusals are counted (over HTTP).
const LIMITS: [&str; 4] = ["connections", "sessions", "backlog", "draining"];

/// The label of `mcp_server_refusals_total`: which limit refused.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct Refusal {
    limit: &'static str,
}

/// The labels of `mcp_server_requests_cancelled_total`.
#[derive(Clone, Debug, Hash, PartialEq, Eq)]
struct Cancelled {
    mcp_method_name: &'static str,
    gen_ai_tool_name: Option<&'static str>,
    mcp_protocol_version: &'static str,
}

impl EncodeLabelSet for Cancelled {
    fn encode(&self, encoder: &mut LabelSetEncoder) -> fmt::Result {
        ("mcp_method_name", self.mcp_method_name).encode(encoder.encode_label())?;
        if let Some(tool) = self.gen_ai_tool_name {
            ("gen_ai_tool_name", tool).encode(encoder.encode_label())?;
        }
        ("mcp_protocol_version", self.mcp_protocol_version).encode(encoder.encode_label())
    }
}

/// How a request reached the server: the conventions' `network.transport`.
#[derive(Clone, Copy, Debug, Hash, PartialEq, Eq)]
pub(crate) enum Transport {
    /// Over HTTP.
    Tcp,
    /// On stdio, or in the same process.
    Pipe,
}

impl Transport {
    /// `Tcp` for a request that came over HTTP, else `Pipe`.
    pub(crate) fn of(http: bool) -> Transport {
        if http {
            Transport::Tcp
        } else {
            Transport::Pipe
        }
    }
}

impl EncodeLabelValue for Transport {
    fn encode(&self, encoder: &mut LabelValueEncoder) -> fmt::Result {
        fmt::Write::write_str(encoder, if *self == Transport::Tcp { "tcp" } else { "pipe" })
    }
}

/// The conventions' `error.type` of a failed request.
#[derive(Clone, Copy, Debug, Hash, PartialEq, Eq)]
enum ErrorType {
    /// A tool result with `isError: true`.
    Tool,
    /// A JSON-RPC error.
    Code(i32),
}

impl EncodeLabelValue for ErrorType {
    fn encode(&self, encoder: &mut LabelValueEncoder) -> fmt::Result {
        match self {
            ErrorType::Tool => fmt::Write::write_str(encoder, "tool_error"),
            ErrorType::Code(code) => EncodeLabelValue::encode(code, encoder),
        }
    }
}

/// How a request ended, as its metrics see it.
#[derive(Clone, Copy, Debug, Hash, PartialEq, Eq)]
pub(crate) enum Ended {
    /// Answered with a result; `tool_error`: a tool result with `isError`.
    Result { tool_error: bool },
    /// Answered with a JSON-RPC error of this code.
    Error(i32),
}

impl Ended {
    /// Whether a JSON-RPC error code says the caller's request was wrong (it could not be parsed, an unknown method,
    /// invalid params, an unknown resource): the conventions count those as no error of the server's.
    pub(crate) fn is_callers(code: i32) -> bool {
        matches!(code, -32700 | -32600 | -32601 | -32602 | -32002)
    }

    /// As one number, for [`Timing::ended`]: never 0.
    fn encode(self) -> u64 {
        match self {
            Ended::Result { tool_error } => 1 + u64::from(tool_error),
            Ended::Error(code) => 1 << 32 | u64::from(code as u32),
        }
    }

    fn decode(n: u64) -> Option<Ended> {
        match n {
            0 => None,
            1 | 2 => Some(Ended::Result { tool_error: n == 2 }),
            _ => Some(Ended::Error(n as u32 as i32)),
        }
    }

    /// How a request answered with `result` ended (a result of no tool).
    pub(crate) fn of<T>(result: &Result<T, crate::wire::error::Error>) -> Ended {
        match result {
            Ok(_) => Ended::Result { tool_error: false },
            Err(e) => Ended::Error(e.code.0),
        }
    }

    /// The conventions' `error.type` and `rpc.response.status_code`. A server counts as its own errors the codes
    /// that are not the caller's mistake: a request it could not parse, an unknown method, invalid params and an
    /// unknown resource are the caller's, and set the status code only.
    fn labels(self) -> (Option<ErrorType>, Option<i32>) {
        match self {
            Ended::Result { tool_error: false } => (None, None),
            Ended::Result { tool_error: true } => (Some(ErrorType::Tool), None),
            Ended::Error(code) if Ended::is_callers(code) => (None, Some(code)),
            Ended::Error(code) => (Some(ErrorType::Code(code)), Some(code)),
        }
    }
}

/// What a request is, as its metrics label it.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Request {
    /// Its method.
    pub method: &'static str,
    /// The tool or prompt it runs, where it runs one: a name the server serves, or `_OTHER`.
    pub target: Option<&'static str>,
    /// Its era's protocol version.
    pub version: &'static str,
    pub transport: Transport,
}

impl Request {
    /// A request of the protocol `version` that came over HTTP (`http`), or stdio and in process.
    pub(crate) fn new(
        method: &'static str,
        target: Option<&'static str>,
        version: &'static str,
        http: bool,
    ) -> Request {
        Request { method, target, version, transport: Transport::of(http) }
    }

    fn tool(&self) -> Option<&'static str> {
        self.target.filter(|_| self.method == "tools/call")
    }

    fn prompt(&self) -> Option<&'static str> {
        self.target.filter(|_| self.method == "prompts/get")
    }
}

impl Default for Metrics {
    fn default() -> Self {
        Metrics::new()
    }
}

impl fmt::Debug for Metrics {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Metrics").finish_non_exhaustive()
    }
}

impl Metrics {
    /// New metrics, all at zero.
    pub fn new() -> Metrics {
        let operations = Family::new_with_constructor(Buckets(&BUCKETS));
        let sessions = Family::new_with_constructor(Buckets(&SESSION_BUCKETS));
        let in_flight = Gauge::default();
        let sessions_open = Family::default();
        let cancelled = Family::default();
        let streams_open = Family::default();
        let refusals = Family::default();
        let client_operations = Family::new_with_constructor(Buckets(&BUCKETS));
        let client_sessions = Family::new_with_constructor(Buckets(&SESSION_BUCKETS));
        let mut registry = Registry::default();
        registry.register_with_unit(
            "mcp_server_operation_duration",
            "The duration of each request the server answered, from its arrival to its answer \
             (mcp.server.operation.duration)",
            Unit::Seconds,
            operations.clone(),
        );
        registry.register_with_unit(
            "mcp_server_session_duration",
            "The duration of each 2025 session, recorded when it ends (mcp.server.session.duration)",
            Unit::Seconds,
            sessions.clone(),
        );
        registry.register("mcp_server_requests_in_flight", "Requests being served now", in_flight.clone());
        registry.register("mcp_server_sessions_open", "2025 sessions open on this instance", sessions_open.clone());
        registry.register(
            "mcp_server_requests_cancelled",
            "Requests cancelled before their answer (by their client, or by the server stopping)",
            cancelled.clone(),
        );
        registry.register(
            "mcp_server_streams_open",
            "SSE streams open on this instance (2025 POST and GET streams, 2026 request streams and listens)",
            streams_open.clone(),
        );
        registry.register_with_unit(
            "mcp_client_operation_duration",
            "The duration of each request the program's client sent, from its sending to its answer \
             (mcp.client.operation.duration)",
            Unit::Seconds,
            client_operations.clone(),
        );
        registry.register_with_unit(
            "mcp_client_session_duration",
            "The duration of each connection of the program's client to a server, recorded when it closes \
             (mcp.client.session.duration)",
            Unit::Seconds,
            client_sessions.clone(),
        );
        registry.register(
            "mcp_server_refusals",
            "Connections and requests refused at a limit: connections (the connection cap), sessions (the session \
             cap), backlog (a client that does not read its streams), draining (a stopping instance)",
            refusals.clone(),
        );
        let seen = RwLock::default();
        let inner = Inner {
            registry,
            operations,
            seen,
            sessions,
            in_flight,
            sessions_open,
            cancelled,
            streams_open,
            refusals,
            client_operations,
            client_sessions,
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
        if let Some(histogram) = self.inner.seen.read().unwrap_or_else(|e| e.into_inner()).get(&key) {
            return histogram.observe(took.as_secs_f64());
        }
        let (error_type, rpc_response_status_code) = ended.labels();
        let labels = Operation {
            mcp_method_name: request.method,
            gen_ai_tool_name: request.tool(),
            gen_ai_prompt_name: request.prompt(),
            error_type,
            rpc_response_status_code,
            mcp_protocol_version: request.version,
            network_transport: request.transport,
        };
        let histogram = self.inner.operations.get_or_create_owned(&labels);
        histogram.observe(took.as_secs_f64());
        self.inner.seen.write().unwrap_or_else(|e| e.into_inner()).insert(key, histogram);
    }

    /// A 2025 session opened; the returned guard records its duration when it ends (is dropped).
    #[cfg_attr(not(feature = "http"), allow(dead_code))]
    pub(crate) fn session(&self, version: &'static str, transport: Transport) -> SessionTiming {
        self.inner.sessions_open.get_or_create(&Era { mcp_protocol_version: version }).inc();
        SessionTiming { metrics: self.clone(), version, transport, started: Instant::now() }
    }
}

/// A request being served: in flight until dropped (with the request's state, after its answer), which records its
/// duration and outcome ([`Timing::ended`]), or counts it cancelled if it had none.
pub(crate) struct Timing {
    metrics: Metrics,
    request: Request,
    started: Instant,
    /// How it ended, once known ([`Ended::encode`]; 0: not answered).
    ended: AtomicU64,
}

impl Timing {
    /// The request was answered so.
    pub(crate) fn ended(&self, ended: Ended) {
        self.ended.store(ended.encode(), Ordering::Relaxed);
    }
}

impl Drop for Timing {
    fn drop(&mut self) {
        let inner = &self.metrics.inner;
        inner.in_flight.dec();
        match Ended::decode(*self.ended.get_mut()) {
            Some(ended) => self.metrics.record(&self.request, self.started.elapsed(), ended),
            None => {
                let labels = Cancelled {
                    mcp_method_name: self.request.method,
                    gen_ai_tool_name: self.request.tool(),
                    mcp_protocol_version: self.request.version,
                };
                inner.cancelled.get_or_create(&labels).inc();
            }
        }
    }
}

impl Metrics {
    /// Makes the series of each tool a transport serves exist at zero, in both eras (calls, tool errors, cancels),
    /// and the gauges: a tool's first call then counts in `rate()` and `increase()` (a series that appears at 1
    /// has no increase), and a dashboard lists the tools before their first call.
    pub(crate) fn prime(&self, tools: &[&'static str], transport: Transport, versions: Versions) {
        let inner = &self.inner;
        for version in [versions.sessions, versions.stateless] {
            for &tool in tools {
                for error_type in [None, Some(ErrorType::Tool)] {
                    let labels = Operation {
                        mcp_method_name: "tools/call",
                        gen_ai_tool_name: Some(tool),
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
                    gen_ai_tool_name: Some(tool),
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

/// An open stream, counted until dropped.
#[cfg_attr(not(feature = "http"), allow(dead_code))]
pub(crate) struct StreamOpen(Gauge);

impl Drop for StreamOpen {
    fn drop(&mut self) {
        self.0.dec();
    }
}

/// An open 2025 session: its duration is recorded when this is dropped.
#[cfg_attr(not(feature = "http"), allow(dead_code))]
pub(crate) struct SessionTiming {
    metrics: Metrics,
    version: &'static str,
    transport: Transport,
    started: Instant,
}

impl Drop for SessionTiming {
    fn drop(&mut self) {
        let inner = &self.metrics.inner;
        inner.sessions_open.get_or_create(&Era { mcp_protocol_version: self.version }).dec();
        let labels = SessionEnd { mcp_protocol_version: self.version, network_transport: self.transport };
        inner.sessions.get_or_create(&labels).observe(self.started.elapsed().as_secs_f64());
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
