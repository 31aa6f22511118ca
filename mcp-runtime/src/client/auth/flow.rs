//! The authorizer the HTTP transport consults: the bearer token of each request, a refresh ahead of one whose
//! token is about to expire, and what to do when the server challenges one (discover, register, authorize, refresh,
//! step up).

use std::sync::{Arc, Mutex};
use std::time::Duration;

use reqwest::header::HeaderMap;
use reqwest::{StatusCode, Url};

use super::discovery::{self, Challenge, Found};
use super::dpop::{self, Dpop};
use super::token::now;
use super::{Grant, OAuth, Tokens};
use crate::base::sync::Unpoisoned;
use crate::client::{AuthError, Error};

/// How long before it expires an access token is refreshed ahead of a request: 30 s, time for the request to reach
/// the server and for clocks to disagree a little, and little beside the minutes access tokens usually live. A token
/// that lives less than twice that is refreshed halfway through its life instead, else each request would refresh.
const REFRESH_AHEAD: Duration = Duration::from_secs(30);

/// The authorization state of one HTTP connection: the configuration, the server, and a gate so that one
/// authorization runs at a time (requests challenged meanwhile wait for it and use its token).
pub(crate) struct Authorizer {
    pub(super) config: OAuth,
    pub(super) server: Url,
    pub(super) key: String,
    gate: tokio::sync::Mutex<()>,
    /// The issuer a pre-registered client without one was first used with.
    pub(super) bound: Mutex<Option<String>>,
    /// The DPoP key, made when an authorization server first supports DPoP.
    dpop: Mutex<Option<Arc<Dpop>>>,
    /// What the last challenge led to: where a refresh ahead of a request goes.
    found: Mutex<Option<Arc<Found>>>,
    /// The access token whose refresh ahead of a request failed: not tried ahead again (the 401 has its turn).
    refresh_failed: Mutex<Option<String>>,
}

impl Authorizer {
    pub(crate) fn new(config: OAuth, server: &str) -> Result<Authorizer, Error> {
        let url = discovery::web_url(server, "the MCP server")?;
        Ok(Authorizer {
            config,
            server: url,
            key: server.to_owned(),
            gate: tokio::sync::Mutex::new(()),
            bound: Mutex::new(None),
            dpop: Mutex::new(None),
            found: Mutex::new(None),
            refresh_failed: Mutex::new(None),
        })
    }

    /// The access token to send, if the client holds one.
    pub(crate) fn bearer(&self) -> Option<String> {
        self.config.store.tokens(&self.key).map(|t| t.access_token)
    }

    /// The `Authorization` header for a request with the token held (and, for a DPoP-bound token, the `DPoP`
    /// proof for this method and URL); `None` without a token.
    pub(crate) fn authorization(&self, method: &str, url: &Url) -> Result<Option<(String, Option<String>)>, Error> {
        let Some(tokens) = self.config.store.tokens(&self.key) else { return Ok(None) };
        let dpop = self.dpop.locked().clone();
        match (tokens.token_type.as_deref(), dpop) {
            (Some(kind), Some(dpop)) if kind.eq_ignore_ascii_case("dpop") => {
                let proof = dpop.proof(method, url, Some(&tokens.access_token))?;
                Ok(Some((format!("DPoP {}", tokens.access_token), Some(proof))))
            }
            _ => Ok(Some((format!("Bearer {}", tokens.access_token), None))),
        }
    }

    /// Whether a 401 only asks for a DPoP nonce (RFC 9449 §9): then it is kept, and the request sent again.
    pub(crate) fn nonce_challenge(&self, url: &Url, headers: &HeaderMap) -> bool {
        let Some(dpop) = self.dpop.locked().clone() else { return false };
        Challenge::from_headers(headers).error.as_deref() == Some("use_dpop_nonce") && dpop.remember_nonce(url, headers)
    }

    /// The DPoP key, if this authorization server supports DPoP with the algorithm the client signs with.
    pub(super) fn dpop_for(&self, found: &Found) -> Result<Option<Arc<Dpop>>, Error> {
        let supported = found.metadata.as_ref().and_then(|m| m.dpop_signing_alg_values_supported.as_ref());
        if !found.resource_takes_dpop || !supported.is_some_and(|algs| algs.iter().any(|a| a == dpop::ALGORITHM)) {
            return Ok(None);
        }
        let mut held = self.dpop.locked();
        if let Some(dpop) = &*held {
            return Ok(Some(dpop.clone()));
        }
        let dpop = Arc::new(Dpop::new()?);
        *held = Some(dpop.clone());
        Ok(Some(dpop))
    }

    /// Before a request: refreshes the access token held if it has expired or is about to ([`REFRESH_AHEAD`]), with
    /// its refresh token, at the authorization server the last challenge led to. Requests that find it so at once
    /// share one refresh (the gate of [`Authorizer::challenged`]). Without a refresh token, before any challenge
    /// (tokens from a store of an earlier run), or when the refresh fails, the request goes with the token held and
    /// a 401 takes the usual way.
    pub(crate) async fn refresh_ahead(&self, http: &reqwest::Client) {
        let due = |held: &Tokens| {
            held.refresh_token.is_some()
                && expiring(held, now())
                && self.refresh_failed.locked().as_deref() != Some(held.access_token.as_str())
        };
        if !self.config.store.tokens(&self.key).is_some_and(|held| due(&held)) {
            return;
        }
        let Some(found) = self.found.locked().clone() else { return };
        let _one_at_a_time = self.gate.lock().await;
        // Another request may have refreshed it (or failed to) meanwhile.
        let Some(held) = self.config.store.tokens(&self.key).filter(|held| due(held)) else { return };
        if !self.refreshed(http, &found, &held).await {
            *self.refresh_failed.locked() = Some(held.access_token);
        }
    }

    /// Refreshes `held` with its refresh token, if it has one from the authorization server of `found`, and keeps
    /// what the refresh gave; whether it did. Only the authorization code grant refreshes: a machine client asks
    /// its own grant again.
    async fn refreshed(&self, http: &reqwest::Client, found: &Found, held: &Tokens) -> bool {
        let Grant::AuthorizationCode = self.config.grant else { return false };
        let (true, Some(refresh)) = (held.issuer == found.issuer, &held.refresh_token) else { return false };
        match self.refresh(http, found, held, refresh).await {
            Ok(fresh) => {
                tracing::debug!(issuer = %found.issuer, "refreshed the access token");
                self.config.store.save_tokens(&self.key, fresh);
                true
            }
            Err(e) => {
                tracing::debug!(error = %e, "refreshing the access token failed");
                false
            }
        }
    }

    /// The server challenged a request (401, or 403 `insufficient_scope`) that carried `sent`: get a token that
    /// may do better, or say why not. `step_ups` counts the 403s of this request.
    pub(crate) async fn challenged(
        &self,
        http: &reqwest::Client,
        status: StatusCode,
        headers: &HeaderMap,
        sent: Option<&str>,
        step_ups: &mut usize,
    ) -> Result<(), Error> {
        let _one_at_a_time = self.gate.lock().await;
        let held = self.config.store.tokens(&self.key);
        if held.as_ref().map(|t| t.access_token.as_str()) != sent {
            return Ok(()); // another request got a new token meanwhile
        }
        let challenge = Challenge::from_headers(headers);
        let step_up = status == StatusCode::FORBIDDEN;
        if step_up {
            *step_ups += 1;
            if *step_ups > self.config.max_step_up {
                return Err(Error::Auth(AuthError::scope(format!(
                    "the server still refuses the request for lack of scope (it asks for {:?}) after {} step-up \
                     authorizations; the authorization server does not grant what the server requires, or the user \
                     declined it (OAuth::max_step_up raises the limit)",
                    challenge.scope.as_deref().unwrap_or_default(),
                    self.config.max_step_up
                ))));
            }
        }
        tracing::debug!(%status, scope = ?challenge.scope, "the server challenged a request: authorizing");
        let found = Arc::new(self.discover(http, &challenge).await?);
        *self.found.locked() = Some(found.clone());

        // A refresh token from the same authorization server answers a 401 before a new authorization does.
        if let (false, Some(tokens)) = (step_up, &held) {
            if self.refreshed(http, &found, tokens).await {
                return Ok(());
            }
        }

        let scopes = self.scopes(&challenge, &found, held.as_ref());
        let registration = self.register(http, &found).await?;
        let tokens = match &self.config.grant {
            Grant::AuthorizationCode => self.authorize(http, &found, &registration, scopes).await?,
            Grant::ClientCredentials => self.client_credentials(http, &found, &registration, scopes).await?,
            Grant::JwtBearer { assertion } => {
                self.jwt_bearer(http, &found, &registration, assertion.clone(), scopes).await?
            }
            Grant::Enterprise { token_endpoint, client_id, id_token } => {
                self.enterprise(http, &found, &registration, (token_endpoint, client_id, id_token), scopes).await?
            }
        };
        tracing::debug!(
            issuer = %found.issuer,
            resource = %found.resource,
            scopes = ?tokens.scopes,
            token_type = ?tokens.token_type,
            "authorized"
        );
        self.config.store.save_tokens(&self.key, tokens);
        Ok(())
    }

    /// The scopes to ask for: the challenge's, else the resource's `scopes_supported`, else none; with those asked
    /// for before (a step-up keeps them), and `offline_access` where the authorization server lists it.
    fn scopes(&self, challenge: &Challenge, found: &Found, held: Option<&Tokens>) -> Vec<String> {
        let mut scopes: Vec<String> = held.map(|t| t.scopes.clone()).unwrap_or_default();
        let asked = challenge.scopes();
        let wanted = if asked.is_empty() { found.resource_scopes.clone().unwrap_or_default() } else { asked };
        for scope in wanted {
            if !scopes.contains(&scope) {
                scopes.push(scope);
            }
        }
        let offline = "offline_access".to_owned();
        let listed =
            found.metadata.as_ref().and_then(|m| m.scopes_supported.as_ref()).is_some_and(|s| s.contains(&offline));
        if self.config.refresh_tokens && listed && !scopes.contains(&offline) {
            scopes.push(offline);
        } else if !listed {
            scopes.retain(|s| s != "offline_access");
        }
        scopes
    }
}

/// Whether `tokens` should be refreshed before a request at `now`: the access token has expired, or expires within
/// [`REFRESH_AHEAD`] (within half its life, for one that lives less than twice that). Without `expires_at`, never.
fn expiring(tokens: &Tokens, now: u64) -> bool {
    let Some(expires_at) = tokens.expires_at else { return false };
    let margin = match tokens.issued_at {
        Some(issued_at) => REFRESH_AHEAD.as_secs().min(expires_at.saturating_sub(issued_at) / 2),
        None => REFRESH_AHEAD.as_secs(),
    };
    now.saturating_add(margin) >= expires_at
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::client::auth::discovery::{Endpoints, ServerMetadata};
    fn authorizer(oauth: OAuth) -> Authorizer {
        Authorizer::new(oauth, "http://localhost:3000/mcp").unwrap()
    }

    fn user() -> OAuth {
        OAuth::new("http://127.0.0.1:1/callback", |_| async { Err("no user here".into()) })
    }

    fn found(metadata: ServerMetadata, resource_scopes: Option<Vec<&str>>) -> Found {
        let url = Url::parse("http://localhost:4000/token").unwrap();
        Found {
            issuer: "http://localhost:4000".into(),
            metadata: Some(metadata),
            endpoints: Endpoints { authorization: url.clone(), token: url, registration: None },
            resource: "http://localhost:3000/mcp".into(),
            resource_scopes: resource_scopes.map(|s| s.into_iter().map(str::to_owned).collect()),
            resource_takes_dpop: false,
        }
    }

    fn challenge(scope: Option<&str>) -> Challenge {
        Challenge { scope: scope.map(str::to_owned), ..Challenge::default() }
    }

    #[test]
    fn scopes_come_from_the_challenge_then_the_resource_then_nothing() {
        let a = authorizer(user());
        let none = ServerMetadata::default();
        assert_eq!(a.scopes(&challenge(Some("a b")), &found(none.clone(), Some(vec!["c"])), None), ["a", "b"]);
        assert_eq!(a.scopes(&challenge(None), &found(none.clone(), Some(vec!["c", "d"])), None), ["c", "d"]);
        assert!(a.scopes(&challenge(None), &found(none.clone(), None), None).is_empty());
        // A step-up keeps what was asked before.
        let held = Tokens {
            access_token: "t".into(),
            refresh_token: None,
            expires_at: None,
            issued_at: None,
            scopes: vec!["a".into()],
            issuer: "http://localhost:4000".into(),
            token_type: None,
        };
        assert_eq!(a.scopes(&challenge(Some("w")), &found(none, None), Some(&held)), ["a", "w"]);
        // offline_access only where the authorization server lists it.
        let offline =
            ServerMetadata { scopes_supported: Some(vec!["a".into(), "offline_access".into()]), ..Default::default() };
        assert_eq!(a.scopes(&challenge(Some("a")), &found(offline.clone(), None), None), ["a", "offline_access"]);
        let quiet = authorizer(user().refresh_tokens(false));
        assert_eq!(quiet.scopes(&challenge(Some("a")), &found(offline, None), None), ["a"]);
    }

    #[test]
    fn a_token_is_refreshed_ahead_30_s_before_it_expires_or_halfway_through_a_short_life() {
        let token = |issued_at: Option<u64>, expires_at: Option<u64>| Tokens {
            access_token: "t".into(),
            refresh_token: Some("r".into()),
            expires_at,
            issued_at,
            scopes: Vec::new(),
            issuer: "http://localhost:4000".into(),
            token_type: None,
        };
        let hour = token(Some(1_000), Some(4_600));
        assert!(!expiring(&hour, 1_000));
        assert!(!expiring(&hour, 4_569));
        assert!(expiring(&hour, 4_570), "30 s before");
        assert!(expiring(&hour, 5_000), "expired");
        let short = token(Some(1_000), Some(1_010));
        assert!(!expiring(&short, 1_004));
        assert!(expiring(&short, 1_005), "halfway");
        assert!(expiring(&token(None, Some(1_010)), 980), "a lifetime unknown: 30 s before");
        assert!(!expiring(&token(Some(1_000), None), u64::MAX), "no expiry said: never");
    }
}
