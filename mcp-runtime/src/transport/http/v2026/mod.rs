//! 2026-07-28 requests on the Streamable HTTP endpoint. Every POST stands alone: no session id is minted or read,
//! GET and DELETE are 405. A request's headers are checked against its body first (-32020, -32602, -32022 with
//! HTTP 400). Its answer is one `application/json` body when the response is ready before anything else was sent
//! (so the status can say what the error says: 400, or 404 for an unknown method); once a notification comes first
//! (progress, a log, a listen stream's acknowledgement) it is an SSE stream instead. The client closing either one
//! cancels the request, as `notifications/cancelled` does on stdio.
//!
//! A 2026 POST is not held back while its client's other streams wait unread, as a 2025 session's is: its answer is
//! its own POST's response, so a client that does not read it holds up only that connection (TCP's flow control,
//! as a pipe holds a stdio client). A `subscriptions/listen` stream fed by the client's own calls on other
//! connections is bounded by its hard bound and then disconnected; the only tie between those calls and the
//! listener would be the peer address, which every client behind one proxy shares.

use std::collections::HashMap;
use std::pin::Pin;
use std::sync::{Arc, Mutex, Weak};
use std::task::{Context as TaskContext, Poll};

use axum::body::{Body, Bytes};
use axum::http::{header, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use tokio::sync::mpsc;

pub(super) mod headers;

use super::first_poll::FirstPoll;
use super::{json_body, HttpState};
use crate::base::backlog::{Admit, Backlog};
use crate::base::sink::NoSink;
use crate::base::sync::Unpoisoned;
use crate::context::HttpRequest;
use crate::dispatch::{Connection, FrameSink, Origin};
use crate::era::v2026;
use crate::wire::jsonrpc::{Frame, FrameKind, Incoming, Received, RequestId};

/// A frame on its way to the POST's answer.
enum Out {
    /// A notification: the answer becomes an SSE stream.
    Event(Frame),
    /// The response: the last frame.
    Final(Frame),
}

/// A 2026 request's stream, once its answer must wait: frames go to the waiting POST, within the outbound bounds.
struct Route2026 {
    tx: Mutex<Option<mpsc::UnboundedSender<Out>>>,
    backlog: Arc<Backlog>,
    /// What a reader that stops reading cancels: this request.
    conn: Arc<Connection>,
    id: RequestId,
    /// JSON-response mode: notifications are dropped, the response is the body.
    json_only: bool,
}

impl Route2026 {
    fn tx(&self) -> std::sync::MutexGuard<'_, Option<mpsc::UnboundedSender<Out>>> {
        self.tx.locked()
    }

    fn push(&self, frame: Frame, droppable: bool) {
        if self.json_only {
            return;
        }
        match self.backlog.admit(frame.len(), droppable) {
            Admit::Send => {
                if let Some(tx) = &*self.tx() {
                    let _ = tx.send(Out::Event(frame));
                }
            }
            Admit::Drop => {}
            Admit::Stuck => {
                self.tx().take();
                self.conn.cancel(&self.id, Some("the client stopped reading the request's stream"));
            }
        }
    }
}

impl FrameSink for Route2026 {
    fn send(&self, frame: Frame) {
        self.push(frame, false)
    }

    fn send_droppable(&self, frame: Frame) {
        self.push(frame, true)
    }

    fn finish(&self, frame: Frame) {
        if let Some(tx) = self.tx().take() {
            let _ = tx.send(Out::Final(frame));
        }
    }

    fn close(&self) {
        self.tx().take();
    }
}

/// The 2026 requests whose POST waits for its answer, so that a server that stops can cancel them (each has a
/// connection of its own, which no session lists).
#[derive(Default)]
pub(super) struct Waiting {
    inner: Mutex<WaitingInner>,
}

#[derive(Default)]
struct WaitingInner {
    next: u64,
    connections: HashMap<u64, Weak<Connection>>,
    /// The server is stopping: a request that comes to wait now is cancelled at once.
    stopping: bool,
}

impl Waiting {
    /// Lists a request's connection while its POST waits (until the entry drops); cancels the request at once if
    /// the server is stopping.
    fn enter(state: &Arc<HttpState>, conn: &Arc<Connection>) -> Option<WaitingEntry> {
        let mut inner = state.waiting.inner.locked();
        if inner.stopping {
            drop(inner);
            conn.cancel_all(STOPPING);
            return None;
        }
        let key = inner.next;
        inner.next += 1;
        inner.connections.insert(key, Arc::downgrade(conn));
        Some(WaitingEntry { state: state.clone(), key })
    }

    /// The server is stopping: every request waiting now is cancelled (its handler dropped, its deferred cleanup
    /// run), as a 2025 session's are, and so is any that comes to wait later.
    pub(super) fn stop(&self) {
        let connections: Vec<Weak<Connection>> = {
            let mut inner = self.inner.locked();
            inner.stopping = true;
            inner.connections.drain().map(|(_, conn)| conn).collect()
        };
        for conn in connections.iter().filter_map(Weak::upgrade) {
            conn.cancel_all(STOPPING);
        }
    }
}

const STOPPING: &str = "the server is stopping";

/// A request's place in [`Waiting`]; removed when dropped.
struct WaitingEntry {
    state: Arc<HttpState>,
    key: u64,
}

impl Drop for WaitingEntry {
    fn drop(&mut self) {
        self.state.waiting.inner.locked().connections.remove(&self.key);
    }
}

/// Cancels the request if the client goes away before its response was handed over. While it lives, the request
/// is listed among those [`Waiting`].
struct CancelOnDrop {
    conn: Arc<Connection>,
    id: RequestId,
    armed: bool,
    _waiting: Option<WaitingEntry>,
}

impl Drop for CancelOnDrop {
    fn drop(&mut self) {
        if self.armed {
            self.conn.cancel(&self.id, Some("the client closed the request's stream"));
        }
    }
}

/// A 2026 POST: its headers checked against its body, then served on a connection of its own.
pub(super) async fn post(state: &Arc<HttpState>, message: Incoming, http: Arc<HttpRequest>) -> Response {
    let Incoming::Request { id, method, params, envelope, arguments } = message else {
        // The 2026 era defines no notification a client sends over HTTP (a cancel is closing the stream), and
        // clients send no responses: accepted, and nothing to do.
        return StatusCode::ACCEPTED.into_response();
    };
    let sent = (params.as_ref(), envelope.as_ref(), arguments.as_deref());
    if let Err(e) = headers::check_http_headers(&http.headers, &method, sent, &state.server) {
        return json_answer(Frame::error(Some(&id), &e));
    }
    let conn = Connection::new(state.server.clone(), no_sink());
    if method == "subscriptions/listen" && state.is_draining() {
        return super::draining(state, "listen streams");
    }
    let json_only = state.options.json_response && method != "subscriptions/listen";
    let first_poll = FirstPoll::<Route2026>::new(state.server.inner.limits().outbound);
    v2026::handle(
        &conn,
        Received { id: id.clone(), method, params, envelope, arguments },
        &Origin { sink: first_poll.clone(), http: Some(http) },
    );
    let answer = first_poll.decide(|| {
        let (tx, rx) = mpsc::unbounded_channel();
        let backlog = Arc::new(Backlog::new(state.server.inner.limits().outbound));
        let route = Route2026 {
            tx: Mutex::new(Some(tx)),
            backlog: backlog.clone(),
            conn: conn.clone(),
            id: id.clone(),
            json_only,
        };
        (Arc::new(route), (rx, backlog))
    });
    // Answered in the handler's first poll: no channel, nothing to cancel.
    let (mut rx, backlog) = match answer {
        Ok(frame) => return json_answer(frame),
        Err(opened) => opened,
    };
    // If the client goes away while this waits, axum drops the future and the guard cancels the request.
    let waiting = Waiting::enter(state, &conn);
    let mut guard = CancelOnDrop { conn, id, armed: true, _waiting: waiting };
    match rx.recv().await {
        Some(Out::Final(frame)) => {
            guard.armed = false;
            json_answer(frame)
        }
        Some(Out::Event(frame)) => {
            let body = Sse2026 {
                pending: Some(frame),
                events: rx,
                backlog,
                guard,
                keep_alive: super::keep_alive_timer(state.options.keep_alive),
                done: false,
                _counted: state.server.inner.metrics().map(|m| m.stream(crate::Era::V2026.name())),
            };
            Response::builder()
                .status(StatusCode::OK)
                .header(header::CONTENT_TYPE, "text/event-stream")
                .header(header::CACHE_CONTROL, "no-cache")
                .header(super::ACCEL_BUFFERING.clone(), HeaderValue::from_static("no"))
                .body(Body::from_stream(body))
                .unwrap_or_else(|_| StatusCode::INTERNAL_SERVER_ERROR.into_response())
        }
        // Ended without a response (cancelled on the server's side): nothing to say.
        None => {
            guard.armed = false;
            StatusCode::ACCEPTED.into_response()
        }
    }
}

/// The sink of what belongs to no request: one for the process.
fn no_sink() -> crate::dispatch::Sink {
    static NO_SINK: std::sync::OnceLock<crate::dispatch::Sink> = std::sync::OnceLock::new();
    NO_SINK.get_or_init(|| Arc::new(NoSink)).clone()
}

/// A response as one JSON body, with the status its error (if it is one) calls for.
fn json_answer(frame: Frame) -> Response {
    let status = match frame.kind() {
        FrameKind::Error(code) => headers::http_status(crate::wire::error::ErrorCode(code)),
        _ => 200,
    };
    let status = StatusCode::from_u16(status).unwrap_or(StatusCode::OK);
    json_body(status, frame)
}

/// The SSE answer of a 2026 request: its notifications, then its response; keep-alive comments while idle.
struct Sse2026 {
    pending: Option<Frame>,
    events: mpsc::UnboundedReceiver<Out>,
    /// The bytes waiting for this connection; each event taken leaves it.
    backlog: Arc<Backlog>,
    guard: CancelOnDrop,
    keep_alive: tokio::time::Interval,
    done: bool,
    /// With metrics: counted among the open streams while it lives.
    _counted: Option<crate::metrics::StreamOpen>,
}

fn push_event(chunk: &mut String, frame: &str) {
    chunk.push_str("event: message\ndata: ");
    chunk.push_str(frame);
    chunk.push_str("\n\n");
}

impl futures_core::Stream for Sse2026 {
    type Item = Result<Bytes, std::convert::Infallible>;

    /// Everything ready goes out as one chunk.
    fn poll_next(mut self: Pin<&mut Self>, cx: &mut TaskContext<'_>) -> Poll<Option<Self::Item>> {
        if self.done {
            return Poll::Ready(None);
        }
        let mut chunk = String::new();
        if let Some(first) = self.pending.take() {
            self.backlog.sent(first.len());
            push_event(&mut chunk, first.text());
        }
        loop {
            match self.events.poll_recv(cx) {
                Poll::Ready(Some(Out::Event(frame))) => {
                    self.backlog.sent(frame.len());
                    push_event(&mut chunk, frame.text())
                }
                Poll::Ready(Some(Out::Final(frame))) => {
                    push_event(&mut chunk, frame.text());
                    self.done = true;
                    self.guard.armed = false;
                    break;
                }
                Poll::Ready(None) => {
                    // The request ended without a response (cancelled): end the stream.
                    self.done = true;
                    self.guard.armed = false;
                    break;
                }
                Poll::Pending => break,
            }
        }
        if !chunk.is_empty() {
            // Something was sent: the next comment is due a whole interval from now.
            self.keep_alive.reset();
            return Poll::Ready(Some(Ok(Bytes::from(chunk))));
        }
        if self.done {
            return Poll::Ready(None);
        }
        if self.keep_alive.poll_tick(cx).is_ready() {
            return Poll::Ready(Some(Ok(Bytes::from_static(super::KEEP_ALIVE_COMMENT))));
        }
        Poll::Pending
    }
}
