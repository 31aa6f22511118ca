//! What a handler is made of, for definitions written by hand ([`ToolDef`](crate::ToolDef) and the others built at
//! run time) and for the traits whose methods return a [`BoxFuture`]: the handler's function types, its arguments,
//! its input schema, and the state its injected parameters need. A `#[mcp::tool]` function names none of it.
//!
//! Inside the crate: what generated code emits and the runtime runs, the definitions of tools, prompts, resources
//! and custom methods, the conversion of their return values, and the URI templates resources match.

pub(crate) mod args;
pub(crate) mod method;
pub(crate) mod prompt;
pub(crate) mod resource;
pub(crate) mod result;
pub(crate) mod schema;
pub(crate) mod tool;
pub(crate) mod uri_template;

pub use crate::base::future::BoxFuture;
pub use schema::{InputSchema, ObjectSchema, SchemaError};
pub use tool::{Arguments, Handler, HeaderParam, Injected};
