//! The floor: the small vocabulary every layer of the runtime shares (frames and their sinks, boxed futures, names,
//! cancellation and cleanup, the lock helper). It imports nothing above it, so any layer may import it.

pub(crate) mod backlog;
#[cfg(feature = "http")]
pub(crate) mod body;
pub(crate) mod cancel;
pub(crate) mod frame;
pub(crate) mod future;
pub(crate) mod name;
pub(crate) mod seal;
pub(crate) mod sink;
pub(crate) mod sync;

/// Milliseconds since the Unix epoch.
pub(crate) fn now_ms() -> u64 {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map(|d| d.as_millis() as u64).unwrap_or_default()
}

/// 128 random bits from the operating system's CSPRNG, as 32 hex digits: session ids, task ids. Without randomness
/// there are no safe ids: the error says so, and nothing guessable is made instead.
pub(crate) fn random_id() -> Result<String, String> {
    let mut bytes = [0u8; 16];
    getrandom::fill(&mut bytes).map_err(|e| format!("the operating system's random number generator failed: {e}"))?;
    Ok(hex(&bytes))
}

/// Bytes as lower-case hex.
pub(crate) fn hex(bytes: &[u8]) -> String {
    const DIGITS: &[u8; 16] = b"0123456789abcdef";
    let mut out = String::with_capacity(bytes.len() * 2);
    for b in bytes {
        out.push(DIGITS[usize::from(b >> 4)] as char);
        out.push(DIGITS[usize::from(b & 15)] as char);
    }
    out
}
