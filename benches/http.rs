//! `tools/call` round trips over Streamable HTTP against the testbed's `echo` tool, with C concurrent clients in a
//! closed loop: 2025-11-25 sessions (SSE answers) and stateless 2026-07-28 requests (JSON answers). Prints calls/s,
//! p50/p99 latency and the server's CPU time per call for each era.
//!
//! Run with `cargo bench --bench http` (optionally `-- --clients C --seconds S`). A benchmark, not a test: the
//! figures depend on the machine; compare runs from one sitting. `MCP_BENCH_SERVER=path` measures another build of
//! the testbed (an A/B of a change).

use std::net::TcpListener;
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::json;

struct Args {
    clients: usize,
    seconds: u64,
    cancels: usize,
}

fn parse_args() -> Args {
    let mut args = Args { clients: 4, seconds: 3, cancels: 1000 };
    let mut it = std::env::args().skip(1);
    while let Some(a) = it.next() {
        let mut value = || it.next().and_then(|v| v.parse().ok()).expect("a number after the option");
        match a.as_str() {
            "--clients" => args.clients = value() as usize,
            "--seconds" => args.seconds = value(),
            "--cancels" => args.cancels = value() as usize,
            _ => {} // cargo bench passes `--bench`
        }
    }
    args
}

/// The server's CPU time so far (user + system), from `/proc/PID/stat` (Linux; clock ticks of 10 ms).
fn server_cpu(pid: u32) -> Option<Duration> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let fields: Vec<&str> = stat.rsplit_once(')')?.1.split_whitespace().collect();
    let ticks: u64 = fields.get(11)?.parse::<u64>().ok()? + fields.get(12)?.parse::<u64>().ok()?;
    Some(Duration::from_millis(ticks * 10))
}

const ENVELOPE: &str = r#"{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{},"io.modelcontextprotocol/clientInfo":{"name":"bench","version":"0"}}"#;

/// One client of the server: a 2025 session (initialized), or stateless 2026 requests.
struct Caller {
    http: reqwest::Client,
    url: String,
    v2026: bool,
    session: Option<String>,
}

impl Caller {
    async fn open(http: reqwest::Client, url: String, v2026: bool) -> Caller {
        let mut caller = Caller { http, url, v2026, session: None };
        if !v2026 {
            let init = json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "bench", "version": "0"}}});
            let r = caller.post("").body(init.to_string()).send().await.expect("initialize");
            caller.session = r.headers().get("mcp-session-id").and_then(|v| v.to_str().ok()).map(str::to_owned);
            let _ = r.text().await;
            let initialized = json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
            let _ = caller.post("").body(initialized.to_string()).send().await.expect("initialized");
        }
        caller
    }

    /// A POST with the era's headers; `tool` names the tool of a 2026 `tools/call`.
    fn post(&self, tool: &str) -> reqwest::RequestBuilder {
        let post = self
            .http
            .post(&self.url)
            .header("accept", "application/json, text/event-stream")
            .header("content-type", "application/json");
        if self.v2026 {
            post.header("mcp-protocol-version", "2026-07-28")
                .header("mcp-method", "tools/call")
                .header("mcp-name", tool)
        } else {
            let post = post.header("mcp-protocol-version", "2025-11-25");
            match &self.session {
                Some(s) => post.header("mcp-session-id", s),
                None => post,
            }
        }
    }
}

/// One client's loop: calls until the deadline, returning each call's latency.
async fn client(http: reqwest::Client, url: String, v2026: bool, deadline: Instant) -> Vec<Duration> {
    let caller = Caller::open(http, url, v2026).await;
    let mut latencies = Vec::new();
    let mut id = 1u64;
    while Instant::now() < deadline {
        let body = if v2026 {
            format!(
                r#"{{"jsonrpc":"2.0","id":{id},"method":"tools/call","params":{{"name":"echo","arguments":{{"text":"hello"}},"_meta":{ENVELOPE}}}}}"#
            )
        } else {
            format!(
                r#"{{"jsonrpc":"2.0","id":{id},"method":"tools/call","params":{{"name":"echo","arguments":{{"text":"hello"}}}}}}"#
            )
        };
        let t = Instant::now();
        let text = caller.post("echo").body(body).send().await.expect("a response").text().await.expect("a body");
        assert!(text.contains(r#""result""#), "{text}");
        latencies.push(t.elapsed());
        id += 1;
    }
    latencies
}

/// Cancels `n` running async handlers (the testbed's `sleep`, 10 s) and returns, for each, the time from the cancel
/// to the handler's drop marker on the server's stderr: 2025, a `notifications/cancelled` POST in the session (its
/// round trip included); 2026, closing the call's connection.
async fn cancels(
    http: &reqwest::Client,
    url: &str,
    v2026: bool,
    n: usize,
    markers: &mut tokio::sync::mpsc::UnboundedReceiver<String>,
) -> Vec<Duration> {
    let caller = Caller::open(http.clone(), url.to_owned(), v2026).await;
    let post = |body: String| caller.post("sleep").body(body).send();
    let mut wait = async |want: String| loop {
        let line =
            tokio::time::timeout(Duration::from_secs(10), markers.recv()).await.expect("a marker").expect("stderr");
        if line == want {
            break;
        }
    };
    let mut latencies = Vec::with_capacity(n);
    for id in 1_000_000..1_000_000 + n {
        let meta = if v2026 { format!(r#","_meta":{ENVELOPE}"#) } else { String::new() };
        let call = format!(
            r#"{{"jsonrpc":"2.0","id":{id},"method":"tools/call","params":{{"name":"sleep","arguments":{{"ms":10000}}{meta}}}}}"#
        );
        // In its own task: a 2026 answer (JSON) has no headers before the result.
        let running = tokio::spawn(post(call));
        wait(format!("SLEEP_START {id}")).await;
        let t = Instant::now();
        if v2026 {
            running.abort(); // drops the request, and so its connection
        } else {
            let cancel =
                format!(r#"{{"jsonrpc":"2.0","method":"notifications/cancelled","params":{{"requestId":{id}}}}}"#);
            post(cancel).await.expect("the cancel's answer");
        }
        wait(format!("SLEEP_ABORTED {id}")).await;
        latencies.push(t.elapsed());
        running.abort();
    }
    latencies
}

fn main() {
    let args = parse_args();
    let port = TcpListener::bind("127.0.0.1:0").and_then(|l| l.local_addr()).expect("a free port").port();
    let mut child =
        Command::new(std::env::var_os("MCP_BENCH_SERVER").unwrap_or_else(|| env!("CARGO_BIN_EXE_testbed").into()))
            .args(["--http", &format!("127.0.0.1:{port}")])
            .env("RUST_LOG", "warn")
            .env("MCP_REQUEST_STATE_KEY", "00".repeat(32))
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .expect("spawn the testbed server");
    let pid = child.id();
    // The testbed's `SLEEP_*` markers, as they are written.
    let (marker_tx, mut markers) = tokio::sync::mpsc::unbounded_channel::<String>();
    let stderr = child.stderr.take().unwrap();
    std::thread::spawn(move || {
        use std::io::BufRead;
        for line in std::io::BufReader::new(stderr).lines() {
            let Ok(line) = line else { break };
            if line.starts_with("SLEEP_") && marker_tx.send(line).is_err() {
                break;
            }
        }
    });
    let url = format!("http://127.0.0.1:{port}/mcp");
    let runtime = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().unwrap();
    runtime.block_on(async {
        let started = Instant::now();
        while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
            assert!(started.elapsed() < Duration::from_secs(10), "the server did not listen");
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        let http = reqwest::Client::builder().pool_max_idle_per_host(64).build().unwrap();
        let url = Arc::new(url);
        for (era, v2026) in
            [("2025 sse", false), ("2026 stateless", true), ("2025 sse", false), ("2026 stateless", true)]
        {
            // A short warm-up, then the measured run.
            let warmup = Instant::now() + Duration::from_millis(300);
            let tasks: Vec<_> =
                (0..args.clients).map(|_| tokio::spawn(client(http.clone(), url.to_string(), v2026, warmup))).collect();
            for t in tasks {
                t.await.unwrap();
            }
            let cpu_before = server_cpu(pid);
            let began = Instant::now();
            let deadline = began + Duration::from_secs(args.seconds);
            let tasks: Vec<_> = (0..args.clients)
                .map(|_| tokio::spawn(client(http.clone(), url.to_string(), v2026, deadline)))
                .collect();
            let mut latencies: Vec<Duration> = Vec::new();
            for t in tasks {
                latencies.extend(t.await.unwrap());
            }
            let elapsed = began.elapsed();
            let cpu = server_cpu(pid).zip(cpu_before).map(|(a, b)| a.saturating_sub(b));
            latencies.sort();
            let calls = latencies.len();
            let pct = |p: f64| latencies[((calls as f64 - 1.0) * p).round() as usize].as_secs_f64() * 1e6;
            println!(
                "{era:<15} c={} {calls:>7} calls  {:>8.0} calls/s  p50 {:>7.1} us  p99 {:>7.1} us{}",
                args.clients,
                calls as f64 / elapsed.as_secs_f64(),
                pct(0.50),
                pct(0.99),
                cpu.map(|c| format!("  server CPU {:>5.1} us/call", c.as_secs_f64() * 1e6 / calls as f64))
                    .unwrap_or_default(),
            );
        }
        for (era, v2026) in [("2025 cancel", false), ("2026 cancel", true)] {
            if args.cancels == 0 {
                break;
            }
            let mut latencies = cancels(&http, &url, v2026, args.cancels, &mut markers).await;
            latencies.sort();
            let n = latencies.len();
            let pct = |p: f64| latencies[((n as f64 - 1.0) * p).round() as usize].as_secs_f64() * 1e6;
            println!("{era:<15} {n:>7} cancels  p50 {:>7.1} us  p99 {:>7.1} us", pct(0.50), pct(0.99));
        }
    });
    let _ = child.kill();
    let _ = child.wait();
}
