//! The protocol over stdio in raw JSON-RPC lines: lifecycle (shutdown within its deadline included), tools, errors,
//! progress, logging, concurrency, limits.

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

fn text(result: &Value) -> &str {
    result["content"][0]["text"].as_str().unwrap_or_else(|| panic!("no text content in {result}"))
}

#[test]
fn initialize_negotiates_the_version_and_advertises_what_is_registered() {
    let mut s = Server::spawn(testbed());
    let r = s.initialize();
    let result = &r["result"];
    assert_eq!(result["protocolVersion"], "2025-11-25");
    assert_eq!(result["serverInfo"]["name"], "testbed");
    assert!(result["capabilities"]["tools"].is_object());
    assert!(result["capabilities"]["logging"].is_object());

    for (asked, answered) in [("2025-06-18", "2025-06-18"), ("2025-03-26", "2025-03-26"), ("1999-01-01", "2025-11-25")]
    {
        let mut s = Server::spawn(testbed());
        let r = s.call(
            "initialize",
            json!({"protocolVersion": asked, "capabilities": {}, "clientInfo": {"name": "old", "version": "1"}}),
        );
        assert_eq!(r["result"]["protocolVersion"], answered, "asked for {asked}");
    }
}

#[test]
fn only_ping_and_logging_before_initialize() {
    let mut s = Server::spawn(testbed());
    assert_eq!(s.call("ping", json!({}))["result"], json!({}));
    assert_eq!(s.call("logging/setLevel", json!({"level": "error"}))["result"], json!({}));
    let r = s.call("tools/list", json!({}));
    assert_eq!(r["error"]["code"], -32600, "{r}");
    assert!(r["error"]["message"].as_str().unwrap().contains("initialize"));
    s.initialize();
    assert!(s.call("tools/list", json!({}))["result"]["tools"].is_array());
    let again = s.call(
        "initialize",
        json!({"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "t", "version": "0"}}),
    );
    assert_eq!(again["error"]["code"], -32600);
}

#[test]
fn tools_list_has_generated_schemas_descriptions_and_hints() {
    let mut s = ready();
    let list = s.call("tools/list", json!({}))["result"]["tools"].clone();
    let tool = |name: &str| list.as_array().unwrap().iter().find(|t| t["name"] == name).cloned().unwrap();
    let greet = tool("greet");
    assert_eq!(greet["description"], "Greet someone.");
    assert_eq!(greet["inputSchema"]["type"], "object");
    assert_eq!(greet["inputSchema"]["properties"]["name"]["type"], "string");
    assert_eq!(greet["inputSchema"]["properties"]["name"]["description"], "Who to greet.");
    assert_eq!(greet["inputSchema"]["required"], json!(["name"]));
    let add = tool("add");
    assert_eq!(add["title"], "Adder");
    assert_eq!(add["annotations"], json!({"readOnlyHint": true, "idempotentHint": true, "openWorldHint": false}));
    assert_eq!(add["outputSchema"]["properties"]["total"]["type"], "integer");
    assert!(tool("full-result")["outputSchema"].is_null());
    // Structured results that are not objects are wrapped, schema and value alike.
    assert_eq!(tool("primes")["outputSchema"]["required"], json!(["result"]));
    assert_eq!(tool("primes")["outputSchema"]["properties"]["result"]["type"], "array");
    assert_eq!(tool("whoami")["outputSchema"]["type"], "object");
    let names: Vec<_> = list.as_array().unwrap().iter().map(|t| t["name"].as_str().unwrap().to_owned()).collect();
    let mut sorted = names.clone();
    sorted.sort();
    assert_eq!(names, sorted, "tools are listed by name");
}

#[test]
fn tool_results_of_every_return_shape() {
    let mut s = ready();
    assert_eq!(text(&s.call_tool("echo", json!({"text": "hi"}))), "hi");
    assert_eq!(text(&s.call_tool("greet", json!({"name": "Ada"}))), "Hello, Ada!");
    assert_eq!(text(&s.call_tool("greet", json!({"name": "Ada", "greeting": "Hi"}))), "Hi, Ada!");
    assert_eq!(text(&s.call_tool("greet", json!({"name": "Ada", "greeting": null}))), "Hello, Ada!");
    let add = s.call_tool("add", json!({"numbers": [1, 2, 3]}));
    assert_eq!(add["structuredContent"], json!({"total": 6}));
    assert_eq!(serde_json::from_str::<Value>(text(&add)).unwrap(), json!({"total": 6}));
    let fail = s.call_tool("fail", json!({"reason": "the shelf is empty"}));
    assert_eq!(fail["isError"], true);
    assert_eq!(text(&fail), "failed because the shelf is empty");
    let two = s.call_tool("two_blocks", json!({}));
    assert_eq!(two["content"][1], json!({"type": "image", "data": "aGVsbG8=", "mimeType": "image/png"}));
    assert_eq!(text(&s.call_tool("full-result", json!({}))), "full");
    let primes = s.call_tool("primes", json!({}));
    assert_eq!(primes["structuredContent"], json!({"result": [2, 3, 5, 7]}));
    assert_eq!(text(&primes), "[2,3,5,7]");
    assert_eq!(s.call_tool("log_all", json!({}))["content"], json!([]));
}

#[test]
fn bad_arguments_are_tool_errors_that_name_the_argument() {
    let mut s = ready();
    let missing = s.call_tool("greet", json!({}));
    assert_eq!(missing["isError"], true);
    assert_eq!(text(&missing), "missing required argument `name`");
    let wrong = s.call_tool("add", json!({"numbers": "three"}));
    assert_eq!(wrong["isError"], true);
    assert!(text(&wrong).starts_with("invalid argument `numbers`:"), "{wrong}");
    let no_args = s.call("tools/call", json!({"name": "greet"}));
    assert_eq!(no_args["result"]["isError"], true);
}

#[test]
fn protocol_errors_have_the_right_codes() {
    let mut s = ready();
    let unknown_tool = s.call("tools/call", json!({"name": "nope", "arguments": {}}));
    assert_eq!(unknown_tool["error"]["code"], -32602);
    assert!(unknown_tool["error"]["message"].as_str().unwrap().contains("nope"));
    assert_eq!(s.call("tools/call", json!({"arguments": {}}))["error"]["code"], -32602);
    assert_eq!(s.call("tools/call", json!({"name": "echo", "arguments": [1]}))["error"]["code"], -32602);
    assert_eq!(s.call("resources/unknown", json!({}))["error"]["code"], -32601);
    assert_eq!(s.call("logging/setLevel", json!({"level": "loud"}))["error"]["code"], -32602);
    assert_eq!(s.call("tools/list", json!({"cursor": "made-up"}))["error"]["code"], -32602);

    s.send_raw("{not json");
    let parse = s.drain(Duration::from_millis(300));
    assert_eq!(parse.len(), 1, "{parse:?}");
    assert_eq!(parse[0]["error"]["code"], -32700);
    assert!(parse[0].get("id").is_none());

    for (line, code, id) in [
        (r#"[{"jsonrpc":"2.0","id":1,"method":"ping"}]"#, -32600, Value::Null),
        (r#""just a string""#, -32600, Value::Null),
        (r#"{"jsonrpc":"1.0","id":7,"method":"ping"}"#, -32600, json!(7)),
        (r#"{"jsonrpc":"2.0","id":8,"method":5}"#, -32600, json!(8)),
        (r#"{"jsonrpc":"2.0","id":true,"method":"ping"}"#, -32600, Value::Null),
        (r#"{"jsonrpc":"2.0","id":9,"method":"ping","params":"x"}"#, -32600, json!(9)),
    ] {
        s.send_raw(line);
        let got = s.drain(Duration::from_millis(300));
        assert_eq!(got.len(), 1, "{line}: {got:?}");
        assert_eq!(got[0]["error"]["code"], code, "{line}");
        assert_eq!(got[0].get("id").cloned().unwrap_or(Value::Null), id, "{line}");
    }
    // Still serving.
    assert_eq!(s.call("ping", json!({}))["result"], json!({}));
}

#[test]
fn a_duplicate_in_flight_id_is_rejected_without_disturbing_the_first() {
    let mut s = ready();
    let id = json!("dup");
    s.request_with_id(id.clone(), "tools/call", json!({"name": "sleep", "arguments": {"ms": 300}}));
    s.request_with_id(id.clone(), "tools/call", json!({"name": "echo", "arguments": {"text": "x"}}));
    let first = s.response(&id);
    assert_eq!(first["error"]["code"], -32600, "{first}");
    let second = s.response(&id);
    assert_eq!(text(&second["result"]), "slept 300 ms");
}

#[test]
fn a_panicking_tool_answers_its_request_with_an_error_and_the_server_keeps_serving() {
    let mut s = ready();
    for tool in ["panic_async", "panic_blocking"] {
        let r = s.call("tools/call", json!({"name": tool, "arguments": {}}));
        assert_eq!(r["error"]["code"], -32603, "{r}");
        assert!(r["error"]["message"].as_str().unwrap().contains("broke"), "{r}");
    }
    assert_eq!(text(&s.call_tool("echo", json!({"text": "alive"}))), "alive");
}

#[test]
fn requests_run_concurrently() {
    let mut s = ready();
    let slow = s.request("tools/call", json!({"name": "sleep", "arguments": {"ms": 3000}}));
    let started = Instant::now();
    assert_eq!(s.call("ping", json!({}))["result"], json!({}));
    assert_eq!(text(&s.call_tool("echo", json!({"text": "fast"}))), "fast");
    assert_eq!(text(&s.call_tool("echo_blocking", json!({"text": "fast"}))), "fast");
    assert!(started.elapsed() < Duration::from_secs(2), "a slow tool delayed others: {:?}", started.elapsed());
    assert_eq!(text(&s.response(&slow)["result"]), "slept 3000 ms");
}

#[test]
fn progress_needs_a_token_never_goes_backwards_and_stops_at_the_response() {
    let mut s = ready();
    let id = s.request("tools/call", json!({"name": "progress", "arguments": {}, "_meta": {"progressToken": "tok"}}));
    let response = s.response(&id);
    assert_eq!(text(&response["result"]), "reported");
    // Everything else that arrived: progress before the response (kept as pending), nothing after.
    let all = s.drain(Duration::from_millis(400));
    let progress: Vec<f64> = all
        .iter()
        .filter(|m| m["method"] == "notifications/progress")
        .map(|m| {
            assert_eq!(m["params"]["progressToken"], "tok");
            m["params"]["progress"].as_f64().unwrap()
        })
        .collect();
    assert_eq!(progress, [1.0, 2.0, 3.0]);
    assert!(all.iter().all(|m| m["params"]["data"] != "too late"), "{all:?}");

    // Without a token: no progress at all.
    let r = s.call_tool("progress", json!({}));
    assert_eq!(text(&r), "reported");
    let all = s.drain(Duration::from_millis(300));
    assert!(all.iter().all(|m| m["method"] != "notifications/progress"), "{all:?}");
}

#[test]
fn log_messages_respect_the_sessions_level() {
    let mut s = ready();
    let levels = |s: &mut Server| -> Vec<String> {
        let r = s.call_tool("log_all", json!({}));
        assert!(r["content"].is_array());
        let mut got = Vec::new();
        for m in s.drain(Duration::from_millis(300)) {
            if m["method"] == "notifications/message" {
                assert_eq!(m["params"]["logger"], "testbed");
                got.push(m["params"]["level"].as_str().unwrap().to_owned());
            }
        }
        got
    };
    assert_eq!(levels(&mut s).len(), 8, "before setLevel every level is sent");
    assert_eq!(s.call("logging/setLevel", json!({"level": "warning"}))["result"], json!({}));
    assert_eq!(levels(&mut s), ["warning", "error", "critical", "alert", "emergency"]);
    s.call("logging/setLevel", json!({"level": "emergency"}));
    assert_eq!(levels(&mut s), ["emergency"]);
}

#[test]
fn an_oversized_line_is_rejected_without_killing_the_server() {
    let mut command = Command::new(testbed());
    command.env("TESTBED_MAX_MESSAGE_BYTES", "1024");
    let mut s = Server::spawn_with(command);
    s.initialize();
    let big = json!({"jsonrpc": "2.0", "id": 5, "method": "tools/call", "params": {"name": "echo", "arguments": {"text": "x".repeat(4096)}}});
    s.send_raw(&big.to_string());
    let got = s.drain(Duration::from_millis(300));
    assert_eq!(got.len(), 1, "{got:?}");
    assert_eq!(got[0]["error"]["code"], -32600);
    assert!(got[0]["error"]["message"].as_str().unwrap().contains("1024"));
    assert_eq!(text(&s.call_tool("echo", json!({"text": "small"}))), "small");
}

#[test]
fn stdout_carries_only_protocol_messages() {
    // Every line the harness reads is parsed as JSON and checked against the schema; a stray print would fail it.
    let mut s = ready();
    s.call_tool("sleep", json!({"ms": 10}));
    s.call_tool("log_all", json!({}));
    assert!(s.close(Duration::from_secs(5)).success());
}

#[test]
fn list_tools_flag_prints_the_schemas_and_exits() {
    let out = Command::new(testbed()).arg("--list-tools").output().unwrap();
    assert!(out.status.success());
    let list: Value = serde_json::from_slice(&out.stdout).unwrap();
    common::schema::validate("ListToolsResult", &list).unwrap();
    let help = Command::new(testbed()).arg("--help").output().unwrap();
    assert!(help.status.success());
    assert!(String::from_utf8_lossy(&help.stdout).contains("--list-tools"));
    // A program whose `main` takes no `mcp::Args` has no options of its own: an unknown one is an error.
    let bad = Command::new(common::example("bookshop")).arg("--bogus").output().unwrap();
    assert_eq!(bad.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&bad.stderr).contains("--bogus"));
}

#[test]
fn a_program_option_of_its_own_works_beside_the_frameworks() {
    // The testbed's `main` takes `mcp::Args`: `--greeting` is its own.
    let mut s = Server::spawn_with({
        let mut c = Command::new(testbed());
        c.args(["--greeting", "ahoy"]);
        c
    });
    s.initialize();
    assert_eq!(text(&s.call_tool("count", json!({}))), "ahoy 1");
    // Beside --http too, in either order, and with `--greeting=...`.
    let http = common::http::HttpServer::start(&["--greeting=salut"]);
    let answer = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
        let mut client = http.client();
        client.initialize(json!({})).await;
        client.call(2, "tools/call", json!({"name": "count", "arguments": {}})).await.0
    });
    assert_eq!(answer["result"]["content"][0]["text"], "salut 1", "{answer}");
}

#[test]
fn schema_and_version_flags_print_what_is_served_and_exit() {
    let out = Command::new(testbed()).arg("--schema").output().unwrap();
    assert!(out.status.success());
    let schema: Value = serde_json::from_slice(&out.stdout).unwrap();
    for tool in schema["tools"].as_array().unwrap() {
        common::schema::validate("Tool", tool).unwrap();
    }
    for prompt in schema["prompts"].as_array().unwrap() {
        common::schema::validate("Prompt", prompt).unwrap();
    }
    for resource in schema["resources"].as_array().unwrap() {
        common::schema::validate("Resource", resource).unwrap();
    }
    for template in schema["resourceTemplates"].as_array().unwrap() {
        common::schema::validate("ResourceTemplate", template).unwrap();
    }
    assert!(schema["methods"].as_array().unwrap().iter().any(|m| m == "testbed/sum"), "{}", schema["methods"]);
    assert_eq!(schema["serverInfo"]["name"], "testbed");
    let again = Command::new(testbed()).arg("--schema").output().unwrap();
    assert_eq!(out.stdout, again.stdout, "the dump is stable, so CI can diff it");

    let version = Command::new(testbed()).arg("--version").output().unwrap();
    assert!(version.status.success());
    assert_eq!(String::from_utf8_lossy(&version.stdout).trim(), format!("testbed {}", env!("CARGO_PKG_VERSION")));
}

#[test]
fn the_schema_check_itself_rejects_bad_messages() {
    use common::schema::{check_server_message, validate};
    assert!(validate("CallToolResult", &json!({"content": "not a list"})).is_err());
    assert!(check_server_message(&json!({"jsonrpc": "2.0", "id": null, "error": {"code": 1, "message": "m"}}), None)
        .is_err());
    assert!(check_server_message(&json!({"jsonrpc": "2.0", "method": "notifications/made-up", "params": {}}), None)
        .is_err());
    let bad_init = json!({"jsonrpc": "2.0", "id": 1, "result": {"protocolVersion": "2025-11-25"}});
    assert!(check_server_message(&bad_init, Some("initialize")).is_err());
}

#[test]
fn handlers_see_the_request_metadata() {
    let mut s = Server::spawn(testbed());
    s.call(
        "initialize",
        json!({"protocolVersion": "2025-06-18", "capabilities": {"roots": {}}, "clientInfo": {"name": "meta-client", "version": "9.1"}}),
    );
    let r =
        s.call("tools/call", json!({"name": "whoami", "arguments": {}, "_meta": {"progressToken": 7, "trace": "abc"}}));
    assert_eq!(
        r["result"]["structuredContent"],
        json!({
            "protocolVersion": "2025-06-18",
            "client": "meta-client",
            "clientVersion": "9.1",
            "capabilities": {"roots": {}},
            "meta": {"progressToken": 7, "trace": "abc"},
            "progressToken": 7,
        })
    );
}

/// Responses far larger than a pipe's buffer, to a client that reads only later, arrive whole and in order, on the
/// reactor-served pipes (frames the pipe cannot take wait for the writer task) and on the fallback threads.
#[test]
fn large_responses_to_a_late_reader_arrive_whole_in_both_stdio_modes() {
    use std::io::{BufRead, BufReader, Write};
    for threads in [false, true] {
        let mut command = Command::new(testbed());
        if threads {
            command.env("MCP_STDIO_THREADS", "1");
        }
        let mut child = command
            .env("RUST_LOG", "warn")
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::null())
            .spawn()
            .unwrap();
        let mut stdin = child.stdin.take().unwrap();
        let init = json!({"jsonrpc": "2.0", "id": "init", "method": "initialize", "params": {
            "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "t", "version": "0"}}});
        writeln!(stdin, "{init}").unwrap();
        const CALLS: usize = 24;
        for id in 0..CALLS {
            let text = char::from(b'a' + id as u8).to_string().repeat(150_000 + id);
            let call = json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": {"name": "echo", "arguments": {"text": text}}});
            writeln!(stdin, "{call}").unwrap();
        }
        stdin.flush().unwrap();
        // The server has written what the pipe holds and queued the rest.
        std::thread::sleep(Duration::from_millis(300));
        let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
        let first: Value = serde_json::from_str(&lines.next().unwrap().unwrap()).unwrap();
        assert_eq!(first["id"], "init", "threads={threads}");
        let mut seen = [false; CALLS];
        for _ in 0..CALLS {
            let line = lines.next().expect("a response").unwrap();
            let r: Value = serde_json::from_str(&line).unwrap_or_else(|e| panic!("threads={threads}: {e}"));
            let id = r["id"].as_u64().unwrap() as usize;
            let expected = char::from(b'a' + id as u8).to_string().repeat(150_000 + id);
            assert_eq!(text(&r["result"]), expected, "threads={threads}, id {id}");
            seen[id] = true;
        }
        assert!(seen.iter().all(|s| *s), "threads={threads}");
        drop(stdin);
        assert!(child.wait().unwrap().success(), "threads={threads}");
    }
}

/// Shutdown keeps one deadline. A blocking tool that ignores its cancel flag used to hold the process
/// for the tracker's 5 s, then the writer's 5 s more (11 s in all); now the whole shutdown fits in its 5 s.
#[test]
fn stdin_eof_exits_within_the_shutdown_deadline_despite_a_stubborn_blocking_tool() {
    let mut s = Server::spawn(testbed());
    s.initialize();
    s.request("tools/call", json!({"name": "stubborn", "arguments": {"ms": 30_000}}));
    std::thread::sleep(Duration::from_millis(200)); // let it start
    let closed = Instant::now();
    let status = s.close(Duration::from_secs(20));
    let took = closed.elapsed();
    assert!(status.success(), "{status:?}");
    // The bound is 5 s (the default shutdown timeout); the old code took about 11 s.
    assert!(took < Duration::from_secs(8), "shutdown took {took:?}; its deadline is 5 s");
    assert!(!s.has_stderr("STUBBORN_DONE"), "the stubborn tool was abandoned, not waited for");
}
