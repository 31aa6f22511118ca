//! The session: one per connection. It owns the in-flight table, the outbound channel and the per-connection state
//! (client info, log level), and routes each request to the server's handlers.

use std::any::Any;
use std::collections::{HashMap, HashSet};
use std::future::Future;
use std::panic::AssertUnwindSafe;
use std::pin::Pin;
use std::sync::atomic::{AtomicI64, AtomicU8, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::task::{Context as TaskContext, Poll};

use serde::Deserialize;
use serde_json::{json, Map, Value};
use tokio::sync::{mpsc, oneshot};

use crate::cancel::cleanup_tasks;
use crate::context::{ClientInfo, Context, RequestMeta, RequestState};
use crate::handler::tool::{Arguments, Handler};
use crate::server::registry::ListKind;
use crate::server::Server;
use crate::wire::error::{Error, ErrorCode};
use crate::wire::jsonrpc::{self, Incoming, RequestId};
use crate::wire::protocol::{InitializeParams, LogLevel, LATEST_PROTOCOL_VERSION, SUPPORTED_PROTOCOL_VERSIONS};

/// Where the frames of a session, or of one request, go: the transport's writer (stdio), or a request's own stream
/// (HTTP). `close` ends a request's stream once its last frame was sent.
pub(crate) trait FrameSink: Send + Sync {
    /// Sends a frame: a notification, or a request to the client.
    fn send(&self, frame: String);
    /// Sends the final frame of a request (its response) and ends its stream.
    fn finish(&self, frame: String) {
        self.send(frame);
        self.close();
    }
    /// Ends a request's stream without a response (it was cancelled).
    fn close(&self) {}
}

/// A shared sink.
pub(crate) type Sink = Arc<dyn FrameSink>;

/// Where a message came from and where its replies go: the sink, and on HTTP the request's headers and caller.
pub(crate) struct Origin {
    pub sink: Sink,
    pub http: Option<Arc<crate::context::HttpRequest>>,
}

impl FrameSink for Origin {
    fn send(&self, frame: String) {
        self.sink.send(frame)
    }
    fn finish(&self, frame: String) {
        self.sink.finish(frame)
    }
    fn close(&self) {
        self.sink.close()
    }
}

/// The stdio sink: the single writer's queue.
pub(crate) struct ChannelSink(pub mpsc::UnboundedSender<String>);

impl FrameSink for ChannelSink {
    fn send(&self, frame: String) {
        // A closed writer means the peer is gone; the frame is dropped.
        let _ = self.0.send(frame);
    }
}

const LOG_LEVEL_UNSET: u8 = u8::MAX;

/// One connection's state.
pub(crate) struct Session {
    server: Server,
    /// Frames that belong to no request (list changes, resource updates), and the default route.
    out: Sink,
    in_flight: Mutex<HashMap<RequestId, Arc<RequestState>>>,
    /// Set once `initialize` has been answered.
    client: OnceLock<(Arc<str>, Arc<ClientInfo>)>,
    log_level: AtomicU8,
    /// URIs this session subscribed to with `resources/subscribe`.
    subscriptions: Mutex<HashSet<String>>,
    /// Requests this server sent to the client, waiting for their responses.
    outgoing: Mutex<HashMap<RequestId, oneshot::Sender<Result<Value, Value>>>>,
    next_outgoing: AtomicI64,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct CancelledParams {
    request_id: Option<RequestId>,
    #[serde(default)]
    reason: Option<String>,
}

impl Session {
    pub(crate) fn new(server: Server, out: Sink) -> Arc<Session> {
        let session = Arc::new(Session {
            server,
            out,
            in_flight: Mutex::new(HashMap::new()),
            client: OnceLock::new(),
            log_level: AtomicU8::new(LOG_LEVEL_UNSET),
            subscriptions: Mutex::new(HashSet::new()),
            outgoing: Mutex::new(HashMap::new()),
            next_outgoing: AtomicI64::new(1),
        });
        session.server.register_session(&session);
        session
    }

    /// Marks a session as initialized without a handshake (stateless HTTP: every request is its own session).
    pub(crate) fn preinitialize(&self, version: &str) {
        let version =
            SUPPORTED_PROTOCOL_VERSIONS.iter().find(|v| **v == version).copied().unwrap_or(LATEST_PROTOCOL_VERSION);
        let client =
            ClientInfo { info: crate::wire::protocol::Implementation::new("unknown", "0"), capabilities: json!({}) };
        let _ = self.client.set((version.into(), Arc::new(client)));
    }

    /// Whether `initialize` was answered: only then does the session get list-changed notifications.
    pub(crate) fn is_initialized(&self) -> bool {
        self.client.get().is_some()
    }

    pub(crate) fn is_subscribed(&self, uri: &str) -> bool {
        self.subscriptions.lock().unwrap_or_else(|e| e.into_inner()).contains(uri)
    }

    /// Sends a notification that belongs to no request.
    pub(crate) fn notify(&self, method: &str, params: &Value) {
        self.send(jsonrpc::encode_notification(method, params));
    }

    pub(crate) fn server(&self) -> &Server {
        &self.server
    }

    /// Registers a request to the client; the response (or error) arrives on the receiver.
    pub(crate) fn register_outgoing(&self) -> (RequestId, oneshot::Receiver<Result<Value, Value>>) {
        let id = RequestId::Number(self.next_outgoing.fetch_add(1, Ordering::Relaxed));
        let (tx, rx) = oneshot::channel();
        self.outgoing.lock().unwrap_or_else(|e| e.into_inner()).insert(id.clone(), tx);
        (id, rx)
    }

    /// Forgets a request to the client (it was cancelled); `true` if it was still waiting.
    pub(crate) fn forget_outgoing(&self, id: &RequestId) -> bool {
        self.outgoing.lock().unwrap_or_else(|e| e.into_inner()).remove(id).is_some()
    }

    /// Sends a frame that belongs to no request.
    pub(crate) fn send(&self, frame: String) {
        self.out.send(frame);
    }

    pub(crate) fn log_enabled(&self, level: LogLevel) -> bool {
        let min = self.log_level.load(Ordering::Relaxed);
        min == LOG_LEVEL_UNSET || level as u8 >= min
    }

    fn table(&self) -> std::sync::MutexGuard<'_, HashMap<RequestId, Arc<RequestState>>> {
        self.in_flight.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Handles one incoming message. Called in arrival order; never blocks: long work is spawned.
    pub(crate) fn handle(self: &Arc<Self>, message: Incoming) {
        let origin = Origin { sink: self.out.clone(), http: None };
        self.handle_routed(message, &origin)
    }

    /// Handles one incoming message whose replies (and, for a request, everything the request sends) go to `sink`.
    pub(crate) fn handle_routed(self: &Arc<Self>, message: Incoming, sink: &Origin) {
        match message {
            Incoming::Request { id, method, params } => self.handle_request(id, method, params, sink),
            Incoming::Notification { method, params } => self.handle_notification(&method, params),
            Incoming::Response { id, outcome } => {
                let waiting = self.outgoing.lock().unwrap_or_else(|e| e.into_inner()).remove(&id);
                match waiting {
                    Some(tx) => {
                        let _ = tx.send(outcome);
                    }
                    None => tracing::debug!(%id, "ignoring a response to no request of ours (finished or cancelled)"),
                }
            }
        }
    }

    /// Answers a message that could not be parsed, or was not a JSON-RPC message.
    pub(crate) fn reject(&self, id: Option<&RequestId>, error: &Error) {
        self.send(jsonrpc::encode_error(id, error));
    }

    fn handle_request(self: &Arc<Self>, id: RequestId, method: String, params: Option<Value>, sink: &Origin) {
        match method.as_str() {
            "initialize" => {
                let result = self.initialize(params);
                respond(sink, &id, result);
            }
            "ping" => respond(sink, &id, Ok(json!({}))),
            _ if self.client.get().is_none() && method != "logging/setLevel" => respond(
                sink,
                &id,
                Err::<(), _>(Error::new(
                    ErrorCode::INVALID_REQUEST,
                    format!("`{method}` before `initialize`: the client must initialize the session first"),
                )),
            ),
            "logging/setLevel" => {
                let result = self.set_level(params);
                respond(sink, &id, result);
            }
            "tools/list" => self.list(sink, &id, ListKind::Tools, params),
            "prompts/list" => self.list(sink, &id, ListKind::Prompts, params),
            "resources/templates/list" => self.list(sink, &id, ListKind::Templates, params),
            "resources/list" => {
                if self.server.registry().listers().is_empty() {
                    self.list(sink, &id, ListKind::Resources, params);
                } else {
                    // Templates list their resources at run time: a request like any other, cancellable.
                    let started = jsonrpc::params_object(params).and_then(|mut params| {
                        let meta = take_meta(&mut params);
                        let handler = Handler::Blocking(list_resources);
                        self.start(
                            id.clone(),
                            meta,
                            Call { name: "resources/list", handler, arguments: params, resource_uri: None },
                            sink,
                        )
                    });
                    if let Err(e) = started {
                        respond(sink, &id, Err::<(), _>(e));
                    }
                }
            }
            "tools/call" => {
                if let Err(e) = self.call_tool(id.clone(), params, sink) {
                    respond(sink, &id, Err::<(), _>(e));
                }
            }
            "prompts/get" => {
                if let Err(e) = self.get_prompt(id.clone(), params, sink) {
                    respond(sink, &id, Err::<(), _>(e));
                }
            }
            "resources/read" => {
                if let Err(e) = self.read_resource(id.clone(), params, sink) {
                    respond(sink, &id, Err::<(), _>(e));
                }
            }
            "resources/subscribe" | "resources/unsubscribe" => {
                let result = uri_param(params).map(|uri| {
                    let mut subscriptions = self.subscriptions.lock().unwrap_or_else(|e| e.into_inner());
                    if method == "resources/subscribe" {
                        subscriptions.insert(uri);
                    } else {
                        subscriptions.remove(&uri);
                    }
                    json!({})
                });
                respond(sink, &id, result);
            }
            "completion/complete" => {
                let result = self.complete_argument(params);
                respond(sink, &id, result);
            }
            _ => match self.server.inner.methods.get(method.as_str()).copied() {
                Some(def) => {
                    let started = jsonrpc::params_object(params).and_then(|mut params| {
                        let meta = take_meta(&mut params);
                        self.start(
                            id.clone(),
                            meta,
                            Call { name: def.name, handler: def.handler, arguments: params, resource_uri: None },
                            sink,
                        )
                    });
                    if let Err(e) = started {
                        respond(sink, &id, Err::<(), _>(e));
                    }
                }
                None => respond(sink, &id, Err::<(), _>(Error::method_not_found(&method))),
            },
        }
    }

    fn handle_notification(&self, method: &str, params: Option<Value>) {
        match method {
            "notifications/cancelled" => {
                let Some(p) = params.and_then(|p| CancelledParams::deserialize(p).ok()) else {
                    tracing::debug!("ignoring a malformed notifications/cancelled");
                    return;
                };
                let Some(id) = p.request_id else { return };
                self.cancel(&id, p.reason.as_deref());
            }
            // Requests are served from the `initialize` response on; the notification changes nothing here.
            "notifications/initialized" => {}
            _ => tracing::debug!(method, "ignoring notification"),
        }
    }

    fn initialize(&self, params: Option<Value>) -> Result<Value, Error> {
        let params: InitializeParams = serde_json::from_value(params.unwrap_or(Value::Null))
            .map_err(|e| Error::invalid_params(format!("invalid `initialize` params: {e}")))?;
        let version = SUPPORTED_PROTOCOL_VERSIONS
            .iter()
            .find(|v| **v == params.protocol_version)
            .copied()
            .unwrap_or(LATEST_PROTOCOL_VERSION);
        let client = ClientInfo { info: params.client_info, capabilities: params.capabilities };
        if self.client.set((version.into(), Arc::new(client))).is_err() {
            return Err(Error::new(ErrorCode::INVALID_REQUEST, "the session is already initialized"));
        }
        let inner = &self.server.inner;
        let mut result = json!({
            "protocolVersion": version,
            "capabilities": inner.capabilities,
            "serverInfo": inner.info,
        });
        if let Some(instructions) = &inner.instructions {
            result["instructions"] = Value::String(instructions.clone());
        }
        Ok(result)
    }

    fn set_level(&self, params: Option<Value>) -> Result<Value, Error> {
        let params = jsonrpc::params_object(params)?;
        let level = params
            .get("level")
            .and_then(Value::as_str)
            .ok_or_else(|| Error::invalid_params("`logging/setLevel` needs a `level`"))?;
        let level: LogLevel = level.parse().map_err(Error::invalid_params)?;
        self.log_level.store(level as u8, Ordering::Relaxed);
        Ok(json!({}))
    }

    fn request_meta(&self, meta: Option<Map<String, Value>>) -> RequestMeta {
        let (version, client) = match self.client.get() {
            Some((v, c)) => (v.clone(), Some(c.clone())),
            None => (LATEST_PROTOCOL_VERSION.into(), None),
        };
        let progress_token = meta
            .as_ref()
            .and_then(|m| m.get("progressToken"))
            .filter(|t| t.is_string() || t.is_i64() || t.is_u64())
            .cloned();
        RequestMeta { protocol_version: version, client, meta, progress_token, resource_uri: None, http: None }
    }

    fn call_tool(self: &Arc<Self>, id: RequestId, params: Option<Value>, sink: &Origin) -> Result<(), Error> {
        let mut params = jsonrpc::params_object(params)?;
        let name = match params.get("name") {
            Some(Value::String(n)) => n,
            _ => return Err(Error::invalid_params("`tools/call` needs a string `name`")),
        };
        let Some(def) = self.server.registry().tool(name) else {
            return Err(Error::invalid_params(format!("unknown tool: {name}")));
        };
        let arguments = match params.remove("arguments") {
            None | Some(Value::Null) => Map::new(),
            Some(Value::Object(m)) => m,
            Some(_) => return Err(Error::invalid_params("`arguments` must be an object")),
        };
        let meta = take_meta(&mut params);
        self.start(id, meta, Call { name: def.name, handler: def.handler, arguments, resource_uri: None }, sink)
    }

    fn list(&self, sink: &Origin, id: &RequestId, kind: ListKind, params: Option<Value>) {
        let registry = self.server.registry();
        let result = cursor_param(params).and_then(|cursor| registry.page(kind, cursor.as_deref()));
        respond(sink, id, result);
    }

    fn get_prompt(self: &Arc<Self>, id: RequestId, params: Option<Value>, sink: &Origin) -> Result<(), Error> {
        let mut params = jsonrpc::params_object(params)?;
        let name = match params.get("name") {
            Some(Value::String(n)) => n,
            _ => return Err(Error::invalid_params("`prompts/get` needs a string `name`")),
        };
        let Some(def) = self.server.registry().prompt(name) else {
            return Err(Error::invalid_params(format!("unknown prompt: {name}")));
        };
        let arguments = match params.remove("arguments") {
            None | Some(Value::Null) => Map::new(),
            Some(Value::Object(m)) => m,
            Some(_) => return Err(Error::invalid_params("`arguments` must be an object of strings")),
        };
        let meta = take_meta(&mut params);
        self.start(id, meta, Call { name: def.name, handler: def.handler, arguments, resource_uri: None }, sink)
    }

    fn read_resource(self: &Arc<Self>, id: RequestId, params: Option<Value>, sink: &Origin) -> Result<(), Error> {
        let mut params = jsonrpc::params_object(params)?;
        let uri = match params.get("uri") {
            Some(Value::String(u)) => u.clone(),
            _ => return Err(Error::invalid_params("`resources/read` needs a string `uri`")),
        };
        let Some((def, bound)) = self.server.registry().resolve(&uri) else {
            return Err(crate::handler::resource::not_found(&uri));
        };
        let arguments: Map<String, Value> = bound.into_iter().map(|(k, v)| (k, Value::String(v))).collect();
        let meta = take_meta(&mut params);
        self.start(
            id,
            meta,
            Call { name: def.name, handler: def.handler, arguments, resource_uri: Some(uri.into()) },
            sink,
        )
    }

    fn complete_argument(&self, params: Option<Value>) -> Result<Value, Error> {
        let params = jsonrpc::params_object(params)?;
        let reference = params.get("ref").ok_or_else(|| Error::invalid_params("`completion/complete` needs `ref`"))?;
        let argument =
            params.get("argument").ok_or_else(|| Error::invalid_params("`completion/complete` needs `argument`"))?;
        let (Some(name), Some(value)) =
            (argument.get("name").and_then(Value::as_str), argument.get("value").and_then(Value::as_str))
        else {
            return Err(Error::invalid_params("`argument` needs a string `name` and a string `value`"));
        };
        let completer = self.server.registry().completer(reference, name)?;
        let values = completer.map(|f| f(value)).unwrap_or_default();
        Ok(crate::server::registry::completion_result(values))
    }

    /// Registers a request in the in-flight table, then spawns its handler.
    fn start<R: serde::Serialize + Send + 'static>(
        self: &Arc<Self>,
        id: RequestId,
        meta: Option<Map<String, Value>>,
        call: Call<R>,
        sink: &Origin,
    ) -> Result<(), Error> {
        let Call { name, handler, arguments, resource_uri } = call;
        let mut request_meta = self.request_meta(meta);
        request_meta.resource_uri = resource_uri;
        request_meta.http = sink.http.clone();
        let request = Arc::new(RequestState::new(id.clone(), request_meta, self.clone(), sink.sink.clone()));
        {
            let mut table = self.table();
            if table.contains_key(&id) {
                return Err(Error::new(ErrorCode::INVALID_REQUEST, format!("request id {id} is already in flight")));
            }
            table.insert(id, request.clone());
        }
        cleanup_tasks().spawn(run_handler(self.clone(), name, handler, request, arguments));
        Ok(())
    }

    /// Cancels an in-flight request. Unknown, finished and already cancelled ids are ignored.
    pub(crate) fn cancel(&self, id: &RequestId, reason: Option<&str>) {
        let Some(request) = self.table().remove(id) else {
            tracing::debug!(%id, reason, "cancel for a request that is not in flight: ignored");
            return;
        };
        if request.cancel() {
            tracing::info!(%id, reason, "request cancelled");
        }
    }

    /// Cancels everything in flight: the peer is gone or the server is stopping.
    pub(crate) fn cancel_all(&self, reason: &str) {
        let requests: Vec<_> = self.table().drain().map(|(_, r)| r).collect();
        for r in requests {
            if r.cancel() {
                tracing::info!(id = %r.id, reason, "request cancelled");
            }
        }
    }

    /// Takes a finished request out of the table (if it is still there, and still this one) and sends its response,
    /// unless a cancel went first.
    fn complete<R: serde::Serialize>(&self, request: &Arc<RequestState>, result: Result<R, Error>) {
        {
            let mut table = self.table();
            if table.get(&request.id).is_some_and(|r| Arc::ptr_eq(r, request)) {
                table.remove(&request.id);
            }
        }
        let frame = match result {
            Ok(r) => jsonrpc::encode_result(&request.id, &r),
            Err(e) => jsonrpc::encode_error(Some(&request.id), &e),
        };
        if !request.finish(frame) {
            tracing::debug!(id = %request.id, "response dropped: the request was cancelled first");
        }
    }
}

/// Takes `_meta` out of a request's params.
fn take_meta(params: &mut Map<String, Value>) -> Option<Map<String, Value>> {
    match params.remove("_meta") {
        Some(Value::Object(m)) => Some(m),
        _ => None,
    }
}

/// What a request runs.
struct Call<R> {
    name: &'static str,
    handler: Handler<R>,
    arguments: Arguments,
    resource_uri: Option<Arc<str>>,
}

/// Sends a reply to a request that is answered inline.
fn respond(sink: &Origin, id: &RequestId, result: Result<impl serde::Serialize, Error>) {
    let frame = match result {
        Ok(r) => jsonrpc::encode_result(id, &r),
        Err(e) => jsonrpc::encode_error(Some(id), &e),
    };
    sink.finish(frame);
}

/// The `cursor` of a list request, if any.
fn cursor_param(params: Option<Value>) -> Result<Option<String>, Error> {
    let params = jsonrpc::params_object(params)?;
    match params.get("cursor") {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(c)) => Ok(Some(c.clone())),
        Some(c) => Err(Error::invalid_params(format!("invalid cursor {c}: cursors are strings"))),
    }
}

/// The `uri` of a subscribe or unsubscribe request.
fn uri_param(params: Option<Value>) -> Result<String, Error> {
    match jsonrpc::params_object(params)?.remove("uri") {
        Some(Value::String(uri)) => Ok(uri),
        _ => Err(Error::invalid_params("a string `uri` is required")),
    }
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

/// Runs one handler to its end or its cancellation.
async fn run_handler<R: serde::Serialize + Send + 'static>(
    session: Arc<Session>,
    name: &'static str,
    handler: Handler<R>,
    request: Arc<RequestState>,
    arguments: Arguments,
) {
    let ctx = Context::new(request.clone());
    let outcome = match handler {
        Handler::Async(f) => {
            let call = CatchUnwind(f(&ctx, arguments));
            tokio::select! {
                biased;
                () = request.token.cancelled() => None,
                r = call => Some(r),
            }
        }
        Handler::Blocking(f) => {
            let thread_ctx = ctx.clone();
            let call = cleanup_tasks()
                .spawn_blocking(move || std::panic::catch_unwind(AssertUnwindSafe(|| f(&thread_ctx, arguments))));
            tokio::select! {
                biased;
                () = request.token.cancelled() => None,
                r = call => Some(r.unwrap_or_else(|e| Err(Box::new(e.to_string())))),
            }
        }
    };
    // `None`: cancelled. The handler's future has been dropped (async) or its result will be (blocking); whatever
    // its drop sent (cancels of its own requests to the client) went first, and the request's stream ends now.
    let Some(outcome) = outcome else {
        request.out.close();
        return;
    };
    let result = outcome.unwrap_or_else(|panic| {
        let message = panic_message(&*panic);
        tracing::error!(handler = name, %message, "handler panicked");
        Err(Error::internal(format!("`{name}` panicked: {message}")))
    });
    session.complete(&request, result);
}

fn panic_message(panic: &(dyn Any + Send)) -> String {
    if let Some(s) = panic.downcast_ref::<&str>() {
        (*s).to_owned()
    } else if let Some(s) = panic.downcast_ref::<String>() {
        s.clone()
    } else {
        "unknown panic".to_owned()
    }
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
