//! Tasks from the client's side, in both eras: a tool called as a task, polled, answered, cancelled.
//!
//! - 2025-11-25: [`Client::call_tool_as_task`] sends `task: {ttl}`; [`TaskHandle::wait`] polls `tasks/get` at the
//!   server's `pollInterval` and fetches `tasks/result` (the server's questions arrive as requests, which the
//!   client's handlers answer).
//! - 2026-07-28: the client declares the Tasks extension ([`ClientBuilder::tasks`](super::ClientBuilder::tasks)) and
//!   the server decides. [`TaskHandle::wait`] polls `tasks/get`, answers `inputRequests` with the client's handlers
//!   through `tasks/update`, and returns the inlined result. A plain [`Client::call_tool`] does all of this by
//!   itself when the server answers with a task, and cancels the task (`tasks/cancel`) if it is dropped.

use std::time::Duration;

use serde_json::{json, Map, Value};

use super::{Client, Error, ToolResult};

/// A task, as `tasks/get` shows it.
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub struct TaskState {
    /// Its id.
    pub id: String,
    /// `working`, `input_required`, `completed`, `failed` or `cancelled`.
    pub status: String,
    /// Why it is there, in words.
    pub status_message: Option<String>,
    /// How long to wait before asking again.
    pub poll_interval: Duration,
    /// The task as the server wrote it.
    pub raw: Value,
}

impl TaskState {
    fn from_value(task: Value) -> Result<TaskState, Error> {
        let id = task["taskId"].as_str().ok_or_else(|| Error::Protocol(format!("a task without taskId: {task}")))?;
        let poll = task["pollIntervalMs"].as_u64().or_else(|| task["pollInterval"].as_u64()).unwrap_or(1000);
        Ok(TaskState {
            id: id.to_owned(),
            status: task["status"].as_str().unwrap_or_default().to_owned(),
            status_message: task["statusMessage"].as_str().map(str::to_owned),
            poll_interval: Duration::from_millis(poll.clamp(10, 60_000)),
            raw: task,
        })
    }

    /// Whether the task is over.
    pub fn is_terminal(&self) -> bool {
        matches!(self.status.as_str(), "completed" | "failed" | "cancelled")
    }
}

/// What calling a tool as a task gave: a task, or (the server chose to answer at once) the result.
#[derive(Debug)]
#[non_exhaustive]
pub enum Started {
    /// A task to follow.
    Task(TaskHandle),
    /// The result, at once.
    Done(ToolResult),
}

/// A task on the server. Dropping it does not cancel it (a task outlives its request): call
/// [`TaskHandle::cancel`].
#[derive(Clone, Debug)]
pub struct TaskHandle {
    client: Client,
    /// The task as the call that created it described it.
    pub created: TaskState,
}

impl Client {
    /// Calls a tool as a task. 2025 era: with `task: {ttl}` (the server's TTL when `None`), which the tool must
    /// allow. 2026 era: the request declares the Tasks extension and the server decides; it may answer at once.
    pub async fn call_tool_as_task(
        &self,
        name: &str,
        arguments: Value,
        ttl: Option<Duration>,
    ) -> Result<Started, Error> {
        let mut params = json!({ "name": name, "arguments": arguments });
        if self.is_2026() {
            params["_meta"] = json!({ super::META_CAPABILITIES: self.inner.capabilities_with_tasks() });
        } else {
            params["task"] = match ttl {
                Some(ttl) => json!({ "ttl": ttl.as_millis() as u64 }),
                None => json!({}),
            };
        }
        let result = super::Call::raw(self.clone(), "tools/call", params, None).send_once().await?;
        let task = if self.is_2026() {
            (result["resultType"] == "task").then(|| result.clone())
        } else {
            result.get("task").cloned()
        };
        match task {
            Some(task) => Ok(Started::Task(TaskHandle { client: self.clone(), created: TaskState::from_value(task)? })),
            None => Ok(Started::Done(ToolResult { raw: result })),
        }
    }

    /// A task by id (one this client created, or another's id that it was given).
    pub fn task(&self, id: &str) -> TaskHandle {
        let created = TaskState {
            id: id.to_owned(),
            status: String::new(),
            status_message: None,
            poll_interval: Duration::from_millis(1000),
            raw: Value::Null,
        };
        TaskHandle { client: self.clone(), created }
    }

    /// `tasks/list` (2025 era): the tasks of this session, all pages.
    pub async fn list_tasks(&self) -> Result<Vec<TaskState>, Error> {
        let mut out = Vec::new();
        let mut cursor: Option<String> = None;
        loop {
            let params = match &cursor {
                Some(c) => json!({ "cursor": c }),
                None => json!({}),
            };
            let page = self.request("tasks/list", params).await?;
            for task in page["tasks"].as_array().cloned().unwrap_or_default() {
                out.push(TaskState::from_value(task)?);
            }
            match page["nextCursor"].as_str() {
                Some(next) => cursor = Some(next.to_owned()),
                None => return Ok(out),
            }
        }
    }

    /// A `tasks/*` request: in the 2026 era with the extension declared.
    pub(crate) async fn task_request(&self, method: &str, mut params: Value) -> Result<Value, Error> {
        if self.is_2026() {
            params["_meta"] = json!({ super::META_CAPABILITIES: self.inner.capabilities_with_tasks() });
        }
        super::Call::raw(self.clone(), method, params, None).send_once().await
    }
}

impl TaskHandle {
    /// The task's id.
    pub fn id(&self) -> &str {
        &self.created.id
    }

    /// `tasks/get`.
    pub async fn get(&self) -> Result<TaskState, Error> {
        let task = self.client.task_request("tasks/get", json!({ "taskId": self.id() })).await?;
        TaskState::from_value(task)
    }

    /// `tasks/cancel`.
    pub async fn cancel(&self) -> Result<(), Error> {
        self.client.task_request("tasks/cancel", json!({ "taskId": self.id() })).await.map(|_| ())
    }

    /// Follows the task to its end, at the server's poll interval, calling `on_status` with each state seen; answers
    /// its questions (2026: `inputRequests` through `tasks/update`; 2025: the server's requests reach the client's
    /// handlers) and returns its result. A task that failed is its error; a cancelled one is
    /// [`Error::Protocol`].
    pub async fn wait_with(&self, mut on_status: impl FnMut(&TaskState) + Send) -> Result<ToolResult, Error> {
        let mut answered: Vec<String> = Vec::new();
        loop {
            let state = self.get().await?;
            on_status(&state);
            let interval = state.poll_interval;
            match state.status.as_str() {
                "completed" | "failed" if !self.client.is_2026() => {
                    let result = self.client.task_request("tasks/result", json!({ "taskId": self.id() })).await?;
                    return Ok(ToolResult { raw: result });
                }
                "completed" => return Ok(ToolResult { raw: state.raw["result"].clone() }),
                "failed" => {
                    let error = serde_json::from_value(state.raw["error"].clone()).map_err(|_| {
                        Error::Protocol(format!("task {} failed without a readable error: {}", self.id(), state.raw))
                    })?;
                    return Err(Error::Rpc(error));
                }
                "cancelled" => {
                    return Err(Error::Protocol(format!(
                        "task {} was cancelled: {}",
                        self.id(),
                        state.status_message.as_deref().unwrap_or("no reason given")
                    )))
                }
                "input_required" if self.client.is_2026() => {
                    let questions = state.raw["inputRequests"].as_object().cloned().unwrap_or_default();
                    let mut responses = Map::new();
                    for (key, question) in questions {
                        if answered.contains(&key) {
                            continue;
                        }
                        let method = question["method"].as_str().unwrap_or_default();
                        let params = question.get("params").cloned().unwrap_or(Value::Null);
                        let answer = self.client.inner.answer(method, params).await.map_err(|e| {
                            Error::Protocol(format!(
                                "task {} asked `{method}`, which this client cannot answer: {}",
                                self.id(),
                                e.message
                            ))
                        })?;
                        responses.insert(key.clone(), answer);
                        answered.push(key);
                    }
                    if !responses.is_empty() {
                        let update = json!({ "taskId": self.id(), "inputResponses": responses });
                        self.client.task_request("tasks/update", update).await?;
                        continue;
                    }
                }
                _ => {}
            }
            tokio::time::sleep(interval).await;
        }
    }

    /// [`TaskHandle::wait_with`] without a status callback.
    pub async fn wait(&self) -> Result<ToolResult, Error> {
        self.wait_with(|_| {}).await
    }
}

/// 2026 era: a plain call answered with a task is followed to its end; dropped before, it cancels the task.
pub(crate) async fn follow(client: &Client, created: Value) -> Result<Value, Error> {
    let handle = TaskHandle { client: client.clone(), created: TaskState::from_value(created)? };
    let mut guard = CancelOnDrop { handle: Some(handle.clone()) };
    let outcome = handle.wait().await;
    guard.handle = None;
    outcome.map(|r| r.raw)
}

struct CancelOnDrop {
    handle: Option<TaskHandle>,
}

impl Drop for CancelOnDrop {
    fn drop(&mut self) {
        if let Some(handle) = self.handle.take() {
            tokio::spawn(async move {
                let _ = handle.cancel().await;
            });
        }
    }
}
