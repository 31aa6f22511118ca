//! [`HttpOptions`]: how the Streamable HTTP transport behaves.

use std::sync::Arc;
use std::time::Duration;

use crate::store::EventStoreFactory;

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
    /// Take the client's address from `Forwarded` (else `X-Forwarded-For`), the last address the nearest proxy
    /// named, instead of the connection's peer, for what is counted or matched per client address (a stateless
    /// request's cancel, a 2026 client's tasks, the session cap's holders) and for logs. Only behind a balancer
    /// that sets the header: a client reaching the server directly could name any address. Default false.
    pub trust_forwarded: bool,
    /// The largest request body, in bytes; larger ones get 413 (a client that sends one without waiting for
    /// `100 Continue` is read on, up to 64 MiB more, so that it reads the answer rather than a reset). `None` (the
    /// default): the server's [`ServerBuilder::max_message_bytes`](crate::ServerBuilder::max_message_bytes), the
    /// limit of every transport, 4 MiB unless set.
    pub max_body_bytes: Option<usize>,
    /// A session unused this long is ended. Default 30 minutes.
    pub session_idle_timeout: Duration,
    /// The `retry:` hint sent on each stream. Default 1 s.
    pub retry: Duration,
    /// How often an open SSE stream that has nothing to send gets a keep-alive comment (`:`), in both eras (a 2025
    /// POST's stream and GET stream, a 2026 request's stream and `subscriptions/listen`): below the read timeouts
    /// of the proxies in front (nginx 60 s, HAProxy's `timeout server`, cloud balancers 60 s), which otherwise cut
    /// an idle stream. Default [`HttpOptions::DEFAULT_KEEP_ALIVE`], 15 s.
    pub keep_alive: Duration,
    /// With an event log shared by several instances ([`ServerBuilder::shared`](crate::ServerBuilder::shared)): how
    /// long an instance vouches for itself (it renews every third of it). A 2025 stream resumed on another
    /// instance than the one answering its request is followed there; once that instance has not vouched for this
    /// long (it died), the request is answered with an error saying so, instead of waiting for ever. Default
    /// [`HttpOptions::DEFAULT_INSTANCE_LEASE`], 5 s.
    pub instance_lease: Duration,
    /// How long a stopping server (SIGTERM, Ctrl-C) drains before it cancels what is still in flight: it says it is
    /// not ready (`/readyz`), closes each connection after its current response, ends its idle streams so that
    /// their clients reconnect elsewhere, refuses new sessions it could not share, and goes on serving until no
    /// request is in flight, or this long (`serve_http` only). Default [`HttpOptions::DEFAULT_DRAIN_TIMEOUT`], 30 s.
    pub drain_timeout: Duration,
    /// How long a server stopped by SIGTERM goes on serving new requests after it said it is not ready, before its
    /// drain may end: time for the balancers that ask `/readyz` (HAProxy's checks, a Kubernetes readiness probe)
    /// to take it out, so that none sends a request on a connection it is about to close (such a POST is lost: a
    /// balancer does not send it again). Ctrl-C does not wait for it. Within the drain timeout. Default
    /// [`HttpOptions::DEFAULT_DRAIN_NOTICE`], 3 s.
    pub drain_notice: Duration,
    /// How long the Redis a server shares its state through may stay unreachable before the readiness check says
    /// not ready: longer than a Sentinel failover (every instance loses Redis at once; a balancer that took them all
    /// out would refuse every request), shorter than an outage worth sending clients elsewhere for. Default
    /// [`HttpOptions::DEFAULT_REDIS_GRACE`], 10 s.
    pub redis_grace: Duration,
    /// Where the server answers a liveness check (`GET`, 200 `ok` while the process serves), outside the `Host` and
    /// `Origin` check and authorization; `None` turns it off. Default `/healthz`.
    pub liveness_path: Option<String>,
    /// Where the server answers a readiness check (`GET`, 200 `ready` when it can serve: its Redis answers when it
    /// shares state; 503 naming what is wrong otherwise), outside the `Host` and `Origin` check and authorization;
    /// `None` turns it off. Default `/readyz`.
    pub readiness_path: Option<String>,
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
    /// session, 256 MiB for all sessions together ([`MemoryEventStoreFactory::default`](crate::store::MemoryEventStoreFactory::default)).
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
            trust_forwarded: false,
            max_body_bytes: None,
            session_idle_timeout: Duration::from_secs(30 * 60),
            retry: Duration::from_secs(1),
            keep_alive: HttpOptions::DEFAULT_KEEP_ALIVE,
            instance_lease: HttpOptions::DEFAULT_INSTANCE_LEASE,
            drain_timeout: HttpOptions::DEFAULT_DRAIN_TIMEOUT,
            drain_notice: HttpOptions::DEFAULT_DRAIN_NOTICE,
            redis_grace: HttpOptions::DEFAULT_REDIS_GRACE,
            liveness_path: Some("/healthz".into()),
            readiness_path: Some("/readyz".into()),
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
    /// How long a 2025 POST waits for its session's unread streams to drain below the soft outbound bound before it
    /// is refused (503, `Retry-After`): 5 s.
    pub const BACKED_UP_WAIT: std::time::Duration = super::v2025::BACKED_UP_WAIT;

    /// The default interval of keep-alive comments on idle streams: 15 s.
    pub const DEFAULT_KEEP_ALIVE: Duration = Duration::from_secs(15);
    /// The default drain of a stopping server: 30 s.
    pub const DEFAULT_DRAIN_TIMEOUT: Duration = Duration::from_secs(30);
    /// The default notice a server stopped by SIGTERM gives the balancers: 3 s.
    pub const DEFAULT_DRAIN_NOTICE: Duration = Duration::from_secs(3);
    /// The default time a shared Redis may stay unreachable before the instance says it is not ready: 10 s.
    pub const DEFAULT_REDIS_GRACE: Duration = Duration::from_secs(10);
    /// The default lease of an instance on the shared event log: 5 s.
    pub const DEFAULT_INSTANCE_LEASE: Duration = Duration::from_secs(5);

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
    /// Takes the client's address from `Forwarded` / `X-Forwarded-For` (see
    /// [`trust_forwarded`](HttpOptions::trust_forwarded)): only behind a balancer that sets it.
    pub fn trust_forwarded(mut self, on: bool) -> Self {
        self.trust_forwarded = on;
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
    /// Sets the body limit of this endpoint, over the server's
    /// [`max_message_bytes`](crate::ServerBuilder::max_message_bytes).
    pub fn max_body_bytes(mut self, bytes: usize) -> Self {
        self.max_body_bytes = Some(bytes);
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
    /// Sets how often an idle stream gets a keep-alive comment (at least every 10 ms).
    pub fn keep_alive(mut self, every: Duration) -> Self {
        self.keep_alive = every.max(Duration::from_millis(10));
        self
    }
    /// Sets how long an instance vouches for itself on a shared event log (at least 30 ms).
    pub fn instance_lease(mut self, lease: Duration) -> Self {
        self.instance_lease = lease.max(Duration::from_millis(30));
        self
    }
    /// Sets how long a shared Redis may stay unreachable before the readiness check says not ready (see
    /// [`redis_grace`](HttpOptions::redis_grace)); zero says so at once.
    pub fn redis_grace(mut self, grace: Duration) -> Self {
        self.redis_grace = grace;
        self
    }
    /// Sets how long a stopping server drains (see [`drain_timeout`](HttpOptions::drain_timeout)); zero cancels
    /// what is in flight at once.
    pub fn drain_timeout(mut self, timeout: Duration) -> Self {
        self.drain_timeout = timeout;
        self
    }
    /// Sets the notice a server stopped by SIGTERM gives the balancers (see
    /// [`drain_notice`](HttpOptions::drain_notice)).
    pub fn drain_notice(mut self, notice: Duration) -> Self {
        self.drain_notice = notice;
        self
    }
    /// Moves the liveness check (`/healthz` by default), or turns it off with `None`.
    pub fn liveness_path(mut self, path: Option<&str>) -> Self {
        self.liveness_path = path.map(str::to_owned);
        self
    }
    /// Moves the readiness check (`/readyz` by default), or turns it off with `None`.
    pub fn readiness_path(mut self, path: Option<&str>) -> Self {
        self.readiness_path = path.map(str::to_owned);
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
