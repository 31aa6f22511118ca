//! Reading an HTTP request body within a size limit and a time, shared by the server's endpoint and the client's
//! webhook receiver: a body over the limit is read on and thrown away before the `413`, so the sender reads it.

use std::pin::Pin;
use std::time::Duration;

use axum::body::{Body, Bytes};
use futures_core::Stream;

/// How much more than the limit a body may send before it is refused unread: 64 MiB.
pub(crate) const DISCARD_BYTES: u64 = 64 << 20;

/// A request body, as [`read_body`] read it.
pub(crate) enum BodyRead {
    /// The whole body, within the limit.
    Whole(Bytes),
    /// Over the limit.
    TooLarge,
    /// It did not arrive within the body read timeout.
    TimedOut,
    /// The connection broke off in the middle, or the body's framing was wrong.
    Broken,
}

/// Reads a request body of at most `limit` bytes within `timeout`. Of a longer one, the rest is read and thrown
/// away (up to [`DISCARD_BYTES`] more, within the same timeout) before the 413 goes out: a connection closed with
/// part of its upload unread is reset, and a client still sending (one that did not ask for `100 Continue`) would
/// see its writes fail instead of the answer. A body declared longer than that is refused without reading on.
///
/// A body that came in one piece (a small one usually arrives with the request's head) is kept as it came, without
/// a copy.
pub(crate) async fn read_body(body: Body, limit: usize, declared: Option<u64>, timeout: Duration) -> BodyRead {
    let (limit, most) = (limit as u64, (limit as u64).saturating_add(DISCARD_BYTES));
    if declared.is_some_and(|n| n > most) {
        return BodyRead::TooLarge;
    }
    let deadline = tokio::time::Instant::now() + timeout;
    let mut stream = body.into_data_stream();
    // The body while it is one piece; once a second piece comes, the pieces are copied into `kept`.
    let mut first: Option<Bytes> = None;
    let mut kept = Vec::new();
    let mut read = 0u64;
    loop {
        let next = std::future::poll_fn(|cx| Pin::new(&mut stream).poll_next(cx));
        let next = tokio::time::timeout_at(deadline, next).await;
        let chunk = match (next, read > limit) {
            (Ok(Some(Ok(chunk))), _) => chunk,
            (Ok(None), false) => return BodyRead::Whole(first.unwrap_or_else(|| Bytes::from(kept))),
            (Err(_), false) => return BodyRead::TimedOut,
            (Ok(Some(Err(_))), false) => return BodyRead::Broken,
            // Over the limit, however the rest went.
            (_, true) => return BodyRead::TooLarge,
        };
        read += chunk.len() as u64;
        if read > most {
            return BodyRead::TooLarge;
        } else if read > limit {
            (first, kept) = (None, Vec::new());
        } else if first.is_none() && kept.is_empty() {
            first = Some(chunk);
        } else {
            if let Some(first) = first.take() {
                kept.reserve(declared.map_or(0, |n| n.min(limit) as usize).max(first.len() + chunk.len()));
                kept.extend_from_slice(&first);
            }
            kept.extend_from_slice(&chunk);
        }
    }
}
