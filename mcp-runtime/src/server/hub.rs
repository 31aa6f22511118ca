//! The change hub: what the server tells the clients that listen for changes. The server publishes a [`Change`]
//! (a list changed, a resource was updated, a task moved on); each era's front registers what listens with the hub
//! (a 2025 session, a 2026 `subscriptions/listen` stream) as a [`Subscriber`], and decides for itself what its
//! client hears of a change and how it is written. So the server knows neither eras nor transports.
//!
//! [`MemoryHub`] keeps this instance's subscribers. A hub shared by several instances (scale-out) delivers a change
//! published on any of them to the subscribers of each, through the same two traits.

use std::sync::{Arc, Mutex, Weak};

use crate::base::sync::Unpoisoned;
use crate::context::Peer;
use crate::store::task::TaskRecord;

/// Something that changed on the server, for the clients that listen.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Change<'a> {
    /// A list changed: the notification's method (`notifications/tools/list_changed`, ...).
    ListChanged(&'a str),
    /// A resource changed.
    ResourceUpdated(&'a str),
    /// A task's record changed.
    Task(&'a TaskRecord),
}

/// What listens for changes: a 2025 session, a 2026 listen stream.
pub(crate) trait Subscriber: Send + Sync {
    /// A change: the subscriber tells its client, if the client asked for it.
    fn hear(&self, change: Change<'_>);

    /// Ends what this subscriber streams, cleanly (a 2026 listen stream gets its result), if it belongs to `conn`
    /// (or whatever its connection, with `None`).
    fn end(&self, conn: Option<&dyn Peer>) {
        let _ = conn;
    }

    /// The server is stopping: cancel what is in flight. (The HTTP transport stops its subscribers; a stdio
    /// session is stopped by its own shutdown.)
    #[cfg_attr(not(feature = "http"), allow(dead_code))]
    fn stop(&self, reason: &str) {
        let _ = reason;
    }
}

/// Where fronts register their subscribers and the server publishes its changes.
pub(crate) trait ChangeHub: Send + Sync {
    /// Registers a subscriber for as long as it lives.
    fn subscribe(&self, subscriber: Weak<dyn Subscriber>);
    /// Every live subscriber of this instance.
    fn subscribers(&self) -> Vec<Arc<dyn Subscriber>>;
    /// Tells every subscriber of a change.
    fn publish(&self, change: Change<'_>) {
        for subscriber in self.subscribers() {
            subscriber.hear(change);
        }
    }
}

/// The hub of one instance: its subscribers, held weakly (a subscriber that is gone is forgotten).
#[derive(Default)]
pub(crate) struct MemoryHub {
    subscribers: Mutex<Vec<Weak<dyn Subscriber>>>,
}

impl ChangeHub for MemoryHub {
    fn subscribe(&self, subscriber: Weak<dyn Subscriber>) {
        let mut subscribers = self.subscribers.locked();
        subscribers.retain(|s| s.strong_count() > 0);
        subscribers.push(subscriber);
    }

    fn subscribers(&self) -> Vec<Arc<dyn Subscriber>> {
        let mut subscribers = self.subscribers.locked();
        subscribers.retain(|s| s.strong_count() > 0);
        subscribers.iter().filter_map(Weak::upgrade).collect()
    }
}
