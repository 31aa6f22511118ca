//! The authorization code grant with PKCE: the user's part through the callback, the checks of the redirect
//! (`state`, RFC 9207 `iss`), and the code's exchange.

use oauth2::{AuthorizationCode, CsrfToken, PkceCodeChallenge, Scope};
use reqwest::Url;

use super::discovery::Found;
use super::flow::Authorizer;
use super::{Registration, Tokens};
use crate::client::{AuthError, Error};

impl Authorizer {
    /// The authorization code flow with PKCE: the user's part through the callback, then the token request.
    pub(super) async fn authorize(
        &self,
        http: &reqwest::Client,
        found: &Found,
        registration: &Registration,
        scopes: Vec<String>,
    ) -> Result<Tokens, Error> {
        check_server(found)?;
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
        let code = code_of(&landed, &state, found)?;
        let exchange = client.exchange_code(AuthorizationCode::new(code)).set_pkce_verifier(verifier);
        self.token_request(http, found, registration, exchange, scopes, None).await
    }
}

/// Whether the authorization server can take the user's authorization: it supports PKCE with S256, and has an
/// authorization endpoint (when its metadata says).
fn check_server(found: &Found) -> Result<(), Error> {
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
    Ok(())
}

/// The code of the redirect the browser `landed` on, once checked: no error, the `state` sent, the issuer asked.
fn code_of(landed: &Url, state: &CsrfToken, found: &Found) -> Result<String, Error> {
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
    Ok(code)
}
