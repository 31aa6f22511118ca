//! The era fronts. Each turns an incoming request into one [`Request`](crate::dispatch::Request) shape with its
//! metadata, answers what only its era has, and hands the rest to the one dispatcher:
//!
//! - [`v2025`]: `initialize` and the session it starts (client info, log level, resource subscriptions), `ping`,
//!   `logging/setLevel`, `resources/subscribe`, and the client's answers to requests from the server.
//! - [`v2026`]: the stateless `_meta` envelope, `server/discover`, `subscriptions/listen`, `input_required`
//!   results with their sealed `requestState`, and the 2026 HTTP header rules.
//!
//! On stdio one connection serves both: a request whose `_meta` carries
//! `io.modelcontextprotocol/protocolVersion` (and `server/discover` or `subscriptions/listen`, which exist only in
//! the 2026 era) goes to the 2026 front; everything else to the 2025 session.

pub(crate) mod v2025;
pub(crate) mod v2026;

use std::sync::atomic::{AtomicU8, Ordering};

use serde_json::Value;

use crate::context::{EraState, InFlight, Peer, RequestEra};
use crate::wire::error::Error;
use crate::wire::protocol::{CacheHint, LogLevel};
use v2026::Round;

/// The session's log level before any `logging/setLevel`: everything is sent.
pub(crate) const LOG_LEVEL_UNSET: u8 = u8::MAX;

/// The 2025 session's part of each of its requests: the log level `logging/setLevel` set, read at each log call.
pub(crate) struct SessionLog {
    pub level: AtomicU8,
}

impl Default for SessionLog {
    fn default() -> SessionLog {
        SessionLog { level: AtomicU8::new(LOG_LEVEL_UNSET) }
    }
}

impl RequestEra for SessionLog {
    fn log_enabled(&self, level: LogLevel) -> bool {
        let min = self.level.load(Ordering::Relaxed);
        min == LOG_LEVEL_UNSET || level as u8 >= min
    }
    fn interrupt(&self) -> Option<&tokio::sync::Notify> {
        None
    }
    fn was_interrupted(&self) -> bool {
        false
    }
    fn session(&self, peer: &dyn Peer) -> Option<String> {
        peer.session_key()
    }
    fn result_prefix<'a>(&self, _peer: &'a dyn Peer) -> Option<&'a str> {
        None
    }
    fn decorate(&self, _peer: &dyn Peer, result: Value, _hints: Option<CacheHint>) -> Value {
        result
    }
    fn interrupted_result(&self, _request: &InFlight) -> Result<Value, Error> {
        Err(Error::internal("interrupted outside the 2026 era"))
    }
    fn as_any(&self) -> &(dyn std::any::Any + Send + Sync) {
        self
    }
}

/// The 2026 round of questions of a request; none in the 2025 era, where questions are requests to the client.
pub(crate) fn round(era: &EraState) -> Option<&Round> {
    era.as_any().downcast_ref()
}
