//! Middleware: a timeout and a concurrency limit from tower, and a layer of our own that logs how long each tool call
//! took. The same layers serve stdio and HTTP, both eras.
//!
//!     cargo run --example middleware                        # stdio
//!     cargo run --example middleware -- --http 127.0.0.1:8000

use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use mcp::middleware::{Request, Response};
use mcp::tower::{limit::ConcurrencyLimitLayer, timeout::TimeoutLayer, Layer, Service};

/// Echo the text back.
#[mcp::tool]
async fn echo(text: String) -> String {
    text
}

/// Sleep for a while (past the timeout from 2 s on).
#[mcp::tool]
async fn nap(seconds: f64) -> String {
    tokio::time::sleep(Duration::from_secs_f64(seconds)).await;
    format!("slept {seconds} s")
}

/// Logs each tool call's name, outcome and duration.
#[derive(Clone)]
struct ToolTiming;

impl<S> Layer<S> for ToolTiming {
    type Service = Timed<S>;
    fn layer(&self, inner: S) -> Timed<S> {
        Timed { inner }
    }
}

#[derive(Clone)]
struct Timed<S> {
    inner: S,
}

impl<S> Service<Request> for Timed<S>
where
    S: Service<Request, Response = Response> + Send,
    S::Future: Send + 'static,
{
    type Response = Response;
    type Error = S::Error;
    type Future = mcp::handler::BoxFuture<'static, Result<Response, S::Error>>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), S::Error>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, request: Request) -> Self::Future {
        let tool = (request.method() == "tools/call").then(|| request.name().to_owned());
        let started = Instant::now();
        let response = self.inner.call(request);
        Box::pin(async move {
            let response = response.await;
            if let Some(tool) = tool {
                let outcome = match &response {
                    Ok(r) if r.is_error() => "error",
                    Ok(_) => "ok",
                    Err(_) => "failed",
                };
                tracing::info!(tool, outcome, ms = started.elapsed().as_millis() as u64, "tool call");
            }
            response
        })
    }
}

#[mcp::main]
async fn main() -> mcp::ServerBuilder {
    mcp::Server::builder()
        .registered()
        // The first layer added is the outermost: it sees each request first and its response last.
        .layer(ToolTiming)
        .layer(TimeoutLayer::new(Duration::from_secs(2)))
        .layer(ConcurrencyLimitLayer::new(4))
}
