//! Write Model Context Protocol servers as ordinary Rust functions.
//!
//! A tool is a function with one attribute. Its parameters become the input JSON Schema, its doc comment the
//! description, its return value the result:
//!
//! ```no_run
//! /// Add two numbers.
//! #[mcp::tool]
//! fn add(
//!     /// The first number.
//!     a: f64,
//!     /// The second number.
//!     b: f64,
//! ) -> String {
//!     (a + b).to_string()
//! }
//!
//! #[mcp::main]
//! async fn main() {}
//! ```
//!
//! A handler that declares `ctx: &mcp::Context` sees its request: cancellation, progress, logging, metadata. See
//! [`tool`] and [`Context`].

#![warn(missing_docs)]

mod cancel;
mod context;
mod entry;
mod error;
mod jsonrpc;
pub mod protocol;
mod server;
mod session;
mod tool;
mod transport;

pub use cancel::{defer, Cancelled, Defer};
pub use context::{ClientInfo, Context, FromContext, RequestMeta};
pub use entry::MainOutput;
pub use error::{Error, ErrorCode};
pub use jsonrpc::RequestId;
pub use protocol::{CallToolResult, Content, Implementation, LogLevel};
pub use server::{BuildError, Server, ServerBuilder, DEFAULT_MAX_LINE_BYTES};
pub use tool::{
    BoxFuture, Hints, IntoToolResult, Json, ObjectSchema, ToolDef, ToolHandler, ToolItem,
};

pub use mcp_macros::{main, tool};

/// What generated code touches. Not a public API: it changes without notice.
#[doc(hidden)]
pub mod __private {
    pub use crate::entry::run_main;
    pub use crate::server::ToolRegistration;
    pub use crate::tool::{argument, no_output_schema, Arguments, HandlerResult};
    pub use inventory;
    pub use schemars;
    pub use serde;
    pub use serde_json;

    use crate::{CallToolResult, IntoToolResult};

    /// Converts a tool's return value (a function so that a type error points at the return type).
    #[inline]
    pub fn into_result<T: IntoToolResult>(value: T) -> Result<CallToolResult, crate::Error> {
        Ok(value.into_tool_result())
    }

    /// The output schema of a return type, as a function pointer.
    pub fn output_schema_of<T: IntoToolResult>() -> Option<serde_json::Value> {
        T::output_schema()
    }

    /// Asserts that a handler's future can move between threads, with a message that says why it must.
    #[inline]
    pub fn assert_send<F: std::future::Future + Send>(future: F) -> F {
        future
    }
}
