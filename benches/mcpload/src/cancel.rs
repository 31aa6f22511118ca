//! The cancellation probe's settings and its report: one `sleep` call, cancelled after a delay, then watched for
//! the handler's markers on the server's stderr, for an answer to the cancelled id, and for a server still alive.

use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::markers::Markers;

pub struct Settings {
    /// The `ms` argument of the sleep call.
    pub sleep_ms: u64,
    /// How long after sending the call it is cancelled.
    pub delay_ms: u64,
    /// How long past the sleep's own end (or past a marker) the probe keeps listening.
    pub grace_ms: u64,
    /// The line the handler prints when it runs to its end.
    pub done_marker: Option<String>,
    /// The line the handler prints when it is dropped early.
    pub abort_marker: Option<String>,
    pub tool: String,
}

impl Settings {
    pub fn markers(&self) -> Markers {
        Markers::new(self.done_marker.iter().chain(&self.abort_marker).cloned().collect())
    }

    /// Whether the probe has seen enough by `now`: the sleep's end plus the grace has passed, or a grace has
    /// passed since one of the markers.
    pub fn over(&self, markers: &Markers, started: Instant, now: Instant) -> bool {
        let grace = Duration::from_millis(self.grace_ms);
        let mut end = started + Duration::from_millis(self.sleep_ms) + grace;
        for marker in self.done_marker.iter().chain(&self.abort_marker) {
            if let Some(at) = markers.first(marker, started) {
                end = end.min(at + grace);
            }
        }
        now >= end
    }
}

/// What the probe saw.
pub struct Seen {
    pub cancel_by: &'static str,
    pub started: Instant,
    /// An answer to the sleep call that came before the cancel was sent (the call failed at once, say).
    pub answered_before_cancel: bool,
    /// The answer to the cancelled id, and when it came.
    pub response: Option<(Value, Instant)>,
    pub ping_ok: bool,
}

pub fn report(settings: &Settings, markers: &Markers, seen: Seen) -> Value {
    let ms = |at: Instant| (at - seen.started).as_millis() as u64;
    let marker = |m: &Option<String>| m.as_ref().map(|m| markers.first(m, seen.started));
    let done = marker(&settings.done_marker);
    let aborted = marker(&settings.abort_marker);
    let handler = if done.is_none() && aborted.is_none() {
        Value::Null
    } else {
        json!({
            "completed": done.map(|d| d.is_some()),
            "completed_after_ms": done.flatten().map(ms),
            "aborted": aborted.map(|a| a.is_some()),
            "aborted_after_ms": aborted.flatten().map(ms),
        })
    };
    json!({
        "cancel_by": seen.cancel_by,
        "sleep_ms": settings.sleep_ms,
        "delay_ms": settings.delay_ms,
        "grace_ms": settings.grace_ms,
        "handler": handler,
        "answered_before_cancel": seen.answered_before_cancel,
        "cancelled_response_received": seen.response.is_some(),
        "cancelled_response_after_ms": seen.response.as_ref().map(|(_, at)| ms(*at)),
        "cancelled_response": seen.response.map(|(v, _)| v),
        "ping_ok_after_probe": seen.ping_ok,
    })
}
