//! The token endpoint: how the client authenticates there, the requests oauth2 builds (sent with the resource, the
//! `private_key_jwt` assertion and DPoP proofs), the refresh token grant, and the tokens and errors of the answers.

use std::sync::Arc;
use std::time::{SystemTime, UNIX_EPOCH};

use oauth2::basic::{BasicClient, BasicTokenResponse};
use oauth2::{
    AuthType, AuthUrl, ClientId, ClientSecret, RedirectUrl, RefreshToken, RequestTokenError, TokenResponse, TokenUrl,
};
use reqwest::{StatusCode, Url};
use serde_json::Value;

use super::discovery::{Found, ServerMetadata};
use super::dpop::Dpop;
use super::flow::Authorizer;
use super::{jwt, Grant, Registration, Tokens};
use crate::base::future::BoxFuture;
use crate::client::{AuthError, Error, TransportError};

/// The longest answer of an authorization server read (a token response, a registration).
pub(super) const RESPONSE_LIMIT: usize = 1024 * 1024;

/// How the client authenticates at the token endpoint.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum ClientAuth {
    Basic,
    Post,
    None,
    PrivateKeyJwt,
}

impl Authorizer {
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

    /// A refresh token grant, with the same resource.
    pub(super) async fn refresh(
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
    fn assertion(&self, registration: &Registration, found: &Found) -> Result<Vec<(&'static str, String)>, Error> {
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
type TokenRequestError = RequestTokenError<Error, oauth2::basic::BasicErrorResponse>;

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

/// The `error` and `error_description` of an OAuth error body, or the start of the body.
pub(super) fn oauth_error(answer: &Value, bytes: &[u8]) -> String {
    match (answer["error"].as_str(), answer["error_description"].as_str()) {
        (Some(error), Some(description)) => format!("{error}: {description}"),
        (Some(error), None) => error.to_owned(),
        _ => String::from_utf8_lossy(&bytes[..bytes.len().min(512)]).trim().to_owned(),
    }
}

/// Tokens from a token response.
fn tokens(response: &BasicTokenResponse, scopes: Vec<String>, issuer: &str, old_refresh: Option<&str>) -> Tokens {
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

/// Why a token request failed.
fn token_error(endpoint: &Url, error: TokenRequestError) -> Error {
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
type Sender = Box<dyn Fn(oauth2::HttpRequest) -> BoxFuture<'static, Result<oauth2::HttpResponse, Error>> + Send + Sync>;

/// oauth2's HTTP client, over the transport's reqwest client; with a DPoP key, each request carries a proof, and a
/// `use_dpop_nonce` answer (RFC 9449 §8) is sent once more with the nonce it gave.
fn sender(http: &reqwest::Client, dpop: Option<Arc<Dpop>>) -> Sender {
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
                let body = crate::client::body::read_body(response, RESPONSE_LIMIT).await?;
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
    use super::{Authorizer, ClientAuth};
    use crate::client::auth::discovery::ServerMetadata;
    use crate::client::auth::{OAuth, Registration};

    #[test]
    fn the_token_endpoint_method_is_the_registered_one_else_the_best_supported() {
        let user = OAuth::new("http://127.0.0.1:1/callback", |_| async { Err("no user here".into()) });
        let a = Authorizer::new(user, "http://localhost:3000/mcp").unwrap();
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
