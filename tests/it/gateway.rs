//! The gateway example (`examples/gateway.rs`, built on `mcp::compose`) as a real process serving Streamable HTTP,
//! in front of real upstreams: the bookshop example as a child over stdio (or a bookshop process over HTTP), and the
//! npm reference server `@modelcontextprotocol/server-everything` as a child over stdio (Node 22 from
//! `tests/node/package.json`). Our client in both eras, and the official Python SDK (PyPI `mcp` 2.3) in both eras,
//! see one server: each upstream's tools under its prefix, calls relayed with their results (structured content,
//! images) unchanged and their progress, a dropped call cancelled upstream (the bookshop's hold released), `--deny`
//! leaving a tool out, an upstream killed mid-session failing calls at once naming it while the other goes on, then
//! served again once it is back, and the bookshop's confirmation question (elicitation) answered by our client
//! through the gateway.
//!
//! The examples must be built first (`cargo build --examples`): a focused `cargo test --test it gateway::` does not
//! rebuild them.

use crate::common;

use std::future::IntoFuture;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use common::http::HttpServer;
use mcp::client::{Client, EraChoice};
use serde_json::{json, Value};

/// The bound of every wait of these tests.
const WAIT: Duration = Duration::from_secs(20);

const ERAS: [EraChoice; 2] = [EraChoice::V2025, EraChoice::V2026];

/// The bookshop's tools, as the gateway serves them.
const SHOP_TOOLS: [&str; 5] =
    ["shop_cancel_hold", "shop_list_holds", "shop_order_book", "shop_rebuild_index", "shop_search_status"];

/// `what`, failing the test if it takes longer than [`WAIT`].
async fn bounded<T>(what: &str, future: impl IntoFuture<Output = T>) -> T {
    tokio::time::timeout(WAIT, future).await.unwrap_or_else(|_| panic!("{what}: not within {WAIT:?}"))
}

/// Polls `check` until it holds, failing after [`WAIT`] with what `context` says then.
async fn eventually(what: &str, mut check: impl AsyncFnMut() -> bool, context: impl Fn() -> String) {
    let deadline = Instant::now() + WAIT;
    while !check().await {
        assert!(Instant::now() < deadline, "{what}: not within {WAIT:?}\n{}", context());
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// The reference server's launcher (`mcp-server-everything`, a `#!/usr/bin/env node` script), and a `PATH` where
/// that finds Node 22.
fn everything() -> (PathBuf, String) {
    let bin = common::node::tools();
    let path = common::node::path_with_tools(&bin).into_string().expect("a UTF-8 PATH");
    let launcher = bin.join("mcp-server-everything");
    assert!(launcher.exists(), "{} is missing: is server-everything in tests/node/package.json?", launcher.display());
    (launcher, path)
}

/// The gateway example serving HTTP on a free port, with `shop` (a URL, or the bookshop's command) and the reference
/// server (`everything`, a child over stdio) as its upstreams, and `extra` flags. Calls start at once: 350 ms after
/// its `initialize` server-everything asks its client for `roots/list` on its own, which over stdio the gateway
/// cannot tell from a question of the call in flight; a caller that did not declare `roots` is not asked, and its call
/// goes on (it used to fail a 2026 caller's call and hold a 2025 caller's).
async fn gateway_with(shop: &str, extra: &[&str]) -> HttpServer {
    let (everything, path) = everything();
    let shop = format!("shop={shop}");
    let everything = format!("everything={} stdio", everything.display());
    let mut flags = vec!["--upstream", shop.as_str(), "--upstream", everything.as_str()];
    flags.extend_from_slice(extra);
    HttpServer::start_binary_with_env(common::example("gateway"), &flags, &[("PATH", path.as_str())])
}

/// The gateway with the bookshop example as a child over stdio.
async fn gateway(extra: &[&str]) -> HttpServer {
    let bookshop = common::example("bookshop");
    gateway_with(bookshop.to_str().expect("a UTF-8 path"), extra).await
}

async fn connect(gateway: &HttpServer, era: EraChoice) -> Client {
    let client =
        bounded("connecting to the gateway", Client::builder().name("gateway-tests").era(era).http(&gateway.url))
            .await
            .unwrap_or_else(|e| panic!("connect ({era:?}): {e}\n{}", gateway.stderr_text()));
    assert_eq!(client.era() == mcp::Era::V2026, era == EraChoice::V2026, "{era:?}: {}", client.protocol_version());
    client
}

/// The reference server spoken to directly (no gateway), over stdio in the 2025-11-25 era (the one it speaks); with
/// `ask`, a client that can be asked questions (elicitation, sampling, roots), for which it lists more tools.
async fn everything_directly(ask: bool) -> Client {
    let (launcher, path) = everything();
    let mut command = tokio::process::Command::new(launcher);
    command.arg("stdio").env("PATH", path);
    let mut builder = Client::builder().name("gateway-tests").era(EraChoice::V2025).on_stderr(|_| {});
    if ask {
        let refuse = |_| async { Err(mcp::Error::internal("not asked in these tests")) };
        builder = builder.on_elicitation(refuse).on_sampling(refuse).on_roots(refuse);
    }
    bounded("starting server-everything", builder.stdio(command)).await.expect("server-everything over stdio")
}

async fn tool_names(client: &Client) -> Vec<String> {
    let tools = bounded("tools/list", client.list_tools()).await.expect("tools/list");
    tools.into_iter().map(|t| t.name).collect()
}

/// A call through the gateway that must succeed.
async fn call(client: &Client, name: &str, arguments: Value) -> mcp::client::ToolResult {
    bounded(name, client.call_tool(name, arguments)).await.unwrap_or_else(|e| panic!("{name}: {e}"))
}

/// The titles the bookshop holds, through the gateway (`shop_list_holds`).
async fn holds(client: &Client) -> Vec<String> {
    let listed = call(client, "shop_list_holds", json!({})).await;
    assert!(!listed.is_error(), "{:?}", listed.raw);
    serde_json::from_value(listed.structured().expect("structured holds")["holds"].clone()).unwrap()
}

/// A result without what belongs to the server that wrote it rather than to the tool (its `_meta` and the 2026
/// `resultType`), to compare a result through the gateway with the upstream's own.
fn tool_part(result: &mcp::client::ToolResult) -> Value {
    let mut raw = result.raw.clone();
    if let Value::Object(r) = &mut raw {
        r.remove("_meta");
        r.remove("resultType");
        if r.get("isError") == Some(&json!(false)) {
            r.remove("isError");
        }
    }
    raw
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn both_upstreams_are_listed_under_their_prefixes_in_both_eras() {
    let gateway = gateway(&[]).await;
    // What server-everything lists itself, under the prefix: some of its tools only for a client that can be asked
    // questions (the gateway's upstream client may declare some of those capabilities, or all).
    let mut lists = Vec::new();
    for ask in [false, true] {
        let direct = everything_directly(ask).await;
        let mut names: Vec<String> = tool_names(&direct).await.iter().map(|n| format!("everything_{n}")).collect();
        names.sort();
        lists.push(names);
    }
    let (least, most) = (lists[0].clone(), lists[1].clone());
    assert!(least.contains(&"everything_get-structured-content".to_owned()), "{least:?}");
    for era in ERAS {
        let client = connect(&gateway, era).await;
        let mut names = tool_names(&client).await;
        names.sort();
        let shop: Vec<&str> = names.iter().filter(|n| n.starts_with("shop_")).map(String::as_str).collect();
        assert_eq!(shop, SHOP_TOOLS, "{era:?}: {names:?}");
        let served: Vec<String> = names.iter().filter(|n| n.starts_with("everything_")).cloned().collect();
        for name in &least {
            assert!(served.contains(name), "{era:?}: {name}, which server-everything lists to any client: {served:?}");
        }
        for name in &served {
            assert!(most.contains(name), "{era:?}: {name}, which server-everything does not list: {most:?}");
        }
        assert_eq!(shop.len() + served.len(), names.len(), "{era:?}: nothing but the two upstreams' tools: {names:?}");

        // The upstream's descriptors, under the served name.
        let tools = bounded("tools/list", client.list_tools()).await.unwrap();
        let order = tools.iter().find(|t| t.name == "shop_order_book").unwrap();
        assert_eq!(order.raw()["inputSchema"]["required"], json!(["title"]), "{era:?}: {}", order.raw());
        let weather = tools.iter().find(|t| t.name == "everything_get-structured-content").unwrap();
        assert!(weather.raw()["outputSchema"]["properties"]["temperature"].is_object(), "{}", weather.raw());
        // Resources keep their URIs.
        let resources = bounded("resources/list", client.list_resources()).await.unwrap();
        assert!(resources.iter().any(|r| r.uri == "bookshop://holds"), "{era:?}: {resources:?}");
        assert!(resources.iter().any(|r| r.uri.starts_with("demo://")), "{era:?}: {resources:?}");
    }
}

/// Orders `title` through the gateway, in a task of its own (a call that holds the book until it is dropped), and
/// returns once the bookshop upstream holds it.
async fn order_held(
    gateway: &HttpServer,
    client: &Client,
    era: EraChoice,
    title: &'static str,
) -> tokio::task::JoinHandle<Result<mcp::client::ToolResult, mcp::client::Error>> {
    let order = tokio::spawn({
        let client = client.clone();
        async move { client.call_tool("shop_order_book", json!({"title": title})).await }
    });
    eventually(
        &format!("{era:?}: the order holds {title} upstream"),
        async || holds(client).await == [title],
        || gateway.stderr_text(),
    )
    .await;
    order
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_dropped_order_is_cancelled_upstream_and_releases_its_hold_in_both_eras() {
    let gateway = gateway(&[]).await;
    for (era, title) in [(EraChoice::V2025, "Dune"), (EraChoice::V2026, "Emma")] {
        let client = connect(&gateway, era).await;
        assert!(holds(&client).await.is_empty(), "{era:?}");
        let order = order_held(&gateway, &client, era, title).await;
        order.abort();
        let aborted = bounded("the aborted call", order).await;
        assert!(aborted.is_err_and(|e| e.is_cancelled()), "{era:?}: the call was still running when dropped");
        eventually(
            &format!("{era:?}: the dropped order released its hold upstream"),
            async || holds(&client).await.is_empty(),
            || gateway.stderr_text(),
        )
        .await;
        // The holds resource, read through the gateway at its own URI, says so too.
        let read = bounded("resources/read", client.read_resource("bookshop://holds")).await.unwrap();
        let text = read["contents"][0]["text"].as_str().unwrap_or_else(|| panic!("{read}"));
        assert_eq!(serde_json::from_str::<Value>(text).unwrap(), json!({"holds": []}), "{era:?}");
        // The bookshop ran its cleanup (its stderr is logged by the gateway).
        let released = format!("released hold on \"{title}\"");
        assert!(
            gateway.wait_stderr(&released, WAIT).await,
            "{era:?}: the bookshop said it released the hold:\n{}",
            gateway.stderr_text()
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn structured_content_and_images_of_server_everything_pass_through_unchanged_in_both_eras() {
    let gateway = gateway(&[]).await;
    let direct = everything_directly(false).await;
    let calls = [
        ("get-structured-content", json!({"location": "Chicago"})),
        ("get-tiny-image", json!({})),
        ("get-annotated-message", json!({"messageType": "success", "includeImage": true})),
    ];
    for era in ERAS {
        let client = connect(&gateway, era).await;
        for (name, arguments) in &calls {
            let own = bounded(name, direct.call_tool(name, arguments.clone())).await.unwrap();
            let relayed = call(&client, &format!("everything_{name}"), arguments.clone()).await;
            assert_eq!(tool_part(&relayed), tool_part(&own), "{era:?}: {name} through the gateway");
        }
        let weather = call(&client, "everything_get-structured-content", json!({"location": "Chicago"})).await;
        assert_eq!(
            weather.structured(),
            Some(&json!({"temperature": 36, "conditions": "Light rain / drizzle", "humidity": 82})),
            "{era:?}: {:?}",
            weather.raw
        );
        let image = call(&client, "everything_get-tiny-image", json!({})).await;
        match &image.content().unwrap()[1] {
            mcp::Content::Image { data, mime_type, .. } => {
                assert_eq!(mime_type, "image/png", "{era:?}");
                assert!(data.starts_with("iVBORw0KGgo"), "{era:?}: {data}");
            }
            other => panic!("{era:?}: an image, not {other:?}"),
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn progress_of_server_everything_reaches_the_caller_in_both_eras() {
    let gateway = gateway(&[]).await;
    for era in ERAS {
        let client = connect(&gateway, era).await;
        let seen = Arc::new(Mutex::new(Vec::new()));
        let heard = seen.clone();
        let call = client
            .call_tool("everything_trigger-long-running-operation", json!({"duration": 0.6, "steps": 3}))
            .on_progress(move |p| heard.lock().unwrap().push((p.progress, p.total)));
        let done = tokio::time::timeout(WAIT, call.into_future())
            .await
            .unwrap_or_else(|_| {
                panic!(
                    "{era:?}: no answer within {WAIT:?}; progress seen: {:?}\n{}",
                    seen.lock().unwrap(),
                    gateway.stderr_text()
                )
            })
            .unwrap_or_else(|e| panic!("{era:?}: {e}"));
        assert_eq!(
            done.text(),
            Some("Long running operation completed. Duration: 0.6 seconds, Steps: 3."),
            "{era:?}: {:?}",
            done.raw
        );
        let seen = seen.lock().unwrap().clone();
        assert_eq!(seen, [(1.0, Some(3.0)), (2.0, Some(3.0)), (3.0, Some(3.0))], "{era:?}: the upstream's progress");
    }
}

/// Runs `tests/python/gateway.py` with the official Python SDK in `mode` against the gateway.
async fn python_client(mode: &'static str) {
    let gateway = gateway(&[]).await;
    let url = gateway.url.clone();
    let run =
        tokio::task::spawn_blocking(move || common::python::run_script("gateway.py", &[mode.as_ref(), url.as_ref()]));
    let out = tokio::time::timeout(Duration::from_secs(120), run)
        .await
        .unwrap_or_else(|_| panic!("{mode}: the script did not end\n{}", gateway.stderr_text()))
        .unwrap();
    assert!(out.contains("all ok"), "{out}\n--- gateway stderr ---\n{}", gateway.stderr_text());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_python_sdk_uses_the_gateway_in_the_2025_era() {
    python_client("legacy").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_python_sdk_uses_the_gateway_in_the_2026_era() {
    python_client("2026-07-28").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_denied_tool_is_neither_listed_nor_callable() {
    let gateway = gateway(&["--deny", "shop_order_*"]).await;
    for era in ERAS {
        let client = connect(&gateway, era).await;
        let names = tool_names(&client).await;
        assert!(!names.iter().any(|n| n == "shop_order_book"), "{era:?}: {names:?}");
        for other in SHOP_TOOLS.iter().filter(|n| **n != "shop_order_book") {
            assert!(names.iter().any(|n| n == other), "{era:?}: {other} is still served: {names:?}");
        }
        assert!(names.iter().any(|n| n == "everything_echo"), "{era:?}: {names:?}");
        let denied = bounded("shop_order_book", client.call_tool("shop_order_book", json!({"title": "Dune"})))
            .await
            .expect_err("a denied tool is not callable");
        assert!(denied.to_string().contains("unknown tool"), "{era:?}: {denied}");
        // Nothing ran upstream: no hold.
        assert!(holds(&client).await.is_empty(), "{era:?}");
        let echoed = call(&client, "everything_echo", json!({"message": "hi"})).await;
        assert_eq!(echoed.text(), Some("Echo: hi"), "{era:?}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_http_upstream_killed_mid_session_fails_calls_naming_it_then_is_served_again() {
    let bookshop = common::example("bookshop");
    let mut shop = HttpServer::start_binary(bookshop.clone(), &[]);
    let (url, authority) = (shop.url.clone(), shop.authority().to_owned());
    let gateway = gateway_with(&url, &[]).await;
    for era in ERAS {
        let client = connect(&gateway, era).await;
        assert!(holds(&client).await.is_empty(), "{era:?}");

        common::shops::kill(&shop, "-KILL");
        assert!(shop.wait_exit(WAIT).is_some(), "the bookshop did not die");
        let started = Instant::now();
        let failed = bounded("a call to the dead upstream", client.call_tool("shop_list_holds", json!({})))
            .await
            .expect_err("a call to a dead upstream fails");
        let elapsed = started.elapsed();
        let said = failed.to_string();
        assert!(elapsed < Duration::from_secs(5), "{era:?}: at once, not after {elapsed:?}: {said}");
        assert!(said.contains("`shop`") && said.contains(&url), "{era:?}: names the upstream and its URL: {said}");

        // The other upstream goes on.
        let echoed = call(&client, "everything_echo", json!({"message": "still here"})).await;
        assert_eq!(echoed.text(), Some("Echo: still here"), "{era:?}");

        // A bookshop on the same port: the next call reaches it.
        shop = HttpServer::start_binary(bookshop.clone(), &["--http", &authority]);
        assert_eq!(shop.url, url, "the new bookshop listens where the old one did");
        let again = bounded("a call to the restarted upstream", client.call_tool("shop_list_holds", json!({})))
            .await
            .unwrap_or_else(|e| {
                panic!("{era:?}: the restarted upstream is served again: {e}\n{}", gateway.stderr_text())
            });
        assert_eq!(again.structured(), Some(&json!({"holds": []})), "{era:?}: {:?}", again.raw);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_bookshops_confirmation_is_answered_through_the_gateway_in_both_eras() {
    let gateway = gateway(&[]).await;
    // Each era's failure, so that one run says how both behave.
    let mut failures = Vec::new();
    for (era, title) in [(EraChoice::V2025, "Dune"), (EraChoice::V2026, "Emma")] {
        let questions = Arc::new(Mutex::new(Vec::<String>::new()));
        let asked = questions.clone();
        let builder = Client::builder().name("gateway-tests").era(era).on_elicitation(move |params: Value| {
            asked.lock().unwrap().push(params["message"].as_str().unwrap_or_default().to_owned());
            async { Ok(json!({"action": "accept", "content": {"confirm": true}})) }
        });
        let client = bounded("connecting to the gateway", builder.http(&gateway.url)).await.unwrap();
        let order = order_held(&gateway, &client, era, title).await;
        let cancelled =
            bounded("shop_cancel_hold", client.call_tool("shop_cancel_hold", json!({"title": title}))).await;
        let still_held = holds(&client).await;
        order.abort();
        let questions = questions.lock().unwrap().clone();
        let expected = format!("Released the hold on \"{title}\".");
        match cancelled {
            Ok(result) if result.text() == Some(expected.as_str()) && !result.is_error() => {
                if questions != [format!("Release the hold on \"{title}\"?")] {
                    failures.push(format!("{era:?}: the questions our client heard: {questions:?}"));
                }
                if !still_held.is_empty() {
                    failures.push(format!("{era:?}: still held after the confirmed cancel: {still_held:?}"));
                }
            }
            Ok(result) => failures.push(format!(
                "{era:?}: shop_cancel_hold answered {} (questions our client heard: {questions:?})",
                result.raw
            )),
            Err(e) => failures
                .push(format!("{era:?}: shop_cancel_hold failed: {e} (questions our client heard: {questions:?})")),
        }
        eventually(
            &format!("{era:?}: no hold left"),
            async || holds(&client).await.is_empty(),
            || gateway.stderr_text(),
        )
        .await;
    }
    assert!(failures.is_empty(), "the confirmation was not relayed:\n{}", failures.join("\n"));
}
