//! A client for MCP servers, for both protocol eras and both transports, where **dropping a call cancels it**.
//!
//! ```no_run
//! # async fn run() -> Result<(), mcp::client::Error> {
//! use std::time::Duration;
//!
//! let client = mcp::client::Client::builder()
//!     .name("shopkeeper")
//!     .stdio(tokio::process::Command::new("target/debug/examples/bookshop"))
//!     .await?;
//! println!("{:?} speaks {}", client.server_info().name, client.protocol_version());
//! for tool in client.list_tools().await? {
//!     println!("{}: {}", tool.name, tool.description.as_deref().unwrap_or_default());
//! }
//! let result = client
//!     .call_tool("rebuild_index", serde_json::json!({"titles": ["Dune", "Emma"]}))
//!     .on_progress(|p| println!("{}/{:?}", p.progress, p.total))
//!     .timeout(Duration::from_secs(30))
//!     .await?;
//! println!("{}", result.text().unwrap_or_default());
//! # Ok(()) }
//! # fn main() { let _ = run(); }
//! ```
//!
//! - **Eras**: [`EraChoice::Auto`] (the default) asks `server/discover` and speaks 2026-07-28 when the server
//!   offers it, otherwise runs `initialize` (2025-11-25); or pin one with [`ClientBuilder::era`].
//! - **Cancellation**: a call is a future. Dropping it, or its timeout running out, cancels the request on the wire:
//!   `notifications/cancelled` on stdio and in 2025-era HTTP, closing the request's stream in the 2026 era. A late
//!   response is dropped.
//! - **Questions from the server** (elicitation, sampling, roots) go to the handlers registered on the builder, which
//!   also decide the capabilities declared: as requests from the server in the 2025 era, and as `input_required`
//!   results in the 2026 era, which the client answers and retries with `inputResponses` and the echoed
//!   `requestState`, up to [`ClientBuilder::max_rounds`].
//! - **A broken or hostile server costs a bounded amount and never hangs the client**: what it sends is bounded by
//!   [`ClientBuilder::frame_limit`] (a longer message is skipped, its call fails with [`Error::FrameTooLarge`]),
//!   the handshake by [`ClientBuilder::handshake_timeout`], a call by its [`Call::timeout`] (which covers the wait
//!   to write it); a stdio server that exits fails every call at once with [`Error::Exited`] (its exit status and
//!   the end of its stderr). Over HTTP, a failure is [`Error::Http`] (a status and body) or
//!   [`Error::Transport`] with a [`TransportErrorKind`].
//! - **Lists are typed**: [`Client::list_tools`] and the others return [`Tool`], [`Prompt`], [`Resource`] and
//!   [`ResourceTemplate`], each with its JSON as the server wrote it; [`Client::list`] reads a list by page or as a
//!   stream of items that fetches each page when it is needed.
//! - **Authorization**: over HTTP, [`ClientBuilder::auth`] with an [`auth::OAuth`] answers the server's 401 and 403
//!   challenges by itself (OAuth 2.1: discovery, registration, PKCE, step-up, refresh, DPoP, the machine grants of
//!   the ext-auth extensions); a failure is [`Error::Auth`], whose [`AuthError::kind`] says at which step.
//! - **Skills** (feature `skills`, SEP-2640): [`Client::list_skills`] and [`Client::get_skill`] give a server's skill
//!   entries without reading a file; [`Client::load_skill`] reads a skill's `SKILL.md` only then and verifies its
//!   size, digest and front matter against the entry, [`Client::read_skill_file`] reads only a file the entry lists
//!   and verifies it; a difference is [`Error::Skill`] and the content is not used.
//! - **In process**: [`Client::in_process`] speaks to a [`Server`](crate::Server) of this process through an
//!   in-memory pipe, the real protocol in either era, for tests.
//! - `Client` is `Clone + Send + Sync`: many tasks can call through one connection at once.

mod apps;
pub mod auth;
mod body;
mod builder;
mod call;
mod error;
mod event_loops;
mod events;
pub(crate) mod frame;
mod handshake;
mod headers;
mod http;
mod items;
mod list;
mod listen;
mod receive;
mod results;
#[cfg(feature = "skills")]
mod skills;
pub(crate) mod stdio;
mod task;
#[cfg(feature = "webhooks")]
mod webhook;

use std::collections::HashMap;
use std::fmt;
use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::{Arc, Mutex, OnceLock};

use serde_json::{json, Map, Value};
use tokio::sync::{oneshot, Notify};

pub use apps::AppPage;
pub use builder::{
    ClientBuilder, DEFAULT_AUTH_HANDSHAKE_TIMEOUT, DEFAULT_FRAME_LIMIT, DEFAULT_HANDSHAKE_TIMEOUT, DEFAULT_MAX_ROUNDS,
};
pub use call::{Call, Progress};
pub use error::{AuthError, AuthErrorKind, Error, TransportError, TransportErrorKind};
pub use events::{
    CursorStore, Delivery, EventItem, EventStream, EventSubscription, EventTypeInfo, MemoryCursors, ReceivedEvent,
};
pub use items::{ListItem, Prompt, Resource, ResourceTemplate, Tool};
pub use list::{ItemStream, List, Page, PageStream};
pub use listen::{ListenFilter, Notification, Subscription};
pub use results::{PromptResult, ResourceResult, ToolResult};
#[cfg(feature = "skills")]
pub use skills::{FolderEntry, LoadedSkill, SkillFileContent};
pub use task::{Started, TaskHandle, TaskState};
#[cfg(feature = "webhooks")]
pub use webhook::WebhookReceiver;

#[cfg(feature = "skills")]
pub use crate::wire::skills::{SkillEntry, SkillError, SkillFile, SkillFiles};

use crate::base::sync::Unpoisoned;
use crate::context::Era;
use crate::handler::tool::BoxFuture;
use crate::wire::jsonrpc::{self, RequestId};
use crate::wire::protocol::{Implementation, LogLevel};

use crate::wire::protocol::{VERSION_2025, VERSION_2026};

use crate::wire::envelope::{META_CAPABILITIES, META_CLIENT_INFO, META_LOG_LEVEL, META_VERSION};
use crate::wire::protocol::META_SERVER_INFO;

/// How many questions from the server (elicitation, sampling, roots) the client answers at once; past that a
/// question is answered at once with an error. A `ping` is answered inline and never waits.
const ANSWERING: usize = 64;

/// Which protocol era to speak, given to [`ClientBuilder::era`]; [`Client::era`] says which one the
/// handshake chose.
///
/// ```
/// use mcp::client::{Client, EraChoice};
///
/// /// Say hi.
/// #[mcp::tool]
/// fn hi() -> &'static str {
///     "hi"
/// }
///
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> Result<(), mcp::client::Error> {
/// let server = mcp::Server::builder().tool::<hi>().build().unwrap();
/// // Auto: this server offers 2026-07-28, so `server/discover` finds it.
/// let auto = Client::builder().in_process(server.clone()).await?;
/// assert_eq!((auto.era(), auto.protocol_version()), (mcp::Era::V2026, "2026-07-28"));
/// // Pinned to the 2025-11-25 era: `initialize`, then a session.
/// let only_2025 = Client::builder().era(EraChoice::V2025).in_process(server).await?;
/// assert_eq!((only_2025.era(), only_2025.protocol_version()), (mcp::Era::V2025, "2025-11-25"));
/// # Ok(()) }
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub enum EraChoice {
    /// `server/discover` first; 2026-07-28 if the server offers it, else `initialize` (2025-11-25).
    #[default]
    Auto,
    /// 2026-07-28 only: stateless requests, each with its `_meta` envelope.
    V2026,
    /// 2025-11-25 only: `initialize`, then a session.
    V2025,
}

impl From<Era> for EraChoice {
    /// That era only.
    fn from(era: Era) -> EraChoice {
        match era {
            Era::V2025 => EraChoice::V2025,
            Era::V2026 => EraChoice::V2026,
        }
    }
}

/// A handler for questions from the server: gets the request's `params`, returns the result to send.
pub type Handler = Arc<dyn Fn(Value) -> BoxFuture<'static, Result<Value, crate::Error>> + Send + Sync>;

/// A callback for notifications: method and params.
pub type NotificationHandler = Arc<dyn Fn(&str, &Value) + Send + Sync>;

/// A callback for the stdio server's stderr, one line at a time (see [`ClientBuilder::on_stderr`]).
pub type StderrHandler = Arc<dyn Fn(&str) + Send + Sync>;

/// What the handshake found out.
#[derive(Clone, Debug)]
struct Negotiated {
    era: Era,
    version: String,
    server_info: Implementation,
    capabilities: Value,
    instructions: Option<String>,
}

#[derive(Clone, Default)]
struct Handlers {
    elicitation: Option<Handler>,
    sampling: Option<Handler>,
    roots: Option<Handler>,
    notification: Option<NotificationHandler>,
}

/// Where a call's progress goes, and the wake-up of a timeout that progress resets.
pub(crate) struct ProgressSink {
    callback: Option<Arc<dyn Fn(Progress) + Send + Sync>>,
    reset: Arc<Notify>,
}

pub(crate) struct Inner {
    link: Link,
    info: Implementation,
    choice: EraChoice,
    capabilities: Value,
    handlers: Handlers,
    log_level: Option<LogLevel>,
    max_rounds: usize,
    session: OnceLock<Negotiated>,
    pending: Mutex<HashMap<RequestId, oneshot::Sender<Result<Value, Error>>>>,
    progress: Mutex<HashMap<String, ProgressSink>>,
    next_id: AtomicI64,
    /// 2026 era: the `x-mcp-header` parameters of each tool, from `tools/list` (argument path, header name).
    tool_headers: Mutex<HashMap<String, Vec<headers::HeaderParam>>>,
    /// Open subscriptions, by key.
    routes: Mutex<HashMap<u64, listen::Feed>>,
    /// 2026 era: list pages within their `ttlMs`, by method and cursor.
    cache: Mutex<HashMap<PageKey, (std::time::Instant, Value)>>,
    /// Why the connection ended, once it has: every call from then on fails with it.
    closed: OnceLock<Error>,
    /// Where its calls are recorded, and when it connected (its session's duration is recorded when it drops).
    metrics: Option<(crate::metrics::Metrics, std::time::Instant)>,
    /// Room for questions from the server being answered at once ([`ANSWERING`]).
    answering: Arc<tokio::sync::Semaphore>,
    /// 2025 era: the calls in flight that answer their own questions ([`Call::on_question`]), by request id.
    askers: Mutex<HashMap<RequestId, call::Questions>>,
    /// The calls in flight that hear the notifications of their own HTTP stream ([`Call::on_notification`]).
    hearers: Mutex<HashMap<RequestId, call::Hearer>>,
}

/// A list page: its method and cursor.
type PageKey = (String, Option<String>);

/// How the client reaches the server.
pub(crate) enum Link {
    /// Lines on a byte stream: a child's stdio, or an in-process server's pipe.
    Stdio(stdio::Stdio),
    Http(http::Http),
}

/// A connection to an MCP server. Cheap to clone; the connection closes when the last clone is dropped.
///
/// Made with [`Client::builder`] (or [`Client::in_process`]); every request is a [`Call`] to configure and
/// `.await`, and dropping it cancels the request.
///
/// ```
/// use mcp::client::{Client, Tool};
/// use serde_json::json;
///
/// /// Reverse a text.
/// #[mcp::tool]
/// fn reverse(text: String) -> String {
///     text.chars().rev().collect()
/// }
///
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> Result<(), mcp::client::Error> {
/// let server = mcp::Server::builder().tool::<reverse>().build().unwrap();
/// let client = Client::in_process(server).await?;
/// let tools: Vec<Tool> = client.list_tools().await?;
/// assert_eq!(tools[0].name, "reverse");
/// assert_eq!(tools[0].description.as_deref(), Some("Reverse a text."));
/// let reversed = client.call_tool("reverse", json!({ "text": "abc" })).await?;
/// assert_eq!(reversed.text(), Some("cba"));
/// // Clones share the connection: many tasks can call at once.
/// let other = client.clone();
/// let call = tokio::spawn(async move { other.call_tool("reverse", json!({ "text": "xy" })).await });
/// assert_eq!(call.await.unwrap()?.text(), Some("yx"));
/// client.close().await;
/// # Ok(()) }
/// ```
#[derive(Clone)]
pub struct Client {
    inner: Arc<Inner>,
}

impl fmt::Debug for Client {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Client")
            .field("server", &self.inner.session.get().map(|s| &s.server_info))
            .field("version", &self.inner.session.get().map(|s| &s.version))
            .finish()
    }
}

impl Client {
    /// A builder.
    pub fn builder() -> ClientBuilder {
        ClientBuilder::default()
    }

    /// Connects to `server` in this process, with the builder's defaults: see [`ClientBuilder::in_process`].
    pub async fn in_process(server: crate::Server) -> Result<Client, Error> {
        Client::builder().in_process(server).await
    }

    fn session(&self) -> &Negotiated {
        self.inner.session.get().expect("the handshake ran when the client was built")
    }

    /// The protocol version in use.
    pub fn protocol_version(&self) -> &str {
        &self.session().version
    }

    /// The era the client speaks with this server (what the handshake settled: [`EraChoice`]).
    pub fn era(&self) -> Era {
        self.session().era
    }

    pub(crate) fn is_2026(&self) -> bool {
        self.era() == Era::V2026
    }

    /// The server's name and version.
    pub fn server_info(&self) -> &Implementation {
        &self.session().server_info
    }

    /// The server's capabilities.
    pub fn server_capabilities(&self) -> &Value {
        &self.session().capabilities
    }

    /// The server's instructions, if it gave any.
    pub fn instructions(&self) -> Option<&str> {
        self.session().instructions.as_deref()
    }

    /// A request of any method (a custom one, say), as a [`Call`] to configure and await.
    pub fn request(&self, method: &str, params: Value) -> Call {
        Call::new(self.clone(), method, params)
    }

    /// `tools/call`.
    pub fn call_tool(&self, name: &str, arguments: Value) -> Call<ToolResult> {
        Call::new(self.clone(), "tools/call", json!({ "name": name, "arguments": arguments }))
            .map(|raw| ToolResult { raw })
    }

    /// `prompts/get`: the prompt rendered with these arguments.
    pub fn get_prompt(&self, name: &str, arguments: Value) -> Call<PromptResult> {
        Call::new(self.clone(), "prompts/get", json!({ "name": name, "arguments": arguments }))
            .map(|raw| PromptResult { raw })
    }

    /// `resources/read`.
    pub fn read_resource(&self, uri: &str) -> Call<ResourceResult> {
        Call::new(self.clone(), "resources/read", json!({ "uri": uri })).map(|raw| ResourceResult { raw })
    }

    /// `completion/complete` for an argument of a prompt (`{"type": "ref/prompt", "name": ...}`) or a resource
    /// template (`{"type": "ref/resource", "uri": ...}`).
    pub fn complete(&self, reference: Value, argument: &str, value: &str) -> Call {
        Call::new(
            self.clone(),
            "completion/complete",
            json!({ "ref": reference, "argument": { "name": argument, "value": value } }),
        )
    }

    /// `ping` (2025 era; the 2026 era has none, so this asks `server/discover` instead).
    pub async fn ping(&self) -> Result<(), Error> {
        if self.is_2026() {
            self.discover().await.map(|_| ())
        } else {
            self.request("ping", json!({})).await.map(|_| ())
        }
    }

    /// `logging/setLevel` (2025 era). In the 2026 era set the level on the builder: it rides every request.
    pub async fn set_log_level(&self, level: LogLevel) -> Result<(), Error> {
        if self.is_2026() {
            return Err(Error::Usage(
                "the 2026-07-28 era has no logging/setLevel: use ClientBuilder::log_level".into(),
            ));
        }
        self.request("logging/setLevel", json!({ "level": level })).await.map(|_| ())
    }

    /// `resources/subscribe` (2025 era): updates arrive as `notifications/resources/updated` notifications.
    pub async fn subscribe(&self, uri: &str) -> Result<(), Error> {
        self.request("resources/subscribe", json!({ "uri": uri })).await.map(|_| ())
    }

    /// Whether two handles are of the same connection (clones of one client).
    pub fn same_connection(&self, other: &Client) -> bool {
        Arc::ptr_eq(&self.inner, &other.inner)
    }

    /// Closes the connection: ends the 2025 HTTP session (DELETE), or the child's stdin, then waits a little for it
    /// to exit (and kills it after). Over HTTP, calls still waiting fail at once with [`Error::Closed`], as does any
    /// later call on a clone of this client.
    pub async fn close(self) {
        match &self.inner.link {
            Link::Stdio(stdio) => stdio.close().await,
            Link::Http(http) => {
                // A call still waiting can get no answer once its reader stops: it fails now (`Error::Closed`), as
                // every later one does, instead of waiting out its timeout (or forever, without one).
                http.stop_readers();
                self.inner.close_with(Error::Closed);
                http.end_session().await;
            }
        }
    }
}

impl Inner {
    fn routes(&self) -> std::sync::MutexGuard<'_, HashMap<u64, listen::Feed>> {
        self.routes.locked()
    }

    fn next_id(&self) -> RequestId {
        RequestId::Number(self.next_id.fetch_add(1, Ordering::Relaxed))
    }

    /// The era negotiated; before the handshake, the 2025 era's.
    fn era(&self) -> Era {
        self.session.get().map_or(Era::V2025, |s| s.era)
    }

    /// The 2026 envelope: version, capabilities, client info, and the log level.
    fn envelope(&self) -> Map<String, Value> {
        let mut meta = Map::new();
        meta.insert(META_VERSION.into(), VERSION_2026.into());
        meta.insert(META_CAPABILITIES.into(), self.capabilities.clone());
        meta.insert(META_CLIENT_INFO.into(), serde_json::to_value(&self.info).unwrap_or_default());
        if let Some(level) = self.log_level {
            meta.insert(META_LOG_LEVEL.into(), serde_json::to_value(level).unwrap_or_default());
        }
        meta
    }

    /// The capabilities with the Tasks extension declared.
    fn capabilities_with_tasks(&self) -> Value {
        self.capabilities_with(&[crate::task::EXTENSION])
    }

    /// The client's capabilities, declaring these extensions too (with empty settings).
    fn capabilities_with(&self, extensions: &[&str]) -> Value {
        let mut capabilities = self.capabilities.clone();
        for extension in extensions {
            capabilities["extensions"][*extension] = json!({});
        }
        capabilities
    }

    fn notify(&self, method: &str, params: Value) {
        let frame = jsonrpc::encode_notification(method, &params);
        match &self.link {
            Link::Stdio(s) => s.try_send(frame),
            Link::Http(h) => h.post_message(frame),
        }
    }

    /// Keeps each tool's `x-mcp-header` parameters; in the 2026 era a tool whose annotations break the rules is
    /// left out of the list (with a warning), as the protocol asks: it could not be called correctly.
    fn remember_headers(&self, tools: Vec<Value>, era: Era) -> Vec<Value> {
        let mut table = self.tool_headers.locked();
        tools
            .into_iter()
            .filter(|tool| {
                let name = tool["name"].as_str().unwrap_or_default();
                match headers::header_params(&tool["inputSchema"]) {
                    Ok(headers) => {
                        table.insert(name.to_owned(), headers);
                        true
                    }
                    Err(why) if era == Era::V2026 => {
                        tracing::warn!(tool = name, reason = %why, "leaving out a tool with invalid x-mcp-header annotations");
                        false
                    }
                    Err(_) => true,
                }
            })
            .collect()
    }

    /// The connection ended: every waiting call fails with `error`, and so does every later one.
    pub(crate) fn close_with(&self, error: Error) {
        let _ = self.closed.set(error);
        let error = self.closed.get().cloned().unwrap_or(Error::Closed);
        let waiting: Vec<_> = self.pending.locked().drain().collect();
        for (_, tx) in waiting {
            let _ = tx.send(Err(error.clone()));
        }
    }

    /// Registers a call waiting for its response, unless the connection has ended (then, why it did).
    pub(crate) fn wait_for(&self, id: RequestId) -> Result<oneshot::Receiver<Result<Value, Error>>, Error> {
        let (tx, rx) = oneshot::channel();
        let mut pending = self.pending.locked();
        if let Some(error) = self.closed.get() {
            return Err(error.clone());
        }
        pending.insert(id, tx);
        Ok(rx)
    }

    /// Fails one waiting call (its HTTP request failed).
    pub(crate) fn fail(&self, id: &RequestId, error: Error) {
        if let Some(tx) = self.pending.locked().remove(id) {
            let _ = tx.send(Err(error));
        }
    }
}

impl Inner {
    /// The server this client talks to, as its metrics label it.
    pub(crate) fn peer(&self) -> crate::metrics::Peer {
        let version = self.session.get().map(|s| s.version.clone()).unwrap_or_default();
        match &self.link {
            Link::Stdio(_) => {
                crate::metrics::Peer { version, transport: crate::metrics::Transport::Pipe, server: None }
            }
            Link::Http(http) => {
                let server = reqwest::Url::parse(http.url())
                    .ok()
                    .and_then(|url| Some((url.host_str()?.to_owned(), url.port_or_known_default()?)));
                crate::metrics::Peer { version, transport: crate::metrics::Transport::Tcp, server }
            }
        }
    }
}

impl Drop for Inner {
    fn drop(&mut self) {
        if let Some((metrics, opened)) = &self.metrics {
            metrics.client_session(&self.peer(), opened.elapsed());
        }
    }
}
