//! Authorization on the server: the server as an OAuth 2.1 resource server (the specification's
//! `basic/authorization`). [`Authorization`] says which resource this server is and whom it trusts; the HTTP
//! transport checks every request's bearer token against it before anything else reads the request, answers `401`
//! with a challenge that points at the Protected Resource Metadata (RFC 9728) it serves, and `403
//! insufficient_scope` when the handler a request is for needs scopes the token lacks. stdio stays
//! unauthenticated, as the specification says.
//!
//! This module is a layer of its own: it knows tokens, principals and challenges, and imports nothing above the
//! floor (`base`, `wire`). The transport asks the server which scopes a request needs and this module whether the
//! token grants them.

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use serde_json::Value;

use crate::base::future::BoxFuture;

#[cfg(feature = "auth")]
mod algorithms;
#[cfg(feature = "auth")]
mod cache;
mod config;
#[cfg(feature = "auth")]
mod dpop;
mod guard;
#[cfg(feature = "auth")]
mod introspection;
#[cfg(feature = "auth")]
mod jwt;
#[cfg(feature = "auth")]
mod metadata;

pub use config::{Authorization, Dpop};
pub(crate) use guard::Guard;
#[cfg(feature = "http")]
#[cfg(feature = "http")]
pub(crate) use guard::{Needed, ProofHeader, Refusal, Request};
#[cfg(feature = "auth")]
pub use introspection::Introspection;
#[cfg(feature = "auth")]
pub use jwt::JwtVerifier;

/// Who is calling, as the server's [`Authorization`] verified it from a bearer token, or as an authentication layer
/// of the application's own established it. Handlers read it from `ctx.meta().http`; the token itself never
/// reaches them (the `Authorization` header is taken out of the headers they see when the server verifies tokens).
///
/// A layer of the application's own in front of the endpoint inserts one into the HTTP request's extensions
/// (`request.extensions_mut().insert(auth)`); a bearer-token layer with axum's `middleware::from_fn` (through
/// [`mcp::axum`](crate::axum), the version the router is built with), driven here without a socket:
///
/// ```
/// # #[cfg(feature = "http")]
/// # mod with_http {
/// use mcp::axum::{self, extract::Request, http::StatusCode, middleware::Next, response::Response};
///
/// /// Admits a request with a known token and says who sent it; refuses the others with 401.
/// pub async fn bearer(mut request: Request, next: Next) -> Result<Response, StatusCode> {
///     let token = request.headers().get("authorization").and_then(|v| v.to_str().ok());
///     let auth = match token.and_then(|t| t.strip_prefix("Bearer ")) {
///         Some("alice-token") => mcp::AuthInfo::new("alice", vec!["notes:read".into()]),
///         _ => return Err(StatusCode::UNAUTHORIZED),
///     };
///     request.extensions_mut().insert(auth);
///     Ok(next.run(request).await)
/// }
///
/// /// Say who is calling.
/// #[mcp::tool]
/// pub fn whoami(ctx: &mcp::Context) -> String {
///     let auth = ctx.meta().http.as_ref().and_then(|http| http.auth.as_ref());
///     auth.map_or("anonymous".to_owned(), |auth| auth.subject.clone())
/// }
///
/// pub fn app() -> axum::Router {
///     let server = mcp::Server::builder().tool::<whoami>().build().unwrap();
///     server.http_router(mcp::HttpOptions::new()).layer(axum::middleware::from_fn(bearer))
///     // then: axum::serve(tokio::net::TcpListener::bind("127.0.0.1:8000").await?, app()).await
/// }
/// # }
/// # #[cfg(feature = "http")]
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() {
/// use tower::ServiceExt; // `oneshot`: one request through the router
/// use with_http::app;
/// use mcp::axum::{body::Body, http};
///
/// let initialize = serde_json::json!({ "jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
///     "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": { "name": "doc", "version": "0" } } });
/// let post = |token: Option<&str>| {
///     let mut request = http::Request::post("/mcp")
///         .header("host", "localhost")
///         .header("content-type", "application/json")
///         .header("accept", "application/json, text/event-stream");
///     if let Some(token) = token {
///         request = request.header("authorization", format!("Bearer {token}"));
///     }
///     request.body(Body::from(initialize.to_string())).unwrap()
/// };
/// assert_eq!(app().oneshot(post(None)).await.unwrap().status(), 401);
/// assert_eq!(app().oneshot(post(Some("alice-token"))).await.unwrap().status(), 200);
/// # }
/// # #[cfg(not(feature = "http"))]
/// # fn main() {}
/// ```
#[derive(Clone, Debug, Default, PartialEq)]
#[non_exhaustive]
pub struct AuthInfo {
    /// The principal: a user or client id (a token's `sub`).
    pub subject: String,
    /// The scopes granted.
    pub scopes: Vec<String>,
    /// Anything else the verifier knows (a JWT's claims, an introspection answer).
    pub claims: Value,
    /// Who issued the token (its `iss`), when the verifier knows.
    pub issuer: Option<String>,
    /// The OAuth client the token was issued to (`client_id`, else `azp`), when the verifier knows.
    pub client_id: Option<String>,
    /// When the token expires, in seconds since the Unix epoch.
    pub expires_at: Option<u64>,
}

impl AuthInfo {
    /// A principal with these scopes.
    pub fn new(subject: impl Into<String>, scopes: Vec<String>) -> AuthInfo {
        AuthInfo { subject: subject.into(), scopes, ..AuthInfo::default() }
    }

    /// The same, issued by `issuer`.
    pub fn issued_by(mut self, issuer: impl Into<String>) -> AuthInfo {
        self.issuer = Some(issuer.into());
        self
    }

    /// Whether the token grants `scope`.
    pub fn has_scope(&self, scope: &str) -> bool {
        self.scopes.iter().any(|s| s == scope)
    }

    /// The key of this principal everywhere a thing is bound to its caller (2025 sessions, tasks, 2026
    /// `requestState`): issuer and subject, so the same `sub` from two issuers is two principals, and a new token of
    /// the same subject (after a step-up) is the same one.
    pub fn principal(&self) -> String {
        match &self.issuer {
            Some(issuer) => format!("{issuer} {}", self.subject),
            None => self.subject.clone(),
        }
    }
}

/// Why a token was not accepted.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum TokenError {
    /// The token is not valid here (malformed, badly signed, expired, for another resource, from an issuer not
    /// trusted, revoked): `401` with `error="invalid_token"`. The text says which, for the server's log and the
    /// challenge's `error_description`; it never holds the token.
    Invalid(String),
    /// The token could not be checked now (the issuer's keys or introspection endpoint did not answer): `503`, so
    /// the client retries instead of asking its user to log in again.
    Unavailable(String),
}

impl fmt::Display for TokenError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            TokenError::Invalid(why) => write!(f, "invalid token: {why}"),
            TokenError::Unavailable(why) => write!(f, "the token could not be verified now: {why}"),
        }
    }
}

impl std::error::Error for TokenError {}

/// Checks a bearer token and says whom it stands for. The server's built-in verifiers are [`JwtVerifier`] (JWT
/// access tokens against the issuer's keys) and [`Introspection`] (RFC 7662, for opaque tokens); implement this
/// for anything else.
///
/// A verifier must check that the token is meant for this resource (its audience), and must not pass the token on
/// to another service except the issuer's own endpoints.
///
/// ```
/// use mcp::auth::{TokenError, TokenVerifier};
/// use mcp::handler::BoxFuture;
/// use mcp::AuthInfo;
///
/// /// Tokens from a table the application keeps.
/// struct Table;
///
/// impl TokenVerifier for Table {
///     fn verify<'a>(&'a self, token: &'a str) -> BoxFuture<'a, Result<AuthInfo, TokenError>> {
///         Box::pin(async move {
///             match token {
///                 "alice-token" => Ok(AuthInfo::new("alice", vec!["notes:read".into()])),
///                 _ => Err(TokenError::Invalid("unknown token".into())),
///             }
///         })
///     }
/// }
///
/// let auth = mcp::auth::Authorization::new("https://notes.example.com/mcp")
///     .authorization_server("https://login.example.com")
///     .verifier(Table);
/// # let _ = auth;
/// ```
pub trait TokenVerifier: Send + Sync + 'static {
    /// The principal `token` stands for, or why it is refused.
    fn verify<'a>(&'a self, token: &'a str) -> BoxFuture<'a, Result<AuthInfo, TokenError>>;

    /// The same, shared: what the server calls. A verifier that remembers the principals of tokens it has seen
    /// (the built-in ones do) answers with the one it keeps instead of a copy; the default wraps
    /// [`verify`](TokenVerifier::verify)'s answer.
    fn verify_shared<'a>(&'a self, token: &'a str) -> BoxFuture<'a, Result<Arc<AuthInfo>, TokenError>> {
        Box::pin(async move { self.verify(token).await.map(Arc::new) })
    }
}

/// The longest leeway allowed for `exp` and `nbf`: clocks that disagree by more are broken, and a longer leeway
/// keeps expired tokens alive.
pub const MAX_LEEWAY: Duration = Duration::from_secs(60);
/// The longest wait between two fetches of an issuer's keys on an unknown `kid`: a rotated key is accepted within
/// it, and a flood of tokens with made-up `kid`s fetches the keys no more often than this.
pub const MAX_JWKS_COOLDOWN: Duration = Duration::from_secs(60);

/// A URL as far as this module needs it: its origin (`scheme://host[:port]`), path and fragment.
#[derive(Debug)]
pub(crate) struct Url<'a> {
    pub origin: &'a str,
    pub path: &'a str,
    pub fragment: Option<&'a str>,
}

/// Splits an absolute `https` URL (or `http` on a loopback host, for development); anything else is refused with
/// a sentence naming `what` it was for.
pub(crate) fn parse_url<'a>(url: &'a str, what: &str) -> Result<Url<'a>, String> {
    let (without_fragment, fragment) = match url.split_once('#') {
        Some((u, f)) => (u, Some(f)),
        None => (url, None),
    };
    let Some((scheme, rest)) = without_fragment.split_once("://") else {
        return Err(format!("{what} `{url}` is not an absolute URL (such as https://example.com/mcp)"));
    };
    let host_end = rest.find(['/', '?']).unwrap_or(rest.len());
    let authority = &rest[..host_end];
    let path = rest[host_end..].split('?').next().unwrap_or_default();
    if authority.is_empty() {
        return Err(format!("{what} `{url}` has no host"));
    }
    let host = authority.rsplit_once(':').map_or(authority, |(h, port)| {
        if port.chars().all(|c| c.is_ascii_digit()) {
            h
        } else {
            authority
        }
    });
    let loopback = matches!(host, "localhost" | "127.0.0.1" | "[::1]") || host.ends_with(".localhost");
    match scheme {
        "https" => {}
        "http" if loopback => {}
        "http" => {
            return Err(format!("{what} `{url}` is plain http on a host that is not loopback; OAuth needs https there"))
        }
        _ => return Err(format!("{what} `{url}` is not an https URL")),
    }
    let origin = &without_fragment[..scheme.len() + 3 + authority.len()];
    Ok(Url { origin, path, fragment })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls_must_be_https_except_on_loopback() {
        let url = parse_url("https://books.example.com/mcp", "the resource").unwrap();
        assert_eq!((url.origin, url.path), ("https://books.example.com", "/mcp"));
        let url = parse_url("http://127.0.0.1:8000/mcp?x=1#f", "the resource").unwrap();
        assert_eq!((url.origin, url.path, url.fragment), ("http://127.0.0.1:8000", "/mcp", Some("f")));
        assert!(parse_url("http://books.example.com/mcp", "the resource").unwrap_err().contains("https"));
        assert!(parse_url("books.example.com/mcp", "the resource").unwrap_err().contains("absolute"));
        assert!(parse_url("ftp://x/", "the issuer").is_err());
    }

    #[test]
    fn a_principal_is_issuer_and_subject() {
        assert_eq!(AuthInfo::new("ada", vec![]).issued_by("https://as").principal(), "https://as ada");
        assert_eq!(AuthInfo::new("ada", vec![]).principal(), "ada");
    }
}
