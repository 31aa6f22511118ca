//! Tasks with the official clients as peers: the bookshop's `rebuild_index` (`task = "optional"`) driven as a task by
//! the Python SDK (PyPI `mcp` 2.3) in the 2025-11-25 era (the in-core `tasks/*` methods) and in the 2026-07-28 era
//! (the Tasks extension, declared through a `ClientExtension`), and by the TypeScript SDK (npm
//! `@modelcontextprotocol/sdk` 1.32.2, `client.experimental.tasks`, 2025-11-25 only), over stdio and Streamable HTTP.
//! The checks are in `tests/python/tasks_client.py` and `tests/node/tasks_client.mjs`; here, what only the server's
//! stderr shows over HTTP: every run of `rebuild_index` (completed, cancelled, or called plainly) put search back
//! online.

use crate::common;

use std::ffi::OsStr;
use std::path::Path;
use std::process::{Command, Output};
use std::time::{Duration, Instant};

use common::http::HttpServer;

/// `rebuild_index` runs three times in each script: a task to completion, a cancelled task, a plain call.
const RUNS: usize = 3;

fn output_text(out: &Output) -> String {
    format!(
        "--- stdout ---\n{}\n--- stderr ---\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

/// Runs `tests/python/tasks_client.py MODE TRANSPORT TARGET`; returns its success and output.
fn python_tasks(mode: &str, transport: &str, target: &OsStr) -> (bool, String) {
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/python/tasks_client.py");
    let out = Command::new(common::python::python())
        .arg(script)
        .args([OsStr::new(mode), OsStr::new(transport), target])
        .env("PYTHONUNBUFFERED", "1")
        .output()
        .expect("run python");
    (out.status.success(), output_text(&out))
}

/// Over stdio the client spawns the bookshop and prints its stderr at the end, which the script checks itself.
fn python_over_stdio(mode: &str) -> String {
    let bookshop = common::example("bookshop");
    let (ok, out) = python_tasks(mode, "stdio", bookshop.as_os_str());
    assert!(ok && out.contains("all ok"), "tasks_client.py {mode} stdio failed:\n{out}");
    assert!(out.contains("search back online"), "{out}");
    out
}

/// How many times the server printed `needle`, waiting up to 3 s for `at_least`.
fn wait_count(server: &HttpServer, needle: &str, at_least: usize) -> usize {
    let deadline = Instant::now() + Duration::from_secs(3);
    loop {
        let count = server.stderr_text().matches(needle).count();
        if count >= at_least || Instant::now() >= deadline {
            return count;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Over HTTP the script cannot see the server's stderr: the test reads it.
fn python_over_http(mode: &str) -> String {
    let server = HttpServer::start_binary(common::example("bookshop"), &[]);
    let (ok, out) = python_tasks(mode, "http", server.url.as_ref());
    assert!(
        ok && out.contains("all ok"),
        "tasks_client.py {mode} http failed:\n{out}\n--- bookshop stderr ---\n{}",
        server.stderr_text()
    );
    assert_back_online(&server, RUNS, &out);
    out
}

fn assert_back_online(server: &HttpServer, runs: usize, out: &str) {
    let count = wait_count(server, "search back online", runs);
    assert_eq!(
        count,
        runs,
        "every run of rebuild_index puts search back online, once\n{out}\n--- bookshop stderr ---\n{}",
        server.stderr_text()
    );
}

#[test]
fn python_legacy_tasks_over_stdio() {
    let out = python_over_stdio("legacy");
    assert!(out.contains("ok: legacy over stdio speaks 2025-11-25"), "{out}");
    assert!(out.contains("ok: tasks/result: Indexed 2 books."), "{out}");
    assert!(out.contains("ok: a second tasks/cancel: -32602"), "{out}");
    assert!(out.contains(r#"ok: the server printed "search back online" (3)"#), "{out}");
}

#[test]
fn python_legacy_tasks_over_http() {
    let out = python_over_http("legacy");
    assert!(out.contains("ok: legacy over http speaks 2025-11-25"), "{out}");
    assert!(out.contains("ok: tasks/result: Indexed 2 books."), "{out}");
}

#[test]
fn python_2026_tasks_extension_over_stdio() {
    let out = python_over_stdio("2026-07-28");
    assert!(out.contains("ok: 2026-07-28 over stdio speaks 2026-07-28"), "{out}");
    assert!(out.contains("ok: tasks/get shows the task cancelled"), "{out}");
    assert!(out.contains(r#"ok: the server printed "search back online" (2)"#), "{out}");
}

#[test]
fn python_2026_tasks_extension_over_http() {
    let out = python_over_http("2026-07-28");
    assert!(out.contains("ok: 2026-07-28 over http speaks 2026-07-28"), "{out}");
    assert!(out.contains("ok: tasks/get without Mcp-Name over HTTP: -32020"), "{out}");
}

#[test]
fn typescript_tasks_over_stdio_and_http() {
    let bin = common::node::tools();
    let server = HttpServer::start_binary(common::example("bookshop"), &[]);
    let script = common::node::script("tasks_client.mjs");
    let out = Command::new(bin.join("node"))
        .arg(&script)
        .arg(common::example("bookshop"))
        .arg(&server.url)
        .env("PATH", common::node::path_with_tools(&bin))
        .output()
        .expect("run node");
    let text = output_text(&out);
    assert!(
        out.status.success() && text.contains("all ok"),
        "the TypeScript tasks client failed:\n{text}\n--- bookshop (http) stderr ---\n{}",
        server.stderr_text()
    );
    assert!(text.contains(r#"ok: the server printed "search back online" (2)"#), "{text}");
    assert!(text.contains("ok: http: a second cancelTask: -32602"), "{text}");
    assert_back_online(&server, RUNS, &text);
}
