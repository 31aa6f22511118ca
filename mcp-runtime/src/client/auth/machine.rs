//! The grants of machine clients (the ext-auth extensions): OAuth client credentials, the RFC 7523 JWT bearer grant
//! (workload identity federation), and Enterprise-Managed Authorization (an RFC 8693 token exchange at the identity
//! provider, then a JWT bearer grant with the identity assertion it gave).

use oauth2::Scope;
use reqwest::Url;
use serde_json::Value;

use super::discovery::{self, Found};
use super::flow::Authorizer;
use super::token::{now, oauth_error, token_error_hint, ClientAuth, RESPONSE_LIMIT};
use super::{jwt, Registration, Tokens};
use crate::client::{AuthError, Error, TransportError};

/// The RFC 7523 JWT bearer grant.
const JWT_BEARER: &str = "urn:ietf:params:oauth:grant-type:jwt-bearer";

impl Authorizer {
    /// The `client_credentials` grant (oauth2), with the resource and scopes.
    pub(super) async fn client_credentials(
        &self,
        http: &reqwest::Client,
        found: &Found,
        registration: &Registration,
        scopes: Vec<String>,
    ) -> Result<Tokens, Error> {
        let auth = self.client_auth(registration, found.metadata.as_ref());
        let client = self.oauth_client(found, registration, auth)?;
        let mut exchange = client.exchange_client_credentials();
        for scope in &scopes {
            exchange = exchange.add_scope(Scope::new(scope.clone()));
        }
        self.token_request(http, found, registration, exchange, scopes, None).await
    }

    /// The RFC 7523 JWT bearer grant with `assertion`, authenticated as registered.
    pub(super) async fn jwt_bearer(
        &self,
        http: &reqwest::Client,
        found: &Found,
        registration: &Registration,
        assertion: String,
        scopes: Vec<String>,
    ) -> Result<Tokens, Error> {
        let mut params =
            vec![("grant_type", JWT_BEARER.to_owned()), ("assertion", assertion), ("resource", found.resource.clone())];
        if !scopes.is_empty() {
            params.push(("scope", scopes.join(" ")));
        }
        let auth = self.client_auth(registration, found.metadata.as_ref());
        let answer = self.form_post(http, &found.endpoints.token, params, registration, auth, &found.issuer).await?;
        let Some(access_token) = answer["access_token"].as_str() else {
            return Err(Error::Auth(AuthError::token(format!(
                "the token endpoint {} answered without an access_token",
                found.endpoints.token
            ))));
        };
        let now = now();
        Ok(Tokens {
            access_token: access_token.to_owned(),
            refresh_token: answer["refresh_token"].as_str().map(str::to_owned),
            expires_at: answer["expires_in"].as_u64().map(|s| now + s),
            issued_at: Some(now),
            scopes,
            issuer: found.issuer.clone(),
            token_type: answer["token_type"].as_str().map(str::to_owned),
        })
    }

    /// A token request oauth2 has no builder for (RFC 8693 token exchange, the RFC 7523 JWT bearer grant): the form,
    /// the client's authentication, and the JSON answer, or the OAuth error it carries.
    async fn form_post(
        &self,
        http: &reqwest::Client,
        endpoint: &Url,
        mut params: Vec<(&'static str, String)>,
        registration: &Registration,
        auth: ClientAuth,
        issuer: &str,
    ) -> Result<Value, Error> {
        let mut request = http.post(endpoint.clone()).header("accept", "application/json");
        let encode = |s: &str| oauth2::url::form_urlencoded::byte_serialize(s.as_bytes()).collect::<String>();
        match (auth, &registration.client_secret) {
            (ClientAuth::Basic, Some(secret)) => {
                use base64::Engine;
                let pair = format!("{}:{}", encode(&registration.client_id), encode(secret));
                let basic = base64::engine::general_purpose::STANDARD.encode(pair);
                request = request.header("authorization", format!("Basic {basic}"));
            }
            (ClientAuth::Post, Some(secret)) => {
                params.push(("client_id", registration.client_id.clone()));
                params.push(("client_secret", secret.clone()));
            }
            (ClientAuth::PrivateKeyJwt, _) => {
                params.push(("client_id", registration.client_id.clone()));
                let Some(key) = &self.config.signing_key else {
                    return Err(Error::Auth(AuthError::config("private_key_jwt needs a key: OAuth::private_key_jwt")));
                };
                params.push(("client_assertion_type", "urn:ietf:params:oauth:client-assertion-type:jwt-bearer".into()));
                params.push(("client_assertion", jwt::client_assertion(key, &registration.client_id, issuer)?));
            }
            _ => params.push(("client_id", registration.client_id.clone())),
        }
        let body: String = oauth2::url::form_urlencoded::Serializer::new(String::new()).extend_pairs(params).finish();
        let response = request
            .header("content-type", "application/x-www-form-urlencoded")
            .body(body)
            .send()
            .await
            .map_err(|e| Error::Transport(TransportError::from_reqwest("the token request failed", e)))?;
        let status = response.status();
        let bytes = crate::client::body::read_body(response, RESPONSE_LIMIT).await?;
        let answer: Value = serde_json::from_slice(&bytes).unwrap_or(Value::Null);
        if !status.is_success() || !answer["access_token"].is_string() {
            return Err(Error::Auth(AuthError::token(format!(
                "the token endpoint {endpoint} refused the request (HTTP {status}: {}){}",
                oauth_error(&answer, &bytes),
                token_error_hint(answer["error"].as_str().unwrap_or_default())
            ))));
        }
        Ok(answer)
    }

    /// Enterprise-Managed Authorization: the user's ID token exchanged at the identity provider (`idp`: its token
    /// endpoint, this client's id there, the ID token) for an identity assertion grant for this authorization server
    /// and resource, which the JWT bearer grant then takes.
    pub(super) async fn enterprise(
        &self,
        http: &reqwest::Client,
        found: &Found,
        registration: &Registration,
        idp: (&str, &str, &str),
        scopes: Vec<String>,
    ) -> Result<Tokens, Error> {
        let (token_endpoint, client_id, id_token) = idp;
        let idp = discovery::web_url(token_endpoint, "the identity provider's token endpoint")?;
        let audience = found.metadata.as_ref().and_then(|m| m.issuer.clone()).unwrap_or_else(|| found.issuer.clone());
        let mut params = vec![
            ("grant_type", "urn:ietf:params:oauth:grant-type:token-exchange".to_owned()),
            ("requested_token_type", "urn:ietf:params:oauth:token-type:id-jag".to_owned()),
            ("audience", audience),
            ("resource", found.resource.clone()),
            ("subject_token", id_token.to_owned()),
            ("subject_token_type", "urn:ietf:params:oauth:token-type:id_token".to_owned()),
        ];
        if !scopes.is_empty() {
            params.push(("scope", scopes.join(" ")));
        }
        let idp_client = Registration::new(client_id);
        let answer = self.form_post(http, &idp, params, &idp_client, ClientAuth::None, &found.issuer).await?;
        let Some(grant) = answer["access_token"].as_str() else {
            return Err(Error::Auth(AuthError::token(format!(
                "the identity provider's token exchange at {idp} gave no identity assertion grant"
            ))));
        };
        self.jwt_bearer(http, found, registration, grant.to_owned(), scopes).await
    }
}
