//! The official Python SDK (PyPI `mcp` 2.x) as a client of our servers.

use crate::common;

#[test]
fn python_client_lists_calls_with_progress_and_cancels_on_the_bookshop() {
    let bookshop = common::example("bookshop");
    let out = common::python::run_script("bookshop_client.py", &[bookshop.as_os_str()]);
    assert!(out.contains("all ok"), "{out}");
    // The cancel reached the server as notifications/cancelled.
    assert!(out.contains("request cancelled"), "{out}");
}

#[tokio::test]
async fn python_client_over_http_sees_progress_per_session_logs_and_cancels() {
    let server = common::http::HttpServer::start(&[]);
    let url = server.url.clone();
    let out = tokio::task::spawn_blocking(move || common::python::run_script("http_client.py", &[url.as_ref()]))
        .await
        .unwrap();
    assert!(out.contains("all ok"), "{out}");
    assert!(
        server.wait_stderr("request cancelled", std::time::Duration::from_secs(3)).await,
        "the cancel reached the server and cancelled the call: {}",
        server.stderr_text()
    );
}
