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

use std::collections::BTreeSet;
use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use serde_json::{json, Value};

use crate::base::future::BoxFuture;

#[cfg(feature = "auth")]
mod algorithms;
#[cfg(feature = "auth")]
mod cache;
#[cfg(feature = "auth")]
mod dpop;
#[cfg(feature = "auth")]
mod introspection;
#[cfg(feature = "auth")]
mod jwt;
#[cfg(feature = "auth")]
mod metadata;

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
/// use mcp::{AuthInfo, BoxFuture};
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

/// Whether the server takes DPoP-bound access tokens (RFC 9449): tokens whose `cnf.jkt` binds them to a key of the
/// client's, sent as `Authorization: DPoP <token>` with a `DPoP` header holding a proof of that key for the request
/// (its method and URL, a fresh `iat`, a `jti` used once, the hash of the token). Given to
/// [`Authorization::dpop`]; [`Dpop::Accepted`] unless set.
///
/// A DPoP-bound token sent as `Bearer` is refused whatever this says (anyone who copied it could use it), and so
/// is a `DPoP` presentation of a token that is not bound to a key. The server asks for no nonce (`DPoP-Nonce`):
/// a proof's `iat` must be within the [leeway](Authorization::leeway) of now, and each `jti` is remembered for that
/// window. Checking proofs needs the `auth` feature; without it, DPoP is off.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub enum Dpop {
    /// Bearer tokens only: the `DPoP` scheme is refused, and challenges and metadata do not offer it.
    Off,
    /// Bearer tokens and DPoP-bound ones (with their proofs): a `401` offers both schemes, and the metadata lists
    /// `dpop_signing_alg_values_supported`.
    #[default]
    Accepted,
    /// DPoP-bound tokens only: a bearer token is refused, a `401` offers the `DPoP` scheme alone, and the metadata
    /// says `dpop_bound_access_tokens_required: true`.
    Required,
}

/// The server as an OAuth 2.1 resource server: which resource it is, whom it trusts, and how tokens are checked.
/// Given to [`ServerBuilder::authorization`](crate::ServerBuilder::authorization); `#[mcp::main]` programs also take
/// it from the command line (`--auth-issuer URL --auth-resource URL`, or `MCP_AUTH_ISSUER` and
/// `MCP_AUTH_RESOURCE`).
///
/// Over HTTP every request (POST, GET and DELETE) then needs `Authorization: Bearer <token>`: without a valid one
/// it is answered `401` with `WWW-Authenticate: Bearer resource_metadata="…"` (and, unless [`Dpop::Off`], a
/// `DPoP` challenge with `algs` after it); a request for a handler whose
/// `scopes` the token lacks is answered `403` with `error="insufficient_scope"` and every scope that handler
/// needs. The Protected Resource Metadata (RFC 9728) is served at `/.well-known/oauth-protected-resource` followed
/// by the resource's path, and at the root form. 2025 sessions, tasks and 2026 `requestState`s are bound to the
/// principal (issuer and subject) that made them. DPoP-bound tokens (RFC 9449) are taken too, as
/// `Authorization: DPoP <token>` with a `DPoP` proof; [`dpop`](Self::dpop) turns that off or makes it required.
///
/// ```
/// # #[cfg(feature = "auth")] {
/// use mcp::auth::Authorization;
///
/// /// Order a book.
/// #[mcp::tool(scopes = ["books:write"])]
/// fn order_book(title: String) -> String {
///     format!("ordered {title}")
/// }
///
/// let server = mcp::Server::builder()
///     .tool::<order_book>()
///     .authorization(Authorization::jwt("https://login.example.com", "https://books.example.com/mcp"))
///     .build()
///     .unwrap();
/// # let _ = server; }
/// ```
#[derive(Clone)]
pub struct Authorization {
    pub(crate) resource: String,
    /// Named in the metadata; the first ones are `issuers`.
    pub(crate) authorization_servers: Vec<String>,
    /// Trusted for JWT access tokens.
    pub(crate) issuers: Vec<String>,
    pub(crate) verifier: Option<Arc<dyn TokenVerifier>>,
    #[cfg(feature = "auth")]
    pub(crate) introspection: Option<Introspection>,
    pub(crate) leeway: Duration,
    pub(crate) jwks_cooldown: Duration,
    pub(crate) scopes: Vec<String>,
    pub(crate) initial_scopes: Vec<String>,
    pub(crate) hide_unauthorized: bool,
    pub(crate) resource_name: Option<String>,
    pub(crate) dpop: Dpop,
}

impl fmt::Debug for Authorization {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Authorization")
            .field("resource", &self.resource)
            .field("authorization_servers", &self.authorization_servers)
            .field("custom_verifier", &self.verifier.is_some())
            .field("hide_unauthorized", &self.hide_unauthorized)
            .finish_non_exhaustive()
    }
}

impl Authorization {
    /// This server is `resource` (its canonical URI: the MCP endpoint's URL, such as `https://books.example.com/mcp`,
    /// which tokens must name in their audience). Add the issuers it trusts with [`issuer`](Self::issuer), or a
    /// verifier of its own with [`verifier`](Self::verifier).
    pub fn new(resource: impl Into<String>) -> Authorization {
        Authorization {
            resource: resource.into(),
            authorization_servers: Vec::new(),
            issuers: Vec::new(),
            verifier: None,
            #[cfg(feature = "auth")]
            introspection: None,
            leeway: Duration::from_secs(30),
            jwks_cooldown: Duration::from_secs(30),
            scopes: Vec::new(),
            initial_scopes: Vec::new(),
            hide_unauthorized: false,
            resource_name: None,
            dpop: Dpop::Accepted,
        }
    }

    /// A resource that accepts JWT access tokens from `issuer` for `resource`: keys from the issuer's JWKS, found
    /// through its RFC 8414 or OpenID Connect metadata.
    #[cfg(feature = "auth")]
    pub fn jwt(issuer: impl Into<String>, resource: impl Into<String>) -> Authorization {
        Authorization::new(resource).issuer(issuer)
    }

    /// Trusts JWT access tokens from `issuer` (verified against the keys its metadata names), and names it among
    /// the `authorization_servers` of the metadata. Repeatable.
    pub fn issuer(mut self, issuer: impl Into<String>) -> Authorization {
        let issuer = issuer.into();
        self.issuers.push(issuer.clone());
        self.authorization_servers.push(issuer);
        self
    }

    /// Names `issuer` among the metadata's `authorization_servers` without verifying JWTs from it here: for a
    /// custom [`verifier`](Self::verifier) that knows its tokens.
    pub fn authorization_server(mut self, issuer: impl Into<String>) -> Authorization {
        self.authorization_servers.push(issuer.into());
        self
    }

    /// Checks tokens with `verifier` instead of the built-in ones.
    pub fn verifier(mut self, verifier: impl TokenVerifier) -> Authorization {
        self.verifier = Some(Arc::new(verifier));
        self
    }

    /// Checks tokens that are not JWTs (opaque tokens) at the issuer's introspection endpoint (RFC 7662).
    #[cfg(feature = "auth")]
    pub fn introspection(mut self, introspection: Introspection) -> Authorization {
        self.introspection = Some(introspection);
        self
    }

    /// How far `exp` and `nbf` may be off (clock skew); 30 s unless set, at most [`MAX_LEEWAY`].
    pub fn leeway(mut self, leeway: Duration) -> Authorization {
        self.leeway = leeway.min(MAX_LEEWAY);
        self
    }

    /// The shortest time between two fetches of an issuer's keys when a token names a key it does not have; 30 s
    /// unless set, at most [`MAX_JWKS_COOLDOWN`].
    pub fn jwks_cooldown(mut self, cooldown: Duration) -> Authorization {
        self.jwks_cooldown = cooldown.min(MAX_JWKS_COOLDOWN);
        self
    }

    /// Scopes to advertise in `scopes_supported` besides those the handlers require.
    pub fn scopes_supported<I: IntoIterator<Item = S>, S: Into<String>>(mut self, scopes: I) -> Authorization {
        self.scopes.extend(scopes.into_iter().map(Into::into));
        self
    }

    /// The scopes a `401` asks for when the request itself needs none (`initialize`, `server/discover`, lists):
    /// what a client signs in with first. Without them the challenge names no scope, and a client that follows
    /// the specification asks for every scope in `scopes_supported`, the powerful ones included; with them it asks
    /// for these, and steps up (on a `403`) when it calls what needs more.
    pub fn initial_scopes<I: IntoIterator<Item = S>, S: Into<String>>(mut self, scopes: I) -> Authorization {
        self.initial_scopes.extend(scopes.into_iter().map(Into::into));
        self
    }

    /// Leaves out of `tools/list`, `prompts/list`, `resources/list` and `resources/templates/list` what the caller's
    /// scopes cannot use. Off unless set: a client then sees everything and steps up when it calls.
    pub fn hide_unauthorized(mut self, on: bool) -> Authorization {
        self.hide_unauthorized = on;
        self
    }

    /// The `resource_name` of the metadata (the server's name unless set).
    pub fn resource_name(mut self, name: impl Into<String>) -> Authorization {
        self.resource_name = Some(name.into());
        self
    }

    /// Whether DPoP-bound tokens (RFC 9449) are refused, accepted beside bearer tokens (the default), or required;
    /// see [`Dpop`]. A proof's `htu` must name this resource's origin and the endpoint's path (or the resource's),
    /// so the resource identifier must be the URL clients call.
    pub fn dpop(mut self, dpop: Dpop) -> Authorization {
        self.dpop = dpop;
        self
    }

    /// The resource identifier.
    pub fn resource(&self) -> &str {
        &self.resource
    }

    /// Checks the configuration, and makes the verifier it describes.
    pub(crate) fn build(self) -> Result<Guard, String> {
        let url = parse_url(&self.resource, "the resource")?;
        if url.fragment.is_some() {
            return Err(format!(
                "the resource `{}` has a fragment, which a resource identifier must not",
                self.resource
            ));
        }
        for issuer in &self.authorization_servers {
            parse_url(issuer, "the issuer")?;
        }
        let verifier: Arc<dyn TokenVerifier> = match self.verifier.clone() {
            Some(v) => v,
            None => self.built_in()?,
        };
        let metadata_path = format!("/.well-known/oauth-protected-resource{}", url.path.trim_end_matches('/'));
        let metadata_url = format!("{}{metadata_path}", url.origin);
        #[cfg(feature = "auth")]
        let proofs = match self.dpop {
            Dpop::Off => None,
            Dpop::Accepted | Dpop::Required => Some(dpop::Proofs::new(&self.resource, self.leeway)?),
        };
        #[cfg(not(feature = "auth"))]
        let proofs = None;
        Ok(Guard { config: self, verifier, metadata_path, metadata_url, proofs })
    }

    #[cfg(feature = "auth")]
    fn built_in(&self) -> Result<Arc<dyn TokenVerifier>, String> {
        let jwt = if self.issuers.is_empty() {
            None
        } else {
            Some(JwtVerifier::with(&self.issuers, &self.resource, self.leeway, self.jwks_cooldown)?)
        };
        match (jwt, self.introspection.clone()) {
            (None, None) => Err("an authorization needs an issuer to trust (Authorization::issuer or --auth-issuer), \
                 an introspection endpoint, or a verifier of its own (Authorization::verifier)"
                .into()),
            (jwt, introspection) => {
                Ok(Arc::new(BuiltIn { jwt, introspection: introspection.map(|i| i.for_resource(&self.resource)) }))
            }
        }
    }

    #[cfg(not(feature = "auth"))]
    fn built_in(&self) -> Result<Arc<dyn TokenVerifier>, String> {
        Err("verifying tokens from an issuer needs the `auth` feature of mcp-runtime, which this program was built \
             without; enable it, or give a verifier of your own (Authorization::verifier)"
            .into())
    }
}

/// The built-in verifiers together: a JWT goes to the JWT verifier, anything else to introspection.
#[cfg(feature = "auth")]
struct BuiltIn {
    jwt: Option<JwtVerifier>,
    introspection: Option<Introspection>,
}

#[cfg(feature = "auth")]
impl TokenVerifier for BuiltIn {
    fn verify<'a>(&'a self, token: &'a str) -> BoxFuture<'a, Result<AuthInfo, TokenError>> {
        Box::pin(async move { self.verify_shared(token).await.map(Arc::unwrap_or_clone) })
    }

    fn verify_shared<'a>(&'a self, token: &'a str) -> BoxFuture<'a, Result<Arc<AuthInfo>, TokenError>> {
        let looks_like_jwt = token.bytes().filter(|&b| b == b'.').count() == 2;
        match (&self.jwt, &self.introspection) {
            (Some(jwt), _) if looks_like_jwt => jwt.verify_shared(token),
            (_, Some(introspection)) => introspection.verify_shared(token),
            (Some(_), None) => Box::pin(async { Err(TokenError::Invalid("the token is not a JWT".into())) }),
            (None, None) => Box::pin(async { Err(TokenError::Invalid("no verifier".into())) }),
        }
    }
}

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

/// What a request needs from its token: nothing beyond a valid token, or these scopes.
pub(crate) type Needed = &'static [&'static str];

/// A server's authorization, ready to check requests.
pub(crate) struct Guard {
    pub config: Authorization,
    verifier: Arc<dyn TokenVerifier>,
    /// Where the metadata is served on this host (`/.well-known/oauth-protected-resource/mcp`).
    pub metadata_path: String,
    /// The same, absolute: what challenges point at.
    pub metadata_url: String,
    /// The checker of DPoP proofs, unless DPoP is off.
    proofs: Option<Proofs>,
}

#[cfg(feature = "auth")]
use dpop::{ProofError, Proofs};

/// Without the `auth` feature no proof is checked (DPoP is off).
#[cfg(not(feature = "auth"))]
enum Proofs {}

/// The errors of a proof check, which no `Proofs` can make without the `auth` feature.
#[cfg(not(feature = "auth"))]
#[allow(dead_code)]
enum ProofError {
    Invalid(String),
    Binding,
    Full,
}

#[cfg(not(feature = "auth"))]
impl Proofs {
    fn check(&self, _: &str, _: &str, _: &str, _: &str, _: &str) -> Result<(), ProofError> {
        match *self {}
    }
}

/// The algorithms proofs may be signed with.
#[cfg(feature = "auth")]
const DPOP_ALGORITHMS: &[&str] = algorithms::ALGORITHM_NAMES;
#[cfg(not(feature = "auth"))]
const DPOP_ALGORITHMS: &[&str] = &[];

/// The request a token and its DPoP proof are checked for.
pub(crate) struct Request<'a> {
    /// Its method (`POST`), what a proof's `htm` must be.
    pub method: &'a str,
    /// Its path on this host, what a proof's `htu` must end in (or the resource's path).
    pub path: &'a str,
    /// Its query string, where no access token may be.
    pub query: Option<&'a str>,
}

/// What a request's `DPoP` headers held.
pub(crate) enum ProofHeader<'a> {
    /// None.
    Missing,
    /// One, its value.
    One(&'a [u8]),
    /// More than one, which RFC 9449 §4.3 refuses.
    Many,
}

/// The scheme a challenge or refusal is of.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Scheme {
    Bearer,
    Dpop,
}

/// What a request's `Authorization` header said.
pub(crate) enum Presented<'a> {
    /// No `Authorization` header.
    Nothing,
    /// `Bearer <token>`.
    Bearer(&'a str),
    /// `DPoP <token>` (RFC 9449 §7.1).
    Dpop(&'a str),
    /// Something else: another scheme, or a malformed value.
    Malformed,
}

impl Presented<'_> {
    pub(crate) fn of(header: Option<&[u8]>) -> Presented<'_> {
        let Some(value) = header else { return Presented::Nothing };
        let Ok(value) = std::str::from_utf8(value) else { return Presented::Malformed };
        let (bearer, token) = match value.split_once(' ') {
            Some((scheme, token)) if scheme.eq_ignore_ascii_case("bearer") => (true, token.trim()),
            Some((scheme, token)) if scheme.eq_ignore_ascii_case("dpop") => (false, token.trim()),
            _ => return Presented::Malformed,
        };
        // Every byte checked without an early exit, which the compiler turns into a few vector compares.
        let valid = !token.is_empty() && token.bytes().fold(true, |all, b| all & is_token68(b));
        match (valid, bearer) {
            (false, _) => Presented::Malformed,
            (true, true) => Presented::Bearer(token),
            (true, false) => Presented::Dpop(token),
        }
    }
}

/// Whether `b` may be in a `token68` (RFC 7235 §2.1), the form of a bearer token (RFC 6750 §2.1).
fn is_token68(b: u8) -> bool {
    b.is_ascii_alphanumeric() | matches!(b, b'-' | b'.' | b'_' | b'~' | b'+' | b'/' | b'=')
}

/// Why a request is refused, as the transport answers it.
#[derive(Debug, PartialEq)]
pub(crate) enum Refusal {
    /// `401`: no token, or one that is not valid; `on` is the scheme whose challenge carries the error.
    Unauthorized { error: Option<(&'static str, String)>, scopes: Vec<String>, on: Scheme },
    /// `403 insufficient_scope`: the token is valid but lacks scopes the handler needs; `on` is the scheme it was
    /// presented with.
    InsufficientScope { scopes: Vec<String>, missing: Vec<String>, on: Scheme },
    /// `503`: the token could not be checked now.
    Unavailable(String),
}

impl Refusal {
    /// The value of the `WWW-Authenticate` header, for the two refusals that have one: a `Bearer` challenge, a
    /// `DPoP` one (with `algs`, RFC 9449 §7.1), or both in one value, as the server takes them; the error goes on
    /// the challenge of the scheme it concerns.
    pub(crate) fn challenge(&self, guard: &Guard) -> Option<String> {
        let (scopes, error, on, only_on) = match self {
            Refusal::Unauthorized { error, scopes, on } => {
                (scopes, error.as_ref().map(|(code, why)| (*code, why.clone())), *on, false)
            }
            Refusal::InsufficientScope { scopes, missing, on } => {
                let why = format!("this request needs the scope(s) {}", missing.join(" "));
                (scopes, Some(("insufficient_scope", why)), *on, true)
            }
            Refusal::Unavailable(_) => return None,
        };
        let offered: &[Scheme] = match (guard.dpop(), only_on) {
            (_, true) => &[on],
            (Dpop::Off, false) => &[Scheme::Bearer],
            (Dpop::Accepted, false) => &[Scheme::Bearer, Scheme::Dpop],
            (Dpop::Required, false) => &[Scheme::Dpop],
        };
        // An error of a scheme not offered (a malformed header, a token in the query, where DPoP is required) goes
        // on the challenge that is.
        let on = if offered.contains(&on) { on } else { offered[0] };
        let one = |scheme: Scheme| {
            let mut parts = vec![format!("resource_metadata=\"{}\"", guard.metadata_url)];
            if !scopes.is_empty() {
                parts.push(format!("scope=\"{}\"", scopes.join(" ")));
            }
            if let Some((code, description)) = error.as_ref().filter(|_| scheme == on) {
                parts.push(format!("error=\"{code}\""));
                parts.push(format!("error_description=\"{}\"", quoted(description)));
            }
            match scheme {
                Scheme::Bearer => format!("Bearer {}", parts.join(", ")),
                Scheme::Dpop => {
                    parts.push(format!("algs=\"{}\"", DPOP_ALGORITHMS.join(" ")));
                    format!("DPoP {}", parts.join(", "))
                }
            }
        };
        Some(offered.iter().map(|s| one(*s)).collect::<Vec<_>>().join(", "))
    }

    /// A sentence for the body and the log.
    pub(crate) fn message(&self) -> String {
        match self {
            Refusal::Unauthorized { error: None, .. } => {
                "unauthorized: this server needs an OAuth access token (Authorization: Bearer ..., or DPoP ... with a \
                 DPoP proof where the server takes DPoP); the WWW-Authenticate header names its metadata"
                    .into()
            }
            Refusal::Unauthorized { error: Some((_, why)), .. } => format!("unauthorized: {why}"),
            Refusal::InsufficientScope { missing, .. } => {
                format!("forbidden: the access token lacks the scope(s) {} that this request needs", missing.join(" "))
            }
            Refusal::Unavailable(why) => format!("the access token could not be verified now: {why}"),
        }
    }
}

/// A challenge's quoted-string: `"` and `\` escaped, control characters dropped.
fn quoted(text: &str) -> String {
    text.chars()
        .filter(|c| !c.is_control())
        .flat_map(|c| match c {
            '"' | '\\' => vec!['\\', c],
            c => vec![c],
        })
        .collect()
}

impl Guard {
    /// The principal of a request, from its `Authorization` header (and, for the `DPoP` scheme, the proof that
    /// `proof` reads from its `DPoP` header, read only then); `needed` are the scopes of what it asks for (none
    /// known for GET and DELETE).
    pub(crate) async fn admit<'a>(
        &self,
        header: Option<&[u8]>,
        proof: impl FnOnce() -> ProofHeader<'a>,
        request: Request<'_>,
        needed: &[&str],
    ) -> Result<Arc<AuthInfo>, Refusal> {
        let challenge_scopes = || match needed {
            [] => self.config.initial_scopes.clone(),
            needed => needed.iter().map(|s| (*s).to_owned()).collect::<Vec<_>>(),
        };
        let refuse = |on: Scheme, code: &'static str, why: String| Refusal::Unauthorized {
            error: Some((code, why)),
            scopes: challenge_scopes(),
            on,
        };
        if let Some(refusal) = Guard::token_in_query(request.query) {
            return Err(refusal);
        }
        let dpop = self.dpop();
        let (token, on) = match Presented::of(header) {
            Presented::Nothing => {
                let on = if dpop == Dpop::Required { Scheme::Dpop } else { Scheme::Bearer };
                return Err(Refusal::Unauthorized { error: None, scopes: challenge_scopes(), on });
            }
            Presented::Malformed => {
                let why = match dpop {
                    Dpop::Off => "the Authorization header must be `Bearer <access token>`",
                    Dpop::Accepted => {
                        "the Authorization header must be `Bearer <access token>` or `DPoP <access token>`"
                    }
                    Dpop::Required => "the Authorization header must be `DPoP <access token>`, with a DPoP proof",
                };
                return Err(refuse(Scheme::Bearer, "invalid_request", why.into()));
            }
            Presented::Bearer(_) if dpop == Dpop::Required => {
                let why = "this server takes DPoP-bound access tokens only (Authorization: DPoP, with a DPoP proof)";
                return Err(refuse(Scheme::Dpop, "invalid_token", why.into()));
            }
            Presented::Dpop(_) if dpop == Dpop::Off => {
                let why = "this server takes bearer tokens only (Authorization: Bearer); ask for a bearer token";
                return Err(refuse(Scheme::Bearer, "invalid_request", why.into()));
            }
            Presented::Bearer(token) => (token, Scheme::Bearer),
            Presented::Dpop(token) => (token, Scheme::Dpop),
        };
        let auth = match self.verifier.verify_shared(token).await {
            Ok(auth) => auth,
            Err(TokenError::Invalid(why)) => {
                tracing::debug!(reason = %why, "refused an access token");
                return Err(refuse(on, "invalid_token", why));
            }
            Err(TokenError::Unavailable(why)) => {
                tracing::warn!(reason = %why, "could not verify an access token");
                return Err(Refusal::Unavailable(why));
            }
        };
        // A token bound to a key (RFC 9449 §6, RFC 7800 `cnf`) is only good with a proof of that key: taken as a
        // bearer token it would let anyone who copied it use it.
        let jkt = auth.claims.get("cnf").and_then(|cnf| cnf.get("jkt"));
        match (on, jkt) {
            (Scheme::Bearer, None) => {}
            (Scheme::Bearer, Some(_)) => {
                let why = "it is bound to a DPoP key (cnf.jkt): send it as `Authorization: DPoP` with a DPoP proof";
                return Err(refuse(Scheme::Bearer, "invalid_token", why.into()));
            }
            (Scheme::Dpop, None) => {
                let why = "it is not bound to a DPoP key (no cnf.jkt): send it as `Authorization: Bearer`";
                return Err(refuse(Scheme::Dpop, "invalid_token", why.into()));
            }
            (Scheme::Dpop, Some(jkt)) => {
                let Some(jkt) = jkt.as_str() else {
                    return Err(refuse(Scheme::Dpop, "invalid_token", "its cnf.jkt is not a string".into()));
                };
                let Some(proofs) = &self.proofs else {
                    return Err(refuse(Scheme::Dpop, "invalid_token", "this server checks no DPoP proof".into()));
                };
                let proof = match proof() {
                    ProofHeader::One(value) => std::str::from_utf8(value).unwrap_or_default(),
                    ProofHeader::Missing => {
                        let why = "a DPoP-bound token needs a DPoP proof in the `DPoP` header";
                        return Err(refuse(Scheme::Dpop, "invalid_dpop_proof", why.into()));
                    }
                    ProofHeader::Many => {
                        let why = "the request has more than one `DPoP` header";
                        return Err(refuse(Scheme::Dpop, "invalid_dpop_proof", why.into()));
                    }
                };
                match proofs.check(proof, request.method, request.path, token, jkt) {
                    Ok(()) => {}
                    Err(ProofError::Invalid(why)) => {
                        tracing::debug!(reason = %why, "refused a DPoP proof");
                        return Err(refuse(Scheme::Dpop, "invalid_dpop_proof", why));
                    }
                    Err(ProofError::Binding) => {
                        tracing::debug!("refused a DPoP proof of another key than the token's");
                        let why = "Invalid DPoP key binding: the proof's key is not the one the token is bound to";
                        return Err(refuse(Scheme::Dpop, "invalid_token", why.into()));
                    }
                    Err(ProofError::Full) => {
                        tracing::warn!("too many DPoP proofs within one window to remember their jti");
                        return Err(Refusal::Unavailable("too many DPoP proofs at once; try again".into()));
                    }
                }
            }
        }
        self.check_scopes(&auth, needed, on)?;
        Ok(auth)
    }

    /// Whether DPoP is off, accepted or required (off without the checker).
    pub(crate) fn dpop(&self) -> Dpop {
        if self.proofs.is_some() {
            self.config.dpop
        } else {
            Dpop::Off
        }
    }

    /// The refusal of a request that carries an access token in its query string (RFC 6750 §2.3, which OAuth 2.1
    /// drops): checked before anything else.
    pub(crate) fn token_in_query(query: Option<&str>) -> Option<Refusal> {
        let in_query = query.is_some_and(|q| q.split('&').any(|pair| pair.split('=').next() == Some("access_token")));
        in_query.then(|| Refusal::Unauthorized {
            error: Some((
                "invalid_request",
                "an access token in the query string is refused; send it in the Authorization header".into(),
            )),
            scopes: Vec::new(),
            on: Scheme::Bearer,
        })
    }

    /// `403` unless `auth` grants every scope in `needed`.
    pub(crate) fn check_scopes(&self, auth: &AuthInfo, needed: &[&str], on: Scheme) -> Result<(), Refusal> {
        let missing: Vec<String> = needed.iter().filter(|s| !auth.has_scope(s)).map(|s| (*s).to_owned()).collect();
        if missing.is_empty() {
            return Ok(());
        }
        Err(Refusal::InsufficientScope { scopes: needed.iter().map(|s| (*s).to_owned()).collect(), missing, on })
    }

    /// The Protected Resource Metadata (RFC 9728), with every scope in `required` (what the handlers need).
    pub(crate) fn metadata(&self, required: BTreeSet<&str>, server_name: &str) -> Value {
        let mut scopes: BTreeSet<&str> = required;
        scopes.extend(self.config.scopes.iter().map(String::as_str));
        scopes.extend(self.config.initial_scopes.iter().map(String::as_str));
        let mut metadata = json!({
            "resource": self.config.resource,
            "authorization_servers": self.config.authorization_servers,
            "scopes_supported": scopes,
            "bearer_methods_supported": ["header"],
            "resource_name": self.config.resource_name.as_deref().unwrap_or(server_name),
        });
        if self.dpop() != Dpop::Off {
            metadata["dpop_signing_alg_values_supported"] = json!(DPOP_ALGORITHMS);
            metadata["dpop_bound_access_tokens_required"] = json!(self.dpop() == Dpop::Required);
        }
        metadata
    }

    /// Whether lists leave out what the caller cannot use.
    pub(crate) fn hides_unauthorized(&self) -> bool {
        self.config.hide_unauthorized
    }
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
    fn only_a_well_formed_bearer_header_presents_a_token() {
        assert!(matches!(Presented::of(None), Presented::Nothing));
        assert!(matches!(Presented::of(Some(b"Bearer abc.def-ghi")), Presented::Bearer("abc.def-ghi")));
        assert!(matches!(Presented::of(Some(b"bearer abc")), Presented::Bearer("abc")));
        assert!(matches!(Presented::of(Some(b"DPoP abc.def")), Presented::Dpop("abc.def")));
        assert!(matches!(Presented::of(Some(b"dpop abc")), Presented::Dpop("abc")));
        assert!(matches!(Presented::of(Some(b"Basic dXNlcjpwYXNz")), Presented::Malformed));
        assert!(matches!(Presented::of(Some(b"Bearer ")), Presented::Malformed));
        assert!(matches!(Presented::of(Some(b"Bearer a\"b")), Presented::Malformed));
    }

    #[test]
    fn a_principal_is_issuer_and_subject() {
        assert_eq!(AuthInfo::new("ada", vec![]).issued_by("https://as").principal(), "https://as ada");
        assert_eq!(AuthInfo::new("ada", vec![]).principal(), "ada");
    }

    #[test]
    fn challenges_offer_the_schemes_taken_and_put_the_error_on_one_offered() {
        struct Nobody;
        impl TokenVerifier for Nobody {
            fn verify<'a>(&'a self, _: &'a str) -> BoxFuture<'a, Result<AuthInfo, TokenError>> {
                Box::pin(async { Err(TokenError::Invalid("no".into())) })
            }
        }
        let guard = |dpop| {
            let auth = Authorization::new("https://books.example.com/mcp").authorization_server("https://as");
            auth.verifier(Nobody).dpop(dpop).build().unwrap()
        };
        let malformed = Refusal::Unauthorized {
            error: Some(("invalid_request", "bad".into())),
            scopes: vec!["a".into()],
            on: Scheme::Bearer,
        };
        let metadata = "resource_metadata=\"https://books.example.com/.well-known/oauth-protected-resource/mcp\"";
        assert_eq!(
            malformed.challenge(&guard(Dpop::Off)).unwrap(),
            format!("Bearer {metadata}, scope=\"a\", error=\"invalid_request\", error_description=\"bad\"")
        );
        #[cfg(feature = "auth")]
        {
            let required = malformed.challenge(&guard(Dpop::Required)).unwrap();
            assert!(required.starts_with("DPoP ") && required.contains("error=\"invalid_request\""), "{required}");
            assert!(!required.contains("Bearer"), "{required}");
            let accepted = malformed.challenge(&guard(Dpop::Accepted)).unwrap();
            let (bearer, dpop) = accepted.split_once(", DPoP ").unwrap();
            assert!(
                bearer.contains("error=") && !dpop.contains("error=") && dpop.contains("algs=\"ES256"),
                "{accepted}"
            );
        }
    }

    #[test]
    fn challenges_quote_their_descriptions() {
        assert_eq!(quoted("a \"b\" \\ c\n"), "a \\\"b\\\" \\\\ c");
    }
}
