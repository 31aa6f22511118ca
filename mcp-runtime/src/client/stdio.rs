//! The stdio transport of the client: one JSON-RPC message per line each way, to a child process or to a server in
//! this process ([`ClientBuilder::in_process`](super::ClientBuilder::in_process), over an in-memory pipe). Lines
//! from the server are bounded by the frame limit; a child's stderr is forwarded (to the client's stderr, or to
//! `on_stderr`) and its last few KiB kept, so that when the child exits every waiting call fails with its exit
//! status and what it said last.

use std::process::{ExitStatus, Stdio as Piped};
use std::sync::{Arc, Mutex, Weak};
use std::time::Duration;

use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::process::{Child, ChildStdout};
use tokio::sync::{mpsc, watch};
use tokio::task::JoinHandle;

use super::frame::{Lines, Piece, HEAD};
use super::{Error, Inner, Link, StderrHandler, TransportError, TransportErrorKind};
use crate::base::sync::Unpoisoned;
use crate::wire::jsonrpc::RequestId;

/// How many frames may wait for the server's input.
const QUEUE: usize = 1024;
/// How much of the child's stderr is kept for the error that reports its exit.
pub(crate) const STDERR_TAIL: usize = 4096;
/// How long to wait for the child's exit status (and the end of its stderr) once its stdout has ended.
const EXIT_WAIT: Duration = Duration::from_millis(1000);
/// The longest stderr line handed to an `on_stderr` handler; a longer one is handed in pieces.
const STDERR_LINE: usize = 16 * 1024;

pub(crate) struct Stdio {
    /// The writer's queue; taken on close, so that the writer ends and the server's input closes.
    tx: Mutex<Option<mpsc::Sender<String>>>,
    server: ServerEnd,
}

/// The server's end: who reads what the client writes.
enum ServerEnd {
    /// A child process.
    Child {
        /// Boxed: a `Child` is large beside a session's handle.
        child: Box<Mutex<Option<Child>>>,
        /// The end of the child's stderr.
        tail: Arc<Mutex<Tail>>,
        /// Becomes true when the child's stderr has ended.
        stderr_done: watch::Receiver<bool>,
    },
    /// A session of a server in this process (`Server::serve_streams`), running in a task; taken by whoever waits
    /// for its end.
    InProcess(Mutex<Option<JoinHandle<std::io::Result<()>>>>),
}

/// The last [`STDERR_TAIL`] bytes of the child's stderr.
#[derive(Default)]
struct Tail {
    bytes: Vec<u8>,
    cut: bool,
}

impl Tail {
    fn push(&mut self, chunk: &[u8]) {
        self.bytes.extend_from_slice(chunk);
        if self.bytes.len() > 2 * STDERR_TAIL {
            let excess = self.bytes.len() - STDERR_TAIL;
            self.bytes.drain(..excess);
            self.cut = true;
        }
    }

    /// The kept text, from the first whole line when the start was cut, without trailing blank space.
    fn text(&self) -> String {
        let mut bytes = &self.bytes[self.bytes.len().saturating_sub(STDERR_TAIL)..];
        if self.cut || self.bytes.len() > STDERR_TAIL {
            if let Some(at) = bytes.iter().position(|b| *b == b'\n') {
                bytes = &bytes[at + 1..];
            }
        }
        String::from_utf8_lossy(bytes).trim_end().to_owned()
    }
}

impl Stdio {
    /// Starts the child, its stderr piped and forwarded; its stdout is to be read with [`read_loop`].
    pub(crate) fn spawn(
        mut command: tokio::process::Command,
        on_stderr: Option<StderrHandler>,
    ) -> Result<(Stdio, ChildStdout), Error> {
        command.stdin(Piped::piped()).stdout(Piped::piped()).stderr(Piped::piped()).kill_on_drop(true);
        let mut child = command.spawn().map_err(|e| {
            Error::Transport(TransportError::new(TransportErrorKind::Spawn, "could not start the server").source(e))
        })?;
        let missing = |what: &str| {
            Error::Transport(TransportError::new(TransportErrorKind::Io, format!("the child has no {what}")))
        };
        let stdin = child.stdin.take().ok_or_else(|| missing("stdin"))?;
        let stdout = child.stdout.take().ok_or_else(|| missing("stdout"))?;
        let stderr = child.stderr.take().ok_or_else(|| missing("stderr"))?;
        let tail = Arc::new(Mutex::new(Tail::default()));
        let (done, stderr_done) = watch::channel(false);
        tokio::spawn(forward_stderr(stderr, tail.clone(), on_stderr, done));
        let tx = writer(stdin);
        let server = ServerEnd::Child { child: Box::new(Mutex::new(Some(child))), tail, stderr_done };
        Ok((Stdio { tx: Mutex::new(Some(tx)), server }, stdout))
    }

    /// Speaks to a server session in this process: frames go to `input` (the session's reader), which closes when
    /// the client closes or is dropped; `session` is the task serving it.
    pub(crate) fn in_process(
        input: impl AsyncWrite + Unpin + Send + 'static,
        session: JoinHandle<std::io::Result<()>>,
    ) -> Stdio {
        let tx = writer(input);
        Stdio { tx: Mutex::new(Some(tx)), server: ServerEnd::InProcess(Mutex::new(Some(session))) }
    }

    fn sender(&self) -> Option<mpsc::Sender<String>> {
        self.tx.locked().clone()
    }

    /// Queues a frame, waiting for room (the caller bounds the wait by its deadline).
    pub(crate) async fn send(&self, frame: String) {
        if let Some(tx) = self.sender() {
            let _ = tx.send(frame).await;
        }
    }

    /// Queues a frame now, or drops it if the queue is full (a cancel, from a destructor; an answer to a ping).
    pub(crate) fn try_send(&self, frame: String) {
        if let Some(Err(mpsc::error::TrySendError::Full(_))) = self.sender().map(|tx| tx.try_send(frame)) {
            tracing::warn!("the server is not reading its input fast enough: a message to it was dropped");
        }
    }

    /// Closes the server's input (by dropping the writer's queue); then waits up to 2 s for a child to exit (and
    /// kills it after), or for an in-process session to end (bounded by the server's own shutdown timeout).
    pub(crate) async fn close(&self) {
        match &self.server {
            ServerEnd::Child { child, .. } => {
                let child = child.locked().take();
                let Some(mut child) = child else { return };
                // The writer ends once the queue is closed and drained, and drops the child's stdin: end of input.
                self.tx.locked().take();
                match tokio::time::timeout(Duration::from_secs(2), child.wait()).await {
                    Ok(_) => {}
                    Err(_) => {
                        let _ = child.kill().await;
                    }
                }
            }
            ServerEnd::InProcess(session) => {
                let session = session.locked().take();
                self.tx.locked().take();
                if let Some(session) = session {
                    // The session sees the end of its input, answers what is in flight and ends.
                    let _ = session.await;
                }
            }
        }
    }

    /// Why the connection ended, once the server's output has: a child's exit status (waited for up to
    /// [`EXIT_WAIT`]; `None` if it is still running) and the end of its stderr; or how an in-process session ended.
    async fn ended(&self) -> Error {
        let (child, tail, stderr_done) = match &self.server {
            ServerEnd::Child { child, tail, stderr_done } => (child, tail, stderr_done),
            ServerEnd::InProcess(session) => {
                let session = session.locked().take();
                let Some(session) = session else { return Error::Closed };
                let failed = |what: &str| TransportError::new(TransportErrorKind::Io, what.to_owned());
                return match tokio::time::timeout(EXIT_WAIT, session).await {
                    Ok(Ok(Err(e))) => Error::Transport(failed("the in-process server's session failed").source(e)),
                    Ok(Err(e)) => {
                        Error::Transport(failed("the in-process server's session ended abnormally").source(e))
                    }
                    Ok(Ok(Ok(()))) | Err(_) => Error::Closed,
                };
            }
        };
        let deadline = tokio::time::Instant::now() + EXIT_WAIT;
        let status = loop {
            let polled: Option<ExitStatus> = {
                let mut child = child.locked();
                child.as_mut().and_then(|c| c.try_wait().ok().flatten())
            };
            if polled.is_some() || tokio::time::Instant::now() >= deadline {
                break polled;
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        };
        let mut done = stderr_done.clone();
        let _ = tokio::time::timeout_at(
            deadline.max(tokio::time::Instant::now() + Duration::from_millis(100)),
            done.wait_for(|d| *d),
        )
        .await;
        let stderr = tail.locked().text();
        Error::Exited { status, stderr }
    }
}

/// The one task that writes to the server's input: what is ready, then a flush. When its queue closes and is
/// drained, or a write fails, it shuts `input` down and drops it: the end of the server's input (an in-memory pipe
/// ends at its shutdown, not when one half of it is dropped).
fn writer(mut input: impl AsyncWrite + Unpin + Send + 'static) -> mpsc::Sender<String> {
    let (tx, mut rx) = mpsc::channel::<String>(QUEUE);
    tokio::spawn(async move {
        'frames: while let Some(mut frame) = rx.recv().await {
            frame.push('\n');
            if input.write_all(frame.as_bytes()).await.is_err() {
                break;
            }
            // Write whatever else is ready before flushing.
            while let Ok(mut more) = rx.try_recv() {
                more.push('\n');
                if input.write_all(more.as_bytes()).await.is_err() {
                    break 'frames;
                }
            }
            if input.flush().await.is_err() {
                break;
            }
        }
        let _ = input.shutdown().await;
    });
    tx
}

/// Copies the child's stderr to the handler (line by line) or to the client's own stderr (as it comes), keeping its
/// tail.
async fn forward_stderr(
    mut stderr: impl AsyncRead + Unpin,
    tail: Arc<Mutex<Tail>>,
    on_stderr: Option<StderrHandler>,
    done: watch::Sender<bool>,
) {
    let mut buffer = vec![0u8; 8192];
    let mut lines = Lines::new(STDERR_LINE);
    let mut ours = tokio::io::stderr();
    loop {
        let n = match stderr.read(&mut buffer).await {
            Ok(0) | Err(_) => break,
            Ok(n) => n,
        };
        let chunk = &buffer[..n];
        tail.locked().push(chunk);
        match &on_stderr {
            Some(handler) => lines.feed(chunk, &mut |piece| {
                let (Piece::Line(line) | Piece::TooLong(line)) = piece;
                handler(&String::from_utf8_lossy(line));
            }),
            None => {
                let _ = ours.write_all(chunk).await;
            }
        }
    }
    let _ = done.send(true);
}

/// Reads the server's output (a child's stdout), one message per line, until it ends; then every waiting call (and
/// every later one) fails with why it ended (a child's exit status and the end of its stderr).
pub(crate) fn read_loop(mut stdout: impl AsyncRead + Unpin + Send + 'static, inner: Weak<Inner>, limit: usize) {
    tokio::spawn(async move {
        let mut lines = Lines::new(limit);
        let mut buffer = vec![0u8; 64 * 1024];
        loop {
            let n = match stdout.read(&mut buffer).await {
                Ok(0) => break,
                Ok(n) => n,
                Err(e) => {
                    tracing::error!(error = %e, "reading the server's stdout failed");
                    break;
                }
            };
            let Some(inner) = inner.upgrade() else { return };
            lines.feed(&buffer[..n], &mut |piece| receive_line(&inner, piece, limit));
        }
        if let Some(inner) = inner.upgrade() {
            let error = match &inner.link {
                Link::Stdio(stdio) => stdio.ended().await,
                Link::Http(_) => Error::Closed,
            };
            inner.close_with(error);
        }
    });
}

/// One line from the server: a message, or a line this client skips (with an error in the log).
fn receive_line(inner: &Arc<Inner>, piece: Piece<'_>, limit: usize) {
    match piece {
        Piece::Line(line) if line.trim_ascii().is_empty() => {}
        Piece::Line(line) => match serde_json::from_slice(line) {
            Ok(message) => inner.receive(message),
            Err(e) => tracing::error!(
                error = %e,
                line = %String::from_utf8_lossy(&line[..line.len().min(HEAD)]),
                "skipped a line from the server that is not a JSON message"
            ),
        },
        Piece::TooLong(head) => {
            let id = answered_id(head);
            tracing::error!(
                limit,
                id = ?id,
                head = %String::from_utf8_lossy(head),
                "skipped a line from the server over the frame limit (ClientBuilder::frame_limit)"
            );
            if let Some(id) = id {
                inner.fail(&id, Error::FrameTooLarge { limit });
            }
        }
    }
}

/// The request id of a response from the first bytes of its line, when `"id"` comes before `"result"` or `"error"`
/// at the top level (as this crate's server and most others write it): the call it answers can then fail now
/// rather than at its timeout. `None` for anything else.
pub(crate) fn answered_id(head: &[u8]) -> Option<RequestId> {
    let text = std::str::from_utf8(head).ok().or_else(|| {
        let valid = std::str::from_utf8(head).err()?.valid_up_to();
        std::str::from_utf8(&head[..valid]).ok()
    })?;
    let text = text.trim_start().strip_prefix('{')?;
    let at = text.find("\"id\"")?;
    let before = &text[..at];
    if ["\"result\"", "\"error\"", "\"method\"", "{", "["].iter().any(|k| before.contains(k)) {
        return None;
    }
    let value = text[at + 4..].trim_start().strip_prefix(':')?.trim_start();
    let mut values = serde_json::Deserializer::from_str(value).into_iter::<serde_json::Value>();
    let id = values.next()?.ok()?;
    // A value that reaches the end of the head may have been cut (an id 123 read as 12).
    if values.byte_offset() >= value.len() {
        return None;
    }
    match id {
        serde_json::Value::Number(n) => n.as_i64().map(RequestId::Number),
        serde_json::Value::String(s) => Some(RequestId::String(s.into())),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_id_of_an_over_long_answer_is_read_only_where_it_is_plain() {
        assert_eq!(answered_id(br#"{"jsonrpc":"2.0","id":7,"result":{"text":"xxxx"#), Some(RequestId::Number(7)));
        assert_eq!(answered_id(br#" { "id" : "a-1", "result""#), Some(RequestId::String("a-1".into())));
        assert_eq!(answered_id(br#"{"result":{"id":7,"#), None, "an id inside the result is not the answer's");
        assert_eq!(answered_id(br#"{"jsonrpc":"2.0","method":"x","params":{"id":3"#), None);
        assert_eq!(answered_id(br#"{"jsonrpc":"2.0","id":12"#), None, "a number that may go on is not read");
        assert_eq!(answered_id(b"\xff{\"id\":1,"), None);
        let mut cut = "{\"id\":5,\"result\":\"é".as_bytes().to_vec();
        cut.pop();
        assert_eq!(answered_id(&cut), Some(RequestId::Number(5)), "a head cut inside a character");
    }
}
