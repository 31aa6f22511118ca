//! [`ClientBuilder`]: how a client is set up (its era, identity, handlers for the server's requests, limits,
//! authorization) and the transports it connects over.

use std::collections::HashMap;
use std::fmt;
use std::sync::atomic::AtomicI64;
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

use serde_json::{json, Map, Value};

use super::{
    auth, http, stdio, Client, EraChoice, Error, Handler, Handlers, Inner, Link, NotificationHandler, StderrHandler,
    ANSWERING,
};
use crate::wire::protocol::{Implementation, LogLevel};

/// Builds a [`Client`]: who it is, what it can answer, which era, and where to connect
/// ([`stdio`](ClientBuilder::stdio), [`http`](ClientBuilder::http) or [`in_process`](ClientBuilder::in_process)).
///
/// ```no_run
/// use std::time::Duration;
///
/// use mcp::client::{Client, EraChoice};
/// use serde_json::json;
///
/// # async fn run() -> Result<(), mcp::client::Error> {
/// let client = Client::builder()
///     .name("shopkeeper")
///     .era(EraChoice::V2025) // `initialize` only; the default asks `server/discover` first
///     .log_level(mcp::LogLevel::Warning)
///     .on_elicitation(|question| async move {
///         println!("the server asks: {}", question["message"]);
///         Ok(json!({ "action": "accept", "content": { "confirm": true } }))
///     })
///     .on_notification(|method, params| println!("{method}: {params}"))
///     .handshake_timeout(Duration::from_secs(5))
///     .stdio(tokio::process::Command::new("target/debug/examples/bookshop"))
///     .await?;
/// # drop(client); Ok(()) }
/// # fn main() { let _ = run(); }
/// ```
#[derive(Clone, Default)]
#[must_use]
pub struct ClientBuilder {
    info: Option<Implementation>,
    era: EraChoice,
    elicitation: Option<Handler>,
    sampling: Option<Handler>,
    roots: Option<Handler>,
    on_notification: Option<NotificationHandler>,
    log_level: Option<LogLevel>,
    max_rounds: Option<usize>,
    extensions: Map<String, Value>,
    frame_limit: Option<usize>,
    handshake_timeout: Option<Duration>,
    on_stderr: Option<StderrHandler>,
    headers: Vec<(String, String)>,
    http_client: Option<reqwest::Client>,
    auth: Option<auth::OAuth>,
    metrics: Option<crate::metrics::Metrics>,
}

impl fmt::Debug for ClientBuilder {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ClientBuilder").field("info", &self.info).field("era", &self.era).finish_non_exhaustive()
    }
}

/// A handler from an async closure.
fn boxed<F, Fut>(f: F) -> Handler
where
    F: Fn(Value) -> Fut + Send + Sync + 'static,
    Fut: std::future::Future<Output = Result<Value, crate::Error>> + Send + 'static,
{
    Arc::new(move |p| Box::pin(f(p)))
}

/// How many `input_required` rounds one call may take by default: 8.
pub const DEFAULT_MAX_ROUNDS: usize = 8;

/// The longest message the client reads from a server by default: 64 MiB (a stdio line, an SSE event's data, a
/// JSON body). See [`ClientBuilder::frame_limit`].
pub const DEFAULT_FRAME_LIMIT: usize = 64 * 1024 * 1024;

/// How long the handshake (`server/discover`, `initialize`) may take by default: 30 s. See
/// [`ClientBuilder::handshake_timeout`].
pub const DEFAULT_HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(30);

/// How long the handshake may take by default when the client authorizes ([`ClientBuilder::auth`]): 5 minutes,
/// time for a user to sign in.
pub const DEFAULT_AUTH_HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(300);

/// The capacity of each direction of the in-memory pipe of [`ClientBuilder::in_process`], in bytes: 64 KiB, a
/// pipe's usual size (a longer message simply takes several writes).
const IN_PROCESS_PIPE: usize = 64 * 1024;

impl ClientBuilder {
    /// The client's name (`clientInfo.name`).
    pub fn name(mut self, name: impl Into<String>) -> Self {
        let version = self.info.as_ref().map(|i| i.version.clone()).unwrap_or_else(|| env!("CARGO_PKG_VERSION").into());
        self.info = Some(Implementation::new(name, version));
        self
    }

    /// The client's name and version.
    pub fn info(mut self, info: Implementation) -> Self {
        self.info = Some(info);
        self
    }

    /// Which era to speak (default [`EraChoice::Auto`]); an [`Era`](crate::Era) speaks that one only.
    pub fn era(mut self, era: impl Into<EraChoice>) -> Self {
        self.era = era.into();
        self
    }

    /// Answers `elicitation/create` (form and URL mode): gets its params, returns `{action, content?}`. Declares the
    /// `elicitation` capability.
    pub fn on_elicitation<F, Fut>(mut self, f: F) -> Self
    where
        F: Fn(Value) -> Fut + Send + Sync + 'static,
        Fut: std::future::Future<Output = Result<Value, crate::Error>> + Send + 'static,
    {
        self.elicitation = Some(boxed(f));
        self
    }

    /// Answers `sampling/createMessage`: gets its params, returns `{role, content, model, stopReason?}`. Declares the
    /// `sampling` capability.
    pub fn on_sampling<F, Fut>(mut self, f: F) -> Self
    where
        F: Fn(Value) -> Fut + Send + Sync + 'static,
        Fut: std::future::Future<Output = Result<Value, crate::Error>> + Send + 'static,
    {
        self.sampling = Some(boxed(f));
        self
    }

    /// Answers `roots/list`: returns `{roots: [...]}`. Declares the `roots` capability.
    pub fn on_roots<F, Fut>(mut self, f: F) -> Self
    where
        F: Fn(Value) -> Fut + Send + Sync + 'static,
        Fut: std::future::Future<Output = Result<Value, crate::Error>> + Send + 'static,
    {
        self.roots = Some(boxed(f));
        self
    }

    /// Hears every notification that belongs to no call (logs, list changes, resource updates), as method and params.
    pub fn on_notification(mut self, f: impl Fn(&str, &Value) + Send + Sync + 'static) -> Self {
        self.on_notification = Some(Arc::new(f));
        self
    }

    /// The lowest level of log messages wanted: `logging/setLevel` after `initialize` (2025), or on every request
    /// (2026, `io.modelcontextprotocol/logLevel`).
    pub fn log_level(mut self, level: LogLevel) -> Self {
        self.log_level = Some(level);
        self
    }

    /// How many `input_required` rounds one call may take (2026 era; default [`DEFAULT_MAX_ROUNDS`]).
    pub fn max_rounds(mut self, rounds: usize) -> Self {
        self.max_rounds = Some(rounds.max(1));
        self
    }

    /// Declares the Tasks extension (2026-07-28) on every request: the server may then answer a tool call with a
    /// task, which [`Client::call_tool`] follows to its end by itself.
    pub fn tasks(self) -> Self {
        self.extension(crate::task::EXTENSION, json!({}))
    }

    /// Declares an extension in the client's capabilities (`extensions.<id>`).
    pub fn extension(mut self, id: impl Into<String>, settings: Value) -> Self {
        self.extensions.insert(id.into(), settings);
        self
    }

    /// The longest message accepted from the server, in bytes (default [`DEFAULT_FRAME_LIMIT`]): a stdio line, an
    /// SSE event's data or a JSON body. A longer one is skipped as it arrives, never held: over stdio the rest of
    /// the line is read and dropped and the reading goes on; the call it answers fails with
    /// [`Error::FrameTooLarge`] (at once over HTTP, and over stdio when the line starts with its `"id"`, as most
    /// servers write it; else at the call's timeout).
    pub fn frame_limit(mut self, bytes: usize) -> Self {
        self.frame_limit = Some(bytes.max(1));
        self
    }

    /// Records the client's calls into `metrics` (see [`Metrics`](crate::Metrics)): the OpenTelemetry conventions'
    /// `mcp.client.operation.duration` (`mcp_client_operation_duration_seconds`, per method, tool or prompt, error
    /// type, protocol version, transport and server address) and `mcp.client.session.duration` (when the client is
    /// dropped or closed). One `Metrics` may serve a server and its clients (a proxy, a gateway) at once.
    pub fn metrics(mut self, metrics: &crate::metrics::Metrics) -> Self {
        self.metrics = Some(metrics.clone());
        self
    }

    /// How long the handshake may take before [`ClientBuilder::stdio`] or [`ClientBuilder::http`] gives up with
    /// [`Error::Timeout`] (default [`DEFAULT_HANDSHAKE_TIMEOUT`]), so a server that never answers is an error, not a
    /// hang. (A stdio server that exits fails the handshake at once, with [`Error::Exited`].)
    pub fn handshake_timeout(mut self, timeout: Duration) -> Self {
        self.handshake_timeout = Some(timeout);
        self
    }

    /// Stdio: hands each line the server writes to its stderr to `f` (lossily decoded, without its newline)
    /// instead of copying it to this process's stderr, which is the default. Either way the client keeps the last
    /// 4 KiB for [`Error::Exited`].
    ///
    /// ```no_run
    /// # async fn run() -> Result<(), mcp::client::Error> {
    /// let client = mcp::client::Client::builder()
    ///     .on_stderr(|line| tracing::info!(target: "server", "{line}"))
    ///     .stdio(tokio::process::Command::new("my-server"))
    ///     .await?;
    /// # drop(client); Ok(()) }
    /// # fn main() { let _ = run(); }
    /// ```
    pub fn on_stderr(mut self, f: impl Fn(&str) + Send + Sync + 'static) -> Self {
        self.on_stderr = Some(Arc::new(f));
        self
    }

    /// HTTP: a header sent on every request (an `Authorization` token, an API key). Called again with the same
    /// name, adds another value. An invalid name or value is an [`Error::Transport`] of kind
    /// [`TransportErrorKind::Config`](super::TransportErrorKind::Config) from [`ClientBuilder::http`].
    ///
    /// ```no_run
    /// # async fn run() -> Result<(), mcp::client::Error> {
    /// let client = mcp::client::Client::builder()
    ///     .header("authorization", "Bearer s3cret")
    ///     .http("https://mcp.example.com/mcp")
    ///     .await?;
    /// # drop(client); Ok(()) }
    /// # fn main() { let _ = run(); }
    /// ```
    pub fn header(mut self, name: impl Into<String>, value: impl Into<String>) -> Self {
        self.headers.push((name.into(), value.into()));
        self
    }

    /// HTTP: the [`reqwest::Client`] to send with, configured as the program needs (proxies, root certificates, a
    /// client certificate, timeouts). Without it the client builds its own (rustls with the platform's roots).
    ///
    /// ```no_run
    /// # async fn run(pem: &[u8]) -> Result<(), Box<dyn std::error::Error>> {
    /// let http = reqwest::Client::builder()
    ///     .add_root_certificate(reqwest::Certificate::from_pem(pem)?)
    ///     .connect_timeout(std::time::Duration::from_secs(5))
    ///     .build()?;
    /// let client = mcp::client::Client::builder().http_client(http).http("https://localhost:8443/mcp").await?;
    /// # drop(client); Ok(()) }
    /// # fn main() { let _ = run(b""); }
    /// ```
    pub fn http_client(mut self, client: reqwest::Client) -> Self {
        self.http_client = Some(client);
        self
    }

    /// HTTP: OAuth 2.1 authorization ([`auth`]). A request the server answers with 401 (or 403
    /// `insufficient_scope`) is authorized and sent again, the caller none the wiser; every request carries the
    /// token as `Authorization: Bearer`. Unless [`ClientBuilder::handshake_timeout`] is set, the handshake, which
    /// may now wait for a user to sign in, has [`DEFAULT_AUTH_HANDSHAKE_TIMEOUT`]. Ignored on stdio, which the
    /// specification leaves unauthenticated.
    ///
    /// ```no_run
    /// # async fn run() -> Result<(), mcp::client::Error> {
    /// use mcp::client::{auth::OAuth, Client};
    ///
    /// let oauth = OAuth::loopback(8976, |url| println!("Sign in at {url}")).client_name("shopkeeper");
    /// let client = Client::builder().auth(oauth).http("https://books.example.com/mcp").await?;
    /// # drop(client); Ok(()) }
    /// # fn main() { let _ = run(); }
    /// ```
    pub fn auth(mut self, oauth: auth::OAuth) -> Self {
        self.auth = Some(oauth);
        self
    }

    /// Starts `command` and speaks MCP over its stdin and stdout. The child is killed when the last clone of the
    /// client is dropped (or on [`Client::close`]).
    ///
    /// The child's stderr is piped (a stderr set on `command` is replaced): it is copied to this process's stderr,
    /// or handed to [`ClientBuilder::on_stderr`], and its end is kept. If the child exits or closes its stdout,
    /// the handshake and every waiting call fail at once with [`Error::Exited`], which carries the exit status and
    /// the last lines of its stderr.
    ///
    /// ```no_run
    /// # async fn run() {
    /// use mcp::client::{Client, Error};
    ///
    /// match Client::builder().stdio(tokio::process::Command::new("/bin/false")).await {
    ///     Err(Error::Exited { status, stderr }) => eprintln!("the server died ({status:?}): {stderr}"),
    ///     other => println!("{other:?}"),
    /// }
    /// # }
    /// # fn main() { let _ = run(); }
    /// ```
    pub async fn stdio(self, command: tokio::process::Command) -> Result<Client, Error> {
        let limit = self.frame_limit.unwrap_or(DEFAULT_FRAME_LIMIT);
        let (link, incoming) = stdio::Stdio::spawn(command, self.on_stderr.clone())?;
        let timeout = self.handshake_timeout.unwrap_or(DEFAULT_HANDSHAKE_TIMEOUT);
        let client = self.into_client(Link::Stdio(link));
        stdio::read_loop(incoming, Arc::downgrade(&client.inner), limit);
        client.handshake_within(timeout).await?;
        Ok(client)
    }

    /// Connects to `server` in this process, through an in-memory pipe (`tokio::io::duplex`) served by
    /// [`Server::serve_streams`](crate::Server::serve_streams): the real protocol, in either era (the era choice,
    /// handlers and limits of this builder apply), without a child process or a socket. Made for tests: a test builds
    /// its server with [`Server::builder`](crate::Server::builder) and calls its tools through the client.
    ///
    /// The session ends when the last clone of the client is dropped, or on [`Client::close`], which waits for it:
    /// the server sees the end of its input, answers what is in flight (within its
    /// [`shutdown_timeout`](crate::ServerBuilder::shutdown_timeout)) and ends the session. Other sessions of the same
    /// server go on, and its shutdown hooks do not run (call [`Server::shutdown`](crate::Server::shutdown) for that).
    ///
    /// ```
    /// use mcp::client::{Client, EraChoice};
    /// use serde_json::json;
    ///
    /// /// Add two numbers.
    /// #[mcp::tool]
    /// fn add(a: i64, b: i64) -> String {
    ///     (a + b).to_string()
    /// }
    ///
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), mcp::client::Error> {
    /// let server = mcp::Server::builder().tool::<add>().build().unwrap();
    /// for era in [EraChoice::V2025, EraChoice::V2026] {
    ///     let client = Client::builder().era(era).in_process(server.clone()).await?;
    ///     let sum = client.call_tool("add", json!({"a": 2, "b": 3})).await?;
    ///     assert_eq!(sum.text(), Some("5"));
    ///     client.close().await;
    /// }
    /// # Ok(()) }
    /// ```
    pub async fn in_process(self, server: crate::Server) -> Result<Client, Error> {
        let limit = self.frame_limit.unwrap_or(DEFAULT_FRAME_LIMIT);
        let (ours, theirs) = tokio::io::duplex(IN_PROCESS_PIPE);
        let (server_input, server_output) = tokio::io::split(theirs);
        let session = tokio::spawn(server.serve_streams(server_input, server_output));
        let (output, input) = tokio::io::split(ours);
        let timeout = self.handshake_timeout.unwrap_or(DEFAULT_HANDSHAKE_TIMEOUT);
        let client = self.into_client(Link::Stdio(stdio::Stdio::in_process(input, session)));
        stdio::read_loop(output, Arc::downgrade(&client.inner), limit);
        client.handshake_within(timeout).await?;
        Ok(client)
    }

    /// Connects to a Streamable HTTP endpoint (`http://host:port/mcp`, or `https://`: TLS is rustls, with the
    /// platform's roots unless [`ClientBuilder::http_client`] passes a client configured otherwise).
    pub async fn http(self, url: impl Into<String>) -> Result<Client, Error> {
        let options = http::Options {
            client: self.http_client.clone(),
            headers: self.headers.clone(),
            frame_limit: self.frame_limit.unwrap_or(DEFAULT_FRAME_LIMIT),
            auth: self.auth.clone(),
        };
        let link = http::Http::new(url.into(), options)?;
        let default = if self.auth.is_some() { DEFAULT_AUTH_HANDSHAKE_TIMEOUT } else { DEFAULT_HANDSHAKE_TIMEOUT };
        let timeout = self.handshake_timeout.unwrap_or(default);
        let client = self.into_client(Link::Http(link));
        client.handshake_within(timeout).await?;
        Ok(client)
    }

    fn into_client(self, link: Link) -> Client {
        let mut capabilities = Map::new();
        if self.elicitation.is_some() {
            capabilities.insert("elicitation".into(), json!({ "form": {}, "url": {} }));
        }
        if self.sampling.is_some() {
            capabilities.insert("sampling".into(), json!({}));
        }
        if self.roots.is_some() {
            capabilities.insert("roots".into(), json!({ "listChanged": true }));
        }
        if !self.extensions.is_empty() {
            capabilities.insert("extensions".into(), Value::Object(self.extensions));
        }
        let info = self.info.unwrap_or_else(|| Implementation::new("mcp-rust-client", env!("CARGO_PKG_VERSION")));
        Client {
            inner: Arc::new(Inner {
                link,
                info,
                choice: self.era,
                capabilities: Value::Object(capabilities),
                handlers: Handlers {
                    elicitation: self.elicitation,
                    sampling: self.sampling,
                    roots: self.roots,
                    notification: self.on_notification,
                },
                log_level: self.log_level,
                max_rounds: self.max_rounds.unwrap_or(DEFAULT_MAX_ROUNDS),
                session: OnceLock::new(),
                pending: Mutex::new(HashMap::new()),
                progress: Mutex::new(HashMap::new()),
                next_id: AtomicI64::new(1),
                tool_headers: Mutex::new(HashMap::new()),
                cache: Mutex::new(HashMap::new()),
                routes: Mutex::new(HashMap::new()),
                closed: OnceLock::new(),
                metrics: self.metrics.map(|m| (m, std::time::Instant::now())),
                answering: Arc::new(tokio::sync::Semaphore::new(ANSWERING)),
                askers: Mutex::new(HashMap::new()),
                hearers: Mutex::new(HashMap::new()),
            }),
        }
    }
}
