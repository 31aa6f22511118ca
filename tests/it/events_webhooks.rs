//! Webhook delivery of the Events extension (SEP-3415, `events/subscribe`), to a real HTTPS receiver that checks
//! every POST with the Standard Webhooks project's own Python library (tests/python/webhook_receiver.py, PyPI
//! `standardwebhooks`): the endpoint verified by its echo of a challenge before anything else; each event signed,
//! with the subscription's id and the event's cursor; retries re-signed, `410` final; refresh, rotation,
//! unsubscribe, expiry, limits, a removed type's `terminated` envelope; and the SEP's refusals (no principal, not
//! `https`, a bad secret, a challenge not echoed, the SSRF guard refusing loopback unless allowed).

use std::net::IpAddr;
use std::time::Duration;

use crate::common;

use common::webhooks::WebhookReceiver;
use mcp::events::{EventType, Events, Webhooks};
use serde_json::{json, Value};

pub(crate) const SECRET: &str = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw";
pub(crate) const ROTATED: &str = "whsec_bm90LXRoZS1zYW1lLXNlY3JldC1hdC1hbGwtMTIzNDU2";

pub(crate) fn restocked() -> EventType {
    EventType::emitted("book.restocked")
        .description("A book is back in stock.")
        .matching(|watch: &Value, book: &Value| watch.get("isbn").is_none_or(|isbn| *isbn == book["isbn"]))
}

/// Takes `Bearer alice` and `Bearer bob` as those principals; anything else passes unauthenticated.
pub(crate) async fn bearer(
    mut request: mcp::axum::extract::Request,
    next: mcp::axum::middleware::Next,
) -> mcp::axum::response::Response {
    let token = request.headers().get("authorization").and_then(|v| v.to_str().ok()).map(str::to_owned);
    if let Some(who) = token.as_deref().and_then(|t| t.strip_prefix("Bearer ")) {
        request.extensions_mut().insert(mcp::AuthInfo::new(who, vec![]));
    }
    next.run(request).await
}

/// A server of `events` on a free port, behind the bearer layer; its endpoint's URL.
async fn serve(events: Events) -> String {
    let server = mcp::Server::builder().extension(events).build().unwrap();
    let app = server.http_router(mcp::HttpOptions::new()).layer(mcp::axum::middleware::from_fn(bearer));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/mcp", listener.local_addr().unwrap());
    tokio::spawn(async move { mcp::axum::serve(listener, app).await });
    url
}

/// Webhook settings that reach `receiver` (loopback allowed, its certificate trusted), with quick retries.
pub(crate) fn reaching(receiver: &WebhookReceiver) -> Webhooks {
    Webhooks::new()
        .allow_address(IpAddr::from([127, 0, 0, 1]))
        .root_certificate(receiver.certificate_pem())
        .retries(3, Duration::from_millis(100))
        .timeout(Duration::from_secs(5))
}

pub(crate) struct Caller {
    http: common::http::Client,
    token: Option<String>,
}

impl Caller {
    pub(crate) fn new(url: &str, token: Option<&str>) -> Caller {
        Caller {
            http: common::http::Client { http: reqwest::Client::new(), url: url.to_owned(), session: None },
            token: token.map(str::to_owned),
        }
    }

    /// Sends a 2026 request; its response, checked against the SEP's shapes.
    pub(crate) async fn call(&self, method: &str, params: Value) -> Value {
        let body = common::v2026::request(1, method, params, json!({}));
        let auth = self.token.as_ref().map(|t| format!("Bearer {t}"));
        let response = self.http.v2026_send_with(&body, &[("authorization", auth.as_deref())]).await;
        let mut body = common::http::Body::of(response).await;
        body.v2026_response(&json!(1), method).await
    }

    pub(crate) async fn subscribe(&self, url: &str, secret: &str, arguments: Value, extra: Value) -> Value {
        let mut params = json!({
            "name": "book.restocked",
            "arguments": arguments,
            "delivery": { "mode": "webhook", "url": url, "secret": secret },
            "cursor": null,
        });
        for (k, v) in extra.as_object().unwrap() {
            params[k] = v.clone();
        }
        self.call("events/subscribe", params).await
    }
}

pub(crate) fn deliveries(received: &[Value]) -> Vec<&Value> {
    received.iter().filter(|r| r["body"].get("type").is_none()).collect()
}

pub(crate) fn code(response: &Value) -> i64 {
    response["error"]["code"].as_i64().unwrap_or_else(|| panic!("an error: {response}"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn events_are_posted_signed_to_a_verified_endpoint_and_retried_until_accepted() {
    let receiver = WebhookReceiver::start(&[SECRET]);
    let events = Events::new().event(restocked()).webhooks(reaching(&receiver));
    let emitter = events.emitter();
    let url = serve(events).await;
    let alice = Caller::new(&url, Some("alice"));

    let listed = alice.call("events/list", json!({})).await;
    assert_eq!(listed["result"]["events"][0]["delivery"], json!(["poll", "push", "webhook"]), "{listed}");

    // The endpoint proves it wants deliveries before the subscription exists.
    let hook = receiver.url("/hooks/alice");
    let subscribed = alice.subscribe(&hook, SECRET, json!({"isbn": "978-1"}), json!({"ttlMs": 600_000})).await;
    let result = &subscribed["result"];
    let id = result["id"].as_str().unwrap_or_else(|| panic!("{subscribed}")).to_owned();
    assert_eq!(result["truncated"], false);
    assert!(result["refreshBefore"].is_string() && result["cursor"].is_string(), "{subscribed}");
    let received = receiver.received().await;
    assert_eq!(received.len(), 1, "{received:?}");
    assert_eq!(received[0]["body"]["type"], "verification");
    assert_eq!((received[0]["verified"].clone(), received[0]["status"].clone()), (json!(true), json!(200)));
    assert_eq!(received[0]["headers"]["x-mcp-subscription-id"], id.as_str());
    assert!(received[0]["headers"]["webhook-id"].as_str().unwrap().starts_with("msg_verification_"));

    // What matches its arguments is POSTed, signed; the first try of one event fails twice and is tried again.
    receiver.control(json!({"statuses": {"evt-2": [500, 503]}})).await;
    emitter.emit_with_id("book.restocked", "evt-1", json!({"isbn": "978-1", "copies": 1})).unwrap();
    emitter.emit_with_id("book.restocked", "evt-x", json!({"isbn": "978-9", "copies": 9})).unwrap();
    emitter.emit_with_id("book.restocked", "evt-2", json!({"isbn": "978-1", "copies": 2})).unwrap();
    let received = receiver
        .wait_for("evt-1, then evt-2 accepted on its third try", |r| {
            deliveries(r).iter().filter(|d| d["status"] == 200).count() == 2
        })
        .await;
    let posted = deliveries(&received);
    let ids: Vec<&str> = posted.iter().map(|d| d["headers"]["webhook-id"].as_str().unwrap()).collect();
    assert_eq!(ids, ["evt-1", "evt-2", "evt-2", "evt-2"], "{received:?}");
    let statuses: Vec<i64> = posted.iter().map(|d| d["status"].as_i64().unwrap()).collect();
    assert_eq!(statuses, [200, 500, 503, 200]);
    for d in &posted {
        assert_eq!(d["verified"], true, "verified by the standardwebhooks library: {d}");
        assert_eq!(d["headers"]["x-mcp-subscription-id"], id.as_str());
        assert_eq!(d["headers"]["content-type"], "application/json");
        common::schema::check_webhook_body(&d["body"]).unwrap();
    }
    assert_eq!(posted[1]["body"], posted[3]["body"], "a retry sends the same body");
    // Each attempt is signed at its own time (seconds: attempts within one second carry the same).
    let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_secs() as i64;
    let stamps: Vec<i64> =
        posted.iter().map(|d| d["headers"]["webhook-timestamp"].as_str().unwrap().parse().unwrap()).collect();
    assert!(stamps.windows(2).all(|w| w[0] <= w[1]) && stamps.iter().all(|t| (now - t).abs() < 30), "{stamps:?}");
    assert_eq!(posted[0]["body"]["data"], json!({"isbn": "978-1", "copies": 1}));
    let after_two = posted[3]["body"]["cursor"].as_str().unwrap().to_owned();

    // A 410 is final: tried once. A refresh reports it, and gives the cursor after everything settled.
    receiver.control(json!({"statuses": {"evt-3": [410]}})).await;
    emitter.emit_with_id("book.restocked", "evt-3", json!({"isbn": "978-1", "copies": 3})).unwrap();
    receiver.wait_for("evt-3 refused", |r| deliveries(r).len() == 5).await;
    tokio::time::sleep(Duration::from_millis(400)).await;
    assert_eq!(deliveries(&receiver.received().await).len(), 5, "no retry after a 410");
    let refreshed = alice.subscribe(&hook, SECRET, json!({"isbn": "978-1"}), json!({})).await;
    let result = &refreshed["result"];
    assert_eq!(result["id"], id.as_str(), "the same key is the same subscription");
    assert_eq!(result["deliveryStatus"]["lastError"], "http_4xx", "{refreshed}");
    assert_ne!(result["cursor"], after_two.as_str(), "the watermark moved past the refused event");
    let verifications = receiver.received().await.iter().filter(|r| r["body"]["type"] == "verification").count();
    assert_eq!(verifications, 1, "a refresh is not verified again");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_rotated_secret_signs_beside_the_old_and_unsubscribe_stops_deliveries() {
    let receiver = WebhookReceiver::start(&[SECRET, ROTATED]);
    let events = Events::new().event(restocked()).webhooks(reaching(&receiver));
    let emitter = events.emitter();
    let url = serve(events).await;
    let alice = Caller::new(&url, Some("alice"));
    let hook = receiver.url("/hooks/rotating");
    alice.subscribe(&hook, SECRET, json!({}), json!({})).await;
    alice.subscribe(&hook, ROTATED, json!({}), json!({})).await;
    emitter.emit_with_id("book.restocked", "evt-r", json!({"isbn": "978-1", "copies": 1})).unwrap();
    let received = receiver.wait_for("evt-r", |r| !deliveries(r).is_empty()).await;
    let signature = deliveries(&received)[0]["headers"]["webhook-signature"].as_str().unwrap().to_owned();
    assert_eq!(signature.split(' ').filter(|s| s.starts_with("v1,")).count(), 2, "both secrets sign: {signature}");

    let unsubscribe = json!({"name": "book.restocked", "arguments": {}, "delivery": {"url": hook}});
    let done = alice.call("events/unsubscribe", unsubscribe.clone()).await;
    assert!(done["result"].is_object(), "{done}");
    emitter.emit_with_id("book.restocked", "evt-after", json!({"isbn": "978-1", "copies": 2})).unwrap();
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert_eq!(deliveries(&receiver.received().await).len(), 1, "nothing after unsubscribe");
    let again = alice.call("events/unsubscribe", unsubscribe).await;
    assert_eq!(code(&again), -32023, "{again}");
    assert_eq!(again["error"]["data"]["kind"], "subscription");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn subscriptions_expire_are_bounded_and_end_with_their_type() {
    let receiver = WebhookReceiver::start(&[SECRET]);
    let webhooks = reaching(&receiver).min_ttl(Duration::from_millis(300)).max_subscriptions(2, 100);
    let events = Events::new().event(restocked()).webhooks(webhooks);
    let emitter = events.emitter();
    let url = serve(events).await;
    let alice = Caller::new(&url, Some("alice"));

    // Not refreshed within its TTL (raised to the 300 ms floor): no more deliveries.
    let short = alice.subscribe(&receiver.url("/short"), SECRET, json!({"isbn": "1"}), json!({"ttlMs": 1})).await;
    assert!(short["result"]["refreshBefore"].is_string(), "{short}");
    tokio::time::sleep(Duration::from_millis(600)).await;
    emitter.emit_with_id("book.restocked", "evt-late", json!({"isbn": "1", "copies": 1})).unwrap();
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert!(deliveries(&receiver.received().await).is_empty(), "an expired subscription gets nothing");

    // Two per principal: a third is refused with the SEP's ResourceExhausted; bob has his own.
    let hook = receiver.url("/hooks");
    alice.subscribe(&hook, SECRET, json!({"isbn": "2"}), json!({})).await;
    alice.subscribe(&hook, SECRET, json!({"isbn": "3"}), json!({})).await;
    let third = alice.subscribe(&hook, SECRET, json!({"isbn": "4"}), json!({})).await;
    assert_eq!(code(&third), -32025, "{third}");
    assert_eq!(third["error"]["data"]["limit"], "subscriptions");
    let bob = Caller::new(&url, Some("bob"));
    let his = bob.subscribe(&hook, SECRET, json!({"isbn": "2"}), json!({})).await;
    assert!(his["result"]["id"].is_string(), "{his}");
    assert_ne!(
        his["result"]["id"],
        alice.subscribe(&hook, SECRET, json!({"isbn": "2"}), json!({})).await["result"]["id"]
    );

    // A removed type ends its subscriptions with a signed `terminated` envelope.
    assert!(emitter.remove_type("book.restocked"));
    let received = receiver
        .wait_for("three terminated envelopes", |r| r.iter().filter(|d| d["body"]["type"] == "terminated").count() == 3)
        .await;
    for ended in received.iter().filter(|d| d["body"]["type"] == "terminated") {
        assert_eq!(ended["verified"], true);
        assert_eq!(ended["body"]["error"]["code"], -32023, "{ended}");
        common::schema::check_webhook_body(&ended["body"]).unwrap();
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn subscribe_refuses_what_the_sep_refuses() {
    let receiver = WebhookReceiver::start(&[SECRET]);
    let events = Events::new().event(restocked()).webhooks(reaching(&receiver));
    let url = serve(events).await;
    let hook = receiver.url("/hooks");

    let anonymous = Caller::new(&url, None).subscribe(&hook, SECRET, json!({}), json!({})).await;
    assert_eq!(code(&anonymous), -32024, "no principal: {anonymous}");
    let alice = Caller::new(&url, Some("alice"));
    let plain = alice.subscribe(&hook.replace("https://", "http://"), SECRET, json!({}), json!({})).await;
    assert_eq!(code(&plain), -32602, "not https: {plain}");
    let weak = alice.subscribe(&hook, "whsec_c2hvcnQ=", json!({}), json!({})).await;
    assert_eq!(code(&weak), -32602, "a secret of 5 bytes: {weak}");

    receiver.control(json!({"challenge": "wrong"})).await;
    let unproven = alice.subscribe(&hook, SECRET, json!({}), json!({})).await;
    assert_eq!(code(&unproven), -32027, "{unproven}");
    assert_eq!(unproven["error"]["data"]["reason"], "challenge_failed");
    receiver.control(json!({"challenge": "status:500"})).await;
    let failing = alice.subscribe(&hook, SECRET, json!({}), json!({})).await;
    assert_eq!(failing["error"]["data"]["reason"], "http_5xx", "{failing}");
    let received = receiver.received().await;
    assert!(received.iter().all(|r| r["body"]["type"] == "verification"), "nothing but challenges: {received:?}");

    // Without the allow-list, loopback is out of bounds: by address, and by a name that resolves to it.
    let guarded = Events::new()
        .event(restocked())
        .webhooks(Webhooks::new().root_certificate(receiver.certificate_pem()).retries(1, Duration::ZERO));
    let guarded = Caller::new(&serve(guarded).await, Some("alice"));
    receiver.control(json!({"challenge": "echo"})).await;
    let before = receiver.received().await.len();
    for target in [hook.clone(), hook.replace("127.0.0.1", "localhost")] {
        let refused = guarded.subscribe(&target, SECRET, json!({}), json!({})).await;
        assert_eq!(code(&refused), -32027, "{target}: {refused}");
        assert_eq!(refused["error"]["data"]["reason"], "connection_refused");
    }
    assert_eq!(receiver.received().await.len(), before, "the guard sent nothing");
}

/// The verification handshakes one host receives are bounded (the SEP: rate-limited per destination host): past its
/// share in a window, a subscription to another endpoint on that host is refused with -32025 until the window ends.
/// A refresh of a verified endpoint sends no handshake and is not refused.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn verification_handshakes_to_one_host_are_rate_limited() {
    let receiver = WebhookReceiver::start(&[SECRET]);
    let webhooks = reaching(&receiver).verification_rate(2, Duration::from_secs(600));
    let url = serve(Events::new().event(restocked()).webhooks(webhooks)).await;
    let alice = Caller::new(&url, Some("alice"));
    for path in ["/first", "/second"] {
        let subscribed = alice.subscribe(&receiver.url(path), SECRET, json!({}), json!({})).await;
        assert!(subscribed["result"]["id"].is_string(), "{subscribed}");
    }
    let third = alice.subscribe(&receiver.url("/third"), SECRET, json!({}), json!({})).await;
    assert_eq!(code(&third), -32025, "{third}");
    assert_eq!(third["error"]["data"], json!({"limit": "verifications", "max": 2}), "{third}");
    let refreshed = alice.subscribe(&receiver.url("/first"), SECRET, json!({}), json!({})).await;
    assert!(refreshed["result"]["id"].is_string(), "a verified endpoint needs no handshake: {refreshed}");
    let received = receiver.received().await;
    let handshakes = received.iter().filter(|r| r["body"]["type"] == "verification").count();
    assert_eq!(handshakes, 2, "the host got two handshakes, no more");
}

/// A body over 256 KiB (SEP-3415's bound, which receivers may enforce with `413`) is not posted: it is given up as a
/// `413` would be, and the events after it are delivered.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_body_over_256_kib_is_not_posted_and_the_next_events_are() {
    let receiver = WebhookReceiver::start(&[SECRET]);
    let events = Events::new().event(restocked()).webhooks(reaching(&receiver));
    let emitter = events.emitter();
    let url = serve(events).await;
    let alice = Caller::new(&url, Some("alice"));
    let subscribed = alice.subscribe(&receiver.url("/hooks/big"), SECRET, json!({}), json!({})).await;
    assert!(subscribed["result"]["id"].is_string(), "{subscribed}");
    let big = "x".repeat(300 * 1024);
    emitter.emit_with_id("book.restocked", "evt-big", json!({"isbn": big, "copies": 1})).unwrap();
    emitter.emit_with_id("book.restocked", "evt-small", json!({"isbn": "978-1", "copies": 1})).unwrap();
    let received = receiver.wait_for("the small event", |r| !deliveries(r).is_empty()).await;
    let ids: Vec<&str> = deliveries(&received).iter().map(|d| d["body"]["eventId"].as_str().unwrap()).collect();
    assert_eq!(ids, ["evt-small"], "the big one was not posted");
}

/// A subscription from a cursor with `maxAgeMs` starts at whichever is later, as the SEP says: the events kept after
/// the cursor but older than the age are skipped (the answer says `truncated`), not posted.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn max_age_skips_older_events_of_a_webhook_replay() {
    let receiver = WebhookReceiver::start(&[SECRET]);
    let events = Events::new().event(restocked()).webhooks(reaching(&receiver));
    let emitter = events.emitter();
    let url = serve(events).await;
    let alice = Caller::new(&url, Some("alice"));
    let now = alice.call("events/poll", json!({"name": "book.restocked", "arguments": {}})).await;
    let cursor = now["result"]["cursor"].clone();
    assert!(cursor.is_string(), "{now}");
    emitter.emit_with_id("book.restocked", "evt-old", json!({"isbn": "978-1", "copies": 1})).unwrap();
    tokio::time::sleep(Duration::from_millis(400)).await;
    emitter.emit_with_id("book.restocked", "evt-new", json!({"isbn": "978-1", "copies": 2})).unwrap();
    let extra = json!({"cursor": cursor, "maxAgeMs": 200});
    let subscribed = alice.subscribe(&receiver.url("/hooks/recent"), SECRET, json!({}), extra).await;
    assert_eq!(subscribed["result"]["truncated"], true, "{subscribed}");
    receiver.wait_for("the recent event", |r| !deliveries(r).is_empty()).await;
    // (Had the older one been posted, it would have come first.)
    let received = receiver.received().await;
    let ids: Vec<&str> = deliveries(&received).iter().map(|d| d["body"]["eventId"].as_str().unwrap()).collect();
    assert_eq!(ids, ["evt-new"], "the older event is skipped");
}

/// SEP-3415's authorization of a webhook subscription after its start: a refresh asks the type's `authorize` hook
/// again and, refused, is answered -32024 and ends the live subscription (a `terminated` envelope); and while it
/// lives, it is asked every `Events::reauthorize`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn access_is_checked_on_each_refresh_and_while_a_subscription_lives() {
    let receiver = WebhookReceiver::start(&[SECRET]);
    let revoked: std::sync::Arc<std::sync::Mutex<Vec<String>>> = Default::default();
    let guarded = |every: Duration| {
        let revoked = revoked.clone();
        let checked = restocked().authorize(move |sub: mcp::events::Subscribed| {
            let revoked = revoked.clone();
            async move {
                let who = sub.principal.unwrap_or_default();
                match revoked.lock().unwrap().contains(&who) {
                    true => Err(mcp::Error::new(mcp::ErrorCode::FORBIDDEN, format!("{who} may no longer watch"))),
                    false => Ok(()),
                }
            }
        });
        Events::new().event(checked).webhooks(reaching(&receiver)).reauthorize(every)
    };
    let terminated = |received: &[Value], hook: &str| -> Vec<Value> {
        let to = |r: &&Value| r["body"]["type"] == "terminated" && r["path"] == hook;
        received.iter().filter(to).map(|r| r["body"]["error"].clone()).collect()
    };

    // Refreshed after the revocation (the periodic check far off): refused, and the subscription ends.
    let alice = Caller::new(&serve(guarded(Duration::from_secs(600))).await, Some("alice"));
    let alice_hook = receiver.url("/hooks/alice");
    let subscribed = alice.subscribe(&alice_hook, SECRET, json!({}), json!({})).await;
    assert!(subscribed["result"]["id"].is_string(), "{subscribed}");
    revoked.lock().unwrap().push("alice".into());
    let refreshed = alice.subscribe(&alice_hook, SECRET, json!({}), json!({})).await;
    assert_eq!(code(&refreshed), -32024, "{refreshed}");
    let received = receiver.wait_for("alice's termination", |r| terminated(r, "/hooks/alice").len() == 1).await;
    assert_eq!(
        terminated(&received, "/hooks/alice")[0],
        json!({"code": -32024, "message": "alice may no longer watch"})
    );

    // Checked every 200 ms while it lives: bob's ends within one check of the revocation.
    let url = serve(guarded(Duration::from_millis(200))).await;
    let bob = Caller::new(&url, Some("bob"));
    let bob_hook = receiver.url("/hooks/bob");
    let subscribed = bob.subscribe(&bob_hook, SECRET, json!({}), json!({})).await;
    assert!(subscribed["result"]["id"].is_string(), "{subscribed}");
    revoked.lock().unwrap().push("bob".into());
    let received = receiver.wait_for("bob's termination", |r| terminated(r, "/hooks/bob").len() == 1).await;
    assert_eq!(terminated(&received, "/hooks/bob")[0]["code"], -32024);
    let again = bob
        .call("events/unsubscribe", json!({"name": "book.restocked", "arguments": {}, "delivery": {"url": bob_hook}}))
        .await;
    assert_eq!(code(&again), -32023, "the subscription is gone: {again}");
}
