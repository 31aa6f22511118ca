//! The process's stdin and stdout, each served by a dedicated thread doing blocking I/O: stdin as an async reader,
//! stdout as a frame sink.
//!
//! Tokio's own `stdin()`/`stdout()` hand every read and write to the blocking thread pool, a cross-thread round trip
//! per call. A thread that stays blocked on `read` (and one that drains a queue into `write`) costs one channel hop
//! instead, which is what a request/response protocol on a pipe wants.

use std::future::Future;
use std::io::{self, Read, Write};
use std::pin::Pin;
use std::task::{Context, Poll};

use tokio::io::{AsyncRead, ReadBuf};
use tokio::sync::mpsc;

use std::sync::Arc;

use tokio_util::sync::CancellationToken;

use crate::base::backlog::{Admit, Backlog, OutboundLimits};
use crate::dispatch::FrameSink;
use crate::wire::jsonrpc::Frame;

/// stdin, read by a thread in chunks of up to 64 KiB.
pub(crate) struct ThreadStdin {
    chunks: mpsc::Receiver<io::Result<Vec<u8>>>,
    pending: Vec<u8>,
    offset: usize,
}

impl ThreadStdin {
    pub(crate) fn spawn() -> ThreadStdin {
        let (tx, rx) = mpsc::channel(4);
        let spawned = std::thread::Builder::new().name("mcp-stdin".into()).spawn(move || {
            let mut stdin = io::stdin().lock();
            let mut buf = vec![0u8; 64 * 1024];
            loop {
                match stdin.read(&mut buf) {
                    Ok(0) => return,
                    Ok(n) => {
                        if tx.blocking_send(Ok(buf[..n].to_vec())).is_err() {
                            return;
                        }
                    }
                    Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                    Err(e) => {
                        let _ = tx.blocking_send(Err(e));
                        return;
                    }
                }
            }
        });
        if let Err(e) = spawned {
            tracing::error!("could not start the stdin thread: {e}");
        }
        ThreadStdin { chunks: rx, pending: Vec::new(), offset: 0 }
    }
}

impl AsyncRead for ThreadStdin {
    fn poll_read(mut self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &mut ReadBuf<'_>) -> Poll<io::Result<()>> {
        if self.offset == self.pending.len() {
            match self.chunks.poll_recv(cx) {
                Poll::Ready(Some(Ok(chunk))) => {
                    self.pending = chunk;
                    self.offset = 0;
                }
                Poll::Ready(Some(Err(e))) => return Poll::Ready(Err(e)),
                Poll::Ready(None) => return Poll::Ready(Ok(())), // end of input
                Poll::Pending => return Poll::Pending,
            }
        }
        let n = (self.pending.len() - self.offset).min(buf.remaining());
        let start = self.offset;
        buf.put_slice(&self.pending[start..start + n]);
        self.offset += n;
        Poll::Ready(Ok(()))
    }
}

/// stdout, written by a thread that flushes whenever its queue runs dry. Frames go straight from the request that
/// produced them into the thread's queue: no writer task in between.
pub(crate) struct StdoutSink {
    tx: mpsc::UnboundedSender<Vec<u8>>,
    backlog: Arc<Backlog>,
    stuck: CancellationToken,
}

impl StdoutSink {
    fn push(&self, frame: String, droppable: bool) {
        if frame.is_empty() {
            return;
        }
        match self.backlog.admit(frame.len() + 1, droppable) {
            Admit::Send => {
                let _ = self.tx.send(crate::transport::line(frame));
            }
            Admit::Drop => {}
            Admit::Stuck => self.stuck.cancel(),
        }
    }
}

impl FrameSink for StdoutSink {
    fn send(&self, frame: Frame) {
        self.push(frame.into_text(), false)
    }
    fn send_droppable(&self, frame: Frame) {
        self.push(frame.into_text(), true)
    }
    fn backlog(&self) -> Option<&Backlog> {
        Some(&self.backlog)
    }
}

/// The stdout writer thread, and its sink: frames wait in a queue bounded by `limits`; `stuck` is cancelled when the
/// peer stops reading.
pub(crate) fn spawn_stdout(
    limits: OutboundLimits,
    stuck: CancellationToken,
) -> (StdoutSink, impl Future<Output = io::Result<()>>) {
    let (tx, mut rx) = mpsc::unbounded_channel::<Vec<u8>>();
    let backlog = Arc::new(Backlog::new(limits));
    let written = backlog.clone();
    let (done_tx, done_rx) = tokio::sync::oneshot::channel::<io::Result<()>>();
    let spawned = std::thread::Builder::new().name("mcp-stdout".into()).spawn(move || {
        let mut stdout = io::stdout().lock();
        let mut result = Ok(());
        // A frame leaves the backlog as it is taken: what the bounds count is what waits behind it.
        'outer: while let Some(bytes) = rx.blocking_recv() {
            written.sent(bytes.len());
            if let Err(e) = stdout.write_all(&bytes) {
                result = Err(e);
                break;
            }
            while let Ok(more) = rx.try_recv() {
                written.sent(more.len());
                if let Err(e) = stdout.write_all(&more) {
                    result = Err(e);
                    break 'outer;
                }
            }
            if let Err(e) = stdout.flush() {
                result = Err(e);
                break;
            }
        }
        let _ = stdout.flush();
        let _ = done_tx.send(result);
    });
    if let Err(e) = spawned {
        tracing::error!("could not start the stdout thread: {e}");
    }
    let done = async move { done_rx.await.unwrap_or(Ok(())) };
    (StdoutSink { tx, backlog, stuck }, done)
}
