//! How a question reaches the client: a request of its own (2025 era), an entry of an `input_required` result
//! (2026 era), or, inside a task, through the task (its `input_required` status, or its `inputRequests`); and what
//! is withdrawn when the wait ends without an answer.

use std::sync::Arc;

use serde_json::{json, Value};

use super::{Ask, AskError, Question};
use crate::context::{Context, InFlight};
use crate::era::v2026::Round;
use crate::wire::error::Error;
use crate::wire::jsonrpc::{Frame, RequestId};

/// Sends `notifications/cancelled` for a request to the client if it is dropped before its answer arrives.
struct Pending {
    request: Arc<InFlight>,
    id: Option<RequestId>,
}

impl Drop for Pending {
    fn drop(&mut self) {
        let Some(id) = self.id.take() else { return };
        if self.request.link.forget_outgoing(&id) {
            let frame = Frame::notification(
                "notifications/cancelled",
                &json!({ "requestId": id, "reason": "the server request that needed it was cancelled" }),
            );
            // The request's own stream: it is where the client saw the request.
            self.request.out.send(frame);
            tracing::debug!(%id, "cancelled a request to the client");
        }
    }
}

/// A task's request to the client (2025 era): withdrawn (`notifications/cancelled` tagged with the task, on the
/// task's stream) if the wait ends any way but with the answer.
struct OpenQuestion {
    task: Arc<crate::task::TaskRun>,
    request: Arc<InFlight>,
    id: Option<RequestId>,
}

impl OpenQuestion {
    fn answered(&mut self) {
        if let Some(id) = self.id.take() {
            self.task.close_question(&id, false);
        }
    }
}

impl Drop for OpenQuestion {
    fn drop(&mut self) {
        if let Some(id) = self.id.take() {
            let waiting = self.request.link.forget_outgoing(&id);
            self.task.close_question(&id, waiting);
        }
    }
}

impl Context {
    pub(super) async fn send_request(&self, method: &str, params: Value) -> Result<Value, AskError> {
        self.check_cancelled()?;
        let request = self.in_flight();
        let (id, answer) = request.link.register_outgoing();
        let mut pending = Pending { request: request.clone(), id: Some(id.clone()) };
        if !request.send_if_open(Frame::request(&id, method, &params)) {
            return Err(AskError::Cancelled);
        }
        let outcome = tokio::select! {
            biased;
            answer = answer => answer,
            () = request.token.cancelled() => return Err(AskError::Cancelled), // `pending` tells the client
        };
        pending.id = None;
        match outcome {
            Ok(Ok(result)) => Ok(result),
            Ok(Err(error)) => Err(match serde_json::from_value::<Error>(error.clone()) {
                Ok(e) => AskError::Rejected(e),
                Err(_) => AskError::InvalidResponse(error.to_string()),
            }),
            Err(_) => Err(AskError::Disconnected),
        }
    }
}

impl Ask<'_> {
    /// 2026 era: the answer now, or the question recorded and the handler interrupted.
    fn ask_2026<T>(
        &self,
        round: &Round,
        question: Question,
        parse: impl FnOnce(Value) -> Result<T, String>,
    ) -> Result<T, AskError> {
        if !supports(self.ctx, question.capability) {
            round.fail(crate::era::v2026::missing_capability(question.capability));
            return Err(AskError::Unsupported { capability: capability_name(question.capability) });
        }
        let key = round.key(self.key);
        let Some(answer) = round.ask(&key, question.method, question.params) else {
            return Err(AskError::InputRequired);
        };
        parse(answer).map_err(|why| {
            round.fail(Error::invalid_params(format!(
                "inputResponses[{key:?}] is not an answer to `{}`: {why}",
                question.method
            )));
            AskError::InvalidResponse(why)
        })
    }

    /// 2025 era: a request to the client.
    async fn ask_2025<T>(
        &self,
        question: Question,
        parse: impl FnOnce(Value) -> Result<T, String>,
    ) -> Result<T, AskError> {
        if !supports(self.ctx, question.capability) {
            return Err(AskError::Unsupported { capability: capability_name(question.capability) });
        }
        let answer = self.ctx.send_request(question.method, question.params).await?;
        parse(answer).map_err(AskError::InvalidResponse)
    }

    /// Inside a task: the 2025 era asks the client with the task's id in `_meta` while the task is
    /// `input_required`; the 2026 era puts the question in the task's `inputRequests` until `tasks/update` answers.
    async fn in_task<T>(
        &self,
        task: &Arc<crate::task::TaskRun>,
        mut question: Question,
        parse: impl FnOnce(Value) -> Result<T, String>,
    ) -> Result<T, AskError> {
        if !supports(self.ctx, question.capability) {
            return Err(AskError::Unsupported { capability: capability_name(question.capability) });
        }
        self.ctx.check_cancelled()?;
        if task.front.asks_as_requests() {
            if let Value::Object(params) = &mut question.params {
                params.insert("_meta".into(), crate::task::related_meta(&task.id));
            }
            let request = self.ctx.in_flight();
            let (id, answer) = request.link.register_outgoing();
            let mut open = OpenQuestion { task: task.clone(), request: request.clone(), id: Some(id.clone()) };
            // The status first: a client that sees the question can already see why the task waits.
            task.set_status(crate::task::TaskStatus::InputRequired).await;
            task.open_question(id.clone(), Frame::request(&id, question.method, &question.params));
            let outcome = tokio::select! {
                biased;
                answer = answer => answer,
                () = request.token.cancelled() => return Err(AskError::Cancelled), // `open` withdraws it
            };
            open.answered();
            task.set_status(crate::task::TaskStatus::Working).await;
            let answer = match outcome {
                Ok(Ok(result)) => result,
                Ok(Err(error)) => {
                    return Err(match serde_json::from_value::<Error>(error.clone()) {
                        Ok(e) => AskError::Rejected(e),
                        Err(_) => AskError::InvalidResponse(error.to_string()),
                    })
                }
                Err(_) => return Err(AskError::Disconnected),
            };
            return parse(answer).map_err(AskError::InvalidResponse);
        }
        let mut request = json!({ "method": question.method });
        if !question.params.is_null() {
            request["params"] = question.params;
        }
        let answer = tokio::select! {
            biased;
            () = self.ctx.cancelled() => return Err(AskError::Cancelled),
            answer = task.ask(self.key, request) => answer.ok_or(AskError::Cancelled)?,
        };
        parse(answer).map_err(AskError::InvalidResponse)
    }

    pub(super) async fn run<T>(
        &self,
        question: Question,
        parse: impl FnOnce(Value) -> Result<T, String>,
    ) -> Result<T, AskError> {
        if let Some(task) = &self.ctx.in_flight().task_run() {
            return self.in_task(task, question, parse).await;
        }
        if let Some(round) = self.ctx.round() {
            let answer = self.ask_2026(round, question, parse);
            if answer.is_err() {
                // The dispatcher answers for this handler now (its questions, or the error): it stops here.
                std::future::pending::<()>().await;
            }
            return answer;
        }
        self.ask_2025(question, parse).await
    }

    pub(super) fn run_blocking<T>(
        &self,
        question: Question,
        parse: impl FnOnce(Value) -> Result<T, String>,
    ) -> Result<T, AskError> {
        let runtime = tokio::runtime::Handle::try_current().map_err(|_| AskError::Disconnected)?;
        if let Some(task) = &self.ctx.in_flight().task_run() {
            return runtime.block_on(self.in_task(task, question, parse));
        }
        if let Some(round) = self.ctx.round() {
            return self.ask_2026(round, question, parse);
        }
        runtime.block_on(self.ask_2025(question, parse))
    }
}

/// Whether the client declared what a question needs. Form elicitation is `elicitation: {}` (form by default) or
/// `elicitation.form`: a client that declared only `elicitation.url` cannot be asked a form.
fn supports(ctx: &Context, capability: &[&str]) -> bool {
    match capability {
        ["elicitation", "form"] => {
            let declared = ctx.meta().client.as_ref().and_then(|c| c.capabilities.get("elicitation").cloned());
            match declared {
                Some(Value::Object(modes)) => {
                    modes.is_empty() || modes.get("form").is_some_and(|f| !f.is_null()) || !modes.contains_key("url")
                }
                _ => false,
            }
        }
        _ => ctx.client_supports(capability),
    }
}

fn capability_name(path: &[&str]) -> &'static str {
    match path {
        ["elicitation"] | ["elicitation", "form"] => "elicitation",
        ["elicitation", "url"] => "elicitation.url",
        ["sampling"] => "sampling",
        ["sampling", "tools"] => "sampling.tools",
        ["roots"] => "roots",
        _ => "a client capability",
    }
}
