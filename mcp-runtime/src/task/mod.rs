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

pub(crate) use crate::store::task::{MemoryTaskStore, StoreError, TaskRecord, TaskStatus, TaskStore};
pub use crate::wire::task::{TaskOptions, TaskSupport};

pub(crate) use begin::{begin, Refused};
pub(crate) use engine::{store_error, Owner, TaskEngine};
pub(crate) use run::TaskRun;

use crate::server::Server;

/// The identifier of the Tasks extension of the 2026-07-28 protocol.
pub(crate) const EXTENSION: &str = crate::wire::protocol::TASKS_EXTENSION;

pub(crate) use crate::wire::task::{related_meta, RELATED_TASK};

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

/// How a server runs tasks: how long it keeps them, what it suggests to pollers, how many one client may have,
/// how long an instance vouches for the ones it runs. Given to [`ServerBuilder::tasks`](crate::ServerBuilder::tasks);
/// what is not set keeps its default (the `DEFAULT_*` constants).
///
/// ```
/// use std::time::Duration;
/// use mcp::TaskSettings;
///
/// let settings = TaskSettings::new().ttl(Duration::from_secs(600)).max_running(10);
/// assert_ne!(settings, TaskSettings::default());
/// let server = mcp::Server::builder().tasks(settings).build().unwrap();
/// # drop(server);
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TaskSettings {
    pub(crate) ttl: Duration,
    pub(crate) max_ttl: Duration,
    pub(crate) poll_interval: Duration,
    pub(crate) max_running: usize,
    /// Tasks one client may have in the store at once, running or finished until their TTL.
    pub(crate) max_stored: usize,
    /// How long the instance running a task vouches for it between renewals (see `TaskRecord::lease_until_ms`).
    pub(crate) lease: Duration,
}

impl TaskSettings {
    /// [`TaskSettings::ttl`]: an hour from a task's creation.
    pub const DEFAULT_TTL: Duration = Duration::from_secs(3600);
    /// [`TaskSettings::max_ttl`]: a day.
    pub const DEFAULT_MAX_TTL: Duration = Duration::from_secs(24 * 3600);
    /// [`TaskSettings::poll_interval`]: 500 ms.
    pub const DEFAULT_POLL_INTERVAL: Duration = Duration::from_millis(500);
    /// [`TaskSettings::max_running`]: 100 per client.
    pub const DEFAULT_MAX_RUNNING: usize = 100;
    /// [`TaskSettings::max_per_client`]: 1 000 stored per client, a tenth of the default store
    /// ([`MemoryTaskStore::DEFAULT_MAX_TASKS`]), so that no client can fill it for the others.
    pub const DEFAULT_MAX_PER_CLIENT: usize = 1_000;
    /// [`TaskSettings::lease`]: 5 s, as long as an instance vouches for its streams (`HttpOptions::instance_lease`).
    /// A task whose instance died is failed once its lease has run out (and a second's grace for clocks that
    /// disagree), when an instance next reads it: a `tasks/result` or `tasks/get` on it ends within about 6 s of the
    /// death. Each running task costs its store one write per renewal; a store unreachable for longer than the lease
    /// fails the tasks whose renewals it missed.
    pub const DEFAULT_LEASE: Duration = Duration::from_secs(5);

    /// Every setting at its default.
    pub const fn new() -> TaskSettings {
        TaskSettings {
            ttl: Self::DEFAULT_TTL,
            max_ttl: Self::DEFAULT_MAX_TTL,
            poll_interval: Self::DEFAULT_POLL_INTERVAL,
            max_running: Self::DEFAULT_MAX_RUNNING,
            max_stored: Self::DEFAULT_MAX_PER_CLIENT,
            lease: Self::DEFAULT_LEASE,
        }
    }

    /// How long a task and its result are kept, from its creation, unless its tool says otherwise. A task still
    /// running when its TTL ends is stopped and marked `failed`. At least 1 ms.
    pub fn ttl(mut self, ttl: Duration) -> TaskSettings {
        self.ttl = ttl.max(Duration::from_millis(1));
        self
    }

    /// The longest TTL a client may ask for (2025-11-25 `task.ttl`) or a tool may set. At least 1 ms.
    pub fn max_ttl(mut self, ttl: Duration) -> TaskSettings {
        self.max_ttl = ttl.max(Duration::from_millis(1));
        self
    }

    /// The poll interval suggested to clients, unless a tool says otherwise. At least 1 ms.
    pub fn poll_interval(mut self, interval: Duration) -> TaskSettings {
        self.poll_interval = interval.max(Duration::from_millis(1));
        self
    }

    /// How many tasks one client may have running at once; more are refused with -31000, or run as plain calls
    /// where the tool's task support is optional. A client is its authenticated principal, else its 2025 session,
    /// else (2026 era) its peer address, else its connection. A finished or cancelled task no longer counts.
    /// Counted over every instance when the task store counts by client
    /// ([`TaskStore::client_tasks`]: Redis does), else on each instance. At least 1.
    pub fn max_running(mut self, tasks: usize) -> TaskSettings {
        self.max_running = tasks.max(1);
        self
    }

    /// How many tasks one client (as for [`max_running`](Self::max_running)) may have stored at once: running, or
    /// finished and kept for their TTL. More are refused with -31000 (or run as plain calls where the tool's task
    /// support is optional), so that no client can fill the task store for the others. At least 1.
    pub fn max_per_client(mut self, tasks: usize) -> TaskSettings {
        self.max_stored = tasks.max(1);
        self
    }

    /// How long the instance running a task vouches for it: it renews the lease every third of it while the handler
    /// runs. With a task store shared by several instances, a task whose instance died (killed, or cut off from the
    /// store) is marked `failed`, saying so, by the first instance that reads it after its lease ran out, instead of
    /// staying `working` for ever. At least 30 ms.
    pub fn lease(mut self, lease: Duration) -> TaskSettings {
        self.lease = lease.max(Duration::from_millis(30));
        self
    }
}

impl Default for TaskSettings {
    fn default() -> TaskSettings {
        TaskSettings::new()
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
        self.inner.parts().get::<TaskEngine>().expect("every server has a task engine")
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
