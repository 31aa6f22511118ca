//! Streamable HTTP: a probe session first, then `load` (`-c` sessions in a closed loop for `-d` seconds, through
//! reqwest or, with `--raw`, the hand-written client of [`crate::raw`]), then the cancellation probe (2025: a
//! `notifications/cancelled` POST in the session; 2026: the call's connection closed).

use std::time::{Duration, Instant};

use reqwest::header::{ACCEPT, CONTENT_TYPE, HeaderName, HeaderValue};
use serde_json::{Map, Value, json};

use crate::args::{self, Phase};
use crate::cancel;
use crate::proto::{self, Era, Message, Outcome, Template};
use crate::raw::{Conn, Head, SseScan, Target};
use crate::stats::{CpuMark, Tally, memory};

/// The longest one request may take, in any phase.
const REQUEST_LIMIT: Duration = Duration::from_secs(30);

pub fn run(opts: args::Http) -> Result<Map<String, Value>, String> {
    let mut builder = if opts.threads <= 1 {
        tokio::runtime::Builder::new_current_thread()
    } else {
        let mut b = tokio::runtime::Builder::new_multi_thread();
        b.worker_threads(opts.threads);
        b
    };
    let rt = builder.enable_all().build().map_err(|e| e.to_string())?;
    rt.block_on(main(opts))
}

/// The headers a request carries in `era` besides the content types: 2025 the session's id and negotiated
/// version (once there is a session); 2026 `MCP-Protocol-Version`, and for a request `Mcp-Method` and, for a
/// tools/call, `Mcp-Name`.
fn headers(
    era: Era,
    session: Option<&Session2025>,
    method: &str,
    name: Option<&str>,
    request: bool,
) -> Vec<(&'static str, String)> {
    let mut h = Vec::new();
    match era {
        Era::V2025 => {
            if let Some(s) = session {
                h.push(("MCP-Protocol-Version", s.version.clone()));
                h.push(("Mcp-Session-Id", s.id.clone()));
            }
        }
        Era::V2026 => {
            h.push(("MCP-Protocol-Version", proto::V2026.to_owned()));
            if request {
                h.push(("Mcp-Method", method.to_owned()));
                if let Some(name) = name {
                    h.push(("Mcp-Name", name.to_owned()));
                }
            }
        }
    }
    h
}

/// A 2025 session: its id and the version `initialize` settled on.
#[derive(Clone)]
struct Session2025 {
    id: String,
    version: String,
}

/// The message in a response body (JSON, or the SSE event) that answers `id`.
fn answer_in<'a>(sse: bool, body: &'a [u8], id: u64, scan: &mut SseScan, found: &mut Vec<u8>) -> Option<&'a [u8]> {
    if !sse {
        return Some(body);
    }
    found.clear();
    scan.feed(body, |data| {
        if found.is_empty() && answers(data, id) {
            found.extend_from_slice(data);
        }
    });
    None
}

fn answers(data: &[u8], id: u64) -> bool {
    matches!(proto::classify(data, Era::V2025, None), Message::Response { id: Some(got), .. } if got == id)
}

// ---- reqwest ----

/// A reqwest client of one server in one era (and, in 2025, one session).
#[derive(Clone)]
struct Web {
    client: reqwest::Client,
    target: Target,
    era: Era,
    session: Option<Session2025>,
}

/// A POST's outcome: its status and session header, and the message answering the request, if one did.
struct Posted {
    status: u16,
    session: Option<String>,
    answer: Option<Vec<u8>>,
}

impl Web {
    fn client() -> Result<reqwest::Client, String> {
        reqwest::Client::builder()
            .no_proxy()
            .tcp_nodelay(true)
            .timeout(REQUEST_LIMIT)
            .build()
            .map_err(|e| format!("building the HTTP client: {e}"))
    }

    fn header_list(&self, method: &str, name: Option<&str>, request: bool) -> Vec<(HeaderName, HeaderValue)> {
        headers(self.era, self.session.as_ref(), method, name, request)
            .into_iter()
            .filter_map(|(n, v)| Some((HeaderName::from_static(lower(n)), HeaderValue::from_str(&v).ok()?)))
            .collect()
    }

    /// POST `body`; with `want`, read the response (its JSON, or its events to the stream's end) for the answer.
    async fn post(
        &self,
        headers: &[(HeaderName, HeaderValue)],
        body: Vec<u8>,
        want: Option<u64>,
        scan: &mut SseScan,
    ) -> Result<Posted, String> {
        let mut req = self
            .client
            .post(&self.target.url)
            .header(CONTENT_TYPE, "application/json")
            .header(ACCEPT, "application/json, text/event-stream");
        for (n, v) in headers {
            req = req.header(n.clone(), v.clone());
        }
        let mut resp = req.body(body).send().await.map_err(|e| format!("POST: {e}"))?;
        let status = resp.status().as_u16();
        let session = resp.headers().get("mcp-session-id").and_then(|v| v.to_str().ok()).map(str::to_owned);
        let sse = resp
            .headers()
            .get(CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .is_some_and(|v| v.starts_with("text/event-stream"));
        let mut answer = None;
        if sse {
            *scan = SseScan::default();
            while let Some(chunk) = resp.chunk().await.map_err(|e| format!("reading the event stream: {e}"))? {
                scan.feed(&chunk, |data| {
                    if answer.is_none() && want.is_some_and(|id| answers(data, id)) {
                        answer = Some(data.to_vec());
                    }
                });
            }
        } else {
            let bytes = resp.bytes().await.map_err(|e| format!("reading the body: {e}"))?;
            if want.is_some() && !bytes.is_empty() {
                answer = Some(bytes.to_vec());
            }
        }
        Ok(Posted { status, session, answer })
    }

    /// A request with a JSON answer; `Err` when there is none.
    async fn request(&self, method: &str, params: &Value, id: u64) -> Result<Value, String> {
        let mut t = Template::new(method, params);
        t.set_id(id);
        let h = self.header_list(method, None, true);
        let posted = self.post(&h, t.bytes, Some(id), &mut SseScan::default()).await?;
        let answer = posted.answer.ok_or_else(|| format!("{method}: HTTP {} and no answer", posted.status))?;
        serde_json::from_slice(&answer).map_err(|e| format!("{method}: the answer is not JSON: {e}"))
    }

    /// Open a client: 2025 `initialize` and `notifications/initialized`, 2026 `server/discover`.
    async fn open(client: reqwest::Client, target: Target, era: Era) -> Result<(Web, Value), String> {
        let mut web = Web { client, target, era, session: None };
        match era {
            Era::V2025 => {
                let mut t = Template::new("initialize", &proto::initialize_params());
                t.set_id(0);
                let posted = web.post(&[], t.bytes, Some(0), &mut SseScan::default()).await?;
                let answer: Value = posted
                    .answer
                    .as_deref()
                    .and_then(|a| serde_json::from_slice(a).ok())
                    .ok_or_else(|| format!("initialize: HTTP {} and no answer", posted.status))?;
                if answer.get("result").is_none() {
                    return Err(format!("initialize failed: {}", proto::clip(&answer)));
                }
                let id = posted.session.ok_or("initialize: no Mcp-Session-Id in the answer")?;
                let version = answer["result"]["protocolVersion"].as_str().unwrap_or(proto::V2025).to_owned();
                web.session = Some(Session2025 { id, version });
                let h = web.header_list("notifications/initialized", None, false);
                let body = proto::notification("notifications/initialized", json!({}));
                let posted = web.post(&h, body, None, &mut SseScan::default()).await?;
                if !(200..300).contains(&posted.status) {
                    return Err(format!("notifications/initialized: HTTP {}", posted.status));
                }
                Ok((web, answer))
            }
            Era::V2026 => {
                let answer = web.request("server/discover", &era.params(json!({})), 0).await?;
                proto::check_discover(&answer)?;
                Ok((web, answer))
            }
        }
    }
}

/// Header names as reqwest wants them, lower case.
fn lower(name: &'static str) -> &'static str {
    match name {
        "MCP-Protocol-Version" => "mcp-protocol-version",
        "Mcp-Session-Id" => "mcp-session-id",
        "Mcp-Method" => "mcp-method",
        "Mcp-Name" => "mcp-name",
        other => other,
    }
}

// ---- the load phase ----

/// One session of the load phase, through either client.
enum Caller {
    Web { web: Web, headers: Vec<(HeaderName, HeaderValue)>, call: Template, scan: SseScan },
    Raw { target: Target, conn: Option<Conn>, call: Template, scan: SseScan, found: Vec<u8> },
}

struct Load {
    target: Target,
    era: Era,
    tool: String,
    text: String,
    raw: bool,
}

impl Load {
    fn call_body(&self) -> Template {
        Template::new("tools/call", &proto::call_params(self.era, &self.tool, json!({"text": self.text})))
    }

    /// A session ready to call: the handshake made (2025), the call serialized.
    async fn open(&self, client: &reqwest::Client) -> Result<Caller, String> {
        if self.raw {
            // The raw session makes its handshake on its own connection, as a client of its own would.
            let mut conn = Conn::connect(self.target.addr).await.map_err(|e| format!("connecting: {e}"))?;
            let session = match self.era {
                Era::V2025 => Some(raw_handshake(&mut conn, &self.target).await?),
                Era::V2026 => None,
            };
            let h = headers(self.era, session.as_ref(), "tools/call", Some(&self.tool), true);
            let call = self.target.post(&h, self.call_body());
            return Ok(Caller::Raw {
                target: self.target.clone(),
                conn: Some(conn),
                call,
                scan: SseScan::default(),
                found: Vec::new(),
            });
        }
        let web = match self.era {
            Era::V2025 => Web::open(client.clone(), self.target.clone(), self.era).await?.0,
            Era::V2026 => Web { client: client.clone(), target: self.target.clone(), era: self.era, session: None },
        };
        let headers = web.header_list("tools/call", Some(&self.tool), true);
        Ok(Caller::Web { web, headers, call: self.call_body(), scan: SseScan::default() })
    }
}

/// 2025 over a raw connection: `initialize` (the session id from its head), then `notifications/initialized`.
async fn raw_handshake(conn: &mut Conn, target: &Target) -> Result<Session2025, String> {
    let io = |e: std::io::Error| format!("handshake: {e}");
    let mut init = Template::new("initialize", &proto::initialize_params());
    init.set_id(0);
    conn.send(&target.post(&[], init).bytes).await.map_err(io)?;
    let head = conn.read_response().await.map_err(io)?;
    let mut scan = SseScan::default();
    let mut found = Vec::new();
    let answer = answer_in(head.sse, &conn.body, 0, &mut scan, &mut found).unwrap_or(&found);
    let answer: Value = serde_json::from_slice(answer).map_err(|_| format!("initialize: HTTP {}", head.status))?;
    let id = head.session.ok_or("initialize: no Mcp-Session-Id")?;
    let version = answer["result"]["protocolVersion"].as_str().unwrap_or(proto::V2025).to_owned();
    let session = Session2025 { id, version };
    let h = headers(Era::V2025, Some(&session), "notifications/initialized", None, false);
    let body = proto::notification("notifications/initialized", json!({}));
    conn.send(&target.post_bytes(&h, &body)).await.map_err(io)?;
    let head = conn.read_response().await.map_err(io)?;
    if !(200..300).contains(&head.status) {
        return Err(format!("notifications/initialized: HTTP {}", head.status));
    }
    Ok(session)
}

impl Caller {
    async fn call(&mut self, id: u64, era: Era, text: &str) -> Outcome {
        match self {
            Caller::Web { web, headers, call, scan } => {
                call.set_id(id);
                match web.post(headers, call.bytes.clone(), Some(id), scan).await {
                    Err(_) => Outcome::Transport,
                    Ok(Posted { answer: None, .. }) => Outcome::BadResponse,
                    Ok(Posted { answer: Some(a), .. }) => checked(&a, id, era, text),
                }
            }
            Caller::Raw { target, conn, call, scan, found } => {
                if conn.is_none() {
                    match Conn::connect(target.addr).await {
                        Ok(c) => *conn = Some(c),
                        Err(_) => {
                            // Bounded by the phase's end; not a busy loop while the server is away.
                            tokio::time::sleep(Duration::from_millis(10)).await;
                            return Outcome::Transport;
                        }
                    }
                }
                let c = conn.as_mut().expect("connected");
                call.set_id(id);
                let head: Head = match tokio::time::timeout(REQUEST_LIMIT, async {
                    c.send(&call.bytes).await?;
                    c.read_response().await
                })
                .await
                {
                    Ok(Ok(head)) => head,
                    _ => {
                        *conn = None;
                        return Outcome::Transport;
                    }
                };
                let outcome = if head.status != 200 {
                    Outcome::BadResponse
                } else {
                    match answer_in(head.sse, &c.body, id, scan, found) {
                        Some(body) => checked(body, id, era, text),
                        None if found.is_empty() => Outcome::BadResponse,
                        None => checked(found, id, era, text),
                    }
                };
                if head.close {
                    *conn = None;
                }
                outcome
            }
        }
    }
}

fn checked(answer: &[u8], id: u64, era: Era, text: &str) -> Outcome {
    match proto::classify(answer, era, Some(text)) {
        Message::Response { id: Some(got), outcome } if got == id => outcome,
        _ => Outcome::BadResponse,
    }
}

async fn load(opts: &args::Http, target: &Target, client: &reqwest::Client) -> Result<Map<String, Value>, String> {
    let c = &opts.common;
    let spec = std::sync::Arc::new(Load {
        target: target.clone(),
        era: c.era,
        tool: c.tool.clone(),
        text: c.text.clone(),
        raw: opts.raw,
    });
    // Every session opened first, so that the measured window holds calls only.
    let mut opening = Vec::new();
    for _ in 0..opts.concurrency {
        let spec = spec.clone();
        let client = client.clone();
        opening.push(tokio::spawn(async move { spec.open(&client).await }));
    }
    let mut callers = Vec::new();
    for o in opening {
        callers.push(o.await.map_err(|e| e.to_string())??);
    }
    let t0 = Instant::now() + opts.warmup;
    let t1 = t0 + opts.duration;
    let pid = opts.server_pid;
    let sampler = tokio::spawn(async move {
        tokio::time::sleep_until(t0.into()).await;
        let start = CpuMark::now(pid);
        tokio::time::sleep_until(t1.into()).await;
        CpuMark::now(pid).since(start)
    });
    let mut sessions = Vec::new();
    for mut caller in callers {
        let spec = spec.clone();
        sessions.push(tokio::spawn(async move {
            let mut tally = Tally::default();
            let mut id = 0;
            loop {
                let start = Instant::now();
                if start >= t1 {
                    break;
                }
                id += 1;
                let outcome = caller.call(id, spec.era, &spec.text).await;
                let end = Instant::now();
                if end >= t0 && end <= t1 {
                    tally.record(outcome, end - start);
                }
            }
            tally
        }));
    }
    let mut tally = Tally::default();
    for s in sessions {
        tally.merge(s.await.map_err(|e| e.to_string())?);
    }
    let cpu = sampler.await.map_err(|e| e.to_string())?;
    let mut report = tally.report(opts.duration, Some(cpu));
    report.insert("http_client".into(), if opts.raw { "raw" } else { "reqwest" }.into());
    report.insert("sessions".into(), opts.concurrency.into());
    report.insert("threads".into(), opts.threads.into());
    report.insert("warmup_s".into(), opts.warmup.as_secs_f64().into());
    Ok(report)
}

// ---- the cancellation probe ----

async fn cancel_probe(opts: &args::Http, target: &Target, client: &reqwest::Client) -> Result<Value, String> {
    let c = &opts.common;
    let probe = &c.probe;
    let markers = probe.markers();
    let _following = c.server_log.clone().map(|p| markers.follow_file(p));
    let id = 1;
    let mut call = Template::new("tools/call", &proto::call_params(c.era, &probe.tool, json!({"ms": probe.sleep_ms})));
    call.set_id(id);
    let cancel_at = |started: Instant| started + Duration::from_millis(probe.delay_ms);
    let (web, _) = Web::open(client.clone(), target.clone(), c.era).await?;
    let (seen_by, started, answered_before_cancel, response) = match c.era {
        Era::V2025 => {
            let (tx, mut rx) = tokio::sync::oneshot::channel();
            let h = web.header_list("tools/call", Some(&probe.tool), true);
            let caller = web.clone();
            let body = call.bytes.clone();
            let started = Instant::now();
            let task = tokio::spawn(async move {
                let posted = caller.post(&h, body, Some(id), &mut SseScan::default()).await;
                let answer = posted.ok().and_then(|p| p.answer).and_then(|a| serde_json::from_slice::<Value>(&a).ok());
                if let Some(a) = answer {
                    let _ = tx.send((a, Instant::now()));
                }
            });
            let mut response = None;
            // Whether the call's task is over (its answer in `response`, or none to come).
            let mut over = false;
            tokio::select! {
                r = &mut rx => (response, over) = (r.ok(), true),
                () = tokio::time::sleep_until(cancel_at(started).into()) => {}
            }
            let early = response.is_some();
            if !early {
                let h = web.header_list("notifications/cancelled", None, false);
                let body = proto::notification(
                    "notifications/cancelled",
                    json!({"requestId": id, "reason": "mcpload cancellation probe"}),
                );
                web.post(&h, body, None, &mut SseScan::default()).await?;
                while !probe.over(&markers, started, Instant::now()) {
                    if over {
                        tokio::time::sleep(Duration::from_millis(5)).await;
                    } else if let Ok(r) = tokio::time::timeout(Duration::from_millis(5), &mut rx).await {
                        (response, over) = (r.ok(), true);
                    }
                }
            }
            task.abort();
            ("notification", started, early, response)
        }
        Era::V2026 => {
            // Cancelling in 2026 is closing the call's connection: a connection of our own, closed for sure.
            let mut conn = Conn::connect(target.addr).await.map_err(|e| format!("connecting: {e}"))?;
            let h = headers(c.era, None, "tools/call", Some(&probe.tool), true);
            let started = Instant::now();
            conn.send(&target.post(&h, call).bytes).await.map_err(|e| format!("sending the sleep call: {e}"))?;
            let mut response = None;
            if let Ok(Ok(head)) = tokio::time::timeout_at(cancel_at(started).into(), conn.read_response()).await {
                let mut found = Vec::new();
                let body = answer_in(head.sse, &conn.body, id, &mut SseScan::default(), &mut found).unwrap_or(&found);
                response = Some((serde_json::from_slice(body).unwrap_or(Value::Null), Instant::now()));
            }
            let early = response.is_some();
            drop(conn);
            while !early && !probe.over(&markers, started, Instant::now()) {
                tokio::time::sleep(Duration::from_millis(5)).await;
            }
            ("close", started, early, response)
        }
    };
    let ping = web.request(c.era.ping_method(), &c.era.params(json!({})), 2).await;
    let ping_ok = ping.is_ok_and(|v| v.get("result").is_some());
    let seen = cancel::Seen { cancel_by: seen_by, started, answered_before_cancel, response, ping_ok };
    Ok(cancel::report(probe, &markers, seen))
}

async fn main(opts: args::Http) -> Result<Map<String, Value>, String> {
    let target = Target::parse(&opts.url)?;
    let c = &opts.common;
    let client = Web::client()?;
    let mut out = Map::new();
    out.insert("transport".into(), "http".into());
    out.insert("era".into(), c.era.name().into());
    out.insert("target".into(), opts.url.clone().into());
    out.insert("server_pid".into(), opts.server_pid.into());
    let started = Instant::now();
    let (_, hello) = Web::open(client.clone(), target.clone(), c.era).await?;
    out.insert("init_ms".into(), crate::stats::round(started.elapsed().as_secs_f64() * 1e3, 3).into());
    out.insert("server_info".into(), proto::server_info(&hello));
    let version = match c.era {
        Era::V2025 => hello["result"]["protocolVersion"].clone(),
        Era::V2026 => proto::V2026.into(),
    };
    out.insert("protocol_version".into(), version);
    if c.has(Phase::Load) {
        out.insert("load".into(), load(&opts, &target, &client).await?.into());
        if let Some(pid) = opts.server_pid {
            out.insert("server_mem".into(), memory(pid));
        }
    }
    if c.has(Phase::Cancel) {
        out.insert("cancel".into(), cancel_probe(&opts, &target, &client).await?);
    }
    if let Some(pid) = opts.server_pid {
        out.insert("server_mem_end".into(), memory(pid));
        if !c.has(Phase::Load) {
            out.insert("server_mem".into(), memory(pid));
        }
    }
    Ok(out)
}
