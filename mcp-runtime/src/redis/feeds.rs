//! [`RedisFeeds`]: the Events extension's emitted events in Redis, so that what one instance emits reaches the polls
//! and push streams of every instance, and a cursor replays on any of them.
//!
//! Each emitted type is a Redis stream, `{prefix}:event-types:{name}:log`, whose entry ids are `{position}-0`: the
//! position comes from a counter beside it (`{prefix}:event-types:{name}:next`), so positions are numbered without
//! gaps across every instance, and a reader tells an event it missed (trimmed away) from one that never was. An
//! entry's fields are `i` (the event's id), `t` (when it happened, milliseconds since the Unix epoch), `d` (its
//! payload, JSON) and, for a targeted event, `g` (the one subscription it is for). The stream keeps about as many entries as the extension's buffer (`MAXLEN ~`).
//!
//! The cursors' epoch is shared too (`{prefix}:event-types:epoch`, set once by the first instance): a cursor from one
//! instance is the same position on every other. A Redis that lost its data (a restart without persistence) is told
//! by an epoch that changed.

use std::collections::HashMap;
use std::time::Duration;

use ::redis::aio::ConnectionManager;
use ::redis::Script;

use super::{manager_config, Redis};
use crate::store::task::StoreError;

/// Appends a batch of events to one type's stream, each at the next position; returns the positions.
/// KEYS: the stream, its counter. ARGV: the stream's length, then the events' id, time, payload and target (empty:
/// none) in fours.
const APPEND: &str = r"
local out = {}
for i = 2, #ARGV, 4 do
  local n = redis.call('INCR', KEYS[2])
  if ARGV[i + 3] == '' then
    redis.call('XADD', KEYS[1], 'MAXLEN', '~', ARGV[1], n .. '-0', 'i', ARGV[i], 't', ARGV[i + 1], 'd', ARGV[i + 2])
  else
    redis.call('XADD', KEYS[1], 'MAXLEN', '~', ARGV[1], n .. '-0', 'i', ARGV[i], 't', ARGV[i + 1], 'd', ARGV[i + 2],
      'g', ARGV[i + 3])
  end
  out[#out + 1] = n
end
return out
";

/// One event as Redis keeps it.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct FeedEntry {
    pub position: u64,
    pub id: String,
    /// Milliseconds since the Unix epoch.
    pub at_ms: u64,
    pub data: String,
    pub target: Option<String>,
}

/// One event to append.
#[derive(Debug, Clone)]
pub(crate) struct Append {
    pub id: String,
    pub at_ms: u64,
    pub data: String,
    /// The one subscription it is for, if targeted.
    pub target: Option<String>,
}

/// The event types' streams on a Redis.
#[derive(Clone)]
pub(crate) struct RedisFeeds {
    redis: Redis,
    append: Script,
}

/// A connection of its own, for the blocking reads of one follower (a blocked read holds its connection).
pub(crate) struct Follower {
    connection: ConnectionManager,
    /// The primary's moves seen when it connected: after a failover, a new connection goes to the new primary.
    moved: tokio::sync::watch::Receiver<u64>,
}

/// Stream entries as Redis gives them: each id and its fields.
type Entries = Vec<(String, HashMap<String, String>)>;

type XRead = Option<Vec<(String, Entries)>>;

impl RedisFeeds {
    pub(crate) fn new(redis: &Redis) -> RedisFeeds {
        RedisFeeds { redis: redis.clone(), append: Script::new(APPEND) }
    }

    /// Where Redis is, without a password: for logs.
    pub(crate) fn shown(&self) -> &str {
        &self.redis.shown
    }

    fn log_key(&self, name: &str) -> String {
        self.redis.key(&format!("event-types:{name}:log"))
    }

    fn next_key(&self, name: &str) -> String {
        self.redis.key(&format!("event-types:{name}:next"))
    }

    /// The cursors' epoch every instance shares: `proposed` if none was set yet.
    pub(crate) async fn epoch(&self, proposed: u64) -> Result<u64, StoreError> {
        let key = self.redis.key("event-types:epoch");
        let mut redis = self.redis.commands();
        let (epoch,): (String,) = ::redis::pipe()
            .cmd("SET")
            .arg(&key)
            .arg(format!("{proposed:x}"))
            .arg("NX")
            .ignore()
            .cmd("GET")
            .arg(&key)
            .query_async(&mut redis)
            .await
            .map_err(|e| self.redis.unavailable(e))?;
        u64::from_str_radix(&epoch, 16)
            .map_err(|_| StoreError::Unavailable(format!("the events' epoch in Redis is not hexadecimal: {epoch:?}")))
    }

    /// Appends events of type `name`, in order, keeping about `max_len` of them; returns their positions.
    pub(crate) async fn append(&self, name: &str, events: &[Append], max_len: usize) -> Result<Vec<u64>, StoreError> {
        let mut invocation = self.append.key(self.log_key(name));
        invocation.key(self.next_key(name)).arg(max_len.max(1));
        for e in events {
            invocation.arg(&e.id).arg(e.at_ms).arg(&e.data).arg(e.target.as_deref().unwrap_or(""));
        }
        let mut redis = self.redis.commands();
        invocation.invoke_async(&mut redis).await.map_err(|e| self.redis.unavailable(e))
    }

    /// The latest position of type `name` (0 before any event), and the latest `count` events, oldest first.
    pub(crate) async fn tail(&self, name: &str, count: usize) -> Result<(u64, Vec<FeedEntry>), StoreError> {
        let mut redis = self.redis.commands();
        let (head, entries): (Option<u64>, Entries) = ::redis::pipe()
            .cmd("GET")
            .arg(self.next_key(name))
            .cmd("XREVRANGE")
            .arg(self.log_key(name))
            .arg("+")
            .arg("-")
            .arg("COUNT")
            .arg(count.max(1))
            .query_async(&mut redis)
            .await
            .map_err(|e| self.redis.unavailable(e))?;
        let mut entries: Vec<FeedEntry> = entries.into_iter().filter_map(entry).collect();
        entries.reverse();
        let head = head.unwrap_or(0).max(entries.last().map_or(0, |e| e.position));
        Ok((head, entries))
    }

    /// A connection for [`follow`](RedisFeeds::follow).
    pub(crate) async fn follower(&self) -> Result<Follower, StoreError> {
        let moved = self.redis.moved();
        let connection = ConnectionManager::new_with_config(self.redis.client(), manager_config())
            .await
            .map_err(|e| self.redis.unavailable(e))?;
        Ok(Follower { connection, moved })
    }

    /// The events after each type's position, waiting up to `block` for one; at most `count` per type. An error
    /// once the primary moved: connect again.
    pub(crate) async fn follow(
        &self,
        follower: &mut Follower,
        after: &[(&str, u64)],
        block: Duration,
        count: usize,
    ) -> Result<Vec<(String, Vec<FeedEntry>)>, StoreError> {
        if follower.moved.has_changed().unwrap_or(false) {
            return Err(StoreError::Unavailable(format!("Redis at {}: the primary moved", self.redis.shown)));
        }
        let mut cmd = ::redis::cmd("XREAD");
        cmd.arg("COUNT").arg(count).arg("BLOCK").arg(block.as_millis() as u64).arg("STREAMS");
        for (name, _) in after {
            cmd.arg(self.log_key(name));
        }
        for (_, position) in after {
            cmd.arg(format!("{position}-0"));
        }
        let read: XRead = cmd.query_async(&mut follower.connection).await.map_err(|e| self.redis.unavailable(e))?;
        let by_key: HashMap<String, &str> = after.iter().map(|(name, _)| (self.log_key(name), *name)).collect();
        Ok(read
            .unwrap_or_default()
            .into_iter()
            .filter_map(|(key, entries)| {
                let name = by_key.get(&key)?;
                Some(((*name).to_owned(), entries.into_iter().filter_map(entry).collect()))
            })
            .collect())
    }
}

/// An entry read back: `None` for one this module did not write.
fn entry((id, mut fields): (String, HashMap<String, String>)) -> Option<FeedEntry> {
    let position = id.split_once('-')?.0.parse().ok()?;
    Some(FeedEntry {
        position,
        id: fields.remove("i")?,
        at_ms: fields.get("t")?.parse().ok()?,
        data: fields.remove("d")?,
        target: fields.remove("g"),
    })
}
