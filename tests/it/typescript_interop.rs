//! The official TypeScript SDK (npm `@modelcontextprotocol/sdk`) as a client of our servers, over stdio and HTTP.

use crate::common;

use std::process::Command;

#[test]
fn typescript_client_over_stdio_and_http() {
    let bin = common::node::tools();
    let server = common::http::HttpServer::start(&[]);
    let script = common::node::script("client.mjs");
    let out = Command::new(bin.join("node"))
        .arg(&script)
        .arg(common::example("bookshop"))
        .arg(&server.url)
        .env("PATH", common::node::path_with_tools(&bin))
        .output()
        .expect("run node");
    let text = format!("{}\n{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    assert!(out.status.success(), "the TypeScript client failed:\n{text}\nserver log:\n{}", server.stderr_text());
    assert!(text.contains("all ok"), "{text}");
}
