//! The era fronts. Each turns an incoming request into one [`Request`](crate::dispatch::Request) shape with its
//! metadata, answers what only its era has, and hands the rest to the one dispatcher:
//!
//! - [`v2025`]: `initialize` and the session it starts (client info, log level, resource subscriptions), `ping`,
//!   `logging/setLevel`, `resources/subscribe`, and the client's answers to requests from the server.
//! - [`v2026`]: the per-request `_meta` envelope, `server/discover`, `subscriptions/listen`, `input_required`
//!   results with their sealed `requestState`, and the 2026 HTTP header rules.
//!
//! [`of`] decides a message's era, the one place that does, for both transports: on stdio one connection serves
//! both eras, each request going to its era's front; on HTTP each request does, the 2026 front on a connection of
//! its own, the 2025 one on the session the request names.

pub(crate) mod v2025;
pub(crate) mod v2026;

use std::sync::atomic::{AtomicU8, Ordering};

use serde_json::Value;

use crate::context::{Era, EraState, InFlight, Link, RequestEra};
use crate::wire::error::Error;
use crate::wire::jsonrpc::Incoming;
use crate::wire::protocol::{CacheHint, LogLevel};
use v2026::Round;

/// The era a message belongs to. A request or notification is of the 2026 era when its `_meta` holds a key of the
/// 2026 envelope (a protocol version, client capabilities or client info: one without the version is a malformed
/// 2026 envelope, which that front answers -32602 naming what is missing) or its method exists only in that era;
/// on HTTP also when its `MCP-Protocol-Version` header (`version`; stdio has none) names a version no `initialize`
/// could have agreed on (the 2026 front then answers that the version is not served). A response (the client's
/// answer to a request of the server's) has no envelope: only the header can say.
pub(crate) fn of(message: &Incoming, version: Option<&str>) -> Era {
    let by_body = match message {
        Incoming::Request { method, envelope, .. } | Incoming::Notification { method, envelope, .. } => {
            v2026::is_2026(method, envelope.as_ref())
        }
        Incoming::Response { .. } => false,
    };
    let by_header = version.is_some_and(|v| Era::of_version(v) != Some(Era::V2025));
    if by_body || by_header {
        Era::V2026
    } else {
        Era::V2025
    }
}

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
    fn session(&self, link: &dyn Link) -> Option<String> {
        link.session_key()
    }
    fn result_prefix<'a>(&self, _link: &'a dyn Link) -> Option<&'a str> {
        None
    }
    fn decorate(&self, _link: &dyn Link, result: Value, _hints: Option<CacheHint>) -> Value {
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
