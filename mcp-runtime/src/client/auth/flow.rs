//! The authorizer the HTTP transport consults: the bearer token of each request, and what to do when the server
//! challenges one (discover, register, authorize with PKCE, exchange the code, refresh, step up).

use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use oauth2::basic::{BasicClient, BasicTokenResponse};
use oauth2::{
    AuthType, AuthUrl, AuthorizationCode, ClientId, ClientSecret, CsrfToken, PkceCodeChallenge, RedirectUrl,
    RefreshToken, RequestTokenError, Scope, TokenResponse, TokenUrl,
};
use reqwest::header::HeaderMap;
use reqwest::{StatusCode, Url};
use serde_json::{json, Value};

use super::discovery::{self, Challenge, ServerMetadata};
use super::dpop::{self, Dpop};
use super::{jwt, Grant, OAuth, Registration, Tokens};
use crate::base::future::BoxFuture;
use crate::base::sync::Unpoisoned;
use crate::client::{AuthError, Error, TransportError};

/// The longest answer of an authorization server read (a token response, a registration).
pub(super) const RESPONSE_LIMIT: usize = 1024 * 1024;

/// How long before it expires an access token is refreshed ahead of a request: 30 s, time for the request to reach
/// the server and for clocks to disagree a little, and little beside the minutes access tokens usually live. A token
/// that lives less than twice that is refreshed halfway through its life instead, else each request would refresh.
const REFRESH_AHEAD: Duration = Duration::from_secs(30);

/// Where the authorization server takes each request.
pub(super) struct Endpoints {
    pub(super) authorization: Url,
    pub(super) token: Url,
    pub(super) registration: Option<Url>,
}

/// How the client authenticates at the token endpoint.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum ClientAuth {
    Basic,
    Post,
    None,
    PrivateKeyJwt,
}

/// What a challenge led to: the authorization server, its metadata, and the resource to name.
pub(super) struct Found {
    pub(super) issuer: String,
    pub(super) metadata: Option<ServerMetadata>,
    pub(super) endpoints: Endpoints,
    pub(super) resource: String,
    pub(super) resource_scopes: Option<Vec<String>>,
    /// Whether the resource server takes DPoP-bound tokens: its challenge used the `DPoP` scheme, or its metadata
    /// lists DPoP algorithms. A server that challenges with `Bearer` alone would refuse a `DPoP` token, so the
    /// client asks for a bearer token there even when the authorization server supports DPoP.
    pub(super) resource_takes_dpop: bool,
}

/// The authorization state of one HTTP connection: the configuration, the server, and a gate so that one
/// authorization runs at a time (requests challenged meanwhile wait for it and use its token).
pub(crate) struct Authorizer {
    pub(super) config: OAuth,
    server: Url,
    key: String,
    gate: tokio::sync::Mutex<()>,
    /// The issuer a pre-registered client without one was first used with.
    bound: Mutex<Option<String>>,
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

    /// The protected resource metadata, its checks, and the authorization server's metadata.
    async fn discover(&self, http: &reqwest::Client, challenge: &Challenge) -> Result<Found, Error> {
        let prm = discovery::resource_metadata(http, &self.server, challenge).await?;
        let origin = self.server.origin().ascii_serialization();
        let Some(prm) = prm else {
            // 2025-03-26: no protected resource metadata; the server's origin is the authorization server.
            let metadata = discovery::server_metadata(http, &origin).await?;
            let endpoints = match &metadata {
                Some(metadata) => endpoints(metadata, &origin)?,
                None => Endpoints {
                    authorization: discovery::web_url(&format!("{origin}/authorize"), "the default endpoint")?,
                    token: discovery::web_url(&format!("{origin}/token"), "the default endpoint")?,
                    registration: Some(discovery::web_url(&format!("{origin}/register"), "the default endpoint")?),
                },
            };
            return Ok(Found {
                issuer: origin,
                metadata,
                endpoints,
                resource: self.key.clone(),
                resource_scopes: None,
                resource_takes_dpop: challenge.dpop,
            });
        };
        let resource = match prm.resource {
            Some(resource) if discovery::resource_matches(&self.server, &resource) => resource,
            Some(resource) => {
                return Err(Error::Auth(AuthError::discovery(format!(
                    "the protected resource metadata names the resource {resource:?}, which is not this server ({}): \
                     the client does not authorize for it (RFC 9728 §3.3); the server's metadata must name its own \
                     URL",
                    self.server
                ))))
            }
            None => self.key.clone(),
        };
        let Some(issuer) = prm.authorization_servers.first().cloned() else {
            return Err(Error::Auth(AuthError::discovery(
                "the protected resource metadata lists no authorization_servers: the server does not say where to \
                 get a token",
            )));
        };
        discovery::web_url(&issuer, "the authorization server")?;
        let Some(metadata) = discovery::server_metadata(http, &issuer).await? else {
            return Err(Error::Auth(AuthError::discovery(format!(
                "the authorization server {issuer} publishes no metadata (neither RFC 8414 nor OpenID Connect \
                 discovery at its well-known URIs)"
            ))));
        };
        let endpoints = endpoints(&metadata, &issuer)?;
        let resource_takes_dpop = challenge.dpop
            || prm.dpop_bound_access_tokens_required
            || prm.dpop_signing_alg_values_supported.is_some_and(|algs| !algs.is_empty());
        Ok(Found {
            issuer,
            metadata: Some(metadata),
            endpoints,
            resource,
            resource_scopes: prm.scopes_supported,
            resource_takes_dpop,
        })
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

    /// How the client is known to this issuer: stored, pre-registered, a Client ID Metadata Document, or registered
    /// now (RFC 7591).
    async fn register(&self, http: &reqwest::Client, found: &Found) -> Result<Registration, Error> {
        let store = &self.config.store;
        if let Some(registration) = store.registration(&found.issuer) {
            return Ok(registration);
        }
        if let Some(pre) = self.config.preregistered.as_ref().filter(|p| !p.client_id.is_empty()) {
            let mine = match &pre.issuer {
                Some(issuer) => *issuer == found.issuer,
                None => {
                    let mut bound = self.bound.locked();
                    let first = bound.get_or_insert_with(|| found.issuer.clone());
                    *first == found.issuer
                }
            };
            if mine {
                let registration = Registration {
                    client_id: pre.client_id.clone(),
                    client_secret: pre.client_secret.clone(),
                    token_endpoint_auth_method: None,
                };
                store.save_registration(&found.issuer, registration.clone());
                return Ok(registration);
            }
        }
        let cimd = found.metadata.as_ref().is_some_and(|m| m.client_id_metadata_document_supported);
        if let (true, Some(url)) = (cimd, &self.config.client_metadata_url) {
            let registration = Registration::new(url.clone());
            store.save_registration(&found.issuer, registration.clone());
            return Ok(registration);
        }
        let Some(endpoint) = &found.endpoints.registration else {
            return Err(Error::Auth(AuthError::registration(format!(
                "the authorization server {} offers no dynamic client registration{}, and the client has no \
                 credentials for it: register the client there and pass them with OAuth::client_id (and \
                 OAuth::issuer){}",
                found.issuer,
                if cimd { " and the client has no metadata document" } else { "" },
                if cimd {
                    ", or publish a Client ID Metadata Document and pass OAuth::client_metadata_url"
                } else {
                    ""
                }
            ))));
        };
        let mut grant_types = vec!["authorization_code"];
        if self.config.refresh_tokens {
            grant_types.push("refresh_token");
        }
        let mut body = json!({
            "client_name": self.config.client_name.as_deref().unwrap_or("mcp-rust-client"),
            "redirect_uris": [self.config.redirect_uri],
            "grant_types": grant_types,
            "response_types": ["code"],
            "application_type": self.config.application_type.as_str(),
        });
        if self.config.signing_key.is_some() {
            body["token_endpoint_auth_method"] = json!("private_key_jwt");
        }
        let response = http
            .post(endpoint.clone())
            .header("accept", "application/json")
            .header("content-type", "application/json")
            .body(body.to_string())
            .send()
            .await
            .map_err(|e| Error::Transport(TransportError::from_reqwest("registering the client", e)))?;
        let status = response.status();
        let bytes = crate::client::http::read_limited(response, RESPONSE_LIMIT).await?;
        let answer: Value = serde_json::from_slice(&bytes).unwrap_or(Value::Null);
        let Some(client_id) = answer["client_id"].as_str().filter(|_| status.is_success()) else {
            return Err(Error::Auth(AuthError::registration(format!(
                "dynamic client registration at {endpoint} failed (HTTP {status}): {}",
                oauth_error(&answer, &bytes)
            ))));
        };
        let registration = Registration {
            client_id: client_id.to_owned(),
            client_secret: answer["client_secret"].as_str().map(str::to_owned),
            token_endpoint_auth_method: answer["token_endpoint_auth_method"].as_str().map(str::to_owned),
        };
        store.save_registration(&found.issuer, registration.clone());
        Ok(registration)
    }

    /// How to authenticate at the token endpoint: as registered, else the best the server supports for what the
    /// client holds.
    pub(super) fn client_auth(&self, registration: &Registration, metadata: Option<&ServerMetadata>) -> ClientAuth {
        match registration.token_endpoint_auth_method.as_deref() {
            Some("client_secret_basic") if registration.client_secret.is_some() => return ClientAuth::Basic,
            Some("client_secret_post") if registration.client_secret.is_some() => return ClientAuth::Post,
            Some("private_key_jwt") if self.config.signing_key.is_some() => return ClientAuth::PrivateKeyJwt,
            Some("none") => return ClientAuth::None,
            _ => {}
        }
        let supported = metadata.and_then(|m| m.token_endpoint_auth_methods_supported.clone());
        let supports = |method: &str| supported.as_ref().is_none_or(|s| s.iter().any(|m| m == method));
        if self.config.signing_key.is_some()
            && supported.as_ref().is_some_and(|s| s.iter().any(|m| m == "private_key_jwt"))
        {
            return ClientAuth::PrivateKeyJwt;
        }
        if registration.client_secret.is_some() {
            if supports("client_secret_basic") {
                return ClientAuth::Basic;
            }
            if supports("client_secret_post") {
                return ClientAuth::Post;
            }
        }
        ClientAuth::None
    }

    /// An oauth2 client for this registration and these endpoints.
    pub(super) fn oauth_client(
        &self,
        found: &Found,
        registration: &Registration,
        auth: ClientAuth,
    ) -> Result<
        BasicClient<
            oauth2::EndpointSet,
            oauth2::EndpointNotSet,
            oauth2::EndpointNotSet,
            oauth2::EndpointNotSet,
            oauth2::EndpointSet,
        >,
        Error,
    > {
        let mut client = BasicClient::new(ClientId::new(registration.client_id.clone()))
            .set_auth_uri(AuthUrl::from_url(found.endpoints.authorization.clone()))
            .set_token_uri(TokenUrl::from_url(found.endpoints.token.clone()));
        if matches!(self.config.grant, Grant::AuthorizationCode) {
            let redirect = RedirectUrl::new(self.config.redirect_uri.clone()).map_err(|e| {
                Error::Auth(AuthError::config(format!(
                    "the redirect URI {:?} is not a URL ({e})",
                    self.config.redirect_uri
                )))
            })?;
            client = client.set_redirect_uri(redirect);
        }
        match auth {
            ClientAuth::Basic => {
                client = client.set_auth_type(AuthType::BasicAuth);
                if let Some(secret) = &registration.client_secret {
                    client = client.set_client_secret(ClientSecret::new(secret.clone()));
                }
            }
            ClientAuth::Post => {
                client = client.set_auth_type(AuthType::RequestBody);
                if let Some(secret) = &registration.client_secret {
                    client = client.set_client_secret(ClientSecret::new(secret.clone()));
                }
            }
            ClientAuth::None | ClientAuth::PrivateKeyJwt => client = client.set_auth_type(AuthType::RequestBody),
        }
        Ok(client)
    }

    /// The authorization code flow with PKCE: the user's part through the callback, then the token request.
    async fn authorize(
        &self,
        http: &reqwest::Client,
        found: &Found,
        registration: &Registration,
        scopes: Vec<String>,
    ) -> Result<Tokens, Error> {
        if let Some(metadata) = &found.metadata {
            let methods = metadata.code_challenge_methods_supported.as_deref().unwrap_or_default();
            if metadata.code_challenge_methods_supported.is_none() {
                return Err(Error::Auth(AuthError::authorization(format!(
                    "the authorization server metadata of {} lacks code_challenge_methods_supported: it does not \
                     support PKCE, which MCP requires, so the client does not authorize there",
                    found.issuer
                ))));
            }
            if !methods.iter().any(|m| m == "S256") {
                return Err(Error::Auth(AuthError::authorization(format!(
                    "the authorization server {} supports PKCE only with {methods:?}, not S256, which MCP requires",
                    found.issuer
                ))));
            }
        }
        if found.metadata.as_ref().is_some_and(|m| m.authorization_endpoint.is_none()) {
            return Err(Error::Auth(AuthError::discovery(format!(
                "the authorization server metadata of {} has no authorization_endpoint: it serves machine clients \
                 only (OAuth::client_credentials)",
                found.issuer
            ))));
        }
        let auth = self.client_auth(registration, found.metadata.as_ref());
        let client = self.oauth_client(found, registration, auth)?;
        let (challenge, verifier) = PkceCodeChallenge::new_random_sha256();
        let mut request = client
            .authorize_url(CsrfToken::new_random)
            .set_pkce_challenge(challenge)
            .add_extra_param("resource", found.resource.clone());
        for scope in &scopes {
            request = request.add_scope(Scope::new(scope.clone()));
        }
        let (url, state) = request.url();
        let landed = (self.config.authorize)(url).await.map_err(|e| {
            Error::Auth(AuthError::authorization(format!("the user's part of the authorization did not finish: {e}")))
        })?;
        let landed = Url::parse(&landed).map_err(|e| {
            Error::Auth(AuthError::authorization(format!(
                "the authorization callback returned {landed:?}, which is not the URL the browser was sent back to \
                 ({e})"
            )))
        })?;
        let param = |name: &str| landed.query_pairs().find(|(k, _)| k == name).map(|(_, v)| v.into_owned());
        if let Some(error) = param("error") {
            let description = param("error_description").map(|d| format!(": {d}")).unwrap_or_default();
            return Err(Error::Auth(AuthError::authorization(format!(
                "the authorization server refused the authorization ({error}{description})"
            ))));
        }
        if param("state").as_deref() != Some(state.secret().as_str()) {
            return Err(Error::Auth(AuthError::authorization(
                "the authorization response's state is not the one sent: it answers another request (or was forged), \
                 so the client does not use it",
            )));
        }
        // RFC 9207: a present `iss` must be the issuer, compared as strings; a server that advertises it must send it.
        let issuer = found.metadata.as_ref().and_then(|m| m.issuer.clone()).unwrap_or_else(|| found.issuer.clone());
        match param("iss") {
            Some(iss) if iss != issuer => {
                return Err(Error::Auth(AuthError::authorization(format!(
                    "the authorization response comes from the issuer {iss:?}, not {issuer:?}, the one asked (RFC \
                     9207): a mix-up attack or a misconfigured server; the client does not use its code"
                ))))
            }
            None if found.metadata.as_ref().is_some_and(|m| m.authorization_response_iss_parameter_supported) => {
                return Err(Error::Auth(AuthError::authorization(format!(
                    "the authorization response has no iss, though {issuer} advertises \
                     authorization_response_iss_parameter_supported (RFC 9207): the client does not use its code"
                ))))
            }
            _ => {}
        }
        let Some(code) = param("code") else {
            return Err(Error::Auth(AuthError::authorization("the authorization response has no code")));
        };
        let exchange = client.exchange_code(AuthorizationCode::new(code)).set_pkce_verifier(verifier);
        self.token_request(http, found, registration, exchange, scopes, None).await
    }

    /// A refresh token grant, with the same resource.
    async fn refresh(
        &self,
        http: &reqwest::Client,
        found: &Found,
        held: &Tokens,
        refresh: &str,
    ) -> Result<Tokens, Error> {
        let registration = self.register(http, found).await?;
        let auth = self.client_auth(&registration, found.metadata.as_ref());
        let client = self.oauth_client(found, &registration, auth)?;
        let token = RefreshToken::new(refresh.to_owned());
        let exchange = client.exchange_refresh_token(&token);
        self.token_request(http, found, &registration, exchange, held.scopes.clone(), Some(refresh)).await
    }

    /// Sends a token request oauth2 built (`request`, as `registration`), with the resource and, for
    /// `private_key_jwt`, the client's assertion; the tokens it gave, for `scopes` (and with `old_refresh` if the
    /// answer has no refresh token of its own).
    pub(super) async fn token_request(
        &self,
        http: &reqwest::Client,
        found: &Found,
        registration: &Registration,
        mut request: impl TokenRequest,
        scopes: Vec<String>,
        old_refresh: Option<&str>,
    ) -> Result<Tokens, Error> {
        request = request.param("resource", found.resource.clone());
        if self.client_auth(registration, found.metadata.as_ref()) == ClientAuth::PrivateKeyJwt {
            for (name, value) in self.assertion(registration, found)? {
                request = request.param(name, value);
            }
        }
        let send = sender(http, self.dpop_for(found)?);
        let response = request.send(&send).await.map_err(|e| token_error(&found.endpoints.token, e))?;
        Ok(tokens(&response, scopes, &found.issuer, old_refresh))
    }

    /// The `client_assertion` parameters of `private_key_jwt`.
    pub(super) fn assertion(
        &self,
        registration: &Registration,
        found: &Found,
    ) -> Result<Vec<(&'static str, String)>, Error> {
        let Some(key) = &self.config.signing_key else { return Ok(Vec::new()) };
        let audience = found.metadata.as_ref().and_then(|m| m.issuer.clone()).unwrap_or_else(|| found.issuer.clone());
        let assertion = jwt::client_assertion(key, &registration.client_id, &audience)?;
        Ok(vec![
            ("client_assertion_type", "urn:ietf:params:oauth:client-assertion-type:jwt-bearer".to_owned()),
            ("client_assertion", assertion),
        ])
    }
}

/// What oauth2's token requests (authorization code, refresh token, client credentials) have in common, which oauth2
/// has no trait for: one more parameter, and sending.
pub(super) trait TokenRequest: Sized {
    /// The request with the form parameter `name` added.
    fn param(self, name: &'static str, value: String) -> Self;

    /// Sends the request with `http`; the token response.
    fn send<'c>(self, http: &'c Sender) -> BoxFuture<'c, Result<BasicTokenResponse, TokenRequestError>>
    where
        Self: 'c;
}

/// Why oauth2 could not get a token.
pub(super) type TokenRequestError = RequestTokenError<Error, oauth2::basic::BasicErrorResponse>;

macro_rules! token_request {
    ($($request:ident),*) => {$(
        impl TokenRequest for oauth2::$request<'_, oauth2::basic::BasicErrorResponse, BasicTokenResponse> {
            fn param(self, name: &'static str, value: String) -> Self {
                self.add_extra_param(name, value)
            }

            fn send<'c>(self, http: &'c Sender) -> BoxFuture<'c, Result<BasicTokenResponse, TokenRequestError>>
            where
                Self: 'c,
            {
                Box::pin(self.request_async(http))
            }
        }
    )*};
}

token_request!(CodeTokenRequest, RefreshTokenRequest, ClientCredentialsTokenRequest);

/// The endpoints a metadata document gives, each an `http` or `https` URL.
fn endpoints(metadata: &ServerMetadata, issuer: &str) -> Result<Endpoints, Error> {
    let required = |field: &Option<String>, name: &str| match field {
        Some(url) => discovery::web_url(url, name),
        None => Err(Error::Auth(AuthError::discovery(format!(
            "the authorization server metadata of {issuer} has no {name}"
        )))),
    };
    let token = required(&metadata.token_endpoint, "token_endpoint")?;
    Ok(Endpoints {
        // A server for machine clients only (client credentials, JWT bearer) may have no authorization endpoint;
        // then the token endpoint stands in for it, unused.
        authorization: match &metadata.authorization_endpoint {
            Some(url) => discovery::web_url(url, "authorization_endpoint")?,
            None => token.clone(),
        },
        token,
        registration: match &metadata.registration_endpoint {
            Some(url) => Some(discovery::web_url(url, "registration_endpoint")?),
            None => None,
        },
    })
}

/// The `error` and `error_description` of an OAuth error body, or the start of the body.
pub(super) fn oauth_error(answer: &Value, bytes: &[u8]) -> String {
    match (answer["error"].as_str(), answer["error_description"].as_str()) {
        (Some(error), Some(description)) => format!("{error}: {description}"),
        (Some(error), None) => error.to_owned(),
        _ => String::from_utf8_lossy(&bytes[..bytes.len().min(512)]).trim().to_owned(),
    }
}

/// Tokens from a token response.
pub(super) fn tokens(
    response: &BasicTokenResponse,
    scopes: Vec<String>,
    issuer: &str,
    old_refresh: Option<&str>,
) -> Tokens {
    let now = now();
    Tokens {
        access_token: response.access_token().secret().clone(),
        refresh_token: response.refresh_token().map(|t| t.secret().clone()).or_else(|| old_refresh.map(str::to_owned)),
        expires_at: response.expires_in().map(|d| now + d.as_secs()),
        issued_at: Some(now),
        scopes,
        issuer: issuer.to_owned(),
        token_type: Some(match response.token_type() {
            oauth2::basic::BasicTokenType::Extension(kind) if kind.eq_ignore_ascii_case("dpop") => "DPoP".to_owned(),
            _ => "Bearer".to_owned(),
        }),
    }
}

/// Now, in seconds since the Unix epoch.
pub(super) fn now() -> u64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| d.as_secs())
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

/// Why a token request failed.
pub(super) fn token_error(endpoint: &Url, error: TokenRequestError) -> Error {
    match error {
        RequestTokenError::ServerResponse(answer) => {
            let description = answer.error_description().map(|d| format!(": {d}")).unwrap_or_default();
            let code = answer.error().to_string();
            Error::Auth(AuthError::token(format!(
                "the token endpoint {endpoint} refused the request ({code}{description}){}",
                token_error_hint(&code)
            )))
        }
        RequestTokenError::Request(e) => e,
        RequestTokenError::Parse(e, _) => Error::Auth(AuthError::token(format!(
            "the token endpoint {endpoint} answered with something that is not a token response ({e})"
        ))),
        RequestTokenError::Other(why) => {
            Error::Auth(AuthError::token(format!("the token request to {endpoint} failed: {why}")))
        }
    }
}

/// What to do about an OAuth error code (RFC 6749 §5.2), as the end of a sentence.
pub(super) fn token_error_hint(code: &str) -> &'static str {
    match code {
        "invalid_client" => {
            ": the authorization server does not know the client or its credentials; check OAuth::client_id and \
             OAuth::client_secret (or the private_key_jwt key), or drop the registration kept in the TokenStore"
        }
        "invalid_grant" => ": the code, refresh token or assertion is expired, used already, or for another client",
        "unauthorized_client" => ": the client is not allowed this grant; register it for the grant, or use another",
        "unsupported_grant_type" => ": the authorization server does not offer this grant to this client",
        "invalid_scope" => {
            ": the scopes asked for are not granted; the server's challenge or scopes_supported names them"
        }
        _ => "",
    }
}

/// oauth2's HTTP client ([`sender`]).
pub(super) type Sender = Box<dyn Fn(oauth2::HttpRequest) -> BoxFuture<'static, Result<oauth2::HttpResponse, Error>> + Send + Sync>;

/// oauth2's HTTP client, over the transport's reqwest client; with a DPoP key, each request carries a proof, and a
/// `use_dpop_nonce` answer (RFC 9449 §8) is sent once more with the nonce it gave.
pub(super) fn sender(http: &reqwest::Client, dpop: Option<Arc<Dpop>>) -> Sender {
    let http = http.clone();
    Box::new(move |request: oauth2::HttpRequest| -> BoxFuture<'static, Result<oauth2::HttpResponse, Error>> {
        let http = http.clone();
        let dpop = dpop.clone();
        Box::pin(async move {
            let (parts, body) = request.into_parts();
            let url = Url::parse(&parts.uri.to_string())
                .map_err(|e| Error::Auth(AuthError::config(format!("a token endpoint that is not a URL: {e}"))))?;
            let mut retried = false;
            loop {
                let mut request =
                    http.request(parts.method.clone(), url.clone()).headers(parts.headers.clone()).body(body.clone());
                if let Some(dpop) = &dpop {
                    request = request.header("dpop", dpop.proof(parts.method.as_str(), &url, None)?);
                }
                let response = request
                    .send()
                    .await
                    .map_err(|e| Error::Transport(TransportError::from_reqwest("the token request failed", e)))?;
                let status = response.status();
                let headers = response.headers().clone();
                let body = crate::client::http::read_limited(response, RESPONSE_LIMIT).await?;
                if let (Some(dpop), false, StatusCode::BAD_REQUEST) = (&dpop, retried, status) {
                    let answer: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
                    if answer["error"] == "use_dpop_nonce" && dpop.remember_nonce(&url, &headers) {
                        retried = true;
                        continue;
                    }
                }
                let mut answer = oauth2::HttpResponse::new(body);
                *answer.status_mut() = status;
                *answer.headers_mut() = headers;
                return Ok(answer);
            }
        })
    })
}

#[cfg(test)]
mod tests {
    use super::*;

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

    #[test]
    fn the_token_endpoint_method_is_the_registered_one_else_the_best_supported() {
        let a = authorizer(user());
        let with_secret = |method: Option<&str>| Registration {
            client_id: "c".into(),
            client_secret: Some("s".into()),
            token_endpoint_auth_method: method.map(str::to_owned),
        };
        let supports = |methods: &[&str]| ServerMetadata {
            token_endpoint_auth_methods_supported: Some(methods.iter().map(|m| (*m).to_owned()).collect()),
            ..Default::default()
        };
        assert_eq!(a.client_auth(&with_secret(Some("client_secret_post")), None), ClientAuth::Post);
        assert_eq!(a.client_auth(&with_secret(None), None), ClientAuth::Basic, "RFC 7591's default");
        assert_eq!(a.client_auth(&with_secret(None), Some(&supports(&["client_secret_post"]))), ClientAuth::Post);
        assert_eq!(a.client_auth(&with_secret(None), Some(&supports(&["none"]))), ClientAuth::None);
        assert_eq!(a.client_auth(&Registration::new("c"), Some(&supports(&["client_secret_basic"]))), ClientAuth::None);
    }
}
