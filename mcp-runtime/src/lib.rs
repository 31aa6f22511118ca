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
#![doc(test(attr(deny(warnings))))]

mod cancel;
mod context;
mod entry;
mod error;
mod jsonrpc;
mod method;
pub mod protocol;
mod server;
mod session;
mod state;
mod tool;
mod transport;

pub use cancel::{defer, Cancelled, Defer};
pub use context::{ClientInfo, Context, FromContext, RequestMeta};
pub use entry::MainOutput;
pub use error::{Error, ErrorCode};
pub use jsonrpc::RequestId;
pub use method::{IntoMethodResult, IntoRpcError, MethodDef, MethodHandler, MethodItem};
pub use protocol::{CallToolResult, Content, Implementation, LogLevel};
pub use server::{BuildError, Server, ServerBuilder, DEFAULT_MAX_LINE_BYTES, DEFAULT_SHUTDOWN_TIMEOUT};
pub use state::{Requirement, State};
pub use tool::{
    BoxFuture, Handler, Hints, Injected, IntoToolResult, Json, ObjectSchema, ToolDef, ToolHandler, ToolItem,
};

pub use mcp_macros::{main, method, tool};

/// The README's examples, compiled as doctests.
#[cfg(doctest)]
#[doc = include_str!("../../README.md")]
pub struct ReadmeDoctests;

/// What generated code touches. Not a public API: it changes without notice.
#[doc(hidden)]
pub mod __private {
    pub use crate::entry::run_main;
    pub use crate::server::{MethodRegistration, ToolRegistration};
    pub use crate::tool::{Arguments, HandlerResult};
    pub use inventory;
    pub use schemars;
    pub use serde;
    pub use serde_json;

    use crate::{CallToolResult, IntoMethodResult, IntoToolResult};

    /// A tool's argument could not be read: an `isError` result, so the model can correct itself.
    pub fn invalid_tool_argument(message: String) -> HandlerResult {
        Ok(CallToolResult::error(message))
    }

    /// A custom method's parameter could not be read: -32602.
    pub fn invalid_method_argument(message: String) -> Result<serde_json::Value, crate::Error> {
        Err(crate::Error::invalid_params(message))
    }

    /// Converts a custom method's return value.
    #[inline]
    pub fn method_result<T: IntoMethodResult>(value: T) -> Result<serde_json::Value, crate::Error> {
        value.into_method_result()
    }

    /// The glue for a tool's return type. Generated code asks for it twice (to convert a value, and for the output
    /// schema) through the same bounded function, so a type that cannot be returned is one error, not two.
    pub struct ReturnGlue<T> {
        /// Converts the value into a result.
        pub convert: fn(T) -> Result<CallToolResult, crate::Error>,
        /// The output schema of `T`.
        pub output_schema: fn() -> Option<serde_json::Value>,
    }

    fn convert<T: IntoToolResult>(value: T) -> Result<CallToolResult, crate::Error> {
        Ok(value.into_tool_result())
    }

    /// The glue for the return type `T`.
    pub const fn returns<T: IntoToolResult>() -> ReturnGlue<T> {
        ReturnGlue { convert: convert::<T>, output_schema: T::output_schema }
    }

    /// The glue for an argument of type `T`: reading it and describing it.
    pub struct ArgGlue<T> {
        /// Reads the argument `name`, or a sentence naming what is wrong with it.
        pub read: fn(&mut Arguments, &str) -> Result<T, String>,
        /// Adds the argument to the input schema.
        pub describe: fn(&mut crate::ObjectSchema, &str, Option<&str>),
    }

    /// The glue for an argument of type `T`.
    pub const fn arg<T: schemars::JsonSchema + serde::de::DeserializeOwned>() -> ArgGlue<T> {
        ArgGlue { read: crate::tool::argument::<T>, describe: crate::ObjectSchema::property::<T> }
    }

    /// Asserts that a handler's future can move between threads, with a message that says why it must.
    #[inline]
    pub fn assert_send<F: std::future::Future + Send>(future: F) -> F {
        future
    }
}
