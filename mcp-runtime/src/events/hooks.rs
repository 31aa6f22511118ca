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
use crate::wire::error::{Error, ErrorCode};

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
/// what calls `on_unsubscribe` at its end. Its access was asked before ([`authorized`]).
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

/// Asks the type's [`authorize`](super::EventType::authorize) hook, if it has one, whether `sub` may be.
pub(crate) async fn authorized(entry: &Entry, sub: &Subscribed) -> Result<(), Error> {
    match &entry.def.authorize {
        Some(authorize) => authorize(sub.clone()).await,
        None => Ok(()),
    }
}

/// Whether an error ends a subscription (its type is gone or changed, or the caller lost access), rather than being
/// one failed check or authorization, reported and tried again.
pub(crate) fn ends_subscription(e: &Error) -> bool {
    [ErrorCode::NOT_FOUND, ErrorCode::FORBIDDEN, ErrorCode::UNSUPPORTED].contains(&e.code)
}

/// Asks the type's `authorize` hook again every `every` while it lives (dropped: it stops): a refusal that ends a
/// subscription ends `termination` with it.
pub(crate) struct Reauthorizing(Option<tokio::task::JoinHandle<()>>);

impl Drop for Reauthorizing {
    fn drop(&mut self) {
        if let Some(task) = self.0.take() {
            task.abort();
        }
    }
}

pub(crate) fn reauthorizing(
    entry: &Entry,
    sub: Subscribed,
    every: Duration,
    termination: Arc<Termination>,
) -> Reauthorizing {
    let Some(authorize) = entry.def.authorize.clone() else { return Reauthorizing(None) };
    let task = tokio::spawn(async move {
        loop {
            tokio::time::sleep(every).await;
            match authorize(sub.clone()).await {
                Ok(()) => {}
                Err(e) if ends_subscription(&e) => {
                    termination.end(e);
                    return;
                }
                Err(e) => {
                    tracing::warn!(subscription = %sub.id, error = %e, "a subscription's access could not be checked again; it goes on until the next check")
                }
            }
        }
    });
    Reauthorizing(Some(task))
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
    /// When its access was last checked ([`EventType::authorize`](super::EventType::authorize)).
    authorized: Instant,
    sub: Subscribed,
    end: Option<EndHook>,
}

impl Leases {
    /// A poll of `sub`: the first one calls `on_subscribe` (whose error refuses the poll) and takes the lease, the
    /// next ones renew it for `lease`.
    /// Its access is asked again when it was last asked `reauthorize` ago or more: a refusal that ends it ends the
    /// lease, and answers the poll.
    pub(crate) async fn poll(
        &self,
        entry: &Entry,
        sub: Subscribed,
        (lease, reauthorize): (Duration, Duration),
    ) -> Result<(), Error> {
        if !entry.def.has_hooks() {
            return Ok(());
        }
        let now = Instant::now();
        if let Some((error, _)) = self.ended.locked().remove(&sub.id) {
            return Err(error);
        }
        let due = match self.table.locked().get_mut(&sub.id) {
            Some(held) => {
                held.until = now + lease;
                if held.authorized + reauthorize > now {
                    return Ok(());
                }
                held.authorized = now;
                true
            }
            None => false,
        };
        if due {
            return match authorized(entry, &sub).await {
                Err(e) if ends_subscription(&e) => {
                    self.end(&sub.id);
                    Err(e)
                }
                Err(e) => {
                    tracing::warn!(subscription = %sub.id, error = %e, "a poll subscription's access could not be checked again; it goes on until the next check");
                    Ok(())
                }
                Ok(()) => Ok(()),
            };
        }
        authorized(entry, &sub).await?;
        if let Some(start) = &entry.def.on_subscribe {
            start(sub.clone()).await?;
        }
        let end = entry.def.on_unsubscribe.clone();
        self.table.locked().insert(sub.id.clone(), Lease { until: now + lease, authorized: now, sub, end });
        Ok(())
    }

    /// Ends lease `id` at once: its `on_unsubscribe` runs. `false` if no poll holds it.
    fn end(&self, id: &str) -> bool {
        let Some(ended) = self.table.locked().remove(id) else { return false };
        if let Some(end) = ended.end {
            tokio::spawn(end(ended.sub));
        }
        true
    }

    /// Ends lease `id` with `error`, which answers its next poll; its `on_unsubscribe` runs. `false` if no poll
    /// holds it.
    pub(crate) fn terminate(&self, id: &str, error: &Error, lease: Duration) -> bool {
        if !self.end(id) {
            return false;
        }
        self.ended.locked().insert(id.to_owned(), (error.clone(), Instant::now() + lease));
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
