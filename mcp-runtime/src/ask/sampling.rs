//! Sampling: asking the client's model for a completion (`sampling/createMessage`).

use serde::{Deserialize, Serialize};
use serde_json::{json, Value};

use super::{parse, Ask, AskError, Question};
use crate::context::Context;
use crate::wire::protocol::Role;

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
/// use mcp::Context;
/// use mcp::ask::{SamplingMessage, SamplingRequest};
///
/// /// Summarize a note in one sentence, with the client's model.
/// #[mcp::tool]
/// async fn summarize(note: String, ctx: &Context) -> Result<String, mcp::ask::AskError> {
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

impl Context {
    /// Asks the client's model for a completion (`sampling/createMessage`). Offering tools needs `sampling.tools`.
    pub async fn sample(&self, request: SamplingRequest) -> Result<SamplingResult, AskError> {
        self.unkeyed().sample(request).await
    }

    /// [`Context::sample`] for a plain `fn` handler.
    pub fn sample_blocking(&self, request: SamplingRequest) -> Result<SamplingResult, AskError> {
        self.unkeyed().sample_blocking(request)
    }
}

impl Ask<'_> {
    fn sampling(&self, request: &SamplingRequest) -> Result<Question, AskError> {
        let params = serde_json::to_value(request).map_err(|e| AskError::InvalidResponse(e.to_string()))?;
        let capability: &'static [&'static str] =
            if request.tools.is_some() { &["sampling", "tools"] } else { &["sampling"] };
        Ok(Question { method: "sampling/createMessage", params, capability })
    }

    /// See [`Context::sample`].
    pub async fn sample(self, request: SamplingRequest) -> Result<SamplingResult, AskError> {
        self.run(self.sampling(&request)?, parse::<SamplingResult>).await
    }

    /// See [`Context::sample_blocking`].
    pub fn sample_blocking(self, request: SamplingRequest) -> Result<SamplingResult, AskError> {
        self.run_blocking(self.sampling(&request)?, parse::<SamplingResult>)
    }
}
