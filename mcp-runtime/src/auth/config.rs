//! The configuration of a server's authorization ([`Authorization`], [`Dpop`]) and what it builds: the
//! [`Guard`] that checks requests, with the built-in verifiers behind it.

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use super::guard::Guard;
#[cfg(feature = "auth")]
use super::{dpop, AuthInfo, Introspection, JwtVerifier, TokenError};
use super::{parse_url, TokenVerifier, MAX_JWKS_COOLDOWN, MAX_LEEWAY};
#[cfg(feature = "auth")]
use crate::base::future::BoxFuture;

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
    /// what a client signs in with first. Without them the challenge names every scope the handlers need (the
    /// powerful ones included), which a client that follows the specification asks for; with them it asks for
    /// these, and steps up (on a `403`) when it calls what needs more.
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
