//! [`ServerBuilder`]: what a server is built from, and `build()`, which checks it all and computes every schema,
//! list page and capability object once.

use std::collections::HashMap;
use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

mod build;
pub(crate) mod extension;
mod shared;

use crate::context::state::StateMap;
use crate::handler::method::{MethodDef, MethodItem};
use crate::handler::prompt::{PromptDef, PromptItem};
use crate::handler::resource::{ResourceDef, ResourceItem};
use crate::handler::tool::{BoxFuture, ToolDef, ToolItem};
use crate::server::{
    BuildError, MethodRegistration, PromptRegistration, ResourceRegistration, Server, ToolRegistration,
};
use crate::wire::protocol::CacheHint;
use crate::wire::protocol::Implementation;
use serde_json::{Map, Value};

/// Builds a [`Server`] from the tools linked into the program or from tools named one by one.
///
/// ```
/// use std::sync::atomic::{AtomicU64, Ordering};
///
/// struct Greetings(AtomicU64);
///
/// /// Say hello.
/// #[mcp::tool]
/// fn hello(name: String, greetings: &mcp::State<Greetings>) -> String {
///     greetings.0.fetch_add(1, Ordering::Relaxed);
///     format!("Hello, {name}!")
/// }
///
/// /// Say goodbye.
/// #[mcp::tool]
/// fn goodbye() -> &'static str {
///     "Goodbye!"
/// }
///
/// let server = mcp::Server::builder()
///     .name("greeter")
///     .tool::<hello>()
///     .tool::<goodbye>()
///     .state(Greetings(AtomicU64::new(0)))
///     .page_size(1) // one tool per page of `tools/list`
///     .build()
///     .unwrap();
/// let tools = &server.tools_list()["tools"]; // every page, by name
/// assert_eq!(tools.as_array().unwrap().len(), 2);
/// assert_eq!(tools[1]["name"], "hello");
/// assert_eq!(tools[1]["inputSchema"]["required"], serde_json::json!(["name"]));
/// ```
#[derive(Default)]
#[must_use]
pub struct ServerBuilder {
    /// The whole `serverInfo`, from [`ServerBuilder::info`].
    info: Option<Implementation>,
    /// What [`ServerBuilder::default_info`] gave (`#[mcp::main]`: the binary's name and version).
    default_info: Option<Implementation>,
    /// [`ServerBuilder::name`] and [`ServerBuilder::version`], laid over the info.
    name: Option<String>,
    version: Option<String>,
    instructions: Option<String>,
    tools: Vec<ToolDef>,
    tool_meta: HashMap<String, Map<String, Value>>,
    resource_meta: HashMap<String, Map<String, Value>>,
    prompts: Vec<PromptDef>,
    resources: Vec<ResourceDef>,
    methods: Vec<MethodDef>,
    page_size: Option<usize>,
    nullable_options: bool,
    on_start: Vec<Box<dyn FnOnce(Server) + Send>>,
    max_message_bytes: Option<usize>,
    state: StateMap,
    duplicate_state: Option<&'static str>,
    shutdown_hooks: Vec<BoxFuture<'static, ()>>,
    shutdown_timeout: Option<Duration>,
    metrics: Option<crate::metrics::Metrics>,
    capture_tool_content: Option<bool>,
    cache: Option<CacheHint>,
    max_in_flight: Option<usize>,
    outbound: Option<crate::base::backlog::OutboundLimits>,
    state_keys: Vec<[u8; 32]>,
    request_state_ttl: Option<Duration>,
    task_store: Option<Arc<dyn crate::task::TaskStore>>,
    change_hub: Option<Arc<dyn crate::server::hub::ChangeHub>>,
    session_store: Option<Arc<dyn crate::store::session::SessionStore>>,
    event_log: Option<Arc<dyn crate::store::events::EventLog>>,
    /// [`ServerBuilder::shared`] was called: the `requestState` key must be the same on every instance.
    #[cfg_attr(not(feature = "redis"), allow(dead_code))]
    shared: bool,
    task_settings: crate::task::TaskSettings,
    layers: crate::middleware::Layers,
    extensions: Vec<Box<dyn extension::Extension>>,
    authorization: Option<crate::auth::Authorization>,
    /// What each caller may see.
    visibility: crate::server::visibility::Visibility,
    /// Other servers served as this one's ([`ServerBuilder::compose`]).
    #[cfg(feature = "client")]
    mounts: Vec<crate::compose::Mount>,
}

/// The `serverInfo` name of a server built without `#[mcp::main]` and without [`ServerBuilder::name`].
pub(crate) const DEFAULT_SERVER_NAME: &str = "mcp-server";

/// The `serverInfo` version of a server built without `#[mcp::main]` and without [`ServerBuilder::version`]: not
/// the runtime's version, which says nothing about the server (the caller's `CARGO_PKG_VERSION` is only known to
/// code compiled in its crate, as `#[mcp::main]` is).
pub(crate) const DEFAULT_SERVER_VERSION: &str = "0.0.0";

/// The default limit on one incoming message (a stdio line, an HTTP body): 4 MiB.
pub(crate) const DEFAULT_MAX_MESSAGE_BYTES: usize = 4 << 20;

impl Server {
    /// A builder with nothing registered.
    pub fn builder() -> ServerBuilder {
        ServerBuilder::default()
    }

    /// A server with everything linked into the program by `#[mcp::tool]` and `#[mcp::method]`.
    pub fn from_registry() -> Result<Server, BuildError> {
        Server::builder().registered().build()
    }
}

impl ServerBuilder {
    /// Sets the name reported in `serverInfo`, keeping the version (and the rest of the info) as it is.
    ///
    /// Under `#[mcp::main]` the name defaults to the binary's and the version to its package's
    /// (`CARGO_PKG_VERSION`); a server built by hand defaults to [`ServerBuilder::DEFAULT_SERVER_NAME`] and
    /// [`ServerBuilder::DEFAULT_SERVER_VERSION`], so set both there.
    ///
    /// ```
    /// let server = mcp::Server::builder().name("notes").build().unwrap();
    /// assert_eq!(server.schema()["serverInfo"]["name"], "notes");
    /// assert_eq!(server.schema()["serverInfo"]["version"], mcp::ServerBuilder::DEFAULT_SERVER_VERSION);
    /// ```
    pub fn name(mut self, name: impl Into<String>) -> Self {
        self.name = Some(name.into());
        self
    }

    /// Sets the version reported in `serverInfo`, keeping the name (see [`ServerBuilder::name`] for the defaults).
    pub fn version(mut self, version: impl Into<String>) -> Self {
        self.version = Some(version.into());
        self
    }

    /// Sets the whole `serverInfo` (title, description, website too). [`ServerBuilder::name`] and
    /// [`ServerBuilder::version`], called before or after, still override its name and version.
    pub fn info(mut self, info: Implementation) -> Self {
        self.info = Some(info);
        self
    }

    /// The `serverInfo` to use where [`ServerBuilder::info`] was not called (as `#[mcp::main]` does with the
    /// binary's name and version); [`ServerBuilder::name`] and [`ServerBuilder::version`] still override it.
    pub fn default_info(mut self, info: Implementation) -> Self {
        self.default_info = Some(info);
        self
    }

    /// Instructions for the client's model, sent in `initialize`.
    pub fn instructions(mut self, instructions: impl Into<String>) -> Self {
        self.instructions = Some(instructions.into());
        self
    }

    /// Adds a tool defined with `#[mcp::tool]`: `builder.tool::<my_tool>()`.
    pub fn tool<T: ToolItem>(self) -> Self {
        self.tool_def(T::DEF.clone())
    }

    /// Adds a tool from its definition.
    pub fn tool_def(mut self, def: ToolDef) -> Self {
        self.tools.push(def);
        self
    }

    /// The tools added so far (an extension's [`setup`](crate::extension::Extension::setup) sees the program's here).
    pub fn tool_defs(&self) -> &[ToolDef] {
        &self.tools
    }

    /// The prompts added so far.
    pub fn prompt_defs(&self) -> &[PromptDef] {
        &self.prompts
    }

    /// The resources and templates added so far.
    pub fn resource_defs(&self) -> &[ResourceDef] {
        &self.resources
    }

    /// Adds `meta` to the `_meta` the tool `name` shows in `tools/list` (over its definition's own, key by key): how
    /// an extension describes a tool of the program's (MCP Apps links a tool to its interface so). A tool added
    /// later, by [`Server::add_tool`](crate::Server::add_tool), takes it too.
    pub fn tool_meta(mut self, name: impl Into<String>, meta: Map<String, Value>) -> Self {
        self.tool_meta.entry(name.into()).or_default().extend(meta);
        self
    }

    /// Adds `meta` to the `_meta` the resource (or template) at `uri` shows in its list.
    pub fn resource_meta(mut self, uri: impl Into<String>, meta: Map<String, Value>) -> Self {
        self.resource_meta.entry(uri.into()).or_default().extend(meta);
        self
    }

    /// Adds every tool linked into the program with `#[mcp::tool]`.
    pub fn registered_tools(mut self) -> Self {
        self.tools.extend(inventory::iter::<ToolRegistration>.into_iter().map(|r| r.0.clone()));
        self
    }

    /// Adds a custom method defined with `#[mcp::method]`: `builder.method::<my_method>()`.
    pub fn method<M: MethodItem>(self) -> Self {
        self.method_def(M::DEF.clone())
    }

    /// Adds a custom method from its definition.
    pub fn method_def(mut self, def: MethodDef) -> Self {
        self.methods.push(def);
        self
    }

    /// Adds every custom method linked into the program with `#[mcp::method]`.
    pub fn registered_methods(mut self) -> Self {
        self.methods.extend(inventory::iter::<MethodRegistration>.into_iter().map(|r| r.0.clone()));
        self
    }

    /// Adds a prompt defined with `#[mcp::prompt]`: `builder.prompt::<my_prompt>()`.
    pub fn prompt<P: PromptItem>(self) -> Self {
        self.prompt_def(P::DEF.clone())
    }

    /// Adds a prompt from its definition.
    pub fn prompt_def(mut self, def: PromptDef) -> Self {
        self.prompts.push(def);
        self
    }

    /// Adds every prompt linked into the program with `#[mcp::prompt]`.
    pub fn registered_prompts(mut self) -> Self {
        self.prompts.extend(inventory::iter::<PromptRegistration>.into_iter().map(|r| r.0.clone()));
        self
    }

    /// Adds a resource or template defined with `#[mcp::resource]`: `builder.resource::<my_resource>()`.
    pub fn resource<R: ResourceItem>(self) -> Self {
        self.resource_def(R::DEF.clone())
    }

    /// Adds a resource or template from its definition.
    pub fn resource_def(mut self, def: ResourceDef) -> Self {
        self.resources.push(def);
        self
    }

    /// Adds every resource and template linked into the program with `#[mcp::resource]`.
    pub fn registered_resources(mut self) -> Self {
        self.resources.extend(inventory::iter::<ResourceRegistration>.into_iter().map(|r| r.0.clone()));
        self
    }

    /// Adds everything linked into the program: tools, prompts, resources and custom methods.
    pub fn registered(self) -> Self {
        self.registered_tools().registered_prompts().registered_resources().registered_methods()
    }

    /// How many items each page of `tools/list`, `prompts/list`, `resources/list` and `resources/templates/list`
    /// holds; a longer list is split with opaque cursors. Default [`ServerBuilder::DEFAULT_PAGE_SIZE`].
    pub fn page_size(mut self, items: usize) -> Self {
        self.page_size = Some(items);
        self
    }

    /// Whether an optional argument's schema also accepts `null`. By default an `Option<T>` argument (and an
    /// `Option` field of a struct argument) is simply not `required`, with the schema of `T`: the portable form,
    /// which every client and model provider accepts. With `true` it is written as schemars writes it, `"type":
    /// ["integer", "null"]` or an `anyOf` with `{"type": "null"}`, for clients that send explicit `null`s and
    /// validate them. Either way a missing argument and a `null` one both read as `None`. Output schemas always keep
    /// their `null`: a result's `None` is serialized as one.
    ///
    /// ```
    /// #[mcp::tool]
    /// fn forecast(city: String, days: Option<u32>) -> String {
    ///     format!("{city}: {days:?}")
    /// }
    ///
    /// let portable = mcp::Server::builder().tool::<forecast>().build().unwrap();
    /// let schema = &portable.tools_list()["tools"][0]["inputSchema"];
    /// assert_eq!(schema["properties"]["days"]["type"], "integer");
    /// assert_eq!(schema["required"], serde_json::json!(["city"]));
    ///
    /// let nullable = mcp::Server::builder().tool::<forecast>().nullable_options(true).build().unwrap();
    /// let schema = &nullable.tools_list()["tools"][0]["inputSchema"];
    /// assert_eq!(schema["properties"]["days"]["type"], serde_json::json!(["integer", "null"]));
    /// ```
    pub fn nullable_options(mut self, nullable: bool) -> Self {
        self.nullable_options = nullable;
        self
    }

    /// Serves another server of this process as part of this one: its tools and prompts as `{prefix}_{name}`, its
    /// resources at their URIs, each call run by it (with its state, layers and extensions, as it would alone), its
    /// list changes followed. A name already taken is a build error naming both. See [`mcp::compose`](crate::compose).
    #[cfg(feature = "client")]
    pub fn mount(self, prefix: impl Into<String>, server: crate::Server) -> Self {
        self.compose(crate::compose::Mount::new(prefix, crate::compose::Upstream::server(server)))
    }

    /// Serves a server of another process (a child over stdio, a URL) as part of this one, through
    /// [`mcp::client`](crate::client): as [`ServerBuilder::mount`] does, relaying every call. See
    /// [`mcp::compose`](crate::compose).
    #[cfg(feature = "client")]
    pub fn proxy(self, prefix: impl Into<String>, upstream: crate::compose::Upstream) -> Self {
        self.compose(crate::compose::Mount::new(prefix, upstream))
    }

    /// Serves an upstream with the options of its [`Mount`](crate::compose::Mount) (separator, filters). When this
    /// server shuts down, so does the upstream's connection (a child process ends; a mounted server runs its own
    /// shutdown hooks).
    #[cfg(feature = "client")]
    pub fn compose(mut self, mount: crate::compose::Mount) -> Self {
        let closing = mount.closing();
        self.mounts.push(mount);
        self.on_shutdown(closing)
    }

    /// Adds a visibility rule: a caller sees a tool, prompt, resource or template only when every rule returns
    /// `true` for it. Hidden means not listed, not callable (the unknown-tool error), not readable, not completable.
    /// See [`mcp::visibility`](crate::visibility).
    pub fn visible(
        mut self,
        rule: impl Fn(&crate::visibility::Caller<'_>, &crate::visibility::Item<'_>) -> bool + Send + Sync + 'static,
    ) -> Self {
        self.visibility.rules.push(Arc::new(rule));
        self
    }

    /// Serves only the items with at least one of these tags (`tags = [...]` on their attributes), to everyone.
    pub fn include_tags(self, tags: &[&str]) -> Self {
        let tags: Vec<String> = tags.iter().map(|t| (*t).to_owned()).collect();
        self.visible(move |_, item| item.tags().iter().any(|t| tags.iter().any(|w| w == t)))
    }

    /// Hides the items with any of these tags, from everyone.
    pub fn exclude_tags(self, tags: &[&str]) -> Self {
        let tags: Vec<String> = tags.iter().map(|t| (*t).to_owned()).collect();
        self.visible(move |_, item| !item.tags().iter().any(|t| tags.iter().any(|w| w == t)))
    }

    /// Runs `f` with the built server before anything is served: the place to start a background task that holds a
    /// [`Server`] handle (to announce resource updates or change what is listed).
    pub fn on_start(mut self, f: impl FnOnce(Server) + Send + 'static) -> Self {
        self.on_start.push(Box::new(f));
        self
    }

    /// Gives the server a state value, which handlers borrow by declaring a `&State<T>` parameter (see
    /// [`State`](crate::State)). One value per type; a second value of the same type is a build error.
    pub fn state<T: Send + Sync + 'static>(mut self, value: T) -> Self {
        if let Err(name) = self.state.insert(value) {
            self.duplicate_state.get_or_insert(name);
        }
        self
    }

    /// Runs `hook` when the server stops (stdin closed, Ctrl-C, SIGTERM), after in-flight requests were cancelled and
    /// their cleanups ran. Hooks run in the order they were added, within the shutdown timeout.
    pub fn on_shutdown(mut self, hook: impl Future<Output = ()> + Send + 'static) -> Self {
        self.shutdown_hooks.push(Box::pin(hook));
        self
    }

    /// How long shutdown may take, all of it: at the end of stdin, waiting for what is in flight to be answered (up
    /// to four fifths of it); then waiting for cancelled handlers and their cleanups, writing the last frames, then
    /// the shutdown hooks, which get what is left. Default 5 s.
    pub fn shutdown_timeout(mut self, timeout: Duration) -> Self {
        self.shutdown_timeout = Some(timeout);
        self
    }

    /// Records the server's metrics into `metrics` (see [`Metrics`](crate::Metrics): the OpenTelemetry conventions'
    /// durations per method and tool, in Prometheus's format), which the program serves for Prometheus to scrape
    /// ([`Metrics::serve`](crate::Metrics::serve)); `#[mcp::main]` does both for `--metrics ADDR`. Without it
    /// nothing is recorded, at no cost.
    pub fn metrics(mut self, metrics: &crate::metrics::Metrics) -> Self {
        self.metrics = Some(metrics.clone());
        self
    }

    /// Records each tool call's arguments and result on its span (`gen_ai.tool.call.arguments` and
    /// `gen_ai.tool.call.result`, as JSON), which the OpenTelemetry conventions leave to the user to opt into: they
    /// may hold personal data, and they cost a serialization each when the span is recorded. Off by default, or as
    /// `OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT=true` says.
    pub fn capture_tool_content(mut self, capture: bool) -> Self {
        self.capture_tool_content = Some(capture);
        self
    }

    /// The largest incoming message, in bytes, on every transport: a longer stdio line is rejected with -32600
    /// without being held in memory, a longer HTTP body gets 413 (an endpoint may set its own with
    /// [`HttpOptions::max_body_bytes`](crate::HttpOptions::max_body_bytes)). Defaults to
    /// [`ServerBuilder::DEFAULT_MAX_MESSAGE_BYTES`].
    pub fn max_message_bytes(mut self, bytes: usize) -> Self {
        self.max_message_bytes = Some(bytes);
        self
    }

    /// The caching hints (`ttlMs`, `cacheScope`) of 2026-era lists, `server/discover` and resource reads that do not
    /// set their own (`#[mcp::resource(ttl_ms = ..., cache_scope = "public")]`). Default [`CacheHint::NONE`]: no
    /// reuse. Clients of the 2025 era see no hints.
    pub fn cache(mut self, hint: CacheHint) -> Self {
        self.cache = Some(hint);
        self
    }

    /// The most requests in flight on one connection (a stdio process, a 2025 session); one more is refused with
    /// [`ErrorCode::OVERLOADED`](crate::ErrorCode::OVERLOADED). Default [`ServerBuilder::DEFAULT_MAX_IN_FLIGHT`].
    pub fn max_in_flight(mut self, requests: usize) -> Self {
        self.max_in_flight = Some(requests);
        self
    }

    /// The bounds of every outbound queue (stdout, each SSE stream, each 2026 answer), for clients that stop
    /// reading: above the soft limit progress and log notifications are dropped; a frame past the hard limit
    /// disconnects the client and cancels what it asked for. Past the soft limit a client's input waits too: a stdio
    /// client is not read, and a 2025 HTTP session (its streams counted together) has its new POSTs wait, then
    /// refused with 503 (after `HttpOptions::BACKED_UP_WAIT`). Default 4 MiB and 16 MiB.
    pub fn outbound_limits(mut self, limits: crate::base::backlog::OutboundLimits) -> Self {
        self.outbound = Some(limits);
        self
    }

    /// Adds a middleware layer: a [`tower::Layer`] over the dispatcher, which sees every request the dispatcher
    /// serves (tools, prompts, resources, completion, tasks, custom methods), on every transport and in both eras,
    /// as an [`Request`](crate::middleware::Request), and its outcome as an
    /// [`Response`](crate::middleware::Response). Layers run in the order they are added: the first sees each
    /// request first and its response last. `tower::timeout`, `tower::limit::ConcurrencyLimitLayer`,
    /// `tower::load_shed` and layers of your own work as they are; see [`mcp::middleware`](crate::middleware).
    ///
    /// ```
    /// use std::time::Duration;
    /// use mcp::tower::{limit::ConcurrencyLimitLayer, timeout::TimeoutLayer};
    ///
    /// let server = mcp::Server::builder()
    ///     .layer(TimeoutLayer::new(Duration::from_secs(30)))
    ///     .layer(ConcurrencyLimitLayer::new(16))
    ///     .build()
    ///     .unwrap();
    /// # let _ = server;
    /// ```
    pub fn layer<L>(mut self, layer: L) -> Self
    where
        L: tower::Layer<crate::middleware::Next> + Send + 'static,
        L::Service: tower::Service<crate::middleware::Request, Response = crate::middleware::Response>
            + Clone
            + Send
            + Sync
            + 'static,
        <L::Service as tower::Service<crate::middleware::Request>>::Error: Into<crate::middleware::BoxError>,
        <L::Service as tower::Service<crate::middleware::Request>>::Future: Send + 'static,
    {
        self.layers.push(layer);
        self
    }

    /// Adds a protocol extension: its `capabilities.extensions` entry, its methods, and what its
    /// [`setup`](crate::extension::Extension::setup) adds. See [`Extension`](crate::extension::Extension).
    pub fn extension(mut self, extension: impl extension::Extension) -> Self {
        self.extensions.push(Box::new(extension));
        self
    }

    /// Makes the server an OAuth 2.1 resource server over HTTP: every request needs a bearer token that
    /// `authorization` accepts, and the scopes of the handler it is for (`scopes = [...]` on its attribute). See
    /// [`Authorization`](crate::auth::Authorization). stdio stays unauthenticated.
    pub fn authorization(mut self, authorization: crate::auth::Authorization) -> Self {
        self.authorization = Some(authorization);
        self
    }

    /// Whether [`authorization`](Self::authorization) was given.
    pub fn has_authorization(&self) -> bool {
        self.authorization.is_some()
    }

    /// Builds the server: computes every schema and the list results once.
    pub fn build(mut self) -> Result<Server, BuildError> {
        // Each extension adds what it serves first (an extension may add another).
        let mut extensions = Vec::new();
        while !self.extensions.is_empty() {
            for extension in std::mem::take(&mut self.extensions) {
                self = extension.setup(self);
                extensions.push(extension);
            }
        }
        self.build_with(extensions)
    }
}

/// The defaults of the settings, each named by the method that changes it.
impl ServerBuilder {
    /// The `serverInfo` name of a server built without `#[mcp::main]` and without [`ServerBuilder::name`].
    pub const DEFAULT_SERVER_NAME: &'static str = DEFAULT_SERVER_NAME;
    /// The `serverInfo` version of a server built without `#[mcp::main]` and without [`ServerBuilder::version`]
    /// (`0.0.0`: the runtime's own version would say nothing about the server).
    pub const DEFAULT_SERVER_VERSION: &'static str = DEFAULT_SERVER_VERSION;
    /// [`ServerBuilder::page_size`]: 100 items.
    pub const DEFAULT_PAGE_SIZE: usize = DEFAULT_PAGE_SIZE;
    /// [`ServerBuilder::max_message_bytes`]: 4 MiB.
    pub const DEFAULT_MAX_MESSAGE_BYTES: usize = DEFAULT_MAX_MESSAGE_BYTES;
    /// [`ServerBuilder::max_in_flight`]: 10 000 requests.
    pub const DEFAULT_MAX_IN_FLIGHT: usize = DEFAULT_MAX_IN_FLIGHT;
    /// [`ServerBuilder::shutdown_timeout`]: 5 s.
    pub const DEFAULT_SHUTDOWN_TIMEOUT: Duration = DEFAULT_SHUTDOWN_TIMEOUT;
    /// The environment variable holding the key that seals the 2026 era's `requestState` (64 hex digits), when
    /// several instances must open each other's.
    pub const REQUEST_STATE_KEY_ENV: &'static str = crate::base::seal::KEY_ENV;
}

/// The default limit on requests in flight on one connection: 10 000.
pub(crate) const DEFAULT_MAX_IN_FLIGHT: usize = 10_000;

/// The default number of items on one page of a list result.
pub(crate) const DEFAULT_PAGE_SIZE: usize = 100;

/// The default bound on each step of shutdown: 5 s.
pub(crate) const DEFAULT_SHUTDOWN_TIMEOUT: Duration = Duration::from_secs(5);
