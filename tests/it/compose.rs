//! Composing servers (`mcp::compose`): a server of this process mounted into another (`ServerBuilder::mount`), and
//! servers of other processes proxied (`ServerBuilder::proxy`, a child over stdio and a URL over HTTP), seen by our
//! client in both eras: names under the prefix, calls with their progress and results unchanged, prompts and
//! resources, a name taken refused naming both, list changes followed, filters, a cancel reaching the upstream, and an
//! upstream that dies failing calls at once, naming it, then started again by the next call.

use crate::common;

use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use mcp::client::{Client, EraChoice, ListenFilter};
use mcp::compose::{Mount, Upstream};
use mcp::handler::ToolItem;
use mcp::{BuildError, Context, Server};
use serde_json::{json, Value};

/// Add two numbers.
#[mcp::tool]
fn add(a: i64, b: i64) -> mcp::Json<Value> {
    mcp::Json(json!({ "sum": a + b }))
}

/// Count to `n`, reporting progress at each step.
#[mcp::tool]
async fn count_to(n: u32, ctx: &Context) -> String {
    for i in 1..=n {
        ctx.report_progress(f64::from(i), Some(f64::from(n)), Some(&format!("step {i}")));
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    format!("counted to {n}")
}

/// A picture.
#[mcp::tool]
fn picture() -> Vec<mcp::Content> {
    vec![mcp::Content::text("a dot"), mcp::Content::image("iVBORw0KGgo=", "image/png")]
}

/// Whether `wait_long` is running, and how many of its runs were dropped.
static RUNNING: AtomicBool = AtomicBool::new(false);
static DROPPED: AtomicU32 = AtomicU32::new(0);

struct Dropped;

impl Drop for Dropped {
    fn drop(&mut self) {
        RUNNING.store(false, Ordering::SeqCst);
        DROPPED.fetch_add(1, Ordering::SeqCst);
    }
}

/// Wait a minute.
#[mcp::tool]
async fn wait_long() -> String {
    RUNNING.store(true, Ordering::SeqCst);
    let _dropped = Dropped;
    tokio::time::sleep(Duration::from_secs(60)).await;
    "waited".into()
}

/// Greet someone.
#[mcp::prompt(complete(name = people))]
fn greeting(
    /// Who.
    name: String,
) -> String {
    format!("Hello, {name}!")
}

/// The maths notes.
#[mcp::resource(uri = "maths://notes", mime_type = "text/plain")]
fn notes() -> String {
    "two and two make four".into()
}

fn people(typed: &str) -> Vec<String> {
    ["Ada", "Alan", "Grace"].into_iter().filter(|p| p.starts_with(typed)).map(String::from).collect()
}

fn numbers(typed: &str) -> Vec<String> {
    (1..=20).map(|n| n.to_string()).filter(|n| n.starts_with(typed)).collect()
}

/// A number's square.
#[mcp::resource(uri = "maths://squares/{n}", mime_type = "text/plain", complete(n = numbers))]
fn square(n: String) -> String {
    let n: i64 = n.parse().unwrap_or(0);
    (n * n).to_string()
}

/// Say hello.
#[mcp::tool]
fn hello() -> String {
    "hello".into()
}

/// Double a number.
#[mcp::method(name = "maths/double")]
async fn double(n: i64) -> mcp::Json<Value> {
    mcp::Json(json!({ "doubled": n * 2 }))
}

fn maths() -> Server {
    Server::builder()
        .method::<double>()
        .tool::<add>()
        .tool::<count_to>()
        .tool::<picture>()
        .tool::<wait_long>()
        .prompt::<greeting>()
        .resource::<notes>()
        .resource::<square>()
        .build()
        .unwrap()
}

async fn client(server: &Server, era: EraChoice) -> Client {
    Client::builder().era(era).in_process(server.clone()).await.unwrap()
}

fn names(list: &Value, key: &str) -> Vec<String> {
    list[key].as_array().unwrap().iter().map(|t| t["name"].as_str().unwrap().to_owned()).collect()
}

async fn eventually(what: &str, mut check: impl AsyncFnMut() -> bool) {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
    while !check().await {
        assert!(tokio::time::Instant::now() < deadline, "{what}: not within 10 s");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_mounted_server_is_served_under_its_prefix_in_both_eras() {
    let maths = maths();
    let server = Server::builder().tool::<hello>().mount("maths", maths.clone()).build().unwrap();
    for era in [EraChoice::V2025, EraChoice::V2026] {
        let client = client(&server, era).await;
        let tools = client.request("tools/list", json!({})).await.unwrap();
        assert_eq!(
            names(&tools, "tools"),
            ["hello", "maths_add", "maths_count_to", "maths_picture", "maths_wait_long"],
            "{era:?}"
        );
        let add = tools["tools"].as_array().unwrap().iter().find(|t| t["name"] == "maths_add").unwrap();
        assert_eq!(add["description"], "Add two numbers.", "the upstream's descriptor: {add}");
        assert!(add["inputSchema"]["properties"]["a"].is_object(), "{add}");
        assert!(add["outputSchema"].is_object(), "{add}");

        // A call: arguments, structured content and text unchanged.
        let sum = client.call_tool("maths_add", json!({"a": 2, "b": 40})).await.unwrap();
        assert_eq!(sum.structured(), Some(&json!({"sum": 42})), "{:?}", sum.raw);
        // Images pass unchanged.
        let picture = client.call_tool("maths_picture", json!({})).await.unwrap();
        assert_eq!(
            picture.raw["content"][1],
            json!({"type": "image", "data": "iVBORw0KGgo=", "mimeType": "image/png"})
        );
        let blocks = picture.content().unwrap();
        assert!(matches!(&blocks[1], mcp::Content::Image { mime_type, .. } if mime_type == "image/png"), "{blocks:?}");
        // The upstream's progress reaches the caller.
        let seen = Arc::new(Mutex::new(Vec::new()));
        let heard = seen.clone();
        let counted = client
            .call_tool("maths_count_to", json!({"n": 3}))
            .on_progress(move |p| heard.lock().unwrap().push((p.progress, p.message)))
            .await
            .unwrap();
        assert_eq!(counted.text(), Some("counted to 3"));
        let seen = seen.lock().unwrap().clone();
        assert_eq!(seen.len(), 3, "{seen:?}");
        assert_eq!(seen[2], (3.0, Some("step 3".to_owned())));
        // An upstream's error result is the caller's.
        let wrong = client.call_tool("maths_add", json!({"a": "two"})).await.unwrap();
        assert!(wrong.is_error() && wrong.text().unwrap().contains("invalid argument `a`"), "{:?}", wrong.raw);

        // Prompts under the prefix, resources at their URIs.
        let prompts = client.request("prompts/list", json!({})).await.unwrap();
        assert_eq!(names(&prompts, "prompts"), ["maths_greeting"]);
        assert_eq!(prompts["prompts"][0]["arguments"][0]["name"], "name");
        let got = client.get_prompt("maths_greeting", json!({"name": "Ada"})).await.unwrap();
        assert_eq!(got["messages"][0]["content"]["text"], "Hello, Ada!", "{got}");
        let resources = client.request("resources/list", json!({})).await.unwrap();
        assert_eq!(resources["resources"][0]["uri"], "maths://notes", "{resources}");
        let read = client.read_resource("maths://notes").await.unwrap();
        assert_eq!(read["contents"][0]["text"], "two and two make four", "{read}");
        let templates = client.request("resources/templates/list", json!({})).await.unwrap();
        assert_eq!(templates["resourceTemplates"][0]["uriTemplate"], "maths://squares/{n}", "{templates}");
        let squared = client.read_resource("maths://squares/12").await.unwrap();
        assert_eq!(squared["contents"][0]["text"], "144", "{squared}");
        let unknown = client.call_tool("maths_nothing", json!({})).await.unwrap_err();
        assert!(format!("{unknown:?}").contains("unknown tool"), "{unknown:?}");
    }
}

#[test]
fn a_name_taken_is_a_build_error_naming_both() {
    /// Also named `maths_add`.
    #[mcp::tool(name = "maths_add")]
    fn own_add() -> String {
        "mine".into()
    }
    let refused = Server::builder().tool::<own_add>().mount("maths", maths()).build().unwrap_err();
    let message = refused.to_string();
    assert!(matches!(refused, BuildError::DuplicateTool { .. }), "{refused:?}");
    assert!(message.contains("maths_add") && message.contains("mount `maths`"), "{message}");
    assert!(message.contains("tests/it/compose.rs"), "names the server's own definition: {message}");

    let twice = Server::builder().mount("maths", maths()).mount("maths", maths()).build().unwrap_err();
    assert!(twice.to_string().contains("two mounts have this prefix"), "{twice}");
    // Two mounts of one server under two prefixes are fine; their resources' URIs are not.
    let uris = Server::builder().mount("a", maths()).mount("b", maths()).build().unwrap_err();
    assert!(uris.to_string().contains("maths://notes"), "{uris}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn filters_and_the_separator_decide_what_is_served() {
    let server = Server::builder()
        .compose(Mount::new("maths", Upstream::server(maths())).separator(".").deny("maths.wait_*").deny("*.picture"))
        .build()
        .unwrap();
    let names = names(&server.tools_list(), "tools");
    assert_eq!(names, ["maths.add", "maths.count_to"]);
    let client = client(&server, EraChoice::V2025).await;
    let denied = client.call_tool("maths.wait_long", json!({})).await.unwrap_err();
    assert!(format!("{denied:?}").contains("unknown tool"), "{denied:?}");
    let only = Server::builder().compose(Mount::new("m", Upstream::server(maths())).allow("m_add")).build().unwrap();
    assert_eq!(self::names(&only.tools_list(), "tools"), ["m_add"]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn list_changes_of_the_upstream_reach_the_clients() {
    let maths = maths();
    let server = Server::builder().mount("maths", maths.clone()).build().unwrap();
    for era in [EraChoice::V2025, EraChoice::V2026] {
        let client = client(&server, era).await;
        let _ = client.list_tools().await.unwrap();
        maths.add_tool(hello::DEF.clone()).unwrap();
        eventually("the new tool listed through the mount", async || {
            client.list_tools().await.unwrap().iter().any(|t| t.name == "maths_hello")
        })
        .await;
        let hello = client.call_tool("maths_hello", json!({})).await.unwrap();
        assert_eq!(hello.text(), Some("hello"));
        assert!(maths.remove_tool("hello"));
        eventually("the removed tool gone", async || {
            !client.list_tools().await.unwrap().iter().any(|t| t.name == "maths_hello")
        })
        .await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cancelled_call_is_cancelled_upstream() {
    let maths = maths();
    let server = Server::builder().mount("maths", maths.clone()).build().unwrap();
    for era in [EraChoice::V2025, EraChoice::V2026] {
        let client = client(&server, era).await;
        let before = DROPPED.load(Ordering::SeqCst);
        let call = tokio::spawn({
            let client = client.clone();
            async move { client.call_tool("maths_wait_long", json!({})).await }
        });
        eventually("the upstream's handler running", async || RUNNING.load(Ordering::SeqCst)).await;
        call.abort();
        eventually("the upstream's handler dropped", async || DROPPED.load(Ordering::SeqCst) > before).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_child_over_stdio_that_dies_fails_the_call_naming_it_and_is_started_again() {
    let testbed = common::testbed().to_string_lossy().into_owned();
    let upstream = Upstream::stdio(testbed.clone(), Vec::<String>::new());
    upstream.connect().await.unwrap();
    let server = Server::builder().proxy("bed", upstream).build().unwrap();
    assert!(names(&server.tools_list(), "tools").contains(&"bed_echo".to_owned()));
    for era in [EraChoice::V2025, EraChoice::V2026] {
        let client = client(&server, era).await;
        let echoed = client.call_tool("bed_echo", json!({"text": "hi"})).await.unwrap();
        assert_eq!(echoed.text(), Some("hi"));
        let died = client.call_tool("bed_exit_now", json!({})).await.unwrap_err();
        let said = format!("{died}");
        assert!(said.contains("upstream `bed`") && said.contains(&testbed), "names the upstream: {said}");
        // The next call starts it again.
        let again = client.call_tool("bed_echo", json!({"text": "again"})).await.unwrap();
        assert_eq!(again.text(), Some("again"));
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_http_upstream_that_is_down_fails_calls_at_once_and_is_served_once_it_is_up() {
    let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let url = format!("http://127.0.0.1:{port}/mcp");
    // Down when the server starts: nothing listed yet, and calls fail naming it.
    let server = Server::builder().tool::<hello>().proxy("web", Upstream::http(url.clone())).build().unwrap();
    assert_eq!(names(&server.tools_list(), "tools"), ["hello"]);
    let client = client(&server, EraChoice::V2026).await;
    // The proxy tries (and fails) to reach it meanwhile.
    tokio::time::sleep(Duration::from_millis(600)).await;
    assert_eq!(names(&server.tools_list(), "tools"), ["hello"]);
    let not_yet = client.call_tool("web_echo", json!({"text": "hi"})).await.unwrap_err();
    assert!(format!("{not_yet:?}").contains("unknown tool"), "{not_yet:?}");
    let addr = format!("127.0.0.1:{port}");
    let up = common::http::HttpServer::start(&["--http", &addr]);
    eventually("the upstream's tools listed once it is up", async || {
        client.list_tools().await.unwrap().iter().any(|t| t.name == "web_echo")
    })
    .await;
    let echoed = client.call_tool("web_echo", json!({"text": "hi"})).await.unwrap();
    assert_eq!(echoed.text(), Some("hi"));
    drop(up);
    let started = std::time::Instant::now();
    let failed = client.call_tool("web_echo", json!({"text": "hi"})).await.unwrap_err();
    // At once: well before the upstream's 60 s timeout (the bound leaves room for a loaded machine).
    assert!(started.elapsed() < Duration::from_secs(20), "not after a timeout: {:?}", started.elapsed());
    assert!(format!("{failed}").contains(&url), "names the upstream: {failed}");
    assert_eq!(client.call_tool("hello", json!({})).await.unwrap().text(), Some("hello"), "the rest goes on");
}

#[derive(serde::Deserialize, schemars::JsonSchema)]
struct Confirm {
    /// Go ahead?
    confirm: bool,
}

/// Delete something, once the user confirms.
#[mcp::tool]
async fn delete(what: String, ctx: &Context) -> String {
    match ctx.ask("confirm").elicit::<Confirm>(&format!("Delete {what}?")).await {
        Ok(mcp::ask::Elicitation::Accept(Confirm { confirm: true })) => format!("deleted {what}"),
        Ok(_) => format!("kept {what}"),
        Err(e) => format!("kept {what}: {e}"),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_upstreams_question_is_asked_of_the_caller_across_eras() {
    let asked = Arc::new(Mutex::new(Vec::new()));
    for upstream_era in [EraChoice::V2025, EraChoice::V2026] {
        let files = Server::builder().tool::<delete>().build().unwrap();
        let upstream = Upstream::server(files).era(upstream_era);
        let server = Server::builder().compose(Mount::new("files", upstream)).build().unwrap();
        for caller_era in [EraChoice::V2025, EraChoice::V2026] {
            for accept in [true, false] {
                let heard = asked.clone();
                let caller = Client::builder()
                    .era(caller_era)
                    .on_elicitation(move |params: Value| {
                        heard.lock().unwrap().push(params["message"].as_str().unwrap_or_default().to_owned());
                        async move { Ok(json!({"action": "accept", "content": {"confirm": accept}})) }
                    })
                    .in_process(server.clone())
                    .await
                    .unwrap();
                let done = tokio::time::timeout(
                    Duration::from_secs(10),
                    caller.call_tool("files_delete", json!({"what": "notes.txt"})),
                )
                .await
                .unwrap_or_else(|_| panic!("no answer: upstream {upstream_era:?}, caller {caller_era:?}"))
                .unwrap_or_else(|e| panic!("upstream {upstream_era:?}, caller {caller_era:?}, accept {accept}: {e}"));
                let expected = if accept { "deleted notes.txt" } else { "kept notes.txt" };
                assert_eq!(done.text(), Some(expected), "upstream {upstream_era:?}, caller {caller_era:?}");
                assert_eq!(asked.lock().unwrap().pop().as_deref(), Some("Delete notes.txt?"));
            }
        }
        // A caller that cannot be asked: a 2025 upstream's question fails there, and its tool says so; a 2026
        // upstream's round cannot go on, and the call fails saying why.
        let mute = client(&server, EraChoice::V2025).await;
        let outcome = mute.call_tool("files_delete", json!({"what": "a"})).await;
        match upstream_era {
            EraChoice::V2025 => {
                let kept = outcome.unwrap();
                assert!(kept.text().unwrap().starts_with("kept a: "), "{:?}", kept.raw);
            }
            _ => {
                let failed = format!("{}", outcome.unwrap_err());
                assert!(failed.contains("upstream `files`") && failed.contains("cannot answer"), "{failed}");
                assert!(!failed.contains("connects to it again"), "not the upstream's failure: {failed}");
            }
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_http_upstreams_log_messages_reach_the_caller_at_its_level_in_both_eras() {
    let up = common::http::HttpServer::start(&["--http", "127.0.0.1:0"]);
    for upstream_era in [EraChoice::V2025, EraChoice::V2026] {
        let upstream = Upstream::http(up.url.clone()).era(upstream_era);
        upstream.connect().await.unwrap();
        let server = Server::builder().compose(Mount::new("bed", upstream)).build().unwrap();
        for caller_era in [EraChoice::V2025, EraChoice::V2026] {
            let heard = Arc::new(Mutex::new(Vec::new()));
            let logs = heard.clone();
            let caller = Client::builder()
                .era(caller_era)
                .log_level(mcp::LogLevel::Warning)
                .on_notification(move |method, params| {
                    if method == "notifications/message" {
                        logs.lock().unwrap().push((
                            params["level"].clone(),
                            params["logger"].clone(),
                            params["data"].clone(),
                        ));
                    }
                })
                .in_process(server.clone())
                .await
                .unwrap();
            caller.call_tool("bed_log_all", json!({})).await.unwrap();
            eventually("the upstream's warnings and worse", async || heard.lock().unwrap().len() >= 5).await;
            tokio::time::sleep(Duration::from_millis(100)).await;
            let heard = heard.lock().unwrap().clone();
            let levels: Vec<&str> = heard.iter().map(|(l, _, _)| l.as_str().unwrap()).collect();
            assert_eq!(
                levels,
                ["warning", "error", "critical", "alert", "emergency"],
                "{upstream_era:?} {caller_era:?}"
            );
            assert_eq!(heard[0].1, "testbed");
            assert_eq!(heard[0].2, "a warning message");
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_upstreams_resource_updates_reach_the_subscribed_callers() {
    for upstream_era in [EraChoice::V2025, EraChoice::V2026] {
        let maths = maths();
        let server = Server::builder()
            .compose(Mount::new("maths", Upstream::server(maths.clone()).era(upstream_era)))
            .build()
            .unwrap();
        for caller_era in [EraChoice::V2025, EraChoice::V2026] {
            let caller = client(&server, caller_era).await;
            let mut updates = caller.listen(ListenFilter::new().resource("maths://notes")).await.unwrap();
            // Until the proxy has subscribed upstream (it does once it has read the upstream's lists).
            let heard = tokio::time::timeout(Duration::from_secs(10), async {
                loop {
                    maths.notify_resource_updated("maths://notes");
                    if let Ok(Some(n)) = tokio::time::timeout(Duration::from_millis(100), updates.next()).await {
                        return n;
                    }
                }
            })
            .await
            .unwrap_or_else(|_| panic!("no update: upstream {upstream_era:?}, caller {caller_era:?}"));
            assert_eq!(heard.method, "notifications/resources/updated");
            assert_eq!(heard.params["uri"], "maths://notes");
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn completions_of_a_mounted_prompt_and_template_come_from_their_server() {
    for upstream_era in [EraChoice::V2025, EraChoice::V2026] {
        let server = Server::builder()
            .compose(Mount::new("maths", Upstream::server(maths()).era(upstream_era)))
            .build()
            .unwrap();
        for caller_era in [EraChoice::V2025, EraChoice::V2026] {
            let c = client(&server, caller_era).await;
            let people =
                c.complete(json!({"type": "ref/prompt", "name": "maths_greeting"}), "name", "A").await.unwrap();
            assert_eq!(people["completion"]["values"], json!(["Ada", "Alan"]), "{people}");
            let template = json!({"type": "ref/resource", "uri": "maths://squares/{n}"});
            let numbers = c.complete(template, "n", "1").await.unwrap();
            assert_eq!(numbers["completion"]["values"].as_array().unwrap().len(), 11, "{numbers}");
            let unknown = c.complete(json!({"type": "ref/prompt", "name": "maths_nothing"}), "name", "A").await;
            assert!(format!("{:?}", unknown.unwrap_err()).contains("unknown prompt"));
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_mounted_servers_custom_methods_are_served_under_their_names() {
    let server = Server::builder().mount("maths", maths()).build().unwrap();
    for era in [EraChoice::V2025, EraChoice::V2026] {
        let c = client(&server, era).await;
        let doubled = c.request("maths/double", json!({"n": 21})).await.unwrap();
        assert_eq!(doubled["doubled"], 42, "{doubled}");
        let wrong = c.request("maths/double", json!({"n": "x"})).await.unwrap_err();
        assert!(format!("{wrong:?}").contains("-32602"), "the upstream's error: {wrong:?}");
    }
    /// Also `maths/double`.
    #[mcp::method(name = "maths/double")]
    async fn mine(n: i64) -> mcp::Json<Value> {
        mcp::Json(json!({ "mine": n }))
    }
    let taken = Server::builder().method::<mine>().mount("maths", maths()).build().unwrap_err();
    assert!(taken.to_string().contains("maths/double") && taken.to_string().contains("mount `maths`"), "{taken}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_mounted_server_shuts_down_with_its_parent() {
    let closed = Arc::new(AtomicBool::new(false));
    let flag = closed.clone();
    let inner =
        Server::builder().tool::<add>().on_shutdown(async move { flag.store(true, Ordering::SeqCst) }).build().unwrap();
    let server = Server::builder().mount("maths", inner).build().unwrap();
    let c = client(&server, EraChoice::V2025).await;
    c.call_tool("maths_add", json!({"a": 1, "b": 2})).await.unwrap();
    server.shutdown().await;
    assert!(closed.load(Ordering::SeqCst), "the mounted server's shutdown hook ran");
}

/// The round the upstream of `names_taken_from_upstreams_are_not_capped` lists.
static ROUND: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
const PER_ROUND: usize = 5_000;

fn round_items(_: &Context) -> Vec<mcp::Resource> {
    let round = ROUND.load(Ordering::SeqCst);
    (0..PER_ROUND).map(|i| mcp::Resource::new(format!("items://{round}/{i}"), format!("item {i}"))).collect()
}

/// One item of a round.
#[mcp::resource(uri = "items://{round}/{i}", list = round_items)]
fn item(round: String, i: String) -> String {
    format!("round {round}, item {i}")
}

/// A toggle: adding or removing it makes the upstream say its resources changed.
#[mcp::resource(uri = "items://toggle")]
fn toggle() -> String {
    "toggle".into()
}

/// A proxy relays what its upstreams list for as long as it runs: the names and URIs it takes from them are owned
/// by its registry and freed when the upstream stops listing them. Until 1.0 they were kept for the life of the
/// process under a cap of 65,536, past which new ones were left out: this relays 70,000 URIs (and as many
/// locations) through one mount and reads one of the last.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn names_taken_from_upstreams_are_not_capped() {
    let upstream = Server::builder().resource::<item>().page_size(1_000).build().unwrap();
    let proxy = Server::builder().mount("items", upstream.clone()).build().unwrap();
    // What the proxy lists: all of one round (the upstream's pages are read one by one, and a round may change
    // between two of them; the next re-read, which the change causes, is whole).
    let listed = |proxy: &Server| -> Vec<String> {
        let resources = proxy.schema()["resources"].as_array().unwrap().clone();
        resources.iter().map(|r| r["uri"].as_str().unwrap().to_owned()).collect()
    };
    let rounds = 70_000 / PER_ROUND;
    for round in 1..rounds {
        ROUND.store(round, Ordering::SeqCst);
        if round % 2 == 1 {
            upstream.add_resource(<toggle as mcp::handler::ResourceItem>::DEF.clone()).unwrap();
        } else {
            assert!(upstream.remove_resource("items://toggle"));
        }
        let prefix = format!("items://{round}/");
        eventually(&format!("round {round} relayed"), async || {
            let uris = listed(&proxy);
            uris.iter().filter(|u| u.starts_with(&prefix)).count() == PER_ROUND
                && uris.iter().all(|u| u.starts_with(&prefix) || u == "items://toggle")
        })
        .await;
    }
    let client = client(&proxy, EraChoice::V2026).await;
    let uri = format!("items://{}/4999", rounds - 1);
    let read = client.read_resource(&uri).await.unwrap();
    assert_eq!(read.text(), Some(format!("round {}, item 4999", rounds - 1).as_str()));
}
