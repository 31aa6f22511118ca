//! Composing servers: another server's tools, prompts and resources served as this server's own — a [`Server`] of
//! this process ([`ServerBuilder::mount`](crate::ServerBuilder::mount)), or a child process or a URL reached through
//! [`mcp::client`](crate::client) ([`ServerBuilder::proxy`](crate::ServerBuilder::proxy)). Feature `client`.
//!
//! - **Names**: a tool or prompt `name` of an upstream mounted at `prefix` is served as `{prefix}_{name}` (the
//!   separator is [`Mount::separator`]). Resources and templates keep their URIs: a client reads them at the URIs
//!   the upstream lists. A name or URI that is already taken is a [`BuildError`] naming both when the server is built,
//!   and is left out, with a warning, when an upstream's list changes later.
//! - **Calls** go to the upstream in the era it speaks, whatever the caller's: arguments, content (text, images,
//!   resources), structured content and `isError` unchanged; the upstream's progress reaches the caller; a call the
//!   caller cancels (or whose connection ends) is cancelled upstream; an upstream's JSON-RPC error is the caller's.
//! - **Lists** follow the upstream: when it says a list changed, the server reads it again and its own clients hear
//!   `list_changed`. The proxy subscribes to the fixed resources the upstream lists (up to 1,000), and their updates
//!   reach the clients subscribed here.
//! - **Logs**: the upstream's log messages of a call that came on its own HTTP stream reach the call's caller, at the
//!   caller's level; others (over stdio and in process nothing says which call they are of) go to the proxy's own
//!   log, naming the upstream.
//! - **Failures**: an upstream that cannot be reached, dies or does not answer within its
//!   [`timeout`](Upstream::timeout) fails the call with an error naming it, at once; the others go on serving; the
//!   next call connects again (a child process is started again), which the proxy logs. An upstream that is down
//!   when the server starts is retried with backoff, and its items are listed once it comes up.
//! - **Filters**: [`Mount::allow`] and [`Mount::deny`] take globs (`*`, `?`) on the served names of tools and
//!   prompts: a name not allowed, or denied, is neither listed nor callable (the unknown-tool error), and nothing
//!   upstream runs.
//!
//! - **Questions** the upstream asks mid-call (elicitation, sampling, roots) are asked of the caller of that call,
//!   in the caller's era, and its answer goes back: a 2025 caller is sent the request; a 2026 caller gets an
//!   `input_required` round, whose retry runs the call upstream again and answers the question from the round. A
//!   caller that cannot answer (it did not declare the capability) fails the question, as it would fail a direct
//!   one. Over stdio or in process, a 2025 upstream's request says not which call asks: while one relayed call is in
//!   flight on its connection it is that call's, and with several it is refused, saying why (a 2026 upstream's
//!   questions, and a 2025 upstream's over HTTP, always name their call).
//!
//! - **Completions** of the upstream's prompts and templates go to it. A mounted server of this process has its
//!   custom methods served under their own names (a method's name has its namespace; one taken is a build error).
//!
//! What is not relayed yet: tasks (a relayed tool runs as a plain call), and the custom methods of a server of
//! another process (nothing lists them).
//!
//! ```
//! /// Say hello.
//! #[mcp::tool]
//! fn hello() -> String {
//!     "hello".into()
//! }
//!
//! /// Add two numbers.
//! #[mcp::tool]
//! fn add(a: i64, b: i64) -> mcp::Json<i64> {
//!     mcp::Json(a + b)
//! }
//!
//! let maths = mcp::Server::builder().tool::<add>().build().unwrap();
//! let server = mcp::Server::builder().tool::<hello>().mount("maths", maths).build().unwrap();
//! let names: Vec<_> = server.tools_list()["tools"].as_array().unwrap().iter().map(|t| t["name"].clone()).collect();
//! assert_eq!(names, ["hello", "maths_add"]);
//! ```

mod follow;
mod relay;
mod upstream;

use follow::follow;

pub(crate) use relay::relay_completion;
use relay::{relay_method, relay_prompt, relay_read, relay_tool, relayed};

use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Mutex, RwLock};

use serde_json::{json, Value};

use crate::base::name::Name;
use crate::base::sync::{Unpoisoned, UnpoisonedRw};
use crate::handler::prompt::PromptDef;
use crate::handler::resource::ResourceDef;
use crate::handler::tool::{Handler, ToolDef};
use crate::server::registry::Registry;
use crate::server::{hub, BuildError, Server};
use crate::wire::error::Error;

use upstream::{Lists, Shared};
pub use upstream::{Upstream, DEFAULT_UPSTREAM_TIMEOUT, MAX_UPSTREAM_ITEMS};

/// What joins a prefix and an upstream's name, unless [`Mount::separator`] says otherwise.
pub const DEFAULT_SEPARATOR: &str = "_";

/// An upstream served under a prefix, with its options: given to
/// [`ServerBuilder::compose`](crate::ServerBuilder::compose) (what [`mount`](crate::ServerBuilder::mount) and
/// [`proxy`](crate::ServerBuilder::proxy) do with the defaults).
///
/// ```
/// use mcp::compose::{Mount, Upstream};
///
/// let shop = Mount::new("shop", Upstream::stdio("bookshop", ["--quiet"])).separator(".").deny("shop.admin_*");
/// let server = mcp::Server::builder().compose(shop).build().unwrap();
/// # let _ = server;
/// ```
#[derive(Debug)]
pub struct Mount {
    prefix: String,
    separator: String,
    upstream: Upstream,
    allow: Vec<String>,
    deny: Vec<String>,
}

impl Mount {
    /// `upstream`'s tools and prompts served as `{prefix}_{name}`.
    pub fn new(prefix: impl Into<String>, upstream: Upstream) -> Mount {
        Mount {
            prefix: prefix.into(),
            separator: DEFAULT_SEPARATOR.into(),
            upstream,
            allow: Vec::new(),
            deny: Vec::new(),
        }
    }

    /// What joins the prefix and a name (`_` by default; `.` and `-` are the other characters a tool name may have).
    pub fn separator(mut self, separator: impl Into<String>) -> Mount {
        self.separator = separator.into();
        self
    }

    /// Serves only the tools and prompts whose served name matches one of the globs given (`*` any run of
    /// characters, `?` one). Every one by default.
    pub fn allow(mut self, glob: impl Into<String>) -> Mount {
        self.allow.push(glob.into());
        self
    }

    /// Leaves out the tools and prompts whose served name matches the glob: not listed, not callable.
    pub fn deny(mut self, glob: impl Into<String>) -> Mount {
        self.deny.push(glob.into());
        self
    }

    /// What ends the upstream when the server that mounts it shuts down.
    pub(crate) fn closing(&self) -> impl std::future::Future<Output = ()> + Send + 'static {
        let shared = self.upstream.shared.clone();
        async move { shared.close().await }
    }

    fn serves(&self, name: &str) -> bool {
        (self.allow.is_empty() || self.allow.iter().any(|g| glob(g, name))) && !self.deny.iter().any(|g| glob(g, name))
    }
}

/// Whether `name` matches `pattern` (`*` any run, `?` one character).
fn glob(pattern: &str, name: &str) -> bool {
    let (p, n): (Vec<char>, Vec<char>) = (pattern.chars().collect(), name.chars().collect());
    let (mut pi, mut ni, mut star, mut mark) = (0, 0, None, 0);
    while ni < n.len() {
        if pi < p.len() && (p[pi] == '?' || p[pi] == n[ni]) {
            pi += 1;
            ni += 1;
        } else if pi < p.len() && p[pi] == '*' {
            star = Some(pi);
            mark = ni;
            pi += 1;
        } else if let Some(s) = star {
            pi = s + 1;
            mark += 1;
            ni = mark;
        } else {
            return false;
        }
    }
    p[pi..].iter().all(|c| *c == '*')
}

/// A mount, as the server keeps it.
pub(crate) struct Mounted {
    mount: Mount,
    /// The name its relayed resources run under, and its location in build errors.
    key: Name,
    /// What it serves now: the lists it applied, and the names and URIs they took.
    applied: Mutex<Applied>,
}

#[derive(Default)]
struct Applied {
    lists: Lists,
    tools: Vec<Name>,
    prompts: Vec<Name>,
    resources: Vec<Name>,
    templates: Vec<Name>,
}

impl Applied {
    /// Takes what the mount served out of the registry and the routes.
    fn withdraw(&mut self, routes: &mut Routes, registry: &mut Registry) {
        for name in self.tools.drain(..) {
            routes.tools.remove(name.as_str());
            registry.remove_tool(&name);
        }
        for name in self.prompts.drain(..) {
            routes.prompts.remove(name.as_str());
            registry.relayed_completions.remove(name.as_str());
            registry.prompts.remove(&name);
        }
        for uri in self.resources.drain(..) {
            registry.resources.remove(&uri);
        }
        for uri in self.templates.drain(..) {
            routes.templates.remove(uri.as_str());
            registry.relayed_completions.remove(uri.as_str());
            registry.templates.remove(&uri);
        }
    }
}

impl Mounted {
    fn shared(&self) -> &Arc<Shared> {
        &self.mount.upstream.shared
    }

    fn describe(&self) -> String {
        format!("`{}` ({})", self.mount.prefix, self.shared().target.describe())
    }

    /// An error of the upstream, as the caller sees it: its own JSON-RPC error unchanged, anything else naming it
    /// (and a broken connection forgotten, so that the next call connects again).
    async fn error(&self, client: Option<&crate::client::Client>, e: crate::client::Error) -> Error {
        use crate::client::Error as E;
        match e {
            E::Rpc(e) => e,
            E::Timeout(after) => Error::internal(format!(
                "the upstream {} did not answer within {after:?}: the call was cancelled there",
                self.describe()
            )),
            broken @ (E::Transport(_) | E::Exited { .. } | E::Closed) => {
                if let Some(client) = client {
                    self.shared().failed(client, &broken).await;
                }
                Error::internal(format!(
                    "the upstream {} failed: {broken}; the next call connects to it again",
                    self.describe()
                ))
            }
            other => Error::internal(format!("the upstream {}: {other}", self.describe())),
        }
    }

    async fn client(&self) -> Result<crate::client::Client, Error> {
        match self.shared().client().await {
            Ok(client) => Ok(client),
            Err(e) => Err(self.error(None, e).await),
        }
    }
}

/// The mounts of a server and where each served name goes: a part of the server ([`ServerInner::parts`](crate::server::ServerInner::parts)).
pub(crate) struct Composer {
    mounts: Vec<Arc<Mounted>>,
    routes: RwLock<Routes>,
    /// Kept alive for the upstreams' resource updates (each upstream holds a weak reference).
    updates: Mutex<Vec<Arc<upstream::OnUpdate>>>,
}

#[derive(Default)]
struct Routes {
    /// A served tool's name: its mount, and its name upstream.
    tools: HashMap<Name, (usize, String)>,
    prompts: HashMap<Name, (usize, String)>,
    /// A served template's URI template: its mount.
    templates: HashMap<Name, usize>,
    /// A mounted server's custom method: its mount.
    methods: HashMap<&'static str, usize>,
}

/// A mount's lists being put in the registry ([`Composer::apply`]): where its items go, and what they took.
struct Applying<'a> {
    index: usize,
    mounted: &'a Mounted,
    registry: &'a mut Registry,
    routes: &'a mut Routes,
    applied: &'a mut Applied,
    strict: bool,
}

impl Applying<'_> {
    /// A name taken: an error when `strict`, else left out with a warning.
    fn refuse(&self, e: BuildError) -> Result<(), BuildError> {
        if self.strict {
            return Err(e);
        }
        tracing::warn!(mount = %self.mounted.mount.prefix, error = %e, "left out an item of an upstream");
        Ok(())
    }

    /// A tool's or prompt's served name, its location in build errors, its name upstream, and the upstream's
    /// descriptor under the served name; `None` when a filter leaves it out (or no name is left to take).
    fn named(&self, raw: &Value, kind: &str) -> Option<(Name, Name, String, Value)> {
        let mount = &self.mounted.mount;
        let name = raw["name"].as_str()?;
        let exposed = format!("{}{}{}", mount.prefix, mount.separator, name);
        if !mount.serves(&exposed) {
            return None;
        }
        let location = Name::from(format!("{} (its {kind} `{name}`)", self.mounted.key));
        let mut descriptor = raw.clone();
        descriptor["name"] = json!(exposed);
        let exposed = Name::from(exposed);
        Some((exposed, location, name.to_owned(), descriptor))
    }

    /// Puts the upstream's tools in the registry, each relayed to it.
    fn tools(&mut self, tools: &[Value]) -> Result<(), BuildError> {
        for raw in tools {
            let Some((exposed, location, name, mut descriptor)) = self.named(raw, "tool") else { continue };
            if let Value::Object(d) = &mut descriptor {
                d.remove("execution");
            }
            let mut def = ToolDef::new("", empty_schema, no_output, Handler::Async(relay_tool), "");
            (def.name, def.location) = (exposed.clone(), location);
            match self.registry.insert_relayed_tool(def, descriptor) {
                Ok(()) => {
                    self.applied.tools.push(exposed.clone());
                    self.routes.tools.insert(exposed, (self.index, name));
                }
                Err(e) => self.refuse(e)?,
            }
        }
        Ok(())
    }

    /// Puts the upstream's prompts in the registry, each relayed to it (and its completions too).
    fn prompts(&mut self, prompts: &[Value]) -> Result<(), BuildError> {
        for raw in prompts {
            let Some((exposed, location, name, descriptor)) = self.named(raw, "prompt") else { continue };
            let mut def = PromptDef::new("", &[], Handler::Async(relay_prompt), "");
            (def.name, def.location) = (exposed.clone(), location);
            match self.registry.insert_relayed_prompt(def, descriptor) {
                Ok(()) => {
                    self.applied.prompts.push(exposed.clone());
                    self.routes.prompts.insert(exposed.clone(), (self.index, name));
                    self.registry.relayed_completions.insert(exposed);
                }
                Err(e) => self.refuse(e)?,
            }
        }
        Ok(())
    }

    /// Puts the upstream's resources and templates in the registry under their own URIs, each read from it (and a
    /// template's completions relayed too).
    fn resources(&mut self, lists: &Lists) -> Result<(), BuildError> {
        for (raw, template) in
            lists.resources.iter().map(|r| (r, false)).chain(lists.templates.iter().map(|t| (t, true)))
        {
            let key = if template { "uriTemplate" } else { "uri" };
            let Some(uri) = raw[key].as_str() else { continue };
            let location = Name::from(format!("{} (its resource `{uri}`)", self.mounted.key));
            let uri = Name::from(uri.to_owned());
            let mut def = if template {
                ResourceDef::template("", "", Handler::Async(relay_read), "")
            } else {
                ResourceDef::fixed("", "", Handler::Async(relay_read), "")
            };
            (def.uri, def.name, def.location) = (uri.clone(), self.mounted.key.clone(), location);
            match self.registry.insert_relayed_resource(def, raw.clone()) {
                Ok(()) if template => {
                    self.applied.templates.push(uri.clone());
                    self.routes.templates.insert(uri.clone(), self.index);
                    self.registry.relayed_completions.insert(uri);
                }
                Ok(()) => self.applied.resources.push(uri),
                Err(e) => self.refuse(e)?,
            }
        }
        Ok(())
    }
}

impl Composer {
    /// The mounts given to the builder, their items put in the registry: a name taken (by the server's own or another
    /// mount's) is a build error naming both.
    pub(crate) fn build(mounts: Vec<Mount>, registry: &mut Registry) -> Result<Composer, BuildError> {
        let mut prefixes = HashSet::new();
        let mut mounted = Vec::with_capacity(mounts.len());
        for mount in mounts {
            if !prefixes.insert(mount.prefix.clone()) {
                return Err(BuildError::BadMount {
                    prefix: mount.prefix.clone(),
                    message: "two mounts have this prefix: give each its own".into(),
                });
            }
            if mount.prefix.is_empty() && mount.separator.is_empty() {
                return Err(BuildError::BadMount {
                    prefix: String::new(),
                    message: "a mount needs a prefix or a separator, or its names are the upstream's own".into(),
                });
            }
            let key = Name::from(format!("mount `{}`", mount.prefix));
            mounted.push(Arc::new(Mounted { mount, key, applied: Mutex::default() }));
        }
        let composer = Composer { mounts: mounted, routes: RwLock::default(), updates: Mutex::default() };
        for index in 0..composer.mounts.len() {
            let lists = {
                let shared = composer.mounts[index].shared();
                shared.local_lists().or_else(|| shared.lists.locked().clone()).unwrap_or_default()
            };
            composer.apply(index, lists, registry, true)?;
        }
        Ok(composer)
    }

    /// Puts what a mount's upstream lists in the registry, in place of what it listed before; the lists that
    /// changed. `strict`: a name taken is an error (when the server is built), else it is left out with a warning.
    fn apply(
        &self,
        index: usize,
        lists: Lists,
        registry: &mut Registry,
        strict: bool,
    ) -> Result<Vec<hub::List>, BuildError> {
        let mounted = &self.mounts[index];
        let mut applied = mounted.applied.locked();
        let changed = applied.lists.changed(&lists);
        let mut routes = self.routes.write_locked();
        applied.withdraw(&mut routes, registry);
        let mut applying = Applying { index, mounted, registry, routes: &mut routes, applied: &mut applied, strict };
        applying.tools(&lists.tools)?;
        applying.prompts(&lists.prompts)?;
        applying.resources(&lists)?;
        applied.lists = lists;
        Ok(changed)
    }

    /// Starts following every mount's upstream: connected (retried with backoff while it is down), its lists read
    /// again whenever it says they changed, and the server's clients told. Needs a Tokio runtime; without one
    /// (a server built outside any), the mounts serve what they listed when it was built, connecting on the first
    /// call.
    pub(crate) fn start(server: &Server) {
        let Some(composer) = server.inner.parts().get::<Composer>() else { return };
        if composer.mounts.is_empty() || tokio::runtime::Handle::try_current().is_err() {
            return;
        }
        if let Some(metrics) = server.inner.metrics() {
            metrics.prime_relayed();
        }
        for (index, mounted) in composer.mounts.iter().enumerate() {
            let weak = Arc::downgrade(&server.inner);
            let notify: Arc<upstream::OnUpdate> = {
                let weak = weak.clone();
                Arc::new(move |uri: &str| {
                    if let Some(inner) = weak.upgrade() {
                        let server = Server { inner };
                        relayed(&server, "resource_updated");
                        server.notify_resource_updated(uri);
                    }
                })
            };
            mounted.shared().updates.locked().push(Arc::downgrade(&notify));
            composer.updates.locked().push(notify);
            tokio::spawn(follow(weak, index, mounted.clone()));
        }
    }

    fn tool(&self, name: &str) -> Option<(Arc<Mounted>, String)> {
        let routes = self.routes.read_locked();
        routes.tools.get(name).map(|(i, upstream)| (self.mounts[*i].clone(), upstream.clone()))
    }

    fn prompt(&self, name: &str) -> Option<(Arc<Mounted>, String)> {
        let routes = self.routes.read_locked();
        routes.prompts.get(name).map(|(i, upstream)| (self.mounts[*i].clone(), upstream.clone()))
    }

    /// The custom methods of the servers of this process it mounts, under their own names (a method's name has its
    /// own namespace), each relayed to its server; the builder adds them to the server's own, refusing a name taken.
    pub(crate) fn methods(&self) -> Vec<crate::handler::method::MethodDef> {
        let mut routes = self.routes.write_locked();
        let mut defs = Vec::new();
        for (index, mounted) in self.mounts.iter().enumerate() {
            let upstream::Target::Server(server) = &mounted.shared().target else { continue };
            for name in server.inner.handlers().methods.keys().copied() {
                let mut def = crate::handler::method::MethodDef::new(name, Handler::Async(relay_method), "");
                def.location = Name::from(format!("{} (its method `{name}`)", mounted.key));
                routes.methods.insert(name, index);
                defs.push(def);
            }
        }
        defs
    }

    fn template(&self, uri: &str) -> Option<Arc<Mounted>> {
        self.routes.read_locked().templates.get(uri).map(|i| self.mounts[*i].clone())
    }

    fn by_key(&self, key: &str) -> Option<Arc<Mounted>> {
        self.mounts.iter().find(|m| m.key == key).cloned()
    }
}

fn empty_schema() -> Value {
    json!({ "type": "object" })
}

fn no_output() -> Option<Value> {
    None
}

#[cfg(test)]
mod tests {
    use super::glob;

    #[test]
    fn globs_match_runs_and_single_characters() {
        assert!(glob("shop_*", "shop_order_book"));
        assert!(glob("*_book", "shop_order_book"));
        assert!(glob("shop_?rder*", "shop_order_book"));
        assert!(glob("*", ""));
        assert!(!glob("shop_*", "admin_reset"));
        assert!(!glob("shop", "shop_x"));
        assert!(glob("a*b*c", "aXXbYYc"));
        assert!(!glob("a*b*c", "aXXbYY"));
    }
}
