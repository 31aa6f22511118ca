//! The rmcp peer: `echo(text)` answers the text; `sleep(ms)` waits, then prints `SLEEP_DONE` on stderr, or
//! `SLEEP_ABORTED` if it is dropped before (which is how a cancel reaches an async handler).
//!
//! Usage: `rmcp-peer stdio` or `rmcp-peer http PORT` (Streamable HTTP at http://127.0.0.1:PORT/mcp).

use std::time::Duration;

use axum::serve::ListenerExt;
use rmcp::handler::server::router::tool::ToolRouter;
use rmcp::handler::server::wrapper::Parameters;
use rmcp::model::{ServerCapabilities, ServerConfig};
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::streamable_http_server::{StreamableHttpServerConfig, StreamableHttpService};
use rmcp::{ServerHandler, ServiceExt, tool, tool_handler, tool_router};

#[derive(serde::Deserialize, schemars::JsonSchema)]
struct EchoArgs {
    /// The text to send back.
    text: String,
}

#[derive(serde::Deserialize, schemars::JsonSchema)]
struct SleepArgs {
    /// How long to sleep, in milliseconds.
    ms: u64,
}

#[derive(Clone)]
struct Peer {
    tool_router: ToolRouter<Self>,
}

/// Prints `SLEEP_ABORTED` when dropped before the sleep ended.
struct Unfinished(bool);

impl Drop for Unfinished {
    fn drop(&mut self) {
        if !self.0 {
            eprintln!("SLEEP_ABORTED");
        }
    }
}

#[tool_router]
impl Peer {
    fn new() -> Peer {
        Peer { tool_router: Self::tool_router() }
    }

    #[tool(description = "Echo the text back")]
    async fn echo(&self, Parameters(EchoArgs { text }): Parameters<EchoArgs>) -> String {
        text
    }

    #[tool(description = "Sleep for ms milliseconds")]
    async fn sleep(&self, Parameters(SleepArgs { ms }): Parameters<SleepArgs>) -> String {
        let mut guard = Unfinished(false);
        tokio::time::sleep(Duration::from_millis(ms)).await;
        guard.0 = true;
        eprintln!("SLEEP_DONE");
        format!("slept {ms} ms")
    }
}

#[tool_handler(router = self.tool_router)]
impl ServerHandler for Peer {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
    }
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    match (args.first().map(String::as_str), args.get(1).and_then(|p| p.parse::<u16>().ok())) {
        (Some("stdio"), _) => {
            Peer::new().serve(rmcp::transport::stdio()).await?.waiting().await?;
        }
        (Some("http"), Some(port)) => {
            let service: StreamableHttpService<Peer, LocalSessionManager> = StreamableHttpService::new(
                || Ok(Peer::new()),
                Default::default(),
                StreamableHttpServerConfig::default(),
            );
            let router = axum::Router::new().nest_service("/mcp", service);
            // TCP_NODELAY, as our testbed and the floor set it: without it the small writes of an SSE answer wait
            // for the client's delayed ACK.
            let listener = tokio::net::TcpListener::bind(("127.0.0.1", port)).await?.tap_io(|tcp| {
                let _ = tcp.set_nodelay(true);
            });
            axum::serve(listener, router).await?;
        }
        _ => {
            eprintln!("usage: rmcp-peer stdio | rmcp-peer http PORT");
            std::process::exit(2);
        }
    }
    Ok(())
}
