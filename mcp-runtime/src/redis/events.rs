//! [`RedisEventLog`]: the SSE events of 2025 sessions in Redis, each stream a Redis stream under
//! `{prefix}:events:{session key}:{stream}` whose entry ids are `0-{event number}` (an entry with field `d` holds an
//! event's data; one with field `e` marks the stream's end). Each stream keeps about [`DEFAULT_LOG_EVENTS`]
//! entries (`MAXLEN ~`) and expires [`EVENT_LOG_TTL`] after its last write.
//!
//! Appends are queued (at most [`EVENT_LOG_QUEUE`] events) and written in order by one task, in pipelines: the path
//! of an event never waits for Redis. While Redis is unreachable, or the queue is full, events are not logged (a
//! resume from one of them on another instance is refused), and the warning says so.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use tokio::sync::mpsc;

use super::Redis;
use crate::base::future::BoxFuture;
use crate::store::events::{EventLog, LogSlice, DEFAULT_LOG_EVENTS};
use crate::store::task::StoreError;

/// How long a stream's events stay in Redis after its last write: one hour.
pub const EVENT_LOG_TTL: Duration = Duration::from_secs(60 * 60);
/// How many events may wait to be written to Redis: 8192; past that they are not logged.
pub const EVENT_LOG_QUEUE: usize = 8192;
/// How many queued events one pipeline writes.
const BATCH: usize = 128;

enum Write {
    Append {
        key: String,
        number: u64,
        data: Arc<str>,
    },
    End {
        key: String,
    },
    /// The request a stream answers, kept beside the stream as long as it.
    Request {
        key: String,
        id: String,
    },
}

/// The event log on a Redis ([`Redis::event_log`]).
#[derive(Clone)]
pub struct RedisEventLog {
    redis: Redis,
    queue: mpsc::Sender<Write>,
    /// Events not logged because the queue was full (warned at powers of two).
    dropped: Arc<AtomicU64>,
}

impl std::fmt::Debug for RedisEventLog {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RedisEventLog").field("redis", &self.redis).finish()
    }
}

impl RedisEventLog {
    /// Needs a Tokio runtime: its writer is a task.
    pub(super) fn new(redis: &Redis) -> RedisEventLog {
        let (queue, writes) = mpsc::channel(EVENT_LOG_QUEUE);
        tokio::spawn(write(redis.clone(), writes));
        RedisEventLog { redis: redis.clone(), queue, dropped: Arc::new(AtomicU64::new(0)) }
    }

    fn key(&self, session: &str, stream: &str) -> String {
        self.redis.key(&format!("events:{session}:{stream}"))
    }

    fn queue(&self, write: Write) {
        if self.queue.try_send(write).is_err() {
            let dropped = self.dropped.fetch_add(1, Ordering::Relaxed) + 1;
            if dropped.is_power_of_two() {
                tracing::warn!(
                    dropped,
                    redis = %self.redis.shown,
                    "SSE events are not being logged to Redis (it is slow or unreachable): a stream they belong to \
                     cannot be resumed on another instance"
                );
            }
        }
    }
}

/// Writes what is queued, in order, a pipeline at a time, until every log of this writer is dropped.
async fn write(redis: Redis, mut writes: mpsc::Receiver<Write>) {
    let ttl = EVENT_LOG_TTL.as_millis() as u64;
    let mut batch = Vec::with_capacity(BATCH);
    while writes.recv_many(&mut batch, BATCH).await > 0 {
        let mut pipe = ::redis::pipe();
        for write in batch.drain(..) {
            let (key, id, field, value) = match write {
                Write::Append { key, number, data } => (key, format!("0-{number}"), "d", data.to_string()),
                // After any event: the largest id there is.
                Write::End { key } => (key, format!("0-{}", u64::MAX), "e", String::new()),
                Write::Request { key, id } => {
                    pipe.cmd("SET").arg(request_key(&key)).arg(id).arg("PX").arg(ttl).ignore();
                    continue;
                }
            };
            pipe.cmd("XADD")
                .arg(&key)
                .arg("MAXLEN")
                .arg("~")
                .arg(DEFAULT_LOG_EVENTS)
                .arg(id)
                .arg(field)
                .arg(value)
                .cmd("PEXPIRE")
                .arg(&key)
                .arg(ttl)
                .ignore();
        }
        let mut connection = redis.commands();
        // Each XADD answers on its own: one refused does not hide the others' outcome.
        let answers = pipe.ignore_errors().query_async::<Vec<::redis::RedisResult<::redis::Value>>>(&mut connection);
        let failed = match answers.await {
            Ok(answers) => answers.into_iter().filter_map(Result::err).find(|e| !after_the_end(e)),
            Err(e) => Some(e),
        };
        if let Some(e) = failed {
            redis.failed();
            tracing::warn!(error = %e, redis = %redis.shown, "SSE events could not be logged to Redis");
        }
    }
}

/// An XADD refused because its id is not past the stream's last: the stream was ended already (its end is the
/// largest id there is) and this is a second end, or a write that came after it (a stream ended by the session's
/// end and by its own at once). Nothing is lost: a reader stops at the end.
fn after_the_end(e: &::redis::RedisError) -> bool {
    e.to_string().contains("equal or smaller than the target stream top item")
}

/// Where the request a stream answers is kept: beside the stream's key.
fn request_key(stream_key: &str) -> String {
    format!("{stream_key}:request")
}

/// One entry of `XRANGE`: its id and its fields and values.
type Entry = (String, Vec<String>);

fn number(id: &str) -> Option<u64> {
    id.strip_prefix("0-")?.parse().ok()
}

impl EventLog for RedisEventLog {
    fn append(&self, session: &str, stream: &str, number: u64, data: &Arc<str>) {
        self.queue(Write::Append { key: self.key(session, stream), number, data: data.clone() });
    }

    fn end(&self, session: &str, stream: &str) {
        self.queue(Write::End { key: self.key(session, stream) });
    }

    fn read_after<'a>(
        &'a self,
        session: &'a str,
        stream: &'a str,
        after: u64,
        max: usize,
    ) -> BoxFuture<'a, Result<Option<LogSlice>, StoreError>> {
        Box::pin(async move {
            let key = self.key(session, stream);
            let mut connection = self.redis.commands();
            // The event resumed from, then what follows it.
            let (this, next): (Vec<Entry>, Vec<Entry>) = ::redis::pipe()
                .cmd("XRANGE")
                .arg(&key)
                .arg(format!("0-{after}"))
                .arg(format!("0-{after}"))
                .cmd("XRANGE")
                .arg(&key)
                .arg(format!("0-{}", after.saturating_add(1)))
                .arg("+")
                .arg("COUNT")
                .arg(max.max(1) + 1)
                .query_async(&mut connection)
                .await
                .map_err(|e| self.redis.unavailable(e))?;
            if this.is_empty() {
                return Ok(None);
            }
            let mut slice = LogSlice::default();
            for (id, fields) in next {
                match fields.first().map(String::as_str) {
                    Some("e") => {
                        slice.ended = true;
                        break;
                    }
                    Some("d") if slice.events.len() < max => {
                        let Some(n) = number(&id) else { continue };
                        slice.events.push((n, Arc::from(fields.get(1).map_or("", String::as_str))));
                    }
                    _ => break,
                }
            }
            Ok(Some(slice))
        })
    }

    fn opened(&self, session: &str, stream: &str, request: &str) {
        self.queue(Write::Request { key: self.key(session, stream), id: request.to_owned() });
    }

    fn request<'a>(&'a self, session: &'a str, stream: &'a str) -> BoxFuture<'a, Result<Option<String>, StoreError>> {
        Box::pin(async move {
            let mut connection = self.redis.commands();
            ::redis::cmd("GET")
                .arg(request_key(&self.key(session, stream)))
                .query_async(&mut connection)
                .await
                .map_err(|e| self.redis.unavailable(e))
        })
    }

    fn vouch<'a>(&'a self, instance: &'a str, lease: Duration) -> BoxFuture<'a, Result<(), StoreError>> {
        Box::pin(async move {
            let mut connection = self.redis.commands();
            ::redis::cmd("SET")
                .arg(self.redis.key(&format!("instance:{instance}")))
                .arg(1)
                .arg("PX")
                .arg(lease.as_millis().max(1) as u64)
                .query_async::<()>(&mut connection)
                .await
                .map_err(|e| self.redis.unavailable(e))
        })
    }

    fn vouched<'a>(&'a self, instance: &'a str) -> BoxFuture<'a, Result<Option<bool>, StoreError>> {
        Box::pin(async move {
            let mut connection = self.redis.commands();
            let alive: bool = ::redis::cmd("EXISTS")
                .arg(self.redis.key(&format!("instance:{instance}")))
                .query_async(&mut connection)
                .await
                .map_err(|e| self.redis.unavailable(e))?;
            Ok(Some(alive))
        })
    }
}
