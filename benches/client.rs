//! The client's side: `tools/call` of the testbed's `echo` tool through `mcp::client`, over stdio and Streamable
//! HTTP, in both eras, sequential (one call at a time) and pipelined (K calls in flight from K tasks sharing one
//! client). Prints calls/s and p50/p99 latency for each.
//!
//! Run with `cargo bench --bench client` (optionally `-- --calls N --pipeline K`). The same server measured from the
//! official Python client: `benches/client_python.py` (see its header). A benchmark, not a test.

use std::time::{Duration, Instant};

use mcp::client::{Client, EraChoice};
use serde_json::json;

struct Args {
    calls: usize,
    pipeline: usize,
}

fn parse_args() -> Args {
    let mut args = Args { calls: 5_000, pipeline: 32 };
    let mut it = std::env::args().skip(1);
    while let Some(a) = it.next() {
        let mut value = || it.next().and_then(|v| v.parse().ok()).expect("a number after the option");
        match a.as_str() {
            "--calls" => args.calls = value(),
            "--pipeline" => args.pipeline = value(),
            _ => {}
        }
    }
    args
}

fn testbed() -> std::path::PathBuf {
    let exe = std::env::current_exe().expect("bench path");
    let dir = exe.parent().and_then(|d| d.parent()).expect("profile dir");
    dir.join(format!("testbed{}", std::env::consts::EXE_SUFFIX))
}

fn report(phase: &str, calls: usize, elapsed: Duration, mut latencies: Vec<Duration>) {
    latencies.sort();
    let p = |q: f64| latencies[((latencies.len() as f64 - 1.0) * q).round() as usize].as_secs_f64() * 1e6;
    println!(
        "{phase:<28} {calls:>6} calls  {:>8.0} calls/s  p50 {:>8.1} us  p99 {:>8.1} us",
        calls as f64 / elapsed.as_secs_f64(),
        p(0.5),
        p(0.99)
    );
}

async fn sequential(client: &Client, calls: usize) -> (Duration, Vec<Duration>) {
    let mut latencies = Vec::with_capacity(calls);
    let start = Instant::now();
    for _ in 0..calls {
        let t = Instant::now();
        client.call_tool("echo", json!({"text": "x"})).await.expect("echo");
        latencies.push(t.elapsed());
    }
    (start.elapsed(), latencies)
}

async fn pipelined(client: &Client, calls: usize, k: usize) -> (Duration, Vec<Duration>) {
    let start = Instant::now();
    let workers: Vec<_> = (0..k)
        .map(|w| {
            let client = client.clone();
            let n = calls / k + usize::from(w < calls % k);
            tokio::spawn(async move {
                let mut latencies = Vec::with_capacity(n);
                for _ in 0..n {
                    let t = Instant::now();
                    client.call_tool("echo", json!({"text": "x"})).await.expect("echo");
                    latencies.push(t.elapsed());
                }
                latencies
            })
        })
        .collect();
    let mut latencies = Vec::with_capacity(calls);
    for w in workers {
        latencies.extend(w.await.expect("worker"));
    }
    (start.elapsed(), latencies)
}

#[tokio::main]
async fn main() {
    let args = parse_args();
    let server = testbed();
    assert!(server.exists(), "{} is missing: cargo bench builds it", server.display());
    for (era, name) in [(EraChoice::V2025, "2025"), (EraChoice::V2026, "2026")] {
        let client = Client::builder().era(era).stdio(tokio::process::Command::new(&server)).await.expect("stdio");
        sequential(&client, args.calls / 10).await; // warm-up
        let (t, l) = sequential(&client, args.calls).await;
        report(&format!("stdio {name} sequential"), args.calls, t, l);
        let (t, l) = pipelined(&client, args.calls * 4, args.pipeline).await;
        report(&format!("stdio {name} pipelined K={}", args.pipeline), args.calls * 4, t, l);
        client.close().await;
    }
    let port = {
        let probe = std::net::TcpListener::bind("127.0.0.1:0").expect("a free port");
        probe.local_addr().expect("address").port()
    };
    let mut child = std::process::Command::new(&server)
        .args(["--http", &format!("127.0.0.1:{port}")])
        .stderr(std::process::Stdio::null())
        .spawn()
        .expect("start the HTTP testbed");
    let url = format!("http://127.0.0.1:{port}/mcp");
    for _ in 0..100 {
        if std::net::TcpStream::connect(("127.0.0.1", port)).is_ok() {
            break;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    for (era, name) in [(EraChoice::V2025, "2025"), (EraChoice::V2026, "2026")] {
        let client = Client::builder().era(era).http(url.clone()).await.expect("http");
        sequential(&client, args.calls / 10).await;
        let (t, l) = sequential(&client, args.calls).await;
        report(&format!("http {name} sequential"), args.calls, t, l);
        let (t, l) = pipelined(&client, args.calls * 2, args.pipeline).await;
        report(&format!("http {name} pipelined K={}", args.pipeline), args.calls * 2, t, l);
        client.close().await;
    }
    let _ = child.kill();
    let _ = child.wait();
}
