//! What a verifier remembers about tokens it has checked: a client sends the same token on every call, and checking
//! it again (a signature, a round trip to the issuer) costs far more than a lookup.
//!
//! Keyed by the token itself, compared whole, so no two tokens can share an entry; hashed with the standard
//! library's randomly keyed SipHash, so a client cannot pick tokens that collide. Bounded in entries and in the
//! bytes of the tokens kept; a token longer than [`LONGEST_KEPT`] is checked every time.

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use crate::base::sync::Unpoisoned;

/// The longest token remembered (an access token is a few hundred bytes to a few KiB).
pub(crate) const LONGEST_KEPT: usize = 8 * 1024;
/// The most tokens remembered.
const MOST_ENTRIES: usize = 10_000;
/// The most bytes of tokens remembered.
const MOST_BYTES: usize = 4 * 1024 * 1024;

/// Answers by token, each with until when it may be reused.
pub(crate) struct TokenCache<V> {
    entries: Mutex<Entries<V>>,
}

struct Entries<V> {
    by_token: HashMap<Box<str>, (Instant, V)>,
    /// The bytes of the tokens in `by_token`.
    bytes: usize,
}

impl<V: Clone> TokenCache<V> {
    pub(crate) fn new() -> TokenCache<V> {
        TokenCache { entries: Mutex::new(Entries { by_token: HashMap::new(), bytes: 0 }) }
    }

    /// The answer remembered for `token`, if it is still good.
    pub(crate) fn get(&self, token: &str) -> Option<V> {
        let entries = self.entries.locked();
        let (until, value) = entries.by_token.get(token)?;
        (Instant::now() < *until).then(|| value.clone())
    }

    /// Forgets every answer.
    pub(crate) fn clear(&self) {
        let mut entries = self.entries.locked();
        entries.by_token.clear();
        entries.bytes = 0;
    }

    /// Remembers `value` for `token` for `ttl`. When the cache is full, the answers that are no longer good go; if
    /// that is not enough, all of them do (a flood of distinct tokens cannot grow it, only empty it).
    pub(crate) fn put(&self, token: &str, ttl: Duration, value: V) {
        if token.len() > LONGEST_KEPT || ttl.is_zero() {
            return;
        }
        let mut entries = self.entries.locked();
        if entries.by_token.len() >= MOST_ENTRIES || entries.bytes + token.len() > MOST_BYTES {
            let now = Instant::now();
            entries.by_token.retain(|_, (until, _)| *until > now);
            entries.bytes = entries.by_token.keys().map(|t| t.len()).sum();
            if entries.by_token.len() >= MOST_ENTRIES || entries.bytes + token.len() > MOST_BYTES {
                entries.by_token.clear();
                entries.bytes = 0;
            }
        }
        let until = Instant::now() + ttl;
        if entries.by_token.insert(token.into(), (until, value)).is_none() {
            entries.bytes += token.len();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_answer_is_reused_until_it_expires() {
        let cache = TokenCache::new();
        cache.put("a.b.c", Duration::from_secs(60), 1);
        cache.put("gone", Duration::from_nanos(1), 2);
        std::thread::sleep(Duration::from_millis(1));
        assert_eq!(cache.get("a.b.c"), Some(1));
        assert_eq!(cache.get("a.b.cd"), None);
        assert_eq!(cache.get("gone"), None);
    }

    #[test]
    fn the_cache_is_bounded_in_entries_and_bytes() {
        let cache = TokenCache::new();
        for i in 0..MOST_ENTRIES + 10 {
            cache.put(&format!("token-{i}"), Duration::from_secs(60), i);
        }
        assert!(cache.entries.locked().by_token.len() <= MOST_ENTRIES);
        let long = "x".repeat(LONGEST_KEPT);
        for i in 0..(MOST_BYTES / LONGEST_KEPT) * 2 {
            cache.put(&format!("{long:.*}{i}", LONGEST_KEPT - 8), Duration::from_secs(60), i);
        }
        let entries = cache.entries.locked();
        assert!(entries.bytes <= MOST_BYTES);
        assert_eq!(entries.bytes, entries.by_token.keys().map(|t| t.len()).sum::<usize>());
        drop(entries);
        cache.put(&"y".repeat(LONGEST_KEPT + 1), Duration::from_secs(60), 0);
        assert_eq!(cache.get(&"y".repeat(LONGEST_KEPT + 1)), None, "a token too long to keep is not kept");
    }
}
