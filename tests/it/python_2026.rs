//! The official Python SDK (PyPI `mcp` 2.3) as a 2026-07-28 client of the bookshop, over stdio and Streamable HTTP,
//! with `mode="2026-07-28"` (adopts the 2026-07-28 era without asking) and `mode="auto"` (probes `server/discover`);
//! and `mode="legacy"` (the 2025-11-25 handshake) against the same binary. The checks are in
//! `tests/python/client_2026.py`.

use crate::common;

use std::time::Duration;

/// Runs the script against the bookshop over stdio (the client spawns it; the script reads its stderr).
fn over_stdio(mode: &str) -> String {
    let bookshop = common::example("bookshop");
    let out = common::python::run_script("client_2026.py", &[mode.as_ref(), "stdio".as_ref(), bookshop.as_os_str()]);
    assert!(out.contains("all ok"), "{out}");
    out
}

/// Runs the script against a bookshop serving Streamable HTTP; returns the script's output and the server's stderr.
async fn over_http(mode: &str) -> (String, common::http::HttpServer) {
    let server = common::http::HttpServer::start_binary(common::example("bookshop"), &[]);
    let (mode, url) = (mode.to_owned(), server.url.clone());
    let out = tokio::task::spawn_blocking(move || {
        common::python::run_script("client_2026.py", &[mode.as_ref(), "http".as_ref(), url.as_ref()])
    })
    .await
    .unwrap();
    assert!(out.contains("all ok"), "{out}\n--- bookshop stderr ---\n{}", server.stderr_text());
    (out, server)
}

/// The stdio checks the script cannot make itself: the cancel arrived as `notifications/cancelled`.
fn assert_stdio_cancel(out: &str) {
    // The script prints the bookshop's stderr at its end.
    assert!(out.contains("request cancelled"), "the cancel reached the server: {out}");
    assert!(out.contains(r#"released hold on "Dune""#), "{out}");
}

/// Over HTTP the script cannot see the server's stderr: the cancel (the client closing the request's stream) ran
/// order_book's cleanup.
async fn assert_http_cancel(server: &common::http::HttpServer) {
    assert!(
        server.wait_stderr(r#"released hold on "Dune""#, Duration::from_secs(3)).await,
        "the cancelled order ran its cleanup: {}",
        server.stderr_text()
    );
    assert!(server.stderr_text().contains("request cancelled"), "{}", server.stderr_text());
}

#[test]
fn python_2026_client_over_stdio() {
    let out = over_stdio("2026-07-28");
    assert!(out.contains("speaks 2026-07-28"), "{out}");
    assert_stdio_cancel(&out);
}

#[test]
fn python_auto_client_over_stdio_discovers_the_2026_era() {
    let out = over_stdio("auto");
    assert!(out.contains("ok: auto over stdio speaks 2026-07-28"), "{out}");
    assert_stdio_cancel(&out);
}

#[tokio::test]
async fn python_2026_client_over_http() {
    let (out, server) = over_http("2026-07-28").await;
    assert!(out.contains("speaks 2026-07-28"), "{out}");
    assert_http_cancel(&server).await;
}

#[tokio::test]
async fn python_auto_client_over_http_discovers_the_2026_era() {
    let (out, server) = over_http("auto").await;
    assert!(out.contains("ok: auto over http speaks 2026-07-28"), "{out}");
    assert_http_cancel(&server).await;
}

#[tokio::test]
async fn python_legacy_client_still_works_over_stdio_and_http() {
    let out = tokio::task::spawn_blocking(|| over_stdio("legacy")).await.unwrap();
    assert!(out.contains("ok: legacy over stdio speaks 2025-11-25"), "{out}");
    let (out, _server) = over_http("legacy").await;
    assert!(out.contains("ok: legacy over http speaks 2025-11-25"), "{out}");
}
