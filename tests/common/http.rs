//! A testbed served over Streamable HTTP, and a small client that speaks the transport by hand (headers, SSE
//! events), checking every message the server sends against the 2025-11-25 schema.

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
        let mut child = Command::new(binary)
            .args(["--http", "127.0.0.1:0"])
            .args(flags)
            .env("RUST_LOG", "info")
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
}

impl Body {
    pub async fn of(response: reqwest::Response) -> Body {
        let sse = response
            .headers()
            .get("content-type")
            .is_some_and(|v| v.to_str().unwrap().starts_with("text/event-stream"));
        if sse {
            Body { response: Some(response), buffer: String::new(), json: None, seen: Vec::new(), events: Vec::new() }
        } else {
            let text = response.text().await.unwrap();
            let value: Value = serde_json::from_str(&text).unwrap_or_else(|e| panic!("not JSON ({e}): {text}"));
            Body { response: None, buffer: String::new(), json: Some(value), seen: Vec::new(), events: Vec::new() }
        }
    }

    /// The next SSE event, `None` when the stream ends (or after `timeout`).
    pub async fn next_event(&mut self, timeout: Duration) -> Option<Event> {
        let deadline = Instant::now() + timeout;
        loop {
            if let Some(end) = self.buffer.find("\n\n") {
                let raw: String = self.buffer.drain(..end + 2).collect();
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
