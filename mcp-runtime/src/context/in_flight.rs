//! The in-flight record of one request ([`InFlight`]: its cancel, its first-writer-wins answer, its task) and the
//! traits through which the era and the connection serve it.

use std::any::Any;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, OnceLock};

use serde_json::Value;
use tokio_util::sync::CancellationToken;

use crate::base::sink::Sink;
use crate::base::sync::Unpoisoned;
use crate::context::meta::RequestMeta;
use crate::context::state::StateMap;
use crate::wire::jsonrpc::{Frame, RequestId};
use crate::wire::protocol::LogLevel;

/// The shared state of one in-flight request: the dispatcher, the handler's `Context` and the cancel path all hold it.
pub(crate) struct InFlight {
    pub id: RequestId,
    pub token: CancellationToken,
    pub(super) cancelled: AtomicBool,
    /// Set by whichever comes first, the response or the cancel; only the first one acts. An atomic, not a field of
    /// `slot`, so that a cancel takes no lock: a sink may cancel its request from inside a send that holds `slot`
    /// (a client that stopped reading), and a lock there would deadlock.
    finished: AtomicBool,
    /// Held while a frame of this request is sent, so that no frame follows the response.
    slot: Mutex<Slot>,
    pub meta: RequestMeta,
    /// The connection it came on (the dispatcher's `Connection`).
    pub link: Arc<dyn Link>,
    /// Where this request's frames go.
    pub out: Sink,
    /// What the request's era adds: the 2025 session's log level, or the 2026 request's round of questions.
    pub era: EraState,
    /// What an extension's hook claimed of a `tools/call` (a `hook::Claimed`, which this layer cannot name): the
    /// Tasks extension's plan for the task the call becomes, say.
    pub claim: OnceLock<Box<dyn Any + Send + Sync>>,
    /// Once the request became a task: the task. Its frames then go where the task's go.
    pub task: OnceLock<Arc<dyn TaskRoute>>,
    /// The name of what it runs (a tool's, a prompt's, a resource's; else its method), for a handler that serves
    /// several (a relayed one).
    pub name: crate::base::name::Name,
    /// With metrics: the request's timing, which records it when this state is dropped (after its answer).
    pub timing: Option<crate::metrics::Timing>,
    /// A request that stays open until the client ends it (a subscription stream, such as `events/stream`): not
    /// counted against the connection's cap on requests in flight, and not passed through the middleware layers.
    pub long_lived: bool,
}

/// What a request's era adds to it, as its [`Context`](crate::Context) and the dispatcher see it: how its logs are gated, and
/// whether the handler can be interrupted (a 2026 question ends the round). The era fronts implement it (the 2025
/// session's log level, the 2026 round of questions); only they know what is behind it.
pub(crate) trait RequestEra: Send + Sync + 'static {
    /// Whether a log message at `level` goes to the client.
    fn log_enabled(&self, level: LogLevel) -> bool;
    /// Signalled when the handler asked the client something (or needs a capability it was not given); `None`
    /// where questions are requests to the client and never interrupt the handler.
    fn interrupt(&self) -> Option<&tokio::sync::Notify>;
    /// Whether the handler was interrupted already.
    fn was_interrupted(&self) -> bool;
    /// The 2025 session the request belongs to, for its span; none where there are no sessions.
    fn session(&self, link: &dyn Link) -> Option<String>;
    /// What every result of the request starts with, as JSON members (the 2026 `resultType` and server info); `None`:
    /// results are written as they are.
    fn result_prefix<'a>(&self, link: &'a dyn Link) -> Option<&'a str>;
    /// A result with those members merged in, and the caching hints of a cacheable result.
    fn decorate(&self, link: &dyn Link, result: Value, hints: Option<crate::wire::protocol::CacheHint>) -> Value;
    /// The answer of a handler its questions interrupted.
    fn interrupted_result(&self, request: &InFlight) -> Result<Value, crate::wire::error::Error>;
    /// The era's own state, for its front.
    fn as_any(&self) -> &(dyn Any + Send + Sync);
}

/// A request's era part (see [`RequestEra`]).
pub(crate) type EraState = Arc<dyn RequestEra>;

impl dyn RequestEra {
    /// Completes when the handler is interrupted; never where it cannot be.
    pub(crate) async fn interrupted(&self) {
        match self.interrupt() {
            Some(interrupt) => interrupt.notified().await,
            None => std::future::pending().await,
        }
    }
}

/// A request that became a task, as its [`Context`](crate::Context) sees it (the task engine's run of it).
pub(crate) trait TaskRoute: Send + Sync + 'static {
    /// The task's id.
    fn id(&self) -> &str;
    /// Sends a frame where the task's frames go (`droppable`: a notification that may be dropped under pressure).
    fn send(&self, frame: Frame, droppable: bool);
    /// The run itself, for the task engine.
    fn into_any(self: Arc<Self>) -> Arc<dyn Any + Send + Sync>;
}

/// The connection a request came on, as the request's [`Context`](crate::Context) sees it. The dispatcher's `Connection` is the one
/// there is; a trait here so that the context knows nothing above it.
pub(crate) trait Link: Send + Sync + 'static {
    /// The server that serves the connection (a `Server`: `Context::server`, which lives with the server, reads it).
    fn server(&self) -> &(dyn Any + Send + Sync);
    /// The server's shared state, for `&State<T>`.
    fn state(&self) -> &StateMap;
    /// Registers a request to the client; its answer (or error) arrives on the receiver.
    fn register_outgoing(&self) -> (RequestId, tokio::sync::oneshot::Receiver<Result<Value, Value>>);
    /// Forgets a request to the client (it was cancelled); `true` if it was still waiting.
    fn forget_outgoing(&self, id: &RequestId) -> bool;
    /// The 2025 session the connection is, for the tasks it creates; `None` when stateless.
    fn session_key(&self) -> Option<String>;
    /// The connection, as the client its limits are counted for when nothing better names the client.
    fn connection_key(&self) -> String;
    /// The connection's default route (frames that belong to no request).
    fn sink(&self) -> &Sink;
    /// Takes a finished request out of the connection's in-flight table.
    fn forget(&self, request: &Arc<InFlight>);
}

#[derive(Default)]
pub(super) struct Slot {
    pub(super) last_progress: Option<f64>,
}

impl InFlight {
    pub(crate) fn new(id: RequestId, meta: RequestMeta, link: Arc<dyn Link>, out: Sink, era: EraState) -> InFlight {
        InFlight::named(id, meta, link, out, era, crate::base::name::Name::default())
    }

    /// A request that runs `name` (a tool, a prompt, a resource).
    pub(crate) fn named(
        id: RequestId,
        meta: RequestMeta,
        link: Arc<dyn Link>,
        out: Sink,
        era: EraState,
        name: crate::base::name::Name,
    ) -> InFlight {
        InFlight {
            id,
            token: CancellationToken::new(),
            cancelled: AtomicBool::new(false),
            finished: AtomicBool::new(false),
            slot: Mutex::new(Slot::default()),
            meta,
            link,
            out,
            era,
            claim: OnceLock::new(),
            task: OnceLock::new(),
            name,
            timing: None,
            long_lived: false,
        }
    }

    /// Marks the request as one that stays open until the client ends it ([`InFlight::long_lived`]).
    pub(crate) fn long_lived(mut self) -> InFlight {
        self.long_lived = true;
        self
    }

    /// Stops the handler without ending the request: a blocking handler sees its flag, a task waiting on the token
    /// wakes. The response (an `input_required` result) is still to be sent.
    pub(crate) fn stop_quietly(&self) {
        self.cancelled.store(true, Ordering::Release);
        self.token.cancel();
    }

    /// Tells a blocking handler to stop (its flag), without ending the request or waking what waits on its
    /// token: a layer dropped the handler's future (a timeout), and the layer's answer is still to be sent.
    pub(crate) fn stop_handler(&self) {
        self.cancelled.store(true, Ordering::Release);
    }

    pub(super) fn is_finished(&self) -> bool {
        self.finished.load(Ordering::Acquire)
    }

    pub(super) fn slot(&self) -> std::sync::MutexGuard<'_, Slot> {
        self.slot.locked()
    }

    /// Cancels the request unless its response went first. Returns whether this call cancelled it.
    pub(crate) fn cancel(&self) -> bool {
        if self.finished.swap(true, Ordering::AcqRel) {
            return false;
        }
        self.cancelled.store(true, Ordering::Release);
        self.token.cancel();
        true
    }

    /// Sends the request's final frame unless it was cancelled first. Returns whether it was sent.
    pub(crate) fn finish(&self, frame: Frame) -> bool {
        let _slot = self.slot();
        if self.finished.swap(true, Ordering::AcqRel) {
            return false;
        }
        self.out.finish(frame);
        true
    }

    /// Sends a frame on this request's route unless the request is over; `false` if it was not sent. A task's
    /// frames go where the task's go.
    pub(crate) fn send_if_open(&self, frame: Frame) -> bool {
        if let Some(task) = self.task.get() {
            task.send(frame, false);
            return !self.cancelled.load(Ordering::Acquire);
        }
        let _slot = self.slot();
        if self.is_finished() {
            return false;
        }
        self.out.send(frame);
        true
    }

    /// Sends a notification that belongs to this request, unless the request is over.
    pub(super) fn notify(&self, frame: Frame) {
        if let Some(task) = self.task.get() {
            return task.send(frame, true);
        }
        let _slot = self.slot();
        if !self.is_finished() {
            self.out.send_droppable(frame);
        }
    }
}
