//! Finding the authorization server: the `WWW-Authenticate` challenge, the protected resource metadata (RFC 9728)
//! and the authorization server metadata (RFC 8414, OpenID Connect discovery), with the checks on each, and what
//! they lead to ([`Found`]).

use reqwest::header::HeaderMap;
use reqwest::Url;
use serde::Deserialize;

use super::super::{AuthError, Error};
use super::flow::Authorizer;

/// The longest metadata document read.
const METADATA_LIMIT: usize = 1024 * 1024;

/// What a `Bearer` challenge said.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct Challenge {
    pub(crate) resource_metadata: Option<String>,
    pub(crate) scope: Option<String>,
    pub(crate) error: Option<String>,
    /// Whether the server challenged with the `DPoP` scheme (RFC 9449 §7.1): it takes DPoP-bound tokens.
    pub(crate) dpop: bool,
}

impl Challenge {
    /// The challenge of the `Bearer` (or `DPoP`) scheme in a response's `WWW-Authenticate` headers.
    pub(crate) fn from_headers(headers: &HeaderMap) -> Challenge {
        let mut challenge = Challenge::default();
        for value in headers.get_all("www-authenticate") {
            let Ok(text) = value.to_str() else { continue };
            for (scheme, name, value) in auth_params(text) {
                if !scheme.eq_ignore_ascii_case("bearer") && !scheme.eq_ignore_ascii_case("dpop") {
                    continue;
                }
                challenge.dpop |= scheme.eq_ignore_ascii_case("dpop");
                let slot = match name.to_ascii_lowercase().as_str() {
                    "resource_metadata" => &mut challenge.resource_metadata,
                    "scope" => &mut challenge.scope,
                    "error" => &mut challenge.error,
                    _ => continue,
                };
                slot.get_or_insert(value);
            }
        }
        challenge
    }

    /// The scopes challenged, split.
    pub(crate) fn scopes(&self) -> Vec<String> {
        self.scope.as_deref().unwrap_or_default().split_whitespace().map(str::to_owned).collect()
    }
}

/// The auth-params of a `WWW-Authenticate` value (RFC 9110 §11.6.1), each with the scheme it belongs to.
fn auth_params(text: &str) -> Vec<(String, String, String)> {
    let bytes = text.as_bytes();
    let mut out = Vec::new();
    let mut scheme = String::new();
    let mut i = 0;
    let token_char = |b: u8| b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~/".contains(&b);
    while i < bytes.len() {
        while i < bytes.len() && (bytes[i] == b' ' || bytes[i] == b',' || bytes[i] == b'\t') {
            i += 1;
        }
        let start = i;
        while i < bytes.len() && token_char(bytes[i]) {
            i += 1;
        }
        if start == i {
            i += 1; // a stray byte
            continue;
        }
        let token = &text[start..i];
        let mut j = i;
        while j < bytes.len() && bytes[j] == b' ' {
            j += 1;
        }
        if j < bytes.len() && bytes[j] == b'=' {
            j += 1;
            while j < bytes.len() && bytes[j] == b' ' {
                j += 1;
            }
            let mut value = String::new();
            if j < bytes.len() && bytes[j] == b'"' {
                j += 1;
                let mut chars = text[j..].char_indices();
                let mut end = text.len() - j;
                while let Some((k, c)) = chars.next() {
                    match c {
                        '\\' => {
                            if let Some((_, escaped)) = chars.next() {
                                value.push(escaped);
                            }
                        }
                        '"' => {
                            end = k + 1;
                            break;
                        }
                        c => value.push(c),
                    }
                }
                j += end;
            } else {
                let begin = j;
                while j < bytes.len() && bytes[j] != b',' && bytes[j] != b' ' {
                    j += 1;
                }
                value.push_str(&text[begin..j]);
            }
            out.push((scheme.clone(), token.to_owned(), value));
            i = j;
        } else {
            // A token68 right after a scheme is not a parameter; any other bare token starts a new challenge.
            scheme = token.to_owned();
        }
    }
    out
}

/// Protected resource metadata (RFC 9728), the fields the client reads.
#[derive(Clone, Debug, Default, Deserialize)]
pub(crate) struct ResourceMetadata {
    #[serde(default)]
    pub(crate) resource: Option<String>,
    #[serde(default)]
    pub(crate) authorization_servers: Vec<String>,
    #[serde(default)]
    pub(crate) scopes_supported: Option<Vec<String>>,
    /// The DPoP algorithms the resource server validates proofs with (RFC 9728 §2): it takes DPoP-bound tokens.
    #[serde(default)]
    pub(crate) dpop_signing_alg_values_supported: Option<Vec<String>>,
    /// Whether it takes only DPoP-bound tokens (RFC 9728 §2).
    #[serde(default)]
    pub(crate) dpop_bound_access_tokens_required: bool,
}

/// Authorization server metadata (RFC 8414 / OpenID Connect discovery), the fields the client reads.
#[derive(Clone, Debug, Default, Deserialize)]
pub(crate) struct ServerMetadata {
    #[serde(default)]
    pub(crate) issuer: Option<String>,
    #[serde(default)]
    pub(crate) authorization_endpoint: Option<String>,
    #[serde(default)]
    pub(crate) token_endpoint: Option<String>,
    #[serde(default)]
    pub(crate) registration_endpoint: Option<String>,
    #[serde(default)]
    pub(crate) scopes_supported: Option<Vec<String>>,
    #[serde(default)]
    pub(crate) code_challenge_methods_supported: Option<Vec<String>>,
    #[serde(default)]
    pub(crate) token_endpoint_auth_methods_supported: Option<Vec<String>>,
    #[serde(default)]
    pub(crate) client_id_metadata_document_supported: bool,
    #[serde(default)]
    pub(crate) authorization_response_iss_parameter_supported: bool,
    #[serde(default)]
    pub(crate) dpop_signing_alg_values_supported: Option<Vec<String>>,
}

/// An `http` or `https` URL, or why not.
pub(crate) fn web_url(url: &str, what: &str) -> Result<Url, Error> {
    let parsed =
        Url::parse(url).map_err(|e| Error::Auth(AuthError::discovery(format!("{what} {url:?} is not a URL ({e})"))))?;
    if parsed.scheme() != "http" && parsed.scheme() != "https" {
        return Err(Error::Auth(AuthError::discovery(format!(
            "{what} {url:?} is not an http or https URL; the client follows no other scheme"
        ))));
    }
    Ok(parsed)
}

/// GETs a JSON document: `Ok(None)` when the server has none there (any status but 2xx).
async fn get_json<T: for<'de> Deserialize<'de>>(http: &reqwest::Client, url: &Url) -> Result<Option<T>, Error> {
    let response = match http.get(url.clone()).header("accept", "application/json").send().await {
        Ok(response) => response,
        Err(e) => {
            return Err(Error::Transport(super::super::TransportError::from_reqwest(
                format!("fetching the authorization metadata at {url}"),
                e,
            )))
        }
    };
    if !response.status().is_success() {
        return Ok(None);
    }
    let body = super::super::body::read_body(response, METADATA_LIMIT).await?;
    match serde_json::from_slice(&body) {
        Ok(document) => Ok(Some(document)),
        Err(e) => {
            tracing::debug!(%url, error = %e, "a metadata document that is not what it should be");
            Ok(None)
        }
    }
}

/// The protected resource metadata of `server`: from the challenge's URL, else the path-suffixed well-known URI,
/// else the root one; `None` when there is none (a 2025-03-26 server).
pub(crate) async fn resource_metadata(
    http: &reqwest::Client,
    server: &Url,
    challenge: &Challenge,
) -> Result<Option<ResourceMetadata>, Error> {
    if let Some(url) = &challenge.resource_metadata {
        let url = web_url(url, "the challenge's resource_metadata")?;
        if let Some(found) = get_json(http, &url).await? {
            return Ok(Some(found));
        }
    }
    let path = server.path().trim_end_matches('/');
    let mut candidates = Vec::new();
    if !path.is_empty() {
        candidates.push(format!("/.well-known/oauth-protected-resource{path}"));
    }
    candidates.push("/.well-known/oauth-protected-resource".to_owned());
    for candidate in candidates {
        let mut url = server.clone();
        url.set_path(&candidate);
        url.set_query(None);
        url.set_fragment(None);
        if let Some(found) = get_json(http, &url).await? {
            return Ok(Some(found));
        }
    }
    Ok(None)
}

/// Whether the protected resource metadata's `resource` names this server: the same origin, and a path that is the
/// server's or one of its parents (segment by segment).
pub(crate) fn resource_matches(server: &Url, resource: &str) -> bool {
    let Ok(resource) = Url::parse(resource) else { return false };
    if resource.scheme() != server.scheme()
        || resource.host_str() != server.host_str()
        || resource.port_or_known_default() != server.port_or_known_default()
        || resource.fragment().is_some()
    {
        return false;
    }
    let theirs = resource.path().trim_end_matches('/');
    let ours = server.path().trim_end_matches('/');
    ours == theirs || ours.starts_with(&format!("{theirs}/"))
}

/// The authorization server metadata of `issuer`, tried in the specification's order (for an issuer with a path:
/// RFC 8414 with the path appended, OpenID Connect with the path appended, OpenID Connect with the path prefixed;
/// without: RFC 8414, then OpenID Connect). A document whose `issuer` is not `issuer`, exactly, is refused.
pub(crate) async fn server_metadata(http: &reqwest::Client, issuer: &str) -> Result<Option<ServerMetadata>, Error> {
    let base = web_url(issuer, "the authorization server")?;
    let path = base.path().trim_end_matches('/').to_owned();
    let candidates = if path.is_empty() {
        vec!["/.well-known/oauth-authorization-server".to_owned(), "/.well-known/openid-configuration".to_owned()]
    } else {
        vec![
            format!("/.well-known/oauth-authorization-server{path}"),
            format!("/.well-known/openid-configuration{path}"),
            format!("{path}/.well-known/openid-configuration"),
        ]
    };
    for candidate in candidates {
        let mut url = base.clone();
        url.set_path(&candidate);
        url.set_query(None);
        url.set_fragment(None);
        let Some(metadata) = get_json::<ServerMetadata>(http, &url).await? else { continue };
        if metadata.issuer.as_deref() != Some(issuer) {
            return Err(Error::Auth(AuthError::discovery(format!(
                "the authorization server metadata at {url} names the issuer {:?}, not {issuer:?}, the one it was \
                 fetched for: the client does not use it (RFC 8414 §3.3); the authorization server must publish its \
                 own issuer identifier, exactly",
                metadata.issuer.as_deref().unwrap_or("(none)")
            ))));
        }
        return Ok(Some(metadata));
    }
    Ok(None)
}

/// Where the authorization server takes each request.
pub(super) struct Endpoints {
    pub(super) authorization: Url,
    pub(super) token: Url,
    pub(super) registration: Option<Url>,
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

impl Authorizer {
    /// The protected resource metadata, its checks, and the authorization server's metadata.
    pub(super) async fn discover(&self, http: &reqwest::Client, challenge: &Challenge) -> Result<Found, Error> {
        let prm = resource_metadata(http, &self.server, challenge).await?;
        let origin = self.server.origin().ascii_serialization();
        let Some(prm) = prm else {
            // 2025-03-26: no protected resource metadata; the server's origin is the authorization server.
            let metadata = server_metadata(http, &origin).await?;
            let endpoints = match &metadata {
                Some(metadata) => endpoints(metadata, &origin)?,
                None => Endpoints {
                    authorization: web_url(&format!("{origin}/authorize"), "the default endpoint")?,
                    token: web_url(&format!("{origin}/token"), "the default endpoint")?,
                    registration: Some(web_url(&format!("{origin}/register"), "the default endpoint")?),
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
            Some(resource) if resource_matches(&self.server, &resource) => resource,
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
        web_url(&issuer, "the authorization server")?;
        let Some(metadata) = server_metadata(http, &issuer).await? else {
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
}

/// The endpoints a metadata document gives, each an `http` or `https` URL.
fn endpoints(metadata: &ServerMetadata, issuer: &str) -> Result<Endpoints, Error> {
    let required = |field: &Option<String>, name: &str| match field {
        Some(url) => web_url(url, name),
        None => Err(Error::Auth(AuthError::discovery(format!(
            "the authorization server metadata of {issuer} has no {name}"
        )))),
    };
    let token = required(&metadata.token_endpoint, "token_endpoint")?;
    Ok(Endpoints {
        // A server for machine clients only (client credentials, JWT bearer) may have no authorization endpoint;
        // then the token endpoint stands in for it, unused.
        authorization: match &metadata.authorization_endpoint {
            Some(url) => web_url(url, "authorization_endpoint")?,
            None => token.clone(),
        },
        token,
        registration: match &metadata.registration_endpoint {
            Some(url) => Some(web_url(url, "registration_endpoint")?),
            None => None,
        },
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn headers(value: &str) -> HeaderMap {
        let mut map = HeaderMap::new();
        map.insert("www-authenticate", value.parse().unwrap());
        map
    }

    #[test]
    fn challenges_are_read_with_quotes_and_escapes() {
        let c = Challenge::from_headers(&headers(
            r#"Bearer error="insufficient_scope", scope="a b", resource_metadata="http://x/.well-known/o?a=\"1\"""#,
        ));
        assert_eq!(c.error.as_deref(), Some("insufficient_scope"));
        assert_eq!(c.scopes(), ["a", "b"]);
        assert_eq!(c.resource_metadata.as_deref(), Some(r#"http://x/.well-known/o?a="1""#));
        let other = Challenge::from_headers(&headers(r#"Basic realm="x", Bearer scope=read"#));
        assert_eq!(other.scope.as_deref(), Some("read"));
        assert_eq!(Challenge::from_headers(&headers(r#"Basic realm="x", scope="no""#)).scope, None);
    }

    #[test]
    fn the_resource_must_be_this_server_or_a_parent() {
        let server = Url::parse("http://localhost:3000/mcp").unwrap();
        assert!(resource_matches(&server, "http://localhost:3000/mcp"));
        assert!(resource_matches(&server, "http://localhost:3000"));
        assert!(resource_matches(&server, "http://localhost:3000/"));
        assert!(!resource_matches(&server, "https://evil.example.com/mcp"));
        assert!(!resource_matches(&server, "http://localhost:3001/mcp"));
        assert!(!resource_matches(&server, "http://localhost:3000/mc"));
        assert!(!resource_matches(&server, "http://localhost:3000/mcp/other"));
    }
}
