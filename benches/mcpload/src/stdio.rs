//! A server as a child process, newline-delimited JSON-RPC on its stdin and stdout: the handshake, sequential
//! calls (`seq`), `--pipeline` calls in flight (`pipeline`), and the cancellation probe (`notifications/cancelled`).

use std::cell::RefCell;
use std::process::Stdio as Piped;
use std::time::{Duration, Instant};

use serde_json::{Map, Value, json};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::process::{Child, ChildStdin, ChildStdout, Command};
use tokio::sync::Semaphore;

use crate::args::{self, Phase};
use crate::cancel;
use crate::markers::Markers;
use crate::proto::{self, Era, Message, Outcome, Template};
use crate::stats::{CpuMark, Tally, memory};

/// How long a phase may take before the run fails: every loop below ends by count or by this.
const PHASE_LIMIT: Duration = Duration::from_secs(600);
/// How long the handshake and the probe's ping may take.
const ANSWER_LIMIT: Duration = Duration::from_secs(10);

pub fn run(opts: args::Stdio) -> Result<Map<String, Value>, String> {
    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().map_err(|e| e.to_string())?;
    rt.block_on(main(opts))
}

/// The server's stdout, read a line at a time. A line is kept until the next read, and a read cut short (by a
/// timeout) keeps what it had: `next` can be raced against a timer.
struct Lines {
    out: BufReader<ChildStdout>,
    line: Vec<u8>,
    complete: bool,
    non_json: u64,
}

impl Lines {
    async fn next(&mut self) -> Result<&[u8], String> {
        if self.complete {
            self.line.clear();
            self.complete = false;
        }
        let n = self.out.read_until(b'\n', &mut self.line).await.map_err(|e| format!("reading stdout: {e}"))?;
        if n == 0 && !self.line.ends_with(b"\n") {
            return Err("the server closed its stdout".into());
        }
        self.complete = true;
        Ok(&self.line)
    }
}

struct Pipe {
    child: Child,
    pid: Option<u32>,
    stdin: ChildStdin,
    lines: Lines,
    era: Era,
    next_id: u64,
    server_requests: u64,
}

impl Pipe {
    fn id(&mut self) -> u64 {
        self.next_id += 1;
        self.next_id
    }

    async fn write(&mut self, bytes: &[u8]) -> Result<(), String> {
        self.stdin.write_all(bytes).await.map_err(|e| format!("writing stdin: {e}"))
    }

    /// Send a request and wait for its answer, answering the server's own requests meanwhile.
    async fn request(&mut self, method: &str, params: &Value) -> Result<Value, String> {
        let id = self.id();
        let mut t = Template::new(method, params);
        t.set_id(id);
        t.bytes.push(b'\n');
        self.write(&t.bytes).await?;
        let answer = tokio::time::timeout(ANSWER_LIMIT, async {
            loop {
                let line = self.lines.next().await?;
                let Ok(v) = serde_json::from_slice::<Value>(line) else {
                    self.lines.non_json += 1;
                    continue;
                };
                if v.get("method").is_some() {
                    if let Some(rid) = v.get("id") {
                        self.server_requests += 1;
                        let no = proto::method_not_found(rid);
                        self.write(&no).await?;
                    }
                    continue;
                }
                if v["id"].as_u64() == Some(id) {
                    return Ok::<Value, String>(v);
                }
            }
        })
        .await
        .map_err(|_| format!("no answer to {method} within {ANSWER_LIMIT:?}"))??;
        Ok(answer)
    }

    async fn notify(&mut self, method: &str, params: Value) -> Result<(), String> {
        let mut n = proto::notification(method, params);
        n.push(b'\n');
        self.write(&n).await
    }

    /// Sequential calls: `warmup` unmeasured, then `calls` measured.
    async fn seq(&mut self, call: &mut Template, text: &str, warmup: u64, calls: u64) -> Result<Tally, String> {
        let mut tally = Tally::with_capacity(calls as usize);
        for i in 0..warmup + calls {
            let id = self.id();
            call.set_id(id);
            let sent = Instant::now();
            self.write(&call.bytes).await?;
            let outcome = loop {
                let line = self.lines.next().await?;
                match proto::classify(line, self.era, Some(text)) {
                    Message::Response { id: Some(got), outcome } if got == id => break outcome,
                    Message::Request { id } => {
                        self.server_requests += 1;
                        let no = proto::method_not_found(&id);
                        self.write(&no).await?;
                    }
                    _ => {}
                }
            };
            if i >= warmup {
                tally.record(outcome, sent.elapsed());
            }
        }
        Ok(tally)
    }

    /// `calls` calls with `depth` in flight: one future writes as the window allows, one reads; the two run
    /// together so that neither side's pipe can fill up and stall the other.
    async fn pipeline(&mut self, call: &mut Template, text: &str, calls: u64, depth: usize) -> Result<Tally, String> {
        let base = self.next_id + 1;
        self.next_id += calls;
        let window = Semaphore::new(depth);
        let sent: RefCell<Vec<Instant>> = RefCell::new(Vec::with_capacity(calls as usize));
        let era = self.era;
        let stdin = &mut self.stdin;
        let lines = &mut self.lines;
        let writer = async {
            for i in 0..calls {
                window.acquire().await.map_err(|e| e.to_string())?.forget();
                call.set_id(base + i);
                sent.borrow_mut().push(Instant::now());
                stdin.write_all(&call.bytes).await.map_err(|e| format!("writing stdin: {e}"))?;
            }
            Ok::<(), String>(())
        };
        let reader = async {
            let mut tally = Tally::with_capacity(calls as usize);
            let mut answered = vec![false; calls as usize];
            let mut left = calls;
            let mut server_requests = 0;
            while left > 0 {
                let line = lines.next().await?;
                match proto::classify(line, era, Some(text)) {
                    Message::Response { id: Some(id), outcome } if (base..base + calls).contains(&id) => {
                        let i = (id - base) as usize;
                        if std::mem::replace(&mut answered[i], true) {
                            continue;
                        }
                        let latency = sent.borrow()[i].elapsed();
                        tally.record(outcome, latency);
                        left -= 1;
                        window.add_permits(1);
                    }
                    // A server's request cannot be answered here (the writer has stdin): counted, left alone.
                    Message::Request { .. } => server_requests += 1,
                    _ => {}
                }
            }
            Ok::<_, String>((tally, server_requests))
        };
        let ((), (tally, server_requests)) = tokio::try_join!(writer, reader)?;
        self.server_requests += server_requests;
        Ok(tally)
    }

    /// The cancellation probe: a sleep call, `notifications/cancelled` after the delay, then listening.
    async fn cancel(&mut self, probe: &cancel::Settings, markers: &Markers) -> Result<Value, String> {
        let id = self.id();
        let mut t =
            Template::new("tools/call", &proto::call_params(self.era, &probe.tool, json!({"ms": probe.sleep_ms})));
        t.set_id(id);
        t.bytes.push(b'\n');
        let started = Instant::now();
        self.write(&t.bytes).await?;
        let mut response = None;
        let cancel_at = started + Duration::from_millis(probe.delay_ms);
        while let Ok(line) = tokio::time::timeout_at(cancel_at.into(), self.lines.next()).await {
            if let Some(v) = answer_to(line?, id) {
                response = Some((v, Instant::now()));
                break;
            }
        }
        let answered_before_cancel = response.is_some();
        if !answered_before_cancel {
            tokio::time::sleep_until(cancel_at.into()).await;
            let params = json!({"requestId": id, "reason": "mcpload cancellation probe"});
            self.notify("notifications/cancelled", params).await?;
            while !probe.over(markers, started, Instant::now()) {
                if let Ok(line) = tokio::time::timeout(Duration::from_millis(5), self.lines.next()).await
                    && let Some(v) = answer_to(line?, id)
                    && response.is_none()
                {
                    response = Some((v, Instant::now()));
                }
            }
        }
        let ping = self.request(self.era.ping_method(), &self.era.params(json!({}))).await;
        let ping_ok = ping.is_ok_and(|v| v.get("result").is_some());
        let seen = cancel::Seen { cancel_by: "notification", started, answered_before_cancel, response, ping_ok };
        Ok(cancel::report(probe, markers, seen))
    }
}

/// The message on `line`, if it answers `id`.
fn answer_to(line: &[u8], id: u64) -> Option<Value> {
    let v: Value = serde_json::from_slice(line).ok()?;
    (v.get("method").is_none() && v["id"].as_u64() == Some(id)).then_some(v)
}

async fn main(opts: args::Stdio) -> Result<Map<String, Value>, String> {
    let c = &opts.common;
    let mut child = Command::new(&opts.command[0])
        .args(&opts.command[1..])
        .stdin(Piped::piped())
        .stdout(Piped::piped())
        .stderr(Piped::piped())
        .kill_on_drop(true)
        .spawn()
        .map_err(|e| format!("starting {:?}: {e}", opts.command[0]))?;
    let markers = c.probe.markers();
    let stderr = markers.read_pipe(child.stderr.take().expect("piped"), c.server_log.clone());
    let mut pipe = Pipe {
        pid: child.id(),
        stdin: child.stdin.take().expect("piped"),
        lines: Lines {
            out: BufReader::with_capacity(1 << 16, child.stdout.take().expect("piped")),
            line: Vec::new(),
            complete: false,
            non_json: 0,
        },
        child,
        era: c.era,
        next_id: 0,
        server_requests: 0,
    };
    let mut out = Map::new();
    out.insert("transport".into(), "stdio".into());
    out.insert("era".into(), c.era.name().into());
    out.insert("target".into(), opts.command.join(" ").into());
    out.insert("server_pid".into(), pipe.pid.into());

    let result = phases(&opts, &mut pipe, &markers, &mut out).await;
    if let Some(pid) = pipe.pid {
        out.insert("server_mem".into(), memory(pid));
    }
    out.insert("non_json_stdout_lines".into(), pipe.lines.non_json.into());
    out.insert("server_requests_seen".into(), pipe.server_requests.into());
    // Close stdin: the server should exit; it gets two seconds before it is killed.
    drop(pipe.stdin);
    let exit = match tokio::time::timeout(Duration::from_secs(2), pipe.child.wait()).await {
        Ok(Ok(status)) => status.code().map_or(Value::Null, Value::from),
        _ => {
            let _ = pipe.child.kill().await;
            "killed".into()
        }
    };
    out.insert("exit".into(), exit);
    let _ = tokio::time::timeout(Duration::from_secs(1), stderr).await;
    result.map(|()| out)
}

async fn phases(
    opts: &args::Stdio,
    pipe: &mut Pipe,
    markers: &Markers,
    out: &mut Map<String, Value>,
) -> Result<(), String> {
    let c = &opts.common;
    let started = Instant::now();
    let hello = match c.era {
        Era::V2025 => {
            let answer = pipe.request("initialize", &proto::initialize_params()).await?;
            if answer.get("result").is_none() {
                return Err(format!("initialize failed: {}", proto::clip(&answer)));
            }
            pipe.notify("notifications/initialized", json!({})).await?;
            out.insert("protocol_version".into(), answer["result"]["protocolVersion"].clone());
            answer
        }
        Era::V2026 => {
            let answer = pipe.request("server/discover", &c.era.params(json!({}))).await?;
            proto::check_discover(&answer)?;
            out.insert("protocol_version".into(), proto::V2026.into());
            answer
        }
    };
    out.insert("init_ms".into(), crate::stats::round(started.elapsed().as_secs_f64() * 1e3, 3).into());
    out.insert("server_info".into(), proto::server_info(&hello));

    let mut call = Template::new("tools/call", &proto::call_params(c.era, &c.tool, json!({"text": c.text})));
    call.bytes.push(b'\n');
    let measured = c.has(Phase::Seq) || c.has(Phase::Pipeline);
    if measured {
        let warm = limited(pipe.seq(&mut call, &c.text, 0, opts.warmup)).await?;
        if warm.errors() > 0 && warm.ok() == 0 {
            let first = Outcome::ALL.iter().find(|o| warm.outcomes[**o as usize] > 0).expect("an outcome");
            return Err(format!("every warm-up call failed ({})", first.name()));
        }
    }
    if c.has(Phase::Seq) {
        let mark = CpuMark::now(pipe.pid);
        let t = Instant::now();
        let tally = limited(pipe.seq(&mut call, &c.text, 0, opts.calls)).await?;
        let elapsed = t.elapsed();
        out.insert("seq".into(), tally.report(elapsed, Some(CpuMark::now(pipe.pid).since(mark))).into());
    }
    if c.has(Phase::Pipeline) {
        let mark = CpuMark::now(pipe.pid);
        let t = Instant::now();
        let tally = limited(pipe.pipeline(&mut call, &c.text, opts.calls, opts.pipeline)).await?;
        let elapsed = t.elapsed();
        let mut report = tally.report(elapsed, Some(CpuMark::now(pipe.pid).since(mark)));
        report.insert("depth".into(), opts.pipeline.into());
        out.insert("pipeline".into(), report.into());
    }
    if c.has(Phase::Cancel) {
        let report = limited(pipe.cancel(&c.probe, markers)).await?;
        out.insert("cancel".into(), report);
    }
    Ok(())
}

async fn limited<T>(phase: impl Future<Output = Result<T, String>>) -> Result<T, String> {
    tokio::time::timeout(PHASE_LIMIT, phase).await.map_err(|_| format!("a phase took over {PHASE_LIMIT:?}"))?
}
