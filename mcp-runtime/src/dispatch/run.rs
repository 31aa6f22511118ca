//! Running one request: its work (the task it may become, then its handler, or a result made inline) raced against
//! its cancel and (2026) its interruption, through the server's layers when it has some, then its answer or its
//! task's outcome. A cancelled request never gets a response: the response path and the cancel path race for the
//! request's slot, and only the first one acts.

use std::any::Any;
use std::future::Future;
use std::panic::AssertUnwindSafe;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context as TaskContext, Poll};

use serde_json::Value;
use tracing::Instrument;

use super::{Call, ListResult, ResultKind, Work};
use crate::base::cancel::cleanup_tasks;
use crate::base::name::Name;
use crate::context::{Context, InFlight};
use crate::handler::tool::{Arguments, Handler};
use crate::metrics::Ended;
use crate::middleware as layer;
use crate::wire::error::Error;
use crate::wire::jsonrpc;
use crate::wire::jsonrpc::Frame;
use crate::wire::protocol::WireResult;

/// How a handler's run ended.
enum Outcome<R> {
    /// It returned (or panicked: an `Err`).
    Done(Result<R, Error>),
    /// The request was cancelled: nothing is sent.
    Cancelled,
    /// 2026 era: it asked the client something, or needs a capability the request did not declare.
    Interrupted,
}

/// Runs one handler to its end, its cancellation or (2026 era) its question to the client.
pub(super) async fn run_handler<R: WireResult + Send + 'static>(call: Call<R>, request: Arc<InFlight>) {
    // One span per request, entered in the handler's task and its blocking thread: a `tracing` event inside a tool
    // says which request it belongs to.
    let span = request_span(call.method, &call.name, &request);
    if call.method == "tools/call" && request.server().inner.served().capture_tool_content && !span.is_disabled() {
        if let Ok(arguments) = serde_json::to_string(&call.arguments) {
            span.record("gen_ai.tool.call.arguments", arguments);
        }
    }
    run_in_span(call, request).instrument(span).await
}

/// With metrics: a request begins; it is timed until its state is dropped (after its answer). Its state is not
/// shared yet.
pub(super) fn begin_timing<R>(metrics: &crate::metrics::Metrics, call: &Call<R>, request: &mut Arc<InFlight>) {
    let labels = crate::metrics::Request {
        method: call.method,
        target: Some(call.name.clone()),
        version: request.meta.era.name(),
        transport: crate::metrics::Transport::of(request.meta.http.is_some()),
    };
    if let Some(request) = Arc::get_mut(request) {
        request.timing = Some(metrics.begin(labels));
    }
}

/// The target of the per-request span. `#[mcp::main]`'s default filter turns it off (`info,mcp::request=off`): with
/// a formatting subscriber a span costs about 11 000 instructions per request (its fields are formatted when it is
/// created), a third of a pipelined call. `RUST_LOG=info` (or any subscriber of the program's own) turns it on.
pub(crate) const REQUEST_SPAN_TARGET: &str = "mcp::request";

/// The tracing span of a request, by the OpenTelemetry conventions for MCP (a `SERVER` span named
/// `{mcp.method.name} {target}`, through tracing-opentelemetry's `otel.*` fields): the method, the request's id, the
/// tool or prompt (else the handler's name), the protocol version, the 2025 session, the transport, the client's
/// name and (over HTTP) its address; its outcome is recorded when it is answered ([`record_outcome`]).
fn request_span(method: &'static str, name: &str, request: &InFlight) -> tracing::Span {
    use tracing::field::Empty;
    let era = request.meta.era.name();
    let transport = if request.meta.http.is_some() { "tcp" } else { "pipe" };
    let span = tracing::info_span!(
        target: REQUEST_SPAN_TARGET,
        "mcp.request",
        otel.name = Empty,
        otel.kind = "server",
        otel.status_code = Empty,
        mcp.method.name = method,
        jsonrpc.request.id = %request.id,
        gen_ai.tool.name = Empty,
        gen_ai.operation.name = Empty,
        gen_ai.prompt.name = Empty,
        gen_ai.tool.call.arguments = Empty,
        gen_ai.tool.call.result = Empty,
        handler = Empty,
        mcp.protocol.version = era,
        mcp.session.id = Empty,
        network.transport = transport,
        client = Empty,
        client.address = Empty,
        error.type = Empty,
        rpc.response.status_code = Empty,
        trace_id = Empty,
        span_id = Empty,
    );
    if !span.is_disabled() {
        match method {
            "tools/call" => {
                span.record("otel.name", format!("{method} {name}"));
                span.record("gen_ai.tool.name", name);
                span.record("gen_ai.operation.name", "execute_tool");
            }
            "prompts/get" => {
                span.record("otel.name", format!("{method} {name}"));
                span.record("gen_ai.prompt.name", name);
            }
            _ => {
                span.record("otel.name", method);
                if name != method {
                    span.record("handler", name);
                }
            }
        }
        if let Some(session) = request.era.session(&*request.link) {
            span.record("mcp.session.id", session.as_str());
        }
        if let Some(client) = &request.meta.client {
            span.record("client", client.info.name.as_str());
        }
        // Over HTTP: the peer's address, or the one the balancer forwarded (`--trust-forwarded`).
        if let Some(address) = request.meta.http.as_ref().and_then(|http| http.peer) {
            span.record("client.address", tracing::field::display(address));
        }
        #[cfg(feature = "opentelemetry")]
        crate::otel::adopt_parent(
            &span,
            request.meta.meta.as_ref(),
            request.meta.http.as_ref().map(|http| &http.headers),
        );
        record_trace_ids(&span, request.meta.meta.as_ref());
    }
    span
}

/// The ids that join a request's logs to its trace (`trace_id`, `span_id` on its span, so on every event of the
/// request): the span's own in OpenTelemetry, when the program records spans there (feature `opentelemetry`);
/// else the trace of the caller's `traceparent` in `_meta`, if it sent one.
fn record_trace_ids(span: &tracing::Span, meta: Option<&serde_json::Map<String, Value>>) {
    #[cfg(feature = "opentelemetry")]
    if let Some((trace, id)) = crate::otel::ids(span) {
        span.record("trace_id", trace.as_str());
        span.record("span_id", id.as_str());
        return;
    }
    // `00-{trace id, 32 hex}-{parent id, 16 hex}-{flags}` (W3C Trace Context).
    let traceparent = meta.and_then(|m| m.get("traceparent")).and_then(Value::as_str);
    if let Some(trace) = traceparent.and_then(|t| t.split('-').nth(1)).filter(|t| t.len() == 32) {
        span.record("trace_id", trace);
    }
}

/// Records a tool's result on its span (the current one, while it is answered), as JSON; not a failed tool's, as
/// the conventions say.
fn record_result<R: WireResult>(answer: &Answer<R>) {
    let span = tracing::Span::current();
    let failed = match answer {
        Answer::Typed(r) => r.is_tool_error(),
        Answer::Value(v) => v.is_tool_error(),
    };
    if span.is_disabled() || failed {
        return;
    }
    let json = match answer {
        Answer::Typed(r) => serde_json::to_string(r),
        Answer::Value(v) => serde_json::to_string(v),
    };
    if let Ok(json) = json {
        span.record("gen_ai.tool.call.result", json);
    }
}

/// Records a request's failure on its span (the current one, while it is answered): `error.type` (the JSON-RPC code,
/// or `tool_error`), `rpc.response.status_code`, and an error status, except for a caller's mistake (the request
/// could not be parsed, an unknown method, invalid params, an unknown resource), which the conventions count as no
/// error of the server's: its status code only.
fn record_outcome(ended: Ended) {
    let span = tracing::Span::current();
    if span.is_disabled() {
        return;
    }
    match ended {
        Ended::Result { tool_error: false } => {}
        Ended::Result { tool_error: true } => {
            span.record("error.type", "tool_error");
            span.record("otel.status_code", "error");
        }
        Ended::Error(code) => {
            span.record("rpc.response.status_code", tracing::field::display(code));
            if !Ended::is_callers(code) {
                span.record("error.type", tracing::field::display(code));
                span.record("otel.status_code", "error");
            }
        }
    }
}

async fn run_in_span<R: WireResult + Send + 'static>(call: Call<R>, request: Arc<InFlight>) {
    let Call { method, name, work, arguments, kind } = call;
    let ctx = Context::new(request.clone());
    let outcome = match &request.server().inner.handlers().layers {
        // A stream open until the client ends it (`events/stream`) is not one a layer could time or limit.
        Some(_) if request.long_lived => run(&request, ctx, name, work, arguments).await.map(Answer::Typed),
        None => run(&request, ctx, name, work, arguments).await.map(Answer::Typed),
        // Boxed, so that the layers' state does not grow every request's future (each is moved into its task).
        Some(stack) => Box::pin(through_layers(stack, &request, ctx, method, name, work, arguments)).await,
    };
    deliver(&request, method, outcome, kind).await
}

/// What a request is answered with: its handler's result, or a result a layer made.
enum Answer<R> {
    Typed(R),
    Value(Value),
}

/// Runs the request's work: the task it may become, then its handler, raced against its cancel and its
/// interruption.
async fn run<R: WireResult + Send + 'static>(
    request: &Arc<InFlight>,
    ctx: Context,
    name: Name,
    work: Work<R>,
    arguments: Arguments,
) -> Outcome<R> {
    let handler = match work {
        Work::Ready(result) => return Outcome::Done(*result),
        Work::Front(answer) => return Outcome::Done(answer()),
        Work::Handler(handler) => handler,
    };
    // The hook that claimed the call (Tasks: the task is stored, and the client told) goes first.
    if let Some(claimed) = crate::hook::claimed(request) {
        if let Err(e) = claimed.hook.begin(&ctx).await {
            return Outcome::Done(Err(e));
        }
    }
    let interrupted = request.era.interrupted();
    match handler {
        Handler::Async(f) => {
            let call = CatchUnwind(f(&ctx, arguments));
            race(request, call, interrupted, |r| r.unwrap_or_else(|panic| Err(panicked(&name, &*panic)))).await
        }
        Handler::Blocking(f) => {
            let span = tracing::Span::current();
            let call = cleanup_tasks().spawn_blocking(move || {
                let _entered = span.enter();
                std::panic::catch_unwind(AssertUnwindSafe(|| f(&ctx, arguments)))
            });
            race(request, call, interrupted, |r| match r {
                Ok(Ok(result)) => result,
                Ok(Err(panic)) => Err(panicked(&name, &*panic)),
                Err(e) => Err(Error::internal(format!("`{name}` failed: {e}"))),
            })
            .await
        }
    }
}

/// Runs the request's work at the bottom of the server's layers; a cancel drops the whole stack's future.
async fn through_layers<R: WireResult + Send + 'static>(
    stack: &layer::Next,
    request: &Arc<InFlight>,
    ctx: Context,
    method: &'static str,
    name: Name,
    work: Work<R>,
    arguments: Arguments,
) -> Outcome<Answer<R>> {
    let inner = request.clone();
    let bottom_ctx = ctx.clone();
    let bottom_name = name.clone();
    let bottom: layer::Run = Box::new(move |arguments| {
        Box::pin(async move {
            match run(&inner, bottom_ctx, bottom_name, work, arguments).await {
                Outcome::Done(result) => layer::Response::typed(result),
                Outcome::Interrupted => layer::Response { outcome: layer::Outcome::InputRequired },
                Outcome::Cancelled => layer::Response { outcome: layer::Outcome::Cancelled },
            }
        })
    });
    let served = layer::serve(stack, layer::Request::new(method, name, arguments, ctx, bottom));
    let response = match race(request, served, std::future::pending(), Ok).await {
        Outcome::Done(Ok(response)) => response,
        Outcome::Done(Err(e)) => return Outcome::Done(Err(e)),
        Outcome::Cancelled => return Outcome::Cancelled,
        Outcome::Interrupted => return Outcome::Interrupted,
    };
    match response.outcome {
        layer::Outcome::Result(payload) if payload.as_any().is::<R>() => match payload.into_any().downcast::<R>() {
            Ok(typed) => Outcome::Done(Ok(Answer::Typed(*typed))),
            Err(_) => unreachable!("checked above"),
        },
        // A layer answered with another request's result: written as JSON.
        layer::Outcome::Result(payload) => Outcome::Done(
            payload
                .to_json()
                .map(Answer::Value)
                .map_err(|e| Error::internal(format!("could not serialize the result: {e}"))),
        ),
        layer::Outcome::Value(v) => Outcome::Done(Ok(Answer::Value(v))),
        layer::Outcome::Error(e) => Outcome::Done(Err(e)),
        layer::Outcome::InputRequired => Outcome::Interrupted,
        layer::Outcome::Cancelled => Outcome::Cancelled,
    }
}

impl<R: WireResult> Outcome<Answer<R>> {
    /// How the request ends, for its metrics: `None` when it was cancelled.
    fn ended(&self) -> Option<Ended> {
        match self {
            Outcome::Done(Ok(Answer::Typed(r))) => Some(Ended::Result { tool_error: r.is_tool_error() }),
            Outcome::Done(Ok(Answer::Value(v))) => Some(Ended::Result { tool_error: v.is_tool_error() }),
            Outcome::Done(Err(e)) => Some(Ended::Error(e.code.0)),
            Outcome::Interrupted => Some(Ended::Result { tool_error: false }),
            Outcome::Cancelled => None,
        }
    }
}

impl<R> Outcome<R> {
    fn map<T>(self, f: impl FnOnce(R) -> T) -> Outcome<T> {
        match self {
            Outcome::Done(result) => Outcome::Done(result.map(f)),
            Outcome::Cancelled => Outcome::Cancelled,
            Outcome::Interrupted => Outcome::Interrupted,
        }
    }
}

/// Answers a request with its outcome, or stores the outcome in its task.
async fn deliver<R: WireResult + Send + 'static>(
    request: &Arc<InFlight>,
    method: &'static str,
    outcome: Outcome<Answer<R>>,
    kind: ResultKind,
) {
    // A successful tool's result on its span, when asked for (`capture_tool_content`).
    if let Outcome::Done(Ok(answer)) = &outcome {
        if method == "tools/call" && request.server().inner.served().capture_tool_content {
            record_result(answer);
        }
    }
    // How it ended, for its span and its metrics (a cancelled request has no outcome: it is counted cancelled).
    if let Some(ended) = outcome.ended() {
        if !matches!(ended, Ended::Result { tool_error: false }) {
            record_outcome(ended);
        }
        if let Some(timing) = &request.timing {
            timing.ended(ended);
        }
    }
    if let Some(claimed) = crate::hook::claimed(request).filter(|c| c.taken()) {
        // A call its hook took over (Tasks: a task): the hook takes the outcome; the request was answered then.
        let outcome = match outcome {
            Outcome::Done(result) => Some(result.and_then(|answer| match answer {
                Answer::Value(v) => Ok(v),
                Answer::Typed(r) => {
                    serde_json::to_value(r).map_err(|e| Error::internal(format!("could not serialize the result: {e}")))
                }
            })),
            Outcome::Cancelled | Outcome::Interrupted => None,
        };
        return claimed.hook.finish(&Context::new(request.clone()), outcome).await;
    }
    match outcome {
        // The handler's future has been dropped (async) or its result will be (blocking); whatever its drop sent
        // (cancels of its own requests to the client) went first, and the request's stream ends now.
        Outcome::Cancelled => request.out.close(),
        Outcome::Interrupted => {
            // The handler stops here; a blocking one sees its flag (its question already returned an error).
            request.stop_quietly();
            let result = request.era.interrupted_result(request);
            complete(request, result.map(ListResult::Value));
        }
        Outcome::Done(result) => {
            let frame = match result {
                Err(e) => Frame::error(Some(&request.id), &e),
                Ok(Answer::Typed(r)) => encode_result(request, &r, kind),
                // A result a layer made is decorated like any other (a list's as a list).
                Ok(Answer::Value(v)) => {
                    let kind = if kind == ResultKind::Encoded { ResultKind::List } else { kind };
                    encode_result(request, &v, kind)
                }
            };
            finish(request, frame);
        }
    }
}

/// Runs a handler's future against its request's cancel and (2026) interruption. The handler is polled first, once
/// the token is seen not cancelled: one that finishes at once never registers with the token or the round (each a
/// waiter list, locked to enter and to leave), and a cancelled one still stops at its next `.await`.
async fn race<T, R>(
    request: &InFlight,
    call: impl Future<Output = T>,
    interrupted: impl Future<Output = ()>,
    done: impl FnOnce(T) -> Result<R, Error>,
) -> Outcome<R> {
    let mut call = std::pin::pin!(call);
    let mut cancelled = std::pin::pin!(request.token.cancelled());
    let mut interrupted = std::pin::pin!(interrupted);
    let mut done = Some(done);
    std::future::poll_fn(|cx| {
        if request.token.is_cancelled() {
            return Poll::Ready(Outcome::Cancelled);
        }
        if let Poll::Ready(r) = call.as_mut().poll(cx) {
            // A blocking handler whose question interrupted it returns too (with the error its question gave it):
            // the interruption is the outcome.
            if request.era.was_interrupted() {
                return Poll::Ready(Outcome::Interrupted);
            }
            let done = done.take().expect("a finished handler is not polled again");
            return Poll::Ready(Outcome::Done(done(r)));
        }
        if cancelled.as_mut().poll(cx).is_ready() {
            return Poll::Ready(Outcome::Cancelled);
        }
        if interrupted.as_mut().poll(cx).is_ready() {
            return Poll::Ready(Outcome::Interrupted);
        }
        Poll::Pending
    })
    .await
}

/// Sends a finished request's response, unless a cancel went first.
fn complete(request: &Arc<InFlight>, result: Result<ListResult, Error>) {
    let frame = match result {
        Ok(ListResult::Value(r)) => Frame::result(&request.id, &r),
        Ok(ListResult::Raw(r)) => Frame::result(&request.id, &r),
        Err(e) => Frame::error(Some(&request.id), &e),
    };
    finish(request, frame);
}

/// Sends a finished request's final frame, unless a cancel went first.
fn finish(request: &Arc<InFlight>, frame: Frame) {
    request.link.forget(request);
    let frame = within_frame_limit(request, frame);
    if !request.finish(frame) {
        tracing::debug!(id = %request.id, "response dropped: the request was cancelled first");
    }
}

/// A response over the limit of one frame becomes an error that says so: nothing else could reach the client.
fn within_frame_limit(request: &InFlight, frame: Frame) -> Frame {
    let limit = request.server().inner.limits().outbound.max_frame_bytes;
    if frame.len() <= limit {
        return frame;
    }
    tracing::warn!(id = %request.id, len = frame.len(), limit, "a response over the limit of one frame: sending an error instead");
    let error = Error::internal(format!(
        "the result is {} bytes, over this server's limit of {limit} bytes for one message; the server can raise it \
         with ServerBuilder::outbound_limits(OutboundLimits::default().with_max_frame_bytes(..))",
        frame.len()
    ));
    Frame::error(Some(&request.id), &error)
}

fn panicked(name: &str, panic: &(dyn Any + Send)) -> Error {
    let message = if let Some(s) = panic.downcast_ref::<&str>() {
        (*s).to_owned()
    } else if let Some(s) = panic.downcast_ref::<String>() {
        s.clone()
    } else {
        "unknown panic".to_owned()
    };
    tracing::error!(handler = name, %message, "handler panicked");
    Error::internal(format!("`{name}` panicked: {message}"))
}

/// Polls a boxed future, turning a panic into an `Err` with its payload.
struct CatchUnwind<F>(F);

impl<F: Future + Unpin> Future for CatchUnwind<F> {
    type Output = Result<F::Output, Box<dyn Any + Send>>;

    fn poll(mut self: Pin<&mut Self>, cx: &mut TaskContext<'_>) -> Poll<Self::Output> {
        let inner = &mut self.0;
        match std::panic::catch_unwind(AssertUnwindSafe(|| Pin::new(inner).poll(cx))) {
            Ok(Poll::Pending) => Poll::Pending,
            Ok(Poll::Ready(v)) => Poll::Ready(Ok(v)),
            Err(panic) => Poll::Ready(Err(panic)),
        }
    }
}

/// A handler's response frame as the request's era writes it: as it is, or after the members every result of its
/// era starts with (the 2026 `resultType` and server info, and caching hints on cacheable results). A result already
/// in its era's form ([`ResultKind::Encoded`]) is written as it is.
fn encode_result<R: WireResult>(request: &InFlight, result: &R, kind: ResultKind) -> Frame {
    let id = &request.id;
    if kind == ResultKind::Encoded {
        return Frame::result(id, result);
    }
    let link = &*request.link;
    match request.era.result_prefix(link) {
        None => Frame::result_sized(id, result, result.payload_len()),
        Some(prefix) => {
            let hints =
                (kind != ResultKind::Plain).then(|| request.meta.cache.unwrap_or(request.server().inner.v2026().cache));
            jsonrpc::encode_result_stamped(id, result, prefix, hints, |v| request.era.decorate(link, v, hints))
        }
    }
}
