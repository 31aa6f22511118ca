//! What travels on the wire: the JSON-RPC envelope, MCP's data types, and errors with their codes.

pub mod apps;
pub(crate) mod envelope;
pub(crate) mod error;
pub(crate) mod events;
pub(crate) mod jsonrpc;
pub mod protocol;
#[cfg(feature = "skills")]
pub mod skills;
pub(crate) mod task;
