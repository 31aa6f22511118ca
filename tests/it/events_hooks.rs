//! Subscription lifecycle hooks (SEP-3415's server guidance): `on_subscribe` when a push stream opens or a poll is
//! first seen (and its error refusing the subscription), `on_unsubscribe` when the stream closes or the poll lease
//! lapses, and `Emitter::emit_to` reaching the one subscription it names.

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
    let server = mcp::Server::builder().extension(events).build().unwrap();
    let client = Client::builder().era(EraChoice::V2026).in_process(server).await.unwrap();
    let open = |channel: &str| {
        let sub =
            EventSubscription::new("channel.message").arguments(json!({"channel": channel})).delivery(Delivery::Push);
        client.subscribe_events(sub)
    };
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
    let server = mcp::Server::builder().extension(events).build().unwrap();
    let client = Client::builder().era(EraChoice::V2026).in_process(server).await.unwrap();
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
