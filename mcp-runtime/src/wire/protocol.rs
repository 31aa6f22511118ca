//! Wire types of MCP (2025-11-25 era; the 2025-06-18 and 2025-03-26 shapes are subsets).
//!
//! They are data, not behaviour: serde with camelCase names, optional fields skipped when absent, unknown fields
//! tolerated on input.

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

/// The newest protocol version this crate speaks.
pub const LATEST_PROTOCOL_VERSION: &str = "2025-11-25";

/// Every protocol version a client may ask for in `initialize`, newest first.
pub const SUPPORTED_PROTOCOL_VERSIONS: &[&str] = &["2025-11-25", "2025-06-18", "2025-03-26"];

/// The name and version of a client or a server.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct Implementation {
    /// Programmatic name.
    pub name: String,
    /// Version string.
    pub version: String,
    /// Display name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// A sentence about it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// Its home page.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub website_url: Option<String>,
}

impl Implementation {
    /// An implementation with a name and a version.
    pub fn new(name: impl Into<String>, version: impl Into<String>) -> Implementation {
        Implementation { name: name.into(), version: version.into(), ..Default::default() }
    }
}

/// Parameters of `initialize`.
#[derive(Clone, Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct InitializeParams {
    pub protocol_version: String,
    #[serde(default)]
    pub capabilities: Value,
    pub client_info: Implementation,
}

/// The severity of a log message, as syslog orders them (RFC 5424).
///
/// ```
/// use mcp::LogLevel;
///
/// let level: LogLevel = "warning".parse().unwrap();
/// assert!(level > LogLevel::Info);
/// assert_eq!(level.to_string(), "warning");
/// assert!("verbose".parse::<LogLevel>().is_err());
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum LogLevel {
    /// Detailed debugging information.
    Debug,
    /// Normal operation.
    Info,
    /// Normal but significant.
    Notice,
    /// A warning.
    Warning,
    /// An error.
    Error,
    /// A critical condition.
    Critical,
    /// Action must be taken at once.
    Alert,
    /// The system is unusable.
    Emergency,
}

impl LogLevel {
    /// Every level, from least to most severe.
    pub const ALL: [LogLevel; 8] = [
        LogLevel::Debug,
        LogLevel::Info,
        LogLevel::Notice,
        LogLevel::Warning,
        LogLevel::Error,
        LogLevel::Critical,
        LogLevel::Alert,
        LogLevel::Emergency,
    ];

    /// The level's name on the wire.
    pub fn as_str(self) -> &'static str {
        match self {
            LogLevel::Debug => "debug",
            LogLevel::Info => "info",
            LogLevel::Notice => "notice",
            LogLevel::Warning => "warning",
            LogLevel::Error => "error",
            LogLevel::Critical => "critical",
            LogLevel::Alert => "alert",
            LogLevel::Emergency => "emergency",
        }
    }
}

impl fmt::Display for LogLevel {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for LogLevel {
    type Err = String;
    fn from_str(s: &str) -> Result<LogLevel, String> {
        LogLevel::ALL
            .into_iter()
            .find(|l| l.as_str() == s)
            .ok_or_else(|| format!("unknown log level {s:?}: expected one of debug, info, notice, warning, error, critical, alert, emergency"))
    }
}

/// Who a piece of content is meant for.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Role {
    /// The human user.
    User,
    /// The model.
    Assistant,
}

/// Hints on how a client should use a piece of content.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct Annotations {
    /// Who it is for.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub audience: Option<Vec<Role>>,
    /// How important it is, from 0 (least) to 1 (most).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub priority: Option<f64>,
    /// When it last changed (ISO 8601).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_modified: Option<String>,
}

/// The contents of a resource: text, base64 text, or bytes (written as base64).
///
/// ```
/// use mcp::ResourceContents;
/// use serde_json::json;
///
/// let logo = ResourceContents::blob("files://logo.png", Some("image/png"), &[0x89, b'P', b'N', b'G']);
/// assert_eq!(logo.uri(), "files://logo.png");
/// assert_eq!(
///     serde_json::to_value(&logo).unwrap(),
///     json!({ "uri": "files://logo.png", "mimeType": "image/png", "blob": "iVBORw==" })
/// );
/// // Bytes are encoded as they are written, and read back as a blob.
/// let bytes = ResourceContents::Bytes {
///     uri: "files://logo.png".into(),
///     mime_type: Some("image/png".into()),
///     bytes: vec![0x89, b'P', b'N', b'G'],
/// };
/// let wire = serde_json::to_string(&bytes).unwrap();
/// assert_eq!(wire, serde_json::to_string(&logo).unwrap());
/// assert_eq!(serde_json::from_str::<ResourceContents>(&wire).unwrap(), logo);
/// ```
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum ResourceContents {
    /// Text contents.
    #[serde(rename_all = "camelCase")]
    Text {
        /// The resource's URI.
        uri: String,
        /// Its MIME type.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        mime_type: Option<String>,
        /// The text.
        text: String,
    },
    /// Binary contents, base64-encoded.
    #[serde(rename_all = "camelCase")]
    Blob {
        /// The resource's URI.
        uri: String,
        /// Its MIME type.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        mime_type: Option<String>,
        /// The bytes, base64-encoded.
        blob: String,
    },
    /// Binary contents held as bytes: written base64-encoded straight into the message, with no encoded copy kept.
    /// A resource function's `Vec<u8>` becomes this; on the wire it is a `blob`, and it reads back as
    /// [`ResourceContents::Blob`].
    #[serde(rename_all = "camelCase", skip_deserializing)]
    Bytes {
        /// The resource's URI.
        uri: String,
        /// Its MIME type.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        mime_type: Option<String>,
        /// The bytes.
        #[serde(rename = "blob", serialize_with = "base64_string")]
        bytes: Vec<u8>,
    },
}

/// Writes bytes as a base64 string, a chunk at a time.
fn base64_string<S: serde::Serializer>(bytes: &[u8], serializer: S) -> Result<S::Ok, S::Error> {
    serializer.collect_str(&base64::display::Base64Display::new(bytes, &base64::engine::general_purpose::STANDARD))
}

impl ResourceContents {
    /// Text contents.
    pub fn text(uri: impl Into<String>, mime_type: Option<&str>, text: impl Into<String>) -> ResourceContents {
        ResourceContents::Text { uri: uri.into(), mime_type: mime_type.map(str::to_owned), text: text.into() }
    }

    /// Binary contents, base64-encoded here.
    pub fn blob(uri: impl Into<String>, mime_type: Option<&str>, bytes: &[u8]) -> ResourceContents {
        use base64::Engine;
        ResourceContents::Blob {
            uri: uri.into(),
            mime_type: mime_type.map(str::to_owned),
            blob: base64::engine::general_purpose::STANDARD.encode(bytes),
        }
    }

    /// The URI.
    pub fn uri(&self) -> &str {
        match self {
            ResourceContents::Text { uri, .. }
            | ResourceContents::Blob { uri, .. }
            | ResourceContents::Bytes { uri, .. } => uri,
        }
    }
}

/// One block of content in a tool result (or, later, a prompt message).
///
/// ```
/// use mcp::{Content, Role};
/// use mcp::protocol::{Annotations, ResourceContents};
/// use serde_json::json;
///
/// let text = Content::text("3 books found");
/// assert_eq!(serde_json::to_value(&text).unwrap(), json!({ "type": "text", "text": "3 books found" }));
///
/// let link = Content::resource_link("books://dune", "Dune");
/// assert_eq!(serde_json::to_value(&link).unwrap()["type"], "resource_link");
///
/// let mut for_user = Annotations::default();
/// for_user.audience = Some(vec![Role::User]);
/// let note = Content::embedded(ResourceContents::text("notes://1", Some("text/plain"), "Buy milk"))
///     .with_annotations(for_user);
/// assert_eq!(serde_json::to_value(&note).unwrap()["annotations"]["audience"], json!(["user"]));
/// ```
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
#[non_exhaustive]
pub enum Content {
    /// Text.
    Text {
        /// The text.
        text: String,
        /// Hints for the client.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        annotations: Option<Annotations>,
    },
    /// An image, base64-encoded.
    #[serde(rename_all = "camelCase")]
    Image {
        /// The bytes, base64-encoded.
        data: String,
        /// Its MIME type, such as `image/png`.
        mime_type: String,
        /// Hints for the client.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        annotations: Option<Annotations>,
    },
    /// Audio, base64-encoded.
    #[serde(rename_all = "camelCase")]
    Audio {
        /// The bytes, base64-encoded.
        data: String,
        /// Its MIME type, such as `audio/wav`.
        mime_type: String,
        /// Hints for the client.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        annotations: Option<Annotations>,
    },
    /// A link to a resource the client may read.
    #[serde(rename_all = "camelCase")]
    ResourceLink {
        /// The resource's URI.
        uri: String,
        /// Its name.
        name: String,
        /// A sentence about it.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        description: Option<String>,
        /// Its MIME type.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        mime_type: Option<String>,
        /// Hints for the client.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        annotations: Option<Annotations>,
    },
    /// A resource embedded whole.
    Resource {
        /// Its contents.
        resource: ResourceContents,
        /// Hints for the client.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        annotations: Option<Annotations>,
    },
}

impl Content {
    /// Text content.
    pub fn text(text: impl Into<String>) -> Content {
        Content::Text { text: text.into(), annotations: None }
    }

    /// An image, already base64-encoded.
    pub fn image(base64: impl Into<String>, mime_type: impl Into<String>) -> Content {
        Content::Image { data: base64.into(), mime_type: mime_type.into(), annotations: None }
    }

    /// A link to a resource.
    pub fn resource_link(uri: impl Into<String>, name: impl Into<String>) -> Content {
        Content::ResourceLink {
            uri: uri.into(),
            name: name.into(),
            description: None,
            mime_type: None,
            annotations: None,
        }
    }

    /// A resource embedded whole.
    pub fn embedded(resource: ResourceContents) -> Content {
        Content::Resource { resource, annotations: None }
    }

    /// The same content with annotations (audience, priority, last modified).
    pub fn with_annotations(mut self, value: Annotations) -> Content {
        match &mut self {
            Content::Text { annotations, .. }
            | Content::Image { annotations, .. }
            | Content::Audio { annotations, .. }
            | Content::ResourceLink { annotations, .. }
            | Content::Resource { annotations, .. } => *annotations = Some(value),
        }
        self
    }

    /// Audio, already base64-encoded.
    pub fn audio(base64: impl Into<String>, mime_type: impl Into<String>) -> Content {
        Content::Audio { data: base64.into(), mime_type: mime_type.into(), annotations: None }
    }
}

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

/// An icon for a tool, prompt, resource or template.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct Icon {
    /// A URI (https or data) of the image.
    pub src: String,
    /// Its MIME type.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mime_type: Option<String>,
    /// Sizes it suits, such as `48x48` or `any`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sizes: Option<Vec<String>>,
    /// The background it is drawn for: `light` or `dark` (any, if absent).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub theme: Option<String>,
}

impl Icon {
    /// An icon at `src`.
    pub fn new(src: impl Into<String>) -> Icon {
        Icon { src: src.into(), ..Default::default() }
    }
}

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
/// use mcp::{IntoPromptResult, PromptMessage};
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

impl From<String> for Content {
    fn from(text: String) -> Content {
        Content::text(text)
    }
}

impl From<&str> for Content {
    fn from(text: &str) -> Content {
        Content::text(text)
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

/// A resource as `resources/list` describes it.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct Resource {
    /// Its URI.
    pub uri: String,
    /// Programmatic name.
    pub name: String,
    /// Display name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// What it is.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// Its MIME type.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mime_type: Option<String>,
    /// Its size in bytes, if known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub size: Option<u64>,
    /// Hints for the client.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub annotations: Option<Annotations>,
    /// Icons.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub icons: Vec<Icon>,
}

impl Resource {
    /// A resource with a URI and a name.
    pub fn new(uri: impl Into<String>, name: impl Into<String>) -> Resource {
        Resource { uri: uri.into(), name: name.into(), ..Default::default() }
    }

    /// Sets the MIME type.
    pub fn with_mime_type(mut self, mime_type: impl Into<String>) -> Resource {
        self.mime_type = Some(mime_type.into());
        self
    }

    /// Sets the description.
    pub fn with_description(mut self, description: impl Into<String>) -> Resource {
        self.description = Some(description.into());
        self
    }
}

/// A resource template as `resources/templates/list` describes it.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct ResourceTemplate {
    /// The RFC 6570 URI template.
    pub uri_template: String,
    /// Programmatic name.
    pub name: String,
    /// Display name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// What it is.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// The MIME type of what it names.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mime_type: Option<String>,
    /// Hints for the client.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub annotations: Option<Annotations>,
    /// Icons.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub icons: Vec<Icon>,
}

/// The result of `resources/read`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct ReadResourceResult {
    /// The contents (one or more).
    pub contents: Vec<ResourceContents>,
    /// Metadata passed through untouched.
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<Map<String, Value>>,
}

impl ReadResourceResult {
    /// A result with these contents.
    pub fn new(contents: Vec<ResourceContents>) -> ReadResourceResult {
        ReadResourceResult { contents, meta: None }
    }
}

/// A result a handler returns, with about how many bytes its payloads take on the wire: the starting capacity of
/// the frame it is written into, so that a large result is written into one allocation of about its size (no
/// doubling reallocations, no buffer twice its size left for the allocator to return to the system).
pub(crate) trait WireResult: Serialize {
    /// The payloads' bytes (text, base64 data); 0 when small or unknown.
    fn payload_len(&self) -> usize;
}

impl Content {
    fn payload_len(&self) -> usize {
        match self {
            Content::Text { text, .. } => text.len(),
            Content::Image { data, .. } | Content::Audio { data, .. } => data.len(),
            Content::Resource { resource, .. } => resource.payload_len(),
            _ => 0,
        }
    }
}

impl ResourceContents {
    fn payload_len(&self) -> usize {
        match self {
            ResourceContents::Text { text, .. } => text.len(),
            ResourceContents::Blob { blob, .. } => blob.len(),
            ResourceContents::Bytes { bytes, .. } => bytes.len().div_ceil(3) * 4,
        }
    }
}

/// A custom method's result, a list page: small, or of unknown size.
impl WireResult for Value {
    fn payload_len(&self) -> usize {
        0
    }
}

impl WireResult for CallToolResult {
    fn payload_len(&self) -> usize {
        self.content.iter().map(Content::payload_len).sum()
    }
}

impl WireResult for GetPromptResult {
    fn payload_len(&self) -> usize {
        self.messages.iter().map(|m| m.content.payload_len()).sum()
    }
}

impl WireResult for ReadResourceResult {
    fn payload_len(&self) -> usize {
        self.contents.iter().map(ResourceContents::payload_len).sum()
    }
}

/// Caching hints of a 2026-era result: how long a client may reuse it, and with whom.
///
/// ```
/// use mcp::{CacheHint, CacheScope};
///
/// let minute = CacheHint::new(60_000, CacheScope::Public);
/// assert_eq!(minute.scope.as_str(), "public");
/// assert_eq!(CacheHint::default(), CacheHint::NONE);
///
/// // What lists, `server/discover` and resource reads without hints of their own say:
/// let _server = mcp::Server::builder().cache(minute).build().unwrap();
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct CacheHint {
    /// `ttlMs`: milliseconds the result stays fresh (0: immediately stale).
    pub ttl_ms: u64,
    /// `cacheScope`.
    pub scope: CacheScope,
}

impl CacheHint {
    /// No reuse: `ttlMs: 0`, `cacheScope: "private"` (the default).
    pub const NONE: CacheHint = CacheHint { ttl_ms: 0, scope: CacheScope::Private };

    /// Fresh for `ttl_ms` milliseconds, shared as `scope` says.
    pub const fn new(ttl_ms: u64, scope: CacheScope) -> CacheHint {
        CacheHint { ttl_ms, scope }
    }
}

impl Default for CacheHint {
    fn default() -> Self {
        CacheHint::NONE
    }
}

/// Who may reuse a cached result.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CacheScope {
    /// Any client or shared cache, for anyone: the result holds nothing user-specific.
    Public,
    /// Only within the same authorization context.
    Private,
}

impl CacheScope {
    /// The value on the wire.
    pub const fn as_str(self) -> &'static str {
        match self {
            CacheScope::Public => "public",
            CacheScope::Private => "private",
        }
    }
}

/// The `_meta` key of the server's info in 2026-07-28 results.
pub(crate) const META_SERVER_INFO: &str = "io.modelcontextprotocol/serverInfo";

/// Puts the server's info (`serverInfo`, as JSON) into a result's `_meta`.
pub(crate) fn stamp_server_info(info: &Value, map: &mut Map<String, Value>) {
    let meta = map.entry("_meta").or_insert_with(|| Value::Object(Map::new()));
    if let Value::Object(meta) = meta {
        meta.insert(META_SERVER_INFO.into(), info.clone());
    }
}
