//! Signed JWTs the client makes: the `private_key_jwt` client assertion (RFC 7523 §2.2).

use std::time::{SystemTime, UNIX_EPOCH};

use base64::Engine;
use jsonwebtoken::{EncodingKey, Header};
use serde_json::json;

use super::SigningKey;
use crate::client::{AuthError, Error};

/// How long an assertion is valid: 5 minutes.
const ASSERTION_LIFETIME: u64 = 300;

/// The key of a [`SigningKey`], or why its PEM is not one for its algorithm.
pub(crate) fn encoding_key(key: &SigningKey) -> Result<EncodingKey, Error> {
    use jsonwebtoken::Algorithm::*;
    let parsed = match key.algorithm {
        ES256 | ES384 => EncodingKey::from_ec_pem(&key.pem),
        RS256 | RS384 | RS512 | PS256 | PS384 | PS512 => EncodingKey::from_rsa_pem(&key.pem),
        EdDSA => EncodingKey::from_ed_pem(&key.pem),
        HS256 | HS384 | HS512 => {
            return Err(Error::Auth(AuthError::config(
                "private_key_jwt takes an asymmetric algorithm (ES256, RS256, EdDSA, ...), not an HMAC one",
            )))
        }
    };
    parsed.map_err(|e| {
        Error::Auth(AuthError::config(format!(
            "the private key for private_key_jwt is not a PEM key for {:?} ({e})",
            key.algorithm
        )))
    })
}

/// A client assertion: issued by and about the client, for the authorization server (`aud` its issuer).
pub(crate) fn client_assertion(key: &SigningKey, client_id: &str, audience: &str) -> Result<String, Error> {
    let now = SystemTime::now().duration_since(UNIX_EPOCH).map(|d| d.as_secs()).unwrap_or_default();
    let mut id = [0u8; 16];
    getrandom::fill(&mut id).map_err(|e| Error::Auth(AuthError::config(format!("no randomness for a jti: {e}"))))?;
    let claims = json!({
        "iss": client_id,
        "sub": client_id,
        "aud": audience,
        "iat": now,
        "exp": now + ASSERTION_LIFETIME,
        "jti": base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(id),
    });
    let mut header = Header::new(key.algorithm);
    header.kid = key.key_id.clone();
    jsonwebtoken::encode(&header, &claims, &encoding_key(key)?)
        .map_err(|e| Error::Auth(AuthError::config(format!("signing the client assertion failed: {e}"))))
}
