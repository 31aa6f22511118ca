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
//!   (`Last-Event-ID`) on any instance, which replays what the other sent and then carries what it still sends;
//! - the Events extension's emitted events ([`mcp::events`](crate::events)), when the server has it: each type a
//!   Redis stream, so what one instance emits reaches the polls and push streams of all, and a cursor is good on any.
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
pub(crate) mod feeds;
mod hub;
mod sessions;
mod tasks;
#[cfg(feature = "webhooks")]
pub(crate) mod webhooks;

/// The `redis` crate this module is built on, for a program's own data in the same Redis
/// ([`Redis::connection`]).
pub use ::redis as driver;
pub use events::{RedisEventLog, EVENT_LOG_QUEUE, EVENT_LOG_TTL};
pub use hub::RedisHub;
pub use sessions::RedisSessionStore;
pub use tasks::RedisTaskStore;

use std::fmt;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, RwLock, Weak};
use std::time::Duration;

use ::redis::aio::{ConnectionManager, ConnectionManagerConfig};
use ::redis::sentinel::{Sentinel, SentinelNodeConnectionInfo};

/// The key prefix when none is given: every key and channel of the server starts with `mcp:`.
pub const DEFAULT_PREFIX: &str = "mcp";

/// How long one attempt to connect may take, and a command's answer.
const TIMEOUT: Duration = Duration::from_secs(5);

/// How often the instances ask Sentinel where the primary is.
const SENTINEL_POLL: Duration = Duration::from_millis(500);

/// A Redis that several instances of one server share: opened once with [`Redis::connect`], then handed to
/// [`ServerBuilder::shared`](crate::ServerBuilder::shared). Cheap to clone (its connections are shared).
///
/// Either one Redis (`redis://host:port`), or the primary that Redis Sentinel names
/// (`redis+sentinel://host:port,host:port,host:port/PRIMARY_NAME`): then the connections follow a failover,
/// moving to the new primary as soon as the sentinels name it. Redis Cluster is refused (see [`Redis::connect`]).
#[derive(Clone)]
pub struct Redis {
    primary: Arc<Primary>,
    /// Where it is, without a password: for errors and logs.
    shown: String,
    prefix: String,
}

/// The primary the connections go to now, and how to find the next one after a failover.
struct Primary {
    now: RwLock<Connected>,
    /// Bumped each time the primary moves: what holds a connection of its own (the hub's subscription) reconnects.
    moved: tokio::sync::watch::Sender<u64>,
    /// Commands of the shared state that failed (`mcp_server_redis_errors_total`).
    errors: AtomicU64,
    /// Connections found lost and made again, and moves to a new primary (`mcp_server_redis_reconnects_total`).
    reconnects: AtomicU64,
    /// Whether it answered the last `PING` of [`Redis::watch`] (`mcp_server_redis_up`).
    up: AtomicBool,
}

/// A client of one Redis server, and the shared connection to it.
#[derive(Clone)]
struct Connected {
    client: ::redis::Client,
    commands: ConnectionManager,
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

/// A `redis+sentinel://[[user]:password@]host:port[,host:port...]/PRIMARY_NAME[/db]` URL, read: the sentinels'
/// URLs, the primary's name, and how to log in to the primary.
struct SentinelUrl {
    sentinels: Vec<String>,
    name: String,
    node: SentinelNodeConnectionInfo,
}

fn sentinel_url(url: &str) -> Option<Result<SentinelUrl, String>> {
    let rest = url.strip_prefix("redis+sentinel://")?;
    let (login, rest) = match rest.rsplit_once('@') {
        Some((login, rest)) => (Some(login), rest),
        None => (None, rest),
    };
    let (hosts, path) = rest.split_once('/').unwrap_or((rest, ""));
    let mut path = path.split('/').filter(|p| !p.is_empty());
    let Some(name) = path.next() else {
        return Some(Err("a redis+sentinel:// URL names the primary after the sentinels: \
                         redis+sentinel://host:26379,host:26379/PRIMARY_NAME"
            .to_owned()));
    };
    let mut settings = ::redis::RedisConnectionInfo::default();
    if let Some(db) = path.next() {
        match db.parse() {
            Ok(db) => settings = settings.set_db(db),
            Err(_) => return Some(Err(format!("`{db}` is not a database number"))),
        }
    }
    if let Some(login) = login {
        let (user, password) = login.split_once(':').unwrap_or(("", login));
        if !user.is_empty() {
            settings = settings.set_username(user);
        }
        if !password.is_empty() {
            settings = settings.set_password(password);
        }
    }
    let sentinels: Vec<String> =
        hosts.split(',').map(str::trim).filter(|h| !h.is_empty()).map(|h| format!("redis://{h}")).collect();
    if sentinels.is_empty() {
        return Some(Err("a redis+sentinel:// URL names at least one sentinel (host:port)".to_owned()));
    }
    let node = SentinelNodeConnectionInfo::default().set_redis_connection_info(settings);
    Some(Ok(SentinelUrl { sentinels, name: name.to_owned(), node }))
}

impl Redis {
    /// Connects to the Redis at `url` and checks it answers; an unreachable Redis is an error naming the URL (a
    /// server that cannot share its state must not start as if it could). Call it inside a Tokio runtime.
    ///
    /// `url` is `redis://[[user]:password@]host[:port][/db]` (or `rediss://` for TLS where the crate was built for
    /// it), or `redis+sentinel://[[user]:password@]host:port[,host:port...]/PRIMARY_NAME[/db]` for the primary that
    /// Redis Sentinel names: the instances follow a failover (every half second they ask the sentinels
    /// where the primary is, and move their connections when it moved; what the old primary had replicated, the
    /// new one has). A Redis Cluster is refused with an error saying why: the shared state uses scripts and
    /// pipelines over keys that Cluster would spread over several nodes.
    pub async fn connect(url: &str) -> Result<Redis, RedisError> {
        let shown = shown(url);
        let fail = |reason: String| RedisError { url: shown.clone(), reason };
        let (connected, sentinel) = match sentinel_url(url) {
            None => {
                let client = ::redis::Client::open(url).map_err(|e| fail(format!("not a Redis URL: {e}")))?;
                (connect_to(client).await.map_err(fail)?, None)
            }
            Some(Err(reason)) => return Err(fail(reason)),
            Some(Ok(at)) => {
                let mut sentinel = Sentinel::build(at.sentinels.clone())
                    .map_err(|e| fail(format!("not a Redis Sentinel URL: {e}")))?;
                let client = sentinel.async_master_for(&at.name, Some(&at.node)).await.map_err(|e| {
                    fail(format!("the sentinels do not name a reachable primary called {:?}: {e}", at.name))
                })?;
                (connect_to(client).await.map_err(fail)?, Some((sentinel, at)))
            }
        };
        let mut probe = connected.commands.clone();
        let info: String = ::redis::cmd("INFO")
            .arg("cluster")
            .query_async(&mut probe)
            .await
            .map_err(|e| fail(format!("does not answer: {e}")))?;
        if info.lines().any(|l| l.trim() == "cluster_enabled:1") {
            return Err(fail(
                "it is a Redis Cluster, which is not supported: the shared state runs scripts and pipelines over \
                 several keys at once, which Cluster would spread over nodes. Use one primary (with replicas and \
                 Redis Sentinel for failover: redis+sentinel://...)"
                    .to_owned(),
            ));
        }
        let at = connected.client.get_connection_info().addr().to_string();
        tracing::info!(url = %shown, primary = %at, "connected to Redis");
        let primary = Arc::new(Primary {
            now: RwLock::new(connected),
            moved: tokio::sync::watch::channel(0).0,
            errors: AtomicU64::new(0),
            reconnects: AtomicU64::new(0),
            up: AtomicBool::new(true),
        });
        if let Some((sentinel, at)) = sentinel {
            tokio::spawn(follow_failovers(Arc::downgrade(&primary), sentinel, at, shown.clone()));
        }
        Ok(Redis { primary, shown, prefix: DEFAULT_PREFIX.to_owned() })
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
    /// connection manager ([`driver`]), which reconnects by itself. Cheap: it shares the one connection. Ask for it
    /// where it is used rather than keeping it: after a Sentinel failover this gives the new primary's.
    ///
    /// A server built with [`ServerBuilder::shared`](crate::ServerBuilder::shared) holds its `Redis` in its state,
    /// so a handler reaches it with `ctx.state::<mcp::redis::Redis>()`.
    pub fn connection(&self) -> ConnectionManager {
        self.commands()
    }

    /// The shared connection to the primary, as it is now.
    fn commands(&self) -> ConnectionManager {
        self.primary.now.read().unwrap_or_else(std::sync::PoisonError::into_inner).commands.clone()
    }

    /// A client of the primary, as it is now.
    fn client(&self) -> ::redis::Client {
        self.primary.now.read().unwrap_or_else(std::sync::PoisonError::into_inner).client.clone()
    }

    /// Changes each time the primary moves (a Sentinel failover).
    fn moved(&self) -> tokio::sync::watch::Receiver<u64> {
        self.primary.moved.subscribe()
    }

    /// Whether it answers a `PING` within `within`: what the readiness check (`/readyz`) of a shared server asks.
    pub async fn ping(&self, within: Duration) -> Result<(), RedisError> {
        let fail = |reason: String| RedisError { url: self.shown.clone(), reason };
        let mut connection = self.commands();
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

    /// A command of the shared state failed: counted, and the store's error naming this Redis.
    fn unavailable(&self, e: impl fmt::Display) -> crate::store::StoreError {
        self.failed();
        crate::store::StoreError::Unavailable(format!("Redis at {}: {e}", self.shown))
    }

    /// A command of the shared state failed (counted in `mcp_server_redis_errors_total`).
    fn failed(&self) {
        self.primary.errors.fetch_add(1, Ordering::Relaxed);
    }

    /// A lost connection was made again, or the connections moved to a new primary.
    fn reconnected(&self) {
        self.primary.reconnects.fetch_add(1, Ordering::Relaxed);
    }

    /// The commands that failed and the reconnects since it connected, and whether it answers now: what the
    /// metrics read when scraped.
    pub(crate) fn health(&self) -> (u64, u64, bool) {
        let primary = &self.primary;
        let counted = (primary.errors.load(Ordering::Relaxed), primary.reconnects.load(Ordering::Relaxed));
        (counted.0, counted.1, primary.up.load(Ordering::Relaxed))
    }

    /// Asks Redis for a `PING` every [`WATCH_EVERY`] for as long as `alive` lives (the metrics): whether it answers
    /// is [`Redis::health`]'s, and each time it answers again after it did not is a reconnect (the connection manager
    /// reconnects on its own, unseen). Needs a Tokio runtime; without one, nothing is watched.
    pub(crate) fn watch(&self, alive: Weak<()>) {
        let Ok(runtime) = tokio::runtime::Handle::try_current() else { return };
        let redis = self.clone();
        runtime.spawn(async move {
            while alive.upgrade().is_some() {
                tokio::time::sleep(WATCH_EVERY).await;
                let up = redis.ping(WATCH_EVERY).await.is_ok();
                let was = redis.primary.up.swap(up, Ordering::Relaxed);
                if up && !was {
                    redis.reconnected();
                } else if !up && was {
                    redis.failed();
                }
            }
        });
    }
}

impl fmt::Debug for Redis {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Redis").field("url", &self.shown).field("prefix", &self.prefix).finish()
    }
}

/// The shared connection to the server of `client`, checked with a `PING`.
async fn connect_to(client: ::redis::Client) -> Result<Connected, String> {
    let commands = ConnectionManager::new_with_config(client.clone(), manager_config())
        .await
        .map_err(|e| format!("cannot connect: {e}"))?;
    let mut ping = commands.clone();
    let _: String = ::redis::cmd("PING").query_async(&mut ping).await.map_err(|e| format!("does not answer: {e}"))?;
    Ok(Connected { client, commands })
}

/// Asks the sentinels where the primary is, every [`SENTINEL_POLL`], for as long as the `Redis` lives; when it
/// moved (a failover), connects to the new one and moves every connection there.
async fn follow_failovers(primary: Weak<Primary>, mut sentinel: Sentinel, at: SentinelUrl, shown: String) {
    let mut failing = false;
    loop {
        tokio::time::sleep(SENTINEL_POLL).await;
        let Some(primary) = primary.upgrade() else { return };
        let client = match tokio::time::timeout(TIMEOUT, sentinel.async_master_for(&at.name, Some(&at.node))).await {
            Ok(Ok(client)) => client,
            Ok(Err(e)) if !failing => {
                failing = true;
                tracing::warn!(url = %shown, error = %e, "the sentinels name no reachable primary (a failover?)");
                continue;
            }
            _ => continue,
        };
        if failing {
            failing = false;
            tracing::info!(url = %shown, "the sentinels name a reachable primary again");
        }
        let now = client.get_connection_info().addr().to_string();
        let was = primary
            .now
            .read()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .client
            .get_connection_info()
            .addr()
            .to_string();
        if now == was {
            continue;
        }
        match connect_to(client).await {
            Ok(connected) => {
                *primary.now.write().unwrap_or_else(std::sync::PoisonError::into_inner) = connected;
                primary.moved.send_modify(|n| *n += 1);
                primary.reconnects.fetch_add(1, Ordering::Relaxed);
                tracing::warn!(url = %shown, from = %was, to = %now, "the Redis primary moved (a failover): reconnected");
            }
            Err(e) => {
                tracing::warn!(url = %shown, primary = %now, error = %e, "cannot reach the new Redis primary yet")
            }
        }
    }
}

/// How often [`Redis::watch`] asks whether Redis answers.
const WATCH_EVERY: Duration = Duration::from_secs(1);

/// Reconnection with backoff (capped at 2 s between attempts), and a bound on each attempt and each answer.
fn manager_config() -> ConnectionManagerConfig {
    ConnectionManagerConfig::new()
        .set_connection_timeout(Some(TIMEOUT))
        .set_response_timeout(Some(TIMEOUT))
        .set_number_of_retries(3)
        .set_max_delay(Duration::from_secs(2))
}
