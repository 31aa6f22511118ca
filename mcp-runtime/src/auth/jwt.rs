//! JWT access tokens (RFC 9068) verified against the issuer's published keys: the issuer's metadata (RFC 8414, else
//! OpenID Connect discovery) names its `jwks_uri`; the key set is cached, fetched again when a token names a key
//! it does not hold (at most once per cooldown, so a flood of made-up `kid`s cannot make the server hammer the
//! issuer) and when it is older than [`KEYS_MAX_AGE`]. Signatures are checked by `jsonwebtoken` (its pure-Rust
//! backend); only asymmetric algorithms are accepted, never `none` or an HMAC one.

use std::sync::{Arc, RwLock};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use base64::Engine;
use jsonwebtoken::jwk::{AlgorithmParameters, JwkSet, PublicKeyUse};
use jsonwebtoken::{Algorithm, DecodingKey, Validation};
use serde_json::Value;

use super::algorithms::ALGORITHMS;
use super::cache::TokenCache;
use super::metadata::{self, Fetcher};
use super::{AuthInfo, TokenError, TokenVerifier};
use crate::base::future::BoxFuture;
use crate::base::sync::UnpoisonedRw;

/// How long a key set is used before it is fetched again (so a key the issuer withdrew stops being accepted).
pub const KEYS_MAX_AGE: Duration = Duration::from_secs(15 * 60);
/// While no key set could be fetched at all, how long to wait before trying again.
const FIRST_FETCH_RETRY: Duration = Duration::from_secs(1);
/// How long a verified token is remembered (never past its `exp`): a client sends the same token on every call,
/// and a signature check costs tens of microseconds where a digest and a lookup cost one or two.
pub const VERIFIED_TTL: Duration = Duration::from_secs(60);

/// Verifies JWT access tokens from trusted issuers for one resource. [`Authorization::jwt`](super::Authorization::jwt)
/// makes one; build it yourself to wrap it in a [`TokenVerifier`] of your own (extra claim checks).
#[derive(Clone)]
pub struct JwtVerifier {
    inner: Arc<Inner>,
}

struct Inner {
    issuers: Vec<Issuer>,
    resource: String,
    leeway: Duration,
    cooldown: Duration,
    fetcher: Fetcher,
    /// Tokens verified lately, with until when they may be taken as verified.
    verified: TokenCache<Arc<AuthInfo>>,
}

/// One trusted issuer and what is known of its keys.
struct Issuer {
    issuer: String,
    keys: RwLock<Arc<KeySet>>,
    /// Held while fetching, so concurrent requests with an unknown key fetch once.
    fetching: tokio::sync::Mutex<Option<Instant>>,
}

#[derive(Default)]
struct KeySet {
    jwks_uri: Option<String>,
    keys: Vec<Key>,
    fetched: Option<Instant>,
}

struct Key {
    kid: Option<String>,
    /// The algorithm the key set says this key is for, if it says.
    alg: Option<String>,
    family: Family,
    key: DecodingKey,
}

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Family {
    Rsa,
    Ec,
    Ed,
}

impl Family {
    fn of(alg: Algorithm) -> Option<Family> {
        match alg {
            Algorithm::RS256
            | Algorithm::RS384
            | Algorithm::RS512
            | Algorithm::PS256
            | Algorithm::PS384
            | Algorithm::PS512 => Some(Family::Rsa),
            Algorithm::ES256 | Algorithm::ES384 => Some(Family::Ec),
            Algorithm::EdDSA => Some(Family::Ed),
            _ => None,
        }
    }
}

impl JwtVerifier {
    /// Accepts tokens from `issuer` whose audience names `resource`, with a 30 s leeway and a 30 s cooldown.
    pub fn new(issuer: impl Into<String>, resource: impl Into<String>) -> Result<JwtVerifier, String> {
        let issuer = issuer.into();
        super::parse_url(&issuer, "the issuer")?;
        JwtVerifier::with(&[issuer], &resource.into(), Duration::from_secs(30), Duration::from_secs(30))
    }

    pub(crate) fn with(
        issuers: &[String],
        resource: &str,
        leeway: Duration,
        cooldown: Duration,
    ) -> Result<JwtVerifier, String> {
        let issuers = issuers
            .iter()
            .map(|issuer| Issuer {
                issuer: issuer.clone(),
                keys: RwLock::new(Arc::new(KeySet::default())),
                fetching: tokio::sync::Mutex::new(None),
            })
            .collect();
        Ok(JwtVerifier {
            inner: Arc::new(Inner {
                issuers,
                resource: resource.to_owned(),
                leeway: leeway.min(super::MAX_LEEWAY),
                cooldown: cooldown.min(super::MAX_JWKS_COOLDOWN),
                fetcher: Fetcher::new()?,
                verified: TokenCache::new(),
            }),
        })
    }

    async fn check(&self, token: &str) -> Result<Arc<AuthInfo>, TokenError> {
        if let Some(auth) = self.inner.verified.get(token) {
            return Ok(auth);
        }
        let auth = Arc::new(self.check_uncached(token).await?);
        let left = auth.expires_at.map_or(Duration::ZERO, |exp| {
            let now = SystemTime::now().duration_since(UNIX_EPOCH).unwrap_or_default();
            Duration::from_secs(exp).saturating_sub(now)
        });
        self.inner.verified.put(token, left.min(VERIFIED_TTL), auth.clone());
        Ok(auth)
    }

    async fn check_uncached(&self, token: &str) -> Result<AuthInfo, TokenError> {
        let invalid = |why: String| Err(TokenError::Invalid(why));
        let header = match jsonwebtoken::decode_header(token) {
            Ok(h) => h,
            Err(e) => return invalid(format!("not a well-formed JWT ({e}); `alg: none` is never accepted")),
        };
        let Some(family) = Family::of(header.alg).filter(|_| ALGORITHMS.contains(&header.alg)) else {
            return invalid(format!("signed with {:?}, which is not accepted (only RSA, ECDSA and EdDSA)", header.alg));
        };
        if let Some(typ) = &header.typ {
            if !["at+jwt", "application/at+jwt", "jwt"].iter().any(|t| typ.eq_ignore_ascii_case(t)) {
                return invalid(format!("its type is `{typ}`, not an access token (at+jwt)"));
            }
        }
        let Some(claimed) = unverified_issuer(token) else {
            return invalid("it has no `iss` claim".into());
        };
        let Some(issuer) = self.inner.issuers.iter().find(|i| i.issuer == claimed) else {
            return invalid(format!("issued by `{claimed}`, which this server does not trust"));
        };
        let mut refreshed = false;
        loop {
            let keys = issuer.keys.read_locked().clone();
            let stale = keys.fetched.is_none_or(|at| at.elapsed() > KEYS_MAX_AGE);
            let candidates: Vec<&Key> = keys
                .keys
                .iter()
                .filter(|k| k.family == family)
                .filter(|k| header.kid.is_none() || k.kid == header.kid)
                .filter(|k| k.alg.as_deref().is_none_or(|a| a == format!("{:?}", header.alg)))
                .collect();
            if (candidates.is_empty() || stale) && !refreshed {
                refreshed = true;
                if self.refresh(issuer).await? {
                    continue;
                }
            }
            if candidates.is_empty() {
                return invalid(match &header.kid {
                    Some(kid) => format!("signed with a key (kid `{kid}`) that its issuer does not publish"),
                    None => "signed with no `kid`, and its issuer publishes no key for its algorithm".into(),
                });
            }
            let mut last = None;
            for key in candidates {
                match self.validate(token, header.alg, &key.key, &claimed) {
                    Ok(claims) => return claims_to_auth(claims, &claimed),
                    Err(e) => last = Some(e),
                }
            }
            return Err(last.unwrap_or_else(|| TokenError::Invalid("no key verified it".into())));
        }
    }

    fn validate(&self, token: &str, alg: Algorithm, key: &DecodingKey, issuer: &str) -> Result<Value, TokenError> {
        let mut validation = Validation::new(alg);
        validation.algorithms = vec![alg];
        validation.set_issuer(&[issuer]);
        validation.set_audience(&[&self.inner.resource]);
        validation.set_required_spec_claims(&["exp", "iss", "aud"]);
        validation.leeway = self.inner.leeway.as_secs();
        validation.validate_nbf = true;
        use jsonwebtoken::errors::ErrorKind as K;
        jsonwebtoken::decode::<Value>(token, key, &validation).map(|data| data.claims).map_err(|e| {
            TokenError::Invalid(match e.kind() {
                K::ExpiredSignature => "it has expired".into(),
                K::ImmatureSignature => "it is not valid yet (nbf)".into(),
                K::InvalidAudience => {
                    format!("it is for another resource: its audience does not name {}", self.inner.resource)
                }
                K::InvalidIssuer => "its issuer does not match".into(),
                K::InvalidSignature => "its signature does not verify".into(),
                K::MissingRequiredClaim(claim) => format!("it has no `{claim}` claim"),
                K::InvalidAlgorithm => "its algorithm does not match its key".into(),
                other => format!("it does not verify ({other:?})"),
            })
        })
    }

    /// Fetches the issuer's key set, unless another request did within the cooldown; whether it fetched one.
    async fn refresh(&self, issuer: &Issuer) -> Result<bool, TokenError> {
        let mut last = issuer.fetching.lock().await;
        let current = issuer.keys.read_locked().clone();
        let wait =
            if current.keys.is_empty() { FIRST_FETCH_RETRY.min(self.inner.cooldown) } else { self.inner.cooldown };
        if last.is_some_and(|at| at.elapsed() < wait) {
            // Fetched (or tried) a moment ago: what it found is what there is.
            return Ok(current.fetched.is_some_and(|at| last.is_some_and(|l| at >= l)));
        }
        *last = Some(Instant::now());
        let fetched = self.fetch(issuer, current.jwks_uri.clone()).await;
        match fetched {
            Ok(set) => {
                *issuer.keys.write_locked() = Arc::new(set);
                // A key the issuer withdrew no longer vouches for the tokens it signed.
                self.inner.verified.clear();
                Ok(true)
            }
            Err(why) if current.keys.is_empty() => Err(TokenError::Unavailable(why)),
            Err(why) => {
                tracing::warn!(issuer = %issuer.issuer, reason = %why, "could not fetch the issuer's keys again; keeping the ones held");
                Ok(false)
            }
        }
    }

    async fn fetch(&self, issuer: &Issuer, known_uri: Option<String>) -> Result<KeySet, String> {
        let fetcher = &self.inner.fetcher;
        let jwks_uri = match known_uri {
            Some(uri) => uri,
            None => {
                let metadata = metadata::discover(fetcher, &issuer.issuer).await?;
                let Some(uri) = metadata.get("jwks_uri").and_then(Value::as_str) else {
                    return Err(format!("the metadata of `{}` names no jwks_uri", issuer.issuer));
                };
                super::parse_url(uri, "the issuer's jwks_uri")?;
                uri.to_owned()
            }
        };
        let set: JwkSet = serde_json::from_value(fetcher.get_json(&jwks_uri).await?)
            .map_err(|e| format!("the key set at {jwks_uri} is not a JWK set: {e}"))?;
        let keys = set
            .keys
            .iter()
            .filter(|jwk| !matches!(jwk.common.public_key_use, Some(PublicKeyUse::Encryption)))
            .filter_map(|jwk| {
                let family = match &jwk.algorithm {
                    AlgorithmParameters::RSA(_) => Family::Rsa,
                    AlgorithmParameters::EllipticCurve(_) => Family::Ec,
                    AlgorithmParameters::OctetKeyPair(_) => Family::Ed,
                    // A symmetric key is never a verification key of a resource server.
                    AlgorithmParameters::OctetKey(_) => return None,
                };
                let key = DecodingKey::from_jwk(jwk).ok()?;
                let alg = jwk.common.key_algorithm.map(|a| format!("{a:?}"));
                Some(Key { kid: jwk.common.key_id.clone(), alg, family, key })
            })
            .collect();
        tracing::debug!(issuer = %issuer.issuer, uri = %jwks_uri, "fetched the issuer's keys");
        Ok(KeySet { jwks_uri: Some(jwks_uri), keys, fetched: Some(Instant::now()) })
    }
}

impl TokenVerifier for JwtVerifier {
    fn verify<'a>(&'a self, token: &'a str) -> BoxFuture<'a, Result<AuthInfo, TokenError>> {
        Box::pin(async move { self.check(token).await.map(Arc::unwrap_or_clone) })
    }

    fn verify_shared<'a>(&'a self, token: &'a str) -> BoxFuture<'a, Result<Arc<AuthInfo>, TokenError>> {
        Box::pin(self.check(token))
    }
}

/// The `iss` of a token, read before its signature is checked (to pick whose keys check it).
fn unverified_issuer(token: &str) -> Option<String> {
    let payload = token.split('.').nth(1)?;
    let bytes = base64::engine::general_purpose::URL_SAFE_NO_PAD.decode(payload.trim_end_matches('=')).ok()?;
    let claims: Value = serde_json::from_slice(&bytes).ok()?;
    claims.get("iss")?.as_str().map(str::to_owned)
}

/// The principal of verified claims: `sub` (else `client_id`), scopes from `scope` (space-separated) or `scp`.
fn claims_to_auth(claims: Value, issuer: &str) -> Result<AuthInfo, TokenError> {
    // A token bound to a key (DPoP, RFC 9449 §6, its `cnf.jkt`) is verified here like any other; whether the
    // request proves that key is the guard's check (`Guard::admit`), the same for every verifier.
    let text = |name: &str| claims.get(name).and_then(Value::as_str).map(str::to_owned);
    let client_id = text("client_id").or_else(|| text("azp"));
    let Some(subject) = text("sub").or_else(|| client_id.clone()) else {
        return Err(TokenError::Invalid("it has neither a `sub` nor a `client_id` claim".into()));
    };
    let scopes = match (claims.get("scope"), claims.get("scp")) {
        (Some(Value::String(s)), _) | (None, Some(Value::String(s))) => {
            s.split(' ').filter(|s| !s.is_empty()).map(str::to_owned).collect()
        }
        (None, Some(Value::Array(list))) => list.iter().filter_map(Value::as_str).map(str::to_owned).collect(),
        _ => Vec::new(),
    };
    let expires_at = claims.get("exp").and_then(Value::as_u64);
    Ok(AuthInfo { subject, scopes, issuer: Some(issuer.to_owned()), client_id, expires_at, claims })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn scopes_come_from_scope_or_scp() {
        let auth = claims_to_auth(json!({"sub": "ada", "scope": "a b"}), "https://as").unwrap();
        assert_eq!((auth.subject.as_str(), auth.scopes.clone()), ("ada", vec!["a".to_owned(), "b".to_owned()]));
        let auth = claims_to_auth(json!({"client_id": "svc", "scp": ["x"]}), "https://as").unwrap();
        assert_eq!(
            (auth.subject.as_str(), auth.client_id.as_deref(), auth.scopes),
            ("svc", Some("svc"), vec!["x".to_owned()])
        );
        assert!(claims_to_auth(json!({"scope": "a"}), "https://as").is_err());
    }

    #[test]
    fn hmac_and_none_are_never_accepted() {
        assert_eq!(Family::of(Algorithm::HS256), None);
    }

    #[test]
    fn the_unverified_issuer_is_read_from_the_payload() {
        let payload = base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(br#"{"iss":"https://as"}"#);
        assert_eq!(unverified_issuer(&format!("e30.{payload}.sig")).as_deref(), Some("https://as"));
        assert_eq!(unverified_issuer("e30.e30.sig"), None);
    }
}
