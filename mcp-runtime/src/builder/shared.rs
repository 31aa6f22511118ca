//! The settings of what a server shares with its other instances and keeps across requests: the `requestState`
//! keys and TTL, the stores, the change hub and Redis ([`ServerBuilder::shared`]), and the tasks' settings.

use std::sync::Arc;
use std::time::Duration;

use super::ServerBuilder;

impl ServerBuilder {
    /// The key that seals the `requestState` of 2026 `input_required` results (XChaCha20-Poly1305). Give every
    /// instance behind one endpoint the same key, so that any of them can take a retry. Without one, the key comes
    /// from `MCP_REQUEST_STATE_KEY` (64 hex digits, or several separated by commas), else it is random for this
    /// process. To rotate keys, see [`request_state_keys`](ServerBuilder::request_state_keys).
    pub fn request_state_key(self, key: [u8; 32]) -> Self {
        self.request_state_keys([key])
    }

    /// Several `requestState` keys: the first seals, every one opens (`MCP_REQUEST_STATE_KEY=new,old` says the
    /// same). A sealed state names its key. To rotate the key of a running fleet without failing a retry, restart
    /// the instances one by one with `old,new` (the new key opens everywhere), then again with `new,old` (it seals),
    /// then with `new` alone once the old states have expired
    /// ([`request_state_ttl`](ServerBuilder::request_state_ttl)). An empty list keeps the default.
    pub fn request_state_keys(mut self, keys: impl IntoIterator<Item = [u8; 32]>) -> Self {
        self.state_keys = keys.into_iter().collect();
        self
    }

    /// How long a `requestState` stays valid. Default 10 minutes.
    pub fn request_state_ttl(mut self, ttl: Duration) -> Self {
        self.request_state_ttl = Some(ttl);
        self
    }

    /// Where tasks are kept (default: a [`MemoryTaskStore`](crate::MemoryTaskStore) of
    /// [`DEFAULT_MAX_TASKS`](crate::MemoryTaskStore::DEFAULT_MAX_TASKS)). A store shared by several instances lets any of them answer
    /// `tasks/get` for a task another runs.
    pub fn task_store(mut self, store: impl crate::task::TaskStore) -> Self {
        self.task_store = Some(Arc::new(store));
        self
    }

    /// Where 2025 HTTP sessions are kept for all of this server's instances (default: none; each instance keeps
    /// the sessions it opened). With a store, and a [`change_hub`](ServerBuilder::change_hub), a session opened on
    /// one instance is served by any: its record (the client's info and capabilities, log level, subscriptions,
    /// owner) is stored before the client hears of the session, rebuilt on first sight by another instance (never
    /// by replaying `initialize`), and a DELETE on one ends it on all; a cancel or an answer to the server's
    /// question that reaches another instance than the one holding its request is passed on to it.
    pub fn session_store(mut self, store: impl crate::store::session::SessionStore) -> Self {
        self.session_store = Some(Arc::new(store));
        self
    }

    /// Where the SSE events of 2025 sessions are kept for all of this server's instances (default: none; a stream
    /// can be resumed with `Last-Event-ID` only on the instance that sent it). With a log and a
    /// [`session_store`](ServerBuilder::session_store), a client whose stream broke resumes it on any instance: the
    /// events the other instance sent after the id are replayed, then what it still sends follows, until the
    /// stream ends. See [`EventLog`](crate::EventLog).
    pub fn event_log(mut self, log: impl crate::store::events::EventLog) -> Self {
        self.event_log = Some(Arc::new(log));
        self
    }

    /// How this server's instances tell each other what changed (default: none; the server is one instance):
    /// a tool enabled by a request on one is listed on the others, and their clients hear of it; a resource
    /// updated on one reaches the clients subscribed to it on another; a task's status reaches its followers on
    /// every instance. See [`hub`](crate::hub).
    pub fn change_hub(mut self, hub: impl crate::server::hub::ChangeHub) -> Self {
        self.change_hub = Some(Arc::new(hub));
        self
    }

    /// Shares this server's state with its other instances through a Redis (the `redis` feature): the change hub,
    /// the 2025 session store and event log, and the task store (at most [`DEFAULT_MAX_TASKS`](crate::MemoryTaskStore::DEFAULT_MAX_TASKS) live tasks over all instances).
    /// Every instance must then seal `requestState` with the same key (`MCP_REQUEST_STATE_KEY`, or
    /// [`ServerBuilder::request_state_key`]): building without one is an error, since a retry that reached another
    /// instance would fail. The `Redis` goes into the server's state too, for the program's own shared data
    /// (`ctx.state::<mcp::redis::Redis>()`, [`Redis::connection`](crate::redis::Redis::connection)). See
    /// [`mcp::redis`](crate::redis).
    #[cfg(feature = "redis")]
    pub fn shared(mut self, redis: &crate::redis::Redis) -> Self {
        self.change_hub = Some(Arc::new(redis.hub()));
        self.task_store = Some(Arc::new(redis.task_store(crate::store::task::DEFAULT_MAX_TASKS)));
        self.session_store = Some(Arc::new(redis.session_store()));
        self.event_log = Some(Arc::new(redis.event_log()));
        self.shared = true;
        self.state(redis.clone())
    }

    /// How long the instance running a task vouches for it (default
    /// [`DEFAULT_TASK_LEASE`](crate::ServerBuilder::DEFAULT_TASK_LEASE)): it renews the lease every third of it while the handler
    /// runs. With a task store shared by several instances, a task whose instance died (killed, or cut off from
    /// the store) is marked `failed`, saying so, by the first instance that reads it after its lease ran out,
    /// instead of staying `working` for ever.
    pub fn task_lease(mut self, lease: Duration) -> Self {
        self.task_config.lease = lease.max(Duration::from_millis(30));
        self
    }

    /// How long a task and its result are kept, from its creation, unless its tool says otherwise (default
    /// [`DEFAULT_TASK_TTL`](crate::ServerBuilder::DEFAULT_TASK_TTL)). A task still running when its TTL ends is stopped and
    /// marked `failed`.
    pub fn task_ttl(mut self, ttl: Duration) -> Self {
        self.task_config.ttl = ttl.max(Duration::from_millis(1));
        self
    }

    /// The longest TTL a client may ask for (2025-11-25 `task.ttl`) or a tool may set (default
    /// [`DEFAULT_MAX_TASK_TTL`](crate::ServerBuilder::DEFAULT_MAX_TASK_TTL)).
    pub fn task_max_ttl(mut self, ttl: Duration) -> Self {
        self.task_config.max_ttl = ttl.max(Duration::from_millis(1));
        self
    }

    /// The poll interval suggested to clients, unless a tool says otherwise (default
    /// [`DEFAULT_POLL_INTERVAL`](crate::ServerBuilder::DEFAULT_POLL_INTERVAL)).
    pub fn task_poll_interval(mut self, interval: Duration) -> Self {
        self.task_config.poll_interval = interval.max(Duration::from_millis(1));
        self
    }

    /// How many tasks one client may have running at once; more are refused with -31000, or run as plain calls
    /// where the tool's task support is optional (default
    /// [`DEFAULT_MAX_RUNNING_TASKS`](crate::ServerBuilder::DEFAULT_MAX_RUNNING_TASKS)). A client is its authenticated principal,
    /// else its 2025 session, else (2026 era) its peer address, else its connection. A finished or cancelled task
    /// no longer counts. Counted over every instance when the task store counts by client
    /// ([`TaskStore::client_tasks`](crate::TaskStore::client_tasks): Redis does), else on each instance.
    pub fn max_running_tasks(mut self, tasks: usize) -> Self {
        self.task_config.max_running = tasks.max(1);
        self
    }

    /// How many tasks one client (as for [`max_running_tasks`](Self::max_running_tasks)) may have stored at once:
    /// running, or finished and kept for their TTL. More are refused with -31000 (or run as plain calls where the
    /// tool's task support is optional), so that no client can fill the task store for the others (default
    /// [`DEFAULT_MAX_TASKS_PER_CLIENT`](crate::ServerBuilder::DEFAULT_MAX_TASKS_PER_CLIENT)).
    pub fn max_tasks_per_client(mut self, tasks: usize) -> Self {
        self.task_config.max_stored = tasks.max(1);
        self
    }
}
