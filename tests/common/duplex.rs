//! A server built in the test process, spoken to over an in-memory pipe (`serve_streams` on `tokio::io::duplex`):
//! one stdio session in either era, in raw JSON-RPC lines.

use std::time::Duration;

use mcp::Server;
use serde_json::{json, Value};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};

/// One stdio session over an in-memory pipe, in either era.
pub struct Stdio {
    v2026: bool,
    to_server: tokio::io::WriteHalf<tokio::io::DuplexStream>,
    from_server: tokio::io::Lines<BufReader<tokio::io::ReadHalf<tokio::io::DuplexStream>>>,
    /// Responses read while waiting for another one.
    early: Vec<Value>,
    /// Notifications read while waiting for a response, oldest first.
    notes: std::collections::VecDeque<Value>,
    /// What this client declares: in `initialize` (2025), in every request's envelope (2026).
    capabilities: Value,
    /// The `initialize` response (2025).
    pub initialized: Option<Value>,
}

impl Stdio {
    /// A session whose client declares elicitation.
    pub async fn open(server: &Server, v2026: bool) -> Stdio {
        Stdio::open_with(server, v2026, json!({"elicitation": {}})).await
    }

    /// A session whose client declares `capabilities`.
    pub async fn open_with(server: &Server, v2026: bool, capabilities: Value) -> Stdio {
        let (client, server_end) = tokio::io::duplex(1 << 16);
        let (server_read, server_write) = tokio::io::split(server_end);
        tokio::spawn(server.clone().serve_streams(server_read, server_write));
        let (read, write) = tokio::io::split(client);
        let mut session = Stdio {
            v2026,
            to_server: write,
            from_server: BufReader::new(read).lines(),
            early: Vec::new(),
            notes: std::collections::VecDeque::new(),
            capabilities,
            initialized: None,
        };
        if !v2026 {
            let init = json!({"protocolVersion": "2025-11-25", "capabilities": session.capabilities,
                              "clientInfo": {"name": "duplex-tests", "version": "0"}});
            session.send(json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": init})).await;
            session.initialized = Some(session.response(0).await);
            session.send(json!({"jsonrpc": "2.0", "method": "notifications/initialized"})).await;
        }
        session
    }

    pub async fn send(&mut self, message: Value) {
        self.to_server.write_all(format!("{message}\n").as_bytes()).await.unwrap();
    }

    /// Sends a request (with the 2026 envelope in that era).
    pub async fn request(&mut self, id: i64, method: &str, params: Value) {
        let params = if self.v2026 { super::v2026::with_envelope(params, self.capabilities.clone()) } else { params };
        self.send(json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params})).await;
    }

    /// The next message with this id; notifications are kept for [`Stdio::call_seen`] and [`Stdio::next`].
    pub async fn response(&mut self, id: i64) -> Value {
        if let Some(at) = self.early.iter().position(|m| m["id"] == id) {
            return self.early.remove(at);
        }
        loop {
            let line = tokio::time::timeout(Duration::from_secs(10), self.from_server.next_line())
                .await
                .unwrap_or_else(|_| panic!("no response to request {id}"))
                .unwrap()
                .expect("the session ended");
            let message: Value = serde_json::from_str(&line).unwrap();
            if message.get("method").is_some() {
                self.notes.push_back(message);
                continue;
            }
            if message["id"] == id {
                return message;
            }
            self.early.push(message);
        }
    }

    /// A call's response, and the notifications that came while waiting for it.
    pub async fn call_seen(&mut self, id: i64, method: &str, params: Value) -> (Value, Vec<Value>) {
        self.notes.clear();
        let response = self.call(id, method, params).await;
        (response, self.notes.drain(..).collect())
    }

    /// The next notification (or request) from the server: one already read, else one that arrives within `wait`.
    pub async fn next(&mut self, wait: Duration) -> Option<Value> {
        if let Some(note) = self.notes.pop_front() {
            return Some(note);
        }
        let line = tokio::time::timeout(wait, self.from_server.next_line()).await.ok()?;
        line.unwrap().map(|l| serde_json::from_str(&l).unwrap())
    }

    pub async fn call(&mut self, id: i64, method: &str, params: Value) -> Value {
        self.request(id, method, params).await;
        self.response(id).await
    }

    /// Whether anything with this id arrives within `wait`.
    pub async fn silent(&mut self, id: i64, wait: Duration) -> bool {
        let deadline = tokio::time::Instant::now() + wait;
        loop {
            match tokio::time::timeout_at(deadline, self.from_server.next_line()).await {
                Err(_) => return true,
                Ok(line) => {
                    let Some(line) = line.unwrap() else { return true };
                    let message: Value = serde_json::from_str(&line).unwrap();
                    if message["id"] == id {
                        return false;
                    }
                }
            }
        }
    }
}
