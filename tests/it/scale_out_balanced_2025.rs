//! Three bookshop processes (`--http`, `--redis`, one `MCP_REQUEST_STATE_KEY`) sharing a real `redis-server`,
//! behind a round-robin HTTP proxy (tests/common/balancer.rs) that sends each request to the next instance, spoken
//! to in the 2025-11-25 era: one session, opened on one instance, whose requests, answers and cancels land on all
//! three. Our client and the official Python SDK list, call with progress, answer the server's question through
//! another instance than the one asking, drop a call, and end the session everywhere with their DELETE; a call's
//! stream broken mid-call resumes with `Last-Event-ID` on another instance.

use crate::common;

use std::collections::BTreeSet;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use common::shops::{eventually, holds, kill, sent_to, Shops, WAIT};
use hyper::body::Incoming;
use hyper::Request;
use hyper_util::rt::TokioIo;
use mcp::client::{Client, EraChoice};
use mcp::store::SessionStore;
use serde_json::{json, Value};

impl Shops {
    /// How many 2025 sessions the instances' shared session store holds.
    async fn stored_sessions(&self) -> usize {
        let redis = mcp::redis::Redis::connect(&self.redis.url()).await.unwrap();
        redis.session_store().count().await.unwrap()
    }

    /// The status of a `ping` naming `session`, sent straight to instance `i` (not through the balancer).
    async fn ping_on(&self, i: usize, session: &str) -> u16 {
        let direct = common::http::Client {
            http: reqwest::Client::new(),
            url: self.instances[i].url.clone(),
            session: Some(session.to_owned()),
        };
        direct.send(&common::http::request(9000 + i as i64, "ping", json!({}))).await.status().as_u16()
    }
}

/// A pass-through proxy in front of the balancer that notes the session ids of what goes through it: the one the
/// answer to `initialize` gives (our client keeps it to itself), and every one a request names.
struct Tap {
    /// `http://127.0.0.1:PORT/mcp`.
    url: String,
    /// The session id an answer gave.
    given: Arc<Mutex<Option<String>>>,
    /// The session ids the requests named.
    named: Arc<Mutex<BTreeSet<String>>>,
    accept: tokio::task::JoinHandle<()>,
}

impl Tap {
    async fn start(upstream: &str) -> Tap {
        let authority = upstream.trim_start_matches("http://").trim_end_matches("/mcp").to_owned();
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.expect("bind the tap");
        let url = format!("http://{}/mcp", listener.local_addr().unwrap());
        let given: Arc<Mutex<Option<String>>> = Arc::default();
        let named: Arc<Mutex<BTreeSet<String>>> = Arc::default();
        let (given_w, named_w) = (given.clone(), named.clone());
        let accept = tokio::spawn(async move {
            loop {
                let Ok((tcp, _)) = listener.accept().await else { continue };
                let _ = tcp.set_nodelay(true);
                let (authority, given, named) = (authority.clone(), given_w.clone(), named_w.clone());
                let service = hyper::service::service_fn(move |request: Request<Incoming>| {
                    let (authority, given, named) = (authority.clone(), given.clone(), named.clone());
                    async move {
                        if let Some(id) = request.headers().get("mcp-session-id").and_then(|v| v.to_str().ok()) {
                            named.lock().unwrap().insert(id.to_owned());
                        }
                        let tcp = tokio::net::TcpStream::connect(&authority).await?;
                        let _ = tcp.set_nodelay(true);
                        let (mut sender, connection) = hyper::client::conn::http1::handshake(TokioIo::new(tcp))
                            .await
                            .map_err(std::io::Error::other)?;
                        tokio::spawn(connection);
                        let response = sender.send_request(request).await.map_err(std::io::Error::other)?;
                        if let Some(id) = response.headers().get("mcp-session-id").and_then(|v| v.to_str().ok()) {
                            *given.lock().unwrap() = Some(id.to_owned());
                        }
                        Ok::<_, std::io::Error>(response)
                    }
                });
                tokio::spawn(async move {
                    let _ =
                        hyper::server::conn::http1::Builder::new().serve_connection(TokioIo::new(tcp), service).await;
                });
            }
        });
        Tap { url, given, named, accept }
    }
}

impl Drop for Tap {
    fn drop(&mut self) {
        self.accept.abort();
    }
}

/// One 2025 session of our client, through the tap and the balancer: requests, answers to the server's questions
/// and cancels go to the instances in turn. Every confirmation is accepted (and its question kept); every
/// notification is kept.
async fn client_of(shops: &Shops, tap: &Tap, asked: Arc<Mutex<Vec<String>>>, heard: Arc<Mutex<Vec<Value>>>) -> Client {
    let client = Client::builder()
        .era(EraChoice::V2025)
        .on_elicitation(move |params: Value| {
            asked.lock().unwrap().push(params["message"].as_str().unwrap_or_default().to_owned());
            async { Ok(json!({"action": "accept", "content": {"confirm": true}})) }
        })
        .on_notification(move |method, params| heard.lock().unwrap().push(json!({"method": method, "params": params})))
        .http(&tap.url)
        .await
        .unwrap_or_else(|e| panic!("a 2025 client of the balancer: {e}\n{}", shops.stderr()));
    assert!(client.era() == mcp::Era::V2025, "a 2025 session");
    assert_eq!(client.protocol_version(), "2025-11-25");
    client
}

/// Our 2025 client through the balancer keeps one session that every instance serves: tools listed, a call with
/// its progress streamed, a held order with its log message, a dropped order whose cancel reaches the instance
/// running it from another and whose hold is released, `cancel_hold`'s confirmation asked on one instance and
/// answered through another, and the client's DELETE (through one instance) ending the session on all three.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn our_2025_session_is_served_by_every_instance_behind_the_balancer() {
    let shops = Shops::start().await;
    let tap = Tap::start(shops.url()).await;
    let asked: Arc<Mutex<Vec<String>>> = Arc::default();
    let heard: Arc<Mutex<Vec<Value>>> = Arc::default();
    let client = client_of(&shops, &tap, asked.clone(), heard.clone()).await;
    let session = tap.given.lock().unwrap().clone().expect("the initialize answer gave a session id");

    let tools: BTreeSet<String> = client.list_tools().await.unwrap().iter().map(|t| t.name.clone()).collect();
    let expected = ["cancel_hold", "list_holds", "order_book", "rebuild_index", "search_status"];
    assert_eq!(tools, expected.iter().map(|s| s.to_string()).collect(), "{tools:?}");
    assert!(holds(&client).await.is_empty());

    // Progress streams through the balancer: the first notification arrives while the rebuild still runs.
    let online_before = shops.printed("search back online");
    let progress = Arc::new(Mutex::new(Vec::new()));
    let seen = progress.clone();
    let rebuild = client
        .call_tool("rebuild_index", json!({"titles": ["Dune", "Emma", "Middlemarch"]}))
        .on_progress(move |p| seen.lock().unwrap().push(p.progress));
    let (rebuilt, online_at_first_progress) = tokio::join!(tokio::time::timeout(WAIT, rebuild), async {
        eventually("a first progress notification", &shops, async || !progress.lock().unwrap().is_empty()).await;
        shops.printed("search back online")
    });
    assert_eq!(online_at_first_progress, online_before, "progress was held back until the rebuild ended");
    assert_eq!(rebuilt.expect("the rebuild ended").unwrap().text(), Some("Indexed 3 books."));
    eventually("every progress notification", &shops, async || progress.lock().unwrap().len() == 4).await;
    assert_eq!(*progress.lock().unwrap(), [0.0, 1.0, 2.0, 3.0]);

    // An order held on one instance, listed by the others, then dropped once the next request (its cancel) goes to
    // another instance than the order's: the instance running it stops it, and the cleanup releases the hold.
    let from = shops.balancer().sent().len();
    let order = client.call_tool("order_book", json!({"title": "Dune"}));
    let held = async {
        let on = sent_to(&shops, from).await;
        eventually("Dune is on hold", &shops, async || holds(&client).await == ["Dune"]).await;
        // The next request goes to upstream `sent().len() % 3`.
        while shops.balancer().sent().len() % 3 == on {
            holds(&client).await;
        }
        // Counted while the order still runs: dropping it sends the cancel at once, maybe before a count after.
        (on, shops.balancer().sent().len())
    };
    let (ordered_on, cancel_at) = tokio::select! {
        biased;
        ended = order => panic!("order_book(Dune) ended while held: {ended:?}\n{}", shops.stderr()),
        on = held => on,
    };
    let cancelled_on = sent_to(&shops, cancel_at).await;
    assert_ne!(cancelled_on, ordered_on, "the cancel went to another instance than the order");
    eventually("the dropped order released Dune", &shops, async || holds(&client).await.is_empty()).await;
    eventually("the order's instance says it released Dune", &shops, async || {
        shops.instances[ordered_on].stderr_text().contains(r#"released hold on "Dune""#)
    })
    .await;
    // The stream closing alone cancels no 2025 request: the notification did, with our client's reason.
    let ordered_stderr = shops.instances[ordered_on].stderr_text();
    assert!(ordered_stderr.contains(r#"reason="the client stopped waiting""#), "{ordered_stderr}");
    let logged = heard
        .lock()
        .unwrap()
        .iter()
        .any(|n| n["method"] == "notifications/message" && n["params"].to_string().contains(r#"holding \"Dune\""#));
    assert!(logged, "the order's log message came on its stream: {:?}", heard.lock().unwrap());

    // cancel_hold's confirmation: asked on the stream of the instance running it, answered by a POST that the
    // balancer sends to the next instance, which hands the answer to the one waiting for it.
    let from = shops.balancer().sent().len();
    let order = client.call_tool("order_book", json!({"title": "Middlemarch"}));
    let confirmed = async {
        sent_to(&shops, from).await;
        eventually("Middlemarch is on hold", &shops, async || holds(&client).await == ["Middlemarch"]).await;
        let from = shops.balancer().sent().len();
        let released = tokio::time::timeout(WAIT, client.call_tool("cancel_hold", json!({"title": "Middlemarch"})))
            .await
            .unwrap_or_else(|_| panic!("cancel_hold never ended\n{}", shops.stderr()))
            .unwrap();
        assert_eq!(released.text(), Some(r#"Released the hold on "Middlemarch"."#), "{released:?}\n{}", shops.stderr());
        let rounds = shops.sent_since(from);
        assert_eq!(rounds.len(), 2, "the call and the answer to its question: {rounds:?}");
        assert_ne!(rounds[0], rounds[1], "the answer landed on another instance than the question's");
        assert_eq!(*asked.lock().unwrap(), [r#"Release the hold on "Middlemarch"?"#], "our client was asked once");
        assert!(holds(&client).await.is_empty());
    };
    tokio::select! {
        biased;
        ended = order => panic!("order_book(Middlemarch) ended while held: {ended:?}\n{}", shops.stderr()),
        () = confirmed => {}
    };
    eventually("the second order's cleanup ran", &shops, async || {
        shops.printed(r#"released hold on "Middlemarch""#) == 1
    })
    .await;

    let used: BTreeSet<usize> = shops.balancer().sent().into_iter().collect();
    assert_eq!(used.len(), 3, "every instance served the session");
    assert_eq!(*tap.named.lock().unwrap(), BTreeSet::from([session.clone()]), "every request named one session");

    // Every instance serves the session, asked directly; after the client's DELETE (one request, through one
    // instance), none does.
    for i in 0..3 {
        assert_eq!(shops.ping_on(i, &session).await, 200, "instance {i} serves the session\n{}", shops.stderr());
    }
    assert_eq!(shops.stored_sessions().await, 1);
    let from = shops.balancer().sent().len();
    client.close().await;
    let closed = shops.sent_since(from);
    assert_eq!(closed.len(), 1, "one DELETE: {closed:?}");
    for i in 0..3 {
        eventually(&format!("instance {i} ended the session"), &shops, async || {
            shops.ping_on(i, &session).await == 404
        })
        .await;
    }
    assert_eq!(shops.stored_sessions().await, 0, "the session store forgot the session");
    shops.assert_nothing_panicked();
}

/// The official Python SDK as a 2025-11-25 client through the balancer (tests/python/balanced_2025.py): one session
/// whose requests every instance serves, and which its DELETE on exit ends in the shared session store.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_python_sdk_keeps_one_2025_session_through_the_balancer() {
    let shops = Shops::start().await;
    let url = shops.url().to_owned();
    let out = tokio::task::spawn_blocking(move || common::python::run_script("balanced_2025.py", &[url.as_ref()]))
        .await
        .unwrap();
    assert!(out.contains("all ok"), "{out}\n{}", shops.stderr());
    let used: BTreeSet<usize> = shops.balancer().sent().into_iter().collect();
    assert_eq!(used.len(), 3, "every instance served");
    eventually("the SDK's DELETE ended its session", &shops, async || shops.stored_sessions().await == 0).await;
    shops.assert_nothing_panicked();
}

/// A call's SSE stream that breaks mid-call is resumed with `Last-Event-ID` through the balancer, so on another
/// instance than the one running the call: the progress sent while no one read is replayed, the rest follows as
/// the call goes on, then the answer; nothing lost, nothing twice.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_broken_2025_stream_resumes_on_another_instance_behind_the_balancer() {
    use common::http::{request, Body};
    let shops = Shops::start().await;
    let mut client = common::http::Client { http: reqwest::Client::new(), url: shops.url().to_owned(), session: None };
    client.initialize(json!({})).await;
    let titles = ["Dune", "Emma", "Ulysses", "Beloved"];
    let call = request(
        1,
        "tools/call",
        json!({"name": "rebuild_index", "arguments": {"titles": titles}, "_meta": {"progressToken": "p"}}),
    );
    let from = shops.balancer().sent().len();
    let mut body = Body::of(client.send(&call).await).await;
    let first = body.next_message(WAIT).await.expect("the first progress");
    assert_eq!(first["method"], "notifications/progress", "{first}");
    assert_eq!(first["params"]["progress"], 0.0, "{first}");
    let last_id = body.events.last().and_then(|e| e.id.clone()).expect("an event id");
    drop(body);
    // A book is indexed while no one reads.
    tokio::time::sleep(Duration::from_millis(1500)).await;

    let resumed = client.get(Some(&last_id)).await;
    assert_eq!(resumed.status(), 200, "{last_id}: {}\n{}", resumed.text().await.unwrap(), shops.stderr());
    let sent = shops.sent_since(from);
    assert_eq!(sent.len(), 2, "{sent:?}");
    assert_ne!(sent[0], sent[1], "the resume went to another instance than the call's");
    let mut body = Body::of(resumed).await;
    let answer = body.response(&json!(1), "tools/call").await;
    assert_eq!(answer["result"]["content"][0]["text"], "Indexed 4 books.", "{answer}");
    let progress: Vec<f64> = body
        .seen
        .iter()
        .filter(|m| m["method"] == "notifications/progress")
        .map(|m| m["params"]["progress"].as_f64().unwrap())
        .collect();
    assert_eq!(progress, [1.0, 2.0, 3.0, 4.0], "every progress after the first, once each, in order");
    assert!(body.ended(WAIT).await, "the resumed stream ends with the answer");
    shops.assert_nothing_panicked();
}

/// SIGKILL of one instance: the session goes on on the others. Each call that the balancer sends to the dead
/// instance fails (its 502), never hangs; every call sent to a live one is served in the same session, rebuilt
/// there from its record if that instance had not served it yet.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_2025_session_goes_on_when_an_instance_is_killed() {
    let mut shops = Shops::start().await;
    let tap = Tap::start(shops.url()).await;
    let client = client_of(&shops, &tap, Arc::default(), Arc::default()).await;
    assert!(holds(&client).await.is_empty());
    let dead = 1;
    kill(&shops.instances[dead], "-KILL");
    assert!(shops.instances[dead].wait_exit(WAIT).is_some(), "the killed instance exited");
    let mut served = 0;
    for _ in 0..6 {
        let from = shops.balancer().sent().len();
        let called = tokio::time::timeout(WAIT, client.call_tool("search_status", json!({})))
            .await
            .unwrap_or_else(|_| panic!("a call hung\n{}", shops.stderr()));
        let went = shops.sent_since(from);
        if went.contains(&dead) {
            assert!(called.is_err(), "a call sent to the killed instance: {called:?}");
        } else {
            let called = called.unwrap_or_else(|e| panic!("a call to live instances {went:?} failed: {e}"));
            assert_eq!(called.text(), Some("online"));
            served += 1;
        }
    }
    assert!(served >= 3, "the live instances served the session: {served} of 6");
    let ids = tap.named.lock().unwrap().clone();
    assert_eq!(ids.len(), 1, "one session throughout: {ids:?}");
    shops.assert_nothing_panicked();
}

/// SIGKILL of the instance running a call whose stream then breaks: the client resumes it with `Last-Event-ID`
/// through the balancer, so on a live instance, which follows the dead one's stream from the shared log; once the
/// dead instance's lease has run out, the call is answered there with an error saying its instance stopped,
/// instead of leaving the client waiting for ever.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_2025_call_whose_instance_dies_ends_with_an_error_on_the_resumed_stream() {
    use common::http::{request, Body};
    let shops = Shops::start().await;
    let mut client =
        common::http::Client { http: reqwest::Client::new(), url: shops.balancer().url.clone(), session: None };
    client.initialize(json!({})).await;
    let from = shops.balancer().sent().len();
    let mut body = Body::of(
        client.send(&request(1, "tools/call", json!({"name": "order_book", "arguments": {"title": "Dune"}}))).await,
    )
    .await;
    let priming = body.next_event(WAIT).await.expect("the call's stream opens");
    let last_id = priming.id.expect("a priming event has an id");
    let running = sent_to(&shops, from).await;
    // The instance writes its events to Redis off the request's path: once the stream is there, it dies.
    let redis = mcp::redis::Redis::connect(&shops.redis.url()).await.unwrap();
    let stream = last_id.rsplit_once('.').expect("a logged event id").0.to_owned();
    eventually("the call's stream is in the event log", &shops, async || {
        let keys: Vec<String> = mcp::redis::driver::cmd("KEYS")
            .arg(format!("mcp:events:*:{stream}"))
            .query_async(&mut redis.connection())
            .await
            .unwrap_or_default();
        !keys.is_empty()
    })
    .await;
    kill(&shops.instances[running], "-KILL");
    while body.next_message(WAIT).await.is_some() {} // until the call's stream breaks with its instance

    let killed_at = std::time::Instant::now();
    let resumed = client.get(Some(&last_id)).await;
    assert_eq!(resumed.status(), 200, "{last_id}: {}\n{}", resumed.text().await.unwrap(), shops.stderr());
    let mut body = Body::of(resumed).await;
    let answer = body.response(&json!(1), "tools/call").await;
    assert_eq!(answer["error"]["code"], -32603, "{answer}");
    let message = answer["error"]["message"].as_str().unwrap();
    assert!(message.contains("stopped before it answered"), "{answer}");
    assert!(killed_at.elapsed() < Duration::from_secs(12), "within the lease and a little: {:?}", killed_at.elapsed());
    assert!(body.ended(WAIT).await, "the resumed stream ends with the answer");
    shops.assert_nothing_panicked();
}
