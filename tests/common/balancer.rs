//! A round-robin HTTP/1 proxy on a free loopback port, in front of several instances of a server: each request goes
//! to the next upstream in turn (whatever connection it came on), its body and its response's body streamed both
//! ways as they come (an SSE response is passed on event by event, never buffered). An upstream that cannot be
//! reached is a 502; one that breaks mid-response cuts the client's response too (its connection closed before the
//! body's end), as a real balancer does. It remembers where it sent each request. It opens a connection to the
//! upstream per request, unless started [pooled](Balancer::start_pooled) (the benchmarks), as production balancers
//! keep theirs.

use std::convert::Infallible;
use std::pin::Pin;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};

use hyper::body::{Body, Bytes, Frame, Incoming, SizeHint};
use hyper::{Request, Response, StatusCode};
use hyper_util::rt::TokioIo;

/// A running balancer; stopped when dropped.
pub struct Balancer {
    /// `http://127.0.0.1:PORT/mcp`.
    pub url: String,
    routing: Arc<Routing>,
    accept: tokio::task::JoinHandle<()>,
}

/// Where requests go, and where they went.
struct Routing {
    upstreams: Vec<String>,
    /// Idle connections to each upstream, when pooled.
    pools: Option<Vec<Mutex<Vec<hyper::client::conn::http1::SendRequest<Incoming>>>>>,
    next: AtomicUsize,
    /// The upstream each request was sent to, in order.
    sent: Mutex<Vec<usize>>,
}

impl Balancer {
    /// Starts one in front of `upstreams` (`host:port` each). Call it inside a Tokio runtime.
    #[allow(dead_code)]
    pub async fn start(upstreams: Vec<String>) -> Balancer {
        Balancer::started(upstreams, false).await
    }

    /// One that keeps the connections to its upstreams open and reuses them, request after request.
    #[allow(dead_code)]
    pub async fn start_pooled(upstreams: Vec<String>) -> Balancer {
        Balancer::started(upstreams, true).await
    }

    async fn started(upstreams: Vec<String>, pooled: bool) -> Balancer {
        assert!(!upstreams.is_empty(), "a balancer needs an upstream");
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.expect("bind the balancer");
        let url = format!("http://{}/mcp", listener.local_addr().unwrap());
        let pools = pooled.then(|| upstreams.iter().map(|_| Mutex::default()).collect());
        let routing = Arc::new(Routing { upstreams, pools, next: AtomicUsize::new(0), sent: Mutex::default() });
        let accepting = routing.clone();
        let accept = tokio::spawn(async move {
            loop {
                let Ok((tcp, _)) = listener.accept().await else { continue };
                let _ = tcp.set_nodelay(true);
                let routing = accepting.clone();
                let service = hyper::service::service_fn(move |request| {
                    let routing = routing.clone();
                    async move { Ok::<_, Infallible>(routing.forward(request).await) }
                });
                tokio::spawn(async move {
                    let _ =
                        hyper::server::conn::http1::Builder::new().serve_connection(TokioIo::new(tcp), service).await;
                });
            }
        });
        Balancer { url, routing, accept }
    }

    /// The upstream (its index) of each request so far, in order (not kept when pooled: a benchmark's requests are
    /// too many).
    #[allow(dead_code)]
    pub fn sent(&self) -> Vec<usize> {
        self.routing.sent.lock().unwrap().clone()
    }
}

impl Drop for Balancer {
    fn drop(&mut self) {
        self.accept.abort();
    }
}

impl Routing {
    /// Sends `request` to the next upstream (on a connection of its own, or an idle one of the pool), and hands its
    /// response back as it comes.
    async fn forward(self: &Arc<Self>, request: Request<Incoming>) -> Response<Relayed> {
        let index = self.next.fetch_add(1, Ordering::SeqCst) % self.upstreams.len();
        if self.pools.is_none() {
            self.sent.lock().unwrap().push(index);
        }
        let upstream = &self.upstreams[index];
        let idle = self.pools.as_ref().and_then(|pools| {
            let mut pool = pools[index].lock().unwrap();
            std::iter::from_fn(|| pool.pop()).find(|sender| !sender.is_closed())
        });
        let mut sender = match idle {
            Some(sender) => sender,
            None => {
                let tcp = match tokio::net::TcpStream::connect(upstream).await {
                    Ok(tcp) => tcp,
                    Err(e) => return bad_gateway(format!("upstream {upstream} unreachable: {e}")),
                };
                let _ = tcp.set_nodelay(true);
                let (sender, connection) = match hyper::client::conn::http1::handshake(TokioIo::new(tcp)).await {
                    Ok(pair) => pair,
                    Err(e) => return bad_gateway(format!("upstream {upstream}: {e}")),
                };
                // The connection ends when the response's body is read to its end or dropped (the client went
                // away), unless pooled.
                tokio::spawn(connection);
                sender
            }
        };
        let response = sender.send_request(request).await;
        if self.pools.is_some() {
            // Back to the pool once the response's body has been read.
            let routing = self.clone();
            tokio::spawn(async move {
                if sender.ready().await.is_ok() {
                    routing.pools.as_ref().unwrap()[index].lock().unwrap().push(sender);
                }
            });
        }
        match response {
            Ok(response) => response.map(Relayed::Upstream),
            Err(e) => bad_gateway(format!("upstream {upstream}: {e}")),
        }
    }
}

fn bad_gateway(reason: String) -> Response<Relayed> {
    let mut response = Response::new(Relayed::Text(Some(Bytes::from(reason))));
    *response.status_mut() = StatusCode::BAD_GATEWAY;
    response
}

/// A response body: an upstream's, frame by frame (an error ends the client's response without its end), or the
/// balancer's own text.
enum Relayed {
    Upstream(Incoming),
    Text(Option<Bytes>),
}

impl Body for Relayed {
    type Data = Bytes;
    type Error = hyper::Error;

    fn poll_frame(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Result<Frame<Bytes>, hyper::Error>>> {
        match self.get_mut() {
            Relayed::Upstream(body) => Pin::new(body).poll_frame(cx),
            Relayed::Text(text) => Poll::Ready(text.take().map(|t| Ok(Frame::data(t)))),
        }
    }

    fn is_end_stream(&self) -> bool {
        match self {
            Relayed::Upstream(body) => body.is_end_stream(),
            Relayed::Text(text) => text.is_none(),
        }
    }

    fn size_hint(&self) -> SizeHint {
        match self {
            Relayed::Upstream(body) => body.size_hint(),
            Relayed::Text(text) => SizeHint::with_exact(text.as_ref().map_or(0, |t| t.len() as u64)),
        }
    }
}
