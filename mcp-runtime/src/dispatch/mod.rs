//! The dispatcher: what both protocol eras share. A [`Connection`] owns the in-flight table (request id to its
//! state, for cancellation) and the requests this server sent to the client; [`dispatch`] serves the methods both
//! eras have (`tools/*`, `prompts/*`, `resources/list|read|templates/list`, `completion/complete`, custom methods)
//! from the server's handlers, once an era front has turned the request into a [`Request`] with its metadata.
//!
//! The rule that a cancelled request never gets a response lives here: the response path and the cancel path race
//! for the request's slot, and only the first one acts.

use std::any::Any;
use std::collections::HashMap;
use std::future::Future;
use std::panic::AssertUnwindSafe;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, AtomicI64, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::task::{Context as TaskContext, Poll};

use serde_json::{json, Map, Value};
use tokio::sync::oneshot;
use tracing::Instrument;

use crate::base::cancel::cleanup_tasks;
pub(crate) use crate::base::sink::{FrameSink, NoSink, Sink};
use crate::base::sync::Unpoisoned;
use crate::context::{Context, EraState, RequestMeta, RequestState};
use crate::handler::tool::{Arguments, Handler};
use crate::server::registry::ListKind;
use crate::server::Server;
use crate::task::TaskPlan;
use crate::wire::error::{Error, ErrorCode};
use crate::wire::jsonrpc::{self, RequestId};
use crate::wire::protocol::WireResult;

pub mod layer;

/// Where a message came from and where its replies go: the sink, and on HTTP the request's headers and caller.
pub(crate) struct Origin {
    pub sink: Sink,
    pub http: Option<Arc<crate::context::HttpRequest>>,
}

impl FrameSink for Origin {
    fn send(&self, frame: String) {
        self.sink.send(frame)
    }
    fn send_droppable(&self, frame: String) {
        self.sink.send_droppable(frame)
    }
    fn finish(&self, frame: String) {
        self.sink.finish(frame)
    }
    fn close(&self) {
        self.sink.close()
    }
}

/// One connection as the dispatcher sees it, whatever its era: a stdio process, a 2025 HTTP session, or a single
/// 2026 HTTP request.
pub(crate) struct Connection {
    server: Server,
    /// Frames that belong to no request, and the default route.
    out: Sink,
    in_flight: Mutex<HashMap<RequestId, Arc<RequestState>>>,
    /// Requests this server sent to the client (2025 era), waiting for their responses.
    outgoing: Mutex<HashMap<RequestId, oneshot::Sender<Result<Value, Value>>>>,
    next_outgoing: AtomicI64,
    /// Unique in the process: names the 2025 session its tasks belong to.
    number: u64,
    /// A stateless 2025 "session" (one per HTTP request): its tasks belong to no session.
    sessionless: AtomicBool,
    /// Set when the input ended and the answers of what is in flight are still wanted ([`Connection::drained`]):
    /// the request that empties the in-flight table then wakes `idle`, and requests to the client fail at once.
    draining: AtomicBool,
    idle: tokio::sync::Notify,
}

/// Numbers connections.
static CONNECTIONS: AtomicU64 = AtomicU64::new(1);

/// A request an era front has checked and described, ready for the dispatcher.
pub(crate) struct Request {
    pub id: RequestId,
    pub method: String,
    pub params: Map<String, Value>,
    pub meta: RequestMeta,
    pub era: EraState,
}

impl Connection {
    pub(crate) fn new(server: Server, out: Sink) -> Arc<Connection> {
        Arc::new(Connection {
            server,
            out,
            in_flight: Mutex::new(HashMap::new()),
            outgoing: Mutex::new(HashMap::new()),
            next_outgoing: AtomicI64::new(1),
            number: CONNECTIONS.fetch_add(1, Ordering::Relaxed),
            sessionless: AtomicBool::new(false),
            draining: AtomicBool::new(false),
            idle: tokio::sync::Notify::new(),
        })
    }

    /// Marks a stateless 2025 connection: it is no session its tasks could belong to.
    pub(crate) fn set_sessionless(&self) {
        self.sessionless.store(true, Ordering::Relaxed);
    }

    /// This connection, as the client its limits are counted for when nothing better names the client.
    pub(crate) fn connection_key(&self) -> String {
        format!("connection:{}", self.number)
    }

    /// The session this connection is, for the tasks it creates (2025 era); `None` when stateless.
    pub(crate) fn session_key(&self) -> Option<String> {
        (!self.sessionless.load(Ordering::Relaxed)).then(|| format!("session:{}", self.number))
    }

    pub(crate) fn server(&self) -> &Server {
        &self.server
    }

    /// Sends a frame that belongs to no request.
    pub(crate) fn send(&self, frame: String) {
        self.out.send(frame);
    }

    /// The default route.
    pub(crate) fn sink(&self) -> &Sink {
        &self.out
    }

    fn table(&self) -> std::sync::MutexGuard<'_, HashMap<RequestId, Arc<RequestState>>> {
        self.in_flight.locked()
    }

    /// Registers a request to the client; the response (or error) arrives on the receiver.
    pub(crate) fn register_outgoing(&self) -> (RequestId, oneshot::Receiver<Result<Value, Value>>) {
        let id = RequestId::Number(self.next_outgoing.fetch_add(1, Ordering::Relaxed));
        let (tx, rx) = oneshot::channel();
        // After the input ended no answer can arrive: the sender is dropped, and the handler hears `Disconnected`.
        if !self.draining.load(Ordering::SeqCst) {
            self.outgoing.locked().insert(id.clone(), tx);
        }
        (id, rx)
    }

    /// Forgets a request to the client (it was cancelled); `true` if it was still waiting.
    pub(crate) fn forget_outgoing(&self, id: &RequestId) -> bool {
        self.outgoing.locked().remove(id).is_some()
    }

    /// Routes the client's answer to a request of ours.
    pub(crate) fn answer_outgoing(&self, id: &RequestId, outcome: Result<Value, Value>) {
        let waiting = self.outgoing.locked().remove(id);
        match waiting {
            Some(tx) => {
                let _ = tx.send(outcome);
            }
            None => tracing::debug!(%id, "ignoring a response to no request of ours (finished or cancelled)"),
        }
    }

    /// Answers a message that could not be parsed, or was not a JSON-RPC message.
    pub(crate) fn reject(&self, id: Option<&RequestId>, error: &Error) {
        self.send(jsonrpc::encode_error(id, error));
    }

    /// Registers a request in the in-flight table, then runs its handler: an async handler is polled once at once,
    /// in the caller's task (the transport's reader), and spawned only if it is not done by then. A handler that
    /// answers without waiting (most do) costs no task, no wake-up of another worker and no hop: its response is on
    /// the wire before the next message is read. Async handlers must not block (tokio's rule everywhere), so this
    /// cannot stall the reader; plain `fn` handlers go to the blocking pool as before.
    pub(crate) fn start<R: WireResult + Send + 'static>(
        self: &Arc<Self>,
        request: Arc<RequestState>,
        call: Call<R>,
    ) -> Result<(), Error> {
        self.register(&request)?;
        let eager = !matches!(call.work, Work::Handler(Handler::Blocking(_)));
        let mut run = Box::pin(run_handler(call, request));
        // A future may be polled with any waker; the spawned task polls it again with its own.
        if eager && run.as_mut().poll(&mut TaskContext::from_waker(std::task::Waker::noop())).is_ready() {
            return Ok(());
        }
        cleanup_tasks().spawn(run);
        Ok(())
    }

    /// Puts a request in the in-flight table, so that a cancel that follows it on the wire finds it.
    pub(crate) fn register(&self, request: &Arc<RequestState>) -> Result<(), Error> {
        let mut table = self.table();
        let limit = self.server.inner.max_in_flight;
        if table.len() >= limit {
            return Err(Error::new(
                ErrorCode::OVERLOADED,
                format!("too many requests in flight on this connection (the limit is {limit}); try again later"),
            ));
        }
        if table.contains_key(&request.id) {
            return Err(Error::new(
                ErrorCode::INVALID_REQUEST,
                format!("request id {} is already in flight", request.id),
            ));
        }
        table.insert(request.id.clone(), request.clone());
        Ok(())
    }

    /// Cancels an in-flight request. Unknown, finished and already cancelled ids are ignored.
    pub(crate) fn cancel(&self, id: &RequestId, reason: Option<&str>) {
        let removed = self.table().remove(id);
        self.left_table();
        let Some(request) = removed else {
            tracing::debug!(%id, reason, "cancel for a request that is not in flight: ignored");
            return;
        };
        if request.cancel() {
            tracing::info!(%id, reason, "request cancelled");
        }
    }

    /// Cancels everything in flight: the peer is gone or the server is stopping.
    /// Its running tasks end too: no one could reach them any more.
    pub(crate) fn cancel_all(&self, reason: &str) {
        self.server.tasks().cancel_on(self, reason);
        let requests: Vec<_> = self.table().drain().map(|(_, r)| r).collect();
        for r in requests {
            if r.cancel() {
                tracing::info!(id = %r.id, reason, "request cancelled");
            }
        }
    }

    /// Whether anything is in flight.
    pub(crate) fn is_busy(&self) -> bool {
        !self.table().is_empty()
    }

    /// Takes a finished request out of the table (if it is still there, and still this one).
    pub(crate) fn forget(&self, request: &Arc<RequestState>) {
        {
            let mut table = self.table();
            if table.get(&request.id).is_some_and(|r| Arc::ptr_eq(r, request)) {
                table.remove(&request.id);
            }
        }
        self.left_table();
    }

    /// After a request left the table: wakes [`Connection::drained`] once the table is empty.
    fn left_table(&self) {
        if self.draining.load(Ordering::SeqCst) && self.table().is_empty() {
            self.idle.notify_waiters();
        }
    }

    /// Waits until nothing is in flight: the input ended, and the answers are still wanted (`printf '...' |
    /// server`). Requests to the client fail at once (their answers cannot arrive), so a handler waiting for one
    /// goes on. Unbounded: the caller bounds it with the shutdown deadline, then cancels what is left.
    pub(crate) async fn drained(&self) {
        self.draining.store(true, Ordering::SeqCst);
        self.outgoing.locked().clear();
        loop {
            let idle = self.idle.notified();
            tokio::pin!(idle);
            idle.as_mut().enable();
            if self.table().is_empty() {
                return;
            }
            idle.await;
        }
    }
}

/// What a request runs.
pub(crate) struct Call<R> {
    /// The request's method (for its tracing span).
    pub method: &'static str,
    pub name: &'static str,
    pub work: Work<R>,
    pub arguments: Arguments,
    /// How the result is written in the request's era (2026 results carry `resultType` and server info).
    pub kind: ResultKind,
}

/// What answers a call: its handler, or (a request answered inline, on its way through the layers) its result.
pub(crate) enum Work<R> {
    Handler(Handler<R>),
    /// Boxed: a result would make every call's future larger (a call is moved into its task whole).
    Ready(Box<Result<R, Error>>),
}

/// What kind of result a call produces, for the era's decoration of it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum ResultKind {
    /// A tool, a prompt or a custom method: `resultType` and server info in the 2026 era.
    Plain,
    /// `resources/read`: cacheable, so caching hints too.
    Read,
    /// A list: cacheable.
    List,
    /// Already in its era's form (a stored list page, a decorated completion): written as it is.
    Encoded,
}

/// Serves a method both eras share. `None` if the method is not one of them (the front answers it).
pub(crate) fn dispatch(conn: &Arc<Connection>, request: Request, origin: &Origin) -> Option<()> {
    let server = conn.server().clone();
    let Request { id, method, mut params, mut meta, era } = request;
    meta.http = origin.http.clone();
    let state = |id: RequestId, meta: RequestMeta, era: EraState| {
        Arc::new(RequestState::new(id, meta, conn.clone(), origin.sink.clone(), era))
    };
    // Lists and completions are answered inline, from stored pages; with layers they go through the stack like
    // any other request.
    let inline = |name: &'static str,
                  result: Result<ListResult, Error>,
                  params: Map<String, Value>,
                  meta: RequestMeta,
                  era: EraState| {
        if server.inner.layers.is_none() {
            return result.map(|r| finish_inline(origin, &id, r));
        }
        let call = Call {
            method: name,
            name,
            work: Work::Ready(Box::new(result)),
            arguments: params,
            kind: ResultKind::Encoded,
        };
        conn.start(state(id.clone(), meta, era), call)
    };
    let started = match method.as_str() {
        "tools/list" => inline("tools/list", list(&server, ListKind::Tools, &params, &era), params, meta, era),
        "prompts/list" => inline("prompts/list", list(&server, ListKind::Prompts, &params, &era), params, meta, era),
        "resources/templates/list" => {
            inline("resources/templates/list", list(&server, ListKind::Templates, &params, &era), params, meta, era)
        }
        "resources/list" if server.registry().listers().is_empty() => {
            inline("resources/list", list(&server, ListKind::Resources, &params, &era), params, meta, era)
        }
        "resources/list" => {
            // Templates list their resources at run time: a request like any other, cancellable.
            let call = Call {
                method: "resources/list",
                name: "resources/list",
                work: Work::Handler(Handler::Blocking(list_resources)),
                arguments: params,
                kind: ResultKind::List,
            };
            conn.start(state(id.clone(), meta, era), call)
        }
        "tools/call" => call_tool(&server, &mut params, &meta).and_then(|(call, plan)| {
            let request = state(id.clone(), meta, era);
            if let Some(plan) = plan {
                let _ = request.task_plan.set(plan);
            }
            conn.start(request, call)
        }),
        "prompts/get" => {
            get_prompt(&server, &mut params).and_then(|call| conn.start(state(id.clone(), meta, era), call))
        }
        "resources/read" => {
            read_resource(&server, &params, &mut meta).and_then(|call| conn.start(state(id.clone(), meta, era), call))
        }
        "completion/complete" => {
            let result = complete_argument(&server, &params).map(|r| era.decorate(&server, r, ResultKind::Plain));
            inline("completion/complete", result, params, meta, era)
        }
        // Custom methods, then the extensions' (the Tasks extension's `tasks/*` among them).
        m => match server.inner.methods.get(m).or_else(|| server.inner.extension_methods.get(m)).copied() {
            Some(def) => {
                let call = Call {
                    method: def.name,
                    name: def.name,
                    work: Work::Handler(def.handler),
                    arguments: params,
                    kind: ResultKind::Plain,
                };
                conn.start(state(id.clone(), meta, era), call)
            }
            None => return None,
        },
    };
    // An error here is one to answer: the request was refused before it started.
    if let Err(e) = started {
        respond(origin, &id, Err::<(), _>(e));
    }
    Some(())
}

fn finish_inline(origin: &Origin, id: &RequestId, result: ListResult) {
    let frame = match result {
        ListResult::Raw(raw) => jsonrpc::encode_result(id, &raw),
        ListResult::Value(v) => jsonrpc::encode_result(id, &v),
    };
    origin.finish(frame);
}

/// A list page: stored bytes, or a value made for this request.
pub(crate) enum ListResult {
    Raw(Arc<serde_json::value::RawValue>),
    Value(Value),
}

impl serde::Serialize for ListResult {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        match self {
            ListResult::Raw(raw) => raw.serialize(serializer),
            ListResult::Value(v) => v.serialize(serializer),
        }
    }
}

impl WireResult for ListResult {
    fn payload_len(&self) -> usize {
        match self {
            ListResult::Raw(raw) => raw.get().len(),
            ListResult::Value(_) => 0,
        }
    }
}

fn list(server: &Server, kind: ListKind, params: &Map<String, Value>, era: &EraState) -> Result<ListResult, Error> {
    let cursor = match params.get("cursor") {
        None | Some(Value::Null) => None,
        Some(Value::String(c)) => Some(c.as_str()),
        Some(c) => return Err(Error::invalid_params(format!("invalid cursor {c}: cursors are strings"))),
    };
    era.list_page(server, kind, cursor).map(ListResult::Raw)
}

/// Sends a reply to a request that is answered inline.
pub(crate) fn respond(sink: &dyn FrameSink, id: &RequestId, result: Result<impl serde::Serialize, Error>) {
    let frame = match result {
        Ok(r) => jsonrpc::encode_result(id, &r),
        Err(e) => jsonrpc::encode_error(Some(id), &e),
    };
    sink.finish(frame);
}

/// `arguments` of a call: an object, or nothing.
fn arguments(params: &mut Map<String, Value>, what: &str) -> Result<Arguments, Error> {
    match params.remove("arguments") {
        None | Some(Value::Null) => Ok(Map::new()),
        Some(Value::Object(m)) => Ok(m),
        Some(_) => Err(Error::invalid_params(format!("`arguments` must be {what}"))),
    }
}

fn call_tool(
    server: &Server,
    params: &mut Map<String, Value>,
    meta: &RequestMeta,
) -> Result<(Call<crate::CallToolResult>, Option<TaskPlan>), Error> {
    let name = match params.get("name") {
        Some(Value::String(n)) => n,
        _ => return Err(Error::invalid_params("`tools/call` needs a string `name`")),
    };
    let Some(def) = server.registry().tool(name) else {
        return Err(Error::invalid_params(format!("unknown tool: {name}")));
    };
    let plan = crate::era::task_plan(server, &def, params, meta)?;
    let arguments = arguments(params, "an object")?;
    Ok((
        Call {
            method: "tools/call",
            name: def.name,
            work: Work::Handler(def.handler),
            arguments,
            kind: ResultKind::Plain,
        },
        plan,
    ))
}

fn get_prompt(server: &Server, params: &mut Map<String, Value>) -> Result<Call<crate::GetPromptResult>, Error> {
    let name = match params.get("name") {
        Some(Value::String(n)) => n,
        _ => return Err(Error::invalid_params("`prompts/get` needs a string `name`")),
    };
    let Some(def) = server.registry().prompt(name) else {
        return Err(Error::invalid_params(format!("unknown prompt: {name}")));
    };
    let arguments = arguments(params, "an object of strings")?;
    Ok(Call {
        method: "prompts/get",
        name: def.name,
        work: Work::Handler(def.handler),
        arguments,
        kind: ResultKind::Plain,
    })
}

fn read_resource(
    server: &Server,
    params: &Map<String, Value>,
    meta: &mut RequestMeta,
) -> Result<Call<crate::ReadResourceResult>, Error> {
    let uri = match params.get("uri") {
        Some(Value::String(u)) => u.clone(),
        _ => return Err(Error::invalid_params("`resources/read` needs a string `uri`")),
    };
    let Some((def, bound)) = server.registry().resolve(&uri) else {
        return Err(crate::handler::resource::not_found(&uri, meta.era));
    };
    let arguments: Map<String, Value> = bound.into_iter().map(|(k, v)| (k, Value::String(v))).collect();
    meta.resource_uri = Some(uri.into());
    meta.cache = def.cache;
    Ok(Call {
        method: "resources/read",
        name: def.name,
        work: Work::Handler(def.handler),
        arguments,
        kind: ResultKind::Read,
    })
}

fn complete_argument(server: &Server, params: &Map<String, Value>) -> Result<Value, Error> {
    let reference = params.get("ref").ok_or_else(|| Error::invalid_params("`completion/complete` needs `ref`"))?;
    let argument =
        params.get("argument").ok_or_else(|| Error::invalid_params("`completion/complete` needs `argument`"))?;
    let (Some(name), Some(value)) =
        (argument.get("name").and_then(Value::as_str), argument.get("value").and_then(Value::as_str))
    else {
        return Err(Error::invalid_params("`argument` needs a string `name` and a string `value`"));
    };
    let completer = server.registry().completer(reference, name)?;
    let values = completer.map(|f| f(value)).unwrap_or_default();
    Ok(crate::server::registry::completion_result(values))
}

/// `resources/list` when templates list resources at run time: the fixed resources, then each lister's, paginated
/// by offset.
fn list_resources(ctx: &Context, mut args: Arguments) -> Result<Value, Error> {
    let registry = ctx.server().registry();
    let offset = match args.remove("cursor") {
        None | Some(Value::Null) => 0,
        Some(Value::String(c)) => crate::server::registry::decode_cursor(ListKind::Resources, &c)?,
        Some(c) => return Err(Error::invalid_params(format!("invalid cursor {c}: cursors are strings"))),
    };
    let mut items = registry.fixed_resources();
    for def in registry.listers() {
        ctx.check_cancelled().map_err(|e| Error::internal(e.to_string()))?;
        if let Some(list) = def.list {
            items.extend(list(ctx).into_iter().filter_map(|r| serde_json::to_value(r).ok()));
        }
    }
    if offset > items.len() || (offset == items.len() && offset > 0) {
        return Err(Error::invalid_params("invalid cursor: no such page"));
    }
    let end = (offset + registry.page_size()).min(items.len());
    let mut page = json!({ "resources": items[offset..end] });
    if end < items.len() {
        page["nextCursor"] = Value::String(crate::server::registry::encode_cursor(ListKind::Resources, end));
    }
    Ok(page)
}

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
async fn run_handler<R: WireResult + Send + 'static>(call: Call<R>, request: Arc<RequestState>) {
    // One span per request, entered in the handler's task and its blocking thread: a `tracing` event inside a tool
    // says which request it belongs to.
    let span = request_span(call.method, call.name, &request);
    run_in_span(call, request).instrument(span).await
}

/// The target of the per-request span. `#[mcp::main]`'s default filter turns it off (`info,mcp::request=off`): with
/// a formatting subscriber a span costs about 11 000 instructions per request (its fields are formatted when it is
/// created), a third of a pipelined call. `RUST_LOG=info` (or any subscriber of the program's own) turns it on.
pub(crate) const REQUEST_SPAN_TARGET: &str = "mcp::request";

/// The tracing span of a request: its method, id, handler, era, session and client.
fn request_span(method: &'static str, name: &'static str, request: &RequestState) -> tracing::Span {
    let era = request.meta.era.name();
    let span = tracing::info_span!(
        target: REQUEST_SPAN_TARGET,
        "mcp.request",
        method,
        id = %request.id,
        handler = name,
        era,
        session = tracing::field::Empty,
        client = tracing::field::Empty,
    );
    if !span.is_disabled() {
        if let Some(session) = request.meta.era.session(&request.conn) {
            span.record("session", session.as_str());
        }
        if let Some(client) = &request.meta.client {
            span.record("client", client.info.name.as_str());
        }
        #[cfg(feature = "opentelemetry")]
        crate::otel::adopt_parent(&span, request.meta.meta.as_ref());
    }
    span
}

async fn run_in_span<R: WireResult + Send + 'static>(call: Call<R>, request: Arc<RequestState>) {
    let Call { method, name, work, arguments, kind } = call;
    let ctx = Context::new(request.clone());
    let outcome = match &request.conn.server().inner.layers {
        None => run(&request, ctx, name, work, arguments).await.map(Answer::Typed),
        // Boxed, so that the layers' state does not grow every request's future (each is moved into its task).
        Some(stack) => Box::pin(through_layers(stack, &request, ctx, method, name, work, arguments)).await,
    };
    deliver(&request, outcome, kind).await
}

/// What a request is answered with: its handler's result, or a result a layer made.
enum Answer<R> {
    Typed(R),
    Value(Value),
}

/// Runs the request's work: the task it may become, then its handler, raced against its cancel and its
/// interruption.
async fn run<R: WireResult + Send + 'static>(
    request: &Arc<RequestState>,
    ctx: Context,
    name: &'static str,
    work: Work<R>,
    arguments: Arguments,
) -> Outcome<R> {
    let handler = match work {
        Work::Ready(result) => return Outcome::Done(*result),
        Work::Handler(handler) => handler,
    };
    // A task that starts at once is stored, and the client told, before the handler runs.
    // Where the tool's task support is optional, a task the store refuses (it is full, or holds this client's share)
    // is a plain call instead.
    if let Some(plan) = request.task_plan.get().filter(|plan| !plan.options.deferred) {
        match crate::task::begin(request).await {
            Ok(_) => {}
            Err(crate::task::Refused::Store(e)) if plan.options.support == crate::task::TaskSupport::Optional => {
                tracing::info!(id = %request.id, reason = %e.message, "the task store refused the task: a plain call");
            }
            Err(refused) => return Outcome::Done(Err(Error::from(refused))),
        }
    }
    let interrupted = request.era.interrupted();
    match handler {
        Handler::Async(f) => {
            let call = CatchUnwind(f(&ctx, arguments));
            race(request, call, interrupted, |r| r.unwrap_or_else(|panic| Err(panicked(name, &*panic)))).await
        }
        Handler::Blocking(f) => {
            let span = tracing::Span::current();
            let call = cleanup_tasks().spawn_blocking(move || {
                let _entered = span.enter();
                std::panic::catch_unwind(AssertUnwindSafe(|| f(&ctx, arguments)))
            });
            race(request, call, interrupted, |r| match r {
                Ok(Ok(result)) => result,
                Ok(Err(panic)) => Err(panicked(name, &*panic)),
                Err(e) => Err(Error::internal(format!("`{name}` failed: {e}"))),
            })
            .await
        }
    }
}

/// Runs the request's work at the bottom of the server's layers; a cancel drops the whole stack's future.
async fn through_layers<R: WireResult + Send + 'static>(
    stack: &layer::Next,
    request: &Arc<RequestState>,
    ctx: Context,
    method: &'static str,
    name: &'static str,
    work: Work<R>,
    arguments: Arguments,
) -> Outcome<Answer<R>> {
    let inner = request.clone();
    let bottom_ctx = ctx.clone();
    let bottom: layer::Run = Box::new(move |arguments| {
        Box::pin(async move {
            match run(&inner, bottom_ctx, name, work, arguments).await {
                Outcome::Done(result) => layer::McpResponse::typed(result),
                Outcome::Interrupted => layer::McpResponse { outcome: layer::Outcome::InputRequired },
                Outcome::Cancelled => layer::McpResponse { outcome: layer::Outcome::Cancelled },
            }
        })
    });
    let served = layer::serve(stack, layer::McpRequest::new(method, name, arguments, ctx, bottom));
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
    request: &Arc<RequestState>,
    outcome: Outcome<Answer<R>>,
    kind: ResultKind,
) {
    if let Some(task) = request.task.get().cloned() {
        // A task: its record takes the outcome; its request was answered when it began.
        return match outcome {
            Outcome::Done(result) => {
                let result = result.and_then(|answer| match answer {
                    Answer::Value(v) => Ok(v),
                    Answer::Typed(r) => serde_json::to_value(r)
                        .map_err(|e| Error::internal(format!("could not serialize the result: {e}"))),
                });
                task.complete(result).await
            }
            Outcome::Cancelled | Outcome::Interrupted => task.stopped().await,
        };
    }
    match outcome {
        // The handler's future has been dropped (async) or its result will be (blocking); whatever its drop sent
        // (cancels of its own requests to the client) went first, and the request's stream ends now.
        Outcome::Cancelled => request.out.close(),
        Outcome::Interrupted => {
            // The handler stops here; a blocking one sees its flag (its question already returned an error).
            request.stop_quietly();
            let result = crate::era::v2026::interrupted_result(request);
            complete(request, result.map(ListResult::Value));
        }
        Outcome::Done(result) => {
            let server = request.conn.server();
            let (era, cache) = (&request.era, request.meta.cache);
            let frame = match result {
                Err(e) => jsonrpc::encode_error(Some(&request.id), &e),
                Ok(Answer::Typed(r)) => era.encode_result(server, &request.id, &r, kind, cache),
                // A result a layer made is decorated like any other (a list's as a list).
                Ok(Answer::Value(v)) => {
                    let kind = if kind == ResultKind::Encoded { ResultKind::List } else { kind };
                    era.encode_result(server, &request.id, &v, kind, cache)
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
    request: &RequestState,
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
fn complete(request: &Arc<RequestState>, result: Result<ListResult, Error>) {
    let frame = match result {
        Ok(ListResult::Value(r)) => jsonrpc::encode_result(&request.id, &r),
        Ok(ListResult::Raw(r)) => jsonrpc::encode_result(&request.id, &r),
        Err(e) => jsonrpc::encode_error(Some(&request.id), &e),
    };
    finish(request, frame);
}

/// Sends a finished request's final frame, unless a cancel went first.
fn finish(request: &Arc<RequestState>, frame: String) {
    request.conn.forget(request);
    let frame = within_frame_limit(request, frame);
    if !request.finish(frame) {
        tracing::debug!(id = %request.id, "response dropped: the request was cancelled first");
    }
}

/// A response over the limit of one frame becomes an error that says so: nothing else could reach the client.
fn within_frame_limit(request: &RequestState, frame: String) -> String {
    let limit = request.conn.server().inner.outbound.max_frame_bytes;
    if frame.len() <= limit {
        return frame;
    }
    tracing::warn!(id = %request.id, len = frame.len(), limit, "a response over the limit of one frame: sending an error instead");
    let error = Error::internal(format!(
        "the result is {} bytes, over this server's limit of {limit} bytes for one message; the server can raise it \
         with ServerBuilder::outbound_limits(OutboundLimits::default().with_max_frame_bytes(..))",
        frame.len()
    ));
    jsonrpc::encode_error(Some(&request.id), &error)
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
