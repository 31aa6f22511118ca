//! Where the client keeps what authorization gave it: [`Tokens`] per MCP server, [`Registration`]s per
//! authorization server ([`TokenStore`], in memory by default).

use std::collections::HashMap;
use std::fmt;
use std::sync::Mutex;

use serde::{Deserialize, Serialize};

use crate::base::sync::Unpoisoned;

/// The tokens the client holds for one MCP server. `Debug` shows no token.
#[derive(Clone, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct Tokens {
    /// The access token, sent as `Authorization: Bearer`.
    pub access_token: String,
    /// The refresh token, if the authorization server gave one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub refresh_token: Option<String>,
    /// When the access token expires, in seconds since the Unix epoch, if the server said.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub expires_at: Option<u64>,
    /// When the client got the access token, in seconds since the Unix epoch: with `expires_at`, how long it lives
    /// (a short-lived token is refreshed ahead of time later in its life than the usual 30 s before it expires).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub issued_at: Option<u64>,
    /// The scopes asked for (what a step-up adds to).
    #[serde(default)]
    pub scopes: Vec<String>,
    /// The issuer of the authorization server that gave them.
    pub issuer: String,
    /// `DPoP` for a DPoP-bound token (RFC 9449), sent with a proof of the connection's key; `Bearer` otherwise.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub token_type: Option<String>,
}

impl fmt::Debug for Tokens {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Tokens")
            .field("access_token", &"<redacted>")
            .field("refresh_token", &self.refresh_token.as_ref().map(|_| "<redacted>"))
            .field("expires_at", &self.expires_at)
            .field("issued_at", &self.issued_at)
            .field("scopes", &self.scopes)
            .field("issuer", &self.issuer)
            .field("token_type", &self.token_type)
            .finish()
    }
}

/// How the client is known to one authorization server: its client id and, for a confidential client, its secret
/// and the way it authenticates at the token endpoint. `Debug` shows no secret.
#[derive(Clone, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct Registration {
    /// The client id (a URL for a Client ID Metadata Document).
    pub client_id: String,
    /// The client secret, for a confidential client.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub client_secret: Option<String>,
    /// `token_endpoint_auth_method` as registered (`client_secret_basic`, `client_secret_post`, `none`,
    /// `private_key_jwt`), if known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub token_endpoint_auth_method: Option<String>,
}

impl Registration {
    /// A registration with this client id and nothing else.
    pub fn new(client_id: impl Into<String>) -> Registration {
        Registration { client_id: client_id.into(), client_secret: None, token_endpoint_auth_method: None }
    }
}

impl fmt::Debug for Registration {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Registration")
            .field("client_id", &self.client_id)
            .field("client_secret", &self.client_secret.as_ref().map(|_| "<redacted>"))
            .field("token_endpoint_auth_method", &self.token_endpoint_auth_method)
            .finish()
    }
}

/// Where the client keeps tokens (per MCP server URL) and registrations (per authorization server issuer).
/// Methods are synchronous and quick: a store that writes to disk does so in the call.
///
/// ```
/// use mcp::client::auth::{MemoryTokenStore, TokenStore};
///
/// let store = MemoryTokenStore::default();
/// assert!(store.tokens("https://books.example.com/mcp").is_none());
/// ```
pub trait TokenStore: Send + Sync {
    /// The tokens held for this MCP server, if any.
    fn tokens(&self, resource: &str) -> Option<Tokens>;
    /// Keeps tokens for this MCP server, in place of any before.
    fn save_tokens(&self, resource: &str, tokens: Tokens);
    /// Forgets the tokens of this MCP server.
    fn clear_tokens(&self, resource: &str);
    /// How the client is registered with the authorization server of this issuer, if it is.
    fn registration(&self, issuer: &str) -> Option<Registration>;
    /// Keeps a registration with the authorization server of this issuer.
    fn save_registration(&self, issuer: &str, registration: Registration);
}

/// A [`TokenStore`] in memory: what it holds ends with the process.
#[derive(Debug, Default)]
pub struct MemoryTokenStore {
    tokens: Mutex<HashMap<String, Tokens>>,
    registrations: Mutex<HashMap<String, Registration>>,
}

impl TokenStore for MemoryTokenStore {
    fn tokens(&self, resource: &str) -> Option<Tokens> {
        self.tokens.locked().get(resource).cloned()
    }

    fn save_tokens(&self, resource: &str, tokens: Tokens) {
        self.tokens.locked().insert(resource.to_owned(), tokens);
    }

    fn clear_tokens(&self, resource: &str) {
        self.tokens.locked().remove(resource);
    }

    fn registration(&self, issuer: &str) -> Option<Registration> {
        self.registrations.locked().get(issuer).cloned()
    }

    fn save_registration(&self, issuer: &str, registration: Registration) {
        self.registrations.locked().insert(issuer.to_owned(), registration);
    }
}

impl<T: TokenStore + ?Sized> TokenStore for std::sync::Arc<T> {
    fn tokens(&self, resource: &str) -> Option<Tokens> {
        (**self).tokens(resource)
    }
    fn save_tokens(&self, resource: &str, tokens: Tokens) {
        (**self).save_tokens(resource, tokens)
    }
    fn clear_tokens(&self, resource: &str) {
        (**self).clear_tokens(resource)
    }
    fn registration(&self, issuer: &str) -> Option<Registration> {
        (**self).registration(issuer)
    }
    fn save_registration(&self, issuer: &str, registration: Registration) {
        (**self).save_registration(issuer, registration)
    }
}
