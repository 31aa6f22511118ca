//! stdin and stdout served by the runtime itself, when both are pipes or sockets (as an MCP client's child process
//! has them): non-blocking, registered with tokio's reactor. A request's bytes wake the reader task directly, and a
//! response is written by the task that finished it, with one `writev`, when nothing is queued before it. Against
//! the two helper threads of `std_io` this takes two cross-thread wake-ups off every round trip; the thread pair
//! stays the fallback (a terminal, a file, `/dev/null`, or a stderr that shares stdout's pipe).
//!
//! `O_NONBLOCK` belongs to the open file description, which other holders of the same pipe share: it is set only on
//! pipes and sockets, never when stderr is the same object as stdout (an `eprintln!` would then fail with
//! `EAGAIN`), and the original flags come back when the transport ends.

use std::collections::VecDeque;
use std::fs::File;
use std::future::Future;
use std::io::{self, IoSlice, Read, Write};
use std::mem::ManuallyDrop;
use std::os::fd::{AsRawFd, FromRawFd, RawFd};
use std::os::unix::fs::{FileTypeExt, MetadataExt};
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{ready, Context, Poll};

use tokio::io::unix::AsyncFd;
use tokio::io::{AsyncRead, ReadBuf};
use tokio::sync::Notify;
use tokio_util::sync::CancellationToken;

use crate::base::backlog::{Admit, Backlog, OutboundLimits};
use crate::base::sync::Unpoisoned;
use crate::dispatch::FrameSink;
use crate::transport::line;
use crate::wire::jsonrpc::Frame;

/// A standard stream made non-blocking; its original flags are restored on drop. The `File` is never closed.
struct Fd {
    file: ManuallyDrop<File>,
    flags: libc::c_int,
}

impl AsRawFd for Fd {
    fn as_raw_fd(&self) -> RawFd {
        self.file.as_raw_fd()
    }
}

impl Drop for Fd {
    fn drop(&mut self) {
        // SAFETY: fcntl on a descriptor this process holds open for its whole life (0 or 1).
        unsafe { libc::fcntl(self.file.as_raw_fd(), libc::F_SETFL, self.flags) };
    }
}

/// The identity (device, inode) of a standard stream, and whether it is a pipe or a socket.
fn identity(fd: RawFd) -> Option<((u64, u64), bool)> {
    // SAFETY: the descriptor is one of the standard three, open for the process's life; ManuallyDrop never closes it.
    let file = ManuallyDrop::new(unsafe { File::from_raw_fd(fd) });
    let meta = file.metadata().ok()?;
    let kind = meta.file_type();
    Some(((meta.dev(), meta.ino()), kind.is_fifo() || kind.is_socket()))
}

/// Makes `fd` non-blocking and registers it with the reactor for `interest`.
fn register(fd: RawFd, interest: tokio::io::Interest) -> Option<AsyncFd<Fd>> {
    // SAFETY: as in `identity`; fcntl reads and sets the status flags of an open descriptor.
    let flags = unsafe { libc::fcntl(fd, libc::F_GETFL) };
    if flags < 0 || unsafe { libc::fcntl(fd, libc::F_SETFL, flags | libc::O_NONBLOCK) } < 0 {
        return None;
    }
    // SAFETY: as in `identity`.
    let fd = Fd { file: ManuallyDrop::new(unsafe { File::from_raw_fd(fd) }), flags };
    // SAFETY: standard streams stay open, and are the same descriptions, for the process's life; the framework never
    // closes them. On failure the Fd is dropped and its flags come back.
    unsafe { AsyncFd::register_with_interest(fd, interest) }.ok()
}

/// stdin and stdout registered with the reactor, when both can be (see the module's documentation).
pub(crate) fn stdio(limits: OutboundLimits, stuck: CancellationToken) -> Option<(FdStdin, DirectStdout, Written)> {
    let (input, input_ok) = identity(0)?;
    let (output, output_ok) = identity(1)?;
    let shares_stderr = identity(2).is_some_and(|(err, _)| err == output || err == input);
    // One socket as both stdin and stdout (inetd style) would have its flags restored by whichever ends first.
    let forced = std::env::var_os("MCP_STDIO_THREADS").is_some();
    if !input_ok || !output_ok || shares_stderr || input == output || forced {
        return None;
    }
    let stdin = register(0, tokio::io::Interest::READABLE)?;
    let stdout = register(1, tokio::io::Interest::WRITABLE)?;
    let out = Arc::new(Out {
        fd: stdout,
        queue: Mutex::new(Queue::default()),
        wake: Notify::new(),
        backlog: Backlog::new(limits),
    });
    let writer = tokio::spawn(drain(out.clone()));
    let written = Written(writer);
    Some((FdStdin(stdin), DirectStdout { out, stuck }, written))
}

/// stdin as an async reader, read as it becomes readable.
pub(crate) struct FdStdin(AsyncFd<Fd>);

impl AsyncRead for FdStdin {
    fn poll_read(self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &mut ReadBuf<'_>) -> Poll<io::Result<()>> {
        loop {
            let mut guard = ready!(self.0.poll_read_ready(cx))?;
            let unfilled = buf.initialize_unfilled();
            match guard.try_io(|fd| (&*fd.get_ref().file).read(unfilled)) {
                Ok(Ok(n)) => {
                    buf.advance(n);
                    return Poll::Ready(Ok(()));
                }
                Ok(Err(e)) if e.kind() == io::ErrorKind::Interrupted => continue,
                Ok(Err(e)) => return Poll::Ready(Err(e)),
                Err(_would_block) => continue,
            }
        }
    }
}

/// Frames waiting for stdout to take them, the first one maybe partly written.
#[derive(Default)]
struct Queue {
    frames: VecDeque<Vec<u8>>,
    /// How much of the first frame is written.
    offset: usize,
    /// The first frame left the backlog: it is being written (what waits behind it is what the bounds count).
    head_taken: bool,
    /// The sink is gone: the writer ends once the queue is empty.
    closed: bool,
    /// stdout failed (the client is gone): frames are dropped.
    failed: bool,
}

struct Out {
    fd: AsyncFd<Fd>,
    queue: Mutex<Queue>,
    /// Tells the writer task that frames wait (or that the sink is gone).
    wake: Notify,
    backlog: Backlog,
}

impl Out {
    fn lock(&self) -> std::sync::MutexGuard<'_, Queue> {
        self.queue.locked()
    }

    fn file(&self) -> &File {
        &self.fd.get_ref().file
    }
}

/// stdout as a frame sink: a frame is written at once when nothing waits before it and the pipe takes it; what
/// the pipe does not take waits, in order, for the writer task.
pub(crate) struct DirectStdout {
    out: Arc<Out>,
    stuck: CancellationToken,
}

impl DirectStdout {
    fn push(&self, frame: String, droppable: bool) {
        if frame.is_empty() {
            return;
        }
        let out = &*self.out;
        let len = frame.len() + 1;
        match out.backlog.admit(len, droppable) {
            Admit::Send => {}
            Admit::Drop => return,
            Admit::Stuck => return self.stuck.cancel(),
        }
        let mut queue = out.lock();
        if queue.failed {
            return out.backlog.sent(len);
        }
        if !queue.frames.is_empty() {
            return queue.frames.push_back(line(frame));
        }
        // Nothing before it: one non-blocking writev, under the lock so that frames never interleave.
        let written = loop {
            match out.file().write_vectored(&[IoSlice::new(frame.as_bytes()), IoSlice::new(b"\n")]) {
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => break Ok(0),
                other => break other,
            }
        };
        match written {
            Ok(n) if n == len => out.backlog.sent(len),
            // The pipe took part of it, or none: the rest waits for the writer task, as the frame being written.
            Ok(n) => {
                queue.frames.push_back(line(frame));
                queue.offset = n;
                queue.head_taken = true;
                out.backlog.sent(len);
                out.wake.notify_one();
            }
            Err(e) => {
                tracing::debug!("stdout failed: {e}; dropping what the server sends");
                queue.failed = true;
                out.backlog.sent(len);
            }
        }
    }
}

impl FrameSink for DirectStdout {
    fn send(&self, frame: Frame) {
        self.push(frame.into_text(), false)
    }
    fn send_droppable(&self, frame: Frame) {
        self.push(frame.into_text(), true)
    }
    fn backlog(&self) -> Option<&Backlog> {
        Some(&self.out.backlog)
    }
}

impl Drop for DirectStdout {
    fn drop(&mut self) {
        self.out.lock().closed = true;
        self.out.wake.notify_one();
    }
}

/// Completes once everything queued was written (or stdout failed), after the sink is gone.
pub(crate) struct Written(tokio::task::JoinHandle<io::Result<()>>);

impl Future for Written {
    type Output = io::Result<()>;
    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Poll::Ready(ready!(Pin::new(&mut self.0).poll(cx)).unwrap_or_else(|e| Err(io::Error::other(e))))
    }
}

/// The writer task: writes what waits whenever stdout can take it, until the sink is gone and nothing waits.
async fn drain(out: Arc<Out>) -> io::Result<()> {
    loop {
        let notified = out.wake.notified();
        tokio::pin!(notified);
        notified.as_mut().enable();
        let (waiting, closed) = {
            let queue = out.lock();
            (!queue.frames.is_empty() && !queue.failed, queue.closed)
        };
        if waiting {
            if let Err(e) = write_waiting(&out).await {
                out.lock().failed = true;
                return Err(e);
            }
            continue;
        }
        if closed {
            return Ok(());
        }
        notified.await;
    }
}

/// Writes the queue out as stdout becomes writable, until it is empty.
async fn write_waiting(out: &Out) -> io::Result<()> {
    loop {
        let mut guard = out.fd.writable().await?;
        let step = guard.try_io(|_| {
            let mut queue = out.lock();
            let Queue { frames, offset, head_taken, .. } = &mut *queue;
            let Some(front) = frames.front() else { return Ok(true) };
            if !std::mem::replace(head_taken, true) {
                out.backlog.sent(front.len());
            }
            let n = match out.file().write(&front[*offset..]) {
                Err(e) if e.kind() == io::ErrorKind::Interrupted => 0,
                other => other?,
            };
            *offset += n;
            if *offset == front.len() {
                frames.pop_front();
                *offset = 0;
                *head_taken = false;
            }
            Ok(frames.is_empty())
        });
        match step {
            Ok(Ok(true)) => return Ok(()),
            Ok(Ok(false)) | Err(_) => continue,
            Ok(Err(e)) => return Err(e),
        }
    }
}
