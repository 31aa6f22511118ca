//! The 2026-07-28 era over stdio, in raw JSON-RPC lines: no handshake, the `_meta` envelope on every request,
//! `server/discover`, results with `resultType`, server info and caching hints, the envelope's errors, per-request
//! logging, progress and cancellation, `input_required` rounds with a sealed `requestState`, `subscriptions/listen`,
//! and a 2025 session interleaved with all of it on one process. Every message the server writes is checked against
//! the schema of its request's era (see `common::Server`).

use crate::common;

use std::collections::BTreeSet;
use std::process::Command;
use std::time::Duration;

use common::v2026::{self, subscription_tag, META_CAPABILITIES, META_LOG_LEVEL, META_SERVER_INFO, META_VERSION};
use common::{testbed, Server, WAIT};
use serde_json::{json, Value};

fn result(r: &Value) -> &Value {
    r.get("result").unwrap_or_else(|| panic!("not a result: {r}"))
}

fn text(result: &Value) -> &str {
    result["content"][0]["text"].as_str().unwrap_or_else(|| panic!("no text content in {result}"))
}

fn error_code(r: &Value) -> i64 {
    r["error"]["code"].as_i64().unwrap_or_else(|| panic!("not an error: {r}"))
}

/// What the server wrote before the response just read (kept aside while waiting for it).
fn before_response(s: &mut Server) -> Vec<Value> {
    s.drain(Duration::ZERO)
}

fn with_method<'a>(messages: &'a [Value], method: &str) -> Vec<&'a Value> {
    messages.iter().filter(|m| m["method"] == method).collect()
}

fn tagged<'a>(messages: &'a [Value], listen_id: &Value) -> Vec<&'a Value> {
    messages.iter().filter(|m| subscription_tag(m) == Some(listen_id)).collect()
}

fn elicitation() -> Value {
    json!({"elicitation": {}})
}

#[test]
fn the_base64_helper_matches_the_spec_examples() {
    assert_eq!(v2026::base64("Hello, 世界".as_bytes()), "SGVsbG8sIOS4lueVjA==");
    assert_eq!(v2026::base64(b" padded "), "IHBhZGRlZCA=");
    assert_eq!(v2026::base64(b"=?base64?literal?="), "PT9iYXNlNjQ/bGl0ZXJhbD89");
}

#[test]
fn a_2026_request_needs_no_initialize_and_its_result_says_complete_and_who_answered() {
    let mut s = Server::spawn(testbed());
    let list = s.v2026_call("tools/list", json!({}));
    let r = result(&list);
    assert_eq!(r["resultType"], "complete");
    assert_eq!(r["_meta"][META_SERVER_INFO]["name"], "testbed", "{r}");
    assert!(r["_meta"][META_SERVER_INFO]["version"].is_string(), "{r}");
    assert!(r["tools"].as_array().unwrap().iter().any(|t| t["name"] == "echo"));

    let call = s.v2026_tool("echo", json!({"text": "hi"}));
    assert_eq!(call["resultType"], "complete");
    assert_eq!(call["_meta"][META_SERVER_INFO]["name"], "testbed");
    assert_eq!(text(&call), "hi");
    // A tool's own failure is a complete result with isError; an unknown tool is -32602.
    let failed = s.v2026_tool("fail", json!({"reason": "no"}));
    assert_eq!((failed["resultType"].as_str(), failed["isError"].as_bool()), (Some("complete"), Some(true)));
    assert_eq!(error_code(&s.v2026_call("tools/call", json!({"name": "no_such_tool", "arguments": {}}))), -32602);

    // The request's version and capabilities come from its envelope.
    let who = s.v2026_call_with("tools/call", json!({"name": "whoami", "arguments": {}}), json!({"sampling": {}}));
    let who = &result(&who)["structuredContent"];
    assert_eq!(who["protocolVersion"], "2026-07-28");
    assert_eq!(who["capabilities"], json!({"sampling": {}}));
    assert_eq!(who["client"], "modern-tests");

    // Without the envelope the same request is a 2025 one, which needs `initialize` first.
    assert_eq!(error_code(&s.call("tools/list", json!({}))), -32600);
}

#[test]
fn lists_reads_and_discover_carry_caching_hints() {
    let mut s = Server::spawn(testbed());
    let mut cacheable: Vec<(&str, Value)> =
        ["tools/list", "prompts/list", "resources/list", "resources/templates/list"]
            .into_iter()
            .map(|m| (m, json!({})))
            .collect();
    cacheable.push(("resources/read", json!({"uri": "test://static"})));
    cacheable.push(("resources/read", json!({"uri": "files:///docs/a.txt"})));
    cacheable.push(("server/discover", json!({})));
    for (method, params) in cacheable {
        let r = s.v2026_call(method, params.clone());
        let r = result(&r);
        assert_eq!(r["resultType"], "complete", "{method}: {r}");
        assert!(r["ttlMs"].as_u64().is_some(), "{method} {params}: ttlMs is a non-negative integer: {r}");
        assert!(matches!(r["cacheScope"].as_str(), Some("public" | "private")), "{method}: {r}");
        assert_eq!(r["_meta"][META_SERVER_INFO]["name"], "testbed", "{method}: {r}");
    }
    let read = s.v2026_call("resources/read", json!({"uri": "test://static"}));
    assert_eq!(result(&read)["contents"][0]["text"], "hello");
    let completion = s.v2026_call(
        "completion/complete",
        json!({"ref": {"type": "ref/prompt", "name": "greeting"}, "argument": {"name": "name", "value": "A"}}),
    );
    assert_eq!(result(&completion)["resultType"], "complete");
    assert_eq!(result(&completion)["completion"]["values"], json!(["Ada", "Alan"]));

    // A resource that does not exist is -32602 (never -32002 in this era), naming the URI.
    let missing = s.v2026_call("resources/read", json!({"uri": "test://nothing-here"}));
    assert_eq!(error_code(&missing), -32602, "{missing}");
    assert_eq!(missing["error"]["data"]["uri"], "test://nothing-here");
}

#[test]
fn server_discover_describes_the_server_without_a_handshake() {
    let mut s = Server::spawn(testbed());
    let r = s.v2026_call("server/discover", json!({}));
    let d = result(&r);
    assert_eq!(d["resultType"], "complete");
    let versions: Vec<&str> = d["supportedVersions"].as_array().unwrap().iter().filter_map(Value::as_str).collect();
    assert!(versions.contains(&"2026-07-28"), "{d}");
    for kind in ["tools", "prompts", "resources"] {
        assert!(d["capabilities"][kind].is_object(), "{kind}: {d}");
    }
    // The testbed logs (log_all, slow_steps): a server that emits logs declares `logging`.
    assert!(d["capabilities"]["logging"].is_object(), "{d}");
    assert_eq!(d["_meta"][META_SERVER_INFO]["name"], "testbed");
    assert!(d.get("serverInfo").is_none(), "server info goes in _meta, not in the result body: {d}");

    // clientInfo is optional.
    let bare = s.call("server/discover", json!({"_meta": {META_VERSION: "2026-07-28", META_CAPABILITIES: {}}}));
    assert_eq!(result(&bare)["supportedVersions"], d["supportedVersions"]);
}

#[test]
fn a_broken_envelope_is_32602_and_an_unsupported_version_is_32022() {
    let mut s = Server::spawn(testbed());
    // Ids are echoed, whatever their type.
    let cases = [
        ("no-params", "server/discover", Value::Null),
        ("no-meta", "server/discover", json!({})),
        ("no-version", "server/discover", json!({"_meta": {META_CAPABILITIES: {}}})),
        ("no-capabilities", "server/discover", json!({"_meta": {META_VERSION: "2026-07-28"}})),
        ("no-capabilities-tools", "tools/list", json!({"_meta": {META_VERSION: "2026-07-28"}})),
        // The envelope's other keys without its version: a malformed 2026 envelope, not a 2025 request before
        // `initialize`.
        ("no-version-tools", "tools/list", json!({"_meta": {META_CAPABILITIES: {}}})),
        (
            "no-version-client-info",
            "tools/call",
            json!({"name": "echo", "_meta": {"io.modelcontextprotocol/clientInfo": {"name": "c", "version": "0"}}}),
        ),
        (
            "capabilities-not-an-object",
            "tools/list",
            json!({"_meta": {META_VERSION: "2026-07-28", META_CAPABILITIES: "all of them"}}),
        ),
        ("listen-no-meta", "subscriptions/listen", json!({"notifications": {"toolsListChanged": true}})),
    ];
    for (id, method, params) in cases {
        let id = json!(id);
        let message = if params.is_null() {
            json!({"jsonrpc": "2.0", "id": id, "method": method})
        } else {
            json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params})
        };
        s.send(message);
        let r = s.response(&id);
        assert_eq!(error_code(&r), -32602, "{id}: {r}");
        if id.as_str().is_some_and(|i| i.starts_with("no-version")) {
            assert!(r["error"]["message"].as_str().unwrap().contains("protocolVersion"), "{id}: {r}");
        }
    }

    let discover = s.v2026_call("server/discover", json!({}));
    let supported_versions = result(&discover)["supportedVersions"].clone();
    let id = json!("too-old");
    s.request_with_id(id.clone(), "tools/list", json!({"_meta": {META_VERSION: "1900-01-01", META_CAPABILITIES: {}}}));
    let r = s.response(&id);
    assert_eq!(error_code(&r), -32022, "{r}");
    assert_eq!(r["error"]["data"]["requested"], "1900-01-01");
    let supported = r["error"]["data"]["supported"].as_array().expect("data.supported").clone();
    assert!(supported.contains(&json!("2026-07-28")), "{r}");
    for v in &supported {
        assert!(supported_versions.as_array().unwrap().contains(v), "{v} is not in server/discover's list");
    }
    // A 2025 version can only be had through `initialize`: in the envelope it is not served statelessly.
    let r = s.call("tools/list", json!({"_meta": {META_VERSION: "2025-11-25", META_CAPABILITIES: {}}}));
    assert_eq!(error_code(&r), -32022, "{r}");
    assert_eq!(r["error"]["data"]["requested"], "2025-11-25");
    // An invalid log level is -32602 too.
    let r = s.v2026_call("tools/list", json!({"_meta": {META_LOG_LEVEL: "loud"}}));
    assert_eq!(error_code(&r), -32602, "{r}");
}

#[test]
fn methods_the_2026_era_removed_are_unknown_methods() {
    let mut s = Server::spawn(testbed());
    for (method, params) in [
        (
            "initialize",
            json!({"protocolVersion": "2026-07-28", "capabilities": {}, "clientInfo": {"name": "t", "version": "0"}}),
        ),
        ("ping", json!({})),
        ("logging/setLevel", json!({"level": "debug"})),
        ("resources/subscribe", json!({"uri": "test://static"})),
        ("resources/unsubscribe", json!({"uri": "test://static"})),
        ("unknown/method", json!({})),
    ] {
        let r = s.v2026_call(method, params);
        assert_eq!(error_code(&r), -32601, "{method}: {r}");
    }
    // The refused `initialize` started no 2025 session.
    assert_eq!(error_code(&s.call("tools/list", json!({}))), -32600);
}

#[test]
fn a_2025_session_and_2026_requests_interleave_on_one_process() {
    let mut s = Server::spawn(testbed());
    let init = s.initialize_with(json!({"elicitation": {}}));
    assert_eq!(result(&init)["protocolVersion"], "2025-11-25");
    let listen = json!("both-eras");
    s.v2026_request_with_id(
        listen.clone(),
        "subscriptions/listen",
        json!({"notifications": {"toolsListChanged": true}}),
        json!({}),
    );
    s.wait_for("the acknowledgement", |m| {
        m["method"] == "notifications/subscriptions/acknowledged" && subscription_tag(m) == Some(&listen)
    });

    let legacy = s.call("tools/list", json!({}));
    assert!(result(&legacy)["tools"].is_array());
    let v2026 = s.v2026_call("tools/list", json!({}));
    assert_eq!(result(&v2026)["resultType"], "complete");
    // One registry, two eras: the same tools, but `execution.taskSupport` is a 2025-11-25 field (the 2026 Tasks
    // extension decides per request).
    let mut legacy_tools = result(&legacy)["tools"].clone();
    let mut with_execution = 0;
    for tool in legacy_tools.as_array_mut().unwrap() {
        with_execution += usize::from(tool.as_object_mut().unwrap().remove("execution").is_some());
    }
    assert!(with_execution > 0, "the testbed's task tools show execution in 2025");
    assert!(result(&v2026)["tools"].as_array().unwrap().iter().all(|t| t.get("execution").is_none()));
    assert_eq!(legacy_tools, result(&v2026)["tools"], "one registry, two eras");

    // One server state behind both.
    assert_eq!(text(&s.call_tool("count", json!({}))), "hello 1");
    assert_eq!(text(&s.v2026_tool("count", json!({}))), "hello 2");
    assert_eq!(text(&s.call_tool("count", json!({}))), "hello 3");

    // Each request is described by its own era: the session's handshake for 2025, the envelope for 2026 (which
    // must not inherit what the session declared).
    let old = s.call_tool("whoami", json!({}));
    assert_eq!(old["structuredContent"]["protocolVersion"], "2025-11-25");
    assert_eq!(old["structuredContent"]["capabilities"], json!({"elicitation": {}}));
    let new = s.v2026_tool("whoami", json!({}));
    assert_eq!(new["structuredContent"]["protocolVersion"], "2026-07-28");
    assert_eq!(new["structuredContent"]["capabilities"], json!({}));
    let refused = s.v2026_call("tools/call", json!({"name": "ask_name", "arguments": {}}));
    assert_eq!(error_code(&refused), -32021, "{refused}");

    // The 2025 session asks the client with a request; a 2026 request gets an input_required result.
    let id = s.request("tools/call", json!({"name": "ask_name", "arguments": {}}));
    let ask = s.server_request("elicitation/create");
    s.send(json!({"jsonrpc": "2.0", "id": ask["id"], "result": {"action": "accept", "content": {"name": "Ada"}}}));
    assert_eq!(text(result(&s.response(&id))), "Hello, Ada (None)");
    let round = s.v2026_call_with("tools/call", json!({"name": "ask_name", "arguments": {}}), elicitation());
    assert_eq!(result(&round)["resultType"], "input_required");

    // A list change reaches the 2025 session untagged, and the listener tagged.
    s.v2026_tool("toggle", json!({"kind": "tool", "name": "echo", "enabled": false}));
    let seen = before_response(&mut s);
    let changes = with_method(&seen, "notifications/tools/list_changed");
    assert_eq!(changes.len(), 2, "{seen:?}");
    assert_eq!(changes.iter().filter(|m| subscription_tag(m) == Some(&listen)).count(), 1, "{seen:?}");
    assert_eq!(changes.iter().filter(|m| subscription_tag(m).is_none()).count(), 1, "{seen:?}");
}

#[test]
fn logs_are_sent_only_at_the_level_the_request_asks_for() {
    let mut s = Server::spawn(testbed());
    let quiet = s.v2026_tool("log_all", json!({}));
    assert_eq!(quiet["resultType"], "complete");
    let seen = before_response(&mut s);
    assert!(with_method(&seen, "notifications/message").is_empty(), "no logLevel, no logs: {seen:?}");

    let id = s.v2026_request(
        "tools/call",
        json!({"name": "log_all", "arguments": {}, "_meta": {META_LOG_LEVEL: "warning"}}),
        json!({}),
    );
    result(&s.response(&id));
    let seen = before_response(&mut s);
    let logs = with_method(&seen, "notifications/message");
    let levels: Vec<&str> = logs.iter().filter_map(|m| m["params"]["level"].as_str()).collect();
    assert_eq!(levels, ["warning", "error", "critical", "alert", "emergency"], "{seen:?}");
    assert!(logs.iter().all(|m| subscription_tag(m).is_none()), "request-scoped notifications are untagged");

    let id = s.v2026_request(
        "tools/call",
        json!({"name": "log_all", "arguments": {}, "_meta": {META_LOG_LEVEL: "debug"}}),
        json!({}),
    );
    result(&s.response(&id));
    assert_eq!(with_method(&before_response(&mut s), "notifications/message").len(), 8);

    let bad =
        s.v2026_call("tools/call", json!({"name": "log_all", "arguments": {}, "_meta": {META_LOG_LEVEL: "loud"}}));
    assert_eq!(error_code(&bad), -32602, "{bad}");
    assert!(with_method(&before_response(&mut s), "notifications/message").is_empty());
}

#[test]
fn progress_is_reported_when_the_request_carries_a_token() {
    let mut s = Server::spawn(testbed());
    let id = s.v2026_request(
        "tools/call",
        json!({"name": "progress", "arguments": {}, "_meta": {"progressToken": "p-1"}}),
        json!({}),
    );
    assert_eq!(text(result(&s.response(&id))), "reported");
    let seen = before_response(&mut s);
    let progress = with_method(&seen, "notifications/progress");
    let values: Vec<f64> = progress.iter().filter_map(|m| m["params"]["progress"].as_f64()).collect();
    assert_eq!(values, [1.0, 2.0, 3.0], "increasing, before the result: {seen:?}");
    assert!(progress.iter().all(|m| m["params"]["progressToken"] == "p-1" && m["params"]["total"] == 3.0));
    assert!(progress.iter().all(|m| subscription_tag(m).is_none()));

    s.v2026_tool("progress", json!({}));
    assert!(with_method(&before_response(&mut s), "notifications/progress").is_empty(), "no token, no progress");
}

#[test]
fn notifications_cancelled_stops_a_2026_request_which_then_gets_no_response() {
    let mut s = Server::spawn(testbed());
    let id = json!("sleepy");
    s.v2026_request_with_id(id.clone(), "tools/call", json!({"name": "sleep", "arguments": {"ms": 60000}}), json!({}));
    assert!(s.wait_stderr("SLEEP_START \"sleepy\"", WAIT), "{}", s.stderr_text());
    s.cancel(&id, "changed my mind");
    assert!(s.wait_stderr("SLEEP_ABORTED \"sleepy\"", WAIT), "{}", s.stderr_text());
    assert!(s.wait_stderr("CLEANUP_DONE \"sleepy\"", WAIT), "its deferred cleanup ran");

    // A blocking handler sees its flag.
    let spin = json!(4242);
    s.v2026_request_with_id(spin.clone(), "tools/call", json!({"name": "spin", "arguments": {}}), json!({}));
    s.cancel(&spin, "enough");
    assert!(s.wait_stderr("SPIN_CANCELLED 4242", WAIT), "{}", s.stderr_text());

    // The server has read everything before this request: still no response to the cancelled ones.
    s.v2026_call("tools/list", json!({}));
    let seen = before_response(&mut s);
    assert!(!seen.iter().any(|m| m.get("id") == Some(&id) || m.get("id") == Some(&spin)), "{seen:?}");
    assert!(!s.has_stderr("SLEEP_DONE"));
}

#[test]
fn a_question_the_request_has_no_capability_for_is_32021() {
    let mut s = Server::spawn(testbed());
    for (tool, arguments, capabilities, required) in [
        ("ask_name", json!({}), json!({}), json!({"elicitation": {}})),
        ("ask_name_blocking", json!({}), json!({"sampling": {}}), json!({"elicitation": {}})),
        ("ask_url", json!({}), json!({"elicitation": {}}), json!({"elicitation": {"url": {}}})),
        ("summarize", json!({"text": "long"}), json!({"elicitation": {}}), json!({"sampling": {}})),
        ("roots", json!({}), json!({}), json!({"roots": {}})),
    ] {
        let r = s.v2026_call_with("tools/call", json!({"name": tool, "arguments": arguments}), capabilities);
        assert_eq!(error_code(&r), -32021, "{tool}: {r}");
        assert_eq!(r["error"]["data"]["requiredCapabilities"], required, "{tool}: {r}");
    }
}

/// The single question of an input_required result: its key and the request.
fn only_question(r: &Value) -> (String, Value) {
    let result = result(r);
    assert_eq!(result["resultType"], "input_required", "{r}");
    let questions = result["inputRequests"].as_object().unwrap_or_else(|| panic!("no inputRequests: {r}"));
    assert_eq!(questions.len(), 1, "{r}");
    let (key, request) = questions.iter().next().unwrap();
    (key.clone(), request.clone())
}

fn request_state(r: &Value) -> String {
    let state = result(r)["requestState"].as_str().unwrap_or_else(|| panic!("no requestState: {r}"));
    assert!(!state.is_empty());
    state.to_owned()
}

fn retry(name: &str, arguments: Value, answers: Value, state: Option<&str>) -> Value {
    let mut params = json!({"name": name, "arguments": arguments, "inputResponses": answers});
    if let Some(state) = state {
        params["requestState"] = json!(state);
    }
    params
}

#[test]
fn an_elicitation_round_trips_through_input_required() {
    let mut s = Server::spawn(testbed());
    let first = s.v2026_call_with("tools/call", json!({"name": "ask_name", "arguments": {}}), elicitation());
    let (key, question) = only_question(&first);
    assert_eq!(question["method"], "elicitation/create");
    assert!(question.get("id").is_none() && question.get("jsonrpc").is_none(), "a bare request: {question}");
    assert_eq!(question["params"]["message"], "Who are you?");
    assert_eq!(question["params"]["requestedSchema"]["properties"]["name"]["type"], "string");
    assert_eq!(result(&first)["_meta"][META_SERVER_INFO]["name"], "testbed");
    let state = request_state(&first);

    let answer = json!({key.as_str(): {"action": "accept", "content": {"name": "Ada", "age": 36}}});
    let done = s.v2026_call_with("tools/call", retry("ask_name", json!({}), answer, Some(&state)), elicitation());
    assert_eq!(result(&done)["resultType"], "complete");
    assert_eq!(text(result(&done)), "Hello, Ada (Some(36))");

    let declined = json!({key.as_str(): {"action": "decline"}});
    let done = s.v2026_call_with("tools/call", retry("ask_name", json!({}), declined, Some(&state)), elicitation());
    assert_eq!(text(result(&done)), "declined");

    // An answer that does not fit the question is an error, not a result.
    let wrong = json!({key.as_str(): {"action": "accept", "content": {"name": 12345}}});
    let r = s.v2026_call_with("tools/call", retry("ask_name", json!({}), wrong, Some(&state)), elicitation());
    assert!(r.get("error").is_some() || result(&r)["resultType"] == "input_required", "{r}");
}

#[test]
fn sampling_and_roots_round_trip_too() {
    let mut s = Server::spawn(testbed());
    let sampling = json!({"sampling": {}});
    let first = s.v2026_call_with(
        "tools/call",
        json!({"name": "summarize", "arguments": {"text": "a long story"}}),
        sampling.clone(),
    );
    let (key, question) = only_question(&first);
    assert_eq!(question["method"], "sampling/createMessage");
    assert_eq!(question["params"]["maxTokens"], 100);
    assert_eq!(question["params"]["messages"][0]["content"]["text"], "Summarize: a long story");
    let answer = json!({key.as_str(): {
        "role": "assistant", "content": {"type": "text", "text": "short"}, "model": "m1", "stopReason": "endTurn"
    }});
    let done = s.v2026_call_with(
        "tools/call",
        retry("summarize", json!({"text": "a long story"}), answer, Some(&request_state(&first))),
        sampling,
    );
    assert_eq!(text(result(&done)), "m1 said: short");

    let roots = json!({"roots": {}});
    let first = s.v2026_call_with("tools/call", json!({"name": "roots", "arguments": {}}), roots.clone());
    let (key, question) = only_question(&first);
    assert_eq!(question["method"], "roots/list");
    let answer = json!({key.as_str(): {"roots": [{"uri": "file:///a", "name": "A"}, {"uri": "file:///b"}]}});
    let done = s.v2026_call_with("tools/call", retry("roots", json!({}), answer, Some(&request_state(&first))), roots);
    assert_eq!(text(result(&done)), "file:///a,file:///b");
}

#[test]
fn a_multi_round_request_carries_its_answers_and_its_round_state() {
    let mut s = Server::spawn(testbed());
    let args = json!({"topic": "cats"});
    let r1 = s.v2026_call_with("tools/call", json!({"name": "interview", "arguments": args}), elicitation());
    let (key, _) = only_question(&r1);
    assert_eq!(key, "name", "the key the handler chose");
    let state1 = request_state(&r1);

    let answer = json!({"name": {"action": "accept", "content": {"name": "Ada"}}});
    let r2 = s.v2026_call_with("tools/call", retry("interview", args.clone(), answer, Some(&state1)), elicitation());
    let (key, question) = only_question(&r2);
    assert_eq!(key, "colour", "the answered question is not asked again: {r2}");
    assert_eq!(question["params"]["message"], "Ada, your favourite colour?");
    let state2 = request_state(&r2);
    assert_ne!(state1, state2, "the state evolves from round to round");

    // Only the new answer is sent: the first one travels in the state.
    let answer = json!({"colour": {"action": "accept", "content": {"colour": "blue"}}});
    let r3 = s.v2026_call_with("tools/call", retry("interview", args, answer, Some(&state2)), elicitation());
    assert_eq!(result(&r3)["resultType"], "complete");
    assert_eq!(text(result(&r3)), "Ada likes blue (cats); earlier rounds: 2", "round_state was carried");
}

#[test]
fn a_blocking_handler_asks_with_elicit_blocking() {
    let mut s = Server::spawn(testbed());
    let first = s.v2026_call_with("tools/call", json!({"name": "ask_name_blocking", "arguments": {}}), elicitation());
    let (key, question) = only_question(&first);
    assert_eq!(question["method"], "elicitation/create");
    let answer = json!({key.as_str(): {"action": "accept", "content": {"name": "Grace"}}});
    let done = s.v2026_call_with(
        "tools/call",
        retry("ask_name_blocking", json!({}), answer, Some(&request_state(&first))),
        elicitation(),
    );
    assert_eq!(result(&done)["resultType"], "complete");
    assert_eq!(text(result(&done)), "Hello, Grace (None), from a thread");
}

/// `state` with one character in the middle changed.
fn flip_one_char(state: &str) -> String {
    let mut chars: Vec<char> = state.chars().collect();
    let middle = chars.len() / 2;
    chars[middle] = if chars[middle] == 'A' { 'B' } else { 'A' };
    chars.into_iter().collect()
}

#[test]
fn a_tampered_or_replayed_request_state_is_refused_with_32602() {
    let mut s = Server::spawn(testbed());
    let cats = json!({"topic": "cats"});
    let r1 = s.v2026_call_with("tools/call", json!({"name": "interview", "arguments": cats}), elicitation());
    let state = request_state(&r1);
    let answer = json!({"name": {"action": "accept", "content": {"name": "Ada"}}});

    for (what, params) in [
        ("one character changed", retry("interview", cats.clone(), answer.clone(), Some(&flip_one_char(&state)))),
        ("a suffix", retry("interview", cats.clone(), answer.clone(), Some(&format!("{state}-TAMPERED")))),
        ("not base64", retry("interview", cats.clone(), answer.clone(), Some("%%%"))),
        ("other arguments", retry("interview", json!({"topic": "dogs"}), answer.clone(), Some(&state))),
        ("another tool", retry("ask_name", json!({}), answer.clone(), Some(&state))),
    ] {
        let r = s.v2026_call_with("tools/call", params, elicitation());
        assert_eq!(error_code(&r), -32602, "{what}: {r}");
    }
    let mut not_a_string = retry("interview", cats.clone(), answer.clone(), None);
    not_a_string["requestState"] = json!(17);
    assert_eq!(error_code(&s.v2026_call_with("tools/call", not_a_string, elicitation())), -32602);

    // The state as it was sealed still works.
    let r2 = s.v2026_call_with("tools/call", retry("interview", cats, answer, Some(&state)), elicitation());
    assert_eq!(only_question(&r2).0, "colour");
}

fn listen(s: &mut Server, id: &Value, filter: Value) -> Value {
    s.v2026_request_with_id(id.clone(), "subscriptions/listen", json!({"notifications": filter}), json!({}));
    let ack = s.wait_for("the acknowledgement", |m| {
        m["method"] == "notifications/subscriptions/acknowledged" && subscription_tag(m) == Some(id)
    });
    // The acknowledgement is the first message of the subscription.
    let earlier = before_response(s);
    assert!(tagged(&earlier, id).is_empty(), "{earlier:?}");
    ack
}

/// Calls a tool that triggers notifications, and returns what the server wrote before the tool's response: a
/// handler's notifications are written before its response, so that is all it triggered.
fn trigger(s: &mut Server, tool: &str, arguments: Value) -> Vec<Value> {
    let r = s.v2026_tool(tool, arguments);
    assert_ne!(r["isError"], true, "{tool}: {r}");
    before_response(s)
}

#[test]
fn subscriptions_listen_sends_only_what_each_stream_asked_for_tagged_with_its_id() {
    let mut s = Server::spawn(testbed());
    let tools = json!("listen-tools");
    let ack = listen(
        &mut s,
        &tools,
        json!({
            "toolsListChanged": true,
            "resourceSubscriptions": ["test://static", "files:///docs"],
            "unknownKind": true,
        }),
    );
    assert_eq!(
        ack["params"]["notifications"],
        json!({"toolsListChanged": true, "resourceSubscriptions": ["test://static", "files:///docs"]})
    );
    let prompts = json!(77);
    let ack = listen(&mut s, &prompts, json!({"promptsListChanged": true}));
    assert_eq!(ack["params"]["notifications"], json!({"promptsListChanged": true}));
    assert_eq!(subscription_tag(&ack), Some(&json!(77)), "the tag keeps the id's type");

    let seen = trigger(&mut s, "toggle", json!({"kind": "tool", "name": "echo", "enabled": false}));
    assert_eq!(seen.len(), 1, "nothing untagged without a 2025 session: {seen:?}");
    assert_eq!(tagged(&seen, &tools).len(), 1, "{seen:?}");
    assert_eq!(tagged(&seen, &tools)[0]["method"], "notifications/tools/list_changed");
    assert!(tagged(&seen, &prompts).is_empty(), "{seen:?}");

    let seen = trigger(&mut s, "toggle", json!({"kind": "prompt", "name": "greeting", "enabled": false}));
    assert_eq!(seen.len(), 1, "{seen:?}");
    assert_eq!(
        (seen[0]["method"].as_str(), subscription_tag(&seen[0])),
        (Some("notifications/prompts/list_changed"), Some(&prompts))
    );

    let seen = trigger(&mut s, "toggle", json!({"kind": "resource", "name": "test://static", "enabled": false}));
    assert!(seen.is_empty(), "nobody asked for resource list changes: {seen:?}");

    let seen = trigger(&mut s, "touch", json!({"uri": "test://static"}));
    assert_eq!(seen.len(), 1, "{seen:?}");
    assert_eq!(seen[0]["method"], "notifications/resources/updated");
    assert_eq!((seen[0]["params"]["uri"].as_str(), subscription_tag(&seen[0])), (Some("test://static"), Some(&tools)));
    let seen = trigger(&mut s, "touch", json!({"uri": "files:///docs/a.txt"}));
    assert_eq!(seen.len(), 1, "a part of a watched resource: {seen:?}");
    assert_eq!(seen[0]["params"]["uri"], "files:///docs/a.txt");
    for unwatched in ["test://bytes", "files:///docsier/a.txt"] {
        let seen = trigger(&mut s, "touch", json!({"uri": unwatched}));
        assert!(seen.is_empty(), "{unwatched}: {seen:?}");
    }

    let seen = trigger(&mut s, "reload_echo", json!({}));
    assert!(!seen.is_empty() && seen.iter().all(|m| m["method"] == "notifications/tools/list_changed"), "{seen:?}");
    assert!(seen.iter().all(|m| subscription_tag(m) == Some(&tools)), "{seen:?}");

    // Cancelling a listen ends it, without a response.
    s.cancel(&tools, "done listening");
    let seen = trigger(&mut s, "toggle", json!({"kind": "tool", "name": "echo", "enabled": true}));
    assert!(seen.is_empty(), "{seen:?}");
    let seen = trigger(&mut s, "toggle", json!({"kind": "prompt", "name": "greeting", "enabled": true}));
    assert_eq!(tagged(&seen, &prompts).len(), 1, "the other stream is still open: {seen:?}");
    assert!(!seen.iter().any(|m| m.get("id") == Some(&tools)));
}

#[test]
fn a_listen_without_a_filter_is_32602() {
    let mut s = Server::spawn(testbed());
    let r = s.v2026_call("subscriptions/listen", json!({}));
    assert_eq!(error_code(&r), -32602, "{r}");
    assert!(with_method(&before_response(&mut s), "notifications/subscriptions/acknowledged").is_empty());
}

#[test]
fn stdin_eof_ends_an_open_listen_with_its_result() {
    let mut s = Server::spawn(testbed());
    let open = json!("listen-open");
    let cancelled = json!("listen-cancelled");
    listen(&mut s, &open, json!({"toolsListChanged": true}));
    listen(&mut s, &cancelled, json!({"promptsListChanged": true}));
    s.cancel(&cancelled, "not interested");
    let status = s.close(WAIT);
    assert!(status.success(), "{status:?}: {}", s.stderr_text());
    let end = s.response(&open);
    let r = result(&end);
    assert_eq!(r["resultType"], "complete");
    assert_eq!(r["_meta"]["io.modelcontextprotocol/subscriptionId"], open);
    assert!(
        !before_response(&mut s).iter().any(|m| m.get("id") == Some(&cancelled)),
        "a cancelled listen gets nothing"
    );
}

#[test]
fn prompts_get_and_resources_read_ask_too_and_their_state_is_bound_to_their_target() {
    let mut s = Server::spawn(testbed());
    let first = s.v2026_call_with("prompts/get", json!({"name": "introduction"}), elicitation());
    let (key, _) = only_question(&first);
    assert_eq!(key, "who");
    let prompt_state = request_state(&first);
    let answer = json!({"who": {"action": "accept", "content": {"name": "Ada"}}});
    let done = s.v2026_call_with(
        "prompts/get",
        json!({"name": "introduction", "inputResponses": answer, "requestState": prompt_state}),
        elicitation(),
    );
    assert_eq!(result(&done)["resultType"], "complete");
    assert_eq!(result(&done)["messages"][0]["content"]["text"], "Please welcome Ada.");

    let first = s.v2026_call_with("resources/read", json!({"uri": "test://guarded/a"}), elicitation());
    let (key, question) = only_question(&first);
    assert_eq!((key.as_str(), &question["params"]["message"]), ("confirm", &json!("Read the note a?")));
    let read_state = request_state(&first);
    let yes = json!({"confirm": {"action": "accept", "content": {"ok": true}}});
    let done = s.v2026_call_with(
        "resources/read",
        json!({"uri": "test://guarded/a", "inputResponses": yes, "requestState": read_state}),
        elicitation(),
    );
    let r = result(&done);
    assert_eq!(r["resultType"], "complete");
    assert_eq!(r["contents"][0]["text"], "the note a");
    assert!(r["ttlMs"].is_u64() && r["cacheScope"].is_string(), "a complete read is cacheable: {r}");

    // A state belongs to its method and target.
    let other_uri = json!({"uri": "test://guarded/b", "inputResponses": yes, "requestState": read_state});
    assert_eq!(error_code(&s.v2026_call_with("resources/read", other_uri, elicitation())), -32602);
    let other_method = json!({"name": "introduction", "inputResponses": yes, "requestState": read_state});
    assert_eq!(error_code(&s.v2026_call_with("prompts/get", other_method, elicitation())), -32602);
    let prompt_as_tool = retry("introduction", json!({}), json!({}), Some(&prompt_state));
    assert_eq!(error_code(&s.v2026_call_with("tools/call", prompt_as_tool, elicitation())), -32602);
}

#[test]
fn a_missing_answer_is_asked_again_and_extra_answers_are_ignored() {
    let mut s = Server::spawn(testbed());
    let args = json!({"topic": "owls"});
    let wrong_key = json!({"nickname": {"action": "accept", "content": {"name": "Ada"}}});
    let again = s.v2026_call_with("tools/call", retry("interview", args.clone(), wrong_key, None), elicitation());
    assert_eq!(only_question(&again).0, "name", "{again}");

    let both_and_more = json!({
        "name": {"action": "accept", "content": {"name": "Ada"}},
        "colour": {"action": "accept", "content": {"colour": "green"}},
        "unexpected": {"action": "accept", "content": {"foo": "bar"}},
    });
    let done = s.v2026_call_with("tools/call", retry("interview", args, both_and_more, None), elicitation());
    assert_eq!(text(result(&done)), "Ada likes green (owls); earlier rounds: 0");

    let r = s.v2026_call_with(
        "tools/call",
        json!({"name": "ask_name", "arguments": {}, "inputResponses": null}),
        elicitation(),
    );
    assert!(r.get("error").is_some() || result(&r)["resultType"] == "input_required", "{r}");
}

#[test]
fn a_form_question_needs_form_mode_which_a_url_only_client_did_not_declare() {
    // `elicitation: {}` means form mode; `elicitation: {url: {}}` declares URL mode only.
    let mut s = Server::spawn(testbed());
    let ok = s.v2026_call_with("tools/call", json!({"name": "ask_name", "arguments": {}}), elicitation());
    assert_eq!(result(&ok)["resultType"], "input_required");
    let r = s.v2026_call_with(
        "tools/call",
        json!({"name": "ask_name", "arguments": {}}),
        json!({"elicitation": {"url": {}}}),
    );
    assert_eq!(error_code(&r), -32021, "a form elicitation was put to a client that declared URL mode only: {r}");
    assert!(r["error"]["data"]["requiredCapabilities"]["elicitation"].is_object(), "{r}");
}

#[test]
fn initialize_asking_for_2026_gets_the_latest_2025_version() {
    let mut s = Server::spawn(testbed());
    let r = s.call(
        "initialize",
        json!({"protocolVersion": "2026-07-28", "capabilities": {}, "clientInfo": {"name": "t", "version": "0"}}),
    );
    assert_eq!(result(&r)["protocolVersion"], "2025-11-25");
}

#[test]
fn every_page_of_a_2026_list_carries_caching_hints_with_one_cache_scope() {
    let mut command = Command::new(testbed());
    command.env("TESTBED_PAGE_SIZE", "2");
    let mut s = Server::spawn_with(command);
    for (method, key) in [
        ("tools/list", "tools"),
        ("prompts/list", "prompts"),
        ("resources/list", "resources"),
        ("resources/templates/list", "resourceTemplates"),
    ] {
        let (mut cursor, mut scopes, mut pages) = (None::<Value>, BTreeSet::new(), 0);
        loop {
            let params = cursor.as_ref().map_or_else(|| json!({}), |c| json!({"cursor": c}));
            let r = s.v2026_call(method, params);
            let page = result(&r);
            assert_eq!(page["resultType"], "complete", "{method}: {page}");
            assert!(page["ttlMs"].is_u64(), "{method}: every page has its ttlMs: {page}");
            assert!(page[key].as_array().is_some_and(|items| items.len() <= 2), "{method}: {page}");
            scopes.insert(page["cacheScope"].as_str().unwrap_or_else(|| panic!("{method}: {page}")).to_owned());
            pages += 1;
            match page.get("nextCursor") {
                Some(next) => cursor = Some(next.clone()),
                None => break,
            }
        }
        assert!(pages >= 2, "{method}: {pages} page(s)");
        assert_eq!(scopes.len(), 1, "{method}: one cacheScope for all pages: {scopes:?}");
    }
    let bad = s.v2026_call("tools/list", json!({"cursor": "not-a-cursor"}));
    assert_eq!(error_code(&bad), -32602, "{bad}");
}
