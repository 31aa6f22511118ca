//! [`Context`]: what a handler sees of its request — cancellation, progress, logging and the request's metadata.

pub(crate) mod state;

use std::any::Any;
use std::fmt;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, OnceLock};

use serde::Serialize;
use serde_json::{Map, Value};
use tokio_util::sync::CancellationToken;

use crate::auth::AuthInfo;
use crate::base::cancel::Cancelled;
use crate::base::sink::Sink;
use crate::base::sync::Unpoisoned;
use crate::context::state::StateMap;
use crate::wire::jsonrpc::{Frame, RequestId};
use crate::wire::protocol::{Implementation, LogLevel};

/// The metadata of one request, as the handler sees it.
///
/// In the 2025 era the session fills it in from the `initialize` handshake; a 2026-07-28 request fills it in from its
/// own `_meta`. A handler reads the same value either way.
#[derive(Clone, Debug)]
#[non_exhaustive]
pub struct RequestMeta {
    /// The era of the request: a 2025-11-25 session, or a stateless 2026-07-28 request.
    pub era: Era,
    /// The protocol version in force for this request.
    pub protocol_version: Arc<str>,
    /// The client's name, version and capabilities, if it said them.
    pub client: Option<Arc<ClientInfo>>,
    /// The request's `params._meta`: untouched in the 2025 era; in the 2026 era without the envelope's keys
    /// (`io.modelcontextprotocol/protocolVersion`, `clientCapabilities`, `clientInfo`, `logLevel`), which the other
    /// fields hold. `None` when nothing is left.
    pub meta: Option<Map<String, Value>>,
    /// The request's progress token, if it asked for progress.
    pub progress_token: Option<Value>,
    /// For `resources/read`: the URI being read.
    pub resource_uri: Option<Arc<str>>,
    /// On HTTP: the request's headers, and who is calling if an auth layer said so.
    pub http: Option<Arc<HttpRequest>>,
    /// 2026 era: the log level the request asked for (`io.modelcontextprotocol/logLevel`); no logs without one.
    pub log_level: Option<LogLevel>,
    /// For `resources/read` of a resource with its own caching hints.
    pub(crate) cache: Option<crate::wire::protocol::CacheHint>,
}

impl RequestMeta {
    pub(crate) fn new(era: Era, protocol_version: Arc<str>, client: Option<Arc<ClientInfo>>) -> RequestMeta {
        RequestMeta {
            era,
            protocol_version,
            client,
            meta: None,
            progress_token: None,
            resource_uri: None,
            http: None,
            log_level: None,
            cache: None,
        }
    }

    /// Keeps the request's `_meta`, and reads its progress token.
    pub(crate) fn with_meta(mut self, meta: Option<Map<String, Value>>) -> RequestMeta {
        self.progress_token = meta
            .as_ref()
            .and_then(|m| m.get("progressToken"))
            .filter(|t| t.is_string() || t.is_i64() || t.is_u64())
            .cloned();
        self.meta = meta;
        self
    }

    /// The settings the client declared for an extension (`capabilities.extensions.<id>`), if it declared it.
    pub fn client_extension(&self, id: &str) -> Option<&Value> {
        self.client.as_ref()?.capabilities.get("extensions")?.get(id).filter(|v| !v.is_null())
    }

    /// Whether the client declared a capability, given as a path (`["sampling", "tools"]`).
    pub fn client_supports(&self, path: &[&str]) -> bool {
        let Some(client) = &self.client else { return false };
        let mut v = &client.capabilities;
        for key in path {
            match v.get(key) {
                Some(next) if !next.is_null() => v = next,
                _ => return false,
            }
        }
        true
    }
}

/// Which protocol era serves a request.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Era {
    /// 2025-11-25 (and 2025-06-18, 2025-03-26): `initialize`, a session, requests from the server to the client.
    V2025,
    /// 2026-07-28: stateless; each request carries its version and the client's capabilities in `_meta`, and
    /// questions to the client are `input_required` results.
    V2026,
}

impl Era {
    /// The protocol version that names the era.
    pub(crate) fn name(self) -> &'static str {
        match self {
            Era::V2025 => "2025-11-25",
            Era::V2026 => "2026-07-28",
        }
    }

    /// A resource's error as this era spells it: the 2026 era has no -32002, its "not found" is -32602 (SEP-2164).
    pub(crate) fn resource_error(self, mut error: crate::wire::error::Error) -> crate::wire::error::Error {
        if self == Era::V2026 && error.code == crate::wire::error::ErrorCode::RESOURCE_NOT_FOUND {
            error.code = crate::wire::error::ErrorCode::INVALID_PARAMS;
        }
        error
    }
}

/// What a handler sees of the HTTP request that carried its message.
#[derive(Clone, Debug, Default)]
#[non_exhaustive]
pub struct HttpRequest {
    /// The request's headers (without `Authorization` when the server verified its token: handlers never see
    /// the token).
    pub headers: http::HeaderMap,
    /// The caller: verified by the server's [`Authorization`](crate::auth::Authorization), or put in the request's
    /// extensions as an [`AuthInfo`] by a layer in front of the endpoint. Shared: the verifier's cache and every
    /// handler of the request hold the same one.
    pub auth: Option<Arc<AuthInfo>>,
    /// The address of the peer that sent it, when the server knows it (`serve_http` always does; a router mounted
    /// elsewhere when it is served with axum's `ConnectInfo`).
    pub peer: Option<std::net::IpAddr>,
}

/// What a client said about itself.
#[derive(Clone, Debug)]
#[non_exhaustive]
pub struct ClientInfo {
    /// Its name and version.
    pub info: Implementation,
    /// Its capabilities, as sent.
    pub capabilities: Value,
}

/// The shared state of one in-flight request: the dispatcher, the handler's `Context` and the cancel path all hold it.
pub(crate) struct InFlight {
    pub id: RequestId,
    pub token: CancellationToken,
    cancelled: AtomicBool,
    /// Set by whichever comes first, the response or the cancel; only the first one acts. An atomic, not a field of
    /// `slot`, so that a cancel takes no lock: a sink may cancel its request from inside a send that holds `slot`
    /// (a client that stopped reading), and a lock there would deadlock.
    finished: AtomicBool,
    /// Held while a frame of this request is sent, so that no frame follows the response.
    slot: Mutex<Slot>,
    pub meta: RequestMeta,
    /// The connection it came on (the dispatcher's `Connection`).
    pub peer: Arc<dyn Peer>,
    /// Where this request's frames go.
    pub out: Sink,
    /// What the request's era adds: the 2025 session's log level, or the 2026 request's round of questions.
    pub era: EraState,
    /// A `tools/call` whose tool may run as a task here: how.
    pub task_plan: OnceLock<TaskPlan>,
    /// Once the request became a task: the task. Its frames then go where the task's go.
    pub task: OnceLock<Arc<dyn TaskRoute>>,
}

/// What a request's era adds to it, as its [`Context`] and the dispatcher see it: how its logs are gated, and
/// whether the handler can be interrupted (a 2026 question ends the round). The era fronts implement it (the 2025
/// session's log level, the 2026 round of questions); only they know what is behind it.
pub(crate) trait RequestEra: Send + Sync + 'static {
    /// Whether a log message at `level` goes to the client.
    fn log_enabled(&self, level: LogLevel) -> bool;
    /// Signalled when the handler asked the client something (or needs a capability it was not given); `None`
    /// where questions are requests to the client and never interrupt the handler.
    fn interrupt(&self) -> Option<&tokio::sync::Notify>;
    /// Whether the handler was interrupted already.
    fn was_interrupted(&self) -> bool;
    /// The 2025 session the request belongs to, for its span; none where there are no sessions.
    fn session(&self, peer: &dyn Peer) -> Option<String>;
    /// What every result of the request starts with, as JSON members (the 2026 `resultType` and server info); `None`:
    /// results are written as they are.
    fn result_prefix<'a>(&self, peer: &'a dyn Peer) -> Option<&'a str>;
    /// A result with those members merged in, and the caching hints of a cacheable result.
    fn decorate(&self, peer: &dyn Peer, result: Value, hints: Option<crate::wire::protocol::CacheHint>) -> Value;
    /// Whether a `tools/call` of a tool with these task settings runs as a task here, and how (an error when it
    /// must and cannot, or asked wrongly).
    fn task_plan(
        &self,
        tasks_enabled: bool,
        tool: &'static str,
        options: crate::wire::task::TaskOptions,
        params: &Map<String, Value>,
        meta: &RequestMeta,
    ) -> Result<Option<TaskPlan>, crate::wire::error::Error>;
    /// The answer of a handler its questions interrupted.
    fn interrupted_result(&self, request: &InFlight) -> Result<Value, crate::wire::error::Error>;
    /// The era's own state, for its front.
    fn as_any(&self) -> &(dyn Any + Send + Sync);
}

/// A request's era part (see [`RequestEra`]).
pub(crate) type EraState = Arc<dyn RequestEra>;

impl dyn RequestEra {
    /// Completes when the handler is interrupted; never where it cannot be.
    pub(crate) async fn interrupted(&self) {
        match self.interrupt() {
            Some(interrupt) => interrupt.notified().await,
            None => std::future::pending().await,
        }
    }
}

/// A request that became a task, as its [`Context`] sees it (the task engine's run of it).
pub(crate) trait TaskRoute: Send + Sync + 'static {
    /// The task's id.
    fn id(&self) -> &str;
    /// Sends a frame where the task's frames go (`droppable`: a notification that may be dropped under pressure).
    fn send(&self, frame: Frame, droppable: bool);
    /// The run itself, for the task engine.
    fn into_any(self: Arc<Self>) -> Arc<dyn Any + Send + Sync>;
}

/// The connection a request came on, as the request's [`Context`] sees it. The dispatcher's `Connection` is the one
/// there is; a trait here so that the context knows nothing above it.
pub(crate) trait Peer: Send + Sync + 'static {
    /// The server that serves the connection (a `Server`: `Context::server`, which lives with the server, reads it).
    fn server(&self) -> &(dyn Any + Send + Sync);
    /// The server's shared state, for `&State<T>`.
    fn state(&self) -> &StateMap;
    /// Registers a request to the client; its answer (or error) arrives on the receiver.
    fn register_outgoing(&self) -> (RequestId, tokio::sync::oneshot::Receiver<Result<Value, Value>>);
    /// Forgets a request to the client (it was cancelled); `true` if it was still waiting.
    fn forget_outgoing(&self, id: &RequestId) -> bool;
    /// The 2025 session the connection is, for the tasks it creates; `None` when stateless.
    fn session_key(&self) -> Option<String>;
    /// The connection, as the client its limits are counted for when nothing better names the client.
    fn connection_key(&self) -> String;
    /// The connection's default route (frames that belong to no request).
    fn sink(&self) -> &Sink;
    /// Takes a finished request out of the connection's in-flight table.
    fn forget(&self, request: &Arc<InFlight>);
}

/// What a request may become: set by the dispatcher on a `tools/call` whose tool runs as a task here.
#[derive(Clone, Copy, Debug)]
pub(crate) struct TaskPlan {
    /// The tool.
    pub tool: &'static str,
    pub options: crate::wire::task::TaskOptions,
    /// 2025 era: the TTL the client asked for.
    pub requested_ttl: Option<u64>,
}

#[derive(Default)]
struct Slot {
    last_progress: Option<f64>,
}

impl InFlight {
    pub(crate) fn new(id: RequestId, meta: RequestMeta, peer: Arc<dyn Peer>, out: Sink, era: EraState) -> InFlight {
        InFlight {
            id,
            token: CancellationToken::new(),
            cancelled: AtomicBool::new(false),
            finished: AtomicBool::new(false),
            slot: Mutex::new(Slot::default()),
            meta,
            peer,
            out,
            era,
            task_plan: OnceLock::new(),
            task: OnceLock::new(),
        }
    }

    /// Stops the handler without ending the request: a blocking handler sees its flag, a task waiting on the token
    /// wakes. The response (an `input_required` result) is still to be sent.
    pub(crate) fn stop_quietly(&self) {
        self.cancelled.store(true, Ordering::Release);
        self.token.cancel();
    }

    /// Tells a blocking handler to stop (its flag), without ending the request or waking what waits on its
    /// token: a layer dropped the handler's future (a timeout), and the layer's answer is still to be sent.
    pub(crate) fn stop_handler(&self) {
        self.cancelled.store(true, Ordering::Release);
    }

    fn is_finished(&self) -> bool {
        self.finished.load(Ordering::Acquire)
    }

    fn slot(&self) -> std::sync::MutexGuard<'_, Slot> {
        self.slot.locked()
    }

    /// Cancels the request unless its response went first. Returns whether this call cancelled it.
    pub(crate) fn cancel(&self) -> bool {
        if self.finished.swap(true, Ordering::AcqRel) {
            return false;
        }
        self.cancelled.store(true, Ordering::Release);
        self.token.cancel();
        true
    }

    /// Sends the request's final frame unless it was cancelled first. Returns whether it was sent.
    pub(crate) fn finish(&self, frame: Frame) -> bool {
        let _slot = self.slot();
        if self.finished.swap(true, Ordering::AcqRel) {
            return false;
        }
        self.out.finish(frame);
        true
    }

    /// Sends a frame on this request's route unless the request is over; `false` if it was not sent. A task's
    /// frames go where the task's go.
    pub(crate) fn send_if_open(&self, frame: Frame) -> bool {
        if let Some(task) = self.task.get() {
            task.send(frame, false);
            return !self.cancelled.load(Ordering::Acquire);
        }
        let _slot = self.slot();
        if self.is_finished() {
            return false;
        }
        self.out.send(frame);
        true
    }

    /// Sends a notification that belongs to this request, unless the request is over.
    fn notify(&self, frame: Frame) {
        if let Some(task) = self.task.get() {
            return task.send(frame, true);
        }
        let _slot = self.slot();
        if !self.is_finished() {
            self.out.send_droppable(frame);
        }
    }
}

/// What a handler knows about its request, and how it talks back to the client while it runs.
///
/// Declare a parameter `ctx: &Context` in a tool function to receive it; tools that do not declare it pay nothing.
/// It is cheap to clone, and a clone can be moved into another task or thread.
///
/// ```
/// use mcp::Context;
///
/// /// Copy files, reporting progress, logging, and stopping when the client gives up.
/// #[mcp::tool]
/// fn copy_files(
///     /// The files to copy.
///     files: Vec<String>,
///     ctx: &Context,
/// ) -> Result<String, mcp::Cancelled> {
///     for (i, file) in files.iter().enumerate() {
///         ctx.check_cancelled()?; // a plain fn checks its flag; an async fn is dropped at its next .await
///         ctx.report_progress(i as f64, Some(files.len() as f64), Some(file.as_str()));
///         ctx.info(format!("copying {file}"));
///     }
///     let who = ctx.meta().client.as_ref().map(|c| c.info.name.clone()).unwrap_or_default();
///     Ok(format!("copied {} files for {who}", files.len()))
/// }
/// # let server = mcp::Server::builder().tool::<copy_files>().build().unwrap();
/// # assert_eq!(server.tools_list()["tools"][0]["name"], "copy_files");
/// ```
#[derive(Clone)]
pub struct Context {
    request: Arc<InFlight>,
}

impl fmt::Debug for Context {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Context")
            .field("id", &self.request.id)
            .field("cancelled", &self.is_cancelled())
            .field("meta", &self.request.meta)
            .finish()
    }
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct ProgressParams<'a> {
    progress_token: &'a Value,
    progress: f64,
    #[serde(skip_serializing_if = "Option::is_none")]
    total: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    message: Option<&'a str>,
    /// A task's id (2025 era).
    #[serde(rename = "_meta", skip_serializing_if = "Option::is_none")]
    meta: Option<Value>,
}

#[derive(Serialize)]
struct LogParams<'a, T: Serialize> {
    level: LogLevel,
    #[serde(skip_serializing_if = "Option::is_none")]
    logger: Option<&'a str>,
    data: T,
    /// A task's id (2025 era).
    #[serde(rename = "_meta", skip_serializing_if = "Option::is_none")]
    meta: Option<Value>,
}

impl Context {
    pub(crate) fn new(request: Arc<InFlight>) -> Context {
        Context { request }
    }

    pub(crate) fn in_flight(&self) -> &Arc<InFlight> {
        &self.request
    }

    /// The id of the request.
    pub fn request_id(&self) -> &RequestId {
        &self.request.id
    }

    /// The request's metadata: protocol version, client info and capabilities, `_meta`, progress token.
    pub fn meta(&self) -> &RequestMeta {
        &self.request.meta
    }

    /// The server's state value of type `T`, if it was built with one (see [`State`](crate::State)).
    pub fn state<T: Send + Sync + 'static>(&self) -> Option<&T> {
        self.server_state().get::<T>().map(|s| &**s)
    }

    pub(crate) fn server_state(&self) -> &StateMap {
        self.request.peer.state()
    }

    /// Tells the sessions subscribed to `uri` that the resource changed.
    pub fn notify_resource_updated(&self, uri: &str) {
        self.server().notify_resource_updated(uri)
    }

    /// Whether the client cancelled the request. One atomic load: cheap enough to call in a tight loop.
    pub fn is_cancelled(&self) -> bool {
        self.request.cancelled.load(Ordering::Acquire)
    }

    /// `Err(Cancelled)` once the request is cancelled, so a plain `fn` can stop with `ctx.check_cancelled()?`.
    pub fn check_cancelled(&self) -> Result<(), Cancelled> {
        if self.is_cancelled() {
            Err(Cancelled)
        } else {
            Ok(())
        }
    }

    /// Completes when the request is cancelled. An async handler rarely needs it (it is dropped at its next `.await`
    /// anyway), but a task it spawned can select on it.
    pub async fn cancelled(&self) {
        self.request.token.cancelled().await
    }

    /// A token that is cancelled with the request, to hand to other tasks.
    pub fn cancellation_token(&self) -> CancellationToken {
        self.request.token.clone()
    }

    /// The id of the task this call runs as, once it is one.
    pub fn task_id(&self) -> Option<&str> {
        self.request.task.get().map(|t| t.id())
    }

    /// Reports progress to the client.
    ///
    /// Does nothing when the request carried no `progressToken`, when `progress` is not greater than the last value
    /// reported (progress never goes backwards), or once the request has been answered or cancelled.
    pub fn report_progress(&self, progress: f64, total: Option<f64>, message: Option<&str>) {
        let Some(token) = &self.request.meta.progress_token else {
            return;
        };
        let task = self.request.task.get();
        let mut slot = self.request.slot();
        let over = self.request.is_finished() && task.is_none();
        if over || slot.last_progress.is_some_and(|last| progress <= last) || !progress.is_finite() {
            return;
        }
        slot.last_progress = Some(progress);
        let meta = task.map(|t| crate::wire::task::related_meta(t.id()));
        let frame = Frame::notification(
            "notifications/progress",
            &ProgressParams { progress_token: token, progress, total, message, meta },
        );
        match task {
            Some(task) => {
                drop(slot);
                task.send(frame, true)
            }
            // Under the slot's lock, so that it cannot follow the response.
            None => self.request.out.send_droppable(frame),
        }
    }

    /// Sends a log message to the client (`notifications/message`) if `level` is at or above the level the client
    /// asked for: in the 2025 era with `logging/setLevel` (before any, every level is sent); in the 2026 era with
    /// the request's `io.modelcontextprotocol/logLevel` (without one, nothing is sent).
    pub fn log(&self, level: LogLevel, data: impl Serialize) {
        self.log_to(level, None, data)
    }

    /// Like [`Context::log`], naming the logger.
    pub fn log_to(&self, level: LogLevel, logger: Option<&str>, data: impl Serialize) {
        if !self.request.era.log_enabled(level) {
            return;
        }
        let meta = self.request.task.get().map(|t| crate::wire::task::related_meta(t.id()));
        let frame = Frame::notification("notifications/message", &LogParams { level, logger, data, meta });
        self.request.notify(frame);
    }

    /// Logs at `debug`.
    pub fn debug(&self, data: impl Serialize) {
        self.log(LogLevel::Debug, data)
    }

    /// Logs at `info`.
    pub fn info(&self, data: impl Serialize) {
        self.log(LogLevel::Info, data)
    }

    /// Logs at `notice`.
    pub fn notice(&self, data: impl Serialize) {
        self.log(LogLevel::Notice, data)
    }

    /// Logs at `warning`.
    pub fn warning(&self, data: impl Serialize) {
        self.log(LogLevel::Warning, data)
    }

    /// Logs at `error`.
    pub fn error(&self, data: impl Serialize) {
        self.log(LogLevel::Error, data)
    }
}

/// Types a handler can receive by reference (`ctx: &Context`), injected from the request.
///
/// Generated glue calls this for every reference parameter; the type system, not the spelling, decides what can be
/// injected. [`Context`] and [`State<T>`](crate::State) implement it; a type of yours can, when it can be borrowed
/// from the request, for example state the handler takes without the `State` wrapper:
///
/// ```
/// use mcp::{Context, FromContext, State};
///
/// /// The notes database, given to the server as state.
/// struct Db {
///     path: String,
/// }
///
/// impl FromContext for Db {
///     fn from_context(ctx: &Context) -> Result<&Db, mcp::Error> {
///         State::<Db>::from_context(ctx).map(|state| &**state)
///     }
///
///     // Checked when the server is built: a server without a `Db` is an error naming this tool.
///     fn requirement() -> Option<mcp::Requirement> {
///         State::<Db>::requirement()
///     }
/// }
///
/// /// Where the notes live.
/// #[mcp::tool]
/// fn notes_path(db: &Db) -> String {
///     db.path.clone()
/// }
///
/// let server = mcp::Server::builder().state(Db { path: "notes.db".into() }).tool::<notes_path>().build();
/// assert!(server.is_ok());
/// assert!(mcp::Server::builder().tool::<notes_path>().build().is_err());
/// ```
#[diagnostic::on_unimplemented(
    message = "`{Self}` cannot be injected into an MCP handler",
    label = "reference parameters are injected, not read from the arguments",
    note = "a reference parameter must be `&mcp::Context` or `&mcp::State<T>`; take other arguments by value (`name: String`)"
)]
pub trait FromContext {
    /// Borrows the value from the request's context.
    fn from_context(ctx: &Context) -> Result<&Self, crate::Error>;

    /// What the server must provide for this to succeed, checked once when the server is built.
    fn requirement() -> Option<crate::context::state::Requirement> {
        None
    }
}

impl FromContext for Context {
    fn from_context(ctx: &Context) -> Result<&Self, crate::Error> {
        Ok(ctx)
    }
}
