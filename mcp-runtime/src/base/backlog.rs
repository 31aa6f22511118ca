//! Bounds on outbound queues. Every queue of frames waiting for a client (stdout, an SSE stream, a 2026 answer)
//! counts its bytes in a [`Backlog`]: the frames that wait behind the one being written, each counted for no more
//! than the soft limit (a large answer waiting its turn is not a client that stopped reading). Above the soft limit,
//! frames that may be dropped (progress and log notifications) are dropped; when more than the soft limit already
//! waits and a frame would take the queue past the hard limit, the client has stopped reading, and it is
//! disconnected (its stream ends, its requests are cancelled). A large frame to a client that reads is not a stuck
//! client: it is admitted while little waits, however large it is, up to the limit of one frame
//! ([`OutboundLimits::max_frame_bytes`]); a response over that limit is answered with an error that says so. Each
//! client has its own queues, so one that stops reading slows no other.
//!
//! A client with several queues (an HTTP session's streams) has a total too: each of its queues counts what it
//! holds in the total as well ([`Backlog::within`]), and while the total is past the soft bound, the client's input
//! waits (its new requests are not admitted), as a stdio client's is while its one queue is.

use std::sync::atomic::{AtomicBool, AtomicI64, AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;

/// The bytes waiting in every outbound queue of this process (as the queues count them: a frame for no more than
/// the soft limit), counted once a server with metrics is built (`mcp_server_outbound_queued_bytes`). Until then a
/// queue pays one relaxed load a frame for it.
pub(crate) struct Queued {
    counting: AtomicBool,
    bytes: AtomicI64,
}

pub(crate) static QUEUED: Queued = Queued { counting: AtomicBool::new(false), bytes: AtomicI64::new(0) };

impl Queued {
    /// Counts from now on (a server with metrics was built).
    pub(crate) fn count(&self) {
        self.counting.store(true, Ordering::Relaxed);
    }

    /// The bytes waiting now (none below zero: queues that began before the counting leave bytes it never saw).
    pub(crate) fn bytes(&self) -> u64 {
        self.bytes.load(Ordering::Relaxed).max(0) as u64
    }

    fn add(&self, bytes: usize) {
        if self.counting.load(Ordering::Relaxed) {
            self.bytes.fetch_add(bytes as i64, Ordering::Relaxed);
        }
    }

    fn sub(&self, bytes: usize) {
        if self.counting.load(Ordering::Relaxed) {
            self.bytes.fetch_sub(bytes as i64, Ordering::Relaxed);
        }
    }
}

/// The limits of an outbound queue, in bytes.
///
/// ```
/// use mcp::OutboundLimits;
///
/// let limits = OutboundLimits::new(1 << 20, 512); // a hard limit below the soft one is raised to it
/// assert_eq!((limits.soft_bytes, limits.hard_bytes), (1 << 20, 1 << 20));
/// assert_eq!(OutboundLimits::default(), OutboundLimits::new(4 << 20, 16 << 20));
/// assert_eq!(OutboundLimits::default().max_frame_bytes, 64 << 20);
///
/// // Results of up to 256 MiB each.
/// let limits = OutboundLimits::default().with_max_frame_bytes(256 << 20);
/// let _server = mcp::Server::builder().outbound_limits(limits).build().unwrap();
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct OutboundLimits {
    /// Above this, progress and log notifications are dropped. Default 4 MiB.
    pub soft_bytes: usize,
    /// When more than the soft limit waits, a frame that would go past this disconnects the client. Default 16 MiB.
    pub hard_bytes: usize,
    /// The largest frame sent at all: a response over it is replaced by an error naming this limit, another frame
    /// over it is dropped. Default 64 MiB.
    pub max_frame_bytes: usize,
}

impl OutboundLimits {
    /// Limits of `soft_bytes` and `hard_bytes` (at least the soft one). With both equal, nothing is dropped: a client
    /// that stops reading is disconnected instead.
    pub const fn new(soft_bytes: usize, hard_bytes: usize) -> OutboundLimits {
        let hard_bytes = if hard_bytes < soft_bytes { soft_bytes } else { hard_bytes };
        OutboundLimits { soft_bytes, hard_bytes, max_frame_bytes: DEFAULT_MAX_FRAME_BYTES }
    }

    /// These limits with `max_frame_bytes` as the largest frame sent.
    pub const fn with_max_frame_bytes(mut self, max_frame_bytes: usize) -> OutboundLimits {
        self.max_frame_bytes = max_frame_bytes;
        self
    }
}

/// The default [`OutboundLimits::max_frame_bytes`]: 64 MiB.
const DEFAULT_MAX_FRAME_BYTES: usize = 64 << 20;

impl Default for OutboundLimits {
    fn default() -> Self {
        OutboundLimits::new(4 << 20, 16 << 20)
    }
}

/// What to do with a frame.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Admit {
    /// Queue it.
    Send,
    /// Drop it (a notification that may be dropped, over the soft limit; or a frame over the limit of one frame).
    Drop,
    /// The client stopped reading: disconnect it.
    Stuck,
}

/// The bytes waiting in one outbound queue.
pub(crate) struct Backlog {
    limits: OutboundLimits,
    queued: AtomicUsize,
    dropped: AtomicU64,
    stuck: AtomicBool,
    /// Set while the connection's reader (or an HTTP session's POSTs, on its total) waits for the queue to fall back
    /// to the soft bound.
    waiting: AtomicBool,
    /// Wakes that reader.
    drained: tokio::sync::Notify,
    /// The total this queue is part of (an HTTP session's, over all its streams): what waits here waits there too.
    total: Option<Arc<Backlog>>,
}

impl Backlog {
    pub(crate) fn new(limits: OutboundLimits) -> Backlog {
        Backlog::counted_in(limits, None)
    }

    /// A queue whose bytes count in `total` too, for as long as they wait here (when the queue is dropped with
    /// frames still in it, they leave the total with it).
    #[cfg(feature = "http")]
    pub(crate) fn within(limits: OutboundLimits, total: Arc<Backlog>) -> Backlog {
        Backlog::counted_in(limits, Some(total))
    }

    fn counted_in(limits: OutboundLimits, total: Option<Arc<Backlog>>) -> Backlog {
        Backlog {
            limits,
            queued: AtomicUsize::new(0),
            dropped: AtomicU64::new(0),
            stuck: AtomicBool::new(false),
            waiting: AtomicBool::new(false),
            drained: tokio::sync::Notify::new(),
            total,
        }
    }

    /// Decides on a frame of `len` bytes; counts it as queued when it is to be sent.
    pub(crate) fn admit(&self, len: usize, droppable: bool) -> Admit {
        if self.stuck.load(Ordering::Relaxed) {
            return Admit::Stuck;
        }
        if len > self.limits.max_frame_bytes {
            tracing::warn!(len, limit = self.limits.max_frame_bytes, "a frame over the limit of one frame: dropped");
            return Admit::Drop;
        }
        let len = self.charge(len);
        let queued = self.queued.load(Ordering::Relaxed);
        if droppable && queued + len > self.limits.soft_bytes {
            let dropped = self.dropped.fetch_add(1, Ordering::Relaxed) + 1;
            if dropped.is_power_of_two() {
                tracing::warn!(dropped, queued, "a client is not reading: dropping its progress and log notifications");
            }
            return Admit::Drop;
        }
        if queued > self.limits.soft_bytes && queued + len > self.limits.hard_bytes {
            self.stuck.store(true, Ordering::Relaxed);
            self.drained.notify_waiters();
            tracing::warn!(queued, limit = self.limits.hard_bytes, "a client stopped reading: disconnecting it");
            return Admit::Stuck;
        }
        self.queued.fetch_add(len, Ordering::Relaxed);
        QUEUED.add(len);
        if let Some(total) = &self.total {
            total.queued.fetch_add(len, Ordering::SeqCst);
        }
        Admit::Send
    }

    /// A frame of `len` bytes left the queue: the writer took it (it is being written), or it was handed to the
    /// connection.
    pub(crate) fn sent(&self, len: usize) {
        let charged = self.charge(len);
        self.left(charged);
        QUEUED.sub(charged);
        if let Some(total) = &self.total {
            total.left(charged);
        }
    }

    /// `charged` bytes (as [`Backlog::charge`] counted them) no longer wait: wakes a reader waiting for the queue
    /// to fall back to the soft bound.
    fn left(&self, charged: usize) {
        let before = self.queued.fetch_sub(charged, Ordering::SeqCst);
        if self.waiting.load(Ordering::SeqCst) && before - charged <= self.limits.soft_bytes {
            self.waiting.store(false, Ordering::SeqCst);
            self.drained.notify_waiters();
        }
    }

    /// The reader went away: what waits here will never be taken, and leaves the total now (a frame admitted after
    /// this leaves it when the queue is dropped). A session whose client closed an unread stream is not held back for
    /// bytes no one holds.
    #[cfg(feature = "http")]
    pub(crate) fn abandon(&self) {
        let queued = self.queued.swap(0, Ordering::SeqCst);
        QUEUED.sub(queued);
        if let (Some(total), true) = (&self.total, queued > 0) {
            total.left(queued);
        }
    }

    /// Whether more than the soft bound waits: the connection's input should wait too.
    pub(crate) fn is_backed_up(&self) -> bool {
        self.queued.load(Ordering::SeqCst) > self.limits.soft_bytes && !self.stuck.load(Ordering::Relaxed)
    }

    /// Waits until no more than the soft bound waits (or the client is found stuck): the connection's reader calls
    /// it before it reads the next message, so a client that sends requests and does not read their answers is not
    /// read either (its requests wait in its own pipe or socket, not in this process), as flow control would have it.
    /// On an HTTP session's total, each of its new POSTs waits on it (bounded) before it is admitted. Any number may
    /// wait at once: the frame that takes the queue back to the soft bound wakes them all.
    pub(crate) async fn backed_off(&self) {
        loop {
            let drained = self.drained.notified();
            tokio::pin!(drained);
            drained.as_mut().enable();
            self.waiting.store(true, Ordering::SeqCst);
            if !self.is_backed_up() {
                self.waiting.store(false, Ordering::SeqCst);
                return;
            }
            drained.await;
        }
    }

    /// What a frame of `len` bytes counts for while it waits: its size, but no more than the soft bound. A large
    /// answer waiting its turn behind the frame being written is not a client that stopped reading; several of
    /// them are (what they can hold is bounded by the hard bound over the soft one, times the limit of one frame).
    fn charge(&self, len: usize) -> usize {
        len.min(self.limits.soft_bytes.max(1))
    }
}

impl Drop for Backlog {
    /// A queue dropped with frames in it (its reader went away): they no longer wait, for the total either.
    fn drop(&mut self) {
        let queued = *self.queued.get_mut();
        if queued > 0 {
            QUEUED.sub(queued);
            if let Some(total) = &self.total {
                total.left(queued);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn notifications_are_dropped_over_the_soft_limit_and_a_stuck_client_is_found_at_the_hard_one() {
        let backlog = Backlog::new(OutboundLimits::new(100, 200));
        assert_eq!(backlog.admit(80, true), Admit::Send);
        assert_eq!(backlog.admit(40, true), Admit::Drop, "a notification over the soft limit");
        assert_eq!(backlog.admit(100, false), Admit::Send, "a response still goes, up to the hard limit");
        assert_eq!(backlog.admit(30, false), Admit::Stuck);
        assert_eq!(backlog.admit(1, false), Admit::Stuck, "once stuck, always stuck");
        let reading = Backlog::new(OutboundLimits::new(100, 200));
        for _ in 0..1000 {
            assert_eq!(reading.admit(90, true), Admit::Send);
            reading.sent(90);
        }
    }

    #[test]
    fn a_large_frame_is_admitted_while_little_waits_and_one_over_the_frame_limit_never() {
        let limits = OutboundLimits::new(100, 200).with_max_frame_bytes(1000);
        let backlog = Backlog::new(limits);
        assert_eq!(backlog.admit(50, false), Admit::Send);
        assert_eq!(backlog.admit(900, false), Admit::Send, "over the hard limit, but only 50 bytes wait before it");
        assert_eq!(
            backlog.admit(60, false),
            Admit::Stuck,
            "more than the soft bound waits, and the hard one is passed"
        );
        let backlog = Backlog::new(limits);
        assert_eq!(backlog.admit(1001, false), Admit::Drop, "over the limit of one frame");
        assert_eq!(backlog.admit(10, false), Admit::Send, "and nothing else changes");
    }

    #[test]
    fn the_queues_of_one_client_count_in_its_total_while_they_hold_their_frames() {
        let limits = OutboundLimits::new(100, 1000);
        let total = Arc::new(Backlog::new(limits));
        let (a, b) = (Backlog::within(limits, total.clone()), Backlog::within(limits, total.clone()));
        assert_eq!(a.admit(60, false), Admit::Send);
        assert!(!total.is_backed_up() && !a.is_backed_up());
        assert_eq!(b.admit(60, false), Admit::Send);
        assert!(total.is_backed_up(), "120 bytes wait in all, past the soft bound");
        assert!(!a.is_backed_up() && !b.is_backed_up(), "neither queue is past it alone");
        a.sent(60);
        assert!(!total.is_backed_up());
        assert_eq!(a.admit(500, false), Admit::Send, "a large frame counts for no more than the soft bound");
        assert!(total.is_backed_up());
        drop(a);
        assert!(!total.is_backed_up(), "a queue dropped with frames in it leaves the total");
        assert_eq!(b.admit(60, false), Admit::Send);
        assert!(total.is_backed_up());
        b.abandon();
        assert!(!total.is_backed_up(), "a queue whose reader went away leaves the total at once");
        assert_eq!(b.admit(30, false), Admit::Send, "until the stream sees its reader gone");
        drop(b);
        assert_eq!(total.queued.load(Ordering::SeqCst), 0);
    }

    #[tokio::test]
    async fn a_reader_waiting_on_the_total_is_woken_when_any_queue_drains() {
        let limits = OutboundLimits::new(100, 1000);
        let total = Arc::new(Backlog::new(limits));
        let a = Backlog::within(limits, total.clone());
        assert_eq!(a.admit(80, false), Admit::Send);
        assert_eq!(a.admit(80, false), Admit::Send);
        let waiters: Vec<_> = (0..3)
            .map(|_| {
                let total = total.clone();
                tokio::spawn(async move { total.backed_off().await })
            })
            .collect();
        tokio::task::yield_now().await;
        a.sent(80);
        for waiter in waiters {
            tokio::time::timeout(std::time::Duration::from_secs(10), waiter).await.unwrap().unwrap();
        }
    }

    #[test]
    fn a_large_frame_waiting_its_turn_counts_no_more_than_the_soft_bound() {
        let backlog = Backlog::new(OutboundLimits::new(100, 200).with_max_frame_bytes(1000));
        assert_eq!(backlog.admit(900, false), Admit::Send, "a large answer waits behind the frame being written");
        for _ in 0..10 {
            assert_eq!(backlog.admit(5, false), Admit::Send, "small answers still go behind it");
        }
        assert_eq!(backlog.admit(900, false), Admit::Stuck, "two large answers and more wait: the client is stuck");
        let reading = Backlog::new(OutboundLimits::new(100, 200).with_max_frame_bytes(1000));
        for _ in 0..100 {
            assert_eq!(reading.admit(900, false), Admit::Send);
            assert_eq!(reading.admit(5, false), Admit::Send);
            reading.sent(900);
            reading.sent(5);
        }
    }
}
