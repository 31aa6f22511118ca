//! Input back-pressured as flow control would: a session whose client does not read its streams gets its new POSTs
//! held, then refused, before the server reads what they ask.

use std::sync::atomic::Ordering;
use std::time::Duration;

use axum::http::{header, HeaderValue, StatusCode};
use axum::response::Response;

use super::session::HttpSession;
use crate::transport::http::json_body;
use crate::wire::error::Error;
use crate::wire::jsonrpc::{Frame, Incoming};

/// How long a POST waits for its session's unread streams to drain below the soft bound before it is refused (503,
/// `Retry-After`): 5 s.
pub(crate) const BACKED_UP_WAIT: Duration = Duration::from_secs(5);

/// Whether a message frees work rather than makes it (an answer to the server's request, a cancel): admitted
/// however much waits unread.
pub(super) fn frees_work(message: &Incoming) -> bool {
    match message {
        Incoming::Response { .. } => true,
        Incoming::Notification { method, .. } => method == "notifications/cancelled",
        Incoming::Request { .. } => false,
    }
}

/// Input is back-pressured, as flow control would: while more than the soft bound waits unread on a session's
/// streams (its GET stream, its POSTs' SSE streams), a new POST of it waits for them to drain, up to
/// [`BACKED_UP_WAIT`]; then it is refused with 503, `Retry-After` and -31000. It is refused before the server
/// reads what it asks, so no response it is owed is dropped.
pub(super) async fn wait_for_reader(session: &HttpSession, message: &Incoming) -> Result<(), Response> {
    tracing::debug!("the client is not reading its session's streams: its POST waits");
    if tokio::time::timeout(BACKED_UP_WAIT, session.outbound.backed_off()).await.is_ok() {
        return Ok(());
    }
    let soft = session.session.connection().server().inner.limits().outbound.soft_bytes;
    let refused = session.refused.fetch_add(1, Ordering::Relaxed) + 1;
    if refused.is_power_of_two() {
        tracing::warn!(
            refused,
            soft_bytes = soft,
            peer = ?session.peer,
            "a client is not reading its session's streams: refusing its new requests (503) until it does"
        );
    }
    let id = match message {
        Incoming::Request { id, .. } => Some(id),
        _ => None,
    };
    let error = Error::new(
        crate::ErrorCode::OVERLOADED,
        format!(
            "the client is not reading its session's streams: more than the soft bound of {soft} bytes waits \
             unread on them, for over {}s; read the session's streams (its GET stream, its requests' SSE streams) \
             and try again (or raise the bound with ServerBuilder::outbound_limits)",
            BACKED_UP_WAIT.as_secs()
        ),
    );
    let body = Frame::error(id, &error);
    let mut response = json_body(StatusCode::SERVICE_UNAVAILABLE, body);
    response.headers_mut().insert(header::RETRY_AFTER, HeaderValue::from_static("1"));
    Err(response)
}
