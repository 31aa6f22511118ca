//! Allocations per `tools/call`, counted by a counting global allocator: an `echo` tool served in this process,
//! over an in-memory stdio pair (`Server::serve_streams`, a 2025 session and 2026 requests) and through the HTTP
//! router (`Server::http_router`, called as a tower service without sockets: the router, the endpoint's checks and
//! everything below; hyper's connection work is not in it). Every request is written out before counting starts;
//! what is counted is the server's work and the reading of the answers (one line, or one body, per call).
//!
//!   cargo bench --bench allocs                  # 20,000 calls per figure
//!   cargo bench --bench allocs -- --calls 2000
//!
//! A benchmark, not a test: it prints allocations and bytes allocated per call for each figure.

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicU64, Ordering};

use serde_json::json;
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};

struct Counting;

static ALLOCS: AtomicU64 = AtomicU64::new(0);
static BYTES: AtomicU64 = AtomicU64::new(0);

// SAFETY: every call goes to the system allocator unchanged; the counters are only added to.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        ALLOCS.fetch_add(1, Ordering::Relaxed);
        BYTES.fetch_add(layout.size() as u64, Ordering::Relaxed);
        // SAFETY: as the caller's contract for `GlobalAlloc::alloc`.
        unsafe { System.alloc(layout) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: as the caller's contract for `GlobalAlloc::dealloc`.
        unsafe { System.dealloc(ptr, layout) }
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        ALLOCS.fetch_add(1, Ordering::Relaxed);
        BYTES.fetch_add(new_size as u64, Ordering::Relaxed);
        // SAFETY: as the caller's contract for `GlobalAlloc::realloc`.
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

#[global_allocator]
static GLOBAL: Counting = Counting;

/// Echoes the text.
#[mcp::tool]
fn echo(
    /// What to echo.
    text: String,
) -> String {
    text
}

fn counted() -> (u64, u64) {
    (ALLOCS.load(Ordering::Relaxed), BYTES.load(Ordering::Relaxed))
}

fn report(figure: &str, calls: usize, before: (u64, u64)) {
    let (allocs, bytes) = counted();
    let per = |n: u64| n as f64 / calls as f64;
    println!(
        "{figure:<26} {:>7.1} allocations/call {:>9.0} bytes allocated/call",
        per(allocs - before.0),
        per(bytes - before.1)
    );
}

fn request(id: usize, era: &str) -> serde_json::Value {
    let mut params = json!({ "name": "echo", "arguments": { "text": "hello" } });
    if era == "2026" {
        params["_meta"] = json!({
            "io.modelcontextprotocol/protocolVersion": "2026-07-28",
            "io.modelcontextprotocol/clientCapabilities": {},
            "io.modelcontextprotocol/clientInfo": { "name": "allocs", "version": "1" },
        });
    }
    json!({ "jsonrpc": "2.0", "id": id, "method": "tools/call", "params": params })
}

fn server() -> mcp::Server {
    mcp::Server::builder().tool::<echo>().build().expect("a server")
}

/// Pipelined calls over an in-memory stdio pair: every request written at once, then every answer read.
async fn stdio(era: &str, calls: usize) {
    let (client, server_end) = tokio::io::duplex(1 << 20);
    let (server_read, server_write) = tokio::io::split(server_end);
    let serving = tokio::spawn(server().serve_streams(server_read, server_write));
    let (client_read, mut client_write) = tokio::io::split(client);
    let mut lines = BufReader::new(client_read).lines();
    if era == "2025" {
        let init = json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
            "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "allocs", "version": "1"}}});
        client_write.write_all(format!("{init}\n").as_bytes()).await.unwrap();
        lines.next_line().await.unwrap();
        client_write.write_all(b"{\"jsonrpc\":\"2.0\",\"method\":\"notifications/initialized\"}\n").await.unwrap();
    }
    // Warm up (the first calls fill caches and pools), then count.
    let batch = |from: usize, n: usize| -> Vec<u8> {
        (from..from + n).map(|i| format!("{}\n", request(i, era))).collect::<String>().into_bytes()
    };
    let warm = batch(1, 200);
    client_write.write_all(&warm).await.unwrap();
    for _ in 0..200 {
        lines.next_line().await.unwrap();
    }
    let measured = batch(1_000, calls);
    let before = counted();
    let writer = tokio::spawn(async move {
        client_write.write_all(&measured).await.unwrap();
        client_write
    });
    for _ in 0..calls {
        let line = lines.next_line().await.unwrap().expect("an answer");
        assert!(line.contains("\"result\""), "{line}");
    }
    report(&format!("stdio {era}, pipelined"), calls, before);
    drop(writer.await.unwrap());
    serving.abort();
}

/// Calls through the HTTP router as a tower service, one at a time.
async fn http(era: &str, calls: usize) {
    use mcp::tower::ServiceExt;
    let router = server().http_router(mcp::HttpOptions::new());
    let post = |body: String, session: Option<&str>| {
        let mut builder = axum::http::Request::post("/mcp")
            .header("host", "127.0.0.1")
            .header("content-type", "application/json")
            .header("accept", "application/json, text/event-stream");
        builder = match era {
            "2026" => builder
                .header("mcp-protocol-version", "2026-07-28")
                .header("mcp-method", "tools/call")
                .header("mcp-name", "echo"),
            _ => builder.header("mcp-protocol-version", "2025-11-25"),
        };
        if let Some(session) = session {
            builder = builder.header("mcp-session-id", session);
        }
        builder.body(axum::body::Body::from(body)).unwrap()
    };
    let mut session = None;
    if era == "2025" {
        let init = json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
            "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "allocs", "version": "1"}}});
        let answer = router.clone().oneshot(post(init.to_string(), None)).await.unwrap();
        session = answer.headers().get("mcp-session-id").map(|v| v.to_str().unwrap().to_owned());
        let initialized = r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#.to_owned();
        router.clone().oneshot(post(initialized, session.as_deref())).await.unwrap();
    }
    let mut requests: Vec<_> =
        (0..calls + 200).map(|i| post(request(i + 1, era).to_string(), session.as_deref())).collect();
    let measured = requests.split_off(200);
    for request in requests {
        let answer = router.clone().oneshot(request).await.unwrap();
        axum::body::to_bytes(answer.into_body(), usize::MAX).await.unwrap();
    }
    let before = counted();
    for request in measured {
        let answer = router.clone().oneshot(request).await.unwrap();
        assert_eq!(answer.status(), 200);
        axum::body::to_bytes(answer.into_body(), usize::MAX).await.unwrap();
    }
    report(&format!("HTTP router {era}"), calls, before);
}

fn main() {
    let mut calls = 20_000;
    let mut args = std::env::args().skip(1);
    while let Some(a) = args.next() {
        if a == "--calls" {
            calls = args.next().and_then(|v| v.parse().ok()).expect("a number after --calls");
        }
    }
    let runtime = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().unwrap();
    runtime.block_on(async {
        for era in ["2025", "2026"] {
            stdio(era, calls).await;
        }
        for era in ["2025", "2026"] {
            http(era, calls).await;
        }
    });
}
