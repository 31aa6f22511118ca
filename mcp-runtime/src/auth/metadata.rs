//! What the server fetches from an authorization server: its metadata (RFC 8414, else OpenID Connect discovery) and
//! the documents it names. Fetches have a deadline, follow no redirect, and read at most [`MAX_DOCUMENT`] bytes;
//! the request carries no token of a client.

use std::time::Duration;

use serde_json::Value;

/// The longest document read from an issuer.
const MAX_DOCUMENT: usize = 1 << 20;
/// How long one fetch may take.
const FETCH_TIMEOUT: Duration = Duration::from_secs(10);

/// The HTTP client of the server's fetches.
#[derive(Clone)]
pub(crate) struct Fetcher {
    http: reqwest::Client,
}

impl Fetcher {
    pub(crate) fn new() -> Result<Fetcher, String> {
        let http = reqwest::Client::builder()
            .timeout(FETCH_TIMEOUT)
            .connect_timeout(FETCH_TIMEOUT)
            .redirect(reqwest::redirect::Policy::none())
            .build()
            .map_err(|e| format!("could not make the HTTP client that fetches the issuer's keys: {e}"))?;
        Ok(Fetcher { http })
    }

    pub(crate) fn client(&self) -> &reqwest::Client {
        &self.http
    }

    /// GETs a JSON document.
    pub(crate) async fn get_json(&self, url: &str) -> Result<Value, String> {
        let response = self
            .http
            .get(url)
            .header(reqwest::header::ACCEPT, "application/json")
            .send()
            .await
            .map_err(|e| format!("GET {url} failed: {}", chain(&e)))?;
        read_json(url, response).await
    }
}

/// Reads a JSON answer of at most [`MAX_DOCUMENT`] bytes; a status other than 200 is an error naming it.
pub(crate) async fn read_json(url: &str, mut response: reqwest::Response) -> Result<Value, String> {
    let status = response.status();
    if !status.is_success() {
        return Err(format!("{url} answered {status}"));
    }
    let mut body = Vec::new();
    while let Some(chunk) = response.chunk().await.map_err(|e| format!("reading {url} failed: {}", chain(&e)))? {
        if body.len() + chunk.len() > MAX_DOCUMENT {
            return Err(format!("{url} sent more than {MAX_DOCUMENT} bytes"));
        }
        body.extend_from_slice(&chunk);
    }
    serde_json::from_slice(&body).map_err(|e| format!("{url} did not send JSON: {e}"))
}

/// An error with its sources, for a log line.
fn chain(e: &dyn std::error::Error) -> String {
    let mut text = e.to_string();
    let mut source = e.source();
    while let Some(s) = source {
        text.push_str(": ");
        text.push_str(&s.to_string());
        source = s.source();
    }
    text
}

/// The metadata documents of `issuer`, in the order they are tried: RFC 8414 (the well-known suffix inserted before
/// the issuer's path), then OpenID Connect discovery (inserted, then appended).
pub(crate) fn metadata_urls(issuer: &str) -> Vec<String> {
    let Ok(url) = super::parse_url(issuer, "the issuer") else { return Vec::new() };
    let path = url.path.trim_end_matches('/');
    if path.is_empty() {
        return vec![
            format!("{}/.well-known/oauth-authorization-server", url.origin),
            format!("{}/.well-known/openid-configuration", url.origin),
        ];
    }
    vec![
        format!("{}/.well-known/oauth-authorization-server{path}", url.origin),
        format!("{}/.well-known/openid-configuration{path}", url.origin),
        format!("{}{path}/.well-known/openid-configuration", url.origin),
    ]
}

/// The issuer's metadata: the first document found, whose `issuer` must be exactly the one asked for.
pub(crate) async fn discover(fetcher: &Fetcher, issuer: &str) -> Result<Value, String> {
    let mut tried = Vec::new();
    for url in metadata_urls(issuer) {
        match fetcher.get_json(&url).await {
            Ok(metadata) => {
                let named = metadata.get("issuer").and_then(Value::as_str);
                if named != Some(issuer) {
                    return Err(format!(
                        "the metadata at {url} names the issuer {}, not {issuer}: refused (RFC 8414 §3.3)",
                        named.map_or("(none)".to_owned(), |n| format!("`{n}`"))
                    ));
                }
                return Ok(metadata);
            }
            Err(e) => tried.push(e),
        }
    }
    Err(format!("no metadata found for the issuer {issuer}: {}", tried.join("; ")))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn metadata_is_looked_for_in_the_specified_order() {
        assert_eq!(
            metadata_urls("https://as.example.com"),
            [
                "https://as.example.com/.well-known/oauth-authorization-server",
                "https://as.example.com/.well-known/openid-configuration"
            ]
        );
        assert_eq!(
            metadata_urls("https://as.example.com/tenant/1"),
            [
                "https://as.example.com/.well-known/oauth-authorization-server/tenant/1",
                "https://as.example.com/.well-known/openid-configuration/tenant/1",
                "https://as.example.com/tenant/1/.well-known/openid-configuration"
            ]
        );
    }
}
