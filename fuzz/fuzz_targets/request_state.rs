//! Sealed `requestState`s (`Sealer` in mcp-runtime/src/era/seal.rs), with a fixed key. The input is both a string
//! a client might send back and a state to seal.
//!
//! - Opening: what opens is strict unpadded base64url (RFC 4648 section 5) of a nonce, a ciphertext and a tag (at
//!   least 40 bytes), after the key's id and a dot when it names its key, and it seals again into a state that
//!   opens to the same bytes; it does not open under another key, nor once one character is changed or the last
//!   one dropped.
//! - Sealing: a sealed state is its key's id, a dot, and base64url of 24 + 16 + length bytes; it opens to exactly
//!   what was sealed, and not under another key, nor changed, nor truncated; two seals of the same state differ (a
//!   fresh nonce).

#![no_main]

use libfuzzer_sys::fuzz_target;
use mcp::__fuzz::Sealer;
use mcp_fuzz::{base64_decode, Alphabet};

/// The key the corpus's states were sealed with (`fuzz/corpus/request_state/`).
const KEY: [u8; 32] = *b"mcp fuzz request state key 32 by";

struct Sealers {
    ours: Sealer,
    other: Sealer,
}

fn sealers() -> &'static Sealers {
    static SEALERS: std::sync::OnceLock<Sealers> = std::sync::OnceLock::new();
    SEALERS.get_or_init(|| {
        let mut other = KEY;
        other[31] ^= 1;
        Sealers { ours: Sealer::new(KEY), other: Sealer::new(other) }
    })
}

const BASE64URL: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";

/// The state with the character at `at` (modulo its length) replaced by another base64url character.
fn changed(sealed: &str, at: usize, by: u8) -> String {
    let mut bytes = sealed.as_bytes().to_vec();
    let i = at % bytes.len();
    let current = BASE64URL.iter().position(|c| *c == bytes[i]).unwrap_or(0);
    bytes[i] = BASE64URL[(current + 1 + usize::from(by) % 63) % 64];
    String::from_utf8(bytes).expect("base64url is ASCII")
}

/// The sealed bytes of a state: what follows the key's id and its dot, if it names its key.
fn body(sealed: &str) -> &str {
    sealed.rsplit_once('.').map_or(sealed, |(_, body)| body)
}

/// A state that opened (or was just sealed) must not open once changed, truncated, or under another key.
fn check_tamper_evident(sealers: &Sealers, sealed: &str, data: &[u8]) {
    let at = data.iter().map(|b| usize::from(*b)).sum::<usize>();
    let by = data.first().copied().unwrap_or_default();
    assert_eq!(sealers.other.open(sealed), None, "{sealed:?} opens under another key");
    let tampered = changed(sealed, at, by);
    assert_eq!(sealers.ours.open(&tampered), None, "{sealed:?} changed to {tampered:?} still opens");
    assert_eq!(sealers.ours.open(&sealed[..sealed.len() - 1]), None, "{sealed:?} truncated still opens");
}

fuzz_target!(|data: &[u8]| {
    let sealers = sealers();
    if let Ok(text) = std::str::from_utf8(data) {
        if let Some(opened) = sealers.ours.open(text) {
            let raw = base64_decode(body(text), Alphabet::UrlSafe, false).expect("what opens is strict base64url");
            assert_eq!(raw.len(), 24 + opened.len() + 16, "nonce, ciphertext and tag");
            check_tamper_evident(sealers, text, data);
            let resealed = sealers.ours.seal(&opened);
            assert_eq!(sealers.ours.open(&resealed), Some(opened), "sealed again");
        }
    }

    let sealed = sealers.ours.seal(data);
    let (id, _) = sealed.split_once('.').expect("a sealed state names its key");
    assert!(id.len() == 8 && id.bytes().all(|b| b.is_ascii_hexdigit()), "{sealed:?}: the key's id");
    let raw = base64_decode(body(&sealed), Alphabet::UrlSafe, false).expect("a sealed state is strict base64url");
    assert_eq!(raw.len(), 24 + data.len() + 16);
    assert_eq!(sealers.ours.open(&sealed).as_deref(), Some(data), "a sealed state opens to what was sealed");
    check_tamper_evident(sealers, &sealed, data);
    assert_ne!(sealers.ours.seal(data), sealed, "a fresh nonce each time");
});
