//! The server's stderr, watched for the markers the cancellation probe looks for (`SLEEP_DONE`, `SLEEP_ABORTED`):
//! read from the child's pipe (stdio, copied to `--server-log`) or followed in the log file the server writes
//! (HTTP). Each marker line is kept with the time it was read.

use std::io::{Read, Seek, SeekFrom, Write};
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::process::ChildStderr;

/// Marker lines seen so far.
#[derive(Clone, Default)]
pub struct Markers {
    words: Arc<Vec<String>>,
    seen: Arc<Mutex<Vec<(usize, Instant)>>>,
}

impl Markers {
    pub fn new(words: Vec<String>) -> Markers {
        Markers { words: Arc::new(words), seen: Arc::default() }
    }

    fn note(&self, line: &[u8]) {
        let Ok(line) = std::str::from_utf8(line) else { return };
        for (i, word) in self.words.iter().enumerate() {
            if line.contains(word.as_str()) {
                self.seen.lock().unwrap_or_else(|e| e.into_inner()).push((i, Instant::now()));
            }
        }
    }

    /// When `word` was first seen at or after `since`.
    pub fn first(&self, word: &str, since: Instant) -> Option<Instant> {
        let i = self.words.iter().position(|w| w == word)?;
        let seen = self.seen.lock().unwrap_or_else(|e| e.into_inner());
        seen.iter().find(|(w, at)| *w == i && *at >= since).map(|(_, at)| *at)
    }

    /// Copy a child's stderr to `log` (when given), noting marker lines, until the child closes it.
    pub fn read_pipe(&self, stderr: ChildStderr, log: Option<PathBuf>) -> tokio::task::JoinHandle<()> {
        let markers = self.clone();
        tokio::spawn(async move {
            let mut file = log.and_then(|p| std::fs::File::create(p).ok());
            let mut reader = BufReader::new(stderr);
            let mut line = Vec::new();
            loop {
                line.clear();
                match reader.read_until(b'\n', &mut line).await {
                    Ok(0) | Err(_) => break,
                    Ok(_) => {
                        if let Some(f) = file.as_mut() {
                            let _ = f.write_all(&line);
                        }
                        markers.note(&line);
                    }
                }
            }
        })
    }

    /// Follow the file at `path` from its current end, every millisecond, until the returned guard is dropped.
    pub fn follow_file(&self, path: PathBuf) -> Following {
        let markers = self.clone();
        let stop = Arc::new(std::sync::atomic::AtomicBool::new(false));
        let stopped = stop.clone();
        let start = std::fs::metadata(&path).map(|m| m.len()).unwrap_or(0);
        let task = tokio::spawn(async move {
            let mut offset = start;
            let mut partial = Vec::new();
            while !stopped.load(std::sync::atomic::Ordering::Relaxed) {
                if let Ok(mut f) = std::fs::File::open(&path)
                    && f.seek(SeekFrom::Start(offset)).is_ok()
                {
                    let mut fresh = Vec::new();
                    if let Ok(n) = f.read_to_end(&mut fresh) {
                        offset += n as u64;
                        partial.extend_from_slice(&fresh);
                        while let Some(end) = partial.iter().position(|&b| b == b'\n') {
                            markers.note(&partial[..end]);
                            partial.drain(..=end);
                        }
                    }
                }
                tokio::time::sleep(Duration::from_millis(1)).await;
            }
        });
        Following { stop, task }
    }
}

/// A file being followed; dropping it stops the follower.
pub struct Following {
    stop: Arc<std::sync::atomic::AtomicBool>,
    task: tokio::task::JoinHandle<()>,
}

impl Drop for Following {
    fn drop(&mut self) {
        self.stop.store(true, std::sync::atomic::Ordering::Relaxed);
        self.task.abort();
    }
}
