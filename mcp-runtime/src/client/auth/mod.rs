//! OAuth 2.1 authorization of the client over Streamable HTTP ([`OAuth`], set with
//! [`ClientBuilder::auth`](super::ClientBuilder::auth)): when the server answers a request with 401 (or 403
//! `insufficient_scope`), the client finds the authorization server, registers, has the user authorize, gets a
//! token and sends the request again, unseen by the caller of `call_tool` and the rest.
//!
//! ```no_run
//! # async fn run() -> Result<(), mcp::client::Error> {
//! use mcp::client::{auth::OAuth, Client};
//!
//! // A desktop program: the browser comes back to http://127.0.0.1:8976/callback, where the client listens.
//! let oauth = OAuth::loopback(8976, |url| println!("Open this to sign in: {url}")).client_name("shopkeeper");
//! let client = Client::builder().auth(oauth).http("https://books.example.com/mcp").await?;
//! println!("{} tools", client.list_tools().await?.len());
//! # Ok(()) }
//! # fn main() { let _ = run(); }
//! ```
//!
//! What it does, in the order of the specification (2025-11-25 and 2026-07-28):
//! - **Discovery**: the protected resource metadata (RFC 9728) from the challenge's `resource_metadata`, else the
//!   path-suffixed well-known URI, else the root one; its `resource` must be this server (else the client stops).
//!   Then the authorization server's metadata (RFC 8414, then OpenID Connect discovery, path and root forms), whose
//!   `issuer` must be exactly the one asked for. A server without any metadata (2025-03-26) gets the default
//!   `/authorize`, `/token` and `/register` of its origin. Only `http` and `https` URLs are followed.
//! - **Registration**: credentials already stored for that issuer; then pre-registered ones
//!   ([`OAuth::client_id`]); then a Client ID Metadata Document ([`OAuth::client_metadata_url`]) where the server
//!   supports them; then dynamic registration (RFC 7591, with `application_type`). Credentials are kept per issuer
//!   and never shown to another.
//! - **Authorization code with PKCE** (S256; a server whose metadata lacks `code_challenge_methods_supported` is
//!   refused), `resource` (RFC 8707) on both requests, `state` checked, and the RFC 9207 `iss` compared exactly
//!   (required when the server advertises it). Scopes come from the challenge, else the resource's
//!   `scopes_supported`, else none; `offline_access` is added where the authorization server supports it.
//! - **Step-up**: a 403 `insufficient_scope` asks again for the union of the scopes held and those challenged, at
//!   most [`OAuth::max_step_up`] times per request. A 401 with a refresh token from the same issuer refreshes first.
//! - **Refresh ahead**: before a request, an access token that has expired or expires within 30 s (halfway through
//!   the life of one that lives under a minute) is refreshed with its refresh token, once for the requests that
//!   find it so together; without a refresh token, or when the refresh fails, the request goes as it is and a 401
//!   refreshes or authorizes anew.
//! - **Client authentication at the token endpoint**: `client_secret_basic`, `client_secret_post`, `none` and
//!   `private_key_jwt` ([`OAuth::private_key_jwt`]), as registered or as the server supports.
//! - **DPoP** (RFC 9449) where the authorization server supports ES256 proofs: a key per connection, a proof on
//!   token requests and on each request with the bound token (`Authorization: DPoP`), and the nonces servers ask for.
//! - **Machine clients** (the ext-auth extensions): [`OAuth::client_credentials`], [`OAuth::jwt_bearer`] (workload
//!   identity federation) and [`OAuth::enterprise`] (Enterprise-Managed Authorization).
//!
//! Tokens live in a [`TokenStore`] ([`MemoryTokenStore`] unless [`OAuth::token_store`] says otherwise); they never
//! reach a log.

mod code;
mod discovery;
mod dpop;
mod flow;
mod jwt;
mod loopback;
mod machine;
mod register;
mod store;
mod token;

use std::fmt;
use std::future::Future;
use std::sync::Arc;

pub(crate) use flow::Authorizer;
pub use store::{MemoryTokenStore, Registration, TokenStore, Tokens};

use crate::base::future::BoxFuture;

/// What an [`OAuth::new`] callback returns: the URL the authorization server sent the browser back to (the redirect
/// URI with `code`, `state` and maybe `iss`), or why the user's part failed.
pub type AuthorizeResult = Result<String, Box<dyn std::error::Error + Send + Sync>>;

type AuthorizeFn = Arc<dyn Fn(reqwest::Url) -> BoxFuture<'static, AuthorizeResult> + Send + Sync>;

/// How the client describes itself when it registers: a program on the user's machine (`native`, the default) or a
/// web application (`web`). Sent as `application_type` in dynamic registration.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub enum ApplicationType {
    /// A desktop or command-line program (redirects to loopback or a custom scheme).
    #[default]
    Native,
    /// A web application (redirects to an `https` site).
    Web,
}

impl ApplicationType {
    fn as_str(self) -> &'static str {
        match self {
            ApplicationType::Native => "native",
            ApplicationType::Web => "web",
        }
    }
}

/// A pre-registered client: its id, its secret (confidential clients) and, when known, the issuer it belongs to.
#[derive(Clone)]
pub(crate) struct Preregistered {
    pub(crate) client_id: String,
    pub(crate) client_secret: Option<String>,
    pub(crate) issuer: Option<String>,
}

/// A key for `private_key_jwt` client authentication (RFC 7523): a PEM private key and its JWS algorithm.
#[derive(Clone)]
pub(crate) struct SigningKey {
    pub(crate) pem: Vec<u8>,
    pub(crate) algorithm: jsonwebtoken::Algorithm,
    pub(crate) key_id: Option<String>,
}

/// The OAuth 2.1 configuration of a client ([`ClientBuilder::auth`](super::ClientBuilder::auth)): where the user's
/// browser comes back to, how the client registers, where tokens are kept.
///
/// ```no_run
/// # async fn run() -> Result<(), mcp::client::Error> {
/// use mcp::client::auth::OAuth;
///
/// // A program that handles the browser itself: it opens the URL and hands back where the browser landed.
/// let oauth = OAuth::new("http://127.0.0.1:8976/callback", |url| async move {
///     println!("open {url}");
///     let mut landed = String::new();
///     std::io::stdin().read_line(&mut landed)?;
///     Ok(landed.trim().to_owned())
/// })
/// .client_name("shopkeeper")
/// .client_metadata_url("https://shopkeeper.example.com/oauth/client.json");
/// let client = mcp::client::Client::builder().auth(oauth).http("https://books.example.com/mcp").await?;
/// # drop(client); Ok(()) }
/// # fn main() { let _ = run(); }
/// ```
#[derive(Clone)]
#[must_use]
pub struct OAuth {
    pub(crate) redirect_uri: String,
    pub(crate) authorize: AuthorizeFn,
    pub(crate) client_name: Option<String>,
    pub(crate) preregistered: Option<Preregistered>,
    pub(crate) client_metadata_url: Option<String>,
    pub(crate) application_type: ApplicationType,
    pub(crate) store: Arc<dyn TokenStore>,
    pub(crate) max_step_up: usize,
    pub(crate) signing_key: Option<SigningKey>,
    pub(crate) refresh_tokens: bool,
    pub(crate) grant: Grant,
}

/// How the client gets its token.
#[derive(Clone)]
pub(crate) enum Grant {
    /// Authorization code with PKCE: a user signs in.
    AuthorizationCode,
    /// OAuth client credentials (the `oauth-client-credentials` extension): the client acts for itself.
    ClientCredentials,
    /// RFC 7523 JWT bearer grant with a workload's identity token (workload identity federation).
    JwtBearer { assertion: String },
    /// Enterprise-Managed Authorization: the user's identity token from the enterprise identity provider is
    /// exchanged there (RFC 8693) for an identity assertion grant (ID-JAG), which the authorization server takes in
    /// a JWT bearer grant.
    Enterprise { token_endpoint: String, client_id: String, id_token: String },
}

impl fmt::Debug for OAuth {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("OAuth")
            .field("redirect_uri", &self.redirect_uri)
            .field("client_name", &self.client_name)
            .field("client_id", &self.preregistered.as_ref().map(|p| &p.client_id))
            .field("client_metadata_url", &self.client_metadata_url)
            .finish_non_exhaustive()
    }
}

/// How many times one request asks for more scopes after 403 `insufficient_scope` by default: 2 (so at most three
/// authorizations for one request, counting the first).
pub const DEFAULT_MAX_STEP_UP: usize = 2;

impl OAuth {
    /// Authorization with a callback for the user's part: it gets the authorization URL (open it in a browser) and
    /// returns the URL the browser was sent back to, `redirect_uri` with the `code` and `state` the client checks.
    pub fn new<F, Fut>(redirect_uri: impl Into<String>, authorize: F) -> OAuth
    where
        F: Fn(reqwest::Url) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = AuthorizeResult> + Send + 'static,
    {
        OAuth {
            redirect_uri: redirect_uri.into(),
            authorize: Arc::new(move |url| Box::pin(authorize(url))),
            client_name: None,
            preregistered: None,
            client_metadata_url: None,
            application_type: ApplicationType::Native,
            store: Arc::new(MemoryTokenStore::default()),
            max_step_up: DEFAULT_MAX_STEP_UP,
            signing_key: None,
            refresh_tokens: true,
            grant: Grant::AuthorizationCode,
        }
    }

    /// A client that acts for itself (the `io.modelcontextprotocol/oauth-client-credentials` extension): the
    /// `client_credentials` grant with this pre-registered client id, authenticated with [`OAuth::client_secret`]
    /// or [`OAuth::private_key_jwt`]. No user takes part.
    ///
    /// ```no_run
    /// # async fn run() -> Result<(), mcp::client::Error> {
    /// let oauth = mcp::client::auth::OAuth::client_credentials("inventory-bot").client_secret("s3cret");
    /// let client = mcp::client::Client::builder().auth(oauth).http("https://books.example.com/mcp").await?;
    /// # drop(client); Ok(()) }
    /// # fn main() { let _ = run(); }
    /// ```
    pub fn client_credentials(client_id: impl Into<String>) -> OAuth {
        let mut oauth =
            OAuth::new(String::new(), |_| async { Err("the client_credentials grant has no user part".into()) })
                .client_id(client_id);
        oauth.grant = Grant::ClientCredentials;
        oauth.refresh_tokens = false;
        oauth
    }

    /// A workload that proves who it is with a JWT its platform issued (workload identity federation, RFC 7523 JWT
    /// bearer grant, the `io.modelcontextprotocol/auth/wif` extension), as this pre-registered client id.
    pub fn jwt_bearer(client_id: impl Into<String>, assertion: impl Into<String>) -> OAuth {
        let mut oauth = OAuth::client_credentials(client_id);
        oauth.grant = Grant::JwtBearer { assertion: assertion.into() };
        oauth
    }

    /// Enterprise-Managed Authorization (the `io.modelcontextprotocol/enterprise-managed-authorization`
    /// extension): the user's ID token from the enterprise identity provider is exchanged at its token endpoint
    /// (RFC 8693, as `idp_client_id`) for an identity assertion grant, which the MCP server's authorization server
    /// takes in a JWT bearer grant from this pre-registered client ([`OAuth::client_secret`] for its secret).
    pub fn enterprise(
        client_id: impl Into<String>,
        idp_token_endpoint: impl Into<String>,
        idp_client_id: impl Into<String>,
        id_token: impl Into<String>,
    ) -> OAuth {
        let mut oauth = OAuth::client_credentials(client_id);
        oauth.grant = Grant::Enterprise {
            token_endpoint: idp_token_endpoint.into(),
            client_id: idp_client_id.into(),
            id_token: id_token.into(),
        };
        oauth
    }

    /// Authorization for a desktop program: the redirect URI is `http://127.0.0.1:{port}/callback`, and for each
    /// authorization the client listens there for the one request the browser makes, after `open` was handed the
    /// URL to show (open a browser on it, or print it). The listener lives only while it waits, at most 5 minutes.
    pub fn loopback(port: u16, open: impl Fn(&reqwest::Url) + Send + Sync + 'static) -> OAuth {
        let open = Arc::new(open);
        OAuth::new(loopback::redirect_uri(port), move |url| {
            let open = open.clone();
            async move { loopback::receive(port, &url, &*open).await }
        })
    }

    /// The client's name (`client_name` in dynamic registration).
    pub fn client_name(mut self, name: impl Into<String>) -> Self {
        self.client_name = Some(name.into());
        self
    }

    /// A pre-registered client id, used before any other way of registering. Unless [`OAuth::issuer`] says which
    /// authorization server it belongs to, it is bound to the first one it is used with and never shown to another.
    pub fn client_id(mut self, client_id: impl Into<String>) -> Self {
        self.preregistered().client_id = client_id.into();
        self
    }

    fn preregistered(&mut self) -> &mut Preregistered {
        self.preregistered.get_or_insert(Preregistered { client_id: String::new(), client_secret: None, issuer: None })
    }

    /// The secret of the pre-registered client ([`OAuth::client_id`]): a confidential client.
    pub fn client_secret(mut self, secret: impl Into<String>) -> Self {
        self.preregistered().client_secret = Some(secret.into());
        self
    }

    /// The issuer the pre-registered client belongs to: its credentials are used with that authorization server
    /// only.
    pub fn issuer(mut self, issuer: impl Into<String>) -> Self {
        self.preregistered().issuer = Some(issuer.into());
        self
    }

    /// The `https` URL of this client's Client ID Metadata Document: used as the client id with authorization servers
    /// that advertise `client_id_metadata_document_supported`, instead of registering.
    pub fn client_metadata_url(mut self, url: impl Into<String>) -> Self {
        self.client_metadata_url = Some(url.into());
        self
    }

    /// The `application_type` sent in dynamic registration ([`ApplicationType::Native`] unless set).
    pub fn application_type(mut self, kind: ApplicationType) -> Self {
        self.application_type = kind;
        self
    }

    /// Where tokens and registrations are kept (a [`MemoryTokenStore`] unless set; a program that wants its user to
    /// stay signed in between runs passes one that saves them).
    pub fn token_store(mut self, store: impl TokenStore + 'static) -> Self {
        self.store = Arc::new(store);
        self
    }

    /// How many times one request may ask for more scopes after 403 `insufficient_scope`
    /// ([`DEFAULT_MAX_STEP_UP`]); past that the request fails with [`Error::Auth`](super::Error::Auth).
    pub fn max_step_up(mut self, times: usize) -> Self {
        self.max_step_up = times;
        self
    }

    /// Client authentication with `private_key_jwt` (RFC 7523): a signed assertion instead of a secret at the token
    /// endpoint. `pem` is a PKCS#8 private key (EC or RSA), `algorithm` its JWS algorithm (`ES256`, `RS256`, ...).
    pub fn private_key_jwt(mut self, pem: impl Into<Vec<u8>>, algorithm: &str) -> Result<Self, super::Error> {
        let algorithm: jsonwebtoken::Algorithm = algorithm.parse().map_err(|_| {
            super::Error::Auth(super::AuthError::config(format!(
                "{algorithm:?} is not a JWS algorithm (ES256, ES384, RS256, PS256, EdDSA, ...)"
            )))
        })?;
        let key = SigningKey { pem: pem.into(), algorithm, key_id: None };
        jwt::encoding_key(&key)?;
        self.signing_key = Some(key);
        Ok(self)
    }

    /// Whether to ask for refresh tokens (`offline_access` where the authorization server lists it, and the
    /// `refresh_token` grant in registration); on by default.
    pub fn refresh_tokens(mut self, on: bool) -> Self {
        self.refresh_tokens = on;
        self
    }
}

/// Whether a 403's challenge is `insufficient_scope` (a step-up), as opposed to a refusal no token changes.
pub(crate) fn insufficient_scope(headers: &reqwest::header::HeaderMap) -> bool {
    discovery::Challenge::from_headers(headers).error.as_deref() == Some("insufficient_scope")
}
