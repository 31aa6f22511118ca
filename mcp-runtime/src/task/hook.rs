//! The Tasks extension's hook on `tools/call`: what turns a call into a task, through the public hook API as any
//! extension's would. Its claim is the call's [`TaskPlan`] (each era's front says when a call runs as a task); its
//! `begin` starts the task before the tool runs, unless the tool defers it (`defer_task`: `Context::start_task`).

use serde_json::Value;

use super::front::TaskFronts;
use super::{begin, Refused, TaskPlan};
use crate::base::future::BoxFuture;
use crate::context::Context;
use crate::hook::{Claim, ToolCall, ToolCallHook};
use crate::wire::error::Error;
use crate::wire::task::TaskSupport;

/// The hook: it asks the front of the call's era.
pub(crate) struct TasksHook {
    pub fronts: TaskFronts,
}

impl ToolCallHook for TasksHook {
    fn claim(&self, call: &ToolCall<'_>) -> Result<Option<Claim>, Error> {
        let plan = self.fronts.of(call.meta.era).plan(call.tool, call.params, call.meta)?;
        Ok(plan.map(|plan| Box::new(plan) as Claim))
    }

    fn begin<'a>(&'a self, ctx: &'a Context) -> BoxFuture<'a, Result<(), Error>> {
        Box::pin(async move {
            let Some(plan) = ctx.claim::<TaskPlan>().filter(|plan| !plan.options.deferred) else {
                return Ok(());
            };
            // Where the tool's task support is optional, a task the store refuses (it is full, or holds this
            // client's share) is a plain call instead.
            match begin(ctx.in_flight()).await {
                Ok(_) => Ok(()),
                Err(Refused::Store(e)) if plan.options.support == TaskSupport::Optional => {
                    tracing::info!(id = %ctx.request_id(), reason = %e.message, "the task store refused the task: a plain call");
                    Ok(())
                }
                Err(refused) => Err(Error::from(refused)),
            }
        })
    }

    fn finish<'a>(&'a self, ctx: &'a Context, outcome: Option<Result<Value, Error>>) -> BoxFuture<'a, ()> {
        Box::pin(async move {
            let Some(task) = ctx.in_flight().task_run() else {
                return tracing::error!(id = %ctx.request_id(), "a call the Tasks hook took over has no task");
            };
            match outcome {
                Some(result) => task.complete(result).await,
                None => task.stopped().await,
            }
        })
    }
}
