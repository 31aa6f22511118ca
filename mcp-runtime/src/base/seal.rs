//! Sealing of `requestState`: XChaCha20-Poly1305 with a random 192-bit nonce per state, so the state is both
//! confidential (answers to questions can be personal) and integrity-protected (a tampered state fails to open).
//! The keys are the server's: set with `ServerBuilder::request_state_keys`, or `MCP_REQUEST_STATE_KEY` (64 hex digits,
//! or several such keys separated by commas), so that several instances behind one endpoint agree; without either, a
//! random key per process. The first key seals, every one opens: a key is rotated across a running fleet without
//! losing a retry (add the new key second everywhere, then first, then drop the old one). A sealed state names its
//! key (`{key id}.{sealed}`, the id the first 4 bytes of the key's SHA-256 in hex), so it is opened with that key
//! alone, and a state sealed with a key this instance lacks is told apart from a forged one.

use base64::Engine;
use chacha20poly1305::aead::{Aead, KeyInit, Payload};
use chacha20poly1305::{Key, XChaCha20Poly1305, XNonce};
use sha2::Digest;

/// The environment variable holding the sealing key, as 64 hex digits (32 bytes).
pub const KEY_ENV: &str = "MCP_REQUEST_STATE_KEY";

/// What is bound to every sealed state besides its contents (additional authenticated data).
const AAD: &[u8] = b"mcp requestState v1";

/// Seals with one key and opens with several.
pub(crate) struct Sealer {
    /// The keys with their ids: the first seals, every one opens.
    keys: Vec<(String, XChaCha20Poly1305)>,
    /// Whether the key was made up for this process (states then do not survive a restart or cross instances):
    /// the HTTP transport warns of it at start-up.
    #[cfg_attr(not(feature = "http"), allow(dead_code))]
    pub random: bool,
}

/// Why a sealed state did not open.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Unopened {
    /// It names a key this server does not have (it was sealed by an instance with other keys).
    UnknownKey(String),
    /// It is not a sealed state, or it was changed, or sealed with another key.
    Invalid,
}

/// A key's id: the first 4 bytes of its SHA-256, in hex. It names the key without telling it.
fn key_id(key: &[u8; 32]) -> String {
    sha2::Sha256::digest(key)[..4].iter().map(|b| format!("{b:02x}")).collect()
}

impl Sealer {
    pub(crate) fn new(key: [u8; 32], random: bool) -> Sealer {
        Sealer::with_keys(&[key], random)
    }

    /// Seals with the first of `keys` and opens with any (`keys` is not empty).
    pub(crate) fn with_keys(keys: &[[u8; 32]], random: bool) -> Sealer {
        let keys = keys.iter().map(|k| (key_id(k), XChaCha20Poly1305::new(Key::from_slice(k)))).collect();
        Sealer { keys, random }
    }

    /// The keys given, else the ones in the environment, else a random one.
    pub(crate) fn from_config(keys: &[[u8; 32]]) -> Result<Sealer, String> {
        if !keys.is_empty() {
            return Ok(Sealer::with_keys(keys, false));
        }
        if let Ok(text) = std::env::var(KEY_ENV) {
            let keys: Option<Vec<[u8; 32]>> = text.split(',').map(|k| parse_hex_key(k.trim())).collect();
            return match keys {
                Some(keys) if !keys.is_empty() => Ok(Sealer::with_keys(&keys, false)),
                _ => Err(format!(
                    "{KEY_ENV} must be 64 hexadecimal digits (a 32-byte key), or several such keys separated by \
                     commas (the first seals, all open); it is not"
                )),
            };
        }
        let mut key = [0u8; 32];
        getrandom::fill(&mut key).map_err(|e| format!("the operating system's random number generator failed: {e}"))?;
        Ok(Sealer::new(key, true))
    }

    /// Seals `plaintext` into a URL-safe string naming its key.
    pub(crate) fn seal(&self, plaintext: &[u8]) -> String {
        let mut nonce = [0u8; 24];
        if let Err(e) = getrandom::fill(&mut nonce) {
            // A repeated nonce would break the cipher: refuse rather than risk it.
            panic!("the operating system's random number generator failed: {e}");
        }
        let (id, cipher) = &self.keys[0];
        let sealed = cipher
            .encrypt(XNonce::from_slice(&nonce), Payload { msg: plaintext, aad: AAD })
            .expect("XChaCha20-Poly1305 encrypts any message that fits in memory");
        let mut out = Vec::with_capacity(nonce.len() + sealed.len());
        out.extend_from_slice(&nonce);
        out.extend_from_slice(&sealed);
        format!("{id}.{}", base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(out))
    }

    /// Opens a sealed string; `None` if it was not sealed with one of these keys or was changed.
    #[cfg(any(test, feature = "fuzzing"))]
    pub(crate) fn open(&self, sealed: &str) -> Option<Vec<u8>> {
        self.try_open(sealed).ok()
    }

    /// Opens a sealed string, or says why it does not open. A state without a key id (sealed before states named
    /// their key) is tried with every key.
    pub(crate) fn try_open(&self, sealed: &str) -> Result<Vec<u8>, Unopened> {
        let (keys, body): (Vec<&XChaCha20Poly1305>, &str) = match sealed.split_once('.') {
            Some((id, body)) => match self.keys.iter().find(|(k, _)| k == id) {
                Some((_, cipher)) => (vec![cipher], body),
                None => return Err(Unopened::UnknownKey(id.chars().take(16).collect())),
            },
            None => (self.keys.iter().map(|(_, c)| c).collect(), sealed),
        };
        let bytes = base64::engine::general_purpose::URL_SAFE_NO_PAD.decode(body).map_err(|_| Unopened::Invalid)?;
        if bytes.len() < 24 + 16 {
            return Err(Unopened::Invalid);
        }
        let (nonce, ciphertext) = bytes.split_at(24);
        keys.into_iter()
            .find_map(|cipher| cipher.decrypt(XNonce::from_slice(nonce), Payload { msg: ciphertext, aad: AAD }).ok())
            .ok_or(Unopened::Invalid)
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
    fn the_first_key_seals_and_every_key_opens() {
        let (old, new) = ([1; 32], [2; 32]);
        let before = Sealer::with_keys(&[old], false);
        let during = Sealer::with_keys(&[new, old], false);
        let after = Sealer::with_keys(&[new], false);
        let sealed_before = before.seal(b"a");
        let sealed_during = during.seal(b"b");
        assert!(sealed_before.starts_with(&format!("{}.", key_id(&old))), "a state names its key: {sealed_before}");
        assert!(sealed_during.starts_with(&format!("{}.", key_id(&new))));
        assert_eq!(during.open(&sealed_before).as_deref(), Some(&b"a"[..]), "an old key still opens");
        assert_eq!(after.open(&sealed_during).as_deref(), Some(&b"b"[..]));
        assert_eq!(after.try_open(&sealed_before), Err(Unopened::UnknownKey(key_id(&old))), "a dropped key");
        assert_eq!(before.try_open(&sealed_during), Err(Unopened::UnknownKey(key_id(&new))), "a key not yet added");
        // A state without a key id (as sealed before ids) is tried with every key.
        let unnamed = sealed_before.split_once('.').unwrap().1;
        assert_eq!(during.open(unnamed).as_deref(), Some(&b"a"[..]));
        assert_eq!(after.try_open(unnamed), Err(Unopened::Invalid));
    }

    #[test]
    fn keys_parse_from_64_hex_digits() {
        assert_eq!(parse_hex_key(&"ab".repeat(32)), Some([0xab; 32]));
        assert_eq!(parse_hex_key("abc"), None);
        assert_eq!(parse_hex_key(&"zz".repeat(32)), None);
    }
}
