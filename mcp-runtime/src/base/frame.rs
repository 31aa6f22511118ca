//! A message as it leaves the server: its text and what it is. Made by the encoders of `wire::jsonrpc`
//! (`Frame::result`, `Frame::error`, ...), carried by every sink.

/// A message as it is sent: its text, and what it is, so that no layer reads back what another serialized (the
/// 2026 HTTP route answers an error response with the status its code calls for).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Frame {
    text: String,
    kind: FrameKind,
}

/// What a [`Frame`] is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum FrameKind {
    /// A request (from the server to the client).
    Request,
    /// A notification.
    Notification,
    /// A response with a result.
    Result,
    /// A response with an error, and its code.
    Error(i32),
}

impl Frame {
    /// A frame of `text`, which is a message of `kind` (the encoders say which).
    pub(crate) fn new(text: String, kind: FrameKind) -> Frame {
        Frame { text, kind }
    }

    /// Its text.
    #[cfg(any(test, feature = "http"))]
    pub(crate) fn text(&self) -> &str {
        &self.text
    }

    /// Its text, taken.
    pub(crate) fn into_text(self) -> String {
        self.text
    }

    /// What it is.
    #[cfg(feature = "http")]
    pub(crate) fn kind(&self) -> FrameKind {
        self.kind
    }

    /// The length of its text, in bytes.
    pub(crate) fn len(&self) -> usize {
        self.text.len()
    }
}
