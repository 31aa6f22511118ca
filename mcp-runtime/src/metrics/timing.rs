//! What a request, a stream or a session holds while it lasts, and records when it ends.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Instant;

use prometheus_client::metrics::gauge::Gauge;

use super::{Cancelled, Ended, Era, Metrics, Request, SessionEnd, Transport};

/// A request being served: in flight until dropped (with the request's state, after its answer), which records its
/// duration and outcome ([`Timing::ended`]), or counts it cancelled if it had none.
pub(crate) struct Timing {
    pub(super) metrics: Metrics,
    pub(super) request: Request,
    pub(super) started: Instant,
    /// How it ended, once known ([`Ended::encode`]; 0: not answered).
    pub(super) ended: AtomicU64,
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

/// An open stream, counted until dropped.
#[cfg_attr(not(feature = "http"), allow(dead_code))]
pub(crate) struct StreamOpen(pub(super) Gauge);

impl Drop for StreamOpen {
    fn drop(&mut self) {
        self.0.dec();
    }
}

/// An open 2025 session: its duration is recorded when this is dropped.
#[cfg_attr(not(feature = "http"), allow(dead_code))]
pub(crate) struct SessionTiming {
    pub(super) metrics: Metrics,
    pub(super) version: &'static str,
    pub(super) transport: Transport,
    pub(super) started: Instant,
}

impl Drop for SessionTiming {
    fn drop(&mut self) {
        let inner = &self.metrics.inner;
        inner.sessions_open.get_or_create(&Era { mcp_protocol_version: self.version }).dec();
        let labels = SessionEnd { mcp_protocol_version: self.version, network_transport: self.transport };
        let took = self.started.elapsed().as_secs_f64();
        inner.sessions.get_or_create(&labels).observe(took);
        #[cfg(feature = "opentelemetry")]
        if let Some(otel) = inner.otel.get() {
            otel.server_session(took, &labels);
        }
    }
}
