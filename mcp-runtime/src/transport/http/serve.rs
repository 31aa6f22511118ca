//! The service: `serve_http` and the router, the accept loop with its connection cap, and the write timeout.

use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::task::{Context as TaskContext, Poll};
use std::time::Duration;

use std::future::Future;

use axum::http::{header, HeaderValue};
use axum::routing::any;
use axum::Router;

use super::guards::RefusedNames;
use super::{auth, closing, connections, endpoint, v2025, v2026, HttpOptions, HttpState};
use crate::server::Server;
use crate::store::MemoryEventStoreFactory;

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

    pub(super) fn http_router_and_state(&self, options: HttpOptions) -> (Router, Arc<HttpState>) {
        self.warn_if_empty();
        let path = options.path.clone();
        let options_store = options.event_store.clone().unwrap_or_else(|| Arc::new(MemoryEventStoreFactory::default()));
        let state = Arc::new(HttpState {
            server: self.clone(),
            options,
            sessions: v2025::Sessions::new(options_store),
            waiting: v2026::Waiting::default(),
            refused: RefusedNames::default(),
            stopping: Default::default(),
            redis_down_since: Default::default(),
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
        v2025::vouch_while_served(&state);
        let router = auth::metadata_routes(Router::new().route(&path, any(endpoint)), &state);
        let router = super::health::routes(router, &state);
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
        self.prime_metrics(crate::metrics::Transport::Tcp);
        let (router, state) = self.http_router_and_state(options);
        let local = listener.local_addr()?;
        self.warn_at_start(local, &state.options);
        // hyper's header timer runs whenever a connection waits for a request head, so it also ends idle
        // keep-alive connections and ones that drip their headers.
        let mut http1 = hyper::server::conn::http1::Builder::new();
        http1.timer(hyper_util::rt::TokioTimer::new()).header_read_timeout(header_read_timeout).keep_alive(true);
        // A slot per connection, held until it ends; `open` lists them, to choose one to close at the cap.
        let slots = Arc::new(tokio::sync::Semaphore::new(max_connections));
        let open = Arc::new(connections::Connections::new());
        // A request to the endpoint's own path goes to it straight, without the router's matching and boxing (the
        // router still serves the rest: the authorization metadata, and 404 for any other path).
        let direct = is_plain_path(&state.options.path);
        let serve = Arc::new(ServeConnection {
            http1,
            router,
            state: state.clone(),
            direct,
            write_timeout,
            open: open.clone(),
        });
        let admit =
            Admit { slots, open: open.clone(), serve, running: tokio_util::task::TaskTracker::new(), max_connections };
        let mut stop = std::pin::pin!(crate::transport::which_stop_signal());
        let signal = loop {
            tokio::select! {
                accepted = listener.accept() => admit.connection(accepted).await,
                signal = &mut stop => break signal,
            }
        };
        // A service manager's SIGTERM gives the balancers notice; a person's Ctrl-C does not wait for them.
        let notice = match signal {
            crate::transport::StopSignal::Terminate => state.options.drain_notice,
            crate::transport::StopSignal::Interrupt => Duration::ZERO,
        };
        let drained_by = self.drain(&state, &listener, &admit, notice).await;
        // The connections let go (idle, unused for a while) close now.
        open.close_all();
        close_listener(listener, &admit).await;
        let running = admit.running;
        // Each connection closes after its answer (which says `Connection: close`): a request that came in the last
        // moment of the drain is served too, within the drain's time. (Asked to close now, a connection whose
        // request has arrived but is not read yet would be reset, and the request lost.)
        running.close();
        let _ = tokio::time::timeout_at(drained_by, running.wait()).await;
        // One deadline for the rest of shutdown. Every stream ends now, so that connections can close: listen
        // streams with their result, 2025 sessions (and their standalone streams) and 2026 requests by cancelling
        // what is in flight. Connections still open at the deadline are dropped.
        let deadline = tokio::time::Instant::now() + self.inner.limits().shutdown_timeout;
        self.end_streams(None);
        self.tasks().cancel_all("the server is stopping");
        state.end_all_sessions("the server is stopping");
        state.waiting.stop();
        open.stop();
        let _ = tokio::time::timeout_at(deadline, running.wait()).await;
        let tasks = crate::base::cancel::cleanup_tasks();
        self.stop_subscribers("the server is stopping");
        tasks.close();
        let _ = tokio::time::timeout_at(deadline, tasks.wait()).await;
        tasks.reopen();
        self.shutdown_by(deadline).await;
        Ok(())
    }

    /// What a server about to listen warns of: an address beyond loopback that no allowed `Host` names, and a
    /// `requestState` key that is this process's alone.
    fn warn_at_start(&self, local: std::net::SocketAddr, options: &HttpOptions) {
        if !local.ip().is_loopback() && options.allowed_hosts.is_empty() && !options.allow_any_origin {
            tracing::warn!(
                address = %local,
                "listening beyond loopback, but no Host is allowed besides loopback names: every request that \
                 names this machine otherwise gets 403. Pass --allow-host NAME (the name clients use, such as \
                 mcp.example.com; or MCP_ALLOW_HOST), or HttpOptions::allow_host"
            );
        }
        if self.inner.v2026().sealer.random && self.may_ask() {
            tracing::warn!(
                "the requestState of input_required results is sealed with a random key for this process: a retry \
                 that reaches another instance, or this one after a restart, fails; set {} (64 hex digits) or \
                 ServerBuilder::request_state_key",
                crate::base::seal::KEY_ENV
            );
        }
    }
}

impl Server {
    /// Drains before the server stops, for at most the drain timeout: the instance says it is not ready, each
    /// connection closes after its current response (`Connection: close`), listen streams end with their result and
    /// 2025 standalone streams end (their clients reconnect, to another instance), new sessions it could not share
    /// and new streams are refused with 503, and everything else is served as usual, new connections included,
    /// for at least `notice` (the balancers that ask `/readyz` take the instance out meanwhile, so that none sends
    /// it a request on a connection it is closing) and until every connection is closed by its client or let go
    /// (idle for [`LET_GO`]). Returns when the drain's time is up.
    async fn drain(
        &self,
        state: &Arc<HttpState>,
        listener: &tokio::net::TcpListener,
        admit: &Admit,
        notice: Duration,
    ) -> tokio::time::Instant {
        let timeout = state.options.drain_timeout;
        let started = tokio::time::Instant::now();
        let deadline = started + timeout;
        state.stopping.store(true, Ordering::Relaxed);
        tracing::info!(?timeout, ?notice, "draining: not ready, serving what is in flight");
        self.end_streams(None);
        state.end_standalone_streams();
        let mut check = tokio::time::interval(Duration::from_millis(20));
        loop {
            tokio::select! {
                accepted = listener.accept() => admit.connection(accepted).await,
                _ = check.tick() => {
                    // Every connection closed by its client (after the answer that said `Connection: close`), or
                    // let go: idle for long enough that its balancer no longer uses it (it took the instance out,
                    // or keeps idle connections a shorter time: nginx.conf's keepalive_timeout is 4 s). A
                    // connection still in use, closed, could carry a request the balancer has just sent on it,
                    // which would be lost.
                    if started.elapsed() >= notice && admit.open.all_idle(LET_GO) {
                        tracing::info!("drained: every connection closed or let go");
                        return deadline;
                    }
                }
                () = tokio::time::sleep_until(deadline) => {
                    tracing::warn!(?timeout, "the drain timeout ran out: what is still in flight is cancelled");
                    return deadline;
                }
            }
        }
    }
}

/// How long a connection of a draining server must have been idle to count as let go by its balancer.
const LET_GO: Duration = Duration::from_secs(5);

/// What takes in a connection: its slot under the connection cap, and the task that serves it.
struct Admit {
    slots: Arc<tokio::sync::Semaphore>,
    open: Arc<connections::Connections>,
    serve: Arc<ServeConnection>,
    running: tokio_util::task::TaskTracker,
    max_connections: usize,
}

impl Admit {
    /// Serves a connection just accepted, within the connection cap.
    async fn connection(&self, accepted: std::io::Result<(tokio::net::TcpStream, SocketAddr)>) {
        let (tcp, peer) = match accepted {
            Ok(accepted) => accepted,
            Err(e) => {
                // Out of file descriptors, say: wait a moment instead of spinning.
                tracing::warn!(error = %e, "accepting a connection failed");
                tokio::time::sleep(Duration::from_millis(50)).await;
                return;
            }
        };
        let max_connections = self.max_connections;
        let permit = match self.slots.clone().try_acquire_owned() {
            Ok(permit) => permit,
            // At the cap: the connection idle longest (of the address holding the most) is asked to close, and its
            // slot goes to this one as soon as it has.
            Err(_) => match self.open.reclaim_idle() {
                Some(from) => {
                    tracing::debug!(%peer, %from, max_connections, "closing the connection idle longest to make room");
                    let (slots, serve) = (self.slots.clone(), self.serve.clone());
                    self.running.spawn(async move {
                        match tokio::time::timeout(RECLAIM_WAIT, slots.acquire_owned()).await {
                            Ok(Ok(permit)) => serve.run(tcp, peer, permit).await,
                            _ => {
                                tracing::warn!(%peer, max_connections, "refusing a connection: the server has its most connections");
                                serve.state.refused("connections");
                                refuse_connection(tcp).await
                            }
                        }
                    });
                    return;
                }
                None => {
                    tracing::warn!(
                        %peer,
                        max_connections,
                        "refusing a connection: the server has its most connections, all of them busy"
                    );
                    self.serve.state.refused("connections");
                    tokio::spawn(refuse_connection(tcp));
                    return;
                }
            },
        };
        self.running.spawn(self.serve.clone().run(tcp, peer, permit));
    }
}

/// Where a request on a connection goes.
enum To {
    /// The endpoint, straight.
    Endpoint,
    /// The router: any other path.
    Router(Router),
}

/// A path the router matches as it is written (no `{capture}` or `*wildcard`), so a request's path equal to it
/// would reach the endpoint through the router too.
fn is_plain_path(path: &str) -> bool {
    path.starts_with('/') && !path.contains(['{', '}', '*'])
}

/// How long a newcomer at the connection cap waits for the idle connection asked to make room to close (at once,
/// unless a request reached it meanwhile, which it then serves to its end first); then it is refused.
pub(super) const RECLAIM_WAIT: Duration = Duration::from_secs(5);

/// What serving one connection takes.
pub(super) struct ServeConnection {
    pub(super) http1: hyper::server::conn::http1::Builder,
    pub(super) router: Router,
    pub(super) state: Arc<HttpState>,
    /// Whether a request to the endpoint's path (`options.path`) can skip the router.
    pub(super) direct: bool,
    pub(super) write_timeout: Duration,
    pub(super) open: Arc<connections::Connections>,
}

impl ServeConnection {
    /// Serves a connection until it ends or, once asked to close (at the cap, or at shutdown), is idle; then gives
    /// back its slot.
    pub(super) async fn run(
        self: Arc<Self>,
        tcp: tokio::net::TcpStream,
        peer: SocketAddr,
        slot: tokio::sync::OwnedSemaphorePermit,
    ) {
        let Some(conn) = self.open.open(peer.ip()) else { return };
        // Small SSE events must not wait for Nagle's algorithm.
        let _ = tcp.set_nodelay(true);
        let of = conn.clone();
        let serve = self.clone();
        let service = hyper::service::service_fn(move |mut request: hyper::Request<hyper::body::Incoming>| {
            // The connection is busy from the request's head to its response's last byte.
            let busy = connections::Busy::new(&of);
            let to = match serve.direct && request.uri().path() == serve.state.options.path {
                true => To::Endpoint,
                false => {
                    // The peer's address reaches stateless requests, to match a cancel to its caller.
                    request.extensions_mut().insert(axum::extract::ConnectInfo(peer));
                    To::Router(serve.router.clone())
                }
            };
            let state = serve.state.clone();
            async move {
                let mut response = match to {
                    To::Endpoint => {
                        super::serve_request(&state, request.map(axum::body::Body::new), Some(peer.ip())).await
                    }
                    To::Router(router) => tower::ServiceExt::oneshot(router, request).await?,
                };
                if state.is_draining() {
                    // The balancer opens its next connection elsewhere, or to this instance while it still listens.
                    response.headers_mut().insert(header::CONNECTION, HeaderValue::from_static("close"));
                }
                Ok::<_, std::convert::Infallible>(response.map(|body| connections::Tracked::new(body, busy)))
            }
        });
        let tcp = WriteTimeout { inner: tcp, timeout: self.write_timeout, stalled: None };
        let mut connection = std::pin::pin!(self.http1.serve_connection(hyper_util::rt::TokioIo::new(tcp), service));
        let mut asked = false;
        let ended = loop {
            tokio::select! {
                // The connection first: it is what wakes this task on every request (no random pick each time).
                biased;
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
pub(super) struct WriteTimeout<T> {
    pub(super) inner: T,
    pub(super) timeout: Duration,
    pub(super) stalled: Option<Pin<Box<tokio::time::Sleep>>>,
}

impl<T> WriteTimeout<T> {
    pub(super) fn watch<R>(
        &mut self,
        cx: &mut TaskContext<'_>,
        polled: Poll<std::io::Result<R>>,
    ) -> Poll<std::io::Result<R>> {
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
pub(super) async fn refuse_connection(mut tcp: tokio::net::TcpStream) {
    use tokio::io::AsyncWriteExt;
    let answer =
        b"HTTP/1.1 503 Service Unavailable\r\nRetry-After: 1\r\nContent-Length: 0\r\nConnection: close\r\n\r\n";
    let _ = tokio::time::timeout(Duration::from_secs(1), tcp.write_all(answer)).await;
}

/// Closes the listener without resetting a connection (see `closing`): no new handshake completes, those under way do
/// and are served, what is queued is taken, then it closes. A connection tried after that is refused, which a
/// balancer retries on another instance (a request sent on a connection reset unaccepted would be lost).
async fn close_listener(listener: tokio::net::TcpListener, admit: &Admit) {
    if closing::refuse_new_handshakes(&listener) {
        let until = tokio::time::Instant::now() + closing::HANDSHAKES_UNDER_WAY;
        loop {
            tokio::select! {
                accepted = listener.accept() => admit.connection(accepted).await,
                () = tokio::time::sleep_until(until) => break,
            }
        }
    }
    let queued: Vec<_> = {
        let mut cx = TaskContext::from_waker(std::task::Waker::noop());
        std::iter::from_fn(|| match listener.poll_accept(&mut cx) {
            Poll::Ready(Ok(accepted)) => Some(accepted),
            _ => None,
        })
        .collect()
    };
    drop(listener);
    for accepted in queued {
        admit.connection(Ok(accepted)).await;
    }
}
