//! Definitions written by hand: what `#[mcp::tool]`, `#[mcp::prompt]`, `#[mcp::resource]` and `#[mcp::method]`
//! emit, for tools and the others built at run time ([`ToolDef`], [`PromptDef`], [`ResourceDef`], [`MethodDef`], given
//! to [`ServerBuilder::tool_def`](crate::ServerBuilder::tool_def) or [`Server::add_tool`](crate::Server::add_tool)),
//! and what they are made of: the handler's function types, its arguments, its input schema, the state its injected
//! parameters need, and the [`BoxFuture`] that the crate's traits return. A program of attributed functions names
//! none of it, but for what a type of its own implements: a result ([`IntoToolResult`] and the others), an argument
//! the runtime injects ([`FromContext`], with the [`Requirement`] it may have), and the [`UriTemplate`] a resource
//! template's URI is read with.
//!
//! Inside the crate: what generated code emits and the runtime runs, the definitions of tools, prompts, resources
//! and custom methods, the conversion of their return values, and the URI templates resources match.

pub(crate) mod args;
pub(crate) mod arguments;
pub(crate) mod method;
pub(crate) mod prompt;
pub(crate) mod resource;
pub(crate) mod result;
pub(crate) mod schema;
pub(crate) mod tool;
pub(crate) mod uri_template;

pub use crate::base::future::BoxFuture;
pub use crate::context::state::Requirement;
pub use crate::context::FromContext;
pub use method::{IntoMethodResult, IntoRpcError, MethodDef, MethodHandler, MethodItem};
pub use prompt::{ArgDef, Completer, IntoPromptResult, PromptDef, PromptHandler, PromptItem};
pub use resource::{IntoResourceResult, Lister, ResourceDef, ResourceHandler, ResourceItem};
pub use schema::{InputSchema, ObjectSchema, SchemaError};
pub use tool::{Arguments, Handler, HeaderParam, Hints, Injected, IntoToolResult, ToolDef, ToolHandler, ToolItem};
pub use uri_template::{TemplateError, UriTemplate};
