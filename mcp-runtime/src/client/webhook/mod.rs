//! Webhook subscriptions from the client's side (SEP-3415, the `webhooks` feature): a secret of the subscription's
//! own registered with the application's [`WebhookReceiver`], `events/subscribe` with it and the receiver's public
//! URL, and then one task that hands over what the receiver takes (events once each, gaps, the end) while it
//! refreshes the subscription before each grant runs out. Dropping the [`EventStream`](super::EventStream) takes the
//! subscription out of the receiver and sends `events/unsubscribe`.

mod receiver;

use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime};

use serde_json::{json, Value};
use tokio::sync::mpsc;

use super::events::{ends, gap, rpc_error, EventItem, EventSubscription, ReceivedEvent, Seen};
use super::{Client, Error, TransportError, TransportErrorKind};
use crate::base::sync::Unpoisoned;
use crate::wire::error::ErrorCode;
pub use receiver::WebhookReceiver;
use receiver::{Delivered, Route};

/// How long a grant of no expiry (`refreshBefore: null`) waits between refreshes, which then only check on the
/// subscription: one hour.
const NO_EXPIRY_CHECK: Duration = Duration::from_secs(60 * 60);
/// The wait before refreshing a grant whose `refreshBefore` cannot be read.
const UNREADABLE_GRANT: Duration = Duration::from_secs(30);
/// The first wait after a failed refresh, doubled after each next failure up to [`MAX_RETRY`].
const FIRST_RETRY: Duration = Duration::from_secs(1);
const MAX_RETRY: Duration = Duration::from_secs(30);
/// How long a subscription waits for the `events/unsubscribe` of the same one, dropped a moment before.
const LEAVING_PATIENCE: Duration = Duration::from_secs(10);

/// Where a subscription's webhooks go: the receiver that takes them, and the public URL it is served at.
#[derive(Clone, Debug)]
pub(crate) struct Target {
    pub(crate) receiver: WebhookReceiver,
    pub(crate) url: String,
}

/// A running webhook subscription's hold on its receiver and on the server. Dropped with its stream, it leaves the
/// receiver and sends `events/unsubscribe` (unless the subscription already ended).
pub(crate) struct Registration {
    receiver: WebhookReceiver,
    route: Arc<Route>,
    client: Client,
    unsubscribe: Value,
    /// Its URL and key, under which the receiver notes that it is being unsubscribed.
    key: String,
    ended: Arc<Mutex<Option<crate::Error>>>,
}

impl std::fmt::Debug for Registration {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Registration").field("unsubscribe", &self.unsubscribe).finish()
    }
}

impl Drop for Registration {
    fn drop(&mut self) {
        self.receiver.unregister(&self.route);
        if self.ended.locked().is_some() || self.route.displaced.is_cancelled() {
            return;
        }
        // Best effort: the subscription expires at its TTL anyway.
        if let Ok(runtime) = tokio::runtime::Handle::try_current() {
            let call = self.client.request("events/unsubscribe", self.unsubscribe.clone());
            let done = self.receiver.leave(std::mem::take(&mut self.key));
            runtime.spawn(async move {
                if let Err(e) = call.await {
                    tracing::debug!(error = %e, "an events/unsubscribe failed; the subscription expires at its TTL");
                }
                done.cancel();
            });
        }
    }
}

/// Subscribes `sub` by webhook: registers a fresh secret with its receiver and sends `events/subscribe`; then the
/// loop that runs the subscription (from the result: a gap handed over, the cursor kept), and its registration.
pub(super) async fn start(
    client: &Client,
    sub: &EventSubscription,
    tx: mpsc::Sender<EventItem>,
    ended: Arc<Mutex<Option<crate::Error>>>,
) -> Result<(super::event_loops::Running, Registration), Error> {
    let Some(target) = sub.webhook.clone() else {
        return Err(Error::Usage(format!(
            "event type `{}`: webhook delivery needs a receiver and its URL (EventSubscription::webhook)",
            sub.name
        )));
    };
    // The same subscription, dropped a moment ago: its `events/unsubscribe` goes first.
    let key = format!("{}\u{1f}{}", target.url, sub.key());
    target.receiver.left(&key, LEAVING_PATIENCE).await;
    let secret = new_secret()?;
    let (route, inbound) = target.receiver.register(&secret).map_err(Error::Protocol)?;
    let hook = Hook {
        client: client.clone(),
        sub: sub.clone(),
        url: target.url.clone(),
        secret,
        tx,
        ended: ended.clone(),
        cursor: Mutex::new(sub.cursors.load(&sub.key())),
        receiver: target.receiver.clone(),
        route: route.clone(),
        reported: Mutex::new(None),
    };
    let result = match client.request("events/subscribe", hook.params()).await {
        Ok(result) => result,
        Err(e) => {
            target.receiver.unregister(&route);
            return Err(e);
        }
    };
    if let Some(id) = result["id"].as_str() {
        target.receiver.bind(&route, id);
    }
    let registration = Registration {
        receiver: target.receiver,
        route,
        client: client.clone(),
        unsubscribe: json!({ "name": sub.name, "arguments": sub.arguments, "delivery": { "url": target.url } }),
        key,
        ended,
    };
    Ok((Box::pin(hook.run(inbound, result)), registration))
}

/// A new Standard Webhooks secret: `whsec_` and the base64 of 32 bytes from the operating system's generator.
fn new_secret() -> Result<String, Error> {
    use base64::Engine as _;
    let mut bytes = [0u8; 32];
    getrandom::fill(&mut bytes).map_err(|e| {
        let message = format!("no webhook secret: the operating system's random number generator failed: {e}");
        Error::Transport(TransportError::new(TransportErrorKind::Config, message))
    })?;
    Ok(format!("whsec_{}", base64::engine::general_purpose::STANDARD.encode(bytes)))
}

/// A running webhook subscription.
struct Hook {
    client: Client,
    sub: EventSubscription,
    url: String,
    secret: String,
    tx: mpsc::Sender<EventItem>,
    ended: Arc<Mutex<Option<crate::Error>>>,
    /// The cursor kept last, which each refresh sends.
    cursor: Mutex<Option<String>>,
    receiver: WebhookReceiver,
    route: Arc<Route>,
    /// The `deliveryStatus.lastError` reported last, so that a lasting failure is reported once.
    reported: Mutex<Option<String>>,
}

impl Hook {
    /// `events/subscribe`'s params: the subscription, the webhook, the cursor kept last, the TTL asked for.
    fn params(&self) -> Value {
        let cursor = self.cursor.locked().clone();
        let mut params = self.sub.params(cursor.as_deref());
        params["delivery"] = json!({ "mode": "webhook", "url": self.url, "secret": self.secret });
        if let Some(ttl) = self.sub.ttl {
            params["ttlMs"] = json!(ttl.as_millis() as u64);
        }
        params
    }

    /// Keeps a cursor the server gave (`None`: the type cannot replay).
    fn keep(&self, cursor: Option<&str>) {
        *self.cursor.locked() = cursor.map(str::to_owned);
        self.sub.cursors.save(&self.sub.key(), cursor);
    }

    /// Ends the subscription with the server's or the connection's error.
    fn end(&self, error: crate::Error) {
        *self.ended.locked() = Some(error);
    }

    /// Takes the subscribe result `first`; then hands over what the receiver takes, and refreshes, until the
    /// subscription ends (or another took its place).
    async fn run(self, inbound: mpsc::Receiver<Delivered>, first: Value) {
        let wait = self.accept(&first).await;
        let displaced = self.route.displaced.clone();
        tokio::select! {
            () = self.pump(inbound) => {}
            () = self.refresh(wait) => {}
            () = displaced.cancelled() => self.end(crate::Error::internal(
                "another subscription of this client to the same type, arguments and URL replaced this one",
            )),
        }
    }

    /// Hands over the deliveries: each event once (by `eventId`, keeping its cursor), each gap once (by its
    /// `webhook-id`, which a retry keeps: SEP-3415); ends at a `terminated` envelope.
    async fn pump(&self, mut inbound: mpsc::Receiver<Delivered>) {
        let (mut seen, mut envelopes) = (Seen::default(), Seen::default());
        while let Some((webhook_id, body)) = inbound.recv().await {
            let go_on = match body["type"].as_str() {
                None => match ReceivedEvent::from_params(&body) {
                    Some(event) => {
                        let handed =
                            !seen.first(&event.event_id) || self.tx.send(EventItem::Event(event)).await.is_ok();
                        // An absent cursor is a null one (the SEP): the type cannot replay, and nothing is kept
                        // to replay from.
                        self.keep(body["cursor"].as_str());
                        handed
                    }
                    None => {
                        tracing::warn!(%body, "a webhook delivery without an eventId or a name was left out");
                        true
                    }
                },
                // A gap envelope posted again (its first answer lost): one gap.
                Some("gap") if envelopes.first(&webhook_id) => {
                    self.keep(body["cursor"].as_str());
                    self.tx.send(EventItem::Gap).await.is_ok()
                }
                Some("gap") => true,
                Some("terminated") => {
                    let e = serde_json::from_value(body["error"].clone())
                        .unwrap_or_else(|_| crate::Error::internal("the server ended the subscription"));
                    return self.end(e);
                }
                Some(other) => {
                    tracing::debug!(r#type = other, "a webhook envelope of a type this client does not know");
                    true
                }
            };
            if !go_on {
                return;
            }
        }
    }

    /// Subscribes again after `wait`, and again before each grant runs out; a failure is tried again with backoff
    /// (the server's error reported), an error that ends the subscription ends it.
    async fn refresh(&self, mut wait: Duration) {
        let mut retry = FIRST_RETRY;
        loop {
            tokio::time::sleep(wait).await;
            let e = match self.client.request("events/subscribe", self.params()).await {
                Ok(result) => {
                    wait = self.accept(&result).await;
                    retry = FIRST_RETRY;
                    continue;
                }
                Err(e) => e,
            };
            match rpc_error(&e) {
                Some(e) if ends(&e) => return self.end(e),
                Some(e) => {
                    if self.tx.send(EventItem::Error(e)).await.is_err() {
                        return;
                    }
                }
                None if matches!(e, Error::Closed) => return self.end(crate::Error::internal(e.to_string())),
                None => tracing::debug!(error = %e, "a webhook subscription's refresh failed; trying again"),
            }
            wait = retry;
            retry = (retry * 2).min(MAX_RETRY);
        }
    }

    /// A subscribe or refresh result: binds the id, hands a gap over, keeps the cursor, reports a new delivery
    /// failure; the wait before the next refresh.
    async fn accept(&self, result: &Value) -> Duration {
        if let Some(id) = result["id"].as_str() {
            self.receiver.bind(&self.route, id);
        }
        if gap(result) {
            let _ = self.tx.send(EventItem::Gap).await;
        }
        self.keep(result["cursor"].as_str());
        if let Some(failure) = self.failure(&result["deliveryStatus"]) {
            let _ = self.tx.send(EventItem::Error(failure)).await;
        }
        refresh_in(&result["refreshBefore"], SystemTime::now()).max(self.sub.poll_floor)
    }

    /// A `deliveryStatus` whose `lastError` is not the one reported last: the error to report (-32027 with
    /// `data.reason`, `data.deliveryStatus`), once; a status without one clears it, so the next failure is reported.
    fn failure(&self, status: &Value) -> Option<crate::Error> {
        if !status.is_object() {
            return None;
        }
        let last = status["lastError"].as_str();
        let mut reported = self.reported.locked();
        if reported.as_deref() == last {
            return None;
        }
        *reported = last.map(str::to_owned);
        let reason = last?;
        let suspended = if status["active"] == false { "; they were suspended until this refresh" } else { "" };
        let message = format!("the server's deliveries to {} fail ({reason}){suspended}", self.url);
        Some(
            crate::Error::new(ErrorCode::CALLBACK_ENDPOINT_ERROR, message)
                .with_data(json!({ "reason": reason, "deliveryStatus": status })),
        )
    }
}

/// How long to wait before refreshing a grant that ends at `refresh_before` (RFC 3339; `null`: no expiry): three
/// quarters of the time left, and at least 1 s before the end, unless that is less than half of it.
fn refresh_in(refresh_before: &Value, now: SystemTime) -> Duration {
    let Some(at) = refresh_before.as_str() else { return NO_EXPIRY_CHECK };
    let Ok(until) = humantime::parse_rfc3339_weak(at) else {
        tracing::warn!(refresh_before = at, "a refreshBefore that is not an RFC 3339 UTC time; refreshing soon");
        return UNREADABLE_GRANT;
    };
    let left = until.duration_since(now).unwrap_or_default();
    (left * 3 / 4).min(left.saturating_sub(Duration::from_secs(1))).max(left / 2)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn secrets_are_whsec_and_32_random_bytes() {
        use base64::Engine as _;
        let (a, b) = (new_secret().unwrap(), new_secret().unwrap());
        assert_ne!(a, b);
        let bytes = base64::engine::general_purpose::STANDARD.decode(a.strip_prefix("whsec_").unwrap()).unwrap();
        assert_eq!(bytes.len(), 32);
        assert!(standardwebhooks::Webhook::new(&a).is_ok());
    }

    #[test]
    fn a_grant_is_refreshed_at_three_quarters_and_a_second_before_its_end() {
        let now = SystemTime::UNIX_EPOCH + Duration::from_secs(1_800_000_000);
        let at = |left: Duration| json!(humantime::format_rfc3339_millis(now + left).to_string());
        assert_eq!(refresh_in(&at(Duration::from_secs(3600)), now), Duration::from_secs(2700));
        assert_eq!(refresh_in(&at(Duration::from_secs(2)), now), Duration::from_secs(1));
        assert_eq!(refresh_in(&at(Duration::from_millis(3000)), now), Duration::from_millis(2000));
        assert_eq!(refresh_in(&at(Duration::from_millis(600)), now), Duration::from_millis(300));
        assert_eq!(
            refresh_in(&json!(humantime::format_rfc3339(now).to_string()), now + Duration::from_secs(9)),
            Duration::ZERO
        );
        assert_eq!(refresh_in(&Value::Null, now), NO_EXPIRY_CHECK);
        assert_eq!(refresh_in(&json!("soon"), now), UNREADABLE_GRANT);
    }
}
