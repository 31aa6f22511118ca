//! Tools on the wire: a tool as `tools/list` describes it, its behaviour hints, and the result of `tools/call`.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use super::{Content, Icon};

/// The result of `tools/call`.
///
/// A tool returns one itself to send several blocks, structured content, or a failure the model should see:
///
/// ```
/// use mcp::{CallToolResult, Content};
/// use serde_json::json;
///
/// let found = CallToolResult::success(vec![Content::text("Dune"), Content::text("Emma")])
///     .with_structured(json!({ "titles": ["Dune", "Emma"] }));
/// let wire = serde_json::to_value(&found).unwrap();
/// assert_eq!(wire["structuredContent"]["titles"][1], "Emma");
/// assert!(wire.get("isError").is_none());
///
/// let failed = CallToolResult::error("no book called Atlantis");
/// assert_eq!(failed.is_error, Some(true));
/// assert_eq!(failed.content, [Content::text("no book called Atlantis")]);
/// ```
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct CallToolResult {
    /// What the tool returned, as content blocks.
    pub content: Vec<Content>,
    /// The same as a JSON object, for tools with an output schema.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub structured_content: Option<Value>,
    /// Whether the call failed (the content then says why).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub is_error: Option<bool>,
    /// Metadata passed through untouched.
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<Map<String, Value>>,
}

impl CallToolResult {
    /// A successful result with these content blocks.
    pub fn success(content: Vec<Content>) -> CallToolResult {
        CallToolResult { content, ..Default::default() }
    }

    /// A failed result (`isError: true`) whose text says why.
    pub fn error(message: impl Into<String>) -> CallToolResult {
        CallToolResult { content: vec![Content::text(message)], is_error: Some(true), ..Default::default() }
    }

    /// Adds structured content.
    pub fn with_structured(mut self, value: Value) -> CallToolResult {
        self.structured_content = Some(value);
        self
    }
}

/// Hints about what a tool does. Clients must treat them as untrusted.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct ToolAnnotations {
    /// Display title.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// The tool does not change its environment.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub read_only_hint: Option<bool>,
    /// The tool may destroy data.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub destructive_hint: Option<bool>,
    /// Calling it twice with the same arguments does nothing more.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub idempotent_hint: Option<bool>,
    /// The tool talks to the open world (the web, other systems).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub open_world_hint: Option<bool>,
}

impl ToolAnnotations {
    pub(crate) fn is_empty(&self) -> bool {
        *self == ToolAnnotations::default()
    }
}

/// A tool as `tools/list` describes it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct Tool {
    /// Programmatic name.
    pub name: String,
    /// Display name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// What it does, for the model.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// The JSON Schema of its arguments (always an object schema).
    pub input_schema: Value,
    /// The JSON Schema of its structured output, where it has one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub output_schema: Option<Value>,
    /// Behaviour hints.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub annotations: Option<ToolAnnotations>,
    /// Icons.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub icons: Vec<Icon>,
}
