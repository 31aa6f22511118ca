//! Round trips of `tools/call` over stdio against the testbed's `echo` tool: sequential (one call at a time) and
//! pipelined (K calls in flight), in a 2025-11-25 session and as stateless 2026-07-28 requests (each with its
//! `_meta` envelope). Prints calls/s and p50/p99 latency for each.
//!
//! Run with `cargo bench --bench stdio` (optionally `-- --calls N --pipeline K`). A benchmark, not a test: the
//! figures depend on the machine; compare runs from one sitting. `MCP_BENCH_SERVER=path` measures another build of
//! the testbed (an A/B of a change).

use std::io::{BufRead, BufReader, Write};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::{json, Value};

struct Args {
    calls: usize,
    warmup: usize,
    pipeline: usize,
    cancels: usize,
}

fn parse_args() -> Args {
    let mut args = Args { calls: 20_000, warmup: 2_000, pipeline: 32, cancels: 1_000 };
    let mut it = std::env::args().skip(1);
    while let Some(a) = it.next() {
        let mut value = || it.next().and_then(|v| v.parse().ok()).expect("a number after the option");
        match a.as_str() {
            "--calls" => args.calls = value(),
            "--warmup" => args.warmup = value(),
            "--pipeline" => args.pipeline = value(),
            "--cancels" => args.cancels = value(),
            _ => {} // cargo bench passes `--bench`
        }
    }
    args
}

fn percentile(sorted: &[Duration], p: f64) -> Duration {
    sorted[((sorted.len() as f64 - 1.0) * p).round() as usize]
}

/// The server's CPU time so far (user + system), from `/proc/PID/stat` (Linux; clock ticks of 10 ms).
fn server_cpu(pid: u32) -> Option<Duration> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let fields: Vec<&str> = stat.rsplit_once(')')?.1.split_whitespace().collect();
    let ticks: u64 = fields.get(11)?.parse::<u64>().ok()? + fields.get(12)?.parse::<u64>().ok()?;
    Some(Duration::from_millis(ticks * 10))
}

fn report(phase: &str, calls: usize, elapsed: Duration, mut latencies: Vec<Duration>, cpu: Option<Duration>) {
    latencies.sort();
    let cpu = cpu.map(|c| format!("  server CPU {:>5.1} us/call", c.as_secs_f64() * 1e6 / calls as f64));
    println!(
        "{phase:<16} {calls:>7} calls  {:>9.0} calls/s  p50 {:>8.1} us  p99 {:>8.1} us{}",
        calls as f64 / elapsed.as_secs_f64(),
        percentile(&latencies, 0.50).as_secs_f64() * 1e6,
        percentile(&latencies, 0.99).as_secs_f64() * 1e6,
        cpu.unwrap_or_default(),
    );
}

fn main() {
    let args = parse_args();
    let mut child =
        Command::new(std::env::var_os("MCP_BENCH_SERVER").unwrap_or_else(|| env!("CARGO_BIN_EXE_testbed").into()))
            .env("RUST_LOG", "warn")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("spawn the testbed server");
    // The testbed's markers (`SLEEP_START id`, `SLEEP_ABORTED id`), as they are written.
    let (markers, marker_lines) = std::sync::mpsc::channel::<String>();
    let stderr = child.stderr.take().unwrap();
    std::thread::spawn(move || {
        for line in BufReader::new(stderr).lines() {
            let Ok(line) = line else { break };
            if line.starts_with("SLEEP_") && markers.send(line).is_err() {
                break;
            }
        }
    });
    let wait_marker = |want: &str| loop {
        let line = marker_lines.recv_timeout(Duration::from_secs(10)).expect("the testbed's marker");
        if line == want {
            break;
        }
    };
    let pid = child.id();
    let mut stdin = std::io::BufWriter::new(child.stdin.take().unwrap());
    let mut stdout = BufReader::new(child.stdout.take().unwrap());
    let mut line = String::new();
    let mut read = |stdout: &mut BufReader<_>| -> Value {
        line.clear();
        stdout.read_line(&mut line).expect("read");
        serde_json::from_str(&line).expect("a JSON line")
    };
    let init = json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "bench", "version": "0"}}});
    writeln!(stdin, "{init}").unwrap();
    writeln!(stdin, r#"{{"jsonrpc":"2.0","method":"notifications/initialized"}}"#).unwrap();
    stdin.flush().unwrap();
    assert!(read(&mut stdout)["result"].is_object());

    let call_2025 = |id: usize| {
        format!(
            r#"{{"jsonrpc":"2.0","id":{id},"method":"tools/call","params":{{"name":"echo","arguments":{{"text":"hello"}}}}}}"#
        )
    };
    let call_2026 = |id: usize| {
        format!(
            r#"{{"jsonrpc":"2.0","id":{id},"method":"tools/call","params":{{"name":"echo","arguments":{{"text":"hello"}},"_meta":{{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{{}},"io.modelcontextprotocol/clientInfo":{{"name":"bench","version":"0"}}}}}}}}"#
        )
    };
    let mut id = 1;
    let calls: [(&str, &dyn Fn(usize) -> String); 2] = [("2025", &call_2025), ("2026", &call_2026)];
    for (era, call) in calls {
        // Sequential: one request, wait for its response.
        let mut latencies = Vec::with_capacity(args.calls);
        let mut started = Instant::now();
        let mut cpu_before = None;
        for i in 0..args.warmup + args.calls {
            if i == args.warmup {
                started = Instant::now();
                cpu_before = server_cpu(pid);
            }
            let t = Instant::now();
            writeln!(stdin, "{}", call(id)).unwrap();
            stdin.flush().unwrap();
            let r = read(&mut stdout);
            assert_eq!(r["id"], id, "{r}");
            id += 1;
            if i >= args.warmup {
                latencies.push(t.elapsed());
            }
        }
        let cpu = server_cpu(pid).zip(cpu_before).map(|(after, before)| after.saturating_sub(before));
        report(&format!("{era} sequential"), args.calls, started.elapsed(), latencies, cpu);

        // Pipelined: K requests in one write, then K responses.
        let k = args.pipeline.max(1);
        let rounds = args.calls.div_ceil(k);
        let mut latencies = Vec::with_capacity(rounds * k);
        let started = Instant::now();
        let cpu_before = server_cpu(pid);
        for _ in 0..rounds {
            let t = Instant::now();
            for _ in 0..k {
                writeln!(stdin, "{}", call(id)).unwrap();
                id += 1;
            }
            stdin.flush().unwrap();
            for _ in 0..k {
                let r = read(&mut stdout);
                assert!(r["result"].is_object(), "{r}");
                latencies.push(t.elapsed());
            }
        }
        let cpu = server_cpu(pid).zip(cpu_before).map(|(after, before)| after.saturating_sub(before));
        report(&format!("{era} pipeline{k}"), rounds * k, started.elapsed(), latencies, cpu);

        // Cancellation: a running async handler (sleeping 10 s) is cancelled; the time from writing
        // `notifications/cancelled` to reading the handler's drop marker on stderr (an upper bound of the server's
        // own time: it includes a pipe each way and this process's reader thread).
        let mut latencies = Vec::with_capacity(args.cancels);
        let started = Instant::now();
        for _ in 0..args.cancels {
            let sleep = call(id)
                .replace(r#""name":"echo","arguments":{"text":"hello"}"#, r#""name":"sleep","arguments":{"ms":10000}"#);
            writeln!(stdin, "{sleep}").unwrap();
            stdin.flush().unwrap();
            wait_marker(&format!("SLEEP_START {id}"));
            let t = Instant::now();
            writeln!(stdin, r#"{{"jsonrpc":"2.0","method":"notifications/cancelled","params":{{"requestId":{id}}}}}"#)
                .unwrap();
            stdin.flush().unwrap();
            wait_marker(&format!("SLEEP_ABORTED {id}"));
            latencies.push(t.elapsed());
            id += 1;
        }
        if args.cancels > 0 {
            report(&format!("{era} cancel"), args.cancels, started.elapsed(), latencies, None);
        }
    }

    drop(stdin);
    let _ = child.wait();
}
