//! What the Events extension serves: `events/list`, `events/poll` and `events/stream` (the last in
//! [`stream`](super::stream)). Each finds the extension's [`Emitter`] in the server's state.

use std::sync::Arc;
use std::time::{Duration, SystemTime};

use serde::Deserialize;
use serde_json::{json, Value};

use super::buffer::{self, Buffer};
use super::def::{Check, Delivery, Source};
use super::{Emitter, Entry, Hub, Subscribed};
use crate::context::{Context, Era};
use crate::handler::method::{MethodDef, MethodHandler};
use crate::handler::tool::Arguments;
use crate::wire::error::{Error, ErrorCode};

/// How many event types one page of `events/list` holds.
const PAGE: usize = 100;

type Reply<'a> = crate::base::future::BoxFuture<'a, Result<Value, Error>>;

/// A subscription as `events/poll` and `events/stream` name it.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct Subscription {
    pub name: String,
    #[serde(default)]
    pub arguments: Option<Value>,
    #[serde(default)]
    pub cursor: Option<String>,
    #[serde(default)]
    pub max_age_ms: Option<u64>,
    #[serde(default)]
    pub max_events: Option<u64>,
}

impl Subscription {
    /// The arguments, `{}` when absent.
    pub fn arguments(&self) -> Value {
        self.arguments.clone().filter(|a| !a.is_null()).unwrap_or_else(|| json!({}))
    }

    /// How old a replayed event may be (`maxAgeMs`); none without a cursor, where nothing is replayed (the SEP:
    /// `maxAgeMs` is ignored when `cursor` is null), so a check function is not asked for an age it must ignore.
    pub fn max_age(&self) -> Option<Duration> {
        self.cursor.as_ref()?;
        self.max_age_ms.map(Duration::from_millis)
    }

    /// The oldest time a replay may reach (`maxAgeMs`); none without a cursor, where nothing is replayed.
    pub fn floor(&self) -> Option<SystemTime> {
        self.max_age().and_then(|age| SystemTime::now().checked_sub(age))
    }
}

/// The hub the extension shares with its emitter.
pub(super) fn hub(ctx: &Context) -> Result<Arc<Hub>, Error> {
    ctx.state::<Emitter>()
        .map(|e| e.hub.clone())
        .ok_or_else(|| Error::internal("the Events extension's emitter is missing from the server's state"))
}

/// The extension is the 2026-07-28 era's: a 2025 session does not have these methods.
pub(super) fn in_2026(ctx: &Context, method: &str) -> Result<(), Error> {
    match ctx.meta().era {
        Era::V2026 => Ok(()),
        Era::V2025 => Err(Error::method_not_found(method)),
    }
}

/// -32023: no event type of that name.
pub(super) fn not_found(name: &str) -> Error {
    Error::new(ErrorCode::NOT_FOUND, format!("no event type `{name}` is offered here; `events/list` lists them"))
        .with_data(json!({ "kind": "event" }))
}

/// Reads a subscription, finds its type, and checks that it offers `mode` and takes the arguments.
pub(super) fn subscription(
    hub: &Hub,
    args: Arguments,
    method: &str,
    mode: Delivery,
) -> Result<(Subscription, Arc<Entry>), Error> {
    subscription_of(hub, Value::Object(args.into_map()), method, mode)
}

/// [`subscription`] of params already read.
pub(super) fn subscription_of(
    hub: &Hub,
    params: Value,
    method: &str,
    mode: Delivery,
) -> Result<(Subscription, Arc<Entry>), Error> {
    let sub: Subscription =
        serde_json::from_value(params).map_err(|e| Error::invalid_params(format!("`{method}`: {e}")))?;
    let entry = hub.entry(&sub.name).ok_or_else(|| not_found(&sub.name))?;
    if !hub.modes(&entry.def).contains(&mode) {
        return Err(Error::new(
            ErrorCode::UNSUPPORTED,
            format!(
                "event type `{}` is not delivered by {}; its `delivery` lists the modes it has",
                sub.name,
                mode.as_str()
            ),
        )
        .with_data(json!({ "feature": "deliveryMode", "value": mode.as_str() })));
    }
    entry.def.check_arguments(&sub.arguments())?;
    Ok((sub, entry))
}

/// How long a poll or a stream waits for its type's buffer to be filled from Redis (a server shared through Redis,
/// just started or given the type) before it is refused.
const SYNC_WAIT: Duration = Duration::from_secs(5);

/// Where a subscription to an emitted type starts: the position after its cursor, and whether events were skipped
/// (a cursor of another process: the buffer it named is gone). No cursor: from the latest event on.
pub(super) async fn start(hub: &Hub, buffer: &Buffer, cursor: Option<&str>) -> Result<(u64, bool), Error> {
    if !buffer.synced(SYNC_WAIT).await {
        return Err(Error::internal(format!(
            "this server keeps its events in Redis, which did not give them within {} s; try again",
            SYNC_WAIT.as_secs()
        )));
    }
    let Some(cursor) = cursor else {
        return Ok((buffer.head(), false));
    };
    match buffer::position(hub.epoch(), cursor) {
        Ok(Some(position)) => Ok((position, false)),
        Ok(None) => Ok((0, true)),
        Err(()) => Err(Error::invalid_params(format!("the cursor {cursor:?} is not one this server gave"))),
    }
}

/// The caller's principal, when it is authenticated.
pub(super) fn principal(ctx: &Context) -> Option<String> {
    ctx.meta().http.as_ref().and_then(|http| http.auth.as_ref()).map(|auth| auth.principal())
}

/// Whether an emitted event goes to subscription `id` with these arguments: one targeted at it, or one its type's
/// match rule takes.
pub(super) fn delivers(entry: &Entry, id: &str, arguments: &Value, event: &buffer::Stored) -> bool {
    if let Some(target) = &event.target {
        return target == id;
    }
    match &entry.def.source {
        Source::Emitted { matches: Some(matches), .. } => matches(arguments, &event.data),
        _ => true,
    }
}

fn list(ctx: &Context, args: Arguments) -> Result<Value, Error> {
    in_2026(ctx, "events/list")?;
    let hub = hub(ctx)?;
    let all = hub.descriptors();
    let from = match args.as_map().get("cursor") {
        None | Some(Value::Null) => 0,
        Some(Value::String(c)) => c
            .parse::<usize>()
            .ok()
            .filter(|n| *n <= all.len())
            .ok_or_else(|| Error::invalid_params(format!("`events/list`: the cursor {c:?} is not one it gave")))?,
        Some(_) => return Err(Error::invalid_params("`events/list`: `cursor` must be a string")),
    };
    let to = (from + PAGE).min(all.len());
    let mut result = json!({ "events": all[from..to] });
    if to < all.len() {
        result["nextCursor"] = json!(to.to_string());
    }
    Ok(result)
}

async fn poll(ctx: &Context, args: Arguments) -> Result<Value, Error> {
    in_2026(ctx, "events/poll")?;
    let hub = hub(ctx)?;
    let (sub, entry) = subscription(&hub, args, "events/poll", Delivery::Poll)?;
    let settings = hub.settings();
    let limit = sub.max_events.map_or(settings.max_events, |n| (n as usize).clamp(1, settings.max_events));
    let next_poll = |d: Option<Duration>| d.unwrap_or(settings.next_poll).as_millis() as u64;
    let arguments = sub.arguments();
    // A poll's id names it to its type's lifecycle hooks, and so to a targeted emit (`Emitter::emit_to` takes an id
    // a hook was told): a type without hooks has no use for it, and it is not derived.
    let id = match entry.def.has_hooks() {
        true => {
            let principal = principal(ctx);
            let id = super::hooks::poll_id(principal.as_deref(), &sub.name, &arguments);
            let (name, delivery) = (sub.name.clone(), Delivery::Poll);
            let polled = Subscribed { id: id.clone(), name, arguments: arguments.clone(), principal, delivery };
            hub.leases.poll(&entry, polled, (settings.poll_lease, settings.reauthorize)).await?;
            id
        }
        false => String::new(),
    };
    match (&entry.def.source, &entry.buffer) {
        (Source::Emitted { .. }, Some(buffer)) => {
            let (after, skipped) = start(&hub, buffer, sub.cursor.as_deref()).await?;
            let read = match sub.cursor {
                None => buffer::Read { start: after, position: after, ..Default::default() },
                Some(_) => {
                    buffer.read(settings.bounds, after, sub.floor(), limit, |e| delivers(&entry, &id, &arguments, e))
                }
            };
            let events: Vec<Value> = read.events.iter().map(|e| stored_json(&entry, &arguments, e, None)).collect();
            Ok(json!({
                "events": events,
                "cursor": hub.cursor(read.position),
                "truncated": skipped || read.truncated,
                "hasMore": read.more,
                "nextPollMs": next_poll(None),
            }))
        }
        (Source::Checked(check), _) => {
            let checked = check(Check {
                context: ctx.clone(),
                arguments,
                cursor: sub.cursor.clone(),
                max_age: sub.max_age(),
                max_events: limit,
            })
            .await?;
            let name = &entry.def.name;
            let events: Vec<Value> = checked.events.iter().map(|o| o.to_json(name, None)).collect();
            Ok(json!({
                "events": events,
                "cursor": checked.cursor,
                "truncated": checked.truncated,
                "hasMore": checked.has_more,
                "nextPollMs": next_poll(checked.next_poll),
            }))
        }
        (Source::Emitted { .. }, None) => Err(Error::internal("an emitted event type without its buffer")),
    }
}

/// An emitted event on the wire; `cursor`: the position after it, for push delivery.
/// Its payload is shaped for the subscription (`arguments`) by the type's transform, if it has one.
pub(super) fn stored_json(entry: &Entry, arguments: &Value, e: &buffer::Stored, cursor: Option<&str>) -> Value {
    let shaped = match &entry.def.source {
        Source::Emitted { transform: Some(shape), .. } => shape(arguments, &e.data),
        _ => None,
    };
    let data = shaped.as_ref().unwrap_or(&e.data);
    super::def::occurrence_json(&e.id, &entry.def.name, e.at, data, cursor.map(Some))
}

fn list_async(ctx: &Context, args: Arguments) -> Reply<'_> {
    Box::pin(std::future::ready(list(ctx, args)))
}

fn poll_async(ctx: &Context, args: Arguments) -> Reply<'_> {
    Box::pin(poll(ctx, args))
}

fn stream_async(ctx: &Context, args: Arguments) -> Reply<'_> {
    Box::pin(super::stream::stream(ctx, args))
}

#[cfg(feature = "webhooks")]
fn subscribe_async(ctx: &Context, args: Arguments) -> Reply<'_> {
    Box::pin(super::webhook::subscribe(ctx, args))
}

#[cfg(feature = "webhooks")]
fn unsubscribe_async(ctx: &Context, args: Arguments) -> Reply<'_> {
    Box::pin(super::webhook::unsubscribe(ctx, args))
}

/// The extension's methods.
pub(super) fn defs() -> Vec<MethodDef> {
    let here = concat!(file!(), ":", line!());
    let defs = vec![
        MethodDef::new("events/list", MethodHandler::Async(list_async), here),
        MethodDef::new("events/poll", MethodHandler::Async(poll_async), here),
        MethodDef::new("events/stream", MethodHandler::Async(stream_async), here).long_lived(),
    ];
    #[cfg(feature = "webhooks")]
    let defs = {
        let mut defs = defs;
        defs.push(MethodDef::new("events/subscribe", MethodHandler::Async(subscribe_async), here));
        defs.push(MethodDef::new("events/unsubscribe", MethodHandler::Async(unsubscribe_async), here));
        defs
    };
    defs
}
