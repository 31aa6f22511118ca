//! Tools: the static definition a `#[mcp::tool]` emits, the conversion of return values into results, and the
//! helpers its generated glue calls to read arguments and build schemas.

use std::borrow::Cow;
use std::fmt::Display;

use schemars::generate::SchemaSettings;
use schemars::{JsonSchema, SchemaGenerator};
use serde::de::DeserializeOwned;
use serde::Serialize;
use serde_json::{Map, Value};

use crate::context::Context;
use crate::wire::error::Error;
use crate::wire::protocol::{CallToolResult, Content, ToolAnnotations};

pub use crate::base::future::BoxFuture;

/// The arguments of one call: the `arguments` object of `tools/call`.
pub type Arguments = Map<String, Value>;

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
/// use mcp::{CallToolResult, Content, Context, Hints, ToolDef, ToolHandler};
/// use serde_json::{json, Map, Value};
///
/// fn input() -> Value {
///     json!({ "type": "object", "properties": { "text": { "type": "string" } }, "required": ["text"] })
/// }
///
/// fn shout(_: &Context, args: Map<String, Value>) -> Result<CallToolResult, mcp::Error> {
///     let text = args.get("text").and_then(Value::as_str).unwrap_or_default();
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
#[derive(Clone, Copy)]
#[non_exhaustive]
pub struct ToolDef {
    /// The tool's name on the wire.
    pub name: &'static str,
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
    pub location: &'static str,
    /// The OAuth scopes a caller's access token must grant to use it, when the server verifies tokens
    /// ([`Authorization`](crate::auth::Authorization)); none beyond a valid token unless set.
    pub scopes: &'static [&'static str],
    /// What its injected parameters need from the server (state types); checked when the server is built.
    pub injected: Injected,
    /// Icon URIs.
    pub icons: &'static [&'static str],
    /// Whether (and how) it runs as a task.
    pub task: crate::wire::task::TaskOptions,
    /// Whether the handler may ask the client something mid-call (elicitation, sampling, roots) through its
    /// [`Context`](crate::Context). True unless declared otherwise with [`ToolDef::cannot_ask`]; `#[mcp::tool]`
    /// declares it for a function that takes no injected parameter. A 2026-07-28 call to a tool that cannot ask
    /// keeps no copy of its arguments for the `requestState` an `input_required` result would be bound to.
    pub can_ask: bool,
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

    /// The same, with an input schema built from the parameters' types ([`ObjectSchema`]), what `#[mcp::tool]`
    /// emits: a schema the types cannot make is an error the server reports when it is built.
    pub const fn built(
        name: &'static str,
        input_schema: InputSchema,
        output_schema: fn() -> Option<Value>,
        handler: ToolHandler,
        location: &'static str,
    ) -> ToolDef {
        ToolDef {
            name,
            title: None,
            description: None,
            hints: Hints::NONE,
            input_schema,
            output_schema,
            handler,
            location,
            scopes: &[],
            injected: &[],
            icons: &[],
            task: crate::wire::task::TaskOptions::NONE,
            can_ask: true,
        }
    }

    /// The OAuth scopes a caller's access token must grant to use it (`scopes = [...]` on its attribute), when the
    /// server verifies tokens; a request without them is answered `403 insufficient_scope`.
    pub const fn scopes(mut self, scopes: &'static [&'static str]) -> ToolDef {
        self.scopes = scopes;
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
/// use mcp::Hints;
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

/// The values a tool function may return.
///
/// Text-like values become one text content block; [`Json<T>`] becomes structured content with an output schema
/// (and a text copy); `Content`, `Vec<Content>` and [`CallToolResult`] are sent as they are; `Result<T, E>` with
/// `E: Display` turns `Err` into an `isError: true` result whose text is the error's message.
///
/// A type of your own can be returned once it says how it is sent:
///
/// ```
/// use mcp::{CallToolResult, Content, IntoToolResult};
///
/// /// A receipt, sent as two text blocks.
/// struct Receipt {
///     order: u64,
///     total_cents: u64,
/// }
///
/// impl IntoToolResult for Receipt {
///     fn into_tool_result(self) -> CallToolResult {
///         CallToolResult::success(vec![
///             Content::text(format!("order {}", self.order)),
///             Content::text(format!("total {:.2}", self.total_cents as f64 / 100.0)),
///         ])
///     }
/// }
///
/// /// Place an order.
/// #[mcp::tool]
/// fn order(title: String) -> Result<Receipt, String> {
///     if title.is_empty() {
///         return Err("no title given".into()); // an `isError: true` result with this text
///     }
///     Ok(Receipt { order: 7, total_cents: 1250 })
/// }
///
/// let result = Receipt { order: 7, total_cents: 1250 }.into_tool_result();
/// assert_eq!(result.content[1], Content::text("total 12.50"));
/// let failed = Err::<Receipt, _>("no title given").into_tool_result();
/// assert_eq!(failed.is_error, Some(true));
/// # let _ = mcp::Server::builder().tool::<order>().build().unwrap();
/// ```
#[diagnostic::on_unimplemented(
    message = "`{Self}` cannot be returned from an MCP tool",
    label = "this return type does not convert into a tool result",
    note = "return a `String`, `&str`, `mcp::Json<T>`, `mcp::Content`, `Vec<mcp::Content>`, `mcp::CallToolResult`, `()`, or a `Result<T, E>` of one of them with `E: Display`"
)]
pub trait IntoToolResult {
    /// Converts the value into a result.
    fn into_tool_result(self) -> CallToolResult;

    /// The output schema of this return type, if it is structured. Called once per server.
    fn output_schema() -> Option<Value> {
        None
    }
}

impl IntoToolResult for String {
    fn into_tool_result(self) -> CallToolResult {
        CallToolResult::success(vec![Content::text(self)])
    }
}

impl IntoToolResult for &str {
    fn into_tool_result(self) -> CallToolResult {
        CallToolResult::success(vec![Content::text(self)])
    }
}

impl IntoToolResult for Cow<'_, str> {
    fn into_tool_result(self) -> CallToolResult {
        CallToolResult::success(vec![Content::text(self)])
    }
}

impl IntoToolResult for () {
    fn into_tool_result(self) -> CallToolResult {
        CallToolResult::success(Vec::new())
    }
}

impl IntoToolResult for Content {
    fn into_tool_result(self) -> CallToolResult {
        CallToolResult::success(vec![self])
    }
}

impl IntoToolResult for Vec<Content> {
    fn into_tool_result(self) -> CallToolResult {
        CallToolResult::success(self)
    }
}

impl IntoToolResult for CallToolResult {
    fn into_tool_result(self) -> CallToolResult {
        self
    }
}

impl<T: IntoToolResult, E: Display> IntoToolResult for Result<T, E> {
    fn into_tool_result(self) -> CallToolResult {
        match self {
            Ok(v) => v.into_tool_result(),
            Err(e) => CallToolResult::error(e.to_string()),
        }
    }

    fn output_schema() -> Option<Value> {
        T::output_schema()
    }
}

/// A structured tool result: serialized into `structuredContent` (and a text copy in `content`), with `T`'s JSON
/// Schema as the tool's `outputSchema`.
///
/// MCP requires structured content to be a JSON object. A `T` that serializes to something else (a number, a list)
/// is sent as `{"result": …}`, and its output schema says so.
///
/// ```
/// use mcp::{IntoToolResult, Json};
/// use serde_json::json;
///
/// #[derive(serde::Serialize, schemars::JsonSchema)]
/// struct Weather { celsius: f64 }
///
/// /// Current weather.
/// #[mcp::tool]
/// fn weather(city: String) -> Json<Weather> {
///     # let _ = city;
///     Json(Weather { celsius: 21.5 })
/// }
///
/// let server = mcp::Server::builder().tool::<weather>().build().unwrap();
/// let tool = &server.tools_list()["tools"][0];
/// assert_eq!(tool["outputSchema"]["properties"]["celsius"]["type"], "number");
///
/// let result = Json(Weather { celsius: 21.5 }).into_tool_result();
/// assert_eq!(result.structured_content, Some(json!({ "celsius": 21.5 })));
/// let result = Json(vec![1, 2]).into_tool_result(); // not an object: wrapped
/// assert_eq!(result.structured_content, Some(json!({ "result": [1, 2] })));
/// ```
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Json<T>(pub T);

impl<T: Serialize + JsonSchema> IntoToolResult for Json<T> {
    fn into_tool_result(self) -> CallToolResult {
        match serde_json::to_value(&self.0) {
            Ok(value) => {
                let text = value.to_string();
                // MCP's structured content is an object: anything else is wrapped as `{"result": …}`, as the
                // output schema says (see `output_schema`).
                let structured = if value.is_object() { value } else { serde_json::json!({ "result": value }) };
                CallToolResult::success(vec![Content::text(text)]).with_structured(structured)
            }
            Err(e) => CallToolResult::error(format!("could not serialize the tool's result: {e}")),
        }
    }

    fn output_schema() -> Option<Value> {
        let mut generator = schema_settings().for_serialize().into_generator();
        let mut schema = generator.root_schema_for::<T>().to_value();
        let Value::Object(root) = &mut schema else { return None };
        root.remove("title");
        match root.get("type") {
            Some(Value::String(t)) if t == "object" => {}
            // A value that may or may not be an object (`serde_json::Value`, an untagged enum): objects are sent as
            // they are, anything else wrapped as `{"result": …}`; both are objects.
            None => {
                root.insert("type".into(), "object".into());
            }
            // Never an object: always wrapped, and so is the schema.
            Some(_) => {
                let defs = root.remove("$defs");
                let dialect = root.remove("$schema");
                let inner = std::mem::take(root);
                root.insert("type".into(), "object".into());
                root.insert("properties".into(), serde_json::json!({ "result": inner }));
                root.insert("required".into(), serde_json::json!(["result"]));
                if let Some(d) = dialect {
                    root.insert("$schema".into(), d);
                }
                if let Some(d) = defs {
                    root.insert("$defs".into(), d);
                }
            }
        }
        Some(schema)
    }
}

fn schema_settings() -> SchemaSettings {
    SchemaSettings::draft2020_12()
}

/// Where a tool's input schema comes from. Called once per server, when the tool is added.
#[derive(Clone, Copy)]
pub enum InputSchema {
    /// A schema written by hand.
    Given(fn() -> Value),
    /// A schema built from types ([`ObjectSchema::finish`]), or why they make none.
    Built(fn() -> Result<Value, SchemaError>),
}

impl InputSchema {
    /// The schema, or why there is none.
    pub fn build(self) -> Result<Value, SchemaError> {
        match self {
            InputSchema::Given(f) => Ok(f()),
            InputSchema::Built(f) => f(),
        }
    }
}

/// Why the types of a tool's parameters make no input schema: a flattened type without named fields, an argument
/// given twice. Building the server reports it as [`BuildError::BadInputSchema`](crate::BuildError::BadInputSchema).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SchemaError {
    problems: Vec<String>,
}

impl std::fmt::Display for SchemaError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.problems.join("; "))
    }
}

impl std::error::Error for SchemaError {}

/// Builds the input schema of a tool one parameter at a time; the generated glue calls it once per server.
///
/// A hand-written [`ToolDef`] can use it too, in its input schema's function ([`ToolDef::built`] with
/// [`InputSchema::Built`]):
///
/// ```
/// fn input_schema() -> Result<serde_json::Value, mcp::SchemaError> {
///     let mut schema = mcp::ObjectSchema::new();
///     schema.property::<String>("city", Some("Where."));
///     schema.property::<Option<u32>>("days", None); // accepts null: optional
///     schema.finish()
/// }
///
/// let schema = input_schema().unwrap();
/// assert_eq!(schema["properties"]["city"]["description"], "Where.");
/// assert_eq!(schema["required"], serde_json::json!(["city"]));
/// ```
pub struct ObjectSchema {
    generator: SchemaGenerator,
    properties: Map<String, Value>,
    required: Vec<Value>,
    /// Where each property came from, for the error when two give the same one: `None` for a parameter of its own,
    /// the flattened parameter's name otherwise.
    origins: std::collections::BTreeMap<String, Option<String>>,
    /// What makes this schema unusable (a flattened type without named fields, a property given twice).
    problems: Vec<String>,
}

impl Default for ObjectSchema {
    fn default() -> Self {
        ObjectSchema::new()
    }
}

impl ObjectSchema {
    /// An object schema with no properties.
    pub fn new() -> ObjectSchema {
        ObjectSchema {
            generator: schema_settings().for_deserialize().into_generator(),
            properties: Map::new(),
            required: Vec::new(),
            origins: Default::default(),
            problems: Vec::new(),
        }
    }

    /// Records that `origin` (a parameter, or a flattened parameter's field) gives the property `name`; false, with
    /// a problem noted, when another already does.
    fn claim(&mut self, name: &str, origin: Option<&str>) -> bool {
        let describe = |origin: Option<&str>| match origin {
            Some(param) => format!("a field of the flattened parameter `{param}`"),
            None => "a parameter of its own".to_owned(),
        };
        if let Some(first) = self.origins.get(name) {
            self.problems.push(format!(
                "the argument `{name}` is given twice, by {} and by {}: rename one (`#[serde(rename = \"...\")]` on a field)",
                describe(first.as_deref()),
                describe(origin)
            ));
            return false;
        }
        self.origins.insert(name.to_owned(), origin.map(str::to_owned));
        true
    }

    /// Adds the fields of the struct `T` as top-level properties (`#[mcp(flatten)] param: T`), with their
    /// descriptions and which of them are required. `T`'s schema must be an object with named properties: anything
    /// else (an enum, a map, a scalar) is a problem the server reports when it is built.
    pub fn flatten<T: JsonSchema + DeserializeOwned>(&mut self, param: &str) {
        let schema = T::json_schema(&mut self.generator).to_value();
        let properties = match (schema.get("type").and_then(Value::as_str), schema.get("properties")) {
            (Some("object"), Some(Value::Object(properties))) => properties,
            _ => {
                self.problems.push(format!(
                    "the flattened parameter `{param}` has type `{}`, whose schema is not an object with named fields (a struct with named fields deriving `Deserialize` and `JsonSchema` is): {schema}",
                    std::any::type_name::<T>()
                ));
                return;
            }
        };
        let required: Vec<&str> =
            schema.get("required").and_then(Value::as_array).into_iter().flatten().filter_map(Value::as_str).collect();
        for (name, property) in properties {
            if !self.claim(name, Some(param)) {
                continue;
            }
            self.properties.insert(name.clone(), property.clone());
            if required.contains(&name.as_str()) {
                self.required.push(Value::String(name.clone()));
            }
        }
    }

    /// Adds a property of type `T`. It is required unless `T` accepts `null` (as `Option<U>` does), which is also
    /// what a missing argument is read as.
    pub fn property<T: JsonSchema + DeserializeOwned>(&mut self, name: &str, description: Option<&str>) {
        if !self.claim(name, None) {
            return;
        }
        let mut schema = self.generator.subschema_for::<T>().to_value();
        if let (Some(d), Value::Object(o)) = (description, &mut schema) {
            // Beside a `$ref` too: siblings of `$ref` are allowed in 2020-12.
            o.insert("description".into(), Value::String(d.to_owned()));
        }
        self.properties.insert(name.to_owned(), schema);
        if serde_json::from_value::<T>(Value::Null).is_err() {
            self.required.push(Value::String(name.to_owned()));
        }
    }

    /// Marks the property `name` as mirrored in the HTTP header `Mcp-Param-{header}` (`x-mcp-header`). An optional
    /// argument's `"type": ["integer", "null"]` becomes `"type": "integer"` (it stays optional by not being
    /// required): the protocol allows the annotation only on a string, integer or boolean property, and clients
    /// (the official Python SDK among them) drop a tool whose annotated property has a list of types.
    pub fn mirror_in_header(&mut self, name: &str, header: &str) {
        if let Some(Value::Object(property)) = self.properties.get_mut(name) {
            without_null(property);
            property.insert("x-mcp-header".into(), Value::String(header.to_owned()));
        }
    }

    /// The finished schema: `{"type":"object","properties":…,"required":…,"$defs":…}`; or, when the types make
    /// none (a flattened type without named fields, a property given twice), why.
    pub fn finish(mut self) -> Result<Value, SchemaError> {
        if !self.problems.is_empty() {
            return Err(SchemaError { problems: self.problems });
        }
        let mut o = Map::new();
        o.insert("type".into(), "object".into());
        o.insert("properties".into(), Value::Object(self.properties));
        if !self.required.is_empty() {
            o.insert("required".into(), Value::Array(self.required));
        }
        let defs = self.generator.take_definitions(true);
        if !defs.is_empty() {
            o.insert("$defs".into(), Value::Object(defs));
        }
        Ok(Value::Object(o))
    }
}

/// Takes `null` out of one schema: `"type": ["T", "null"]` becomes `"type": "T"`, an `anyOf` of one schema and
/// `{"type": "null"}` becomes that schema (its keywords beside the ones already there, such as a description), and
/// `null` leaves an `enum`.
pub(crate) fn without_null(o: &mut Map<String, Value>) {
    let is_null = |b: &Value| b.get("type").and_then(Value::as_str) == Some("null");
    if let Some(Value::Array(branches)) = o.get("anyOf") {
        if branches.iter().any(is_null) {
            let mut rest: Vec<Value> = branches.iter().filter(|b| !is_null(b)).cloned().collect();
            if rest.len() == 1 {
                o.remove("anyOf");
                if let Some(Value::Object(mut inner)) = rest.pop() {
                    without_null(&mut inner);
                    for (k, v) in inner {
                        o.entry(k).or_insert(v);
                    }
                }
            } else {
                o.insert("anyOf".into(), Value::Array(rest));
            }
        }
    }
    if let Some(Value::Array(types)) = o.get("type") {
        let mut rest: Vec<Value> = types.iter().filter(|t| *t != "null").cloned().collect();
        let single = if rest.len() == 1 { rest.pop() } else { None };
        o.insert("type".into(), single.unwrap_or(Value::Array(rest)));
    }
    if let Some(Value::Array(values)) = o.get_mut("enum") {
        values.retain(|v| !v.is_null());
    }
}

/// The portable form of an input schema (the default; see `ServerBuilder::nullable_options`): a property that is not
/// `required` does not also accept `null`, at the top and in every object schema inside (struct arguments, `$defs`).
/// Some clients and model providers reject `"type": [..., "null"]`; optional is said by `required` alone.
pub(crate) fn portable_options(schema: &mut Value) {
    let Value::Object(o) = schema else { return };
    let required: Vec<String> = o
        .get("required")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
        .map(str::to_owned)
        .collect();
    if let Some(Value::Object(properties)) = o.get_mut("properties") {
        for (name, property) in properties.iter_mut() {
            if !required.contains(name) {
                if let Value::Object(p) = property {
                    without_null(p);
                }
            }
            portable_options(property);
        }
    }
    // The other places a subschema sits.
    for key in ["$defs", "definitions", "patternProperties", "dependentSchemas"] {
        if let Some(Value::Object(map)) = o.get_mut(key) {
            map.values_mut().for_each(portable_options);
        }
    }
    for key in ["anyOf", "oneOf", "allOf", "prefixItems"] {
        if let Some(Value::Array(list)) = o.get_mut(key) {
            list.iter_mut().for_each(portable_options);
        }
    }
    for key in ["items", "additionalProperties", "not", "if", "then", "else", "contains", "unevaluatedProperties"] {
        if let Some(sub) = o.get_mut(key) {
            portable_options(sub);
        }
    }
}

/// Reads one argument; an `Err` is a sentence naming it, which the glue turns into the handler's kind of error.
pub(crate) fn argument<T: DeserializeOwned>(args: &mut Arguments, name: &str) -> Result<T, String> {
    match args.remove(name) {
        Some(value) => serde_json::from_value(value).map_err(|e| format!("invalid argument `{name}`: {e}")),
        None => serde_json::from_value(Value::Null).map_err(|_| format!("missing required argument `{name}`")),
    }
}

/// Reads a flattened struct from the whole argument object, borrowed. It sees its own fields only when serde names
/// them (a struct with named fields), so that one denying unknown fields reads beside other parameters and other
/// flattened structs; otherwise (a struct with a `#[serde(flatten)]` of its own) everything but the named
/// parameters. An `Err` names what is wrong.
pub(crate) fn flattened_arguments<T: DeserializeOwned>(args: &Arguments, named: &[&str]) -> Result<T, String> {
    let own = struct_fields::<T>();
    let fields = args
        .iter()
        .filter(|(k, _)| match own {
            Some(own) => own.contains(&k.as_str()),
            None => !named.contains(&k.as_str()),
        })
        .map(|(k, v)| (k.as_str(), v));
    let deserializer = serde::de::value::MapDeserializer::<_, serde_json::Error>::new(fields);
    T::deserialize(deserializer).map_err(|e| format!("invalid arguments: {e}"))
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
