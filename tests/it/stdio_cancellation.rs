//! Cancellation over stdio, observed from outside: through the bookshop's own state and through markers the testbed
//! prints on stderr.

use crate::common;

use std::time::{Duration, Instant};

use common::{example, testbed, Server};
use serde_json::{json, Value};

fn holds(server: &mut Server) -> Vec<String> {
    let r = server.call_tool("list_holds", json!({}));
    serde_json::from_value(r["structuredContent"]["holds"].clone()).unwrap()
}

fn wait_until(what: &str, mut f: impl FnMut() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(5);
    while !f() {
        assert!(Instant::now() < deadline, "timed out waiting until {what}");
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// No message in `messages` answers `id`.
fn assert_no_response(messages: &[Value], id: &Value) {
    let answered: Vec<_> = messages.iter().filter(|m| m.get("id") == Some(id) && m.get("method").is_none()).collect();
    assert!(answered.is_empty(), "a cancelled request was answered: {answered:?}");
}

#[test]
fn cancelled_async_tool_is_dropped_its_cleanup_runs_and_it_is_never_answered() {
    let mut s = Server::spawn(example("bookshop"));
    s.initialize();
    let order = s.request("tools/call", json!({"name": "order_book", "arguments": {"title": "Dune"}}));
    wait_until("the hold is taken", || holds(&mut s) == ["Dune"]);
    s.cancel(&order, "customer walked away");
    // The shielded cleanup releases the hold (a 0.1 s round trip) although the handler was dropped.
    wait_until("the hold is released", || holds(&mut s).is_empty());
    assert!(s.wait_stderr("released hold on \"Dune\"", Duration::from_secs(2)));
    // The reason is recorded in the server's log, and never answered.
    assert!(s.wait_stderr("customer walked away", Duration::from_secs(2)), "{}", s.stderr_text());
    let rest = s.drain(Duration::from_millis(300));
    assert_no_response(&rest, &order);
}

#[test]
fn cancelled_blocking_tool_sees_the_flag_and_its_drop_guard_runs() {
    let mut s = Server::spawn(example("bookshop"));
    s.initialize();
    let titles: Vec<String> = (0..20).map(|i| format!("Book {i}")).collect();
    let rebuild = s.request("tools/call", json!({"name": "rebuild_index", "arguments": {"titles": titles}}));
    wait_until("search goes offline", || s.call_tool("search_status", json!({}))["content"][0]["text"] == "offline");
    let cancelled_at = Instant::now();
    s.cancel(&rebuild, "no longer needed");
    wait_until("search is back online", || s.call_tool("search_status", json!({}))["content"][0]["text"] == "online");
    // It stops between books (one a second), not after all twenty.
    assert!(cancelled_at.elapsed() < Duration::from_secs(3), "took {:?}", cancelled_at.elapsed());
    let rest = s.drain(Duration::from_millis(300));
    assert_no_response(&rest, &rebuild);
}

#[test]
fn blocking_tool_polling_the_flag_stops_and_is_not_answered() {
    let mut s = Server::spawn(testbed());
    s.initialize();
    let id = s.request("tools/call", json!({"name": "spin", "arguments": {}}));
    std::thread::sleep(Duration::from_millis(100));
    s.cancel(&id, "stop");
    assert!(s.wait_stderr(&format!("SPIN_CANCELLED {id}"), Duration::from_secs(5)));
    let rest = s.drain(Duration::from_millis(200));
    assert_no_response(&rest, &id);
}

#[test]
fn blocking_tool_that_never_checks_runs_to_the_end_and_its_result_is_discarded() {
    let mut s = Server::spawn(testbed());
    s.initialize();
    let id = s.request("tools/call", json!({"name": "stubborn", "arguments": {"ms": 300}}));
    std::thread::sleep(Duration::from_millis(50));
    s.cancel(&id, "stop");
    // Meanwhile the server keeps serving.
    assert_eq!(s.call_tool("echo", json!({"text": "still here"}))["content"][0]["text"], "still here");
    assert!(s.wait_stderr(&format!("STUBBORN_DONE {id}"), Duration::from_secs(5)));
    let rest = s.drain(Duration::from_millis(200));
    assert_no_response(&rest, &id);
}

#[test]
fn async_tool_is_dropped_at_its_next_await_and_deferred_cleanup_runs() {
    let mut s = Server::spawn(testbed());
    s.initialize();
    let id = s.request("tools/call", json!({"name": "sleep", "arguments": {"ms": 10_000}}));
    assert!(s.wait_stderr(&format!("SLEEP_START {id}"), Duration::from_secs(5)));
    s.cancel(&id, "too slow");
    assert!(s.wait_stderr(&format!("SLEEP_ABORTED {id}"), Duration::from_secs(2)));
    assert!(s.wait_stderr(&format!("CLEANUP_DONE {id}"), Duration::from_secs(2)));
    assert!(!s.has_stderr(&format!("SLEEP_DONE {id}")));
    let rest = s.drain(Duration::from_millis(200));
    assert_no_response(&rest, &id);
}

#[test]
fn initialize_is_not_cancellable() {
    let mut s = Server::spawn(testbed());
    let id = json!("init");
    s.request_with_id(
        id.clone(),
        "initialize",
        json!({"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "t", "version": "0"}}),
    );
    s.cancel(&id, "changed my mind");
    let r = s.response(&id);
    assert_eq!(r["result"]["protocolVersion"], "2025-11-25");
}

#[test]
fn unknown_finished_and_repeated_cancels_are_ignored_silently() {
    let mut s = Server::spawn(testbed());
    s.initialize();
    // Unknown id, and a malformed cancel.
    s.cancel(&json!(424242), "never sent");
    s.notify("notifications/cancelled", json!({"reason": "no id"}));
    // Finished: cancel after the response.
    let done = s.request("tools/call", json!({"name": "echo", "arguments": {"text": "x"}}));
    s.response(&done);
    s.cancel(&done, "late");
    // Twice.
    let id = s.request("tools/call", json!({"name": "sleep", "arguments": {"ms": 10_000}}));
    assert!(s.wait_stderr(&format!("SLEEP_START {id}"), Duration::from_secs(5)));
    s.cancel(&id, "first");
    s.cancel(&id, "second");
    let ping = s.call("ping", json!({}));
    assert_eq!(ping["result"], json!({}));
    let rest = s.drain(Duration::from_millis(300));
    assert!(rest.is_empty(), "cancels must be answered by nothing: {rest:?}");
    assert!(s.wait_stderr(&format!("SLEEP_ABORTED {id}"), Duration::from_secs(2)));
}

#[test]
fn a_cancel_racing_the_response_yields_the_response_or_nothing_never_both() {
    let mut s = Server::spawn(testbed());
    s.initialize();
    let ids: Vec<Value> = (0..200)
        .map(|i| {
            let id = json!(format!("race-{i}"));
            let tool = if i % 2 == 0 { "echo" } else { "echo_blocking" };
            s.request_with_id(id.clone(), "tools/call", json!({"name": tool, "arguments": {"text": "r"}}));
            s.cancel(&id, "race");
            id
        })
        .collect();
    let ping = s.call("ping", json!({}));
    assert_eq!(ping["result"], json!({}));
    let messages = s.drain(Duration::from_millis(500));
    for id in &ids {
        let n = messages.iter().filter(|m| m.get("id") == Some(id)).count();
        assert!(n <= 1, "{id} was answered {n} times");
    }
    // A request id may be reused once its request is over.
    s.request_with_id(ids[0].clone(), "tools/call", json!({"name": "echo", "arguments": {"text": "again"}}));
    assert_eq!(s.response(&ids[0])["result"]["content"][0]["text"], "again");
}

#[test]
fn stdin_eof_waits_then_cancels_in_flight_work_runs_cleanups_and_exits_cleanly() {
    let mut s = Server::spawn(example("bookshop"));
    s.initialize();
    let order = s.request("tools/call", json!({"name": "order_book", "arguments": {"title": "Emma"}}));
    wait_until("the hold is taken", || holds(&mut s) == ["Emma"]);
    // Ten books take ten seconds: longer than the end of input waits for them (four fifths of the 5 s deadline).
    let titles: Vec<String> = (0..10).map(|i| format!("book {i}")).collect();
    let rebuild = s.request("tools/call", json!({"name": "rebuild_index", "arguments": {"titles": titles}}));
    wait_until("search goes offline", || s.call_tool("search_status", json!({}))["content"][0]["text"] == "offline");
    let started = Instant::now();
    let status = s.close(Duration::from_secs(10));
    assert!(status.success(), "exit status {status:?}; stderr:\n{}", s.stderr_text());
    assert!(started.elapsed() < Duration::from_secs(6), "shutdown took {:?}", started.elapsed());
    assert!(s.wait_stderr("released hold on \"Emma\"", Duration::from_secs(5)), "{}", s.stderr_text());
    assert!(s.wait_stderr("search back online", Duration::from_secs(5)), "{}", s.stderr_text());
    assert!(s.wait_stderr("bookshop closed", Duration::from_secs(5)), "the shutdown hook ran: {}", s.stderr_text());
    let rest = s.drain(Duration::from_millis(100));
    assert_no_response(&rest, &order);
    assert_no_response(&rest, &rebuild);
}
