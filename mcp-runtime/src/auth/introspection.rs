//! Opaque access tokens, checked at the issuer's introspection endpoint (RFC 7662). An answer is cached for a short
//! while (at most [`CACHE_TTL`], never past the token's `exp`), so a busy client does not cost one round trip per
//! call; the cache is bounded.

use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use serde_json::Value;

use super::cache::TokenCache;
use super::metadata::{self, Fetcher};
use super::{AuthInfo, TokenError, TokenVerifier};
use crate::base::future::BoxFuture;

/// The longest an introspection answer is reused.
pub const CACHE_TTL: Duration = Duration::from_secs(30);

/// Introspection answers by token.
type Answers = TokenCache<Result<Arc<AuthInfo>, TokenError>>;

/// Checks opaque tokens at an introspection endpoint (RFC 7662), authenticating as a client of the issuer
/// (`client_secret_basic`). A token is accepted when the answer is `active`, and its `aud`, when there is one,
/// names this resource.
///
/// ```
/// # #[cfg(feature = "auth")] {
/// use mcp::auth::{Authorization, Introspection};
///
/// let auth = Authorization::new("https://books.example.com/mcp")
///     .authorization_server("https://login.example.com")
///     .introspection(Introspection::new("https://login.example.com/introspect", "books-api", "secret"));
/// # let _ = auth; }
/// ```
#[derive(Clone)]
pub struct Introspection {
    endpoint: String,
    client_id: String,
    client_secret: String,
    resource: Option<String>,
    cache: Arc<Answers>,
    fetcher: Option<Fetcher>,
}

impl Introspection {
    /// Introspects at `endpoint` as the client `client_id` with `client_secret`.
    pub fn new(
        endpoint: impl Into<String>,
        client_id: impl Into<String>,
        client_secret: impl Into<String>,
    ) -> Introspection {
        Introspection {
            endpoint: endpoint.into(),
            client_id: client_id.into(),
            client_secret: client_secret.into(),
            resource: None,
            cache: Arc::new(TokenCache::new()),
            fetcher: Fetcher::new().ok(),
        }
    }

    /// The same, accepting only tokens whose audience (when they have one) names `resource`.
    pub(crate) fn for_resource(mut self, resource: &str) -> Introspection {
        self.resource = Some(resource.to_owned());
        self
    }

    async fn check(&self, token: &str) -> Result<Arc<AuthInfo>, TokenError> {
        if let Some(answer) = self.cache.get(token) {
            return answer;
        }
        let answer = self.introspect(token).await.map(Arc::new);
        if matches!(answer, Err(TokenError::Unavailable(_))) {
            return answer;
        }
        let ttl = match &answer {
            Ok(auth) => {
                auth.expires_at.map_or(CACHE_TTL, |exp| Duration::from_secs(exp.saturating_sub(now())).min(CACHE_TTL))
            }
            Err(_) => CACHE_TTL,
        };
        self.cache.put(token, ttl, answer.clone());
        answer
    }

    async fn introspect(&self, token: &str) -> Result<AuthInfo, TokenError> {
        let Some(fetcher) = &self.fetcher else {
            return Err(TokenError::Unavailable("the HTTP client for introspection could not be made".into()));
        };
        let response = fetcher
            .client()
            .post(&self.endpoint)
            .basic_auth(&self.client_id, Some(&self.client_secret))
            .header(reqwest::header::ACCEPT, "application/json")
            .form(&[("token", token), ("token_type_hint", "access_token")])
            .send()
            .await
            .map_err(|e| TokenError::Unavailable(format!("introspection at {} failed: {e}", self.endpoint)))?;
        let answer = metadata::read_json(&self.endpoint, response).await.map_err(TokenError::Unavailable)?;
        if answer.get("active") != Some(&Value::Bool(true)) {
            return Err(TokenError::Invalid("the issuer says it is not active".into()));
        }
        if let (Some(resource), Some(aud)) = (&self.resource, answer.get("aud")) {
            let names = match aud {
                Value::String(a) => a == resource,
                Value::Array(list) => list.iter().any(|a| a.as_str() == Some(resource)),
                _ => false,
            };
            if !names {
                return Err(TokenError::Invalid(format!(
                    "it is for another resource: its audience does not name {resource}"
                )));
            }
        }
        if answer.get("exp").and_then(Value::as_u64).is_some_and(|exp| exp < now()) {
            return Err(TokenError::Invalid("it has expired".into()));
        }
        let text = |name: &str| answer.get(name).and_then(Value::as_str).map(str::to_owned);
        let client_id = text("client_id");
        let Some(subject) = text("sub").or_else(|| client_id.clone()) else {
            return Err(TokenError::Invalid("the introspection answer names neither `sub` nor `client_id`".into()));
        };
        let scopes = text("scope").map(|s| s.split(' ').filter(|s| !s.is_empty()).map(str::to_owned).collect());
        Ok(AuthInfo {
            subject,
            scopes: scopes.unwrap_or_default(),
            issuer: text("iss"),
            client_id,
            expires_at: answer.get("exp").and_then(Value::as_u64),
            claims: answer,
        })
    }
}

fn now() -> u64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| d.as_secs())
}

impl TokenVerifier for Introspection {
    fn verify<'a>(&'a self, token: &'a str) -> BoxFuture<'a, Result<AuthInfo, TokenError>> {
        Box::pin(async move { self.check(token).await.map(Arc::unwrap_or_clone) })
    }

    fn verify_shared<'a>(&'a self, token: &'a str) -> BoxFuture<'a, Result<Arc<AuthInfo>, TokenError>> {
        Box::pin(self.check(token))
    }
}
