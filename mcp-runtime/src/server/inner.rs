//! What a built server holds, in parts: what it is and serves, its limits, the handlers beside its registry, the
//! 2026 era's state, and the seams of scale-out. The parts are built once ([`ServerBuilder::build`]) and read through
//! accessors: no field is written after the build, and a layer reads only the part it needs.
//!
//! [`ServerBuilder::build`]: crate::ServerBuilder::build

use std::collections::HashMap;
use std::sync::{Arc, Mutex, RwLock};
use std::time::Duration;

use serde_json::Value;

use super::registry::Registry;
use super::{hub, visibility, Sent};
use crate::context::state::StateMap;
use crate::handler::method::MethodDef;
use crate::handler::tool::BoxFuture;
use crate::wire::protocol::{CacheHint, Implementation};

/// The server's shared state (see the module's doc).
pub(crate) struct ServerInner {
    /// What the server is: its info, instructions and capabilities, and what it serves.
    served: Served,
    limits: Limits,
    handlers: Handlers,
    v2026: Era2026,
    scale_out: ScaleOut,
    /// The application's state (`&State<T>`), and what the built-in extensions keep by type (the task engine).
    state: StateMap,
    parts: StateMap,
    shutdown_hooks: Mutex<Vec<BoxFuture<'static, ()>>>,
    /// Where requests and sessions are recorded; `None`: nowhere, at no cost.
    metrics: Option<crate::metrics::Metrics>,
    /// The server as an OAuth resource server: what HTTP requests must present.
    auth: Option<crate::auth::Guard>,
}

/// What the server is and what it serves.
pub(crate) struct Served {
    pub info: Implementation,
    pub instructions: Option<String>,
    /// The current snapshot of what is served; replaced whole on a change.
    pub registry: RwLock<Arc<Registry>>,
    /// The `capabilities` object of `initialize`, built once.
    pub capabilities: Value,
    /// What each caller may see ([`ServerBuilder::visible`](crate::ServerBuilder::visible)); nothing hidden by
    /// default.
    pub visibility: visibility::Visibility,
    /// Whether any tool runs as a task: then the `tasks/*` methods are served (and the 2025 capability and the
    /// 2026 extension declared).
    pub tasks_enabled: bool,
    /// Tool calls' arguments and results go on their spans ([`ServerBuilder::capture_tool_content`](crate::ServerBuilder::capture_tool_content)).
    pub capture_tool_content: bool,
}

/// The server's limits.
pub(crate) struct Limits {
    /// The longest message a transport reads.
    pub max_message_bytes: usize,
    /// The most requests in flight on one connection.
    pub max_in_flight: usize,
    /// The bounds of every outbound queue.
    pub outbound: crate::base::backlog::OutboundLimits,
    /// How long shutdown waits for requests in flight.
    pub shutdown_timeout: Duration,
}

/// What serves requests beside the registry: custom and extension methods, the middleware, the extensions' hooks.
pub(crate) struct Handlers {
    /// The middleware every request the dispatcher serves goes through; `None` without layers.
    pub layers: Option<crate::middleware::Next>,
    pub methods: HashMap<&'static str, MethodDef>,
    /// The methods of the server's extensions (Tasks' among them when a tool can run as a task).
    pub extension_methods: HashMap<&'static str, MethodDef>,
    /// The extensions' hooks on `tools/call`, in the order the extensions were added (Tasks first).
    pub tool_call_hooks: Vec<Arc<dyn crate::hook::ToolCallHook>>,
    /// The notifications the extensions declared, by method.
    pub notifications: HashMap<String, Sent>,
    /// What completes the arguments of prompts and templates another server serves (`mcp::compose`), run under the
    /// prompt's name or the template's mount; `None` without mounts.
    pub relay_completion: Option<crate::handler::tool::Handler<Value>>,
}

/// What only the 2026-07-28 era uses, built once.
pub(crate) struct Era2026 {
    /// The `serverInfo`, as JSON (2026 results carry it in `_meta`).
    pub info_value: Value,
    /// What every 2026 result starts with (`resultType`, `_meta` with the server's info), serialized once.
    pub result_prefix: String,
    /// The result of `server/discover`.
    pub discover: Value,
    /// The 2026 clients seen lately, so that a request of one reads its envelope's text only.
    pub known_clients: crate::context::KnownClients,
    /// The caching hints of 2026 lists, `server/discover` and resource reads without their own.
    pub cache: CacheHint,
    /// Seals the `requestState` of input-required results.
    pub sealer: crate::base::seal::Sealer,
    /// How long a `requestState` stays valid.
    pub request_state_ttl: Duration,
}

/// The seams of scale-out: who listens for changes here, and what the instances share.
pub(crate) struct ScaleOut {
    /// Who listens for changes on this instance: 2025 sessions, 2026 listen streams.
    pub subscribers: hub::Subscribers,
    /// Who listens for the changes other instances made, and only for those: the task engine (a task that ended
    /// or got its input elsewhere), which registers itself when the server is built.
    pub elsewhere: hub::Subscribers,
    /// How the instances tell each other what changed; `None`: this is the only instance.
    pub hub: Option<Arc<dyn hub::ChangeHub>>,
    /// Where 2025 sessions are kept for every instance; `None`: each instance keeps its own.
    #[cfg_attr(not(feature = "http"), allow(dead_code))]
    pub session_store: Option<Arc<dyn crate::store::session::SessionStore>>,
    /// Where the SSE events of 2025 sessions are kept for every instance; `None`: each instance keeps its own.
    #[cfg_attr(not(feature = "http"), allow(dead_code))]
    pub event_log: Option<Arc<dyn crate::store::events::EventLog>>,
    /// This instance, as its published changes name it.
    pub instance: hub::InstanceId,
}

/// The parts [`ServerInner::new`] takes that are not groups of their own.
pub(crate) struct Rest {
    pub state: StateMap,
    pub parts: StateMap,
    pub shutdown_hooks: Vec<BoxFuture<'static, ()>>,
    pub metrics: Option<crate::metrics::Metrics>,
    pub auth: Option<crate::auth::Guard>,
}

impl ServerInner {
    /// The server's state from its parts (the builder's last step).
    pub(crate) fn new(
        served: Served,
        limits: Limits,
        handlers: Handlers,
        v2026: Era2026,
        scale_out: ScaleOut,
        rest: Rest,
    ) -> ServerInner {
        let Rest { state, parts, shutdown_hooks, metrics, auth } = rest;
        ServerInner {
            served,
            limits,
            handlers,
            v2026,
            scale_out,
            state,
            parts,
            shutdown_hooks: Mutex::new(shutdown_hooks),
            metrics,
            auth,
        }
    }

    /// What the server is and serves.
    pub(crate) fn served(&self) -> &Served {
        &self.served
    }

    pub(crate) fn limits(&self) -> &Limits {
        &self.limits
    }

    pub(crate) fn handlers(&self) -> &Handlers {
        &self.handlers
    }

    pub(crate) fn v2026(&self) -> &Era2026 {
        &self.v2026
    }

    pub(crate) fn scale_out(&self) -> &ScaleOut {
        &self.scale_out
    }

    /// The application's state, for `&State<T>`.
    pub(crate) fn state(&self) -> &StateMap {
        &self.state
    }

    /// What the built-in extensions keep, by type.
    pub(crate) fn parts(&self) -> &StateMap {
        &self.parts
    }

    /// What runs at shutdown ([`ServerBuilder::on_shutdown`](crate::ServerBuilder::on_shutdown)).
    pub(crate) fn shutdown_hooks(&self) -> &Mutex<Vec<BoxFuture<'static, ()>>> {
        &self.shutdown_hooks
    }

    /// Where requests and sessions are recorded.
    #[inline]
    pub(crate) fn metrics(&self) -> Option<&crate::metrics::Metrics> {
        self.metrics.as_ref()
    }

    /// The server as an OAuth resource server.
    #[cfg_attr(not(feature = "http"), allow(dead_code))]
    pub(crate) fn auth(&self) -> Option<&crate::auth::Guard> {
        self.auth.as_ref()
    }
}
