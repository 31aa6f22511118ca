//! `resources/read` of 1 MiB of binary (base64 on the wire) over stdio, against any server command: one
//! 2025-11-25 session, `--warmup` unmeasured reads, then `--calls` sequential measured reads of `--uri`. Each
//! response's `contents[0].blob` must decode to exactly 1 MiB, or the run fails. Prints one JSON line:
//! `{"label", "calls", "mib_per_s", "p50_ms", "p99_ms", "client_p50_ms", "server_vmhwm_kb", "server_cpu_s"}`.
//!
//! - `mib_per_s`: decoded MiB per second of the measured calls, wall clock, one call at a time;
//! - `p50_ms`, `p99_ms`: one call, from writing the request to holding the checked bytes;
//! - `client_p50_ms`: the part of that spent here once the whole line has arrived (parse, decode, check);
//! - `server_vmhwm_kb`: the server's peak RSS (`VmHWM` in `/proc/PID/status`), read at the end, before its stdin
//!   closes; `server_cpu_s`: its user + system CPU time over the measured calls (`/proc/PID/stat`, Linux only;
//!   absent elsewhere).
//!
//! ```text
//! cargo bench --bench blob                                     # our testbed, test://blob/1mib
//! cargo bench --bench blob -- -- target/release/testbed        # any command line after the second `--`
//! cargo bench --bench blob -- --calls 20 --label rmcp -- target/bench-tools/release/rmcp-blob stdio
//! ```
//!
//! Options come first: `--calls N` [50], `--warmup W` [5], `--uri URI` [test://blob/1mib], `--label L` [the
//! server's program name]. Everything after `--` is the server's command line (default: this build's testbed).
//! Cargo adds a `--bench` to a `harness = false` benchmark's arguments; it is dropped wherever it appears, so a
//! server command cannot take a `--bench` option of its own. A benchmark, not a test: compare runs from one sitting.

use std::borrow::Cow;
use std::error::Error;
use std::io::{BufRead, BufReader, BufWriter, Write};
use std::process::{Command, ExitCode, Stdio};
use std::time::{Duration, Instant};

use base64::Engine as _;
use serde::Deserialize;
use serde_json::json;

/// The size every read must decode to.
const BLOB_BYTES: usize = 1 << 20;

struct Args {
    calls: usize,
    warmup: usize,
    uri: String,
    label: Option<String>,
    server: Vec<String>,
}

fn parse_args() -> Result<Args, Box<dyn Error>> {
    let mut args = Args { calls: 50, warmup: 5, uri: "test://blob/1mib".into(), label: None, server: Vec::new() };
    let mut it = std::env::args().skip(1).filter(|a| a != "--bench");
    while let Some(a) = it.next() {
        let mut value = || it.next().ok_or_else(|| format!("a value after {a}"));
        match a.as_str() {
            "--calls" => args.calls = value()?.parse()?,
            "--warmup" => args.warmup = value()?.parse()?,
            "--uri" => args.uri = value()?,
            "--label" => args.label = Some(value()?),
            "--" => {
                args.server = it.collect();
                break;
            }
            _ => return Err(format!("unknown argument {a} (options, then `--` and the server's command line)").into()),
        }
    }
    if args.calls == 0 {
        return Err("--calls must be at least 1".into());
    }
    if args.server.is_empty() {
        args.server.push(env!("CARGO_BIN_EXE_testbed").into());
    }
    Ok(args)
}

/// The parts of a response this client looks at; the blob is borrowed from the line when it has no escapes.
#[derive(Deserialize)]
struct Response<'a> {
    id: Option<u64>,
    #[serde(borrow)]
    result: Option<ReadResult<'a>>,
    error: Option<serde_json::Value>,
}

#[derive(Deserialize)]
struct ReadResult<'a> {
    #[serde(borrow, default)] // absent from initialize's result
    contents: Vec<Contents<'a>>,
}

#[derive(Deserialize)]
struct Contents<'a> {
    #[serde(borrow)]
    blob: Option<Cow<'a, str>>,
}

/// Reads one whole line (a JSON-RPC message) into `line`.
fn read_line(stdout: &mut impl BufRead, line: &mut Vec<u8>) -> Result<(), Box<dyn Error>> {
    line.clear();
    if stdout.read_until(b'\n', line)? == 0 {
        return Err("the server closed its stdout".into());
    }
    Ok(())
}

/// One `resources/read`'s result checked: `contents[0].blob` decodes to exactly [`BLOB_BYTES`].
fn check_blob(response: Response, decoded: &mut Vec<u8>) -> Result<(), Box<dyn Error>> {
    if let Some(error) = response.error {
        return Err(format!("resources/read failed: {error}").into());
    }
    let blob = response
        .result
        .and_then(|r| r.contents.into_iter().next())
        .and_then(|c| c.blob)
        .ok_or("the result has no contents[0].blob")?;
    decoded.clear();
    base64::engine::general_purpose::STANDARD.decode_vec(blob.as_bytes(), decoded)?;
    if decoded.len() != BLOB_BYTES {
        return Err(format!("the blob decodes to {} bytes, not {BLOB_BYTES}", decoded.len()).into());
    }
    Ok(())
}

/// `VmHWM` (peak resident set) of a process, in KiB, from `/proc/PID/status`.
fn vmhwm_kb(pid: u32) -> Option<u64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    let line = status.lines().find(|l| l.starts_with("VmHWM:"))?;
    line.split_whitespace().nth(1)?.parse().ok()
}

/// A process's CPU time so far (user + system), from `/proc/PID/stat` (clock ticks taken as 10 ms).
fn cpu_time(pid: u32) -> Option<Duration> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let fields: Vec<&str> = stat.rsplit_once(')')?.1.split_whitespace().collect();
    let ticks = fields.get(11)?.parse::<u64>().ok()? + fields.get(12)?.parse::<u64>().ok()?;
    Some(Duration::from_millis(ticks * 10))
}

fn percentile_ms(sorted: &[Duration], p: f64) -> f64 {
    sorted[((sorted.len() as f64 - 1.0) * p).round() as usize].as_secs_f64() * 1e3
}

fn main() -> ExitCode {
    match run() {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("blob: {e}");
            ExitCode::FAILURE
        }
    }
}

fn run() -> Result<(), Box<dyn Error>> {
    let args = parse_args()?;
    let label = args.label.clone().unwrap_or_else(|| args.server[0].rsplit('/').next().unwrap_or_default().into());
    let mut child = Command::new(&args.server[0])
        .args(&args.server[1..])
        .env("RUST_LOG", "warn")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .map_err(|e| format!("spawn {:?}: {e}", args.server))?;
    let pid = child.id();
    let mut stdin = BufWriter::new(child.stdin.take().ok_or("no stdin")?);
    let mut stdout = BufReader::with_capacity(1 << 16, child.stdout.take().ok_or("no stdout")?);
    let mut line = Vec::with_capacity(2 * BLOB_BYTES);
    let mut decoded = Vec::with_capacity(BLOB_BYTES);

    let init = json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "blob-bench", "version": "0"}}});
    writeln!(stdin, "{init}")?;
    stdin.flush()?;
    read_line(&mut stdout, &mut line)?;
    let initialized: Response = serde_json::from_slice(&line)?;
    if initialized.id != Some(0) || initialized.error.is_some() {
        return Err(format!("initialize failed: {}", String::from_utf8_lossy(&line)).into());
    }
    writeln!(stdin, r#"{{"jsonrpc":"2.0","method":"notifications/initialized"}}"#)?;

    let mut latencies = Vec::with_capacity(args.calls);
    let mut client_times = Vec::with_capacity(args.calls);
    let mut started = Instant::now();
    let mut cpu_before = None;
    for i in 0..args.warmup + args.calls {
        if i == args.warmup {
            started = Instant::now();
            cpu_before = cpu_time(pid);
        }
        let id = i as u64 + 1;
        let request = json!({"jsonrpc": "2.0", "id": id, "method": "resources/read", "params": {"uri": args.uri}});
        let t = Instant::now();
        writeln!(stdin, "{request}")?;
        stdin.flush()?;
        let mut arrived;
        let response = loop {
            read_line(&mut stdout, &mut line)?;
            arrived = Instant::now(); // the whole answer is here: the rest is this client's work
            let response: Response = serde_json::from_slice(&line)?;
            if response.id == Some(id) {
                break response; // anything else (a notification) is skipped
            }
        };
        check_blob(response, &mut decoded).map_err(|e| format!("request {id}: {e}"))?;
        if i >= args.warmup {
            latencies.push(t.elapsed());
            client_times.push(arrived.elapsed());
        }
    }
    let elapsed = started.elapsed();
    let server_cpu = cpu_time(pid).zip(cpu_before).map(|(after, before)| after.saturating_sub(before));
    let server_vmhwm_kb = vmhwm_kb(pid);

    drop(stdin);
    let _ = child.wait();

    latencies.sort();
    client_times.sort();
    let mib = (args.calls * BLOB_BYTES) as f64 / f64::from(1 << 20);
    let mut out = json!({
        "label": label,
        "calls": args.calls,
        "mib_per_s": mib / elapsed.as_secs_f64(),
        "p50_ms": percentile_ms(&latencies, 0.50),
        "p99_ms": percentile_ms(&latencies, 0.99),
        "client_p50_ms": percentile_ms(&client_times, 0.50),
        "server_vmhwm_kb": server_vmhwm_kb,
    });
    if let Some(cpu) = server_cpu {
        out["server_cpu_s"] = json!(cpu.as_secs_f64());
    }
    println!("{out}");
    Ok(())
}
