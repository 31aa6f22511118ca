//! Streamable HTTP (MCP 2025-11-25): one endpoint; POST carries client messages, answered by an SSE stream (or one
//! JSON body when the response is ready at once, or always, by configuration); GET opens the session's standalone
//! stream; DELETE ends the session. Sessions have random ids; every stream's events are kept in an event store so a
//! client whose stream dropped resumes with `Last-Event-ID` and loses nothing.

// Handlers return axum's `Response` as their error, as axum code does.
#![allow(clippy::result_large_err)]

mod auth;
mod connections;
mod event_store;
mod first_poll;
mod guards;
mod options;
mod serve;
mod session;
mod stateless;
mod streams;
mod v2026;

pub use event_store::{
    EventStore, EventStoreFactory, MemoryEventStore, MemoryEventStoreFactory, DEFAULT_EVENT_STORE_BYTES,
    DEFAULT_EVENT_STORE_EVENTS, DEFAULT_EVENT_STORE_TOTAL_BYTES, DELIVERED_EVENTS,
};

use std::collections::HashMap;
use std::future::Future;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, Weak};
use std::task::{Context as TaskContext, Poll};
use std::time::{Duration, Instant};

use axum::body::{Body, Bytes};
use axum::extract::State as AxumState;
use axum::http::{header, HeaderMap, HeaderName, HeaderValue, Method, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::any;
use axum::Router;
use tokio::sync::{mpsc, oneshot};

use crate::auth::AuthInfo;
use crate::base::backlog::{Admit, Backlog, OutboundLimits};
use crate::base::sync::Unpoisoned;
use crate::context::HttpRequest;
use crate::dispatch::{FrameSink, Origin, Sink};
use crate::era::v2025::Session;
use crate::server::Server;
use crate::wire::error::{Error, ErrorCode};
use crate::wire::jsonrpc::{Frame, Incoming};
use crate::wire::protocol::SUPPORTED_PROTOCOL_VERSIONS;
use first_poll::FirstPoll;
use guards::*;
pub use options::HttpOptions;
use session::*;
use stateless::{caller_key, post_stateless, StatelessTable};
use streams::*;

/// The header that carries the session id.
pub const SESSION_HEADER: &str = "mcp-session-id";
/// The header that carries the protocol version.
pub const VERSION_HEADER: &str = "mcp-protocol-version";
/// The same two names parsed once: a lookup by `&str` parses and validates the name every time.
static SESSION_NAME: HeaderName = HeaderName::from_static(SESSION_HEADER);
static VERSION_NAME: HeaderName = HeaderName::from_static(VERSION_HEADER);

async fn endpoint(AxumState(state): AxumState<Arc<HttpState>>, request: axum::extract::Request) -> Response {
    let (parts, body) = request.into_parts();
    let (method, mut headers) = (parts.method, parts.headers);
    if let Err(r) = check_origin(&state.options, &state.refused, &headers, parts.uri.authority().map(|a| a.as_str())) {
        return r;
    }
    let query = parts.uri.query();
    // The path the client called, what a DPoP proof's `htu` names (or the resource's path): with the prefix of a
    // `Router::nest` the endpoint is mounted under, which axum keeps in `OriginalUri`.
    let path = parts.extensions.get::<axum::extract::OriginalUri>().map_or(parts.uri.path(), |u| u.0.path());
    // Without the server's own authorization, a layer in front may have said who is calling.
    let mut auth = parts.extensions.get::<AuthInfo>().cloned().map(Arc::new);
    if let Some((guard, refusal)) = state.server.inner.auth.as_ref().zip(crate::auth::Guard::token_in_query(query)) {
        return auth::refused(guard, &refusal);
    }
    if let (Some(guard), false) = (&state.server.inner.auth, method == Method::POST) {
        // A POST is checked once its body says what it asks for (its scopes); the rest at once.
        match auth::admit(guard, &mut headers, (method.as_str(), path, query), &[]).await {
            Ok(admitted) => auth = Some(admitted),
            Err(refused) => return refused,
        }
    }
    match method {
        Method::POST => {
            let peer = parts.extensions.get::<axum::extract::ConnectInfo<SocketAddr>>().map(|c| c.0.ip());
            post(state, headers, (path, query), body, auth, peer).await
        }
        Method::GET => get(state, headers, auth),
        Method::DELETE => delete(state, headers, auth),
        _ => (StatusCode::METHOD_NOT_ALLOWED, [(header::ALLOW, "GET, POST, DELETE")]).into_response(),
    }
}

/// The session a request names; one that belongs to another principal (a session is bound to the one that opened
/// it) is refused.
fn session_of(state: &HttpState, headers: &HeaderMap, auth: Option<&AuthInfo>) -> Result<Arc<HttpSession>, Response> {
    let Some(id) = headers.get(&SESSION_NAME).and_then(|v| v.to_str().ok()) else {
        return Err(plain(StatusCode::BAD_REQUEST, "bad request: the Mcp-Session-Id header is missing"));
    };
    match state.session(id) {
        Some(s) if s.owner.is_some() && s.owner != auth.map(AuthInfo::principal) => Err(error_response(
            StatusCode::FORBIDDEN,
            ErrorCode::INVALID_REQUEST,
            "forbidden: this session belongs to another principal; start a session of your own with initialize",
        )),
        Some(s) => {
            s.touch();
            Ok(s)
        }
        None => Err(error_response(
            StatusCode::NOT_FOUND,
            ErrorCode(-32001),
            "session not found: it ended or never existed",
        )),
    }
}

/// How much more than the limit a body may send before it is refused unread: 64 MiB.
const DISCARD_BYTES: u64 = 64 << 20;

/// A request body, as [`read_body`] read it.
enum BodyRead {
    /// The whole body, within the limit.
    Whole(Vec<u8>),
    /// Over the limit.
    TooLarge,
    /// It did not arrive within the body read timeout.
    TimedOut,
    /// The connection broke off in the middle, or the body's framing was wrong.
    Broken,
}

/// Reads a request body of at most `limit` bytes within `timeout`. Of a longer one, the rest is read and thrown
/// away (up to [`DISCARD_BYTES`] more, within the same timeout) before the 413 goes out: a connection closed with
/// part of its upload unread is reset, and a client still sending (one that did not ask for `100 Continue`) would
/// see its writes fail instead of the answer. A body declared longer than that is refused without reading on.
async fn read_body(body: Body, limit: usize, declared: Option<u64>, timeout: Duration) -> BodyRead {
    let deadline = tokio::time::Instant::now() + timeout;
    let (limit, most) = (limit as u64, (limit as u64).saturating_add(DISCARD_BYTES));
    if declared.is_some_and(|n| n > most) {
        return BodyRead::TooLarge;
    }
    let mut stream = body.into_data_stream();
    let mut kept = Vec::with_capacity(declared.unwrap_or(0).min(limit) as usize);
    let mut read = 0u64;
    loop {
        let next = std::future::poll_fn(|cx| futures_core::Stream::poll_next(Pin::new(&mut stream), cx));
        let chunk = match (tokio::time::timeout_at(deadline, next).await, read > limit) {
            (Ok(Some(Ok(chunk))), _) => chunk,
            (Ok(None), false) => return BodyRead::Whole(kept),
            (Err(_), false) => return BodyRead::TimedOut,
            (Ok(Some(Err(_))), false) => return BodyRead::Broken,
            // Over the limit, however the rest went.
            (_, true) => return BodyRead::TooLarge,
        };
        read += chunk.len() as u64;
        if read <= limit {
            kept.extend_from_slice(&chunk);
        } else if read > most {
            return BodyRead::TooLarge;
        } else if kept.capacity() > 0 {
            kept = Vec::new();
        }
    }
}

async fn post(
    state: Arc<HttpState>,
    mut headers: HeaderMap,
    (path, query): (&str, Option<&str>),
    body: Body,
    auth: Option<Arc<AuthInfo>>,
    peer: Option<std::net::IpAddr>,
) -> Response {
    if !accepts(&headers, &["application/json", "text/event-stream"]) {
        return plain(
            StatusCode::NOT_ACCEPTABLE,
            "not acceptable: the client must accept both application/json and text/event-stream",
        );
    }
    let json_content = headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.split(';').next().unwrap_or_default().trim().eq_ignore_ascii_case("application/json"));
    if !json_content {
        return plain(StatusCode::UNSUPPORTED_MEDIA_TYPE, "unsupported media type: the body must be application/json");
    }
    let limit = state.options.max_body_bytes;
    // A client that waits for `100 Continue` before sending a declared length over the limit is refused at once,
    // before it uploads anything. (One that sends without waiting is read on, so it sees the answer.)
    let declared =
        headers.get(header::CONTENT_LENGTH).and_then(|v| v.to_str().ok()).and_then(|v| v.parse::<u64>().ok());
    let waits = headers.get(header::EXPECT).is_some_and(|v| v.as_bytes().eq_ignore_ascii_case(b"100-continue"));
    let over_limit = || {
        error_response(
            StatusCode::PAYLOAD_TOO_LARGE,
            ErrorCode::INVALID_REQUEST,
            format!("the request body is over the limit of {limit} bytes"),
        )
    };
    if waits && declared.is_some_and(|n| n > limit as u64) {
        return over_limit();
    }
    let bytes = match read_body(body, limit, declared, state.options.body_read_timeout).await {
        BodyRead::Whole(bytes) => bytes,
        BodyRead::TooLarge => return over_limit(),
        BodyRead::TimedOut => {
            return error_response(
                StatusCode::REQUEST_TIMEOUT,
                ErrorCode::INVALID_REQUEST,
                format!("the request body did not arrive within {:?}", state.options.body_read_timeout),
            )
        }
        BodyRead::Broken => {
            return error_response(StatusCode::BAD_REQUEST, ErrorCode::INVALID_REQUEST, "the request body broke off")
        }
    };
    let message = match Incoming::parse(&bytes) {
        Ok(m) => m,
        Err(rejected) => {
            let body = Frame::error(rejected.id.as_ref(), &rejected.error);
            return (StatusCode::BAD_REQUEST, [(header::CONTENT_TYPE, "application/json")], body.into_text())
                .into_response();
        }
    };
    let auth = match &state.server.inner.auth {
        Some(guard) => {
            let needed = match &message {
                Incoming::Request { method, params, .. } => state.server.scopes_needed(method, params.as_ref()),
                _ => &[],
            };
            match auth::admit(guard, &mut headers, ("POST", path, query), needed).await {
                Ok(admitted) => Some(admitted),
                Err(refused) => return refused,
            }
        }
        None => auth,
    };
    let http = Arc::new(HttpRequest { headers, auth, peer });
    let headers = &http.headers;
    if v2026::is_2026(headers, &message) {
        return v2026::post(&state, headers, message, http.clone()).await;
    }
    let is_initialize = matches!(&message, Incoming::Request { method, .. } if method == "initialize");

    if state.options.stateless {
        let caller = caller_key(http.auth.as_deref(), peer);
        return post_stateless(&state, headers, message, is_initialize, http.clone(), caller).await;
    }

    let (http_session, created) = if is_initialize && headers.get(&SESSION_NAME).is_none() {
        let count = state.sessions.locked().len();
        // At the cap, the session idle longest makes room; only when none is idle is the initialize refused.
        if count >= state.options.max_sessions && !state.reclaim_idle_session() {
            let mut response = error_response(
                StatusCode::SERVICE_UNAVAILABLE,
                crate::ErrorCode::OVERLOADED,
                format!("the server has its most sessions ({count}); try again later"),
            );
            response.headers_mut().insert(header::RETRY_AFTER, HeaderValue::from_static("1"));
            return response;
        }
        let store = state.new_store();
        let limits = state.server.inner.outbound;
        let outbound = Arc::new(Backlog::new(limits));
        let standalone = Route::new("standalone".into(), store.clone(), limits, Some(outbound.clone()));
        let session = Session::new(state.server.clone(), standalone.clone());
        let http_session = Arc::new(HttpSession {
            session,
            store,
            standalone,
            outbound,
            refused: AtomicU64::new(0),
            routes: Mutex::new(HashMap::new()),
            next_stream: AtomicU64::new(1),
            last_seen: Mutex::new(Instant::now()),
            open_streams: AtomicU64::new(0),
            owner: http.auth.as_deref().map(AuthInfo::principal),
            peer,
        });
        (http_session, true)
    } else {
        let s = match session_of(&state, headers, http.auth.as_deref()) {
            Ok(s) => s,
            Err(r) => return r,
        };
        if let Err(r) = check_version(headers) {
            return r;
        }
        // One atomic load while the client keeps up; only past the soft bound is the message looked at.
        if s.outbound.is_backed_up() && !frees_work(&message) {
            if let Err(refused) = wait_for_reader(&s, &message).await {
                return refused;
            }
        }
        (s, false)
    };

    let mut response = match message {
        Incoming::Request { .. } => answer_request(&state, &http_session, message, http).await,
        other => {
            http_session.session.handle(other);
            StatusCode::ACCEPTED.into_response()
        }
    };
    if created {
        // Only a successful initialize makes a session.
        if http_session.session.is_initialized() {
            let id = new_session_id();
            if let Ok(v) = HeaderValue::from_str(&id) {
                response.headers_mut().insert(SESSION_NAME.clone(), v);
            }
            state.sessions.locked().insert(id, http_session);
        }
    }
    response
}

/// How long a POST waits for its session's unread streams to drain below the soft bound before it is refused (503,
/// `Retry-After`): 5 s.
pub const BACKED_UP_WAIT: Duration = Duration::from_secs(5);

/// Whether a message frees work rather than makes it (an answer to the server's request, a cancel): admitted
/// however much waits unread.
fn frees_work(message: &Incoming) -> bool {
    match message {
        Incoming::Response { .. } => true,
        Incoming::Notification { method, .. } => method == "notifications/cancelled",
        Incoming::Request { .. } => false,
    }
}

/// Input is back-pressured, as flow control would: while more than the soft bound waits unread on a session's
/// streams (its GET stream, its POSTs' SSE streams), a new POST of it waits for them to drain, up to
/// [`BACKED_UP_WAIT`]; then it is refused with 503, `Retry-After` and -31000. It is refused before the server
/// reads what it asks, so no response it is owed is dropped.
async fn wait_for_reader(session: &HttpSession, message: &Incoming) -> Result<(), Response> {
    tracing::debug!("the client is not reading its session's streams: its POST waits");
    if tokio::time::timeout(BACKED_UP_WAIT, session.outbound.backed_off()).await.is_ok() {
        return Ok(());
    }
    let soft = session.session.connection().server().inner.outbound.soft_bytes;
    let refused = session.refused.fetch_add(1, Ordering::Relaxed) + 1;
    if refused.is_power_of_two() {
        tracing::warn!(
            refused,
            soft_bytes = soft,
            peer = ?session.peer,
            "a client is not reading its session's streams: refusing its new requests (503) until it does"
        );
    }
    let id = match message {
        Incoming::Request { id, .. } => Some(id),
        _ => None,
    };
    let error = Error::new(
        crate::ErrorCode::OVERLOADED,
        format!(
            "the client is not reading its session's streams: more than the soft bound of {soft} bytes waits \
             unread on them, for over {}s; read the session's streams (its GET stream, its requests' SSE streams) \
             and try again (or raise the bound with ServerBuilder::outbound_limits)",
            BACKED_UP_WAIT.as_secs()
        ),
    );
    let body = Frame::error(id, &error);
    let mut response =
        (StatusCode::SERVICE_UNAVAILABLE, [(header::CONTENT_TYPE, "application/json")], body.into_text())
            .into_response();
    response.headers_mut().insert(header::RETRY_AFTER, HeaderValue::from_static("1"));
    Err(response)
}

/// Sends a request to the session and answers with its stream (or its JSON response).
async fn answer_request(
    state: &HttpState,
    http_session: &Arc<HttpSession>,
    message: Incoming,
    http: Arc<HttpRequest>,
) -> Response {
    if state.options.json_response {
        let (tx, rx) = oneshot::channel();
        let sink: Sink =
            Arc::new(JsonRoute { response: Mutex::new(Some(tx)), standalone: http_session.standalone.clone() });
        http_session.session.handle_routed(message, &Origin { sink, http: Some(http) });
        return match rx.await {
            Ok(frame) => {
                (StatusCode::OK, [(header::CONTENT_TYPE, "application/json")], frame.into_text()).into_response()
            }
            // Cancelled: there is no response to give.
            Err(_) => StatusCode::ACCEPTED.into_response(),
        };
    }
    let id = match &message {
        Incoming::Request { id, .. } => Some(id.clone()),
        _ => None,
    };
    let first_poll = FirstPoll::<Route>::new(state.server.inner.outbound);
    http_session.session.handle_routed(message, &Origin { sink: first_poll.clone(), http: Some(http) });
    let answer = first_poll.decide(|| {
        let route = http_session.new_route();
        // The priming event comes first, so resuming from it replays everything the request sends.
        let priming = http_session.store.store(&route.name, &priming_frame());
        let (events, backlog) = route.attach(Vec::new());
        if let Some(id) = id {
            // A reader that stops reading the request's stream cancels the request.
            let session = Arc::downgrade(&http_session.session);
            route.on_stuck(move || {
                if let Some(session) = session.upgrade() {
                    session.cancel(&id, Some("the client stopped reading the request's stream"));
                }
            });
        }
        (route.clone(), (route, priming, events, backlog))
    });
    match answer {
        // The response came alone in the handler's first poll: nothing to stream or resume.
        Ok(frame) => (StatusCode::OK, [(header::CONTENT_TYPE, "application/json")], frame.into_text()).into_response(),
        Err((route, priming, events, backlog)) => {
            sse_response(state, priming, (events, Some(backlog)), None, Some(http_session), Some(&route.name))
        }
    }
}

/// The data of a priming event (empty), one allocation for the process.
fn priming_frame() -> Arc<str> {
    static EMPTY: std::sync::OnceLock<Arc<str>> = std::sync::OnceLock::new();
    EMPTY.get_or_init(|| Arc::from("")).clone()
}

/// An SSE response. `stream` names a session's stream that ends (a request's): once the body was read to its end,
/// the session's event store may forget it.
fn sse_response(
    state: &HttpState,
    priming_id: String,
    (events, backlog): (mpsc::UnboundedReceiver<Event>, Option<Arc<Backlog>>),
    on_disconnect: Option<Box<dyn FnOnce() + Send>>,
    session: Option<&Arc<HttpSession>>,
    stream: Option<&str>,
) -> Response {
    let retry = state.options.retry.as_millis();
    let priming = format!("id: {priming_id}\nretry: {retry}\ndata: \n\n");
    let delivered = session.zip(stream).map(|(s, name)| (s.store.clone(), name.to_owned()));
    let body = SseBody {
        priming: Some(priming),
        events,
        backlog,
        on_disconnect,
        _open: session.map(OpenStream::new),
        delivered,
    };
    Response::builder()
        .status(StatusCode::OK)
        .header(header::CONTENT_TYPE, "text/event-stream")
        .header(header::CACHE_CONTROL, "no-cache")
        .body(Body::from_stream(body))
        .unwrap_or_else(|_| StatusCode::INTERNAL_SERVER_ERROR.into_response())
}

fn get(state: Arc<HttpState>, headers: HeaderMap, auth: Option<Arc<AuthInfo>>) -> Response {
    // The 2026 era has no standalone stream: change notifications come through `subscriptions/listen`.
    if state.options.stateless || is_stateless_version(&headers) {
        return (StatusCode::METHOD_NOT_ALLOWED, [(header::ALLOW, "POST")]).into_response();
    }
    if let Err(r) = check_version(&headers) {
        return r;
    }
    if !accepts(&headers, &["text/event-stream"]) {
        return plain(StatusCode::NOT_ACCEPTABLE, "not acceptable: the client must accept text/event-stream");
    }
    let http_session = match session_of(&state, &headers, auth.as_deref()) {
        Ok(s) => s,
        Err(r) => return r,
    };
    if let Err(r) = check_version(&headers) {
        return r;
    }
    let last = headers.get("last-event-id").and_then(|v| v.to_str().ok()).map(str::to_owned);
    let replay = match &last {
        None => None,
        Some(id) => match http_session.store.replay_after(id) {
            Some(replay) => Some(replay),
            // Evicted (the store is bounded) or never sent: resuming would silently skip events, so say so.
            None => {
                return error_response(
                    StatusCode::BAD_REQUEST,
                    ErrorCode::INVALID_REQUEST,
                    format!(
                        "Last-Event-ID {id:?} is not kept (too old, or unknown): the events after it cannot be \
                         replayed; open the stream again without Last-Event-ID"
                    ),
                )
            }
        },
    };
    let (route, missed) = match (replay, last.as_deref()) {
        (Some((stream, _)), Some(last)) => match http_session.route(&stream) {
            // What to replay is read again under the route's lock, the one `send` stores under, so an event stored
            // meanwhile (the response, often) is replayed or sent live, never neither.
            Some(route) => {
                let (events, backlog) = route.resume(last);
                let priming = http_session.store.store(&route.name, &priming_frame());
                return sse_response(
                    &state,
                    priming,
                    (events, Some(backlog)),
                    None,
                    Some(&http_session),
                    Some(&route.name),
                );
            }
            // The stream ended (its request was answered) and its route is gone: everything it sent is stored now,
            // so the replay is read again; then the stream ends.
            None => {
                let missed = http_session.store.replay_after(last).map(|(_, m)| m).unwrap_or_default();
                let (tx, rx) = mpsc::unbounded_channel();
                for (id, frame) in missed.into_iter().filter(|(_, f)| !f.is_empty()) {
                    let _ = tx.send((id, frame.into()));
                }
                drop(tx);
                let priming = http_session.store.store(&stream, &priming_frame());
                return sse_response(&state, priming, (rx, None), None, Some(&http_session), Some(&stream));
            }
        },
        _ => (http_session.standalone.clone(), Vec::new()),
    };
    let (events, backlog) = route.attach(missed);
    let priming = http_session.store.store(&route.name, &priming_frame());
    sse_response(&state, priming, (events, Some(backlog)), None, Some(&http_session), None)
}

fn delete(state: Arc<HttpState>, headers: HeaderMap, auth: Option<Arc<AuthInfo>>) -> Response {
    if state.options.stateless || !state.options.allow_delete || is_stateless_version(&headers) {
        return (StatusCode::METHOD_NOT_ALLOWED, [(header::ALLOW, "GET, POST")]).into_response();
    }
    if let Err(r) = check_version(&headers) {
        return r;
    }
    let http_session = match session_of(&state, &headers, auth.as_deref()) {
        Ok(s) => s,
        Err(r) => return r,
    };
    let id = headers.get(&SESSION_NAME).and_then(|v| v.to_str().ok()).unwrap_or_default().to_owned();
    state.sessions.locked().remove(&id);
    http_session.end("the client ended the session");
    StatusCode::OK.into_response()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_real_loopback_names_and_addresses_are_loopback() {
        for host in [
            "localhost",
            "LOCALHOST",
            "LocalHost:8080",
            "127.0.0.1",
            "127.0.0.1:3000",
            "127.1.2.3:80",
            "[::1]",
            "[::1]:8000",
        ] {
            assert!(is_loopback_host(host), "{host} is loopback");
        }
        for host in [
            "127.evil.com",
            "127.0.0.1.attacker.example",
            "127.0.0.1.attacker.example:80",
            "localhost.evil.com",
            "evil.com",
            "[::2]:80",
            "0.0.0.0",
            "",
            "127.0.0.1@evil.com",
        ] {
            assert!(!is_loopback_host(host), "{host} is not loopback");
        }
    }
}
