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
mod modern;

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
use serde_json::Value;
use tokio::sync::{mpsc, oneshot};

use crate::auth::AuthInfo;
use crate::base::backlog::{Admit, Backlog, OutboundLimits};
use crate::base::sink::NoSink;
use crate::base::sync::Unpoisoned;
use crate::context::HttpRequest;
use crate::dispatch::{FrameSink, Origin, Sink};
use crate::era::v2025::Session;
use crate::server::Server;
use crate::wire::error::{Error, ErrorCode};
use crate::wire::jsonrpc::{self, Incoming, RequestId};
use crate::wire::protocol::SUPPORTED_PROTOCOL_VERSIONS;
use first_poll::FirstPoll;

/// The header that carries the session id.
pub const SESSION_HEADER: &str = "mcp-session-id";
/// The header that carries the protocol version.
pub const VERSION_HEADER: &str = "mcp-protocol-version";
/// The same two names parsed once: a lookup by `&str` parses and validates the name every time.
static SESSION_NAME: HeaderName = HeaderName::from_static(SESSION_HEADER);
static VERSION_NAME: HeaderName = HeaderName::from_static(VERSION_HEADER);

/// How the Streamable HTTP transport behaves.
///
/// ```no_run
/// use std::time::Duration;
///
/// # #[tokio::main]
/// # async fn main() -> std::io::Result<()> {
/// let options = mcp::HttpOptions::new()
///     .path("/api/mcp")
///     .allow_host("mcp.example.com")
///     .allow_origin("https://app.example.com")
///     .session_idle_timeout(Duration::from_secs(10 * 60));
/// assert!(options.allow_delete); // a default
///
/// let server = mcp::Server::builder().registered().build().unwrap();
/// server.serve_http(([0, 0, 0, 0], 8000).into(), options).await
/// # }
/// ```
#[derive(Clone)]
#[non_exhaustive]
pub struct HttpOptions {
    /// The endpoint's path. Default `/mcp`.
    pub path: String,
    /// Answer each request with one `application/json` body instead of an SSE stream. Notifications and requests
    /// to the client that belong to the request then go to the session's standalone (GET) stream.
    pub json_response: bool,
    /// No sessions: every POST stands alone, GET and DELETE get 405, and a client that disconnects cancels its
    /// request.
    pub stateless: bool,
    /// Whether DELETE may end a session (405 otherwise). Default true.
    pub allow_delete: bool,
    /// `Origin` values allowed besides loopback ones (`http://localhost:*`, `http://127.0.0.1:*`, `http://[::1]:*`).
    pub allowed_origins: Vec<String>,
    /// `Host` values allowed besides loopback ones.
    pub allowed_hosts: Vec<String>,
    /// Allow any `Origin` and `Host` (behind a proxy that checks them). Default false.
    pub allow_any_origin: bool,
    /// The largest request body, in bytes; larger ones get 413 (a client that sends one without waiting for
    /// `100 Continue` is read on, up to 64 MiB more, so that it reads the answer rather than a reset). Default 4 MiB.
    pub max_body_bytes: usize,
    /// A session unused this long is ended. Default 30 minutes.
    pub session_idle_timeout: Duration,
    /// The `retry:` hint sent on each stream. Default 1 s.
    pub retry: Duration,
    /// The most sessions at once. At it, a new `initialize` ends the idle session (no request in flight, no open
    /// stream, no task running) unused longest, taken from the principal (else client address) holding the most
    /// sessions, as idle expiry would; when none is idle, it gets 503 with `Retry-After`. Default 10 000.
    pub max_sessions: usize,
    /// How long a connection may take to send a request's headers, and how long it may stay idle between requests
    /// (`serve_http` only). Default 30 s.
    pub header_read_timeout: Duration,
    /// How long a request's body may take to arrive; a slower one gets 408. Default 30 s.
    pub body_read_timeout: Duration,
    /// How long a client may take no byte while the server has something to write to it; then its connection is
    /// closed (`serve_http` only). Default 30 s.
    pub write_timeout: Duration,
    /// The most connections at once (`serve_http` only). At it, a new connection closes the idle one (no request in
    /// progress) idle longest, taken from the peer address holding the most connections; when every one is busy,
    /// the newcomer gets 503 and is closed. Default 1 000.
    pub max_connections: usize,
    /// Where stream events are kept for resumption. Default: in memory, the newest 1024 events and 4 MiB of each
    /// session, 256 MiB for all sessions together ([`MemoryEventStoreFactory::default`]).
    pub event_store: Option<Arc<dyn EventStoreFactory>>,
}

impl Default for HttpOptions {
    fn default() -> Self {
        HttpOptions {
            path: "/mcp".into(),
            json_response: false,
            stateless: false,
            allow_delete: true,
            allowed_origins: Vec::new(),
            allowed_hosts: Vec::new(),
            allow_any_origin: false,
            max_body_bytes: 4 << 20,
            session_idle_timeout: Duration::from_secs(30 * 60),
            retry: Duration::from_secs(1),
            max_sessions: 10_000,
            header_read_timeout: Duration::from_secs(30),
            body_read_timeout: Duration::from_secs(30),
            write_timeout: Duration::from_secs(30),
            max_connections: 1_000,
            event_store: None,
        }
    }
}

impl HttpOptions {
    /// Default options.
    pub fn new() -> HttpOptions {
        HttpOptions::default()
    }
    /// Sets the endpoint's path.
    pub fn path(mut self, path: impl Into<String>) -> Self {
        self.path = path.into();
        self
    }
    /// Answers with JSON bodies instead of SSE streams.
    pub fn json_response(mut self, on: bool) -> Self {
        self.json_response = on;
        self
    }
    /// Serves without sessions.
    pub fn stateless(mut self, on: bool) -> Self {
        self.stateless = on;
        self
    }
    /// Allows or forbids DELETE.
    pub fn allow_delete(mut self, on: bool) -> Self {
        self.allow_delete = on;
        self
    }
    /// Allows an `Origin` (such as `https://app.example.com`).
    pub fn allow_origin(mut self, origin: impl Into<String>) -> Self {
        self.allowed_origins.push(origin.into());
        self
    }
    /// Allows a `Host`: `mcp.example.com` admits that name with any port (`Host: mcp.example.com:8770` too);
    /// `mcp.example.com:8443` admits only that port. Names compare without regard to case. Loopback names
    /// (`localhost`, `127.0.0.1`, `[::1]`) are always allowed.
    pub fn allow_host(mut self, host: impl Into<String>) -> Self {
        self.allowed_hosts.push(host.into());
        self
    }
    /// Allows every `Origin` and `Host`: only behind something that checks them.
    pub fn allow_any_origin(mut self, on: bool) -> Self {
        self.allow_any_origin = on;
        self
    }
    /// Sets the body limit.
    pub fn max_body_bytes(mut self, bytes: usize) -> Self {
        self.max_body_bytes = bytes;
        self
    }
    /// Sets the idle timeout of sessions.
    pub fn session_idle_timeout(mut self, timeout: Duration) -> Self {
        self.session_idle_timeout = timeout;
        self
    }
    /// Sets the `retry:` hint.
    pub fn retry(mut self, retry: Duration) -> Self {
        self.retry = retry;
        self
    }
    /// Sets the header read and idle timeout of connections.
    pub fn header_read_timeout(mut self, timeout: Duration) -> Self {
        self.header_read_timeout = timeout;
        self
    }
    /// Sets the body read timeout.
    pub fn body_read_timeout(mut self, timeout: Duration) -> Self {
        self.body_read_timeout = timeout;
        self
    }
    /// Sets the write timeout of connections.
    pub fn write_timeout(mut self, timeout: Duration) -> Self {
        self.write_timeout = timeout;
        self
    }
    /// Sets the most connections at once.
    pub fn max_connections(mut self, connections: usize) -> Self {
        self.max_connections = connections;
        self
    }
    /// Sets the most sessions at once.
    pub fn max_sessions(mut self, sessions: usize) -> Self {
        self.max_sessions = sessions;
        self
    }
    /// Uses another event store.
    pub fn event_store(mut self, factory: Arc<dyn EventStoreFactory>) -> Self {
        self.event_store = Some(factory);
        self
    }
}

// ---------------------------------------------------------------------------------------------------------------
// Streams

/// One SSE event on its way to a connection: its id and its data.
type Event = (String, Arc<str>);

/// A stream of a session: a request's (its notifications, requests to the client, then its response) or the
/// standalone one. Every event is stored; a connection, when one is attached, gets it live.
struct Route {
    name: String,
    store: Arc<dyn EventStore>,
    limits: OutboundLimits,
    /// The session's total of bytes waiting unread, which what waits on this stream counts in too.
    total: Option<Arc<Backlog>>,
    inner: Mutex<RouteInner>,
}

struct RouteInner {
    /// The connection reading the stream now, and the bytes waiting for it.
    live: Option<(mpsc::UnboundedSender<Event>, Arc<Backlog>)>,
    closed: bool,
    /// What to cancel if the reader stops reading (a request's stream: that request).
    on_stuck: Option<Box<dyn FnOnce() + Send>>,
}

impl Route {
    fn new(
        name: String,
        store: Arc<dyn EventStore>,
        limits: OutboundLimits,
        total: Option<Arc<Backlog>>,
    ) -> Arc<Route> {
        Arc::new(Route {
            name,
            store,
            limits,
            total,
            inner: Mutex::new(RouteInner { live: None, closed: false, on_stuck: None }),
        })
    }

    /// Sets what a reader that stops reading cancels.
    fn on_stuck(&self, cancel: impl FnOnce() + Send + 'static) {
        self.lock().on_stuck = Some(Box::new(cancel));
    }

    fn push(&self, frame: String, droppable: bool) {
        let mut inner = self.lock();
        if inner.closed {
            return;
        }
        // One allocation shared by the store and the live connection.
        let frame: Arc<str> = frame.into();
        let id = self.store.store(&self.name, &frame);
        let Some((live, backlog)) = &inner.live else { return };
        match backlog.admit(frame.len(), droppable) {
            Admit::Send => {
                if live.send((id, frame)).is_err() {
                    inner.live = None; // the connection is gone; the store keeps the rest for a resume
                }
            }
            Admit::Drop => {}
            Admit::Stuck => {
                // The reader stopped reading: it is detached (what is queued for it stays bounded, and the
                // connection's write timeout closes it), and what the stream was for is cancelled.
                inner.live = None;
                if let Some(cancel) = inner.on_stuck.take() {
                    drop(inner);
                    cancel();
                }
            }
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, RouteInner> {
        self.inner.locked()
    }

    /// Attaches a connection that resumes after `last_event_id`: the events stored after it are read under the
    /// same lock as `send`, so nothing falls in between and nothing comes twice.
    fn resume(&self, last_event_id: &str) -> (mpsc::UnboundedReceiver<Event>, Arc<Backlog>) {
        let inner = self.lock();
        let missed = self.store.replay_after(last_event_id).map(|(_, m)| m).unwrap_or_default();
        self.attach_locked(inner, missed)
    }

    /// Attaches a connection, first replaying `missed` to it; under the same lock as `send`.
    fn attach(&self, missed: Vec<(String, String)>) -> (mpsc::UnboundedReceiver<Event>, Arc<Backlog>) {
        let inner = self.lock();
        self.attach_locked(inner, missed)
    }

    fn attach_locked(
        &self,
        mut inner: std::sync::MutexGuard<'_, RouteInner>,
        missed: Vec<(String, String)>,
    ) -> (mpsc::UnboundedReceiver<Event>, Arc<Backlog>) {
        let (tx, rx) = mpsc::unbounded_channel();
        let backlog = Arc::new(match &self.total {
            Some(total) => Backlog::within(self.limits, total.clone()),
            None => Backlog::new(self.limits),
        });
        for (id, frame) in missed.into_iter().filter(|(_, f)| !f.is_empty()) {
            if backlog.admit(frame.len(), false) == Admit::Send {
                let _ = tx.send((id, frame.into()));
            }
        }
        if !inner.closed {
            inner.live = Some((tx, backlog.clone()));
        }
        (rx, backlog)
    }

    fn is_closed(&self) -> bool {
        self.lock().closed
    }
}

impl FrameSink for Route {
    fn send(&self, frame: String) {
        self.push(frame, false)
    }

    fn send_droppable(&self, frame: String) {
        self.push(frame, true)
    }

    fn close(&self) {
        let mut inner = self.lock();
        inner.closed = true;
        inner.live = None;
    }
}

/// JSON-response mode: the response goes to the waiting POST; anything else to the standalone stream.
struct JsonRoute {
    response: Mutex<Option<oneshot::Sender<String>>>,
    standalone: Sink,
}

impl FrameSink for JsonRoute {
    fn send(&self, frame: String) {
        self.standalone.send(frame);
    }

    fn send_droppable(&self, frame: String) {
        self.standalone.send_droppable(frame);
    }

    fn finish(&self, frame: String) {
        if let Some(tx) = self.response.locked().take() {
            let _ = tx.send(frame);
        }
    }

    fn close(&self) {
        self.response.locked().take();
    }
}

/// An SSE body: a priming event (id and `retry:`), then the route's events until it closes. In stateless mode a
/// client that goes away before the response cancels the request.
struct SseBody {
    priming: Option<String>,
    events: mpsc::UnboundedReceiver<Event>,
    /// The bytes waiting for this connection; each event taken leaves it.
    backlog: Option<Arc<Backlog>>,
    on_disconnect: Option<Box<dyn FnOnce() + Send>>,
    /// Counts this stream among its session's open streams while it lives.
    _open: Option<OpenStream>,
    /// The store and stream to tell when the body was read to its end.
    delivered: Option<(Arc<dyn EventStore>, String)>,
}

/// One open stream of a session: an open stream keeps the session from expiring.
struct OpenStream(Arc<HttpSession>);

impl OpenStream {
    fn new(session: &Arc<HttpSession>) -> OpenStream {
        session.open_streams.fetch_add(1, Ordering::Relaxed);
        OpenStream(session.clone())
    }
}

impl Drop for OpenStream {
    fn drop(&mut self) {
        self.0.open_streams.fetch_sub(1, Ordering::Relaxed);
        // The idle time counts from the end of the last stream.
        self.0.touch();
    }
}

impl futures_core::Stream for SseBody {
    type Item = Result<Bytes, std::convert::Infallible>;

    /// Everything ready goes out as one chunk (priming event included), so a quick answer is one write.
    fn poll_next(mut self: Pin<&mut Self>, cx: &mut TaskContext<'_>) -> Poll<Option<Self::Item>> {
        let mut chunk = self.priming.take().unwrap_or_default();
        let mut ended = false;
        loop {
            match self.events.poll_recv(cx) {
                Poll::Ready(Some((id, data))) => {
                    if let Some(backlog) = &self.backlog {
                        backlog.sent(data.len());
                    }
                    chunk.push_str("id: ");
                    chunk.push_str(&id);
                    chunk.push_str("\nevent: message\ndata: ");
                    chunk.push_str(&data);
                    chunk.push_str("\n\n");
                }
                Poll::Ready(None) => {
                    ended = true;
                    break;
                }
                Poll::Pending => break,
            }
        }
        if !chunk.is_empty() {
            if ended {
                // The route closed: the next poll ends the body, and this was no disconnect.
                self.on_disconnect = None;
            }
            return Poll::Ready(Some(Ok(Bytes::from(chunk))));
        }
        if ended {
            self.on_disconnect = None;
            // Polled again after its last chunk was written: the stream reached the connection whole.
            if let Some((store, stream)) = self.delivered.take() {
                store.delivered(&stream);
                // Nothing will resume it through its route: an idle session keeps no map of finished streams.
                if let Some(OpenStream(session)) = &self._open {
                    session.forget_route(&stream);
                }
            }
            return Poll::Ready(None);
        }
        Poll::Pending
    }
}

impl Drop for SseBody {
    fn drop(&mut self) {
        // What still waits for this connection goes with it: its session's total no longer counts it.
        if let Some(backlog) = &self.backlog {
            backlog.abandon();
        }
        if let Some(f) = self.on_disconnect.take() {
            f();
        }
    }
}

// ---------------------------------------------------------------------------------------------------------------
// Sessions

struct HttpSession {
    session: Arc<Session>,
    store: Arc<dyn EventStore>,
    standalone: Arc<Route>,
    /// The bytes waiting unread for this session, over all its streams: past the soft bound, its new POSTs wait.
    outbound: Arc<Backlog>,
    /// POSTs refused so far because the client did not read (logged at powers of two).
    refused: AtomicU64,
    /// Streams by name, for `Last-Event-ID` resumption.
    routes: Mutex<HashMap<String, Weak<Route>>>,
    next_stream: AtomicU64,
    last_seen: Mutex<Instant>,
    /// Streams (request streams and the standalone one) a client is reading.
    open_streams: AtomicU64,
    /// The principal that opened it, when requests are authenticated: only it may use the session.
    owner: Option<String>,
    /// The address of the client that opened it (when the server knows it): at the cap, the holder of the most
    /// sessions (its principal, else this address) gives one up first.
    peer: Option<std::net::IpAddr>,
}

/// Who holds a session, for sharing the cap: its principal, else the address of the client that opened it.
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
enum Holder<'a> {
    Principal(&'a str),
    Address(Option<std::net::IpAddr>),
}

impl HttpSession {
    fn touch(&self) {
        *self.last_seen.locked() = Instant::now();
    }

    fn holder(&self) -> Holder<'_> {
        match &self.owner {
            Some(principal) => Holder::Principal(principal),
            None => Holder::Address(self.peer),
        }
    }

    /// Whether work in flight or an open stream keeps the session alive.
    fn is_busy(&self) -> bool {
        self.open_streams.load(Ordering::Relaxed) > 0 || self.session.connection().is_busy()
    }

    /// Ends the session (it has left the map): its requests and tasks are cancelled, its streams end.
    fn end(&self, reason: &str) {
        self.session.cancel_all(reason);
        self.standalone.close();
    }

    fn new_route(&self) -> Arc<Route> {
        let name = format!("s{}", self.next_stream.fetch_add(1, Ordering::Relaxed));
        let limits = self.session.connection().server().inner.outbound;
        let route = Route::new(name.clone(), self.store.clone(), limits, Some(self.outbound.clone()));
        let mut routes = self.routes.locked();
        routes.retain(|_, r| r.strong_count() > 0);
        routes.insert(name, Arc::downgrade(&route));
        route
    }

    /// Forgets a finished stream's route (its events stay in the store, for a replay).
    fn forget_route(&self, name: &str) {
        let mut routes = self.routes.locked();
        routes.remove(name);
        if routes.is_empty() {
            routes.shrink_to_fit();
        }
    }

    fn route(&self, name: &str) -> Option<Arc<Route>> {
        if name == self.standalone.name {
            return Some(self.standalone.clone());
        }
        self.routes.locked().get(name).and_then(Weak::upgrade)
    }
}

struct HttpState {
    server: Server,
    options: HttpOptions,
    sessions: Mutex<HashMap<String, Arc<HttpSession>>>,
    /// Stateless mode: which session serves a request, by caller and id, so that a `notifications/cancelled` finds
    /// the request of the client that sent it and no other. Entries leave when their POST ends.
    stateless_requests: Mutex<StatelessTable>,
    next_stateless: AtomicU64,
    /// The 2026 requests whose POST waits for its answer (cancelled when the server stops).
    waiting: modern::Waiting,
    /// Makes each session's event store (sharing one total by default).
    event_stores: Arc<dyn EventStoreFactory>,
    /// The Host and Origin values refused so far, each logged once.
    refused: RefusedNames,
}

impl HttpState {
    fn session(&self, id: &str) -> Option<Arc<HttpSession>> {
        self.sessions.locked().get(id).cloned()
    }

    fn new_store(&self) -> Arc<dyn EventStore> {
        self.event_stores.create()
    }

    /// Ends every session, stateless ones too (the server is stopping): their requests are cancelled and their
    /// streams end.
    fn end_all_sessions(&self, reason: &str) {
        let ended: Vec<Arc<HttpSession>> = self.sessions.locked().drain().map(|(_, s)| s).collect();
        for s in ended {
            s.end(reason);
        }
        // Stateless mode: each request has a session of its own, which only the table of cancels lists.
        let stateless: Vec<Arc<Session>> =
            self.stateless_requests.locked().values().flatten().filter_map(|(_, s)| s.upgrade()).collect();
        for session in stateless {
            session.cancel_all(reason);
        }
    }

    fn end_idle_sessions(&self) {
        let timeout = self.options.session_idle_timeout;
        let ended: Vec<Arc<HttpSession>> = {
            let mut sessions = self.sessions.locked();
            let idle: Vec<String> = sessions
                .iter()
                .filter(|(_, s)| {
                    // Work in flight and open streams keep a session alive; its idle time starts when they end.
                    if s.is_busy() {
                        s.touch();
                        return false;
                    }
                    s.last_seen.locked().elapsed() > timeout
                })
                .map(|(k, _)| k.clone())
                .collect();
            idle.iter().filter_map(|k| sessions.remove(k)).collect()
        };
        for s in ended {
            tracing::info!("ending an idle session");
            s.end("the session expired");
        }
    }

    /// At the session cap: ends the idle session (no request in flight, no open stream, no task running) unused
    /// longest, taken from the holder (principal, else client address) with the most sessions, as idle expiry
    /// would end it; false when no session is idle. A scan of every session, only when the cap is reached.
    fn reclaim_idle_session(&self) -> bool {
        let with_tasks = self.server.tasks().connections_running();
        let reclaimed = {
            let mut sessions = self.sessions.locked();
            let victim = {
                let mut held: HashMap<Holder<'_>, usize> = HashMap::new();
                for s in sessions.values() {
                    *held.entry(s.holder()).or_default() += 1;
                }
                sessions
                    .iter()
                    .filter(|(_, s)| {
                        !s.is_busy() && !with_tasks.contains(&(Arc::as_ptr(s.session.connection()) as *const ()))
                    })
                    .max_by_key(|(_, s)| (held[&s.holder()], std::cmp::Reverse(*s.last_seen.locked())))
                    .map(|(id, _)| id.clone())
            };
            victim.and_then(|id| sessions.remove(&id))
        };
        match reclaimed {
            Some(s) => {
                tracing::info!(
                    max_sessions = self.options.max_sessions,
                    peer = ?s.peer,
                    "ending the session idle longest to make room for a new one"
                );
                s.end("the session was ended to make room for a new one (the server has its most sessions)");
                true
            }
            None => false,
        }
    }
}

/// 128 random bits from the operating system's CSPRNG, as hex.
fn new_session_id() -> String {
    let mut bytes = [0u8; 16];
    if let Err(e) = getrandom::fill(&mut bytes) {
        // Without randomness there are no safe session ids: refuse to make one guessable.
        panic!("the operating system's random number generator failed: {e}");
    }
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

// ---------------------------------------------------------------------------------------------------------------
// The service

impl Server {
    /// The Streamable HTTP endpoint as an axum `Router`, to serve alone or to merge into an application's router
    /// (behind its own layers: auth, tracing, CORS). Serve it with `TCP_NODELAY` set on accepted connections, as
    /// [`Server::serve_http`] does (`axum::serve::ListenerExt::tap_io`): SSE events are small writes, and Nagle's
    /// algorithm would hold each for a delayed ACK (about 40 ms).
    ///
    /// Call it inside a Tokio runtime: unless the options are `stateless`, it starts the task that ends idle
    /// sessions, and panics without a runtime.
    ///
    /// ```no_run
    /// # #[allow(dead_code)]
    /// # async fn run(server: mcp::Server) -> std::io::Result<()> {
    /// let app = axum::Router::new().merge(server.http_router(mcp::HttpOptions::new()));
    /// let listener = tokio::net::TcpListener::bind("127.0.0.1:8000").await?;
    /// axum::serve(listener, app).await
    /// # }
    /// ```
    pub fn http_router(&self, options: HttpOptions) -> Router {
        self.http_router_and_state(options).0
    }

    fn http_router_and_state(&self, options: HttpOptions) -> (Router, Arc<HttpState>) {
        self.warn_if_empty();
        let path = options.path.clone();
        let options_store = options.event_store.clone().unwrap_or_else(|| Arc::new(MemoryEventStoreFactory::default()));
        let state = Arc::new(HttpState {
            server: self.clone(),
            options,
            sessions: Mutex::new(HashMap::new()),
            stateless_requests: Mutex::new(HashMap::new()),
            next_stateless: AtomicU64::new(1),
            waiting: modern::Waiting::default(),
            event_stores: options_store,
            refused: RefusedNames::default(),
        });
        if !state.options.stateless {
            let weak = Arc::downgrade(&state);
            let every =
                (state.options.session_idle_timeout / 4).clamp(Duration::from_millis(50), Duration::from_secs(60));
            tokio::spawn(async move {
                loop {
                    tokio::time::sleep(every).await;
                    match weak.upgrade() {
                        Some(state) => state.end_idle_sessions(),
                        None => return,
                    }
                }
            });
        }
        let router = auth::metadata_routes(Router::new().route(&path, any(endpoint)), &state);
        (router.with_state(state.clone()), state)
    }

    /// Serves Streamable HTTP on `addr` until Ctrl-C or SIGTERM; then cancels what is in flight, waits (bounded)
    /// for cleanups, and runs the shutdown hooks.
    pub async fn serve_http(self, addr: SocketAddr, options: HttpOptions) -> std::io::Result<()> {
        let listener = tokio::net::TcpListener::bind(addr).await?;
        tracing::info!(address = %listener.local_addr()?, path = %options.path, "serving Streamable HTTP");
        self.serve_http_on(listener, options).await
    }

    /// Serves Streamable HTTP on a listener that is already bound (port 0 in tests).
    ///
    /// ```
    /// /// Say hello.
    /// #[mcp::tool]
    /// fn hello(name: String) -> String {
    ///     format!("Hello, {name}!")
    /// }
    ///
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() {
    /// let server = mcp::Server::builder().tool::<hello>().build().unwrap();
    /// let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    /// let url = format!("http://{}/mcp", listener.local_addr().unwrap());
    /// tokio::spawn(server.serve_http_on(listener, mcp::HttpOptions::new()));
    ///
    /// let client = mcp::client::Client::builder().http(url).await.unwrap();
    /// let result = client.call_tool("hello", serde_json::json!({ "name": "Ada" })).await.unwrap();
    /// assert_eq!(result.text(), Some("Hello, Ada!"));
    /// # }
    /// ```
    pub async fn serve_http_on(self, listener: tokio::net::TcpListener, options: HttpOptions) -> std::io::Result<()> {
        let header_read_timeout = options.header_read_timeout;
        let write_timeout = options.write_timeout;
        let max_connections = options.max_connections;
        let (router, state) = self.http_router_and_state(options);
        let local = listener.local_addr()?;
        if !local.ip().is_loopback() && state.options.allowed_hosts.is_empty() && !state.options.allow_any_origin {
            tracing::warn!(
                address = %local,
                "listening beyond loopback, but no Host is allowed besides loopback names: every request that \
                 names this machine otherwise gets 403. Pass --allow-host NAME (the name clients use, such as \
                 mcp.example.com; or MCP_ALLOW_HOST), or HttpOptions::allow_host"
            );
        }
        if self.inner.sealer.random && self.may_ask() {
            tracing::warn!(
                "the requestState of input_required results is sealed with a random key for this process: a retry \
                 that reaches another instance, or this one after a restart, fails; set {} (64 hex digits) or \
                 ServerBuilder::request_state_key",
                crate::base::seal::KEY_ENV
            );
        }
        // hyper's header timer runs whenever a connection waits for a request head, so it also ends idle
        // keep-alive connections and ones that drip their headers.
        let mut http1 = hyper::server::conn::http1::Builder::new();
        http1.timer(hyper_util::rt::TokioTimer::new()).header_read_timeout(header_read_timeout).keep_alive(true);
        // A slot per connection, held until it ends; `open` lists them, to choose one to close at the cap.
        let slots = Arc::new(tokio::sync::Semaphore::new(max_connections));
        let open = Arc::new(connections::Connections::new());
        let serve = Arc::new(ServeConnection { http1, router, write_timeout, open: open.clone() });
        let running = tokio_util::task::TaskTracker::new();
        let mut stop = std::pin::pin!(crate::transport::stop_signal());
        loop {
            let (tcp, peer) = tokio::select! {
                accepted = listener.accept() => match accepted {
                    Ok(accepted) => accepted,
                    Err(e) => {
                        // Out of file descriptors, say: wait a moment instead of spinning.
                        tracing::warn!(error = %e, "accepting a connection failed");
                        tokio::time::sleep(Duration::from_millis(50)).await;
                        continue;
                    }
                },
                () = &mut stop => break,
            };
            let permit = match slots.clone().try_acquire_owned() {
                Ok(permit) => permit,
                // At the cap: the connection idle longest (of the address holding the most) is asked to close, and
                // its slot goes to this one as soon as it has.
                Err(_) => match open.reclaim_idle() {
                    Some(from) => {
                        tracing::debug!(%peer, %from, max_connections, "closing the connection idle longest to make room");
                        let (slots, serve) = (slots.clone(), serve.clone());
                        running.spawn(async move {
                            match tokio::time::timeout(RECLAIM_WAIT, slots.acquire_owned()).await {
                                Ok(Ok(permit)) => serve.run(tcp, peer, permit).await,
                                _ => {
                                    tracing::warn!(%peer, max_connections, "refusing a connection: the server has its most connections");
                                    refuse_connection(tcp).await
                                }
                            }
                        });
                        continue;
                    }
                    None => {
                        tracing::warn!(
                            %peer,
                            max_connections,
                            "refusing a connection: the server has its most connections, all of them busy"
                        );
                        tokio::spawn(refuse_connection(tcp));
                        continue;
                    }
                },
            };
            running.spawn(serve.clone().run(tcp, peer, permit));
        }
        // One deadline for all of shutdown, from the signal on. Every stream ends now, so that connections can
        // close: listen streams with their result, 2025 sessions (and their standalone streams) and 2026 requests
        // by cancelling what is in flight. Connections still open at the deadline are dropped.
        let deadline = tokio::time::Instant::now() + self.inner.shutdown_timeout;
        drop(listener);
        self.end_streams(None);
        self.tasks().cancel_all("the server is stopping");
        state.end_all_sessions("the server is stopping");
        state.waiting.stop();
        open.stop();
        running.close();
        let _ = tokio::time::timeout_at(deadline, running.wait()).await;
        let tasks = crate::base::cancel::cleanup_tasks();
        self.stop_subscribers("the server is stopping");
        tasks.close();
        let _ = tokio::time::timeout_at(deadline, tasks.wait()).await;
        tasks.reopen();
        self.shutdown_by(deadline).await;
        Ok(())
    }
}

/// How long a newcomer at the connection cap waits for the idle connection asked to make room to close (at once,
/// unless a request reached it meanwhile, which it then serves to its end first); then it is refused.
const RECLAIM_WAIT: Duration = Duration::from_secs(5);

/// What serving one connection takes.
struct ServeConnection {
    http1: hyper::server::conn::http1::Builder,
    router: Router,
    write_timeout: Duration,
    open: Arc<connections::Connections>,
}

impl ServeConnection {
    /// Serves a connection until it ends or, once asked to close (at the cap, or at shutdown), is idle; then gives
    /// back its slot.
    async fn run(
        self: Arc<Self>,
        tcp: tokio::net::TcpStream,
        peer: SocketAddr,
        slot: tokio::sync::OwnedSemaphorePermit,
    ) {
        let Some(conn) = self.open.open(peer.ip()) else { return };
        // Small SSE events must not wait for Nagle's algorithm.
        let _ = tcp.set_nodelay(true);
        let router = self.router.clone();
        let of = conn.clone();
        let service = hyper::service::service_fn(move |mut request: hyper::Request<hyper::body::Incoming>| {
            // The peer's address reaches stateless requests, to match a cancel to its caller.
            request.extensions_mut().insert(axum::extract::ConnectInfo(peer));
            // The connection is busy from the request's head to its response's last byte.
            let busy = connections::Busy::new(&of);
            let answer = tower::ServiceExt::oneshot(router.clone(), request);
            async move {
                let response = answer.await?;
                Ok::<_, std::convert::Infallible>(response.map(|body| connections::Tracked::new(body, busy)))
            }
        });
        let tcp = WriteTimeout { inner: tcp, timeout: self.write_timeout, stalled: None };
        let mut connection = std::pin::pin!(self.http1.serve_connection(hyper_util::rt::TokioIo::new(tcp), service));
        let mut asked = false;
        let ended = loop {
            tokio::select! {
                ended = connection.as_mut() => break ended,
                () = conn.asked_to_close(), if !asked => {
                    asked = true;
                    // An idle HTTP/1 connection closes at once; a busy one after its response.
                    connection.as_mut().graceful_shutdown();
                }
            }
        };
        if let Err(e) = ended {
            tracing::debug!(%peer, error = %e, "connection ended");
        }
        self.open.ended(&conn);
        drop(slot);
    }
}

/// A connection whose peer takes no byte for `timeout` while there is something to write is ended: a client that
/// stopped reading does not hold its connection (and what is queued for it) forever.
struct WriteTimeout<T> {
    inner: T,
    timeout: Duration,
    stalled: Option<Pin<Box<tokio::time::Sleep>>>,
}

impl<T> WriteTimeout<T> {
    fn watch<R>(&mut self, cx: &mut TaskContext<'_>, polled: Poll<std::io::Result<R>>) -> Poll<std::io::Result<R>> {
        if polled.is_ready() {
            self.stalled = None;
            return polled;
        }
        let timeout = self.timeout;
        let stalled = self.stalled.get_or_insert_with(|| Box::pin(tokio::time::sleep(timeout)));
        match stalled.as_mut().poll(cx) {
            Poll::Ready(()) => Poll::Ready(Err(std::io::Error::new(
                std::io::ErrorKind::TimedOut,
                "the client took nothing for the write timeout",
            ))),
            Poll::Pending => Poll::Pending,
        }
    }
}

impl<T: tokio::io::AsyncRead + Unpin> tokio::io::AsyncRead for WriteTimeout<T> {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut TaskContext<'_>,
        buf: &mut tokio::io::ReadBuf<'_>,
    ) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.inner).poll_read(cx, buf)
    }
}

impl<T: tokio::io::AsyncWrite + Unpin> tokio::io::AsyncWrite for WriteTimeout<T> {
    fn poll_write(mut self: Pin<&mut Self>, cx: &mut TaskContext<'_>, buf: &[u8]) -> Poll<std::io::Result<usize>> {
        let polled = Pin::new(&mut self.inner).poll_write(cx, buf);
        self.watch(cx, polled)
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut TaskContext<'_>,
        bufs: &[std::io::IoSlice<'_>],
    ) -> Poll<std::io::Result<usize>> {
        let polled = Pin::new(&mut self.inner).poll_write_vectored(cx, bufs);
        self.watch(cx, polled)
    }

    fn is_write_vectored(&self) -> bool {
        self.inner.is_write_vectored()
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut TaskContext<'_>) -> Poll<std::io::Result<()>> {
        let polled = Pin::new(&mut self.inner).poll_flush(cx);
        self.watch(cx, polled)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut TaskContext<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.inner).poll_shutdown(cx)
    }
}

/// Answers a connection over the limit with 503 and closes it.
async fn refuse_connection(mut tcp: tokio::net::TcpStream) {
    use tokio::io::AsyncWriteExt;
    let answer =
        b"HTTP/1.1 503 Service Unavailable\r\nRetry-After: 1\r\nContent-Length: 0\r\nConnection: close\r\n\r\n";
    let _ = tokio::time::timeout(Duration::from_secs(1), tcp.write_all(answer)).await;
}

fn error_response(status: StatusCode, code: ErrorCode, message: impl Into<String>) -> Response {
    let body = jsonrpc::encode_error(None, &Error::new(code, message));
    (status, [(header::CONTENT_TYPE, "application/json")], body).into_response()
}

fn plain(status: StatusCode, message: &'static str) -> Response {
    error_response(status, ErrorCode::INVALID_REQUEST, message)
}

/// The host name of a `Host` header value or of an origin's authority: without its port, and without the brackets of
/// an IPv6 literal.
fn host_name(authority: &str) -> &str {
    let authority = authority.trim();
    if let Some(rest) = authority.strip_prefix('[') {
        return rest.split(']').next().unwrap_or_default();
    }
    match authority.rsplit_once(':') {
        Some((h, p)) if p.chars().all(|c| c.is_ascii_digit()) => h,
        _ => authority,
    }
}

/// Whether a `Host` value (or an origin's authority) names this machine: `localhost` (in any case) or a loopback IP
/// address. A name that merely starts with `127.` (`127.evil.example`) is a name, resolved by DNS, and not loopback.
fn is_loopback_host(authority: &str) -> bool {
    let name = host_name(authority);
    name.eq_ignore_ascii_case("localhost") || name.parse::<std::net::IpAddr>().is_ok_and(|ip| ip.is_loopback())
}

/// Whether an authority (`name` or `name:port`, `[v6]` or `[v6]:port`) spells a port.
fn has_port(authority: &str) -> bool {
    let authority = authority.trim();
    match authority.strip_prefix('[') {
        Some(rest) => rest.split_once(']').is_some_and(|(_, after)| after.starts_with(':')),
        None => authority.rsplit_once(':').is_some_and(|(_, p)| !p.is_empty() && p.chars().all(|c| c.is_ascii_digit())),
    }
}

/// Whether an allowed `Host` entry admits a `Host` value: the same authority, or, when the entry names no port,
/// the same name with any port.
fn host_allowed(allowed: &str, host: &str) -> bool {
    allowed.trim().eq_ignore_ascii_case(host.trim())
        || (!has_port(allowed) && host_name(allowed).eq_ignore_ascii_case(host_name(host)))
}

/// The Host and Origin values refused so far, so that each is logged once (up to a bound, so that a client
/// sending a new name per request cannot grow it without end).
#[derive(Default)]
struct RefusedNames {
    seen: Mutex<std::collections::HashSet<String>>,
}

impl RefusedNames {
    /// The most names remembered; past it, refusals are no longer logged.
    const MOST: usize = 256;

    /// Whether this is the first refusal of `value` (as a `Host` or an `Origin`).
    fn first(&self, kind: &str, value: &str) -> bool {
        let mut seen = self.seen.locked();
        seen.len() < Self::MOST && seen.insert(format!("{kind} {}", value.to_ascii_lowercase()))
    }
}

/// DNS-rebinding protection: `Host` and `Origin` must be loopback or allowed. The first refusal of each value is
/// logged at `warn`, with the option that would allow it.
/// Checks `Host` (or, in HTTP/2, the request's authority) and `Origin` against DNS rebinding. A request with two of
/// either, or with no host at all, is 400: which one a proxy or a check would read is anyone's guess.
fn check_origin(
    options: &HttpOptions,
    refused: &RefusedNames,
    headers: &HeaderMap,
    authority: Option<&str>,
) -> Result<(), Response> {
    for (name, what) in [(header::HOST, "Host"), (header::ORIGIN, "Origin")] {
        if headers.get_all(&name).iter().nth(1).is_some() {
            return Err(error_response(
                StatusCode::BAD_REQUEST,
                ErrorCode::INVALID_REQUEST,
                format!("bad request: the {what} header is given more than once"),
            ));
        }
    }
    let host = match headers.get(header::HOST) {
        Some(h) => h.to_str().ok(),
        None => authority,
    };
    if host.is_none() {
        return Err(error_response(
            StatusCode::BAD_REQUEST,
            ErrorCode::INVALID_REQUEST,
            "bad request: the Host header is missing (or not text)",
        ));
    }
    if options.allow_any_origin {
        return Ok(());
    }
    if let Some(host) = host {
        if !is_loopback_host(host) && !options.allowed_hosts.iter().any(|allowed| host_allowed(allowed, host)) {
            if refused.first("host", host) {
                tracing::warn!(
                    host,
                    "refused a request (403) whose Host is not allowed; to serve this name, pass --allow-host {} \
                     (or HttpOptions::allow_host). Logged once per name",
                    host_name(host)
                );
            }
            return Err(plain(StatusCode::FORBIDDEN, "forbidden: the Host header is not allowed"));
        }
    }
    if let Some(origin) = headers.get(header::ORIGIN) {
        let origin = origin.to_str().unwrap_or_default();
        // `scheme://host[:port]`; anything else (`null`, a path) is not a loopback origin.
        let loopback = origin.split_once("://").is_some_and(|(scheme, authority)| {
            (scheme.eq_ignore_ascii_case("http") || scheme.eq_ignore_ascii_case("https"))
                && !authority.contains(['/', '@', '?', '#'])
                && is_loopback_host(authority)
        });
        if !loopback && !options.allowed_origins.iter().any(|o| o.trim().eq_ignore_ascii_case(origin.trim())) {
            if refused.first("origin", origin) {
                tracing::warn!(
                    origin,
                    "refused a request (403) whose Origin is not allowed; to serve pages of this origin, pass \
                     --allow-origin {origin} (or HttpOptions::allow_origin). Logged once per origin"
                );
            }
            return Err(plain(StatusCode::FORBIDDEN, "forbidden: the Origin header is not allowed"));
        }
    }
    Ok(())
}

/// Whether the request names a protocol version of the stateless era (which has no GET stream and no DELETE).
fn is_stateless_version(headers: &HeaderMap) -> bool {
    let version = headers.get(&VERSION_NAME).and_then(|v| v.to_str().ok()).map(str::trim);
    version.is_some_and(|v| crate::era::v2026::STATELESS_VERSIONS.contains(&v))
}

/// The protocol version of a request: the header, or 2025-03-26 when it is missing; unsupported is 400.
fn check_version(headers: &HeaderMap) -> Result<String, Response> {
    match headers.get(&VERSION_NAME) {
        None => Ok("2025-03-26".into()),
        Some(v) => {
            let v = v.to_str().unwrap_or_default();
            if SUPPORTED_PROTOCOL_VERSIONS.contains(&v) {
                Ok(v.to_owned())
            } else {
                Err(error_response(
                    StatusCode::BAD_REQUEST,
                    ErrorCode::INVALID_REQUEST,
                    format!(
                        "unsupported MCP-Protocol-Version {v:?}; supported: {}",
                        SUPPORTED_PROTOCOL_VERSIONS.join(", ")
                    ),
                ))
            }
        }
    }
}

/// Whether the `Accept` header takes every one of `kinds` (at most two), in one pass over it.
fn accepts(headers: &HeaderMap, kinds: &[&str]) -> bool {
    debug_assert!(kinds.len() <= 2);
    let mut missing = kinds.len();
    let mut seen = [false; 2];
    for t in headers.get_all(header::ACCEPT).iter().filter_map(|v| v.to_str().ok()).flat_map(|v| v.split(',')) {
        let t = t.split(';').next().unwrap_or_default().trim();
        if t == "*/*" {
            return true;
        }
        for (kind, seen) in kinds.iter().zip(&mut seen) {
            if !*seen && t.eq_ignore_ascii_case(kind) {
                *seen = true;
                missing -= 1;
            }
        }
        if missing == 0 {
            return true;
        }
    }
    false
}

async fn endpoint(AxumState(state): AxumState<Arc<HttpState>>, request: axum::extract::Request) -> Response {
    let (parts, body) = request.into_parts();
    let (method, mut headers) = (parts.method, parts.headers);
    if let Err(r) = check_origin(&state.options, &state.refused, &headers, parts.uri.authority().map(|a| a.as_str())) {
        return r;
    }
    let query = parts.uri.query();
    // The path the client called, what a DPoP proof's `htu` names (or the resource's path).
    let path = parts.uri.path();
    // Without the server's own authorization, a layer in front may have said who is calling.
    let mut auth = parts.extensions.get::<AuthInfo>().cloned();
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
    auth: Option<AuthInfo>,
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
            let body = jsonrpc::encode_error(rejected.id.as_ref(), &rejected.error);
            return (StatusCode::BAD_REQUEST, [(header::CONTENT_TYPE, "application/json")], body).into_response();
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
    if modern::is_modern(headers, &message) {
        return modern::post(&state, headers, message, http.clone()).await;
    }
    let is_initialize = matches!(&message, Incoming::Request { method, .. } if method == "initialize");

    if state.options.stateless {
        let caller = caller_key(http.auth.as_ref(), peer);
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
            owner: http.auth.as_ref().map(AuthInfo::principal),
            peer,
        });
        (http_session, true)
    } else {
        let s = match session_of(&state, headers, http.auth.as_ref()) {
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
    let body = jsonrpc::encode_error(id, &error);
    let mut response =
        (StatusCode::SERVICE_UNAVAILABLE, [(header::CONTENT_TYPE, "application/json")], body).into_response();
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
            Ok(frame) => (StatusCode::OK, [(header::CONTENT_TYPE, "application/json")], frame).into_response(),
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
        Ok(frame) => (StatusCode::OK, [(header::CONTENT_TYPE, "application/json")], frame).into_response(),
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

async fn post_stateless(
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
        Err(_) => "2025-03-26".into(),
    };
    match message {
        Incoming::Notification { method, params } => {
            if method == "notifications/cancelled" {
                let id = params
                    .as_ref()
                    .and_then(|p| p.get("requestId"))
                    .cloned()
                    .and_then(|v| serde_json::from_value::<RequestId>(v).ok());
                if let Some(id) = id {
                    let session = {
                        let requests = state.stateless_requests.locked();
                        match requests.get(&(caller.clone(), id.clone())).map(Vec::as_slice) {
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
                        let reason =
                            params.as_ref().and_then(|p| p.get("reason")).and_then(Value::as_str).map(str::to_owned);
                        session.cancel(&id, reason.as_deref());
                    }
                }
            }
            StatusCode::ACCEPTED.into_response()
        }
        Incoming::Response { .. } => StatusCode::ACCEPTED.into_response(),
        Incoming::Request { ref id, .. } => {
            let id = id.clone();
            let store: Arc<dyn EventStore> = Arc::new(MemoryEventStore::new(64));
            let session = Session::new(state.server.clone(), Arc::new(NoSink));
            // No session outlives this request: its tasks cannot be listed by session.
            session.connection().set_sessionless();
            if !is_initialize {
                session.preinitialize(&version);
            }
            let entry = StatelessEntry::register(state, caller, id.clone(), &session);
            if state.options.json_response {
                let (tx, rx) = oneshot::channel();
                let sink: Sink = Arc::new(JsonRoute { response: Mutex::new(Some(tx)), standalone: Arc::new(NoSink) });
                session.handle_routed(message, &Origin { sink, http: Some(http) });
                // If the client goes away, axum drops this future, and the guard cancels the request.
                let mut guard = StatelessGuard { _entry: entry, session: session.clone(), id, done: false };
                let answer = rx.await;
                guard.done = true;
                return match answer {
                    Ok(frame) => (StatusCode::OK, [(header::CONTENT_TYPE, "application/json")], frame).into_response(),
                    Err(_) => StatusCode::ACCEPTED.into_response(),
                };
            }
            let route = Route::new("stateless".into(), store.clone(), state.server.inner.outbound, None);
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
    }
}

fn get(state: Arc<HttpState>, headers: HeaderMap, auth: Option<AuthInfo>) -> Response {
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
    let http_session = match session_of(&state, &headers, auth.as_ref()) {
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

fn delete(state: Arc<HttpState>, headers: HeaderMap, auth: Option<AuthInfo>) -> Response {
    if state.options.stateless || !state.options.allow_delete || is_stateless_version(&headers) {
        return (StatusCode::METHOD_NOT_ALLOWED, [(header::ALLOW, "GET, POST")]).into_response();
    }
    if let Err(r) = check_version(&headers) {
        return r;
    }
    let http_session = match session_of(&state, &headers, auth.as_ref()) {
        Ok(s) => s,
        Err(r) => return r,
    };
    let id = headers.get(&SESSION_NAME).and_then(|v| v.to_str().ok()).unwrap_or_default().to_owned();
    state.sessions.locked().remove(&id);
    http_session.end("the client ended the session");
    StatusCode::OK.into_response()
}

/// A stateless request by its caller and its id.
type CallerId = (String, RequestId);

/// The stateless requests in flight: by caller and id, each entry's number and session.
type StatelessTable = HashMap<CallerId, Vec<(u64, Weak<Session>)>>;

/// Who sent a stateless request, for matching its cancel: the authenticated subject, else the peer's address.
fn caller_key(auth: Option<&AuthInfo>, peer: Option<std::net::IpAddr>) -> String {
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
        let entry = state.next_stateless.fetch_add(1, Ordering::Relaxed);
        let key = (caller, id);
        state.stateless_requests.locked().entry(key.clone()).or_default().push((entry, Arc::downgrade(session)));
        StatelessEntry { state: state.clone(), key, entry }
    }
}

impl Drop for StatelessEntry {
    fn drop(&mut self) {
        let mut requests = self.state.stateless_requests.locked();
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
