//! What a task does differently in each era. The era fronts implement [`TaskFront`] (`era/v2025.rs`,
//! `era/v2026/tasks.rs`); the builder gives the engine one per era, and the engine picks one by the request's era in
//! one place ([`TaskFronts::of`]). The engine itself does not branch on the era.

use serde_json::{Map, Value};

use crate::base::sink::Sink;
use crate::context::{Context, Era, Link, RequestMeta};
use crate::handler::tool::ToolDef;
use crate::server::Server;
use crate::store::task::TaskRecord;
use crate::task::TaskPlan;
use crate::wire::error::Error;
use crate::wire::jsonrpc::RequestId;

/// A task as one era has it.
pub(crate) trait TaskFront: Send + Sync + 'static {
    /// Whether a `tools/call` of `tool` runs as a task, and how: 2025-11-25 when the call asks (`task` in `params`)
    /// and the tool allows it, 2026-07-28 when the tool can and the request declared the extension. An error when
    /// the call must be a task and cannot, or asked wrongly.
    fn plan(&self, tool: &ToolDef, params: &Map<String, Value>, meta: &RequestMeta) -> Result<Option<TaskPlan>, Error>;
    /// The session a new task belongs to beside its principal (2025: the connection's session, else the
    /// principal's own key when stateless); none where there are no sessions.
    fn owner_session(&self, link: &dyn Link, subject: Option<&str>) -> Option<String>;
    /// Whether a caller in `session` may see a task recorded for the session `recorded`.
    fn sees(&self, recorded: Option<&str>, session: Option<&str>) -> bool;
    /// Where the task's own messages go when no `tasks/result` waits; `None` where a task has no stream for its
    /// progress, logs or requests.
    fn session_sink(&self, link: &dyn Link) -> Option<Sink>;
    /// Whether a tool result with `isError` fails the task, rather than completing it with that result.
    fn tool_error_fails(&self) -> bool;
    /// Whether the handler's questions are requests of the task's own, rather than input requests in its record.
    fn asks_as_requests(&self) -> bool;
    /// Tells whoever follows the task that it changed (`session`: the task's session route).
    fn announce(&self, server: &Server, session: Option<&Sink>, record: &TaskRecord);
    /// The answer to the request that created the task.
    fn create_result(&self, server: &Server, id: &RequestId, record: &TaskRecord) -> crate::wire::jsonrpc::Frame;
    /// Refuses a `tasks/*` method this era does not have, or one the request may not call.
    fn gate(&self, method: &str, ctx: &Context) -> Result<(), Error>;
    /// The task as `tasks/get` (and `tasks/list`) answer it.
    fn task(&self, record: &TaskRecord) -> Value;
    /// `tasks/cancel` of a task that was already over.
    fn cancel_finished(&self, record: &TaskRecord) -> Result<Value, Error>;
    /// `tasks/cancel`'s answer once the cancel is written (`cancelled`: this call cancelled it).
    fn cancel_done(&self, after: &TaskRecord, cancelled: bool) -> Result<Value, Error>;
}

/// The front of each era, as the builder installed them.
#[derive(Clone, Copy)]
pub(crate) struct TaskFronts {
    pub v2025: &'static dyn TaskFront,
    pub v2026: &'static dyn TaskFront,
}

impl TaskFronts {
    /// The front of a request's era: the one place the task engine looks at the era.
    pub(crate) fn of(&self, era: Era) -> &'static dyn TaskFront {
        match era {
            Era::V2025 => self.v2025,
            Era::V2026 => self.v2026,
        }
    }
}

/// `tasks/cancel` of a task already in a terminal status, where that is an error.
pub(crate) fn terminal(record: &TaskRecord) -> Error {
    Error::invalid_params(format!(
        "cannot cancel task {}: it is already in the terminal status '{}'",
        record.id, record.status
    ))
}
