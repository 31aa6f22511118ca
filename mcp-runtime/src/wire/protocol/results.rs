//! What a result carries besides its data: the size of its payloads (the frame's starting capacity), the caching
//! hints of the 2026 era, and the server's info stamped into its `_meta`.

use serde::Serialize;
use serde_json::{Map, Value};

use super::{CallToolResult, Content, GetPromptResult, ReadResourceResult, ResourceContents};

/// A result a handler returns, with about how many bytes its payloads take on the wire: the starting capacity of
/// the frame it is written into, so that a large result is written into one allocation of about its size (no
/// doubling reallocations, no buffer twice its size left for the allocator to return to the system).
pub(crate) trait WireResult: Serialize {
    /// The payloads' bytes (text, base64 data); 0 when small or unknown.
    fn payload_len(&self) -> usize;

    /// Whether it serializes as an object with no `_meta` or `resultType` of its own at the top, so that the 2026
    /// era's stamped members can be written in front of its own (`encode_result_stamped`) instead of merged into a
    /// parsed copy. False unless known.
    fn spliceable(&self) -> bool {
        false
    }

    /// Whether it is a tool's result that reports the tool failed (`isError: true`), for the metrics' `error.type`.
    fn is_tool_error(&self) -> bool {
        false
    }
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

    fn spliceable(&self) -> bool {
        matches!(self, Value::Object(m) if !m.contains_key("_meta") && !m.contains_key("resultType"))
    }

    fn is_tool_error(&self) -> bool {
        self.get("isError") == Some(&Value::Bool(true))
    }
}

impl WireResult for CallToolResult {
    fn payload_len(&self) -> usize {
        self.content.iter().map(Content::payload_len).sum()
    }

    fn spliceable(&self) -> bool {
        self.meta.is_none()
    }

    fn is_tool_error(&self) -> bool {
        self.is_error == Some(true)
    }
}

impl WireResult for GetPromptResult {
    fn payload_len(&self) -> usize {
        self.messages.iter().map(|m| m.content.payload_len()).sum()
    }

    fn spliceable(&self) -> bool {
        self.meta.is_none()
    }
}

impl WireResult for ReadResourceResult {
    fn payload_len(&self) -> usize {
        self.contents.iter().map(ResourceContents::payload_len).sum()
    }

    fn spliceable(&self) -> bool {
        self.meta.is_none()
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
