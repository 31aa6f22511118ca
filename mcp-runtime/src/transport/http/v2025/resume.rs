//! Resuming a 2025 session's stream on another instance than the one that sent it, through the server's
//! [`EventLog`]. With a log, a session's stream names start with the instance's tag (so they are unique over the
//! instances), an event's id is `{stream}.{number}`, and every event a stream stores also goes to the log, and so
//! does the stream's end. A `Last-Event-ID` this instance does not know is looked up in the log: a request's stream
//! is replayed from there and then followed (what the other instance still sends reaches this client, until the
//! stream ends); the other instance's standalone stream is replayed, then this instance's own goes on live (every
//! instance's copy of the session hears the same changes).
//!
//! Every instance vouches for itself on the log while it serves ([`keep_vouching`], a lease renewed every third of
//! it), and a request's stream records the request it answers. A followed stream whose instance stopped vouching
//! (it died) ends with an error answering that request: no call waits for ever on an instance that is gone.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant};

use tokio::sync::mpsc;

use super::streams::Event;
use crate::base::backlog::{Admit, Backlog};
use crate::server::hub::InstanceId;
use crate::store::events::{EventLog, LogSlice};
use crate::store::EventStore;
use crate::wire::error::{Error, ErrorCode};
use crate::wire::jsonrpc::{Frame, RequestId};

/// How many characters of the instance's id start its stream names.
const TAG_LEN: usize = 8;

/// What this instance's stream names start with, with an event log: unique over the instances.
pub(super) fn tag(instance: &InstanceId) -> Arc<str> {
    Arc::from(&instance.as_str()[..TAG_LEN])
}

/// The instance that writes a stream: the tag its name starts with.
fn writer(stream: &str) -> &str {
    stream.get(..TAG_LEN).unwrap_or(stream)
}

/// Vouches for this instance on the log every third of `lease`, for as long as `serving` holds.
pub(super) async fn keep_vouching(log: Arc<dyn EventLog>, tag: Arc<str>, lease: Duration, serving: impl Fn() -> bool) {
    let mut every = tokio::time::interval(lease / 3);
    every.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    let mut failing = false;
    while serving() {
        every.tick().await;
        match log.vouch(&tag, lease).await {
            Ok(()) if failing => {
                failing = false;
                tracing::info!("this instance vouches for itself on the event log again");
            }
            Ok(()) => {}
            Err(e) if !failing => {
                failing = true;
                tracing::warn!(
                    error = %e,
                    "this instance could not vouch for itself on the event log: other instances following its \
                     streams will end them with an error once its lease runs out"
                );
            }
            Err(_) => {}
        }
    }
}

/// How many events one read of the log takes.
const READ: usize = 64;
/// The pauses between reads of the log while a followed stream is quiet: from 10 ms, doubling, up to 250 ms.
const FIRST_PAUSE: Duration = Duration::from_millis(10);
const LONGEST_PAUSE: Duration = Duration::from_millis(250);

/// A session's event store that also writes to the server's event log, once the session has a key.
pub(super) struct LoggedStore {
    inner: Arc<dyn EventStore>,
    log: Arc<dyn EventLog>,
    /// The session's key (a digest of its id): known once `initialize` succeeded, or from the start for a session
    /// another instance opened. Events stored before (the `initialize` answer) are not logged.
    key: OnceLock<String>,
    /// Events whose id from the inner store is no number, and so could not be logged (warned once).
    unlogged: AtomicU64,
}

impl LoggedStore {
    pub(super) fn new(inner: Arc<dyn EventStore>, log: Arc<dyn EventLog>) -> LoggedStore {
        LoggedStore { inner, log, key: OnceLock::new(), unlogged: AtomicU64::new(0) }
    }

    pub(super) fn set_key(&self, key: String) {
        let _ = self.key.set(key);
    }

    /// A request's stream opened: the log records which request it answers.
    pub(super) fn opened(&self, stream: &str, request: &RequestId) {
        if let (Some(key), Ok(id)) = (self.key.get(), serde_json::to_string(request)) {
            self.log.opened(key, stream, &id);
        }
    }
}

/// An event's id as the client sees it with a log: its stream, and its number in the session's store.
fn logged_id(stream: &str, local: &str) -> String {
    format!("{stream}.{local}")
}

/// The stream and the number of an id made by [`logged_id`].
pub(super) fn split_id(id: &str) -> Option<(&str, &str)> {
    id.rsplit_once('.')
}

impl EventStore for LoggedStore {
    fn store(&self, stream: &str, frame: &Arc<str>) -> String {
        let local = self.inner.store(stream, frame);
        if let Some(key) = self.key.get() {
            match local.parse::<u64>() {
                Ok(number) => self.log.append(key, stream, number, frame),
                Err(_) => {
                    if self.unlogged.fetch_add(1, Ordering::Relaxed) == 0 {
                        tracing::warn!(
                            "the session's event store gives ids that are not numbers: its events are not logged, \
                             and its streams can be resumed only on this instance"
                        );
                    }
                }
            }
        }
        logged_id(stream, &local)
    }

    fn replay_after(&self, last_event_id: &str) -> Option<(String, Vec<(String, String)>)> {
        let (stream, local) = split_id(last_event_id)?;
        let (found, events) = self.inner.replay_after(local)?;
        if found != stream {
            return None;
        }
        let events = events.into_iter().map(|(id, frame)| (logged_id(&found, &id), frame)).collect();
        Some((found, events))
    }

    fn delivered(&self, stream: &str) {
        self.inner.delivered(stream)
    }

    fn ended(&self, stream: &str) {
        self.inner.ended(stream);
        if let Some(key) = self.key.get() {
            self.log.end(key, stream);
        }
    }
}

/// The first read of another instance's stream after event `after`; `None` when the log does not hold it. The
/// other instance writes to the log without waiting, so a client that resumes at once may come before its last
/// event is there: an unknown event is looked for again for a moment before it is taken as unknown.
pub(super) async fn first_read(
    log: &dyn EventLog,
    key: &str,
    stream: &str,
    after: u64,
) -> Result<Option<LogSlice>, crate::store::task::StoreError> {
    let mut pause = FIRST_PAUSE;
    for _ in 0..4 {
        if let Some(slice) = log.read_after(key, stream, after, READ).await? {
            return Ok(Some(slice));
        }
        tokio::time::sleep(pause).await;
        pause *= 2;
    }
    log.read_after(key, stream, after, READ).await
}

/// Everything the log holds of a stream after `slice` (read after `after`), as events to replay; at most `max`.
pub(super) async fn read_rest(
    log: &dyn EventLog,
    key: &str,
    stream: &str,
    mut slice: LogSlice,
    mut after: u64,
    max: usize,
) -> Vec<(String, String)> {
    let mut events = Vec::new();
    loop {
        let got = !slice.events.is_empty();
        for (n, data) in slice.events {
            after = n;
            if !data.is_empty() && events.len() < max {
                events.push((logged_id(stream, &n.to_string()), data.to_string()));
            }
        }
        if slice.ended || !got || events.len() >= max {
            return events;
        }
        slice = match log.read_after(key, stream, after, READ).await {
            Ok(Some(slice)) => slice,
            _ => return events,
        };
    }
}

/// Another instance's request stream, as [`follow`] follows it.
pub(super) struct Followed {
    pub(super) log: Arc<dyn EventLog>,
    /// The session's key.
    pub(super) key: String,
    pub(super) stream: String,
    /// The request the stream answers, when the log recorded it.
    pub(super) request: Option<RequestId>,
    /// How long the writing instance vouches for itself: after that long without an event, whether it still does is
    /// asked.
    pub(super) lease: Duration,
    /// How long the stream may be quiet while its instance still vouches; then this instance stops following.
    pub(super) quiet: Duration,
}

/// The request a stream answers, as the log recorded it (`None` when it did not, or cannot be read).
pub(super) async fn request_of(log: &dyn EventLog, key: &str, stream: &str) -> Option<RequestId> {
    match log.request(key, stream).await {
        Ok(id) => id.and_then(|id| serde_json::from_str(&id).ok()),
        Err(e) => {
            tracing::warn!(error = %e, "the event log could not say which request a resumed stream answers");
            None
        }
    }
}

/// Follows another instance's stream from `slice` (read after event `after`) into `to`: what is in the log, then
/// what is appended to it, until the stream ends, the reader goes (or stops reading: past the hard bound of
/// `backlog`), the instance writing it stops vouching for itself (its request is then answered with an error), or
/// nothing has come for `quiet`.
pub(super) async fn follow(
    followed: Followed,
    mut slice: LogSlice,
    mut after: u64,
    to: mpsc::UnboundedSender<Event>,
    backlog: Arc<Backlog>,
) {
    let Followed { log, key, stream, request, lease, quiet } = followed;
    let mut pause = FIRST_PAUSE;
    let mut heard = Instant::now();
    let mut asked = Instant::now();
    // The writer stopped vouching: one more read, then the request's answer is an error.
    let mut gone = false;
    loop {
        let got = !slice.events.is_empty();
        if !pass_on(slice.events, &stream, &mut after, &to, &backlog) {
            return;
        }
        if slice.ended {
            return;
        }
        if got {
            pause = FIRST_PAUSE;
            heard = Instant::now();
            gone = false;
        } else if gone {
            instance_stopped(&stream, request.as_ref(), after, &to);
            return;
        } else {
            if heard.elapsed() > quiet {
                tracing::info!(stream, "a followed stream was quiet for too long: its instance is gone");
                return;
            }
            if heard.elapsed() >= lease && asked.elapsed() >= lease / 3 {
                asked = Instant::now();
                gone = matches!(log.vouched(writer(&stream)).await, Ok(Some(false)));
            }
            if !gone {
                tokio::select! {
                    () = tokio::time::sleep(pause) => {}
                    () = to.closed() => return,
                }
                pause = (pause * 2).min(LONGEST_PAUSE);
            }
        }
        slice = match log.read_after(&key, &stream, after, READ).await {
            Ok(Some(slice)) => slice,
            // Forgotten meanwhile (the log is bounded): the client opens a new stream.
            Ok(None) => return,
            Err(e) => {
                tracing::warn!(error = %e, "the event log could not be read: a followed stream waits");
                LogSlice::default()
            }
        };
    }
}

/// Passes the events read after `after` on to `to`, within `backlog`, `after` following them; `false` when the
/// reader went, or stopped reading.
fn pass_on(
    events: Vec<(u64, Arc<str>)>,
    stream: &str,
    after: &mut u64,
    to: &mpsc::UnboundedSender<Event>,
    backlog: &Backlog,
) -> bool {
    for (n, data) in events {
        *after = n;
        if data.is_empty() {
            continue;
        }
        match backlog.admit(data.len(), false) {
            Admit::Send => {
                if to.send((logged_id(stream, &n.to_string()), data)).is_err() {
                    return false;
                }
            }
            Admit::Drop => {}
            Admit::Stuck => return false,
        }
    }
    true
}

/// A followed stream's instance stopped vouching for itself: its `request`, when the log recorded it, is answered
/// with an error, as the event after `after`.
fn instance_stopped(stream: &str, request: Option<&RequestId>, after: u64, to: &mpsc::UnboundedSender<Event>) {
    let instance = writer(stream);
    tracing::warn!(stream, instance, "a followed stream's instance stopped: its request ends with an error");
    if let Some(id) = request {
        let error = Error::new(
            ErrorCode::INTERNAL_ERROR,
            format!(
                "the server instance answering this request ({instance}) stopped before it answered: the \
                 request's outcome is unknown; send it again if that is safe"
            ),
        )
        .with_data(serde_json::json!({ "instance": instance }));
        let frame: Arc<str> = Frame::error(Some(id), &error).into_text().into();
        let _ = to.send((logged_id(stream, &(after + 1).to_string()), frame));
    }
}
