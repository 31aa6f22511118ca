//! An event type as the server declares it ([`EventType`]), what its check function is given and gives back
//! ([`Check`], [`Checked`]), and one occurrence of an event ([`Occurrence`]).

use std::future::Future;
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use schemars::JsonSchema;
use serde::de::DeserializeOwned;
use serde_json::{json, Map, Value};

use crate::base::future::BoxFuture;
use crate::context::Context;
use crate::wire::error::Error;
pub use crate::wire::events::Delivery;

/// One occurrence of an event, as a client receives it: `{eventId, name, timestamp, data, cursor}`.
///
/// A check function returns these ([`Checked`]); an emitted event becomes one when it is delivered.
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub struct Occurrence {
    /// A stable id for deduplication: the upstream's own id where it has one (a message id, a delivery GUID).
    pub event_id: String,
    /// When it happened.
    pub timestamp: SystemTime,
    /// The payload, matching the type's `payloadSchema`.
    pub data: Value,
    /// The subscription's position after this event (push delivery), when the check function knows one per event;
    /// `None`: the batch's cursor stands for the last event of the batch.
    pub cursor: Option<String>,
}

impl Occurrence {
    /// An occurrence that happened now, with its id and payload.
    pub fn new(event_id: impl Into<String>, data: Value) -> Occurrence {
        Occurrence { event_id: event_id.into(), timestamp: SystemTime::now(), data, cursor: None }
    }

    /// When it happened, if not now.
    pub fn at(mut self, timestamp: SystemTime) -> Occurrence {
        self.timestamp = timestamp;
        self
    }

    /// The subscription's position after this event.
    pub fn with_cursor(mut self, cursor: impl Into<String>) -> Occurrence {
        self.cursor = Some(cursor.into());
        self
    }

    /// The occurrence on the wire, for an event type named `name`.
    pub(crate) fn to_json(&self, name: &str, cursor: Option<Option<&str>>) -> Value {
        occurrence_json(&self.event_id, name, self.timestamp, &self.data, cursor)
    }
}

/// An occurrence on the wire: `{eventId, name, timestamp, data}`, and `cursor` (push delivery) when given.
pub(crate) fn occurrence_json(
    id: &str,
    name: &str,
    at: SystemTime,
    data: &Value,
    cursor: Option<Option<&str>>,
) -> Value {
    let mut o = json!({ "eventId": id, "name": name, "timestamp": super::timestamp(at), "data": data });
    if let Some(cursor) = cursor {
        o["cursor"] = json!(cursor);
    }
    o
}

/// What a check function is asked: the subscription's arguments, where the client is (its cursor), and how much
/// it wants.
#[derive(Clone, Debug)]
#[non_exhaustive]
pub struct Check {
    /// The request that asks (`events/poll`, or the `events/stream` the server checks for).
    pub context: Context,
    /// The subscription's arguments, checked against the type's `inputSchema` type.
    pub arguments: Value,
    /// Where the client is: `None` is "from now" (answer the current position and no events).
    pub cursor: Option<String>,
    /// Events older than this are not wanted (`maxAgeMs`); skipping some sets [`Checked::truncated`].
    pub max_age: Option<Duration>,
    /// At most this many events; more set [`Checked::has_more`].
    pub max_events: usize,
}

/// What a check function answers: the events since the cursor, and the cursor after them.
#[derive(Clone, Debug, Default, PartialEq)]
#[non_exhaustive]
pub struct Checked {
    /// The events since the cursor, oldest first.
    pub events: Vec<Occurrence>,
    /// The position after them: the client's next cursor. `None` for a type that cannot replay.
    pub cursor: Option<String>,
    /// Events between the client's cursor and these were skipped (the cursor was too old, `maxAgeMs`).
    pub truncated: bool,
    /// More events are ready: the client asks again at once.
    pub has_more: bool,
    /// When to ask next, if not the server's default.
    pub next_poll: Option<Duration>,
}

impl Checked {
    /// These events, and the cursor after them.
    pub fn new(events: Vec<Occurrence>, cursor: Option<String>) -> Checked {
        Checked { events, cursor, ..Checked::default() }
    }

    /// Marks events as skipped before these.
    pub fn truncated(mut self) -> Checked {
        self.truncated = true;
        self
    }

    /// Marks more events as ready.
    pub fn has_more(mut self) -> Checked {
        self.has_more = true;
        self
    }

    /// Asks the client to come back after `after`.
    pub fn next_poll(mut self, after: Duration) -> Checked {
        self.next_poll = Some(after);
        self
    }
}

type Validate = Arc<dyn Fn(&Value) -> Result<(), String> + Send + Sync>;
pub(crate) type Matcher = Arc<dyn Fn(&Value, &Value) -> bool + Send + Sync>;
pub(crate) type Transform = Arc<dyn Fn(&Value, &Value) -> Option<Value> + Send + Sync>;
pub(crate) type CheckFn = Arc<dyn Fn(Check) -> BoxFuture<'static, Result<Checked, Error>> + Send + Sync>;

/// Where a type's events come from.
#[derive(Clone)]
pub(crate) enum Source {
    /// The program emits them ([`Emitter::emit`](super::Emitter::emit)); the server keeps them in a bounded buffer,
    /// and each subscription gets those its arguments match.
    Emitted { matches: Option<Matcher>, transform: Option<Transform> },
    /// A function that reads an upstream with a history of its own, from a cursor.
    Checked(CheckFn),
}

/// An event type: its name, what a subscription's arguments are (`inputSchema`), what its events carry
/// (`payloadSchema`), how they are delivered, and where they come from.
///
/// Two kinds, as SEP-3415's server guidance has them:
/// - [`EventType::emitted`]: the program emits each event ([`Emitter::emit`](super::Emitter::emit)), from whatever
///   tells it (a webhook of its own, a queue, a change in its data); the server keeps the latest in a bounded buffer
///   (by age and count, [`Events::buffer`](super::Events::buffer)), so a cursor replays what the buffer still holds;
/// - [`EventType::checked`]: a function reads an upstream that keeps its own history (a mailbox, a change feed),
///   from the client's cursor; a poll calls it once, a push stream every [`Events::next_poll`](super::Events::next_poll).
///
/// ```
/// use mcp::events::{Delivery, EventType};
/// use schemars::JsonSchema;
/// use serde::{Deserialize, Serialize};
///
/// /// Which books to hear about.
/// #[derive(Deserialize, JsonSchema)]
/// struct Watch {
///     /// Only this book; every book if absent.
///     isbn: Option<String>,
/// }
///
/// /// A book back in stock.
/// #[derive(Serialize, Deserialize, JsonSchema)]
/// struct Restocked {
///     isbn: String,
///     copies: u32,
/// }
///
/// let restocked = EventType::emitted("book.restocked")
///     .description("A book is back in stock.")
///     .arguments::<Watch>()
///     .payload::<Restocked>()
///     .matching(|watch: &Watch, book: &Restocked| watch.isbn.as_ref().is_none_or(|isbn| *isbn == book.isbn))
///     .delivery(&[Delivery::Poll, Delivery::Push]);
/// # let _ = restocked;
/// ```
#[derive(Clone)]
pub struct EventType {
    pub(crate) name: String,
    pub(crate) description: Option<String>,
    pub(crate) input_schema: Value,
    pub(crate) payload_schema: Value,
    /// The modes it offers; `None`: poll and push, and webhook when the extension delivers webhooks.
    pub(crate) delivery: Option<Vec<Delivery>>,
    pub(crate) validate: Option<Validate>,
    pub(crate) meta: Option<Value>,
    pub(crate) source: Source,
    /// A declaration that cannot be served (its arguments' schema could not be made): reported when the server is
    /// built.
    pub(crate) problem: Option<String>,
    pub(crate) on_subscribe: Option<super::hooks::StartHook>,
    pub(crate) on_unsubscribe: Option<super::hooks::EndHook>,
    pub(crate) authorize: Option<super::hooks::StartHook>,
}

impl std::fmt::Debug for EventType {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("EventType").field("name", &self.name).field("delivery", &self.delivery).finish_non_exhaustive()
    }
}

impl EventType {
    fn with_source(name: impl Into<String>, source: Source) -> EventType {
        EventType {
            name: name.into(),
            description: None,
            input_schema: json!({ "type": "object" }),
            payload_schema: json!({ "type": "object" }),
            delivery: None,
            validate: None,
            meta: None,
            source,
            problem: None,
            on_subscribe: None,
            on_unsubscribe: None,
            authorize: None,
        }
    }

    /// A type whose events the program emits ([`Emitter::emit`](super::Emitter::emit)); every subscription gets every
    /// event unless [`matching`](EventType::matching) says otherwise. Poll and push by default.
    pub fn emitted(name: impl Into<String>) -> EventType {
        EventType::with_source(name, Source::Emitted { matches: None, transform: None })
    }

    /// A type whose events `check` reads from an upstream with a history of its own: called with the subscription's
    /// arguments and the client's cursor ([`Check`]), it answers the events since then and the cursor after them
    /// ([`Checked`]). With no cursor it answers the current position and no events. Poll and push by default (a
    /// push stream calls it every [`Events::next_poll`](super::Events::next_poll), or as its answer asks).
    ///
    /// ```
    /// use mcp::events::{Checked, EventType, Occurrence};
    /// use serde_json::json;
    ///
    /// let orders = EventType::checked("order.placed", |check| async move {
    ///     // The upstream's position is a number; this one has one order after each position.
    ///     let at: u64 = check.cursor.as_deref().map_or(Ok(0), str::parse).map_err(|_| mcp::Error::invalid_params("bad cursor"))?;
    ///     if check.cursor.is_none() {
    ///         return Ok(Checked::new(vec![], Some(at.to_string())));
    ///     }
    ///     let order = Occurrence::new(format!("order-{}", at + 1), json!({ "order": at + 1 }));
    ///     Ok(Checked::new(vec![order], Some((at + 1).to_string())))
    /// });
    /// # let _ = orders;
    /// ```
    pub fn checked<F, Fut>(name: impl Into<String>, check: F) -> EventType
    where
        F: Fn(Check) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<Checked, Error>> + Send + 'static,
    {
        let check: CheckFn = Arc::new(move |c| Box::pin(check(c)));
        EventType::with_source(name, Source::Checked(check))
    }

    /// Its description, for the client (and the model) to decide whether to subscribe.
    pub fn description(mut self, text: impl Into<String>) -> EventType {
        self.description = Some(text.into());
        self
    }

    /// What a subscription's arguments are: `A`'s JSON Schema becomes the `inputSchema` (its doc comments the
    /// descriptions), and a subscription whose arguments `A` does not read is refused with -32602 naming the
    /// problem. Without it, any object is taken.
    pub fn arguments<A: JsonSchema + DeserializeOwned>(mut self) -> EventType {
        self.input_schema = root_schema::<A>(false);
        self.validate = Some(Arc::new(|v| serde_json::from_value::<A>(v.clone()).map(drop).map_err(|e| e.to_string())));
        self
    }

    /// `#[mcp::event]`'s arguments: the `inputSchema` its glue builds, and its reader as the arguments' check.
    #[doc(hidden)]
    pub fn __macro_arguments(
        mut self,
        schema: fn() -> Result<Value, crate::handler::SchemaError>,
        read: fn(&Value) -> Result<(), String>,
    ) -> EventType {
        match schema() {
            Ok(schema) => self.input_schema = schema,
            Err(e) => self.problem = Some(format!("event type `{}`: {e}", self.name)),
        }
        self.validate = Some(Arc::new(read));
        self
    }

    /// `#[mcp::event]`'s match rule: its glue reads the arguments and the payload, and calls the function.
    #[doc(hidden)]
    pub fn __macro_matching(mut self, matches: fn(&Value, &Value) -> bool) -> EventType {
        if let Source::Emitted { matches: slot, .. } = &mut self.source {
            *slot = Some(Arc::new(matches));
        }
        self
    }

    /// Called when a subscription starts, in every delivery mode (a push stream opens, a webhook subscription is
    /// created, a poll is first seen: see [`Subscribed`](super::Subscribed)), before any event is delivered: the place
    /// to set up an upstream listener for its arguments (make it idempotent: a poll lease that lapsed starts again).
    /// An error refuses the subscription with it (-32024 for a caller who may not, say).
    pub fn on_subscribe<F, Fut>(mut self, hook: F) -> EventType
    where
        F: Fn(super::Subscribed) -> Fut + Send + Sync + 'static,
        Fut: std::future::Future<Output = Result<(), Error>> + Send + 'static,
    {
        self.on_subscribe = Some(Arc::new(move |sub| Box::pin(hook(sub))));
        self
    }

    /// Whether the caller may (still) have a subscription (SEP-3415's authorization): asked when one starts, in
    /// every mode, before `on_subscribe` (an error refuses it), on each webhook refresh, and again every
    /// [`Events::reauthorize`](super::Events::reauthorize) while it lives (5 minutes by default; a poll subscription
    /// when it is polled after that). A later refusal with -32024 (or -32023, -32026) ends the subscription with
    /// that error, in its mode's way ([`Emitter::terminate`](super::Emitter::terminate)); another error (the
    /// upstream that says who may see what is down) is logged, and asked again at the next turn.
    pub fn authorize<F, Fut>(mut self, hook: F) -> EventType
    where
        F: Fn(super::Subscribed) -> Fut + Send + Sync + 'static,
        Fut: std::future::Future<Output = Result<(), Error>> + Send + 'static,
    {
        self.authorize = Some(Arc::new(move |sub| Box::pin(hook(sub))));
        self
    }

    /// Called when a subscription ends: its push stream closed, its webhook subscription unsubscribed, expired or
    /// terminated, or its poll lease not renewed ([`Events::poll_lease`](super::Events::poll_lease)).
    pub fn on_unsubscribe<F, Fut>(mut self, hook: F) -> EventType
    where
        F: Fn(super::Subscribed) -> Fut + Send + Sync + 'static,
        Fut: std::future::Future<Output = ()> + Send + 'static,
    {
        self.on_unsubscribe = Some(Arc::new(move |sub| Box::pin(hook(sub))));
        self
    }

    /// What its events carry: `P`'s JSON Schema becomes the `payloadSchema`.
    pub fn payload<P: JsonSchema>(mut self) -> EventType {
        self.payload_schema = root_schema::<P>(true);
        self
    }

    /// The `inputSchema`, written by hand (any arguments that are an object are taken).
    pub fn input_schema(mut self, schema: Value) -> EventType {
        self.input_schema = schema;
        self
    }

    /// The `payloadSchema`, written by hand.
    pub fn payload_schema(mut self, schema: Value) -> EventType {
        self.payload_schema = schema;
        self
    }

    /// The delivery modes it offers. By default poll and push, and webhook when the extension delivers webhooks
    /// ([`Events::webhooks`](super::Events::webhooks)). An empty list keeps the default.
    pub fn delivery(mut self, modes: &[Delivery]) -> EventType {
        if !modes.is_empty() {
            self.delivery = Some(modes.to_vec());
        }
        self
    }

    /// Whether it has a lifecycle hook ([`on_subscribe`](EventType::on_subscribe) or
    /// [`on_unsubscribe`](EventType::on_unsubscribe)).
    pub(crate) fn has_hooks(&self) -> bool {
        self.on_subscribe.is_some() || self.on_unsubscribe.is_some() || self.authorize.is_some()
    }

    /// The modes it offers on a server that does (`webhooks`) or does not deliver webhooks.
    pub(crate) fn modes(&self, webhooks: bool) -> Vec<Delivery> {
        match &self.delivery {
            Some(modes) => modes.iter().copied().filter(|m| webhooks || *m != Delivery::Webhook).collect(),
            None if webhooks => vec![Delivery::Poll, Delivery::Push, Delivery::Webhook],
            None => vec![Delivery::Poll, Delivery::Push],
        }
    }

    /// `_meta` of its descriptor in `events/list`.
    pub fn meta(mut self, meta: Value) -> EventType {
        self.meta = Some(meta);
        self
    }

    /// For an emitted type: which subscriptions get an event, from their arguments (`A`) and the event's payload
    /// (`P`), as SEP-3415's `match` hook. Applied alike to polls, push streams and the buffer's replay. Arguments or
    /// a payload that do not read as `A` or `P` match nothing. A checked type filters in its check function; this
    /// changes nothing for it.
    pub fn matching<A, P>(mut self, matches: impl Fn(&A, &P) -> bool + Send + Sync + 'static) -> EventType
    where
        A: DeserializeOwned,
        P: DeserializeOwned,
    {
        if let Source::Emitted { matches: slot, .. } = &mut self.source {
            *slot = Some(Arc::new(move |arguments, data| match (A::deserialize(arguments), P::deserialize(data)) {
                (Ok(a), Ok(p)) => matches(&a, &p),
                _ => false,
            }));
        }
        self
    }

    /// For an emitted type: shapes each event's payload for one subscription, from its arguments (`A`), as
    /// SEP-3415's `transform` hook (a `redact` argument, a thinner payload for a subscriber that asked for one).
    /// Applied after [`matching`](EventType::matching), to polls and push streams alike; the buffer keeps the event
    /// as emitted. Arguments or a payload that do not read as `A` or `P`, or a result that does not serialize, leave
    /// the payload as emitted.
    ///
    /// ```
    /// use mcp::events::EventType;
    /// use serde::{Deserialize, Serialize};
    ///
    /// #[derive(Deserialize, schemars::JsonSchema)]
    /// struct Watch {
    ///     /// Leave out who reported it.
    ///     #[serde(default)]
    ///     redact: bool,
    /// }
    ///
    /// #[derive(Serialize, Deserialize)]
    /// struct Incident {
    ///     title: String,
    ///     reporter: Option<String>,
    /// }
    ///
    /// let incidents = EventType::emitted("incident.created")
    ///     .arguments::<Watch>()
    ///     .transform(|watch: &Watch, incident: Incident| {
    ///         if watch.redact { Incident { reporter: None, ..incident } } else { incident }
    ///     });
    /// # let _ = incidents;
    /// ```
    pub fn transform<A, P>(mut self, shape: impl Fn(&A, P) -> P + Send + Sync + 'static) -> EventType
    where
        A: DeserializeOwned,
        P: DeserializeOwned + serde::Serialize,
    {
        if let Source::Emitted { transform: slot, .. } = &mut self.source {
            *slot = Some(Arc::new(move |arguments, data| {
                let (a, p) = (A::deserialize(arguments).ok()?, P::deserialize(data).ok()?);
                serde_json::to_value(shape(&a, p)).ok()
            }));
        }
        self
    }

    /// The type's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Its descriptor in `events/list`, on a server that does (`webhooks`) or does not deliver webhooks.
    /// Its descriptor in `events/list`, offering `modes`.
    pub(crate) fn descriptor(&self, modes: &[Delivery]) -> Value {
        let mut d = Map::new();
        d.insert("name".into(), json!(self.name));
        if let Some(text) = &self.description {
            d.insert("description".into(), json!(text));
        }
        d.insert("delivery".into(), modes.iter().map(|m| m.as_str()).collect());
        d.insert("inputSchema".into(), self.input_schema.clone());
        d.insert("payloadSchema".into(), self.payload_schema.clone());
        if let Some(meta) = &self.meta {
            d.insert("_meta".into(), meta.clone());
        }
        Value::Object(d)
    }

    /// Checks a subscription's arguments against the type: -32602 naming the problem.
    pub(crate) fn check_arguments(&self, arguments: &Value) -> Result<(), Error> {
        if !arguments.is_object() {
            return Err(Error::invalid_params(format!(
                "the arguments of a `{}` subscription must be an object",
                self.name
            )));
        }
        match &self.validate {
            Some(validate) => validate(arguments).map_err(|why| {
                Error::invalid_params(format!("the arguments do not fit event `{}`'s inputSchema: {why}", self.name))
            }),
            None => Ok(()),
        }
    }
}

/// `T`'s JSON Schema as a root schema (2020-12), without the title schemars gives it; an object schema always.
fn root_schema<T: JsonSchema>(serialize: bool) -> Value {
    let settings = crate::handler::schema::schema_settings();
    let settings = if serialize { settings.for_serialize() } else { settings.for_deserialize() };
    let mut schema = settings.into_generator().root_schema_for::<T>().to_value();
    if let Value::Object(root) = &mut schema {
        root.remove("title");
        root.entry("type").or_insert_with(|| json!("object"));
    }
    schema
}

/// An event type declared with `#[mcp::event]`: the hidden item of the function's name implements it. Add it with
/// [`Events::event_of`](super::Events::event_of), emit with [`Emitter::emit_of`](super::Emitter::emit_of).
pub trait EventItem {
    /// The type's name.
    const NAME: &'static str;
    /// What its events carry (for a checked type declared without `payload = ...`: a JSON value).
    type Payload: serde::Serialize;

    /// The type, as [`Events::event`](super::Events::event) takes it.
    fn event_type() -> EventType;
}

/// An event type registered by `#[mcp::event]`, for [`Events::registered`](super::Events::registered). Not a public
/// API.
#[doc(hidden)]
pub struct EventRegistration(pub fn() -> EventType);

inventory::collect!(EventRegistration);
