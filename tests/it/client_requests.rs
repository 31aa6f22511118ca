//! Requests from the server to the client (elicitation, sampling, roots) over stdio, their capability checks, and
//! nested cancellation.

use crate::common;

use std::time::Duration;

use common::{testbed, Server};
use serde_json::{json, Value};

fn text(result: &Value) -> &str {
    result["content"][0]["text"].as_str().unwrap_or_else(|| panic!("no text in {result}"))
}

fn capable() -> Server {
    let mut s = Server::spawn(testbed());
    s.initialize_with(json!({"elicitation": {"form": {}, "url": {}}, "sampling": {}, "roots": {"listChanged": true}}));
    s
}

fn answer(s: &mut Server, request: &Value, result: Value) {
    s.send(json!({"jsonrpc": "2.0", "id": request["id"], "result": result}));
}

#[test]
fn form_elicitation_sends_a_flat_schema_and_reads_the_answer() {
    let mut s = capable();
    for (action, content, expected) in [
        ("accept", json!({"name": "Ada", "age": 36}), "Hello, Ada (Some(36))"),
        ("decline", Value::Null, "declined"),
        ("cancel", Value::Null, "cancelled"),
    ] {
        let call = s.request("tools/call", json!({"name": "ask_name", "arguments": {}}));
        let request = s.server_request("elicitation/create");
        assert_eq!(request["params"]["message"], "Who are you?");
        assert_eq!(request["params"]["mode"], "form");
        let schema = &request["params"]["requestedSchema"];
        assert_eq!(schema["type"], "object");
        assert_eq!(schema["properties"]["name"], json!({"type": "string", "description": "Your name."}));
        assert_eq!(schema["required"], json!(["name"]));
        let mut result = json!({"action": action});
        if !content.is_null() {
            result["content"] = content.clone();
        }
        answer(&mut s, &request, result);
        assert_eq!(text(&s.response(&call)["result"]), expected);
    }
    // A client error becomes the tool's error.
    let call = s.request("tools/call", json!({"name": "ask_name", "arguments": {}}));
    let request = s.server_request("elicitation/create");
    s.send(json!({"jsonrpc": "2.0", "id": request["id"], "error": {"code": -1, "message": "user went away"}}));
    let r = s.response(&call);
    assert_eq!(r["result"]["isError"], true);
    assert!(text(&r["result"]).contains("user went away"), "{r}");
}

#[test]
fn url_elicitation_sampling_and_roots() {
    let mut s = capable();
    let call = s.request("tools/call", json!({"name": "ask_url", "arguments": {}}));
    let request = s.server_request("elicitation/create");
    assert_eq!(
        request["params"],
        json!({"mode": "url", "message": "Please sign in", "url": "https://example.com/login", "elicitationId": "login-1"})
    );
    answer(&mut s, &request, json!({"action": "accept"}));
    assert_eq!(text(&s.response(&call)["result"]), "Accept");

    let call = s.request("tools/call", json!({"name": "summarize", "arguments": {"text": "a long story"}}));
    let request = s.server_request("sampling/createMessage");
    assert_eq!(request["params"]["maxTokens"], 100);
    assert_eq!(request["params"]["messages"][0]["content"]["text"], "Summarize: a long story");
    answer(&mut s, &request, json!({"role": "assistant", "content": {"type": "text", "text": "short"}, "model": "m1"}));
    assert_eq!(text(&s.response(&call)["result"]), "m1 said: short");

    let call = s.request("tools/call", json!({"name": "roots", "arguments": {}}));
    let request = s.server_request("roots/list");
    answer(&mut s, &request, json!({"roots": [{"uri": "file:///a"}, {"uri": "file:///b", "name": "b"}]}));
    assert_eq!(text(&s.response(&call)["result"]), "file:///a,file:///b");
}

#[test]
fn a_capability_the_client_lacks_fails_without_sending_anything() {
    let mut s = Server::spawn(testbed());
    s.initialize_with(json!({"elicitation": {}}));
    for (tool, capability) in [("summarize", "sampling"), ("roots", "roots"), ("ask_url", "elicitation.url")] {
        let r = s.call("tools/call", json!({"name": tool, "arguments": {"text": "x"}}));
        assert_eq!(r["result"]["isError"], true, "{r}");
        assert!(text(&r["result"]).contains(&format!("`{capability}`")), "{r}");
    }
    let sent: Vec<Value> =
        s.drain(Duration::from_millis(200)).into_iter().filter(|m| m.get("method").is_some()).collect();
    assert!(sent.is_empty(), "nothing goes to the client: {sent:?}");
}

#[test]
fn cancelling_a_request_cancels_its_pending_requests_to_the_client() {
    let mut s = capable();
    let call = s.request("tools/call", json!({"name": "nested", "arguments": {}}));
    let elicitation = s.server_request("elicitation/create");
    s.cancel(&call, "stop");
    let cancelled = s.wait_for("a cancel of the elicitation", |m| m["method"] == "notifications/cancelled");
    assert_eq!(cancelled["params"]["requestId"], elicitation["id"]);
    assert!(s.wait_stderr(&format!("NESTED_ABORTED {call}"), Duration::from_secs(2)));
    // A late answer to the cancelled elicitation is ignored, and nothing answers the cancelled call.
    answer(&mut s, &elicitation, json!({"action": "accept", "content": {}}));
    assert_eq!(s.call("ping", json!({}))["result"], json!({}));
    let rest = s.drain(Duration::from_millis(300));
    assert!(rest.iter().all(|m| m.get("id") != Some(&call)), "{rest:?}");
}

#[test]
fn a_finished_nested_request_leaves_nothing_to_cancel() {
    let mut s = capable();
    let call = s.request("tools/call", json!({"name": "nested", "arguments": {}}));
    let elicitation = s.server_request("elicitation/create");
    answer(&mut s, &elicitation, json!({"action": "accept", "content": {}}));
    std::thread::sleep(Duration::from_millis(100));
    s.cancel(&call, "stop");
    assert!(s.wait_stderr(&format!("NESTED_ABORTED {call}"), Duration::from_secs(2)));
    let rest = s.drain(Duration::from_millis(300));
    assert!(rest.iter().all(|m| m["method"] != "notifications/cancelled"), "nothing stray: {rest:?}");
}
