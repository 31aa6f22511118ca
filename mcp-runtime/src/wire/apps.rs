//! The names of MCP Apps (`io.modelcontextprotocol/ui`) both sides use: the server's [`mcp::apps`](crate::apps)
//! and the client's helpers.

/// The extension's identifier.
pub const EXTENSION: &str = "io.modelcontextprotocol/ui";
/// The MIME type of an app's HTML.
pub const MIME_TYPE: &str = "text/html;profile=mcp-app";
