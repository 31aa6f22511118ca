//! [`Context`]: what a handler sees of its request — cancellation, progress, logging and the request's metadata.

pub(crate) mod in_flight;
pub(crate) mod meta;
pub(crate) mod state;

use std::fmt;
use std::sync::atomic::Ordering;
use std::sync::Arc;

use serde::Serialize;
use serde_json::Value;
use tokio_util::sync::CancellationToken;

use crate::base::cancel::Cancelled;
use crate::context::state::StateMap;
use crate::wire::jsonrpc::{Frame, RequestId};
use crate::wire::protocol::LogLevel;

pub(crate) use in_flight::*;
pub use meta::*;

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

    /// The name of what the request runs (a tool's, a prompt's, a resource's); empty for other requests.
    #[cfg_attr(not(feature = "client"), allow(dead_code))]
    pub(crate) fn name(&self) -> &str {
        &self.request.name
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
        self.request.link.state()
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
/// use mcp::handler::FromContext;
/// use mcp::{Context, State};
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
///     fn requirement() -> Option<mcp::handler::Requirement> {
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
/// server.unwrap();
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
