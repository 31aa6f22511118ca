//! An upstream: another MCP server, reached through [`mcp::client`](crate::client) — a [`Server`] of this process,
//! a child process over stdio, or a URL over Streamable HTTP — connected when first needed and again after it fails,
//! with the lists it last gave.

use std::sync::{Arc, Mutex, Weak};
use std::time::Duration;

use serde_json::Value;

use crate::base::sync::Unpoisoned;
use crate::client::{Client, EraChoice, Error};
use crate::Server;

/// How long a relayed call may take upstream before it fails, unless [`Upstream::timeout`] says otherwise.
pub const DEFAULT_UPSTREAM_TIMEOUT: Duration = Duration::from_secs(60);

/// The most items of one kind read from an upstream's lists (every page); the rest are left out, with a warning.
pub const MAX_UPSTREAM_ITEMS: usize = 10_000;

/// Another MCP server whose tools, prompts and resources a server serves as its own: mounted with
/// [`ServerBuilder::mount`](crate::ServerBuilder::mount) (a [`Server`] of this process) or
/// [`ServerBuilder::proxy`](crate::ServerBuilder::proxy) (a child process or a URL).
///
/// It is reached through [`mcp::client`](crate::client) in the era it speaks ([`EraChoice::Auto`] unless
/// [`era`](Upstream::era) says), connected when first needed (or by [`connect`](Upstream::connect), to know its
/// lists before the server is built), and connected again — a child process started again — on the next call after
/// it failed, which the proxy logs.
///
/// ```
/// use mcp::compose::Upstream;
///
/// let files = Upstream::stdio("mcp-files", ["--root", "/srv"]);
/// let search = Upstream::http("https://search.example.com/mcp").header("Authorization", "Bearer s3cr3t");
/// # let _ = (files, search);
/// ```
#[derive(Clone)]
pub struct Upstream {
    pub(crate) shared: Arc<Shared>,
}

impl std::fmt::Debug for Upstream {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Upstream").field("target", &self.shared.target.describe()).finish_non_exhaustive()
    }
}

pub(crate) enum Target {
    Server(Server),
    Stdio { program: String, args: Vec<String> },
    Http { url: String },
}

impl Target {
    pub(crate) fn describe(&self) -> String {
        match self {
            Target::Server(_) => "a server of this process".to_owned(),
            Target::Stdio { program, args } if args.is_empty() => format!("`{program}`"),
            Target::Stdio { program, args } => format!("`{program} {}`", args.join(" ")),
            Target::Http { url } => url.clone(),
        }
    }
}

/// What an upstream lists, each item as it wrote it.
#[derive(Clone, Debug, Default, PartialEq)]
pub(crate) struct Lists {
    pub tools: Vec<Value>,
    pub prompts: Vec<Value>,
    pub resources: Vec<Value>,
    pub templates: Vec<Value>,
}

impl Lists {
    /// The lists that differ in `now` (resources and templates are one list to a client).
    pub(crate) fn changed(&self, now: &Lists) -> Vec<crate::server::hub::List> {
        use crate::server::hub::List;
        let mut changed = Vec::new();
        if self.tools != now.tools {
            changed.push(List::Tools);
        }
        if self.prompts != now.prompts {
            changed.push(List::Prompts);
        }
        if self.resources != now.resources || self.templates != now.templates {
            changed.push(List::Resources);
        }
        changed
    }
}

/// What hears an upstream's resource update (its URI).
pub(crate) type OnUpdate = dyn Fn(&str) + Send + Sync;

pub(crate) struct Shared {
    pub target: Target,
    era: EraChoice,
    pub timeout: Duration,
    headers: Vec<(String, String)>,
    /// The proxy's own OAuth identity toward it.
    oauth: Option<crate::client::auth::OAuth>,
    /// The connection, once made; `None` again after it failed.
    client: tokio::sync::Mutex<Option<Client>>,
    /// What it last listed.
    pub lists: Mutex<Option<Lists>>,
    /// Told when its connection failed.
    pub changed: tokio::sync::Notify,
    /// Told of the upstream's resource updates: the servers that mount it.
    pub updates: Mutex<Vec<Weak<OnUpdate>>>,
}

impl Upstream {
    fn new(target: Target) -> Upstream {
        Upstream {
            shared: Arc::new(Shared {
                target,
                era: EraChoice::Auto,
                timeout: DEFAULT_UPSTREAM_TIMEOUT,
                headers: Vec::new(),
                oauth: None,
                client: tokio::sync::Mutex::new(None),
                lists: Mutex::new(None),
                changed: tokio::sync::Notify::new(),
                updates: Mutex::new(Vec::new()),
            }),
        }
    }

    /// A server of this process, reached in process: it runs its calls with its own state, layers and extensions,
    /// as it would alone. Its lists are read when the server that mounts it is built.
    pub fn server(server: Server) -> Upstream {
        Upstream::new(Target::Server(server))
    }

    /// A child process speaking MCP over stdio, started when first needed (and again after it died).
    pub fn stdio(program: impl Into<String>, args: impl IntoIterator<Item = impl Into<String>>) -> Upstream {
        Upstream::new(Target::Stdio { program: program.into(), args: args.into_iter().map(Into::into).collect() })
    }

    /// A server over Streamable HTTP at `url` (`http://` or `https://`).
    pub fn http(url: impl Into<String>) -> Upstream {
        Upstream::new(Target::Http { url: url.into() })
    }

    /// The era to speak to it ([`EraChoice::Auto`] by default: the newest it speaks).
    pub fn era(self, era: impl Into<EraChoice>) -> Upstream {
        let era = era.into();
        self.configure(|s| s.era = era)
    }

    /// How long a relayed call may take upstream before it fails naming the upstream ([`DEFAULT_UPSTREAM_TIMEOUT`]
    /// by default).
    pub fn timeout(self, timeout: Duration) -> Upstream {
        self.configure(|s| s.timeout = timeout)
    }

    /// A header sent with every HTTP request to it (a fixed token, say). The caller's own headers and token are
    /// never forwarded: the MCP specification forbids passing a token through to another server (it was issued for
    /// this one); the proxy speaks to its upstreams as itself.
    pub fn header(self, name: impl Into<String>, value: impl Into<String>) -> Upstream {
        let (name, value) = (name.into(), value.into());
        self.configure(|s| s.headers.push((name, value)))
    }

    /// The proxy's own OAuth identity toward an upstream that wants authorization (a machine client with its
    /// credentials, say): tokens are got, refreshed and sent by [`mcp::client`](crate::client)'s OAuth.
    pub fn oauth(self, oauth: crate::client::auth::OAuth) -> Upstream {
        self.configure(|s| s.oauth = Some(oauth))
    }

    fn configure(self, f: impl FnOnce(&mut Shared)) -> Upstream {
        let mut shared = Arc::try_unwrap(self.shared).unwrap_or_else(|_| {
            panic!("an upstream is configured before it is cloned or connected (era, timeout, header)")
        });
        f(&mut shared);
        Upstream { shared: Arc::new(shared) }
    }

    /// Connects now and reads its lists, so that a server built next lists its items from the start. Without it,
    /// the server connects once it starts, and lists them when they come (its clients hear `list_changed`).
    pub async fn connect(&self) -> Result<(), Error> {
        self.shared.refresh().await
    }
}

impl Shared {
    /// The connection, made now if there is none.
    pub(crate) async fn client(self: &Arc<Self>) -> Result<Client, Error> {
        let mut slot = self.client.lock().await;
        if let Some(client) = slot.as_ref() {
            return Ok(client.clone());
        }
        let client = self.connect_client().await?;
        *slot = Some(client.clone());
        Ok(client)
    }

    async fn connect_client(self: &Arc<Self>) -> Result<Client, Error> {
        // The questions an upstream asks are each answered by the caller of the call that asks
        // (`Call::on_question`); the client declares it can be asked, and refuses a question of no call.
        let no_call = |_| async {
            Err(crate::Error::internal("the proxy has no caller to ask: the question belongs to no call"))
        };
        let mut builder = Client::builder()
            .name("mcp-proxy")
            .era(self.era)
            // Every log message: each caller's own level filters what reaches it.
            .log_level(crate::LogLevel::Debug)
            .on_elicitation(no_call)
            .on_sampling(no_call)
            .on_roots(no_call);
        let weak = Arc::downgrade(self);
        builder = builder.on_notification(move |method, params| {
            let Some(shared) = weak.upgrade() else { return };
            if method == "notifications/message" {
                // A log message of no call (over stdio and in process, none says): the proxy's own log.
                tracing::info!(
                    upstream = %shared.target.describe(),
                    level = params["level"].as_str().unwrap_or("info"),
                    logger = params["logger"].as_str().unwrap_or(""),
                    data = %params["data"],
                    "a log message of the upstream"
                );
            }
            if method == "notifications/resources/updated" {
                if let Some(uri) = params["uri"].as_str() {
                    let listeners = shared.updates.locked().iter().filter_map(Weak::upgrade).collect::<Vec<_>>();
                    for listener in listeners {
                        listener(uri);
                    }
                }
            }
        });
        for (name, value) in &self.headers {
            builder = builder.header(name.clone(), value.clone());
        }
        if let Some(oauth) = &self.oauth {
            builder = builder.auth(oauth.clone());
        }
        let target = self.target.describe();
        let client = match &self.target {
            Target::Server(server) => builder.in_process(server.clone()).await,
            Target::Stdio { program, args } => {
                let said = target.clone();
                builder = builder.on_stderr(move |line| tracing::info!(upstream = %said, "{line}"));
                let mut command = tokio::process::Command::new(program);
                command.args(args);
                builder.stdio(command).await
            }
            Target::Http { url } => builder.http(url.clone()).await,
        };
        match &client {
            Ok(_) => tracing::info!(upstream = %target, "connected to the upstream"),
            Err(e) => tracing::warn!(upstream = %target, error = %e, "could not connect to the upstream"),
        }
        client
    }

    /// Forgets a connection that failed: the next call connects again (a child process is started again).
    pub(crate) async fn failed(&self, client: &Client, why: &Error) {
        let mut slot = self.client.lock().await;
        if slot.as_ref().is_some_and(|c| c.same_connection(client)) {
            tracing::warn!(upstream = %self.target.describe(), error = %why, "the upstream failed; the next call connects again");
            if let Some(old) = slot.take() {
                tokio::spawn(old.close());
            }
            self.changed.notify_one();
        }
    }

    /// Ends the connection (a child process ends), and a mounted server's own shutdown hooks run.
    pub(crate) async fn close(&self) {
        let client = self.client.lock().await.take();
        if let Some(client) = client {
            client.close().await;
        }
        if let Target::Server(server) = &self.target {
            server.shutdown().await;
        }
    }

    /// Reads every list again (connecting if need be) and keeps them.
    pub(crate) async fn refresh(self: &Arc<Self>) -> Result<(), Error> {
        let client = self.client().await?;
        match read_lists(&client).await {
            Ok(lists) => {
                *self.lists.locked() = Some(lists);
                Ok(())
            }
            Err(e) => {
                self.failed(&client, &e).await;
                Err(e)
            }
        }
    }

    /// The lists of a server of this process, read from it directly (before anything runs).
    pub(crate) fn local_lists(&self) -> Option<Lists> {
        let Target::Server(server) = &self.target else { return None };
        let registry = server.registry();
        let listed = |it: &mut dyn Iterator<Item = (&Value, bool)>| -> Vec<Value> {
            it.filter(|(_, enabled)| *enabled).map(|(d, _)| d.clone()).collect()
        };
        Some(Lists {
            tools: listed(&mut registry.tools.values().map(|l| (&l.descriptor, l.enabled))),
            prompts: listed(&mut registry.prompts.values().map(|l| (&l.descriptor, l.enabled))),
            resources: listed(&mut registry.resources.values().map(|l| (&l.descriptor, l.enabled))),
            templates: listed(&mut registry.templates.values().map(|(l, _)| (&l.descriptor, l.enabled))),
        })
    }
}

/// Every page of each list the server has (by its capabilities).
async fn read_lists(client: &Client) -> Result<Lists, Error> {
    let capabilities = client.server_capabilities().clone();
    let has = |key: &str| capabilities.get(key).is_some();
    let mut lists = Lists::default();
    if has("tools") {
        lists.tools = raw_items(client.list::<crate::client::Tool>().fresh().await?, |t| t.raw().clone());
    }
    if has("prompts") {
        lists.prompts = raw_items(client.list::<crate::client::Prompt>().fresh().await?, |p| p.raw().clone());
    }
    if has("resources") {
        lists.resources = raw_items(client.list::<crate::client::Resource>().fresh().await?, |r| r.raw().clone());
        lists.templates =
            raw_items(client.list::<crate::client::ResourceTemplate>().fresh().await?, |t| t.raw().clone());
    }
    Ok(lists)
}

fn raw_items<T>(items: Vec<T>, raw: impl Fn(&T) -> Value) -> Vec<Value> {
    if items.len() > MAX_UPSTREAM_ITEMS {
        tracing::warn!(
            count = items.len(),
            kept = MAX_UPSTREAM_ITEMS,
            "an upstream lists too many items: the rest are left out"
        );
    }
    items.iter().take(MAX_UPSTREAM_ITEMS).map(raw).collect()
}
