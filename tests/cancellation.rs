//! Cancellation, one behaviour over every transport and both eras, from one table of cases: a cancelled request is
//! never answered, an async handler is dropped (and its deferred cleanup runs), a blocking one sees its flag, and the
//! connection goes on serving. Each case cancels the way its transport and era do: `notifications/cancelled` (stdio,
//! 2025 HTTP sessions in SSE or JSON mode, stateless 2025 POSTs), or the client closing its POST (stateless 2025 and
//! 2026 HTTP). The testbed prints what its handlers saw on stderr (`SLEEP_START id`, `SLEEP_ABORTED id`,
//! `CLEANUP_DONE id`, `SPIN_CANCELLED id`). The edges of each mode are beside it: `stdio_cancellation.rs` (the
//! bookshop's shielded cleanup, reasons, races), `http.rs` (nested requests, dropped connections in session mode),
//! `http_2026.rs` (a stream closed after its first frame).

mod common;

use std::time::Duration;

use common::http::{notification, request, Body, Client, HttpServer};
use common::{testbed, Server};
use serde_json::{json, Value};

const WAIT: Duration = Duration::from_secs(10);

/// Where a case runs.
#[derive(Clone, Copy, Debug)]
enum Transport {
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
enum Cancel {
    Notification,
    /// The client closes its POST (or its SSE stream) before the answer.
    Disconnect,
}

#[derive(Clone, Copy, Debug)]
enum Era {
    V2025,
    V2026,
}

/// Every way a request is cancelled.
const CASES: &[(Transport, Era, Cancel)] = &[
    (Transport::Stdio, Era::V2025, Cancel::Notification),
    (Transport::Stdio, Era::V2026, Cancel::Notification),
    (Transport::HttpSse, Era::V2025, Cancel::Notification),
    (Transport::HttpJson, Era::V2025, Cancel::Notification),
    (Transport::HttpStateless, Era::V2025, Cancel::Notification),
    (Transport::HttpStateless, Era::V2025, Cancel::Disconnect),
    (Transport::Http, Era::V2026, Cancel::Disconnect),
];

/// One connection of a case, able to start a call, cancel it, and call again.
enum Peer {
    Stdio(Server, Era),
    Http { server: HttpServer, client: Client, era: Era, pending: Vec<(Value, tokio::task::JoinHandle<String>)> },
}

impl Peer {
    async fn open(transport: Transport, era: Era) -> Peer {
        let flags: &[&str] = match transport {
            Transport::Stdio => {
                let mut s = Server::spawn(testbed());
                if let Era::V2025 = era {
                    s.initialize();
                }
                return Peer::Stdio(s, era);
            }
            Transport::HttpSse | Transport::Http => &[],
            Transport::HttpJson => &["--json-response"],
            Transport::HttpStateless => &["--stateless"],
        };
        let server = HttpServer::start(flags);
        let mut client = server.client();
        if let (Transport::HttpSse | Transport::HttpJson, Era::V2025) = (transport, era) {
            client.initialize(json!({})).await;
        }
        Peer::Http { server, client, era, pending: Vec::new() }
    }

    fn body(era: Era, id: &Value, name: &str, arguments: Value) -> Value {
        let params = json!({"name": name, "arguments": arguments});
        match era {
            Era::V2025 => request(id.clone(), "tools/call", params),
            Era::V2026 => common::modern::request(id.clone(), "tools/call", params, json!({})),
        }
    }

    /// Starts a call of `name` with id `id`, without waiting for its answer.
    fn start(&mut self, id: &Value, name: &str, arguments: Value) {
        match self {
            Peer::Stdio(s, Era::V2025) => {
                s.request_with_id(id.clone(), "tools/call", json!({"name": name, "arguments": arguments}))
            }
            Peer::Stdio(s, Era::V2026) => s.modern_request_with_id(
                id.clone(),
                "tools/call",
                json!({"name": name, "arguments": arguments}),
                json!({}),
            ),
            Peer::Http { client, era, pending, .. } => {
                let body = Peer::body(*era, id, name, arguments);
                let client =
                    Client { http: client.http.clone(), url: client.url.clone(), session: client.session.clone() };
                let era = *era;
                // The whole answer, read to its end (an SSE stream ends after its response, or without one).
                let answer = tokio::spawn(async move {
                    let response = match era {
                        Era::V2025 => client.send(&body).await,
                        Era::V2026 => client.modern_send(&body).await,
                    };
                    response.text().await.unwrap_or_default()
                });
                pending.push((id.clone(), answer));
            }
        }
    }

    async fn wait_stderr(&self, needle: &str) -> bool {
        match self {
            Peer::Stdio(s, _) => s.wait_stderr(needle, WAIT),
            Peer::Http { server, .. } => server.wait_stderr(needle, WAIT).await,
        }
    }

    fn stderr_text(&self) -> String {
        match self {
            Peer::Stdio(s, _) => s.stderr_text(),
            Peer::Http { server, .. } => server.stderr_text(),
        }
    }

    /// Cancels the call `id`; returns once the cancel is sent (for a disconnect, once the POST is dropped).
    async fn cancel(&mut self, id: &Value, how: Cancel) {
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

    /// Calls `echo` and returns its text: the connection still serves.
    async fn echo(&mut self, text: &str) -> String {
        let answer = match self {
            Peer::Stdio(s, Era::V2025) => json!({"result": s.call_tool("echo", json!({"text": text}))}),
            Peer::Stdio(s, Era::V2026) => {
                s.modern_call("tools/call", json!({"name": "echo", "arguments": {"text": text}}))
            }
            Peer::Http { client, era, .. } => {
                let body = Peer::body(*era, &json!("echo"), "echo", json!({"text": text}));
                match era {
                    Era::V2025 => Body::of(client.send(&body).await).await.response(&json!("echo"), "tools/call").await,
                    Era::V2026 => {
                        Body::of(client.modern_send(&body).await)
                            .await
                            .modern_response(&json!("echo"), "tools/call")
                            .await
                    }
                }
            }
        };
        answer["result"]["content"][0]["text"].as_str().unwrap_or_else(|| panic!("echo: {answer}")).to_owned()
    }

    /// Everything the peer got that answers one of `ids` (none is expected). Over stdio, what came before the last
    /// call's answer (the server read the cancels before it); over HTTP, the bodies of the POSTs still held.
    async fn answers_to(&mut self, ids: &[Value]) -> Vec<String> {
        let answers = |text: &str| {
            text.lines()
                .map(|l| l.trim_start_matches("data:").trim())
                .filter_map(|l| serde_json::from_str::<Value>(l).ok())
                .filter(|m| m.get("method").is_none() && m.get("id").is_some_and(|id| ids.contains(id)))
                .map(|m| m.to_string())
                .collect::<Vec<_>>()
        };
        match self {
            Peer::Stdio(s, _) => s
                .drain(Duration::ZERO)
                .into_iter()
                .filter(|m| m.get("method").is_none() && m.get("id").is_some_and(|id| ids.contains(id)))
                .map(|m| m.to_string())
                .collect(),
            Peer::Http { pending, .. } => {
                let mut seen = Vec::new();
                for (_, answer) in pending.drain(..) {
                    let text = tokio::time::timeout(WAIT, answer).await.expect("the POST ended").unwrap();
                    seen.extend(answers(&text));
                }
                seen
            }
        }
    }
}

/// A cancelled request is never answered, on every transport and in both eras: its async handler is dropped and its
/// deferred cleanup runs, a blocking handler sees its flag, and the connection serves the next call.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cancelled_request_stops_its_handler_and_is_never_answered() {
    for &(transport, era, how) in CASES {
        let case = format!("{transport:?} {era:?} {how:?}");
        let mut peer = Peer::open(transport, era).await;
        let (sleepy, spinning) = (json!("sleepy"), json!(4242));

        peer.start(&sleepy, "sleep", json!({"ms": 60_000}));
        assert!(peer.wait_stderr("SLEEP_START \"sleepy\"").await, "{case}: {}", peer.stderr_text());
        peer.cancel(&sleepy, how).await;
        assert!(peer.wait_stderr("SLEEP_ABORTED \"sleepy\"").await, "{case}: {}", peer.stderr_text());
        assert!(peer.wait_stderr("CLEANUP_DONE \"sleepy\"").await, "{case}: its deferred cleanup ran");

        peer.start(&spinning, "spin", json!({}));
        // The blocking handler has started once its thread runs: give it that moment, then cancel.
        tokio::time::sleep(Duration::from_millis(200)).await;
        peer.cancel(&spinning, how).await;
        assert!(peer.wait_stderr("SPIN_CANCELLED 4242").await, "{case}: {}", peer.stderr_text());

        assert_eq!(peer.echo("still here").await, "still here", "{case}");
        let answered = peer.answers_to(&[sleepy, spinning]).await;
        assert!(answered.is_empty(), "{case}: a cancelled request was answered: {answered:?}");
        assert!(!peer.stderr_text().contains("SLEEP_DONE"), "{case}");
    }
}
