//! Tools: the static definition a `#[mcp::tool]` emits, the conversion of return values into results, and the
//! helpers its generated glue calls to read arguments and build schemas.

use std::fmt::Display;

use serde::de::DeserializeOwned;
use serde_json::Value;

pub use super::result::{IntoToolResult, Json};
use super::schema::InputSchema;
pub(crate) use super::schema::{portable_options, without_null};

use crate::base::name::Name;
use crate::context::Context;
use crate::wire::error::Error;
use crate::wire::protocol::{CallToolResult, ToolAnnotations};

pub(crate) use crate::base::future::BoxFuture;

pub use super::arguments::Arguments;

/// What a tool's glue returns: a result to send, or a protocol error.
pub type HandlerResult = Result<CallToolResult, Error>;

/// How a handler runs; `R` is what it answers with (a [`CallToolResult`] for a tool, JSON for a custom method).
pub enum Handler<R> {
    /// An `async fn`: polled on the runtime, dropped when its request is cancelled.
    Async(for<'a> fn(&'a Context, Arguments) -> BoxFuture<'a, Result<R, Error>>),
    /// A plain `fn`: run under `spawn_blocking`; sees cancellation through `ctx.is_cancelled()`.
    Blocking(fn(&Context, Arguments) -> Result<R, Error>),
}

impl<R> Clone for Handler<R> {
    fn clone(&self) -> Self {
        *self
    }
}

impl<R> Copy for Handler<R> {}

/// How a tool runs.
pub type ToolHandler = Handler<CallToolResult>;

/// What a handler needs from the server, one function per injected parameter (called once, at build time).
pub type Injected = &'static [fn() -> Option<crate::context::state::Requirement>];

/// Everything known about a tool at compile time. `#[mcp::tool]` emits one as a `static`; it can also be written by
/// hand for tools defined at run time.
///
/// A hand-written tool gives its input schema, reads its own arguments, and answers with a [`CallToolResult`] (or
/// an [`Error`] for a JSON-RPC error):
///
/// ```
/// use mcp::{CallToolResult, Content, Context};
/// use mcp::handler::{Arguments, Hints, ToolDef, ToolHandler};
/// use serde_json::{json, Value};
///
/// fn input() -> Value {
///     json!({ "type": "object", "properties": { "text": { "type": "string" } }, "required": ["text"] })
/// }
///
/// fn shout(_: &Context, args: Arguments) -> Result<CallToolResult, mcp::Error> {
///     let text = args.as_map().get("text").and_then(Value::as_str).unwrap_or_default();
///     Ok(CallToolResult::success(vec![Content::text(text.to_uppercase())]))
/// }
///
/// let def = ToolDef::new("shout", input, || None, ToolHandler::Blocking(shout), concat!(file!(), ":", line!()))
///     .description("Repeat the text in capitals.")
///     .hints(Hints::NONE.read_only(true));
/// let server = mcp::Server::builder().tool_def(def).build().unwrap();
/// let tool = &server.tools_list()["tools"][0];
/// assert_eq!(tool["inputSchema"]["required"], json!(["text"]));
/// assert_eq!(tool["annotations"]["readOnlyHint"], true);
/// ```
///
/// [`Server::add_tool`](crate::Server::add_tool) takes one while the server runs.
#[derive(Clone)]
#[non_exhaustive]
pub struct ToolDef {
    /// The tool's name on the wire.
    pub name: Name,
    /// Display title.
    pub title: Option<&'static str>,
    /// What the tool does (from the doc comment, or the `description` option).
    pub description: Option<&'static str>,
    /// Behaviour hints: read-only, destructive, idempotent, open-world.
    pub hints: Hints,
    /// Builds the input schema; called once per server, never per call.
    pub input_schema: InputSchema,
    /// Builds the output schema, if the return type is structured; called once per server.
    pub output_schema: fn() -> Option<Value>,
    /// Runs the tool.
    pub handler: ToolHandler,
    /// Where it was defined (`file:line`), to name both places of a duplicate.
    pub location: Name,
    /// The OAuth scopes a caller's access token must grant to use it, when the server verifies tokens
    /// ([`Authorization`](crate::auth::Authorization)); none beyond a valid token unless set.
    pub scopes: &'static [&'static str],
    /// Labels (`tags = ["admin"]` on its attribute) that visibility rules read
    /// ([`ServerBuilder::exclude_tags`](crate::ServerBuilder::exclude_tags), [`ServerBuilder::visible`](crate::ServerBuilder::visible)).
    pub tags: &'static [&'static str],
    /// What its injected parameters need from the server (state types); checked when the server is built.
    pub injected: Injected,
    /// Icon URIs.
    pub icons: &'static [&'static str],
    /// Whether (and how) it runs as a task.
    pub task: crate::wire::task::TaskOptions,
    /// Whether the handler may ask the client something mid-call (elicitation, sampling, roots) through its
    /// [`Context`]. True unless declared otherwise with [`ToolDef::cannot_ask`]; `#[mcp::tool]`
    /// declares it for a function that takes no injected parameter. A 2026-07-28 call to a tool that cannot ask
    /// keeps no copy of its arguments for the `requestState` an `input_required` result would be bound to.
    pub can_ask: bool,
    /// Its `_meta`, as the text of a JSON object (`r#"{"ui": {"resourceUri": "ui://shop/holds"}}"#`), checked when
    /// the server is built; [`ServerBuilder::tool_meta`](crate::ServerBuilder::tool_meta) adds to it.
    pub meta: Option<&'static str>,
}

impl ToolDef {
    /// A definition with no title, description or hints. The name follows MCP's rule for tool names, 1 to 128
    /// characters of `A-Z a-z 0-9 _ - .`: the server refuses one that does not when the tool is added
    /// ([`BuildError::BadToolName`](crate::BuildError::BadToolName)).
    pub const fn new(
        name: &'static str,
        input_schema: fn() -> Value,
        output_schema: fn() -> Option<Value>,
        handler: ToolHandler,
        location: &'static str,
    ) -> ToolDef {
        ToolDef::built(name, InputSchema::Given(input_schema), output_schema, handler, location)
    }

    /// The same, with an input schema built from the parameters' types ([`ObjectSchema`](crate::handler::ObjectSchema)), what `#[mcp::tool]`
    /// emits: a schema the types cannot make is an error the server reports when it is built.
    pub const fn built(
        name: &'static str,
        input_schema: InputSchema,
        output_schema: fn() -> Option<Value>,
        handler: ToolHandler,
        location: &'static str,
    ) -> ToolDef {
        ToolDef {
            name: Name::new(name),
            title: None,
            description: None,
            hints: Hints::NONE,
            input_schema,
            output_schema,
            handler,
            location: Name::new(location),
            scopes: &[],
            tags: &[],
            injected: &[],
            icons: &[],
            task: crate::wire::task::TaskOptions::NONE,
            can_ask: true,
            meta: None,
        }
    }

    /// Sets its `_meta` (`tools/list` shows it): the text of a JSON object, for extensions that describe tools
    /// there (MCP Apps' `ui`). One that is not a JSON object is refused when the server is built
    /// ([`BuildError::BadMeta`](crate::BuildError::BadMeta)).
    pub const fn meta(mut self, json: &'static str) -> ToolDef {
        self.meta = Some(json);
        self
    }

    /// The OAuth scopes a caller's access token must grant to use it (`scopes = [...]` on its attribute), when the
    /// server verifies tokens; a request without them is answered `403 insufficient_scope`.
    pub const fn scopes(mut self, scopes: &'static [&'static str]) -> ToolDef {
        self.scopes = scopes;
        self
    }

    /// Labels that visibility rules read (`tags = [...]` on its attribute).
    pub const fn tags(mut self, tags: &'static [&'static str]) -> ToolDef {
        self.tags = tags;
        self
    }

    /// Declares that the handler never asks the client anything: no elicitation, sampling or roots request
    /// through its `Context`. If it asks anyway, in the 2026-07-28 era the call fails with an internal error that
    /// says so.
    pub const fn cannot_ask(mut self) -> ToolDef {
        self.can_ask = false;
        self
    }

    /// Lets it run as a task (`#[mcp::tool(task = "optional")]`).
    pub const fn task(mut self, task: crate::wire::task::TaskOptions) -> ToolDef {
        self.task = task;
        self
    }

    /// Sets the icons.
    pub const fn icons(mut self, icons: &'static [&'static str]) -> ToolDef {
        self.icons = icons;
        self
    }

    /// Declares what the injected parameters need (generated code passes one function per parameter).
    pub const fn injects(mut self, injected: Injected) -> ToolDef {
        self.injected = injected;
        self
    }

    /// Sets the title.
    pub const fn title(mut self, title: &'static str) -> ToolDef {
        self.title = Some(title);
        self
    }

    /// Sets the description.
    pub const fn description(mut self, description: &'static str) -> ToolDef {
        self.description = Some(description);
        self
    }

    /// Sets the behaviour hints.
    pub const fn hints(mut self, hints: Hints) -> ToolDef {
        self.hints = hints;
        self
    }
}

/// Behaviour hints of a tool, as `const` data.
///
/// `#[mcp::tool(read_only)]` and its companions write one; a hand-written [`ToolDef`] takes one in
/// [`ToolDef::hints`]. A hint left unset is not sent.
///
/// ```
/// use mcp::handler::Hints;
///
/// const HINTS: Hints = Hints::NONE.destructive(false).idempotent(true);
/// assert_eq!(HINTS.idempotent, Some(true));
/// assert_eq!(HINTS.read_only, None);
/// assert_eq!(Hints::default(), Hints::NONE);
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct Hints {
    /// `readOnlyHint`.
    pub read_only: Option<bool>,
    /// `destructiveHint`.
    pub destructive: Option<bool>,
    /// `idempotentHint`.
    pub idempotent: Option<bool>,
    /// `openWorldHint`.
    pub open_world: Option<bool>,
}

impl Hints {
    /// No hints.
    pub const NONE: Hints = Hints { read_only: None, destructive: None, idempotent: None, open_world: None };

    /// Sets `readOnlyHint`.
    pub const fn read_only(mut self, v: bool) -> Hints {
        self.read_only = Some(v);
        self
    }
    /// Sets `destructiveHint`.
    pub const fn destructive(mut self, v: bool) -> Hints {
        self.destructive = Some(v);
        self
    }
    /// Sets `idempotentHint`.
    pub const fn idempotent(mut self, v: bool) -> Hints {
        self.idempotent = Some(v);
        self
    }
    /// Sets `openWorldHint`.
    pub const fn open_world(mut self, v: bool) -> Hints {
        self.open_world = Some(v);
        self
    }

    pub(crate) fn to_annotations(self) -> Option<ToolAnnotations> {
        let a = ToolAnnotations {
            title: None,
            read_only_hint: self.read_only,
            destructive_hint: self.destructive,
            idempotent_hint: self.idempotent,
            open_world_hint: self.open_world,
        };
        (!a.is_empty()).then_some(a)
    }
}

/// A tool defined by `#[mcp::tool]`: the hidden item of the same name implements this, so a test can write
/// `Server::builder().tool::<my_tool>()`.
pub trait ToolItem {
    /// The tool's definition.
    const DEF: &'static ToolDef;
}

/// Reads one argument; an `Err` is a sentence naming it, which the glue turns into the handler's kind of error.
pub(crate) fn argument<T: DeserializeOwned>(args: &mut Arguments, name: &str) -> Result<T, String> {
    match args.take(name) {
        Some(read) => read.map_err(|e| format!("invalid argument `{name}`: {e}")),
        None => serde_json::from_value(Value::Null).map_err(|_| format!("missing required argument `{name}`")),
    }
}

/// Reads a flattened struct from the whole argument object, borrowed. It sees its own fields only when serde names
/// them (a struct with named fields), so that one denying unknown fields reads beside other parameters and other
/// flattened structs; otherwise (a struct with a `#[serde(flatten)]` of its own) everything but the named
/// parameters. An `Err` names what is wrong.
pub(crate) fn flattened_arguments<T: DeserializeOwned>(args: &Arguments, named: &[&str]) -> Result<T, String> {
    let own = struct_fields::<T>();
    let keep = |k: &str| match own {
        Some(own) => own.contains(&k),
        None => !named.contains(&k),
    };
    args.read_members::<T>(keep).map_err(|e| format!("invalid arguments: {e}"))
}

/// The field names (aliases included) that `T`'s `Deserialize` reads, when it is a struct with named fields: serde
/// passes them to `deserialize_struct`, which this deserializer records before it stops. No allocation.
fn struct_fields<T: DeserializeOwned>() -> Option<&'static [&'static str]> {
    use serde::de::{Deserializer, Visitor};

    #[derive(Debug)]
    struct Stop;
    impl Display for Stop {
        fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
            f.write_str("probe")
        }
    }
    impl std::error::Error for Stop {}
    impl serde::de::Error for Stop {
        fn custom<M: Display>(_: M) -> Self {
            Stop
        }
    }

    struct Probe<'a>(&'a std::cell::Cell<Option<&'static [&'static str]>>);
    impl<'de> Deserializer<'de> for Probe<'_> {
        type Error = Stop;
        fn deserialize_any<V: Visitor<'de>>(self, _: V) -> Result<V::Value, Stop> {
            Err(Stop)
        }
        fn deserialize_struct<V: Visitor<'de>>(
            self,
            _: &'static str,
            fields: &'static [&'static str],
            _: V,
        ) -> Result<V::Value, Stop> {
            self.0.set(Some(fields));
            Err(Stop)
        }
        serde::forward_to_deserialize_any! {
            bool i8 i16 i32 i64 i128 u8 u16 u32 u64 u128 f32 f64 char str string bytes byte_buf option unit
            unit_struct newtype_struct seq tuple tuple_struct map enum identifier ignored_any
        }
    }

    let fields = std::cell::Cell::new(None);
    let _ = T::deserialize(Probe(&fields));
    fields.get()
}

/// MCP's rule for tool names (2025-11-25, "Tool names"), as [`BuildError::BadToolName`](crate::BuildError) states it.
pub(crate) const TOOL_NAME_RULE: &str = "1 to 128 characters of `A-Z a-z 0-9 _ - .`";

/// Checks a tool's name against [`TOOL_NAME_RULE`], which the server holds every tool it is given to (hand-written
/// definitions too; `#[mcp::tool]` checks the same at compile time). The error says what breaks it.
pub(crate) fn check_tool_name(name: &str) -> Result<(), String> {
    if name.is_empty() {
        return Err("it is empty".into());
    }
    if let Some(c) = name.chars().find(|c| !(c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.'))) {
        return Err(format!("it has {c:?}"));
    }
    if name.len() > 128 {
        return Err(format!("it is {} characters long", name.len()));
    }
    Ok(())
}

/// Checks a header name for `x-mcp-header`: not empty, HTTP token characters only (RFC 9110 `tchar`).
pub(crate) fn check_header_name(name: &str) -> Result<(), String> {
    let tchar = |c: char| c.is_ascii_alphanumeric() || "!#$%&'*+-.^_`|~".contains(c);
    if name.is_empty() {
        return Err("an `x-mcp-header` name must not be empty".into());
    }
    if let Some(bad) = name.chars().find(|c| !tchar(*c)) {
        return Err(format!("the header name {name:?} holds {bad:?}, which is not an HTTP token character"));
    }
    Ok(())
}

/// Types a tool argument mirrored in an HTTP header (`#[mcp(header = "...")]`) can have: the 2026-07-28 protocol
/// mirrors strings, integers and booleans only.
#[diagnostic::on_unimplemented(
    message = "`{Self}` cannot be mirrored in an HTTP header",
    label = "`#[mcp(header = ...)]` needs a string, integer or boolean argument",
    note = "the 2026-07-28 protocol mirrors `string`, `integer` and `boolean` parameters in `Mcp-Param-*` headers only (not numbers with fractions, arrays or objects)"
)]
pub trait HeaderParam {}

impl HeaderParam for String {}
impl HeaderParam for bool {}
impl HeaderParam for i8 {}
impl HeaderParam for i16 {}
impl HeaderParam for i32 {}
impl HeaderParam for i64 {}
impl HeaderParam for isize {}
impl HeaderParam for u8 {}
impl HeaderParam for u16 {}
impl HeaderParam for u32 {}
impl HeaderParam for u64 {}
impl HeaderParam for usize {}
impl<T: HeaderParam> HeaderParam for Option<T> {}
