//! The Events extension (`io.modelcontextprotocol/events`, SEP-3415, the 2026-07-28 era): a server declares what
//! can happen (a book back in stock, an incident opened, a build failed), a client subscribes with arguments, and an
//! agent hears of each event without a person asking.
//!
//! [`Events`] is the extension, built on the public [`Extension`] API: add it with
//! [`ServerBuilder::extension`](crate::ServerBuilder::extension), with one [`EventType`] per kind of event. What it
//! serves:
//! - `events/list` (paginated): each type's name, description, `delivery` modes, `inputSchema` (a subscription's
//!   arguments) and `payloadSchema`;
//! - `events/poll` (poll delivery): the events since the client's cursor (`null`: from now), at most `maxEvents`,
//!   none older than `maxAgeMs`, with the next cursor, `truncated` when events were skipped, `hasMore`, and
//!   `nextPollMs`;
//! - `events/stream` (push delivery): a request held open until the client closes it (HTTP) or cancels it
//!   (`notifications/cancelled`, stdio), on which the server sends `notifications/events/active` (the start, and
//!   again with `truncated: true` after a gap), `notifications/events/event` for each event with the cursor after
//!   it, `notifications/events/heartbeat` with the cursor when nothing happened for a while
//!   ([`Events::heartbeat`]), and `notifications/events/error`; each with the stream's request id in
//!   `_meta["io.modelcontextprotocol/subscriptionId"]`. Streams are not counted against
//!   [`max_in_flight`](crate::ServerBuilder::max_in_flight) and do not pass through the middleware layers; their own
//!   number is bounded ([`Events::max_streams`], -32025 past it).
//!
//! Types can be added and removed while the server runs ([`Emitter::add_type`], [`Emitter::remove_type`]): clients
//! that listen with `eventsListChanged` hear `notifications/events/list_changed` (declared as `listChanged: true`),
//! and a removed type's streams end with -32023.
//!
//! On a server shared through Redis ([`ServerBuilder::shared`](crate::ServerBuilder::shared), `--redis`), emitted
//! events are kept in Redis streams that every instance follows: an event emitted on one instance reaches the polls
//! and streams of all, and a cursor is good on any of them (see the guide's Events chapter).
//!
//! The extension is declared in `server/discover` only: a 2025-11-25 session gets -32601 for `events/*`, as the SEP
//! defines it. Errors are the SEP's (provisional codes): an unknown type -32023 (`data.kind: "event"`), a mode the
//! type does not offer -32026 (`data.feature: "deliveryMode"`), arguments its `inputSchema` does not take -32602, a
//! limit reached -32025 (`data.limit`).
//!
//! ```
//! use mcp::events::{EventType, Events};
//! use serde_json::json;
//!
//! let events = Events::new().event(EventType::emitted("book.restocked").description("A book is back in stock."));
//! let emitter = events.emitter();
//! let server = mcp::Server::builder().extension(events).build().unwrap();
//! # let _ = server;
//!
//! // Wherever the program learns of it (a handler finds the emitter with `ctx.state::<mcp::events::Emitter>()`):
//! emitter.emit("book.restocked", json!({ "isbn": "978-0141439518", "copies": 3 })).unwrap();
//! ```

mod buffer;
mod def;
mod emit;
mod evolve;
mod hooks;
mod methods;
#[cfg(feature = "redis")]
mod shared;
mod stream;
#[cfg(feature = "webhooks")]
mod webhook;

#[doc(hidden)]
pub use def::EventRegistration;
pub use def::{Check, Checked, Delivery, EventItem, EventType, Occurrence};
pub use emit::{EmitError, Emitter};
pub use hooks::Subscribed;
#[cfg(feature = "webhooks")]
pub use webhook::Webhooks;

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use serde_json::{json, Value};

use crate::builder::extension::{Declaration, Extension, NotificationDef};
use crate::builder::ServerBuilder;
use crate::context::Era;
use crate::handler::method::MethodDef;
use buffer::{Bounds, Buffer};
use def::Source;

/// The extension's identifier.
pub use crate::wire::events::EXTENSION;

/// The key of `_meta` that names the push stream a notification belongs to.
pub const SUBSCRIPTION_ID: &str = "io.modelcontextprotocol/subscriptionId";

/// The Events extension: the event types a server offers, and how it delivers them. Add it with
/// [`ServerBuilder::extension`](crate::ServerBuilder::extension); emit with the [`Emitter`] it gives.
pub struct Events {
    hub: Arc<Hub>,
    /// What is wrong with it (two types of one name, a webhook setting), reported when the server is built.
    problem: Option<String>,
}

/// What the extension's methods and its emitter share: the types, their buffers, the settings.
pub(crate) struct Hub {
    types: std::sync::RwLock<BTreeMap<String, Arc<Entry>>>,
    settings: std::sync::RwLock<Settings>,
    /// Drawn when the process starts, so that cursors of another process are told apart; on a server shared through
    /// Redis, the one every instance shares.
    epoch: AtomicU64,
    /// The push streams open now.
    streams: AtomicUsize,
    /// The push streams open now, by their subscription's id, for [`Emitter::terminate`].
    open: hooks::Streams,
    /// The poll leases of the types with lifecycle hooks.
    leases: hooks::Leases,
    /// The server, once built: told when the types change (`notifications/events/list_changed`).
    server: std::sync::OnceLock<std::sync::Weak<crate::server::ServerInner>>,
    /// The Redis the server shares with its other instances, once started: the types' events are kept there.
    #[cfg(feature = "redis")]
    shared: std::sync::OnceLock<shared::Shared>,
    /// The webhook subscriptions and their delivery, when the extension delivers webhooks.
    #[cfg(feature = "webhooks")]
    webhooks: std::sync::OnceLock<Arc<webhook::Registry>>,
}

/// A type and, for an emitted one, its buffer.
pub(crate) struct Entry {
    pub def: EventType,
    /// Shared with the entry that replaces it (the same type, its descriptor changed), so that its streams go on.
    pub buffer: Option<Arc<Buffer>>,
    /// Ended when the type is removed (its subscriptions end with -32023) or replaced by one whose schemas changed
    /// incompatibly (-32026); shared with the entry that replaces it compatibly, so that its subscriptions go on.
    pub ended: Arc<hooks::Termination>,
}

/// The extension's settings.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Settings {
    pub bounds: Bounds,
    pub next_poll: Duration,
    pub heartbeat: Duration,
    pub max_streams: usize,
    pub max_events: usize,
    pub poll_lease: Duration,
    pub reauthorize: Duration,
}

impl Default for Settings {
    fn default() -> Self {
        Settings {
            bounds: Bounds { max_age: Events::DEFAULT_BUFFER_AGE, max_events: Events::DEFAULT_BUFFER_EVENTS },
            next_poll: Events::DEFAULT_NEXT_POLL,
            heartbeat: Events::DEFAULT_HEARTBEAT,
            max_streams: Events::DEFAULT_MAX_STREAMS,
            max_events: Events::DEFAULT_MAX_EVENTS,
            poll_lease: Events::DEFAULT_POLL_LEASE,
            reauthorize: Events::DEFAULT_REAUTHORIZE,
        }
    }
}

impl Default for Events {
    fn default() -> Self {
        Events::new()
    }
}

impl std::fmt::Debug for Events {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let names: Vec<String> = self.hub.types.read().unwrap_or_else(|e| e.into_inner()).keys().cloned().collect();
        f.debug_struct("Events").field("types", &names).finish_non_exhaustive()
    }
}

impl Events {
    /// How long an emitted type's buffer keeps an event, by default: ten minutes.
    pub const DEFAULT_BUFFER_AGE: Duration = Duration::from_secs(600);
    /// How many events an emitted type's buffer keeps, by default: 10 000.
    pub const DEFAULT_BUFFER_EVENTS: usize = 10_000;
    /// The `nextPollMs` a poll is answered with, and how often a push stream of a checked type checks: 5 s.
    pub const DEFAULT_NEXT_POLL: Duration = Duration::from_secs(5);
    /// How long a push stream stays silent before a heartbeat: 15 s (the SEP asks for one at least every 30 s).
    pub const DEFAULT_HEARTBEAT: Duration = Duration::from_secs(15);
    /// How many push streams the server holds open at once, by default: 1 000.
    pub const DEFAULT_MAX_STREAMS: usize = 1_000;
    /// How many events a poll answers at most when it names no `maxEvents` (and the most it may name): 100.
    pub const DEFAULT_MAX_EVENTS: usize = 100;
    /// How long a poll subscription lives after its last poll, for its type's lifecycle hooks: 30 s (six times the
    /// default `nextPollMs`).
    pub const DEFAULT_POLL_LEASE: Duration = Duration::from_secs(30);
    /// How often a live subscription's access is checked again ([`EventType::authorize`]), by default: 5 minutes.
    pub const DEFAULT_REAUTHORIZE: Duration = Duration::from_secs(300);
    /// On a server shared through Redis, how many emitted events may wait to be written there (while Redis is
    /// unreachable or slow): 10 000. Past it, [`Emitter::emit`] is refused with [`EmitError::Backlog`].
    pub const SHARED_EMIT_QUEUE: usize = 10_000;

    /// No event types yet.
    pub fn new() -> Events {
        let mut bytes = [0u8; 8];
        // A fixed epoch would only make a restart's cursors look like this process's: still served, from what the
        // buffer holds.
        let _ = getrandom::fill(&mut bytes);
        let hub = Hub {
            types: Default::default(),
            settings: std::sync::RwLock::new(Settings::default()),
            epoch: AtomicU64::new(u64::from_le_bytes(bytes)),
            streams: AtomicUsize::new(0),
            open: hooks::Streams::default(),
            leases: hooks::Leases::default(),
            server: std::sync::OnceLock::new(),
            #[cfg(feature = "redis")]
            shared: std::sync::OnceLock::new(),
            #[cfg(feature = "webhooks")]
            webhooks: std::sync::OnceLock::new(),
        };
        Events { hub: Arc::new(hub), problem: None }
    }

    /// Adds an event type.
    pub fn event(mut self, def: EventType) -> Events {
        if let Some(problem) = &def.problem {
            self.problem.get_or_insert(problem.clone());
        }
        let name = def.name.clone();
        if self.hub.put(def).is_some() {
            self.problem.get_or_insert(format!("two event types are named `{name}`: each name must be unique"));
        }
        self
    }

    /// Adds the event type `#[mcp::event]` declared on the function `T` names: `.event_of::<back_on_shelf>()`.
    pub fn event_of<T: EventItem>(self) -> Events {
        self.event(T::event_type())
    }

    /// Every event type declared with `#[mcp::event]` in the program (and the crates it links).
    pub fn registered() -> Events {
        inventory::iter::<EventRegistration>.into_iter().fold(Events::new(), |events, r| events.event((r.0)()))
    }

    /// How long and how many events an emitted type's buffer keeps (ten minutes and 10 000 by default): what a
    /// cursor can replay.
    pub fn buffer(self, max_age: Duration, max_events: usize) -> Events {
        self.hub.settings.write().unwrap_or_else(|e| e.into_inner()).bounds = Bounds { max_age, max_events };
        self
    }

    /// The `nextPollMs` polls are answered with, and how often a push stream of a checked type checks (5 s by
    /// default).
    pub fn next_poll(self, after: Duration) -> Events {
        self.hub.settings.write().unwrap_or_else(|e| e.into_inner()).next_poll = after;
        self
    }

    /// How long a push stream stays silent before the server sends a heartbeat with its cursor (15 s by default).
    pub fn heartbeat(self, every: Duration) -> Events {
        self.hub.settings.write().unwrap_or_else(|e| e.into_inner()).heartbeat = every;
        self
    }

    /// How long a poll subscription lives after its last poll (30 s by default): when no poll renewed it by then, its
    /// type's [`on_unsubscribe`](EventType::on_unsubscribe) runs. Keep it a few times the `nextPollMs`
    /// ([`next_poll`](Events::next_poll)), so that a client polling as asked never lapses.
    pub fn poll_lease(self, lease: Duration) -> Events {
        self.hub.settings.write().unwrap_or_else(|e| e.into_inner()).poll_lease = lease;
        self
    }

    /// How often a live subscription's access is checked again by its type's [`EventType::authorize`] (5 minutes
    /// by default): how long a caller whose access was revoked may go on receiving events, unless the program ends
    /// the subscription itself when it hears of it ([`Emitter::terminate`]).
    pub fn reauthorize(self, every: Duration) -> Events {
        self.hub.settings.write().unwrap_or_else(|e| e.into_inner()).reauthorize = every;
        self
    }

    /// How many push streams the server holds open at once (1 000 by default); one more is refused with -32025
    /// (`data.limit: "streams"`).
    pub fn max_streams(self, streams: usize) -> Events {
        self.hub.settings.write().unwrap_or_else(|e| e.into_inner()).max_streams = streams;
        self
    }

    /// Delivers webhooks too (`events/subscribe`, the `webhooks` feature): every type offers `webhook` unless its
    /// [`delivery`](EventType::delivery) says otherwise. See [`Webhooks`] for the TTLs, limits, retries and the SSRF
    /// guard.
    #[cfg(feature = "webhooks")]
    pub fn webhooks(mut self, settings: Webhooks) -> Events {
        match webhook::Registry::new(settings) {
            Ok(registry) => {
                let _ = self.hub.webhooks.set(Arc::new(registry));
            }
            Err(why) => {
                self.problem.get_or_insert(why);
            }
        }
        self
    }

    /// What emits this extension's events; it is also in the server's state, for a handler
    /// (`ctx.state::<mcp::events::Emitter>()`).
    pub fn emitter(&self) -> Emitter {
        Emitter { hub: self.hub.clone() }
    }
}

impl Hub {
    pub(crate) fn settings(&self) -> Settings {
        *self.settings.read().unwrap_or_else(|e| e.into_inner())
    }

    fn types_mut(&self) -> std::sync::RwLockWriteGuard<'_, BTreeMap<String, Arc<Entry>>> {
        self.types.write().unwrap_or_else(|e| e.into_inner())
    }

    /// Adds a type, or replaces the one of its name (keeping an emitted type's buffer); returns the one replaced.
    fn put(&self, def: EventType) -> Option<Arc<Entry>> {
        let mut types = self.types_mut();
        // The type goes on under its new descriptor: its buffer, and what ends its streams when it is removed.
        let old = types.get(&def.name);
        let kept = old.and_then(|old| old.buffer.clone());
        let ended = match old {
            Some(old) => match evolve::changed_incompatibly(&old.def, &def) {
                Some(error) => {
                    tracing::info!(event = %def.name, reason = %error.message, "an event type's schema changed incompatibly: its subscriptions end");
                    old.ended.end(error);
                    Arc::default()
                }
                None => old.ended.clone(),
            },
            None => Arc::default(),
        };
        let buffer = matches!(def.source, Source::Emitted { .. }).then(|| {
            kept.unwrap_or_else(|| {
                let buffer = Buffer::new();
                if self.is_shared() {
                    buffer.mirror();
                }
                Arc::new(buffer)
            })
        });
        let entry = Entry { def, buffer, ended };
        types.insert(entry.def.name.clone(), Arc::new(entry))
    }

    /// Tells the clients that listen for it that the types changed.
    fn list_changed(&self) {
        let server = self.server.get().and_then(std::sync::Weak::upgrade);
        if let Some(inner) = server {
            let server = crate::Server { inner };
            if let Err(e) = server.notify(LIST_CHANGED, Value::Null) {
                tracing::warn!(error = %e, "could not announce a change of the event types");
            }
        }
    }

    pub(crate) fn entry(&self, name: &str) -> Option<Arc<Entry>> {
        self.types.read().unwrap_or_else(|e| e.into_inner()).get(name).cloned()
    }

    /// The descriptors `events/list` lists: every type that offers a mode here (the SEP: a non-empty subset).
    pub(crate) fn descriptors(&self) -> Vec<Value> {
        let types = self.types.read().unwrap_or_else(|e| e.into_inner());
        types
            .values()
            .filter_map(|e| {
                let modes = self.modes(&e.def);
                (!modes.is_empty()).then(|| e.def.descriptor(&modes))
            })
            .collect()
    }

    /// A type that offers no mode here: only `webhook`, on a server that delivers none.
    fn undeliverable(&self) -> Option<String> {
        let types = self.types.read().unwrap_or_else(|e| e.into_inner());
        types.values().find(|e| self.modes(&e.def).is_empty()).map(|e| e.def.name.clone())
    }

    pub(crate) fn cursor(&self, position: u64) -> String {
        buffer::cursor(self.epoch(), position)
    }

    pub(crate) fn epoch(&self) -> u64 {
        self.epoch.load(Ordering::Acquire)
    }

    /// The modes `def` offers here: `webhook` where the extension delivers webhooks.
    pub(crate) fn modes(&self, def: &EventType) -> Vec<Delivery> {
        def.modes(self.delivers_webhooks())
    }

    /// Whether the extension delivers webhooks (`events/subscribe`).
    pub(crate) fn delivers_webhooks(&self) -> bool {
        #[cfg(feature = "webhooks")]
        return self.webhooks.get().is_some();
        #[cfg(not(feature = "webhooks"))]
        false
    }

    /// Whether the types' events are kept in a Redis the instances share.
    fn is_shared(&self) -> bool {
        #[cfg(feature = "redis")]
        return self.shared.get().is_some();
        #[cfg(not(feature = "redis"))]
        false
    }

    /// The emitted types' buffers, by name.
    #[cfg(feature = "redis")]
    pub(crate) fn buffers(&self) -> Vec<(String, Arc<Buffer>)> {
        let types = self.types.read().unwrap_or_else(|e| e.into_inner());
        types.values().filter_map(|e| Some((e.def.name.clone(), e.buffer.clone()?))).collect()
    }

    /// Takes a push stream's place among the open ones; `None` when they are all taken.
    pub(crate) fn open_stream(self: &Arc<Self>) -> Option<StreamSlot> {
        let max = self.settings().max_streams;
        let taken = self.streams.fetch_update(Ordering::AcqRel, Ordering::Acquire, |n| (n < max).then_some(n + 1));
        taken.ok().map(|_| StreamSlot { hub: self.clone() })
    }
}

/// A push stream's place among the open ones, given back when the stream ends.
pub(crate) struct StreamSlot {
    hub: Arc<Hub>,
}

impl Drop for StreamSlot {
    fn drop(&mut self) {
        self.hub.streams.fetch_sub(1, Ordering::AcqRel);
    }
}

/// The notification that the event types changed, and its key in a `subscriptions/listen` filter.
const LIST_CHANGED: &str = "notifications/events/list_changed";

impl Extension for Events {
    fn id(&self) -> &str {
        EXTENSION
    }

    fn declare(&self, era: Era) -> Declaration {
        match era {
            Era::V2025 => Declaration::none(),
            Era::V2026 => Declaration::settings(json!({ "listChanged": true })),
        }
    }

    fn notifications(&self) -> Vec<NotificationDef> {
        vec![NotificationDef::new(LIST_CHANGED, "eventsListChanged")]
    }

    fn methods(&self) -> Vec<MethodDef> {
        methods::defs()
    }

    fn check(&self) -> Result<(), String> {
        if let Some(problem) = &self.problem {
            return Err(problem.clone());
        }
        match self.hub.undeliverable() {
            Some(name) => Err(format!(
                "event type `{name}` is delivered by webhook only, and the Events extension delivers no webhooks: \
                 give it `poll` or `push` too, or set `Events::webhooks`"
            )),
            None => Ok(()),
        }
    }

    fn setup(&self, builder: ServerBuilder) -> ServerBuilder {
        #[cfg(feature = "webhooks")]
        let builder = {
            let hub = self.hub.clone();
            builder.on_shutdown(async move {
                if let Some(registry) = hub.webhooks.get() {
                    registry.shut_down().await;
                }
            })
        };
        let hub = self.hub.clone();
        builder.state(self.emitter()).on_start(move |server| {
            let _ = hub.server.set(Arc::downgrade(&server.inner));
            expire_leases(Arc::downgrade(&hub));
            #[cfg(feature = "redis")]
            if let Some(redis) = server.inner.state().get::<crate::redis::Redis>() {
                shared::start(&hub, redis);
            }
        })
    }
}

/// Ends the poll leases no poll renewed, every second, for as long as the extension lives.
fn expire_leases(hub: std::sync::Weak<Hub>) {
    let Ok(runtime) = tokio::runtime::Handle::try_current() else { return };
    runtime.spawn(async move {
        let mut tick = tokio::time::interval(Duration::from_secs(1));
        loop {
            tick.tick().await;
            match hub.upgrade() {
                Some(hub) => hub.leases.expire(),
                None => return,
            }
        }
    });
}

/// 32 random hex digits: ids of push subscriptions, challenges, ids of webhook control envelopes.
pub(crate) fn random_id() -> String {
    let mut bytes = [0u8; 16];
    let _ = getrandom::fill(&mut bytes);
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// JSON with every object's keys sorted: equal arguments are equal text, whatever order they came in (serde_json's
/// `preserve_order` feature, if anything turned it on, keeps the order they came in).
fn canonical(value: &Value) -> String {
    match value {
        Value::Object(map) => {
            let mut keys: Vec<&String> = map.keys().collect();
            keys.sort();
            let fields: Vec<String> =
                keys.iter().map(|k| format!("{}:{}", Value::String((*k).clone()), canonical(&map[*k]))).collect();
            format!("{{{}}}", fields.join(","))
        }
        Value::Array(items) => format!("[{}]", items.iter().map(canonical).collect::<Vec<_>>().join(",")),
        other => other.to_string(),
    }
}

/// A time as the SEP writes it: RFC 3339, UTC, milliseconds.
pub(crate) fn timestamp(at: SystemTime) -> String {
    humantime::format_rfc3339_millis(at).to_string()
}
