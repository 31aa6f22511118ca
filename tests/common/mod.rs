//! Test harness: a server as a child process spoken to in raw JSON-RPC lines over its stdio, with every message it
//! writes validated against the official JSON Schema of its era: MCP 2025-11-25, or 2026-07-28 for what answers (or
//! belongs to) a request carrying the 2026 envelope.

#![allow(dead_code)]

pub mod balancer;
pub mod browser;
pub mod cases;
pub mod duplex;
pub mod http;
pub mod install;
pub mod node;
pub mod oidc;
pub mod phoenix;
pub mod prometheus;
pub mod proxy;
pub mod python;
pub mod redis;
pub mod router;
pub mod schema;
pub mod shops;
pub mod tls;
pub mod v2026;
pub mod webhooks;

use std::collections::{HashMap, HashSet, VecDeque};
use std::io::{BufRead, BufReader, Write};
use std::path::PathBuf;
use std::process::{Child, ChildStdin, Command, ExitStatus, Stdio};
use std::sync::{mpsc, Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::{json, Value};

/// The path of an example binary, next to the test binary's own directory (`target/debug/examples/NAME`).
pub fn example(name: &str) -> PathBuf {
    let exe = std::env::current_exe().expect("test binary path");
    let dir = exe.parent().and_then(|d| d.parent()).expect("profile dir");
    let path = dir.join("examples").join(format!("{name}{}", std::env::consts::EXE_SUFFIX));
    assert!(path.exists(), "{} is missing: `cargo test` builds the examples first", path.display());
    path
}

/// The testbed server binary.
pub fn testbed() -> PathBuf {
    PathBuf::from(env!("CARGO_BIN_EXE_testbed"))
}

/// A running server.
pub struct Server {
    child: Child,
    stdin: Option<ChildStdin>,
    messages: mpsc::Receiver<Value>,
    /// Messages read while waiting for something else.
    pending: VecDeque<Value>,
    stderr: Arc<Mutex<Vec<String>>>,
    /// The method of each request we sent, by id, so results are validated against the right schema.
    methods: Arc<Mutex<HashMap<String, String>>>,
    next_id: i64,
    stderr_reader: Option<std::thread::JoinHandle<()>>,
    /// Messages of this server that broke the schema.
    schema_failures: Arc<Mutex<Vec<String>>>,
    /// Which requests we sent belong to which protocol era, so each message is checked against its era's schema.
    eras: Arc<Mutex<Eras>>,
}

/// What the harness knows of the eras of the requests it sent.
#[derive(Default)]
struct Eras {
    /// Ids of 2026-07-28 requests.
    v2026_ids: HashSet<String>,
    /// Progress tokens of 2026 requests, and of 2025 requests.
    v2026_tokens: HashSet<String>,
    legacy_tokens: HashSet<String>,
    any_v2026: bool,
    any_legacy: bool,
}

impl Eras {
    /// Notes a request we send: 2026-07-28 if its `_meta` names a protocol version or its method exists only in that
    /// era (the rule the server's stdio transport applies).
    fn record(&mut self, message: &Value) {
        let (Some(id), Some(method)) = (message.get("id"), message.get("method").and_then(Value::as_str)) else {
            return;
        };
        let meta = &message["params"]["_meta"];
        let v2026 = v2026::is_v2026_request(method, &message["params"]);
        let token = meta.get("progressToken").map(Value::to_string);
        if v2026 {
            self.any_v2026 = true;
            self.v2026_ids.insert(id.to_string());
            self.v2026_tokens.extend(token);
        } else {
            self.any_legacy = true;
            self.legacy_tokens.extend(token);
        }
    }

    /// Checks a message the server wrote against the schema of its era. Responses go by the request they answer.
    /// Notifications: tagged with a subscription id, 2026; progress, by its token; others by the eras this process
    /// has seen (valid in either when both).
    fn check(&self, message: &Value, method: Option<&str>) -> Result<(), String> {
        let is_response = message.get("method").is_none();
        if is_response {
            let v2026 = message.get("id").is_some_and(|id| self.v2026_ids.contains(&id.to_string()));
            return if v2026 {
                schema::check_v2026_message(message, method)
            } else {
                schema::check_server_message(message, method)
            };
        }
        let params = &message["params"];
        let v2026 = if params["_meta"].get("io.modelcontextprotocol/subscriptionId").is_some() {
            Some(true)
        } else if let Some(token) = params.get("progressToken").map(Value::to_string) {
            if self.v2026_tokens.contains(&token) {
                Some(true)
            } else if self.legacy_tokens.contains(&token) {
                Some(false)
            } else {
                None
            }
        } else {
            None
        };
        let v2026 = v2026.or(match (self.any_v2026, self.any_legacy) {
            (true, false) => Some(true),
            (false, _) => Some(false),
            (true, true) => None,
        });
        match v2026 {
            Some(true) => schema::check_v2026_message(message, method),
            Some(false) => schema::check_server_message(message, method),
            None => schema::check_v2026_message(message, method).or_else(|v2026| {
                schema::check_server_message(message, method).map_err(|v2025| format!("{v2026}\n{v2025}"))
            }),
        }
    }
}

pub const WAIT: Duration = Duration::from_secs(10);

impl Server {
    pub fn spawn(path: PathBuf) -> Server {
        Server::spawn_with(Command::new(path))
    }

    pub fn spawn_with(mut command: Command) -> Server {
        let mut child = command
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .env("RUST_LOG", "info")
            .spawn()
            .expect("spawn server");
        let stdout = child.stdout.take().unwrap();
        let stderr = child.stderr.take().unwrap();
        let methods: Arc<Mutex<HashMap<String, String>>> = Arc::default();
        let (tx, rx) = mpsc::channel();
        let methods_r = methods.clone();
        let schema_failures: Arc<Mutex<Vec<String>>> = Arc::default();
        let failures = schema_failures.clone();
        let eras: Arc<Mutex<Eras>> = Arc::default();
        let eras_r = eras.clone();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines() {
                let Ok(line) = line else { break };
                let value: Value = serde_json::from_str(&line)
                    .unwrap_or_else(|e| panic!("the server wrote a line that is not JSON ({e}): {line}"));
                let method = value.get("id").and_then(|id| methods_r.lock().unwrap().get(&id.to_string()).cloned());
                // Panicking here would only end this thread; record the failure where the test sees it, before the
                // test can see the message itself.
                if let Err(e) = eras_r.lock().unwrap().check(&value, method.as_deref()) {
                    failures.lock().unwrap().push(e);
                }
                if tx.send(value).is_err() {
                    break;
                }
            }
        });
        let lines: Arc<Mutex<Vec<String>>> = Arc::default();
        let lines_w = lines.clone();
        let stderr_reader = std::thread::spawn(move || {
            for line in BufReader::new(stderr).lines() {
                let Ok(line) = line else { break };
                lines_w.lock().unwrap().push(line);
            }
        });
        let stdin = child.stdin.take();
        Server {
            child,
            stdin,
            messages: rx,
            pending: VecDeque::new(),
            stderr: lines,
            methods,
            next_id: 1000,
            stderr_reader: Some(stderr_reader),
            schema_failures,
            eras,
        }
    }

    /// Writes one raw line.
    pub fn send_raw(&mut self, line: &str) {
        let stdin = self.stdin.as_mut().expect("stdin is open");
        stdin.write_all(line.as_bytes()).unwrap();
        stdin.write_all(b"\n").unwrap();
        stdin.flush().unwrap();
    }

    pub fn send(&mut self, message: Value) {
        if let (Some(id), Some(method)) = (message.get("id"), message.get("method").and_then(Value::as_str)) {
            self.methods.lock().unwrap().insert(id.to_string(), method.to_owned());
        }
        self.eras.lock().unwrap().record(&message);
        self.send_raw(&message.to_string());
    }

    /// Sends a request with the given id.
    pub fn request_with_id(&mut self, id: Value, method: &str, params: Value) {
        self.send(json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}));
    }

    /// Sends a request with a fresh integer id, and returns the id.
    pub fn request(&mut self, method: &str, params: Value) -> Value {
        self.next_id += 1;
        let id = json!(self.next_id);
        self.request_with_id(id.clone(), method, params);
        id
    }

    pub fn notify(&mut self, method: &str, params: Value) {
        self.send(json!({"jsonrpc": "2.0", "method": method, "params": params}));
    }

    pub fn cancel(&mut self, id: &Value, reason: &str) {
        self.notify("notifications/cancelled", json!({"requestId": id, "reason": reason}));
    }

    /// Waits for the first message that `matches`, keeping the others for later.
    pub fn wait_for(&mut self, what: &str, matches: impl Fn(&Value) -> bool) -> Value {
        if let Some(pos) = self.pending.iter().position(&matches) {
            return self.pending.remove(pos).unwrap();
        }
        let deadline = Instant::now() + WAIT;
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            let m = self
                .messages
                .recv_timeout(left)
                .unwrap_or_else(|_| panic!("no {what} within {WAIT:?}; stderr:\n{}", self.stderr_text()));
            if matches(&m) {
                return m;
            }
            self.pending.push_back(m);
        }
    }

    /// Waits for a request from the server with this method.
    pub fn server_request(&mut self, method: &str) -> Value {
        self.wait_for(method, |m| m["method"] == method && m.get("id").is_some())
    }

    /// Runs the initialize handshake, declaring `capabilities`.
    pub fn initialize_with(&mut self, capabilities: Value) -> Value {
        let r = self.call(
            "initialize",
            json!({"protocolVersion": "2025-11-25", "capabilities": capabilities, "clientInfo": {"name": "tests", "version": "0"}}),
        );
        self.notify("notifications/initialized", json!({}));
        r
    }

    /// Waits for the response to `id`, keeping other messages for later.
    pub fn response(&mut self, id: &Value) -> Value {
        self.wait_for(&format!("response to id {id}"), |m| m.get("id") == Some(id) && m.get("method").is_none())
    }

    /// Sends a request and waits for its response.
    pub fn call(&mut self, method: &str, params: Value) -> Value {
        let id = self.request(method, params);
        self.response(&id)
    }

    /// Calls a tool and returns the `result` (panics on a JSON-RPC error).
    pub fn call_tool(&mut self, name: &str, arguments: Value) -> Value {
        let r = self.call("tools/call", json!({"name": name, "arguments": arguments}));
        r.get("result").cloned().unwrap_or_else(|| panic!("tools/call {name} failed: {r}"))
    }

    /// Runs the initialize handshake.
    pub fn initialize(&mut self) -> Value {
        let r = self.call(
            "initialize",
            json!({"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "tests", "version": "0"}}),
        );
        self.notify("notifications/initialized", json!({}));
        r
    }

    /// Every message already received, plus those arriving within `wait`.
    pub fn drain(&mut self, wait: Duration) -> Vec<Value> {
        let mut out: Vec<Value> = self.pending.drain(..).collect();
        let deadline = Instant::now() + wait;
        while let Ok(m) = self.messages.recv_timeout(deadline.saturating_duration_since(Instant::now())) {
            out.push(m);
        }
        out
    }

    pub fn stderr_text(&self) -> String {
        self.stderr.lock().unwrap().join("\n")
    }

    /// Waits until a stderr line contains `needle`.
    pub fn wait_stderr(&self, needle: &str, timeout: Duration) -> bool {
        let deadline = Instant::now() + timeout;
        loop {
            if self.has_stderr(needle) {
                return true;
            }
            if Instant::now() >= deadline {
                return false;
            }
            std::thread::sleep(Duration::from_millis(10));
        }
    }

    pub fn has_stderr(&self, needle: &str) -> bool {
        self.stderr.lock().unwrap().iter().any(|l| l.contains(needle))
    }

    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// Closes stdin and waits for the process to exit.
    pub fn close(&mut self, timeout: Duration) -> ExitStatus {
        drop(self.stdin.take());
        self.wait_exit(timeout)
    }

    /// Waits for the process to exit, and for its stderr to be read.
    pub fn wait_exit(&mut self, timeout: Duration) -> ExitStatus {
        let deadline = Instant::now() + timeout;
        loop {
            if let Some(status) = self.child.try_wait().unwrap() {
                if let Some(reader) = self.stderr_reader.take() {
                    let _ = reader.join();
                }
                return status;
            }
            assert!(Instant::now() < deadline, "the server did not exit within {timeout:?}");
            std::thread::sleep(Duration::from_millis(10));
        }
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        // Every message has been read by now: fail the test if any broke the schema.
        let failures = std::mem::take(&mut *self.schema_failures.lock().unwrap());
        if !std::thread::panicking() {
            assert!(failures.is_empty(), "messages that break the MCP schema:\n{}", failures.join("\n"));
        }
    }
}

/// A memory figure of a process from `/proc/<pid>/status` (`VmRSS`, `VmHWM`, ...), in KiB; 0 where there is none.
pub fn proc_kib(pid: u32, field: &str) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
    status
        .lines()
        .find_map(|l| l.strip_prefix(field)?.strip_prefix(':'))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap_or(0)
}

/// A process's resident memory now, in KiB.
pub fn rss_kib(pid: u32) -> u64 {
    proc_kib(pid, "VmRSS")
}

/// A process's peak resident memory so far, in KiB.
pub fn peak_rss_kib(pid: u32) -> u64 {
    proc_kib(pid, "VmHWM")
}
