//! Middleware: the dispatcher as a [`tower::Service`] that [`ServerBuilder::layer`](crate::ServerBuilder::layer)
//! wraps in layers.
//!
//! Every request the dispatcher serves (`tools/*`, `prompts/*`, `resources/list|read|templates/list`,
//! `completion/complete`, `tasks/*` and custom methods), on every transport and in both eras, goes through the
//! layers as an [`Request`] and comes back as an [`Response`]; so does what an era front answers by itself
//! (`initialize`, `ping`, `logging/setLevel`, `resources/subscribe|unsubscribe`, `server/discover`), whose effect
//! happens only if the layers let the request through. `subscriptions/listen` (a stream for as long as the client
//! listens) and notifications do not go through the layers, nor does a request refused before it reaches them (a
//! malformed one, a 2025 request before `initialize`, an unknown tool).
//!
//! - **Order.** Layers run in the order they are added, as with [`tower::ServiceBuilder`]: the first added sees
//!   each request first and its response last.
//! - **Errors.** A layer answers a request itself by returning an [`Response::error`] (a check that refuses), or
//!   fails with any error: an [`Error`] is answered as it is; tower's `Elapsed` (from `tower::timeout`) becomes
//!   -32001 ([`ErrorCode::REQUEST_TIMEOUT`]), tower's `Overloaded` (from `tower::load_shed`) -31000
//!   ([`ErrorCode::OVERLOADED`]), anything else -32603 with its message.
//! - **Cancellation** is unchanged: a cancelled request's future is dropped, layers and all, and nothing is
//!   answered. A layer that drops the handler's future before it finished (a timeout) stops the handler as a cancel
//!   would (an async one is dropped, a plain `fn` sees `ctx.is_cancelled()`), and the request is answered with what
//!   the layer returned.
//! - **Readiness.** Each request is served by a clone of the stack (as axum does): layers whose clones share their
//!   state (`tower::limit::ConcurrencyLimitLayer`, `tower::timeout::TimeoutLayer`) work as they are; one whose
//!   clones do not (`tower::limit::RateLimitLayer`) goes behind `tower::buffer::BufferLayer`.
//! - **Cost.** With no layer the dispatcher does not build any of this.
//!
//! ```
//! use std::time::Duration;
//! use mcp::middleware::{Request, Response};
//! use mcp::tower::{self, ServiceExt};
//!
//! /// Echo the text back.
//! #[mcp::tool]
//! async fn echo(text: String) -> String {
//!     text
//! }
//!
//! let server = mcp::Server::builder()
//!     .tool::<echo>()
//!     // Outermost first: every request is bounded to 30 s, at most 8 run at once.
//!     .layer(tower::timeout::TimeoutLayer::new(Duration::from_secs(30)))
//!     .layer(tower::limit::ConcurrencyLimitLayer::new(8))
//!     // A layer written as a function: refuse tools whose name starts with "admin_".
//!     .layer(tower::layer::layer_fn(|inner: mcp::middleware::Next| {
//!         tower::service_fn(move |request: Request| {
//!             let inner = inner.clone();
//!             async move {
//!                 if request.method() == "tools/call" && request.name().starts_with("admin_") {
//!                     return Ok(Response::error(mcp::Error::invalid_params("not for you")));
//!                 }
//!                 inner.oneshot(request).await
//!             }
//!         })
//!     }))
//!     .build()
//!     .unwrap();
//! # let _ = server;
//! ```

use std::any::Any;
use std::fmt;
use std::task::{Context as TaskContext, Poll};

use serde_json::{Map, Value};
use tower::util::BoxCloneSyncService;
use tower::{Layer, Service, ServiceExt};

use crate::base::future::BoxFuture;
use crate::context::{Context, RequestMeta};
use crate::handler::tool::Arguments;
use crate::wire::error::{Error, ErrorCode};
use crate::wire::jsonrpc::RequestId;
use crate::wire::protocol::WireResult;

/// What a layer's service fails with: any error (tower's own, `tower::BoxError`).
pub type BoxError = Box<dyn std::error::Error + Send + Sync>;

/// The service the layers wrap: the rest of the stack, down to the dispatcher. Cheap to clone; a layer written as a
/// function keeps one and calls a clone of it (`inner.clone().oneshot(request)`).
pub type Next = BoxCloneSyncService<Request, Response, BoxError>;

/// A request on its way to its handler, as a layer sees it.
pub struct Request {
    method: &'static str,
    name: crate::base::name::Name,
    arguments: Arguments,
    ctx: Context,
    run: Option<Run>,
}

/// What serves the request at the bottom of the stack: the handler (or a result already made), given the
/// arguments as the layers left them.
pub(crate) type Run = Box<dyn FnOnce(Arguments) -> BoxFuture<'static, Response> + Send>;

impl Request {
    pub(crate) fn new(
        method: &'static str,
        name: crate::base::name::Name,
        arguments: Arguments,
        ctx: Context,
        run: Run,
    ) -> Request {
        Request { method, name, arguments, ctx, run: Some(run) }
    }

    /// The method: `tools/call`, `tools/list`, `resources/read`, a custom method's name, ...
    pub fn method(&self) -> &str {
        self.method
    }

    /// What the request reaches: the tool's or prompt's name, the resource's (not its URI: that is
    /// `meta().resource_uri`), a custom method's name; the method itself for lists, `completion/complete` and
    /// `tasks/*`.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The request's id.
    pub fn id(&self) -> &RequestId {
        self.ctx.request_id()
    }

    /// The arguments the handler will read: a tool's `arguments`, a prompt's, a resource template's variables
    /// (as strings), a custom method's `params`; a list's `params` (its `cursor`).
    pub fn arguments(&self) -> &Map<String, Value> {
        self.arguments.as_map()
    }

    /// The arguments, for a layer that changes them.
    pub fn arguments_mut(&mut self) -> &mut Map<String, Value> {
        self.arguments.as_map_mut()
    }

    /// The request's metadata: its era, the client, `_meta`, and on HTTP its headers and the caller
    /// ([`HttpRequest::auth`](crate::HttpRequest::auth)).
    pub fn meta(&self) -> &RequestMeta {
        self.ctx.meta()
    }

    /// The handler's context: the server, its state, cancellation, logs and progress to the client.
    pub fn context(&self) -> &Context {
        &self.ctx
    }
}

impl fmt::Debug for Request {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Request")
            .field("method", &self.method)
            .field("name", &self.name)
            .field("id", self.id())
            .field("arguments", &self.arguments)
            .finish_non_exhaustive()
    }
}

/// A request's outcome on its way back through the layers.
pub struct Response {
    pub(crate) outcome: Outcome,
}

pub(crate) enum Outcome {
    /// The handler's result, still typed (it is serialized once, into the frame).
    Result(Box<dyn Payload>),
    /// A result a layer made.
    Value(Value),
    Error(Error),
    /// 2026 era: the handler asked the client something; the answer is an `input_required` result.
    InputRequired,
    /// The request was cancelled: nothing is answered.
    Cancelled,
}

impl Response {
    /// An error answer: what a layer that refuses a request returns instead of calling the rest of the stack.
    pub fn error(error: Error) -> Response {
        Response { outcome: Outcome::Error(error) }
    }

    /// A result a layer made (a cached answer, say): the JSON the request's method returns. In the 2026 era the
    /// server adds `resultType` and its own info, as to any result.
    pub fn result(result: Value) -> Response {
        Response { outcome: Outcome::Value(result) }
    }

    pub(crate) fn typed<R: WireResult + Send + 'static>(result: Result<R, Error>) -> Response {
        match result {
            Ok(r) => Response { outcome: Outcome::Result(Box::new(r)) },
            Err(e) => Response::error(e),
        }
    }

    /// The error the request is answered with, if it is one (a tool's `isError` result is a result).
    pub fn as_error(&self) -> Option<&Error> {
        match &self.outcome {
            Outcome::Error(e) => Some(e),
            _ => None,
        }
    }

    /// Whether this is a tool result with `isError: true`, or an error.
    pub fn is_error(&self) -> bool {
        match &self.outcome {
            Outcome::Error(_) => true,
            Outcome::Result(r) => {
                r.as_any().downcast_ref::<crate::CallToolResult>().is_some_and(|r| r.is_error == Some(true))
            }
            Outcome::Value(v) => v.get("isError") == Some(&Value::Bool(true)),
            Outcome::InputRequired | Outcome::Cancelled => false,
        }
    }

    /// 2026 era: whether the handler asked the client something, so the answer is an `input_required` result (the
    /// client answers and calls again).
    pub fn is_input_required(&self) -> bool {
        matches!(self.outcome, Outcome::InputRequired)
    }

    /// The result as JSON, as the handler returned it (before the era's additions): serialized for the asking, so a
    /// layer that only times or counts requests should not call it. `None` for an error or an `input_required`
    /// answer.
    pub fn to_json(&self) -> Option<Value> {
        match &self.outcome {
            Outcome::Result(r) => r.to_json().ok(),
            Outcome::Value(v) => Some(v.clone()),
            _ => None,
        }
    }
}

impl fmt::Debug for Response {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let kind = match &self.outcome {
            Outcome::Result(_) | Outcome::Value(_) => "result",
            Outcome::Error(_) => "error",
            Outcome::InputRequired => "input_required",
            Outcome::Cancelled => "cancelled",
        };
        f.debug_struct("Response").field("kind", &kind).field("error", &self.as_error()).finish()
    }
}

/// A handler's result behind the layers: typed, so the pass-through case costs no serialization.
pub(crate) trait Payload: Send {
    fn to_json(&self) -> serde_json::Result<Value>;
    fn as_any(&self) -> &dyn Any;
    fn into_any(self: Box<Self>) -> Box<dyn Any>;
}

impl<R: WireResult + Send + 'static> Payload for R {
    fn to_json(&self) -> serde_json::Result<Value> {
        serde_json::to_value(self)
    }
    fn as_any(&self) -> &dyn Any {
        self
    }
    fn into_any(self: Box<Self>) -> Box<dyn Any> {
        self
    }
}

/// The bottom of the stack: runs the request's handler.
#[derive(Clone, Copy)]
struct Handlers;

impl Service<Request> for Handlers {
    type Response = Response;
    type Error = BoxError;
    type Future = BoxFuture<'static, Result<Response, BoxError>>;

    fn poll_ready(&mut self, _: &mut TaskContext<'_>) -> Poll<Result<(), BoxError>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, mut request: Request) -> Self::Future {
        let Some(run) = request.run.take() else {
            return Box::pin(async { Err("this request was already served".into()) });
        };
        let stop = StopOnDrop { ctx: request.ctx.clone(), armed: true };
        let run = run(std::mem::take(&mut request.arguments));
        Box::pin(async move {
            let mut stop = stop;
            let response = run.await;
            stop.armed = false;
            Ok(response)
        })
    }
}

/// Raises a blocking handler's cancel flag when a layer drops its future before it finished (a timeout): the
/// thread cannot be stopped, but it can be told. The request is not cancelled: the layer's answer is still sent.
struct StopOnDrop {
    ctx: Context,
    armed: bool,
}

impl Drop for StopOnDrop {
    fn drop(&mut self) {
        if self.armed {
            self.ctx.in_flight().stop_handler();
        }
    }
}

/// The layers a builder collects, applied when the server is built.
#[derive(Default)]
pub(crate) struct Layers {
    wrap: Vec<Box<dyn FnOnce(Next) -> Next + Send>>,
}

impl Layers {
    pub(crate) fn push<L>(&mut self, layer: L)
    where
        L: Layer<Next> + Send + 'static,
        L::Service: Service<Request, Response = Response> + Clone + Send + Sync + 'static,
        <L::Service as Service<Request>>::Error: Into<BoxError>,
        <L::Service as Service<Request>>::Future: Send + 'static,
    {
        self.wrap.push(Box::new(move |next| BoxCloneSyncService::new(layer.layer(next).map_err(Into::into))));
    }

    /// The stack, outermost layer first; `None` without layers (the dispatcher then calls handlers directly).
    pub(crate) fn build(self) -> Option<Next> {
        if self.wrap.is_empty() {
            return None;
        }
        let mut stack: Next = BoxCloneSyncService::new(Handlers);
        for wrap in self.wrap.into_iter().rev() {
            stack = wrap(stack);
        }
        Some(stack)
    }
}

/// Serves one request through the stack. Never fails: a layer's error becomes the answer.
pub(crate) async fn serve(stack: &Next, request: Request) -> Response {
    match stack.clone().oneshot(request).await {
        Ok(response) => response,
        Err(e) => Response::error(into_error(e)),
    }
}

/// What a layer's error is answered with.
fn into_error(e: BoxError) -> Error {
    let e = match e.downcast::<Error>() {
        Ok(e) => return *e,
        Err(e) => e,
    };
    if e.is::<tower::timeout::error::Elapsed>() {
        return Error::new(ErrorCode::REQUEST_TIMEOUT, "the request timed out (a timeout layer of the server)");
    }
    if e.is::<tower::load_shed::error::Overloaded>() {
        return Error::new(ErrorCode::OVERLOADED, "the server is overloaded (a load-shedding layer); try again later");
    }
    Error::internal(e.to_string())
}
