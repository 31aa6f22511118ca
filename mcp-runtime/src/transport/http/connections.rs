//! `serve_http`'s open connections, for its connection cap: at the cap a newcomer does not wait for an idle socket
//! to time out. The connection idle longest (no request in progress on it: a keep-alive socket between requests, or
//! one that has not sent a request yet), taken from the peer address that holds the most connections, is asked to
//! close (hyper's graceful shutdown: an idle HTTP/1 connection closes at once), and its slot goes to the newcomer.
//! Only when every connection is busy is the newcomer refused.

use std::collections::HashMap;
use std::net::IpAddr;
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use std::time::Instant;

use crate::base::sync::Unpoisoned;

/// The open connections.
pub(super) struct Connections {
    epoch: Instant,
    next: AtomicU64,
    inner: Mutex<Open>,
}

struct Open {
    /// The connections that may still be chosen to close (one asked to close has left).
    by_id: HashMap<u64, Arc<Conn>>,
    /// The server is stopping: every connection was asked to close, and no more are recorded.
    stopping: bool,
}

/// One open connection.
pub(super) struct Conn {
    id: u64,
    peer: IpAddr,
    epoch: Instant,
    /// Requests being served on it: each from its head until its response's body ends (or is dropped).
    busy: AtomicUsize,
    /// When it last became idle (opened, or a response ended), in nanoseconds from `epoch`.
    idle_since: AtomicU64,
    /// Asks it to close once idle.
    close: tokio::sync::Notify,
}

impl Connections {
    pub(super) fn new() -> Connections {
        Connections {
            epoch: Instant::now(),
            next: AtomicU64::new(1),
            inner: Mutex::new(Open { by_id: HashMap::new(), stopping: false }),
        }
    }

    /// Records a new connection, idle from now; `None` once the server is stopping.
    pub(super) fn open(&self, peer: IpAddr) -> Option<Arc<Conn>> {
        let conn = Arc::new(Conn {
            id: self.next.fetch_add(1, Ordering::Relaxed),
            peer,
            epoch: self.epoch,
            busy: AtomicUsize::new(0),
            idle_since: AtomicU64::new(nanos_since(self.epoch)),
            close: tokio::sync::Notify::new(),
        });
        let mut inner = self.inner.locked();
        if inner.stopping {
            return None;
        }
        inner.by_id.insert(conn.id, conn.clone());
        Some(conn)
    }

    /// Forgets a connection that ended.
    pub(super) fn ended(&self, conn: &Conn) {
        let mut inner = self.inner.locked();
        inner.by_id.remove(&conn.id);
        if inner.by_id.is_empty() {
            inner.by_id.shrink_to_fit();
        }
    }

    /// At the cap: asks the idle connection of the peer address holding the most connections that has been idle
    /// longest to close, and returns that address; `None` when every connection is busy. A scan of the open
    /// connections, only when the cap is reached.
    pub(super) fn reclaim_idle(&self) -> Option<IpAddr> {
        let conn = {
            let mut inner = self.inner.locked();
            let mut held: HashMap<IpAddr, usize> = HashMap::new();
            for c in inner.by_id.values() {
                *held.entry(c.peer).or_default() += 1;
            }
            let victim = inner
                .by_id
                .values()
                .filter(|c| c.busy.load(Ordering::Acquire) == 0)
                .max_by_key(|c| (held[&c.peer], std::cmp::Reverse(c.idle_since.load(Ordering::Acquire))))
                .map(|c| c.id)?;
            inner.by_id.remove(&victim)?
        };
        conn.close.notify_one();
        Some(conn.peer)
    }

    /// Whether every open connection is idle and has been for at least `for_at_least` (none open: yes).
    pub(super) fn all_idle(&self, for_at_least: std::time::Duration) -> bool {
        let now = nanos_since(self.epoch);
        let least = u64::try_from(for_at_least.as_nanos()).unwrap_or(u64::MAX);
        self.inner.locked().by_id.values().all(|c| {
            c.busy.load(Ordering::Acquire) == 0 && now.saturating_sub(c.idle_since.load(Ordering::Acquire)) >= least
        })
    }

    /// Every connection open now is asked to close once idle (those idle now close at once); connections opened
    /// later are not.
    pub(super) fn close_all(&self) {
        let all: Vec<Arc<Conn>> = {
            let mut inner = self.inner.locked();
            inner.by_id.drain().map(|(_, c)| c).collect()
        };
        for conn in all {
            conn.close.notify_one();
        }
    }

    /// The server is stopping: every connection is asked to close once idle, and no more are recorded.
    pub(super) fn stop(&self) {
        self.inner.locked().stopping = true;
        self.close_all();
    }
}

impl Conn {
    /// Resolves once the connection is asked to close (it may have been asked before this is first polled).
    pub(super) async fn asked_to_close(&self) {
        self.close.notified().await
    }
}

fn nanos_since(epoch: Instant) -> u64 {
    u64::try_from(epoch.elapsed().as_nanos()).unwrap_or(u64::MAX)
}

/// A request being served: its connection is busy while this lives (the request's future, then its response's body,
/// holds it).
pub(super) struct Busy(Arc<Conn>);

impl Busy {
    pub(super) fn new(conn: &Arc<Conn>) -> Busy {
        conn.busy.fetch_add(1, Ordering::AcqRel);
        Busy(conn.clone())
    }
}

impl Drop for Busy {
    fn drop(&mut self) {
        // The time first, so that a scan that sees the connection idle sees when it became so.
        self.0.idle_since.store(nanos_since(self.0.epoch), Ordering::Release);
        self.0.busy.fetch_sub(1, Ordering::AcqRel);
    }
}

/// A response body that keeps its connection busy until it ends: a body is written to its end, or dropped when the
/// connection goes. No allocation: the body and the guard side by side.
pub(super) struct Tracked<B> {
    body: B,
    _busy: Busy,
}

impl<B> Tracked<B> {
    pub(super) fn new(body: B, busy: Busy) -> Tracked<B> {
        Tracked { body, _busy: busy }
    }
}

impl<B: hyper::body::Body + Unpin> hyper::body::Body for Tracked<B> {
    type Data = B::Data;
    type Error = B::Error;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<hyper::body::Frame<Self::Data>, Self::Error>>> {
        Pin::new(&mut self.body).poll_frame(cx)
    }

    fn is_end_stream(&self) -> bool {
        self.body.is_end_stream()
    }

    fn size_hint(&self) -> hyper::body::SizeHint {
        self.body.size_hint()
    }
}
