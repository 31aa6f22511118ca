//! Stateless 2025 requests (`HttpOptions::stateless`): each POST is a session of its own, and a cancel finds the
//! request it means by its caller and id.

use std::collections::HashMap;
use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex, Weak};

use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use serde_json::Value;
use tokio::sync::oneshot;

use super::streams::{JsonRoute, Route};
use super::{json_body, priming_frame, sse_response};
use crate::auth::AuthInfo;
use crate::base::sink::NoSink;
use crate::base::sync::Unpoisoned;
use crate::context::HttpRequest;
use crate::dispatch::{Origin, Sink};
use crate::era::v2025::Session;
use crate::store::{EventStore, MemoryEventStore};
use crate::transport::http::guards::check_version;
use crate::transport::http::HttpState;
use crate::wire::jsonrpc::{Incoming, RequestId};

pub(super) async fn post_stateless(
    state: &Arc<HttpState>,
    headers: &HeaderMap,
    message: Incoming,
    is_initialize: bool,
    http: Arc<HttpRequest>,
    caller: String,
) -> Response {
    let version = match check_version(headers) {
        Ok(v) => v,
        Err(r) if !is_initialize => return r,
        Err(_) => "2025-03-26",
    };
    match message {
        Incoming::Notification { method, params, .. } => {
            if method == "notifications/cancelled" {
                cancel(state, &caller, params.as_ref());
            }
            StatusCode::ACCEPTED.into_response()
        }
        Incoming::Response { .. } => StatusCode::ACCEPTED.into_response(),
        Incoming::Request { ref id, .. } => {
            let id = id.clone();
            let session = Session::new(state.server.clone(), Arc::new(NoSink));
            // No session outlives this request: its tasks cannot be listed by session.
            session.connection().set_stateless();
            if !is_initialize {
                session.preinitialize(version);
            }
            let entry = StatelessEntry::register(state, caller, id.clone(), &session);
            if state.options.json_response {
                return answer_json(&session, message, http, entry, id).await;
            }
            answer_sse(state, session, message, http, entry, id)
        }
    }
}

/// A stateless `notifications/cancelled` (its `params`): cancels the request of `caller` with that id, when exactly
/// one has it.
fn cancel(state: &HttpState, caller: &str, params: Option<&Value>) {
    let id = params.and_then(|p| p.get("requestId")).cloned().and_then(|v| serde_json::from_value::<RequestId>(v).ok());
    if let Some(id) = id {
        let session = {
            let requests = state.sessions.stateless.locked();
            match requests.get(&(caller.to_owned(), id.clone())).map(Vec::as_slice) {
                // Exactly one request of this caller has that id: it is the one meant.
                Some([(_, only)]) => only.upgrade(),
                Some(several) => {
                    tracing::info!(%id, in_flight = several.len(), "cancel is ambiguous: ignored");
                    None
                }
                None => None,
            }
        };
        if let Some(session) = session {
            let reason = params.and_then(|p| p.get("reason")).and_then(Value::as_str).map(str::to_owned);
            session.cancel(&id, reason.as_deref());
        }
    }
}

/// Stateless JSON mode: the request's response as one JSON body (none, 202, when it ends without one).
async fn answer_json(
    session: &Arc<Session>,
    message: Incoming,
    http: Arc<HttpRequest>,
    entry: StatelessEntry,
    id: RequestId,
) -> Response {
    let (tx, rx) = oneshot::channel();
    let sink: Sink = Arc::new(JsonRoute { response: Mutex::new(Some(tx)), standalone: Arc::new(NoSink) });
    session.handle_routed(message, &Origin { sink, http: Some(http) });
    // If the client goes away, axum drops this future, and the guard cancels the request.
    let mut guard = StatelessGuard { _entry: entry, session: session.clone(), id, done: false };
    let answer = rx.await;
    guard.done = true;
    match answer {
        Ok(frame) => json_body(StatusCode::OK, frame),
        Err(_) => StatusCode::ACCEPTED.into_response(),
    }
}

/// Stateless SSE mode: the request's stream, primed, from an event store of its own.
fn answer_sse(
    state: &Arc<HttpState>,
    session: Arc<Session>,
    message: Incoming,
    http: Arc<HttpRequest>,
    entry: StatelessEntry,
    id: RequestId,
) -> Response {
    let store: Arc<dyn EventStore> = Arc::new(MemoryEventStore::new(64));
    let route = Route::new("stateless".into(), store.clone(), state.server.inner.limits().outbound, None);
    let priming = store.store("stateless", &priming_frame());
    let (events, backlog) = route.attach(Vec::new());
    session.handle_routed(message, &Origin { sink: route.clone(), http: Some(http) });
    // The entry leaves with the body, however the stream ends; a client gone before the response cancels.
    let on_disconnect: Box<dyn FnOnce() + Send> = Box::new(move || {
        let _entry = entry;
        if !route.is_closed() {
            session.cancel(&id, Some("the client disconnected"));
        }
    });
    sse_response(state, priming, (events, Some(backlog)), Some(on_disconnect), None, None)
}

/// A stateless request by its caller and its id.
type CallerId = (String, RequestId);

/// The stateless requests in flight: by caller and id, each entry's number and session.
pub(super) type StatelessTable = HashMap<CallerId, Vec<(u64, Weak<Session>)>>;

/// Who sent a stateless request, for matching its cancel: the authenticated subject, else the peer's address.
pub(super) fn caller_key(auth: Option<&AuthInfo>, peer: Option<std::net::IpAddr>) -> String {
    match (auth, peer) {
        (Some(a), _) => format!("subject:{}", a.principal()),
        (None, Some(ip)) => format!("address:{ip}"),
        (None, None) => String::new(),
    }
}

/// A stateless request's entry in the table of requests a cancel can find; removed when dropped.
struct StatelessEntry {
    state: Arc<HttpState>,
    key: (String, RequestId),
    entry: u64,
}

impl StatelessEntry {
    fn register(state: &Arc<HttpState>, caller: String, id: RequestId, session: &Arc<Session>) -> StatelessEntry {
        let entry = state.sessions.next_stateless.fetch_add(1, Ordering::Relaxed);
        let key = (caller, id);
        state.sessions.stateless.locked().entry(key.clone()).or_default().push((entry, Arc::downgrade(session)));
        StatelessEntry { state: state.clone(), key, entry }
    }
}

impl Drop for StatelessEntry {
    fn drop(&mut self) {
        let mut requests = self.state.sessions.stateless.locked();
        if let Some(entries) = requests.get_mut(&self.key) {
            entries.retain(|(e, _)| *e != self.entry);
            if entries.is_empty() {
                requests.remove(&self.key);
            }
        }
    }
}

/// Stateless JSON mode: forgets the request when the POST ends, and cancels it if the client went away first.
struct StatelessGuard {
    _entry: StatelessEntry,
    session: Arc<Session>,
    id: RequestId,
    done: bool,
}

impl Drop for StatelessGuard {
    fn drop(&mut self) {
        if !self.done {
            self.session.cancel(&self.id, Some("the client disconnected"));
        }
    }
}
