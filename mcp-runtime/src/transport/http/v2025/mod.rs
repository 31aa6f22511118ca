//! The 2025-11-25 front of the HTTP endpoint: sessions. An `initialize` POST opens one (within the session cap),
//! every later POST names it, GET opens its standalone stream (or resumes a stream with `Last-Event-ID`), DELETE
//! ends it. A POST is answered by an SSE stream, or one JSON body when the response is ready at once (or always,
//! by configuration); while a client leaves its session's streams unread, its new POSTs wait (back-pressure).
//! In the stateless mode every POST is a session of its own ([`stateless`]).

mod backpressure;
pub(crate) use backpressure::BACKED_UP_WAIT;
mod resume;
mod session;
mod stateless;
mod streams;

pub(super) use session::Sessions;

use std::collections::HashMap;
use std::sync::atomic::AtomicU64;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::body::Body;
use axum::http::{header, HeaderMap, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use tokio::sync::{mpsc, oneshot};
use tokio::time::Instant;

use super::first_poll::FirstPoll;
use super::guards::{accepts, check_version, error_response, names_2026_version, plain};
use super::{json_body, HttpState, SESSION_NAME};
use crate::auth::AuthInfo;
use crate::base::backlog::Backlog;
use crate::context::HttpRequest;
use crate::dispatch::{FrameSink, Origin, Sink};
use crate::era::v2025::Session;
use crate::wire::error::ErrorCode;
use crate::wire::jsonrpc::Incoming;
use backpressure::{frees_work, wait_for_reader};
use session::{new_session_id, HttpSession};
use stateless::{caller_key, post_stateless};
use streams::{Event, JsonRoute, OpenStream, Route, SseBody};

/// With an event log shared by several instances: this instance vouches for itself on it while the endpoint's
/// state lives, so that another instance following one of its streams can tell when it died.
pub(super) fn vouch_while_served(state: &Arc<HttpState>) {
    let Some(log) = state.server.inner.scale_out().event_log.clone() else { return };
    let weak = Arc::downgrade(state);
    let tag = resume::tag(&state.server.inner.scale_out().instance);
    tokio::spawn(resume::keep_vouching(log, tag, state.options.instance_lease, move || weak.strong_count() > 0));
}

/// A 2025 POST: `initialize` without a session id opens a session; anything else is served on the session it
/// names (or, in the stateless mode, on a session of its own).
pub(super) async fn post(state: &Arc<HttpState>, message: Incoming, http: Arc<HttpRequest>) -> Response {
    let headers = &http.headers;
    let is_initialize = matches!(&message, Incoming::Request { method, .. } if method == "initialize");

    if state.options.stateless {
        let caller = caller_key(http.auth.as_deref(), http.peer);
        return post_stateless(state, headers, message, is_initialize, http.clone(), caller).await;
    }

    let (http_session, created) = if is_initialize && headers.get(&SESSION_NAME).is_none() {
        match open_session(state, &http).await {
            Ok(s) => (s, true),
            Err(refused) => return refused,
        }
    } else {
        match named_session(state, &http, &message).await {
            Ok(s) => (s, false),
            Err(refused) => return refused,
        }
    };

    let mut response = match message {
        Incoming::Request { .. } => answer_request(state, &http_session, message, http).await,
        other => {
            http_session.session.handle(other);
            StatusCode::ACCEPTED.into_response()
        }
    };
    // Only a successful initialize makes a session.
    if created && http_session.session.is_initialized() {
        keep_session(state, &http_session, &mut response).await;
    }
    response
}

/// The session an `initialize` opens, within the cap on sessions; `Err`: the refusal.
async fn open_session(state: &Arc<HttpState>, http: &HttpRequest) -> Result<Arc<HttpSession>, Response> {
    // A session another instance could serve is opened while draining; one that lives only here is not.
    if state.is_draining() && state.server.inner.scale_out().session_store.is_none() {
        return Err(super::draining(state, "sessions"));
    }
    // Over every instance when they share a session store (this instance's own count if it cannot be read).
    let local = state.sessions.count();
    let count = match &state.server.inner.scale_out().session_store {
        Some(store) => store.count().await.unwrap_or(local),
        None => local,
    };
    // At the cap, the session idle longest makes room; only when none is idle is the initialize refused.
    if count >= state.options.max_sessions && !state.reclaim_idle_session() {
        state.refused("sessions");
        let mut response = error_response(
            StatusCode::SERVICE_UNAVAILABLE,
            crate::ErrorCode::OVERLOADED,
            format!("the server has its most sessions ({count}); try again later"),
        );
        response.headers_mut().insert(header::RETRY_AFTER, HeaderValue::from_static("1"));
        return Err(response);
    }
    let owner = http.auth.as_deref().map(AuthInfo::principal);
    let http_session =
        new_http_session(state, owner, http.peer, |standalone| Session::new(state.server.clone(), standalone));
    http_session.saw_scopes(&state.server, http.auth.as_deref());
    Ok(http_session)
}

/// The session a request names (its version checked), once its client reads what it was sent; `Err`: the refusal.
async fn named_session(
    state: &Arc<HttpState>,
    http: &HttpRequest,
    message: &Incoming,
) -> Result<Arc<HttpSession>, Response> {
    let s = session_of(state, &http.headers, http.auth.as_deref()).await?;
    check_version(&http.headers)?;
    s.saw_scopes(&state.server, http.auth.as_deref());
    // One atomic load while the client keeps up; only past the soft bound is the message looked at.
    if s.outbound.is_backed_up() && !frees_work(message) {
        if let Err(refused) = wait_for_reader(&s, message).await {
            state.refused("backlog");
            return Err(refused);
        }
    }
    Ok(s)
}

/// Keeps a session its `initialize` made: its id on the response, in this instance's map, and in the shared store
/// (before the client hears of it, so that its next request finds it on any instance).
async fn keep_session(state: &Arc<HttpState>, http_session: &Arc<HttpSession>, response: &mut Response) {
    let id = new_session_id();
    if let Ok(v) = HeaderValue::from_str(&id) {
        response.headers_mut().insert(SESSION_NAME.clone(), v);
    }
    http_session.session.connection().set_session_id(&id);
    if let Some(key) = http_session.session.connection().session_key() {
        http_session.set_log_key(key);
    }
    state.sessions.insert(id, http_session.clone());
    if let Some(store) = &state.server.inner.scale_out().session_store {
        share(state, http_session);
        let key = http_session.session.connection().session_key();
        if let (Some(key), Some(record)) = (key, http_session.session.record(http_session.owner.clone())) {
            if let Err(e) = store.save(&key, &record, state.options.session_idle_timeout).await {
                tracing::warn!(error = %e, "a new session could not be stored: only this instance serves it");
            }
        }
    }
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
            Ok(frame) => json_body(StatusCode::OK, frame),
            // Cancelled: there is no response to give.
            Err(_) => StatusCode::ACCEPTED.into_response(),
        };
    }
    let id = match &message {
        Incoming::Request { id, .. } => Some(id.clone()),
        _ => None,
    };
    let first_poll = FirstPoll::<Route>::new(state.server.inner.limits().outbound);
    http_session.session.handle_routed(message, &Origin { sink: first_poll.clone(), http: Some(http) });
    let answer = first_poll.decide(|| {
        let route = http_session.new_route();
        if let (Some(logged), Some(id)) = (&http_session.logged, &id) {
            // Another instance that resumes the stream knows which request to answer if this one dies.
            logged.opened(&route.name, id);
        }
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
        Ok(frame) => json_body(StatusCode::OK, frame),
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
        keep_alive: super::keep_alive_timer(state.options.keep_alive),
        _counted: state.server.inner.metrics().map(|m| m.stream(crate::Era::V2025.name())),
    };
    Response::builder()
        .status(StatusCode::OK)
        .header(header::CONTENT_TYPE, "text/event-stream")
        .header(header::CACHE_CONTROL, "no-cache")
        .header(super::ACCEL_BUFFERING.clone(), HeaderValue::from_static("no"))
        .body(Body::from_stream(body))
        .unwrap_or_else(|_| StatusCode::INTERNAL_SERVER_ERROR.into_response())
}

pub(super) async fn get(state: &Arc<HttpState>, headers: HeaderMap, auth: Option<Arc<AuthInfo>>) -> Response {
    // The 2026 era has no standalone stream (change notifications come through `subscriptions/listen`), and no
    // session to end.
    if state.options.stateless || names_2026_version(&headers) {
        return (StatusCode::METHOD_NOT_ALLOWED, [(header::ALLOW, "POST")]).into_response();
    }
    if let Err(r) = check_version(&headers) {
        return r;
    }
    if !accepts(&headers, &["text/event-stream"]) {
        return plain(StatusCode::NOT_ACCEPTABLE, "not acceptable: the client must accept text/event-stream");
    }
    let http_session = match session_of(state, &headers, auth.as_deref()).await {
        Ok(s) => s,
        Err(r) => return r,
    };
    if let Err(r) = check_version(&headers) {
        return r;
    }
    let last = headers.get("last-event-id").and_then(|v| v.to_str().ok()).map(str::to_owned);
    if last.is_none() && state.is_draining() {
        return super::draining(state, "standalone streams");
    }
    match last {
        Some(last) => resume_stream(state, &http_session, &last).await,
        None => standalone_stream(state, &http_session),
    }
}

/// The session's standalone stream, opened anew.
fn standalone_stream(state: &Arc<HttpState>, http_session: &Arc<HttpSession>) -> Response {
    let route = http_session.standalone.clone();
    let (events, backlog) = route.attach(Vec::new());
    let priming = http_session.store.store(&route.name, &priming_frame());
    sse_response(state, priming, (events, Some(backlog)), None, Some(http_session), None)
}

/// The answer to a GET with a `Last-Event-ID`: the stream it names, resumed after it.
async fn resume_stream(state: &Arc<HttpState>, http_session: &Arc<HttpSession>, id: &str) -> Response {
    // A draining instance resumes a request's stream (it ends with its answer), not a standalone stream, which would
    // stay open and hold the drain to its timeout: its client reconnects, elsewhere.
    let standalone_while_draining = |stream: &str| state.is_draining() && stream.ends_with(STANDALONE);
    let (stream, _) = match http_session.store.replay_after(id) {
        Some(replay) if standalone_while_draining(&replay.0) => return super::draining(state, "standalone streams"),
        Some(replay) => replay,
        // Another instance's stream: resumed from the event log.
        None if http_session.logged.is_some() && !id.starts_with(&*http_session.tag) => {
            if resume::split_id(id).is_some_and(|(stream, _)| standalone_while_draining(stream)) {
                return super::draining(state, "standalone streams");
            }
            return resume_elsewhere(state, http_session, id).await;
        }
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
    };
    match http_session.route(&stream) {
        // What to replay is read again under the route's lock, the one `send` stores under, so an event stored
        // meanwhile (the response, often) is replayed or sent live, never neither.
        Some(route) => {
            let (events, backlog) = route.resume(id);
            let priming = http_session.store.store(&route.name, &priming_frame());
            sse_response(state, priming, (events, Some(backlog)), None, Some(http_session), Some(&route.name))
        }
        // The stream ended (its request was answered) and its route is gone: everything it sent is stored now,
        // so the replay is read again; then the stream ends.
        None => replay_ended(state, http_session, &stream, id),
    }
}

/// A stream that ended (its route is gone) replayed after `last` from the session's event store, then ended.
fn replay_ended(state: &Arc<HttpState>, http_session: &Arc<HttpSession>, stream: &str, last: &str) -> Response {
    let missed = http_session.store.replay_after(last).map(|(_, m)| m).unwrap_or_default();
    let (tx, rx) = mpsc::unbounded_channel();
    for (id, frame) in missed.into_iter().filter(|(_, f)| !f.is_empty()) {
        let _ = tx.send((id, frame.into()));
    }
    drop(tx);
    let priming = http_session.store.store(stream, &priming_frame());
    sse_response(state, priming, (rx, None), None, Some(http_session), Some(stream))
}

/// The answer to a `Last-Event-ID` of another instance's stream, from the event log.
async fn resume_elsewhere(state: &Arc<HttpState>, http_session: &Arc<HttpSession>, id: &str) -> Response {
    let not_kept = |why: &str| {
        error_response(
            StatusCode::BAD_REQUEST,
            ErrorCode::INVALID_REQUEST,
            format!(
                "Last-Event-ID {id:?} is not kept ({why}): the events after it cannot be replayed; open the stream \
                 again without Last-Event-ID"
            ),
        )
    };
    let (Some(log), Some(key)) =
        (&state.server.inner.scale_out().event_log, http_session.session.connection().session_key())
    else {
        return not_kept("unknown");
    };
    let Some((stream, after)) = resume::split_id(id).and_then(|(s, n)| Some((s.to_owned(), n.parse::<u64>().ok()?)))
    else {
        return not_kept("unknown");
    };
    let slice = match resume::first_read(&**log, &key, &stream, after).await {
        Ok(Some(slice)) => slice,
        Ok(None) => return not_kept("too old, or unknown"),
        Err(e) => {
            tracing::warn!(error = %e, "the event log could not be read to resume a stream");
            return not_kept("the event log could not be read");
        }
    };
    let limits = state.server.inner.limits().outbound;
    if stream.ends_with(STANDALONE) {
        // Another instance's standalone stream: what it sent after the id, then this instance's own, live.
        let missed =
            resume::read_rest(&**log, &key, &stream, slice, after, crate::store::events::DEFAULT_LOG_EVENTS).await;
        let (events, backlog) = http_session.standalone.attach(missed);
        let priming = http_session.store.store(&http_session.standalone.name, &priming_frame());
        return sse_response(state, priming, (events, Some(backlog)), None, Some(http_session), None);
    }
    // A request's stream: replayed, then followed until it ends (or its instance stops: then its request is
    // answered with an error). The priming event repeats the id resumed from.
    let (tx, rx) = mpsc::unbounded_channel();
    let backlog = Arc::new(Backlog::within(limits, http_session.outbound.clone()));
    let request = resume::request_of(&**log, &key, &stream).await;
    let followed = resume::Followed {
        log: log.clone(),
        key,
        stream,
        request,
        lease: state.options.instance_lease,
        quiet: state.options.session_idle_timeout,
    };
    tokio::spawn(resume::follow(followed, slice, after, tx, backlog.clone()));
    sse_response(state, id.to_owned(), (rx, Some(backlog)), None, Some(http_session), None)
}

pub(super) async fn delete(state: &Arc<HttpState>, headers: HeaderMap, auth: Option<Arc<AuthInfo>>) -> Response {
    if state.options.stateless || !state.options.allow_delete || names_2026_version(&headers) {
        return (StatusCode::METHOD_NOT_ALLOWED, [(header::ALLOW, "GET, POST")]).into_response();
    }
    if let Err(r) = check_version(&headers) {
        return r;
    }
    let http_session = match session_of(state, &headers, auth.as_deref()).await {
        Ok(s) => s,
        Err(r) => return r,
    };
    let id = headers.get(&SESSION_NAME).and_then(|v| v.to_str().ok()).unwrap_or_default().to_owned();
    let key = http_session.session.connection().session_key();
    // Forgotten by the store first, then here: a request of this session that comes meanwhile (its stream
    // reconnecting, a late cancel) finds it here. The other way round, it found it in the store only, and rebuilt a
    // copy of it here that nothing ended (counted open until its idle expiry).
    if let (Some(key), Some(store)) = (&key, &state.server.inner.scale_out().session_store) {
        if let Err(e) = store.remove(key).await {
            tracing::warn!(error = %e, "an ended session could not be removed from the session store");
        }
    }
    state.sessions.remove(&id);
    http_session.end("the client ended the session");
    // Ended everywhere: the other instances end their copies.
    if let Some(key) = key {
        if state.server.inner.scale_out().hub.is_some() {
            state.server.publish(crate::server::hub::Change::SessionEnded { session: key });
        }
    }
    StatusCode::OK.into_response()
}

/// The session a request names; one that belongs to another principal (a session is bound to the one that opened
/// it) is refused.
async fn session_of(
    state: &Arc<HttpState>,
    headers: &HeaderMap,
    auth: Option<&AuthInfo>,
) -> Result<Arc<HttpSession>, Response> {
    let Some(id) = headers.get(&SESSION_NAME).and_then(|v| v.to_str().ok()) else {
        return Err(plain(StatusCode::BAD_REQUEST, "bad request: the Mcp-Session-Id header is missing"));
    };
    let found = match state.sessions.get(id) {
        // Ended on another instance: this copy is forgotten.
        Some(s) if s.session.has_ended() => {
            state.sessions.remove(id);
            None
        }
        Some(s) => Some(s),
        None => restore(state, id).await,
    };
    match found {
        Some(s) if s.owner.is_some() && s.owner != auth.map(AuthInfo::principal) => Err(error_response(
            StatusCode::FORBIDDEN,
            ErrorCode::INVALID_REQUEST,
            "forbidden: this session belongs to another principal; start a session of your own with initialize",
        )),
        Some(s) => {
            s.touch();
            s.touch_stored(state);
            Ok(s)
        }
        None => Err(error_response(
            StatusCode::NOT_FOUND,
            ErrorCode(-32001),
            "session not found: it ended or never existed",
        )),
    }
}

/// What a session's standalone stream's name ends with (after the instance's tag, when there is an event log).
const STANDALONE: &str = "standalone";

/// How long a session store that cannot be read is asked again, and how often.
const STORE_RETRY_FOR: Duration = Duration::from_secs(5);
const STORE_RETRY_EVERY: Duration = Duration::from_millis(200);

/// A session this instance does not hold, rebuilt from the session store if another instance opened it.
async fn restore(state: &Arc<HttpState>, id: &str) -> Option<Arc<HttpSession>> {
    let store = state.server.inner.scale_out().session_store.as_ref()?;
    let key = crate::dispatch::session_key_of(id);
    // A store that cannot be read (its Redis failing over to a replica, say) is asked again for a few seconds before
    // the session counts as not found: a client told 404 would start over without its session.
    let deadline = Instant::now() + STORE_RETRY_FOR;
    let record = loop {
        match store.load(&key).await {
            Ok(record) => break record?,
            Err(e) if Instant::now() >= deadline => {
                tracing::warn!(error = %e, "could not read the session store: the session is not found here");
                return None;
            }
            Err(e) => {
                tracing::debug!(error = %e, "could not read the session store: asking again");
                tokio::time::sleep(STORE_RETRY_EVERY).await;
            }
        }
    };
    let owner = record.owner.clone();
    let fresh = new_http_session(state, owner, None, |standalone| {
        Session::restore(state.server.clone(), standalone, id, record)
    });
    fresh.set_log_key(key);
    // Two requests of one session may rebuild it at once: the first one kept is the one both use.
    let kept = state.sessions.insert_new(id, fresh.clone());
    if Arc::ptr_eq(&kept, &fresh) {
        tracing::debug!("serving a session another instance opened");
        share(state, &kept);
    }
    Some(kept)
}

/// A session's HTTP side: its event store, standalone stream and bounds, around the session `make` builds.
fn new_http_session(
    state: &Arc<HttpState>,
    owner: Option<String>,
    peer: Option<std::net::IpAddr>,
    make: impl FnOnce(Sink) -> Arc<Session>,
) -> Arc<HttpSession> {
    let mut store = state.sessions.new_store();
    // With an event log, stream names carry this instance's tag, and what the store keeps goes to the log too.
    let (logged, tag): (_, Arc<str>) = match &state.server.inner.scale_out().event_log {
        Some(log) => {
            let logged = Arc::new(resume::LoggedStore::new(store, log.clone()));
            store = logged.clone();
            (Some(logged), resume::tag(&state.server.inner.scale_out().instance))
        }
        None => (None, Arc::from("")),
    };
    let limits = state.server.inner.limits().outbound;
    let outbound = Arc::new(Backlog::new(limits));
    let standalone = Route::new(format!("{tag}{STANDALONE}"), store.clone(), limits, Some(outbound.clone()));
    let session = make(standalone.clone());
    Arc::new(HttpSession {
        session,
        store,
        logged,
        tag,
        standalone,
        outbound,
        refused: AtomicU64::new(0),
        routes: Mutex::new(HashMap::new()),
        next_stream: AtomicU64::new(1),
        last_seen: Mutex::new(Instant::now()),
        last_stored: Mutex::new(Instant::now()),
        open_streams: AtomicU64::new(0),
        owner,
        peer,
        scopes: Mutex::new(None),
        _timing: state
            .server
            .inner
            .metrics()
            .map(|m| m.session(crate::Era::V2025.name(), crate::metrics::Transport::Tcp)),
    })
}

/// With a session store: the session's record follows its changes (log level, subscriptions), and the session
/// ends here when another instance ends it.
fn share(state: &Arc<HttpState>, http_session: &Arc<HttpSession>) {
    let Some(store) = state.server.inner.scale_out().session_store.clone() else { return };
    let idle = state.options.session_idle_timeout;
    let owner = http_session.owner.clone();
    http_session.session.on_changed(move |session| {
        let (Some(key), Some(record)) = (session.connection().session_key(), session.record(owner.clone())) else {
            return;
        };
        // The other instances' copies take the change at once; the store keeps it for copies made later.
        let server = session.connection().server();
        if server.inner.scale_out().hub.is_some() {
            let change =
                crate::server::hub::Change::SessionChanged { session: key.clone(), record: Box::new(record.clone()) };
            server.publish(change);
        }
        let store = store.clone();
        tokio::spawn(async move {
            if let Err(e) = store.save(&key, &record, idle).await {
                tracing::warn!(error = %e, "a session's change could not be stored");
            }
        });
    });
    let standalone = Arc::downgrade(&http_session.standalone);
    http_session.session.on_ended(move || {
        if let Some(standalone) = standalone.upgrade() {
            standalone.close();
        }
    });
}
