//! The official MCP conformance suite (`@modelcontextprotocol/conformance`), every server scenario of the 2025-11-25
//! and the 2026-07-28 requirement sets (with the ten `tasks-*` scenarios of the Tasks extension, which the set runs
//! unscored), against `examples/everything.rs` over Streamable HTTP: both eras from one binary and one endpoint. No
//! expected-failures list. The client leg of both sets, every `auth/*` scenario included, against
//! `examples/conformance_client.rs`, and the authorization scenarios the sets do not run, by name, as are the Skills
//! extension's four client scenarios (SEP-2640), in both eras.

use crate::common;

use common::http::HttpServer;

/// Runs the suite's CLI with these arguments; returns its output and the summary it printed.
fn conformance(args: &[&str]) -> (std::process::Output, String) {
    let out = common::node::conformance(args);
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

/// The authorization extension scenarios the requirement sets run unscored; they must pass too (and are tested by
/// name below, with their checks).
const AUTH_EXTENSIONS: &[&str] = &[
    "auth/client-credentials-jwt",
    "auth/client-credentials-basic",
    "auth/enterprise-managed-authorization",
    "auth/dpop",
    "auth/dpop-nonce",
    "auth/wif-jwt-bearer",
];

/// Runs the suite's client leg for one requirement set against `examples/conformance_client.rs`; returns the summary.
/// Every scenario must pass, the `auth/*` ones included.
fn run_client(requirements: &str) -> String {
    let client = common::example("conformance_client");
    let (_, summary) = conformance(&["client", "--command", &client.to_string_lossy(), "--requirements", requirements]);
    println!("{summary}");
    let failing: Vec<&str> = summary.lines().filter(|l| l.starts_with('✗')).collect();
    assert!(failing.is_empty(), "failing client scenarios ({requirements}): {failing:?}\n{summary}");
    summary
}

/// Runs one client scenario by name (`--scenario`) and asserts that it passed with its checks run: the client exited
/// 0, no check failed or warned, and each of `checks` is among those that succeeded.
fn run_client_scenario(scenario: &str, checks: &[&str]) {
    run_client_scenario_at(scenario, None, checks);
}

/// [`run_client_scenario`] at a spec version of its own (`--spec-version <v> --force`: an extension scenario runs
/// at any version only when forced).
fn run_client_scenario_at(scenario: &str, spec_version: Option<&str>, checks: &[&str]) {
    let client = common::example("conformance_client");
    let client = client.to_string_lossy();
    let mut args = vec!["client", "--command", &client, "--scenario", scenario];
    if let Some(version) = spec_version {
        args.extend(["--spec-version", version, "--force"]);
    }
    let (out, _) = conformance(&args);
    let scenario = match spec_version {
        Some(version) => format!("{scenario} at {version}"),
        None => scenario.to_owned(),
    };
    let text = format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    let results = text.lines().find(|l| l.starts_with("Passed: ")).unwrap_or_default();
    assert!(out.status.success(), "{scenario} failed: {results}\n{text}");
    let (passed, total) =
        results.trim_start_matches("Passed: ").split(',').next().and_then(|n| n.split_once('/')).unwrap_or(("0", "?"));
    assert!(
        passed != "0" && passed == total && results.contains(" 0 failed, 0 warnings"),
        "{scenario}: {results}\n{text}"
    );
    for check in checks {
        let ran = text
            .lines()
            .any(|l| (l.contains(&format!("[{check} ")) || l.contains(&format!("[{check}]"))) && l.contains("SUCCESS"));
        assert!(ran, "{scenario}: the check {check} did not run and succeed\n{text}");
    }
}

/// Every `auth/*` scenario of a requirement set's client leg, by name.
const AUTH_2025_11_25: &[&str] = &[
    "auth/metadata-default",
    "auth/metadata-var1",
    "auth/metadata-var2",
    "auth/metadata-var3",
    "auth/basic-cimd",
    "auth/scope-from-www-authenticate",
    "auth/scope-from-scopes-supported",
    "auth/scope-omitted-when-undefined",
    "auth/scope-step-up",
    "auth/scope-retry-limit",
    "auth/token-endpoint-auth-basic",
    "auth/token-endpoint-auth-post",
    "auth/token-endpoint-auth-none",
    "auth/pre-registration",
];

/// What 2026-07-28 adds to [`AUTH_2025_11_25`].
const AUTH_2026_07_28: &[&str] = &[
    "auth/resource-mismatch",
    "auth/offline-access-scope",
    "auth/offline-access-not-supported",
    "auth/authorization-server-migration",
    "auth/iss-supported",
    "auth/iss-not-advertised",
    "auth/iss-supported-missing",
    "auth/iss-wrong-issuer",
    "auth/iss-unexpected",
    "auth/iss-normalized",
    "auth/metadata-issuer-mismatch",
];

#[test]
fn the_conformance_client_passes_every_client_scenario_of_2025_11_25() {
    let summary = run_client("2025-11-25");
    for scenario in AUTH_2025_11_25.iter().chain(AUTH_EXTENSIONS) {
        assert!(summary.contains(&format!("✓ {scenario}:")), "{scenario} must pass:\n{summary}");
    }
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
fn the_conformance_client_passes_every_client_scenario_of_2026_07_28() {
    let summary = run_client("2026-07-28");
    for scenario in AUTH_2025_11_25.iter().chain(AUTH_2026_07_28).chain(AUTH_EXTENSIONS) {
        assert!(summary.contains(&format!("✓ {scenario}:")), "{scenario} must pass:\n{summary}");
    }
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

#[test]
fn the_conformance_client_passes_the_2025_03_26_oauth_metadata_backcompat_scenario() {
    run_client_scenario(
        "auth/2025-03-26-oauth-metadata-backcompat",
        &["authorization-server-metadata", "client-registration", "authorization-request", "token-request"],
    );
}

#[test]
fn the_conformance_client_passes_the_2025_03_26_oauth_endpoint_fallback_scenario() {
    run_client_scenario(
        "auth/2025-03-26-oauth-endpoint-fallback",
        &["client-registration", "authorization-request", "token-request"],
    );
}

#[test]
fn the_conformance_client_passes_the_client_credentials_jwt_extension_scenario() {
    run_client_scenario("auth/client-credentials-jwt", &["token-request", "client-credentials-jwt-verified"]);
}

#[test]
fn the_conformance_client_passes_the_client_credentials_basic_extension_scenario() {
    run_client_scenario("auth/client-credentials-basic", &["token-request", "client-credentials-basic-auth"]);
}

#[test]
fn the_conformance_client_passes_the_enterprise_managed_authorization_extension_scenario() {
    run_client_scenario(
        "auth/enterprise-managed-authorization",
        &["complete-flow-token-exchange", "complete-flow-jwt-bearer", "valid-bearer-token"],
    );
}

#[test]
fn the_conformance_client_passes_the_wif_jwt_bearer_extension_scenario() {
    run_client_scenario("auth/wif-jwt-bearer", &["wif-assertion-verified", "valid-bearer-token"]);
}

#[test]
fn the_conformance_client_passes_the_dpop_extension_scenario() {
    run_client_scenario(
        "auth/dpop",
        &["sep-1932-client-token-request-proof", "sep-1932-client-dpop-auth-scheme", "sep-1932-client-fresh-proof"],
    );
}

#[test]
fn the_conformance_client_passes_the_dpop_nonce_extension_scenario() {
    run_client_scenario(
        "auth/dpop-nonce",
        &[
            "sep-1932-client-token-request-proof",
            "sep-1932-client-dpop-auth-scheme",
            "sep-1932-client-fresh-proof",
            "sep-1932-client-as-nonce",
            "sep-1932-client-rs-nonce",
        ],
    );
}

/// The Skills extension (SEP-2640) from the host's side, in both eras: listing reads no skill file; loading reads the
/// SKILL.md and refuses it when its digest, its size or its front matter is not the entry's, and then reads nothing
/// more of the skill.
#[test]
fn the_conformance_client_passes_the_sep_2640_skills_scenarios() {
    let scenarios = [
        ("sep-2640-client-no-prefetch", "sep-2640-host-no-prefetch"),
        ("sep-2640-client-verify-digest", "sep-2640-host-verify-digest"),
        ("sep-2640-client-verify-size", "sep-2640-host-size-mismatch-failure"),
        ("sep-2640-client-verify-frontmatter", "sep-2640-host-frontmatter-comparison"),
    ];
    for (scenario, check) in scenarios {
        // 2025-11-25 (the suite's default for an extension's client scenario), then 2026-07-28.
        run_client_scenario(scenario, &[check]);
        run_client_scenario_at(scenario, Some("2026-07-28"), &[check]);
    }
}
