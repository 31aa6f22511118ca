//! How long an emitted event takes to reach a push stream on another instance, and what a poll costs: two servers
//! sharing a `redis-server` (the one on `PATH`, or `REDIS_SERVER`, started on a free loopback port with persistence off), each with the
//! Events extension; a push subscription (`events/stream`, our client, in process) on the second, and N events
//! emitted on the first. Prints, as one JSON line, p50/p99/max of the time from `Emitter::emit` on the first instance
//! to the event in the second's subscription, and the mean time of an `events/poll` (in process, one event each)
//! on one instance.
//!
//! Run with `cargo bench --bench events_latency` (optionally `-- --samples N`). A benchmark, not a test.

#[path = "common/latency.rs"]
mod latency;
#[path = "common/redis.rs"]
mod redis_server;

use std::time::{Duration, Instant};

use mcp::client::{Client, Delivery, EraChoice, EventItem, EventSubscription};
use mcp::events::{EventType, Events};
use mcp::Server;
use redis_server::RedisServer;
use serde_json::json;

#[tokio::main]
async fn main() {
    let samples = latency::samples(1000);
    let (_redis_server, redis) = RedisServer::start("events-latency").await;
    let build = || {
        let events = Events::new().event(EventType::emitted("tick"));
        let emitter = events.emitter();
        (Server::builder().request_state_key([9; 32]).extension(events).shared(&redis).build().unwrap(), emitter)
    };
    let ((one, emitter), (two, _)) = (build(), build());
    let subscriber = Client::builder().era(EraChoice::V2026).in_process(two).await.unwrap();
    let sub = EventSubscription::new("tick").delivery(Delivery::Push);
    let mut stream = subscriber.subscribe_events(sub).await.unwrap();

    let mut latencies = Vec::with_capacity(samples);
    let mut lost = 0usize;
    for n in 0..samples {
        let sent = Instant::now();
        emitter.emit("tick", json!({ "n": n })).unwrap();
        match tokio::time::timeout(Duration::from_secs(2), stream.next()).await {
            Ok(Some(EventItem::Event(_))) => latencies.push(sent.elapsed()),
            _ => lost += 1,
        }
    }
    latencies.sort();

    // A poll's cost, on the emitting instance: each finds one new event.
    let poller = Client::builder().era(EraChoice::V2026).in_process(one).await.unwrap();
    let mut cursor = poller.request("events/poll", json!({ "name": "tick" })).await.unwrap()["cursor"].clone();
    let polls = samples.max(1);
    let mut polling = Duration::ZERO;
    let mut found = 0usize;
    for n in 0..polls {
        emitter.emit("tick", json!({ "n": n })).unwrap();
        tokio::time::sleep(Duration::from_millis(2)).await;
        let started = Instant::now();
        let polled = poller.request("events/poll", json!({ "name": "tick", "cursor": cursor })).await.unwrap();
        polling += started.elapsed();
        found += polled["events"].as_array().map_or(0, Vec::len);
        cursor = polled["cursor"].clone();
    }
    let line = json!({
        "figure": "emit-to-push latency across two instances (Events on Redis streams, loopback); poll cost",
        "samples": latencies.len(),
        "lost": lost,
        "p50_us": latency::percentile(&latencies, 0.5),
        "p99_us": latency::percentile(&latencies, 0.99),
        "max_us": latencies.last().map(|d| d.as_secs_f64() * 1e6),
        "polls": polls,
        "events_polled": found,
        "poll_mean_us": polling.as_secs_f64() * 1e6 / polls as f64,
    });
    println!("{line}");
}
