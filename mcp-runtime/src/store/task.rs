//! Where tasks are kept: the [`TaskStore`] trait, shaped for a remote store (every call is async and moves whole
//! records), and [`MemoryTaskStore`], the bounded in-process default.

use std::collections::{BTreeMap, HashMap};
use std::fmt;
use std::sync::Mutex;

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::base::future::BoxFuture;
use crate::base::sync::Unpoisoned;
use crate::wire::error::Error;

/// Where a task is in its life.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum TaskStatus {
    /// Running.
    Working,
    /// Waiting for the client to answer a question.
    InputRequired,
    /// Finished with a result (a tool error is a result too, in the 2026 era).
    Completed,
    /// Finished with an error.
    Failed,
    /// Cancelled by the client, or by the server when it stopped.
    Cancelled,
}

impl TaskStatus {
    /// Whether the task is over: nothing changes it any more.
    pub fn is_terminal(self) -> bool {
        matches!(self, TaskStatus::Completed | TaskStatus::Failed | TaskStatus::Cancelled)
    }

    /// The wire spelling.
    pub fn as_str(self) -> &'static str {
        match self {
            TaskStatus::Working => "working",
            TaskStatus::InputRequired => "input_required",
            TaskStatus::Completed => "completed",
            TaskStatus::Failed => "failed",
            TaskStatus::Cancelled => "cancelled",
        }
    }
}

impl fmt::Display for TaskStatus {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Everything known about one task, as a store keeps it. Serializable, so a remote store can hold it as it is.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct TaskRecord {
    /// 128 random bits, hex.
    pub id: String,
    /// The tool it runs.
    pub tool: String,
    /// Where it is.
    pub status: TaskStatus,
    /// Why it is there, in words.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status_message: Option<String>,
    /// Milliseconds since the Unix epoch.
    pub created_at_ms: u64,
    /// Milliseconds since the Unix epoch.
    pub updated_at_ms: u64,
    /// How long the task (and its result) is kept after its creation; `None`: until the store is dropped.
    pub ttl_ms: Option<u64>,
    /// How often a client should poll it.
    pub poll_interval_ms: u64,
    /// 2025-11-25: the session that created it (only that session sees it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub session: Option<String>,
    /// The authenticated principal that created it, when there was one (only that principal sees it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub subject: Option<String>,
    /// 2026-07-28: the questions waiting for an answer, by key (`{method, params}` each).
    #[serde(default, skip_serializing_if = "Map::is_empty")]
    pub input_requests: Map<String, Value>,
    /// Once terminal: the result (`Ok`) or the error (`Err`) of the call.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub outcome: Option<Result<Value, Error>>,
    /// Orders the writes of the instance running the task: a store keeps the highest.
    pub seq: u64,
    /// Until when (milliseconds since the Unix epoch) the instance running the task vouches for it: it renews the
    /// lease while the handler runs. A task that is not over past its lease has lost its instance (killed, or cut
    /// off), and is failed by whichever instance reads it next. `None` in records written before leases.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lease_until_ms: Option<u64>,
    /// The client the per-client task limits count it for (its principal, else its 2025 session, else its 2026
    /// peer address), for a store that counts them over every instance ([`TaskStore::client_tasks`]). `None` in
    /// records written before.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub client: Option<String>,
}

impl TaskRecord {
    /// When the store may forget it (milliseconds since the Unix epoch).
    pub fn expires_at_ms(&self) -> Option<u64> {
        self.ttl_ms.map(|ttl| self.created_at_ms.saturating_add(ttl))
    }
}

/// Why a store could not do what was asked.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum StoreError {
    /// The store holds as many tasks as it may.
    Full {
        /// Its limit.
        limit: usize,
    },
    /// The store could not be reached or answered with an error.
    Unavailable(String),
}

impl fmt::Display for StoreError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            StoreError::Full { limit } => {
                write!(f, "the server holds as many tasks as it may ({limit}); try again once some have expired")
            }
            StoreError::Unavailable(why) => write!(f, "the task store is unavailable: {why}"),
        }
    }
}

impl std::error::Error for StoreError {}

/// How many tasks of one client a store holds, over every instance that shares it ([`TaskStore::client_tasks`]).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct ClientTasks {
    /// Tasks not over (working, or waiting for input) whose instance still vouches for them (their lease holds).
    pub running: usize,
    /// Tasks not expired: running, or finished and kept for their TTL.
    pub stored: usize,
}

impl ClientTasks {
    /// Counts of `running` and `stored` tasks.
    pub fn new(running: usize, stored: usize) -> ClientTasks {
        ClientTasks { running, stored }
    }
}

/// A page of tasks.
#[derive(Clone, Debug, Default)]
#[non_exhaustive]
pub struct TaskPage {
    /// The tasks, oldest first.
    pub tasks: Vec<TaskRecord>,
    /// Where the next page starts, if there is one.
    pub next_cursor: Option<String>,
}

/// Holds tasks. Every method is async and moves whole records, so an implementation can live in another process
/// (Redis, a database) and several server instances can share it. The server writes a task's record only from the
/// instance that runs it, except for a cancel, which any instance may write.
///
/// The two rules a store must keep:
/// - **A terminal status is final.** [`TaskStore::update`] changes nothing once the stored record is terminal (and
///   says so), which is how a cancel racing a completion leaves exactly one of them in the record.
/// - **Writes are ordered by `seq`**: an update whose `seq` is not above the stored one is ignored, so two writes
///   of the same instance that reach the store out of order cannot go back in time.
///
/// A record whose TTL has run out may be forgotten at any time after.
///
/// [`MemoryTaskStore`] keeps both rules:
///
/// ```
/// use mcp::store::{MemoryTaskStore, TaskRecord, TaskStatus, TaskStore};
///
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() {
/// let store = MemoryTaskStore::new(100);
/// let working: TaskRecord = serde_json::from_value(serde_json::json!({
///     "id": "t1", "tool": "rebuild_index", "status": "working", "created_at_ms": 0, "updated_at_ms": 0,
///     "ttl_ms": null, "poll_interval_ms": 500, "seq": 1,
/// }))
/// .unwrap();
/// store.create(working.clone()).await.unwrap();
///
/// let mut done = working.clone();
/// (done.status, done.seq) = (TaskStatus::Completed, 2);
/// assert!(store.update(done).await.unwrap());
/// let mut cancelled = working; // a cancel that lost the race
/// (cancelled.status, cancelled.seq) = (TaskStatus::Cancelled, 3);
/// assert!(!store.update(cancelled).await.unwrap());
/// assert_eq!(store.get("t1").await.unwrap().unwrap().status, TaskStatus::Completed);
/// # }
/// ```
pub trait TaskStore: Send + Sync + 'static {
    /// Stores a new task. When this returns, [`TaskStore::get`] finds it, from any instance.
    fn create(&self, record: TaskRecord) -> BoxFuture<'_, Result<(), StoreError>>;

    /// The task with this id, unless it is unknown or expired.
    fn get<'a>(&'a self, id: &'a str) -> BoxFuture<'a, Result<Option<TaskRecord>, StoreError>>;

    /// Replaces a live task's record. Returns `false`, changing nothing, when the stored record is already
    /// terminal, is gone, or has a `seq` at or above this one's.
    fn update(&self, record: TaskRecord) -> BoxFuture<'_, Result<bool, StoreError>>;

    /// One page of a session's tasks, oldest first, `limit` at most, starting at `cursor` (from an earlier page).
    /// An invalid cursor is `Ok(None)`.
    fn list<'a>(
        &'a self,
        session: &'a str,
        cursor: Option<&'a str>,
        limit: usize,
    ) -> BoxFuture<'a, Result<Option<TaskPage>, StoreError>>;

    /// How many of `client`'s tasks ([`TaskRecord::client`]) the store holds, over every instance that shares it,
    /// for the per-client limits (`TaskSettings::max_running`, `max_per_client`); `None` (the default)
    /// when it does not count by client: each instance then counts the tasks it started itself, so N instances
    /// allow a client N times the limits. The limits are checked before a task is created, so creations racing on
    /// several instances may pass them by a few.
    fn client_tasks<'a>(&'a self, client: &'a str) -> BoxFuture<'a, Result<Option<ClientTasks>, StoreError>> {
        let _ = client;
        Box::pin(std::future::ready(Ok(None)))
    }
}

/// The default number of tasks a [`MemoryTaskStore`] holds: 10 000.
pub(crate) const DEFAULT_MAX_TASKS: usize = 10_000;

/// An in-process [`TaskStore`], bounded by a number of tasks; expired tasks are dropped as new ones come in.
///
/// A server without a store of its own uses `MemoryTaskStore::default()`, which holds [`MemoryTaskStore::DEFAULT_MAX_TASKS`]. When
/// it is full of live tasks, a call that would start one more is refused with
/// [`ErrorCode::OVERLOADED`](crate::ErrorCode::OVERLOADED).
///
/// ```
/// use mcp::store::{MemoryTaskStore, StoreError, TaskRecord, TaskStore};
///
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() {
/// let task = |id: &str| -> TaskRecord {
///     let record = serde_json::json!({ "id": id, "tool": "t", "status": "working", "created_at_ms": 0,
///         "updated_at_ms": 0, "ttl_ms": null, "poll_interval_ms": 500, "seq": 1 });
///     serde_json::from_value(record).unwrap()
/// };
/// let store = MemoryTaskStore::new(1);
/// store.create(task("a")).await.unwrap();
/// assert_eq!(store.create(task("b")).await, Err(StoreError::Full { limit: 1 }));
///
/// let _server = mcp::Server::builder().task_store(store).build().unwrap();
/// # }
/// ```
pub struct MemoryTaskStore {
    max_tasks: usize,
    inner: Mutex<Memory>,
}

#[derive(Default)]
struct Memory {
    tasks: HashMap<String, (u64, TaskRecord)>,
    /// Creation order, for listing: a serial number per task.
    order: BTreeMap<u64, String>,
    next: u64,
}

impl Memory {
    fn remove(&mut self, id: &str) {
        if let Some((serial, _)) = self.tasks.remove(id) {
            self.order.remove(&serial);
        }
    }

    fn sweep(&mut self, now: u64) {
        let expired: Vec<String> = self
            .tasks
            .iter()
            .filter(|(_, (_, r))| r.expires_at_ms().is_some_and(|at| at <= now))
            .map(|(id, _)| id.clone())
            .collect();
        for id in expired {
            self.remove(&id);
        }
    }
}

impl MemoryTaskStore {
    /// The tasks [`MemoryTaskStore::default`] holds: 10 000.
    pub const DEFAULT_MAX_TASKS: usize = DEFAULT_MAX_TASKS;

    /// A store that holds at most `max_tasks` tasks.
    pub fn new(max_tasks: usize) -> MemoryTaskStore {
        MemoryTaskStore { max_tasks: max_tasks.max(1), inner: Mutex::new(Memory::default()) }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Memory> {
        self.inner.locked()
    }

    fn get_now(&self, id: &str) -> Option<TaskRecord> {
        let now = crate::base::now_ms();
        let mut memory = self.lock();
        let (_, record) = memory.tasks.get(id)?;
        if record.expires_at_ms().is_some_and(|at| at <= now) {
            memory.remove(id);
            return None;
        }
        Some(record.clone())
    }
}

impl Default for MemoryTaskStore {
    fn default() -> MemoryTaskStore {
        MemoryTaskStore::new(DEFAULT_MAX_TASKS)
    }
}

impl fmt::Debug for MemoryTaskStore {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("MemoryTaskStore").field("max_tasks", &self.max_tasks).finish_non_exhaustive()
    }
}

impl TaskStore for MemoryTaskStore {
    fn create(&self, record: TaskRecord) -> BoxFuture<'_, Result<(), StoreError>> {
        let mut memory = self.lock();
        if memory.tasks.len() >= self.max_tasks {
            memory.sweep(crate::base::now_ms());
        }
        let result = if memory.tasks.len() >= self.max_tasks {
            Err(StoreError::Full { limit: self.max_tasks })
        } else {
            let serial = memory.next;
            memory.next += 1;
            memory.order.insert(serial, record.id.clone());
            memory.tasks.insert(record.id.clone(), (serial, record));
            Ok(())
        };
        Box::pin(std::future::ready(result))
    }

    fn get<'a>(&'a self, id: &'a str) -> BoxFuture<'a, Result<Option<TaskRecord>, StoreError>> {
        Box::pin(std::future::ready(Ok(self.get_now(id))))
    }

    fn update(&self, record: TaskRecord) -> BoxFuture<'_, Result<bool, StoreError>> {
        let mut memory = self.lock();
        let applied = match memory.tasks.get_mut(&record.id) {
            Some((_, stored)) if !stored.status.is_terminal() && record.seq > stored.seq => {
                *stored = record;
                true
            }
            _ => false,
        };
        Box::pin(std::future::ready(Ok(applied)))
    }

    fn list<'a>(
        &'a self,
        session: &'a str,
        cursor: Option<&'a str>,
        limit: usize,
    ) -> BoxFuture<'a, Result<Option<TaskPage>, StoreError>> {
        let page = (|| {
            let start = match cursor {
                None => 0,
                Some(c) => c.parse::<u64>().ok()?,
            };
            let now = crate::base::now_ms();
            let memory = self.lock();
            let mut page = TaskPage::default();
            let mine = memory
                .order
                .range(start..)
                .filter_map(|(serial, id)| memory.tasks.get(id).map(|(_, r)| (*serial, r)))
                .filter(|(_, r)| r.session.as_deref() == Some(session))
                .filter(|(_, r)| r.expires_at_ms().is_none_or(|at| at > now));
            for (serial, record) in mine {
                if page.tasks.len() == limit.max(1) {
                    page.next_cursor = Some(serial.to_string());
                    break;
                }
                page.tasks.push(record.clone());
            }
            Some(page)
        })();
        Box::pin(std::future::ready(Ok(page)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn record(id: &str, session: &str, ttl_ms: Option<u64>) -> TaskRecord {
        let now = crate::task::now_ms();
        TaskRecord {
            id: id.into(),
            tool: "t".into(),
            status: TaskStatus::Working,
            status_message: None,
            created_at_ms: now,
            updated_at_ms: now,
            ttl_ms,
            poll_interval_ms: 100,
            session: Some(session.into()),
            subject: None,
            input_requests: Map::new(),
            outcome: None,
            seq: 0,
            lease_until_ms: None,
            client: None,
        }
    }

    fn block<T>(f: BoxFuture<'_, T>) -> T {
        tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(f)
    }

    #[test]
    fn a_terminal_status_is_final_and_writes_are_ordered() {
        let store = MemoryTaskStore::default();
        block(store.create(record("a", "s", None))).unwrap();
        let mut r = record("a", "s", None);
        r.seq = 2;
        r.status = TaskStatus::InputRequired;
        assert!(block(store.update(r.clone())).unwrap());
        r.seq = 1;
        r.status = TaskStatus::Working;
        assert!(!block(store.update(r.clone())).unwrap(), "an older write is ignored");
        r.seq = 3;
        r.status = TaskStatus::Cancelled;
        assert!(block(store.update(r.clone())).unwrap());
        r.seq = 4;
        r.status = TaskStatus::Completed;
        assert!(!block(store.update(r)).unwrap(), "cancelled stays cancelled");
        assert_eq!(block(store.get("a")).unwrap().unwrap().status, TaskStatus::Cancelled);
    }

    #[test]
    fn lists_pages_of_one_session_and_forgets_expired_tasks() {
        let store = MemoryTaskStore::new(4);
        for id in ["a", "b", "c"] {
            block(store.create(record(id, "s1", None))).unwrap();
        }
        block(store.create(record("x", "s2", Some(0)))).unwrap();
        let first = block(store.list("s1", None, 2)).unwrap().unwrap();
        assert_eq!(first.tasks.iter().map(|t| t.id.as_str()).collect::<Vec<_>>(), ["a", "b"]);
        let next = first.next_cursor.unwrap();
        let second = block(store.list("s1", Some(&next), 2)).unwrap().unwrap();
        assert_eq!(second.tasks.iter().map(|t| t.id.as_str()).collect::<Vec<_>>(), ["c"]);
        assert!(second.next_cursor.is_none());
        assert!(block(store.list("s1", Some("nope"), 2)).unwrap().is_none());
        assert!(block(store.get("x")).unwrap().is_none(), "a task whose TTL ran out is gone");
        // Full, but the expired one makes room.
        block(store.create(record("d", "s1", None))).unwrap();
        assert_eq!(block(store.create(record("e", "s1", None))), Err(StoreError::Full { limit: 4 }));
    }
}
