//! The Events extension on servers shared through a real `redis-server` (`ServerBuilder::shared`): what one instance
//! emits reaches the polls and push streams of every other, cursors name the same position on every instance (and
//! on one started later), and a Redis that lost its data is told by a new epoch.

use std::time::Duration;

use crate::common;

use common::redis::RedisServer;
use mcp::client::{Client, EraChoice, EventItem, EventStream, EventSubscription, ReceivedEvent};
use mcp::events::{Delivery, Emitter, EventType, Events};
use serde_json::{json, Value};

fn restocked() -> EventType {
    EventType::emitted("book.restocked")
        .description("A book is back in stock.")
        .matching(|watch: &Value, book: &Value| watch.get("isbn").is_none_or(|isbn| *isbn == book["isbn"]))
}

/// One instance of a shop sharing `redis`.
fn instance(redis: &mcp::redis::Redis) -> (mcp::Server, Emitter) {
    let events =
        Events::new().event(restocked()).heartbeat(Duration::from_millis(200)).next_poll(Duration::from_millis(20));
    let emitter = events.emitter();
    let server = mcp::Server::builder().request_state_key([7; 32]).extension(events).shared(redis).build().unwrap();
    (server, emitter)
}

async fn client(server: &mcp::Server) -> Client {
    Client::builder().era(EraChoice::V2026).in_process(server.clone()).await.unwrap()
}

async fn poll(client: &Client, cursor: Option<&str>) -> Value {
    let params = json!({"name": "book.restocked", "arguments": {}, "cursor": cursor});
    client.request("events/poll", params).await.unwrap()
}

/// Polls from `cursor` until `count` events come (the instance's mirror of Redis may be a moment behind).
async fn poll_until_events(client: &Client, cursor: &str, count: usize) -> Value {
    for _ in 0..250 {
        let polled = poll(client, Some(cursor)).await;
        if polled["events"].as_array().unwrap().len() >= count {
            return polled;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    panic!("not {count} events after the cursor {cursor} within 5 s")
}

async fn next_event(stream: &mut EventStream) -> ReceivedEvent {
    let item = tokio::time::timeout(Duration::from_secs(5), stream.next()).await.expect("an event in time");
    match item.expect("the subscription goes on") {
        EventItem::Event(event) => event,
        other => panic!("{other:?}"),
    }
}

fn ids(polled: &Value) -> Vec<String> {
    polled["events"].as_array().unwrap().iter().map(|e| e["eventId"].as_str().unwrap().to_owned()).collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn what_one_instance_emits_reaches_every_instances_polls_and_streams_at_the_same_cursors() {
    let redis_server = RedisServer::start();
    let redis = mcp::redis::Redis::connect(&redis_server.url()).await.unwrap();
    let (one, emit_one) = instance(&redis);
    let (two, emit_two) = instance(&redis);
    let (a, b) = (client(&one).await, client(&two).await);

    // Both start from now, at one position named alike on both.
    let from_a = poll(&a, None).await;
    let from_b = poll(&b, None).await;
    assert_eq!(from_a["cursor"], from_b["cursor"], "{from_a} {from_b}");
    let start = from_a["cursor"].as_str().unwrap().to_owned();

    // A push stream on two hears what one emits, and its own, in order.
    let sub = EventSubscription::new("book.restocked").delivery(Delivery::Push).heartbeat(Duration::from_millis(200));
    let mut on_two = b.subscribe_events(sub).await.unwrap();
    assert_eq!(on_two.delivery, Delivery::Push);
    let first = emit_one.emit("book.restocked", json!({"isbn": "978-1", "copies": 1})).unwrap();
    assert_eq!(next_event(&mut on_two).await.event_id, first);
    let second = emit_two.emit("book.restocked", json!({"isbn": "978-2", "copies": 2})).unwrap();
    assert_eq!(next_event(&mut on_two).await.event_id, second);

    // A poll on one from the shared start replays both, and its cursor goes on from there on two.
    let polled = poll_until_events(&a, &start, 2).await;
    assert_eq!(ids(&polled), [first.clone(), second.clone()], "{polled}");
    assert_eq!(polled["truncated"], false);
    let after_both = polled["cursor"].as_str().unwrap().to_owned();
    let third = emit_one.emit("book.restocked", json!({"isbn": "978-3", "copies": 3})).unwrap();
    assert_eq!(ids(&poll_until_events(&b, &after_both, 1).await), std::slice::from_ref(&third));

    // An instance started later replays from a cursor the first two gave, with nothing lost.
    let (three, _) = instance(&redis);
    let c = client(&three).await;
    assert_eq!(ids(&poll_until_events(&c, &start, 3).await), [first, second, third]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_redis_that_lost_its_data_starts_the_cursors_again_and_says_events_were_lost() {
    let mut redis_server = RedisServer::start();
    let redis = mcp::redis::Redis::connect(&redis_server.url()).await.unwrap();
    let (one, emit) = instance(&redis);
    let a = client(&one).await;
    let start = poll(&a, None).await["cursor"].as_str().unwrap().to_owned();
    emit.emit("book.restocked", json!({"isbn": "978-1", "copies": 1})).unwrap();
    let before = poll_until_events(&a, &start, 1).await["cursor"].as_str().unwrap().to_owned();

    // The test's redis-server keeps nothing on disk: restarted, it has forgotten every event and the epoch.
    redis_server.restart(Duration::from_millis(200));
    let mut after = None;
    for _ in 0..200 {
        let id = emit.emit("book.restocked", json!({"isbn": "978-2", "copies": 2})).unwrap();
        tokio::time::sleep(Duration::from_millis(50)).await;
        let polled = poll(&a, Some(&before)).await;
        if polled["truncated"] == true && ids(&polled).contains(&id) {
            after = Some(polled);
            break;
        }
    }
    let after = after.expect("the old cursor is answered as one of a lost buffer, with the new events");
    assert_ne!(after["cursor"].as_str().unwrap().split('.').next(), before.split('.').next(), "a new epoch");
}

/// Three bookshops (`--redis`) behind a real nginx and HAProxy with the shipped configurations: a push subscriber
/// and a poll subscriber of the balancer hear of every book back on the shelf, whichever instance released it, once
/// each and both in the stream's order, while each instance in turn is killed (SIGKILL) and started again: the push stream whose
/// instance died is opened again through the proxy, on another instance, from its cursor. (A stream moves only when
/// its instance dies, so killing each instance in turn kills the stream's at least once.)
mod behind_a_proxy {
    use super::*;

    use std::sync::{Arc, Mutex};

    use common::proxy::Kind;
    use common::shops::{eventually, holds, Shops};

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn nginx() {
        every_event_once_through_instance_deaths(Kind::Nginx).await
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn haproxy() {
        every_event_once_through_instance_deaths(Kind::Haproxy).await
    }

    /// Orders `title` and drops the order once it holds the book: the instance running it releases the hold and
    /// emits `book.back_on_shelf`.
    async fn shelve(shops: &Shops, client: &Client, title: &str) {
        let order = client.call_tool("order_book", json!({"title": title}));
        let held = format!("{title} on hold");
        tokio::select! {
            biased;
            ended = order => panic!("order_book({title}) ended while held: {ended:?}\n{}", shops.stderr()),
            () = eventually(&held, shops, async || holds(client).await.contains(&title.to_owned())) => {}
        }
    }

    /// Reads a subscription into `heard` in the background.
    fn hear(mut stream: EventStream, heard: Arc<Mutex<Vec<String>>>) -> tokio::task::JoinHandle<()> {
        tokio::spawn(async move {
            while let Some(item) = stream.next().await {
                if let EventItem::Event(event) = item {
                    heard.lock().unwrap().push(event.data["title"].as_str().unwrap_or_default().to_owned());
                }
            }
        })
    }

    async fn every_event_once_through_instance_deaths(kind: Kind) {
        let mut shops = Shops::behind(kind).await;
        let connect = || Client::builder().era(EraChoice::V2026).http(shops.url());
        let (orders, pushed, polled) = (connect().await.unwrap(), connect().await.unwrap(), connect().await.unwrap());
        let watch = EventSubscription::new("book.back_on_shelf").poll_floor(Duration::from_millis(100));
        let push = pushed.subscribe_events(watch.clone().delivery(Delivery::Push)).await.unwrap();
        let poll = polled.subscribe_events(watch.delivery(Delivery::Poll)).await.unwrap();
        let (by_push, by_poll) = (Arc::new(Mutex::new(Vec::new())), Arc::new(Mutex::new(Vec::new())));
        let _readers = (hear(push, by_push.clone()), hear(poll, by_poll.clone()));

        let mut shelved = Vec::new();
        let heard_all = async |shops: &Shops, shelved: &Vec<String>| {
            eventually("both subscribers heard every book", shops, async || {
                by_push.lock().unwrap().len() >= shelved.len() && by_poll.lock().unwrap().len() >= shelved.len()
            })
            .await;
            // Once each. The order is the stream's, the same for both: two releases on two instances, 100 ms after
            // their orders were dropped a few ms apart, may reach Redis in either order.
            let (by_push, by_poll) = (by_push.lock().unwrap().clone(), by_poll.lock().unwrap().clone());
            assert_eq!(by_push, by_poll, "push and poll hear the stream's order\n{}", shops.stderr());
            let mut heard = by_push;
            heard.sort();
            let mut expected = shelved.clone();
            expected.sort();
            assert_eq!(heard, expected, "every book once\n{}", shops.stderr());
        };
        for i in 0..3 {
            for title in [format!("Dune {i}"), format!("Emma {i}")] {
                shelve(&shops, &orders, &title).await;
                shelved.push(title);
            }
            // Heard by push (polls come every `nextPollMs`, 5 s): the events are in Redis before the kill.
            eventually("the push subscriber heard it", &shops, async || by_push.lock().unwrap().len() == shelved.len())
                .await;
            shops.kill_and_start_again(i).await;
            let title = format!("Middlemarch {i}");
            shelve(&shops, &orders, &title).await;
            shelved.push(title);
            heard_all(&shops, &shelved).await;
        }
        if kind == Kind::Nginx {
            // nginx logs a request's `Mcp-Method` when it ends: a push stream ended (its instance died).
            let ended = shops.proxy().logged().iter().filter(|l| l.line.contains("\"events/stream\"")).count();
            assert!(ended >= 1, "no push stream ended\n{}", shops.stderr());
        }
        shops.assert_nothing_panicked();
    }
}
