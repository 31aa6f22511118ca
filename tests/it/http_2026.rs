//! The 2026-07-28 era over Streamable HTTP against a real socket: every POST stands alone (no session id, GET and
//! DELETE 405), the standard headers (`MCP-Protocol-Version`, `Mcp-Method`, `Mcp-Name`, `Mcp-Param-*`) checked
//! against the body, JSON answers and SSE streams, cancellation by closing the stream, `input_required` rounds (across
//! two processes sharing a sealing key too), and `subscriptions/listen`. Every message is checked against the
//! 2026-07-28 schema.

use crate::common;

use std::time::Duration;

use common::http::{raw_http, v2026_headers_with, Body, Client, HttpServer};
use common::schema;
use common::v2026::{self, base64_header, subscription_tag, META_CAPABILITIES, META_LOG_LEVEL, META_VERSION};
use serde_json::{json, Value};

const WAIT: Duration = Duration::from_secs(10);

/// Sends `body` with the standard headers changed by `overrides`; returns the status and the one JSON answer,
/// checked against the 2026 schema (and never with a session id).
async fn post(client: &Client, body: &Value, overrides: &[(&str, Option<&str>)]) -> (u16, Value) {
    let response = client.v2026_send_with(body, overrides).await;
    let status = response.status().as_u16();
    assert!(response.headers().get("mcp-session-id").is_none(), "no session id in the 2026 era");
    let content_type = response.headers().get("content-type").map(|v| v.to_str().unwrap().to_owned());
    assert_eq!(content_type.as_deref(), Some("application/json"), "{body}");
    let text = response.text().await.unwrap();
    let answer: Value = serde_json::from_str(&text).unwrap_or_else(|e| panic!("not JSON ({e}): {text}"));
    schema::check_v2026_message(&answer, body["method"].as_str()).unwrap();
    if let Some(id) = body.get("id") {
        assert_eq!(&answer["id"], id, "the id is echoed: {answer}");
    }
    (status, answer)
}

fn call(id: impl Into<Value>, name: &str, arguments: Value) -> Value {
    v2026::request(id, "tools/call", json!({"name": name, "arguments": arguments}), json!({}))
}

fn error_code(r: &Value) -> i64 {
    r["error"]["code"].as_i64().unwrap_or_else(|| panic!("not an error: {r}"))
}

fn text(r: &Value) -> &str {
    r["result"]["content"][0]["text"].as_str().unwrap_or_else(|| panic!("no text content in {r}"))
}

/// Asserts a rejection: HTTP 400 and this JSON-RPC error code.
async fn rejected(client: &Client, body: &Value, overrides: &[(&str, Option<&str>)], code: i64, why: &str) -> Value {
    let (status, answer) = post(client, body, overrides).await;
    assert_eq!((status, error_code(&answer)), (400, code), "{why}: {answer}");
    answer
}

async fn accepted(client: &Client, body: &Value, overrides: &[(&str, Option<&str>)], why: &str) -> Value {
    let (status, answer) = post(client, body, overrides).await;
    assert!(status == 200 && answer.get("result").is_some(), "{why}: {status} {answer}");
    answer
}

#[tokio::test]
async fn a_2026_post_stands_alone_answered_in_json_without_a_session() {
    let server = HttpServer::start(&[]);
    let client = server.client();
    let list = accepted(&client, &v2026::request(1, "tools/list", json!({}), json!({})), &[], "tools/list").await;
    assert_eq!(list["result"]["resultType"], "complete");
    assert_eq!(list["result"]["_meta"][v2026::META_SERVER_INFO]["name"], "testbed");
    assert!(list["result"]["ttlMs"].is_u64() && list["result"]["cacheScope"].is_string());

    let echo = accepted(&client, &call(2, "echo", json!({"text": "hi"})), &[], "echo").await;
    assert_eq!(text(&echo), "hi");
    let discover = accepted(&client, &v2026::request(3, "server/discover", json!({}), json!({})), &[], "").await;
    assert!(discover["result"]["supportedVersions"].as_array().unwrap().contains(&json!("2026-07-28")));

    // A session id the client sends anyway is ignored: it is neither looked up nor echoed.
    let bogus = [("Mcp-Session-Id", Some("0123456789abcdef0123456789abcdef"))];
    let echo = accepted(&client, &call(4, "echo", json!({"text": "still"})), &bogus, "a session id").await;
    assert_eq!(text(&echo), "still");

    // The server keeps nothing between requests but its own state.
    let (a, _) = client.v2026_call(5, "tools/call", json!({"name": "count", "arguments": {}})).await;
    let (b, _) = server.client().v2026_call(6, "tools/call", json!({"name": "count", "arguments": {}})).await;
    assert_eq!((text(&a), text(&b)), ("hello 1", "hello 2"));

    // A 2025 session on the same endpoint, beside them.
    let mut legacy = server.client();
    assert_eq!(legacy.initialize(json!({})).await["result"]["protocolVersion"], "2025-11-25");
    assert!(legacy.session.is_some());
    let (c, _) = legacy.call(7, "tools/call", json!({"name": "count", "arguments": {}})).await;
    assert_eq!(c["result"]["content"][0]["text"], "hello 3");
    let (d, _) = client.v2026_call(8, "tools/call", json!({"name": "count", "arguments": {}})).await;
    assert_eq!(text(&d), "hello 4");

    // The Origin is checked in this era too.
    let evil = [("Origin", Some("http://evil.example.com"))];
    assert_eq!(client.v2026_send_with(&call(9, "echo", json!({"text": "x"})), &evil).await.status(), 403);
    let local = format!("http://{}", server.authority());
    accepted(&client, &call(10, "echo", json!({"text": "x"})), &[("Origin", Some(&local))], "a loopback origin").await;
}

#[tokio::test]
async fn the_version_header_and_the_envelope_must_be_there_and_agree() {
    let server = HttpServer::start(&[]);
    let client = server.client();
    let discover = |id: &str, meta: Value| {
        let params = json!({"_meta": meta});
        json!({"jsonrpc": "2.0", "id": id, "method": "server/discover", "params": params})
    };
    let full = discover("full", v2026::envelope(json!({})));
    let no_header = [("MCP-Protocol-Version", None)];
    rejected(&client, &full, &no_header, -32020, "no MCP-Protocol-Version").await;

    let header = [("MCP-Protocol-Version", Some("2026-07-28"))];
    let no_meta = json!({"jsonrpc": "2.0", "id": "no-meta", "method": "server/discover", "params": {}});
    rejected(&client, &no_meta, &header, -32602, "no _meta").await;
    let no_version = discover("no-version", json!({META_CAPABILITIES: {}}));
    rejected(&client, &no_version, &header, -32602, "no protocolVersion in _meta").await;
    let no_capabilities = discover("no-capabilities", json!({META_VERSION: "2026-07-28"}));
    rejected(&client, &no_capabilities, &header, -32602, "no clientCapabilities").await;
    let tools_no_meta = json!({"jsonrpc": "2.0", "id": "tools-no-meta", "method": "tools/list"});
    rejected(&client, &tools_no_meta, &header, -32602, "a tools/list with no params").await;
    let no_client_info = discover("no-client-info", json!({META_VERSION: "2026-07-28", META_CAPABILITIES: {}}));
    accepted(&client, &no_client_info, &[], "clientInfo is optional").await;

    let legacy_header = [("MCP-Protocol-Version", Some("2025-11-25"))];
    rejected(&client, &full, &legacy_header, -32020, "the header says 2025-11-25, the body 2026-07-28").await;

    let mut v999 = full.clone();
    v999["id"] = json!("v999");
    v999["params"]["_meta"][META_VERSION] = json!("v999.0.0");
    rejected(&client, &v999, &header, -32020, "the header says 2026-07-28, the body v999.0.0").await;
    let both = [("MCP-Protocol-Version", Some("v999.0.0"))];
    let r = rejected(&client, &v999, &both, -32022, "v999.0.0 in header and body").await;
    assert_eq!(r["error"]["data"]["requested"], "v999.0.0");
    let supported = r["error"]["data"]["supported"].as_array().unwrap().clone();
    assert!(supported.contains(&json!("2026-07-28")));
    let (_, d) = post(&client, &full, &[]).await;
    for v in &supported {
        assert!(d["result"]["supportedVersions"].as_array().unwrap().contains(v), "{v}");
    }

    let mut loud = v2026::request("loud", "tools/list", json!({}), json!({}));
    loud["params"]["_meta"][META_LOG_LEVEL] = json!("loud");
    rejected(&client, &loud, &[], -32602, "an invalid logLevel").await;
}

#[tokio::test]
async fn mcp_method_must_be_there_and_match_the_body_exactly() {
    let server = HttpServer::start(&[]);
    let client = server.client();
    let list = v2026::request(10, "tools/list", json!({}), json!({}));
    rejected(&client, &list, &[("Mcp-Method", None)], -32020, "no Mcp-Method").await;
    rejected(&client, &list, &[("Mcp-Method", Some("prompts/list"))], -32020, "another method").await;
    rejected(&client, &list, &[("Mcp-Method", Some("TOOLS/LIST"))], -32020, "values are case-sensitive").await;
    let echo = call(11, "echo", json!({"text": "x"}));
    rejected(&client, &echo, &[("Mcp-Method", Some("tools/list"))], -32020, "a call named a list").await;

    // Header names are not case-sensitive: written on the wire exactly as given here.
    let authority = server.authority().to_owned();
    for spelling in [["mcp-protocol-version", "mcp-method"], ["MCP-PROTOCOL-VERSION", "MCP-METHOD"]] {
        let authority = authority.clone();
        let r = tokio::task::spawn_blocking(move || {
            let headers = [
                ("Content-Type", "application/json"),
                ("Accept", "application/json, text/event-stream"),
                (spelling[0], "2026-07-28"),
                (spelling[1], "tools/list"),
            ];
            let body = v2026::request(12, "tools/list", json!({}), json!({}));
            raw_http(&authority, "POST", &headers, &body.to_string())
        })
        .await
        .unwrap();
        assert_eq!(r.status, 200, "{spelling:?}: {r:?}");
        let answer = r.json();
        schema::check_v2026_message(&answer, Some("tools/list")).unwrap();
        assert!(answer["result"]["tools"].is_array(), "{answer}");
    }
}

#[tokio::test]
async fn mcp_name_must_match_on_calls_prompt_gets_and_reads() {
    let server = HttpServer::start(&[]);
    let client = server.client();
    let echo = call(20, "echo", json!({"text": "x"}));
    let greeting =
        v2026::request(21, "prompts/get", json!({"name": "greeting", "arguments": {"name": "Ada"}}), json!({}));
    let read = v2026::request(22, "resources/read", json!({"uri": "test://static"}), json!({}));
    for body in [&echo, &greeting, &read] {
        let method = body["method"].as_str().unwrap();
        rejected(&client, body, &[("Mcp-Name", None)], -32020, &format!("{method} without Mcp-Name")).await;
        rejected(&client, body, &[("Mcp-Name", Some("something-else"))], -32020, &format!("{method}, wrong name"))
            .await;
        accepted(&client, body, &[], method).await;
    }
    for (value, ok, why) in [
        ("=?base64?ZWNobw==?=", true, "the Base64 form of `echo`"),
        ("=?base64?ZWNobw=?=", false, "bad padding"),
        ("=?base64?ZW!obw==?=", false, "a character outside the alphabet"),
        ("=?BASE64?ZWNobw==?=", false, "upper-case markers make a literal, which is not `echo`"),
        ("ECHO", false, "values are case-sensitive"),
    ] {
        let overrides = [("Mcp-Name", Some(value))];
        if ok {
            accepted(&client, &echo, &overrides, why).await;
        } else {
            rejected(&client, &echo, &overrides, -32020, why).await;
        }
    }
    let uri = base64_header("test://static");
    accepted(&client, &read, &[("Mcp-Name", Some(&uri))], "a URI in the Base64 form").await;

    // Whitespace around a value is not part of it (written on the wire as is).
    let authority = server.authority().to_owned();
    let r = tokio::task::spawn_blocking(move || {
        let body = call(23, "echo", json!({"text": "padded"}));
        let headers = v2026_headers_with(&body, &[("Mcp-Name", Some("   echo \t "))]);
        let headers: Vec<(&str, &str)> = headers.iter().map(|(n, v)| (n.as_str(), v.as_str())).collect();
        raw_http(&authority, "POST", &headers, &body.to_string())
    })
    .await
    .unwrap();
    assert_eq!(r.status, 200, "{r:?}");
    assert_eq!(text(&r.json()), "padded");

    // A value with characters a header cannot hold must come in the Base64 form: raw, it is refused.
    let authority = server.authority().to_owned();
    let r = tokio::task::spawn_blocking(move || {
        let body = call(24, "echo", json!({"text": "x"}));
        let headers = v2026_headers_with(&body, &[("Mcp-Name", Some("échø"))]);
        let headers: Vec<(&str, &str)> = headers.iter().map(|(n, v)| (n.as_str(), v.as_str())).collect();
        raw_http(&authority, "POST", &headers, &body.to_string())
    })
    .await
    .unwrap();
    assert_eq!((r.status, error_code(&r.json())), (400, -32020), "{r:?}");
}

#[tokio::test]
async fn mcp_param_headers_mirror_the_annotated_arguments() {
    let server = HttpServer::start(&[]);
    let client = server.client();
    let (list, _) = client.v2026_call(30, "tools/list", json!({})).await;
    let regional =
        list["result"]["tools"].as_array().unwrap().iter().find(|t| t["name"] == "regional").unwrap().clone();
    let properties = &regional["inputSchema"]["properties"];
    assert_eq!(properties["region"]["x-mcp-header"], "Region");
    assert_eq!(properties["shard"]["x-mcp-header"], "Shard");
    // An optional annotated argument is a single type (not `["integer", "null"]`, which clients refuse), and optional
    // by not being required.
    assert_eq!(
        (properties["shard"]["type"].as_str(), properties["dry_run"]["type"].as_str()),
        (Some("integer"), Some("boolean"))
    );
    assert_eq!(regional["inputSchema"]["required"], json!(["region"]));
    assert_eq!(properties["dry_run"]["x-mcp-header"], "Dry-Run");

    let all = call(31, "regional", json!({"region": "us-west1", "shard": 42, "dry_run": true}));
    let right =
        [("Mcp-Param-Region", Some("us-west1")), ("Mcp-Param-Shard", Some("42")), ("Mcp-Param-Dry-Run", Some("true"))];
    let r = accepted(&client, &all, &right, "every header right").await;
    assert_eq!(text(&r), "region=us-west1 shard=Some(42) dry_run=Some(true)");
    let with = |changes: &[(&'static str, Option<&'static str>)]| {
        let mut headers: Vec<(&str, Option<&str>)> = right.to_vec();
        for (name, value) in changes {
            headers.retain(|(n, _)| n != name);
            headers.push((name, *value));
        }
        headers
    };
    for (changes, why) in [
        (vec![("Mcp-Param-Region", None)], "Region missing while the argument is there"),
        (vec![("Mcp-Param-Region", Some("eu-west1"))], "Region differs"),
        (vec![("Mcp-Param-Region", Some("US-WEST1"))], "Region differs in case"),
        (vec![("Mcp-Param-Shard", None)], "Shard missing"),
        (vec![("Mcp-Param-Shard", Some("43"))], "Shard differs"),
        (vec![("Mcp-Param-Shard", Some("forty-two"))], "Shard is not a number"),
        (vec![("Mcp-Param-Dry-Run", Some("false"))], "Dry-Run differs"),
        (vec![("Mcp-Param-Region", Some("=?base64?dXMtd2VzdDE?="))], "Base64 without its padding"),
        (vec![("Mcp-Param-Region", Some("=?base64?dXMt*2VzdDE=?="))], "Base64 with a character outside the alphabet"),
    ] {
        rejected(&client, &all, &with(&changes), -32020, why).await;
    }
    for (changes, why) in [
        (vec![("Mcp-Param-Shard", Some("42.0"))], "integers compare as numbers"),
        (vec![("Mcp-Param-Region", Some("=?base64?dXMtd2VzdDE=?="))], "the Base64 form"),
        (vec![("mcp-param-region", Some("us-west1"))], "header names without case"),
        (vec![("Mcp-Param-Unknown", Some("whatever"))], "a header no argument is annotated with is ignored"),
    ] {
        accepted(&client, &all, &with(&changes), why).await;
    }

    // A value a header cannot hold raw (written on the wire as is) is refused: it must come in the Base64 form.
    let authority = server.authority().to_owned();
    let r = tokio::task::spawn_blocking(move || {
        let body = call(37, "regional", json!({"region": "us-wést1"}));
        let headers = v2026_headers_with(&body, &[("Mcp-Param-Region", Some("us-wést1"))]);
        let headers: Vec<(&str, &str)> = headers.iter().map(|(n, v)| (n.as_str(), v.as_str())).collect();
        raw_http(&authority, "POST", &headers, &body.to_string())
    })
    .await
    .unwrap();
    assert_eq!((r.status, error_code(&r.json())), (400, -32020), "{r:?}");

    // Only what the body has must be mirrored: absent and null arguments need no header.
    let region_only = call(32, "regional", json!({"region": "us-west1", "shard": null}));
    let r = accepted(&client, &region_only, &[("Mcp-Param-Region", Some("us-west1"))], "region only").await;
    assert_eq!(text(&r), "region=us-west1 shard=None dry_run=None");
    // A value no header can carry as is travels in the Base64 form.
    let unicode = call(33, "regional", json!({"region": "Hello, 世界"}));
    let encoded = [("Mcp-Param-Region", Some("=?base64?SGVsbG8sIOS4lueVjA==?="))];
    let r = accepted(&client, &unicode, &encoded, "a non-ASCII value").await;
    assert_eq!(text(&r), "region=Hello, 世界 shard=None dry_run=None");
    // A value that only looks like the Base64 form is a literal; one that would match it is sent encoded.
    let look_alike = call(34, "regional", json!({"region": "=?base64?SGVsbG8="}));
    accepted(&client, &look_alike, &[("Mcp-Param-Region", Some("=?base64?SGVsbG8="))], "a look-alike").await;
    let sentinel = call(35, "regional", json!({"region": "=?base64?literal?="}));
    let encoded = base64_header("=?base64?literal?=");
    accepted(&client, &sentinel, &[("Mcp-Param-Region", Some(&encoded))], "a value shaped like the form").await;
}

#[tokio::test]
async fn unknown_and_removed_methods_are_404_with_32601() {
    let server = HttpServer::start(&[]);
    let client = server.client();
    for (i, (method, params)) in [
        (
            "initialize",
            json!({"protocolVersion": "2026-07-28", "capabilities": {}, "clientInfo": {"name": "t", "version": "0"}}),
        ),
        ("ping", json!({})),
        ("logging/setLevel", json!({"level": "debug"})),
        ("resources/subscribe", json!({"uri": "test://static"})),
        ("resources/unsubscribe", json!({"uri": "test://static"})),
        ("unknown/method", json!({})),
    ]
    .into_iter()
    .enumerate()
    {
        let body = v2026::request(500 + i as i64, method, params, json!({}));
        let (status, answer) = post(&client, &body, &[]).await;
        assert_eq!((status, error_code(&answer)), (404, -32601), "{method}: {answer}");
    }
}

#[tokio::test]
async fn get_and_delete_are_405_and_a_notification_is_202() {
    let server = HttpServer::start(&[]);
    let client = server.client();
    let get = client
        .http
        .get(&client.url)
        .header("accept", "text/event-stream")
        .header("mcp-protocol-version", "2026-07-28")
        .send()
        .await
        .unwrap();
    assert_eq!(get.status(), 405);
    let delete = client.http.delete(&client.url).header("mcp-protocol-version", "2026-07-28").send().await.unwrap();
    assert_eq!(delete.status(), 405);

    let cancelled = json!({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 1}});
    let response = client.v2026_send(&cancelled).await;
    assert_eq!(response.status(), 202);
    assert!(response.headers().get("mcp-session-id").is_none());
    assert!(response.text().await.unwrap().is_empty());
}

#[tokio::test]
async fn progress_and_logs_turn_the_answer_into_an_sse_stream() {
    let server = HttpServer::start(&[]);
    let client = server.client();
    let body = v2026::request(
        40,
        "tools/call",
        json!({"name": "progress", "arguments": {}, "_meta": {"progressToken": "p-40"}}),
        json!({}),
    );
    let response = client.v2026_send(&body).await;
    assert_eq!(response.status(), 200);
    assert!(response.headers().get("mcp-session-id").is_none());
    let header = |name: &str| response.headers().get(name).map(|v| v.to_str().unwrap().to_owned());
    assert!(header("content-type").unwrap().starts_with("text/event-stream"));
    assert_eq!(header("x-accel-buffering").as_deref(), Some("no"));
    let mut stream = Body::of(response).await;
    let answer = stream.v2026_response(&json!(40), "tools/call").await;
    assert_eq!(text(&answer), "reported");
    let values: Vec<f64> = stream.seen.iter().map(|m| m["params"]["progress"].as_f64().unwrap()).collect();
    assert_eq!(values, [1.0, 2.0, 3.0], "{:?}", stream.seen);
    assert!(stream.seen.iter().all(|m| m["params"]["progressToken"] == "p-40" && subscription_tag(m).is_none()));
    assert!(stream.ended(WAIT).await, "the response ends the stream");

    // Logs at the asked level on the request's own stream; none without a level (and then a plain JSON answer).
    let mut loud = v2026::request(41, "tools/call", json!({"name": "log_all", "arguments": {}}), json!({}));
    loud["params"]["_meta"][META_LOG_LEVEL] = json!("error");
    let mut stream = Body::of(client.v2026_send(&loud).await).await;
    stream.v2026_response(&json!(41), "tools/call").await;
    let levels: Vec<&str> = stream.seen.iter().filter_map(|m| m["params"]["level"].as_str()).collect();
    assert_eq!(levels, ["error", "critical", "alert", "emergency"]);
    let (_, quiet) = post(&client, &call(42, "log_all", json!({})), &[]).await;
    assert_eq!(quiet["result"]["resultType"], "complete");
}

#[tokio::test]
async fn closing_the_response_stream_cancels_the_request() {
    let server = HttpServer::start(&[]);
    let client = server.client();
    // An SSE answer (its first frame is a progress notification), dropped after that frame.
    let body = v2026::request(
        "drop-me",
        "tools/call",
        json!({"name": "progress_then_sleep", "arguments": {"ms": 60000}, "_meta": {"progressToken": 1}}),
        json!({}),
    );
    let mut stream = Body::of(client.v2026_send(&body).await).await;
    let first = stream.next_v2026_message(WAIT, "tools/call").await.expect("a first frame");
    assert_eq!(first["method"], "notifications/progress");
    assert!(server.wait_stderr("STREAM_SLEEP_START \"drop-me\"", WAIT).await, "{}", server.stderr_text());
    drop(stream);
    assert!(server.wait_stderr("STREAM_SLEEP_ABORTED \"drop-me\"", WAIT).await, "{}", server.stderr_text());

    // A plain JSON answer still on its way: the client gives up on the POST.
    let body = call("give-up", "sleep", json!({"ms": 60000}));
    let pending = client.v2026_post(&body).send();
    let task = tokio::spawn(pending);
    assert!(server.wait_stderr("SLEEP_START \"give-up\"", WAIT).await, "{}", server.stderr_text());
    task.abort();
    assert!(server.wait_stderr("SLEEP_ABORTED \"give-up\"", WAIT).await, "{}", server.stderr_text());
    assert!(!server.stderr_text().contains("STREAM_SLEEP_DONE") && !server.stderr_text().contains("SLEEP_DONE"));
}

#[tokio::test]
async fn a_missing_client_capability_is_400_with_32021() {
    let server = HttpServer::start(&[]);
    let client = server.client();
    let r = rejected(&client, &call(50, "ask_name", json!({})), &[], -32021, "elicitation not declared").await;
    assert_eq!(r["error"]["data"]["requiredCapabilities"], json!({"elicitation": {}}));
    let r = rejected(&client, &call(51, "summarize", json!({"text": "t"})), &[], -32021, "sampling").await;
    assert_eq!(r["error"]["data"]["requiredCapabilities"], json!({"sampling": {}}));
}

fn retry(id: i64, name: &str, arguments: Value, answers: Value, state: &str) -> Value {
    let params = json!({"name": name, "arguments": arguments, "inputResponses": answers, "requestState": state});
    v2026::request(id, "tools/call", params, json!({"elicitation": {}}))
}

fn asked(r: &Value) -> (Vec<String>, String) {
    assert_eq!(r["result"]["resultType"], "input_required", "{r}");
    let keys = r["result"]["inputRequests"].as_object().unwrap().keys().cloned().collect();
    (keys, r["result"]["requestState"].as_str().expect("requestState").to_owned())
}

#[tokio::test]
async fn input_required_round_trips_over_http() {
    let server = HttpServer::start(&[]);
    let client = server.client();
    let elicitation = json!({"elicitation": {}});
    let first = v2026::request(60, "tools/call", json!({"name": "ask_name", "arguments": {}}), elicitation.clone());
    let (status, r1) = post(&client, &first, &[]).await;
    assert_eq!(status, 200);
    let (keys, state) = asked(&r1);
    assert_eq!(r1["result"]["inputRequests"][&keys[0]]["method"], "elicitation/create");
    let answer = json!({keys[0].as_str(): {"action": "accept", "content": {"name": "Ada"}}});
    let done = accepted(&client, &retry(61, "ask_name", json!({}), answer.clone(), &state), &[], "retry").await;
    assert_eq!(text(&done), "Hello, Ada (None)");

    // Every round is its own POST, with a new id; the headers follow the body as usual.
    let args = json!({"topic": "http"});
    let r1 = accepted(
        &client,
        &v2026::request(62, "tools/call", json!({"name": "interview", "arguments": args}), elicitation),
        &[],
        "round 1",
    )
    .await;
    let (_, s1) = asked(&r1);
    let name = json!({"name": {"action": "accept", "content": {"name": "Ada"}}});
    let r2 = accepted(&client, &retry(63, "interview", args.clone(), name, &s1), &[], "round 2").await;
    let (keys, s2) = asked(&r2);
    assert_eq!(keys, ["colour"]);
    let colour = json!({"colour": {"action": "accept", "content": {"colour": "red"}}});
    let r3 = accepted(&client, &retry(64, "interview", args.clone(), colour.clone(), &s2), &[], "round 3").await;
    assert_eq!(text(&r3), "Ada likes red (http); earlier rounds: 2");

    let tampered = format!("{s2}-TAMPERED");
    rejected(&client, &retry(65, "interview", args, colour, &tampered), &[], -32602, "a tampered state").await;
}

/// A random-looking sealing key, 64 hex digits.
const KEY_A: &str = "000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f";
const KEY_B: &str = "f0e0d0c0b0a090807060504030201000f0e0d0c0b0a090807060504030201000";

#[tokio::test]
async fn two_processes_sharing_a_sealing_key_serve_one_round_trip() {
    let one = HttpServer::start_with_env(&[], &[("MCP_REQUEST_STATE_KEY", KEY_A)]);
    let two = HttpServer::start_with_env(&[], &[("MCP_REQUEST_STATE_KEY", KEY_A)]);
    let other = HttpServer::start_with_env(&[], &[("MCP_REQUEST_STATE_KEY", KEY_B)]);
    let first = v2026::request(
        70,
        "tools/call",
        json!({"name": "interview", "arguments": {"topic": "scale"}}),
        json!({"elicitation": {}}),
    );
    let (_, r1) = post(&one.client(), &first, &[]).await;
    let (_, s1) = asked(&r1);
    let name = json!({"name": {"action": "accept", "content": {"name": "Ada"}}});
    let r2 =
        accepted(&two.client(), &retry(71, "interview", json!({"topic": "scale"}), name.clone(), &s1), &[], "on two")
            .await;
    let (_, s2) = asked(&r2);
    let colour = json!({"colour": {"action": "accept", "content": {"colour": "teal"}}});
    let done =
        accepted(&one.client(), &retry(72, "interview", json!({"topic": "scale"}), colour, &s2), &[], "back on one")
            .await;
    assert_eq!(text(&done), "Ada likes teal (scale); earlier rounds: 2");

    let elsewhere = retry(73, "interview", json!({"topic": "scale"}), name, &s1);
    rejected(&other.client(), &elsewhere, &[], -32602, "a process with another key").await;
}

/// Opens a listen stream and reads its acknowledgement, which must be its first message.
async fn listen(client: &Client, id: &str, filter: Value) -> Body {
    let body = v2026::request(id, "subscriptions/listen", json!({"notifications": filter}), json!({}));
    let response = client.v2026_send(&body).await;
    assert_eq!(response.status(), 200);
    assert!(response.headers().get("mcp-session-id").is_none());
    let content_type = response.headers().get("content-type").unwrap().to_str().unwrap().to_owned();
    assert!(content_type.starts_with("text/event-stream"), "{content_type}");
    assert_eq!(response.headers().get("x-accel-buffering").map(|v| v.to_str().unwrap()), Some("no"));
    let mut stream = Body::of(response).await;
    let ack = stream.next_v2026_message(WAIT, "subscriptions/listen").await.expect("an acknowledgement");
    assert_eq!(ack["method"], "notifications/subscriptions/acknowledged", "the first frame: {ack}");
    assert_eq!(subscription_tag(&ack), Some(&json!(id)));
    stream
}

async fn next_on(stream: &mut Body) -> Value {
    let m = stream.next_v2026_message(WAIT, "subscriptions/listen").await.expect("a notification on the listen stream");
    assert!(m.get("id").is_none(), "{m}");
    m
}

#[tokio::test]
async fn subscriptions_listen_streams_what_it_asked_for_until_the_client_closes_it() {
    let server = HttpServer::start(&[]);
    let client = server.client();
    let mut tools =
        listen(&client, "listen-tools", json!({"toolsListChanged": true, "resourceSubscriptions": ["test://static"]}))
            .await;
    let mut prompts = listen(&client, "listen-prompts", json!({"promptsListChanged": true})).await;
    let trigger = |id: i64, tool: &'static str, arguments: Value| {
        let client = client.clone();
        async move {
            let (r, seen) = client.v2026_call(id, "tools/call", json!({"name": tool, "arguments": arguments})).await;
            assert_ne!(r["result"]["isError"], true, "{tool}: {r}");
            assert!(seen.is_empty(), "the trigger's own answer carries nothing: {seen:?}");
        }
    };

    // A change nobody on the stream asked for, then one it asked for: the next frame is the latter.
    trigger(80, "toggle", json!({"kind": "prompt", "name": "greeting", "enabled": false})).await;
    trigger(81, "toggle", json!({"kind": "resource", "name": "test://bytes", "enabled": false})).await;
    trigger(82, "touch", json!({"uri": "test://bytes"})).await;
    trigger(83, "toggle", json!({"kind": "tool", "name": "echo", "enabled": false})).await;
    let m = next_on(&mut tools).await;
    assert_eq!(
        (m["method"].as_str(), subscription_tag(&m)),
        (Some("notifications/tools/list_changed"), Some(&json!("listen-tools")))
    );
    trigger(84, "touch", json!({"uri": "test://static"})).await;
    let m = next_on(&mut tools).await;
    assert_eq!(m["method"], "notifications/resources/updated");
    assert_eq!(
        (m["params"]["uri"].as_str(), subscription_tag(&m)),
        (Some("test://static"), Some(&json!("listen-tools")))
    );

    // The prompts stream saw its change first, and no tool change.
    let m = next_on(&mut prompts).await;
    assert_eq!(
        (m["method"].as_str(), subscription_tag(&m)),
        (Some("notifications/prompts/list_changed"), Some(&json!("listen-prompts")))
    );
    trigger(85, "toggle", json!({"kind": "prompt", "name": "greeting", "enabled": true})).await;
    assert_eq!(next_on(&mut prompts).await["method"], "notifications/prompts/list_changed");

    // Closing the stream ends the subscription.
    drop(tools);
    assert!(server.wait_stderr_line(&["request cancelled", "listen-tools"], WAIT).await, "{}", server.stderr_text());
    trigger(86, "toggle", json!({"kind": "tool", "name": "echo", "enabled": true})).await;
    trigger(87, "toggle", json!({"kind": "prompt", "name": "greeting", "enabled": false})).await;
    assert_eq!(next_on(&mut prompts).await["method"], "notifications/prompts/list_changed", "the other one stays open");
}

#[tokio::test]
async fn json_response_mode_answers_in_json_but_listen_still_streams() {
    let server = HttpServer::start(&["--json-response"]);
    let client = server.client();
    let body = v2026::request(
        90,
        "tools/call",
        json!({"name": "progress", "arguments": {}, "_meta": {"progressToken": "p-90"}}),
        json!({}),
    );
    let (status, answer) = post(&client, &body, &[]).await;
    assert_eq!((status, text(&answer)), (200, "reported"));
    let mut stream = listen(&client, "json-mode-listen", json!({"toolsListChanged": true})).await;
    let (r, _) = client.v2026_call(91, "tools/call", json!({"name": "reload_echo", "arguments": {}})).await;
    assert_eq!(text(&r), "reloaded");
    assert_eq!(next_on(&mut stream).await["method"], "notifications/tools/list_changed");
}

#[tokio::test]
async fn a_recognised_param_header_with_invalid_characters_is_refused_even_without_its_argument() {
    let server = HttpServer::start(&[]);
    let authority = server.authority().to_owned();
    let r = tokio::task::spawn_blocking(move || {
        let body = call(36, "regional", json!({"region": "us-west1"}));
        let overrides = [("Mcp-Param-Region", Some("us-west1")), ("Mcp-Param-Shard", Some("42é"))];
        let headers = v2026_headers_with(&body, &overrides);
        let headers: Vec<(&str, &str)> = headers.iter().map(|(n, v)| (n.as_str(), v.as_str())).collect();
        raw_http(&authority, "POST", &headers, &body.to_string())
    })
    .await
    .unwrap();
    assert_eq!(r.status, 400, "{r:?}");
    assert_eq!(error_code(&r.json()), -32020, "{r:?}");
}

#[tokio::test]
async fn a_stopping_server_ends_an_open_listen_with_its_result() {
    let server = HttpServer::start(&[]);
    let client = server.client();
    let mut stream = listen(&client, "until-shutdown", json!({"toolsListChanged": true})).await;
    let status = std::process::Command::new("kill").args(["-TERM", &server.pid().to_string()]).status().unwrap();
    assert!(status.success());
    let end = next_result(&mut stream).await;
    assert_eq!(end["id"], "until-shutdown");
    assert_eq!(end["result"]["resultType"], "complete");
    assert_eq!(end["result"]["_meta"][v2026::META_SUBSCRIPTION_ID], "until-shutdown");
    assert!(stream.ended(WAIT).await, "the stream closes after the result");
}

/// SIGTERM, once the drain is over (here at once: `--drain-timeout 0`; `http.rs` tests the drain), cancels a 2026
/// call in flight as it does a 2025 one: its handler is dropped, its deferred cleanup runs, and the process exits
/// well inside the 5 s shutdown deadline (a 2026 call used to hold it for the whole deadline, and its cleanup never
/// ran).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stopping_server_cancels_the_calls_in_flight_of_both_eras_and_runs_their_cleanup() {
    let server = HttpServer::start(&["--drain-timeout", "0"]);
    let mut session = server.client();
    session.initialize(json!({})).await;
    stop_with_sleeps_in_flight(server, session, [101, 102]).await;
}

/// The same in stateless mode, where each 2025 request has a session of its own (it also held the shutdown for
/// the whole deadline).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stopping_stateless_server_cancels_the_calls_in_flight_of_both_eras_and_runs_their_cleanup() {
    let server = HttpServer::start(&["--stateless", "--drain-timeout", "0"]);
    let client = server.client();
    stop_with_sleeps_in_flight(server, client, [201, 202]).await;
}

/// Starts a long `sleep` as a 2025 request of `old` (`ids[0]`) and as a 2026 request (`ids[1]`), sends SIGTERM once
/// both run, and checks that the server exits within 3 s with both handlers dropped and their cleanups done.
async fn stop_with_sleeps_in_flight(server: HttpServer, old: Client, ids: [i64; 2]) {
    let sleep = json!({"ms": 30_000});
    let old_call = common::http::request(ids[0], "tools/call", json!({"name": "sleep", "arguments": sleep}));
    let new_call = call(ids[1], "sleep", sleep);
    let v2026 = server.client();
    // Each answer is read to its end (a client that goes away cancels its call, which is not what is tested); it
    // ends without a response: how (an empty 202, a stream that closes, a connection dropped) is not the point.
    let calls = [
        tokio::spawn(async move { old.post(&old_call).send().await?.text().await }),
        tokio::spawn(async move { v2026.v2026_post(&new_call).send().await?.text().await }),
    ];
    for id in ids {
        assert!(server.wait_stderr(&format!("SLEEP_START {id}"), WAIT).await, "{}", server.stderr_text());
    }
    let term = std::process::Command::new("kill").args(["-TERM", &server.pid().to_string()]).status().unwrap();
    assert!(term.success());
    let (server, status, took) = tokio::task::spawn_blocking(move || {
        let mut server = server;
        let started = std::time::Instant::now();
        let status = server.wait_exit(WAIT);
        (server, status, started.elapsed())
    })
    .await
    .unwrap();
    assert!(status.is_some_and(|s| s.success()), "{status:?}: {}", server.stderr_text());
    assert!(took < Duration::from_secs(3), "shutdown took {took:?}: {}", server.stderr_text());
    for id in ids {
        for marker in ["SLEEP_ABORTED", "CLEANUP_DONE"] {
            let line = format!("{marker} {id}");
            assert!(server.wait_stderr(&line, WAIT).await, "no {line}: {}", server.stderr_text());
        }
    }
    for call in calls {
        let _ = call.await;
    }
}

async fn next_result(stream: &mut Body) -> Value {
    loop {
        let m = stream.next_v2026_message(WAIT, "subscriptions/listen").await.expect("the listen's result");
        if m.get("id").is_some() {
            return m;
        }
    }
}

#[tokio::test]
async fn a_standard_or_mirrored_header_sent_twice_is_refused() {
    let server = HttpServer::start(&[]);
    let client = server.client();
    // Two `Mcp-Method` values: a gateway could route on either.
    let body = call(70, "echo", json!({"text": "x"}));
    let twice = client.v2026_post(&body).header("mcp-method", "prompts/get").send().await.unwrap();
    assert_eq!(twice.status(), 400);
    let answer: Value = serde_json::from_str(&twice.text().await.unwrap()).unwrap();
    assert_eq!(error_code(&answer), -32020, "{answer}");
    // Two values of a mirrored argument's header.
    let body = call(71, "regional", json!({"region": "eu"}));
    let twice = client
        .v2026_post(&body)
        .header("mcp-param-region", "eu")
        .header("mcp-param-region", "us")
        .send()
        .await
        .unwrap();
    assert_eq!(twice.status(), 400);
    let answer: Value = serde_json::from_str(&twice.text().await.unwrap()).unwrap();
    assert_eq!(error_code(&answer), -32020, "{answer}");
}

/// Rotating the `requestState` key across a running fleet, instance by instance (`MCP_REQUEST_STATE_KEY=old,new`
/// everywhere, then `new,old`, then `new`), loses no retry: at every step a round begun on one instance (before or
/// after its restart) is finished on the other. A state sealed with a key an instance lacks says so.
#[tokio::test]
async fn rotating_the_request_state_key_instance_by_instance_loses_no_retry() {
    const OLD: &str = "0101010101010101010101010101010101010101010101010101010101010101";
    const NEW: &str = "0202020202020202020202020202020202020202020202020202020202020202";
    let start = |keys: &str| HttpServer::start_with_env(&[], &[("MCP_REQUEST_STATE_KEY", keys)]);
    let elicitation = json!({"elicitation": {}});
    let begin = async |server: &HttpServer| {
        let first = v2026::request(1, "tools/call", json!({"name": "ask_name", "arguments": {}}), elicitation.clone());
        let r = accepted(&server.client(), &first, &[], "a round begins").await;
        asked(&r)
    };
    let finish = async |server: &HttpServer, (keys, state): &(Vec<String>, String), why: &str| {
        let answer = json!({keys[0].as_str(): {"action": "accept", "content": {"name": "Ada"}}});
        let done = accepted(&server.client(), &retry(2, "ask_name", json!({}), answer, state), &[], why).await;
        assert_eq!(text(&done), "Hello, Ada (None)", "{why}");
    };
    let mut fleet = [start(OLD), start(OLD)];
    // Each step restarts one instance with new keys.
    for (i, keys) in [(1, "OLD,NEW"), (0, "OLD,NEW"), (1, "NEW,OLD"), (0, "NEW,OLD"), (1, "NEW"), (0, "NEW")] {
        let other = 1 - i;
        let before_restart = begin(&fleet[i]).await;
        let on_the_other = begin(&fleet[other]).await;
        fleet[i] = start(&keys.replace("OLD", OLD).replace("NEW", NEW));
        finish(&fleet[i], &before_restart, &format!("{keys}: begun before this instance's restart")).await;
        finish(&fleet[i], &on_the_other, &format!("{keys}: begun on the other instance")).await;
        let after_restart = begin(&fleet[i]).await;
        finish(&fleet[other], &after_restart, &format!("{keys}: finished on the other instance")).await;
    }

    // A state sealed with a key the instance does not have is named as such.
    let old_only = start(OLD);
    let sealed_new = begin(&fleet[0]).await;
    let answer = json!({sealed_new.0[0].as_str(): {"action": "accept", "content": {"name": "Ada"}}});
    let refused = retry(3, "ask_name", json!({}), answer, &sealed_new.1);
    let r = rejected(&old_only.client(), &refused, &[], -32602, "another key").await;
    let message = r["error"]["message"].as_str().unwrap();
    assert!(message.contains("sealed with key") && message.contains("MCP_REQUEST_STATE_KEY"), "{r}");
}
