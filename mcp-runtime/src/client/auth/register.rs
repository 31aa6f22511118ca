//! How the client is known to an authorization server: credentials stored for its issuer, pre-registered ones, a
//! Client ID Metadata Document, or dynamic client registration (RFC 7591).

use reqwest::Url;
use serde_json::{json, Value};

use super::discovery::Found;
use super::flow::Authorizer;
use super::token::{oauth_error, RESPONSE_LIMIT};
use super::Registration;
use crate::base::sync::Unpoisoned;
use crate::client::{AuthError, Error, TransportError};

impl Authorizer {
    /// How the client is known to this issuer: stored, pre-registered, a Client ID Metadata Document, or registered
    /// now (RFC 7591).
    pub(super) async fn register(&self, http: &reqwest::Client, found: &Found) -> Result<Registration, Error> {
        let store = &self.config.store;
        if let Some(registration) = store.registration(&found.issuer) {
            return Ok(registration);
        }
        if let Some(registration) = self.preregistered(found) {
            store.save_registration(&found.issuer, registration.clone());
            return Ok(registration);
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
        let registration = self.register_at(http, endpoint).await?;
        store.save_registration(&found.issuer, registration.clone());
        Ok(registration)
    }

    /// The pre-registered credentials, if they are for this issuer (the one they name, else the first one they were
    /// used with).
    fn preregistered(&self, found: &Found) -> Option<Registration> {
        let pre = self.config.preregistered.as_ref().filter(|p| !p.client_id.is_empty())?;
        let mine = match &pre.issuer {
            Some(issuer) => *issuer == found.issuer,
            None => {
                let mut bound = self.bound.locked();
                let first = bound.get_or_insert_with(|| found.issuer.clone());
                *first == found.issuer
            }
        };
        mine.then(|| Registration {
            client_id: pre.client_id.clone(),
            client_secret: pre.client_secret.clone(),
            token_endpoint_auth_method: None,
        })
    }

    /// Dynamic client registration (RFC 7591) at `endpoint`: the client as the server knows it now.
    async fn register_at(&self, http: &reqwest::Client, endpoint: &Url) -> Result<Registration, Error> {
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
        let bytes = crate::client::body::read_body(response, RESPONSE_LIMIT).await?;
        let answer: Value = serde_json::from_slice(&bytes).unwrap_or(Value::Null);
        let Some(client_id) = answer["client_id"].as_str().filter(|_| status.is_success()) else {
            return Err(Error::Auth(AuthError::registration(format!(
                "dynamic client registration at {endpoint} failed (HTTP {status}): {}",
                oauth_error(&answer, &bytes)
            ))));
        };
        Ok(Registration {
            client_id: client_id.to_owned(),
            client_secret: answer["client_secret"].as_str().map(str::to_owned),
            token_endpoint_auth_method: answer["token_endpoint_auth_method"].as_str().map(str::to_owned),
        })
    }
}
