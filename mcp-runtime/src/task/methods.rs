//! The two fronts of the task engine: the `tasks/*` methods as each era defines them, and the task as each era
//! writes it.
//!
//! | method        | 2025-11-25                                   | 2026-07-28 (Tasks extension)                 |
//! |---------------|----------------------------------------------|----------------------------------------------|
//! | `tasks/get`   | the task (`ttl`, `pollInterval`)             | the detailed task (`ttlMs`, `pollIntervalMs`, `inputRequests`, `result` or `error`) |
//! | `tasks/result`| waits for the end; the call's result or error| removed (-32601)                             |
//! | `tasks/list`  | the session's tasks, paginated               | removed (-32601)                             |
//! | `tasks/cancel`| the cancelled task; -32602 once terminal     | an empty ack, also once terminal             |
//! | `tasks/update`| (none: questions are requests to the client) | `inputResponses` for the task's questions    |
//!
//! In the 2026 era every method needs the extension declared on the request (-32021 first, before the task is looked
//! up).

use serde_json::{json, Map, Value};

use super::front::TaskFront;
use super::{Owner, TaskRecord, TaskStatus, EXTENSION, RELATED_TASK};
use crate::context::{Context, Era};
use crate::handler::method::{MethodDef, MethodHandler};
use crate::handler::tool::{Arguments, BoxFuture};
use crate::wire::error::Error;

/// The handler of a `tasks/*` method.
#[allow(clippy::type_complexity)]
/// The Tasks extension (`io.modelcontextprotocol/tasks`), as every extension is added: its settings in the 2026-07-28
/// era, its capability in 2025-11-25, its methods, the same handlers for both (each answers in its request's era),
/// and its hook on `tools/call` ([`TasksHook`](super::hook::TasksHook)), which turns a call into a task. The server
/// adds it when a tool can run as a task.
pub(crate) struct Tasks {
    /// Each era's part of a task, for the hook.
    pub fronts: super::front::TaskFronts,
}

impl Tasks {
    /// How it is declared in an era: its settings under `extensions` (`{}` in the 2026-07-28 era, none in
    /// 2025-11-25), and the capability of its own it has in 2025-11-25 (`tasks`).
    pub(crate) fn declare(era: Era) -> (Option<Value>, Option<(&'static str, Value)>) {
        match era {
            Era::V2026 => (Some(json!({})), None),
            Era::V2025 => {
                (None, Some(("tasks", json!({ "list": {}, "cancel": {}, "requests": { "tools": { "call": {} } } }))))
            }
        }
    }

    /// The `tasks/*` methods.
    pub(crate) fn methods() -> Vec<MethodDef> {
        fn boxed_get(ctx: &Context, args: Arguments) -> BoxFuture<'_, Result<Value, Error>> {
            Box::pin(get(ctx, args))
        }
        fn boxed_result(ctx: &Context, args: Arguments) -> BoxFuture<'_, Result<Value, Error>> {
            Box::pin(result(ctx, args))
        }
        fn boxed_list(ctx: &Context, args: Arguments) -> BoxFuture<'_, Result<Value, Error>> {
            Box::pin(list(ctx, args))
        }
        fn boxed_cancel(ctx: &Context, args: Arguments) -> BoxFuture<'_, Result<Value, Error>> {
            Box::pin(cancel(ctx, args))
        }
        fn boxed_update(ctx: &Context, args: Arguments) -> BoxFuture<'_, Result<Value, Error>> {
            Box::pin(update(ctx, args))
        }
        let here = concat!(file!(), ":", line!());
        let def = |name, f| MethodDef::new(name, MethodHandler::Async(f), here);
        vec![
            def("tasks/get", boxed_get).routed_by("taskId"),
            def("tasks/result", boxed_result),
            def("tasks/list", boxed_list),
            def("tasks/cancel", boxed_cancel).routed_by("taskId"),
            def("tasks/update", boxed_update).routed_by("taskId"),
        ]
    }
}

/// -32021 naming the Tasks extension.
pub(crate) fn extension_required() -> Error {
    Error::new(
        crate::wire::error::MISSING_CAPABILITY,
        format!("this needs the {EXTENSION} extension, which the request did not declare in its client capabilities"),
    )
    .with_data(json!({ "requiredCapabilities": { "extensions": { EXTENSION: {} } } }))
}

/// Whether a 2026 request declared the Tasks extension.
pub(crate) fn declares_extension(ctx: &Context) -> bool {
    ctx.meta().client_supports(&["extensions", EXTENSION])
}

/// The common start of every method: the era's gate, the task id, the caller, the era's front.
fn begin(ctx: &Context, args: &Arguments, method: &str) -> Result<(String, Owner, &'static dyn TaskFront), Error> {
    let front = ctx.server().tasks().fronts.of(ctx.meta().era);
    front.gate(method, ctx)?;
    let owner = Owner::of(ctx.in_flight());
    if method == "tasks/list" {
        return Ok((String::new(), owner, front));
    }
    match args.as_map().get("taskId") {
        Some(Value::String(id)) => Ok((id.clone(), owner, front)),
        _ => Err(Error::invalid_params(format!("`{method}` needs a string `taskId`"))),
    }
}

async fn get(ctx: &Context, args: Arguments) -> Result<Value, Error> {
    let (id, owner, front) = begin(ctx, &args, "tasks/get")?;
    let record = ctx.server().tasks().find(&id, &owner, front).await?;
    Ok(front.task(&record))
}

async fn result(ctx: &Context, args: Arguments) -> Result<Value, Error> {
    let (id, owner, front) = begin(ctx, &args, "tasks/result")?;
    let engine = ctx.server().tasks();
    let mut record = engine.find(&id, &owner, front).await?;
    if !record.status.is_terminal() {
        if let Some(run) = engine.running(&id) {
            // While this waits, the task's messages (its questions, progress) come on this request's stream.
            run.attach(ctx.in_flight().out.clone());
            let _detach = Detach(&run);
            run.wait_done().await;
        }
        // Run by another instance (or just finished here): its record says when it is over.
        loop {
            record = engine.find(&id, &owner, front).await?;
            if record.status.is_terminal() {
                break;
            }
            tokio::time::sleep(std::time::Duration::from_millis(record.poll_interval_ms.clamp(10, 5000))).await;
        }
    }
    match record.outcome {
        Some(Ok(Value::Object(mut result))) => {
            let meta = result.entry("_meta").or_insert_with(|| Value::Object(Map::new()));
            if let Value::Object(meta) = meta {
                meta.insert(RELATED_TASK.into(), json!({ "taskId": id }));
            }
            Ok(Value::Object(result))
        }
        Some(Ok(other)) => Ok(other),
        Some(Err(error)) => Err(error),
        None => Err(Error::internal(format!(
            "task {id} was {}: {}",
            record.status,
            record.status_message.as_deref().unwrap_or("it has no result")
        ))),
    }
}

/// Stops routing a task's messages onto a `tasks/result` stream when that request ends (or is cancelled).
struct Detach<'a>(&'a super::TaskRun);

impl Drop for Detach<'_> {
    fn drop(&mut self) {
        self.0.detach();
    }
}

async fn list(ctx: &Context, args: Arguments) -> Result<Value, Error> {
    let (_, owner, front) = begin(ctx, &args, "tasks/list")?;
    let cursor = match args.as_map().get("cursor") {
        None | Some(Value::Null) => None,
        Some(Value::String(c)) => Some(c.as_str()),
        Some(_) => return Err(Error::invalid_params("invalid cursor: cursors are strings")),
    };
    let Some(session) = owner.session else {
        // A stateless caller with no principal: no task can be told to be its own.
        return Ok(json!({ "tasks": [] }));
    };
    let engine = ctx.server().tasks();
    let page_size = ctx.server().registry().page_size();
    let page = engine
        .store
        .list(&session, cursor, page_size)
        .await
        .map_err(super::store_error)?
        .ok_or_else(|| Error::invalid_params("invalid cursor: no such page"))?;
    let mut tasks = Vec::with_capacity(page.tasks.len());
    for record in page.tasks {
        tasks.push(front.task(&engine.orphaned(record).await));
    }
    let mut out = json!({ "tasks": tasks });
    if let Some(next) = page.next_cursor {
        out["nextCursor"] = next.into();
    }
    Ok(out)
}

async fn cancel(ctx: &Context, args: Arguments) -> Result<Value, Error> {
    let (id, owner, front) = begin(ctx, &args, "tasks/cancel")?;
    let engine = ctx.server().tasks();
    let record = engine.find(&id, &owner, front).await?;
    if record.status.is_terminal() {
        return front.cancel_finished(&record);
    }
    let cancelled = match engine.running(&id) {
        Some(run) => run.cancel("cancelled by the client").await,
        None => {
            // Run by another instance: the cancel is written to the store, where that instance finds it.
            let mut record = record.clone();
            record.status = TaskStatus::Cancelled;
            record.status_message = Some("cancelled by the client".into());
            record.input_requests.clear();
            record.seq += 1;
            record.updated_at_ms = super::now_ms();
            let written = engine.store.update(record.clone()).await.map_err(super::store_error)?;
            if written {
                // Its followers hear it, and so does the instance running it, which stops the handler.
                ctx.server().notify_task(&record);
            }
            written
        }
    };
    let after = engine.find(&id, &owner, front).await?;
    front.cancel_done(&after, cancelled)
}

async fn update(ctx: &Context, mut args: Arguments) -> Result<Value, Error> {
    let (id, owner, front) = begin(ctx, &args, "tasks/update")?;
    let responses = match args.as_map_mut().remove("inputResponses") {
        Some(Value::Object(r)) => r,
        _ => return Err(Error::invalid_params("`tasks/update` needs an `inputResponses` object of answers by key")),
    };
    let engine = ctx.server().tasks();
    // A finished task has no outstanding question: its answers are ignored and acknowledged, as the extension
    // says of any answer to a key that is not outstanding (tasks.md, "Response" of tasks/update).
    engine.find(&id, &owner, front).await?;
    match engine.running(&id) {
        Some(run) => run.answer(responses).await,
        // Run by another instance: the answers go there.
        None if ctx.server().inner.scale_out().hub.is_some() => {
            ctx.server().publish(crate::server::hub::Change::TaskInput { task: id, responses });
        }
        None => {}
    }
    Ok(json!({}))
}

/// The members every era writes of a task: its id, status and message, and when it was created and last updated.
pub(crate) fn common(record: &TaskRecord) -> Map<String, Value> {
    let mut task = Map::new();
    task.insert("taskId".into(), record.id.clone().into());
    task.insert("status".into(), record.status.as_str().into());
    if let Some(message) = &record.status_message {
        task.insert("statusMessage".into(), message.clone().into());
    }
    task.insert("createdAt".into(), super::timestamp(record.created_at_ms).into());
    task.insert("lastUpdatedAt".into(), super::timestamp(record.updated_at_ms).into());
    task
}
