//! Three bookshop processes (`--http`, `--redis`, one `MCP_REQUEST_STATE_KEY`) sharing a real `redis-server`, behind
//! the round-robin balancer (`balancer.rs`): what the scale-out tests of both eras start, and the waits and reads they
//! share.

use std::time::{Duration, Instant};

use mcp::client::Client;
use serde_json::json;

use super::balancer::Balancer;
use super::http::HttpServer;
use super::redis::RedisServer;

/// How long a wait may take before a test gives up (a bound on failure, not a speed being measured).
pub const WAIT: Duration = Duration::from_secs(15);

/// The key every instance seals `requestState` with.
pub const REQUEST_STATE_KEY: &str = "5ea1ed0b00c5e1f5ea1ed0b00c5e1f5ea1ed0b00c5e1f5ea1ed0b00c5e1f0042";

/// A Redis, three bookshops sharing it, and the balancer in front of them.
pub struct Shops {
    pub redis: RedisServer,
    pub instances: Vec<HttpServer>,
    pub balancer: Balancer,
}

impl Shops {
    pub async fn start() -> Shops {
        let redis = RedisServer::start();
        let url = redis.url();
        let instances: Vec<HttpServer> = tokio::task::spawn_blocking(move || {
            (0..3)
                .map(|_| {
                    HttpServer::start_binary_with_env(
                        super::example("bookshop"),
                        &["--redis", &url],
                        &[("MCP_REQUEST_STATE_KEY", REQUEST_STATE_KEY)],
                    )
                })
                .collect()
        })
        .await
        .unwrap();
        let balancer = Balancer::start(instances.iter().map(|s| s.authority().to_owned()).collect()).await;
        let shops = Shops { redis, instances, balancer };
        shops.subscribed(3).await;
        shops
    }

    /// Waits until `n` instances listen on the change channel (each subscribes in the background once started).
    pub async fn subscribed(&self, n: i64) {
        let redis = mcp::redis::Redis::connect(&self.redis.url()).await.unwrap();
        let mut connection = redis.connection();
        eventually(&format!("{n} instances subscribed to the change channel"), self, async || {
            let counted: Result<(String, i64), _> =
                mcp::redis::driver::cmd("PUBSUB").arg("NUMSUB").arg("mcp:changes").query_async(&mut connection).await;
            counted.is_ok_and(|(_, count)| count >= n)
        })
        .await;
    }

    /// Every instance's stderr, each under its name.
    pub fn stderr(&self) -> String {
        self.instances.iter().enumerate().map(|(i, s)| format!("--- bookshop {i} ---\n{}\n", s.stderr_text())).collect()
    }

    /// How many of the instances' stderr lines contain `needle`.
    pub fn printed(&self, needle: &str) -> usize {
        self.instances.iter().map(|s| s.stderr_text().lines().filter(|l| l.contains(needle)).count()).sum()
    }

    pub fn assert_nothing_panicked(&self) {
        assert_eq!(self.printed("panicked"), 0, "an instance panicked:\n{}", self.stderr());
    }

    /// The upstreams the requests sent since `from` (an earlier `sent().len()`) went to.
    pub fn sent_since(&self, from: usize) -> Vec<usize> {
        self.balancer.sent()[from..].to_vec()
    }
}

/// Checks `check` until it holds, failing after [`WAIT`] with the instances' stderr.
pub async fn eventually(what: &str, shops: &Shops, mut check: impl AsyncFnMut() -> bool) {
    let deadline = Instant::now() + WAIT;
    while !check().await {
        assert!(Instant::now() < deadline, "not within {WAIT:?}: {what}\n{}", shops.stderr());
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// The titles on hold, through the balancer (any instance).
pub async fn holds(client: &Client) -> Vec<String> {
    let listed = client.call_tool("list_holds", json!({})).await.unwrap();
    assert!(!listed.is_error(), "{listed:?}");
    serde_json::from_value(listed.structured().unwrap()["holds"].clone()).unwrap()
}

/// Waits until the balancer has sent a request more than `from` (an earlier `sent().len()`): the instance it went to.
pub async fn sent_to(shops: &Shops, from: usize) -> usize {
    eventually("the request reached the balancer", shops, async || shops.balancer.sent().len() > from).await;
    shops.balancer.sent()[from]
}

/// Sends `signal` (`-KILL`, `-TERM`) to an instance.
pub fn kill(shop: &HttpServer, signal: &str) {
    let status = std::process::Command::new("kill").args([signal, &shop.pid().to_string()]).status().unwrap();
    assert!(status.success(), "kill {signal}");
}
