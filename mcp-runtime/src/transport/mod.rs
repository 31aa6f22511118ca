//! Transports: bytes to JSON-RPC messages and back. No MCP semantics live here.

pub(crate) mod backlog;
#[cfg(unix)]
pub(crate) mod fd_io;
#[cfg(feature = "http")]
pub(crate) mod http;
mod std_io;
pub(crate) mod stdio;
pub(crate) use std_io::{spawn_stdout, ThreadStdin};

/// A frame as it goes on a stream: its bytes and the newline that ends it.
pub(crate) fn line(frame: String) -> Vec<u8> {
    let mut bytes = frame.into_bytes();
    bytes.push(b'\n');
    bytes
}
