//! The floor: the small vocabulary every layer of the runtime shares (frames and their sinks, boxed futures,
//! cancellation and cleanup, the lock helper). It imports nothing above it, so any layer may import it.

pub(crate) mod backlog;
pub(crate) mod cancel;
pub(crate) mod frame;
pub(crate) mod future;
pub(crate) mod seal;
pub(crate) mod sink;
pub(crate) mod sync;

/// Milliseconds since the Unix epoch.
pub(crate) fn now_ms() -> u64 {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map(|d| d.as_millis() as u64).unwrap_or_default()
}
