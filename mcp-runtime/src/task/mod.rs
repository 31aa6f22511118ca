//! Tasks: tool calls that outlive their request. One engine serves both protocol eras; the eras differ only in their
//! fronts (`methods.rs`): the 2025-11-25 `tasks/*` methods, and the 2026-07-28 Tasks extension
//! (`io.modelcontextprotocol/tasks`).
//!
//! A task is a request whose handler keeps running after its response: the response is the task (its id, status,
//! TTL and poll interval), written once the task is in the [`TaskStore`]. From then on the handler's [`Context`]
//! routes through the task: progress and logs go to the 2025 session (with the task's id in `_meta`), questions put
//! the task in `input_required` until the client answers (a request to the client in 2025, an entry of
//! `inputRequests` answered by `tasks/update` in 2026), and `tasks/cancel` stops the handler the way any cancel
//! does. Its result (or error) lands in the record, which the store keeps until the TTL ends.
//!
//! [`Context`]: crate::Context

mod begin;
mod engine;
pub(crate) mod front;
pub(crate) mod hook;
pub(crate) mod methods;
mod run;

pub(crate) use methods::Tasks;

use std::time::{Duration, UNIX_EPOCH};

pub use crate::store::task::{ClientTasks, MemoryTaskStore, StoreError, TaskPage, TaskRecord, TaskStatus, TaskStore};
pub use crate::wire::task::{TaskOptions, TaskSupport};
pub(crate) use begin::{begin, Refused};
pub(crate) use engine::{store_error, Owner, TaskEngine};
pub(crate) use run::TaskRun;

use crate::server::Server;

/// The identifier of the Tasks extension of the 2026-07-28 protocol.
pub(crate) const EXTENSION: &str = crate::wire::protocol::TASKS_EXTENSION;

pub(crate) use crate::wire::task::{related_meta, RELATED_TASK};

/// The default time a task and its result are kept: one hour from its creation.
pub const DEFAULT_TASK_TTL: Duration = Duration::from_secs(3600);

/// The longest TTL a client may ask for (2025 era) or a tool may set: one day.
pub const DEFAULT_MAX_TASK_TTL: Duration = Duration::from_secs(24 * 3600);

/// The default poll interval suggested to clients: 500 ms.
pub const DEFAULT_POLL_INTERVAL: Duration = Duration::from_millis(500);

/// The default number of tasks one client may have stored at once (running, or finished and kept for their TTL):
/// 1 000, a tenth of the default store, so that no client can fill it for the others.
pub const DEFAULT_MAX_TASKS_PER_CLIENT: usize = 1_000;

/// The default number of tasks one client (principal, 2025 session, or 2026 peer address) may have running at once:
/// 100.
pub const DEFAULT_MAX_RUNNING_TASKS: usize = 100;

/// How long the instance running a task vouches for it (it renews the lease every third of it): 5 s, as long as an
/// instance vouches for its streams (`HttpOptions::instance_lease`). A task
/// whose instance died is failed once its lease has run out (and a second's grace for clocks that disagree), when an
/// instance next reads it: a `tasks/result` or `tasks/get` on it ends within about 6 s of the death. Each running
/// task costs its store one write per renewal; a store unreachable for longer than the lease fails the tasks whose
/// renewals it missed.
pub const DEFAULT_TASK_LEASE: Duration = Duration::from_secs(5);

/// What a `tools/call` becomes when its tool runs as a task here: the Tasks extension's claim on the call
/// ([`TasksHook`](hook::TasksHook)).
#[derive(Clone, Debug)]
pub(crate) struct TaskPlan {
    /// The tool.
    pub tool: crate::base::name::Name,
    pub options: TaskOptions,
    /// 2025 era: the TTL the client asked for.
    pub requested_ttl: Option<u64>,
}

/// The server's task settings (see `ServerBuilder::task_*`).
pub(crate) struct TaskConfig {
    pub ttl: Duration,
    pub max_ttl: Duration,
    pub poll_interval: Duration,
    pub max_running: usize,
    /// Tasks one client may have in the store at once, running or finished until their TTL.
    pub max_stored: usize,
    /// How long the instance running a task vouches for it between renewals (see `TaskRecord::lease_until_ms`).
    pub lease: Duration,
}

impl Default for TaskConfig {
    fn default() -> TaskConfig {
        TaskConfig {
            ttl: DEFAULT_TASK_TTL,
            max_ttl: DEFAULT_MAX_TASK_TTL,
            poll_interval: DEFAULT_POLL_INTERVAL,
            max_running: DEFAULT_MAX_RUNNING_TASKS,
            max_stored: DEFAULT_MAX_TASKS_PER_CLIENT,
            lease: DEFAULT_TASK_LEASE,
        }
    }
}

pub(crate) use crate::base::now_ms;

/// An RFC 3339 timestamp (UTC, milliseconds) for milliseconds since the Unix epoch.
pub(crate) fn timestamp(ms: u64) -> String {
    humantime::format_rfc3339_millis(UNIX_EPOCH + Duration::from_millis(ms)).to_string()
}

impl Server {
    /// The task engine.
    pub(crate) fn tasks(&self) -> &TaskEngine {
        self.inner.parts.get::<TaskEngine>().expect("every server has a task engine")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn timestamps_are_rfc_3339_in_utc() {
        assert_eq!(timestamp(0), "1970-01-01T00:00:00.000Z");
        assert_eq!(timestamp(1_764_583_200_123), "2025-12-01T10:00:00.123Z");
    }
}
