//! How long a change takes to cross instances through Redis: two servers sharing a `redis-server` (the one on `PATH` or `REDIS_SERVER`,
//! started on a free loopback port with persistence off), a 2026 `subscriptions/listen` on the second, and N calls
//! on the first of a tool that announces a resource update. Prints p50/p99/max of the time from the call (in
//! process, on the first instance) to the notification on the second's listener, as one JSON line.
//!
//! Run with `cargo bench --bench hub_latency` (optionally `-- --samples N`). A benchmark, not a test.

#[path = "common/latency.rs"]
mod latency;
#[path = "common/redis.rs"]
mod redis_server;

use std::time::{Duration, Instant};

use mcp::client::{Client, EraChoice, ListenFilter};
use mcp::{Context, Server};
use redis_server::RedisServer;
use serde_json::json;

/// Announces that a note changed.
#[mcp::tool]
fn touch(ctx: &Context) -> String {
    ctx.server().notify_resource_updated("note://one");
    "touched".into()
}

/// A note.
#[mcp::resource(uri = "note://one")]
fn note() -> String {
    "one".into()
}

#[tokio::main]
async fn main() {
    let samples = latency::samples(1000);
    let (_redis_server, redis) = RedisServer::start("hub-latency").await;
    let build = || {
        Server::builder().tool::<touch>().resource::<note>().request_state_key([9; 32]).shared(&redis).build().unwrap()
    };
    let (one, two) = (build(), build());
    tokio::time::sleep(Duration::from_millis(300)).await;
    let caller = Client::builder().era(EraChoice::V2026).in_process(one).await.unwrap();
    let listener = Client::builder().era(EraChoice::V2026).in_process(two).await.unwrap();
    let mut listen = listener.listen(ListenFilter::new().resource("note://one")).await.unwrap();

    let mut latencies = Vec::with_capacity(samples);
    let mut lost = 0usize;
    for _ in 0..samples {
        let sent = Instant::now();
        caller.call_tool("touch", json!({})).await.unwrap();
        match tokio::time::timeout(Duration::from_secs(2), listen.next()).await {
            Ok(Some(_)) => latencies.push(sent.elapsed()),
            _ => lost += 1,
        }
    }
    latencies.sort();
    let line = json!({
        "figure": "notification latency across two instances (Redis pub/sub, loopback)",
        "samples": latencies.len(),
        "lost": lost,
        "p50_us": latency::percentile(&latencies, 0.5),
        "p99_us": latency::percentile(&latencies, 0.99),
        "max_us": latencies.last().map(|d| d.as_secs_f64() * 1e6),
    });
    println!("{line}");
}
