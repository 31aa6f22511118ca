//! Subscription lifecycle hooks (SEP-3415's server guidance): `on_subscribe` when a push stream opens or a poll is
//! first seen (and its error refusing the subscription), `on_unsubscribe` when the stream closes or the poll lease
//! lapses, `Emitter::emit_to` reaching the one subscription it names, and `Emitter::terminate` ending it; a type
//! replaced with a breaking schema ending its subscriptions.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use mcp::client::{Client, Delivery, EraChoice, EventItem, EventSubscription};
use mcp::events::{EventType, Events, Subscribed};
use serde_json::json;

/// What the hooks heard: `+id` on subscribe, `-id` on unsubscribe.
type Heard = Arc<Mutex<Vec<(String, Subscribed)>>>;

fn channel_messages(heard: &Heard) -> EventType {
    let (on, off) = (heard.clone(), heard.clone());
    EventType::emitted("channel.message")
        .on_subscribe(move |sub: Subscribed| {
            let on = on.clone();
            async move {
                if sub.arguments["channel"] == "secret" {
                    return Err(mcp::Error::new(mcp::ErrorCode::FORBIDDEN, "not a member of #secret"));
                }
                on.lock().unwrap().push(("+".into(), sub));
                Ok(())
            }
        })
        .on_unsubscribe(move |sub: Subscribed| {
            let off = off.clone();
            async move { off.lock().unwrap().push(("-".into(), sub)) }
        })
}

/// A client of a server of `events`, in process.
async fn client_of(events: Events) -> Client {
    let server = mcp::Server::builder().extension(events).build().unwrap();
    Client::builder().era(EraChoice::V2026).in_process(server).await.unwrap()
}

/// A push subscription to `channel.message` on `channel`.
async fn push(client: &Client, channel: &str) -> Result<mcp::client::EventStream, mcp::client::Error> {
    let sub = EventSubscription::new("channel.message").arguments(json!({"channel": channel})).delivery(Delivery::Push);
    client.subscribe_events(sub).await
}

async fn next(stream: &mut mcp::client::EventStream) -> String {
    match tokio::time::timeout(Duration::from_secs(5), stream.next()).await.expect("in time") {
        Some(EventItem::Event(e)) => e.data["text"].as_str().unwrap().to_owned(),
        other => panic!("{other:?}"),
    }
}

async fn until(what: &str, check: impl Fn() -> bool) {
    for _ in 0..100 {
        if check() {
            return;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!("not within 5 s: {what}");
}

#[tokio::test]
async fn push_streams_are_announced_targeted_and_ended() {
    let heard: Heard = Arc::default();
    let events = Events::new().event(channel_messages(&heard));
    let emitter = events.emitter();
    let client = client_of(events).await;
    let open = |channel: &'static str| push(&client, channel);
    let mut general = open("general").await.unwrap();
    let mut random = open("random").await.unwrap();
    until("both streams announced", || heard.lock().unwrap().len() == 2).await;
    let subs: Vec<Subscribed> = heard.lock().unwrap().iter().map(|(_, s)| s.clone()).collect();
    assert!(subs.iter().all(|s| s.delivery == Delivery::Push && s.id.starts_with("push_")), "{subs:?}");
    let general_id = subs.iter().find(|s| s.arguments["channel"] == "general").unwrap().id.clone();

    // A targeted emit reaches its subscription only; a broadcast reaches both.
    emitter.emit_to(&general_id, "channel.message", json!({"text": "for #general"})).unwrap();
    emitter.emit("channel.message", json!({"text": "for all"})).unwrap();
    assert_eq!(next(&mut general).await, "for #general");
    assert_eq!(next(&mut general).await, "for all");
    assert_eq!(next(&mut random).await, "for all", "the targeted event is not random's");

    // A refused subscription opens no stream; a closed one is announced as ended.
    let refused = open("secret").await.expect_err("refused");
    assert!(refused.to_string().contains("not a member"), "{refused}");
    drop(general);
    until("general's end", || heard.lock().unwrap().iter().any(|(s, sub)| s == "-" && sub.id == general_id)).await;
    assert_eq!(heard.lock().unwrap().len(), 3, "random is still on");
}

// On paused time: in process, the test waits on the server's own lease timer.
#[tokio::test(start_paused = true)]
async fn a_poll_subscription_is_a_lease_that_lapses() {
    let heard: Heard = Arc::default();
    let events = Events::new().event(channel_messages(&heard)).poll_lease(Duration::from_millis(300));
    let emitter = events.emitter();
    let client = client_of(events).await;
    let poll = |cursor: serde_json::Value| {
        client.request(
            "events/poll",
            json!({"name": "channel.message", "arguments": {"channel": "general"}, "cursor": cursor}),
        )
    };
    let first = poll(json!(null)).await.unwrap();
    poll(first["cursor"].clone()).await.unwrap();
    {
        let heard = heard.lock().unwrap();
        assert_eq!(heard.len(), 1, "announced once, renewed by the next poll: {heard:?}");
        assert_eq!(heard[0].1.delivery, Delivery::Poll);
    }
    // The lease's id is stable: an event targeted at it is polled.
    let id = heard.lock().unwrap()[0].1.id.clone();
    emitter.emit_to(&id, "channel.message", json!({"text": "for this poller"})).unwrap();
    let polled = poll(first["cursor"].clone()).await.unwrap();
    assert_eq!(polled["events"][0]["data"]["text"], "for this poller", "{polled}");

    until("the lease lapsed", || heard.lock().unwrap().iter().any(|(s, _)| s == "-")).await;
    let refused = client
        .request("events/poll", json!({"name": "channel.message", "arguments": {"channel": "secret"}, "cursor": null}))
        .await;
    assert!(refused.expect_err("refused").to_string().contains("not a member"));
}

/// SEP-3415's delivery-time authorization: a caller who lost access (told by the upstream, here by hand) has their
/// subscription ended with -32024, in the mode's way: a push stream's `notifications/events/terminated`, the next
/// poll's error. The type's `on_unsubscribe` runs; the next poll is a new subscription, asked of `on_subscribe`.
#[tokio::test]
async fn a_subscription_whose_access_was_revoked_is_terminated() {
    let heard: Heard = Arc::default();
    let events = Events::new().event(channel_messages(&heard));
    let emitter = events.emitter();
    let client = client_of(events).await;
    let revoked = || mcp::Error::new(mcp::ErrorCode::FORBIDDEN, "removed from #general");
    let subscribed = |delivery: Delivery| {
        let heard = heard.lock().unwrap();
        heard.iter().rev().find(|(s, sub)| s == "+" && sub.delivery == delivery).map(|(_, sub)| sub.id.clone())
    };

    let sub =
        EventSubscription::new("channel.message").arguments(json!({"channel": "general"})).delivery(Delivery::Push);
    let mut stream = client.subscribe_events(sub).await.unwrap();
    until("the stream announced", || subscribed(Delivery::Push).is_some()).await;
    let id = subscribed(Delivery::Push).unwrap();
    assert!(emitter.terminate(&id, revoked()).await);
    let end = tokio::time::timeout(Duration::from_secs(5), stream.next()).await.expect("in time");
    assert!(end.is_none(), "the stream ends: {end:?}");
    let ended = stream.ended().expect("why it ended");
    assert_eq!(ended.code, mcp::ErrorCode::FORBIDDEN, "{ended:?}");
    assert_eq!(ended.message, "removed from #general");
    until("its end announced", || heard.lock().unwrap().iter().any(|(s, sub)| s == "-" && sub.id == id)).await;
    assert!(!emitter.terminate(&id, revoked()).await, "it is gone");

    let poll = || {
        client.request(
            "events/poll",
            json!({"name": "channel.message", "arguments": {"channel": "general"}, "cursor": null}),
        )
    };
    poll().await.unwrap();
    let id = subscribed(Delivery::Poll).expect("the poll's lease");
    assert!(emitter.terminate(&id, revoked()).await);
    match poll().await {
        Err(mcp::client::Error::Rpc(e)) => assert_eq!(e.code, mcp::ErrorCode::FORBIDDEN, "{e:?}"),
        other => panic!("the next poll hears the termination, not {other:?}"),
    }
    until("the lease's end announced", || heard.lock().unwrap().iter().any(|(s, sub)| s == "-" && sub.id == id)).await;
    let announced = heard.lock().unwrap().iter().filter(|(s, sub)| s == "+" && sub.id == id).count();
    poll().await.expect("a poll after that is a new subscription");
    let again = heard.lock().unwrap().iter().filter(|(s, sub)| s == "+" && sub.id == id).count();
    assert_eq!(again, announced + 1, "asked of on_subscribe again");
    assert!(!emitter.terminate("push_unknown", revoked()).await);
}

/// SEP-3415's schema evolution: a type replaced with fields added keeps its subscriptions; one replaced with a
/// field removed ends them with -32026, `data: {"feature": "payloadSchema", "reason": "schema_changed"}`, and our
/// client, as the SEP asks of one, lists again and subscribes against the new descriptor from its cursor (an event
/// emitted meanwhile is not lost). One whose arguments the new descriptor refuses ends with the server's error; a
/// removed type's stream ends with -32023, and one removed and added again goes on.
#[tokio::test]
async fn a_breaking_schema_change_renews_the_types_streams_and_an_additive_one_does_not() {
    let schema = |properties: serde_json::Value| json!({ "type": "object", "properties": properties });
    let typed = |properties: serde_json::Value| EventType::emitted("build.failed").payload_schema(schema(properties));
    let events = Events::new().event(typed(json!({ "job": { "type": "string" }, "log": { "type": "string" } })));
    let emitter = events.emitter();
    let client = client_of(events).await;
    let open = |arguments: serde_json::Value| {
        client.subscribe_events(EventSubscription::new("build.failed").arguments(arguments).delivery(Delivery::Push))
    };
    let text = |item: Option<EventItem>| match item {
        Some(EventItem::Event(e)) => e.data["job"].as_str().unwrap().to_owned(),
        other => panic!("{other:?}"),
    };
    let mut stream = open(json!({})).await.unwrap();
    let mut branched = open(json!({ "branch": "main" })).await.unwrap();

    emitter.add_type(typed(json!({
        "job": { "type": "string", "description": "The job's name" },
        "log": { "type": "string" },
        "commit": { "type": "string" }
    })));
    emitter.emit("build.failed", json!({ "job": "nightly" })).unwrap();
    assert_eq!(text(next_item(&mut stream).await), "nightly", "an additive change keeps the stream");
    assert_eq!(text(next_item(&mut branched).await), "nightly");

    // A payload field removed, and the arguments closed to `branch`: the first subscription is made again, the
    // second no longer fits.
    #[derive(serde::Deserialize, schemars::JsonSchema)]
    #[serde(deny_unknown_fields)]
    struct Unbranched {}
    emitter.add_type(typed(json!({ "job": { "type": "string" } })).arguments::<Unbranched>());
    emitter.emit("build.failed", json!({ "job": "release" })).unwrap();
    match next_item(&mut stream).await {
        Some(EventItem::Resubscribed { descriptor, delivery }) => {
            assert_eq!(delivery, Delivery::Push);
            assert_eq!(descriptor.payload_schema["properties"], json!({ "job": { "type": "string" } }));
        }
        other => panic!("the subscription is made again, not {other:?}"),
    }
    assert!(stream.ended().is_none(), "{:?}", stream.ended());
    assert_eq!(text(next_item(&mut stream).await), "release", "emitted between the end and the new stream");
    emitter.emit("build.failed", json!({ "job": "hotfix" })).unwrap();
    assert_eq!(text(next_item(&mut stream).await), "hotfix");

    let end = next_item(&mut branched).await;
    assert!(end.is_none(), "its arguments no longer fit: it ends, not {end:?}");
    let ended = branched.ended().expect("why it ended");
    assert_eq!(ended.code, mcp::ErrorCode::UNSUPPORTED, "{ended:?}");
    assert_eq!(ended.data.as_ref().unwrap()["reason"], "schema_changed", "{ended:?}");
    assert!(ended.message.contains("subscribing again failed"), "{}", ended.message);
    assert!(ended.message.contains("unknown field `branch`"), "{}", ended.message);

    // Removed and added again (a plugin reloaded): made again; removed for good: it ends with -32023.
    let readd = typed(json!({ "job": { "type": "string" } }));
    assert!(emitter.remove_type("build.failed"));
    emitter.add_type(readd);
    assert!(matches!(next_item(&mut stream).await, Some(EventItem::Resubscribed { .. })), "{:?}", stream.ended());
    assert!(emitter.remove_type("build.failed"));
    assert!(next_item(&mut stream).await.is_none(), "a removed type's stream ends");
    let ended = stream.ended().expect("why it ended");
    assert_eq!(ended.code, mcp::ErrorCode::NOT_FOUND, "{ended:?}");
}

async fn next_item(stream: &mut mcp::client::EventStream) -> Option<EventItem> {
    tokio::time::timeout(Duration::from_secs(5), stream.next()).await.expect("in time")
}

/// SEP-3415's periodic re-verification: a type's `authorize` hook is asked when a subscription starts, and again
/// every `Events::reauthorize` while it lives. Access revoked: the push stream ends with -32024 and the next poll is
/// refused; an error of another kind (the upstream that knows is down) is not a revocation, and the stream goes on.
#[tokio::test]
async fn access_is_checked_again_while_a_subscription_lives() {
    // The channels whose access is revoked, and whether the access check itself fails.
    let revoked: Arc<Mutex<Vec<String>>> = Arc::default();
    let failing = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let asked = Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let (r, f, a) = (revoked.clone(), failing.clone(), asked.clone());
    let watched = EventType::emitted("channel.message").authorize(move |sub: Subscribed| {
        let (r, f, a) = (r.clone(), f.clone(), a.clone());
        async move {
            a.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
            if f.load(std::sync::atomic::Ordering::SeqCst) {
                return Err(mcp::Error::internal("the directory is down"));
            }
            let channel = sub.arguments["channel"].as_str().unwrap_or_default().to_owned();
            match r.lock().unwrap().contains(&channel) {
                true => Err(mcp::Error::new(mcp::ErrorCode::FORBIDDEN, format!("no longer in #{channel}"))),
                false => Ok(()),
            }
        }
    });
    let events = Events::new().event(watched).reauthorize(Duration::from_millis(100));
    let emitter = events.emitter();
    let client = client_of(events).await;
    let open = |channel: &'static str| push(&client, channel);
    let poll = |channel: &str| {
        let params = json!({"name": "channel.message", "arguments": {"channel": channel}, "cursor": null});
        client.request("events/poll", params)
    };

    revoked.lock().unwrap().push("secret".into());
    let refused = open("secret").await.expect_err("refused at the start");
    assert!(refused.to_string().contains("no longer in #secret"), "{refused}");
    let mut general = open("general").await.unwrap();
    let mut random = open("random").await.unwrap();
    poll("general").await.unwrap();

    // A failing check is not a revocation: both streams go on.
    failing.store(true, std::sync::atomic::Ordering::SeqCst);
    let before = asked.load(std::sync::atomic::Ordering::SeqCst);
    until("asked again", || asked.load(std::sync::atomic::Ordering::SeqCst) >= before + 4).await;
    failing.store(false, std::sync::atomic::Ordering::SeqCst);
    emitter.emit("channel.message", json!({"text": "still here"})).unwrap();
    assert_eq!(next(&mut general).await, "still here");
    assert_eq!(next(&mut random).await, "still here");

    revoked.lock().unwrap().push("general".into());
    let end = tokio::time::timeout(Duration::from_secs(5), general.next()).await.expect("ended in time");
    assert!(end.is_none(), "{end:?}");
    let ended = general.ended().expect("why it ended");
    assert_eq!((ended.code, ended.message.as_str()), (mcp::ErrorCode::FORBIDDEN, "no longer in #general"));
    tokio::time::sleep(Duration::from_millis(150)).await;
    match poll("general").await {
        Err(mcp::client::Error::Rpc(e)) => assert_eq!(e.code, mcp::ErrorCode::FORBIDDEN, "{e:?}"),
        other => panic!("the poll after the interval is asked again, and refused: {other:?}"),
    }
    emitter.emit("channel.message", json!({"text": "for #random"})).unwrap();
    assert_eq!(next(&mut random).await, "for #random", "random's access stands");
}
