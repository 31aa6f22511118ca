//! The stdio transport of the client: a child process, one JSON-RPC message per line each way.

use std::process::Stdio as Piped;
use std::sync::{Mutex, Weak};
use std::time::Duration;

use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::process::{Child, ChildStdout};
use tokio::sync::mpsc;

use super::{Error, Inner, TransportError, TransportErrorKind};

/// How many frames may wait for the child's stdin.
const QUEUE: usize = 1024;

pub(crate) struct Stdio {
    /// The writer's queue; taken on close, so that the writer ends and the child's stdin closes.
    tx: Mutex<Option<mpsc::Sender<String>>>,
    child: Mutex<Option<Child>>,
}

impl Stdio {
    /// Starts the child; its stdout is to be read with [`read_loop`].
    pub(crate) fn spawn(mut command: tokio::process::Command) -> Result<(Stdio, ChildStdout), Error> {
        command.stdin(Piped::piped()).stdout(Piped::piped()).kill_on_drop(true);
        let mut child = command.spawn().map_err(|e| {
            Error::Transport(TransportError::new(TransportErrorKind::Spawn, "could not start the server").source(e))
        })?;
        let missing = |what: &str| {
            Error::Transport(TransportError::new(TransportErrorKind::Io, format!("the child has no {what}")))
        };
        let mut stdin = child.stdin.take().ok_or_else(|| missing("stdin"))?;
        let stdout = child.stdout.take().ok_or_else(|| missing("stdout"))?;
        let (tx, mut rx) = mpsc::channel::<String>(QUEUE);
        tokio::spawn(async move {
            while let Some(mut frame) = rx.recv().await {
                frame.push('\n');
                if stdin.write_all(frame.as_bytes()).await.is_err() {
                    break;
                }
                // Write whatever else is ready before flushing.
                while let Ok(mut more) = rx.try_recv() {
                    more.push('\n');
                    if stdin.write_all(more.as_bytes()).await.is_err() {
                        return;
                    }
                }
                if stdin.flush().await.is_err() {
                    break;
                }
            }
        });
        Ok((Stdio { tx: Mutex::new(Some(tx)), child: Mutex::new(Some(child)) }, stdout))
    }

    fn sender(&self) -> Option<mpsc::Sender<String>> {
        self.tx.lock().unwrap_or_else(|e| e.into_inner()).clone()
    }

    /// Queues a frame, waiting for room.
    pub(crate) async fn send(&self, frame: String) {
        if let Some(tx) = self.sender() {
            let _ = tx.send(frame).await;
        }
    }

    /// Queues a frame now, or drops it if the queue is full (a cancel, from a destructor; an answer to a ping).
    pub(crate) fn try_send(&self, frame: String) {
        if let Some(Err(mpsc::error::TrySendError::Full(_))) = self.sender().map(|tx| tx.try_send(frame)) {
            tracing::warn!("the server's stdin is not keeping up: a message to it was dropped");
        }
    }

    /// Closes the child's stdin (by dropping the writer's queue) and waits up to 2 s for it to exit; kills it after.
    pub(crate) async fn close(&self) {
        let child = self.child.lock().unwrap_or_else(|e| e.into_inner()).take();
        let Some(mut child) = child else { return };
        // The writer ends once the queue is closed and drained, and drops the child's stdin: end of input.
        self.tx.lock().unwrap_or_else(|e| e.into_inner()).take();
        match tokio::time::timeout(Duration::from_secs(2), child.wait()).await {
            Ok(_) => {}
            Err(_) => {
                let _ = child.kill().await;
            }
        }
    }
}

/// Reads the child's stdout, one message per line, until it ends; then every waiting call fails.
pub(crate) fn read_loop(stdout: ChildStdout, inner: Weak<Inner>) {
    tokio::spawn(async move {
        let mut lines = BufReader::new(stdout).lines();
        while let Ok(Some(line)) = lines.next_line().await {
            if line.trim().is_empty() {
                continue;
            }
            let Some(inner) = inner.upgrade() else { return };
            match serde_json::from_str(&line) {
                Ok(message) => inner.receive(message),
                Err(e) => tracing::warn!(error = %e, "the server wrote a line that is not JSON"),
            }
        }
        if let Some(inner) = inner.upgrade() {
            inner.fail_all();
        }
    });
}
