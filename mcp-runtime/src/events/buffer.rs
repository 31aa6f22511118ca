//! The buffer of an emitted event type: the latest events, bounded by age and count, each at a position (a number
//! that only grows), and the cursors that name those positions.
//!
//! A cursor is `{epoch}.{position}`: the epoch is drawn when the process starts, so that a cursor of an earlier
//! process (whose buffer is gone) is told from one of this one and answered with `truncated: true`.
//!
//! On a server shared through Redis, each buffer mirrors its type's Redis stream ([`mcp::redis`](crate::redis)):
//! the positions are the stream's, numbered by Redis for every instance, and the epoch is shared, so a cursor of
//! one instance names the same event on every other. A mirror fills as its follower reads the stream, so it can be
//! behind the cursor a client got elsewhere: a position past its latest event is then kept, not read from the latest.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime};

use serde_json::Value;
use tokio::sync::watch;

use crate::base::sync::Unpoisoned;

/// One emitted event, at its position.
#[derive(Debug)]
pub(crate) struct Stored {
    pub position: u64,
    pub id: String,
    pub at: SystemTime,
    pub data: Value,
    /// The one subscription it is for (a targeted emit, `Emitter::emit_to`); `None`: every matching one.
    pub target: Option<String>,
}

/// How much a buffer keeps.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Bounds {
    pub max_age: Duration,
    pub max_events: usize,
}

/// An emitted type's latest events.
pub(crate) struct Buffer {
    inner: Mutex<Ring>,
    /// The position of the latest event, for the push streams that wait for the next one.
    latest: watch::Sender<u64>,
    /// Whether it can be read: a mirror is not until its follower filled it from Redis.
    synced: watch::Sender<bool>,
}

struct Ring {
    events: VecDeque<Arc<Stored>>,
    /// The position the next event gets (the first is 1: a cursor at 0 is before everything).
    next: u64,
    /// It mirrors a Redis stream: its positions are given by Redis, and one past its latest is kept.
    mirror: bool,
}

/// What a read found: the events, the position after them, and whether any were skipped or are left.
#[derive(Debug, Default)]
pub(crate) struct Read {
    pub events: Vec<Arc<Stored>>,
    /// Where the read started: the reader's position, or past it to what the buffer still holds.
    pub start: u64,
    /// The position the reader is at now (past the events that did not match, too).
    pub position: u64,
    /// Events after the reader's position were gone (past the bounds) or older than its `maxAgeMs`.
    pub truncated: bool,
    /// More matching events may follow: the read stopped at its limit.
    pub more: bool,
}

impl Buffer {
    pub(crate) fn new() -> Buffer {
        Buffer {
            inner: Mutex::new(Ring { events: VecDeque::new(), next: 1, mirror: false }),
            latest: watch::Sender::new(0),
            synced: watch::Sender::new(true),
        }
    }

    /// Makes it the mirror of a Redis stream: not read until [`reset`](Buffer::reset) filled it.
    pub(crate) fn mirror(&self) {
        self.inner.locked().mirror = true;
        self.synced.send_replace(false);
    }

    /// Waits until it can be read (a mirror filled from Redis), at most `within`; `false` if it still cannot.
    pub(crate) async fn synced(&self, within: Duration) -> bool {
        if *self.synced.borrow() {
            return true;
        }
        let mut synced = self.synced.subscribe();
        let waited = tokio::time::timeout(within, synced.wait_for(|s| *s)).await;
        matches!(waited, Ok(Ok(_)))
    }

    /// Fills a mirror with what its Redis stream holds: the latest position there (`head`) and the latest events,
    /// oldest first. Only the events that run without a gap up to `head` are kept (what is missing was trimmed).
    #[cfg(feature = "redis")]
    pub(crate) fn reset(&self, head: u64, events: Vec<Stored>, bounds: Bounds) {
        {
            let mut ring = self.inner.locked();
            ring.events.clear();
            let mut expected = head;
            for event in events.into_iter().rev() {
                if event.position != expected {
                    break;
                }
                expected = expected.saturating_sub(1);
                ring.events.push_front(Arc::new(event));
            }
            ring.next = head + 1;
            evict(&mut ring, bounds);
        }
        self.latest.send_replace(head);
        self.synced.send_replace(true);
    }

    /// Adds an event a mirror's follower read from Redis, at its position. One it has is ignored; one past a gap
    /// drops what came before the gap, so that a reader from there is told it missed events.
    #[cfg(feature = "redis")]
    pub(crate) fn insert(&self, event: Stored, bounds: Bounds) {
        let position = event.position;
        {
            let mut ring = self.inner.locked();
            if position < ring.next {
                return;
            }
            if position > ring.next {
                ring.events.clear();
            }
            ring.next = position + 1;
            ring.events.push_back(Arc::new(event));
            evict(&mut ring, bounds);
        }
        self.latest.send_replace(position);
    }

    /// Keeps an event, its id made from its position by `id`, within `bounds`; returns its position and id.
    pub(crate) fn push(
        &self,
        id: impl FnOnce(u64) -> String,
        at: SystemTime,
        (data, target): (Value, Option<String>),
        bounds: Bounds,
    ) -> (u64, String) {
        let (position, id) = {
            let mut ring = self.inner.locked();
            let position = ring.next;
            ring.next += 1;
            let id = id(position);
            ring.events.push_back(Arc::new(Stored { position, id: id.clone(), at, data, target }));
            evict(&mut ring, bounds);
            (position, id)
        };
        self.latest.send_replace(position);
        (position, id)
    }

    /// The position of the latest event (0 before any): where a subscription "from now" starts.
    pub(crate) fn head(&self) -> u64 {
        self.inner.locked().next - 1
    }

    /// A receiver told of every new event's position.
    pub(crate) fn watch(&self) -> watch::Receiver<u64> {
        self.latest.subscribe()
    }

    /// The events after `after` that `matches` takes, at most `limit` of them; those older than `floor` are
    /// skipped (and the read says it was truncated), and so is a gap between `after` and what the buffer still
    /// holds.
    pub(crate) fn read(
        &self,
        bounds: Bounds,
        after: u64,
        floor: Option<SystemTime>,
        limit: usize,
        matches: impl Fn(&Stored) -> bool,
    ) -> Read {
        let mut ring = self.inner.locked();
        evict(&mut ring, bounds);
        // A position past the latest event (not one this buffer gave) reads from the latest; a mirror keeps it,
        // since the cursor may come from an instance whose mirror is ahead.
        let after = if ring.mirror { after } else { after.min(ring.next - 1) };
        let oldest = ring.events.front().map_or(ring.next, |e| e.position);
        let start = after.max(oldest.saturating_sub(1));
        let mut read = Read { start, position: start, truncated: after + 1 < oldest, ..Read::default() };
        let first = ring.events.partition_point(|e| e.position <= after);
        for event in ring.events.range(first..) {
            if read.events.len() == limit {
                read.more = true;
                break;
            }
            read.position = event.position;
            if floor.is_some_and(|floor| event.at < floor) {
                read.truncated = true;
            } else if matches(event) {
                read.events.push(event.clone());
            }
        }
        read
    }
}

/// Drops what is past the bounds: the oldest events beyond the count, and those older than the age.
fn evict(ring: &mut Ring, bounds: Bounds) {
    while ring.events.len() > bounds.max_events {
        ring.events.pop_front();
    }
    let floor = SystemTime::now().checked_sub(bounds.max_age);
    while ring.events.front().is_some_and(|e| floor.is_some_and(|floor| e.at < floor)) {
        ring.events.pop_front();
    }
}

/// A cursor's text: `{epoch}.{position}`.
pub(crate) fn cursor(epoch: u64, position: u64) -> String {
    format!("{epoch:x}.{position}")
}

/// Reads a cursor of this process (`epoch`): `Ok(Some(position))`; `Ok(None)` for a well-formed cursor of another
/// process; `Err` for text that is no cursor of ours.
pub(crate) fn position(epoch: u64, cursor: &str) -> Result<Option<u64>, ()> {
    let (e, p) = cursor.split_once('.').ok_or(())?;
    let (e, p) = (u64::from_str_radix(e, 16).map_err(drop)?, p.parse::<u64>().map_err(drop)?);
    Ok((e == epoch).then_some(p))
}

#[cfg(test)]
mod tests {
    use super::*;

    const BOUNDS: Bounds = Bounds { max_age: Duration::from_secs(600), max_events: 10 };

    fn buffer(_: usize) -> Buffer {
        Buffer::new()
    }

    fn push(b: &Buffer, n: u64) -> u64 {
        b.push(|_| format!("e{n}"), SystemTime::now(), (serde_json::json!({ "n": n }), None), BOUNDS).0
    }

    #[test]
    fn reads_after_a_position_within_a_limit() {
        let b = buffer(10);
        assert_eq!(b.head(), 0);
        for n in 1..=5 {
            assert_eq!(push(&b, n), n);
        }
        let r = b.read(BOUNDS, 2, None, 2, |_| true);
        assert_eq!(r.events.iter().map(|e| e.position).collect::<Vec<_>>(), [3, 4]);
        assert_eq!((r.position, r.more, r.truncated), (4, true, false));
        let r = b.read(BOUNDS, 4, None, 2, |_| true);
        assert_eq!((r.events.len(), r.position, r.more), (1, 5, false));
        let r = b.read(BOUNDS, 5, None, 2, |_| true);
        assert_eq!((r.events.len(), r.position, r.more), (0, 5, false));
    }

    #[test]
    fn a_position_past_the_bounds_is_truncated() {
        let b = buffer(3);
        let three = Bounds { max_events: 3, ..BOUNDS };
        for n in 1..=6 {
            b.push(|_| format!("e{n}"), SystemTime::now(), (serde_json::json!({ "n": n }), None), three);
        }
        let r = b.read(three, 1, None, 10, |_| true);
        assert!(r.truncated);
        assert_eq!(r.events.iter().map(|e| e.position).collect::<Vec<_>>(), [4, 5, 6]);
        // Right before the oldest kept: nothing was lost.
        assert!(!b.read(three, 3, None, 10, |_| true).truncated);
    }

    #[test]
    fn unmatched_events_move_the_position_on() {
        let b = buffer(10);
        for n in 1..=4 {
            push(&b, n);
        }
        let r = b.read(BOUNDS, 0, None, 10, |e| e.data["n"] == 2);
        assert_eq!(r.events.len(), 1);
        assert_eq!(r.position, 4);
    }

    #[test]
    fn events_older_than_the_floor_are_skipped() {
        let b = buffer(10);
        b.push(|_| "old".into(), SystemTime::now() - Duration::from_secs(60), (serde_json::json!({}), None), BOUNDS);
        push(&b, 2);
        let r = b.read(BOUNDS, 0, Some(SystemTime::now() - Duration::from_secs(10)), 10, |_| true);
        assert!(r.truncated);
        assert_eq!(r.events.len(), 1);
    }

    #[test]
    fn cursors_name_their_process() {
        assert_eq!(position(0xab, &cursor(0xab, 7)), Ok(Some(7)));
        assert_eq!(position(0xab, &cursor(0xac, 7)), Ok(None));
        assert_eq!(position(0xab, "seven"), Err(()));
        assert_eq!(position(0xab, "ab.x"), Err(()));
    }

    fn stored(position: u64) -> Stored {
        Stored {
            position,
            id: format!("e{position}"),
            at: SystemTime::now(),
            data: serde_json::json!({}),
            target: None,
        }
    }

    #[test]
    #[cfg(feature = "redis")]
    fn a_mirror_is_filled_from_redis_keeps_a_cursor_past_its_latest_and_marks_a_gap() {
        let b = buffer(10);
        b.mirror();
        // Filled: only what runs without a gap up to the head is kept.
        b.reset(7, vec![stored(3), stored(5), stored(6), stored(7)], BOUNDS);
        assert_eq!(b.head(), 7);
        let r = b.read(BOUNDS, 3, None, 10, |_| true);
        assert!(r.truncated, "position 4 was trimmed away");
        assert_eq!(r.events.iter().map(|e| e.position).collect::<Vec<_>>(), [5, 6, 7]);
        // A cursor another instance gave, past what this mirror has yet: kept, not read from the latest.
        let r = b.read(BOUNDS, 9, None, 10, |_| true);
        assert_eq!((r.position, r.events.len(), r.truncated), (9, 0, false));
        // What the follower reads next; one it has is ignored, one past a gap drops what came before.
        b.insert(stored(8), BOUNDS);
        b.insert(stored(8), BOUNDS);
        assert_eq!(b.read(BOUNDS, 7, None, 10, |_| true).events.len(), 1);
        b.insert(stored(11), BOUNDS);
        let r = b.read(BOUNDS, 8, None, 10, |_| true);
        assert!(r.truncated);
        assert_eq!(r.events.iter().map(|e| e.position).collect::<Vec<_>>(), [11]);
    }

    #[tokio::test]
    #[cfg(feature = "redis")]
    async fn a_mirror_is_read_once_filled() {
        let b = Arc::new(buffer(10));
        b.mirror();
        assert!(!b.synced(Duration::from_millis(10)).await);
        let filled = b.clone();
        tokio::spawn(async move { filled.reset(0, Vec::new(), BOUNDS) });
        assert!(b.synced(Duration::from_secs(5)).await);
    }
}
