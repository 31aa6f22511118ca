//! Events from the client's side (SEP-3415, the 2026-07-28 era): the event types a server offers
//! ([`Client::list_events`]), and subscriptions that run the delivery loop ([`Client::subscribe_events`]) so that
//! the application sees only events.
//!
//! A subscription polls (`events/poll`: again at once while the server has more, else after `nextPollMs`, never
//! sooner than a floor), holds a push stream (`events/stream`: a stream silent for twice the heartbeat interval is
//! taken for dead and opened again from its cursor), or, with the `webhooks` feature and a `WebhookReceiver` the
//! application serves, subscribes by webhook (`events/subscribe`, refreshed before each grant runs out; see
//! `EventSubscription::webhook`). Either way it keeps the cursor it was given in a [`CursorStore`] (in memory
//! unless another is given), starts from it, reports gaps (`truncated`), and hands each event over once (by
//! `eventId`, over a bounded window).

use std::collections::{HashMap, HashSet, VecDeque};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::{json, Value};
use tokio::sync::mpsc;

use super::{Client, Error};
use crate::base::sync::Unpoisoned;
pub use crate::wire::events::Delivery;

/// How many events a subscription holds before its loop waits for the application.
pub(super) const BUFFER: usize = 256;
/// How many event ids a subscription remembers, to hand each event over once.
const SEEN: usize = 1024;

/// An event type a server offers, from `events/list`.
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub struct EventTypeInfo {
    /// Its name (`email.received`).
    pub name: String,
    /// What it is, for the application (and the model) to decide whether to subscribe.
    pub description: Option<String>,
    /// The delivery modes it offers; modes this client does not know are left out.
    pub delivery: Vec<Delivery>,
    /// A subscription's arguments.
    pub input_schema: Value,
    /// What its events carry.
    pub payload_schema: Value,
    /// The descriptor as the server wrote it.
    pub raw: Value,
}

impl EventTypeInfo {
    fn from_raw(raw: Value) -> Option<EventTypeInfo> {
        Some(EventTypeInfo {
            name: raw["name"].as_str()?.to_owned(),
            description: raw["description"].as_str().map(str::to_owned),
            delivery: raw["delivery"].as_array()?.iter().filter_map(|m| Delivery::from_name(m.as_str()?)).collect(),
            input_schema: raw["inputSchema"].clone(),
            payload_schema: raw["payloadSchema"].clone(),
            raw,
        })
    }
}

/// Where a subscription keeps its cursor, by subscription (the type's name and its arguments): what lets a program
/// that restarts go on from where it was. [`MemoryCursors`] unless another is given.
pub trait CursorStore: Send + Sync + 'static {
    /// The cursor kept for `key`.
    fn load(&self, key: &str) -> Option<String>;
    /// Keeps `cursor` for `key` (`None`: the type cannot replay; nothing to keep).
    fn save(&self, key: &str, cursor: Option<&str>);
}

/// Cursors kept in memory, for as long as the program runs.
#[derive(Debug, Default)]
pub struct MemoryCursors {
    cursors: Mutex<HashMap<String, String>>,
}

impl CursorStore for MemoryCursors {
    fn load(&self, key: &str) -> Option<String> {
        self.cursors.locked().get(key).cloned()
    }

    fn save(&self, key: &str, cursor: Option<&str>) {
        let mut cursors = self.cursors.locked();
        match cursor {
            Some(c) => cursors.insert(key.to_owned(), c.to_owned()),
            None => cursors.remove(key),
        };
    }
}

/// What to subscribe to, and how.
#[derive(Clone)]
#[must_use]
pub struct EventSubscription {
    pub(super) name: String,
    pub(super) arguments: Value,
    delivery: Option<Delivery>,
    pub(super) cursors: Arc<dyn CursorStore>,
    pub(super) poll_floor: Duration,
    pub(super) heartbeat: Duration,
    max_age: Option<Duration>,
    /// Where webhooks go, if the application receives them.
    #[cfg(feature = "webhooks")]
    pub(super) webhook: Option<super::webhook::Target>,
    /// The `ttlMs` suggested for a webhook subscription.
    #[cfg(feature = "webhooks")]
    pub(super) ttl: Option<Duration>,
}

impl std::fmt::Debug for EventSubscription {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("EventSubscription").field("name", &self.name).field("arguments", &self.arguments).finish()
    }
}

impl EventSubscription {
    /// The shortest wait between two polls, whatever `nextPollMs` says (the SEP's default): 1 s.
    pub const DEFAULT_POLL_FLOOR: Duration = Duration::from_secs(1);
    /// The heartbeat interval a push stream is expected to keep (the SEP's "at least every 30 s").
    pub const DEFAULT_HEARTBEAT: Duration = Duration::from_secs(30);

    /// Events of type `name`, with no arguments; push if the type offers it, else poll.
    pub fn new(name: impl Into<String>) -> EventSubscription {
        EventSubscription {
            name: name.into(),
            arguments: json!({}),
            delivery: None,
            cursors: Arc::new(MemoryCursors::default()),
            poll_floor: Self::DEFAULT_POLL_FLOOR,
            heartbeat: Self::DEFAULT_HEARTBEAT,
            max_age: None,
            #[cfg(feature = "webhooks")]
            webhook: None,
            #[cfg(feature = "webhooks")]
            ttl: None,
        }
    }

    /// The subscription's arguments (an object, per the type's `inputSchema`).
    pub fn arguments(mut self, arguments: Value) -> EventSubscription {
        self.arguments = arguments;
        self
    }

    /// Uses this delivery mode; an error if the type does not offer it ([`Delivery::Webhook`] also needs
    /// `EventSubscription::webhook`, of the `webhooks` feature).
    pub fn delivery(mut self, mode: Delivery) -> EventSubscription {
        self.delivery = Some(mode);
        self
    }

    /// Keeps cursors there ([`MemoryCursors`] by default).
    pub fn cursors(mut self, store: Arc<dyn CursorStore>) -> EventSubscription {
        self.cursors = store;
        self
    }

    /// The shortest wait between polls (1 s by default), so that a server that asks for a tight loop does not get
    /// one.
    pub fn poll_floor(mut self, floor: Duration) -> EventSubscription {
        self.poll_floor = floor;
        self
    }

    /// The heartbeat interval the server keeps (30 s by default): a push stream silent for twice as long is opened
    /// again.
    pub fn heartbeat(mut self, every: Duration) -> EventSubscription {
        self.heartbeat = every;
        self
    }

    /// Replays no event older than this when starting from a kept cursor (`maxAgeMs`).
    pub fn max_age(mut self, age: Duration) -> EventSubscription {
        self.max_age = Some(age);
        self
    }

    /// Webhook delivery (the `webhooks` feature): the server POSTs each event to `url`, the public `https` URL at
    /// which the application serves `receiver`'s [router](super::WebhookReceiver::router), and the receiver hands
    /// it to this subscription. Webhook is then the mode chosen when the type offers it (SEP-3415's order: webhook,
    /// push, poll), unless [`EventSubscription::delivery`] asks for another.
    ///
    /// The subscription gets a signing secret of its own (32 bytes from the operating system's generator), which
    /// only the receiver and the server know; it is refreshed before each grant runs out (`refreshBefore`), and
    /// unsubscribed (`events/unsubscribe`) when its [`EventStream`] is dropped. Subscribing by webhook needs a
    /// caller the server authenticates (SEP-3415: -32024 otherwise). Two subscriptions of one client to the same
    /// type, arguments and URL are one on the server: the later replaces the earlier, which ends.
    #[cfg(feature = "webhooks")]
    pub fn webhook(mut self, receiver: &super::WebhookReceiver, url: impl Into<String>) -> EventSubscription {
        self.webhook = Some(super::webhook::Target { receiver: receiver.clone(), url: url.into() });
        self
    }

    /// The lifetime a webhook subscription asks for (`ttlMs`; the server's default if not set). The server grants
    /// what it will (`refreshBefore`) and the subscription is refreshed before that: at three quarters of the grant
    /// and at least 1 s before its end, but never sooner than the [poll floor](EventSubscription::poll_floor)
    /// after the previous refresh.
    #[cfg(feature = "webhooks")]
    pub fn ttl(mut self, ttl: Duration) -> EventSubscription {
        self.ttl = Some(ttl);
        self
    }

    /// Whether webhook delivery is preferred: the application receives webhooks for it.
    fn prefers_webhook(&self) -> bool {
        #[cfg(feature = "webhooks")]
        return self.webhook.is_some();
        #[cfg(not(feature = "webhooks"))]
        false
    }

    /// The key its cursor is kept under: the name and the arguments as JSON (object keys sorted).
    pub(super) fn key(&self) -> String {
        format!("{}\u{1f}{}", self.name, self.arguments)
    }

    pub(super) fn params(&self, cursor: Option<&str>) -> Value {
        let mut params = json!({ "name": self.name, "arguments": self.arguments, "cursor": cursor });
        if let (Some(age), Some(_)) = (self.max_age, cursor) {
            params["maxAgeMs"] = json!(age.as_millis() as u64);
        }
        params
    }
}

/// What a subscription hands over.
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub enum EventItem {
    /// An event.
    Event(ReceivedEvent),
    /// Events were skipped before what follows (the cursor was too old, the server lost its buffer): fetch what
    /// matters again if it does.
    Gap,
    /// A failure the server reports and recovers from (one failed upstream read); the subscription goes on.
    Error(crate::Error),
    /// The server ended the subscription because its type changed incompatibly (-32026 `schema_changed`) or was
    /// removed and is offered again, and it was made again, as SEP-3415 asks of a client: against the type's
    /// current descriptor, from the kept cursor. What follows follows `descriptor`'s schemas.
    Resubscribed {
        /// The type as the server lists it now.
        descriptor: EventTypeInfo,
        /// The mode the new subscription runs in.
        delivery: Delivery,
    },
}

/// An event as received.
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub struct ReceivedEvent {
    /// Its id, stable across deliveries.
    pub event_id: String,
    /// Its type's name.
    pub name: String,
    /// When it happened (RFC 3339), as the server wrote it.
    pub timestamp: String,
    /// Its payload.
    pub data: Value,
}

impl ReceivedEvent {
    pub(super) fn from_params(params: &Value) -> Option<ReceivedEvent> {
        Some(ReceivedEvent {
            event_id: params["eventId"].as_str()?.to_owned(),
            name: params["name"].as_str()?.to_owned(),
            timestamp: params["timestamp"].as_str().unwrap_or_default().to_owned(),
            data: params["data"].clone(),
        })
    }
}

/// A running subscription: its events as they come. Dropping it stops the loop (and cancels a push stream, or
/// unsubscribes a webhook subscription).
#[derive(Debug)]
pub struct EventStream {
    rx: mpsc::Receiver<EventItem>,
    task: tokio::task::JoinHandle<()>,
    ended: Arc<Mutex<Option<crate::Error>>>,
    /// The mode it started in (a subscription made again after its type changed may run in another:
    /// [`EventItem::Resubscribed`] says).
    pub delivery: Delivery,
    /// A webhook subscription's place in its receiver; dropped with the stream, it leaves it and unsubscribes.
    #[cfg(feature = "webhooks")]
    webhook: Arc<Mutex<Option<super::webhook::Registration>>>,
}

impl EventStream {
    /// The next event (or gap, or reported error); `None` once the subscription ended: see
    /// [`EventStream::ended`] for why.
    pub async fn next(&mut self) -> Option<EventItem> {
        self.rx.recv().await
    }

    /// Why the subscription ended, once it did: the server's error (it ended the subscription, or the type is gone),
    /// or the connection's.
    pub fn ended(&self) -> Option<crate::Error> {
        self.ended.locked().clone()
    }
}

impl Drop for EventStream {
    fn drop(&mut self) {
        self.task.abort();
        // At once, not when the aborted task is dropped: a subscription made again right after finds it gone.
        #[cfg(feature = "webhooks")]
        drop(self.webhook.locked().take());
    }
}

/// Event ids handed over lately, to hand each over once.
#[derive(Default)]
pub(super) struct Seen {
    ids: HashSet<String>,
    order: VecDeque<String>,
}

impl Seen {
    /// `true` the first time an id is seen.
    pub(super) fn first(&mut self, id: &str) -> bool {
        if !self.ids.insert(id.to_owned()) {
            return false;
        }
        self.order.push_back(id.to_owned());
        if self.order.len() > SEEN {
            if let Some(old) = self.order.pop_front() {
                self.ids.remove(&old);
            }
        }
        true
    }
}

/// The JSON-RPC error a server answered with, if that is what `e` is.
pub(super) fn rpc_error(e: &Error) -> Option<crate::Error> {
    match e {
        Error::Rpc(e) => Some(e.clone()),
        _ => None,
    }
}

/// Whether a result or notification reports a gap: `truncated: true` beside a cursor. A type that cannot replay
/// (a null or absent cursor) has no position to have advanced past, and the SEP has clients ignore its `truncated`.
pub(super) fn gap(params: &Value) -> bool {
    params["truncated"] == true && params["cursor"].is_string()
}

/// Whether the server's error ends the subscription: the type is gone or changed, the caller may not, or what was
/// asked is not offered; anything else is worth asking again.
pub(super) fn ends(e: &crate::Error) -> bool {
    use crate::ErrorCode;
    [
        ErrorCode::NOT_FOUND,
        ErrorCode::FORBIDDEN,
        ErrorCode::UNSUPPORTED,
        ErrorCode::INVALID_PARAMS,
        ErrorCode::METHOD_NOT_FOUND,
    ]
    .contains(&e.code)
}

impl Client {
    /// Whether the server declared the Events extension: the SEP forbids sending `events/*` to one that did not.
    fn offers_events(&self) -> Result<(), Error> {
        if self.server_capabilities()["extensions"][crate::wire::events::EXTENSION].is_object() {
            return Ok(());
        }
        Err(Error::Usage(format!(
            "the server does not offer events: its capabilities have no `extensions.{}` (a 2026-07-28 server with \
             the Events extension has it); nothing was sent",
            crate::wire::events::EXTENSION
        )))
    }

    /// The event types the server offers (`events/list`, every page): 2026-07-28 servers that declared the Events
    /// extension.
    pub async fn list_events(&self) -> Result<Vec<EventTypeInfo>, Error> {
        self.offers_events()?;
        let mut types = Vec::new();
        let mut cursor: Option<String> = None;
        loop {
            let params = match &cursor {
                Some(c) => json!({ "cursor": c }),
                None => json!({}),
            };
            let page = self.request("events/list", params).await?;
            types.extend(page["events"].as_array().into_iter().flatten().cloned().filter_map(EventTypeInfo::from_raw));
            match page["nextCursor"].as_str() {
                Some(next) => cursor = Some(next.to_owned()),
                None => return Ok(types),
            }
        }
    }

    /// Subscribes, and runs the delivery loop: webhook if the type offers it and the subscription has a receiver
    /// (`EventSubscription::webhook`, the `webhooks` feature), else push if the type offers it, else poll (unless a
    /// mode was asked for); from the cursor kept for this subscription (else from now). The first poll, the
    /// stream's confirmation or the `events/subscribe` result comes before this returns, so an unknown type,
    /// arguments the type does not take, a mode it does not offer or an endpoint the server could not verify are
    /// errors here.
    ///
    /// ```no_run
    /// # #[allow(dead_code)]
    /// # async fn run(client: mcp::client::Client) -> Result<(), mcp::client::Error> {
    /// use mcp::client::{EventItem, EventSubscription};
    /// use serde_json::json;
    ///
    /// let mut restocked = client
    ///     .subscribe_events(EventSubscription::new("book.restocked").arguments(json!({ "isbn": "978-0141439518" })))
    ///     .await?;
    /// while let Some(item) = restocked.next().await {
    ///     match item {
    ///         EventItem::Event(event) => println!("{}: {}", event.name, event.data),
    ///         EventItem::Gap => println!("some events were missed: read the stock again"),
    ///         EventItem::Error(e) => println!("the server reports {e}"),
    ///         _ => {}
    ///     }
    /// }
    /// println!("ended: {:?}", restocked.ended());
    /// # Ok(()) }
    /// # fn main() {}
    /// ```
    pub async fn subscribe_events(&self, sub: EventSubscription) -> Result<EventStream, Error> {
        self.offers_events()?;
        let delivery = match sub.delivery {
            Some(mode) => mode,
            None => choose(&sub, &self.list_events().await?)?,
        };
        let (tx, rx) = mpsc::channel(BUFFER);
        let run = super::event_loops::Run::new(self.clone(), sub, tx);
        let running = run.begin(delivery).await?;
        Ok(EventStream {
            rx,
            ended: run.ended.clone(),
            delivery,
            #[cfg(feature = "webhooks")]
            webhook: run.webhook.clone(),
            task: tokio::spawn(run.follow(running)),
        })
    }
}

/// The mode a subscription runs in: the one it asks for, else webhook if the type offers it and the subscription
/// has a receiver, else push if offered, else poll (SEP-3415's order).
pub(super) fn choose(sub: &EventSubscription, types: &[EventTypeInfo]) -> Result<Delivery, Error> {
    if let Some(mode) = sub.delivery {
        return Ok(mode);
    }
    let offered = types.iter().find(|t| t.name == sub.name).map(|t| t.delivery.clone()).unwrap_or_default();
    if sub.prefers_webhook() && offered.contains(&Delivery::Webhook) {
        Ok(Delivery::Webhook)
    } else if offered.contains(&Delivery::Push) {
        Ok(Delivery::Push)
    } else if offered.contains(&Delivery::Poll) || offered.is_empty() {
        // (A type not listed is polled: the server's answer says it is unknown.)
        Ok(Delivery::Poll)
    } else {
        Err(Error::Usage(format!(
            "event type `{}` is delivered by webhook only: give the subscription a WebhookReceiver the application \
             serves (EventSubscription::webhook, the `webhooks` feature)",
            sub.name
        )))
    }
}
