//! Three bookshop processes (`--http`, `--redis`, one `MCP_REQUEST_STATE_KEY`) sharing a real `redis-server`, behind
//! a front: the round-robin balancer (`balancer.rs`), what the scale-out tests of both eras start, or a real nginx or
//! HAProxy running a configuration of `deploy/` (`proxy.rs`, tests/it/balancers.rs); and the waits and reads they
//! share.

use std::time::{Duration, Instant};

use mcp::client::Client;
use mcp::HttpOptions;
use serde_json::json;

use super::balancer::Balancer;
use super::http::HttpServer;
use super::proxy::{Kind, Proxy};
use super::redis::{RedisServer, SentinelRedis};

/// How long a wait may take before a test gives up (a bound on failure, not a speed being measured).
pub const WAIT: Duration = Duration::from_secs(15);

/// The key every instance seals `requestState` with.
pub const REQUEST_STATE_KEY: &str = "5ea1ed0b00c5e1f5ea1ed0b00c5e1f5ea1ed0b00c5e1f5ea1ed0b00c5e1f0042";

/// A Redis, three bookshops sharing it, and the front clients reach them through.
pub struct Shops {
    pub redis: Store,
    pub instances: Vec<HttpServer>,
    pub front: Front,
    /// The flags each instance was started with besides `--redis` (for a restart).
    flags: Vec<String>,
    /// The environment each instance was started with besides `MCP_REQUEST_STATE_KEY` (for a restart).
    env: Vec<(String, String)>,
}

/// The Redis the instances share: one server, or a primary, its replica and three sentinels.
pub enum Store {
    Plain(RedisServer),
    Sentinel(SentinelRedis),
}

impl Store {
    /// What the instances are given: `redis://...`, or `redis+sentinel://.../mymaster`.
    pub fn url(&self) -> String {
        match self {
            Store::Plain(redis) => redis.url(),
            Store::Sentinel(set) => set.url(),
        }
    }

    /// Stops the one server for `down`, then starts it again on its port.
    pub fn restart(&mut self, down: Duration) {
        match self {
            Store::Plain(redis) => redis.restart(down),
            Store::Sentinel(_) => panic!("a restart of a sentinel set: stop its primary instead"),
        }
    }

    /// The sentinel set, when it is one.
    pub fn sentinel(&mut self) -> &mut SentinelRedis {
        match self {
            Store::Sentinel(set) => set,
            Store::Plain(_) => panic!("not a sentinel set"),
        }
    }
}

/// What stands in front of the instances.
pub enum Front {
    /// Our round-robin stand-in. It stays for one reason: it records where it sends each request the moment it
    /// sends it, so the scale-out tests can know (`sent_to`) and choose (the next request goes to upstream
    /// `sent().len() % 3`) the instance of a request still in flight: which instance runs the order that is then
    /// killed, that a cancel or an answer lands on another instance than its call's. A real proxy logs a request
    /// only once it has ended.
    Balancer(Balancer),
    /// A real nginx or HAProxy with a shipped configuration.
    Proxy(Proxy),
}

impl Shops {
    /// Three bookshops behind our round-robin balancer.
    pub async fn start() -> Shops {
        Shops::start_with(&[]).await
    }

    /// Three bookshops started with these extra flags, behind our round-robin balancer.
    pub async fn start_with(flags: &[&str]) -> Shops {
        let redis = tokio::task::spawn_blocking(|| Store::Plain(RedisServer::start())).await.unwrap();
        let instances = Shops::instances(&redis.url(), flags, &[]).await;
        let balancer = Balancer::start(instances.iter().map(|s| s.authority().to_owned()).collect()).await;
        let shops = Shops { redis, instances, front: Front::Balancer(balancer), flags: own(flags), env: Vec::new() };
        shops.subscribed(3).await;
        shops
    }

    /// Three bookshops behind a real proxy of `kind`, running its configuration of `deploy/`.
    pub async fn behind(kind: Kind) -> Shops {
        Shops::behind_with(kind, &[]).await
    }

    /// Three bookshops started with these extra flags, behind a real proxy of `kind`. Behind a configuration that
    /// sets `X-Forwarded-For`, the instances trust it (`--trust-forwarded`), as deploying.md says to.
    pub async fn behind_with(kind: Kind, flags: &[&str]) -> Shops {
        Shops::behind_with_env(kind, flags, &[]).await
    }

    /// [`Shops::behind_with`], each instance started with these environment variables too.
    pub async fn behind_with_env(kind: Kind, flags: &[&str], env: &[(&str, &str)]) -> Shops {
        let redis = tokio::task::spawn_blocking(|| Store::Plain(RedisServer::start())).await.unwrap();
        Shops::behind_on(kind, redis, flags, env).await
    }

    /// Three bookshops sharing a Redis Sentinel set (a primary, its replica, three sentinels), behind a real proxy.
    pub async fn behind_sentinels(kind: Kind) -> Shops {
        let redis = tokio::task::spawn_blocking(|| Store::Sentinel(SentinelRedis::start())).await.unwrap();
        Shops::behind_on(kind, redis, &[], &[]).await
    }

    async fn behind_on(kind: Kind, redis: Store, flags: &[&str], env: &[(&str, &str)]) -> Shops {
        let mut flags = flags.to_vec();
        if kind.forwards_the_client() {
            flags.push("--trust-forwarded");
        }
        let env: Vec<(String, String)> = env.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect();
        let instances = Shops::instances(&redis.url(), &flags, &env).await;
        let upstreams: Vec<String> = instances.iter().map(|s| s.authority().to_owned()).collect();
        let proxy = tokio::task::spawn_blocking(move || Proxy::start(kind, &upstreams)).await.unwrap();
        let shops = Shops { redis, instances, front: Front::Proxy(proxy), flags: own(&flags), env };
        shops.subscribed(3).await;
        shops
    }

    /// Stops instance `i` with SIGTERM (it drains, then exits 0) and starts it again on the same address with the
    /// same flags, as a rolling restart does; returns once it listens.
    pub async fn restart(&mut self, i: usize) {
        self.restart_with_keys(i, REQUEST_STATE_KEY).await
    }

    /// [`Shops::restart`] with these `requestState` keys (`MCP_REQUEST_STATE_KEY`: the first seals, all open), as a
    /// key rotation does.
    pub async fn restart_with_keys(&mut self, i: usize, keys: &str) {
        kill(&self.instances[i], "-TERM");
        let status = self.instances[i].wait_exit(HttpOptions::DEFAULT_DRAIN_TIMEOUT + Duration::from_secs(10));
        assert!(status.is_some_and(|s| s.success()), "instance {i} after SIGTERM: {status:?}\n{}", self.stderr());
        let said: Vec<String> =
            self.instances[i].stderr_text().lines().filter(|l| l.contains("drain")).map(str::to_owned).collect();
        eprintln!("instance {i} stopped: {said:?}");
        self.start_again(i, keys).await;
    }

    /// Kills instance `i` (SIGKILL: nothing drains) and starts it again on the same address with the same flags.
    pub async fn kill_and_start_again(&mut self, i: usize) {
        kill(&self.instances[i], "-KILL");
        let status = self.instances[i].wait_exit(Duration::from_secs(10));
        assert!(status.is_some(), "instance {i} outlived SIGKILL\n{}", self.stderr());
        self.start_again(i, REQUEST_STATE_KEY).await;
    }

    /// Starts instance `i` again, on its address, with its flags and these `requestState` keys.
    async fn start_again(&mut self, i: usize, keys: &str) {
        let mut args = vec!["--http".to_owned(), self.instances[i].authority().to_owned(), "--redis".to_owned()];
        args.push(self.redis.url());
        args.extend(self.flags.iter().cloned());
        let mut env = self.env.clone();
        env.push(("MCP_REQUEST_STATE_KEY".to_owned(), keys.to_owned()));
        let restarted = tokio::task::spawn_blocking(move || {
            let args: Vec<&str> = args.iter().map(String::as_str).collect();
            let env: Vec<(&str, &str)> = env.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
            HttpServer::start_binary_with_env(super::example("bookshop"), &args, &env)
        })
        .await
        .unwrap();
        self.instances[i] = restarted;
    }

    /// Three bookshops sharing the Redis at `url`, started with these extra flags and environment variables.
    async fn instances(url: &str, flags: &[&str], env: &[(String, String)]) -> Vec<HttpServer> {
        let url = url.to_owned();
        let flags: Vec<String> = flags.iter().map(|f| f.to_string()).collect();
        let mut env = env.to_vec();
        env.push(("MCP_REQUEST_STATE_KEY".to_owned(), REQUEST_STATE_KEY.to_owned()));
        let instances: Vec<HttpServer> = tokio::task::spawn_blocking(move || {
            let env: Vec<(&str, &str)> = env.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
            (0..3)
                .map(|_| {
                    let mut args = vec!["--redis", url.as_str()];
                    args.extend(flags.iter().map(String::as_str));
                    HttpServer::start_binary_with_env(super::example("bookshop"), &args, &env)
                })
                .collect()
        })
        .await
        .unwrap();
        instances
    }

    /// The endpoint clients use: the front's `http://127.0.0.1:PORT/mcp`.
    pub fn url(&self) -> &str {
        match &self.front {
            Front::Balancer(balancer) => &balancer.url,
            Front::Proxy(proxy) => &proxy.url,
        }
    }

    /// Our balancer, in front (`Shops::start`).
    pub fn balancer(&self) -> &Balancer {
        match &self.front {
            Front::Balancer(balancer) => balancer,
            Front::Proxy(proxy) => panic!("these shops are behind {:?}, not our balancer", proxy.kind),
        }
    }

    /// The real proxy in front (`Shops::behind`).
    pub fn proxy(&self) -> &Proxy {
        match &self.front {
            Front::Proxy(proxy) => proxy,
            Front::Balancer(_) => panic!("these shops are behind our balancer, not a real proxy"),
        }
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

    /// Every instance's stderr, each under its name, and the log of the real proxy in front, if one is: what a
    /// failure prints.
    pub fn stderr(&self) -> String {
        let instances: String = self
            .instances
            .iter()
            .enumerate()
            .map(|(i, s)| format!("--- bookshop {i} ({}) ---\n{}\n", s.authority(), s.stderr_text()))
            .collect();
        match &self.front {
            Front::Proxy(proxy) => format!("{instances}{}", proxy.log_text()),
            Front::Balancer(_) => instances,
        }
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
        self.balancer().sent()[from..].to_vec()
    }
}

fn own(flags: &[&str]) -> Vec<String> {
    flags.iter().map(|f| f.to_string()).collect()
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
    let listed = client.call_tool("list_holds", json!({})).timeout(WAIT).await.unwrap();
    assert!(!listed.is_error(), "{listed:?}");
    serde_json::from_value(listed.structured().unwrap()["holds"].clone()).unwrap()
}

/// Waits until the balancer has sent a request more than `from` (an earlier `sent().len()`): the instance it went to.
pub async fn sent_to(shops: &Shops, from: usize) -> usize {
    eventually("the request reached the balancer", shops, async || shops.balancer().sent().len() > from).await;
    shops.balancer().sent()[from]
}

/// Sends `signal` (`-KILL`, `-TERM`) to an instance.
pub fn kill(shop: &HttpServer, signal: &str) {
    let status = std::process::Command::new("kill").args([signal, &shop.pid().to_string()]).status().unwrap();
    assert!(status.success(), "kill {signal}");
}
