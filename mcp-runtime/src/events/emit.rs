//! [`Emitter`]: what a program emits its events with (broadcast, with an upstream's id, targeted at one
//! subscription, or of a type `#[mcp::event]` declared), and what adds and removes types while the server runs.

use std::sync::Arc;
use std::time::SystemTime;

use serde::Serialize;

use super::{EventItem, EventType, Hub};

/// Emits the events of the [`Events`](super::Events) it came from: each reaches the polls and push streams whose subscription
/// matches it ([`EventType::matching`]), and stays in its type's buffer for replay. Cheap to clone.
#[derive(Clone)]
pub struct Emitter {
    pub(super) hub: Arc<Hub>,
}

impl std::fmt::Debug for Emitter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Emitter").finish_non_exhaustive()
    }
}

/// Why an event was not emitted.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum EmitError {
    /// No event type of this name was added.
    UnknownType(String),
    /// The type is a checked one ([`EventType::checked`]): its events come from its check function.
    NotEmitted(String),
    /// The payload is not a JSON object (or could not be serialized): the message says which.
    BadPayload(String),
    /// On a server shared through Redis: too many events wait to be written there (Redis is unreachable or slow);
    /// the message names the Redis.
    Backlog(String),
}

impl std::fmt::Display for EmitError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            EmitError::UnknownType(name) => {
                write!(f, "no event type `{name}` was added to the Events extension (Events::event)")
            }
            EmitError::NotEmitted(name) => write!(
                f,
                "event type `{name}` is a checked one (EventType::checked): its events come from its check function, \
                 not from emit; declare it with EventType::emitted to emit its events"
            ),
            EmitError::BadPayload(why) | EmitError::Backlog(why) => write!(f, "{why}"),
        }
    }
}

impl std::error::Error for EmitError {}

impl Emitter {
    /// Emits an event of type `name` that happened now, with `data` as its payload (a JSON object); its id is made
    /// up. Returns the id.
    pub fn emit(&self, name: &str, data: impl Serialize) -> Result<String, EmitError> {
        self.emit_occurrence(name, None, SystemTime::now(), data)
    }

    /// Emits an event with the id the upstream gave it (a message id, a delivery GUID), so that a client that hears
    /// of it twice (a poll and a push, a replay) can tell.
    pub fn emit_with_id(
        &self,
        name: &str,
        event_id: impl Into<String>,
        data: impl Serialize,
    ) -> Result<String, EmitError> {
        self.emit_occurrence(name, Some(event_id.into()), SystemTime::now(), data)
    }

    /// Emits an event of the type `#[mcp::event]` declared on the function `T` names, with its payload type:
    /// `emitter.emit_of::<back_on_shelf>(BackOnShelf { .. })`.
    pub fn emit_of<T: EventItem>(&self, payload: T::Payload) -> Result<String, EmitError> {
        self.emit(T::NAME, payload)
    }

    /// Adds an event type while the server runs, or replaces the one of its name (a plugin loaded, a data source
    /// connected, a schema grown by a field), and tells the clients that listen for it
    /// (`notifications/events/list_changed` on `subscriptions/listen` streams whose filter set `eventsListChanged`).
    ///
    /// A replaced type whose schemas changed only additively (new optional fields, new enum values, other
    /// descriptions) keeps its buffer and its subscriptions. One whose schemas changed otherwise (a field removed or
    /// retyped, an argument become required, an enum narrowed, a new constraint) ends them, as SEP-3415 asks: push
    /// streams with `notifications/events/terminated` and webhook subscriptions with a `terminated` envelope, both
    /// -32026 with `data: {"feature": "inputSchema" | "payloadSchema", "reason": "schema_changed"}`, so that their
    /// clients list the types again and subscribe anew. The SEP would rather see a breaking change published under a
    /// new name, beside the old one for a while.
    /// A type that offers no mode on this server (webhook only, where no webhooks are delivered) is not listed.
    pub fn add_type(&self, def: EventType) {
        let name = def.name.clone();
        self.hub.put(def);
        if self.hub.entry(&name).is_some_and(|e| self.hub.modes(&e.def).is_empty()) {
            tracing::warn!(event = %name, "an event type delivered by webhook only, where no webhooks are delivered, is not listed");
        }
        self.hub.list_changed();
    }

    /// Removes an event type while the server runs: its push streams end (`notifications/events/terminated`, -32023
    /// with `data.kind: "event"`), polls of it are answered -32023, and the clients that listen hear
    /// `notifications/events/list_changed`. `false` if there was none of that name.
    pub fn remove_type(&self, name: &str) -> bool {
        let Some(removed) = self.hub.types_mut().remove(name) else { return false };
        removed.ended.end(super::methods::not_found(name));
        self.hub.list_changed();
        true
    }

    /// Ends subscription `id` (a [`Subscribed::id`](super::Subscribed::id) the type's hooks were given) with
    /// `error`, SEP-3415's termination: its push stream gets `notifications/events/terminated`, its webhook
    /// endpoint a `terminated` envelope, and the next poll of a poll subscription is answered with `error`. Its
    /// type's [`on_unsubscribe`](EventType::on_unsubscribe) runs.
    ///
    /// For a caller whose access was revoked (removed from the channel the subscription watches), `error` is
    /// -32024 (`Error::new(ErrorCode::FORBIDDEN, ..)`): the client then stops, where other codes would have it
    /// subscribe again. `false` if no subscription of that id lives here: a push stream or poll subscription is
    /// held by the instance the client reached, a webhook subscription on a server shared through Redis by
    /// whichever instance delivers it, which ends it within a second.
    pub async fn terminate(&self, id: &str, error: crate::Error) -> bool {
        if self.hub.open.terminate(id, &error) {
            return true;
        }
        if self.hub.leases.terminate(id, &error, self.hub.settings().poll_lease) {
            return true;
        }
        #[cfg(feature = "webhooks")]
        if let Some(registry) = self.hub.webhooks.get() {
            return registry.terminate(id, error).await;
        }
        false
    }

    /// Emits an event to one subscription only (SEP-3415's targeted emit): the one whose id the type's
    /// [`on_subscribe`](EventType::on_subscribe) hook was given, for an upstream listener set up per subscription.
    /// Its match rule is not asked.
    pub fn emit_to(&self, subscription: &str, name: &str, data: impl Serialize) -> Result<String, EmitError> {
        self.emit_targeted(name, None, SystemTime::now(), data, Some(subscription.to_owned()))
    }

    fn emit_occurrence(
        &self,
        name: &str,
        id: Option<String>,
        at: SystemTime,
        data: impl Serialize,
    ) -> Result<String, EmitError> {
        self.emit_targeted(name, id, at, data, None)
    }

    fn emit_targeted(
        &self,
        name: &str,
        id: Option<String>,
        at: SystemTime,
        data: impl Serialize,
        target: Option<String>,
    ) -> Result<String, EmitError> {
        let entry = self.hub.entry(name).ok_or_else(|| EmitError::UnknownType(name.to_owned()))?;
        let buffer = entry.buffer.as_ref().ok_or_else(|| EmitError::NotEmitted(name.to_owned()))?;
        let data = serde_json::to_value(data)
            .map_err(|e| EmitError::BadPayload(format!("the payload of `{name}` could not be serialized: {e}")))?;
        if !data.is_object() {
            return Err(EmitError::BadPayload(format!("the payload of an event (`{name}`) must be a JSON object")));
        }
        #[cfg(feature = "redis")]
        if let Some(shared) = self.hub.shared.get() {
            return shared.emit(name, id, at, (data, target));
        }
        let epoch = self.hub.epoch();
        let bounds = self.hub.settings().bounds;
        let made = |position| id.unwrap_or_else(|| format!("evt_{epoch:x}_{position}"));
        let (_, id) = buffer.push(made, at, (data, target), bounds);
        Ok(id)
    }
}
