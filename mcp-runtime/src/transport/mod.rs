//! Transports: bytes to JSON-RPC messages and back. No MCP semantics live here.

pub(crate) mod http;
pub(crate) mod stdio;
