//! Tasks as the 2026-07-28 Tasks extension has them: a task belongs to its principal only, has no stream (its
//! questions are input requests in its record, answered with `tasks/update`), and its changes reach the listen
//! streams that asked for it.

use serde_json::{json, Map, Value};

use crate::base::sink::Sink;
use crate::context::{Context, Link, RequestMeta};
use crate::handler::tool::ToolDef;
use crate::server::Server;
use crate::store::task::{TaskRecord, TaskStatus};
use crate::task::front::TaskFront;
use crate::task::TaskPlan;
use crate::wire::error::{Error, ErrorCode};
use crate::wire::jsonrpc::{Frame, RequestId};
use crate::wire::task::TaskSupport;

/// A task as the Tasks extension has it.
pub(crate) struct Tasks2026;

impl TaskFront for Tasks2026 {
    /// When the tool can and the request declared the extension (the server decides; a `task` field is ignored).
    fn plan(
        &self,
        tool: &ToolDef,
        _params: &Map<String, Value>,
        meta: &RequestMeta,
    ) -> Result<Option<TaskPlan>, Error> {
        let options = tool.task;
        if options.support == TaskSupport::Forbidden {
            return Ok(None); // most tools: no need to read the client's capabilities
        }
        let declared = meta.client_supports(&["extensions", crate::task::EXTENSION]);
        match options.support {
            _ if declared => Ok(Some(TaskPlan { tool: tool.name.clone(), options, requested_ttl: None })),
            TaskSupport::Required => Err(crate::task::methods::extension_required()),
            _ => Ok(None),
        }
    }
    fn owner_session(&self, _link: &dyn Link, _subject: Option<&str>) -> Option<String> {
        None
    }
    fn sees(&self, recorded: Option<&str>, _session: Option<&str>) -> bool {
        recorded.is_none()
    }
    fn session_sink(&self, _link: &dyn Link) -> Option<Sink> {
        None
    }
    fn tool_error_fails(&self) -> bool {
        false
    }
    fn asks_as_requests(&self) -> bool {
        false
    }
    fn announce(&self, server: &Server, _session: Option<&Sink>, record: &TaskRecord) {
        server.notify_task(record)
    }
    fn create_result(&self, server: &Server, id: &RequestId, record: &TaskRecord) -> Frame {
        let mut result = Map::new();
        result.insert("resultType".into(), "task".into());
        result.extend(task_2026(record));
        crate::wire::protocol::stamp_server_info(&server.inner.v2026().info_value, &mut result);
        Frame::result(id, &Value::Object(result))
    }
    fn gate(&self, method: &str, ctx: &Context) -> Result<(), Error> {
        // The extension removed `tasks/result` and `tasks/list`; every method needs it declared on the request,
        // before the task is looked up.
        if matches!(method, "tasks/result" | "tasks/list") {
            return Err(Error::method_not_found(method));
        }
        if !crate::task::methods::declares_extension(ctx) {
            return Err(crate::task::methods::extension_required());
        }
        Ok(())
    }
    fn task(&self, record: &TaskRecord) -> Value {
        detailed_2026(record)
    }
    fn cancel_finished(&self, _record: &TaskRecord) -> Result<Value, Error> {
        Ok(json!({}))
    }
    fn cancel_done(&self, _after: &TaskRecord, _cancelled: bool) -> Result<Value, Error> {
        Ok(json!({}))
    }
}

/// A task as the Tasks extension writes it (`Task`).
fn task_2026(record: &TaskRecord) -> Map<String, Value> {
    let mut task = crate::task::methods::common(record);
    task.insert("ttlMs".into(), record.ttl_ms.map_or(Value::Null, Value::from));
    task.insert("pollIntervalMs".into(), record.poll_interval_ms.into());
    task
}

/// The detailed task of the Tasks extension: with its questions, result or error as its status says.
pub(crate) fn detailed_2026(record: &TaskRecord) -> Value {
    let mut task = task_2026(record);
    match record.status {
        TaskStatus::InputRequired => {
            task.insert("inputRequests".into(), Value::Object(record.input_requests.clone()));
        }
        TaskStatus::Completed => {
            let mut result = match &record.outcome {
                Some(Ok(Value::Object(r))) => r.clone(),
                _ => Map::new(),
            };
            result.insert("resultType".into(), "complete".into());
            task.insert("result".into(), Value::Object(result));
        }
        TaskStatus::Failed => {
            let error = match &record.outcome {
                Some(Err(e)) => e.clone(),
                _ => Error::new(
                    ErrorCode::INTERNAL_ERROR,
                    record.status_message.clone().unwrap_or_else(|| "the task failed".into()),
                ),
            };
            task.insert("error".into(), serde_json::to_value(error).unwrap_or_default());
        }
        TaskStatus::Working | TaskStatus::Cancelled => {}
    }
    Value::Object(task)
}
