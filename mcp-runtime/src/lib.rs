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
//!
//! The [`guide`] is the manual, a chapter a topic: tools, cancellation, state, questions to the client, both
//! protocol eras, Streamable HTTP, tasks, middleware, extensions, the client, authorization, testing, limits,
//! deploying, observing.

#![warn(missing_docs)]
// docs.rs (and `RUSTDOCFLAGS="--cfg docsrs"`) marks each item with the features it needs.
#![cfg_attr(docsrs, feature(doc_cfg))]
#![doc(test(attr(deny(warnings))))]

pub mod apps;
pub mod ask;
pub mod auth;
mod base;
mod builder;
#[cfg(feature = "client")]
pub mod client;
#[cfg(feature = "client")]
pub mod compose;
mod context;
mod dispatch;
mod entry;
mod era;
pub mod events;
pub mod extension;
pub mod handler;
pub mod hook;
mod metrics;
pub mod middleware;
#[cfg(feature = "opentelemetry")]
mod otel;
#[cfg(feature = "redis")]
pub mod redis;
mod server;
#[cfg(feature = "skills")]
pub mod skills;
pub mod store;
mod task;
mod transport;
mod wire;

pub use auth::AuthInfo;
pub use base::backlog::OutboundLimits;
pub use base::cancel::{defer, Cancelled, Defer};
pub use context::state::State;
pub use context::{ClientInfo, Context, Era, HttpRequest, RequestMeta};
pub use metrics::Metrics;

pub use base::name::Name;
pub use builder::ServerBuilder;
pub use entry::{run, ArgSpec, Args, FromArgs, MainOutput};
pub use handler::tool::Json;
pub use protocol::{
    Annotations, CallToolResult, Content, GetPromptResult, Icon, Implementation, LogLevel, PromptMessage,
    ReadResourceResult, Resource, ResourceContents, Role,
};
pub use server::hub;
pub use server::visibility;
pub use server::{BuildError, NotifyError, Server};
pub use task::{TaskOptions, TaskSettings, TaskSupport};
#[cfg(feature = "http")]
pub use transport::http::HttpOptions;
pub use wire::error::{Error, ErrorCode};
pub use wire::jsonrpc::RequestId;
pub use wire::protocol;
pub use wire::protocol::{CacheHint, CacheScope};

pub use mcp_macros::{event, main, method, prompt, resource, tool};

/// The schemars version argument and result schemas come from. A program without schemars of its own derives
/// `JsonSchema` through it:
///
/// ```
/// #[derive(mcp::serde::Deserialize, mcp::schemars::JsonSchema)]
/// #[serde(crate = "mcp::serde")]
/// #[schemars(crate = "mcp::schemars")]
/// struct Filter {
///     tag: String,
/// }
///
/// #[mcp::tool]
/// fn search(filter: Filter) -> String {
///     filter.tag
/// }
/// # fn main() {}
/// ```
pub use schemars;

/// The serde version arguments are read and results written with. A program without serde of its own derives
/// through it, with `#[serde(crate = "mcp::serde")]` (see [`schemars`](mod@schemars)).
pub use serde;

/// The axum version `Server::http_router` builds on: mount the router in your own app, add layers (authentication
/// that puts an [`AuthInfo`] in the request's extensions, CORS, tracing) with the same axum.
#[cfg(feature = "http")]
pub use axum;
/// The `tower` this crate's middleware is built on (`ServerBuilder::layer`), so layers need no direct dependency.
pub use tower;

/// The README's code, compiled as a doctest (the guide's chapters are compiled as the docs of [`guide`]'s modules).
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
pub struct ReadmeDoctests;

pub mod guide {
    #![doc = include_str!("../docs/README.md")]

    #[doc = include_str!("../docs/tools.md")]
    pub mod tools {}

    #[doc = include_str!("../docs/cancellation.md")]
    pub mod cancellation {}

    #[doc = include_str!("../docs/state.md")]
    pub mod state {}

    #[doc = include_str!("../docs/questions.md")]
    pub mod questions {}

    #[doc = include_str!("../docs/eras.md")]
    pub mod eras {}

    #[doc = include_str!("../docs/http.md")]
    pub mod http {}

    #[doc = include_str!("../docs/tasks.md")]
    pub mod tasks {}

    #[doc = include_str!("../docs/middleware.md")]
    pub mod middleware {}

    #[doc = include_str!("../docs/extensions.md")]
    pub mod extensions {}

    #[doc = include_str!("../docs/events.md")]
    pub mod events {}

    #[doc = include_str!("../docs/composing.md")]
    pub mod composing {}

    #[doc = include_str!("../docs/client.md")]
    pub mod client {}

    #[doc = include_str!("../docs/auth.md")]
    pub mod auth {}

    #[doc = include_str!("../docs/testing.md")]
    pub mod testing {}

    #[doc = include_str!("../docs/limits.md")]
    pub mod limits {}

    #[doc = include_str!("../docs/deploying.md")]
    pub mod deploying {}

    #[doc = include_str!("../docs/observing.md")]
    pub mod observing {}
}

/// Thin wrappers around crate-private parsers, for the fuzz targets in `fuzz/` (the `fuzzing` feature). Not a
/// public API: it changes without notice.
#[cfg(feature = "fuzzing")]
#[doc(hidden)]
pub mod __fuzz {
    use serde_json::Value;

    use crate::{Error, RequestId};

    /// An incoming message as the JSON-RPC layer classifies it.
    #[derive(Debug)]
    pub enum Incoming {
        /// A request.
        Request {
            /// Its id.
            id: RequestId,
            /// Its method.
            method: String,
            /// Its params, as sent.
            params: Option<Value>,
        },
        /// A notification.
        Notification {
            /// Its method.
            method: String,
            /// Its params, as sent.
            params: Option<Value>,
        },
        /// A response to a request of the server's.
        Response {
            /// The id it answers.
            id: RequestId,
            /// Its `result`, or its `error`.
            outcome: Result<Value, Value>,
        },
    }

    /// Parses and classifies one frame; on failure, the id if one was legible and the error to answer.
    pub fn parse_message(bytes: &[u8]) -> Result<Incoming, (Option<RequestId>, Error)> {
        use crate::wire::jsonrpc::Incoming as Parsed;
        // As it was sent: the 2026 envelope the parse splits off is put back.
        match Parsed::parse(bytes).map(Parsed::restore_envelope) {
            Ok(Parsed::Request { id, method, params, .. }) => Ok(Incoming::Request { id, method, params }),
            Ok(Parsed::Notification { method, params, .. }) => Ok(Incoming::Notification { method, params }),
            Ok(Parsed::Response { id, outcome }) => Ok(Incoming::Response { id, outcome }),
            Err(rejected) => Err((rejected.id, rejected.error)),
        }
    }

    /// An HTTP header value of the 2026 era, with the `=?base64?…?=` form decoded.
    #[cfg(feature = "http")]
    pub fn decode_header_value(raw: &str) -> Result<String, String> {
        crate::transport::http::decode_header_value(raw).map(std::borrow::Cow::into_owned)
    }

    /// Checks a 2026 request's HTTP headers against its body.
    #[cfg(feature = "http")]
    pub fn check_http_headers(
        headers: &http::HeaderMap,
        method: &str,
        params: Option<&Value>,
        server: &crate::Server,
    ) -> Result<(), Error> {
        let mut params = params.cloned();
        let envelope = crate::wire::jsonrpc::split_params(&mut params);
        crate::transport::http::check_http_headers(headers, method, (params.as_ref(), envelope.as_ref(), None), server)
    }

    /// The lists whose pages cursors name.
    #[derive(Clone, Copy, Debug, PartialEq, Eq)]
    pub enum ListKind {
        /// `tools/list`.
        Tools,
        /// `prompts/list`.
        Prompts,
        /// `resources/list`.
        Resources,
        /// `resources/templates/list`.
        Templates,
    }

    impl ListKind {
        /// Every list.
        pub const ALL: [ListKind; 4] = [ListKind::Tools, ListKind::Prompts, ListKind::Resources, ListKind::Templates];

        fn inner(self) -> crate::server::registry::ListKind {
            use crate::server::registry::ListKind as Kind;
            match self {
                ListKind::Tools => Kind::Tools,
                ListKind::Prompts => Kind::Prompts,
                ListKind::Resources => Kind::Resources,
                ListKind::Templates => Kind::Templates,
            }
        }
    }

    /// The cursor of page (or offset) `index` of a list.
    pub fn encode_cursor(kind: ListKind, index: usize) -> String {
        crate::server::registry::encode_cursor(kind.inner(), index)
    }

    /// The page (or offset) a cursor of a list names.
    pub fn decode_cursor(kind: ListKind, cursor: &str) -> Result<usize, Error> {
        crate::server::registry::decode_cursor(kind.inner(), cursor)
    }

    /// Seals and opens `requestState`s with one key.
    pub struct Sealer(crate::base::seal::Sealer);

    impl Sealer {
        /// A sealer with this key.
        pub fn new(key: [u8; 32]) -> Sealer {
            Sealer(crate::base::seal::Sealer::new(key, false))
        }

        /// Seals `plaintext`.
        pub fn seal(&self, plaintext: &[u8]) -> String {
            self.0.seal(plaintext)
        }

        /// Opens a sealed string; `None` if it was not sealed with this key or was changed.
        pub fn open(&self, sealed: &str) -> Option<Vec<u8>> {
            self.0.open(sealed)
        }
    }

    /// What the client's stdio line splitter handed out.
    #[cfg(feature = "client")]
    #[derive(Debug, PartialEq, Eq)]
    pub enum ClientLine {
        /// A complete line, without its newline.
        Line(Vec<u8>),
        /// The first bytes of a line over the limit, which is skipped.
        TooLong(Vec<u8>),
    }

    /// Feeds `chunks` to the client's stdio line splitter with `limit`: what it handed out, and the most bytes it
    /// held at any time between chunks.
    #[cfg(feature = "client")]
    pub fn client_lines(limit: usize, chunks: &[&[u8]]) -> (Vec<ClientLine>, usize) {
        use crate::client::frame::{Lines, Piece};
        let mut lines = Lines::new(limit);
        let mut out = Vec::new();
        let mut held = 0;
        for chunk in chunks {
            lines.feed(chunk, &mut |piece| {
                out.push(match piece {
                    Piece::Line(l) => ClientLine::Line(l.to_vec()),
                    Piece::TooLong(h) => ClientLine::TooLong(h.to_vec()),
                })
            });
            held = held.max(lines.held());
        }
        (out, held)
    }

    /// One item of the client's SSE parser.
    #[cfg(feature = "client")]
    #[derive(Debug, PartialEq, Eq)]
    pub enum ClientSse {
        /// An event: its id, retry (ms) and data.
        Event {
            /// `id:`
            id: Option<String>,
            /// `retry:`, in milliseconds.
            retry: Option<u128>,
            /// The `data:` lines joined with "\n".
            data: String,
        },
        /// The first bytes of an event over the limit, which is skipped.
        TooLarge(Vec<u8>),
    }

    /// Feeds `chunks` to the client's SSE parser with `limit`: what it handed out, and the most bytes it held at
    /// any time between chunks.
    #[cfg(feature = "client")]
    pub fn client_sse(limit: usize, chunks: &[&[u8]]) -> (Vec<ClientSse>, usize) {
        use crate::client::frame::{Sse, SseItem};
        let mut sse = Sse::new(limit);
        let mut out = Vec::new();
        let mut held = 0;
        for chunk in chunks {
            sse.feed(chunk, &mut |item| {
                out.push(match item {
                    SseItem::Event(e) => {
                        ClientSse::Event { id: e.id, retry: e.retry.map(|r| r.as_millis()), data: e.data }
                    }
                    SseItem::TooLarge(head) => ClientSse::TooLarge(head),
                })
            });
            held = held.max(sse.held());
        }
        (out, held)
    }

    /// The request id the client reads off the first bytes of an over-long answer, if any.
    #[cfg(feature = "client")]
    pub fn client_answered_id(head: &[u8]) -> Option<RequestId> {
        crate::client::stdio::answered_id(head)
    }
}

/// What generated code touches. Not a public API: it changes without notice.
#[doc(hidden)]
pub mod __private {
    pub use crate::entry::{run_main, MainOptions};
    pub use crate::events::EventRegistration;
    pub use crate::handler::args::{ArgProbe, ArgSchema, ArgValue, InjectedProbe, Probe, TakenByValue};
    pub use crate::handler::tool::{Arguments, HandlerResult};
    pub use crate::server::{MethodRegistration, PromptRegistration, ResourceRegistration, ToolRegistration};
    #[cfg(feature = "http")]
    pub use axum;
    pub use http;
    pub use inventory;
    pub use schemars;
    pub use serde;
    pub use serde_json;

    use crate::handler::{IntoMethodResult, IntoToolResult};
    use crate::CallToolResult;

    /// A tool's argument could not be read: an `isError` result, so the model can correct itself.
    pub fn invalid_tool_argument(message: String) -> HandlerResult {
        Ok(CallToolResult::error(message))
    }

    /// An event's arguments, for `#[mcp::event]`'s reader: an object (absent or `null`: none).
    pub fn event_arguments(arguments: &serde_json::Value) -> Result<Arguments, String> {
        match arguments {
            serde_json::Value::Object(map) => Ok(Arguments::from(map.clone())),
            serde_json::Value::Null => Ok(Arguments::default()),
            _ => Err("the arguments must be an object".to_owned()),
        }
    }

    /// Arguments `#[mcp::event]`'s function does not take are refused, naming them.
    pub fn no_other_arguments(arguments: &Arguments) -> Result<(), String> {
        let left: Vec<&String> = arguments.as_map().keys().collect();
        match left.as_slice() {
            [] => Ok(()),
            names => Err(format!("unknown argument(s) {names:?}: the event type does not take them")),
        }
    }

    /// A custom method's parameter could not be read: -32602.
    pub fn invalid_method_argument(message: String) -> Result<serde_json::Value, crate::Error> {
        Err(crate::Error::invalid_params(message))
    }

    /// A completion function, as a function pointer (a function of another shape is an error at its name).
    pub const fn completer(f: crate::handler::Completer) -> crate::handler::Completer {
        f
    }

    /// A resource lister, as a function pointer (a function of another shape is an error at its name).
    pub const fn lister(f: crate::handler::Lister) -> crate::handler::Lister {
        f
    }

    /// Converts a prompt's return value.
    #[inline]
    pub fn prompt_result<T: crate::handler::IntoPromptResult>(
        value: T,
    ) -> Result<crate::GetPromptResult, crate::Error> {
        value.into_prompt_result()
    }

    /// Converts a resource's return value, for the URI being read.
    #[inline]
    pub fn resource_result<T: crate::handler::IntoResourceResult>(
        value: T,
        ctx: &crate::Context,
        mime_type: Option<&str>,
    ) -> Result<crate::ReadResourceResult, crate::Error> {
        let uri = ctx.meta().resource_uri.as_deref().unwrap_or_default();
        value.into_resource_result(uri, mime_type).map_err(|e| crate::handler::resource::for_era(e, ctx.meta().era))
    }

    /// A prompt argument or a template variable could not be read: -32602 naming it.
    pub fn invalid_prompt_argument(message: String) -> Result<crate::GetPromptResult, crate::Error> {
        Err(crate::Error::invalid_params(message))
    }

    /// A template variable could not be read: -32602 naming it.
    pub fn invalid_resource_argument(message: String) -> Result<crate::ReadResourceResult, crate::Error> {
        Err(crate::Error::invalid_params(message))
    }

    /// The glue for a string argument (of a prompt, or a template variable) of type `T`.
    pub const fn string_arg<T: ArgValue>() -> StringArgGlue<T> {
        StringArgGlue { read: crate::handler::prompt::string_argument::<T>, required: required::<T> }
    }

    /// The glue for a string argument.
    pub struct StringArgGlue<T> {
        /// Reads it.
        pub read: fn(&mut Arguments, &str) -> Result<T, String>,
        /// Whether it must be given.
        pub required: fn() -> bool,
    }

    fn required<T: serde::de::DeserializeOwned>() -> bool {
        serde_json::from_value::<T>(serde_json::Value::Null).is_err()
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
        pub describe: fn(&mut crate::handler::ObjectSchema, &str, Option<&str>),
    }

    /// The glue for an argument of type `T`.
    pub const fn arg<T: ArgSchema + ArgValue>() -> ArgGlue<T> {
        ArgGlue { read: crate::handler::tool::argument::<T>, describe: crate::handler::ObjectSchema::property::<T> }
    }

    /// The glue for a `#[mcp(flatten)]` parameter: a struct read from the whole argument object.
    pub struct FlattenGlue<T> {
        /// Reads it from the arguments, leaving out the named parameters' own.
        pub read: fn(&Arguments, &[&str]) -> Result<T, String>,
        /// Adds its fields to the input schema; the parameter's name is for errors.
        pub describe: fn(&mut crate::handler::ObjectSchema, &str),
    }

    /// The glue for a flattened parameter of type `T`.
    pub const fn flattened<T: ArgSchema + ArgValue>() -> FlattenGlue<T> {
        FlattenGlue {
            read: crate::handler::tool::flattened_arguments::<T>,
            describe: crate::handler::ObjectSchema::flatten::<T>,
        }
    }

    /// Marks an argument of type `T` as mirrored in an HTTP header; `T` must be a string, integer or boolean.
    pub const fn header_arg<T: crate::handler::tool::HeaderParam>() -> fn(&mut crate::handler::ObjectSchema, &str, &str)
    {
        crate::handler::ObjectSchema::mirror_in_header
    }

    /// Asserts that a handler's future can move between threads, with a message that says why it must.
    #[inline]
    pub fn assert_send<F: std::future::Future + Send>(future: F) -> F {
        future
    }
}
