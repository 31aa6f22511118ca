//! A round-robin HTTP/1 proxy on a free loopback port, in front of several instances of a server: each request goes
//! to the next upstream in turn (whatever connection it came on), its body and its response's body streamed both
//! ways as they come (an SSE response is passed on event by event, never buffered). An upstream that cannot be
//! reached is a 502; one that breaks mid-response cuts the client's response too (its connection closed before the
//! body's end), as a real balancer does. It remembers where it sent each request.

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
    next: AtomicUsize,
    /// The upstream each request was sent to, in order.
    sent: Mutex<Vec<usize>>,
}

impl Balancer {
    /// Starts one in front of `upstreams` (`host:port` each). Call it inside a Tokio runtime.
    pub async fn start(upstreams: Vec<String>) -> Balancer {
        assert!(!upstreams.is_empty(), "a balancer needs an upstream");
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.expect("bind the balancer");
        let url = format!("http://{}/mcp", listener.local_addr().unwrap());
        let routing = Arc::new(Routing { upstreams, next: AtomicUsize::new(0), sent: Mutex::default() });
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

    /// The upstream (its index) of each request so far, in order.
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
    /// Sends `request` to the next upstream on a connection of its own, and hands its response back as it comes.
    async fn forward(&self, request: Request<Incoming>) -> Response<Relayed> {
        let index = self.next.fetch_add(1, Ordering::SeqCst) % self.upstreams.len();
        self.sent.lock().unwrap().push(index);
        let upstream = &self.upstreams[index];
        let tcp = match tokio::net::TcpStream::connect(upstream).await {
            Ok(tcp) => tcp,
            Err(e) => return bad_gateway(format!("upstream {upstream} unreachable: {e}")),
        };
        let _ = tcp.set_nodelay(true);
        let (mut sender, connection) = match hyper::client::conn::http1::handshake(TokioIo::new(tcp)).await {
            Ok(pair) => pair,
            Err(e) => return bad_gateway(format!("upstream {upstream}: {e}")),
        };
        // The connection ends when the response's body is read to its end or dropped (the client went away).
        tokio::spawn(connection);
        match sender.send_request(request).await {
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
