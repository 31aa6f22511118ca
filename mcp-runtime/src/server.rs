//! [`Server`]: the shared, immutable configuration — registries, capabilities, server info — built once.

use std::collections::HashMap;
use std::fmt;
use std::sync::Arc;

use serde_json::value::RawValue;
use serde_json::{json, Value};

use std::future::Future;
use std::sync::Mutex;
use std::time::Duration;

use crate::method::{MethodDef, MethodItem};
use crate::protocol::{Implementation, Tool};
use crate::state::StateMap;
use crate::tool::{BoxFuture, Injected, ToolDef, ToolItem};

/// A registration emitted by `#[mcp::tool]` into the global registry.
#[doc(hidden)]
pub struct ToolRegistration(pub &'static ToolDef);

inventory::collect!(ToolRegistration);

/// A registration emitted by `#[mcp::method]` into the global registry.
#[doc(hidden)]
pub struct MethodRegistration(pub &'static MethodDef);

inventory::collect!(MethodRegistration);

/// A built server: the registries of what it serves, its info and instructions. Cheap to clone; shared by every
/// session. Nothing in it changes per connection.
#[derive(Clone)]
pub struct Server {
    pub(crate) inner: Arc<ServerInner>,
}

pub(crate) struct ServerInner {
    pub info: Implementation,
    pub instructions: Option<String>,
    pub tools: HashMap<&'static str, ToolDef>,
    /// The `tools/list` result, serialized once.
    pub tools_list: Box<RawValue>,
    /// The `capabilities` object of `initialize`, built once.
    pub capabilities: Value,
    pub max_line_bytes: usize,
    pub methods: HashMap<&'static str, MethodDef>,
    pub state: StateMap,
    pub shutdown_hooks: Mutex<Vec<BoxFuture<'static, ()>>>,
    pub shutdown_timeout: Duration,
}

impl fmt::Debug for Server {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut names: Vec<_> = self.inner.tools.keys().collect();
        names.sort();
        f.debug_struct("Server").field("info", &self.inner.info).field("tools", &names).finish()
    }
}

/// Why a server could not be built.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum BuildError {
    /// Two tools have the same name.
    DuplicateTool {
        /// The name.
        name: String,
        /// Where the first definition is.
        first: String,
        /// Where the second definition is.
        second: String,
    },
    /// A tool's input schema is not an object schema.
    BadInputSchema {
        /// The tool.
        name: String,
    },
    /// Two custom methods have the same name.
    DuplicateMethod {
        /// The name.
        name: String,
        /// Where the first definition is.
        first: String,
        /// Where the second definition is.
        second: String,
    },
    /// A custom method's name would shadow a method of the specification.
    ReservedMethod {
        /// Why.
        message: String,
    },
    /// A handler takes `&State<T>` but the server was not given a `T`.
    MissingState {
        /// `tool` or `method`.
        kind: &'static str,
        /// The handler's name.
        handler: String,
        /// The missing type.
        type_name: &'static str,
        /// Where the handler is defined.
        location: String,
    },
    /// Two state values of the same type.
    DuplicateState {
        /// The type.
        type_name: &'static str,
    },
}

impl fmt::Display for BuildError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            BuildError::DuplicateTool { name, first, second } => {
                write!(f, "two tools are named `{name}`: one at {first}, one at {second}; rename one with #[mcp::tool(name = \"...\")]")
            }
            BuildError::BadInputSchema { name } => {
                write!(f, "the input schema of tool `{name}` is not an object schema")
            }
            BuildError::DuplicateMethod { name, first, second } => {
                write!(f, "two custom methods are named `{name}`: one at {first}, one at {second}")
            }
            BuildError::ReservedMethod { message } => f.write_str(message),
            BuildError::MissingState { kind, handler, type_name, location } => write!(
                f,
                "{kind} `{handler}` (at {location}) takes `&State<{type_name}>`, but the server has no `{type_name}`: \
                 give it one with `Server::builder().state(...)`"
            ),
            BuildError::DuplicateState { type_name } => {
                write!(f, "the server was given two state values of type `{type_name}`; wrap one in a type of its own")
            }
        }
    }
}

impl std::error::Error for BuildError {}

/// Builds a [`Server`] from the tools linked into the program or from tools named one by one.
///
/// ```
/// /// Say hello.
/// #[mcp::tool]
/// fn hello(name: String) -> String {
///     format!("Hello, {name}!")
/// }
///
/// let server = mcp::Server::builder().name("greeter").tool::<hello>().build().unwrap();
/// # let _ = server;
/// ```
#[derive(Default)]
#[must_use]
pub struct ServerBuilder {
    info: Option<Implementation>,
    instructions: Option<String>,
    tools: Vec<ToolDef>,
    methods: Vec<MethodDef>,
    max_line_bytes: Option<usize>,
    state: StateMap,
    duplicate_state: Option<&'static str>,
    shutdown_hooks: Vec<BoxFuture<'static, ()>>,
    shutdown_timeout: Option<Duration>,
}

/// The default limit on one incoming stdio line: 4 MiB.
pub const DEFAULT_MAX_LINE_BYTES: usize = 4 << 20;

impl ServerBuilder {
    /// Sets the name reported in `serverInfo` (defaults to the crate's name).
    pub fn name(mut self, name: impl Into<String>) -> Self {
        self.info.get_or_insert_with(Implementation::default).name = name.into();
        self
    }

    /// Sets the version reported in `serverInfo`.
    pub fn version(mut self, version: impl Into<String>) -> Self {
        self.info.get_or_insert_with(Implementation::default).version = version.into();
        self
    }

    /// Sets the whole `serverInfo`.
    pub fn info(mut self, info: Implementation) -> Self {
        self.info = Some(info);
        self
    }

    /// Sets `serverInfo` unless it was set already (as `#[mcp::main]` does with the binary's name and version).
    pub fn default_info(mut self, info: Implementation) -> Self {
        self.info.get_or_insert(info);
        self
    }

    /// Instructions for the client's model, sent in `initialize`.
    pub fn instructions(mut self, instructions: impl Into<String>) -> Self {
        self.instructions = Some(instructions.into());
        self
    }

    /// Adds a tool defined with `#[mcp::tool]`: `builder.tool::<my_tool>()`.
    pub fn tool<T: ToolItem>(self) -> Self {
        self.tool_def(*T::DEF)
    }

    /// Adds a tool from its definition.
    pub fn tool_def(mut self, def: ToolDef) -> Self {
        self.tools.push(def);
        self
    }

    /// Adds every tool linked into the program with `#[mcp::tool]`.
    pub fn registered_tools(mut self) -> Self {
        self.tools.extend(inventory::iter::<ToolRegistration>.into_iter().map(|r| *r.0));
        self
    }

    /// Adds a custom method defined with `#[mcp::method]`: `builder.method::<my_method>()`.
    pub fn method<M: MethodItem>(self) -> Self {
        self.method_def(*M::DEF)
    }

    /// Adds a custom method from its definition.
    pub fn method_def(mut self, def: MethodDef) -> Self {
        self.methods.push(def);
        self
    }

    /// Adds every custom method linked into the program with `#[mcp::method]`.
    pub fn registered_methods(mut self) -> Self {
        self.methods.extend(inventory::iter::<MethodRegistration>.into_iter().map(|r| *r.0));
        self
    }

    /// Adds everything linked into the program: tools and custom methods.
    pub fn registered(self) -> Self {
        self.registered_tools().registered_methods()
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

    /// How long shutdown waits for cancelled handlers and cleanups, and then for the shutdown hooks. Default 5 s.
    pub fn shutdown_timeout(mut self, timeout: Duration) -> Self {
        self.shutdown_timeout = Some(timeout);
        self
    }

    /// The largest incoming message, in bytes, that the stdio transport reads; longer lines are rejected with -32600
    /// without being held in memory. Defaults to [`DEFAULT_MAX_LINE_BYTES`].
    pub fn max_message_bytes(mut self, bytes: usize) -> Self {
        self.max_line_bytes = Some(bytes);
        self
    }

    /// Builds the server: computes every schema and the list results once.
    pub fn build(self) -> Result<Server, BuildError> {
        let mut tools: HashMap<&'static str, ToolDef> = HashMap::with_capacity(self.tools.len());
        for def in self.tools {
            if let Some(first) = tools.get(def.name) {
                if first.location == def.location {
                    continue; // the same definition added twice
                }
                let (a, b) = if first.location <= def.location {
                    (first.location, def.location)
                } else {
                    (def.location, first.location)
                };
                return Err(BuildError::DuplicateTool {
                    name: def.name.to_owned(),
                    first: a.to_owned(),
                    second: b.to_owned(),
                });
            }
            tools.insert(def.name, def);
        }
        let mut listed: Vec<&ToolDef> = tools.values().collect();
        listed.sort_by_key(|d| d.name);
        let mut list = Vec::with_capacity(listed.len());
        for def in listed {
            let input_schema = (def.input_schema)();
            if input_schema.get("type").and_then(Value::as_str) != Some("object") {
                return Err(BuildError::BadInputSchema { name: def.name.to_owned() });
            }
            list.push(Tool {
                name: def.name.to_owned(),
                title: def.title.map(str::to_owned),
                description: def.description.map(str::to_owned),
                input_schema,
                output_schema: (def.output_schema)(),
                annotations: def.hints.to_annotations(None),
            });
        }
        if let Some(type_name) = self.duplicate_state {
            return Err(BuildError::DuplicateState { type_name });
        }
        let mut methods: HashMap<&'static str, MethodDef> = HashMap::with_capacity(self.methods.len());
        for def in self.methods {
            crate::method::check_name(def.name).map_err(|message| BuildError::ReservedMethod { message })?;
            if let Some(first) = methods.get(def.name) {
                if first.location == def.location {
                    continue;
                }
                return Err(BuildError::DuplicateMethod {
                    name: def.name.to_owned(),
                    first: first.location.to_owned(),
                    second: def.location.to_owned(),
                });
            }
            methods.insert(def.name, def);
        }
        let handlers = tools
            .values()
            .map(|d| ("tool", d.name, d.location, d.injected))
            .chain(methods.values().map(|d| ("method", d.name, d.location, d.injected)));
        check_requirements(&self.state, handlers)?;
        let tools_list =
            serde_json::value::to_raw_value(&json!({ "tools": list })).expect("tool definitions serialize");
        let mut capabilities = json!({ "logging": {} });
        if !tools.is_empty() {
            capabilities["tools"] = json!({ "listChanged": false });
        }
        let info = self.info.unwrap_or_else(|| Implementation::new("mcp-server", env!("CARGO_PKG_VERSION")));
        Ok(Server {
            inner: Arc::new(ServerInner {
                info,
                instructions: self.instructions,
                tools,
                tools_list,
                capabilities,
                max_line_bytes: self.max_line_bytes.unwrap_or(DEFAULT_MAX_LINE_BYTES),
                methods,
                state: self.state,
                shutdown_hooks: Mutex::new(self.shutdown_hooks),
                shutdown_timeout: self.shutdown_timeout.unwrap_or(DEFAULT_SHUTDOWN_TIMEOUT),
            }),
        })
    }
}

/// The default bound on each step of shutdown: 5 s.
pub const DEFAULT_SHUTDOWN_TIMEOUT: Duration = Duration::from_secs(5);

fn check_requirements<'a>(
    state: &StateMap,
    handlers: impl Iterator<Item = (&'static str, &'a str, &'a str, Injected)>,
) -> Result<(), BuildError> {
    let mut missing: Vec<BuildError> = Vec::new();
    for (kind, name, location, injected) in handlers {
        for requirement in injected.iter().filter_map(|f| f()) {
            if !state.contains(&requirement) {
                missing.push(BuildError::MissingState {
                    kind,
                    handler: name.to_owned(),
                    type_name: requirement.type_name,
                    location: location.to_owned(),
                });
            }
        }
    }
    // Report the same one whatever the order of the maps.
    missing.sort_by_key(|e| e.to_string());
    match missing.into_iter().next() {
        Some(e) => Err(e),
        None => Ok(()),
    }
}

impl Server {
    /// A builder with nothing registered.
    pub fn builder() -> ServerBuilder {
        ServerBuilder::default()
    }

    /// A server with everything linked into the program by `#[mcp::tool]` and `#[mcp::method]`.
    pub fn from_registry() -> Result<Server, BuildError> {
        Server::builder().registered().build()
    }

    /// The names of the state types the server holds.
    pub fn state_types(&self) -> Vec<&'static str> {
        self.inner.state.type_names()
    }

    /// Runs the shutdown hooks (once; later calls do nothing), bounded by the shutdown timeout.
    pub async fn shutdown(&self) {
        let hooks = std::mem::take(&mut *self.inner.shutdown_hooks.lock().unwrap_or_else(|e| e.into_inner()));
        if hooks.is_empty() {
            return;
        }
        let run = async {
            for hook in hooks {
                hook.await;
            }
        };
        if tokio::time::timeout(self.inner.shutdown_timeout, run).await.is_err() {
            tracing::warn!(timeout = ?self.inner.shutdown_timeout, "shutdown hooks did not finish in time");
        }
    }

    /// The `tools/list` result, as JSON.
    pub fn tools_list(&self) -> Value {
        serde_json::from_str(self.inner.tools_list.get()).unwrap_or(Value::Null)
    }

    /// Serves this server over stdin and stdout until stdin closes, or Ctrl-C or SIGTERM arrives; then cancels what
    /// is in flight, waits (bounded) for cleanups, and runs the shutdown hooks.
    pub async fn serve_stdio(self) -> std::io::Result<()> {
        let result =
            crate::transport::stdio::serve(self.clone(), tokio::io::stdin(), tokio::io::stdout(), stop_signal()).await;
        self.shutdown().await;
        result
    }

    /// Serves one session over any pair of byte streams, newline-delimited JSON, as on stdio. The shutdown hooks are
    /// not run when it ends (other sessions may still be using the server): call [`Server::shutdown`] for that.
    pub async fn serve_streams<R, W>(self, reader: R, writer: W) -> std::io::Result<()>
    where
        R: tokio::io::AsyncRead + Unpin + Send + 'static,
        W: tokio::io::AsyncWrite + Unpin + Send + 'static,
    {
        crate::transport::stdio::serve(self, reader, writer, std::future::pending()).await
    }
}

/// Completes on Ctrl-C, or on SIGTERM where there is one.
async fn stop_signal() {
    #[cfg(unix)]
    {
        use tokio::signal::unix::{signal, SignalKind};
        match signal(SignalKind::terminate()) {
            Ok(mut term) => {
                tokio::select! {
                    _ = tokio::signal::ctrl_c() => tracing::info!("interrupted: shutting down"),
                    _ = term.recv() => tracing::info!("terminated: shutting down"),
                }
            }
            Err(_) => {
                let _ = tokio::signal::ctrl_c().await;
            }
        }
    }
    #[cfg(not(unix))]
    {
        let _ = tokio::signal::ctrl_c().await;
        tracing::info!("interrupted: shutting down");
    }
}
