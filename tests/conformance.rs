//! The official MCP conformance suite (`@modelcontextprotocol/conformance`), every server scenario of the 2025-11-25
//! and the 2026-07-28 requirement sets (with the ten `tasks-*` scenarios of the Tasks extension, which the set runs
//! unscored), against `examples/everything.rs` over Streamable HTTP: both eras from one binary and one endpoint. No
//! expected-failures list.

mod common;

use std::process::Command;

use common::http::HttpServer;

/// Runs the suite's CLI with these arguments; returns its output and the summary it printed.
fn conformance(args: &[&str]) -> (std::process::Output, String) {
    let bin = common::node::tools();
    let out = Command::new(bin.join("conformance"))
        .args(args)
        .env("PATH", common::node::path_with_tools(&bin))
        .current_dir(std::env::temp_dir())
        .output()
        .expect("run the conformance suite");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let summary = stdout.split("=== SUMMARY ===").nth(1).unwrap_or(&stdout).to_owned();
    (out, summary)
}

/// Runs the suite for one requirement set and returns its summary; panics on any failed scored scenario.
fn run(requirements: &str) -> String {
    let server = HttpServer::start_binary(common::example("everything"), &[]);
    let (out, summary) = conformance(&["server", "--url", &server.url, "--requirements", requirements]);
    assert!(
        out.status.success(),
        "conformance failures ({requirements}):\n{summary}\n{}\nserver log:\n{}",
        String::from_utf8_lossy(&out.stderr),
        server.stderr_text()
    );
    println!("{summary}");
    summary
}

#[test]
fn the_everything_server_passes_the_2025_11_25_requirements() {
    let summary = run("2025-11-25");
    assert!(summary.contains(" 0 failed\n") && !summary.contains('✗'), "{summary}");
}

#[test]
fn the_everything_server_passes_the_2026_07_28_requirements_and_the_pending_server_scenarios() {
    let summary = run("2026-07-28");
    // Every scenario passes: the scored ones, the pending ones that concern servers, and the Tasks extension's.
    let failing: Vec<&str> = summary.lines().filter(|l| l.starts_with('✗')).collect();
    assert!(failing.is_empty(), "failing scenarios: {failing:?}\n{summary}");
    for pending in ["json-schema-2020-12", "http-header-validation", "http-custom-header-server-validation"] {
        assert!(summary.contains(&format!("✓ {pending}:")), "{pending} must pass:\n{summary}");
    }
    for tasks in [
        "tasks-lifecycle",
        "tasks-capability-negotiation",
        "tasks-wire-fields",
        "tasks-request-state-removal",
        "tasks-mrtr-input",
        "tasks-request-headers",
        "tasks-dispatch-and-envelope",
        "tasks-status-notifications",
        "tasks-required-task-error",
        "tasks-mrtr-composition",
    ] {
        assert!(summary.contains(&format!("✓ {tasks}:")), "{tasks} must pass:\n{summary}");
    }
    assert!(summary.contains("✓ server-stateless:") && summary.contains("✓ input-required-result-multi-round:"));
}

/// Runs the suite's client leg for one requirement set against `examples/conformance_client.rs`; returns the summary.
/// The `auth/*` scenarios belong to the authorization work: they run, and fail, and are left out of the verdict.
fn run_client(requirements: &str) -> String {
    let client = common::example("conformance_client");
    let (_, summary) = conformance(&["client", "--command", &client.to_string_lossy(), "--requirements", requirements]);
    println!("{summary}");
    let failing: Vec<&str> = summary.lines().filter(|l| l.starts_with('✗') && !l.starts_with("✗ auth/")).collect();
    assert!(failing.is_empty(), "failing client scenarios ({requirements}): {failing:?}\n{summary}");
    summary
}

#[test]
fn the_conformance_client_passes_every_client_scenario_of_2025_11_25_outside_auth() {
    let summary = run_client("2025-11-25");
    for scenario in [
        "initialize",
        "tools_call",
        "elicitation-sep1034-client-defaults",
        "sse-retry",
        "json-schema-2020-12-preservation",
    ] {
        assert!(summary.contains(&format!("✓ {scenario}:")), "{scenario} must pass:\n{summary}");
    }
}

#[test]
fn the_conformance_client_passes_every_client_scenario_of_2026_07_28_outside_auth() {
    let summary = run_client("2026-07-28");
    for scenario in [
        "tools_call",
        "request-metadata",
        "sep-2322-client-request-state",
        "http-standard-headers",
        "http-custom-headers",
        "http-invalid-tool-headers",
        "json-schema-ref-no-deref",
        "json-schema-2020-12-preservation",
    ] {
        assert!(summary.contains(&format!("✓ {scenario}:")), "{scenario} must pass:\n{summary}");
    }
}
