//! Bodies of HTTP answers read within bounds: a whole body up to a limit, the start of an error's body, and
//! server-sent events one at a time.

use std::collections::VecDeque;

use super::frame::{Event, Sse, SseItem};
use super::{Error, TransportError};

/// How much of an HTTP error's body is kept for [`Error::Http`].
pub(super) const ERROR_BODY: usize = 4096;

/// An HTTP status that is not an MCP answer, with the start of its body.
pub(super) fn http_error(status: reqwest::StatusCode, body: &[u8]) -> Error {
    let body = String::from_utf8_lossy(&body[..body.len().min(ERROR_BODY)]).trim().to_owned();
    Error::Http { status: status.as_u16(), body }
}

/// The first [`ERROR_BODY`] bytes of a body (of an HTTP error), or what came before the body failed.
pub(super) async fn read_prefix(mut response: reqwest::Response) -> Vec<u8> {
    let mut body = Vec::new();
    while body.len() < ERROR_BODY {
        match response.chunk().await {
            Ok(Some(chunk)) => body.extend_from_slice(&chunk),
            _ => break,
        }
    }
    body.truncate(ERROR_BODY);
    body
}

/// A whole body of at most `limit` bytes (a JSON answer; the authorization's documents and answers); a longer one is
/// [`Error::FrameTooLarge`], found out as soon as it is.
pub(super) async fn read_body(mut response: reqwest::Response, limit: usize) -> Result<Vec<u8>, Error> {
    if response.content_length().is_some_and(|n| n > limit as u64) {
        return Err(Error::FrameTooLarge { limit });
    }
    let mut body = Vec::new();
    loop {
        match response.chunk().await {
            Ok(Some(chunk)) => {
                if body.len() + chunk.len() > limit {
                    return Err(Error::FrameTooLarge { limit });
                }
                body.extend_from_slice(&chunk);
            }
            Ok(None) => return Ok(body),
            Err(e) => return Err(Error::Transport(TransportError::from_reqwest("reading the answer", e))),
        }
    }
}

/// Reads server-sent events from a response body, chunk by chunk, each chunk's bytes scanned once and an event's
/// data bounded by the frame limit.
pub(super) struct SseReader {
    response: reqwest::Response,
    parser: Sse,
    ready: VecDeque<SseItem>,
    limit: usize,
    done: bool,
}

impl SseReader {
    pub(super) fn new(response: reqwest::Response, limit: usize) -> SseReader {
        SseReader { response, parser: Sse::new(limit), ready: Default::default(), limit, done: false }
    }

    /// The next complete event (or [`Error::FrameTooLarge`] for one over the limit, which is skipped), or `None`
    /// at the end of the stream.
    pub(super) async fn next(&mut self) -> Option<Result<Event, Error>> {
        loop {
            match self.ready.pop_front() {
                Some(SseItem::Event(event)) => return Some(Ok(event)),
                Some(SseItem::TooLarge(_)) => return Some(Err(Error::FrameTooLarge { limit: self.limit })),
                None => {}
            }
            if self.done {
                return None;
            }
            match self.response.chunk().await {
                Ok(Some(chunk)) => {
                    let ready = &mut self.ready;
                    self.parser.feed(&chunk, &mut |item| ready.push_back(item));
                }
                _ => self.done = true,
            }
        }
    }
}
