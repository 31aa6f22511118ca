//! The turbomcp 4 peer: `echo(text)` answers the text; `sleep(ms)` waits, then prints `SLEEP_DONE` on stderr, or
//! `SLEEP_ABORTED` if it is dropped before (which is how a cancel reaches an async handler).
//!
//! Usage: `turbomcp4-peer stdio` or `turbomcp4-peer http PORT` (Streamable HTTP at http://127.0.0.1:PORT/mcp).

use std::net::SocketAddr;
use std::time::Duration;

use turbomcp::http::{HttpConfig, serve_http};
use turbomcp::prelude::*;

#[derive(Clone)]
struct Peer;

/// Prints `SLEEP_ABORTED` when dropped before the sleep ended.
struct Unfinished(bool);

impl Drop for Unfinished {
    fn drop(&mut self) {
        if !self.0 {
            eprintln!("SLEEP_ABORTED");
        }
    }
}

#[server(name = "turbomcp4-peer", version = "0.1.0")]
impl Peer {
    /// Echo the text back.
    #[tool(description = "Echo the text back")]
    async fn echo(&self, text: String) -> McpResult<String> {
        Ok(text)
    }

    /// Sleep for `ms` milliseconds.
    #[tool(description = "Sleep for ms milliseconds")]
    async fn sleep(&self, ms: u64) -> McpResult<String> {
        let mut guard = Unfinished(false);
        tokio::time::sleep(Duration::from_millis(ms)).await;
        guard.0 = true;
        eprintln!("SLEEP_DONE");
        Ok(format!("slept {ms} ms"))
    }
}

#[tokio::main]
async fn main() -> Result<(), turbomcp::ProtocolError> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    match (args.first().map(String::as_str), args.get(1).and_then(|p| p.parse::<u16>().ok())) {
        (Some("stdio"), _) => Peer.run_stdio().await?,
        (Some("http"), Some(port)) => {
            let addr = SocketAddr::from(([127, 0, 0, 1], port));
            serve_http(addr, Peer.into_server().build(), HttpConfig::new()).await?;
        }
        _ => {
            eprintln!("usage: turbomcp4-peer stdio | turbomcp4-peer http PORT");
            std::process::exit(2);
        }
    }
    Ok(())
}
