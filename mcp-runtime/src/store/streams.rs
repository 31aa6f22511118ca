//! The event store of 2025 sessions: every SSE event a session sends is kept (bounded) so that a client whose stream
//! dropped can resume it with `Last-Event-ID`. The default keeps the newest events of each session in memory,
//! bounded by count and by bytes per session, and by bytes across all sessions of the endpoint; the oldest go first.

use std::collections::VecDeque;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use crate::base::sync::Unpoisoned;

/// Keeps the events of a session's streams so that a client can resume one after its connection dropped.
pub trait EventStore: Send + Sync {
    /// Stores an event of `stream` and returns its id (unique in the session). An empty `frame` is a priming event:
    /// it marks a position in the stream and is never replayed.
    fn store(&self, stream: &str, frame: &Arc<str>) -> String;
    /// The stream `last_event_id` belongs to, and the events stored after it on that stream, oldest first;
    /// `None` if the id is unknown (or already evicted).
    fn replay_after(&self, last_event_id: &str) -> Option<(String, Vec<(String, String)>)>;
    /// Every event of `stream` went out on a connection that read the stream to its end (a request's stream, after
    /// its response): no client needs to resume it, and a store may forget its events. The default keeps them.
    fn delivered(&self, stream: &str) {
        let _ = stream;
    }
    /// `stream` ended (its request was answered or cancelled, or its session ended): nothing more is stored for it.
    /// The default does nothing.
    fn ended(&self, stream: &str) {
        let _ = stream;
    }
}

/// Makes one event store per session.
pub trait EventStoreFactory: Send + Sync {
    /// A store for a new session.
    fn create(&self) -> Arc<dyn EventStore>;
}

/// The default number of events a session keeps: 1024.
pub(crate) const DEFAULT_EVENT_STORE_EVENTS: usize = 1024;
/// The default number of bytes of events a session keeps: 4 MiB.
pub(crate) const DEFAULT_EVENT_STORE_BYTES: usize = 4 << 20;
/// The default number of bytes of events all sessions of an endpoint keep together: 256 MiB.
pub(crate) const DEFAULT_EVENT_STORE_TOTAL_BYTES: usize = 256 << 20;

/// Bytes shared by the stores of one factory.
struct Budget {
    limit: usize,
    used: AtomicUsize,
}

/// The default event store: the newest events of a session, in memory, at most `max_events` of them and
/// `max_bytes` of their data (and, made by a [`MemoryEventStoreFactory`], within the factory's total). An event
/// larger than what may be kept is still delivered live; it just cannot be replayed.
///
/// Streams still open (or cut off) are kept first. A stream the server wrote to its end is
/// [delivered](EventStore::delivered): only the newest [`MemoryEventStore::DELIVERED_EVENTS`] events of such streams are kept (for a
/// client whose connection broke after the server wrote them), and they are the first to go when a bound is
/// reached. A session's memory therefore does not grow with the requests it has made.
pub struct MemoryEventStore {
    max_events: usize,
    max_bytes: usize,
    budget: Option<Arc<Budget>>,
    next: AtomicU64,
    kept: Mutex<Kept>,
}

/// How many events of streams written to their end a [`MemoryEventStore`] keeps: 64.
pub(crate) const DELIVERED_EVENTS: usize = 64;

#[derive(Default)]
struct Kept {
    /// Events of streams still open or cut off, oldest first.
    open: VecDeque<StoredEvent>,
    /// Events of streams written to their end, oldest first.
    delivered: VecDeque<StoredEvent>,
    bytes: usize,
}

impl Kept {
    fn len(&self) -> usize {
        self.open.len() + self.delivered.len()
    }

    fn events(&self) -> impl Iterator<Item = &StoredEvent> {
        self.open.iter().chain(self.delivered.iter())
    }
}

/// An event's number, stream and data.
type StoredEvent = (u64, Arc<str>, Arc<str>);

impl MemoryEventStore {
    /// The events a session keeps by default: 1024.
    pub const DEFAULT_EVENTS: usize = DEFAULT_EVENT_STORE_EVENTS;
    /// The bytes of events a session keeps by default: 4 MiB.
    pub const DEFAULT_BYTES: usize = DEFAULT_EVENT_STORE_BYTES;
    /// The bytes of events all sessions of an endpoint keep together by default: 256 MiB.
    pub const DEFAULT_TOTAL_BYTES: usize = DEFAULT_EVENT_STORE_TOTAL_BYTES;
    /// How many events of streams written to their end it keeps: 64.
    pub const DELIVERED_EVENTS: usize = DELIVERED_EVENTS;

    /// A store that keeps at most `max_events` events (and [`MemoryEventStore::DEFAULT_BYTES`] of them).
    pub fn new(max_events: usize) -> MemoryEventStore {
        MemoryEventStore::with_limits(max_events, DEFAULT_EVENT_STORE_BYTES)
    }

    /// A store that keeps at most `max_events` events and `max_bytes` bytes of them.
    pub fn with_limits(max_events: usize, max_bytes: usize) -> MemoryEventStore {
        MemoryEventStore {
            max_events: max_events.max(1),
            max_bytes,
            budget: None,
            next: AtomicU64::new(1),
            kept: Mutex::new(Kept::default()),
        }
    }

    /// The bytes of event data it keeps.
    pub fn bytes(&self) -> usize {
        self.lock().bytes
    }

    /// How many events it keeps.
    pub fn len(&self) -> usize {
        self.lock().len()
    }

    /// Whether it keeps no event.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Kept> {
        self.kept.locked()
    }

    fn over(&self, kept: &Kept) -> bool {
        kept.len() > self.max_events
            || kept.bytes > self.max_bytes
            || self.budget.as_ref().is_some_and(|b| b.used.load(Ordering::Relaxed) > b.limit)
    }

    /// Drops the oldest event, a delivered stream's if there is one; false when nothing is left.
    fn evict_one(&self, kept: &mut Kept) -> bool {
        let Some((_, _, old)) = kept.delivered.pop_front().or_else(|| kept.open.pop_front()) else { return false };
        kept.bytes -= old.len();
        if let Some(b) = &self.budget {
            b.used.fetch_sub(old.len(), Ordering::Relaxed);
        }
        true
    }
}

impl EventStore for MemoryEventStore {
    fn store(&self, stream: &str, frame: &Arc<str>) -> String {
        let id = self.next.fetch_add(1, Ordering::Relaxed);
        let mut kept = self.lock();
        // A stream's events are stored one after another (its priming event, then what it sends): they share one
        // copy of its name.
        let name = match kept.open.back() {
            Some((_, last, _)) if **last == *stream => last.clone(),
            _ => stream.into(),
        };
        kept.open.push_back((id, name, frame.clone()));
        kept.bytes += frame.len();
        if let Some(b) = &self.budget {
            b.used.fetch_add(frame.len(), Ordering::Relaxed);
        }
        // The oldest go first, this session's own: the total stays bounded whatever the other sessions hold.
        while self.over(&kept) && self.evict_one(&mut kept) {}
        id.to_string()
    }

    fn replay_after(&self, last_event_id: &str) -> Option<(String, Vec<(String, String)>)> {
        let last: u64 = last_event_id.parse().ok()?;
        let kept = self.lock();
        let (_, stream, _) = kept.events().find(|(id, _, _)| *id == last)?;
        let stream = stream.clone();
        let after = kept
            .events()
            .filter(|(id, s, _)| *id > last && *s == stream)
            .map(|(id, _, f)| (id.to_string(), f.to_string()))
            .collect();
        Some((stream.to_string(), after))
    }

    fn delivered(&self, stream: &str) {
        let mut kept = self.lock();
        let Kept { open, delivered, .. } = &mut *kept;
        // Open streams are few (the requests in flight), so this walk is short.
        open.retain(|event| {
            if &*event.1 == stream {
                delivered.push_back(event.clone());
                false
            } else {
                true
            }
        });
        // `evict_one` takes a delivered stream's oldest event while there is one.
        while kept.delivered.len() > DELIVERED_EVENTS && self.evict_one(&mut kept) {}
    }
}

impl Drop for MemoryEventStore {
    fn drop(&mut self) {
        if let Some(b) = &self.budget {
            let bytes = self.kept.get_mut().map(|k| k.bytes).unwrap_or_else(|e| e.into_inner().bytes);
            b.used.fetch_sub(bytes, Ordering::Relaxed);
        }
    }
}

/// Makes [`MemoryEventStore`]s, one per session, that share one total.
pub struct MemoryEventStoreFactory {
    max_events: usize,
    max_bytes: usize,
    budget: Arc<Budget>,
}

impl MemoryEventStoreFactory {
    /// Stores of at most `max_events` events and `max_bytes` bytes each, `total_bytes` together.
    pub fn new(max_events: usize, max_bytes: usize, total_bytes: usize) -> MemoryEventStoreFactory {
        MemoryEventStoreFactory {
            max_events,
            max_bytes,
            budget: Arc::new(Budget { limit: total_bytes, used: AtomicUsize::new(0) }),
        }
    }

    /// The bytes all its stores keep together.
    pub fn total_bytes(&self) -> usize {
        self.budget.used.load(Ordering::Relaxed)
    }
}

impl Default for MemoryEventStoreFactory {
    fn default() -> Self {
        MemoryEventStoreFactory::new(
            DEFAULT_EVENT_STORE_EVENTS,
            DEFAULT_EVENT_STORE_BYTES,
            DEFAULT_EVENT_STORE_TOTAL_BYTES,
        )
    }
}

impl EventStoreFactory for MemoryEventStoreFactory {
    fn create(&self) -> Arc<dyn EventStore> {
        let mut store = MemoryEventStore::with_limits(self.max_events, self.max_bytes);
        store.budget = Some(self.budget.clone());
        Arc::new(store)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_memory_store_replays_one_stream_after_an_id_and_forgets_the_oldest() {
        let store = MemoryEventStore::new(4);
        let ids: Vec<String> = [("a", "1"), ("b", "x"), ("a", "2"), ("a", "3")]
            .iter()
            .map(|(s, f)| store.store(s, &Arc::from(*f)))
            .collect();
        let (stream, after) = store.replay_after(&ids[0]).unwrap();
        assert_eq!(stream, "a");
        assert_eq!(after, vec![(ids[2].clone(), "2".to_owned()), (ids[3].clone(), "3".to_owned())]);
        store.store("a", &Arc::from("4")); // evicts the first event
        assert!(store.replay_after(&ids[0]).is_none(), "an evicted id cannot be resumed from");
        assert!(store.replay_after("not-a-number").is_none());
    }

    #[test]
    fn delivered_streams_keep_only_their_newest_events_and_go_first() {
        let store = MemoryEventStore::new(1024);
        let open = store.store("open", &Arc::from("still running"));
        for request in 0..100 {
            let stream = format!("r{request}");
            store.store(&stream, &Arc::from("")); // priming
            store.store(&stream, &Arc::from(format!("answer {request}").as_str()));
            store.delivered(&stream);
        }
        // 200 events of delivered streams, of which the newest 64 are kept, and the open stream's one.
        assert_eq!(store.len(), DELIVERED_EVENTS + 1);
        assert!(store.replay_after(&open).is_some(), "an open stream is kept");
        // The newest delivered stream can still be resumed from its priming event.
        let priming = (store.next.load(Ordering::Relaxed) - 2).to_string();
        let (stream, after) = store.replay_after(&priming).unwrap();
        assert_eq!((stream.as_str(), after.len()), ("r99", 1));
        assert_eq!(after[0].1, "answer 99");
        // Under a bound, delivered streams' events go before the open stream's.
        let small = MemoryEventStore::new(3);
        let kept = small.store("open", &Arc::from("a"));
        small.store("done", &Arc::from("b"));
        small.delivered("done");
        small.store("open", &Arc::from("c"));
        small.store("open", &Arc::from("d"));
        assert_eq!(small.replay_after(&kept).unwrap().1.len(), 2);
        assert_eq!(small.len(), 3);
    }

    #[test]
    fn stores_are_bounded_by_bytes_each_and_together() {
        let factory = MemoryEventStoreFactory::new(1000, 10_000, 25_000);
        let big: Arc<str> = Arc::from("x".repeat(4_000));
        let a = factory.create();
        for _ in 0..10 {
            a.store("s", &big);
        }
        assert!(factory.total_bytes() <= 10_000, "one session keeps at most its own bound");
        let (b, c) = (factory.create(), factory.create());
        for _ in 0..10 {
            b.store("s", &big);
            c.store("s", &big);
        }
        assert!(factory.total_bytes() <= 25_000, "all sessions keep at most the total: {}", factory.total_bytes());
        drop((a, b, c));
        assert_eq!(factory.total_bytes(), 0, "a session's bytes are returned when it ends");
        let huge: Arc<str> = Arc::from("x".repeat(20_000));
        let d = factory.create();
        let id = d.store("s", &huge);
        assert!(d.replay_after(&id).is_none(), "an event over the bound is not kept");
        assert_eq!(factory.total_bytes(), 0);
    }
}
