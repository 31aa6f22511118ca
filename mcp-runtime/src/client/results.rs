//! What a call returns, typed: [`ToolResult`], [`PromptResult`], [`ResourceResult`], each readable as the
//! specification's types and as the JSON the server wrote.

use std::fmt;

use serde::de::DeserializeOwned;
use serde_json::Value;

use super::Error;

/// The result of `tools/call` ([`Client::call_tool`](super::Client::call_tool)): read its text, its content
/// blocks, or its `structuredContent` into your own type; [`ToolResult::raw`] is the result as the server wrote it.
///
/// ```
/// use mcp::client::Client;
/// use serde_json::json;
///
/// #[derive(serde::Serialize, serde::Deserialize, schemars::JsonSchema)]
/// struct Stats {
///     words: usize,
/// }
///
/// /// Count the words of a text.
/// #[mcp::tool]
/// fn count(text: String) -> Result<mcp::Json<Stats>, String> {
///     match text.split_whitespace().count() {
///         0 => Err("there is nothing to count".into()),
///         words => Ok(mcp::Json(Stats { words })),
///     }
/// }
///
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> Result<(), mcp::client::Error> {
/// let server = mcp::Server::builder().tool::<count>().build().unwrap();
/// let client = Client::in_process(server).await?;
/// let result = client.call_tool("count", json!({ "text": "to be or not" })).await?;
/// assert!(!result.is_error());
/// assert_eq!(result.json::<Stats>()?.words, 4);
/// assert_eq!(result.structured(), Some(&json!({ "words": 4 })));
/// // A tool's own error is a result too, with `isError`.
/// let failed = client.call_tool("count", json!({ "text": "" })).await?;
/// assert!(failed.is_error());
/// assert_eq!(failed.text(), Some("there is nothing to count"));
/// assert!(failed.json::<Stats>().is_err());
/// # Ok(()) }
/// ```
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub struct ToolResult {
    /// The result as the server wrote it.
    pub raw: Value,
}

impl ToolResult {
    /// Whether the tool reported an error (`isError`).
    pub fn is_error(&self) -> bool {
        self.raw.get("isError").and_then(Value::as_bool).unwrap_or(false)
    }

    /// The first text block.
    pub fn text(&self) -> Option<&str> {
        self.raw["content"].as_array()?.iter().find(|c| c["type"] == "text").and_then(|c| c["text"].as_str())
    }

    /// The content blocks, typed (the JSON of each is in [`raw`](ToolResult::raw)). A block that does not fit is an
    /// error that says where.
    pub fn content(&self) -> Result<Vec<crate::wire::protocol::Content>, Error> {
        match self.raw.get("content") {
            None | Some(Value::Null) => Ok(Vec::new()),
            Some(content) => serde::Deserialize::deserialize(content)
                .map_err(|e| Error::Protocol(format!("a tool result's content does not fit: {e}"))),
        }
    }

    /// `structuredContent`.
    pub fn structured(&self) -> Option<&Value> {
        self.raw.get("structuredContent")
    }

    /// `structuredContent` read into `T`. A tool error, a missing or a misfitting `structuredContent` is an error
    /// that says which.
    pub fn json<T: DeserializeOwned>(&self) -> Result<T, Error> {
        if self.is_error() {
            return Err(Error::Protocol(format!("the tool reported an error: {}", self.text().unwrap_or_default())));
        }
        let structured =
            self.structured().ok_or_else(|| Error::Protocol("the result has no structuredContent".into()))?;
        T::deserialize(structured).map_err(|e| Error::Protocol(format!("structuredContent does not fit: {e}")))
    }
}

/// A prompt as `prompts/get` rendered it ([`Client::get_prompt`](super::Client::get_prompt)): the JSON as the
/// server wrote it ([`raw`](PromptResult::raw), which `result["messages"]` indexes), read typed with
/// [`messages`](PromptResult::messages).
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub struct PromptResult {
    /// The result as the server wrote it.
    pub raw: Value,
}

impl PromptResult {
    /// Its description, if it has one.
    pub fn description(&self) -> Option<&str> {
        self.raw["description"].as_str()
    }

    /// The text of its first text message.
    pub fn text(&self) -> Option<&str> {
        let messages = self.raw["messages"].as_array()?;
        messages.iter().find(|m| m["content"]["type"] == "text").and_then(|m| m["content"]["text"].as_str())
    }

    /// The messages, typed. A result that does not fit is an error that says where.
    pub fn messages(&self) -> Result<Vec<crate::wire::protocol::PromptMessage>, Error> {
        serde::Deserialize::deserialize(&self.raw["messages"])
            .map_err(|e| Error::Protocol(format!("a prompt's messages do not fit: {e}")))
    }
}

/// A resource as `resources/read` gave it ([`Client::read_resource`](super::Client::read_resource)): the JSON as
/// the server wrote it ([`raw`](ResourceResult::raw), which `result["contents"]` indexes), read typed with
/// [`contents`](ResourceResult::contents).
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub struct ResourceResult {
    /// The result as the server wrote it.
    pub raw: Value,
}

impl ResourceResult {
    /// The text of its first text contents.
    pub fn text(&self) -> Option<&str> {
        self.raw["contents"].as_array()?.iter().find_map(|c| c["text"].as_str())
    }

    /// The bytes of its first binary contents (`blob`, decoded from base64).
    pub fn bytes(&self) -> Option<Vec<u8>> {
        let blob = self.raw["contents"].as_array()?.iter().find_map(|c| c["blob"].as_str())?;
        base64::Engine::decode(&base64::engine::general_purpose::STANDARD, blob).ok()
    }

    /// The contents, typed. A result that does not fit is an error that says where.
    pub fn contents(&self) -> Result<Vec<crate::wire::protocol::ResourceContents>, Error> {
        serde::Deserialize::deserialize(&self.raw["contents"])
            .map_err(|e| Error::Protocol(format!("a resource's contents do not fit: {e}")))
    }
}

/// A result that prints as the JSON the server wrote, and indexes it (`result["messages"]`).
macro_rules! raw_json {
    ($($result:ty),*) => {$(
        impl fmt::Display for $result {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                fmt::Display::fmt(&self.raw, f)
            }
        }

        impl std::ops::Index<&str> for $result {
            type Output = Value;

            fn index(&self, key: &str) -> &Value {
                &self.raw[key]
            }
        }
    )*};
}

raw_json!(PromptResult, ResourceResult);
