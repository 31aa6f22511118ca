//! Where the SSE events of 2025 sessions are kept for every instance: the [`EventLog`] trait and
//! [`MemoryEventLog`]. Each instance keeps the events of its own streams in its session's
//! [`EventStore`](crate::store::EventStore), which resumes a stream on the instance that sent it; with an event log, every
//! event also goes to the log, so that a client whose stream broke resumes it (`Last-Event-ID`) on any instance:
//! that instance replays what the other sent after the id, then carries what it still sends, until the stream ends.

use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::time::Instant;

use crate::base::future::BoxFuture;
use crate::base::sync::Unpoisoned;
use crate::store::task::StoreError;

/// What [`EventLog::read_after`] found: the events after the one asked for, oldest first, each with its number and
/// its data (empty for a priming event, which marks a position and is never replayed), and whether the stream
/// ended after them.
#[derive(Clone, Debug, Default, PartialEq)]
#[non_exhaustive]
pub struct LogSlice {
    /// The events, oldest first.
    pub events: Vec<(u64, Arc<str>)>,
    /// The stream ended: no event follows the last of `events`.
    pub ended: bool,
}

impl LogSlice {
    /// A slice of `events`, ended or not.
    pub fn new(events: Vec<(u64, Arc<str>)>, ended: bool) -> LogSlice {
        LogSlice { events, ended }
    }
}

/// Keeps the SSE events of every instance's 2025 session streams, so that any instance can resume a stream another
/// sent ([`ServerBuilder::event_log`]). A stream is named by its session's key (a digest of the session id, never
/// the id itself) and its name, unique over the instances; its events are numbered in increasing order.
///
/// [`append`](EventLog::append) and [`end`](EventLog::end) are called on the path of the event itself: they must not
/// block, only queue, and keep each stream's order. A log is bounded (it may forget a stream's oldest events, and
/// whole streams after a while); a resume from a forgotten event is refused, and the client opens a new stream.
///
/// [`ServerBuilder::event_log`]: crate::ServerBuilder::event_log
pub trait EventLog: Send + Sync + 'static {
    /// Appends event `number` of a stream (numbers increase along a stream). Empty `data` is a priming event.
    fn append(&self, session: &str, stream: &str, number: u64, data: &Arc<str>);
    /// The stream ended: nothing more is appended to it.
    fn end(&self, session: &str, stream: &str);
    /// At most `max` events of the stream after event `after`; `None` when the log does not hold event `after`
    /// (an unknown stream, or an event already forgotten).
    fn read_after<'a>(
        &'a self,
        session: &'a str,
        stream: &'a str,
        after: u64,
        max: usize,
    ) -> BoxFuture<'a, Result<Option<LogSlice>, StoreError>>;

    /// A request's stream opened: `request` is the JSON-RPC id it answers, as JSON text. An instance that follows
    /// the stream for a client answers that id with an error when the instance writing the stream stops vouching
    /// for itself ([`vouched`](EventLog::vouched)), so that no call waits for ever on an instance that died. Called
    /// on the path of the request: it must not block, only queue, in order with [`append`](EventLog::append).
    /// By default nothing is kept, and such a stream ends without an answer.
    fn opened(&self, session: &str, stream: &str, request: &str) {
        let _ = (session, stream, request);
    }

    /// The request id [`opened`](EventLog::opened) recorded for a stream, if it is kept.
    fn request<'a>(&'a self, session: &'a str, stream: &'a str) -> BoxFuture<'a, Result<Option<String>, StoreError>> {
        let _ = (session, stream);
        Box::pin(std::future::ready(Ok(None)))
    }

    /// The instance whose stream names start with `instance` is alive for `lease` from now: every instance
    /// vouches for itself every third of its lease while it serves.
    fn vouch<'a>(&'a self, instance: &'a str, lease: Duration) -> BoxFuture<'a, Result<(), StoreError>> {
        let _ = (instance, lease);
        Box::pin(std::future::ready(Ok(())))
    }

    /// Whether `instance` vouched for itself within its lease: `Some(false)` once it did not (it died, or lost the
    /// log); `None` when the log cannot tell (a follower then waits on).
    fn vouched<'a>(&'a self, instance: &'a str) -> BoxFuture<'a, Result<Option<bool>, StoreError>> {
        let _ = instance;
        Box::pin(std::future::ready(Ok(None)))
    }
}

/// How many events of a stream a [`MemoryEventLog`] keeps, and how many events Redis keeps of one (about): 1024.
pub(crate) const DEFAULT_LOG_EVENTS: usize = 1024;
/// How many streams a [`MemoryEventLog`] keeps: 4096 (the oldest go first).
pub(crate) const DEFAULT_LOG_STREAMS: usize = 4096;

/// An [`EventLog`] in this process, for servers of one process that share sessions (tests, in-process
/// instances): at most [`MemoryEventLog::DEFAULT_EVENTS`] events per stream and [`MemoryEventLog::DEFAULT_STREAMS`] streams.
#[derive(Default)]
pub struct MemoryEventLog {
    streams: Mutex<Streams>,
    /// Until when each instance vouched for itself.
    vouched: Mutex<HashMap<String, Instant>>,
}

#[derive(Default)]
struct Streams {
    by_name: HashMap<(String, String), Logged>,
    /// The streams in the order they were first written, to forget the oldest.
    order: VecDeque<(String, String)>,
}

#[derive(Default)]
struct Logged {
    events: VecDeque<(u64, Arc<str>)>,
    ended: bool,
    /// The request a request's stream answers.
    request: Option<String>,
}

impl MemoryEventLog {
    /// How many events of a stream it keeps, and how many events Redis keeps of one (about): 1024.
    pub const DEFAULT_EVENTS: usize = DEFAULT_LOG_EVENTS;
    /// How many streams it keeps: 4096 (the oldest go first).
    pub const DEFAULT_STREAMS: usize = DEFAULT_LOG_STREAMS;

    /// An empty log.
    pub fn new() -> MemoryEventLog {
        MemoryEventLog::default()
    }

    fn with<R>(&self, session: &str, stream: &str, f: impl FnOnce(&mut Logged) -> R) -> R {
        let mut streams = self.streams.locked();
        let name = (session.to_owned(), stream.to_owned());
        if !streams.by_name.contains_key(&name) {
            if streams.order.len() >= DEFAULT_LOG_STREAMS {
                if let Some(oldest) = streams.order.pop_front() {
                    streams.by_name.remove(&oldest);
                }
            }
            streams.order.push_back(name.clone());
        }
        f(streams.by_name.entry(name).or_default())
    }
}

impl std::fmt::Debug for MemoryEventLog {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MemoryEventLog").field("streams", &self.streams.locked().by_name.len()).finish()
    }
}

impl EventLog for MemoryEventLog {
    fn append(&self, session: &str, stream: &str, number: u64, data: &Arc<str>) {
        self.with(session, stream, |logged| {
            logged.events.push_back((number, data.clone()));
            if logged.events.len() > DEFAULT_LOG_EVENTS {
                logged.events.pop_front();
            }
        })
    }

    fn end(&self, session: &str, stream: &str) {
        self.with(session, stream, |logged| logged.ended = true)
    }

    fn read_after<'a>(
        &'a self,
        session: &'a str,
        stream: &'a str,
        after: u64,
        max: usize,
    ) -> BoxFuture<'a, Result<Option<LogSlice>, StoreError>> {
        let found = {
            let streams = self.streams.locked();
            streams.by_name.get(&(session.to_owned(), stream.to_owned())).and_then(|logged| {
                // The event resumed from must still be there: else what followed it may be gone too.
                logged.events.iter().position(|(n, _)| *n == after).map(|at| {
                    let events: Vec<_> = logged.events.iter().skip(at + 1).take(max).cloned().collect();
                    let ended = logged.ended && at + 1 + events.len() == logged.events.len();
                    LogSlice { events, ended }
                })
            })
        };
        Box::pin(std::future::ready(Ok(found)))
    }

    fn opened(&self, session: &str, stream: &str, request: &str) {
        self.with(session, stream, |logged| logged.request = Some(request.to_owned()))
    }

    fn request<'a>(&'a self, session: &'a str, stream: &'a str) -> BoxFuture<'a, Result<Option<String>, StoreError>> {
        let streams = self.streams.locked();
        let found = streams.by_name.get(&(session.to_owned(), stream.to_owned())).and_then(|l| l.request.clone());
        Box::pin(std::future::ready(Ok(found)))
    }

    fn vouch<'a>(&'a self, instance: &'a str, lease: Duration) -> BoxFuture<'a, Result<(), StoreError>> {
        self.vouched.locked().insert(instance.to_owned(), Instant::now() + lease);
        Box::pin(std::future::ready(Ok(())))
    }

    fn vouched<'a>(&'a self, instance: &'a str) -> BoxFuture<'a, Result<Option<bool>, StoreError>> {
        let until = self.vouched.locked().get(instance).copied();
        Box::pin(std::future::ready(Ok(Some(until.is_some_and(|until| Instant::now() < until)))))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn read(log: &MemoryEventLog, stream: &str, after: u64, max: usize) -> Option<LogSlice> {
        block(log.read_after("k", stream, after, max)).unwrap()
    }

    fn block<T>(f: BoxFuture<'_, T>) -> T {
        tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(f)
    }

    #[test]
    fn the_memory_log_reads_after_an_event_until_the_stream_ends() {
        let log = MemoryEventLog::new();
        log.append("k", "a", 1, &Arc::from(""));
        log.append("k", "a", 2, &Arc::from("x"));
        log.append("k", "b", 3, &Arc::from("other"));
        log.append("k", "a", 4, &Arc::from("y"));
        let slice = read(&log, "a", 1, 10).unwrap();
        assert_eq!(slice.events.iter().map(|(n, _)| *n).collect::<Vec<_>>(), [2, 4]);
        assert!(!slice.ended);
        assert_eq!(read(&log, "a", 1, 1).unwrap().events.len(), 1, "at most max");
        log.end("k", "a");
        assert!(read(&log, "a", 2, 10).unwrap().ended);
        assert!(!read(&log, "a", 1, 1).unwrap().ended, "more follows what was read");
        assert!(read(&log, "a", 3, 10).is_none(), "event 3 is not stream a's");
        assert!(read(&log, "c", 1, 10).is_none(), "an unknown stream");
    }

    #[test]
    fn the_memory_log_is_bounded() {
        let log = MemoryEventLog::new();
        for n in 0..(DEFAULT_LOG_EVENTS as u64 + 10) {
            log.append("k", "a", n, &Arc::from("e"));
        }
        assert!(read(&log, "a", 0, 1).is_none(), "the oldest event is forgotten");
        assert!(read(&log, "a", 10, 1).is_some());
        for s in 0..DEFAULT_LOG_STREAMS + 1 {
            log.append("k", &format!("s{s}"), 1, &Arc::from("e"));
        }
        assert!(read(&log, "a", 10, 1).is_none(), "the oldest stream is forgotten");
        assert_eq!(log.streams.locked().by_name.len(), DEFAULT_LOG_STREAMS);
    }
}
