//! The endpoint webhooks arrive at: [`WebhookReceiver`], whose router the application serves. Each POST is checked
//! against the secret of the subscription its `X-MCP-Subscription-Id` names (or, for the first deliveries of a
//! subscription whose `events/subscribe` has not answered yet, against the secrets not yet bound to an id) and
//! handed to that subscription's channel.

use std::collections::HashMap;
use std::fmt;
use std::sync::{Arc, Mutex};

use axum::extract::{Request, State};
use axum::http::{header, HeaderMap, Method, StatusCode};
use axum::response::{IntoResponse, Response};
use serde_json::{json, Value};
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use crate::base::body::{read_body, BodyRead};
use crate::base::sync::Unpoisoned;

/// The largest body taken (the SEP's delivery profile: 256 KiB); a larger one is answered `413`, which the server
/// does not retry.
const MAX_BODY: usize = 256 * 1024;
/// How long a delivery's body may take to arrive.
const BODY_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(30);
/// How many deliveries one subscription holds before its loop takes them; past that a delivery is answered `503`,
/// and the server tries it again later.
const BUFFER: usize = 256;
/// Where an origin says which of its paths take MCP webhooks.
const WELL_KNOWN: &str = "/.well-known/mcp-webhook-receiver.json";
/// The header that names the subscription a delivery belongs to.
const SUBSCRIPTION_ID: &str = "x-mcp-subscription-id";

/// The endpoint of webhook delivery (SEP-3415) for this client's subscriptions: the application serves its
/// [`router`](WebhookReceiver::router) under its own `https` origin, and gives it, with the public URL it is served
/// at, to each subscription ([`EventSubscription::webhook`](super::super::EventSubscription::webhook)).
///
/// For each POST it reads the body (at most 256 KiB, else `413`), picks the secret by the `X-MCP-Subscription-Id`
/// header, and verifies the Standard Webhooks signature with it (the `standardwebhooks` crate: `webhook-id`,
/// `webhook-timestamp` not older than 5 minutes, `webhook-signature`); a subscription whose id it does not know yet
/// (its `events/subscribe` is still running: the server's `verification` challenge, or a delivery that overtook
/// the answer) is looked for among the secrets not yet bound to an id, and the one that verifies is bound to it.
/// Then:
///
/// - nothing verifies: `401`; an id it does not know while no subscription waits for its id: `503`, so that the
///   server tries again (the SEP's "not ready yet");
/// - a `verification` envelope: `200` with `{"challenge": ...}` echoed;
/// - an event, a `gap` or a `terminated` envelope: handed to the subscription's bounded channel, and `200` at once;
///   `503` while the subscription's buffer is full (the application reads slower than events come), so the server
///   tries again later; `410` once the subscription has ended.
///
/// Each event is handed to the application once (by `eventId`). Clones share the subscriptions.
///
/// ```no_run
/// # #[allow(dead_code)]
/// # async fn run(client: mcp::client::Client) -> Result<(), mcp::client::Error> {
/// use mcp::client::{EventSubscription, WebhookReceiver};
///
/// let receiver = WebhookReceiver::new();
/// // Served by the application's HTTPS server at https://hooks.example.com/mcp-events (a TLS-terminating proxy in
/// // front of this listener, say).
/// let app = mcp::axum::Router::new().nest_service("/mcp-events", receiver.router());
/// let listener = tokio::net::TcpListener::bind("127.0.0.1:8443").await.unwrap();
/// tokio::spawn(async move { mcp::axum::serve(listener, app).await });
///
/// let sub = EventSubscription::new("book.restocked").webhook(&receiver, "https://hooks.example.com/mcp-events");
/// let mut restocked = client.subscribe_events(sub).await?;
/// while let Some(item) = restocked.next().await {
///     println!("{item:?}");
/// }
/// # Ok(()) }
/// # fn main() {}
/// ```
#[derive(Clone, Default)]
pub struct WebhookReceiver {
    table: Arc<Mutex<Table>>,
}

impl fmt::Debug for WebhookReceiver {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let table = self.table.locked();
        f.debug_struct("WebhookReceiver")
            .field("subscriptions", &table.bound.len())
            .field("subscribing", &table.pending.len())
            .finish()
    }
}

/// The subscriptions of a receiver: by id, and those whose id is not known yet.
#[derive(Default)]
struct Table {
    bound: HashMap<String, Arc<Route>>,
    pending: Vec<Arc<Route>>,
    /// Subscriptions being unsubscribed, by URL and key: cancelled once `events/unsubscribe` answered.
    leaving: HashMap<String, CancellationToken>,
}

/// A verified delivery: its `webhook-id` (the `eventId` of an event; `msg_<type>_<random>` for an envelope, the same
/// on each retry) and its body.
pub(crate) type Delivered = (String, Value);

/// One subscription's place in a receiver: its secret and where its deliveries go.
pub(crate) struct Route {
    secret: standardwebhooks::Webhook,
    tx: mpsc::Sender<Delivered>,
    /// The subscription's id, once known.
    id: Mutex<Option<String>>,
    /// Cancelled when another subscription took its id (the same type, arguments and URL, subscribed again).
    pub(crate) displaced: CancellationToken,
}

impl Route {
    fn verifies(&self, body: &[u8], headers: &HeaderMap) -> bool {
        self.secret.verify(body, headers).is_ok()
    }
}

impl WebhookReceiver {
    /// A receiver with no subscription yet.
    pub fn new() -> WebhookReceiver {
        WebhookReceiver::default()
    }

    /// The service to serve under the application's `https` origin: it takes a POST on any path (mount it where
    /// the URL given to [`EventSubscription::webhook`](super::super::EventSubscription::webhook) points, with
    /// `Router::nest_service` or as the whole app) and answers anything else `405`.
    pub fn router(&self) -> axum::Router {
        axum::Router::new().fallback(receive).with_state(self.clone())
    }

    /// The document by which this origin tells servers that it takes MCP webhooks under `prefixes` (SEP-3415's
    /// `/.well-known/mcp-webhook-receiver.json`, `{"receivers": [...]}`): a server that reads it (ours does, see
    /// `Webhooks::well_known`) verifies a callback URL under one of them without a challenge POST. Merge it into
    /// the router served at the origin's root, beside the receiver's. Each prefix is an absolute path, ending in `/`
    /// to cover what is under a directory. It tells every server and principal that these paths consent to
    /// deliveries; the signatures still decide what is taken.
    ///
    /// ```
    /// use mcp::client::WebhookReceiver;
    ///
    /// let receiver = WebhookReceiver::new();
    /// let app = mcp::axum::Router::new()
    ///     .nest_service("/hooks", receiver.router())
    ///     .merge(WebhookReceiver::well_known(["/hooks/"]));
    /// # drop(app);
    /// ```
    pub fn well_known<P: Into<String>>(prefixes: impl IntoIterator<Item = P>) -> axum::Router {
        let document = json!({ "receivers": prefixes.into_iter().map(Into::into).collect::<Vec<String>>() });
        let body = document.to_string();
        let serve = move || {
            let body = body.clone();
            async move {
                let headers = [(header::CONTENT_TYPE, "application/json"), (header::CACHE_CONTROL, "max-age=300")];
                (headers, body)
            }
        };
        axum::Router::new().route(WELL_KNOWN, axum::routing::get(serve))
    }

    /// Adds a subscription that signs with `secret`, not yet bound to an id; the deliveries it gets come out of the
    /// receiver returned.
    pub(crate) fn register(&self, secret: &str) -> Result<(Arc<Route>, mpsc::Receiver<Delivered>), String> {
        let secret = standardwebhooks::Webhook::new(secret).map_err(|e| format!("not a webhook secret: {e}"))?;
        let (tx, rx) = mpsc::channel(BUFFER);
        let route = Arc::new(Route { secret, tx, id: Mutex::new(None), displaced: CancellationToken::new() });
        self.table.locked().pending.push(route.clone());
        Ok((route, rx))
    }

    /// Routes the deliveries of subscription `id` to `route`; a route that had the id before is displaced.
    pub(crate) fn bind(&self, route: &Arc<Route>, id: &str) {
        let mut table = self.table.locked();
        table.pending.retain(|r| !Arc::ptr_eq(r, route));
        let before = route.id.locked().replace(id.to_owned());
        if let Some(before) = before.filter(|b| b != id) {
            if table.bound.get(&before).is_some_and(|r| Arc::ptr_eq(r, route)) {
                table.bound.remove(&before);
            }
        }
        if let Some(other) = table.bound.insert(id.to_owned(), route.clone()) {
            if !Arc::ptr_eq(&other, route) {
                other.displaced.cancel();
            }
        }
    }

    /// Takes `route` out: its deliveries are no longer taken.
    pub(crate) fn unregister(&self, route: &Arc<Route>) {
        let mut table = self.table.locked();
        table.pending.retain(|r| !Arc::ptr_eq(r, route));
        if let Some(id) = route.id.locked().clone() {
            if table.bound.get(&id).is_some_and(|r| Arc::ptr_eq(r, route)) {
                table.bound.remove(&id);
            }
        }
    }

    /// Notes that the subscription `key` is being unsubscribed: cancel the token returned once it is.
    pub(crate) fn leave(&self, key: String) -> CancellationToken {
        let done = CancellationToken::new();
        let mut table = self.table.locked();
        table.leaving.retain(|_, left| !left.is_cancelled());
        table.leaving.insert(key, done.clone());
        done
    }

    /// Waits until the subscription `key` is unsubscribed, if it is being (at most `patience`): subscribing again
    /// before that would refresh the subscription that the `events/unsubscribe` then removes.
    pub(crate) async fn left(&self, key: &str, patience: std::time::Duration) {
        let leaving = self.table.locked().leaving.get(key).cloned();
        if let Some(left) = leaving {
            let _ = tokio::time::timeout(patience, left.cancelled()).await;
        }
    }

    /// The subscription a delivery for `id` belongs to, whose secret verifies it; else the status to answer.
    fn find(&self, id: &str, body: &[u8], headers: &HeaderMap) -> Result<Arc<Route>, StatusCode> {
        let (bound, pending) = {
            let table = self.table.locked();
            (table.bound.get(id).cloned(), table.pending.clone())
        };
        if let Some(route) = bound.as_ref().filter(|r| r.verifies(body, headers)) {
            return Ok(route.clone());
        }
        if let Some(route) = pending.iter().find(|r| r.verifies(body, headers)) {
            self.bind(route, id);
            return Ok(route.clone());
        }
        if bound.is_none() && pending.is_empty() {
            // Not ready for it (yet): the server tries again later.
            Err(StatusCode::SERVICE_UNAVAILABLE)
        } else {
            Err(StatusCode::UNAUTHORIZED)
        }
    }
}

/// One POST.
async fn receive(State(receiver): State<WebhookReceiver>, request: Request) -> Response {
    if request.method() != Method::POST {
        return (StatusCode::METHOD_NOT_ALLOWED, [(header::ALLOW, "POST")]).into_response();
    }
    let (parts, body) = request.into_parts();
    let declared = parts.headers.get(header::CONTENT_LENGTH).and_then(|v| v.to_str().ok()?.parse::<u64>().ok());
    // Over the limit: refused for good (the server does not retry a `413`). The rest of the body is read and thrown
    // away first, so that a sender still writing reads the answer instead of a reset connection.
    let body = match read_body(body, MAX_BODY, declared, BODY_TIMEOUT).await {
        BodyRead::Whole(body) => body,
        BodyRead::TooLarge => {
            return (StatusCode::PAYLOAD_TOO_LARGE, [(header::CONNECTION, "close")]).into_response();
        }
        BodyRead::TimedOut => return StatusCode::REQUEST_TIMEOUT.into_response(),
        BodyRead::Broken => return StatusCode::BAD_REQUEST.into_response(),
    };
    let Some(id) = parts.headers.get(SUBSCRIPTION_ID).and_then(|v| v.to_str().ok()) else {
        return (StatusCode::BAD_REQUEST, "a webhook delivery names its subscription in X-MCP-Subscription-Id")
            .into_response();
    };
    let route = match receiver.find(id, &body, &parts.headers) {
        Ok(route) => route,
        Err(status) => return status.into_response(),
    };
    let Ok(message) = serde_json::from_slice::<Value>(&body) else {
        return (StatusCode::BAD_REQUEST, "a webhook delivery is a JSON object").into_response();
    };
    if message["type"] == "verification" {
        let Some(challenge) = message["challenge"].as_str() else {
            return (StatusCode::BAD_REQUEST, "a verification envelope carries a challenge").into_response();
        };
        let echo = json!({ "challenge": challenge }).to_string();
        return ([(header::CONTENT_TYPE, "application/json")], echo).into_response();
    }
    // (A verified signature covers the `webhook-id`, which is there.)
    let webhook_id = parts.headers.get("webhook-id").and_then(|v| v.to_str().ok()).unwrap_or_default().to_owned();
    match route.tx.try_send((webhook_id, message)) {
        Ok(()) => StatusCode::OK.into_response(),
        Err(mpsc::error::TrySendError::Full(_)) => StatusCode::SERVICE_UNAVAILABLE.into_response(),
        Err(mpsc::error::TrySendError::Closed(_)) => StatusCode::GONE.into_response(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tower::ServiceExt as _;

    const SECRET: &str = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw";
    const OTHER: &str = "whsec_bm90LXRoZS1zYW1lLXNlY3JldC1hdC1hbGwtMTIzNDU2";

    fn now() -> i64 {
        std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_secs() as i64
    }

    /// A delivery to subscription `id`, signed with `secret` at `timestamp`.
    fn post(id: &str, secret: &str, timestamp: i64, body: &str) -> Request {
        let message = format!("msg_{}", body.len());
        let signature = standardwebhooks::Webhook::new(secret).unwrap().sign(&message, timestamp, body.as_bytes());
        Request::post("/anywhere")
            .header("content-type", "application/json")
            .header("webhook-id", message)
            .header("webhook-timestamp", timestamp.to_string())
            .header("webhook-signature", signature.unwrap())
            .header(SUBSCRIPTION_ID, id)
            .body(axum::body::Body::from(body.to_owned()))
            .unwrap()
    }

    async fn send(receiver: &WebhookReceiver, request: Request) -> (StatusCode, String) {
        let response = receiver.router().oneshot(request).await.unwrap();
        let status = response.status();
        let body = axum::body::to_bytes(response.into_body(), usize::MAX).await.unwrap();
        (status, String::from_utf8_lossy(&body).into_owned())
    }

    #[tokio::test]
    async fn a_challenge_is_echoed_under_a_waiting_secret_which_it_binds() {
        let receiver = WebhookReceiver::new();
        let (_other, _) = receiver.register(OTHER).unwrap();
        let (route, mut rx) = receiver.register(SECRET).unwrap();
        let challenge = r#"{"type":"verification","challenge":"c-123"}"#;
        let (status, body) = send(&receiver, post("sub_1", SECRET, now(), challenge)).await;
        assert_eq!((status, body.as_str()), (StatusCode::OK, r#"{"challenge":"c-123"}"#));
        assert_eq!(route.id.locked().as_deref(), Some("sub_1"));
        assert_eq!(receiver.table.locked().pending.len(), 1, "the other secret still waits");
        // Deliveries for the id are checked with its secret, and handed over; the challenge was not.
        let event = r#"{"eventId":"e1","name":"t","timestamp":"x","data":{}}"#;
        assert_eq!(send(&receiver, post("sub_1", SECRET, now(), event)).await.0, StatusCode::OK);
        assert_eq!(rx.try_recv().unwrap().1["eventId"], "e1");
        assert!(rx.try_recv().is_err());
    }

    #[tokio::test]
    async fn what_does_not_verify_is_refused_and_an_unknown_id_is_not_ready() {
        let receiver = WebhookReceiver::new();
        let event = r#"{"eventId":"e1","name":"t","timestamp":"x","data":{}}"#;
        assert_eq!(send(&receiver, post("sub_1", SECRET, now(), event)).await.0, StatusCode::SERVICE_UNAVAILABLE);
        let (route, _rx) = receiver.register(SECRET).unwrap();
        receiver.bind(&route, "sub_1");
        assert_eq!(send(&receiver, post("sub_1", OTHER, now(), event)).await.0, StatusCode::UNAUTHORIZED);
        let stale = now() - 6 * 60;
        assert_eq!(send(&receiver, post("sub_1", SECRET, stale, event)).await.0, StatusCode::UNAUTHORIZED);
        assert_eq!(send(&receiver, post("sub_2", SECRET, now(), event)).await.0, StatusCode::SERVICE_UNAVAILABLE);
        let get = Request::get("/").body(axum::body::Body::empty()).unwrap();
        assert_eq!(send(&receiver, get).await.0, StatusCode::METHOD_NOT_ALLOWED);
        let big = format!(r#"{{"eventId":"e2","data":"{}"}}"#, "x".repeat(MAX_BODY));
        assert_eq!(send(&receiver, post("sub_1", SECRET, now(), &big)).await.0, StatusCode::PAYLOAD_TOO_LARGE);
        receiver.unregister(&route);
        assert_eq!(send(&receiver, post("sub_1", SECRET, now(), event)).await.0, StatusCode::SERVICE_UNAVAILABLE);
    }

    #[tokio::test]
    async fn a_full_buffer_is_503_an_ended_subscription_410_and_a_second_binding_displaces_the_first() {
        let receiver = WebhookReceiver::new();
        let (route, rx) = receiver.register(SECRET).unwrap();
        receiver.bind(&route, "sub_1");
        let event = r#"{"eventId":"e","name":"t","timestamp":"x","data":{}}"#;
        for _ in 0..BUFFER {
            assert_eq!(send(&receiver, post("sub_1", SECRET, now(), event)).await.0, StatusCode::OK);
        }
        assert_eq!(send(&receiver, post("sub_1", SECRET, now(), event)).await.0, StatusCode::SERVICE_UNAVAILABLE);
        drop(rx);
        assert_eq!(send(&receiver, post("sub_1", SECRET, now(), event)).await.0, StatusCode::GONE);
        let (again, _rx) = receiver.register(OTHER).unwrap();
        receiver.bind(&again, "sub_1");
        assert!(route.displaced.is_cancelled() && !again.displaced.is_cancelled());
        receiver.unregister(&route);
        assert!(receiver.table.locked().bound.get("sub_1").is_some_and(|r| Arc::ptr_eq(r, &again)));
    }
}
