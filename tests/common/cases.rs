//! One connection of a test case, over any transport and in either era, for the tests that run one behaviour over
//! a table of cases (`cancellation.rs`, `progress.rs`, `logging.rs`, `questions.rs`, `limits.rs`): the testbed as a
//! child process, spoken to over stdio or Streamable HTTP (a 2025 session in SSE or JSON mode, stateless 2025 POSTs,
//! or 2026 POSTs).

use std::time::Duration;

use serde_json::{json, Value};

use super::http::{notification, request, Body, Client, HttpServer};
use super::{testbed, Server};

const WAIT: Duration = Duration::from_secs(10);

/// Where a case runs.
#[derive(Clone, Copy, Debug)]
pub enum Transport {
    Stdio,
    /// A 2025 session, answers as SSE streams.
    HttpSse,
    /// A 2025 session, answers as JSON bodies.
    HttpJson,
    /// 2025 without sessions: each POST stands alone.
    HttpStateless,
    /// 2026: each POST stands alone.
    Http,
}

/// How a case cancels.
#[derive(Clone, Copy, Debug)]
pub enum Cancel {
    Notification,
    /// The client closes its POST (or its SSE stream) before the answer.
    Disconnect,
}

#[derive(Clone, Copy, Debug)]
pub enum Era {
    V2025,
    V2026,
}

/// One connection of a case, able to start a call, cancel it, and call again.
pub enum Peer {
    Stdio(Server, Era),
    Http { server: HttpServer, client: Client, era: Era, pending: Vec<(Value, tokio::task::JoinHandle<String>)> },
}

impl Peer {
    pub async fn open(transport: Transport, era: Era) -> Peer {
        Peer::open_with_env(transport, era, &[]).await
    }

    /// [`Peer::open`], with the testbed's environment set (`TESTBED_MAX_IN_FLIGHT`, ...).
    pub async fn open_with_env(transport: Transport, era: Era, env: &[(&str, &str)]) -> Peer {
        Peer::open_with(transport, era, env, json!({})).await
    }

    /// [`Peer::open_with_env`], with a 2025 session whose client declares `capabilities` (a 2026 request declares
    /// its own).
    pub async fn open_with(transport: Transport, era: Era, env: &[(&str, &str)], capabilities: Value) -> Peer {
        let flags: &[&str] = match transport {
            Transport::Stdio => {
                let mut command = std::process::Command::new(testbed());
                command.envs(env.iter().copied());
                let mut s = Server::spawn_with(command);
                if let Era::V2025 = era {
                    s.initialize_with(capabilities);
                }
                return Peer::Stdio(s, era);
            }
            Transport::HttpSse | Transport::Http => &[],
            Transport::HttpJson => &["--json-response"],
            Transport::HttpStateless => &["--stateless"],
        };
        let server = HttpServer::start_with_env(flags, env);
        let mut client = server.client();
        if let (Transport::HttpSse | Transport::HttpJson, Era::V2025) = (transport, era) {
            client.initialize(capabilities).await;
        }
        Peer::Http { server, client, era, pending: Vec::new() }
    }

    /// The era this peer speaks.
    fn era(&self) -> Era {
        match self {
            Peer::Stdio(_, era) | Peer::Http { era, .. } => *era,
        }
    }

    /// A request as `era` writes it (in 2026 with the envelope, declaring no capabilities).
    fn message(era: Era, id: &Value, method: &str, params: Value) -> Value {
        match era {
            Era::V2025 => request(id.clone(), method, params),
            Era::V2026 => super::v2026::request(id.clone(), method, params, json!({})),
        }
    }

    /// Starts a call of `name` with id `id`, without waiting for its answer.
    pub fn start(&mut self, id: &Value, name: &str, arguments: Value) {
        let body = Peer::message(self.era(), id, "tools/call", json!({"name": name, "arguments": arguments}));
        match self {
            Peer::Stdio(s, _) => s.send(body),
            Peer::Http { client, era, pending, .. } => {
                let client =
                    Client { http: client.http.clone(), url: client.url.clone(), session: client.session.clone() };
                let era = *era;
                // The whole answer, read to its end (an SSE stream ends after its response, or without one).
                let answer = tokio::spawn(async move {
                    let response = match era {
                        Era::V2025 => client.send(&body).await,
                        Era::V2026 => client.v2026_send(&body).await,
                    };
                    response.text().await.unwrap_or_default()
                });
                pending.push((id.clone(), answer));
            }
        }
    }

    pub async fn wait_stderr(&self, needle: &str) -> bool {
        match self {
            Peer::Stdio(s, _) => s.wait_stderr(needle, WAIT),
            Peer::Http { server, .. } => server.wait_stderr(needle, WAIT).await,
        }
    }

    pub fn stderr_text(&self) -> String {
        match self {
            Peer::Stdio(s, _) => s.stderr_text(),
            Peer::Http { server, .. } => server.stderr_text(),
        }
    }

    /// Cancels the call `id`; returns once the cancel is sent (for a disconnect, once the POST is dropped).
    pub async fn cancel(&mut self, id: &Value, how: Cancel) {
        match (self, how) {
            (Peer::Stdio(s, _), Cancel::Notification) => s.cancel(id, "enough"),
            (Peer::Http { client, .. }, Cancel::Notification) => {
                let cancel = notification("notifications/cancelled", json!({"requestId": id, "reason": "enough"}));
                assert_eq!(client.send(&cancel).await.status(), 202);
            }
            (Peer::Http { pending, .. }, Cancel::Disconnect) => {
                let at = pending.iter().position(|(p, _)| p == id).expect("a call in flight");
                pending.remove(at).1.abort();
            }
            (Peer::Stdio(..), Cancel::Disconnect) => unreachable!("stdio cancels with a notification"),
        }
    }

    /// Calls a tool with `meta` in its `_meta`, and waits for its answer: the response, and the messages that came
    /// before it (on stdio, since the last call; on HTTP, on the POST's stream).
    pub async fn call(&mut self, id: &Value, name: &str, arguments: Value, meta: Value) -> (Value, Vec<Value>) {
        self.exchange(id, "tools/call", json!({"name": name, "arguments": arguments, "_meta": meta})).await
    }

    /// Sends a request and waits for its answer, as [`Peer::call`] does.
    pub async fn exchange(&mut self, id: &Value, method: &str, params: Value) -> (Value, Vec<Value>) {
        let body = Peer::message(self.era(), id, method, params);
        match self {
            Peer::Stdio(s, _) => {
                s.send(body);
                let answer = s.response(id);
                (answer, s.drain(Duration::ZERO))
            }
            Peer::Http { client, era: Era::V2025, .. } => {
                let mut body = Body::of(client.send(&body).await).await;
                let answer = body.response(id, method).await;
                (answer, body.seen)
            }
            Peer::Http { client, era: Era::V2026, .. } => {
                let mut body = Body::of(client.v2026_send(&body).await).await;
                let answer = body.v2026_response(id, method).await;
                (answer, body.seen)
            }
        }
    }

    /// Messages that arrive within `wait` outside any call: on stdio, the server's next lines; over HTTP, none can
    /// (a POST's stream ends with its response).
    pub fn later(&mut self, wait: Duration) -> Vec<Value> {
        match self {
            Peer::Stdio(s, _) => s.drain(wait),
            Peer::Http { .. } => Vec::new(),
        }
    }

    /// Everything the peer got that answers one of `ids` (none is expected). Over stdio, what came since the last
    /// call's answer; over HTTP, the bodies of the POSTs still held.
    pub async fn answers_to(&mut self, ids: &[Value]) -> Vec<String> {
        match self {
            Peer::Stdio(s, _) => answers_among(&s.drain(Duration::ZERO), ids),
            Peer::Http { pending, .. } => {
                let mut seen = Vec::new();
                for (_, answer) in pending.drain(..) {
                    let text = tokio::time::timeout(WAIT, answer).await.expect("the POST ended").unwrap();
                    let messages: Vec<Value> = text
                        .lines()
                        .filter_map(|l| serde_json::from_str(l.trim_start_matches("data:").trim()).ok())
                        .collect();
                    seen.extend(answers_among(&messages, ids));
                }
                seen
            }
        }
    }
}

/// The responses among `messages` to one of `ids`, as text.
pub fn answers_among(messages: &[Value], ids: &[Value]) -> Vec<String> {
    messages
        .iter()
        .filter(|m| m.get("method").is_none() && m.get("id").is_some_and(|id| ids.contains(id)))
        .map(Value::to_string)
        .collect()
}
