//! Sealing of `requestState`: XChaCha20-Poly1305 with a random 192-bit nonce per state, so the state is both
//! confidential (answers to questions can be personal) and integrity-protected (a tampered state fails to open).
//! The key is the server's: set with `ServerBuilder::request_state_key`, or `MCP_REQUEST_STATE_KEY` (64 hex digits),
//! so that several instances behind one endpoint agree; without either, a random key per process.

use base64::Engine;
use chacha20poly1305::aead::{Aead, KeyInit, Payload};
use chacha20poly1305::{Key, XChaCha20Poly1305, XNonce};

/// The environment variable holding the sealing key, as 64 hex digits (32 bytes).
pub const KEY_ENV: &str = "MCP_REQUEST_STATE_KEY";

/// What is bound to every sealed state besides its contents (additional authenticated data).
const AAD: &[u8] = b"mcp requestState v1";

/// Seals and opens states with one key.
pub(crate) struct Sealer {
    cipher: XChaCha20Poly1305,
    /// Whether the key was made up for this process (states then do not survive a restart or cross instances):
    /// the HTTP transport warns of it at start-up.
    #[cfg_attr(not(feature = "http"), allow(dead_code))]
    pub random: bool,
}

impl Sealer {
    pub(crate) fn new(key: [u8; 32], random: bool) -> Sealer {
        Sealer { cipher: XChaCha20Poly1305::new(Key::from_slice(&key)), random }
    }

    /// The key given, else the one in the environment, else a random one.
    pub(crate) fn from_config(key: Option<[u8; 32]>) -> Result<Sealer, String> {
        if let Some(key) = key {
            return Ok(Sealer::new(key, false));
        }
        if let Ok(hex) = std::env::var(KEY_ENV) {
            return parse_hex_key(hex.trim())
                .map(|k| Sealer::new(k, false))
                .ok_or_else(|| format!("{KEY_ENV} must be 64 hexadecimal digits (a 32-byte key); it is not"));
        }
        let mut key = [0u8; 32];
        getrandom::fill(&mut key).map_err(|e| format!("the operating system's random number generator failed: {e}"))?;
        Ok(Sealer::new(key, true))
    }

    /// Seals `plaintext` into a URL-safe string.
    pub(crate) fn seal(&self, plaintext: &[u8]) -> String {
        let mut nonce = [0u8; 24];
        if let Err(e) = getrandom::fill(&mut nonce) {
            // A repeated nonce would break the cipher: refuse rather than risk it.
            panic!("the operating system's random number generator failed: {e}");
        }
        let sealed = self
            .cipher
            .encrypt(XNonce::from_slice(&nonce), Payload { msg: plaintext, aad: AAD })
            .expect("XChaCha20-Poly1305 encrypts any message that fits in memory");
        let mut out = Vec::with_capacity(nonce.len() + sealed.len());
        out.extend_from_slice(&nonce);
        out.extend_from_slice(&sealed);
        base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(out)
    }

    /// Opens a sealed string; `None` if it was not sealed with this key or was changed.
    pub(crate) fn open(&self, sealed: &str) -> Option<Vec<u8>> {
        let bytes = base64::engine::general_purpose::URL_SAFE_NO_PAD.decode(sealed).ok()?;
        if bytes.len() < 24 + 16 {
            return None;
        }
        let (nonce, ciphertext) = bytes.split_at(24);
        self.cipher.decrypt(XNonce::from_slice(nonce), Payload { msg: ciphertext, aad: AAD }).ok()
    }
}

fn parse_hex_key(hex: &str) -> Option<[u8; 32]> {
    if hex.len() != 64 || !hex.is_ascii() {
        return None;
    }
    let mut key = [0u8; 32];
    for (i, byte) in key.iter_mut().enumerate() {
        *byte = u8::from_str_radix(&hex[2 * i..2 * i + 2], 16).ok()?;
    }
    Some(key)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_sealed_state_opens_with_its_key_only_and_not_once_changed() {
        let sealer = Sealer::new([7; 32], false);
        let sealed = sealer.seal(b"hello");
        assert_eq!(sealer.open(&sealed).as_deref(), Some(&b"hello"[..]));
        assert_ne!(sealer.seal(b"hello"), sealed, "a fresh nonce each time");
        assert!(Sealer::new([8; 32], false).open(&sealed).is_none(), "another key");
        let mut tampered = sealed.clone();
        tampered.push('A');
        assert!(sealer.open(&tampered).is_none());
        assert!(sealer.open(&format!("{sealed}-TAMPERED")).is_none());
        let flipped: String = sealed.chars().rev().collect();
        assert!(sealer.open(&flipped).is_none());
        assert!(sealer.open("").is_none() && sealer.open("%%%").is_none());
    }

    #[test]
    fn keys_parse_from_64_hex_digits() {
        assert_eq!(parse_hex_key(&"ab".repeat(32)), Some([0xab; 32]));
        assert_eq!(parse_hex_key("abc"), None);
        assert_eq!(parse_hex_key(&"zz".repeat(32)), None);
    }
}
