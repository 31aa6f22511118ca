//! The runtime's one error type, which is also the JSON-RPC error object put on the wire.

use std::fmt;

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// A JSON-RPC error code.
///
/// The constants name the codes this crate sends; any other `i32` is a code too.
///
/// ```
/// use mcp::ErrorCode;
///
/// assert_eq!(ErrorCode::METHOD_NOT_FOUND, ErrorCode(-32601));
/// assert_eq!(serde_json::to_value(ErrorCode::OVERLOADED).unwrap(), -31000);
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(transparent)]
pub struct ErrorCode(pub i32);

impl ErrorCode {
    /// The message was not valid JSON.
    pub const PARSE_ERROR: ErrorCode = ErrorCode(-32700);
    /// The JSON was not a valid JSON-RPC request.
    pub const INVALID_REQUEST: ErrorCode = ErrorCode(-32600);
    /// No such method.
    pub const METHOD_NOT_FOUND: ErrorCode = ErrorCode(-32601);
    /// The method's parameters were wrong (an unknown tool, a malformed `params`).
    pub const INVALID_PARAMS: ErrorCode = ErrorCode(-32602);
    /// The server failed (a panic in a handler, a result that could not be serialized).
    pub const INTERNAL_ERROR: ErrorCode = ErrorCode(-32603);
    /// A resource was not found (MCP 2025-11-25).
    pub const RESOURCE_NOT_FOUND: ErrorCode = ErrorCode(-32002);
    /// The request timed out on the server (a timeout layer, see [`mcp::middleware`](crate::middleware)): the
    /// code the TypeScript and Python SDKs use for a request that timed out.
    pub const REQUEST_TIMEOUT: ErrorCode = ErrorCode(-32001);
    /// The server is at one of its limits (requests in flight on a connection, sessions): try again later. An
    /// application code, outside the ranges JSON-RPC and MCP reserve.
    pub const OVERLOADED: ErrorCode = ErrorCode(-31000);
    /// -32020 (2026-07-28): an HTTP header disagrees with the body, or a required one is missing.
    pub const HEADER_MISMATCH: ErrorCode = ErrorCode(-32020);
    /// -32021 (2026-07-28): the request needs a client capability it did not declare.
    pub const MISSING_CAPABILITY: ErrorCode = ErrorCode(-32021);
    /// -32022 (2026-07-28): the request names a protocol version the server does not serve in the 2026 way
    /// (without `initialize`).
    pub const UNSUPPORTED_VERSION: ErrorCode = ErrorCode(-32022);
    /// -32023 (SEP-3415, provisional): what the request names does not exist (an event type, a subscription);
    /// `data.kind` says which.
    pub const NOT_FOUND: ErrorCode = ErrorCode(-32023);
    /// -32024 (SEP-3415, provisional): the caller may not do this (subscribe to this event with these arguments), or
    /// its access was revoked.
    pub const FORBIDDEN: ErrorCode = ErrorCode(-32024);
    /// -32025 (SEP-3415, provisional): a limit or quota of the server's was reached; `data.limit` names it and
    /// `data.max` gives it.
    pub const RESOURCE_EXHAUSTED: ErrorCode = ErrorCode(-32025);
    /// -32026 (SEP-3415, provisional): the request is well formed but asks for what is not offered here (a delivery
    /// mode an event type does not have); `data.feature` names it.
    pub const UNSUPPORTED: ErrorCode = ErrorCode(-32026);
    /// -32027 (SEP-3415, provisional): a callback endpoint the client gave failed verification or could not be
    /// reached; `data.reason` says how.
    pub const CALLBACK_ENDPOINT_ERROR: ErrorCode = ErrorCode(-32027);
}

/// An error answered to a request: a JSON-RPC error object with a code, a readable message and optional data.
///
/// A custom method, a prompt, a resource or a hand-written [`ToolDef`](crate::handler::ToolDef) that returns `Err(Error)`
/// answers with this object. A `#[mcp::tool]` function that returns one gets an `isError` result instead, whose text
/// is the error's [`Display`](fmt::Display), so that the model sees it.
///
/// ```
/// use mcp::handler::IntoToolResult;
/// use mcp::{Error, ErrorCode};
/// use serde_json::json;
///
/// let e = Error::invalid_params("`count` must be positive").with_data(json!({ "count": -1 }));
/// assert_eq!(e.code, ErrorCode::INVALID_PARAMS);
/// assert_eq!(
///     serde_json::to_value(&e).unwrap(),
///     json!({ "code": -32602, "message": "`count` must be positive", "data": { "count": -1 } })
/// );
/// assert_eq!(e.to_string(), "`count` must be positive (code -32602)");
///
/// let from_a_tool = Err::<String, _>(e).into_tool_result();
/// assert_eq!(from_a_tool.is_error, Some(true));
/// ```
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct Error {
    /// The JSON-RPC code.
    pub code: ErrorCode,
    /// A sentence that names the problem.
    pub message: String,
    /// Anything that helps the client act on it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub data: Option<Value>,
}

impl Error {
    /// An error with a code and a message.
    pub fn new(code: ErrorCode, message: impl Into<String>) -> Error {
        Error { code, message: message.into(), data: None }
    }

    /// Adds `data` to the error.
    pub fn with_data(mut self, data: Value) -> Error {
        self.data = Some(data);
        self
    }

    /// -32602: invalid parameters.
    pub fn invalid_params(message: impl Into<String>) -> Error {
        Error::new(ErrorCode::INVALID_PARAMS, message)
    }

    /// -32601: the method is not served.
    pub fn method_not_found(method: &str) -> Error {
        Error::new(ErrorCode::METHOD_NOT_FOUND, format!("method not found: {method}"))
    }

    /// The resource at `uri` does not exist: what a `#[mcp::resource]` function (a template's, typically)
    /// returns for a URI it matched but cannot serve, so that the client gets the same answer as for a URI nothing
    /// serves: code -32002 in the 2025 era and -32602 in the 2026 era (SEP-2164), with `data.uri`. The code is
    /// -32002 here and becomes -32602 when a 2026 request's resource returns it.
    ///
    /// Which code each case gets from `resources/read`: an unknown URI, or this error, is "not found" as just said;
    /// a template variable that does not parse is -32602; any other `Err` of a resource (a `String`, an I/O error)
    /// is -32603 with its message; an `mcp::Error` keeps its own code.
    ///
    /// ```
    /// #[mcp::resource(uri = "notes://{id}")]
    /// fn note(id: u32) -> Result<String, mcp::Error> {
    ///     if id > 10 {
    ///         return Err(mcp::Error::resource_not_found(format!("notes://{id}")));
    ///     }
    ///     Ok(format!("note {id}"))
    /// }
    ///
    /// let e = mcp::Error::resource_not_found("notes://42");
    /// assert_eq!(e.code, mcp::ErrorCode::RESOURCE_NOT_FOUND);
    /// assert_eq!(e.data, Some(serde_json::json!({ "uri": "notes://42" })));
    /// ```
    pub fn resource_not_found(uri: impl Into<String>) -> Error {
        let uri = uri.into();
        Error::new(ErrorCode::RESOURCE_NOT_FOUND, format!("resource not found: {uri}"))
            .with_data(serde_json::json!({ "uri": uri }))
    }

    /// -32603: the server failed.
    pub fn internal(message: impl Into<String>) -> Error {
        Error::new(ErrorCode::INTERNAL_ERROR, message)
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} (code {})", self.message, self.code.0)
    }
}

impl std::error::Error for Error {}

/// -32021: the request needs a client capability it did not declare (2026-07-28).
pub(crate) const MISSING_CAPABILITY: ErrorCode = ErrorCode::MISSING_CAPABILITY;
