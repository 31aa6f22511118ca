//! Shared state, start-up and shutdown, and custom methods, over stdio against the testbed.

use crate::common;

use std::process::Command;
use std::time::{Duration, Instant};

use common::{testbed, Server};
use serde_json::{json, Value};

fn ready() -> Server {
    let mut s = Server::spawn(testbed());
    s.initialize();
    s
}

fn text(result: &Value) -> String {
    result["content"][0]["text"].as_str().unwrap_or_else(|| panic!("no text in {result}")).to_owned()
}

#[test]
fn two_kinds_of_state_reach_async_and_plain_tools() {
    let mut s = ready();
    assert_eq!(text(&s.call_tool("count", json!({}))), "hello 1");
    assert_eq!(text(&s.call_tool("count_blocking", json!({}))), "hello 2");
    assert_eq!(text(&s.call_tool("count", json!({}))), "hello 3");
    // State parameters are injected, not arguments: the schema has no property for them.
    let list = s.call("tools/list", json!({}));
    let count = list["result"]["tools"].as_array().unwrap().iter().find(|t| t["name"] == "count").unwrap().clone();
    assert_eq!(count["inputSchema"], json!({"type": "object", "properties": {}}));
}

#[test]
fn a_failed_start_up_exits_non_zero_with_the_reason_on_stderr_and_nothing_on_stdout() {
    let out = Command::new(testbed()).env("TESTBED_FAIL_STARTUP", "connection refused").output().unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert!(out.stdout.is_empty(), "stdout: {}", String::from_utf8_lossy(&out.stdout));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("could not open the database: connection refused"), "{stderr}");
}

/// The lines of stderr that hold any of `markers`, in order.
fn markers(s: &Server, markers: &[&str]) -> Vec<String> {
    s.stderr_text().lines().filter_map(|l| markers.iter().find(|m| l.contains(**m)).map(|m| (*m).to_owned())).collect()
}

/// At the end of the input a call is waited for (four fifths of the 5 s shutdown timeout), then cancelled.
#[test]
fn eof_waits_for_in_flight_calls_then_cancels_them_runs_their_cleanup_then_the_shutdown_hook() {
    let mut s = ready();
    let id = s.request("tools/call", json!({"name": "sleep", "arguments": {"ms": 30_000}}));
    assert!(s.wait_stderr(&format!("SLEEP_START {id}"), Duration::from_secs(5)));
    let started = Instant::now();
    let status = s.close(Duration::from_secs(10));
    assert!(status.success(), "{status:?}: {}", s.stderr_text());
    let took = started.elapsed();
    assert!(took > Duration::from_secs(3) && took < Duration::from_secs(6), "shutdown took {took:?}");
    assert_eq!(
        markers(&s, &["SLEEP_ABORTED", "CLEANUP_DONE", "SHUTDOWN_HOOK_RAN"]),
        ["SLEEP_ABORTED", "CLEANUP_DONE", "SHUTDOWN_HOOK_RAN"],
        "{}",
        s.stderr_text()
    );
    assert!(s.drain(Duration::from_millis(100)).iter().all(|m| m.get("id") != Some(&id)));
}

#[cfg(unix)]
#[test]
fn sigterm_cancels_in_flight_calls_runs_their_cleanup_then_the_shutdown_hook() {
    let mut s = ready();
    let id = s.request("tools/call", json!({"name": "sleep", "arguments": {"ms": 30_000}}));
    s.request("tools/call", json!({"name": "spin", "arguments": {}}));
    assert!(s.wait_stderr(&format!("SLEEP_START {id}"), Duration::from_secs(5)));
    let term = Command::new("kill").args(["-TERM", &s.pid().to_string()]).status().unwrap();
    assert!(term.success());
    let status = s.wait_exit(Duration::from_secs(10));
    assert!(status.success(), "{status:?}: {}", s.stderr_text());
    assert!(s.wait_stderr("SPIN_CANCELLED", Duration::from_secs(5)), "{}", s.stderr_text());
    assert_eq!(
        markers(&s, &["SLEEP_ABORTED", "CLEANUP_DONE", "SHUTDOWN_HOOK_RAN"]),
        ["SLEEP_ABORTED", "CLEANUP_DONE", "SHUTDOWN_HOOK_RAN"],
        "{}",
        s.stderr_text()
    );
}

#[test]
fn a_custom_method_reads_typed_params_and_answers() {
    let mut s = ready();
    let r = s.call("testbed/sum", json!({"pair": {"a": 1, "b": 2}, "scale": 10}));
    assert_eq!(r["result"], json!({"sum": 30}), "{r}");
    let r = s.call("testbed/sum", json!({"pair": {"a": 1, "b": 2}}));
    assert_eq!(r["result"], json!({"sum": 3}));
    let missing = s.call("testbed/sum", json!({}));
    assert_eq!(missing["error"]["code"], -32602);
    assert_eq!(missing["error"]["message"], "missing required argument `pair`");
    let wrong = s.call("testbed/sum", json!({"pair": {"a": "one", "b": 2}}));
    assert_eq!(wrong["error"]["code"], -32602);
    assert!(wrong["error"]["message"].as_str().unwrap().starts_with("invalid argument `pair`"), "{wrong}");
    let own_error = s.call("testbed/sum", json!({"pair": {"a": i64::MAX, "b": 0}, "scale": 2}));
    assert_eq!(own_error["error"], json!({"code": -32602, "message": "overflow"}));
    assert_eq!(s.call("testbed/nope", json!({}))["error"]["code"], -32601);
    // State and ctx reach custom methods too.
    assert_eq!(s.call("testbed/wait", json!({"ms": 1}))["result"], json!({"waited": 1, "count": 0}));
    let not_object = s.call("testbed/not-an-object", json!({}));
    assert_eq!(not_object["error"]["code"], -32603);
    assert!(not_object["error"]["message"].as_str().unwrap().contains("not a JSON object"));
}

#[test]
fn a_custom_method_is_cancelled_like_a_tool() {
    let mut s = ready();
    let id = s.request("testbed/wait", json!({"ms": 30_000}));
    assert!(s.wait_stderr(&format!("WAIT_START {id}"), Duration::from_secs(5)));
    s.cancel(&id, "no longer needed");
    assert!(s.wait_stderr(&format!("WAIT_ABORTED {id}"), Duration::from_secs(3)), "{}", s.stderr_text());
    assert_eq!(s.call("ping", json!({}))["result"], json!({}));
    assert!(s.drain(Duration::from_millis(200)).iter().all(|m| m.get("id") != Some(&id)));
}

#[test]
fn custom_methods_need_initialize_like_everything_else() {
    let mut s = Server::spawn(testbed());
    let r = s.call("testbed/sum", json!({"pair": {"a": 1, "b": 2}}));
    assert_eq!(r["error"]["code"], -32600);
}
