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
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::Value;
use sha2::{Digest, Sha256};
use tokio::time::Instant;

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

/// Starts a push stream's or webhook subscription's life: its type's `on_subscribe` (whose error refuses it), and
/// what calls `on_unsubscribe` at its end.
pub(crate) async fn started(entry: &Entry, sub: Subscribed) -> Result<Ending, Error> {
    if let Some(start) = &entry.def.on_subscribe {
        start(sub.clone()).await?;
    }
    Ok(Ending { hook: entry.def.on_unsubscribe.clone().map(|end| (end, sub)) })
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

    /// Ends the leases no poll renewed in time: their `on_unsubscribe` runs.
    pub(crate) fn expire(&self) {
        let now = Instant::now();
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
