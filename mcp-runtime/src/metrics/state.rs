//! What the metrics read of the runtime's state when they are scraped, at no cost to a request: the tasks this
//! instance runs by status, the bytes waiting for slow readers, and the errors and reconnects of a shared Redis.

use std::fmt;
use std::sync::OnceLock;

use prometheus_client::collector::Collector;
use prometheus_client::encoding::{DescriptorEncoder, EncodeMetric};
use prometheus_client::metrics::counter::ConstCounter;
use prometheus_client::metrics::gauge::ConstGauge;

/// Reads the tasks this instance runs: how many are `working`, and how many `input_required`.
pub(crate) type ReadTasks = Box<dyn Fn() -> [u64; 2] + Send + Sync>;
/// Reads a shared Redis's failed commands and reconnects, and whether it answers now.
pub(crate) type ReadRedis = Box<dyn Fn() -> (u64, u64, bool) + Send + Sync>;

/// The sources, each set once: by the server built with these metrics.
#[derive(Default)]
pub(crate) struct Watched {
    pub tasks: OnceLock<ReadTasks>,
    pub redis: OnceLock<ReadRedis>,
}

impl fmt::Debug for Watched {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Watched").finish_non_exhaustive()
    }
}

/// The collector over [`Watched`], registered with the metrics.
#[derive(Debug)]
pub(super) struct State(pub std::sync::Arc<Watched>);

fn gauge(
    encoder: &mut DescriptorEncoder,
    name: &str,
    help: &str,
    labels: &[(&str, &str)],
    values: &[u64],
) -> fmt::Result {
    let gauge = ConstGauge::new(0i64);
    let mut family = encoder.encode_descriptor(name, help, None, gauge.metric_type())?;
    for (label, value) in labels.iter().zip(values) {
        let gauge = ConstGauge::new(*value as i64);
        gauge.encode(family.encode_family(&[*label])?)?;
    }
    if labels.is_empty() {
        ConstGauge::new(values[0] as i64).encode(family)?;
    }
    Ok(())
}

fn counter(encoder: &mut DescriptorEncoder, name: &str, help: &str, value: u64) -> fmt::Result {
    let counter = ConstCounter::new(value);
    let metric = encoder.encode_descriptor(name, help, None, counter.metric_type())?;
    counter.encode(metric)
}

impl Collector for State {
    fn encode(&self, mut encoder: DescriptorEncoder) -> fmt::Result {
        let queued = crate::base::backlog::QUEUED.bytes();
        gauge(
            &mut encoder,
            "mcp_server_outbound_queued_bytes",
            "Bytes waiting for clients that read slower than the server writes (every outbound queue of the \
             process: stdout, SSE streams, answers), as the outbound limits count them",
            &[],
            &[queued],
        )?;
        if let Some(read) = self.0.tasks.get() {
            gauge(
                &mut encoder,
                "mcp_server_tasks_running",
                "Tasks this instance runs, by status",
                &[("status", "working"), ("status", "input_required")],
                &read(),
            )?;
        }
        if let Some(read) = self.0.redis.get() {
            let (errors, reconnects, up) = read();
            gauge(
                &mut encoder,
                "mcp_server_redis_up",
                "Whether the shared Redis answered its last PING (every second): 1 or 0",
                &[],
                &[u64::from(up)],
            )?;
            counter(
                &mut encoder,
                "mcp_server_redis_errors",
                "Commands of the shared state (sessions, tasks, events, changes) that Redis did not answer",
                errors,
            )?;
            counter(
                &mut encoder,
                "mcp_server_redis_reconnects",
                "Times Redis answered again after it did not (a lost connection made again), and moves to a new \
                 primary after a failover",
                reconnects,
            )?;
        }
        Ok(())
    }
}
