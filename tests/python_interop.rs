//! The official Python SDK (PyPI `mcp` 2.x) as a client of our servers.

mod common;

#[test]
fn python_client_lists_calls_with_progress_and_cancels_on_the_bookshop() {
    let bookshop = common::example("bookshop");
    let out = common::python::run_script("bookshop_client.py", &[bookshop.as_os_str()]);
    assert!(out.contains("all ok"), "{out}");
    // The cancel reached the server as notifications/cancelled.
    assert!(out.contains("request cancelled"), "{out}");
}
