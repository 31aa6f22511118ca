//! A tool's task settings: whether it runs as a task (`execution.taskSupport`), and how; the `_meta` that ties a
//! message to its task.

use serde_json::{json, Value};

/// The `_meta` key that ties a 2025-11-25 message to its task.
pub(crate) const RELATED_TASK: &str = "io.modelcontextprotocol/related-task";

/// The `_meta` of a message that belongs to a task.
pub(crate) fn related_meta(task_id: &str) -> Value {
    json!({ RELATED_TASK: { "taskId": task_id } })
}

/// Whether a tool can run as a task.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum TaskSupport {
    /// Never: the tool always answers in its request.
    #[default]
    Forbidden,
    /// When the client asks for it (2025-11-25: `task` in the call; 2026-07-28: the client declared the Tasks
    /// extension on the request). Otherwise it answers in its request.
    Optional,
    /// Always: a client that cannot take a task gets an error (2025: -32601; 2026: -32021 naming the extension).
    Required,
}

impl TaskSupport {
    /// The 2025-11-25 spelling (`execution.taskSupport`).
    pub fn as_str(self) -> &'static str {
        match self {
            TaskSupport::Forbidden => "forbidden",
            TaskSupport::Optional => "optional",
            TaskSupport::Required => "required",
        }
    }
}

/// A tool's task settings, as `const` data: `#[mcp::tool(task = "optional")]` and its companions write one.
///
/// A server with at least one tool that may run as a task serves the `tasks/*` methods and declares them:
///
/// ```
/// use mcp::{CallToolResult, Context, TaskOptions, TaskSupport};
/// use mcp::handler::{Arguments, ToolDef, ToolHandler};
/// use serde_json::json;
///
/// fn export(_: &Context, _: Arguments) -> Result<CallToolResult, mcp::Error> {
///     Ok(CallToolResult::success(Vec::new()))
/// }
///
/// let task = TaskOptions::new(TaskSupport::Optional).ttl_ms(60_000).poll_interval_ms(200);
/// assert_eq!(task.support.as_str(), "optional");
/// let def = ToolDef::new("export", || json!({ "type": "object" }), || None, ToolHandler::Blocking(export), "here")
///     .task(task);
/// let server = mcp::Server::builder().tool_def(def).build().unwrap();
/// assert!(server.schema()["capabilities"]["tasks"].is_object());
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub struct TaskOptions {
    /// Whether it runs as a task.
    pub support: TaskSupport,
    /// The handler starts the task itself, with [`Context::start_task`](crate::Context::start_task), once it has
    /// what it needs from the client: until then a 2026-07-28 call is an ordinary request (its questions are
    /// `input_required` results). In the 2025-11-25 era a call that asks for a task gets it at once.
    pub deferred: bool,
    /// How long its tasks are kept (the server's default when `None`).
    pub ttl_ms: Option<u64>,
    /// The poll interval suggested for its tasks (the server's default when `None`).
    pub poll_interval_ms: Option<u64>,
}

impl TaskOptions {
    /// Not a task.
    pub const NONE: TaskOptions =
        TaskOptions { support: TaskSupport::Forbidden, deferred: false, ttl_ms: None, poll_interval_ms: None };

    /// Runs as a task with this support.
    pub const fn new(support: TaskSupport) -> TaskOptions {
        TaskOptions { support, ..TaskOptions::NONE }
    }

    /// Sets [`TaskOptions::deferred`].
    pub const fn deferred(mut self, deferred: bool) -> TaskOptions {
        self.deferred = deferred;
        self
    }

    /// Sets the TTL of its tasks.
    pub const fn ttl_ms(mut self, ttl_ms: u64) -> TaskOptions {
        self.ttl_ms = Some(ttl_ms);
        self
    }

    /// Sets the poll interval suggested for its tasks.
    pub const fn poll_interval_ms(mut self, ms: u64) -> TaskOptions {
        self.poll_interval_ms = Some(ms);
        self
    }
}
