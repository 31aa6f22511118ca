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

    /// Where tasks are kept (default: a [`MemoryTaskStore`](crate::store::MemoryTaskStore) of
    /// [`DEFAULT_MAX_TASKS`](crate::store::MemoryTaskStore::DEFAULT_MAX_TASKS)). A store shared by several instances lets any of them answer
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
    /// stream ends. See [`EventLog`](crate::store::EventLog).
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
    /// the 2025 session store and event log, and the task store (at most [`DEFAULT_MAX_TASKS`](crate::store::MemoryTaskStore::DEFAULT_MAX_TASKS) live tasks over all instances).
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

    /// How tasks run here: their TTL, the poll interval suggested to clients, how many one client may have running
    /// and stored, how long an instance vouches for the ones it runs ([`TaskSettings`](crate::TaskSettings), each
    /// setting's default unless set there).
    pub fn tasks(mut self, settings: crate::TaskSettings) -> Self {
        self.task_settings = settings;
        self
    }
}
