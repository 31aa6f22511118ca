//! Scale-out on Redis (the `redis` feature): the state that several instances of one server share, kept in a Redis
//! they all reach. [`Redis::connect`] opens the connections once; [`ServerBuilder::shared`] hands every seam its
//! part:
//!
//! - the change hub ([`RedisHub`]): what one instance changed (a tool enabled, a resource updated, a task's status)
//!   is published on a channel every instance subscribes to;
//! - the task store ([`RedisTaskStore`]): every task's record, so any instance answers `tasks/get`, `tasks/list`,
//!   `tasks/result` and `tasks/cancel`, and a cancel written on one stops the handler on the instance running it;
//! - the session store ([`RedisSessionStore`]): every 2025 session's record, so any instance serves any session,
//!   and a cancel or an answer that reaches another instance than its request's is passed on through the hub;
//! - the event log ([`RedisEventLog`]): every 2025 session's SSE events, so a stream that broke is resumed
//!   (`Last-Event-ID`) on any instance, which replays what the other sent and then carries what it still sends.
//!
//! Both go through the `redis` crate's connection manager, which reconnects with backoff when the connection
//! drops (and subscribes again). While Redis is unreachable, what needs it fails with an error that says so (a task
//! call, `tasks/get`), changes are not carried to other instances, and nothing panics.
//!
//! ```no_run
//! # #[allow(dead_code)]
//! # async fn run() -> Result<(), Box<dyn std::error::Error>> {
//! let redis = mcp::redis::Redis::connect("redis://127.0.0.1:6379").await?;
//! let server = mcp::Server::builder().registered().shared(&redis).build()?;
//! server.serve_http(([0, 0, 0, 0], 8000).into(), mcp::HttpOptions::new()).await?;
//! # Ok(())
//! # }
//! ```
//!
//! [`ServerBuilder::shared`]: crate::ServerBuilder::shared

mod events;
mod hub;
mod sessions;
mod tasks;

/// The `redis` crate this module is built on, for a program's own data in the same Redis
/// ([`Redis::connection`]).
pub use ::redis as driver;
pub use events::{RedisEventLog, EVENT_LOG_QUEUE, EVENT_LOG_TTL};
pub use hub::RedisHub;
pub use sessions::RedisSessionStore;
pub use tasks::RedisTaskStore;

use std::fmt;
use std::time::Duration;

use ::redis::aio::{ConnectionManager, ConnectionManagerConfig};

/// The key prefix when none is given: every key and channel of the server starts with `mcp:`.
pub const DEFAULT_PREFIX: &str = "mcp";

/// How long one attempt to connect may take, and a command's answer.
const TIMEOUT: Duration = Duration::from_secs(5);

/// A Redis that several instances of one server share: opened once with [`Redis::connect`], then handed to
/// [`ServerBuilder::shared`](crate::ServerBuilder::shared). Cheap to clone (its connections are shared).
#[derive(Clone)]
pub struct Redis {
    client: ::redis::Client,
    commands: ConnectionManager,
    /// Where it is, without a password: for errors and logs.
    shown: String,
    prefix: String,
}

/// Why a Redis could not be used.
#[derive(Debug)]
#[non_exhaustive]
pub struct RedisError {
    /// The URL, without its password.
    pub url: String,
    /// What went wrong.
    pub reason: String,
}

impl fmt::Display for RedisError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Redis at {}: {}", self.url, self.reason)
    }
}

impl std::error::Error for RedisError {}

/// A URL as it may be shown: without its password.
fn shown(url: &str) -> String {
    match url.split_once("://") {
        Some((scheme, rest)) => match rest.rsplit_once('@') {
            Some((_, host)) => format!("{scheme}://***@{host}"),
            None => url.to_owned(),
        },
        None => url.to_owned(),
    }
}

impl Redis {
    /// Connects to the Redis at `url` (`redis://[[user]:password@]host[:port][/db]`, or `rediss://` for TLS where
    /// the crate was built for it) and checks it answers; an unreachable Redis is an error naming the URL (a server
    /// that cannot share its state must not start as if it could). Call it inside a Tokio runtime.
    pub async fn connect(url: &str) -> Result<Redis, RedisError> {
        let shown = shown(url);
        let fail = |reason: String| RedisError { url: shown.clone(), reason };
        let client = ::redis::Client::open(url).map_err(|e| fail(format!("not a Redis URL: {e}")))?;
        let commands = ConnectionManager::new_with_config(client.clone(), manager_config())
            .await
            .map_err(|e| fail(format!("cannot connect: {e}")))?;
        let mut ping = commands.clone();
        let _: String =
            ::redis::cmd("PING").query_async(&mut ping).await.map_err(|e| fail(format!("does not answer: {e}")))?;
        tracing::info!(url = %shown, "connected to Redis");
        Ok(Redis { client, commands, shown, prefix: DEFAULT_PREFIX.to_owned() })
    }

    /// Keys and channels start with `prefix` and a colon (default [`DEFAULT_PREFIX`]): servers that share one
    /// Redis but are not instances of one another take different prefixes.
    pub fn prefix(mut self, prefix: impl Into<String>) -> Redis {
        self.prefix = prefix.into();
        self
    }

    /// The change hub on this Redis.
    pub fn hub(&self) -> RedisHub {
        RedisHub::new(self)
    }

    /// The 2025 session store on this Redis.
    pub fn session_store(&self) -> RedisSessionStore {
        RedisSessionStore::new(self)
    }

    /// The 2025 sessions' event log on this Redis. Call it inside a Tokio runtime (its writer is a task).
    pub fn event_log(&self) -> RedisEventLog {
        RedisEventLog::new(self)
    }

    /// The task store on this Redis, holding at most `max_tasks` live tasks (over all instances).
    pub fn task_store(&self, max_tasks: usize) -> RedisTaskStore {
        RedisTaskStore::new(self, max_tasks)
    }

    /// A connection for the program's own data in this Redis (the bookshop's holds, say): the `redis` crate's
    /// connection manager ([`driver`]), which reconnects by itself. Cheap: it shares the one connection.
    ///
    /// A server built with [`ServerBuilder::shared`](crate::ServerBuilder::shared) holds its `Redis` in its state,
    /// so a handler reaches it with `ctx.state::<mcp::redis::Redis>()`.
    pub fn connection(&self) -> ConnectionManager {
        self.commands.clone()
    }

    /// Whether it answers a `PING` within `within`: what the readiness check (`/readyz`) of a shared server asks.
    pub async fn ping(&self, within: Duration) -> Result<(), RedisError> {
        let fail = |reason: String| RedisError { url: self.shown.clone(), reason };
        let mut connection = self.commands.clone();
        let command = ::redis::cmd("PING");
        match tokio::time::timeout(within, command.query_async::<String>(&mut connection)).await {
            Ok(Ok(_)) => Ok(()),
            Ok(Err(e)) => Err(fail(format!("does not answer: {e}"))),
            Err(_) => Err(fail(format!("did not answer within {within:?}"))),
        }
    }

    /// The key prefix (see [`Redis::prefix`]).
    pub fn key_prefix(&self) -> &str {
        &self.prefix
    }

    /// Where it is, without a password.
    pub fn url(&self) -> &str {
        &self.shown
    }

    fn key(&self, rest: &str) -> String {
        format!("{}:{rest}", self.prefix)
    }
}

impl fmt::Debug for Redis {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Redis").field("url", &self.shown).field("prefix", &self.prefix).finish()
    }
}

/// Reconnection with backoff (capped at 2 s between attempts), and a bound on each attempt and each answer.
fn manager_config() -> ConnectionManagerConfig {
    ConnectionManagerConfig::new()
        .set_connection_timeout(Some(TIMEOUT))
        .set_response_timeout(Some(TIMEOUT))
        .set_number_of_retries(3)
        .set_max_delay(Duration::from_secs(2))
}
