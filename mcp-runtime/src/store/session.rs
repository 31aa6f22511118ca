//! Where 2025 sessions are kept beyond the instance that opened them: the [`SessionStore`] trait and the
//! [`SessionRecord`] it holds. A server without one keeps each session on its instance alone (the default); with
//! one (Redis, for several instances behind a balancer), any instance serves any session.

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::Duration;

use tokio::time::Instant;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::base::future::BoxFuture;
use crate::base::sync::Unpoisoned;
use crate::store::task::StoreError;
use crate::wire::protocol::{Implementation, LogLevel};

/// What a 2025 session is, as any instance needs it to serve the session: written once `initialize` succeeded,
/// and again when the client changes its log level or its resource subscriptions.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct SessionRecord {
    /// The protocol version `initialize` agreed on.
    pub protocol_version: String,
    /// The client's name and version, as it said.
    pub client_info: Implementation,
    /// The client's capabilities, as it sent them.
    pub capabilities: Value,
    /// What `logging/setLevel` set; `None`: every level.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub log_level: Option<LogLevel>,
    /// The URIs it subscribed to.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub subscriptions: Vec<String>,
    /// The principal that opened it, when requests are authenticated: only it may use the session.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub owner: Option<String>,
}

/// Holds 2025 sessions for several instances ([`ServerBuilder::session_store`]). Every method is async and moves
/// whole records. Keys are not the session ids clients present but a digest of them, so that whoever reads the
/// store cannot take over a session. A record lives for `idle` from its last write or [`touch`](SessionStore::touch),
/// then may be forgotten: the session has expired everywhere.
///
/// [`ServerBuilder::session_store`]: crate::ServerBuilder::session_store
pub trait SessionStore: Send + Sync + 'static {
    /// Writes a session's record, to live `idle` from now.
    fn save<'a>(
        &'a self,
        key: &'a str,
        record: &'a SessionRecord,
        idle: Duration,
    ) -> BoxFuture<'a, Result<(), StoreError>>;
    /// The session's record, unless it is unknown, ended or expired.
    fn load<'a>(&'a self, key: &'a str) -> BoxFuture<'a, Result<Option<SessionRecord>, StoreError>>;
    /// The session was used: it lives `idle` from now.
    fn touch<'a>(&'a self, key: &'a str, idle: Duration) -> BoxFuture<'a, Result<(), StoreError>>;
    /// The session ended (DELETE): forgotten everywhere.
    fn remove<'a>(&'a self, key: &'a str) -> BoxFuture<'a, Result<(), StoreError>>;
    /// How many sessions are live over all instances, for the session cap (`HttpOptions::max_sessions`).
    fn count(&self) -> BoxFuture<'_, Result<usize, StoreError>>;
}

/// A [`SessionStore`] in this process, for servers of one process that share sessions (tests, in-process
/// instances); unbounded but for expiry.
#[derive(Default)]
pub struct MemorySessionStore {
    sessions: Mutex<HashMap<String, (SessionRecord, Instant)>>,
}

impl MemorySessionStore {
    /// An empty store.
    pub fn new() -> MemorySessionStore {
        MemorySessionStore::default()
    }
}

impl std::fmt::Debug for MemorySessionStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MemorySessionStore").field("sessions", &self.sessions.locked().len()).finish()
    }
}

impl SessionStore for MemorySessionStore {
    fn save<'a>(
        &'a self,
        key: &'a str,
        record: &'a SessionRecord,
        idle: Duration,
    ) -> BoxFuture<'a, Result<(), StoreError>> {
        let now = Instant::now();
        let mut sessions = self.sessions.locked();
        sessions.retain(|_, (_, until)| *until > now);
        sessions.insert(key.to_owned(), (record.clone(), now + idle));
        Box::pin(std::future::ready(Ok(())))
    }

    fn load<'a>(&'a self, key: &'a str) -> BoxFuture<'a, Result<Option<SessionRecord>, StoreError>> {
        let now = Instant::now();
        let found = self.sessions.locked().get(key).filter(|(_, until)| *until > now).map(|(r, _)| r.clone());
        Box::pin(std::future::ready(Ok(found)))
    }

    fn touch<'a>(&'a self, key: &'a str, idle: Duration) -> BoxFuture<'a, Result<(), StoreError>> {
        if let Some((_, until)) = self.sessions.locked().get_mut(key) {
            *until = Instant::now() + idle;
        }
        Box::pin(std::future::ready(Ok(())))
    }

    fn remove<'a>(&'a self, key: &'a str) -> BoxFuture<'a, Result<(), StoreError>> {
        self.sessions.locked().remove(key);
        Box::pin(std::future::ready(Ok(())))
    }

    fn count(&self) -> BoxFuture<'_, Result<usize, StoreError>> {
        let now = Instant::now();
        let live = self.sessions.locked().values().filter(|(_, until)| *until > now).count();
        Box::pin(std::future::ready(Ok(live)))
    }
}
