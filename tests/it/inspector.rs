//! The MCP Inspector's CLI (npm `@modelcontextprotocol/inspector` 2.12) as a client of the bookshop: it lists the
//! tools and calls one in the 2026-07-28 era (`--protocol-era modern`: `server/discover`, per-request `_meta`) over
//! stdio and over Streamable HTTP, and lists them in the 2025-11-25 era (`--protocol-era legacy`: `initialize`) over
//! stdio.
//!
//! The invocations are `mcp-inspector --cli --protocol-era ERA --format json --method tools/list TARGET` and
//! `... --method tools/call --tool-name NAME TARGET`, where TARGET is the server's command or its `/mcp` URL; with
//! `--format json` the CLI prints one JSON object, `{"result": ...}`, on stdout.

use crate::common;

use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::{json, Value};

/// How long one CLI run may take (it takes about a second).
const RUN_LIMIT: Duration = Duration::from_secs(30);

/// The tools the bookshop registers.
const TOOLS: [&str; 5] = ["order_book", "rebuild_index", "list_holds", "search_status", "cancel_hold"];

/// A home of its own for the Inspector, which keeps a catalog and client storage under `~/.mcp-inspector`.
fn inspector_home() -> PathBuf {
    let home = common::install::target_dir().join("inspector-home");
    std::fs::create_dir_all(&home).unwrap();
    home
}

/// Runs the Inspector's CLI in `era` with `args` (method, tool, target) and returns its JSON output's `result`.
fn inspector(era: &str, args: &[&str]) -> Value {
    let bin = common::node::tools();
    let mut child = Command::new(bin.join("mcp-inspector"))
        .args(["--cli", "--protocol-era", era, "--format", "json"])
        .args(args)
        .env("PATH", common::node::path_with_tools(&bin))
        .env("HOME", inspector_home())
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("run the Inspector");
    let drain = |mut pipe: Box<dyn Read + Send>| {
        std::thread::spawn(move || {
            let mut text = String::new();
            let _ = pipe.read_to_string(&mut text);
            text
        })
    };
    let stdout = drain(Box::new(child.stdout.take().unwrap()));
    let stderr = drain(Box::new(child.stderr.take().unwrap()));
    let deadline = Instant::now() + RUN_LIMIT;
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break Some(status);
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            let _ = child.wait();
            break None;
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    let (stdout, stderr) = (stdout.join().unwrap(), stderr.join().unwrap());
    let command = format!("mcp-inspector --cli --protocol-era {era} --format json {}", args.join(" "));
    let status =
        status.unwrap_or_else(|| panic!("`{command}` ran over {RUN_LIMIT:?}\nstdout:\n{stdout}\nstderr:\n{stderr}"));
    assert!(status.success(), "`{command}` failed ({status})\nstdout:\n{stdout}\nstderr:\n{stderr}");
    let output: Value = serde_json::from_str(stdout.trim())
        .unwrap_or_else(|e| panic!("`{command}` printed no JSON object ({e})\nstdout:\n{stdout}\nstderr:\n{stderr}"));
    output
        .get("result")
        .cloned()
        .unwrap_or_else(|| panic!("`{command}` printed no result: {output}\nstderr:\n{stderr}"))
}

fn target(path: &Path) -> &str {
    path.to_str().expect("a UTF-8 path")
}

/// Checks that a `tools/list` result names every tool of the bookshop.
fn assert_lists_the_tools(result: &Value) {
    let names: Vec<&str> = result["tools"]
        .as_array()
        .unwrap_or_else(|| panic!("no tools: {result}"))
        .iter()
        .map(|tool| tool["name"].as_str().unwrap_or_default())
        .collect();
    for tool in TOOLS {
        assert!(names.contains(&tool), "{tool} is missing from {names:?}");
    }
    let list_holds = result["tools"].as_array().unwrap().iter().find(|t| t["name"] == "list_holds").unwrap();
    assert_eq!(list_holds["outputSchema"]["required"], json!(["holds"]), "{list_holds}");
}

/// Checks that a result came from a 2026-era exchange: such results name the server in `_meta`.
fn assert_v2026(result: &Value) {
    assert_eq!(result["_meta"]["io.modelcontextprotocol/serverInfo"]["name"], "bookshop", "{result}");
}

#[test]
fn v2026_era_over_stdio_lists_tools_and_calls_search_status() {
    let bookshop = common::example("bookshop");
    let tools = inspector("modern", &["--method", "tools/list", target(&bookshop)]);
    assert_lists_the_tools(&tools);

    let status = inspector("modern", &["--method", "tools/call", "--tool-name", "search_status", target(&bookshop)]);
    assert_eq!(status["content"], json!([{"type": "text", "text": "online"}]), "{status}");
    assert_ne!(status["isError"], true, "{status}");
    assert_v2026(&status);
}

#[test]
fn v2026_era_over_http_lists_tools_and_calls_list_holds() {
    let server = common::http::HttpServer::start_binary(common::example("bookshop"), &[]);
    let tools = inspector("modern", &["--method", "tools/list", &server.url]);
    assert_lists_the_tools(&tools);

    let holds = inspector("modern", &["--method", "tools/call", "--tool-name", "list_holds", &server.url]);
    assert_eq!(holds["structuredContent"], json!({"holds": []}), "{holds}\nserver log:\n{}", server.stderr_text());
    assert_ne!(holds["isError"], true, "{holds}");
    assert_v2026(&holds);
}

#[test]
fn legacy_era_over_stdio_lists_tools() {
    let bookshop = common::example("bookshop");
    let tools = inspector("legacy", &["--method", "tools/list", target(&bookshop)]);
    assert_lists_the_tools(&tools);
}
