//! Extensions: what a protocol extension adds to a server — its entry under `capabilities.extensions`, its methods,
//! and anything else it builds in (tools, resources, state, layers). The Tasks extension is one: the server adds it
//! when a tool can run as a task.

use serde_json::{Map, Value};

use crate::builder::ServerBuilder;
use crate::context::Era;
use crate::handler::method::MethodDef;
#[cfg(doc)]
use crate::Server;

/// A protocol extension, added with [`ServerBuilder::extension`].
///
/// - **Negotiation**: the server [declares](Extension::declare) it, by default under `capabilities.extensions.<id>`,
///   in `initialize` (2025-11-25) and `server/discover` (2026-07-28); a handler sees whether the client declared it
///   with `ctx.meta().client_extension(id)`.
/// - **Notifications**: [`notifications`](Extension::notifications) are the ones it sends with
///   [`Server::notify`], to every listening client that declared the extension (a 2025 session; a 2026
///   `subscriptions/listen` stream whose filter opted in with the notification's key), on every instance.
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
/// use mcp::extension::{Declaration, Extension};
/// use mcp::Era;
/// use mcp::handler::MethodItem;
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
///     fn declare(&self, _era: Era) -> Declaration {
///         Declaration::settings(json!({ "retentionDays": 30 }))
///     }
///     fn methods(&self) -> Vec<mcp::handler::MethodDef> {
///         vec![record::DEF.clone()]
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

    /// How the extension is declared in this era's capabilities (`initialize` in 2025-11-25, `server/discover` in
    /// 2026-07-28): by default listed under `capabilities.extensions.<id>` with `{}` (supported, no settings) in both.
    /// See [`Declaration`].
    fn declare(&self, era: Era) -> Declaration {
        let _ = era;
        Declaration::settings(Value::Object(Map::new()))
    }

    /// The notifications the extension sends to the clients that listen, with [`Server::notify`]: each names its
    /// method and the key a 2026 `subscriptions/listen` filter opts in with. None by default.
    fn notifications(&self) -> Vec<NotificationDef> {
        Vec::new()
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

/// How an extension is declared in one era's `capabilities`, from [`Extension::declare`]: its settings under
/// `capabilities.extensions.<id>`, and any capability of its own beside the specification's (the 2025-11-25 era
/// has Tasks as `capabilities.tasks`).
///
/// ```
/// use mcp::extension::Declaration;
/// use serde_json::json;
///
/// // Listed under `extensions` with settings.
/// let listed = Declaration::settings(json!({ "directoryRead": true }));
/// // Not listed under `extensions`, but a capability of its own.
/// let own = Declaration::none().with_capability("tasks", json!({ "list": {} }));
/// # let _ = (listed, own);
/// ```
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Declaration {
    pub(crate) settings: Option<Value>,
    pub(crate) capabilities: Map<String, Value>,
}

impl Declaration {
    /// Listed under `capabilities.extensions.<id>` with these settings (`json!({})`: supported, no settings).
    pub fn settings(settings: Value) -> Declaration {
        Declaration { settings: Some(settings), capabilities: Map::new() }
    }

    /// Not declared in this era.
    pub fn none() -> Declaration {
        Declaration::default()
    }

    /// Adds a capability of the extension's own to `capabilities` (beside `tools`, `prompts`, ...): for an
    /// extension an era has as a capability. `build()` refuses a name the specification has.
    pub fn with_capability(mut self, name: impl Into<String>, value: Value) -> Declaration {
        self.capabilities.insert(name.into(), value);
        self
    }
}

/// A notification an extension sends ([`Extension::notifications`]): its method and the key of the 2026
/// `subscriptions/listen` filter that opts in to it.
///
/// ```
/// let recorded = mcp::extension::NotificationDef::new("notifications/com.example.audit/recorded", "com.example.audit/recorded");
/// # let _ = recorded;
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NotificationDef {
    pub(crate) method: String,
    pub(crate) filter: String,
}

impl NotificationDef {
    /// `method` is the notification's (`notifications/...`, in the extension's namespace); `filter` the key a 2026
    /// client sets to `true` in its `subscriptions/listen` filter to get it.
    pub fn new(method: impl Into<String>, filter: impl Into<String>) -> NotificationDef {
        NotificationDef { method: method.into(), filter: filter.into() }
    }

    /// The notification's method.
    pub fn method(&self) -> &str {
        &self.method
    }

    /// Its key in a 2026 `subscriptions/listen` filter.
    pub fn filter(&self) -> &str {
        &self.filter
    }
}

/// The capabilities of the specification, in either era: no extension may declare one of these as its own.
const CORE_CAPABILITIES: &[&str] =
    &["tools", "prompts", "resources", "logging", "completions", "extensions", "experimental", "tasks"];

/// The notifications of the specification, in either era, and the keys of the 2026 listen filter.
const CORE_NOTIFICATIONS: &[&str] = &[
    "notifications/cancelled",
    "notifications/progress",
    "notifications/message",
    "notifications/initialized",
    "notifications/tools/list_changed",
    "notifications/prompts/list_changed",
    "notifications/resources/list_changed",
    "notifications/resources/updated",
    "notifications/roots/list_changed",
    "notifications/tasks",
    "notifications/tasks/status",
    "notifications/elicitation/complete",
    "notifications/subscriptions/acknowledged",
];
const CORE_FILTER_KEYS: &[&str] =
    &["toolsListChanged", "promptsListChanged", "resourcesListChanged", "resourceSubscriptions", "taskIds"];

/// `Err` with a sentence if an extension's declaration takes a capability of the specification's (Tasks may have
/// `tasks`, which it is).
pub(crate) fn check_declaration(id: &str, declaration: &Declaration) -> Result<(), String> {
    match declaration.capabilities.keys().find(|k| CORE_CAPABILITIES.contains(&k.as_str())) {
        Some(name) if !(id == crate::task::EXTENSION && name == "tasks") => Err(format!(
            "extension `{id}` declares the capability `{name}`, which is the specification's: put its settings \
             under `extensions` (`Declaration::settings`)"
        )),
        _ => Ok(()),
    }
}

/// `Err` with a sentence if an extension's notification is not one it may send.
pub(crate) fn check_notification(id: &str, def: &NotificationDef) -> Result<(), String> {
    let method = def.method.as_str();
    if !method.starts_with("notifications/") || method.len() == "notifications/".len() {
        return Err(format!(
            "extension `{id}` declares the notification `{method}`: a notification's method starts with \
             `notifications/` and names it (`notifications/com.example.audit/recorded`)"
        ));
    }
    if CORE_NOTIFICATIONS.contains(&method) {
        return Err(format!(
            "extension `{id}` declares the notification `{method}`, which is the specification's: pick a name in \
             the extension's own namespace"
        ));
    }
    if def.filter.is_empty() || CORE_FILTER_KEYS.contains(&def.filter.as_str()) {
        return Err(format!(
            "extension `{id}` gives its notification `{method}` the listen filter key `{}`: pick a key of the \
             extension's own (`com.example.audit/recorded`)",
            def.filter
        ));
    }
    Ok(())
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

    fn declare(&self, era: Era) -> Declaration {
        let (settings, own) = crate::task::Tasks::declare(era);
        let declaration = Declaration { settings, capabilities: Map::new() };
        match own {
            Some((name, value)) => declaration.with_capability(name, value),
            None => declaration,
        }
    }

    fn methods(&self) -> Vec<MethodDef> {
        crate::task::Tasks::methods()
    }

    fn tool_call_hook(&self) -> Option<std::sync::Arc<dyn crate::hook::ToolCallHook>> {
        Some(std::sync::Arc::new(crate::task::hook::TasksHook { fronts: self.fronts }))
    }
}
