//! Three bookshop processes (`--http`, `--redis`, one `MCP_REQUEST_STATE_KEY`) sharing a real `redis-server`, behind
//! the real reverse proxies users deploy, each running the configuration the repository ships (deploy/, only the
//! addresses replaced; tests/common/proxy.rs): Debian's nginx with the recommended `nginx.conf` and with
//! `nginx-minimal.conf` (what an engineer writes first), and Debian's HAProxy with `haproxy.cfg`. Behind each, in
//! both protocol eras: tools listed, a call, progress streamed while the call runs, the bookshop's confirmation
//! question (a 2025 `elicitation/create` on the call's stream, a 2026 `input_required` round whose retry lands on
//! another instance), changes heard (a 2025 session's GET stream, a 2026 `subscriptions/listen`), a dropped call's
//! hold released at once (a 2025 cancel notification; a 2026 client closing its connection, which the proxy must
//! pass on), the server's keep-alive comment passed through, an instance SIGKILLed while the others serve on (and
//! while it runs a call, and a task), and a rolling restart (each instance stopped with SIGTERM, which drains it, and started again) under a steady load of
//! both eras that loses no call.
//! The official Python SDK runs its scripts through each proxy too.
//!
//! Each test is `SCENARIO::PROXY` (`cargo test --test it balancers:: haproxy` runs HAProxy's); each starts its own
//! Redis, bookshops and proxy. A failure prints the proxy's log and the instances' stderr.

use crate::common;

use std::collections::BTreeSet;
use std::future::{Future, IntoFuture};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use common::proxy::Kind;
use common::shops::{self, eventually, holds, kill, Shops, WAIT};
use mcp::client::{Client, EraChoice, ListenFilter};
use serde_json::{json, Value};

const HOLDS_URI: &str = "bookshop://holds";
const TOOLS: [&str; 5] = ["cancel_hold", "list_holds", "order_book", "rebuild_index", "search_status"];

/// A dropped order's hold must be gone well before the order's 30 s: the cancel reached the instance running it.
const RELEASED_WITHIN: Duration = Duration::from_secs(5);

/// The longest a scenario may take: each wait in it has a bound of its own (and prints the logs); this one stops a
/// test that would otherwise wait for ever on something unbounded.
const SCENARIO_LIMIT: Duration = Duration::from_secs(120);

/// Runs each scenario behind each proxy: `SCENARIO::nginx`, `SCENARIO::nginx_minimal`, `SCENARIO::haproxy`.
macro_rules! behind_each_proxy {
    ($($scenario:ident),* $(,)?) => {$(
        mod $scenario {
            use super::Kind;

            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn nginx() {
                super::limited(super::$scenario(Kind::Nginx)).await
            }

            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn nginx_minimal() {
                super::limited(super::$scenario(Kind::NginxMinimal)).await
            }

            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn haproxy() {
                super::limited(super::$scenario(Kind::Haproxy)).await
            }
        }
    )*};
}

behind_each_proxy!(
    our_2026_client,
    our_2025_client,
    the_python_sdk,
    a_keep_alive_comment_passes,
    an_instance_killed_between_calls,
    an_instance_killed_mid_call,
    the_client_address_is_forwarded
);

/// Runs each scenario behind the recommended configurations only (`nginx.conf`, `haproxy.cfg`), within its limit:
/// `SCENARIO::nginx`, `SCENARIO::haproxy`. The minimal nginx configuration has no retry of a 503 and no passive
/// health settings: it is for trying, not for restarting or failing over under load.
macro_rules! behind_the_recommended_proxies {
    ($($scenario:ident within $limit:ident),* $(,)?) => {$(
        mod $scenario {
            use super::Kind;

            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn nginx() {
                super::limited_to(super::$limit, super::$scenario(Kind::Nginx)).await
            }

            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn haproxy() {
                super::limited_to(super::$limit, super::$scenario(Kind::Haproxy)).await
            }
        }
    )*};
}

behind_the_recommended_proxies!(
    a_rolling_restart_loses_no_call within SCENARIO_LIMIT,
    a_redis_failover_loses_no_call within SCENARIO_LIMIT,
    // Nine restarts, each a drain.
    a_key_rotation_loses_no_retry within ROTATION_LIMIT,
    a_task_whose_instance_died within SCENARIO_LIMIT,
);

/// Runs a scenario within [`SCENARIO_LIMIT`].
async fn limited(scenario: impl Future<Output = ()>) {
    limited_to(SCENARIO_LIMIT, scenario).await
}

/// The key rotation's limit: nine restarts, each a drain.
const ROTATION_LIMIT: Duration = Duration::from_secs(300);

/// Runs a scenario within `limit`.
async fn limited_to(limit: Duration, scenario: impl Future<Output = ()>) {
    if tokio::time::timeout(limit, scenario).await.is_err() {
        panic!("the scenario did not end within {limit:?}: something waited for ever");
    }
}

/// `what` within [`WAIT`], or the test fails with the proxy's log and the instances' stderr.
async fn bounded<T>(shops: &Shops, what: &str, future: impl IntoFuture<Output = T>) -> T {
    match tokio::time::timeout(WAIT, future.into_future()).await {
        Ok(out) => out,
        Err(_) => panic!("{what}: nothing within {WAIT:?}\n{}", shops.stderr()),
    }
}

/// Our client of the shops' front, in `era`, accepting every confirmation (and keeping its question).
async fn client(shops: &Shops, era: EraChoice, asked: Arc<Mutex<Vec<String>>>) -> Client {
    let v2026 = matches!(era, EraChoice::V2026);
    let client = Client::builder()
        .era(era)
        .handshake_timeout(WAIT)
        .on_elicitation(move |params: Value| {
            asked.lock().unwrap().push(params["message"].as_str().unwrap_or_default().to_owned());
            async { Ok(json!({"action": "accept", "content": {"confirm": true}})) }
        })
        .http(shops.url())
        .await
        .unwrap_or_else(|e| panic!("a client of the proxy: {e}\n{}", shops.stderr()));
    assert_eq!(client.era() == mcp::Era::V2026, v2026, "{}", client.protocol_version());
    client
}

/// The tools are listed, a call answers, and `rebuild_index`'s progress comes while it runs: the first notification
/// arrives before any instance has printed that the rebuild ended (the proxy passes events on as they come).
async fn lists_calls_and_streams_progress(shops: &Shops, client: &Client) {
    let tools: BTreeSet<String> = bounded(shops, "tools/list", client.list_tools())
        .await
        .unwrap_or_else(|e| panic!("tools/list: {e}\n{}", shops.stderr()))
        .iter()
        .map(|t| t.name.clone())
        .collect();
    assert_eq!(tools, TOOLS.iter().map(|s| s.to_string()).collect(), "{tools:?}");
    search_status(shops, client, "a call").await;

    let online_before = shops.printed("search back online");
    let progress = Arc::new(Mutex::new(Vec::new()));
    let seen = progress.clone();
    let rebuild = client
        .call_tool("rebuild_index", json!({"titles": ["Dune", "Emma", "Middlemarch"]}))
        .on_progress(move |p| seen.lock().unwrap().push(p.progress));
    let (rebuilt, online_at_first_progress) = tokio::join!(tokio::time::timeout(WAIT, rebuild), async {
        eventually("a first progress notification", shops, async || !progress.lock().unwrap().is_empty()).await;
        shops.printed("search back online")
    });
    assert_eq!(
        online_at_first_progress,
        online_before,
        "progress was held back until the rebuild ended\n{}",
        shops.stderr()
    );
    let rebuilt = rebuilt.unwrap_or_else(|_| panic!("the rebuild never ended\n{}", shops.stderr())).unwrap();
    assert_eq!(rebuilt.text(), Some("Indexed 3 books."), "{rebuilt:?}");
    eventually("every progress notification", shops, async || progress.lock().unwrap().len() == 4).await;
    assert_eq!(*progress.lock().unwrap(), [0.0, 1.0, 2.0, 3.0]);
}

/// Runs `body` while `order_book(title)` holds the book; the order is then dropped (cancelled).
async fn while_holding<T>(shops: &Shops, client: &Client, title: &str, body: impl Future<Output = T>) -> T {
    // Bounded: an order that ends by itself (its 30 s) instead of being dropped fails the test.
    let order = client.call_tool("order_book", json!({"title": title})).timeout(Duration::from_secs(40));
    tokio::select! {
        biased;
        ended = order => panic!("order_book({title}) ended while held: {ended:?}\n{}", shops.stderr()),
        out = async {
            eventually(&format!("{title} is on hold"), shops, async || holds(client).await.contains(&title.to_owned()))
                .await;
            body.await
        } => out,
    }
}

/// An order dropped while it holds its book: the cancel goes through the proxy (2025: a notification; 2026: the
/// connection closed), the instance running the order stops it, and its cleanup releases the hold, well before
/// the order's 30 s.
async fn a_dropped_order_releases_its_hold(shops: &Shops, client: &Client, title: &str) {
    while_holding(shops, client, title, async {}).await;
    let dropped = Instant::now();
    loop {
        if !holds(client).await.contains(&title.to_owned()) {
            break;
        }
        assert!(
            dropped.elapsed() < RELEASED_WITHIN,
            "the dropped order still holds {title} after {RELEASED_WITHIN:?}: the cancel did not reach its \
             instance\n{}",
            shops.stderr()
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let released = format!("released hold on {title:?}");
    eventually("an instance says it released the hold", shops, async || shops.printed(&released) == 1).await;
}

/// How many requests the proxy has logged, once it has logged every request that has ended (a proxy writes its
/// line just after the response's last byte, so a client may see the answer first): a mark to count from.
async fn log_mark(shops: &Shops) -> usize {
    let mut count = shops.proxy().sent().len();
    loop {
        tokio::time::sleep(Duration::from_millis(150)).await;
        let now = shops.proxy().sent().len();
        if now == count {
            return count;
        }
        count = now;
    }
}

/// The instances that answered requests so far, once every ended request is logged (see [`log_mark`]).
async fn instances_used(shops: &Shops) -> BTreeSet<usize> {
    log_mark(shops).await;
    shops.proxy().sent().into_iter().collect()
}

/// The instances that answered the first `n` requests logged after `mark`, once they are logged.
async fn answered_since(shops: &Shops, mark: usize, n: usize) -> Vec<usize> {
    eventually(&format!("{n} requests logged"), shops, async || shops.proxy().sent().len() >= mark + n).await;
    shops.proxy().sent()[mark..mark + n].to_vec()
}

/// Our 2026 client through the proxy: tools, a call, progress while the call runs; a listener hearing a hold made
/// by a call that went to another instance; `cancel_hold`'s confirmation, an `input_required` round whose retry
/// lands on another instance than the question; a dropped call, whose closed connection the proxy passes on so
/// that the instance stops it and releases its hold.
async fn our_2026_client(kind: Kind) {
    let shops = Shops::behind(kind).await;
    let asked: Arc<Mutex<Vec<String>>> = Arc::default();
    let client = client(&shops, EraChoice::V2026, asked.clone()).await;
    lists_calls_and_streams_progress(&shops, &client).await;

    let listener = self::client(&shops, EraChoice::V2026, Arc::default()).await;
    let mut listen = bounded(&shops, "subscriptions/listen", listener.listen(ListenFilter::new().resource(HOLDS_URI)))
        .await
        .unwrap_or_else(|e| panic!("subscriptions/listen: {e}\n{}", shops.stderr()));
    while_holding(&shops, &client, "Emma", async {
        let heard = tokio::time::timeout(WAIT, listen.next())
            .await
            .unwrap_or_else(|_| panic!("the listener never heard the hold\n{}", shops.stderr()))
            .expect("the listen stream ended");
        assert_eq!(heard.method, "notifications/resources/updated", "{heard:?}");
        assert_eq!(heard.params["uri"], HOLDS_URI, "{heard:?}");

        let mark = log_mark(&shops).await;
        let released = tokio::time::timeout(WAIT, client.call_tool("cancel_hold", json!({"title": "Emma"})))
            .await
            .unwrap_or_else(|_| panic!("cancel_hold never ended\n{}", shops.stderr()))
            .unwrap_or_else(|e| panic!("cancel_hold: {e}\n{}", shops.stderr()));
        assert_eq!(released.text(), Some(r#"Released the hold on "Emma"."#), "{released:?}\n{}", shops.stderr());
        assert_eq!(*asked.lock().unwrap(), [r#"Release the hold on "Emma"?"#], "our client was asked once");
        let rounds = answered_since(&shops, mark, 2).await;
        assert_ne!(rounds[0], rounds[1], "the retry landed on the question's instance\n{}", shops.stderr());
    })
    .await;
    let heard = tokio::time::timeout(WAIT, listen.next())
        .await
        .unwrap_or_else(|_| panic!("the listener never heard the release\n{}", shops.stderr()))
        .expect("the listen stream ended");
    assert_eq!(heard.method, "notifications/resources/updated", "{heard:?}");
    drop(listen);

    a_dropped_order_releases_its_hold(&shops, &client, "Dune").await;

    // A request body above nginx's default limit (1 MiB; the server takes up to 4 MiB): nginx.conf raises the
    // limit, HAProxy has none, and the minimal configuration refuses it (413, from nginx).
    let padding = "x".repeat(2 << 20);
    let big = client.call_tool("search_status", json!({"padding": padding}));
    let big = bounded(&shops, "a call of 2 MiB", big).await;
    match kind {
        Kind::NginxMinimal => assert!(big.is_err(), "nginx's 1 MiB limit: {big:?}"),
        Kind::Nginx | Kind::Haproxy => {
            let big = big.unwrap_or_else(|e| panic!("a call of 2 MiB: {e}\n{}", shops.stderr()));
            assert_eq!(big.text(), Some("online"), "{big:?}");
        }
    }

    let used = instances_used(&shops).await;
    assert_eq!(used.len(), 3, "every instance served: {used:?}\n{}", shops.stderr());
    shops.assert_nothing_panicked();
}

/// An SSE stream read by hand: its messages (`data:` lines) and its comments (lines starting with `:`).
struct Sse {
    response: reqwest::Response,
    buffer: String,
    /// The comment lines read so far.
    comments: Vec<String>,
}

impl Sse {
    fn of(response: reqwest::Response) -> Sse {
        Sse { response, buffer: String::new(), comments: Vec::new() }
    }

    /// The next whole line, `None` at the end of the stream or at `deadline`.
    async fn line(&mut self, deadline: Instant) -> Option<String> {
        loop {
            if let Some(end) = self.buffer.find('\n') {
                let line: String = self.buffer.drain(..=end).collect();
                return Some(line.trim_end_matches(['\n', '\r']).to_owned());
            }
            let left = deadline.saturating_duration_since(Instant::now());
            match tokio::time::timeout(left, self.response.chunk()).await {
                Ok(Ok(Some(chunk))) => self.buffer.push_str(&String::from_utf8_lossy(&chunk)),
                _ => return None,
            }
        }
    }

    /// The next JSON-RPC message within `within`, skipping comments and events without data (priming events).
    async fn message(&mut self, within: Duration) -> Option<Value> {
        let deadline = Instant::now() + within;
        let mut data = String::new();
        loop {
            let line = self.line(deadline).await?;
            if line.starts_with(':') {
                self.comments.push(line);
            } else if let Some(more) = line.strip_prefix("data:") {
                data.push_str(more.strip_prefix(' ').unwrap_or(more));
            } else if line.is_empty() && !data.is_empty() {
                return Some(serde_json::from_str(&data).unwrap_or_else(|e| panic!("not JSON ({e}): {data}")));
            }
        }
    }

    /// Waits (up to [`WAIT`]) for `notifications/resources/updated` about `uri`, skipping other messages.
    async fn updated(&mut self, shops: &Shops, uri: &str, what: &str) {
        let deadline = Instant::now() + WAIT;
        let mut others = Vec::new();
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            let Some(message) = self.message(left).await else {
                panic!("the GET stream carried no update of {uri} for {what} (only {others:?})\n{}", shops.stderr())
            };
            if message["method"] == "notifications/resources/updated" && message["params"]["uri"] == uri {
                return;
            }
            others.push(message);
        }
    }

    /// Whether a comment line comes within `within`.
    async fn comment(&mut self, within: Duration) -> bool {
        let deadline = Instant::now() + within;
        while self.comments.is_empty() {
            match self.line(deadline).await {
                Some(line) if line.starts_with(':') => self.comments.push(line),
                Some(_) => {}
                None => return false,
            }
        }
        true
    }
}

/// A 2025 session by hand through the proxy, its standalone GET stream open: what the server sends outside any
/// request, as it arrives.
async fn session_stream(shops: &Shops) -> (common::http::Client, Sse) {
    let mut session = common::http::Client { http: reqwest::Client::new(), url: shops.url().to_owned(), session: None };
    bounded(shops, "a session's initialize", session.initialize(json!({}))).await;
    assert!(session.session.is_some(), "the initialize answer gave a session id");
    let get = bounded(shops, "the answer to a session's GET", session.get(None)).await;
    assert_eq!(get.status(), 200, "the GET stream\n{}", shops.stderr());
    let sse = get.headers().get("content-type").is_some_and(|v| v.as_bytes().starts_with(b"text/event-stream"));
    assert!(sse, "the GET stream is SSE: {:?}", get.headers());
    (session, Sse::of(get))
}

/// Our 2025 client through the proxy keeps one session that every instance serves: tools, a call, progress while
/// the call runs; `cancel_hold`'s confirmation asked on the call's stream and answered by a POST that lands on
/// another instance; a subscription's update on another session's GET stream; a dropped call, whose cancel
/// notification reaches the instance running it, which releases the hold.
async fn our_2025_client(kind: Kind) {
    let shops = Shops::behind(kind).await;
    let asked: Arc<Mutex<Vec<String>>> = Arc::default();
    let client = client(&shops, EraChoice::V2025, asked.clone()).await;
    assert_eq!(client.protocol_version(), "2025-11-25");
    lists_calls_and_streams_progress(&shops, &client).await;
    let used = instances_used(&shops).await;
    assert_eq!(used.len(), 3, "the session's requests went to every instance: {used:?}\n{}", shops.stderr());

    // Another session, subscribed to the holds, its GET stream open (each request of it on the next instance).
    let (watcher, mut stream) = session_stream(&shops).await;
    let subscribe = watcher.call(1, "resources/subscribe", json!({"uri": HOLDS_URI}));
    let (subscribed, _) = bounded(&shops, "resources/subscribe", subscribe).await;
    assert!(subscribed.get("result").is_some(), "{subscribed}");

    while_holding(&shops, &client, "Middlemarch", async {
        stream.updated(&shops, HOLDS_URI, "the hold").await;

        let mark = log_mark(&shops).await;
        let released = tokio::time::timeout(WAIT, client.call_tool("cancel_hold", json!({"title": "Middlemarch"})))
            .await
            .unwrap_or_else(|_| panic!("cancel_hold never ended\n{}", shops.stderr()))
            .unwrap_or_else(|e| panic!("cancel_hold: {e}\n{}", shops.stderr()));
        assert_eq!(released.text(), Some(r#"Released the hold on "Middlemarch"."#), "{released:?}\n{}", shops.stderr());
        assert_eq!(*asked.lock().unwrap(), [r#"Release the hold on "Middlemarch"?"#], "our client was asked once");
        // The answer (a POST answered 202) and the call, which ended after it.
        let rounds = answered_since(&shops, mark, 2).await;
        assert_ne!(rounds[0], rounds[1], "the answer landed on the question's instance\n{}", shops.stderr());
    })
    .await;
    stream.updated(&shops, HOLDS_URI, "the release").await;
    eventually("the first order's cleanup ran", &shops, async || {
        shops.printed(r#"released hold on "Middlemarch""#) == 1
    })
    .await;

    let cancelled = r#"reason="the client stopped waiting""#;
    let cancelled_before = shops.printed(cancelled);
    a_dropped_order_releases_its_hold(&shops, &client, "Dune").await;
    // The 2025 way: our client's cancel notification, with its reason (not the stream's end).
    assert_eq!(shops.printed(cancelled), cancelled_before + 1, "the dropped order was cancelled\n{}", shops.stderr());
    bounded(&shops, "the session's DELETE", client.close()).await;
    shops.assert_nothing_panicked();
}

/// The official Python SDK through the proxy, in both eras (tests/python/balanced_2026.py, balanced_2025.py): tools,
/// calls with progress, the confirmation; in 2025 one session every instance serves, and a cancelled call.
async fn the_python_sdk(kind: Kind) {
    let shops = Shops::behind(kind).await;
    let python = tokio::task::spawn_blocking(common::python::python).await.unwrap();
    for script in ["balanced_2026.py", "balanced_2025.py"] {
        let run = tokio::process::Command::new(&python)
            .arg(std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/python").join(script))
            .arg(shops.url())
            .env("PYTHONUNBUFFERED", "1")
            .kill_on_drop(true)
            .output();
        let within = Duration::from_secs(60);
        let out = tokio::time::timeout(within, run)
            .await
            .unwrap_or_else(|_| panic!("{script} did not end within {within:?}\n{}", shops.stderr()))
            .expect("run python");
        let text = format!("{}\n{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
        assert!(out.status.success() && text.contains("all ok"), "{script}:\n{text}\n{}", shops.stderr());
    }
    let used = instances_used(&shops).await;
    assert_eq!(used.len(), 3, "every instance served: {used:?}");
    shops.assert_nothing_panicked();
}

/// The server's keep-alive comment (`:`), sent on every open stream once it has been idle for `--keep-alive`
/// seconds, reaches a client through the proxy: what keeps an idle stream from the proxy's read timeout.
async fn a_keep_alive_comment_passes(kind: Kind) {
    let shops = Shops::behind_with(kind, &["--keep-alive", "1"]).await;
    let (_session, mut stream) = session_stream(&shops).await;
    let within = Duration::from_secs(5);
    let started = Instant::now();
    assert!(
        stream.comment(within).await,
        "no keep-alive comment on the idle GET stream within {within:?} (the server sends one every 1 s)\n{}",
        shops.stderr()
    );
    eprintln!("a keep-alive comment came after {:?}: {:?}", started.elapsed(), stream.comments);
    shops.assert_nothing_panicked();
}

/// A `search_status` call that must answer "online".
async fn search_status(shops: &Shops, client: &Client, what: &str) {
    let called = tokio::time::timeout(WAIT, client.call_tool("search_status", json!({})))
        .await
        .unwrap_or_else(|_| panic!("{what}: a call hung\n{}", shops.stderr()))
        .unwrap_or_else(|e| panic!("{what}: a call failed: {e}\n{}", shops.stderr()));
    assert_eq!(called.text(), Some("online"), "{what}: {called:?}");
}

/// `/healthz` and `/readyz` answer through the proxy. SIGKILL of an instance between calls: every later call
/// through the proxy still succeeds, in both eras (HAProxy: its connection to the dead instance refused,
/// redispatched to another, then the health checks take the instance out; nginx: `proxy_next_upstream error`),
/// and none is answered by the dead instance.
async fn an_instance_killed_between_calls(kind: Kind) {
    let mut shops = Shops::behind(kind).await;
    let v2026 = client(&shops, EraChoice::V2026, Arc::default()).await;
    let v2025 = client(&shops, EraChoice::V2025, Arc::default()).await;
    // The checks an outside monitor asks through the proxy (the minimal configuration passes only /mcp on).
    if kind != Kind::NginxMinimal {
        for (path, answer) in [("/healthz", "ok\n"), ("/readyz", "ready\n")] {
            let url = shops.url().replace("/mcp", path);
            let checked = bounded(&shops, path, reqwest::get(&url)).await.unwrap();
            assert_eq!(checked.status(), 200, "{path}\n{}", shops.stderr());
            assert_eq!(checked.text().await.unwrap(), answer, "{path}");
        }
    }
    for _ in 0..3 {
        search_status(&shops, &v2026, "before the kill, 2026").await;
        search_status(&shops, &v2025, "before the kill, 2025").await;
    }
    let dead = 1;
    kill(&shops.instances[dead], "-KILL");
    assert!(shops.instances[dead].wait_exit(WAIT).is_some(), "the killed instance exited");
    let mark = log_mark(&shops).await;
    for _ in 0..6 {
        search_status(&shops, &v2026, "after the kill, 2026").await;
        search_status(&shops, &v2025, "after the kill, 2025").await;
    }
    let after = log_mark(&shops).await;
    let answered = &shops.proxy().sent()[mark..after];
    assert!(answered.len() >= 12, "every call logged: {answered:?}");
    assert!(!answered.contains(&dead), "the dead instance answered: {answered:?}\n{}", shops.stderr());
    let used: BTreeSet<usize> = answered.iter().copied().collect();
    assert_eq!(used.len(), 2, "both live instances served on: {used:?}\n{}", shops.stderr());
    match kind {
        // Round-robin sent requests to the dead instance, and nginx passed each on to the next one.
        Kind::Nginx | Kind::NginxMinimal => {
            let retried = shops.proxy().logged()[mark..]
                .iter()
                .any(|l| l.tried.first() == Some(&dead) && l.upstream.is_some_and(|u| u != dead));
            assert!(retried, "no request was retried past the dead instance\n{}", shops.stderr());
        }
        // The health checks (GET /readyz) took the dead instance out.
        Kind::Haproxy => {
            eventually("HAProxy's health checks took the dead instance out", &shops, async || {
                shops.proxy().log_text().contains("Server mcp/mcp2 is DOWN")
            })
            .await
        }
    }
    shops.assert_nothing_panicked();
}

/// SIGKILL of the instance running a call, while its progress streams through the proxy, in each era in turn (a
/// different instance each time): the call ends with an error instead of hanging. In 2026 at once: the proxy cuts
/// the call's stream. In 2025 the client resumes the stream with `Last-Event-ID`, the proxy sends that to a live
/// instance, which follows the dead one's events in Redis until the dead one's lease runs out (5 s), then answers
/// the call with an error saying its instance stopped. The live instances serve the next calls.
async fn an_instance_killed_mid_call(kind: Kind) {
    use std::sync::atomic::{AtomicUsize, Ordering};
    let mut shops = Shops::behind(kind).await;
    let mut dead = Vec::new();
    for era in [EraChoice::V2026, EraChoice::V2025] {
        let client = client(&shops, era, Arc::default()).await;
        let offline = |i: usize| shops.instances[i].stderr_text().matches("search offline").count();
        let before: Vec<usize> = (0..3).map(offline).collect();
        let progressed = Arc::new(AtomicUsize::new(0));
        let seen = progressed.clone();
        let titles: Vec<String> = (0..60).map(|i| format!("Book {i}")).collect();
        let rebuild = client.call_tool("rebuild_index", json!({"titles": titles})).on_progress(move |_| {
            seen.fetch_add(1, Ordering::SeqCst);
        });
        let (rebuilt, killed) = tokio::join!(tokio::time::timeout(WAIT, rebuild), async {
            eventually("the rebuild streams its progress", &shops, async || progressed.load(Ordering::SeqCst) > 1)
                .await;
            let running: Vec<usize> = (0..3).filter(|&i| offline(i) > before[i]).collect();
            assert_eq!(running.len(), 1, "one instance runs the rebuild: {running:?}\n{}", shops.stderr());
            kill(&shops.instances[running[0]], "-KILL");
            (running[0], Instant::now())
        });
        let (killed, at) = killed;
        let rebuilt =
            rebuilt.unwrap_or_else(|_| panic!("{era:?}: the call on the killed instance hung\n{}", shops.stderr()));
        let error = rebuilt.expect_err("the call on the killed instance");
        eprintln!("{era:?}: the call ended {:?} after the kill: {error}", at.elapsed());
        if era == EraChoice::V2025 {
            assert!(error.to_string().contains("stopped before it answered"), "{error}");
        }
        assert!(shops.instances[killed].wait_exit(WAIT).is_some(), "the killed instance exited");
        dead.push(killed);
        for _ in 0..3 {
            search_status(&shops, &client, "after the kill").await;
        }
    }
    assert_ne!(dead[0], dead[1], "each era killed the instance running its call");
    shops.assert_nothing_panicked();
}

/// SIGKILL of the instance running a task, in each era in turn (a different instance each time): the client
/// waiting on the task through the proxy (2025: a `tasks/result` that blocks until the task ends; 2026: polling
/// `tasks/get`) learns that the task failed because its instance stopped, once the task's lease has run out
/// (`TaskSettings::DEFAULT_LEASE`, 5 s, and a second's grace), instead of waiting for ever.
async fn a_task_whose_instance_died(kind: Kind) {
    let shops = Shops::behind(kind).await;
    let mut dead = Vec::new();
    for era in [EraChoice::V2026, EraChoice::V2025] {
        let client = client(&shops, era, Arc::default()).await;
        let offline = |i: usize| shops.instances[i].stderr_text().matches("search offline").count();
        let before: Vec<usize> = (0..3).map(offline).collect();
        let titles: Vec<String> = (0..60).map(|i| format!("Book {i}")).collect();
        let started = client.call_tool_as_task("rebuild_index", json!({"titles": titles}), None).await;
        let Ok(mcp::client::Started::Task(task)) = started else {
            panic!("{era:?}: rebuild_index runs as a task: {started:?}\n{}", shops.stderr())
        };
        let mut running = Vec::new();
        eventually("an instance runs the task", &shops, async || {
            running = (0..3).filter(|&i| offline(i) > before[i]).collect();
            !running.is_empty()
        })
        .await;
        assert_eq!(running.len(), 1, "one instance runs the task: {running:?}\n{}", shops.stderr());
        kill(&shops.instances[running[0]], "-KILL");
        let killed = Instant::now();
        let waited = tokio::time::timeout(WAIT, async {
            match era {
                EraChoice::V2025 => client.request("tasks/result", json!({"taskId": task.id()})).await.map(|_| ()),
                _ => task.wait_with(|_| {}).await.map(|_| ()),
            }
        });
        let waited = waited.await.unwrap_or_else(|_| panic!("{era:?}: the wait hung\n{}", shops.stderr()));
        let error = waited.expect_err("the task of the killed instance failed");
        eprintln!("{era:?}: the task ended {:?} after the kill: {error}", killed.elapsed());
        assert!(error.to_string().contains("instance that ran this task stopped"), "{era:?}: {error}");
        assert!(killed.elapsed() < Duration::from_secs(10), "{era:?}: within the lease: {:?}", killed.elapsed());
        assert_eq!(task.get().await.unwrap().status, "failed", "{era:?}: the record says so");
        dead.push(running[0]);
    }
    assert_ne!(dead[0], dead[1], "each era killed the instance running its task");
    shops.assert_nothing_panicked();
}

/// The client's address reaches the instance through the proxy: a client on 127.0.0.2 (the proxy itself is on
/// 127.0.0.1) orders a book, and the instance's log line for it ("a book held", inside the request's span) names
/// `client.address=127.0.0.2`, not the proxy's, nor the address the client wrote in its own `X-Forwarded-For`
/// (the server takes the last address, the one the nearest proxy added). Behind the minimal nginx configuration,
/// which forwards nothing, the instances do not trust the header and name the proxy.
async fn the_client_address_is_forwarded(kind: Kind) {
    let shops = Shops::behind(kind).await;
    let http = reqwest::Client::builder().local_address(std::net::IpAddr::from([127, 0, 0, 2])).build().unwrap();
    let client = common::http::Client { http, url: shops.url().to_owned(), session: None };
    let order = common::v2026::request(
        1,
        "tools/call",
        json!({"name": "order_book", "arguments": {"title": "Emma"}}),
        json!({}),
    );
    let spoofed = [("x-forwarded-for", Some("203.0.113.9"))];
    // The order holds its book for 30 s: the request is dropped once the instance has logged it.
    let ordering = tokio::spawn(async move { client.v2026_send_with(&order, &spoofed).await });
    eventually("an instance logged the order", &shops, async || shops.printed("a book held") > 0).await;
    ordering.abort();
    let line = shops.stderr().lines().find(|l| l.contains("a book held")).unwrap_or_default().to_owned();
    let expected = if kind.forwards_the_client() { "client.address=127.0.0.2" } else { "client.address=127.0.0.1" };
    assert!(line.contains(expected), "{kind:?}: {expected} in {line}\n{}", shops.stderr());
    assert!(!line.contains("203.0.113.9"), "the client's own header is not believed: {line}");
    shops.assert_nothing_panicked();
}

/// A rolling restart under load: each instance in turn is stopped with SIGTERM (it says it is not ready, serves what
/// it has and what still comes, each connection closed after its answer, then exits 0) and started again on its
/// address, and the next one once it serves again, while clients of both eras call without pause through the
/// proxy. No call fails.
async fn a_rolling_restart_loses_no_call(kind: Kind) {
    under_load(kind, &[shops::REQUEST_STATE_KEY]).await
}

/// The `requestState` key rotated across the running fleet, as an operator does it: every instance restarted in turn
/// with `old,new` (the old key seals, both open), then `new,old`, then `new` alone, under the load of both eras,
/// whose 2026 `cancel_hold` calls each take an `input_required` round (the confirmation) whose retry the proxy sends
/// to another instance, restarted or not. No call fails, no retry is refused.
async fn a_key_rotation_loses_no_retry(kind: Kind) {
    const NEW: &str = "9e11ed0b00c5e1f5ea1ed0b00c5e1f5ea1ed0b00c5e1f5ea1ed0b00c5e1f0042";
    let old = shops::REQUEST_STATE_KEY;
    under_load(kind, &[&format!("{old},{NEW}"), &format!("{NEW},{old}"), NEW]).await
}

/// The instances share a Redis Sentinel set (`--redis redis+sentinel://.../mymaster`); its primary is killed and the
/// sentinels promote the replica, while clients of both eras call through the proxy. No call fails: the instances
/// follow the sentinels to the new primary, and a 2025 session opened before (its record replicated) is served on
/// by every instance after, through the proxy's round-robin. The calls are of a tool that keeps nothing in Redis
/// itself: a handler's own Redis commands fail while there is no primary (about a second), as the bookshop's
/// `list_holds` says ("the holds are out of reach"), and work again once the instances moved, which the test
/// checks after.
async fn a_redis_failover_loses_no_call(kind: Kind) {
    let mut shops = Shops::behind_sentinels(kind).await;
    let session = client(&shops, EraChoice::V2025, Arc::default()).await;
    search_status(&shops, &session, "before the failover").await;
    let load = Load::start(&shops, &[(EraChoice::V2026, "search_status"), (EraChoice::V2025, "search_status")]).await;
    // What was written so far (the sessions' records) is on the replica when the primary dies; what the last
    // milliseconds wrote may not be, as Redis replicates asynchronously.
    let set = shops.redis.sentinel();
    set.wait_replicated();
    let old_primary = set.primary.port;
    set.primary.stop();
    let deadline = Instant::now() + Duration::from_secs(30);
    while set.primary_port().is_none_or(|port| port == old_primary) {
        assert!(Instant::now() < deadline, "the sentinels promoted no replica");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    // Calls go on a while on the new primary, and the session opened before is served by each instance.
    tokio::time::sleep(Duration::from_secs(3)).await;
    for _ in 0..3 {
        search_status(&shops, &session, "the session opened before the failover").await;
        // The program's own data, through `Redis::connection()`, on the new primary.
        let listed = bounded(&shops, "list_holds", session.call_tool("list_holds", json!({}))).await;
        assert!(listed.as_ref().is_ok_and(|l| !l.is_error()), "{listed:?}\n{}", shops.stderr());
    }
    let served = load.finish(&shops).await;
    assert!(served > 50, "calls went on: {served}");
    assert!(shops.printed("Redis") > 0, "the instances logged their move: {}", shops.stderr());
    eprintln!("{served} calls served through a Redis failover behind {kind:?}");
    shops.assert_nothing_panicked();
}

/// Clients calling through the proxy without pause (a pause of 10 ms between calls), until [`Load::finish`].
struct Load {
    stop: Arc<std::sync::atomic::AtomicBool>,
    served: Arc<Mutex<usize>>,
    failed: Arc<Mutex<Vec<String>>>,
    clients: Vec<tokio::task::JoinHandle<()>>,
}

impl Load {
    /// A client of each era given, calling its tool (`cancel_hold`, whose confirmation is an `input_required` round
    /// in 2026, with a title; any other with no arguments).
    async fn start(shops: &Shops, tools: &[(EraChoice, &'static str)]) -> Load {
        let stop = Arc::new(std::sync::atomic::AtomicBool::new(false));
        let (served, failed) = (Arc::new(Mutex::new(0usize)), Arc::new(Mutex::new(Vec::<String>::new())));
        let mut clients = Vec::new();
        for &(era, tool) in tools {
            let client = client(shops, era, Arc::default()).await;
            let (stop, served, failed) = (stop.clone(), served.clone(), failed.clone());
            let arguments = if tool == "cancel_hold" { json!({"title": "Persuasion"}) } else { json!({}) };
            clients.push(tokio::spawn(async move {
                while !stop.load(std::sync::atomic::Ordering::SeqCst) {
                    match tokio::time::timeout(WAIT, client.call_tool(tool, arguments.clone())).await {
                        Ok(Ok(called)) if !called.is_error() => *served.lock().unwrap() += 1,
                        other => failed.lock().unwrap().push(format!("{era:?} {tool}: {other:?}")),
                    }
                    tokio::time::sleep(Duration::from_millis(10)).await;
                }
            }));
        }
        Load { stop, served, failed, clients }
    }

    /// Stops the clients; fails the test if any call failed; the calls served.
    async fn finish(self, shops: &Shops) -> usize {
        self.stop.store(true, std::sync::atomic::Ordering::SeqCst);
        for client in self.clients {
            client.await.unwrap();
        }
        let failed = self.failed.lock().unwrap().clone();
        let served = *self.served.lock().unwrap();
        let all = served + failed.len();
        assert!(failed.is_empty(), "{} of {all} calls failed: {failed:?}\n{}", failed.len(), shops.stderr());
        served
    }
}

/// Calls of both eras through the proxy without pause (2025 and 2026 `search_status`, and 2026 `cancel_hold`, whose
/// confirmation is an `input_required` round) while every instance is restarted in turn once for each of `steps`
/// (its `requestState` keys). No call may fail.
async fn under_load(kind: Kind, steps: &[&str]) {
    let mut shops = Shops::behind(kind).await;
    let tools = [
        (EraChoice::V2026, "search_status"),
        (EraChoice::V2025, "search_status"),
        (EraChoice::V2026, "search_status"),
        (EraChoice::V2026, "cancel_hold"),
    ];
    let load = Load::start(&shops, &tools).await;
    let mark = shops.proxy().sent().len();
    for (i, keys) in steps.iter().flat_map(|keys| (0..3).map(move |i| (i, *keys))) {
        shops.restart_with_keys(i, keys).await;
        let ready = shops.instances[i].url.replace("/mcp", "/readyz");
        eventually("the restarted instance is ready", &shops, async || {
            reqwest::get(&ready).await.is_ok_and(|r| r.status() == 200)
        })
        .await;
        if kind == Kind::Haproxy {
            // If its checks took it out (it said 503 while draining), HAProxy takes it back after two good ones.
            let (down, up) = (format!("Server mcp/mcp{} is DOWN", i + 1), format!("Server mcp/mcp{} is UP", i + 1));
            eventually("HAProxy took the restarted instance back", &shops, async || {
                let log = shops.proxy().log_text();
                log.matches(&down).count() == log.matches(&up).count()
            })
            .await;
        }
        // As an operator does, the next instance is stopped once this one serves again.
        let from = shops.proxy().sent().len();
        eventually("the restarted instance serves again", &shops, async || {
            shops.proxy().sent().get(from..).is_some_and(|sent| sent.contains(&i))
        })
        .await;
    }
    tokio::time::sleep(Duration::from_millis(500)).await;
    let served = load.finish(&shops).await;
    assert!(served > 100, "calls went on: {served}");
    let after = log_mark(&shops).await;
    let answered: BTreeSet<usize> =
        shops.proxy().sent()[after.saturating_sub(30).max(mark)..after].iter().copied().collect();
    eprintln!("{served} calls served through a rolling restart behind {kind:?}; the last ones by {answered:?}");
    shops.assert_nothing_panicked();
}
