//! Webhook subscriptions on servers shared through a real `redis-server`: any instance answers `events/subscribe`,
//! refreshes and `events/unsubscribe` for a subscription another delivers; the limits and the verification hold
//! across instances; and a subscription outlives the instance that delivered it, killed in the middle of a burst:
//! another takes it over from its stored watermark, and the receiver (the Standard Webhooks project's Python
//! library checking every POST) gets every event, in order. An event posted just as its instance died may come
//! again, under the same `webhook-id`, which is what the scheme gives a receiver to drop a repeat by.
//!
//! Each instance runs on a Tokio runtime of its own thread; it is killed by shutting that runtime down in the
//! background: its tasks are dropped where they stand (no lease let go, no watermark written after), its
//! connections close, as when a process dies. Calls reach the instances directly (to pick which one answers), and,
//! for the takeover, through a real nginx with the shipped configuration.

use std::time::Duration;

use crate::common;
use crate::events_webhooks::{bearer, code, deliveries, reaching, restocked, Caller, ROTATED, SECRET};

use common::proxy::{Kind, Proxy};
use common::redis::RedisServer;
use common::webhooks::WebhookReceiver;
use mcp::events::{Checked, Emitter, EventType, Events, Occurrence, Webhooks};
use mcp::redis::driver::AsyncCommands;
use serde_json::{json, Value};

/// The reviews upstream, with a history of its own that every instance reads (they run in this process): a
/// review's cursor is how many there were after it. And who each check was made for.
static REVIEWS: std::sync::Mutex<Vec<String>> = std::sync::Mutex::new(Vec::new());
static CHECKED_FOR: std::sync::Mutex<Vec<String>> = std::sync::Mutex::new(Vec::new());

/// `book.reviewed`: a checked type over [`REVIEWS`], from the cursor it is asked from, for the caller it is
/// asked for.
fn reviewed() -> EventType {
    EventType::checked("book.reviewed", |check| async move {
        let auth = check.context.meta().http.as_ref().and_then(|http| http.auth.clone());
        CHECKED_FOR.lock().unwrap().push(auth.map_or_else(|| "nobody".to_owned(), |a| a.subject.clone()));
        let reviews = REVIEWS.lock().unwrap().clone();
        let head = reviews.len();
        let Some(cursor) = check.cursor else { return Ok(Checked::new(vec![], Some(head.to_string()))) };
        let from: usize = cursor.parse().map_err(|_| mcp::Error::invalid_params("not a cursor of ours"))?;
        let events = reviews[from.min(head)..]
            .iter()
            .enumerate()
            .map(|(i, id)| Occurrence::new(id, json!({"isbn": "1"})).with_cursor((from + i + 1).to_string()))
            .collect();
        Ok(Checked::new(events, Some(head.to_string())))
    })
}

/// One instance of the shop on a runtime of its own.
struct Instance {
    url: String,
    authority: String,
    emitter: Emitter,
    /// Ends it: dropped, it is killed; sent `true`, it shuts down first (its shutdown hooks run).
    end: Option<std::sync::mpsc::Sender<bool>>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl Instance {
    /// Starts an instance sharing the Redis at `redis`, delivering webhooks as `webhooks` says.
    fn start(redis: &str, webhooks: Webhooks) -> Instance {
        let (ready, started) = std::sync::mpsc::channel();
        let (end, ended) = std::sync::mpsc::channel::<bool>();
        let redis = redis.to_owned();
        let thread = std::thread::spawn(move || {
            let runtime = tokio::runtime::Builder::new_multi_thread().worker_threads(1).enable_all().build().unwrap();
            let server = runtime.block_on(async move {
                let redis = mcp::redis::Redis::connect(&redis).await.unwrap();
                let events = Events::new().event(restocked()).event(reviewed()).webhooks(webhooks);
                let events = events.next_poll(Duration::from_millis(100));
                let emitter = events.emitter();
                let server = mcp::Server::builder().request_state_key([7; 32]).extension(events).shared(&redis);
                let server = server.build().unwrap();
                let app = server.http_router(mcp::HttpOptions::new()).layer(mcp::axum::middleware::from_fn(bearer));
                let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
                ready.send((listener.local_addr().unwrap().to_string(), emitter)).unwrap();
                tokio::spawn(async move { mcp::axum::serve(listener, app).await });
                server
            });
            // Until it is ended (or the test is over): shut down first if asked, then every task is dropped where
            // it stands.
            if ended.recv() == Ok(true) {
                runtime.block_on(server.shutdown());
            }
            runtime.shutdown_background();
        });
        let (authority, emitter) = started.recv().expect("the instance started");
        Instance { url: format!("http://{authority}/mcp"), authority, emitter, end: Some(end), thread: Some(thread) }
    }

    /// Kills it: nothing more runs, as when its process dies.
    fn kill(&mut self) {
        self.end.take();
    }

    /// Shuts it down (its shutdown hooks run), stops it, and returns once it has stopped.
    fn shut_down(&mut self) {
        if let Some(end) = self.end.take() {
            let _ = end.send(true);
        }
        if let Some(thread) = self.thread.take() {
            thread.join().unwrap();
        }
    }

    fn emit(&self, id: &str, isbn: &str) {
        self.emitter.emit_with_id("book.restocked", id, json!({"isbn": isbn})).unwrap();
    }
}

/// Waits out one renewal of the deliverer's lease (every second), which reads the subscription back from Redis:
/// a refresh or an unsubscribe on another instance has reached the deliverer after it.
async fn a_tick() {
    tokio::time::sleep(Duration::from_millis(1500)).await;
}

/// Subscribes again (a refresh) until the answer's watermark is `cursor`, for up to 2 s: the deliverer writes it
/// just after the receiver accepted the event before it, so a refresh may come between.
async fn refreshed_at(caller: &Caller, hook: &str, secret: &str, arguments: Value, cursor: &Value) -> Value {
    let mut refreshed = Value::Null;
    for _ in 0..40 {
        refreshed = caller.subscribe(hook, secret, arguments.clone(), json!({})).await;
        if refreshed["result"]["cursor"] == *cursor {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    refreshed
}

/// The ids of the deliveries received, in order (a repeat appears twice).
fn delivered(received: &[Value]) -> Vec<String> {
    deliveries(received).iter().map(|d| d["headers"]["webhook-id"].as_str().unwrap().to_owned()).collect()
}

/// Each event once, in the order of its first arrival (a repeat, posted again after a death, left out).
fn first_arrivals(got: &[String]) -> Vec<&String> {
    let mut firsts: Vec<&String> = Vec::new();
    for event in got {
        if !firsts.contains(&event) {
            firsts.push(event);
        }
    }
    firsts
}

fn verifications(received: &[Value]) -> usize {
    received.iter().filter(|r| r["body"]["type"] == "verification").count()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn any_instance_answers_for_a_subscription_one_delivers_and_the_limits_hold_across_them() {
    let redis = RedisServer::start();
    let receiver = WebhookReceiver::start(&[SECRET, ROTATED]);
    let webhooks = reaching(&receiver).max_subscriptions(2, 100);
    let mut shops: Vec<Instance> = (0..3).map(|_| Instance::start(&redis.url(), webhooks.clone())).collect();
    let alice: Vec<Caller> = shops.iter().map(|s| Caller::new(&s.url, Some("alice"))).collect();
    let hook = receiver.url("/hooks/alice");

    let subscribed = alice[0].subscribe(&hook, SECRET, json!({"isbn": "1"}), json!({})).await;
    let id = subscribed["result"]["id"].as_str().unwrap_or_else(|| panic!("{subscribed}")).to_owned();
    // What the other two instances emit is delivered, once each (what one emits reaches Redis by its own writer:
    // two instances' events are in the order Redis had them, so the second waits for the first here).
    shops[1].emit("evt-1", "1");
    receiver.wait_for("evt-1", |r| delivered(r).len() == 1).await;
    shops[2].emit("evt-other", "2");
    shops[2].emit("evt-2", "1");
    let received = receiver.wait_for("evt-1 and evt-2", |r| delivered(r).len() == 2).await;
    assert_eq!(delivered(&received), ["evt-1", "evt-2"]);
    let last_cursor = deliveries(&received)[1]["body"]["cursor"].clone();

    // Refreshed on another instance: the same subscription, its watermark and status as the deliverer wrote them;
    // the rotated secret reaches the deliverer, which signs with both.
    let refreshed = refreshed_at(&alice[2], &hook, ROTATED, json!({"isbn": "1"}), &last_cursor).await;
    let result = &refreshed["result"];
    assert_eq!(result["id"], id.as_str(), "{refreshed}");
    assert_eq!(result["cursor"], last_cursor, "{refreshed}");
    assert!(result["deliveryStatus"]["lastDeliveryAt"].is_string(), "{refreshed}");
    a_tick().await;
    shops[0].emit("evt-3", "1");
    let received = receiver.wait_for("evt-3", |r| delivered(r).len() == 3).await;
    let signature = deliveries(&received)[2]["headers"]["webhook-signature"].as_str().unwrap().to_owned();
    assert_eq!(signature.split(' ').count(), 2, "both secrets sign after a refresh elsewhere: {signature}");

    // The endpoint was verified once, for every instance; the per-principal limit counts every instance's.
    let second = alice[1].subscribe(&hook, SECRET, json!({"isbn": "2"}), json!({})).await;
    assert!(second["result"]["id"].is_string(), "{second}");
    assert_eq!(verifications(&receiver.received().await), 1);
    let third = alice[2].subscribe(&hook, SECRET, json!({"isbn": "3"}), json!({})).await;
    assert_eq!(code(&third), -32025, "{third}");

    // Unsubscribed on another instance than the one delivering: delivery stops there within a tick.
    let unsubscribe = json!({"name": "book.restocked", "arguments": {"isbn": "1"}, "delivery": {"url": hook}});
    let done = alice[1].call("events/unsubscribe", unsubscribe.clone()).await;
    assert!(done["result"].is_object(), "{done}");
    a_tick().await;
    shops[0].emit("evt-4", "1");
    shops[0].emit("evt-5", "2");
    let received = receiver.wait_for("evt-5 to the second subscription", |r| delivered(r).len() == 4).await;
    assert_eq!(delivered(&received), ["evt-1", "evt-2", "evt-3", "evt-5"], "nothing after unsubscribe");
    assert_eq!(code(&alice[2].call("events/unsubscribe", unsubscribe).await), -32023);

    // The instance delivering the second subscription shuts down: it lets go of the lease at once (renewed within
    // the last second, it would otherwise hold for 5 s more), and another instance goes on with it.
    let second = second["result"]["id"].as_str().unwrap();
    let lease = format!("mcp:webhooks:{second}:lease");
    let mut redis = mcp::redis::Redis::connect(&redis.url()).await.unwrap().connection();
    let holder: Option<String> = redis.get(&lease).await.unwrap();
    assert!(holder.is_some(), "the second subscription is delivered by one instance");
    // (Created through instance 1, which holds its lease from the start.)
    let delivering = 1;
    shops[delivering].shut_down();
    let after: Option<String> = redis.get(&lease).await.unwrap();
    assert_ne!(after, holder, "let go at shutdown");
    shops[(delivering + 1) % 3].emit("evt-6", "2");
    let received = receiver.wait_for("evt-6, from the instance that took over", |r| delivered(r).len() == 5).await;
    assert_eq!(delivered(&received)[4], "evt-6");

    // The principal's index expires with its last subscription: no key stays behind for a principal gone.
    let indexes: Vec<String> = redis.keys("mcp:webhooks:principal:*").await.unwrap();
    assert_eq!(indexes.len(), 1, "alice's index: {indexes:?}");
    let ttl: i64 = mcp::redis::driver::cmd("PTTL").arg(&indexes[0]).query_async(&mut redis).await.unwrap();
    assert!(ttl > 0, "alice's index expires with her last subscription: PTTL {ttl}");

    // A checked type is offered by webhook on a shared server too.
    let listed = alice[0].call("events/list", json!({})).await;
    let reviewed = listed["result"]["events"].as_array().unwrap().iter().find(|e| e["name"] == "book.reviewed");
    assert_eq!(reviewed.unwrap()["delivery"], json!(["poll", "push", "webhook"]), "{listed}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_subscription_outlives_the_instance_delivering_it_killed_mid_burst() {
    let redis = RedisServer::start();
    let receiver = WebhookReceiver::start(&[SECRET]);
    let webhooks = reaching(&receiver);
    // The first instance alone takes the subscription, so it is the one delivering it.
    let mut shops = vec![Instance::start(&redis.url(), webhooks.clone())];
    let hook = receiver.url("/hooks/outliving");
    let subscribed = Caller::new(&shops[0].url, Some("alice")).subscribe(&hook, SECRET, json!({}), json!({})).await;
    let id = subscribed["result"]["id"].as_str().unwrap_or_else(|| panic!("{subscribed}")).to_owned();
    shops.extend((0..2).map(|_| Instance::start(&redis.url(), webhooks.clone())));
    let authorities: Vec<String> = shops.iter().map(|s| s.authority.clone()).collect();
    let proxy = Proxy::start(Kind::Nginx, &authorities);
    let through_proxy = Caller::new(&proxy.url, Some("alice"));

    let mut emitted = Vec::new();
    for round in 0..2 {
        // A burst from an instance that lives on, and the deliverer (or, the second time, maybe another) killed
        // in its middle.
        let first = emitted.len();
        for i in 0..20 {
            let event = format!("evt-{round}-{i}");
            shops[2].emit(&event, "1");
            emitted.push(event);
            if i == 5 {
                tokio::time::sleep(Duration::from_millis(30)).await;
                shops[round].kill();
            }
        }
        let received = receiver
            .wait_for_within("the burst, delivered by the instance that took over", Duration::from_secs(20), |r| {
                let got = delivered(r);
                emitted[first..].iter().all(|e| got.contains(e))
            })
            .await;
        let got = delivered(&received);
        // Every event, in order of first arrival; a repeat only of one posted as its instance died.
        let firsts = first_arrivals(&got);
        assert_eq!(firsts, emitted.iter().collect::<Vec<_>>(), "every event, in order: {got:?}");
        assert!(got.len() - emitted.len() <= round + 1, "a repeat per death at most: {got:?}");
        for d in deliveries(&received) {
            assert_eq!(d["verified"], true, "{d}");
            assert_eq!(d["headers"]["x-mcp-subscription-id"], id.as_str());
        }
    }

    // The survivor answers for the subscription through the proxy: the same one, its watermark at the last event.
    let received = receiver.received().await;
    let last = deliveries(&received).last().unwrap()["body"]["cursor"].clone();
    let refreshed = refreshed_at(&through_proxy, &hook, SECRET, json!({}), &last).await;
    assert_eq!(refreshed["result"]["id"], id.as_str(), "{refreshed}");
    assert_eq!(refreshed["result"]["cursor"], last, "{refreshed}");
    assert_eq!(verifications(&received), 1, "taken over, not verified again");
}

/// A checked type's webhook subscription outlives the instance delivering it too: the instance that takes it over
/// calls the check for the caller who subscribed (kept in Redis, without their token), from the watermark, which
/// is the upstream's own cursor, so the reviews written while no instance delivered it arrive, each once.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_checked_subscription_is_taken_over_for_its_caller_from_its_watermark() {
    let redis = RedisServer::start();
    let receiver = WebhookReceiver::start(&[SECRET]);
    let webhooks = reaching(&receiver);
    let mut shops = vec![Instance::start(&redis.url(), webhooks.clone())];
    let hook = receiver.url("/hooks/reviews");
    let carol = Caller::new(&shops[0].url, Some("carol"));
    let subscribed = carol.subscribe(&hook, SECRET, json!({}), json!({"name": "book.reviewed"})).await;
    assert!(subscribed["result"]["id"].is_string(), "{subscribed}");
    shops.extend((0..2).map(|_| Instance::start(&redis.url(), webhooks.clone())));

    REVIEWS.lock().unwrap().extend(["review-1".to_owned(), "review-2".to_owned()]);
    receiver.wait_for("two reviews", |r| delivered(r).len() >= 2).await;
    let checks_before = CHECKED_FOR.lock().unwrap().len();
    shops[0].kill();
    REVIEWS.lock().unwrap().extend(["review-3".to_owned(), "review-4".to_owned()]);
    let received = receiver
        .wait_for_within("the reviews after the kill", Duration::from_secs(20), |r| {
            delivered(r).contains(&"review-4".to_owned())
        })
        .await;
    let got = delivered(&received);
    let firsts = first_arrivals(&got);
    assert_eq!(firsts, ["review-1", "review-2", "review-3", "review-4"], "every review, in order: {got:?}");
    assert!(got.len() <= 5, "a repeat at most, of one posted as its instance died: {got:?}");
    let after: Vec<String> = CHECKED_FOR.lock().unwrap()[checks_before..].to_vec();
    assert!(!after.is_empty() && after.iter().all(|who| who == "carol"), "checked for carol after the kill: {after:?}");
    for d in deliveries(&received) {
        assert_eq!(d["verified"], true, "{d}");
        common::schema::check_webhook_body(&d["body"]).unwrap();
    }
}

/// SEP-3415's termination on a shared server: the instance that learns of a revoked access ends a subscription
/// another instance delivers (through Redis; the deliverer reads it back within a tick), and one nobody delivers
/// (its instance killed) is ended by the instance that claims it next, with only its `terminated` envelope.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_subscription_is_terminated_from_any_instance_even_while_nobody_delivers_it() {
    let redis = RedisServer::start();
    let receiver = WebhookReceiver::start(&[SECRET]);
    let mut shops: Vec<Instance> = (0..2).map(|_| Instance::start(&redis.url(), reaching(&receiver))).collect();
    let hook = receiver.url("/hooks/revoked");
    let alice = Caller::new(&shops[0].url, Some("alice"));
    let subscribed = alice.subscribe(&hook, SECRET, json!({"isbn": "1"}), json!({})).await;
    let first = subscribed["result"]["id"].as_str().unwrap_or_else(|| panic!("{subscribed}")).to_owned();
    let subscribed = alice.subscribe(&hook, SECRET, json!({"isbn": "2"}), json!({})).await;
    let second = subscribed["result"]["id"].as_str().unwrap_or_else(|| panic!("{subscribed}")).to_owned();
    let terminations = |received: &[Value]| -> Vec<(String, Value)> {
        let ended = received.iter().filter(|r| r["body"]["type"] == "terminated");
        ended.map(|r| (r["headers"]["x-mcp-subscription-id"].as_str().unwrap().to_owned(), r["body"].clone())).collect()
    };
    let revoked = || mcp::Error::new(mcp::ErrorCode::FORBIDDEN, "access revoked");

    // Delivered by instance 0 (which created it), terminated through instance 1.
    assert!(shops[1].emitter.terminate(&first, revoked()).await);
    let received = receiver.wait_for("the first's termination", |r| terminations(r).len() == 1).await;
    let (id, body) = &terminations(&received)[0];
    assert_eq!(id, &first);
    assert_eq!(body["error"], json!({"code": -32024, "message": "access revoked"}), "{body}");
    // Removed from Redis just after its envelope was accepted.
    let redis = mcp::redis::Redis::connect(&redis.url()).await.unwrap().connection();
    let gone = |id: String| {
        let mut redis = redis.clone();
        async move {
            for _ in 0..40 {
                let left: Vec<String> = redis.keys(format!("mcp:webhooks:{id}*")).await.unwrap();
                if left.is_empty() {
                    return true;
                }
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
            false
        }
    };
    assert!(gone(first.clone()).await, "the first is gone from Redis");
    assert!(!shops[1].emitter.terminate(&first, revoked()).await, "it is gone");

    // Its deliverer killed, the second is terminated while nobody delivers it: instance 1 claims it when the lease
    // lapses and posts only the envelope.
    shops[0].kill();
    // Dead before the termination: its runtime is gone once its thread ends (else it could still deliver).
    shops[0].thread.take().unwrap().join().unwrap();
    assert!(shops[1].emitter.terminate(&second, revoked()).await);
    shops[1].emit("evt-after", "2");
    let received = receiver.wait_for("the second's termination", |r| terminations(r).len() == 2).await;
    assert_eq!(terminations(&received)[1].0, second);
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert!(delivered(&receiver.received().await).is_empty(), "no event after the termination");
    assert!(gone(second).await, "the second is gone from Redis");
}

/// Suspension across instances: the instance that delivers a subscription suspends it after its endpoint failed
/// (here over half of at least 3 attempts) and writes so to Redis; a refresh that reaches another instance answers
/// `deliveryStatus.active: false`, and the deliverer, reading the refresh back, delivers the waiting event.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_suspended_subscription_is_reactivated_by_a_refresh_on_any_instance() {
    let redis = RedisServer::start();
    let receiver = WebhookReceiver::start(&[SECRET]);
    let webhooks =
        || reaching(&receiver).retries(6, Duration::from_millis(100)).suspend_after(0.5, 3, Duration::from_secs(60));
    let shops: Vec<Instance> = (0..2).map(|_| Instance::start(&redis.url(), webhooks())).collect();
    receiver.control(json!({ "statuses": { "evt-s": [500, 500, 500] } })).await;
    let hook = receiver.url("/hooks/suspended");
    let alice = Caller::new(&shops[0].url, Some("alice"));
    let subscribed = alice.subscribe(&hook, SECRET, json!({"isbn": "1"}), json!({})).await;
    assert!(subscribed["result"]["id"].is_string(), "{subscribed}");
    shops[0].emit("evt-s", "1");
    let tried = |received: &[Value]| delivered(received).iter().filter(|id| *id == "evt-s").count();
    receiver.wait_for("three attempts", |r| tried(r) == 3).await;
    // Retried after 100, 200, 400 ms were it not suspended.
    tokio::time::sleep(Duration::from_millis(900)).await;
    assert_eq!(tried(&receiver.received().await), 3, "suspended after three failures");

    let bob_at_1 = Caller::new(&shops[1].url, Some("alice"));
    let refreshed = bob_at_1.subscribe(&hook, SECRET, json!({"isbn": "1"}), json!({})).await;
    let status = &refreshed["result"]["deliveryStatus"];
    assert_eq!(status["active"], false, "{refreshed}");
    assert_eq!(status["lastError"], "http_5xx", "{refreshed}");
    let received = receiver.wait_for("the event delivered once reactivated", |r| tried(r) == 4).await;
    let last = deliveries(&received).into_iter().rev().find(|d| d["headers"]["webhook-id"] == "evt-s").unwrap();
    assert_eq!(last["status"], 200, "{last}");
    let refreshed = bob_at_1.subscribe(&hook, SECRET, json!({"isbn": "1"}), json!({})).await;
    assert_eq!(refreshed["result"]["deliveryStatus"]["active"], true, "{refreshed}");
}
