//! Subscription lifecycle hooks (SEP-3415's server guidance): an event type whose upstream is set up per
//! subscription ("watch this channel") hears when one starts
//! ([`EventType::on_subscribe`](super::EventType::on_subscribe), which may refuse it) and when it ends
//! ([`EventType::on_unsubscribe`](super::EventType::on_unsubscribe)), in every delivery mode, and can emit to it
//! alone ([`Emitter::emit_to`](super::Emitter::emit_to)).
//!
//! - push: the stream's start and end (closed, cancelled, or ended by the server);
//! - webhook: `events/subscribe` of a new subscription, and its `events/unsubscribe`, expiry or termination;
//! - poll, which has no goodbye: a lease per `(principal, name, arguments)`, taken by the first poll, renewed by each
//!   next one, and ended when no poll came for [`Events::poll_lease`](super::Events::poll_lease).

use std::collections::HashMap;
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

use serde_json::Value;
use sha2::{Digest, Sha256};
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use super::def::Delivery;
use super::Entry;
use crate::base::future::BoxFuture;
use crate::base::sync::Unpoisoned;
use crate::wire::error::Error;

/// A subscription, as the lifecycle hooks see it.
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub struct Subscribed {
    /// Its id, for [`Emitter::emit_to`](super::Emitter::emit_to): a push stream's own, a webhook subscription's
    /// derived one, or a poll lease's.
    pub id: String,
    /// The event type's name.
    pub name: String,
    /// The subscription's arguments.
    pub arguments: Value,
    /// The authenticated caller's principal, when there is one.
    pub principal: Option<String>,
    /// How it is delivered.
    pub delivery: Delivery,
}

pub(crate) type StartHook = Arc<dyn Fn(Subscribed) -> BoxFuture<'static, Result<(), Error>> + Send + Sync>;
pub(crate) type EndHook = Arc<dyn Fn(Subscribed) -> BoxFuture<'static, ()> + Send + Sync>;

/// Calls `on_unsubscribe` when dropped: held for as long as a push stream or webhook subscription lives.
pub(crate) struct Ending {
    hook: Option<(EndHook, Subscribed)>,
}

impl Drop for Ending {
    fn drop(&mut self) {
        if let Some((hook, sub)) = self.hook.take() {
            if let Ok(runtime) = tokio::runtime::Handle::try_current() {
                runtime.spawn(hook(sub));
            }
        }
    }
}

#[cfg(all(feature = "webhooks", feature = "redis"))]
impl Ending {
    /// Nothing to call: a subscription whose start ran elsewhere.
    pub(crate) fn none() -> Ending {
        Ending { hook: None }
    }
}

/// Starts a push stream's or webhook subscription's life: its type's `on_subscribe` (whose error refuses it), and
/// what calls `on_unsubscribe` at its end.
pub(crate) async fn started(entry: &Entry, sub: Subscribed) -> Result<Ending, Error> {
    if let Some(start) = &entry.def.on_subscribe {
        start(sub.clone()).await?;
    }
    Ok(Ending { hook: entry.def.on_unsubscribe.clone().map(|end| (end, sub)) })
}

/// What ends subscriptions, and the error they end with: a type's (removed, or its schema changed incompatibly),
/// or one subscription's ([`Emitter::terminate`](super::Emitter::terminate)). The first end given is the one kept.
#[derive(Default)]
pub(crate) struct Termination {
    token: CancellationToken,
    error: OnceLock<Error>,
}

impl Termination {
    /// Ends what waits on it, with `error`; `false` if it had ended already.
    pub(crate) fn end(&self, error: Error) -> bool {
        let first = self.error.set(error).is_ok();
        self.token.cancel();
        first
    }

    /// The error it ended with, once it has.
    pub(crate) async fn ended(&self) -> Error {
        self.token.cancelled().await;
        self.error.get().cloned().unwrap_or_else(|| Error::internal("the subscription ended"))
    }

    #[cfg(all(feature = "webhooks", feature = "redis"))]
    pub(crate) fn error(&self) -> Option<&Error> {
        self.error.get()
    }
}

/// The push streams open on this instance, by their subscription's id: what [`Emitter::terminate`] ends.
///
/// [`Emitter::terminate`]: super::Emitter::terminate
#[derive(Default)]
pub(crate) struct Streams {
    table: Mutex<HashMap<String, Arc<Termination>>>,
}

/// Holds a push stream's place in [`Streams`] until it ends.
pub(crate) struct Open<'a> {
    streams: &'a Streams,
    id: String,
    pub(crate) termination: Arc<Termination>,
}

impl Drop for Open<'_> {
    fn drop(&mut self) {
        self.streams.table.locked().remove(&self.id);
    }
}

impl Streams {
    pub(crate) fn open(&self, id: &str) -> Open<'_> {
        let termination = Arc::new(Termination::default());
        self.table.locked().insert(id.to_owned(), termination.clone());
        Open { streams: self, id: id.to_owned(), termination }
    }

    /// Ends the stream of subscription `id`, if it is open here.
    pub(crate) fn terminate(&self, id: &str, error: &Error) -> bool {
        let found = self.table.locked().get(id).cloned();
        found.is_some_and(|t| t.end(error.clone()))
    }
}

/// The id of a poll subscription: derived from who polls, what and with which arguments.
pub(crate) fn poll_id(principal: Option<&str>, name: &str, arguments: &Value) -> String {
    let key = serde_json::json!([principal, name, super::canonical(arguments)]).to_string();
    let digest = Sha256::digest(key.as_bytes());
    let hex: String = digest[..8].iter().map(|b| format!("{b:02x}")).collect();
    format!("poll_{hex}")
}

/// The poll leases of the types that have hooks.
#[derive(Default)]
pub(crate) struct Leases {
    table: Mutex<HashMap<String, Lease>>,
    /// Leases ended by [`Emitter::terminate`](super::Emitter::terminate): the next poll of each is answered with its
    /// error (SEP-3415's termination signal for poll), until a lease's time has passed.
    ended: Mutex<HashMap<String, (Error, Instant)>>,
}

struct Lease {
    until: Instant,
    sub: Subscribed,
    end: Option<EndHook>,
}

impl Leases {
    /// A poll of `sub`: the first one calls `on_subscribe` (whose error refuses the poll) and takes the lease, the
    /// next ones renew it for `lease`.
    pub(crate) async fn poll(&self, entry: &Entry, sub: Subscribed, lease: Duration) -> Result<(), Error> {
        if !entry.def.has_hooks() {
            return Ok(());
        }
        let until = Instant::now() + lease;
        if let Some((error, _)) = self.ended.locked().remove(&sub.id) {
            return Err(error);
        }
        if let Some(held) = self.table.locked().get_mut(&sub.id) {
            held.until = until;
            return Ok(());
        }
        if let Some(start) = &entry.def.on_subscribe {
            start(sub.clone()).await?;
        }
        let end = entry.def.on_unsubscribe.clone();
        self.table.locked().insert(sub.id.clone(), Lease { until, sub, end });
        Ok(())
    }

    /// Ends lease `id` with `error`, which answers its next poll; its `on_unsubscribe` runs. `false` if no poll
    /// holds it.
    pub(crate) fn terminate(&self, id: &str, error: &Error, lease: Duration) -> bool {
        let Some(ended) = self.table.locked().remove(id) else { return false };
        self.ended.locked().insert(id.to_owned(), (error.clone(), Instant::now() + lease));
        if let Some(end) = ended.end {
            tokio::spawn(end(ended.sub));
        }
        true
    }

    /// Ends the leases no poll renewed in time: their `on_unsubscribe` runs.
    pub(crate) fn expire(&self) {
        let now = Instant::now();
        self.ended.locked().retain(|_, (_, until)| *until > now);
        let ended: Vec<Lease> = {
            let mut table = self.table.locked();
            let expired: Vec<String> = table.iter().filter(|(_, l)| l.until <= now).map(|(id, _)| id.clone()).collect();
            expired.iter().filter_map(|id| table.remove(id)).collect()
        };
        for lease in ended {
            if let Some(end) = lease.end {
                tokio::spawn(end(lease.sub));
            }
        }
    }
}
