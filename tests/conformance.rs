//! The official MCP conformance suite (`@modelcontextprotocol/conformance`), every server scenario the 2025-11-25
//! requirement set names, against `examples/everything.rs` over Streamable HTTP. No expected-failures list.

mod common;

use std::process::Command;

use common::http::HttpServer;

#[test]
fn the_everything_server_passes_the_2025_11_25_requirements() {
    let bin = common::node::tools();
    let server = HttpServer::start_binary(common::example("everything"), &[]);
    let out = Command::new(bin.join("conformance"))
        .args(["server", "--url", &server.url, "--requirements", "2025-11-25"])
        .env("PATH", common::node::path_with_tools(&bin))
        .current_dir(std::env::temp_dir())
        .output()
        .expect("run the conformance suite");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let summary = stdout.split("=== SUMMARY ===").nth(1).unwrap_or(&stdout);
    assert!(
        out.status.success(),
        "conformance failures:\n{summary}\n{}\nserver log:\n{}",
        String::from_utf8_lossy(&out.stderr),
        server.stderr_text()
    );
    assert!(summary.contains(" 0 failed"), "{summary}");
    println!("{summary}");
}
