//! A connection as the dispatcher sees it: its in-flight table (request id to its record, for cancellation), the
//! requests this server sent to the client, and what starts, cancels and drains requests.

use std::collections::HashMap;
use std::future::Future;
use std::sync::atomic::{AtomicBool, AtomicI64, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::task::Context as TaskContext;

use serde_json::Value;
use tokio::sync::oneshot;

use super::{run, Call, Handler, Work};
use crate::base::cancel::cleanup_tasks;
use crate::base::sink::Sink;
use crate::base::sync::Unpoisoned;
use crate::context::state::StateMap;
use crate::context::{InFlight, Link};
use crate::server::Server;
use crate::wire::error::{Error, ErrorCode};
use crate::wire::jsonrpc::{Frame, RequestId};
use crate::wire::protocol::WireResult;

/// One connection as the dispatcher sees it, whatever its era: a stdio process, a 2025 HTTP session, or a single
/// 2026 HTTP request.
pub(crate) struct Connection {
    server: Server,
    /// Frames that belong to no request, and the default route.
    out: Sink,
    in_flight: Mutex<HashMap<RequestId, Arc<InFlight>>>,
    /// Requests this server sent to the client (2025 era), waiting for their responses.
    outgoing: Mutex<HashMap<RequestId, oneshot::Sender<Result<Value, Value>>>>,
    next_outgoing: AtomicI64,
    /// Unique in the process: names the connection for the limits counted per client.
    number: u64,
    /// The 2025 session this connection is, as its tasks record it: unique across processes, so that instances
    /// sharing a task store never take one session's tasks for another's. Set from an HTTP session's id; made at
    /// random on first use otherwise (a stdio session).
    session: Mutex<Option<String>>,
    /// A stateless 2025 "session" (one per HTTP request): its tasks belong to no session.
    stateless: AtomicBool,
    /// Set when the input ended and the answers of what is in flight are still wanted ([`Connection::drained`]):
    /// the request that empties the in-flight table then wakes `idle`, and requests to the client fail at once.
    draining: AtomicBool,
    idle: tokio::sync::Notify,
}

impl Link for Connection {
    fn server(&self) -> &(dyn std::any::Any + Send + Sync) {
        &self.server
    }
    fn state(&self) -> &StateMap {
        self.server.inner.state()
    }
    fn register_outgoing(&self) -> (RequestId, oneshot::Receiver<Result<Value, Value>>) {
        Connection::register_outgoing(self)
    }
    fn forget_outgoing(&self, id: &RequestId) -> bool {
        Connection::forget_outgoing(self, id)
    }
    fn session_key(&self) -> Option<String> {
        Connection::session_key(self)
    }
    fn connection_key(&self) -> String {
        Connection::connection_key(self)
    }
    fn sink(&self) -> &Sink {
        Connection::sink(self)
    }
    fn forget(&self, request: &Arc<InFlight>) {
        Connection::forget(self, request)
    }
}

/// Numbers connections.
static CONNECTIONS: AtomicU64 = AtomicU64::new(1);

/// A random first id for requests to the client, below 2^52.
fn first_outgoing_id() -> i64 {
    let mut bytes = [0u8; 8];
    let _ = getrandom::fill(&mut bytes);
    (u64::from_le_bytes(bytes) >> 13) as i64 + 1
}

/// A session's key in the task store: `session:` and the first 128 bits of the SHA-256 of its id, as hex.
pub(crate) fn session_key_of(id: &str) -> String {
    use sha2::Digest;
    format!("session:{}", crate::base::hex(&sha2::Sha256::digest(id.as_bytes())[..16]))
}

impl Connection {
    pub(crate) fn new(server: Server, out: Sink) -> Arc<Connection> {
        let shared = server.inner.scale_out().hub.is_some();
        Arc::new(Connection {
            server,
            out,
            in_flight: Mutex::new(HashMap::new()),
            outgoing: Mutex::new(HashMap::new()),
            // With other instances serving the same sessions, a request of ours is told from theirs by its id:
            // each connection counts from a random point (in 2^52, so that ids stay exact in any JSON reader),
            // drawn when it first asks (0 until then): a 2026 request's connection never does.
            next_outgoing: AtomicI64::new(if shared { 0 } else { 1 }),
            number: CONNECTIONS.fetch_add(1, Ordering::Relaxed),
            session: Mutex::new(None),
            stateless: AtomicBool::new(false),
            draining: AtomicBool::new(false),
            idle: tokio::sync::Notify::new(),
        })
    }

    /// Marks a stateless 2025 connection: it is no session its tasks could belong to.
    #[cfg(feature = "http")]
    pub(crate) fn set_stateless(&self) {
        self.stateless.store(true, Ordering::Relaxed);
    }

    /// This connection, as the client its limits are counted for when nothing better names the client.
    pub(crate) fn connection_key(&self) -> String {
        format!("connection:{}", self.number)
    }

    /// Names this connection's session after its HTTP session id, before any request of the session can create a
    /// task. The key is a digest of the id, so that a task store's records do not hold the id a client presents.
    #[cfg(feature = "http")]
    pub(crate) fn set_session_id(&self, id: &str) {
        *self.session.locked() = Some(session_key_of(id));
    }

    /// The session this connection is, for the tasks it creates (2025 era); `None` when stateless.
    pub(crate) fn session_key(&self) -> Option<String> {
        if self.stateless.load(Ordering::Relaxed) {
            return None;
        }
        // A stdio session's id is made here; without randomness its tasks could be another's: refuse.
        let mut session = self.session.locked();
        let key =
            session.get_or_insert_with(|| session_key_of(&crate::base::random_id().unwrap_or_else(|e| panic!("{e}"))));
        Some(key.clone())
    }

    pub(crate) fn server(&self) -> &Server {
        &self.server
    }

    /// Sends a frame that belongs to no request.
    pub(crate) fn send(&self, frame: Frame) {
        self.out.send(frame);
    }

    /// The default route.
    pub(crate) fn sink(&self) -> &Sink {
        &self.out
    }

    fn table(&self) -> std::sync::MutexGuard<'_, HashMap<RequestId, Arc<InFlight>>> {
        self.in_flight.locked()
    }

    /// Registers a request to the client; the response (or error) arrives on the receiver.
    pub(crate) fn register_outgoing(&self) -> (RequestId, oneshot::Receiver<Result<Value, Value>>) {
        if self.next_outgoing.load(Ordering::Relaxed) == 0 {
            let _ = self.next_outgoing.compare_exchange(0, first_outgoing_id(), Ordering::Relaxed, Ordering::Relaxed);
        }
        let id = RequestId::Number(self.next_outgoing.fetch_add(1, Ordering::Relaxed));
        let (tx, rx) = oneshot::channel();
        // After the input ended no answer can arrive: the sender is dropped, and the handler hears `Disconnected`.
        if !self.draining.load(Ordering::SeqCst) {
            self.outgoing.locked().insert(id.clone(), tx);
        }
        (id, rx)
    }

    /// Forgets a request to the client (it was cancelled); `true` if it was still waiting.
    pub(crate) fn forget_outgoing(&self, id: &RequestId) -> bool {
        self.outgoing.locked().remove(id).is_some()
    }

    /// Routes the client's answer to a request of ours. Gives it back when no request of this connection waits for
    /// it (finished, cancelled, or sent by another instance serving the same session).
    pub(crate) fn answer_outgoing(
        &self,
        id: &RequestId,
        outcome: Result<Value, Value>,
    ) -> Option<Result<Value, Value>> {
        let waiting = self.outgoing.locked().remove(id);
        match waiting {
            Some(tx) => {
                let _ = tx.send(outcome);
                None
            }
            None => Some(outcome),
        }
    }

    /// Answers a message that could not be parsed, or was not a JSON-RPC message.
    pub(crate) fn reject(&self, id: Option<&RequestId>, error: &Error) {
        self.send(Frame::error(id, error));
    }

    /// Registers a request in the in-flight table, then runs its handler: an async handler is polled once at once,
    /// in the caller's task (the transport's reader), and spawned only if it is not done by then. A handler that
    /// answers without waiting (most do) costs no task, no wake-up of another worker and no hop: its response is on
    /// the wire before the next message is read. Async handlers must not block (tokio's rule everywhere), so this
    /// cannot stall the reader; plain `fn` handlers go to the blocking pool as before.
    pub(crate) fn start<R: WireResult + Send + 'static>(
        self: &Arc<Self>,
        mut request: Arc<InFlight>,
        call: Call<R>,
    ) -> Result<(), Error> {
        if let Some(metrics) = self.server.inner.metrics() {
            run::begin_timing(metrics, &call, &mut request);
        }
        self.register(&request)?;
        let eager = !matches!(call.work, Work::Handler(Handler::Blocking(_)));
        let mut run = Box::pin(run::run_handler(call, request));
        // A future may be polled with any waker; the spawned task polls it again with its own.
        if eager && run.as_mut().poll(&mut TaskContext::from_waker(std::task::Waker::noop())).is_ready() {
            return Ok(());
        }
        cleanup_tasks().spawn(run);
        Ok(())
    }

    /// Puts a request in the in-flight table, so that a cancel that follows it on the wire finds it.
    pub(crate) fn register(&self, request: &Arc<InFlight>) -> Result<(), Error> {
        let mut table = self.table();
        let limit = self.server.inner.limits().max_in_flight;
        // Long-lived requests (subscription streams) are not counted: the table is counted again without them only
        // when it is at the cap.
        if table.len() >= limit && !request.long_lived && table.values().filter(|r| !r.long_lived).count() >= limit {
            return Err(Error::new(
                ErrorCode::OVERLOADED,
                format!("too many requests in flight on this connection (the limit is {limit}); try again later"),
            ));
        }
        // One hash for the check and the insert (this runs for every request).
        match table.entry(request.id.clone()) {
            std::collections::hash_map::Entry::Occupied(_) => {
                Err(Error::new(ErrorCode::INVALID_REQUEST, format!("request id {} is already in flight", request.id)))
            }
            std::collections::hash_map::Entry::Vacant(slot) => {
                slot.insert(request.clone());
                Ok(())
            }
        }
    }

    /// Cancels an in-flight request. Unknown, finished and already cancelled ids are ignored.
    /// Cancels a request in flight; `false` when none of that id is (finished, never known, or run by another
    /// instance serving the same session).
    pub(crate) fn cancel(&self, id: &RequestId, reason: Option<&str>) -> bool {
        let removed = self.table().remove(id);
        self.left_table();
        let Some(request) = removed else {
            tracing::debug!(%id, reason, "cancel for a request that is not in flight here");
            return false;
        };
        if request.cancel() {
            tracing::info!(%id, reason, "request cancelled");
        }
        true
    }

    /// Cancels everything in flight: the peer is gone or the server is stopping.
    /// Its running tasks end too: no one could reach them any more.
    pub(crate) fn cancel_all(&self, reason: &str) {
        self.server.tasks().cancel_on(self, reason);
        let requests: Vec<_> = self.table().drain().map(|(_, r)| r).collect();
        for r in requests {
            if r.cancel() {
                tracing::info!(id = %r.id, reason, "request cancelled");
            }
        }
    }

    /// Whether anything is in flight.
    #[cfg(feature = "http")]
    pub(crate) fn is_busy(&self) -> bool {
        !self.table().is_empty()
    }

    /// Takes a finished request out of the table (if it is still there, and still this one).
    pub(crate) fn forget(&self, request: &Arc<InFlight>) {
        {
            let mut table = self.table();
            // Only this request's own entry (a later request may reuse a finished one's id); one hash.
            if let std::collections::hash_map::Entry::Occupied(entry) = table.entry(request.id.clone()) {
                if Arc::ptr_eq(entry.get(), request) {
                    entry.remove();
                }
            }
        }
        self.left_table();
    }

    /// After a request left the table: wakes [`Connection::drained`] once the table is empty.
    fn left_table(&self) {
        if self.draining.load(Ordering::SeqCst) && self.table().is_empty() {
            self.idle.notify_waiters();
        }
    }

    /// Waits until nothing is in flight: the input ended, and the answers are still wanted (`printf '...' |
    /// server`). Requests to the client fail at once (their answers cannot arrive), so a handler waiting for one
    /// goes on. Unbounded: the caller bounds it with the shutdown deadline, then cancels what is left.
    pub(crate) async fn drained(&self) {
        self.draining.store(true, Ordering::SeqCst);
        self.outgoing.locked().clear();
        loop {
            let idle = self.idle.notified();
            tokio::pin!(idle);
            idle.as_mut().enable();
            if self.table().is_empty() {
                return;
            }
            idle.await;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::base::sink::NoSink;

    fn connection() -> Arc<Connection> {
        Connection::new(Server::builder().build().unwrap(), Arc::new(NoSink))
    }

    /// A session's tasks are recorded under a key that no other session has, in this process or another sharing
    /// the task store: never a counter (each process counts from 1).
    #[test]
    fn session_keys_are_unique_across_processes_and_do_not_hold_the_session_id() {
        let (a, b) = (connection(), connection());
        let (ka, kb) = (a.session_key().unwrap(), b.session_key().unwrap());
        assert_ne!(ka, kb);
        for key in [&ka, &kb] {
            let hex = key.strip_prefix("session:").unwrap();
            assert!(hex.len() == 32 && hex.bytes().all(|c| c.is_ascii_hexdigit()), "{key}");
        }
        assert_eq!(a.session_key(), Some(ka), "stable for the connection's life");

        let id = "0123456789abcdef0123456789abcdef";
        let (c, d) = (connection(), connection());
        c.set_session_id(id);
        d.set_session_id(id);
        assert_eq!(c.session_key(), d.session_key(), "the same session on two instances has the same key");
        assert!(!c.session_key().unwrap().contains(id), "the key is a digest, not the id a client presents");

        let stateless = connection();
        stateless.set_stateless();
        assert_eq!(stateless.session_key(), None);
    }
}
