//! What a new user meets in the first hour and the first deployment: the server info
//! a builder reports, a server that serves nothing, the command line of `#[mcp::main]`, the Host/Origin guard over
//! a real socket, typed resource errors, and output to a closed pipe.

use crate::common;

use serde_json::json;

#[test]
fn name_alone_keeps_a_version() {
    let server = mcp::Server::builder().name("notes").build().unwrap();
    let info = &server.schema()["serverInfo"];
    assert_eq!(info["name"], "notes");
    assert_eq!(info["version"], mcp::ServerBuilder::DEFAULT_SERVER_VERSION, "{info}");

    let server = mcp::Server::builder().version("1.2.3").name("notes").build().unwrap();
    assert_eq!(server.schema()["serverInfo"], json!({ "name": "notes", "version": "1.2.3" }));

    // What #[mcp::main] does: the binary's info is the default; the builder's name overrides only the name.
    let server = mcp::Server::builder()
        .name("notes")
        .default_info(mcp::protocol::Implementation::new("notes-bin", "4.5.6"))
        .build()
        .unwrap();
    assert_eq!(server.schema()["serverInfo"], json!({ "name": "notes", "version": "4.5.6" }));
}

/// The `bare` binary: nothing registered.
fn bare() -> std::path::PathBuf {
    std::path::PathBuf::from(env!("CARGO_BIN_EXE_bare"))
}

/// Runs `bare` with these arguments and stdin closed; its exit status, stdout and stderr.
fn run_bare(args: &[&str], env: &[(&str, &str)]) -> (std::process::ExitStatus, String, String) {
    let out = std::process::Command::new(bare())
        .args(args)
        .envs(env.iter().copied())
        .stdin(std::process::Stdio::null())
        .output()
        .expect("run bare");
    (out.status, String::from_utf8_lossy(&out.stdout).into_owned(), String::from_utf8_lossy(&out.stderr).into_owned())
}

#[test]
fn an_empty_server_says_so_on_stdio() {
    let (status, _, stderr) = run_bare(&[], &[]);
    assert!(status.success(), "{stderr}");
    assert!(stderr.contains("WARN") && stderr.contains("serves nothing"), "{stderr}");
    assert!(stderr.contains("use your_library as _;") && stderr.contains("#[mcp::main]"), "{stderr}");
    assert_eq!(stderr.matches("serves nothing").count(), 1, "{stderr}");
}

#[test]
fn a_server_with_tools_does_not_warn() {
    let (_, _, stderr) = {
        let out = std::process::Command::new(common::testbed())
            .stdin(std::process::Stdio::null())
            .output()
            .expect("run the testbed");
        (out.status, (), String::from_utf8_lossy(&out.stderr).into_owned())
    };
    assert!(!stderr.contains("serves nothing"), "{stderr}");
}

#[test]
fn list_tools_into_a_closed_pipe_exits_quietly() {
    // The reading end closes before the program writes (`--list-tools | head -0`, or `head` that read enough).
    for flag in ["--list-tools", "--schema", "--help", "--version"] {
        let mut child = std::process::Command::new(common::testbed())
            .arg(flag)
            .stdin(std::process::Stdio::null())
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .expect("spawn the testbed");
        drop(child.stdout.take());
        let out = child.wait_with_output().expect("wait");
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(!stderr.contains("panicked") && !stderr.contains("Broken pipe"), "{flag}: {stderr}");
        assert!(out.status.success(), "{flag}: {:?} {stderr}", out.status);
    }
}

#[test]
fn a_start_up_error_is_printed_once() {
    let out = std::process::Command::new(common::testbed())
        .env("TESTBED_FAIL_STARTUP", "unable to open database file")
        .env("RUST_LOG", "info")
        .stdin(std::process::Stdio::null())
        .output()
        .expect("run the testbed");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert_eq!(stderr.matches("unable to open database file").count(), 1, "{stderr}");
    assert!(stderr.contains("error: start-up failed: could not open the database"), "{stderr}");
}

#[tokio::test]
async fn the_request_state_key_warning_only_when_a_handler_can_ask() {
    use std::time::Duration;
    // The testbed's tools ask (elicitation, sampling): a random key is worth a warning.
    let asking = common::http::HttpServer::start(&[]);
    assert!(asking.wait_stderr("MCP_REQUEST_STATE_KEY", Duration::from_secs(10)).await, "{}", asking.stderr_text());
    // Nothing here can ask: no warning about a key nobody uses.
    let quiet = common::http::HttpServer::start_binary(bare(), &[]);
    assert!(quiet.wait_stderr("serves nothing", Duration::from_secs(10)).await, "{}", quiet.stderr_text());
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert!(!quiet.stderr_text().contains("MCP_REQUEST_STATE_KEY"), "{}", quiet.stderr_text());
}

#[test]
fn a_typo_in_an_option_is_refused_naming_it() {
    let (status, _, stderr) = run_bare(&["--htpp", "8000"], &[]);
    assert_eq!(status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("unknown option `--htpp`; did you mean `--http`?"), "{stderr}");
    assert!(!stderr.contains("OPTIONS db="), "the body must not run: {stderr}");

    let (status, _, stderr) = run_bare(&["--dbb", "x.db"], &[]);
    assert_eq!(status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("did you mean `--db`?"), "{stderr}");

    let (status, _, stderr) = run_bare(&["--frobnicate"], &[]);
    assert_eq!(status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("unknown option `--frobnicate`; see --help"), "{stderr}");

    let (status, _, stderr) = run_bare(&["notes.db"], &[]);
    assert_eq!(status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("unexpected argument `notes.db`"), "{stderr}");

    // A declared option without its value, or a flag with one.
    let (status, _, stderr) = run_bare(&["--db"], &[]);
    assert_eq!(status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("`--db` needs a value, such as PATH"), "{stderr}");
    let (status, _, stderr) = run_bare(&["--verbose=yes"], &[]);
    assert_eq!(status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("`--verbose` takes no value"), "{stderr}");

    // The program's own refusal is a usage error too.
    let (status, _, stderr) = run_bare(&["--db="], &[]);
    assert_eq!(status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("error: `--db` needs a file name"), "{stderr}");
}

#[test]
fn declared_options_reach_the_program_and_the_help() {
    let (status, _, stderr) = run_bare(&["--db", "x.db", "--verbose"], &[]);
    assert!(status.success(), "{stderr}");
    assert!(stderr.contains("OPTIONS db=x.db verbose=true"), "{stderr}");
    let (status, _, stderr) = run_bare(&["--db=y.db"], &[]);
    assert!(status.success(), "{stderr}");
    assert!(stderr.contains("OPTIONS db=y.db verbose=false"), "{stderr}");

    let (status, help, _) = run_bare(&["--help"], &[]);
    assert!(status.success());
    assert!(help.contains("PROGRAM OPTIONS:"), "{help}");
    assert!(help.contains("--db PATH") && help.contains("The database file (default notes.db)"), "{help}");
    assert!(help.contains("--verbose") && help.contains("--allow-host NAME"), "{help}");
    assert!(help.contains("MCP_ALLOW_HOST"), "{help}");
}

/// An `initialize` POST with this `Host` (and `Origin`, if any): its status.
async fn initialize_as(server: &common::http::HttpServer, host: &str, origin: Option<&str>) -> u16 {
    let client = server.client();
    let init = common::http::request(
        0,
        "initialize",
        json!({"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "t", "version": "0"}}),
    );
    let mut post = client.post(&init).header("host", host);
    if let Some(origin) = origin {
        post = post.header("origin", origin);
    }
    post.send().await.expect("POST").status().as_u16()
}

#[tokio::test]
async fn allow_host_matches_with_or_without_the_port() {
    use std::time::Duration;
    let server =
        common::http::HttpServer::start(&["--allow-host", "notes.example.com", "--allow-host=api.example.com:8443"]);
    assert_eq!(initialize_as(&server, "notes.example.com:8770", None).await, 200);
    assert_eq!(initialize_as(&server, "NOTES.example.com", None).await, 200);
    assert_eq!(initialize_as(&server, "api.example.com:8443", None).await, 200);
    // A port given is a port required.
    assert_eq!(initialize_as(&server, "api.example.com:9000", None).await, 403);
    assert_eq!(initialize_as(&server, "api.example.com", None).await, 403);
    assert_eq!(initialize_as(&server, "evil.example", None).await, 403);
    assert_eq!(initialize_as(&server, "evil.example", None).await, 403);
    // Each refused name is logged once, with the flag that would allow it.
    assert!(server.wait_stderr("--allow-host evil.example", Duration::from_secs(5)).await, "{}", server.stderr_text());
    tokio::time::sleep(Duration::from_millis(100)).await;
    let log = server.stderr_text();
    assert_eq!(log.matches("--allow-host evil.example ").count(), 1, "{log}");
    assert!(log.contains("WARN"), "{log}");
    assert_eq!(log.matches("host=\"api.example.com:9000\"").count(), 1, "{log}");
}

#[tokio::test]
async fn allowed_hosts_and_origins_from_the_environment() {
    use std::time::Duration;
    let server = common::http::HttpServer::start_with_env(
        &[],
        &[("MCP_ALLOW_HOST", "notes.example.com, other.example"), ("MCP_ALLOW_ORIGIN", "https://app.example.com")],
    );
    assert_eq!(initialize_as(&server, "notes.example.com:8770", None).await, 200);
    assert_eq!(initialize_as(&server, "other.example", Some("https://app.example.com")).await, 200);
    assert_eq!(initialize_as(&server, "other.example", Some("https://evil.example")).await, 403);
    assert!(
        server.wait_stderr("--allow-origin https://evil.example", Duration::from_secs(5)).await,
        "{}",
        server.stderr_text()
    );
}

#[test]
fn allow_host_goes_with_http() {
    let (status, _, stderr) = run_bare(&["--allow-host", "notes.example.com"], &[]);
    assert_eq!(status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("`--allow-host` goes with `--http`"), "{stderr}");
}

#[tokio::test]
async fn listening_beyond_loopback_without_allowed_hosts_warns() {
    use std::time::Duration;
    let open = common::http::HttpServer::start(&["--http", "0.0.0.0:0"]);
    assert!(open.wait_stderr("Pass --allow-host NAME", Duration::from_secs(5)).await, "{}", open.stderr_text());
    let named = common::http::HttpServer::start(&["--http", "0.0.0.0:0", "--allow-host", "notes.example.com"]);
    assert!(named.wait_stderr("MCP_REQUEST_STATE_KEY", Duration::from_secs(5)).await, "{}", named.stderr_text());
    assert!(!named.stderr_text().contains("Pass --allow-host NAME"), "{}", named.stderr_text());
    // Loopback: no warning either.
    let local = common::http::HttpServer::start(&[]);
    assert!(local.wait_stderr("MCP_REQUEST_STATE_KEY", Duration::from_secs(5)).await, "{}", local.stderr_text());
    assert!(!local.stderr_text().contains("Pass --allow-host NAME"), "{}", local.stderr_text());
}

/// A note, if it exists: only notes 1 to 3 do.
#[mcp::resource(uri = "notes://{id}")]
fn note(id: u32) -> Result<String, mcp::Error> {
    if !(1..=3).contains(&id) {
        return Err(mcp::Error::resource_not_found(format!("notes://{id}")));
    }
    Ok(format!("note {id}"))
}

/// A resource that fails with a plain message.
#[mcp::resource(uri = "notes://broken")]
fn broken() -> Result<String, String> {
    Err("the disk is on fire".into())
}

#[tokio::test]
async fn a_resource_says_not_found_as_an_unknown_uri_does() {
    use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
    let server = mcp::Server::builder().resource::<note>().resource::<broken>().build().unwrap();
    let (ours, theirs) = tokio::io::duplex(1 << 16);
    let (read, write) = tokio::io::split(theirs);
    tokio::spawn(server.serve_streams(read, write));
    let (read, mut write) = tokio::io::split(ours);
    let mut lines = BufReader::new(read).lines();
    let mut ask = async |message: serde_json::Value| {
        write.write_all(format!("{message}\n").as_bytes()).await.unwrap();
        let line = lines.next_line().await.unwrap().expect("an answer");
        serde_json::from_str::<serde_json::Value>(&line).unwrap()
    };
    let init =
        json!({"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "t", "version": "0"}});
    ask(json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": init})).await;
    let read = |id: u32, uri: &str, v2026: bool| {
        let mut params = json!({ "uri": uri });
        if v2026 {
            params["_meta"] = common::v2026::envelope(json!({}));
        }
        json!({"jsonrpc": "2.0", "id": id, "method": "resources/read", "params": params})
    };
    for (v2026, code) in [(false, -32002), (true, -32602)] {
        let unknown = ask(read(1, "other://9", v2026)).await;
        let missing = ask(read(2, "notes://9", v2026)).await;
        assert_eq!(unknown["error"]["code"], code, "{unknown}");
        assert_eq!(missing["error"]["code"], code, "{missing}");
        assert_eq!(missing["error"]["data"], json!({ "uri": "notes://9" }), "{missing}");
        let found = ask(read(3, "notes://2", v2026)).await;
        assert_eq!(found["result"]["contents"][0]["text"], "note 2", "{found}");
        let failed = ask(read(4, "notes://broken", v2026)).await;
        assert_eq!(failed["error"]["code"], -32603, "{failed}");
    }
}

/// A struct argument with optional fields (only their schemas are looked at).
#[allow(dead_code)]
#[derive(serde::Deserialize, schemars::JsonSchema)]
struct Filter {
    tag: String,
    /// At most this many.
    limit: Option<u32>,
    order: Option<Order>,
}

#[allow(dead_code)]
#[derive(serde::Deserialize, schemars::JsonSchema)]
enum Order {
    Newest,
    Oldest,
}

#[allow(dead_code)]
#[derive(serde::Deserialize, schemars::JsonSchema)]
struct Page {
    number: u32,
}

/// Optional arguments of every shape.
#[mcp::tool]
fn find(
    /// The text to find.
    text: String,
    /// How many days back.
    days: Option<u32>,
    filter: Option<Filter>,
    page: Option<Page>,
) -> String {
    let _ = (filter, page);
    format!("{text} {days:?}")
}

/// Every schema node under `v` that accepts `null`, by path.
fn nulls(v: &serde_json::Value, path: &str, out: &mut Vec<String>) {
    match v {
        serde_json::Value::Object(o) => {
            if o.get("type") == Some(&json!("null"))
                || o.get("type").and_then(|t| t.as_array()).is_some_and(|t| t.contains(&json!("null")))
                || o.get("enum").and_then(|e| e.as_array()).is_some_and(|e| e.contains(&serde_json::Value::Null))
            {
                out.push(path.to_owned());
            }
            for (k, v) in o {
                nulls(v, &format!("{path}/{k}"), out);
            }
        }
        serde_json::Value::Array(a) => a.iter().enumerate().for_each(|(i, v)| nulls(v, &format!("{path}/{i}"), out)),
        _ => {}
    }
}

#[test]
fn optional_arguments_are_simply_not_required_unless_nullable_is_asked_for() {
    let server = mcp::Server::builder().tool::<find>().build().unwrap();
    let schema = server.tools_list()["tools"][0]["inputSchema"].clone();
    let mut found = Vec::new();
    nulls(&schema, "", &mut found);
    assert!(found.is_empty(), "null accepted at {found:?}: {schema:#}");
    assert_eq!(schema["required"], json!(["text"]), "{schema:#}");
    assert_eq!(
        schema["properties"]["days"],
        json!({ "type": "integer", "format": "uint32", "minimum": 0, "description": "How many days back." })
    );
    assert_eq!(schema["properties"]["page"]["$ref"], "#/$defs/Page", "{schema:#}");
    assert_eq!(schema["$defs"]["Filter"]["required"], json!(["tag"]), "{schema:#}");
    assert_eq!(schema["$defs"]["Filter"]["properties"]["limit"]["description"], "At most this many.", "{schema:#}");

    let nullable = mcp::Server::builder().tool::<find>().nullable_options(true).build().unwrap();
    let schema = nullable.tools_list()["tools"][0]["inputSchema"].clone();
    assert_eq!(schema["properties"]["days"]["type"], json!(["integer", "null"]), "{schema:#}");
    let mut found = Vec::new();
    nulls(&schema, "", &mut found);
    assert!(found.len() >= 4, "{found:?}");
}

/// Pipes `lines` into the testbed as `printf '...' | testbed` does (all at once, then end of input) and reads its
/// whole stdout; how long it took to exit after the input ended, its status and the responses it wrote.
fn pipe_into_testbed(
    lines: &[serde_json::Value],
) -> (std::time::Duration, std::process::ExitStatus, Vec<serde_json::Value>) {
    use std::io::{Read, Write};
    let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_testbed"))
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .spawn()
        .expect("spawn the testbed");
    let mut input = String::new();
    for line in lines {
        input.push_str(&line.to_string());
        input.push('\n');
    }
    let mut stdin = child.stdin.take().unwrap();
    stdin.write_all(input.as_bytes()).unwrap();
    drop(stdin);
    let closed = std::time::Instant::now();
    let mut out = String::new();
    child.stdout.take().unwrap().read_to_string(&mut out).unwrap();
    let status = child.wait().unwrap();
    let responses = out.lines().map(|l| serde_json::from_str(l).expect("a JSON line")).collect();
    (closed.elapsed(), status, responses)
}

fn piped_session(calls: &[(i64, &str, serde_json::Value)]) -> Vec<serde_json::Value> {
    let mut lines = vec![
        json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
            "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "printf", "version": "0"}}}),
        json!({"jsonrpc": "2.0", "method": "notifications/initialized"}),
    ];
    for (id, name, arguments) in calls {
        lines.push(json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
            "params": {"name": name, "arguments": arguments}}));
    }
    lines
}

#[test]
fn piped_input_gets_every_answer_before_the_process_exits() {
    let (took, status, responses) =
        pipe_into_testbed(&piped_session(&[(1, "echo", json!({"text": "first"})), (2, "sleep", json!({"ms": 300}))]));
    assert!(status.success(), "{status:?}");
    let answer = |id: i64| responses.iter().find(|r| r["id"] == id).cloned();
    assert_eq!(answer(1).expect("the echo's answer")["result"]["content"][0]["text"], "first", "{responses:?}");
    let slept = answer(2).expect("the sleep's answer, after the input ended");
    assert!(slept.get("result").is_some(), "{slept}");
    assert!(took < std::time::Duration::from_secs(3), "exited {took:?} after the input ended");
}

#[test]
fn piped_input_does_not_wait_past_the_shutdown_deadline() {
    let (took, status, responses) = pipe_into_testbed(&piped_session(&[(1, "sleep", json!({"ms": 60_000}))]));
    assert!(status.success(), "{status:?}");
    assert!(responses.iter().all(|r| r["id"] != 1), "a cancelled call is not answered: {responses:?}");
    // The shutdown timeout is 5 s: four fifths waiting for the answer, then the cancel, cleanups and hooks.
    assert!(took >= std::time::Duration::from_secs(3), "gave up after {took:?}");
    assert!(took < std::time::Duration::from_secs(7), "exited {took:?} after the input ended");
}
