//! Why a client call failed: [`Error`], and the structured [`TransportError`] that keeps its source chain.

use std::fmt;
use std::process::ExitStatus;
use std::sync::Arc;
use std::time::Duration;

/// Why a client call failed.
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub enum Error {
    /// The server answered with a JSON-RPC error.
    Rpc(crate::Error),
    /// The call's timeout (or the handshake's, [`ClientBuilder::handshake_timeout`](super::ClientBuilder::handshake_timeout))
    /// ran out; the request was cancelled.
    Timeout(Duration),
    /// The connection could not be made, or broke: what kind of failure, and its source chain.
    Transport(TransportError),
    /// The HTTP server answered with a status that is not an MCP answer (a 401 from an authorization layer, a 404):
    /// the status and the start of the body.
    Http {
        /// The HTTP status code.
        status: u16,
        /// The body (its first few KiB, lossily decoded).
        body: String,
    },
    /// The server's process ended, or closed its stdout (stdio): its exit status (`None` if it is still running)
    /// and the last lines of its stderr (at most 4 KiB).
    Exited {
        /// How the process ended, if it did.
        status: Option<ExitStatus>,
        /// The end of what it wrote to stderr.
        stderr: String,
    },
    /// The server sent a message over the frame limit ([`ClientBuilder::frame_limit`](super::ClientBuilder::frame_limit));
    /// it was skipped.
    FrameTooLarge {
        /// The limit in force, in bytes.
        limit: usize,
    },
    /// The server said something this client cannot read.
    Protocol(String),
    /// What the application asked cannot be done as it was asked, or as the client is set up: params that are not
    /// an object, a list method that is not one, a method the era does not have, webhook delivery without a
    /// receiver. Nothing was sent; the message says what to do instead.
    Usage(String),
    /// The connection is closed.
    Closed,
    /// 2026 era: the server kept asking (`input_required`) past the limit of rounds.
    TooManyRounds(usize),
    /// The server wants authorization ([`ClientBuilder::auth`](super::ClientBuilder::auth)) and the client could not
    /// get a token it accepts: what went wrong, and at which step.
    Auth(AuthError),
    /// A skill, or a file of one, is not what its entry says (feature `skills`): another size or digest, another
    /// front matter, a file the entry does not list, an entry that cannot be loaded. The content was not used.
    #[cfg(feature = "skills")]
    Skill(crate::wire::skills::SkillError),
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::Rpc(e) => write!(f, "the server answered with an error: {e}"),
            Error::Timeout(d) => write!(f, "no answer within {d:?}; the request was cancelled"),
            Error::Transport(e) => write!(f, "transport error: {e}"),
            Error::Http { status, body } => {
                let reason = http::StatusCode::from_u16(*status).ok().and_then(|s| s.canonical_reason());
                write!(f, "HTTP {status} {}", reason.unwrap_or_default())?;
                if !body.is_empty() {
                    write!(f, ": {body}")?;
                }
                Ok(())
            }
            Error::Exited { status, stderr } => {
                match status {
                    Some(status) => write!(f, "the server exited ({status})")?,
                    None => f.write_str("the server closed its stdout")?,
                }
                if stderr.is_empty() {
                    f.write_str(" and wrote nothing to stderr")
                } else {
                    write!(f, "; the end of its stderr:\n{stderr}")
                }
            }
            Error::FrameTooLarge { limit } => write!(
                f,
                "the server sent a message over the frame limit of {limit} bytes (ClientBuilder::frame_limit raises it)"
            ),
            Error::Protocol(why) => write!(f, "protocol error: {why}"),
            Error::Usage(why) => write!(f, "cannot be done as asked: {why}"),
            Error::Closed => f.write_str("the connection is closed"),
            Error::TooManyRounds(n) => write!(f, "the server asked for input more than {n} times in one call"),
            Error::Auth(e) => write!(f, "authorization failed: {e}"),
            #[cfg(feature = "skills")]
            Error::Skill(e) => write!(f, "skill refused: {e}"),
        }
    }
}

impl std::error::Error for Error {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            Error::Transport(e) => Some(e),
            Error::Auth(e) => Some(e),
            #[cfg(feature = "skills")]
            Error::Skill(e) => Some(e),
            _ => None,
        }
    }
}

impl Error {
    /// The JSON-RPC error code, when the server answered with an error.
    pub fn code(&self) -> Option<i32> {
        match self {
            Error::Rpc(e) => Some(e.code.0),
            _ => None,
        }
    }
}

/// At which step of authorization an [`AuthError`] happened.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum AuthErrorKind {
    /// The client's own configuration ([`OAuth`](super::auth::OAuth)) is wrong: a key, a URL.
    Config,
    /// Finding or trusting the authorization server: its metadata, the resource it names, its issuer.
    Discovery,
    /// Registering the client with the authorization server.
    Registration,
    /// The authorization request and its response (the user's part, `state`, `iss`, PKCE support).
    Authorization,
    /// The token request.
    Token,
    /// The server keeps asking for scopes the client was not granted.
    Scope,
}

/// Why authorization failed: the step, and a sentence that names the problem and, where there is one, its fix.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AuthError {
    kind: AuthErrorKind,
    message: String,
}

impl AuthError {
    fn new(kind: AuthErrorKind, message: impl Into<String>) -> AuthError {
        AuthError { kind, message: message.into() }
    }
    pub(crate) fn config(message: impl Into<String>) -> AuthError {
        AuthError::new(AuthErrorKind::Config, message)
    }
    pub(crate) fn discovery(message: impl Into<String>) -> AuthError {
        AuthError::new(AuthErrorKind::Discovery, message)
    }
    pub(crate) fn registration(message: impl Into<String>) -> AuthError {
        AuthError::new(AuthErrorKind::Registration, message)
    }
    pub(crate) fn authorization(message: impl Into<String>) -> AuthError {
        AuthError::new(AuthErrorKind::Authorization, message)
    }
    pub(crate) fn token(message: impl Into<String>) -> AuthError {
        AuthError::new(AuthErrorKind::Token, message)
    }
    pub(crate) fn scope(message: impl Into<String>) -> AuthError {
        AuthError::new(AuthErrorKind::Scope, message)
    }

    /// At which step it failed.
    pub fn kind(&self) -> AuthErrorKind {
        self.kind
    }
}

impl fmt::Display for AuthError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for AuthError {}

/// What kind of transport failure a [`TransportError`] is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum TransportErrorKind {
    /// The server's address could not be resolved.
    Dns,
    /// The connection was refused or could not be made.
    Connect,
    /// The TLS handshake failed (an untrusted certificate, a wrong name, no common protocol).
    Tls,
    /// The HTTP client's own timeout ran out (one set on a [`reqwest::Client`] passed to
    /// [`ClientBuilder::http_client`](super::ClientBuilder::http_client)).
    Timeout,
    /// The child process could not be started (stdio).
    Spawn,
    /// The URL or a header is not valid, or the HTTP client could not be built.
    Config,
    /// Reading or writing failed after the connection was made.
    Io,
}

/// A transport failure: its kind, what the client was doing, and the error underneath (with its own chain, through
/// [`std::error::Error::source`]).
///
/// ```
/// # async fn run() {
/// use mcp::client::{Client, Error, TransportErrorKind};
///
/// match Client::builder().http("http://127.0.0.1:9/mcp").await {
///     Err(Error::Transport(e)) if e.kind() == TransportErrorKind::Connect => println!("nothing listens: {e}"),
///     Err(e) => println!("another failure: {e}"),
///     Ok(_) => println!("connected"),
/// }
/// # }
/// # fn main() { let _ = run(); }
/// ```
#[derive(Clone, Debug)]
pub struct TransportError {
    kind: TransportErrorKind,
    context: String,
    source: Option<Arc<dyn std::error::Error + Send + Sync>>,
}

impl TransportError {
    pub(crate) fn new(kind: TransportErrorKind, context: impl Into<String>) -> TransportError {
        TransportError { kind, context: context.into(), source: None }
    }

    pub(crate) fn source(mut self, source: impl std::error::Error + Send + Sync + 'static) -> TransportError {
        self.source = Some(Arc::new(source));
        self
    }

    /// A failed reqwest request, its kind read off the error and its source chain.
    pub(crate) fn from_reqwest(context: impl Into<String>, error: reqwest::Error) -> TransportError {
        let kind = classify(&error);
        TransportError { kind, context: context.into(), source: Some(Arc::new(error)) }
    }

    /// What kind of failure this is.
    pub fn kind(&self) -> TransportErrorKind {
        self.kind
    }

    /// What the client was doing when it failed.
    pub fn context(&self) -> &str {
        &self.context
    }
}

/// Whether an error is rustls's (feature `tls`; without it the client speaks no TLS).
fn is_tls(e: &(dyn std::error::Error + 'static)) -> bool {
    #[cfg(feature = "tls")]
    return e.is::<rustls::Error>();
    #[cfg(not(feature = "tls"))]
    {
        let _ = e;
        false
    }
}

/// The kind of a reqwest failure: a rustls error anywhere in the chain is TLS; a resolver failure is DNS (hyper's
/// connector says so only in its message, "dns error"); then reqwest's own connect, timeout and builder flags.
fn classify(error: &reqwest::Error) -> TransportErrorKind {
    let mut next: Option<&(dyn std::error::Error + 'static)> = Some(error);
    let mut dns = false;
    while let Some(e) = next {
        if is_tls(e) {
            return TransportErrorKind::Tls;
        }
        // An I/O error hides its payload from `source()`: look inside, through nested I/O errors.
        let mut io = e.downcast_ref::<std::io::Error>();
        while let Some(payload) = io.and_then(std::io::Error::get_ref) {
            if is_tls(payload) {
                return TransportErrorKind::Tls;
            }
            io = payload.downcast_ref::<std::io::Error>();
        }
        dns |= e.to_string().starts_with("dns error");
        next = e.source();
    }
    if error.is_timeout() {
        TransportErrorKind::Timeout
    } else if dns {
        TransportErrorKind::Dns
    } else if error.is_connect() {
        TransportErrorKind::Connect
    } else if error.is_builder() {
        TransportErrorKind::Config
    } else {
        TransportErrorKind::Io
    }
}

impl fmt::Display for TransportError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.context)?;
        // The whole chain in one line: reqwest's own message says little ("error sending request").
        let mut next = self.source.as_deref().map(|s| s as &(dyn std::error::Error + 'static));
        while let Some(e) = next {
            write!(f, ": {e}")?;
            next = e.source();
        }
        Ok(())
    }
}

impl std::error::Error for TransportError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        self.source.as_deref().map(|s| s as &(dyn std::error::Error + 'static))
    }
}

/// Equal when kind, context and the source's message are (a source is compared by what it says).
impl PartialEq for TransportError {
    fn eq(&self, other: &Self) -> bool {
        self.kind == other.kind
            && self.context == other.context
            && self.source.as_ref().map(ToString::to_string) == other.source.as_ref().map(ToString::to_string)
    }
}
