//! [`Server`]: the shared, immutable configuration — registries, capabilities, server info — built once.

use std::collections::HashMap;
use std::fmt;
use std::sync::Arc;

use serde_json::value::RawValue;
use serde_json::{json, Value};

use crate::protocol::{Implementation, Tool};
use crate::tool::{ToolDef, ToolItem};

/// A registration emitted by `#[mcp::tool]` into the global registry.
#[doc(hidden)]
pub struct ToolRegistration(pub &'static ToolDef);

inventory::collect!(ToolRegistration);

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
}

impl fmt::Debug for Server {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut names: Vec<_> = self.inner.tools.keys().collect();
        names.sort();
        f.debug_struct("Server")
            .field("info", &self.inner.info)
            .field("tools", &names)
            .finish()
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
}

impl fmt::Display for BuildError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            BuildError::DuplicateTool {
                name,
                first,
                second,
            } => {
                write!(f, "two tools are named `{name}`: one at {first}, one at {second}; rename one with #[mcp::tool(name = \"...\")]")
            }
            BuildError::BadInputSchema { name } => {
                write!(
                    f,
                    "the input schema of tool `{name}` is not an object schema"
                )
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
    max_line_bytes: Option<usize>,
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
        self.info
            .get_or_insert_with(Implementation::default)
            .version = version.into();
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
        self.tools.extend(
            inventory::iter::<ToolRegistration>
                .into_iter()
                .map(|r| *r.0),
        );
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
                return Err(BuildError::BadInputSchema {
                    name: def.name.to_owned(),
                });
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
        let tools_list = serde_json::value::to_raw_value(&json!({ "tools": list }))
            .expect("tool definitions serialize");
        let mut capabilities = json!({ "logging": {} });
        if !tools.is_empty() {
            capabilities["tools"] = json!({ "listChanged": false });
        }
        let info = self
            .info
            .unwrap_or_else(|| Implementation::new("mcp-server", env!("CARGO_PKG_VERSION")));
        Ok(Server {
            inner: Arc::new(ServerInner {
                info,
                instructions: self.instructions,
                tools,
                tools_list,
                capabilities,
                max_line_bytes: self.max_line_bytes.unwrap_or(DEFAULT_MAX_LINE_BYTES),
            }),
        })
    }
}

impl Server {
    /// A builder with nothing registered.
    pub fn builder() -> ServerBuilder {
        ServerBuilder::default()
    }

    /// A server with everything linked into the program by `#[mcp::tool]`.
    pub fn from_registry() -> Result<Server, BuildError> {
        Server::builder().registered_tools().build()
    }

    /// The `tools/list` result, as JSON.
    pub fn tools_list(&self) -> Value {
        serde_json::from_str(self.inner.tools_list.get()).unwrap_or(Value::Null)
    }

    /// Serves this server over stdin and stdout until stdin closes; then cancels what is in flight and waits
    /// (bounded) for cleanups.
    pub async fn serve_stdio(self) -> std::io::Result<()> {
        crate::transport::stdio::serve(self, tokio::io::stdin(), tokio::io::stdout()).await
    }

    /// Serves this server over any pair of byte streams, newline-delimited JSON, as on stdio.
    pub async fn serve_streams<R, W>(self, reader: R, writer: W) -> std::io::Result<()>
    where
        R: tokio::io::AsyncRead + Unpin + Send + 'static,
        W: tokio::io::AsyncWrite + Unpin + Send + 'static,
    {
        crate::transport::stdio::serve(self, reader, writer).await
    }
}
