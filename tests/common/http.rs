//! A testbed served over Streamable HTTP, and a small client that speaks the transport by hand (headers, SSE
//! events), checking every message the server sends against the schema of its era (2025-11-25, or 2026-07-28 for
//! the `v2026_*` helpers).

use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};
use std::sync::{mpsc, Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::{json, Value};

use super::schema;

/// A testbed process serving HTTP on a free loopback port.
pub struct HttpServer {
    child: Child,
    pub url: String,
    stderr: Arc<Mutex<Vec<String>>>,
}

impl HttpServer {
    pub fn start(flags: &[&str]) -> HttpServer {
        HttpServer::start_binary(super::testbed(), flags)
    }

    /// Starts another server binary that takes `--http ADDR`.
    pub fn start_binary(binary: std::path::PathBuf, flags: &[&str]) -> HttpServer {
        HttpServer::spawn(binary, flags, &[])
    }

    /// Starts another server binary that takes `--http ADDR`, with these environment variables set.
    pub fn start_binary_with_env(binary: std::path::PathBuf, flags: &[&str], env: &[(&str, &str)]) -> HttpServer {
        HttpServer::spawn(binary, flags, env)
    }

    /// Starts the testbed with these environment variables set (such as `MCP_REQUEST_STATE_KEY`).
    pub fn start_with_env(flags: &[&str], env: &[(&str, &str)]) -> HttpServer {
        HttpServer::spawn(super::testbed(), flags, env)
    }

    fn spawn(binary: std::path::PathBuf, flags: &[&str], env: &[(&str, &str)]) -> HttpServer {
        let mut child = Command::new(binary)
            .args(["--http", "127.0.0.1:0"])
            .args(flags)
            .env("RUST_LOG", "info")
            .envs(env.iter().copied())
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .expect("spawn the testbed");
        let stderr = child.stderr.take().unwrap();
        let lines: Arc<Mutex<Vec<String>>> = Arc::default();
        let (tx, rx) = mpsc::channel();
        let lines_w = lines.clone();
        std::thread::spawn(move || {
            for line in BufReader::new(stderr).lines() {
                let Ok(line) = line else { break };
                if let Some(addr) = line.split("address=").nth(1) {
                    let _ = tx.send(addr.split_whitespace().next().unwrap_or_default().to_owned());
                }
                // `--log-format json`: `"address":"127.0.0.1:PORT"`.
                if let Some(addr) = line.split("\"address\":\"").nth(1) {
                    let _ = tx.send(addr.split('"').next().unwrap_or_default().to_owned());
                }
                lines_w.lock().unwrap().push(line);
            }
        });
        let addr = rx.recv_timeout(Duration::from_secs(10)).expect("the server says where it listens");
        HttpServer { child, url: format!("http://{addr}/mcp"), stderr: lines }
    }

    pub fn stderr_text(&self) -> String {
        self.stderr.lock().unwrap().join("\n")
    }

    pub async fn wait_stderr(&self, needle: &str, timeout: Duration) -> bool {
        let deadline = Instant::now() + timeout;
        while Instant::now() < deadline {
            if self.stderr.lock().unwrap().iter().any(|l| l.contains(needle)) {
                return true;
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        false
    }

    /// The `host:port` its `--metrics` listener bound (started with `--metrics 127.0.0.1:0`: the port the kernel
    /// gave, read from its log line, so no other test can take it between a probe and the bind).
    pub async fn metrics_address(&self) -> String {
        assert!(self.wait_stderr("serving metrics at", Duration::from_secs(10)).await, "{}", self.stderr_text());
        let line = self.stderr.lock().unwrap().iter().find(|l| l.contains("serving metrics at")).cloned();
        let line = line.unwrap_or_default();
        let address = line.split("http://").nth(1).and_then(|rest| rest.split('/').next());
        address.unwrap_or_else(|| panic!("no address in {line:?}")).to_owned()
    }

    /// Waits until one stderr line contains every one of `needles`.
    pub async fn wait_stderr_line(&self, needles: &[&str], timeout: Duration) -> bool {
        let deadline = Instant::now() + timeout;
        while Instant::now() < deadline {
            if self.stderr.lock().unwrap().iter().any(|l| needles.iter().all(|n| l.contains(n))) {
                return true;
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        false
    }

    /// The server's process id.
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// Waits (up to `within`) for the process to exit; its status, or `None` if it still runs.
    pub fn wait_exit(&mut self, within: Duration) -> Option<std::process::ExitStatus> {
        let deadline = Instant::now() + within;
        loop {
            match self.child.try_wait() {
                Ok(Some(status)) => return Some(status),
                Ok(None) if Instant::now() < deadline => std::thread::sleep(Duration::from_millis(10)),
                _ => return None,
            }
        }
    }

    /// The `host:port` the server listens on.
    pub fn authority(&self) -> &str {
        self.url.trim_start_matches("http://").trim_end_matches("/mcp")
    }

    pub fn client(&self) -> Client {
        Client { http: reqwest::Client::new(), url: self.url.clone(), session: None }
    }
}

impl Drop for HttpServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A client of one session.
#[derive(Clone)]
pub struct Client {
    pub http: reqwest::Client,
    pub url: String,
    pub session: Option<String>,
}

pub fn request(id: impl Into<Value>, method: &str, params: Value) -> Value {
    json!({"jsonrpc": "2.0", "id": id.into(), "method": method, "params": params})
}

pub fn notification(method: &str, params: Value) -> Value {
    json!({"jsonrpc": "2.0", "method": method, "params": params})
}

impl Client {
    /// A POST with the headers a conforming client sends.
    pub fn post(&self, body: &Value) -> reqwest::RequestBuilder {
        let mut r = self
            .http
            .post(&self.url)
            .header("content-type", "application/json")
            .header("accept", "application/json, text/event-stream")
            .header("mcp-protocol-version", "2025-11-25")
            .body(body.to_string());
        if let Some(s) = &self.session {
            r = r.header("mcp-session-id", s);
        }
        r
    }

    /// A POST with exactly these headers (plus the session id) and this body, for requests a conforming client
    /// would not send.
    pub async fn raw_post(&self, headers: &[(&str, &str)], body: impl Into<reqwest::Body>) -> reqwest::Response {
        let mut r = self.http.post(&self.url).body(body);
        for (name, value) in headers {
            r = r.header(*name, *value);
        }
        if let Some(s) = &self.session {
            r = r.header("mcp-session-id", s);
        }
        r.send().await.expect("POST")
    }

    pub async fn send(&self, body: &Value) -> reqwest::Response {
        self.post(body).send().await.expect("POST")
    }

    /// Initializes, keeping the session id.
    pub async fn initialize(&mut self, capabilities: Value) -> Value {
        let init = request(
            0,
            "initialize",
            json!({"protocolVersion": "2025-11-25", "capabilities": capabilities, "clientInfo": {"name": "http-tests", "version": "0"}}),
        );
        let response = self.send(&init).await;
        assert_eq!(response.status(), 200);
        self.session = response.headers().get("mcp-session-id").map(|v| v.to_str().unwrap().to_owned());
        let result = Body::of(response).await.response(&json!(0), "initialize").await;
        let ok = self.send(&notification("notifications/initialized", json!({}))).await;
        assert_eq!(ok.status(), 202);
        result
    }

    /// Sends a request and returns its response, reading (and returning) the stream's other messages too.
    pub async fn call(&self, id: i64, method: &str, params: Value) -> (Value, Vec<Value>) {
        let response = self.send(&request(id, method, params)).await;
        assert_eq!(response.status(), 200, "{method}");
        let mut body = Body::of(response).await;
        let answer = body.response(&json!(id), method).await;
        (answer, body.seen)
    }

    /// Opens the standalone GET stream (or resumes a stream with `last_event_id`).
    pub async fn get(&self, last_event_id: Option<&str>) -> reqwest::Response {
        let mut r =
            self.http.get(&self.url).header("accept", "text/event-stream").header("mcp-protocol-version", "2025-11-25");
        if let Some(s) = &self.session {
            r = r.header("mcp-session-id", s);
        }
        if let Some(id) = last_event_id {
            r = r.header("last-event-id", id);
        }
        r.send().await.expect("GET")
    }
}

/// One SSE event.
#[derive(Debug, Clone)]
pub struct Event {
    pub id: Option<String>,
    pub retry: Option<String>,
    pub data: String,
}

/// A response body: an SSE stream or one JSON message.
pub struct Body {
    response: Option<reqwest::Response>,
    buffer: String,
    json: Option<Value>,
    /// Messages read while looking for something else.
    pub seen: Vec<Value>,
    pub events: Vec<Event>,
    /// The comments (keep-alives: lines starting with `:`) read so far; they are no events.
    pub comments: usize,
}

impl Body {
    pub async fn of(response: reqwest::Response) -> Body {
        let sse = response
            .headers()
            .get("content-type")
            .is_some_and(|v| v.to_str().unwrap().starts_with("text/event-stream"));
        if sse {
            Body {
                response: Some(response),
                buffer: String::new(),
                json: None,
                seen: Vec::new(),
                events: Vec::new(),
                comments: 0,
            }
        } else {
            let text = response.text().await.unwrap();
            let value: Value = serde_json::from_str(&text).unwrap_or_else(|e| panic!("not JSON ({e}): {text}"));
            Body {
                response: None,
                buffer: String::new(),
                json: Some(value),
                seen: Vec::new(),
                events: Vec::new(),
                comments: 0,
            }
        }
    }

    /// The next SSE event, `None` when the stream ends (or after `timeout`).
    pub async fn next_event(&mut self, timeout: Duration) -> Option<Event> {
        let deadline = Instant::now() + timeout;
        loop {
            if let Some(end) = self.buffer.find("\n\n") {
                let raw: String = self.buffer.drain(..end + 2).collect();
                if raw.lines().all(|line| line.starts_with(':') || line.is_empty()) {
                    self.comments += 1;
                    continue;
                }
                let mut event = Event { id: None, retry: None, data: String::new() };
                for line in raw.lines() {
                    if let Some(v) = line.strip_prefix("id: ") {
                        event.id = Some(v.to_owned());
                    } else if let Some(v) = line.strip_prefix("retry: ") {
                        event.retry = Some(v.to_owned());
                    } else if let Some(v) = line.strip_prefix("data:") {
                        event.data.push_str(v.strip_prefix(' ').unwrap_or(v));
                    }
                }
                self.events.push(event.clone());
                return Some(event);
            }
            let response = self.response.as_mut()?;
            let left = deadline.saturating_duration_since(Instant::now());
            match tokio::time::timeout(left, response.chunk()).await {
                Ok(Ok(Some(chunk))) => self.buffer.push_str(&String::from_utf8_lossy(&chunk)),
                Ok(_) => {
                    self.response = None;
                    return None;
                }
                Err(_) => return None,
            }
        }
    }

    /// The next JSON-RPC message (skipping priming events), checked against the schema.
    pub async fn next_message(&mut self, timeout: Duration) -> Option<Value> {
        if let Some(v) = self.json.take() {
            schema::check_server_message(&v, None).unwrap();
            return Some(v);
        }
        loop {
            let event = self.next_event(timeout).await?;
            if event.data.is_empty() {
                assert!(event.id.is_some(), "a priming event carries an id");
                continue;
            }
            let value: Value = serde_json::from_str(&event.data).unwrap();
            schema::check_server_message(&value, None).unwrap();
            return Some(value);
        }
    }

    /// Reads until the response to `id`, keeping the rest in `seen`; checks the result against its schema.
    pub async fn response(&mut self, id: &Value, method: &str) -> Value {
        loop {
            let m =
                self.next_message(Duration::from_secs(10)).await.unwrap_or_else(|| panic!("no response to {method}"));
            if m.get("id") == Some(id) && m.get("method").is_none() {
                schema::check_server_message(&m, Some(method)).unwrap();
                return m;
            }
            self.seen.push(m);
        }
    }

    /// Whether the stream ended (no more events within `timeout`, and the body closed).
    pub async fn ended(&mut self, timeout: Duration) -> bool {
        while self.next_event(timeout).await.is_some() {}
        self.response.is_none()
    }
}

// ---- 2026-07-28 ----

/// The standard headers a conforming 2026-07-28 client sends with `body`: the media types, `MCP-Protocol-Version`
/// from `_meta` (when the body has one), `Mcp-Method` for a request, and `Mcp-Name` for `tools/call`, `prompts/get`
/// (`params.name`), `resources/read` (`params.uri`) and the Tasks extension's `tasks/get|update|cancel`
/// (`params.taskId`).
pub fn v2026_headers(body: &Value) -> Vec<(String, String)> {
    let mut headers = vec![
        ("Content-Type".to_owned(), "application/json".to_owned()),
        ("Accept".to_owned(), "application/json, text/event-stream".to_owned()),
    ];
    let version = body["params"]["_meta"][super::v2026::META_VERSION].as_str().unwrap_or(super::v2026::VERSION);
    headers.push(("MCP-Protocol-Version".to_owned(), version.to_owned()));
    if let (Some(method), Some(_)) = (body["method"].as_str(), body.get("id")) {
        headers.push(("Mcp-Method".to_owned(), method.to_owned()));
        let name = match method {
            "tools/call" | "prompts/get" => body["params"]["name"].as_str(),
            "resources/read" => body["params"]["uri"].as_str(),
            "tasks/get" | "tasks/update" | "tasks/cancel" => body["params"]["taskId"].as_str(),
            _ => None,
        };
        if let Some(name) = name {
            headers.push(("Mcp-Name".to_owned(), name.to_owned()));
        }
    }
    headers
}

/// The standard headers with `overrides` applied (names compared without case): `Some(value)` sets a header,
/// `None` removes it.
pub fn v2026_headers_with(body: &Value, overrides: &[(&str, Option<&str>)]) -> Vec<(String, String)> {
    let mut headers = v2026_headers(body);
    for (name, value) in overrides {
        headers.retain(|(n, _)| !n.eq_ignore_ascii_case(name));
        if let Some(v) = value {
            headers.push(((*name).to_owned(), (*v).to_owned()));
        }
    }
    headers
}

impl Client {
    /// A 2026-07-28 POST: the standard headers of [`v2026_headers`], never a session id.
    pub fn v2026_post(&self, body: &Value) -> reqwest::RequestBuilder {
        self.v2026_post_with(body, &[])
    }

    /// A 2026-07-28 POST with some standard headers changed or removed (see [`v2026_headers_with`]).
    pub fn v2026_post_with(&self, body: &Value, overrides: &[(&str, Option<&str>)]) -> reqwest::RequestBuilder {
        let mut r = self.http.post(&self.url).body(body.to_string());
        for (name, value) in v2026_headers_with(body, overrides) {
            r = r.header(name, value);
        }
        r
    }

    pub async fn v2026_send(&self, body: &Value) -> reqwest::Response {
        self.v2026_post(body).send().await.expect("POST")
    }

    pub async fn v2026_send_with(&self, body: &Value, overrides: &[(&str, Option<&str>)]) -> reqwest::Response {
        self.v2026_post_with(body, overrides).send().await.expect("POST")
    }

    /// Sends a 2026 request declaring `capabilities`; returns the HTTP status, the response and the notifications
    /// that came before it on the response's stream. Every message is checked against the 2026-07-28 schema, and no
    /// session id may come back.
    pub async fn v2026_exchange(
        &self,
        id: impl Into<Value>,
        method: &str,
        params: Value,
        capabilities: Value,
    ) -> (u16, Value, Vec<Value>) {
        let id = id.into();
        let body = super::v2026::request(id.clone(), method, params, capabilities);
        let response = self.v2026_send(&body).await;
        let status = response.status().as_u16();
        assert!(response.headers().get("mcp-session-id").is_none(), "a 2026 response carries no session id");
        let mut body = Body::of(response).await;
        let answer = body.v2026_response(&id, method).await;
        (status, answer, body.seen)
    }

    /// A 2026 request that must succeed with HTTP 200: its response (result or error) and its stream's notifications.
    pub async fn v2026_call(&self, id: impl Into<Value>, method: &str, params: Value) -> (Value, Vec<Value>) {
        let (status, answer, seen) = self.v2026_exchange(id, method, params, json!({})).await;
        assert_eq!(status, 200, "{method}: {answer}");
        (answer, seen)
    }
}

impl Body {
    /// The next JSON-RPC message of a 2026 response to a `method` request, skipping SSE comments (keep-alives),
    /// checked against the 2026-07-28 schema.
    pub async fn next_v2026_message(&mut self, timeout: Duration, method: &str) -> Option<Value> {
        if let Some(v) = self.json.take() {
            super::schema::check_v2026_message(&v, Some(method)).unwrap();
            return Some(v);
        }
        loop {
            let event = self.next_event(timeout).await?;
            if event.data.is_empty() {
                assert!(event.id.is_none(), "2026 streams have no event ids (no resumability): {event:?}");
                continue;
            }
            assert!(event.id.is_none(), "2026 streams have no event ids (no resumability): {event:?}");
            let value: Value = serde_json::from_str(&event.data).unwrap();
            super::schema::check_v2026_message(&value, Some(method)).unwrap();
            return Some(value);
        }
    }

    /// Reads a 2026 response until the response to `id`, keeping the notifications before it in `seen`.
    pub async fn v2026_response(&mut self, id: &Value, method: &str) -> Value {
        loop {
            let m = self
                .next_v2026_message(Duration::from_secs(10), method)
                .await
                .unwrap_or_else(|| panic!("no response to {method}"));
            if m.get("id") == Some(id) && m.get("method").is_none() {
                return m;
            }
            assert!(m.get("id").is_none(), "only notifications come before the response: {m}");
            self.seen.push(m);
        }
    }
}

/// A response read off a raw socket.
#[derive(Debug)]
pub struct RawResponse {
    pub status: u16,
    pub headers: Vec<(String, String)>,
    pub body: String,
}

impl RawResponse {
    /// A header, by name without case.
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers.iter().find(|(n, _)| n.eq_ignore_ascii_case(name)).map(|(_, v)| v.as_str())
    }

    /// The body as JSON.
    pub fn json(&self) -> Value {
        serde_json::from_str(&self.body).unwrap_or_else(|e| panic!("not JSON ({e}): {self:?}"))
    }
}

/// One HTTP/1.1 request written byte for byte on a fresh connection (header names exactly as given, values with their
/// whitespace): what an HTTP client library would normalise away. The connection is closed after the response.
pub fn raw_http(authority: &str, method: &str, headers: &[(&str, &str)], body: &str) -> RawResponse {
    use std::io::{Read, Write};
    let mut stream = std::net::TcpStream::connect(authority).expect("connect");
    stream.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    let mut request = format!("{method} /mcp HTTP/1.1\r\nHost: {authority}\r\nConnection: close\r\n");
    for (name, value) in headers {
        request.push_str(&format!("{name}: {value}\r\n"));
    }
    request.push_str(&format!("Content-Length: {}\r\n\r\n{body}", body.len()));
    stream.write_all(request.as_bytes()).unwrap();
    let mut raw = Vec::new();
    stream.read_to_end(&mut raw).expect("read the response");
    let raw = String::from_utf8_lossy(&raw).into_owned();
    let (head, rest) = raw.split_once("\r\n\r\n").unwrap_or_else(|| panic!("no end of headers: {raw}"));
    let mut lines = head.split("\r\n");
    let status = lines.next().and_then(|l| l.split(' ').nth(1)).and_then(|s| s.parse().ok()).expect("a status line");
    let headers: Vec<(String, String)> =
        lines.filter_map(|l| l.split_once(':')).map(|(n, v)| (n.trim().to_owned(), v.trim().to_owned())).collect();
    let chunked =
        headers.iter().any(|(n, v)| n.eq_ignore_ascii_case("transfer-encoding") && v.eq_ignore_ascii_case("chunked"));
    let body = if chunked { dechunk(rest) } else { rest.to_owned() };
    RawResponse { status, headers, body }
}

fn dechunk(mut rest: &str) -> String {
    let mut out = String::new();
    while let Some((size, after)) = rest.split_once("\r\n") {
        let size = usize::from_str_radix(size.split(';').next().unwrap_or_default().trim(), 16).unwrap_or(0);
        if size == 0 || after.len() < size {
            break;
        }
        out.push_str(&after[..size]);
        rest = after[size..].trim_start_matches("\r\n");
    }
    out
}
