//! DPoP (RFC 9449): a key of the connection's own, proofs of it on token requests and on every request that
//! carries a DPoP-bound token, and the nonces servers ask proofs to carry.

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::{SystemTime, UNIX_EPOCH};

use base64::Engine;
use p256::ecdsa::signature::Signer;
use p256::ecdsa::{Signature, SigningKey};
use reqwest::header::HeaderMap;
use reqwest::Url;
use serde_json::{json, Value};
use sha2::{Digest, Sha256};

use crate::base::sync::Unpoisoned;
use crate::client::{AuthError, Error};

/// The one algorithm the client signs proofs with.
pub(crate) const ALGORITHM: &str = "ES256";

fn b64(bytes: impl AsRef<[u8]>) -> String {
    base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(bytes)
}

/// A DPoP key and the nonce each server (by origin) last gave.
pub(crate) struct Dpop {
    key: SigningKey,
    jwk: Value,
    nonces: Mutex<HashMap<String, String>>,
}

impl Dpop {
    /// A fresh P-256 key.
    pub(crate) fn new() -> Result<Dpop, Error> {
        let key = loop {
            let mut bytes = [0u8; 32];
            getrandom::fill(&mut bytes)
                .map_err(|e| Error::Auth(AuthError::config(format!("no randomness for a DPoP key: {e}"))))?;
            if let Ok(key) = SigningKey::from_slice(&bytes) {
                break key;
            }
        };
        let point = key.verifying_key().to_encoded_point(false);
        let (Some(x), Some(y)) = (point.x(), point.y()) else {
            return Err(Error::Auth(AuthError::config("the DPoP public key has no coordinates")));
        };
        let jwk = json!({ "kty": "EC", "crv": "P-256", "x": b64(x), "y": b64(y) });
        Ok(Dpop { key, jwk, nonces: Mutex::new(HashMap::new()) })
    }

    /// A proof for one request: its method, its URL (without query and fragment), and, with a token, its hash.
    pub(crate) fn proof(&self, method: &str, url: &Url, access_token: Option<&str>) -> Result<String, Error> {
        let mut htu = url.clone();
        htu.set_query(None);
        htu.set_fragment(None);
        let mut jti = [0u8; 16];
        getrandom::fill(&mut jti)
            .map_err(|e| Error::Auth(AuthError::config(format!("no randomness for a jti: {e}"))))?;
        let iat = SystemTime::now().duration_since(UNIX_EPOCH).map(|d| d.as_secs()).unwrap_or_default();
        let mut claims = json!({ "jti": b64(jti), "htm": method, "htu": htu.as_str(), "iat": iat });
        if let Some(token) = access_token {
            claims["ath"] = json!(b64(Sha256::digest(token.as_bytes())));
        }
        if let Some(nonce) = self.nonces.locked().get(&origin(url)) {
            claims["nonce"] = json!(nonce);
        }
        let header = json!({ "typ": "dpop+jwt", "alg": ALGORITHM, "jwk": self.jwk });
        let input = format!("{}.{}", b64(header.to_string()), b64(claims.to_string()));
        let signature: Signature = self.key.sign(input.as_bytes());
        Ok(format!("{input}.{}", b64(signature.to_bytes())))
    }

    /// Keeps the `DPoP-Nonce` a response from `url`'s server gave; whether there was one.
    pub(crate) fn remember_nonce(&self, url: &Url, headers: &HeaderMap) -> bool {
        let Some(nonce) = headers.get("dpop-nonce").and_then(|v| v.to_str().ok()) else { return false };
        self.nonces.locked().insert(origin(url), nonce.to_owned());
        true
    }
}

fn origin(url: &Url) -> String {
    url.origin().ascii_serialization()
}

#[cfg(test)]
mod tests {
    use super::*;
    use p256::ecdsa::signature::Verifier;

    #[test]
    fn a_proof_is_an_es256_jwt_of_the_request_signed_by_its_jwk() {
        let dpop = Dpop::new().unwrap();
        let url = Url::parse("https://mcp.example.com/mcp?q=1#f").unwrap();
        let mut headers = HeaderMap::new();
        headers.insert("dpop-nonce", "n-1".parse().unwrap());
        assert!(dpop.remember_nonce(&url, &headers));
        let proof = dpop.proof("POST", &url, Some("tok")).unwrap();
        let parts: Vec<&str> = proof.split('.').collect();
        let decode = |s: &str| base64::engine::general_purpose::URL_SAFE_NO_PAD.decode(s).unwrap();
        let header: Value = serde_json::from_slice(&decode(parts[0])).unwrap();
        let claims: Value = serde_json::from_slice(&decode(parts[1])).unwrap();
        assert_eq!((header["typ"].as_str(), header["alg"].as_str()), (Some("dpop+jwt"), Some("ES256")));
        assert!(header["jwk"]["d"].is_null(), "the private key stays private");
        assert_eq!(claims["htu"], "https://mcp.example.com/mcp");
        assert_eq!(claims["htm"], "POST");
        assert_eq!(claims["nonce"], "n-1");
        assert_eq!(claims["ath"], b64(Sha256::digest(b"tok")));
        let signature = Signature::from_slice(&decode(parts[2])).unwrap();
        let input = format!("{}.{}", parts[0], parts[1]);
        dpop.key.verifying_key().verify(input.as_bytes(), &signature).unwrap();
        assert_ne!(dpop.proof("POST", &url, None).unwrap(), proof, "a fresh jti each time");
    }
}
