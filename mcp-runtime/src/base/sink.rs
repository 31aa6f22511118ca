//! Frames and where they go. Every frame a request or a connection sends leaves through a [`FrameSink`]: the
//! transport's writer (stdio), a request's own stream (HTTP), a task's route.

use std::sync::Arc;

use crate::base::frame::Frame;

/// Where the frames of a connection, or of one request, go: the transport's writer (stdio), or a request's own
/// stream (HTTP). `close` ends a request's stream once its last frame was sent.
pub(crate) trait FrameSink: Send + Sync {
    /// Sends a frame: a notification, or a request to the client.
    fn send(&self, frame: Frame);
    /// Sends a frame that may be dropped when the client is not keeping up (progress and log notifications).
    fn send_droppable(&self, frame: Frame) {
        self.send(frame)
    }
    /// Sends the final frame of a request (its response) and ends its stream.
    fn finish(&self, frame: Frame) {
        self.send(frame);
        self.close();
    }
    /// Ends a request's stream without a response (it was cancelled).
    fn close(&self) {}
    /// The bytes waiting for the client, for a sink that is a connection's single queue: its reader waits while
    /// they are past the soft bound.
    fn backlog(&self) -> Option<&crate::base::backlog::Backlog> {
        None
    }
}

/// A shared sink.
pub(crate) type Sink = Arc<dyn FrameSink>;

/// A sink that drops everything (a stateless request has no stream besides its own).
#[cfg(feature = "http")]
pub(crate) struct NoSink;

#[cfg(feature = "http")]
impl FrameSink for NoSink {
    fn send(&self, _: Frame) {}
}
