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
use std::sync::Arc;

use serde_json::{Map, Value};

use crate::context::{Era, EraState, RequestEra, RequestMeta};
use crate::dispatch::{ListResult, ResultKind};
use crate::server::registry::ListKind;
use crate::server::Server;
use crate::wire::error::{Error, ErrorCode};
use crate::wire::jsonrpc::{self, RequestId};
use crate::wire::protocol::{LogLevel, WireResult};
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
    fn as_any(&self) -> &(dyn std::any::Any + Send + Sync) {
        self
    }
}

/// The 2026 round of questions of a request; none in the 2025 era, where questions are requests to the client.
pub(crate) fn round(era: &EraState) -> Option<&Round> {
    era.as_any().downcast_ref()
}

/// Whether a request is a 2026 one (its results carry `resultType` and the server's info).
pub(crate) fn is_modern(era: &EraState) -> bool {
    round(era).is_some()
}

/// A stored page of a list, in the request's era's form.
pub(crate) fn list_page(
    era: &EraState,
    server: &Server,
    kind: ListKind,
    cursor: Option<&str>,
) -> Result<Arc<serde_json::value::RawValue>, Error> {
    server.registry().page(kind, cursor, is_modern(era))
}

/// Adds what the request's era asks of every result: nothing in the 2025 era; `resultType`, the server's info and,
/// on cacheable results, the caching hints in the 2026 era.
pub(crate) fn decorate(era: &EraState, server: &Server, result: Value, kind: ResultKind) -> ListResult {
    if is_modern(era) {
        ListResult::Value(v2026::decorate(server, result, kind, None))
    } else {
        ListResult::Value(result)
    }
}

/// A handler's response frame as the request's era writes it: the 2025 era writes the value as it is; the 2026
/// era stamps `resultType` and the server's info (and caching hints) into it. A result already in its era's form
/// ([`ResultKind::Encoded`]) is written as it is.
pub(crate) fn encode_result<R: WireResult>(
    era: &EraState,
    server: &Server,
    id: &RequestId,
    result: &R,
    kind: ResultKind,
    cache: Option<crate::wire::protocol::CacheHint>,
) -> String {
    if kind == ResultKind::Encoded {
        jsonrpc::encode_result(id, result)
    } else if is_modern(era) {
        v2026::encode_complete(server, id, result, kind, cache)
    } else {
        jsonrpc::encode_result_sized(id, result, result.payload_len())
    }
}

impl Era {
    /// The protocol version that names the era.
    pub(crate) fn name(self) -> &'static str {
        match self {
            Era::V2025 => "2025-11-25",
            Era::V2026 => "2026-07-28",
        }
    }

    /// The 2025 session a request belongs to, for its span: none in the 2026 era, which has no sessions.
    pub(crate) fn session(self, conn: &crate::dispatch::Connection) -> Option<String> {
        match self {
            Era::V2025 => conn.session_key(),
            Era::V2026 => None,
        }
    }

    /// A resource's error as this era spells it: the 2026 era has no -32002, its "not found" is -32602 (SEP-2164).
    pub(crate) fn resource_error(self, mut error: Error) -> Error {
        if self == Era::V2026 && error.code == ErrorCode::RESOURCE_NOT_FOUND {
            error.code = ErrorCode::INVALID_PARAMS;
        }
        error
    }

    /// Whether a question to the client from a task is a request of the task's own (2025: tagged with the task
    /// and sent on the session), rather than an input request in the task's record (2026).
    pub(crate) fn asks_tasks_questions_as_requests(self) -> bool {
        self == Era::V2025
    }
}

/// Whether a `tools/call` runs as a task: in the 2025 era when it asks (`task`) and the tool allows it; in the 2026
/// era when the tool can and the request declared the Tasks extension (the server decides; a `task` field is
/// ignored).
pub(crate) fn task_plan(
    server: &Server,
    def: &crate::ToolDef,
    params: &Map<String, Value>,
    meta: &RequestMeta,
) -> Result<Option<crate::task::TaskPlan>, Error> {
    use crate::wire::task::TaskSupport;
    let support = def.task.support;
    let plan = |requested_ttl, deferred| {
        Some(crate::task::TaskPlan { tool: def.name, options: def.task.deferred(deferred), requested_ttl })
    };
    match meta.era {
        // A server that runs no tool as a task did not declare the capability: `task` is ignored.
        Era::V2025 if !server.inner.tasks_enabled => Ok(None),
        Era::V2025 => match (params.get("task"), support) {
            (Some(Value::Object(_)), TaskSupport::Forbidden) => Err(Error::new(
                ErrorCode::METHOD_NOT_FOUND,
                format!("tool {:?} does not run as a task (its execution.taskSupport is \"forbidden\"): call it without `task`", def.name),
            )),
            (Some(Value::Object(task)), _) => {
                let ttl = task.get("ttl").and_then(Value::as_u64);
                Ok(plan(ttl, false))
            }
            (Some(_), _) => Err(Error::invalid_params("`task` must be an object (`{\"ttl\": milliseconds}`)")),
            (None, TaskSupport::Required) => Err(Error::new(
                ErrorCode::METHOD_NOT_FOUND,
                format!("tool {:?} runs only as a task (its execution.taskSupport is \"required\"): call it with `task`", def.name),
            )),
            (None, _) => Ok(None),
        },
        Era::V2026 => {
            let declared = meta.client_supports(&["extensions", crate::task::EXTENSION]);
            match support {
                TaskSupport::Forbidden => Ok(None),
                _ if declared => Ok(plan(None, def.task.deferred)),
                TaskSupport::Required => Err(crate::task::methods::extension_required()),
                _ => Ok(None),
            }
        }
    }
}
