//! Questions from the server to the client, asked through a handler's [`Context`]: elicitation (form and URL mode),
//! sampling and roots. Each is checked against the capabilities the client declared before anything is sent.
//!
//! In the 2025 era a question is a request to the client, cancelled with the request that made it (the client gets a
//! `notifications/cancelled` for it). In the 2026 era it is an entry of an `input_required` result: the handler stops,
//! and runs again when the client retries with the answers; a capability the request did not declare ends it with
//! -32021.

use std::fmt;
use std::sync::Arc;

use schemars::JsonSchema;
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use serde_json::{json, Map, Value};

use crate::context::{Context, InFlight};
use crate::era::v2026::Round;
use crate::wire::error::Error;
use crate::wire::jsonrpc::{Frame, RequestId};
use crate::wire::protocol::Role;

/// Why a request to the client did not produce a result.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum ClientError {
    /// The request that made it was cancelled; the client was told to stop.
    Cancelled,
    /// The client did not declare the capability this needs; nothing was sent.
    Unsupported {
        /// The capability, such as `elicitation` or `sampling.tools`.
        capability: &'static str,
    },
    /// The client answered with an error.
    Rejected(Error),
    /// The client's answer could not be read.
    InvalidResponse(String),
    /// The connection ended before an answer came.
    Disconnected,
    /// 2026 era: the question went to the client in an `input_required` result. The handler is stopped (an async
    /// one never sees this; a blocking one returns it with `?`) and runs again when the client retries with the
    /// answer.
    InputRequired,
}

impl fmt::Display for ClientError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ClientError::Cancelled => f.write_str("the request was cancelled"),
            ClientError::Unsupported { capability } => {
                write!(f, "the client does not support `{capability}` (it did not declare the capability)")
            }
            ClientError::Rejected(e) => write!(f, "the client answered with an error: {}", e.message),
            ClientError::InvalidResponse(why) => write!(f, "the client's answer could not be read: {why}"),
            ClientError::Disconnected => f.write_str("the client disconnected before answering"),
            ClientError::InputRequired => {
                f.write_str("the question was sent to the client in an input_required result; the handler runs again with the answer")
            }
        }
    }
}

impl std::error::Error for ClientError {}

impl From<crate::Cancelled> for ClientError {
    fn from(_: crate::Cancelled) -> ClientError {
        ClientError::Cancelled
    }
}

/// What the user did with an elicitation.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ElicitAction {
    /// Submitted (form mode: with content).
    Accept,
    /// Said no.
    Decline,
    /// Dismissed it without choosing.
    Cancel,
}

/// The answer to a form elicitation whose schema was given by hand.
#[derive(Clone, Debug, PartialEq, Deserialize)]
#[non_exhaustive]
pub struct ElicitResult {
    /// What the user did.
    pub action: ElicitAction,
    /// The submitted values, when accepted.
    #[serde(default)]
    pub content: Option<Map<String, Value>>,
}

/// The answer to a typed form elicitation.
///
/// [`Context::elicit`](crate::Context::elicit) asks the user to fill in the fields of `T` (its schema is the
/// form) and answers with what they did:
///
/// ```
/// use mcp::{Context, Elicitation};
///
/// #[derive(serde::Deserialize, schemars::JsonSchema)]
/// struct Shipping {
///     /// Where to send the book.
///     address: String,
///     /// Gift-wrap it?
///     gift: Option<bool>,
/// }
///
/// /// Order a book, asking where to send it.
/// #[mcp::tool]
/// async fn order(title: String, ctx: &Context) -> Result<String, mcp::ClientError> {
///     Ok(match ctx.elicit::<Shipping>(&format!("Where should {title:?} go?")).await? {
///         Elicitation::Accept(Shipping { address, gift }) => {
///             format!("Sending {title:?} to {address}{}.", if gift == Some(true) { ", wrapped" } else { "" })
///         }
///         Elicitation::Decline => "Order not placed.".to_owned(),
///         Elicitation::Cancel => "Order abandoned.".to_owned(),
///     })
/// }
/// # let _ = mcp::Server::builder().tool::<order>().build().unwrap();
/// ```
#[derive(Clone, Debug, PartialEq)]
pub enum Elicitation<T> {
    /// Submitted, with the values.
    Accept(T),
    /// Said no.
    Decline,
    /// Dismissed it without choosing.
    Cancel,
}

/// A message for sampling.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct SamplingMessage {
    /// Who says it.
    pub role: Role,
    /// What is said: a content block (or, with tools, a list of them).
    pub content: Value,
}

impl SamplingMessage {
    /// A text message from the user.
    pub fn user(text: impl Into<String>) -> SamplingMessage {
        SamplingMessage { role: Role::User, content: json!({ "type": "text", "text": text.into() }) }
    }

    /// A text message from the assistant.
    pub fn assistant(text: impl Into<String>) -> SamplingMessage {
        SamplingMessage { role: Role::Assistant, content: json!({ "type": "text", "text": text.into() }) }
    }
}

/// A `sampling/createMessage` request: the server asks the client's model for a completion, through
/// [`Context::sample`](crate::Context::sample).
///
/// ```
/// use mcp::{Context, SamplingMessage, SamplingRequest};
///
/// /// Summarize a note in one sentence, with the client's model.
/// #[mcp::tool]
/// async fn summarize(note: String, ctx: &Context) -> Result<String, mcp::ClientError> {
///     let request = SamplingRequest::new(vec![SamplingMessage::user(format!("Summarize:\n\n{note}"))], 200)
///         .system_prompt("Answer with one sentence.");
///     let answer = ctx.sample(request).await?;
///     Ok(answer.text().unwrap_or_default().to_owned())
/// }
/// # let _ = mcp::Server::builder().tool::<summarize>().build().unwrap();
/// ```
#[derive(Clone, Debug, Serialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct SamplingRequest {
    /// The conversation.
    pub messages: Vec<SamplingMessage>,
    /// The most tokens to generate.
    pub max_tokens: u32,
    /// A system prompt.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub system_prompt: Option<String>,
    /// Sampling temperature.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub temperature: Option<f64>,
    /// Tools the model may call (needs the client's `sampling.tools`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tools: Option<Vec<Value>>,
    /// How the model should choose tools.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tool_choice: Option<Value>,
}

impl SamplingRequest {
    /// A request with these messages and a token budget.
    pub fn new(messages: Vec<SamplingMessage>, max_tokens: u32) -> SamplingRequest {
        SamplingRequest { messages, max_tokens, system_prompt: None, temperature: None, tools: None, tool_choice: None }
    }

    /// Sets the system prompt.
    pub fn system_prompt(mut self, prompt: impl Into<String>) -> Self {
        self.system_prompt = Some(prompt.into());
        self
    }

    /// Offers tools (JSON `Tool` objects) to the model.
    pub fn tools(mut self, tools: Vec<Value>) -> Self {
        self.tools = Some(tools);
        self
    }
}

/// The client's answer to `sampling/createMessage`.
#[derive(Clone, Debug, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct SamplingResult {
    /// Who speaks (the assistant).
    pub role: Role,
    /// What it said: a content block, or a list of them.
    pub content: Value,
    /// The model that answered.
    pub model: String,
    /// Why it stopped.
    #[serde(default)]
    pub stop_reason: Option<String>,
}

impl SamplingResult {
    /// The text of the answer, if it is text.
    pub fn text(&self) -> Option<&str> {
        self.content.get("text").and_then(Value::as_str)
    }
}

/// A root the client exposes.
#[derive(Clone, Debug, PartialEq, Deserialize)]
#[non_exhaustive]
pub struct Root {
    /// A `file://` URI.
    pub uri: String,
    /// Its name.
    #[serde(default)]
    pub name: Option<String>,
}

/// Sends `notifications/cancelled` for a request to the client if it is dropped before its answer arrives.
struct Pending {
    request: Arc<InFlight>,
    id: Option<RequestId>,
}

impl Drop for Pending {
    fn drop(&mut self) {
        let Some(id) = self.id.take() else { return };
        if self.request.peer.forget_outgoing(&id) {
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
            let waiting = self.request.peer.forget_outgoing(&id);
            self.task.close_question(&id, waiting);
        }
    }
}

/// A question to the client: its method, its params, and the capability it needs.
struct Question {
    method: &'static str,
    params: Value,
    capability: &'static [&'static str],
}

/// Questions to the client under a key the handler chooses: `ctx.ask("user_name").elicit::<Name>(..)`.
///
/// In the 2026 era the key names the question in the `input_required` result's `inputRequests` and the answer in
/// the client's `inputResponses`; without one, questions are numbered in the order the handler asks them
/// (`input-1`, `input-2`, ...). In the 2025 era the key is not sent anywhere.
#[derive(Clone, Copy)]
pub struct Ask<'a> {
    ctx: &'a Context,
    key: Option<&'a str>,
}

impl Context {
    /// Whether the client declared a capability (`&["sampling", "tools"]`): in the 2025 era at `initialize`, in the
    /// 2026 era on this request.
    pub fn client_supports(&self, capability: &[&str]) -> bool {
        self.meta().client_supports(capability)
    }

    /// Questions to the client under the key `key` (see [`Ask`]).
    pub fn ask<'a>(&'a self, key: &'a str) -> Ask<'a> {
        Ask { ctx: self, key: Some(key) }
    }

    fn unkeyed(&self) -> Ask<'_> {
        Ask { ctx: self, key: None }
    }

    /// Sends a request to the client and waits for its result (2025 era). Fails with [`ClientError::Cancelled`]
    /// (and tells the client) when this handler's request is cancelled; if the waiting future is dropped, the client
    /// is told too. In the 2026 era servers send no requests: `elicitation/create`, `sampling/createMessage` and
    /// `roots/list` become questions of an `input_required` result, anything else is
    /// [`ClientError::Unsupported`].
    pub async fn request_client(&self, method: &str, params: Value) -> Result<Value, ClientError> {
        if self.round().is_some() {
            let (method, capability): (&'static str, &'static [&'static str]) = match method {
                "elicitation/create" => ("elicitation/create", &["elicitation"]),
                "sampling/createMessage" => ("sampling/createMessage", &["sampling"]),
                "roots/list" => ("roots/list", &["roots"]),
                _ => return Err(ClientError::Unsupported { capability: "requests to the client (2026-07-28)" }),
            };
            return self.unkeyed().run(Question { method, params, capability }, Ok).await;
        }
        self.send_request(method, params).await
    }

    async fn send_request(&self, method: &str, params: Value) -> Result<Value, ClientError> {
        self.check_cancelled()?;
        let request = self.in_flight();
        let (id, answer) = request.peer.register_outgoing();
        let mut pending = Pending { request: request.clone(), id: Some(id.clone()) };
        if !request.send_if_open(Frame::request(&id, method, &params)) {
            return Err(ClientError::Cancelled);
        }
        let outcome = tokio::select! {
            biased;
            answer = answer => answer,
            () = request.token.cancelled() => return Err(ClientError::Cancelled), // `pending` tells the client
        };
        pending.id = None;
        match outcome {
            Ok(Ok(result)) => Ok(result),
            Ok(Err(error)) => Err(match serde_json::from_value::<Error>(error.clone()) {
                Ok(e) => ClientError::Rejected(e),
                Err(_) => ClientError::InvalidResponse(error.to_string()),
            }),
            Err(_) => Err(ClientError::Disconnected),
        }
    }

    fn round(&self) -> Option<&Round> {
        crate::era::round(&self.in_flight().era)
    }

    /// The handler's own state, as the previous round of this request left it (2026 era: carried, sealed, in
    /// `requestState`). `None` in the first round, in the 2025 era, or if it does not deserialize as `T`.
    pub fn round_state<T: DeserializeOwned>(&self) -> Option<T> {
        self.round()?.carried().and_then(|v| T::deserialize(v).ok())
    }

    /// Sets the state the next round of this request starts with (see [`Context::round_state`]). It travels sealed
    /// in `requestState`, so keep it small. Does nothing in the 2025 era, where the handler simply keeps running.
    pub fn set_round_state<T: Serialize>(&self, value: &T) {
        if let (Some(round), Ok(value)) = (self.round(), serde_json::to_value(value)) {
            round.carry(value);
        }
    }

    /// Asks the user to fill in a form whose fields are `T`'s (form-mode elicitation). `T`'s JSON Schema must be a
    /// flat object of strings, numbers, booleans and enums, as the protocol requires; doc comments become field
    /// descriptions and `#[serde(default)]` values become defaults.
    ///
    /// In the 2026 era the question goes back as an `input_required` result and the handler stops here; the
    /// client's retry runs it again, and this time the call returns the answer. Code before it runs twice.
    pub async fn elicit<T: DeserializeOwned + JsonSchema>(&self, message: &str) -> Result<Elicitation<T>, ClientError> {
        self.unkeyed().elicit(message).await
    }

    /// [`Context::elicit`] for a plain `fn` handler: blocks its thread until the answer comes (2025) or returns
    /// [`ClientError::InputRequired`] at once (2026), which the handler returns with `?`.
    pub fn elicit_blocking<T: DeserializeOwned + JsonSchema>(
        &self,
        message: &str,
    ) -> Result<Elicitation<T>, ClientError> {
        self.unkeyed().elicit_blocking(message)
    }

    /// Form-mode elicitation with a schema written by hand (`requestedSchema`).
    pub async fn elicit_with_schema(&self, message: &str, schema: Value) -> Result<ElicitResult, ClientError> {
        self.unkeyed().elicit_with_schema(message, schema).await
    }

    /// URL-mode elicitation: asks the user to visit `url` (for credentials or payment that must not pass through the
    /// client). Needs the client's `elicitation.url` capability.
    pub async fn elicit_url(
        &self,
        message: &str,
        url: &str,
        elicitation_id: &str,
    ) -> Result<ElicitAction, ClientError> {
        self.unkeyed().elicit_url(message, url, elicitation_id).await
    }

    /// Asks the client's model for a completion (`sampling/createMessage`). Offering tools needs `sampling.tools`.
    pub async fn sample(&self, request: SamplingRequest) -> Result<SamplingResult, ClientError> {
        self.unkeyed().sample(request).await
    }

    /// [`Context::sample`] for a plain `fn` handler.
    pub fn sample_blocking(&self, request: SamplingRequest) -> Result<SamplingResult, ClientError> {
        self.unkeyed().sample_blocking(request)
    }

    /// The client's roots (`roots/list`).
    pub async fn list_roots(&self) -> Result<Vec<Root>, ClientError> {
        self.unkeyed().list_roots().await
    }

    /// [`Context::list_roots`] for a plain `fn` handler.
    pub fn list_roots_blocking(&self) -> Result<Vec<Root>, ClientError> {
        self.unkeyed().list_roots_blocking()
    }
}

impl Ask<'_> {
    /// 2026 era: the answer now, or the question recorded and the handler interrupted.
    fn modern<T>(
        &self,
        round: &Round,
        question: Question,
        parse: impl FnOnce(Value) -> Result<T, String>,
    ) -> Result<T, ClientError> {
        if !supports(self.ctx, question.capability) {
            round.fail(crate::era::v2026::missing_capability(question.capability));
            return Err(ClientError::Unsupported { capability: capability_name(question.capability) });
        }
        let key = round.key(self.key);
        let Some(answer) = round.ask(&key, question.method, question.params) else {
            return Err(ClientError::InputRequired);
        };
        parse(answer).map_err(|why| {
            round.fail(Error::invalid_params(format!(
                "inputResponses[{key:?}] is not an answer to `{}`: {why}",
                question.method
            )));
            ClientError::InvalidResponse(why)
        })
    }

    /// 2025 era: a request to the client.
    async fn legacy<T>(
        &self,
        question: Question,
        parse: impl FnOnce(Value) -> Result<T, String>,
    ) -> Result<T, ClientError> {
        if !supports(self.ctx, question.capability) {
            return Err(ClientError::Unsupported { capability: capability_name(question.capability) });
        }
        let answer = self.ctx.send_request(question.method, question.params).await?;
        parse(answer).map_err(ClientError::InvalidResponse)
    }

    /// Inside a task: the 2025 era asks the client with the task's id in `_meta` while the task is
    /// `input_required`; the 2026 era puts the question in the task's `inputRequests` until `tasks/update` answers.
    async fn in_task<T>(
        &self,
        task: &Arc<crate::task::TaskRun>,
        mut question: Question,
        parse: impl FnOnce(Value) -> Result<T, String>,
    ) -> Result<T, ClientError> {
        if !supports(self.ctx, question.capability) {
            return Err(ClientError::Unsupported { capability: capability_name(question.capability) });
        }
        self.ctx.check_cancelled()?;
        if task.front.asks_as_requests() {
            if let Value::Object(params) = &mut question.params {
                params.insert("_meta".into(), crate::task::related_meta(&task.id));
            }
            let request = self.ctx.in_flight();
            let (id, answer) = request.peer.register_outgoing();
            let mut open = OpenQuestion { task: task.clone(), request: request.clone(), id: Some(id.clone()) };
            // The status first: a client that sees the question can already see why the task waits.
            task.set_status(crate::task::TaskStatus::InputRequired).await;
            task.open_question(id.clone(), Frame::request(&id, question.method, &question.params));
            let outcome = tokio::select! {
                biased;
                answer = answer => answer,
                () = request.token.cancelled() => return Err(ClientError::Cancelled), // `open` withdraws it
            };
            open.answered();
            task.set_status(crate::task::TaskStatus::Working).await;
            let answer = match outcome {
                Ok(Ok(result)) => result,
                Ok(Err(error)) => {
                    return Err(match serde_json::from_value::<Error>(error.clone()) {
                        Ok(e) => ClientError::Rejected(e),
                        Err(_) => ClientError::InvalidResponse(error.to_string()),
                    })
                }
                Err(_) => return Err(ClientError::Disconnected),
            };
            return parse(answer).map_err(ClientError::InvalidResponse);
        }
        let mut request = json!({ "method": question.method });
        if !question.params.is_null() {
            request["params"] = question.params;
        }
        let answer = tokio::select! {
            biased;
            () = self.ctx.cancelled() => return Err(ClientError::Cancelled),
            answer = task.ask(self.key, request) => answer.ok_or(ClientError::Cancelled)?,
        };
        parse(answer).map_err(ClientError::InvalidResponse)
    }

    async fn run<T>(
        &self,
        question: Question,
        parse: impl FnOnce(Value) -> Result<T, String>,
    ) -> Result<T, ClientError> {
        if let Some(task) = &self.ctx.in_flight().task_run() {
            return self.in_task(task, question, parse).await;
        }
        if let Some(round) = self.ctx.round() {
            let answer = self.modern(round, question, parse);
            if answer.is_err() {
                // The dispatcher answers for this handler now (its questions, or the error): it stops here.
                std::future::pending::<()>().await;
            }
            return answer;
        }
        self.legacy(question, parse).await
    }

    fn run_blocking<T>(
        &self,
        question: Question,
        parse: impl FnOnce(Value) -> Result<T, String>,
    ) -> Result<T, ClientError> {
        let runtime = tokio::runtime::Handle::try_current().map_err(|_| ClientError::Disconnected)?;
        if let Some(task) = &self.ctx.in_flight().task_run() {
            return runtime.block_on(self.in_task(task, question, parse));
        }
        if let Some(round) = self.ctx.round() {
            return self.modern(round, question, parse);
        }
        runtime.block_on(self.legacy(question, parse))
    }

    fn form(&self, message: &str, schema: Value) -> Question {
        let mut params = json!({ "message": message, "requestedSchema": schema });
        let version = &*self.ctx.meta().protocol_version;
        if self.ctx.round().is_none() && version >= "2025-11-25" {
            params["mode"] = "form".into();
        }
        Question { method: "elicitation/create", params, capability: &["elicitation", "form"] }
    }

    /// See [`Context::elicit`].
    pub async fn elicit<T: DeserializeOwned + JsonSchema>(self, message: &str) -> Result<Elicitation<T>, ClientError> {
        self.run(self.form(message, elicitation_schema::<T>()), typed_elicitation::<T>).await
    }

    /// See [`Context::elicit_blocking`].
    pub fn elicit_blocking<T: DeserializeOwned + JsonSchema>(
        self,
        message: &str,
    ) -> Result<Elicitation<T>, ClientError> {
        self.run_blocking(self.form(message, elicitation_schema::<T>()), typed_elicitation::<T>)
    }

    /// See [`Context::elicit_with_schema`].
    pub async fn elicit_with_schema(self, message: &str, schema: Value) -> Result<ElicitResult, ClientError> {
        self.run(self.form(message, schema), parse::<ElicitResult>).await
    }

    /// See [`Context::elicit_url`]. The 2026 era has no elicitation ids: `elicitation_id` is sent in the 2025 era
    /// only.
    pub async fn elicit_url(self, message: &str, url: &str, elicitation_id: &str) -> Result<ElicitAction, ClientError> {
        let mut params = json!({ "mode": "url", "message": message, "url": url });
        if self.ctx.round().is_none() {
            params["elicitationId"] = elicitation_id.into();
        }
        let question = Question { method: "elicitation/create", params, capability: &["elicitation", "url"] };
        self.run(question, |v| parse::<ElicitResult>(v).map(|a| a.action)).await
    }

    fn sampling(&self, request: &SamplingRequest) -> Result<Question, ClientError> {
        let params = serde_json::to_value(request).map_err(|e| ClientError::InvalidResponse(e.to_string()))?;
        let capability: &'static [&'static str] =
            if request.tools.is_some() { &["sampling", "tools"] } else { &["sampling"] };
        Ok(Question { method: "sampling/createMessage", params, capability })
    }

    /// See [`Context::sample`].
    pub async fn sample(self, request: SamplingRequest) -> Result<SamplingResult, ClientError> {
        self.run(self.sampling(&request)?, parse::<SamplingResult>).await
    }

    /// See [`Context::sample_blocking`].
    pub fn sample_blocking(self, request: SamplingRequest) -> Result<SamplingResult, ClientError> {
        self.run_blocking(self.sampling(&request)?, parse::<SamplingResult>)
    }

    fn roots(&self) -> Question {
        let params = if self.ctx.round().is_some() { Value::Null } else { json!({}) };
        Question { method: "roots/list", params, capability: &["roots"] }
    }

    /// See [`Context::list_roots`].
    pub async fn list_roots(self) -> Result<Vec<Root>, ClientError> {
        self.run(self.roots(), parse_roots).await
    }

    /// See [`Context::list_roots_blocking`].
    pub fn list_roots_blocking(self) -> Result<Vec<Root>, ClientError> {
        self.run_blocking(self.roots(), parse_roots)
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

fn parse<T: DeserializeOwned>(value: Value) -> Result<T, String> {
    serde_json::from_value(value).map_err(|e| e.to_string())
}

fn parse_roots(value: Value) -> Result<Vec<Root>, String> {
    #[derive(Deserialize)]
    struct Roots {
        roots: Vec<Root>,
    }
    parse::<Roots>(value).map(|r| r.roots)
}

fn typed_elicitation<T: DeserializeOwned>(value: Value) -> Result<Elicitation<T>, String> {
    let answer: ElicitResult = parse(value)?;
    match answer.action {
        ElicitAction::Accept => {
            let content = Value::Object(answer.content.unwrap_or_default());
            serde_json::from_value(content)
                .map(Elicitation::Accept)
                .map_err(|e| format!("the submitted form does not fit: {e}"))
        }
        ElicitAction::Decline => Ok(Elicitation::Decline),
        ElicitAction::Cancel => Ok(Elicitation::Cancel),
    }
}

/// The `requestedSchema` for `T`: a flat object schema in the restricted subset elicitation allows (each property a
/// string, number, integer, boolean or enum; optional fields are simply not `required`).
pub(crate) fn elicitation_schema<T: JsonSchema>() -> Value {
    let generator = schemars::generate::SchemaSettings::draft2020_12()
        .with(|s| {
            s.inline_subschemas = true;
            s.meta_schema = None;
        })
        .for_deserialize()
        .into_generator();
    let schema = generator.into_root_schema_for::<T>().to_value();
    let mut out = Map::new();
    out.insert("type".into(), "object".into());
    let properties: Map<String, Value> = schema
        .get("properties")
        .and_then(Value::as_object)
        .map(|p| p.iter().map(|(k, v)| (k.clone(), primitive(v.clone()))).collect())
        .unwrap_or_default();
    out.insert("properties".into(), Value::Object(properties));
    if let Some(required) = schema.get("required") {
        out.insert("required".into(), required.clone());
    }
    Value::Object(out)
}

/// One property, brought into the elicitation subset: `["T", "null"]` becomes `T`, an `anyOf` with `null` becomes its
/// other branch, and keywords the subset has no room for (`format`s other than email, uri, date and date-time) go.
fn primitive(schema: Value) -> Value {
    let Value::Object(mut o) = schema else { return schema };
    crate::handler::tool::without_null(&mut o);
    let keep_format = o.get("type") == Some(&json!("string"))
        && matches!(o.get("format").and_then(Value::as_str), Some("email" | "uri" | "date" | "date-time"));
    if !keep_format {
        o.remove("format");
    }
    Value::Object(o)
}
