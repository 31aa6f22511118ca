//! The events of a server shared through Redis ([`ServerBuilder::shared`](crate::ServerBuilder::shared)): what any
//! instance emits is written to its type's Redis stream ([`RedisFeeds`]), and every instance's buffers mirror those
//! streams, so that each poll and push stream, on any instance, sees every instance's events at the same positions.
//!
//! Two tasks per instance: the writer appends what this instance emits, in order, in batches (an emit never waits
//! for Redis; while Redis is unreachable the writer tries again, and what waits is bounded by [`Events::SHARED_EMIT_QUEUE`](super::Events::SHARED_EMIT_QUEUE)); the
//! follower fills each buffer from its stream (the latest events first, then each new one as Redis has it, with a
//! blocking read). A poll or a stream waits for its buffer's first fill, up to 5 s.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Weak};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use serde_json::Value;
use tokio::sync::mpsc;

use super::buffer::Stored;
use super::{EmitError, Hub};
use crate::redis::feeds::{Append, FeedEntry, Follower, RedisFeeds};
use crate::redis::Redis;

/// How many queued events one write takes.
const BATCH: usize = 128;

/// How long the follower's read waits for a new event before it looks again at which types there are.
const BLOCK: Duration = Duration::from_millis(1000);

/// How many events of one type the follower reads at once.
const READ: usize = 1000;

/// What an instance shares through Redis.
pub(crate) struct Shared {
    redis: String,
    queue: mpsc::Sender<Pending>,
    /// This process's own number, in the ids it makes up.
    process: u64,
    made: AtomicU64,
}

struct Pending {
    name: String,
    append: Append,
}

/// Starts sharing the hub's events through `redis`: the buffers become mirrors, and the writer and follower run.
pub(crate) fn start(hub: &Arc<Hub>, redis: &Redis) {
    let Ok(runtime) = tokio::runtime::Handle::try_current() else {
        tracing::error!("the Events extension on Redis needs a Tokio runtime: build the server inside one");
        return;
    };
    let feeds = RedisFeeds::new(redis);
    let (queue, pending) = mpsc::channel(super::Events::SHARED_EMIT_QUEUE);
    let process = hub.epoch();
    let shared = Shared { redis: feeds.shown().to_owned(), queue, process, made: AtomicU64::new(0) };
    if hub.shared.set(shared).is_err() {
        return;
    }
    for (_, buffer) in hub.buffers() {
        buffer.mirror();
    }
    #[cfg(feature = "webhooks")]
    if let Some(registry) = hub.webhooks.get() {
        super::webhook::share(hub, registry, redis);
    }
    runtime.spawn(write(Arc::downgrade(hub), feeds.clone(), pending));
    runtime.spawn(follow(Arc::downgrade(hub), feeds, process));
}

impl Shared {
    /// Queues an event for Redis; its id is the one given or one made up here.
    pub(crate) fn emit(
        &self,
        name: &str,
        id: Option<String>,
        at: SystemTime,
        (data, target): (Value, Option<String>),
    ) -> Result<String, EmitError> {
        let id = id.unwrap_or_else(|| format!("evt_{:x}_{}", self.process, self.made.fetch_add(1, Ordering::Relaxed)));
        let at_ms = at.duration_since(UNIX_EPOCH).map_or(0, |d| d.as_millis() as u64);
        let append = Append { id: id.clone(), at_ms, data: data.to_string(), target };
        self.queue.try_send(Pending { name: name.to_owned(), append }).map_err(|_| {
            EmitError::Backlog(format!(
                "{} events wait to be written to Redis at {} (unreachable or slow): `{name}` was not emitted",
                super::Events::SHARED_EMIT_QUEUE,
                self.redis
            ))
        })?;
        Ok(id)
    }
}

/// Writes what this instance emits, in order, a batch per type at a time; a batch Redis refused is tried again
/// until it is written (so nothing is lost while Redis is away, and the queue bounds what waits), or the server is
/// gone. A write whose answer was lost may be written twice: the copies have the same event id.
async fn write(hub: Weak<Hub>, feeds: RedisFeeds, mut pending: mpsc::Receiver<Pending>) {
    let mut batch = Vec::with_capacity(BATCH);
    while pending.recv_many(&mut batch, BATCH).await > 0 {
        for run in batch.chunk_by(|a, b| a.name == b.name) {
            let events: Vec<Append> = run.iter().map(|p| p.append.clone()).collect();
            let mut backoff = Duration::from_millis(100);
            loop {
                let Some(max_len) = hub.upgrade().map(|hub| hub.settings().bounds.max_events) else { return };
                match feeds.append(&run[0].name, &events, max_len).await {
                    Ok(_) => break,
                    Err(e) => {
                        tracing::warn!(error = %e, "emitted events wait to be written to Redis; trying again");
                        tokio::time::sleep(backoff).await;
                        backoff = (backoff * 2).min(Duration::from_secs(2));
                    }
                }
            }
        }
        batch.clear();
    }
}

/// Fills every emitted type's buffer from its Redis stream for as long as the server lives: first its latest
/// events, then each new one. After a lost connection it goes on from where each type was; if Redis lost its data
/// (the epoch changed), every buffer is filled again under the new epoch.
async fn follow(hub: Weak<Hub>, feeds: RedisFeeds, proposed: u64) {
    let mut at: HashMap<String, u64> = HashMap::new();
    let mut epoch = None;
    let mut backoff = Duration::from_millis(100);
    loop {
        if hub.strong_count() == 0 {
            return;
        }
        match connect(&hub, &feeds, proposed, &mut epoch, &mut at).await {
            Ok(mut follower) => {
                backoff = Duration::from_millis(100);
                if let Err(e) = follow_on(&hub, &feeds, &mut follower, &mut at).await {
                    tracing::warn!(error = %e, "the events of the other instances cannot be read from Redis; retrying");
                }
            }
            Err(e) => tracing::warn!(error = %e, "the events of the other instances cannot be read from Redis yet"),
        }
        tokio::time::sleep(backoff).await;
        backoff = (backoff * 2).min(Duration::from_secs(2));
    }
}

/// A connection for the blocking reads, and the shared epoch: a new one starts the buffers again.
async fn connect(
    hub: &Weak<Hub>,
    feeds: &RedisFeeds,
    proposed: u64,
    epoch: &mut Option<u64>,
    at: &mut HashMap<String, u64>,
) -> Result<Follower, crate::store::StoreError> {
    let follower = feeds.follower().await?;
    // A new number each time: a Redis that lost its data must not be given the epoch it had.
    let mut bytes = [0u8; 8];
    let proposed = match getrandom::fill(&mut bytes) {
        Ok(()) => u64::from_le_bytes(bytes),
        Err(_) => {
            proposed.wrapping_add(SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| d.as_nanos() as u64))
        }
    };
    let shared = feeds.epoch(proposed).await?;
    if *epoch != Some(shared) {
        if epoch.is_some() {
            tracing::warn!(url = feeds.shown(), "Redis lost the events it kept (a new epoch): cursors start again");
        }
        *epoch = Some(shared);
        at.clear();
        if let Some(hub) = hub.upgrade() {
            hub.epoch.store(shared, Ordering::Release);
        }
    }
    Ok(follower)
}

/// Follows the streams on one connection until it fails or the server is gone.
async fn follow_on(
    hub: &Weak<Hub>,
    feeds: &RedisFeeds,
    follower: &mut Follower,
    at: &mut HashMap<String, u64>,
) -> Result<(), crate::store::StoreError> {
    loop {
        let Some(strong) = hub.upgrade() else { return Ok(()) };
        let bounds = strong.settings().bounds;
        let buffers: HashMap<String, _> = strong.buffers().into_iter().collect();
        drop(strong);
        at.retain(|name, _| buffers.contains_key(name));
        for (name, buffer) in &buffers {
            if !at.contains_key(name) {
                let (head, entries) = feeds.tail(name, bounds.max_events).await?;
                buffer.reset(head, entries.into_iter().map(stored).collect(), bounds);
                at.insert(name.clone(), head);
            }
        }
        if at.is_empty() {
            tokio::time::sleep(BLOCK).await;
            continue;
        }
        let after: Vec<(&str, u64)> = at.iter().map(|(name, position)| (name.as_str(), *position)).collect();
        let read = feeds.follow(follower, &after, BLOCK, READ).await?;
        for (name, entries) in read {
            let Some(buffer) = buffers.get(&name) else { continue };
            for entry in entries {
                at.insert(name.clone(), entry.position);
                buffer.insert(stored(entry), bounds);
            }
        }
    }
}

fn stored(entry: FeedEntry) -> Stored {
    Stored {
        position: entry.position,
        id: entry.id,
        at: UNIX_EPOCH + Duration::from_millis(entry.at_ms),
        data: serde_json::from_str(&entry.data).unwrap_or(Value::Null),
        target: entry.target,
    }
}
