//! Three bookshop processes (`--http`, `--redis`, one `MCP_REQUEST_STATE_KEY`) sharing a real `redis-server`,
//! behind a round-robin HTTP proxy (tests/common/balancer.rs) that sends each request to the next instance: in the
//! 2026-07-28 era every POST stands alone, so clients of the balancer see one bookshop. Our client and the official
//! Python SDK list, call, cancel, listen, answer an `input_required` round and follow a task whose requests land on
//! different instances; and the cluster lives through an instance's SIGKILL and SIGTERM, and a Redis restart.

use crate::common;

use std::collections::BTreeSet;
use std::future::Future;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use common::shops::{eventually, holds, kill, sent_to, Shops, WAIT};
use mcp::client::{Client, EraChoice, ListenFilter, Started};
use serde_json::json;

const HOLDS_URI: &str = "bookshop://holds";

impl Shops {
    /// Our client of the balancer, in the 2026 era, accepting every confirmation (and counting them).
    async fn client(&self, asked: Arc<AtomicUsize>) -> Client {
        Client::builder()
            .era(EraChoice::V2026)
            .on_elicitation(move |_| {
                asked.fetch_add(1, Ordering::SeqCst);
                async { Ok(json!({"action": "accept", "content": {"confirm": true}})) }
            })
            .http(self.url())
            .await
            .unwrap_or_else(|e| panic!("a client of the balancer: {e}\n{}", self.stderr()))
    }
}

/// Runs `body` while `order_book(title)` holds the book (the order is then dropped: cancelled); returns the instance
/// the order went to, and what `body` gave.
async fn while_holding<T>(shops: &Shops, client: &Client, title: &str, body: impl Future<Output = T>) -> (usize, T) {
    let from = shops.balancer().sent().len();
    let order = client.call_tool("order_book", json!({"title": title}));
    tokio::select! {
        biased;
        ended = order => panic!("order_book({title}) ended while held: {ended:?}\n{}", shops.stderr()),
        out = async {
            let on = sent_to(shops, from).await;
            let held = format!("{title} is on hold");
            eventually(&held, shops, async || holds(client).await.contains(&title.to_owned())).await;
            (on, body.await)
        } => out,
    }
}

/// Our client through the balancer: tools listed, progress streamed, a dropped call's hold released, a listener
/// hearing changes made on the other instances, a confirmation whose retry lands elsewhere, a task cancelled
/// through other instances than its own.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn our_client_sees_one_bookshop_through_a_round_robin_balancer() {
    let shops = Shops::start().await;
    let asked = Arc::new(AtomicUsize::new(0));
    let client = shops.client(asked.clone()).await;

    let tools: BTreeSet<String> = client.list_tools().await.unwrap().iter().map(|t| t.name.clone()).collect();
    let expected = ["cancel_hold", "list_holds", "order_book", "rebuild_index", "search_status"];
    assert_eq!(tools, expected.iter().map(|s| s.to_string()).collect(), "{tools:?}");

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

    // A call dropped: its stream through the balancer closes, the instance cancels it, and the cleanup releases
    // the hold in Redis, which every instance then lists.
    while_holding(&shops, &client, "Dune", async {}).await;
    eventually("the dropped order released Dune", &shops, async || holds(&client).await.is_empty()).await;
    eventually("an instance says it released Dune", &shops, async || shops.printed(r#"released hold on "Dune""#) == 1)
        .await;

    // A listener on one instance hears the holds change made by a call that went to another.
    let listener = shops.client(Arc::default()).await;
    let from = shops.balancer().sent().len();
    let mut listen = listener.listen(ListenFilter::new().resource(HOLDS_URI)).await.unwrap();
    let listening_on = shops.sent_since(from);
    assert_eq!(listening_on.len(), 1, "one POST for the listen: {listening_on:?}");
    let (order_on, ()) = while_holding(&shops, &client, "Emma", async {
        let heard = tokio::time::timeout(WAIT, listen.next()).await.expect("the listener heard the hold").unwrap();
        assert_eq!(heard.method, "notifications/resources/updated", "{heard:?}");
        assert_eq!(heard.params["uri"], HOLDS_URI);
    })
    .await;
    assert_ne!(order_on, listening_on[0], "the order went to another instance than the listen");
    let heard = tokio::time::timeout(WAIT, listen.next()).await.expect("the listener heard the release").unwrap();
    assert_eq!(heard.method, "notifications/resources/updated", "{heard:?}");
    eventually("the release is listed", &shops, async || holds(&client).await.is_empty()).await;
    drop(listen);

    // cancel_hold's confirmation: the question comes from one instance, the retry with the answer goes to the next.
    while_holding(&shops, &client, "Middlemarch", async {
        let from = shops.balancer().sent().len();
        let released = client.call_tool("cancel_hold", json!({"title": "Middlemarch"})).await.unwrap();
        assert_eq!(released.text(), Some(r#"Released the hold on "Middlemarch"."#), "{released:?}\n{}", shops.stderr());
        let rounds = shops.sent_since(from);
        assert_eq!(rounds.len(), 2, "a question and a retry: {rounds:?}");
        assert_ne!(rounds[0], rounds[1], "the retry landed on another instance");
        assert_eq!(asked.load(Ordering::SeqCst), 1, "our client was asked once");
        assert!(holds(&client).await.is_empty());
    })
    .await;

    // A task created on one instance, polled and cancelled through the others: its handler stops.
    let online_before = shops.printed("search back online");
    let from = shops.balancer().sent().len();
    let titles: Vec<String> = (0..30).map(|i| format!("Book {i}")).collect();
    let Started::Task(task) = client.call_tool_as_task("rebuild_index", json!({"titles": titles}), None).await.unwrap()
    else {
        panic!("rebuild_index answers with a task")
    };
    let created_on = shops.sent_since(from)[0];
    let polled = task.get().await.unwrap();
    assert_eq!(polled.status, "working", "{polled:?}");
    task.cancel().await.unwrap();
    let elsewhere = shops.sent_since(from);
    assert!(elsewhere[1..].iter().all(|i| *i != created_on), "polled and cancelled on others: {elsewhere:?}");
    eventually("the task is cancelled", &shops, async || task.get().await.is_ok_and(|t| t.status == "cancelled")).await;
    eventually("the rebuild stopped: search back online", &shops, async || {
        shops.printed("search back online") > online_before
    })
    .await;
    let status = client.call_tool("search_status", json!({})).await.unwrap();
    assert_eq!(status.text(), Some("online"));

    let used: BTreeSet<usize> = shops.balancer().sent().into_iter().collect();
    assert_eq!(used.len(), 3, "every instance served");
    shops.assert_nothing_panicked();
}

/// The official Python SDK through the balancer (tests/python/balanced_2026.py).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_python_sdk_sees_one_bookshop_through_the_balancer() {
    let shops = Shops::start().await;
    let url = shops.url().to_owned();
    let out = tokio::task::spawn_blocking(move || common::python::run_script("balanced_2026.py", &[url.as_ref()]))
        .await
        .unwrap();
    assert!(out.contains("all ok"), "{out}\n{}", shops.stderr());
    let used: BTreeSet<usize> = shops.balancer().sent().into_iter().collect();
    assert_eq!(used.len(), 3, "every instance served");
    shops.assert_nothing_panicked();
}

/// Calls one at a time for a while: each that went only to live instances works; one sent to `dead` fails (the
/// balancer's 502), never hangs. Returns how many worked.
async fn calls_go_on(shops: &Shops, client: &Client, dead: usize) -> usize {
    let mut worked = 0;
    for _ in 0..6 {
        let from = shops.balancer().sent().len();
        let called = tokio::time::timeout(WAIT, client.call_tool("search_status", json!({})))
            .await
            .unwrap_or_else(|_| panic!("a call hung\n{}", shops.stderr()));
        let went = shops.sent_since(from);
        if went.contains(&dead) {
            assert!(called.is_err(), "a call sent to the stopped instance: {called:?}");
        } else {
            let called = called.unwrap_or_else(|e| panic!("a call to live instances {went:?} failed: {e}"));
            assert_eq!(called.text(), Some("online"));
            worked += 1;
        }
    }
    worked
}

/// SIGKILL of the instance running two calls: one whose answer had not started (the balancer answers 502) and one
/// whose SSE stream was under way (the balancer cuts it); both end with an error, and the others serve on.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_killed_instance_cuts_its_calls_and_the_others_serve_on() {
    let mut shops = Shops::start().await;
    let client = shops.client(Arc::default()).await;
    let from = shops.balancer().sent().len();
    let order = client.call_tool("order_book", json!({"title": "Moby-Dick"}));
    let (ordered, (rebuilt, killed)) = tokio::join!(tokio::time::timeout(WAIT, order), async {
        let running_on = sent_to(&shops, from).await;
        eventually("Moby-Dick is on hold", &shops, async || holds(&client).await == ["Moby-Dick"]).await;
        // The next request goes to upstream `sent().len() % 3`: calls elsewhere until that is the order's.
        for _ in 0..3 {
            if shops.balancer().sent().len() % 3 == running_on {
                break;
            }
            client.call_tool("search_status", json!({})).await.unwrap();
        }
        let at = shops.balancer().sent().len();
        let progressed = Arc::new(AtomicUsize::new(0));
        let seen = progressed.clone();
        let titles: Vec<String> = (0..30).map(|i| format!("Book {i}")).collect();
        let rebuild = client.call_tool("rebuild_index", json!({"titles": titles})).on_progress(move |_| {
            seen.fetch_add(1, Ordering::SeqCst);
        });
        let (rebuilt, ()) = tokio::join!(tokio::time::timeout(WAIT, rebuild), async {
            eventually("the rebuild streams its progress", &shops, async || progressed.load(Ordering::SeqCst) > 0)
                .await;
            assert_eq!(shops.balancer().sent()[at], running_on, "the rebuild runs beside the order");
            kill(&shops.instances[running_on], "-KILL");
        });
        (rebuilt, running_on)
    });
    let ordered =
        ordered.unwrap_or_else(|_| panic!("the order on the killed instance never ended\n{}", shops.stderr()));
    assert!(ordered.is_err(), "the order on the killed instance: {ordered:?}");
    let rebuilt =
        rebuilt.unwrap_or_else(|_| panic!("the rebuild on the killed instance never ended\n{}", shops.stderr()));
    assert!(rebuilt.is_err(), "the rebuild on the killed instance: {rebuilt:?}");
    assert!(shops.instances[killed].wait_exit(WAIT).is_some(), "the killed instance exited");
    assert!(calls_go_on(&shops, &client, killed).await >= 3);
    shops.assert_nothing_panicked();
}

/// SIGTERM of one instance whose call outlasts its drain (here 1 s; the order holds its book for 30 s): once the
/// drain is over it cancels the call (releasing the hold) and exits within its shutdown deadline; the call's request
/// ends without a result; the others serve on. The call in flight is a POST by hand: our client waits for ever on
/// what a stopping instance answers (see `our_clients_call_ends_when_its_instance_stops`).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stopped_instance_exits_in_time_and_the_others_serve_on() {
    let mut shops = Shops::start_with(&["--drain-timeout", "1"]).await;
    let client = shops.client(Arc::default()).await;
    let by_hand = common::http::Client { http: reqwest::Client::new(), url: shops.url().to_owned(), session: None };
    let order = json!({"name": "order_book", "arguments": {"title": "Emma"}});
    let order = common::v2026::request(1, "tools/call", order, json!({}));
    let from = shops.balancer().sent().len();
    let in_flight = tokio::spawn(async move {
        let response = by_hand.v2026_post(&order).send().await?;
        let status = response.status();
        Ok::<_, reqwest::Error>((status, response.text().await?))
    });
    let stopped = sent_to(&shops, from).await;
    eventually("Emma is on hold", &shops, async || holds(&client).await == ["Emma"]).await;

    kill(&shops.instances[stopped], "-TERM");
    let deadline = Duration::from_secs(1) + mcp::ServerBuilder::DEFAULT_SHUTDOWN_TIMEOUT + Duration::from_secs(1);
    let status = shops.instances[stopped].wait_exit(deadline);
    assert!(status.is_some_and(|s| s.success()), "{status:?} within {deadline:?} of SIGTERM\n{}", shops.stderr());
    let answered = tokio::time::timeout(WAIT, in_flight)
        .await
        .unwrap_or_else(|_| panic!("the request on the stopped instance never ended\n{}", shops.stderr()))
        .unwrap();
    // How it ends (an empty 202, a cut stream) is not the point; that it ends, without the order's result, is.
    assert!(answered.as_ref().map_or(true, |(_, body)| !body.contains("Ordered")), "{answered:?}");
    let stopped_stderr = shops.instances[stopped].stderr_text();
    assert!(stopped_stderr.contains(r#"released hold on "Emma""#), "{stopped_stderr}");
    assert!(stopped_stderr.contains("bookshop closed"), "{stopped_stderr}");

    assert!(calls_go_on(&shops, &client, stopped).await >= 3);
    eventually("the others list no hold", &shops, async || {
        let from = shops.balancer().sent().len();
        let listed = client.call_tool("list_holds", json!({})).await;
        !shops.sent_since(from).contains(&stopped)
            && listed.is_ok_and(|l| l.structured() == Some(&json!({"holds": []})))
    })
    .await;
    shops.assert_nothing_panicked();
}

/// Our client's call on an instance that stops (SIGTERM) and outlasts its drain (1 s) ends with an error, as it does
/// when the instance is killed: the stopping instance cancels it and answers its POST `202 Accepted` with no body,
/// which the client takes as the end of a request it was still waiting for.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn our_clients_call_ends_when_its_instance_stops() {
    let shops = Shops::start_with(&["--drain-timeout", "1"]).await;
    let client = shops.client(Arc::default()).await;
    let from = shops.balancer().sent().len();
    let order = client.call_tool("order_book", json!({"title": "Emma"}));
    let (ended, ()) = tokio::join!(tokio::time::timeout(WAIT, order), async {
        let stopping = sent_to(&shops, from).await;
        eventually("Emma is on hold", &shops, async || holds(&client).await == ["Emma"]).await;
        kill(&shops.instances[stopping], "-TERM");
    });
    let ended = ended.unwrap_or_else(|_| panic!("the call on the stopped instance never ended\n{}", shops.stderr()));
    assert!(ended.is_err(), "{ended:?}");
}

/// Redis restarted (empty): the instances reconnect, calls work again and changes cross again; nothing panics.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn after_a_redis_restart_the_balanced_shops_work_again() {
    let mut shops = Shops::start().await;
    let client = shops.client(Arc::default()).await;
    while_holding(&shops, &client, "Dune", async {}).await;

    shops.redis.restart(Duration::from_millis(500));
    // Every instance answers list_holds again (three calls in a row: one to each).
    eventually("three calls in a row work", &shops, async || {
        let mut ok = 0;
        for _ in 0..3 {
            let listed = tokio::time::timeout(WAIT, client.call_tool("list_holds", json!({}))).await;
            if matches!(listed, Ok(Ok(ref l)) if !l.is_error()) {
                ok += 1;
            }
        }
        ok == 3
    })
    .await;
    shops.subscribed(3).await;

    // A hold made after the restart, heard by a listener on another instance.
    let listener = shops.client(Arc::default()).await;
    let mut listen = listener.listen(ListenFilter::new().resource(HOLDS_URI)).await.unwrap();
    while_holding(&shops, &client, "Middlemarch", async {
        let heard = tokio::time::timeout(WAIT, listen.next()).await.expect("the listener heard the hold").unwrap();
        assert_eq!(heard.method, "notifications/resources/updated", "{heard:?}");
    })
    .await;
    eventually("the release is listed", &shops, async || holds(&client).await.is_empty()).await;
    shops.assert_nothing_panicked();
}
