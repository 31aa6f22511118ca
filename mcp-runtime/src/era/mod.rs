//! The era fronts. Each turns an incoming request into one [`Request`](crate::dispatch::Request) shape with its
//! metadata, answers what only its era has, and hands the rest to the one dispatcher:
//!
//! - [`v2025`]: `initialize` and the session it starts (client info, log level, resource subscriptions), `ping`,
//!   `logging/setLevel`, `resources/subscribe`, and the client's answers to requests from the server.
//! - [`v2026`]: the stateless `_meta` envelope, `server/discover`, `subscriptions/listen`, `input_required`
//!   results with their sealed `requestState`, and the 2026 HTTP header rules.
//!
//! On stdio one connection serves both: a request whose `_meta` carries
//! `io.modelcontextprotocol/protocolVersion` (and `server/discover` or `subscriptions/listen`, which exist only in
//! the 2026 era) goes to the 2026 front; everything else to the 2025 session.

pub(crate) mod v2025;
pub(crate) mod v2026;

use std::sync::atomic::{AtomicU8, Ordering};

use serde_json::{Map, Value};

use crate::context::{EraState, InFlight, Peer, RequestEra, RequestMeta, TaskPlan};
use crate::wire::error::{Error, ErrorCode};
use crate::wire::protocol::{CacheHint, LogLevel};
use crate::wire::task::{TaskOptions, TaskSupport};
use v2026::Round;

/// The session's log level before any `logging/setLevel`: everything is sent.
pub(crate) const LOG_LEVEL_UNSET: u8 = u8::MAX;

/// The 2025 session's part of each of its requests: the log level `logging/setLevel` set, read at each log call.
pub(crate) struct SessionLog {
    pub level: AtomicU8,
}

impl Default for SessionLog {
    fn default() -> SessionLog {
        SessionLog { level: AtomicU8::new(LOG_LEVEL_UNSET) }
    }
}

impl RequestEra for SessionLog {
    fn log_enabled(&self, level: LogLevel) -> bool {
        let min = self.level.load(Ordering::Relaxed);
        min == LOG_LEVEL_UNSET || level as u8 >= min
    }
    fn interrupt(&self) -> Option<&tokio::sync::Notify> {
        None
    }
    fn was_interrupted(&self) -> bool {
        false
    }
    fn session(&self, peer: &dyn Peer) -> Option<String> {
        peer.session_key()
    }
    fn result_prefix<'a>(&self, _peer: &'a dyn Peer) -> Option<&'a str> {
        None
    }
    fn decorate(&self, _peer: &dyn Peer, result: Value, _hints: Option<CacheHint>) -> Value {
        result
    }
    fn task_plan(
        &self,
        tasks_enabled: bool,
        tool: &'static str,
        options: TaskOptions,
        params: &Map<String, Value>,
        _meta: &RequestMeta,
    ) -> Result<Option<TaskPlan>, Error> {
        task_plan_2025(tasks_enabled, tool, options, params)
    }
    fn interrupted_result(&self, _request: &InFlight) -> Result<Value, Error> {
        Err(Error::internal("interrupted outside the 2026 era"))
    }
    fn as_any(&self) -> &(dyn std::any::Any + Send + Sync) {
        self
    }
}

/// The 2026 round of questions of a request; none in the 2025 era, where questions are requests to the client.
pub(crate) fn round(era: &EraState) -> Option<&Round> {
    era.as_any().downcast_ref()
}

/// Whether a 2025 `tools/call` runs as a task: when it asks (`task`) and the tool allows it (a server that runs no
/// tool as a task did not declare the capability: `task` is ignored).
pub(crate) fn task_plan_2025(
    tasks_enabled: bool,
    tool: &'static str,
    options: TaskOptions,
    params: &Map<String, Value>,
) -> Result<Option<TaskPlan>, Error> {
    if !tasks_enabled {
        return Ok(None);
    }
    let plan = |requested_ttl| Some(TaskPlan { tool, options: options.deferred(false), requested_ttl });
    match (params.get("task"), options.support) {
        (Some(Value::Object(_)), TaskSupport::Forbidden) => Err(Error::new(
            ErrorCode::METHOD_NOT_FOUND,
            format!("tool {tool:?} does not run as a task (its execution.taskSupport is \"forbidden\"): call it without `task`"),
        )),
        (Some(Value::Object(task)), _) => Ok(plan(task.get("ttl").and_then(Value::as_u64))),
        (Some(_), _) => Err(Error::invalid_params("`task` must be an object (`{\"ttl\": milliseconds}`)")),
        (None, TaskSupport::Required) => Err(Error::new(
            ErrorCode::METHOD_NOT_FOUND,
            format!("tool {tool:?} runs only as a task (its execution.taskSupport is \"required\"): call it with `task`"),
        )),
        (None, _) => Ok(None),
    }
}

/// Whether a 2026 `tools/call` runs as a task: when the tool can and the request declared the Tasks extension (the
/// server decides; a `task` field is ignored).
pub(crate) fn task_plan_2026(
    tool: &'static str,
    options: TaskOptions,
    meta: &RequestMeta,
) -> Result<Option<TaskPlan>, Error> {
    if options.support == TaskSupport::Forbidden {
        return Ok(None); // most tools: no need to read the client's capabilities
    }
    let declared = meta.client_supports(&["extensions", crate::task::EXTENSION]);
    match options.support {
        _ if declared => Ok(Some(TaskPlan { tool, options, requested_ttl: None })),
        TaskSupport::Required => Err(crate::task::methods::extension_required()),
        _ => Ok(None),
    }
}
