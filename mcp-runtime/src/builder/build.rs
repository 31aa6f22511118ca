//! `build()`'s work: every check of what the builder was given, and every schema, list page and capability object
//! computed once.

use crate::context::state::StateMap;
use crate::context::Era;
use crate::handler::method::MethodDef;
use crate::server::registry::Registry;
use crate::server::{hub, BuildError, Era2026, Handlers, Limits, Rest, ScaleOut, Served, Server, ServerInner};
use crate::wire::protocol::Implementation;
use serde_json::{json, Value};
use std::collections::HashMap;
use std::sync::{Arc, RwLock};

use super::{
    extension, ServerBuilder, DEFAULT_MAX_IN_FLIGHT, DEFAULT_MAX_MESSAGE_BYTES, DEFAULT_PAGE_SIZE, DEFAULT_SERVER_NAME,
    DEFAULT_SERVER_VERSION, DEFAULT_SHUTDOWN_TIMEOUT,
};

impl ServerBuilder {
    /// Builds the server, one step per part: its info and `requestState` sealer, the registry (with the mounts'
    /// items), the custom methods, the extensions, the handlers' state checked, the capabilities of each era; then
    /// the server, whose watchers and followers start.
    pub(super) fn build_with(
        mut self,
        mut extensions: Vec<Box<dyn extension::Extension>>,
    ) -> Result<Server, BuildError> {
        if let Some(type_name) = self.duplicate_state {
            return Err(BuildError::DuplicateState { type_name });
        }
        let (limits, scale_out) = (self.limits(), self.scale_out());
        let info = server_info(self.info.take().or(self.default_info.take()), self.name.take(), self.version.take());
        let info_value = serde_json::to_value(&info).expect("server info serializes");
        if let Some(metrics) = &self.metrics {
            metrics.serves(&info.name, &info.version);
        }
        let cache = self.cache.unwrap_or_default();
        let sealer = sealer(&self.state_keys, self.shared)?;
        let mut registry = self.registry(extra_2026(&info_value, cache))?;
        #[cfg(feature = "client")]
        let composer = crate::compose::Composer::build(self.mounts, &mut registry)?;
        registry.paginate();
        #[cfg(feature = "client")]
        let methods = methods(self.methods.into_iter().chain(composer.methods()))?;
        #[cfg(not(feature = "client"))]
        let methods = methods(self.methods.into_iter())?;
        let (tasks_enabled, task_fronts) = tasks(&registry, &mut extensions);
        let Extended { methods: extension_methods, notifications, tool_call_hooks } = extended(&extensions, &methods)?;
        check_handlers(&self.state, &registry, methods.values().chain(extension_methods.values()))?;
        let (capabilities, capabilities_2026) = capabilities(&registry, &extensions);
        let auth = match self.authorization {
            Some(config) => Some(config.build().map_err(|message| BuildError::BadAuthorization { message })?),
            None => None,
        };
        let ttl = self.request_state_ttl.unwrap_or(crate::era::v2026::DEFAULT_REQUEST_STATE_TTL);
        let era_2026 =
            era_2026((&info, info_value), &capabilities_2026, self.instructions.as_deref(), cache, sealer, ttl);
        let mut parts = StateMap::default();
        let engine = crate::task::TaskEngine::new(
            self.task_store.unwrap_or_else(|| Arc::new(crate::task::MemoryTaskStore::default())),
            self.task_settings,
            task_fronts,
        );
        let elsewhere = engine.elsewhere();
        parts.insert(engine).expect("the first part of its type");
        #[cfg(feature = "client")]
        parts.insert(composer).expect("the first part of its type");
        let server = Server {
            inner: Arc::new(ServerInner::new(
                Served {
                    info,
                    instructions: self.instructions,
                    registry: RwLock::new(Arc::new(registry)),
                    capabilities,
                    visibility: self.visibility,
                    tasks_enabled,
                    capture_tool_content: self.capture_tool_content.unwrap_or_else(capture_from_env),
                },
                limits,
                Handlers {
                    layers: self.layers.build(),
                    methods,
                    extension_methods,
                    tool_call_hooks,
                    notifications,
                    #[cfg(feature = "client")]
                    relay_completion: Some(crate::handler::tool::Handler::Async(crate::compose::relay_completion)),
                    #[cfg(not(feature = "client"))]
                    relay_completion: None,
                },
                era_2026,
                scale_out,
                Rest { state: self.state, parts, shutdown_hooks: self.shutdown_hooks, metrics: self.metrics, auth },
            )),
        };
        server.inner.scale_out().elsewhere.subscribe(elsewhere);
        Ok(started(server, self.on_start))
    }

    /// The limits every transport applies, with their defaults.
    fn limits(&self) -> Limits {
        Limits {
            max_message_bytes: self.max_message_bytes.unwrap_or(DEFAULT_MAX_MESSAGE_BYTES),
            max_in_flight: self.max_in_flight.unwrap_or(DEFAULT_MAX_IN_FLIGHT),
            outbound: self.outbound.unwrap_or_default(),
            shutdown_timeout: self.shutdown_timeout.unwrap_or(DEFAULT_SHUTDOWN_TIMEOUT),
        }
    }

    /// The seams through which instances share state, as given (none: this is the only instance).
    fn scale_out(&mut self) -> ScaleOut {
        ScaleOut {
            subscribers: hub::Subscribers::default(),
            elsewhere: hub::Subscribers::default(),
            hub: self.change_hub.take(),
            session_store: self.session_store.take(),
            event_log: self.event_log.take(),
            instance: hub::InstanceId::random(),
        }
    }

    /// The registry of the builder's tools, prompts and resources, checked (the mounts' join it afterwards).
    fn registry(&mut self, extra_2026: serde_json::Map<String, Value>) -> Result<Registry, BuildError> {
        let mut registry = Registry::new(self.page_size.unwrap_or(DEFAULT_PAGE_SIZE), extra_2026);
        registry.nullable_options = self.nullable_options;
        registry.tool_meta = std::mem::take(&mut self.tool_meta);
        registry.resource_meta = std::mem::take(&mut self.resource_meta);
        for def in std::mem::take(&mut self.tools) {
            registry.insert_tool(def)?;
        }
        for def in std::mem::take(&mut self.prompts) {
            registry.insert_prompt(def)?;
        }
        for def in std::mem::take(&mut self.resources) {
            registry.insert_resource(def)?;
        }
        Ok(registry)
    }
}

/// The server's `serverInfo`: what it was given (or `#[mcp::main]`'s default), with the name and version set apart.
/// Whether any tool may run as a task, and the eras' task fronts; with such a tool, the Tasks extension goes first
/// among the extensions (its hook is asked first).
fn tasks(
    registry: &Registry,
    extensions: &mut Vec<Box<dyn extension::Extension>>,
) -> (bool, crate::task::front::TaskFronts) {
    let enabled = registry.tools.values().any(|t| t.def.task.support != crate::wire::task::TaskSupport::Forbidden);
    let fronts = crate::task::front::TaskFronts {
        v2025: &crate::era::v2025::Tasks2025,
        v2026: &crate::era::v2026::tasks::Tasks2026,
    };
    if enabled {
        extensions.insert(0, Box::new(crate::task::Tasks { fronts }));
    }
    (enabled, fronts)
}

/// What the 2026 era keeps for every request: the server's info as it is written into results, the answer of
/// `server/discover`, the caching hints, the `requestState` sealer and how long a state lives.
fn era_2026(
    (info, info_value): (&Implementation, Value),
    capabilities: &Value,
    instructions: Option<&str>,
    cache: crate::wire::protocol::CacheHint,
    sealer: crate::base::seal::Sealer,
    request_state_ttl: std::time::Duration,
) -> Era2026 {
    Era2026 {
        result_prefix: crate::era::v2026::result_prefix(&info_value),
        discover: crate::era::v2026::discover_result(info, capabilities, instructions, cache),
        info_value,
        known_clients: Default::default(),
        cache,
        sealer,
        request_state_ttl,
    }
}

/// A built server set going: its hub followed, its watchers and mounts started, the program's start hooks run.
fn started(server: Server, on_start: Vec<Box<dyn FnOnce(Server) + Send>>) -> Server {
    if let Some(hub) = &server.inner.scale_out().hub {
        hub.start(server.inbox());
    }
    watch(&server);
    #[cfg(feature = "client")]
    crate::compose::Composer::start(&server);
    for f in on_start {
        f(server.clone());
    }
    server
}

fn server_info(given: Option<Implementation>, name: Option<String>, version: Option<String>) -> Implementation {
    let mut info = given.unwrap_or_else(|| Implementation::new(DEFAULT_SERVER_NAME, DEFAULT_SERVER_VERSION));
    if let Some(name) = name {
        info.name = name;
    }
    if let Some(version) = version {
        info.version = version;
    }
    info
}

/// The sealer of the 2026 era's `requestState`: a server shared with other instances needs a key they all have.
fn sealer(keys: &[[u8; 32]], shared: bool) -> Result<crate::base::seal::Sealer, BuildError> {
    let sealer = crate::base::seal::Sealer::from_config(keys).map_err(|message| BuildError::BadStateKey { message })?;
    if shared && sealer.random {
        return Err(BuildError::BadStateKey {
            message: format!(
                "a server that shares its state with other instances (ServerBuilder::shared, --redis) needs the \
                 same requestState key on every instance, or a retry that reaches another instance fails: set \
                 {} to the same 64 hex digits everywhere (`openssl rand -hex 32` makes one), or call \
                 ServerBuilder::request_state_key",
                crate::base::seal::KEY_ENV
            ),
        });
    }
    Ok(sealer)
}

/// What 2026 list results carry besides their items: the result type, the caching hints, the server's info.
fn extra_2026(info: &Value, cache: crate::wire::protocol::CacheHint) -> serde_json::Map<String, Value> {
    let extra = json!({
        "resultType": "complete",
        "ttlMs": cache.ttl_ms,
        "cacheScope": cache.scope.as_str(),
        "_meta": { crate::era::v2026::META_SERVER_INFO: info },
    });
    match extra {
        Value::Object(m) => m,
        _ => unreachable!("an object"),
    }
}

/// The custom methods by name: a name in MCP's namespaces, or one taken by another definition, is refused.
fn methods(defs: impl Iterator<Item = MethodDef>) -> Result<HashMap<&'static str, MethodDef>, BuildError> {
    let mut methods: HashMap<&'static str, MethodDef> = HashMap::new();
    for def in defs {
        crate::handler::method::check_name(def.name).map_err(|message| BuildError::ReservedMethod { message })?;
        if let Some(first) = methods.get(def.name) {
            if first.location == def.location {
                continue;
            }
            return Err(BuildError::DuplicateMethod {
                name: def.name.to_string(),
                first: first.location.to_string(),
                second: def.location.to_string(),
            });
        }
        methods.insert(def.name, def);
    }
    Ok(methods)
}

/// What the extensions add: their methods, the notifications they send, their `tools/call` hooks.
struct Extended {
    methods: HashMap<&'static str, MethodDef>,
    notifications: HashMap<String, crate::server::Sent>,
    tool_call_hooks: Vec<Arc<dyn crate::hook::ToolCallHook>>,
}

/// The extensions checked (identifiers, declarations, notifications, methods: none taken twice) and what they add.
fn extended(
    extensions: &[Box<dyn extension::Extension>],
    methods: &HashMap<&'static str, MethodDef>,
) -> Result<Extended, BuildError> {
    let tool_call_hooks = extensions.iter().filter_map(|ext| ext.tool_call_hook()).collect();
    let mut extension_methods: HashMap<&'static str, MethodDef> = HashMap::new();
    let mut ids = std::collections::HashSet::new();
    let mut notifications = HashMap::new();
    for ext in extensions {
        let id = ext.id();
        let bad = |message| BuildError::BadExtension { id: id.to_owned(), message };
        extension::check(id, None).map_err(bad)?;
        ext.check().map_err(bad)?;
        if !ids.insert(id.to_owned()) {
            return Err(bad(format!("two extensions have the identifier `{id}`")));
        }
        for era in [Era::V2025, Era::V2026] {
            extension::check_declaration(id, &ext.declare(era)).map_err(bad)?;
        }
        for def in ext.notifications() {
            extension::check_notification(id, &def).map_err(bad)?;
            let sent = crate::server::Sent { extension: id.to_owned(), filter: def.filter.clone() };
            if notifications.insert(def.method.clone(), sent).is_some() {
                return Err(bad(format!(
                    "extension `{id}` declares the notification `{}`, which another extension has already",
                    def.method
                )));
            }
        }
        for def in ext.methods() {
            extension::check(id, Some(def.name)).map_err(bad)?;
            if methods.contains_key(def.name) || extension_methods.insert(def.name, def.clone()).is_some() {
                return Err(bad(format!(
                    "extension `{id}` defines the method `{}`, which another method (of the server's or of an \
                     extension) has already",
                    def.name
                )));
            }
        }
    }
    Ok(Extended { methods: extension_methods, notifications, tool_call_hooks })
}

/// Every handler's injected state is in the server's state (the first one missing is the error).
fn check_handlers<'a>(
    state: &StateMap,
    registry: &'a Registry,
    methods: impl Iterator<Item = &'a MethodDef>,
) -> Result<(), BuildError> {
    let handlers = registry
        .tools
        .values()
        .map(|l| ("tool", &*l.def.name, &*l.def.location, l.def.injected))
        .chain(registry.prompts.values().map(|l| ("prompt", &*l.def.name, &*l.def.location, l.def.injected)))
        .chain(registry.resources.values().map(|l| ("resource", &*l.def.name, &*l.def.location, l.def.injected)))
        .chain(registry.templates.values().map(|(l, _)| ("resource", &*l.def.name, &*l.def.location, l.def.injected)))
        .chain(methods.map(|d| ("method", d.name, &*d.location, d.injected)));
    crate::server::check_requirements(state, handlers)
}

/// The capabilities of each era (2025, 2026): what the registry serves, and each extension declared as that era
/// says (under `extensions`, and any capability of its own: the 2025-11-25 era has Tasks as `tasks`).
fn capabilities(registry: &Registry, extensions: &[Box<dyn extension::Extension>]) -> (Value, Value) {
    let mut capabilities = json!({ "logging": {} });
    if !registry.tools.is_empty() {
        capabilities["tools"] = json!({ "listChanged": true });
    }
    if !registry.prompts.is_empty() {
        capabilities["prompts"] = json!({ "listChanged": true });
    }
    if !registry.resources.is_empty() || !registry.templates.is_empty() {
        capabilities["resources"] = json!({ "subscribe": true, "listChanged": true });
    }
    if !registry.prompts.is_empty() || !registry.templates.is_empty() {
        capabilities["completions"] = json!({});
    }
    let mut capabilities_2026 = capabilities.clone();
    for ext in extensions {
        for (era, capabilities) in [(Era::V2025, &mut capabilities), (Era::V2026, &mut capabilities_2026)] {
            let Value::Object(capabilities) = capabilities else { continue };
            let declaration = ext.declare(era);
            if let Some(settings) = declaration.settings {
                let listed = capabilities.entry("extensions").or_insert_with(|| json!({}));
                listed[ext.id()] = settings;
            }
            capabilities.extend(declaration.capabilities);
        }
    }
    (capabilities, capabilities_2026)
}

/// With metrics: what they read of the server when scraped (its tasks, a shared Redis's health).
fn watch(server: &Server) {
    let Some(metrics) = server.inner.metrics() else { return };
    let weak = Arc::downgrade(&server.inner);
    metrics.watch_tasks(Box::new(move || match weak.upgrade() {
        Some(inner) => Server { inner }.tasks().running_by_status(),
        None => [0, 0],
    }));
    #[cfg(feature = "redis")]
    if let Some(redis) = server.inner.state().get::<crate::redis::Redis>() {
        let redis = crate::redis::Redis::clone(redis);
        // Watched for as long as the metrics hold the reading.
        let alive = Arc::new(());
        redis.watch(Arc::downgrade(&alive));
        metrics.watch_redis(Box::new(move || {
            let _alive = &alive;
            redis.health()
        }));
    }
}

/// Whether tool calls' arguments and results go on their spans when the builder does not say:
/// `OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT=true`, the OpenTelemetry conventions' switch.
fn capture_from_env() -> bool {
    std::env::var("OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT").is_ok_and(|v| v.eq_ignore_ascii_case("true"))
}
