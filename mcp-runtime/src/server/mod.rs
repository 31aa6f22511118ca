//! [`Server`]: the shared configuration (info, state, capabilities) and the registry of what it serves. The
//! registry can change while the server runs; every change makes a new snapshot and tells every session.

#[cfg(feature = "http")]
mod auth;
mod error;
pub mod hub;
mod inner;
pub(crate) mod registry;
pub mod visibility;

pub use error::BuildError;
pub(crate) use inner::{Era2026, Handlers, Limits, Rest, ScaleOut, Served, ServerInner};

use std::fmt;
use std::sync::{Arc, Weak};

use serde_json::{json, Value};

use crate::base::sync::{Unpoisoned, UnpoisonedRw};
use crate::context::state::StateMap;
use crate::handler::method::MethodDef;
use crate::handler::prompt::PromptDef;
use crate::handler::resource::ResourceDef;
use crate::handler::tool::{Injected, ToolDef};
use crate::server::registry::Registry;

/// A registration emitted by `#[mcp::tool]` into the global registry.
#[doc(hidden)]
pub struct ToolRegistration(pub &'static ToolDef);

inventory::collect!(ToolRegistration);

/// A registration emitted by `#[mcp::method]` into the global registry.
#[doc(hidden)]
pub struct MethodRegistration(pub &'static MethodDef);

inventory::collect!(MethodRegistration);

/// A registration emitted by `#[mcp::prompt]` into the global registry.
#[doc(hidden)]
pub struct PromptRegistration(pub &'static PromptDef);

inventory::collect!(PromptRegistration);

/// A registration emitted by `#[mcp::resource]` into the global registry.
#[doc(hidden)]
pub struct ResourceRegistration(pub &'static ResourceDef);

inventory::collect!(ResourceRegistration);

/// A built server: what it serves, its info, instructions and state. Cheap to clone; shared by every session.
/// Nothing in it belongs to one connection.
///
/// What it serves can change while it runs; each change tells every session that the list changed.
///
/// ```
/// /// Say hello.
/// #[mcp::tool]
/// fn hello() -> &'static str {
///     "Hello!"
/// }
///
/// /// Say goodbye.
/// #[mcp::tool]
/// fn goodbye() -> &'static str {
///     "Goodbye!"
/// }
///
/// let server = mcp::Server::builder().tool::<hello>().build().unwrap();
/// let handle = server.clone(); // as a background task would hold it
/// handle.add_tool(<goodbye as mcp::handler::ToolItem>::DEF.clone()).unwrap();
/// assert!(handle.set_tool_enabled("hello", false));
///
/// let tools = server.tools_list();
/// let names: Vec<&str> = tools["tools"].as_array().unwrap().iter().map(|t| t["name"].as_str().unwrap()).collect();
/// assert_eq!(names, ["goodbye"]);
/// assert_eq!(server.schema()["capabilities"]["tools"]["listChanged"], true);
/// ```
#[derive(Clone)]
pub struct Server {
    pub(crate) inner: Arc<ServerInner>,
}

/// Who sends a notification an extension declared, and the 2026 listen filter's key for it.
#[derive(Clone, Debug)]
pub(crate) struct Sent {
    pub extension: String,
    pub filter: String,
}

/// [`Server::notify`] was given a notification it cannot send.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NotifyError {
    message: String,
}

impl fmt::Display for NotifyError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for NotifyError {}

/// The server a connection is served by.
pub(crate) fn of(link: &dyn crate::context::Link) -> &Server {
    link.server().downcast_ref().expect("a connection is served by a Server")
}

impl crate::context::InFlight {
    /// The server this request is served by.
    pub(crate) fn server(&self) -> &Server {
        of(&*self.link)
    }
}

impl crate::context::Context {
    /// The server this request is served by: to announce resource updates, or to change what is listed.
    pub fn server(&self) -> &Server {
        self.in_flight().server()
    }
}

impl fmt::Debug for Server {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let registry = self.registry();
        f.debug_struct("Server")
            .field("info", &self.inner.served().info)
            .field("tools", &registry.tools.keys().collect::<Vec<_>>())
            .field("prompts", &registry.prompts.keys().collect::<Vec<_>>())
            .field("resources", &registry.resources.keys().collect::<Vec<_>>())
            .field("templates", &registry.templates.keys().collect::<Vec<_>>())
            .finish()
    }
}

impl Server {
    /// The names of the state types the server holds.
    pub fn state_types(&self) -> Vec<&'static str> {
        self.inner.state().type_names()
    }

    /// Runs the shutdown hooks (once; later calls do nothing), bounded by the shutdown timeout.
    pub async fn shutdown(&self) {
        self.shutdown_by(tokio::time::Instant::now() + self.inner.limits().shutdown_timeout).await
    }

    /// Runs the shutdown hooks, giving up at `deadline` (what is left of the shutdown's one deadline).
    pub(crate) async fn shutdown_by(&self, deadline: tokio::time::Instant) {
        let hooks = std::mem::take(&mut *self.inner.shutdown_hooks().locked());
        if hooks.is_empty() {
            return;
        }
        let run = async {
            for hook in hooks {
                hook.await;
            }
        };
        if tokio::time::timeout_at(deadline, run).await.is_err() {
            tracing::warn!(timeout = ?self.inner.limits().shutdown_timeout, "shutdown hooks did not finish by the shutdown deadline");
        }
    }

    /// Every tool as `tools/list` describes it, all pages together: `{"tools": [...]}`.
    pub fn tools_list(&self) -> Value {
        let registry = self.registry();
        let tools: Vec<Value> = registry.tools.values().filter(|l| l.enabled).map(|l| l.descriptor.clone()).collect();
        json!({ "tools": tools })
    }

    /// Everything the server serves, in a stable order, as one JSON document that CI can diff: its info,
    /// capabilities and instructions, every tool, prompt, resource and resource template as the list methods describe
    /// them (with their schemas), and the custom methods' names.
    pub fn schema(&self) -> Value {
        let registry = self.registry();
        fn enabled<'a, D: 'a>(it: impl Iterator<Item = &'a crate::server::registry::Listed<D>>) -> Vec<Value> {
            it.filter(|l| l.enabled).map(|l| l.descriptor.clone()).collect()
        }
        let mut methods: Vec<&str> = self.inner.handlers().methods.keys().copied().collect();
        methods.sort_unstable();
        json!({
            "serverInfo": self.inner.served().info,
            "capabilities": self.inner.served().capabilities,
            "instructions": self.inner.served().instructions,
            "tools": enabled(registry.tools.values()),
            "prompts": enabled(registry.prompts.values()),
            "resources": enabled(registry.resources.values()),
            "resourceTemplates": enabled(registry.templates.values().map(|(l, _)| l)),
            "methods": methods,
        })
    }

    /// The current snapshot of what is served.
    pub(crate) fn registry(&self) -> Arc<Registry> {
        self.inner.served().registry.read_locked().clone()
    }

    /// Applies a change to the registry, then tells every session that the list changed.
    fn change<T>(
        &self,
        list: hub::List,
        edit: hub::Edit,
        apply: impl FnOnce(&mut Registry) -> Result<T, BuildError>,
    ) -> Result<T, BuildError> {
        let out = self.edit_registry(apply)?;
        self.publish(hub::Change::ListChanged { list, edit: Some(edit) });
        Ok(out)
    }

    /// Applies an edit to the registry: a copy is edited and paginated, then swapped in.
    pub(crate) fn edit_registry<T>(
        &self,
        apply: impl FnOnce(&mut Registry) -> Result<T, BuildError>,
    ) -> Result<T, BuildError> {
        let mut guard = self.inner.served().registry.write_locked();
        let mut next = Registry::clone(&guard);
        let out = apply(&mut next)?;
        next.paginate();
        *guard = Arc::new(next);
        Ok(out)
    }

    /// Tells this instance's listeners of a change, and the other instances through the hub.
    pub(crate) fn publish(&self, change: hub::Change) {
        self.inner.scale_out().subscribers.hear(&change);
        if let Some(hub) = &self.inner.scale_out().hub {
            hub.publish(&hub::Published { instance: self.inner.scale_out().instance.clone(), change });
        }
    }

    /// A change another instance published: its registry edit applied here (once: the instance that made it
    /// applied it already, and drops its own echo), what listens for others' changes told (the task engine: a task
    /// ended or answered elsewhere), and this instance's listeners told.
    pub(crate) fn heard(&self, change: hub::Change) {
        if let hub::Change::ListChanged { list, edit: Some(edit) } = &change {
            let _ = self.edit_registry(|r| {
                r.apply_edit(*list, edit);
                Ok(())
            });
        }
        self.inner.scale_out().elsewhere.hear(&change);
        self.inner.scale_out().subscribers.hear(&change);
    }

    /// Where a hub hands this server the changes of the other instances.
    pub(crate) fn inbox(&self) -> hub::Inbox {
        let (server, instance) = (Arc::downgrade(&self.inner), self.inner.scale_out().instance.clone());
        hub::Inbox::new(
            move |published: hub::Published| {
                if published.instance == instance {
                    return;
                }
                if let Some(inner) = server.upgrade() {
                    Server { inner }.heard(published.change);
                }
            },
            {
                let server = Arc::downgrade(&self.inner);
                move || server.strong_count() > 0
            },
        )
    }

    fn check_injected(
        &self,
        kind: &'static str,
        name: &str,
        location: &str,
        injected: Injected,
    ) -> Result<(), BuildError> {
        check_requirements(self.inner.state(), std::iter::once((kind, name, location, injected)))
    }

    /// Adds a tool while the server runs; every session gets `notifications/tools/list_changed`.
    pub fn add_tool(&self, def: ToolDef) -> Result<(), BuildError> {
        self.check_injected("tool", &def.name, &def.location, def.injected)?;
        let edit = hub::Edit::Added { name: def.name.to_string() };
        self.change(hub::List::Tools, edit, |r| r.insert_tool(def))
    }

    /// Removes a tool; `false` if there was none of that name.
    pub fn remove_tool(&self, name: &str) -> bool {
        let edit = hub::Edit::Removed { name: name.to_owned() };
        self.change(hub::List::Tools, edit, |r| {
            Ok(r.apply_edit(hub::List::Tools, &hub::Edit::Removed { name: name.to_owned() }))
        })
        .unwrap_or(false)
    }

    /// Enables or disables a tool (a disabled tool is neither listed nor callable); `false` if there is none.
    pub fn set_tool_enabled(&self, name: &str, enabled: bool) -> bool {
        let edit = hub::Edit::Enabled { name: name.to_owned(), enabled };
        self.change(hub::List::Tools, edit.clone(), |r| Ok(r.apply_edit(hub::List::Tools, &edit))).unwrap_or(false)
    }

    /// Adds a prompt while the server runs; every session gets `notifications/prompts/list_changed`.
    pub fn add_prompt(&self, def: PromptDef) -> Result<(), BuildError> {
        self.check_injected("prompt", &def.name, &def.location, def.injected)?;
        let edit = hub::Edit::Added { name: def.name.to_string() };
        self.change(hub::List::Prompts, edit, |r| r.insert_prompt(def))
    }

    /// Removes a prompt; `false` if there was none of that name.
    pub fn remove_prompt(&self, name: &str) -> bool {
        let edit = hub::Edit::Removed { name: name.to_owned() };
        self.change(hub::List::Prompts, edit.clone(), |r| Ok(r.apply_edit(hub::List::Prompts, &edit))).unwrap_or(false)
    }

    /// Enables or disables a prompt; `false` if there is none.
    pub fn set_prompt_enabled(&self, name: &str, enabled: bool) -> bool {
        let edit = hub::Edit::Enabled { name: name.to_owned(), enabled };
        self.change(hub::List::Prompts, edit.clone(), |r| Ok(r.apply_edit(hub::List::Prompts, &edit))).unwrap_or(false)
    }

    /// Adds a resource or template while the server runs; every session gets
    /// `notifications/resources/list_changed`.
    pub fn add_resource(&self, def: ResourceDef) -> Result<(), BuildError> {
        self.check_injected("resource", &def.name, &def.location, def.injected)?;
        let edit = hub::Edit::Added { name: def.uri.to_string() };
        self.change(hub::List::Resources, edit, |r| r.insert_resource(def))
    }

    /// Removes the resource with this URI, or the template with this template; `false` if there was none.
    pub fn remove_resource(&self, uri: &str) -> bool {
        let edit = hub::Edit::Removed { name: uri.to_owned() };
        self.change(hub::List::Resources, edit.clone(), |r| Ok(r.apply_edit(hub::List::Resources, &edit)))
            .unwrap_or(false)
    }

    /// Enables or disables a resource or template; `false` if there is none.
    pub fn set_resource_enabled(&self, uri: &str, enabled: bool) -> bool {
        let edit = hub::Edit::Enabled { name: uri.to_owned(), enabled };
        self.change(hub::List::Resources, edit.clone(), |r| Ok(r.apply_edit(hub::List::Resources, &edit)))
            .unwrap_or(false)
    }

    /// Tells every client that what it sees may have changed (`list_changed` for tools, prompts and resources), so
    /// that each lists again and gets its own view: after a change the visibility rules read outside a request
    /// (a role granted, a feature switched on for a user).
    pub fn visibility_changed(&self) {
        for list in [hub::List::Tools, hub::List::Prompts, hub::List::Resources] {
            self.publish(hub::Change::ListChanged { list, edit: None });
        }
    }

    /// Tells every session subscribed to `uri` that the resource changed (`notifications/resources/updated`).
    /// Sessions that did not subscribe hear nothing.
    pub fn notify_resource_updated(&self, uri: &str) {
        self.publish(hub::Change::ResourceUpdated { uri: uri.to_owned() });
    }

    /// Sends an extension's notification (one an [`Extension`](crate::extension::Extension) declared in
    /// [`notifications`](crate::extension::Extension::notifications)) to every client that listens and declared the
    /// extension, on every instance: a 2025-11-25 session, and a 2026-07-28 `subscriptions/listen` stream whose
    /// filter set the notification's key to `true`. `params` is a JSON object (or `null` for none).
    ///
    /// An `Err` names what is wrong: a notification no extension declared, or `params` that are not an object.
    pub fn notify(&self, method: &str, params: Value) -> Result<(), NotifyError> {
        let Some(sent) = self.inner.handlers().notifications.get(method) else {
            return Err(NotifyError {
                message: format!(
                    "no extension declares the notification `{method}`: return a `NotificationDef` for it from the \
                     extension's `Extension::notifications`"
                ),
            });
        };
        let params = match params {
            Value::Null => serde_json::Map::new(),
            Value::Object(params) => params,
            other => {
                return Err(NotifyError {
                    message: format!("the params of the notification `{method}` must be a JSON object, not `{other}`"),
                })
            }
        };
        self.publish(hub::Change::Notification {
            extension: sent.extension.clone(),
            filter: sent.filter.clone(),
            method: method.to_owned(),
            params,
        });
        Ok(())
    }

    /// Tells the listeners that follow a task that it changed.
    pub(crate) fn notify_task(&self, record: &crate::store::task::TaskRecord) {
        self.publish(hub::Change::Task { record: Box::new(record.clone()) });
    }

    /// Where a front registers what listens for changes (a session, a listen stream).
    pub(crate) fn subscribe(&self, subscriber: Weak<dyn hub::Subscriber>) {
        self.inner.scale_out().subscribers.subscribe(subscriber);
    }

    /// Ends what the subscribers of one connection (or of all) stream, cleanly: listen streams get their result.
    pub(crate) fn end_streams(&self, conn: Option<&dyn crate::context::Link>) {
        for subscriber in self.inner.scale_out().subscribers.all() {
            subscriber.end(conn);
        }
    }

    /// The server is stopping: every subscriber cancels what it has in flight.
    #[cfg(feature = "http")]
    pub(crate) fn stop_subscribers(&self, reason: &str) {
        for subscriber in self.inner.scale_out().subscribers.all() {
            subscriber.stop(reason);
        }
    }

    /// Whether nothing is registered: no tool, prompt, resource, template or custom method.
    pub fn is_empty(&self) -> bool {
        let registry = self.registry();
        registry.tools.is_empty()
            && registry.prompts.is_empty()
            && registry.resources.is_empty()
            && registry.templates.is_empty()
            && self.inner.handlers().methods.is_empty()
    }

    /// Whether some handler may ask the client something mid-request (a 2026 `input_required` round, whose
    /// `requestState` is sealed): a tool that did not declare [`ToolDef::cannot_ask`], or a prompt or resource
    /// with an injected parameter (the only way to reach a `Context`).
    #[cfg(feature = "http")]
    pub(crate) fn may_ask(&self) -> bool {
        let registry = self.registry();
        registry.tools.values().any(|t| t.def.can_ask)
            || registry.prompts.values().any(|p| !p.def.injected.is_empty())
            || registry.resources.values().any(|r| !r.def.injected.is_empty())
            || registry.templates.values().any(|(r, _)| !r.def.injected.is_empty())
    }

    /// Warns, as a transport starts, when the server serves nothing, naming the usual causes: a silent empty
    /// server is the first hour's most confusing failure.
    pub(crate) fn warn_if_empty(&self) {
        if self.is_empty() {
            tracing::warn!(
                "this server serves nothing: no tool, prompt, resource, template or custom method is registered. \
                 If they are defined in a library crate, the linker dropped its registrations because the binary \
                 names nothing in it: add `use your_library as _;` to the binary. If `main` is `#[tokio::main]`, \
                 use `#[mcp::main]`, or build the server with `Server::from_registry()` or \
                 `Server::builder().registered()`, or add each item with `.tool::<name>()`"
            );
        }
    }
}

/// The state a handler declares (`&State<T>`) that the server was not given: the first, by its message.
pub(crate) fn check_requirements<'a>(
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
    /// With metrics: the series of what this server serves exist from the start, at zero (see `Metrics::prime`).
    pub(crate) fn prime_metrics(&self, transport: crate::metrics::Transport) {
        if let Some(metrics) = self.inner.metrics() {
            let registry = self.registry();
            let tools: Vec<crate::base::name::Name> =
                registry.tools.values().filter(|l| l.enabled).map(|l| l.def.name.clone()).collect();
            let versions = crate::metrics::Versions {
                sessions: crate::context::Era::V2025.name(),
                stateless: crate::context::Era::V2026.name(),
            };
            metrics.prime(&tools, transport, versions);
        }
    }
}
