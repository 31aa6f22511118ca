//! Prompts on the wire: a prompt and its arguments as `prompts/list` describes them, its messages, and the result
//! of `prompts/get`.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use super::{Content, Icon, Role};

/// An argument of a prompt, as `prompts/list` describes it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct PromptArgument {
    /// Its name.
    pub name: String,
    /// Display name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// What it is for.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// Whether it must be given.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub required: Option<bool>,
}

/// A prompt as `prompts/list` describes it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct Prompt {
    /// Programmatic name.
    pub name: String,
    /// Display name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// What it is for.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// Its arguments.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub arguments: Vec<PromptArgument>,
    /// Icons.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub icons: Vec<Icon>,
}

/// One message of a prompt.
///
/// A prompt returns one, a `Vec` of them (a conversation to start from), or a [`GetPromptResult`]:
///
/// ```
/// use mcp::handler::IntoPromptResult;
/// use mcp::PromptMessage;
///
/// /// Review a piece of code.
/// #[mcp::prompt]
/// fn review(code: String) -> Vec<PromptMessage> {
///     vec![
///         PromptMessage::user(format!("Review this code:\n\n{code}")),
///         PromptMessage::assistant("I will look for bugs first, then style."),
///     ]
/// }
///
/// let result = review("fn main() {}".into()).into_prompt_result().unwrap();
/// assert_eq!(result.messages.len(), 2);
/// assert_eq!(result.messages[1].role, mcp::Role::Assistant);
/// # let _ = mcp::Server::builder().prompt::<review>().build().unwrap();
/// ```
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct PromptMessage {
    /// Who says it.
    pub role: Role,
    /// What is said.
    pub content: Content,
}

impl PromptMessage {
    /// A message from the user.
    pub fn user(content: impl Into<Content>) -> PromptMessage {
        PromptMessage { role: Role::User, content: content.into() }
    }

    /// A message from the assistant.
    pub fn assistant(content: impl Into<Content>) -> PromptMessage {
        PromptMessage { role: Role::Assistant, content: content.into() }
    }
}

/// The result of `prompts/get`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct GetPromptResult {
    /// A description of this rendering of the prompt.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// The messages.
    pub messages: Vec<PromptMessage>,
    /// Metadata passed through untouched.
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<Map<String, Value>>,
}

impl GetPromptResult {
    /// A result with these messages.
    pub fn new(messages: Vec<PromptMessage>) -> GetPromptResult {
        GetPromptResult { messages, ..Default::default() }
    }

    /// Adds a description.
    pub fn with_description(mut self, description: impl Into<String>) -> GetPromptResult {
        self.description = Some(description.into());
        self
    }
}
