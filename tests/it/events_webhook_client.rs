//! Webhook subscriptions of our client (SEP-3415) against our server: `Client::subscribe_events` with a
//! `WebhookReceiver` whose router is served over HTTPS (a self-signed certificate, tokio-rustls) on 127.0.0.1, and
//! the server behind a bearer-token layer (webhooks need a principal). Events arrive in order and once each, and a
//! subscription dropped and made again at once goes on from its kept cursor; a short grant is refreshed before it
//! runs out, deliveries go on past it, and a delivery failure is reported once; a removed type ends the stream with
//! -32023, a terminated subscription with its error; a breaking schema change makes it again against the new
//! descriptor (or ends it with -32026 when its arguments no longer fit); dropping the stream unsubscribes; the
//! receiver refuses what does not verify.

use std::net::IpAddr;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use crate::common;
use mcp::axum;
use mcp::client::{
    Client, CursorStore, Delivery, EraChoice, EventItem, EventStream, EventSubscription, WebhookReceiver,
};
use mcp::events::{Emitter, EventType, Events, Webhooks};
use serde_json::{json, Value};

fn restocked() -> EventType {
    EventType::emitted("book.restocked")
        .description("A book is back in stock.")
        .matching(|watch: &Value, book: &Value| watch.get("isbn").is_none_or(|isbn| *isbn == book["isbn"]))
}

/// How many `events/subscribe` requests the server got.
#[derive(Clone, Default)]
struct Subscribes(Arc<AtomicUsize>);

/// Takes `Bearer <name>` as that principal (anything else passes unauthenticated), and counts `events/subscribe`.
async fn bearer(
    axum::extract::State(subscribes): axum::extract::State<Subscribes>,
    mut request: axum::extract::Request,
    next: axum::middleware::Next,
) -> axum::response::Response {
    if request.headers().get("mcp-method").is_some_and(|m| m == "events/subscribe") {
        subscribes.0.fetch_add(1, Ordering::SeqCst);
    }
    let token = request.headers().get("authorization").and_then(|v| v.to_str().ok()).map(str::to_owned);
    if let Some(who) = token.as_deref().and_then(|t| t.strip_prefix("Bearer ")) {
        request.extensions_mut().insert(mcp::AuthInfo::new(who, vec![]));
    }
    next.run(request).await
}

/// What the receiver was sent: each POST's `webhook-id`, `X-MCP-Subscription-Id` and the status it answered; and
/// the path of each other request.
/// While the flag is set, every POST is answered 500 without reaching the receiver.
#[derive(Clone, Default)]
struct Posts(Arc<Mutex<Vec<(String, String, u16)>>>, Arc<Mutex<Vec<String>>>, Arc<std::sync::atomic::AtomicBool>);

impl Posts {
    fn all(&self) -> Vec<(String, String, u16)> {
        self.0.lock().unwrap().clone()
    }

    fn others(&self) -> Vec<String> {
        self.1.lock().unwrap().clone()
    }
}

fn header(request: &axum::extract::Request, name: &str) -> String {
    request.headers().get(name).and_then(|v| v.to_str().ok()).unwrap_or("").to_owned()
}

/// Records each POST; a delivery whose `webhook-id` starts with `refuse-` is answered 500 without reaching the
/// receiver, one whose id starts with `gone-` 410, and the first `gap` envelope of each `webhook-id` reaches it but is answered 500 (its answer lost).
async fn recorded(
    axum::extract::State(posts): axum::extract::State<Posts>,
    request: axum::extract::Request,
    next: axum::middleware::Next,
) -> axum::response::Response {
    if request.method() != axum::http::Method::POST {
        posts.1.lock().unwrap().push(request.uri().path().to_owned());
        return next.run(request).await;
    }
    let (id, subscription) = (header(&request, "webhook-id"), header(&request, "x-mcp-subscription-id"));
    let failed = || axum::response::IntoResponse::into_response(axum::http::StatusCode::INTERNAL_SERVER_ERROR);
    let response = if id.starts_with("refuse-") || posts.2.load(Ordering::SeqCst) {
        failed()
    } else if id.starts_with("gone-") {
        axum::response::IntoResponse::into_response(axum::http::StatusCode::GONE)
    } else if id.starts_with("msg_gap_") && !posts.all().iter().any(|p| p.0 == id) {
        next.run(request).await;
        failed()
    } else {
        next.run(request).await
    };
    posts.0.lock().unwrap().push((id, subscription, response.status().as_u16()));
    response
}

/// A test's world: our server behind the bearer layer, a receiver served over HTTPS, and alice's client.
struct World {
    emitter: Emitter,
    receiver: WebhookReceiver,
    /// The receiver's public URL.
    hook: String,
    /// Its certificate, PEM.
    pem: String,
    posts: Posts,
    subscribes: Subscribes,
    client: Client,
}

impl World {
    /// `webhooks` configured to reach the receiver (loopback allowed, its certificate trusted, quick retries).
    async fn start(webhooks: impl FnOnce(Webhooks) -> Webhooks) -> World {
        World::start_with(|e| e, webhooks, &[]).await
    }

    /// The same, with the events' settings changed by `events`, and the receiver's origin publishing its
    /// well-known document for `published` (unless empty).
    async fn start_with(
        events: impl FnOnce(Events) -> Events,
        webhooks: impl FnOnce(Webhooks) -> Webhooks,
        published: &[&str],
    ) -> World {
        let receiver = WebhookReceiver::new();
        let posts = Posts::default();
        let mut app = receiver.router();
        if !published.is_empty() {
            app = app.merge(WebhookReceiver::well_known(published.iter().copied()));
        }
        let app = app.layer(axum::middleware::from_fn_with_state(posts.clone(), recorded));
        let (port, pem) = common::tls::serve_tls(app, &["127.0.0.1"]).await;
        let settings = Webhooks::new()
            .allow_address(IpAddr::from([127, 0, 0, 1]))
            .root_certificate(pem.clone())
            .retries(3, Duration::from_millis(100));
        let events = events(Events::new()).event(restocked()).webhooks(webhooks(settings));
        let emitter = events.emitter();
        let subscribes = Subscribes::default();
        let server = mcp::Server::builder().extension(events).build().unwrap();
        let app = server
            .http_router(mcp::HttpOptions::new())
            .layer(axum::middleware::from_fn_with_state(subscribes.clone(), bearer));
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}/mcp", listener.local_addr().unwrap());
        tokio::spawn(async move { axum::serve(listener, app).await });
        let client =
            Client::builder().era(EraChoice::V2026).header("authorization", "Bearer alice").http(url).await.unwrap();
        let hook = format!("https://127.0.0.1:{port}/hooks/alice");
        World { emitter, receiver, hook, pem, posts, subscribes, client }
    }

    fn subscription(&self, arguments: Value) -> EventSubscription {
        EventSubscription::new("book.restocked").arguments(arguments).webhook(&self.receiver, &self.hook)
    }

    fn emit(&self, id: &str, isbn: &str) {
        self.emitter.emit_with_id("book.restocked", id, json!({ "isbn": isbn })).unwrap();
    }
}

/// Every cursor saved, in order.
#[derive(Default)]
struct Saved(Mutex<Vec<Option<String>>>);

impl CursorStore for Saved {
    fn load(&self, _key: &str) -> Option<String> {
        self.0.lock().unwrap().last().cloned().flatten()
    }

    fn save(&self, _key: &str, cursor: Option<&str>) {
        self.0.lock().unwrap().push(cursor.map(str::to_owned));
    }
}

impl Saved {
    fn count(&self) -> usize {
        self.0.lock().unwrap().len()
    }
}

/// The next item, within 10 s.
async fn next(stream: &mut EventStream) -> Option<EventItem> {
    tokio::time::timeout(Duration::from_secs(10), stream.next()).await.expect("an item within 10 s")
}

async fn next_event(stream: &mut EventStream) -> String {
    match next(stream).await {
        Some(EventItem::Event(event)) => event.event_id,
        other => panic!("an event, not {other:?} (ended: {:?})", stream.ended()),
    }
}

/// Nothing more comes for a while.
async fn quiet(stream: &mut EventStream, wait: Duration) {
    if let Ok(item) = tokio::time::timeout(wait, stream.next()).await {
        panic!("nothing more, not {item:?}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn events_arrive_in_order_once_each_and_a_new_subscription_goes_on_from_the_kept_cursor() {
    let world = World::start(|w| w).await;
    let saved = Arc::new(Saved::default());
    let sub = world.subscription(json!({ "isbn": "978-1" })).cursors(saved.clone());
    // Webhook delivery asked for without a receiver: refused here, nothing sent, naming what is missing.
    let bare = EventSubscription::new("book.restocked").delivery(Delivery::Webhook);
    match world.client.subscribe_events(bare).await {
        Err(mcp::client::Error::Usage(why)) => assert!(why.contains("EventSubscription::webhook"), "{why}"),
        other => panic!("a usage error, not {:?}", other.map(|s| s.delivery)),
    }
    assert_eq!(world.subscribes.0.load(Ordering::SeqCst), 0);
    let mut stream = world.client.subscribe_events(sub.clone()).await.unwrap();
    assert_eq!(stream.delivery, Delivery::Webhook, "a receiver and a type that offers webhooks: webhook first");
    let posts = world.posts.all();
    assert_eq!(posts.len(), 1, "the challenge, before anything else: {posts:?}");
    assert!(posts[0].0.starts_with("msg_verification_") && posts[0].2 == 200, "{posts:?}");

    // evt-1 twice (the server delivers both), one that the arguments do not match.
    for (id, isbn) in
        [("evt-1", "978-1"), ("evt-2", "978-1"), ("evt-1", "978-1"), ("evt-x", "978-9"), ("evt-3", "978-1")]
    {
        world.emit(id, isbn);
    }
    for expected in ["evt-1", "evt-2", "evt-3"] {
        assert_eq!(next_event(&mut stream).await, expected);
    }
    quiet(&mut stream, Duration::from_millis(300)).await;
    let deliveries: Vec<String> = world.posts.all().into_iter().skip(1).map(|p| p.0).collect();
    assert_eq!(deliveries, ["evt-1", "evt-2", "evt-1", "evt-3"], "the duplicate was delivered, and handed over once");
    assert!(world.posts.all().iter().all(|p| p.2 == 200), "{:?}", world.posts.all());
    let kept = saved.load("").expect("a cursor kept");

    // Dropped and made again at once: the unsubscribe goes first, then a fresh subscription replays from the
    // cursor kept after evt-3 what came meanwhile, and nothing before it.
    drop(stream);
    world.emit("evt-4", "978-1");
    let mut again = world.client.subscribe_events(sub).await.unwrap();
    assert_eq!(next_event(&mut again).await, "evt-4");
    world.emit("evt-5", "978-1");
    assert_eq!(next_event(&mut again).await, "evt-5");
    quiet(&mut again, Duration::from_millis(300)).await;
    assert_ne!(saved.load(""), Some(kept), "the cursor moved on");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_short_grant_is_refreshed_in_time_and_a_delivery_failure_is_reported_once() {
    let ttl = Duration::from_millis(1200);
    let world = World::start(|w| w.min_ttl(ttl)).await;
    let saved = Arc::new(Saved::default());
    let sub = world.subscription(json!({})).cursors(saved.clone()).ttl(ttl).poll_floor(Duration::from_millis(100));
    let started = Instant::now();
    let mut stream = world.client.subscribe_events(sub).await.unwrap();
    world.emit("evt-1", "978-1");
    assert_eq!(next_event(&mut stream).await, "evt-1");

    // Past two grants and a half: refreshed (at 3/4 of each grant, a second before its end at most), so deliveries
    // go on.
    tokio::time::sleep(ttl * 5 / 2).await;
    world.emit("evt-2", "978-1");
    assert_eq!(next_event(&mut stream).await, "evt-2");
    let refreshes = world.subscribes.0.load(Ordering::SeqCst) - 1;
    let grants = started.elapsed().as_millis() / ttl.as_millis();
    assert!(refreshes as u128 > grants, "{refreshes} refreshes in {:?}", started.elapsed());
    let saves = saved.count();
    assert!(saves >= refreshes + 2, "each refresh's cursor is kept too: {saves} saves");

    // A delivery the endpoint keeps refusing is given up after its retries; the next refresh reports it, once.
    world.emit("refuse-1", "978-1");
    let reported = match next(&mut stream).await {
        Some(EventItem::Error(e)) => e,
        other => panic!("the delivery failure, not {other:?}"),
    };
    assert_eq!(reported.code, mcp::ErrorCode::CALLBACK_ENDPOINT_ERROR, "{reported:?}");
    assert_eq!(reported.data.as_ref().unwrap()["reason"], "http_5xx");
    let refused = || world.posts.all().iter().filter(|p| p.0 == "refuse-1").count();
    let deadline = Instant::now() + Duration::from_secs(10);
    while refused() < 3 && Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert_eq!(refused(), 3, "tried three times, then given up");
    tokio::time::sleep(ttl * 2).await;
    world.emit("evt-3", "978-1");
    assert_eq!(next_event(&mut stream).await, "evt-3", "reported once, while refreshes went on");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_removed_type_ends_the_stream_with_not_found() {
    let world = World::start(|w| w).await;
    let mut stream = world.client.subscribe_events(world.subscription(json!({}))).await.unwrap();
    world.emit("evt-1", "978-1");
    assert_eq!(next_event(&mut stream).await, "evt-1");
    assert!(world.emitter.remove_type("book.restocked"));
    assert_eq!(next(&mut stream).await, None, "the stream ends");
    let ended = stream.ended().expect("why it ended");
    assert_eq!(ended.code, mcp::ErrorCode::NOT_FOUND, "{ended:?}");
    let terminated = world.posts.all().iter().filter(|p| p.0.starts_with("msg_terminated_")).count();
    assert_eq!(terminated, 1, "{:?}", world.posts.all());
}

/// A subscription terminated for lost access (SEP-3415's delivery-time authorization) hears a `terminated` envelope
/// with -32024 and is gone. One whose type changed its input schema incompatibly hears -32026 `schema_changed`, and
/// the client subscribes again against the new descriptor (SEP-3415) when its arguments fit it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_terminated_subscription_ends_and_one_whose_type_changed_is_made_again_if_its_arguments_fit() {
    let world = World::start(|w| w).await;
    let arguments = json!({ "isbn": "978-1" });
    let mut stream = world.client.subscribe_events(world.subscription(arguments.clone())).await.unwrap();
    world.emit("evt-1", "978-1");
    assert_eq!(next_event(&mut stream).await, "evt-1");
    let id = world.posts.all()[1].1.clone();
    let revoked = mcp::Error::new(mcp::ErrorCode::FORBIDDEN, "no longer a member of the shop");
    assert!(world.emitter.terminate(&id, revoked).await);
    assert_eq!(next(&mut stream).await, None, "the stream ends");
    let ended = stream.ended().expect("why it ended");
    assert_eq!((ended.code, ended.message.as_str()), (mcp::ErrorCode::FORBIDDEN, "no longer a member of the shop"));
    let terminated = world.posts.all().iter().filter(|p| p.0.starts_with("msg_terminated_")).count();
    assert_eq!(terminated, 1, "{:?}", world.posts.all());
    let unsubscribe = json!({ "name": "book.restocked", "arguments": arguments, "delivery": { "url": world.hook } });
    match world.client.request("events/unsubscribe", unsubscribe).await {
        Err(mcp::client::Error::Rpc(e)) => assert_eq!(e.code, mcp::ErrorCode::NOT_FOUND, "{e:?}"),
        other => panic!("it is gone, not {other:?}"),
    }

    // The type's arguments change incompatibly (`isbn` becomes required): both subscriptions hear -32026
    // `schema_changed`; the one whose arguments fit the new descriptor is made again and goes on, the other ends.
    let mut any = world.client.subscribe_events(world.subscription(json!({}))).await.unwrap();
    let mut one = world.client.subscribe_events(world.subscription(arguments.clone())).await.unwrap();
    #[derive(serde::Deserialize, schemars::JsonSchema)]
    struct Watch {
        #[allow(dead_code)]
        isbn: String,
    }
    world.emitter.add_type(restocked().arguments::<Watch>());
    assert_eq!(next(&mut any).await, None, "the stream ends");
    let ended = any.ended().expect("why it ended");
    assert_eq!(ended.code, mcp::ErrorCode::UNSUPPORTED, "{ended:?}");
    assert_eq!(ended.data, Some(json!({ "feature": "inputSchema", "reason": "schema_changed" })));
    assert!(ended.message.contains("subscribing again failed"), "{}", ended.message);
    match next(&mut one).await {
        Some(EventItem::Resubscribed { descriptor, delivery }) => {
            assert_eq!(delivery, Delivery::Webhook);
            assert_eq!(descriptor.input_schema["required"], json!(["isbn"]), "{descriptor:?}");
        }
        other => panic!("made again, not {other:?} (ended: {:?})", one.ended()),
    }
    world.emit("evt-2", "978-1");
    assert_eq!(next_event(&mut one).await, "evt-2", "the new subscription delivers");
    let terminated = world.posts.all().iter().filter(|p| p.0.starts_with("msg_terminated_")).count();
    assert_eq!(terminated, 3, "{:?}", world.posts.all());
}

/// A `gap` envelope whose answer was lost is posted again under the same `webhook-id` (SEP-3415: `msg_gap_<random>`,
/// kept across retries so that receivers can drop a repeat): the application hears one gap. The gap comes from a
/// buffer of two events that overflowed while a delivery was being retried.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_gap_envelope_posted_again_is_one_gap() {
    let world = World::start_with(|e| e.buffer(Duration::from_secs(3600), 2), |w| w, &[]).await;
    let mut stream = world.client.subscribe_events(world.subscription(json!({}))).await.unwrap();
    world.emit("refuse-1", "978-1");
    let deadline = Instant::now() + Duration::from_secs(10);
    while !world.posts.all().iter().any(|p| p.0 == "refuse-1") {
        assert!(Instant::now() < deadline, "the refused delivery is tried");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    for id in ["evt-a", "evt-b", "evt-c"] {
        world.emit(id, "978-1");
    }
    assert_eq!(next(&mut stream).await, Some(EventItem::Gap), "evt-a was pushed out of the buffer");
    assert_eq!(next_event(&mut stream).await, "evt-b");
    assert_eq!(next_event(&mut stream).await, "evt-c");
    quiet(&mut stream, Duration::from_millis(300)).await;
    let gaps: Vec<_> = world.posts.all().into_iter().filter(|p| p.0.starts_with("msg_gap_")).collect();
    assert_eq!(gaps.len(), 2, "posted again after its answer was lost: {gaps:?}");
    assert_eq!((gaps[0].0.clone(), gaps[0].2, gaps[1].2), (gaps[1].0.clone(), 500, 200));
}

/// SEP-3415's receiver-published document: an origin that serves `/.well-known/mcp-webhook-receiver.json` for
/// `/hooks/` has its endpoints under it verified without a challenge POST, the document read once (it is kept);
/// an endpoint elsewhere on the origin still gets the challenge, and one on an origin without the document too.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_origin_that_publishes_its_receivers_is_verified_without_a_challenge() {
    let world = World::start_with(|e| e, |w| w, &["/hooks/"]).await;
    let challenges = |world: &World| world.posts.all().iter().filter(|p| p.0.starts_with("msg_verification_")).count();
    let mut stream = world.client.subscribe_events(world.subscription(json!({}))).await.unwrap();
    world.emit("evt-1", "978-1");
    assert_eq!(next_event(&mut stream).await, "evt-1");
    assert_eq!(challenges(&world), 0, "{:?}", world.posts.all());
    let elsewhere = world.hook.replace("/hooks/alice", "/elsewhere/alice");
    let sub = EventSubscription::new("book.restocked").webhook(&world.receiver, &elsewhere);
    let mut other = world.client.subscribe_events(sub.arguments(json!({ "isbn": "978-2" }))).await.unwrap();
    world.emit("evt-2", "978-2");
    assert_eq!(next_event(&mut other).await, "evt-2");
    assert_eq!(challenges(&world), 1, "a path the document does not cover: {:?}", world.posts.all());
    let read = world.posts.others();
    assert_eq!(read, vec!["/.well-known/mcp-webhook-receiver.json"], "read once, then kept");

    let unpublished = World::start(|w| w).await;
    let mut stream = unpublished.client.subscribe_events(unpublished.subscription(json!({}))).await.unwrap();
    unpublished.emit("evt-1", "978-1");
    assert_eq!(next_event(&mut stream).await, "evt-1");
    assert_eq!(challenges(&unpublished), 1, "{:?}", unpublished.posts.all());
    assert_eq!(unpublished.posts.others(), vec!["/.well-known/mcp-webhook-receiver.json"], "asked, not found");
}

/// SEP-3415's suspension: an endpoint that fails (here over half of at least 3 attempts) is no longer tried until
/// its client refreshes the subscription; the refresh answers `deliveryStatus.active: false` (reported once to the
/// application) and reactivates it, and the waiting event is delivered.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failing_endpoint_is_suspended_until_its_client_refreshes() {
    let suspending = |w: Webhooks| {
        w.min_ttl(Duration::from_secs(1)).retries(6, Duration::from_millis(100)).suspend_after(
            0.5,
            3,
            Duration::from_secs(60),
        )
    };
    let world = World::start(suspending).await;
    // Refreshed at three quarters of the grant: 3.75 s after subscribing, well after the suspension.
    let sub = world.subscription(json!({})).ttl(Duration::from_secs(5));
    let mut stream = world.client.subscribe_events(sub).await.unwrap();
    world.posts.2.store(true, Ordering::SeqCst);
    world.emit("evt-1", "978-1");
    let tried = || world.posts.all().iter().filter(|p| p.0 == "evt-1").count();
    let deadline = Instant::now() + Duration::from_secs(10);
    while tried() < 3 {
        assert!(Instant::now() < deadline, "tried three times: {:?}", world.posts.all());
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    // Retried after 100, 200, 400 ms were it not suspended.
    tokio::time::sleep(Duration::from_millis(700)).await;
    assert_eq!(tried(), 3, "suspended after three failures: {:?}", world.posts.all());
    world.posts.2.store(false, Ordering::SeqCst);
    // The refresh's answer and the delivery it reactivates race to the stream: either may come first.
    let (mut reported, mut delivered) = (None, None);
    for _ in 0..2 {
        match next(&mut stream).await {
            Some(EventItem::Error(e)) => reported = Some(e),
            Some(EventItem::Event(e)) => delivered = Some(e.event_id),
            other => panic!("the refresh's deliveryStatus and the event, not {other:?}"),
        }
    }
    let reported = reported.expect("the refresh's deliveryStatus is reported");
    assert_eq!(reported.code, mcp::ErrorCode::CALLBACK_ENDPOINT_ERROR, "{reported:?}");
    assert!(reported.message.contains("suspended"), "{}", reported.message);
    assert_eq!(reported.data.as_ref().unwrap()["deliveryStatus"]["active"], false, "{reported:?}");
    assert_eq!(delivered.as_deref(), Some("evt-1"), "delivered once the refresh reactivated it");
    assert_eq!(tried(), 4);
}

/// A `410` refuses one event for good and does not affect the subscription (SEP-3415): refusals of that kind do
/// not count toward a suspension, so an event that fails after three of them is retried as usual.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn events_refused_with_410_do_not_suspend_the_subscription() {
    // Four attempts make a sample: the three 410s and one failure would, were they counted.
    let suspending = |w: Webhooks| w.suspend_after(0.5, 4, Duration::from_secs(60));
    let world = World::start(suspending).await;
    let mut stream = world.client.subscribe_events(world.subscription(json!({}))).await.unwrap();
    for id in ["gone-1", "gone-2", "gone-3", "refuse-1", "evt-1"] {
        world.emit(id, "978-1");
    }
    assert_eq!(next_event(&mut stream).await, "evt-1", "delivered after the others were given up on");
    let tries = |prefix: &str| world.posts.all().iter().filter(|p| p.0.starts_with(prefix)).count();
    assert_eq!(tries("gone-"), 3, "a 410 is not tried again: {:?}", world.posts.all());
    assert_eq!(tries("refuse-1"), 3, "tried three times, not suspended: {:?}", world.posts.all());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dropping_the_stream_unsubscribes() {
    let world = World::start(|w| w).await;
    let arguments = json!({ "isbn": "978-1" });
    let mut stream = world.client.subscribe_events(world.subscription(arguments.clone())).await.unwrap();
    world.emit("evt-1", "978-1");
    assert_eq!(next_event(&mut stream).await, "evt-1");
    drop(stream);
    tokio::time::sleep(Duration::from_millis(500)).await;
    let before = world.posts.all().len();
    world.emit("evt-2", "978-1");
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert_eq!(world.posts.all().len(), before, "nothing is delivered after the stream is dropped");
    let unsubscribe = json!({ "name": "book.restocked", "arguments": arguments, "delivery": { "url": world.hook } });
    match world.client.request("events/unsubscribe", unsubscribe).await {
        Err(mcp::client::Error::Rpc(e)) => assert_eq!(e.code, mcp::ErrorCode::NOT_FOUND, "{e:?}"),
        other => panic!("already unsubscribed, not {other:?}"),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_receiver_refuses_what_does_not_verify() {
    let world = World::start(|w| w).await;
    let mut stream = world.client.subscribe_events(world.subscription(json!({}))).await.unwrap();
    world.emit("evt-1", "978-1");
    assert_eq!(next_event(&mut stream).await, "evt-1");
    let subscription = world.posts.all()[1].1.clone();
    assert!(subscription.starts_with("sub_"), "{:?}", world.posts.all());

    let http = reqwest::Client::builder()
        .add_root_certificate(reqwest::Certificate::from_pem(world.pem.as_bytes()).unwrap())
        .build()
        .unwrap();
    let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_secs();
    let body = json!({ "eventId": "forged", "name": "book.restocked", "timestamp": "x", "data": {} }).to_string();
    let post = |subscription: &str, signature: &str| {
        http.post(&world.hook)
            .header("content-type", "application/json")
            .header("webhook-id", "forged")
            .header("webhook-timestamp", now.to_string())
            .header("webhook-signature", signature.to_owned())
            .header("x-mcp-subscription-id", subscription.to_owned())
            .body(body.clone())
            .send()
    };
    let forged = post(&subscription, "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=").await.unwrap();
    assert_eq!(forged.status(), 401);
    let unknown = post("sub_0000000000000000", "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=").await.unwrap();
    assert_eq!(unknown.status(), 503, "an id it does not know, no subscription waiting for its id: not ready");
    // A sender that writes a large body whole (no `Expect: 100-continue`) reads the 413, not a reset connection.
    let big = http.post(&world.hook).body(vec![b'x'; 4 << 20]).send().await.unwrap();
    assert_eq!(big.status(), 413);
    assert_eq!(http.get(&world.hook).send().await.unwrap().status(), 405);
    quiet(&mut stream, Duration::from_millis(200)).await;
}
