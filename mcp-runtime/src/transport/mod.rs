//! Transports: bytes to JSON-RPC messages and back. No MCP semantics live here.

pub(crate) mod stdio;
pub(crate) mod http;
