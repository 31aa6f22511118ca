//! Procedural macros of the `mcp` framework. Use them through the runtime crate: `#[mcp::tool]`, `#[mcp::main]`.
//!
//! This crate only parses, validates and emits glue; every piece of protocol logic lives in the runtime, under
//! `mcp::__private`.

#![doc(test(attr(deny(warnings))))]

mod attr;
mod diagnostics;
mod docs;
mod entry;
mod event;
mod function;
mod handler;
mod item_fn;
mod method;
mod params;
mod paths;
mod prompt;
mod resource;
mod tool;
mod which;

use proc_macro::TokenStream;

/// Turns a function into an MCP tool.
///
/// Works on `async fn` and on plain `fn`. The function stays as written and callable; beside it the macro emits a
/// hidden item of the same name (so `Server::builder().tool::<my_tool>()` names it) and registers the tool, so
/// `#[mcp::main]` and `Server::from_registry()` find it.
///
/// - **Arguments**: each owned parameter is a property of the input JSON Schema, named as the parameter, of any
///   type that is `serde::Deserialize + schemars::JsonSchema`. It is required unless the type accepts `null`
///   (`Option<T>`). A doc comment on the parameter is its description.
/// - **Injected parameters**: a reference parameter, such as `ctx: &mcp::Context`, is not an argument; it is handed
///   in by the runtime (see `mcp::handler::FromContext`).
/// - **Description**: the function's doc comment, unless `description = "..."` is given.
/// - **Return value**: anything that implements `mcp::handler::IntoToolResult`: `String`, `&str`, `()`, `mcp::Json<T>`
///   (structured content and an output schema), `mcp::Content`, `Vec<mcp::Content>`, `mcp::CallToolResult`, or a
///   `Result` of one of them whose `Err` (any `Display`) becomes an `isError: true` result.
/// - **Bad arguments** (missing, wrong type) become an `isError: true` result naming the argument, as the 2025-11-25
///   specification asks, so the model can correct itself.
///
/// # Options
/// - `name = "..."`: the tool's name (default: the function's). 1 to 128 of `A-Z a-z 0-9 _ - .`, checked at compile
///   time (for the function's name too), as the server checks hand-written definitions.
/// - `title = "..."`: a display title.
/// - `description = "..."`: overrides the doc comment.
/// - `read_only`, `destructive`, `idempotent`, `open_world`: behaviour hints, alone (true) or `= false`.
/// - `icon = "https://..."` (repeatable): icons for the tool.
/// - `task = "optional" | "required"`: the tool runs as a task (a call that outlives its request) when the client
///   asks for one (2025-11-25: `task` in the call; 2026-07-28: the Tasks extension declared on the request), or
///   always. The function does not change: its `ctx` reports to the task, its questions put the task in
///   `input_required`, and `tasks/cancel` cancels it like any request.
///   - `defer_task`: the call becomes a task only when the handler calls `ctx.start_task().await` (so it can ask
///     the client first, in input-required rounds, then run in the background).
///   - `task_ttl_ms = 600_000`, `task_poll_ms = 1_000`: this tool's TTL and suggested poll interval (the server's
///     defaults otherwise).
/// - `crate = "..."`: the path of the runtime crate, if it was renamed.
///
/// # Parameter options
/// - `#[mcp(header = "Region")]` on a string, integer or boolean parameter: 2026-07-28 HTTP clients mirror the
///   argument in an `Mcp-Param-Region` header (the schema says `"x-mcp-header": "Region"`), so that gateways can
///   route on it; the server checks the header against the body (-32020 when they disagree). Names are HTTP tokens,
///   unique without regard to case.
/// - `#[mcp(flatten)]` on a struct parameter (tools and `#[mcp::method]`): its fields are top-level arguments and
///   its schema's properties (with their descriptions and which are required) join the input schema, as rmcp's
///   `Parameters<T>` does; the other parameters sit beside them. Each flattened struct reads its own fields, so one
///   with `#[serde(deny_unknown_fields)]` works too. A scalar, sequence, map or `Option`, a reference, the same type
///   flattened twice, or `flatten` with `header` are compile errors; a field given twice (by two structs, or by a
///   struct and a parameter) and a type whose schema is not an object with properties (an enum) are reported by
///   `ServerBuilder::build` (`BuildError::BadInputSchema`, naming the tool, the argument and both origins).
///
/// ```
/// #[derive(serde::Deserialize, schemars::JsonSchema)]
/// struct Job {
///     /// The document to print.
///     document: String,
///     #[serde(default)]
///     copies: Option<u32>,
/// }
///
/// /// Queue a print job.
/// #[mcp::tool]
/// fn print(#[mcp(flatten)] job: Job, priority: Option<u8>) -> String {
///     format!("{} x{} at {:?}", job.document, job.copies.unwrap_or(1), priority)
/// }
///
/// let server = mcp::Server::builder().tool::<print>().build().unwrap();
/// let schema = &server.tools_list()["tools"][0]["inputSchema"];
/// assert_eq!(schema["properties"]["document"]["description"], "The document to print.");
/// assert!(schema["properties"]["priority"].is_object());
/// assert_eq!(schema["required"], serde_json::json!(["document"]));
/// ```
///
/// # Cancellation
/// An `async fn` is dropped at its next `.await` when its request is cancelled, and no response is sent. A plain
/// `fn` runs under `spawn_blocking`; it sees cancellation through `ctx.is_cancelled()` / `ctx.check_cancelled()?`.
///
/// # Example
/// ```
/// use mcp::Context;
///
/// /// Count the words of a text.
/// #[mcp::tool(read_only, idempotent)]
/// fn count_words(
///     /// The text to count.
///     text: String,
///     ctx: &Context,
/// ) -> Result<String, mcp::Cancelled> {
///     ctx.check_cancelled()?;
///     Ok(text.split_whitespace().count().to_string())
/// }
///
/// let server = mcp::Server::builder().tool::<count_words>().build().unwrap();
/// assert_eq!(server.tools_list()["tools"][0]["inputSchema"]["required"][0], "text");
/// ```
///
/// # Expands roughly to
/// ```text
/// fn count_words(text: String, ctx: &Context) -> Result<String, mcp::Cancelled> { … }
///
/// #[doc(hidden)] struct count_words {}
/// impl mcp::handler::ToolItem for count_words {
///     const DEF: &'static mcp::handler::ToolDef = &{
///         fn __mcp_input_schema() -> Result<Value, SchemaError> {
///             let mut s = ObjectSchema::new();
///             (arg::<String>().describe)(&mut s, "text", Some("The text to count."));
///             s.finish()
///         }
///         fn __mcp_call(ctx: &Context, mut args: Arguments) -> HandlerResult {
///             let p0: String = match (arg::<String>().read)(&mut args, "text") {
///                 Ok(v) => v,
///                 Err(invalid) => return Ok(invalid), // an isError result naming the argument
///             };
///             let p1: &Context = <Context as FromContext>::from_context(ctx)?;
///             (returns::<Result<String, mcp::Cancelled>>().convert)(count_words(p0, p1))
///         }
///         ToolDef::built("count_words", InputSchema::Built(__mcp_input_schema), returns::<…>().output_schema,
///                      ToolHandler::Blocking(__mcp_call), concat!(file!(), ":", line!()))
///             .description("Count the words of a text.")
///             .hints(Hints::NONE.read_only(true).idempotent(true))
///     };
/// }
/// inventory::submit! { ToolRegistration(<count_words as ToolItem>::DEF) }
/// ```
/// `cargo expand` shows the expansion of a program's items.
///
/// # Limitations
/// Methods (`self`), generic functions and `impl Trait` arguments or returns are not supported:
/// ```compile_fail
/// struct Shop;
/// impl Shop {
///     #[mcp::tool]
///     fn stock(&self) -> String { String::new() }
/// }
/// ```
#[proc_macro_attribute]
pub fn tool(attr: TokenStream, item: TokenStream) -> TokenStream {
    tool::expand(attr.into(), item.into()).into()
}

/// Turns a function into an MCP prompt.
///
/// Works on `async fn` and plain `fn`, with the same injection (`&Context`, `&State<T>`) and cancellation as tools.
///
/// - **Arguments**: each owned parameter is a prompt argument of the same name, required unless its type accepts a
///   missing value (`Option<T>`); its doc comment is its description. Clients send prompt arguments as strings: a
///   `String` takes them as they are, and other types (`u32`, `bool`, an enum) read the text as JSON (`"3"`,
///   `"true"`, `""Fiction""`) or, for string enums, as the bare text. A missing or unreadable argument is -32602
///   naming it.
/// - **Return value**: a `String` (one user message), an `mcp::PromptMessage`, a `Vec<mcp::PromptMessage>`, an
///   `mcp::GetPromptResult`, or a `Result` of one of them (an `Err` is a JSON-RPC error).
///
/// # Options
/// - `name`, `title`, `description` (default: the doc comment), `icon = "https://..."` (repeatable).
/// - `complete(arg = function, ...)`: completion for an argument; `function` is a `fn(&str) -> Vec<String>` given
///   what the user typed so far. `completion/complete` sends at most 100 values, with the total.
/// - `crate = "..."`.
///
/// # Example
/// ```
/// use mcp::PromptMessage;
///
/// /// Ask for a review of a book.
/// #[mcp::prompt(title = "Review a book", complete(genre = genres))]
/// fn review(
///     /// The book's title.
///     title: String,
///     /// The genre, to set the tone.
///     genre: Option<String>,
/// ) -> Vec<PromptMessage> {
///     vec![
///         PromptMessage::user(format!("Review {title:?} ({}).", genre.as_deref().unwrap_or("any genre"))),
///         PromptMessage::assistant("Happy to. What did you like about it?"),
///     ]
/// }
///
/// fn genres(typed: &str) -> Vec<String> {
///     ["fantasy", "fiction", "history"].into_iter().filter(|g| g.starts_with(typed)).map(String::from).collect()
/// }
///
/// let server = mcp::Server::builder().prompt::<review>().build().unwrap();
/// # let _ = server;
/// ```
///
/// # Limitations
/// As for tools, `self` receivers, generic or `const` functions and `impl Trait` arguments or returns are not
/// supported:
/// ```compile_fail
/// #[mcp::prompt]
/// fn hello<T>(name: T) -> String { String::new() }
/// ```
#[proc_macro_attribute]
pub fn prompt(attr: TokenStream, item: TokenStream) -> TokenStream {
    prompt::expand(attr.into(), item.into()).into()
}

/// Turns a function into an MCP resource, or, when its URI has `{variables}`, a resource template.
///
/// A fixed resource (`uri = "books://catalog"`) takes only injected parameters. A template
/// (`uri = "books://{isbn}/cover"`, RFC 6570 `{name}` for one segment and `{+name}` for a path with slashes) binds
/// each variable to the parameter of the same name, converted as prompt arguments are; every variable needs a
/// parameter and every parameter a variable, checked at compile time. Reading a URI nothing serves is the
/// 2025-11-25 resource-not-found error (-32002) with the URI in `data`.
///
/// - **Return value**: a `String` (text contents), a `Vec<u8>` (sent as base64 `blob`), an
///   `mcp::ResourceContents`, a `Vec<mcp::ResourceContents>`, an `mcp::ReadResourceResult`, or a `Result` of one of
///   them. Text and bytes carry the URI that was read and the `mime_type` option.
///
/// # Options
/// - `uri = "..."` (required), `name` (default: the function's), `title`, `description` (default: the doc comment),
///   `mime_type = "text/markdown"`, `size = 1024`, `audience = "user"` (or `"assistant"`, `"user, assistant"`),
///   `priority = 0.8`, `icon = "https://..."` (repeatable).
/// - `complete(var = function, ...)`: completion for a template variable (`fn(&str) -> Vec<String>`).
/// - `list = function`: on a template, a `fn(&mcp::Context) -> Vec<mcp::Resource>` that lists, at run time, the
///   resources it names (files, rows), so `resources/list` shows them.
/// - `ttl_ms = 60000`, `cache_scope = "public"` (or `"private"`): the caching hints of its `resources/read` results
///   in the 2026-07-28 era, instead of the server's defaults (`ServerBuilder::cache`).
/// - `crate = "..."`.
///
/// # Example
/// ```
/// /// The catalog, as Markdown.
/// #[mcp::resource(uri = "books://catalog", mime_type = "text/markdown")]
/// fn catalog() -> String {
///     "# Catalog\n- Dune\n".into()
/// }
///
/// /// One page of a book.
/// #[mcp::resource(uri = "books://{title}/pages/{page}", mime_type = "text/plain")]
/// async fn page(title: String, page: u32) -> Result<String, String> {
///     if page == 0 { return Err("pages start at 1".into()) }
///     Ok(format!("Page {page} of {title}"))
/// }
///
/// let server = mcp::Server::builder().resource::<catalog>().resource::<page>().build().unwrap();
/// # let _ = server;
/// ```
///
/// # Limitations
/// As for tools, `self` receivers, generic or `const` functions and `impl Trait` arguments or returns are not
/// supported. A template variable needs a parameter of the same name:
/// ```compile_fail
/// #[mcp::resource(uri = "users://{id}/profile")]
/// fn profile(user: String) -> String { user }
/// ```
#[proc_macro_attribute]
pub fn resource(attr: TokenStream, item: TokenStream) -> TokenStream {
    resource::expand(attr.into(), item.into()).into()
}

/// Serves a JSON-RPC method that the MCP specification does not define.
///
/// The function's parameters are read from the request's `params` object by name, exactly as tool arguments are
/// (a missing or mistyped one is -32602 naming it), and `&mcp::Context` / `&mcp::State<T>` are injected. It runs
/// like a tool: an `async fn` is dropped when its request is cancelled, a plain `fn` runs under `spawn_blocking`
/// and sees the cancel flag. It returns anything that implements `mcp::handler::IntoMethodResult`: `mcp::Json<T>` for a
/// `T: Serialize` that is a JSON object (MCP results are objects), a `serde_json::Value` object, `()`, or a
/// `Result` of one of them whose error is an `mcp::Error` (kept as is) or a message (-32603).
///
/// # Options
/// - `name = "..."`: the method's name (default: the function's). The namespaces MCP uses (`tools/`,
///   `resources/`, `notifications/`, …, `initialize`, `ping`) are refused.
/// - `crate = "..."`: the path of the runtime crate, if it was renamed.
///
/// # Example
/// ```
/// /// How many copies of a title are in stock.
/// #[mcp::method(name = "bookshop/stock")]
/// async fn stock(title: String) -> Result<mcp::Json<Stock>, mcp::Error> {
///     if title.is_empty() {
///         return Err(mcp::Error::invalid_params("`title` is empty"));
///     }
///     Ok(mcp::Json(Stock { copies: 3 }))
/// }
///
/// #[derive(serde::Serialize)]
/// struct Stock {
///     copies: u32,
/// }
///
/// let server = mcp::Server::builder().method::<stock>().build().unwrap();
/// # let _ = server;
/// ```
///
/// # Expands roughly to
/// The function unchanged, a hidden `struct stock {}` implementing `mcp::handler::MethodItem` whose `DEF` holds the name and
/// the glue (as for `#[mcp::tool]`), and an `inventory::submit!` so `Server::from_registry()` finds it.
///
/// # Limitations
/// As for tools, `self` receivers, generic or `const` functions and `impl Trait` arguments or returns are not
/// supported. A method cannot shadow the specification's:
/// ```compile_fail
/// #[mcp::method(name = "tools/list")]
/// fn my_list() {}
/// ```
#[proc_macro_attribute]
pub fn method(attr: TokenStream, item: TokenStream) -> TokenStream {
    method::expand(attr.into(), item.into()).into()
}

/// Declares an event type of the Events extension (`mcp::events`, SEP-3415) on the function that serves it: its
/// owned parameters are a subscription's arguments (the `inputSchema`, from their types and doc comments, as a
/// tool's), its doc comment the description.
///
/// Two shapes:
/// - `fn name(arguments.., payload: &Payload) -> bool`: an **emitted** type. The program emits its events
///   ([`Emitter::emit_of`](../mcp/events/struct.Emitter.html#method.emit_of)); `Payload`'s schema is the
///   `payloadSchema`; the function is the match rule, called with a subscription's arguments and each event's
///   payload (polls, push streams and webhooks alike).
/// - `async fn name(arguments.., check: mcp::events::Check) -> Result<Checked, mcp::Error>`: a **checked** type,
///   whose function reads an upstream with a history of its own from the client's cursor (`check.cursor`);
///   `payload = Type` gives the `payloadSchema`.
///
/// Add it with `Events::new().event_of::<name>()`, or every declared one with `Events::registered()`.
///
/// # Options
/// - `name = "..."`: the type's name (default: the function's);
/// - `description = "..."`: instead of the doc comment;
/// - `payload = Type`: a checked type's payload;
/// - `delivery = [poll, push, webhook]`: the modes it offers (default: poll and push, and webhook when the
///   extension delivers webhooks);
/// - `crate = "..."`: the path of the runtime crate, if it was renamed.
///
/// # Example
/// ```
/// use mcp::events::{Events, Checked, Check};
///
/// /// A book is back on the shelf: its hold was released.
/// #[mcp::event(name = "book.back_on_shelf")]
/// fn back_on_shelf(
///     /// Only this title; every title if absent.
///     title: Option<String>,
///     book: &BackOnShelf,
/// ) -> bool {
///     title.is_none_or(|t| t == book.title)
/// }
///
/// /// A book back on the shelf.
/// #[derive(serde::Serialize, serde::Deserialize, schemars::JsonSchema)]
/// struct BackOnShelf {
///     /// Its title.
///     title: String,
/// }
///
/// /// Orders placed since the cursor.
/// #[mcp::event(name = "order.placed", delivery = [poll])]
/// async fn order_placed(check: Check) -> Result<Checked, mcp::Error> {
///     Ok(Checked::new(vec![], check.cursor.or(Some("0".into()))))
/// }
///
/// let events = Events::new().event_of::<back_on_shelf>().event_of::<order_placed>();
/// let shelf = events.emitter();
/// let server = mcp::Server::builder().extension(events).build().unwrap();
/// shelf.emit_of::<back_on_shelf>(BackOnShelf { title: "Dune".into() }).unwrap();
/// # let _ = server;
/// ```
///
/// # Expands roughly to
/// The function unchanged, a hidden `struct back_on_shelf {}` implementing `mcp::events::EventItem` (its `NAME`,
/// its `Payload`, and `event_type()`, which builds the `EventType` with the arguments' schema and reader and the
/// match rule or check), and an `inventory::submit!` so `Events::registered()` finds it.
///
/// # Limitations
/// The function has one of the two shapes above; an emitted type's only reference parameter is its payload, last:
/// ```compile_fail
/// #[mcp::event]
/// fn restocked(isbn: String) -> bool { true }
/// ```
#[proc_macro_attribute]
pub fn event(attr: TokenStream, item: TokenStream) -> TokenStream {
    event::expand(attr.into(), item.into()).into()
}

/// Turns `async fn main()` into a program that serves every registered tool over stdio.
///
/// The body runs first, on the Tokio runtime; it may return `()` (serve everything registered), an
/// `mcp::ServerBuilder` (serve that), or a `Result` of either whose `Err` stops the program with the message on
/// stderr before anything is served. The program takes `--help` and `--list-tools` (prints the `tools/list` result
/// with the generated schemas). Diagnostics go to stderr (filter with `RUST_LOG`); stdout carries only protocol
/// messages.
///
/// `main` may take one parameter, of a type implementing `mcp::FromArgs`: the program's own options, which it
/// declares (`FromArgs::OPTIONS`, listed by `--help`) and reads from the `mcp::Args` the framework left. Any option
/// neither the framework nor the program declared is refused with exit code 2, naming it (and the closest known
/// one). `--version` prints the package version.
///
/// # Options
/// - `tracing = false`: no stderr subscriber from the framework; install your own (JSON logs, OpenTelemetry) at the
///   top of the body.
/// - `crate = "..."`: the path of the runtime crate, if it was renamed.
///
/// A hand-written `main` gets the same command line with `mcp::run`.
///
/// # Example
/// ```no_run
/// struct Options {
///     greeting: String,
/// }
///
/// impl mcp::FromArgs for Options {
///     const OPTIONS: &'static [mcp::ArgSpec] = &[mcp::ArgSpec::value("--greeting", "WORD", "How to greet")];
///
///     fn from_args(args: mcp::Args) -> Result<Self, String> {
///         Ok(Options { greeting: args.value("--greeting").unwrap_or("Hello").to_owned() })
///     }
/// }
///
/// #[mcp::main]
/// async fn main(options: Options) -> mcp::ServerBuilder {
///     let greeting = options.greeting;
///     mcp::Server::builder().registered_tools().instructions(format!("{greeting}! Ask for books by title."))
/// }
/// ```
///
/// # Expands roughly to
/// ```text
/// fn main() -> std::process::ExitCode {
///     async fn __mcp_main(options: Options) -> mcp::ServerBuilder { … }
///     mcp::__private::run_main(env!("CARGO_BIN_NAME"), env!("CARGO_PKG_VERSION"), MainOptions { .. }, __mcp_main)
/// }
/// ```
///
/// # Limitations
/// `main` must be `async`:
/// ```compile_fail
/// #[mcp::main]
/// fn main() {}
/// ```
#[proc_macro_attribute]
pub fn main(attr: TokenStream, item: TokenStream) -> TokenStream {
    entry::expand(attr.into(), item.into()).into()
}
