//! The stdio transport: newline-delimited JSON on a reader and a writer, one writer task so frames never interleave.

use std::io;
use std::sync::Arc;

use tokio::io::{AsyncBufRead, AsyncBufReadExt, AsyncRead, AsyncWrite, AsyncWriteExt, BufReader, BufWriter};
use tokio::sync::mpsc;

use tokio_util::sync::CancellationToken;

use crate::base::cancel::cleanup_tasks;
use crate::base::sink::FrameSink;

use crate::base::backlog::{Admit, Backlog};
use crate::context::Era;
use crate::dispatch::Origin;
use crate::era::v2025::Session;
use crate::server::Server;
use crate::wire::error::{Error, ErrorCode};
use crate::wire::jsonrpc::{Incoming, Received};

/// Serves one session over an async reader and writer; a writer task puts the frames on the writer.
pub(crate) async fn serve<R, W>(
    server: Server,
    reader: R,
    writer: W,
    stop: impl std::future::Future<Output = ()>,
) -> io::Result<()>
where
    R: AsyncRead + Unpin + Send + 'static,
    W: AsyncWrite + Unpin + Send + 'static,
{
    let (tx, rx) = mpsc::unbounded_channel();
    let backlog = Arc::new(Backlog::new(server.inner.limits().outbound));
    let stuck = CancellationToken::new();
    let writer = tokio::spawn(write_frames(rx, writer, backlog.clone()));
    let written = async move {
        match writer.await {
            Ok(result) => result,
            Err(e) => Err(io::Error::other(e)),
        }
    };
    let sink = Arc::new(ChannelSink { tx, backlog, stuck: stuck.clone() });
    serve_with(server, reader, sink, written, stop, stuck).await.0
}

/// Serves one session: frames go to `sink`; `written` completes once every frame was written (after the last sink
/// is dropped). Returns how it ended and the shutdown deadline it kept (the hooks that follow get what is left).
pub(crate) async fn serve_with<R>(
    server: Server,
    reader: R,
    sink: crate::dispatch::Sink,
    written: impl std::future::Future<Output = io::Result<()>>,
    stop: impl std::future::Future<Output = ()>,
    stuck: CancellationToken,
) -> (io::Result<()>, tokio::time::Instant)
where
    R: AsyncRead + Unpin + Send + 'static,
{
    let limit = server.inner.limits().max_message_bytes;
    let grace = server.inner.limits().shutdown_timeout;
    let session = Session::new(server, sink.clone());
    let mut reader = BufReader::with_capacity(64 * 1024, reader);
    let mut line = Vec::new();
    tokio::pin!(stop);
    let mut at_eof = false;
    let read_result = loop {
        // A client that does not read its answers is not read either, until they are down to the soft bound.
        if let Some(backlog) = sink.backlog().filter(|b| b.is_backed_up()) {
            tracing::debug!("the client is not reading its answers: its input waits");
            tokio::select! {
                () = backlog.backed_off() => {}
                () = &mut stop => break Ok(()),
                () = stuck.cancelled() => break Ok(()),
            }
        }
        let frame = tokio::select! {
            frame = read_frame(&mut reader, &mut line, limit) => frame,
            () = &mut stop => break Ok(()),
            // The peer stopped reading: what it asked for is cancelled and the session ends.
            () = stuck.cancelled() => break Ok(()),
        };
        match frame {
            Ok(Frame::Eof) => {
                at_eof = true;
                break Ok(());
            }
            Ok(Frame::TooLong) => session.reject(
                None,
                &Error::new(ErrorCode::INVALID_REQUEST, format!("message too long: the limit is {limit} bytes")),
            ),
            Ok(Frame::Line) => dispatch(&session, &line),
            Err(e) => break Err(e),
        }
    };
    // One deadline for all of shutdown: handlers and cleanups, the writer's last frames, the hooks after.
    let started = tokio::time::Instant::now();
    let deadline = started + grace;
    if at_eof {
        // The end of the input is not a cancel: what was asked is answered (a script piping requests in reads
        // every answer), for up to four fifths of the shutdown timeout; the rest is for the cancelled handlers'
        // cleanups and the hooks. A stop signal or a peer that stopped reading ends the wait.
        let answered = started + grace.mul_f64(0.8);
        tracing::debug!("input closed; waiting for what is in flight");
        // Open `subscriptions/listen` streams would never finish: they end now, with their result.
        session.connection().server().end_streams(Some(&**session.connection()));
        tokio::select! {
            _ = tokio::time::timeout_at(answered, session.connection().drained()) => {}
            () = &mut stop => {}
            () = stuck.cancelled() => {}
        }
    }
    tracing::debug!("cancelling what is in flight");
    shutdown(&session, deadline).await;
    drop(session);
    drop(sink);
    // Every sender is gone once the request tasks are; the writer then drains its queue and ends. A blocking
    // handler that ignores its cancel flag still holds its sender: the deadline ends the wait.
    match tokio::time::timeout_at(deadline, written).await {
        Ok(Err(e)) if e.kind() != io::ErrorKind::BrokenPipe => return (Err(e), deadline),
        _ => {}
    }
    (read_result, deadline)
}

fn dispatch(session: &Arc<Session>, line: &[u8]) {
    let line = line.trim_ascii();
    if line.is_empty() {
        return;
    }
    match Incoming::parse(line) {
        // One connection serves both eras: each request goes to its era's front (its cancels and the client's
        // answers are the session's, whichever era).
        Ok(message) => match (crate::era::of(&message, None), message) {
            (Era::V2026, Incoming::Request { id, method, params, envelope, arguments }) => {
                let origin = Origin { sink: session.connection().sink().clone(), http: None };
                let received = Received { id, method, params, envelope, arguments };
                crate::era::v2026::handle(session.connection(), received, &origin)
            }
            (_, message) => session.handle(message),
        },
        Err(rejected) => session.reject(rejected.id.as_ref(), &rejected.error),
    }
}

/// Cancels everything in flight, then waits (bounded) for the handlers to stop and for their cleanups.
pub(crate) async fn shutdown(session: &Arc<Session>, deadline: tokio::time::Instant) {
    // Open `subscriptions/listen` streams end cleanly, with their result; everything else is cancelled.
    session.connection().server().end_streams(Some(&**session.connection()));
    session.cancel_all("the session is ending");
    let tasks = cleanup_tasks();
    tasks.close();
    if tokio::time::timeout_at(deadline, tasks.wait()).await.is_err() {
        tracing::warn!("handlers or cleanups still running at the shutdown deadline were abandoned");
    }
    tasks.reopen();
}

enum Frame {
    Line,
    TooLong,
    Eof,
}

/// Reads one newline-terminated frame into `buf`. A frame longer than `limit` is skipped to its end without being
/// held in memory.
async fn read_frame<R: AsyncBufRead + Unpin>(reader: &mut R, buf: &mut Vec<u8>, limit: usize) -> io::Result<Frame> {
    buf.clear();
    let mut too_long = false;
    let mut seen_any = false;
    loop {
        let available = reader.fill_buf().await?;
        if available.is_empty() {
            return Ok(match (seen_any, too_long) {
                (false, _) => Frame::Eof,
                (true, true) => Frame::TooLong,
                (true, false) => Frame::Line,
            });
        }
        seen_any = true;
        let newline = available.iter().position(|&b| b == b'\n');
        let chunk = &available[..newline.unwrap_or(available.len())];
        if !too_long {
            if buf.len() + chunk.len() > limit {
                too_long = true;
                buf.clear();
                buf.shrink_to(64 * 1024);
            } else {
                buf.extend_from_slice(chunk);
            }
        }
        let used = chunk.len() + usize::from(newline.is_some());
        reader.consume(used);
        if newline.is_some() {
            return Ok(if too_long { Frame::TooLong } else { Frame::Line });
        }
    }
}

/// The single writer: one frame per line, flushed whenever the queue runs dry.
async fn write_frames<W: AsyncWrite + Unpin>(
    mut rx: mpsc::UnboundedReceiver<String>,
    writer: W,
    backlog: Arc<Backlog>,
) -> io::Result<()> {
    let mut writer = BufWriter::with_capacity(64 * 1024, writer);
    // A frame leaves the backlog as it is taken: what the bounds count is what waits behind it.
    while let Some(frame) = rx.recv().await {
        backlog.sent(frame.len());
        write_frame(&mut writer, &frame).await?;
        while let Ok(frame) = rx.try_recv() {
            backlog.sent(frame.len());
            write_frame(&mut writer, &frame).await?;
        }
        writer.flush().await?;
    }
    // Flushes, and lets a writer that works in the background finish.
    writer.shutdown().await
}

async fn write_frame<W: AsyncWrite + Unpin>(writer: &mut W, frame: &str) -> io::Result<()> {
    if frame.is_empty() {
        return Ok(());
    }
    writer.write_all(frame.as_bytes()).await?;
    writer.write_all(b"\n").await
}

/// The sink of a stream transport (`serve_streams`): the single writer's queue, bounded by bytes.
pub(crate) struct ChannelSink {
    pub tx: mpsc::UnboundedSender<String>,
    pub backlog: Arc<Backlog>,
    /// Cancelled when the peer stops reading: the session ends.
    pub stuck: tokio_util::sync::CancellationToken,
}

impl ChannelSink {
    fn push(&self, frame: String, droppable: bool) {
        match self.backlog.admit(frame.len(), droppable) {
            // A closed writer means the peer is gone; the frame is dropped.
            Admit::Send => {
                let _ = self.tx.send(frame);
            }
            Admit::Drop => {}
            Admit::Stuck => self.stuck.cancel(),
        }
    }
}

impl FrameSink for ChannelSink {
    fn send(&self, frame: crate::wire::jsonrpc::Frame) {
        self.push(frame.into_text(), false)
    }
    fn send_droppable(&self, frame: crate::wire::jsonrpc::Frame) {
        self.push(frame.into_text(), true)
    }
    fn backlog(&self) -> Option<&Backlog> {
        Some(&self.backlog)
    }
}

impl Server {
    /// Serves this server over stdin and stdout until stdin closes, or Ctrl-C or SIGTERM arrives; then cancels what
    /// is in flight, waits (bounded) for cleanups, and runs the shutdown hooks. When stdin closes, what is in flight
    /// is first waited for (up to four fifths of [`ServerBuilder::shutdown_timeout`](crate::ServerBuilder::shutdown_timeout)),
    /// so piped input gets every answer.
    pub async fn serve_stdio(self) -> std::io::Result<()> {
        self.warn_if_empty();
        self.prime_metrics(crate::metrics::Transport::Pipe);
        let stuck = tokio_util::sync::CancellationToken::new();
        // Pipes and sockets are served by the runtime itself; anything else (a terminal, a file) by two threads.
        #[cfg(unix)]
        let direct = crate::transport::fd_io::stdio(self.inner.limits().outbound, stuck.clone());
        #[cfg(not(unix))]
        let direct: Option<(
            crate::transport::ThreadStdin,
            crate::transport::StdoutSink,
            std::future::Ready<std::io::Result<()>>,
        )> = None;
        let (result, deadline) = match direct {
            Some((stdin, stdout, written)) => {
                serve_with(self.clone(), stdin, Arc::new(stdout), written, crate::transport::stop_signal(), stuck).await
            }
            None => {
                let stdin = crate::transport::ThreadStdin::spawn();
                let (stdout, written) = crate::transport::spawn_stdout(self.inner.limits().outbound, stuck.clone());
                serve_with(self.clone(), stdin, Arc::new(stdout), written, crate::transport::stop_signal(), stuck).await
            }
        };
        self.shutdown_by(deadline).await;
        result
    }

    /// Serves one session over any pair of byte streams, newline-delimited JSON, as on stdio. The shutdown hooks are
    /// not run when it ends (other sessions may still be using the server): call [`Server::shutdown`] for that.
    ///
    /// Over an in-memory pipe, a test can talk to a server in its own process:
    ///
    /// ```
    /// use serde_json::{json, Value};
    /// use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
    ///
    /// /// Say hello.
    /// #[mcp::tool]
    /// fn hello(name: String) -> String {
    ///     format!("Hello, {name}!")
    /// }
    ///
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() {
    /// let server = mcp::Server::builder().tool::<hello>().build().unwrap();
    /// let (client, server_end) = tokio::io::duplex(64 * 1024);
    /// let (read, write) = tokio::io::split(server_end);
    /// tokio::spawn(server.serve_streams(read, write));
    ///
    /// let (read, mut write) = tokio::io::split(client);
    /// let mut lines = BufReader::new(read).lines();
    /// let mut call = async |id: i64, method: &str, params: Value| {
    ///     let request = json!({ "jsonrpc": "2.0", "id": id, "method": method, "params": params });
    ///     write.write_all(format!("{request}\n").as_bytes()).await.unwrap();
    ///     serde_json::from_str::<Value>(&lines.next_line().await.unwrap().unwrap()).unwrap()
    /// };
    /// let client_info = json!({ "name": "test", "version": "0" });
    /// call(1, "initialize", json!({ "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": client_info }))
    ///     .await;
    /// let response = call(2, "tools/call", json!({ "name": "hello", "arguments": { "name": "Ada" } })).await;
    /// assert_eq!(response["result"]["content"][0]["text"], "Hello, Ada!");
    /// # }
    /// ```
    pub async fn serve_streams<R, W>(self, reader: R, writer: W) -> std::io::Result<()>
    where
        R: tokio::io::AsyncRead + Unpin + Send + 'static,
        W: tokio::io::AsyncWrite + Unpin + Send + 'static,
    {
        serve(self, reader, writer, std::future::pending()).await
    }
}
