//! DPoP (RFC 9449) on the resource server: the proof a request with `Authorization: DPoP <token>` carries in its
//! `DPoP` header. A proof is a JWT of type `dpop+jwt`, signed with an asymmetric algorithm of the allow-list by the
//! public key in its own header (`jwk`); it names the request's method (`htm`) and URL (`htu`, compared after the
//! normalization of RFC 3986 §6.2.2 and §6.2.3, without query and fragment), when it was made (`iat`, within the
//! leeway of now), a unique `jti` (kept for the acceptance window, so a proof is used once) and the hash of the
//! access token (`ath`); the token's `cnf.jkt` must be the RFC 7638 thumbprint of that key. Signatures and
//! thumbprints are computed by `jsonwebtoken`; no server nonce is asked for (`DPoP-Nonce` is never sent).

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use base64::Engine;
use jsonwebtoken::jwk::{AlgorithmParameters, EllipticCurve, Jwk, ThumbprintHash};
use jsonwebtoken::{DecodingKey, Validation};
use serde_json::Value;
use sha2::{Digest, Sha256};

use super::algorithms::{ALGORITHMS, ALGORITHM_NAMES};
use crate::base::sync::Unpoisoned;

/// The most `jti`s remembered at once; past it (a flood of valid proofs within one window) a proof is answered
/// `503` rather than accepted unchecked.
const SEEN_ENTRIES: usize = 200_000;
/// The longest `jti` taken.
const MAX_JTI: usize = 256;
/// The shortest acceptance window of a proof's `iat`, whatever the leeway: a proof made a moment ago on a clock a
/// second off must pass, even where the leeway of token lifetimes is zero.
pub(crate) const MIN_WINDOW: Duration = Duration::from_secs(5);

/// Why a proof was refused.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum ProofError {
    /// `invalid_dpop_proof`: the proof is missing, malformed, badly signed, stale, replayed, or for another
    /// request or token.
    Invalid(String),
    /// `invalid_token`: the proof is good but its key is not the one the token is bound to.
    Binding,
    /// Too many proofs within one window to remember them all.
    Full,
}

/// The checker of one server's proofs, with the `jti`s it has seen.
pub(crate) struct Proofs {
    /// The resource's origin, normalized (`https://books.example.com`).
    origin: String,
    /// The resource's path, normalized.
    resource_path: String,
    /// How far `iat` may be from now.
    window: Duration,
    /// SHA-256 of each `jti` seen, with when it leaves the window (seconds since the epoch).
    seen: Mutex<HashMap<[u8; 32], u64>>,
}

fn b64(bytes: impl AsRef<[u8]>) -> String {
    base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(bytes)
}

fn now() -> u64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| d.as_secs())
}

impl Proofs {
    /// Proofs for the resource `resource` (an absolute URL), with `iat` at most `window` from now (at least
    /// [`MIN_WINDOW`]).
    pub(crate) fn new(resource: &str, window: Duration) -> Result<Proofs, String> {
        let Some((origin, path)) = normalize(resource) else {
            return Err(format!("the resource `{resource}` is not a URL a DPoP proof can name"));
        };
        Ok(Proofs { origin, resource_path: path, window: window.max(MIN_WINDOW), seen: Mutex::new(HashMap::new()) })
    }

    /// Checks `proof` for a request with `method` to `path` (its path on this host) carrying `token`, which is
    /// bound to the key with thumbprint `jkt`.
    pub(crate) fn check(
        &self,
        proof: &str,
        method: &str,
        path: &str,
        token: &str,
        jkt: &str,
    ) -> Result<(), ProofError> {
        let invalid = |why: &str| Err(ProofError::Invalid(why.to_owned()));
        let header = checked_header(proof)?;
        let jwk = header.jwk.as_ref().ok_or_else(|| ProofError::Invalid("the DPoP proof has no `jwk`".into()))?;
        let claims = verified_claims(proof, &header, jwk)?;
        let text = |name: &str| claims.get(name).and_then(Value::as_str);
        if text("htm") != Some(method) {
            return Err(ProofError::Invalid(format!("the DPoP proof is for another method (htm is not {method})")));
        }
        let Some(htu) = text("htu").and_then(normalize) else {
            return invalid("the DPoP proof's `htu` is not an absolute http(s) URL");
        };
        let path = normalize_path(path);
        if htu.0 != self.origin || (htu.1 != path && htu.1 != self.resource_path) {
            return invalid("the DPoP proof is for another URL (its htu is not this endpoint)");
        }
        // A NumericDate (RFC 7519 §2) may have a fraction.
        let iat =
            claims.get("iat").and_then(|v| v.as_u64().or_else(|| v.as_f64().filter(|f| *f >= 0.0).map(|f| f as u64)));
        let Some(iat) = iat else {
            return invalid("the DPoP proof has no numeric `iat`");
        };
        let (now, window) = (now(), self.window.as_secs());
        if iat.saturating_add(window) < now || iat > now.saturating_add(window) {
            return Err(ProofError::Invalid(format!(
                "the DPoP proof was not made within {window} s of now (its iat is {iat}, now is {now})"
            )));
        }
        let Some(jti) = text("jti").filter(|j| !j.is_empty() && j.len() <= MAX_JTI) else {
            return invalid("the DPoP proof has no `jti` (or one longer than 256 bytes)");
        };
        if text("ath") != Some(b64(Sha256::digest(token.as_bytes())).as_str()) {
            return invalid("the DPoP proof's `ath` is not the hash of the access token it comes with");
        }
        if jwk.thumbprint(ThumbprintHash::SHA256) != jkt {
            return Err(ProofError::Binding);
        }
        self.remember(jti, iat.saturating_add(window))
    }

    /// Records `jti` until `until`; refused when it was seen already.
    fn remember(&self, jti: &str, until: u64) -> Result<(), ProofError> {
        let digest: [u8; 32] = Sha256::digest(jti.as_bytes()).into();
        let mut seen = self.seen.locked();
        if seen.len() >= SEEN_ENTRIES {
            let now = now();
            seen.retain(|_, until| *until >= now);
            if seen.len() >= SEEN_ENTRIES {
                return Err(ProofError::Full);
            }
        }
        match seen.entry(digest) {
            std::collections::hash_map::Entry::Occupied(_) => {
                Err(ProofError::Invalid("the DPoP proof was used before (its jti is not new)".into()))
            }
            std::collections::hash_map::Entry::Vacant(slot) => {
                slot.insert(until);
                Ok(())
            }
        }
    }
}

/// The header of a DPoP proof, checked before its signature: a compact JWS whose header names an accepted algorithm,
/// `typ` `dpop+jwt`, and a sound public `jwk` (no private or symmetric members).
fn checked_header(proof: &str) -> Result<jsonwebtoken::Header, ProofError> {
    let invalid = |why: &str| Err(ProofError::Invalid(why.to_owned()));
    let Some(raw_header) = proof.split('.').next().filter(|_| proof.split('.').count() == 3) else {
        return invalid("the DPoP proof is not a compact JWS (header.payload.signature)");
    };
    let raw: Value = match base64::engine::general_purpose::URL_SAFE_NO_PAD
        .decode(raw_header)
        .ok()
        .and_then(|bytes| serde_json::from_slice(&bytes).ok())
    {
        Some(Value::Object(header)) => Value::Object(header),
        _ => return invalid("the DPoP proof's header is not a JSON object"),
    };
    match raw.get("alg").and_then(Value::as_str) {
        Some(alg) if ALGORITHM_NAMES.contains(&alg) => {}
        Some(alg) => {
            return Err(ProofError::Invalid(format!(
                "the DPoP proof is signed with `{alg}`, which is not accepted (only {})",
                ALGORITHM_NAMES.join(" ")
            )))
        }
        None => return invalid("the DPoP proof's header has no `alg`"),
    }
    if !raw.get("typ").and_then(Value::as_str).is_some_and(|t| t.eq_ignore_ascii_case("dpop+jwt")) {
        return invalid("the DPoP proof's `typ` is not `dpop+jwt`");
    }
    let Some(Value::Object(jwk_members)) = raw.get("jwk") else {
        return invalid("the DPoP proof's header has no `jwk` (the public key it is signed with)");
    };
    if ["d", "p", "q", "dp", "dq", "qi", "oth", "k"].iter().any(|m| jwk_members.contains_key(*m)) {
        return invalid("the DPoP proof's `jwk` holds private or symmetric key members");
    }
    let header = match jsonwebtoken::decode_header(proof) {
        Ok(header) => header,
        Err(e) => return Err(ProofError::Invalid(format!("the DPoP proof's header is malformed ({e})"))),
    };
    if !header.jwk.as_ref().is_some_and(public_key_is_sound) {
        return invalid("the DPoP proof's `jwk` is not a public RSA, EC (P-256, P-384) or Ed25519 key");
    }
    if !ALGORITHMS.contains(&header.alg) {
        return invalid("the DPoP proof's algorithm is not accepted");
    }
    Ok(header)
}

/// The claims of a DPoP proof whose signature verifies with its own `jwk` (times are checked by the caller, against
/// its window).
fn verified_claims(proof: &str, header: &jsonwebtoken::Header, jwk: &Jwk) -> Result<Value, ProofError> {
    let key = DecodingKey::from_jwk(jwk)
        .map_err(|e| ProofError::Invalid(format!("the DPoP proof's `jwk` is not a usable key ({e})")))?;
    let mut validation = Validation::new(header.alg);
    validation.algorithms = vec![header.alg];
    validation.required_spec_claims.clear();
    validation.validate_exp = false;
    validation.validate_nbf = false;
    validation.validate_aud = false;
    match jsonwebtoken::decode::<Value>(proof, &key, &validation) {
        Ok(data) => Ok(data.claims),
        Err(e) => Err(ProofError::Invalid(match e.kind() {
            jsonwebtoken::errors::ErrorKind::InvalidSignature => {
                "the DPoP proof's signature does not verify with its `jwk`".into()
            }
            other => format!("the DPoP proof does not verify ({other:?})"),
        })),
    }
}

/// Whether `jwk` is a public key whose thumbprint `jsonwebtoken` computes (it panics on an EC key with an Edwards
/// curve and the reverse) over members that are plain base64url, so the thumbprint is over canonical JSON.
fn public_key_is_sound(jwk: &Jwk) -> bool {
    let b64url = |s: &str| !s.is_empty() && s.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_');
    match &jwk.algorithm {
        AlgorithmParameters::EllipticCurve(ec) => {
            matches!(ec.curve, EllipticCurve::P256 | EllipticCurve::P384) && b64url(&ec.x) && b64url(&ec.y)
        }
        AlgorithmParameters::RSA(rsa) => b64url(&rsa.n) && b64url(&rsa.e),
        AlgorithmParameters::OctetKeyPair(okp) => matches!(okp.curve, EllipticCurve::Ed25519) && b64url(&okp.x),
        AlgorithmParameters::OctetKey(_) => false,
    }
}

/// An absolute `http`/`https` URL's origin and path, normalized as RFC 3986 §6.2.2 and §6.2.3 say (scheme and
/// host in lower case, the default port left out, an empty path as `/`, percent-encodings in upper case and those
/// of unreserved characters decoded), without its query and fragment.
pub(crate) fn normalize(url: &str) -> Option<(String, String)> {
    let url = url.split(['?', '#']).next().unwrap_or_default();
    let (scheme, rest) = url.split_once("://")?;
    let scheme = scheme.to_ascii_lowercase();
    let default_port = match scheme.as_str() {
        "https" => ":443",
        "http" => ":80",
        _ => return None,
    };
    let host_end = rest.find('/').unwrap_or(rest.len());
    let (authority, path) = rest.split_at(host_end);
    if authority.is_empty() || authority.contains('@') {
        return None;
    }
    let mut authority = authority.to_ascii_lowercase();
    if authority.ends_with(default_port) {
        authority.truncate(authority.len() - default_port.len());
    } else if authority.ends_with(':') {
        authority.pop();
    }
    Some((format!("{scheme}://{authority}"), normalize_path(path)))
}

/// A path with its percent-encodings normalized, `/` when empty.
fn normalize_path(path: &str) -> String {
    if path.is_empty() {
        return "/".into();
    }
    let bytes = path.as_bytes();
    let mut out = String::with_capacity(path.len());
    let mut i = 0;
    while i < bytes.len() {
        let hex = |b: u8| (b as char).to_digit(16);
        if bytes[i] == b'%' && i + 2 < bytes.len() {
            if let (Some(h), Some(l)) = (hex(bytes[i + 1]), hex(bytes[i + 2])) {
                let c = (h * 16 + l) as u8;
                if c.is_ascii_alphanumeric() || b"-._~".contains(&c) {
                    out.push(c as char);
                } else {
                    out.push('%');
                    out.push(bytes[i + 1].to_ascii_uppercase() as char);
                    out.push(bytes[i + 2].to_ascii_uppercase() as char);
                }
                i += 3;
                continue;
            }
        }
        out.push(bytes[i] as char);
        i += 1;
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls_are_compared_normalized() {
        let n = |u: &str| normalize(u).unwrap();
        assert_eq!(n("HTTPS://Books.Example.COM:443/mcp?x=1#f"), ("https://books.example.com".into(), "/mcp".into()));
        assert_eq!(n("http://127.0.0.1:80"), ("http://127.0.0.1".into(), "/".into()));
        assert_eq!(n("http://127.0.0.1:8000/%6dcp%2f"), ("http://127.0.0.1:8000".into(), "/mcp%2F".into()));
        assert_eq!(normalize("ftp://x/"), None);
        assert_eq!(normalize("https://user@x/"), None);
    }

    #[test]
    fn a_jti_is_taken_once_and_the_cache_is_bounded() {
        let proofs = Proofs::new("https://books.example.com/mcp", Duration::from_secs(30)).unwrap();
        assert_eq!(proofs.remember("a", now() + 30), Ok(()));
        assert!(matches!(proofs.remember("a", now() + 30), Err(ProofError::Invalid(_))));
        assert_eq!(proofs.remember("b", now() + 30), Ok(()));
    }
}
