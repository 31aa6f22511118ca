//! The loops of poll and push subscriptions (`Client::subscribe_events`): a poll loop that drains on `hasMore` and
//! waits `nextPollMs` above a floor, and a push stream opened again from its cursor when it falls silent for twice
//! its heartbeat; both try a failed connection again from their cursor. Above them (and the webhook one), a
//! subscription's [`Run`]: when the server ends it because its type changed, it lists the types again and
//! subscribes against the current descriptor.

use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::Value;
use tokio::sync::mpsc;
use tokio::time::Instant;

use super::events::{choose, ends, gap, rpc_error, EventItem, EventSubscription, ReceivedEvent, Seen};
use super::listen::{route_key, Feed, Notification};
use super::{Client, Delivery, Error};
use crate::base::sync::Unpoisoned;
use crate::ErrorCode;

/// A subscription's delivery loop, as [`Run::begin`] starts it.
pub(super) type Running = Pin<Box<dyn Future<Output = ()> + Send>>;

/// A subscription as the application asked for it, and what its loops share: where items go, why it ended, and a
/// webhook subscription's hold on its receiver (taken by the [`EventStream`](super::EventStream) when it is
/// dropped).
pub(super) struct Run {
    pub(super) client: Client,
    pub(super) sub: EventSubscription,
    pub(super) tx: mpsc::Sender<EventItem>,
    pub(super) ended: Arc<Mutex<Option<crate::Error>>>,
    #[cfg(feature = "webhooks")]
    pub(super) webhook: Arc<Mutex<Option<super::webhook::Registration>>>,
}

impl Run {
    pub(super) fn new(client: Client, sub: EventSubscription, tx: mpsc::Sender<EventItem>) -> Run {
        Run {
            client,
            sub,
            tx,
            ended: Arc::default(),
            #[cfg(feature = "webhooks")]
            webhook: Arc::default(),
        }
    }

    /// Subscribes in `delivery`'s mode from the kept cursor: the first poll, the stream's confirmation or the
    /// `events/subscribe` result comes first, so that a refusal is an error here; then the loop that goes on.
    pub(super) async fn begin(&self, delivery: Delivery) -> Result<Running, Error> {
        let cursor = self.sub.cursors.load(&self.sub.key());
        let looped = Loop {
            client: self.client.clone(),
            sub: self.sub.clone(),
            tx: self.tx.clone(),
            seen: Seen::default(),
            cursor: cursor.clone(),
            ended: self.ended.clone(),
        };
        Ok(match delivery {
            Delivery::Poll => {
                let first = self.client.request("events/poll", self.sub.params(cursor.as_deref())).await?;
                Box::pin(looped.poll(Some(first)))
            }
            Delivery::Push => {
                let opened = OpenStream::open(&self.client, &self.sub, cursor.as_deref()).await?;
                Box::pin(looped.push(Some(opened)))
            }
            #[cfg(feature = "webhooks")]
            Delivery::Webhook => {
                let (running, registration) =
                    super::webhook::start(&self.client, &self.sub, self.tx.clone(), self.ended.clone()).await?;
                *self.webhook.locked() = Some(registration);
                running
            }
            #[cfg(not(feature = "webhooks"))]
            Delivery::Webhook => {
                return Err(Error::Usage(format!(
                    "event type `{}`: webhook delivery needs the `webhooks` feature and a WebhookReceiver the \
                     application serves (EventSubscription::webhook)",
                    self.sub.name
                )));
            }
        })
    }

    /// Runs the subscription until it ends. When the server ends it because its type changed (-32026
    /// `schema_changed`) or is gone (-32023, which a type removed and added again also gives), SEP-3415 has the
    /// client list the types again and subscribe against the current descriptor: so it does, from the kept cursor,
    /// and hands [`EventItem::Resubscribed`] over. A type no longer listed, or a new subscription refused (the
    /// arguments no longer fit), ends it with the server's error. Renewals come at most one per poll floor.
    pub(super) async fn follow(self, mut running: Running) {
        let mut renewed: Option<Instant> = None;
        loop {
            running.await;
            let Some(error) = self.ended.locked().clone() else { return };
            if !renewable(&error) {
                return;
            }
            if let Some(at) = renewed {
                tokio::time::sleep_until(at + self.sub.poll_floor).await;
            }
            renewed = Some(Instant::now());
            // The server ended it: it leaves its receiver, with no `events/unsubscribe` (which would end the new one).
            #[cfg(feature = "webhooks")]
            drop(self.webhook.locked().take());
            match self.renew().await {
                Ok((next, item)) => {
                    *self.ended.locked() = None;
                    if self.tx.send(item).await.is_err() {
                        return;
                    }
                    running = next;
                }
                Err(None) => return,
                Err(Some(why)) => {
                    let mut ended = error;
                    ended.message = format!("{}; subscribing again failed: {why}", ended.message);
                    *self.ended.locked() = Some(ended);
                    return;
                }
            }
        }
    }

    /// Lists the types and subscribes again against the current descriptor: the new loop and the item that says
    /// so; `Err(None)` if the type is no longer listed, else why it could not.
    async fn renew(&self) -> Result<(Running, EventItem), Option<String>> {
        let types = self.client.list_events().await.map_err(|e| Some(format!("listing the event types: {e}")))?;
        let descriptor = types.iter().find(|t| t.name == self.sub.name).cloned().ok_or(None)?;
        let delivery = choose(&self.sub, &types).map_err(|e| Some(e.to_string()))?;
        let running = self.begin(delivery).await.map_err(|e| Some(e.to_string()))?;
        Ok((running, EventItem::Resubscribed { descriptor, delivery }))
    }
}

/// Whether the server's termination asks for a new subscription against the type's current descriptor: a type
/// changed incompatibly (-32026 with `data.reason: "schema_changed"`) or gone (-32023 with `data.kind: "event"`).
fn renewable(e: &crate::Error) -> bool {
    let data = e.data.as_ref();
    let field = |name: &str| data.and_then(|d| d.get(name)).and_then(Value::as_str);
    (e.code == ErrorCode::UNSUPPORTED && field("reason") == Some("schema_changed"))
        || (e.code == ErrorCode::NOT_FOUND && field("kind") == Some("event"))
}

/// A subscription's loop: where it hands items over, its cursor, and what it saw.
struct Loop {
    client: Client,
    sub: EventSubscription,
    tx: mpsc::Sender<EventItem>,
    seen: Seen,
    cursor: Option<String>,
    ended: Arc<Mutex<Option<crate::Error>>>,
}

impl Loop {
    /// Keeps the cursor the server gave.
    fn keep(&mut self, cursor: Option<&str>) {
        self.cursor = cursor.map(str::to_owned);
        self.sub.cursors.save(&self.sub.key(), cursor);
    }

    /// Hands an event over unless it was already; `false` once the application dropped the stream.
    async fn event(&mut self, params: &Value) -> bool {
        match ReceivedEvent::from_params(params) {
            Some(event) if self.seen.first(&event.event_id) => self.tx.send(EventItem::Event(event)).await.is_ok(),
            Some(_) => true,
            None => {
                tracing::warn!(%params, "an event without an eventId or a name was left out");
                true
            }
        }
    }

    /// Ends the subscription with the server's or the connection's error.
    fn end(&self, error: crate::Error) {
        *self.ended.locked() = Some(error);
    }

    async fn poll(mut self, mut first: Option<Value>) {
        loop {
            let answer = match first.take() {
                Some(answer) => Ok(answer),
                None => self.client.request("events/poll", self.sub.params(self.cursor.as_deref())).await,
            };
            let result = match answer {
                Ok(result) => result,
                Err(e) => match rpc_error(&e) {
                    Some(e) if ends(&e) => return self.end(e),
                    Some(e) => {
                        if self.tx.send(EventItem::Error(e)).await.is_err() {
                            return;
                        }
                        tokio::time::sleep(self.sub.poll_floor).await;
                        continue;
                    }
                    // The client was closed: nothing more can come.
                    None if matches!(e, Error::Closed) => return self.end(crate::Error::internal(e.to_string())),
                    // The connection failed (a server restarting, a network blip): ask again after the floor, from
                    // the same cursor.
                    None => {
                        tracing::debug!(error = %e, "an events/poll failed; polling again");
                        tokio::time::sleep(self.sub.poll_floor).await;
                        continue;
                    }
                },
            };
            if gap(&result) && self.tx.send(EventItem::Gap).await.is_err() {
                return;
            }
            for event in result["events"].as_array().into_iter().flatten() {
                if !self.event(event).await {
                    return;
                }
            }
            self.keep(result["cursor"].as_str());
            if result["hasMore"] != true {
                let asked = result["nextPollMs"].as_u64().map(Duration::from_millis).unwrap_or(self.sub.poll_floor);
                tokio::time::sleep(asked.max(self.sub.poll_floor)).await;
            }
        }
    }

    /// Holds the stream `open` (with its confirmation's params), or opens one, until it ends; opens it again from
    /// the cursor when it falls silent.
    async fn push(mut self, mut open: Option<(OpenStream, Value)>) {
        loop {
            let opened = match open.take() {
                Some(opened) => Ok(opened),
                None => OpenStream::open(&self.client, &self.sub, self.cursor.as_deref()).await,
            };
            let mut stream = match opened {
                Ok((stream, active)) => {
                    if !self.active(&active).await {
                        return;
                    }
                    stream
                }
                Err(e) => match rpc_error(&e) {
                    Some(e) if ends(&e) => return self.end(e),
                    None if matches!(e, Error::Closed) => return self.end(crate::Error::internal(e.to_string())),
                    // A failure to recover from (the connection, the server's own): open it again after a while.
                    _ => {
                        tokio::time::sleep(self.sub.poll_floor).await;
                        continue;
                    }
                },
            };
            // Twice the heartbeat interval without a word: the stream is dead; open it again from the cursor.
            while let Ok(Some(note)) = tokio::time::timeout(self.sub.heartbeat * 2, stream.rx.recv()).await {
                let params = &note.params;
                let go_on = match note.method.as_str() {
                    "notifications/events/event" => {
                        let handed = self.event(params).await;
                        self.keep(params["cursor"].as_str());
                        handed
                    }
                    "notifications/events/heartbeat" => {
                        self.keep(params["cursor"].as_str());
                        true
                    }
                    "notifications/events/active" => self.active(params).await,
                    "notifications/events/error" => match serde_json::from_value(params["error"].clone()) {
                        Ok(e) => self.tx.send(EventItem::Error(e)).await.is_ok(),
                        Err(_) => true,
                    },
                    "notifications/events/terminated" => {
                        let e = serde_json::from_value(params["error"].clone())
                            .unwrap_or_else(|_| crate::Error::internal("the server ended the subscription"));
                        return self.end(e);
                    }
                    _ => true,
                };
                if !go_on {
                    return;
                }
            }
            drop(stream);
            tokio::time::sleep(self.sub.poll_floor.min(Duration::from_millis(250))).await;
        }
    }

    /// A stream's confirmation (or a gap in it): keeps its cursor; `false` once the application dropped the stream.
    async fn active(&mut self, params: &Value) -> bool {
        self.keep(params["cursor"].as_str());
        !gap(params) || self.tx.send(EventItem::Gap).await.is_ok()
    }
}

/// An `events/stream` request open on the server, and its notifications. Dropping it cancels the request.
pub(super) struct OpenStream {
    rx: mpsc::Receiver<Notification>,
    key: u64,
    client: Client,
    request: tokio::task::JoinHandle<()>,
}

impl OpenStream {
    /// Opens a stream from `cursor` and waits for its confirmation (whose params it returns) or its error.
    pub(super) async fn open(
        client: &Client,
        sub: &EventSubscription,
        cursor: Option<&str>,
    ) -> Result<(OpenStream, Value), Error> {
        let (tx, rx) = mpsc::channel(super::events::BUFFER);
        let key = route_key();
        let id = client.inner.next_id();
        client.inner.routes().insert(key, Feed::tagged(serde_json::to_value(&id).unwrap_or_default(), tx));
        let call = client.request("events/stream", sub.params(cursor)).with_id(id);
        let (answered, answer) = tokio::sync::oneshot::channel();
        let inner = Arc::downgrade(&client.inner);
        let request = tokio::spawn(async move {
            let result = call.await;
            // The stream ended (the server's final result, or an error): its route goes, which ends `rx`.
            if let Some(inner) = inner.upgrade() {
                inner.routes().remove(&key);
            }
            let _ = answered.send(result);
        });
        let mut stream = OpenStream { rx, key, client: client.clone(), request };
        match stream.rx.recv().await {
            Some(note) if note.method == "notifications/events/active" => Ok((stream, note.params)),
            Some(other) => {
                Err(Error::Protocol(format!("an event stream must start with its confirmation, not {}", other.method)))
            }
            None => Err(match answer.await {
                Ok(Err(e)) => e,
                _ => Error::Closed,
            }),
        }
    }
}

impl Drop for OpenStream {
    fn drop(&mut self) {
        self.client.inner.routes().remove(&self.key);
        self.request.abort(); // drops the call: the request is cancelled
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn only_a_type_changed_or_gone_is_subscribed_again() {
        let error = |code, data| crate::Error::new(code, "ended").with_data(data);
        assert!(renewable(&error(
            ErrorCode::UNSUPPORTED,
            json!({ "feature": "inputSchema", "reason": "schema_changed" })
        )));
        assert!(renewable(&error(ErrorCode::NOT_FOUND, json!({ "kind": "event" }))));
        assert!(!renewable(&error(ErrorCode::UNSUPPORTED, json!({ "feature": "deliveryMode", "value": "push" }))));
        assert!(!renewable(&error(ErrorCode::NOT_FOUND, json!({ "kind": "subscription" }))));
        assert!(!renewable(&error(ErrorCode::FORBIDDEN, json!({ "reason": "schema_changed" }))));
        assert!(!renewable(&crate::Error::new(ErrorCode::UNSUPPORTED, "no data")));
    }
}
