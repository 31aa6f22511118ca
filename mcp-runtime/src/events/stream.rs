//! `events/stream`: push delivery. The request stays open; the server confirms it (`notifications/events/active`),
//! sends each event as it happens (`notifications/events/event`, with the cursor after it), a heartbeat with the
//! cursor when nothing happened for a while, and `notifications/events/active` with `truncated: true` after a gap.
//! It ends when the client closes the HTTP response or cancels the request on stdio (the handler is dropped), or
//! when the server ends the subscription (`notifications/events/terminated`, then the empty result).

use std::time::Duration;

use serde_json::{json, Value};
use tokio::time::{sleep_until, Instant};

use super::def::{Check, CheckFn, Delivery, Source};
use super::hooks::{ends_subscription, Termination};
use super::methods::{delivers, hub, in_2026, principal, start, stored_json, subscription, Subscription};
use super::{Entry, Hub, Settings, Subscribed, SUBSCRIPTION_ID};
use crate::context::Context;
use crate::handler::tool::Arguments;
use crate::wire::error::{Error, ErrorCode};
use crate::wire::jsonrpc::Frame;

/// How many events one read of a buffer, or one check, takes at most before the stream sends them.
const BATCH: usize = 100;

/// The stream's side of the wire: its notifications, each naming the stream.
struct Out<'a> {
    ctx: &'a Context,
    id: Value,
}

impl Out<'_> {
    /// Sends a notification; `false` once the request is over (the stream closed).
    fn send(&self, method: &str, mut params: Value) -> bool {
        params["_meta"] = json!({ SUBSCRIPTION_ID: self.id });
        self.ctx.in_flight().send_if_open(Frame::notification(method, &params))
    }

    fn active(&self, cursor: Option<&str>, truncated: bool) -> bool {
        self.send("notifications/events/active", json!({ "cursor": cursor, "truncated": truncated }))
    }

    fn heartbeat(&self, cursor: Option<&str>) -> bool {
        self.send("notifications/events/heartbeat", json!({ "cursor": cursor }))
    }

    /// Ends the stream with `error` (its type removed or changed incompatibly, or the subscription terminated), then
    /// the empty result.
    fn terminated(&self, error: Error) -> Value {
        self.send("notifications/events/terminated", json!({ "error": error }));
        self.closed()
    }

    /// The empty result that ends a stream the server closes.
    fn closed(&self) -> Value {
        json!({ "_meta": { SUBSCRIPTION_ID: self.id } })
    }
}

pub(super) async fn stream(ctx: &Context, args: Arguments) -> Result<Value, Error> {
    in_2026(ctx, "events/stream")?;
    let hub = hub(ctx)?;
    let (sub, entry) = subscription(&hub, args, "events/stream", Delivery::Push)?;
    let max = hub.settings().max_streams;
    let _slot = hub.open_stream().ok_or_else(|| {
        Error::new(
            ErrorCode::RESOURCE_EXHAUSTED,
            format!("the server holds {max} event streams open already (Events::max_streams); try again later"),
        )
        .with_data(json!({ "limit": "streams", "max": max }))
    })?;
    let out = Out { ctx, id: serde_json::to_value(ctx.request_id()).unwrap_or(Value::Null) };
    let streamed = Subscribed {
        id: format!("push_{}", super::random_id()),
        name: sub.name.clone(),
        arguments: sub.arguments(),
        principal: principal(ctx),
        delivery: Delivery::Push,
    };
    super::hooks::authorized(&entry, &streamed).await?;
    // Its `on_unsubscribe` runs when this handler ends, or is dropped (the client closed the stream).
    let _ending = super::hooks::started(&entry, streamed.clone()).await?;
    let open = hub.open.open(&streamed.id);
    let every = hub.settings().reauthorize;
    let _reauthorizing = super::hooks::reauthorizing(&entry, streamed.clone(), every, open.termination.clone());
    let ends = Ends { entry: &entry, mine: &open.termination };
    match &entry.def.source {
        Source::Emitted { .. } => emitted(&hub, &entry, &sub, &streamed.id, (&out, ends)).await,
        Source::Checked(check) => checked(&hub, &entry, check, sub, (&out, ends)).await,
    }
}

/// What ends a stream from the server's side: its type's end, or its own ([`Emitter::terminate`]).
///
/// [`Emitter::terminate`]: super::Emitter::terminate
#[derive(Clone, Copy)]
struct Ends<'a> {
    entry: &'a Entry,
    mine: &'a Termination,
}

impl Ends<'_> {
    async fn ended(self) -> Error {
        tokio::select! {
            error = self.entry.ended.ended() => error,
            error = self.mine.ended() => error,
        }
    }
}

/// A stream of an emitted type: it follows the type's buffer from the subscription's cursor.
async fn emitted(
    hub: &Hub,
    entry: &Entry,
    sub: &Subscription,
    id: &str,
    (out, ends): (&Out<'_>, Ends<'_>),
) -> Result<Value, Error> {
    let buffer = entry.buffer.as_ref().ok_or_else(|| Error::internal("an emitted event type without its buffer"))?;
    // Watched before the first read, so that an event emitted in between wakes the stream.
    let mut latest = buffer.watch();
    let (after, skipped) = start(hub, buffer, sub.cursor.as_deref()).await?;
    let arguments = sub.arguments();
    let Settings { heartbeat, bounds, .. } = hub.settings();
    let mut read = buffer.read(bounds, after, sub.floor(), BATCH, |e| delivers(entry, id, &arguments, e));
    if !out.active(Some(&hub.cursor(read.start)), skipped || read.truncated) {
        return Ok(out.closed());
    }
    // When the stream has been quiet for a heartbeat: counted from what this stream last sent, not from the last
    // change of the buffer, which events for other subscriptions change too.
    let mut quiet_until = Instant::now() + heartbeat;
    loop {
        for event in &read.events {
            let cursor = hub.cursor(event.position);
            if !out.send("notifications/events/event", stored_json(entry, &arguments, event, Some(&cursor))) {
                return Ok(out.closed());
            }
        }
        if !read.events.is_empty() {
            quiet_until = Instant::now() + heartbeat;
        }
        let position = read.position;
        if !read.more {
            loop {
                // An end first: an event emitted after its type changed is not sent under the old descriptor.
                tokio::select! {
                    biased;
                    error = ends.ended() => return Ok(out.terminated(error)),
                    changed = latest.changed() => {
                        if changed.is_err() {
                            return Ok(out.closed());
                        }
                        break;
                    }
                    () = sleep_until(quiet_until) => {
                        if !out.heartbeat(Some(&hub.cursor(position))) {
                            return Ok(out.closed());
                        }
                        quiet_until = Instant::now() + heartbeat;
                    }
                }
            }
        }
        read = buffer.read(bounds, position, None, BATCH, |e| delivers(entry, id, &arguments, e));
        if read.truncated && !out.active(Some(&hub.cursor(read.start)), true) {
            return Ok(out.closed());
        }
    }
}

/// A stream of a checked type: the check function, called every `next_poll` (at once while it has more).
async fn checked(
    hub: &Hub,
    entry: &Entry,
    check: &CheckFn,
    sub: Subscription,
    (out, ends): (&Out<'_>, Ends<'_>),
) -> Result<Value, Error> {
    let settings = hub.settings();
    let ask = |cursor: Option<String>, max_age: Option<Duration>| {
        check(Check { context: out.ctx.clone(), arguments: sub.arguments(), cursor, max_age, max_events: BATCH })
    };
    // The first check answers the request: an error there is the request's error, and no stream opens.
    let first = ask(sub.cursor.clone(), sub.max_age()).await?;
    let mut cursor = first.cursor.clone();
    if !out.active(cursor.as_deref(), first.truncated) {
        return Ok(out.closed());
    }
    let mut next = Some(first);
    let mut quiet_since = Instant::now();
    loop {
        let wait = match next.take() {
            Some(checked) => {
                let name = &entry.def.name;
                let last = checked.events.len().saturating_sub(1);
                for (i, event) in checked.events.iter().enumerate() {
                    // Each event's cursor: its own, or the batch's for the last one; before that, the position
                    // before the batch (safe to keep: a replay from it sends these again, told apart by id).
                    let at =
                        event
                            .cursor
                            .clone()
                            .or_else(|| if i == last { checked.cursor.clone() } else { cursor.clone() });
                    if !out.send("notifications/events/event", event.to_json(name, Some(at.as_deref()))) {
                        return Ok(out.closed());
                    }
                    quiet_since = Instant::now();
                }
                cursor = checked.cursor.clone();
                if checked.has_more {
                    Duration::ZERO
                } else {
                    checked.next_poll.unwrap_or(settings.next_poll)
                }
            }
            None => settings.next_poll,
        };
        let due = Instant::now() + wait;
        while Instant::now() < due {
            let beat = quiet_since + settings.heartbeat;
            let (until, beating) = if beat <= due { (beat, true) } else { (due, false) };
            tokio::select! {
                biased;
                error = ends.ended() => return Ok(out.terminated(error)),
                () = sleep_until(until) => {}
            }
            if beating {
                if !out.heartbeat(cursor.as_deref()) {
                    return Ok(out.closed());
                }
                quiet_since = Instant::now();
            }
        }
        match ask(cursor.clone(), None).await {
            Ok(checked) => {
                if checked.truncated && !out.active(checked.cursor.as_deref(), true) {
                    return Ok(out.closed());
                }
                next = Some(checked);
            }
            Err(e) if ends_subscription(&e) => {
                out.send("notifications/events/terminated", json!({ "error": e }));
                return Ok(out.closed());
            }
            Err(e) => {
                if !out.send("notifications/events/error", json!({ "error": e })) {
                    return Ok(out.closed());
                }
            }
        }
    }
}
