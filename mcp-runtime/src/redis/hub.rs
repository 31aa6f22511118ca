//! [`RedisHub`]: the change hub on a Redis channel. Each instance publishes its changes on `{prefix}:changes` and
//! subscribes to it; what arrives goes to the server's [`Inbox`], which drops the instance's own echoes.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use ::redis::aio::ConnectionManager;
use ::redis::{ProtocolVersion, PushKind};
use tokio::sync::mpsc;

use super::{manager_config, Redis};
use crate::base::sync::Unpoisoned;
use crate::server::hub::{ChangeHub, Inbox, Published};

/// Changes waiting to be published, at most: past it, a change is dropped (and logged), so that a Redis that does
/// not keep up cannot grow the server's memory without end.
pub const PUBLISH_QUEUE: usize = 10_000;

/// The change hub on a Redis channel ([`Redis::hub`]). Delivery is at most once: a change published while Redis is
/// unreachable is lost for the other instances (their clients see it at their next list), and is logged.
#[derive(Clone)]
pub struct RedisHub {
    inner: Arc<Inner>,
}

struct Inner {
    redis: Redis,
    channel: String,
    queue: Mutex<Option<mpsc::Sender<String>>>,
    /// Changes dropped so far (a full queue, or Redis refusing them): logged at powers of two.
    dropped: AtomicU64,
}

impl RedisHub {
    pub(super) fn new(redis: &Redis) -> RedisHub {
        let channel = redis.key("changes");
        RedisHub {
            inner: Arc::new(Inner { redis: redis.clone(), channel, queue: Mutex::new(None), dropped: 0.into() }),
        }
    }

    /// The channel the instances meet on.
    pub fn channel(&self) -> &str {
        &self.inner.channel
    }
}

impl Inner {
    fn dropped(&self, why: &str) {
        let n = self.dropped.fetch_add(1, Ordering::Relaxed) + 1;
        if n.is_power_of_two() {
            tracing::warn!(dropped = n, url = %self.redis.shown, "a change was not carried to the other instances: {why}");
        }
    }
}

impl std::fmt::Debug for RedisHub {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RedisHub").field("channel", &self.inner.channel).finish()
    }
}

impl ChangeHub for RedisHub {
    fn publish(&self, published: &Published) {
        let Ok(payload) = serde_json::to_string(published) else { return };
        let queue = self.inner.queue.locked().clone();
        match queue.map(|q| q.try_send(payload)) {
            Some(Ok(())) => {}
            Some(Err(mpsc::error::TrySendError::Full(_))) => {
                self.inner.dropped("too many changes wait to be published")
            }
            Some(Err(mpsc::error::TrySendError::Closed(_))) | None => self.inner.dropped("the hub is not started"),
        }
    }

    fn start(&self, inbox: Inbox) {
        let Ok(runtime) = tokio::runtime::Handle::try_current() else {
            tracing::error!("the Redis change hub needs a Tokio runtime: build the server inside one");
            return;
        };
        let (tx, rx) = mpsc::channel(PUBLISH_QUEUE);
        *self.inner.queue.locked() = Some(tx);
        runtime.spawn(publish_loop(self.inner.clone(), rx));
        runtime.spawn(subscribe_loop(self.inner.clone(), inbox));
    }
}

/// Publishes what this instance changed, in order.
async fn publish_loop(inner: Arc<Inner>, mut queue: mpsc::Receiver<String>) {
    while let Some(payload) = queue.recv().await {
        // The connection as it is now: after a failover, the new primary's.
        let mut redis = inner.redis.commands();
        let published: Result<i64, _> =
            ::redis::cmd("PUBLISH").arg(&inner.channel).arg(payload).query_async(&mut redis).await;
        if let Err(e) = published {
            inner.redis.failed();
            inner.dropped(&format!("Redis refused it: {e}"));
        }
    }
}

/// Hands every change published on the channel to the inbox, for as long as the server lives; across a lost
/// connection it reconnects with backoff and subscribes again, and when the primary moves (a Sentinel failover) it
/// subscribes on the new one.
async fn subscribe_loop(inner: Arc<Inner>, inbox: Inbox) {
    let mut moved = inner.redis.moved();
    loop {
        moved.borrow_and_update();
        let (tx, mut pushes) = mpsc::unbounded_channel();
        let info = inner.redis.client().get_connection_info().clone();
        let info = info.clone().set_redis_settings(info.redis_settings().clone().set_protocol(ProtocolVersion::RESP3));
        let client = match ::redis::Client::open(info) {
            Ok(client) => client,
            Err(e) => return tracing::error!(url = %inner.redis.shown, error = %e, "cannot subscribe to Redis"),
        };
        let config = manager_config().set_push_sender(tx).set_automatic_resubscription();
        let mut backoff = Duration::from_millis(100);
        let mut manager = loop {
            match ConnectionManager::new_with_config(client.clone(), config.clone()).await {
                Ok(manager) => break Some(manager),
                // The primary moved meanwhile: connect to the new one.
                Err(_) if moved.has_changed().unwrap_or(false) => break None,
                Err(e) => {
                    tracing::warn!(url = %inner.redis.shown, error = %e, "cannot subscribe to Redis yet; retrying");
                    tokio::time::sleep(backoff).await;
                    backoff = (backoff * 2).min(Duration::from_secs(2));
                }
            }
        };
        let Some(manager) = manager.as_mut() else { continue };
        resubscribe(&inner, manager).await;
        loop {
            tokio::select! {
                push = pushes.recv() => {
                    let Some(push) = push else { return };
                    match push.kind {
                        PushKind::Message => {
                            // [channel, payload]
                            let Some(::redis::Value::BulkString(payload)) = push.data.get(1) else { continue };
                            match serde_json::from_slice::<Published>(payload) {
                                Ok(published) => inbox.deliver(published),
                                Err(e) => tracing::debug!(
                                    error = %e,
                                    "ignoring a message on the change channel that is not a change"
                                ),
                            }
                        }
                        // The manager reconnects (and subscribes again) on its own once asked something: ask until
                        // it answers.
                        PushKind::Disconnection => {
                            tracing::warn!(url = %inner.redis.shown, "lost the connection to Redis; reconnecting");
                            resubscribe(&inner, manager).await;
                            tracing::info!(url = %inner.redis.shown, "subscribed to Redis again");
                        }
                        _ => {}
                    }
                }
                changed = moved.changed() => {
                    if changed.is_err() {
                        return;
                    }
                    tracing::info!(url = %inner.redis.shown, "subscribing on the new Redis primary");
                    break;
                }
            }
        }
    }
}

/// Subscribes to the channel, retrying with backoff until Redis answers.
async fn resubscribe(inner: &Inner, manager: &mut ConnectionManager) {
    let mut backoff = Duration::from_millis(100);
    loop {
        match manager.subscribe(&inner.channel).await {
            Ok(()) => return,
            Err(e) => {
                tracing::debug!(url = %inner.redis.shown, error = %e, "subscribing to Redis failed; retrying");
                tokio::time::sleep(backoff).await;
                backoff = (backoff * 2).min(Duration::from_secs(2));
            }
        }
    }
}
