//! Wire types of MCP (2025-11-25 era; the 2025-06-18 and 2025-03-26 shapes are subsets).
//!
//! They are data, not behaviour: serde with camelCase names, optional fields skipped when absent, unknown fields
//! tolerated on input.

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};
use serde_json::Value;

mod content;
mod prompts;
mod resources;
mod results;
mod tools;

pub use content::{Annotations, Content, ResourceContents, Role};
pub use prompts::{GetPromptResult, Prompt, PromptArgument, PromptMessage};
pub use resources::{ReadResourceResult, Resource, ResourceTemplate};
pub(crate) use results::{stamp_server_info, WireResult, META_SERVER_INFO};
pub use results::{CacheHint, CacheScope};
pub use tools::{CallToolResult, Tool, ToolAnnotations};

/// The protocol version of the 2025 era ([`Era::V2025`](crate::Era::V2025): sessions opened by `initialize`), the
/// newest of [`SUPPORTED_PROTOCOL_VERSIONS`]. A server serves it and [`VERSION_2026`] from the same endpoint.
pub const VERSION_2025: &str = "2025-11-25";

/// The protocol version of the 2026 era ([`Era::V2026`](crate::Era::V2026): no session, each request carries its
/// version and the client's capabilities in `_meta`).
pub const VERSION_2026: &str = "2026-07-28";

/// The HTTP header that carries a 2025 session's id.
pub const SESSION_HEADER: &str = "mcp-session-id";

/// The HTTP header that carries the protocol version.
pub const VERSION_HEADER: &str = "mcp-protocol-version";

/// The identifier of the Tasks extension of the 2026-07-28 protocol.
pub const TASKS_EXTENSION: &str = "io.modelcontextprotocol/tasks";

/// Every protocol version a client may ask for in `initialize`, newest first.
pub const SUPPORTED_PROTOCOL_VERSIONS: &[&str] = &[VERSION_2025, "2025-06-18", "2025-03-26"];

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
