//! Extensions: what a protocol extension adds to a server — its entry under `capabilities.extensions`, its methods,
//! and anything else it builds in (tools, resources, state, layers). The Tasks extension is one: the server adds it
//! when a tool can run as a task.

use serde_json::{Map, Value};

use crate::builder::ServerBuilder;
use crate::context::Era;
use crate::handler::method::MethodDef;

/// A protocol extension, added with [`ServerBuilder::extension`].
///
/// - **Negotiation**: the server lists [`settings`](Extension::settings) under `capabilities.extensions.<id>`
///   in `initialize` (2025-11-25) and `server/discover` (2026-07-28); a handler sees whether the client declared it
///   with `ctx.meta().client_extension(id)`.
/// - **Methods**: [`methods`](Extension::methods) are served in both eras like custom methods, with typed
///   parameters (`#[mcp::method]` definitions, `M::DEF`), and may use the extension's own namespace; a name that
///   would shadow a method of the specification (`tools/call`, `initialize`, ...) or another method is refused by
///   `build()`.
/// - **Hooks**: [`tool_call_hook`](Extension::tool_call_hook) changes how a `tools/call` is answered, as Tasks turns
///   a call into a task ([`mcp::hook`](crate::hook)).
/// - **Everything else** goes through [`setup`](Extension::setup), which gets the builder: tools, resources,
///   prompts and state the extension serves, and layers ([`ServerBuilder::layer`]) that see every request.
///
/// ```
/// use mcp::{Era, Extension, MethodItem};
/// use serde_json::{json, Value};
///
/// /// Record an audit entry.
/// #[mcp::method(name = "com.example.audit/record")]
/// async fn record(
///     /// What happened.
///     event: String,
/// ) -> mcp::Json<Value> {
///     mcp::Json(json!({ "recorded": event }))
/// }
///
/// struct Audit;
///
/// impl Extension for Audit {
///     fn id(&self) -> &str {
///         "com.example/audit"
///     }
///     fn settings(&self, _era: Era) -> Option<Value> {
///         Some(json!({ "retentionDays": 30 }))
///     }
///     fn methods(&self) -> Vec<mcp::MethodDef> {
///         vec![*record::DEF]
///     }
/// }
///
/// let server = mcp::Server::builder().extension(Audit).build().unwrap();
/// assert_eq!(server.schema()["capabilities"]["extensions"]["com.example/audit"]["retentionDays"], 30);
/// ```
pub trait Extension: Send + 'static {
    /// The extension's identifier: a reverse-DNS prefix and a name (`io.modelcontextprotocol/tasks`,
    /// `com.example/audit`).
    fn id(&self) -> &str;

    /// What the server says about the extension under `capabilities.extensions.<id>` in this era (`{}` by default:
    /// supported, no settings); `None` leaves it out of that era's capabilities.
    fn settings(&self, era: Era) -> Option<Value> {
        let _ = era;
        Some(Value::Object(Map::new()))
    }

    /// Members the extension adds to the 2025-11-25 `capabilities` object itself, for one that 2025-11-25 has as a
    /// capability of its own (Tasks: `tasks`). None by default.
    fn capabilities_2025(&self) -> Map<String, Value> {
        Map::new()
    }

    /// The extension's methods.
    fn methods(&self) -> Vec<MethodDef> {
        Vec::new()
    }

    /// The extension's hook on `tools/call`, for one that changes how calls are answered (Tasks turns a call into a
    /// task): see [`ToolCallHook`](crate::hook::ToolCallHook). None by default.
    fn tool_call_hook(&self) -> Option<std::sync::Arc<dyn crate::hook::ToolCallHook>> {
        None
    }

    /// Checks what the extension was given (its files, its settings) when the server is built, after
    /// [`setup`](Extension::setup): an `Err` fails `build()` with
    /// [`BuildError::BadExtension`](crate::BuildError::BadExtension), whose message it is (name the file and the
    /// rule). `Ok` by default.
    fn check(&self) -> Result<(), String> {
        Ok(())
    }

    /// Adds what else the extension serves to the builder (tools, resources, prompts, state, layers). Runs once,
    /// when the server is built, before anything else is read from the builder.
    fn setup(&self, builder: ServerBuilder) -> ServerBuilder {
        builder
    }
}

/// The methods of the specification, in either era: no extension method may take one of these names.
const CORE_METHODS: &[&str] = &[
    "initialize",
    "ping",
    "tools/list",
    "tools/call",
    "prompts/list",
    "prompts/get",
    "resources/list",
    "resources/read",
    "resources/templates/list",
    "resources/subscribe",
    "resources/unsubscribe",
    "completion/complete",
    "logging/setLevel",
    "sampling/createMessage",
    "elicitation/create",
    "roots/list",
    "server/discover",
    "subscriptions/listen",
];

/// `Err` with a sentence if an extension's identifier or a method name is not one an extension may have.
pub(crate) fn check(id: &str, method: Option<&str>) -> Result<(), String> {
    match method {
        None => match id.split_once('/') {
            Some((prefix, name)) if !prefix.is_empty() && !name.is_empty() && !id.contains(char::is_whitespace) => {
                Ok(())
            }
            _ => Err(format!(
                "extension identifier `{id}` needs a prefix and a name (`com.example/name`), as `_meta` keys do"
            )),
        },
        Some(name) if name.starts_with("notifications/") || CORE_METHODS.contains(&name) => Err(format!(
            "extension `{id}` defines the method `{name}`, which would shadow the specification's: pick a name in the \
             extension's own namespace"
        )),
        Some("") => Err(format!("extension `{id}` defines a method without a name")),
        Some(_) => Ok(()),
    }
}

/// The Tasks extension, added as every extension is: the task engine says what it declares and serves.
impl Extension for crate::task::Tasks {
    fn id(&self) -> &str {
        crate::task::EXTENSION
    }

    fn settings(&self, era: Era) -> Option<Value> {
        crate::task::Tasks::settings(era)
    }

    fn capabilities_2025(&self) -> Map<String, Value> {
        crate::task::Tasks::capabilities_2025()
    }

    fn methods(&self) -> Vec<MethodDef> {
        crate::task::Tasks::methods()
    }

    fn tool_call_hook(&self) -> Option<std::sync::Arc<dyn crate::hook::ToolCallHook>> {
        Some(std::sync::Arc::new(crate::task::hook::TasksHook { fronts: self.fronts }))
    }
}
