//! Tasks: tool calls that outlive their request. One engine serves both protocol eras; the eras differ only in their
//! fronts (`methods.rs`): the 2025-11-25 `tasks/*` methods, and the 2026-07-28 Tasks extension
//! (`io.modelcontextprotocol/tasks`).
//!
//! A task is a request whose handler keeps running after its response: the response is the task (its id, status,
//! TTL and poll interval), written once the task is in the [`TaskStore`]. From then on the handler's [`Context`]
//! routes through the task: progress and logs go to the 2025 session (with the task's id in `_meta`), questions put
//! the task in `input_required` until the client answers (a request to the client in 2025, an entry of
//! `inputRequests` answered by `tasks/update` in 2026), and `tasks/cancel` stops the handler the way any cancel
//! does. Its result (or error) lands in the record, which the store keeps until the TTL ends.
//!
//! [`Context`]: crate::Context

pub(crate) mod front;
pub(crate) mod methods;
pub(crate) use methods::Tasks;

use std::collections::{HashMap, HashSet, VecDeque};
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, Mutex, Weak};
use std::time::{Duration, UNIX_EPOCH};

use serde_json::{json, Map, Value};
use tokio::sync::{oneshot, watch};
use tokio_util::sync::CancellationToken;

pub(crate) use crate::context::TaskPlan;
pub use crate::store::task::{
    MemoryTaskStore, StoreError, TaskPage, TaskRecord, TaskStatus, TaskStore, DEFAULT_MAX_TASKS,
};
pub use crate::wire::task::{TaskOptions, TaskSupport};
use front::{TaskFront, TaskFronts};

use crate::base::sink::Sink;
use crate::base::sync::Unpoisoned;
use crate::context::InFlight;
use crate::server::Server;
use crate::wire::error::{Error, ErrorCode};
use crate::wire::jsonrpc::Frame;

/// The identifier of the Tasks extension of the 2026-07-28 protocol.
pub const EXTENSION: &str = "io.modelcontextprotocol/tasks";

pub(crate) use crate::wire::task::{related_meta, RELATED_TASK};

/// The default time a task and its result are kept: one hour from its creation.
pub const DEFAULT_TASK_TTL: Duration = Duration::from_secs(3600);

/// The longest TTL a client may ask for (2025 era) or a tool may set: one day.
pub const DEFAULT_MAX_TASK_TTL: Duration = Duration::from_secs(24 * 3600);

/// The default poll interval suggested to clients: 500 ms.
pub const DEFAULT_POLL_INTERVAL: Duration = Duration::from_millis(500);

/// The default number of tasks one client may have stored at once (running, or finished and kept for their TTL):
/// 1 000, a tenth of the default store, so that no client can fill it for the others.
pub const DEFAULT_MAX_TASKS_PER_CLIENT: usize = 1_000;

/// The default number of tasks one client (principal, 2025 session, or 2026 peer address) may have running at once:
/// 100.
pub const DEFAULT_MAX_RUNNING_TASKS: usize = 100;

/// The server's task settings (see `ServerBuilder::task_*`).
pub(crate) struct TaskConfig {
    pub ttl: Duration,
    pub max_ttl: Duration,
    pub poll_interval: Duration,
    pub max_running: usize,
    /// Tasks one client may have in the store at once, running or finished until their TTL.
    pub max_stored: usize,
}

impl Default for TaskConfig {
    fn default() -> TaskConfig {
        TaskConfig {
            ttl: DEFAULT_TASK_TTL,
            max_ttl: DEFAULT_MAX_TASK_TTL,
            poll_interval: DEFAULT_POLL_INTERVAL,
            max_running: DEFAULT_MAX_RUNNING_TASKS,
            max_stored: DEFAULT_MAX_TASKS_PER_CLIENT,
        }
    }
}

pub(crate) use crate::base::now_ms;

/// An RFC 3339 timestamp (UTC, milliseconds) for milliseconds since the Unix epoch.
pub(crate) fn timestamp(ms: u64) -> String {
    humantime::format_rfc3339_millis(UNIX_EPOCH + Duration::from_millis(ms)).to_string()
}

/// 128 random bits, hex.
fn new_task_id() -> Result<String, Error> {
    let mut bytes = [0u8; 16];
    getrandom::fill(&mut bytes)
        .map_err(|e| Error::internal(format!("the operating system's random number generator failed: {e}")))?;
    Ok(bytes.iter().map(|b| format!("{b:02x}")).collect())
}

/// Who may see a task: the key its session lists it under, and the authenticated principal; and the client its
/// limits are counted for.
pub(crate) struct Owner {
    pub session: Option<String>,
    pub subject: Option<String>,
    /// The principal, else the 2025 session, else (2026 era) the peer's address, else the connection.
    pub client: String,
}

impl Owner {
    pub(crate) fn of(request: &InFlight) -> Owner {
        let http = request.meta.http.as_ref();
        let subject = http.and_then(|h| h.auth.as_deref()).map(crate::auth::AuthInfo::principal);
        let front = request.server().tasks().fronts.of(request.meta.era);
        let session = front.owner_session(&*request.peer, subject.as_deref());
        let client = match (&subject, &session, http.and_then(|h| h.peer)) {
            (Some(s), _, _) => format!("principal:{s}"),
            (None, Some(session), _) => session.clone(),
            (None, None, Some(peer)) => format!("peer:{peer}"),
            (None, None, None) => request.peer.connection_key(),
        };
        Owner { session, subject, client }
    }

    /// Whether this caller may see (and change) the task: the same principal where it had one, and in the 2025 era
    /// the same session where it had one.
    pub(crate) fn may_see(&self, record: &TaskRecord, front: &dyn TaskFront) -> bool {
        if record.subject.is_some() && record.subject != self.subject {
            return false;
        }
        front.sees(record.session.as_deref(), self.session.as_deref())
    }
}

/// The task engine of a server: the store, and the tasks this instance runs.
pub(crate) struct TaskEngine {
    pub store: Arc<dyn TaskStore>,
    pub config: TaskConfig,
    running: Mutex<HashMap<String, Arc<TaskRun>>>,
    /// The tasks this instance stored for each client, with when each expires (milliseconds since the epoch), oldest
    /// first: what [`TaskConfig::max_stored`] counts. A client's entry goes once none of its tasks is left.
    stored: Mutex<HashMap<String, VecDeque<u64>>>,
    /// What a task does in each era.
    pub fronts: TaskFronts,
}

impl TaskEngine {
    pub(crate) fn new(store: Arc<dyn TaskStore>, config: TaskConfig, fronts: TaskFronts) -> TaskEngine {
        TaskEngine { store, config, running: Mutex::new(HashMap::new()), stored: Mutex::new(HashMap::new()), fronts }
    }

    /// Counts one more stored task for `client`, expiring at `expires_at`; refuses when the client has its most.
    fn reserve_stored(&self, client: &str, expires_at: u64) -> Result<(), Error> {
        let now = now_ms();
        let mut stored = self.stored.locked();
        // Forget what expired, for every client (bounded: each deque holds at most `max_stored`).
        stored.retain(|_, tasks| {
            tasks.retain(|&at| at > now);
            !tasks.is_empty()
        });
        let tasks = stored.entry(client.to_owned()).or_default();
        if tasks.len() >= self.config.max_stored {
            let limit = self.config.max_stored;
            let frees = tasks.iter().min().map(|at| (at - now).div_ceil(1000)).unwrap_or(0);
            return Err(Error::new(
                ErrorCode::OVERLOADED,
                format!(
                    "this client has {limit} tasks stored, the most it may have (running, or finished and kept \
                     for their TTL); the next one expires in {frees} s"
                ),
            ));
        }
        tasks.push_back(expires_at);
        Ok(())
    }

    /// Gives back a reservation whose task was never stored.
    fn release_stored(&self, client: &str, expires_at: u64) {
        let mut stored = self.stored.locked();
        if let Some(tasks) = stored.get_mut(client) {
            if let Some(i) = tasks.iter().rposition(|&at| at == expires_at) {
                tasks.remove(i);
            }
            if tasks.is_empty() {
                stored.remove(client);
            }
        }
    }

    fn table(&self) -> std::sync::MutexGuard<'_, HashMap<String, Arc<TaskRun>>> {
        self.running.locked()
    }

    /// A task this instance runs.
    pub(crate) fn running(&self, id: &str) -> Option<Arc<TaskRun>> {
        self.table().get(id).cloned()
    }

    /// A task's record, if the caller may see it: unknown, expired and other callers' tasks alike are -32602.
    pub(crate) async fn find(&self, id: &str, owner: &Owner, front: &dyn TaskFront) -> Result<TaskRecord, Error> {
        let record = self.store.get(id).await.map_err(store_error)?;
        match record {
            Some(r) if owner.may_see(&r, front) => Ok(r),
            _ => Err(Error::invalid_params(format!(
                "no task {id:?}: it is unknown, has expired, or belongs to another client"
            ))),
        }
    }

    /// Cancels the tasks running on a connection that is going away (its 2025 session ended, or stdio closed).
    pub(crate) fn cancel_on(&self, conn: &dyn crate::context::Peer, reason: &str) {
        let runs: Vec<_> = self.table().values().filter(|r| r.is_on(conn)).cloned().collect();
        for run in runs {
            run.stop(reason);
        }
    }

    /// The connections (by address) with a task running on them: a 2025 session with one is not idle.
    pub(crate) fn connections_running(&self) -> std::collections::HashSet<*const ()> {
        self.table().values().filter_map(|r| r.request.upgrade()).map(|r| Arc::as_ptr(&r.peer) as *const ()).collect()
    }

    /// Cancels every running task (the server is stopping).
    pub(crate) fn cancel_all(&self, reason: &str) {
        let runs: Vec<_> = self.table().values().cloned().collect();
        for run in runs {
            run.stop(reason);
        }
    }

    fn running_for(&self, owner: &Owner) -> usize {
        self.table().values().filter(|r| r.client == owner.client).count()
    }
}

pub(crate) fn store_error(e: StoreError) -> Error {
    match e {
        StoreError::Full { .. } => Error::new(ErrorCode::OVERLOADED, e.to_string()),
        StoreError::Unavailable(_) => Error::internal(e.to_string()),
    }
}

/// A task this instance runs: its record as this instance last wrote it, the questions waiting for answers, and the
/// way back to the handler.
pub(crate) struct TaskRun {
    pub id: String,
    /// What the task does as its era has it.
    pub front: &'static dyn TaskFront,
    /// The client whose limits it counts against ([`Owner::client`]).
    client: String,
    server: Server,
    request: Weak<InFlight>,
    record: Mutex<TaskRecord>,
    /// 2026 era: the handler's questions waiting for `tasks/update`, by key.
    waiters: Mutex<HashMap<String, oneshot::Sender<Value>>>,
    /// 2026 era: every key used, so none is used twice in the task's life.
    keys: Mutex<HashSet<String>>,
    next_key: AtomicU32,
    /// 2025 era: a `tasks/result` request waiting on this task; its stream carries the task's messages.
    route: Mutex<Option<Sink>>,
    /// The session's own route (2025: stdio, or the standalone GET stream); none where a task has no stream.
    session_sink: Option<Sink>,
    /// 2025 era: the handler's requests to the client that wait for an answer (sent again on a `tasks/result`
    /// stream when one attaches: the client may not have been listening when they were first sent).
    questions: Mutex<Vec<(crate::wire::jsonrpc::RequestId, Frame)>>,
    /// Becomes `true` once the task is over and its record written.
    done: watch::Sender<bool>,
    /// Cancelled once the task is over (stops its TTL timer).
    over: CancellationToken,
}

impl TaskRun {
    fn lock(&self) -> std::sync::MutexGuard<'_, TaskRecord> {
        self.record.locked()
    }

    fn is_on(&self, conn: &dyn crate::context::Peer) -> bool {
        self.request.upgrade().is_some_and(|r| std::ptr::addr_eq(Arc::as_ptr(&r.peer), conn))
    }

    /// Applies a change to a live record (none once it is terminal) and returns the record to store.
    fn change(&self, f: impl FnOnce(&mut TaskRecord)) -> Option<TaskRecord> {
        let mut record = self.lock();
        if record.status.is_terminal() {
            return None;
        }
        f(&mut record);
        record.seq += 1;
        record.updated_at_ms = now_ms();
        Some(record.clone())
    }

    /// Writes a changed record to the store and tells whoever watches the task. If the store holds a terminal
    /// record already (another instance cancelled it), the handler stops.
    async fn save(self: &Arc<Self>, record: TaskRecord) -> bool {
        let applied = match self.server.tasks().store.update(record.clone()).await {
            Ok(applied) => applied,
            Err(e) => {
                tracing::error!(task = %self.id, error = %e, "could not write a task's record");
                false
            }
        };
        if applied {
            self.announce(&record);
        } else if !record.status.is_terminal() {
            if let Ok(Some(stored)) = self.server.tasks().store.get(&self.id).await {
                if stored.status.is_terminal() {
                    *self.lock() = stored;
                    self.halt();
                }
            }
        }
        if record.status.is_terminal() {
            self.close();
        }
        applied
    }

    /// Sends the task's status to whoever follows it: the 2025 session (`notifications/tasks/status`), or the 2026
    /// listen streams that asked for this task (`notifications/tasks`).
    fn announce(&self, record: &TaskRecord) {
        self.front.announce(&self.server, self.session_sink.as_ref(), record)
    }

    /// Stops the handler (a cancel, an expiry, the session's end): its record is written by whoever called.
    fn halt(&self) {
        if let Some(request) = self.request.upgrade() {
            request.stop_quietly();
        }
    }

    /// Marks the task over: out of the running table, its watchers woken.
    fn close(&self) {
        self.over.cancel();
        self.server.tasks().table().remove(&self.id);
        self.waiters.locked().clear();
        let _ = self.done.send(true);
    }

    /// Cancels the task from the server's side (the session ended, the server is stopping).
    pub(crate) fn stop(self: &Arc<Self>, reason: &str) {
        let run = self.clone();
        let reason = reason.to_owned();
        crate::base::cancel::cleanup_tasks().spawn(async move {
            run.cancel(&reason).await;
        });
    }

    /// Cancels the task: `cancelled` is written first, then the handler stops. `false` if it was already over.
    pub(crate) async fn cancel(self: &Arc<Self>, reason: &str) -> bool {
        let Some(record) = self.change(|r| {
            r.status = TaskStatus::Cancelled;
            r.status_message = Some(reason.to_owned());
            r.input_requests.clear();
        }) else {
            return false;
        };
        let applied = self.save(record).await;
        self.halt();
        applied
    }

    /// Records how the handler ended.
    pub(crate) async fn complete(self: &Arc<Self>, outcome: Result<Value, Error>) {
        let is_error = matches!(&outcome, Ok(v) if v.get("isError") == Some(&Value::Bool(true)));
        let (status, message) = match &outcome {
            Err(e) => (TaskStatus::Failed, Some(e.message.clone())),
            // 2025-11-25: a tool error fails the task; 2026-07-28: it is a result like any other.
            Ok(_) if is_error && self.front.tool_error_fails() => {
                (TaskStatus::Failed, Some("the tool reported an error".to_owned()))
            }
            Ok(_) => (TaskStatus::Completed, None),
        };
        let Some(record) = self.change(|r| {
            r.status = status;
            r.status_message = message;
            r.input_requests.clear();
            r.outcome = Some(outcome);
        }) else {
            self.close();
            return;
        };
        self.save(record).await;
    }

    /// The handler stopped without an outcome (cancelled): the record says so unless it already does.
    pub(crate) async fn stopped(self: &Arc<Self>) {
        if !self.cancel("the task was cancelled").await {
            self.close();
        }
    }

    /// Waits until the task is over.
    pub(crate) async fn wait_done(&self) {
        let mut done = self.done.subscribe();
        let _ = done.wait_for(|d| *d).await;
    }

    /// Sends a frame that belongs to the task (2025 era): on a waiting `tasks/result` stream, else the session's.
    pub(crate) fn send(&self, frame: Frame, droppable: bool) {
        if self.session_sink.is_none() || self.over.is_cancelled() {
            // No stream for a task's progress, logs or requests (the 2026 era has none).
            return;
        }
        self.deliver(frame, droppable);
    }

    fn deliver(&self, frame: Frame, droppable: bool) {
        let route = self.route.locked().clone();
        let Some(sink) = route.as_ref().or(self.session_sink.as_ref()) else { return };
        if droppable {
            sink.send_droppable(frame)
        } else {
            sink.send(frame)
        }
    }

    /// Routes the task's messages onto a `tasks/result` stream while it waits (2025 era, HTTP), and sends the
    /// questions still waiting for an answer there too: the client calls `tasks/result` to receive them.
    pub(crate) fn attach(&self, sink: Sink) {
        let open: Vec<Frame> = self.questions.locked().iter().map(|(_, f)| f.clone()).collect();
        for frame in open {
            sink.send(frame);
        }
        *self.route.locked() = Some(sink);
    }

    /// 2025 era: a request to the client from the handler, sent (tagged with the task) and kept until answered.
    pub(crate) fn open_question(&self, id: crate::wire::jsonrpc::RequestId, frame: Frame) {
        self.questions.locked().push((id, frame.clone()));
        self.send(frame, false);
    }

    /// 2025 era: a question is over: answered, or (`withdrawn`) abandoned, and the client told so on the task's
    /// stream, even once the task is over.
    pub(crate) fn close_question(&self, id: &crate::wire::jsonrpc::RequestId, withdrawn: bool) {
        self.questions.locked().retain(|(q, _)| q != id);
        if withdrawn {
            let frame = Frame::notification(
                "notifications/cancelled",
                &json!({
                    "requestId": id,
                    "reason": "the task that asked was cancelled",
                    "_meta": related_meta(&self.id),
                }),
            );
            self.deliver(frame, false);
        }
    }

    /// Stops routing onto a stream.
    pub(crate) fn detach(&self) {
        *self.route.locked() = None;
    }

    /// 2025 era: `status` while the handler waits for the client (`input_required`), or once it has its answer.
    pub(crate) async fn set_status(self: &Arc<Self>, status: TaskStatus) {
        if let Some(record) = self.change(|r| {
            r.status = status;
            r.status_message = None;
        }) {
            self.save(record).await;
        }
    }

    /// 2026 era: a question from the handler. It goes into `inputRequests` under a key unique in the task's life,
    /// the task is `input_required`, and the answer comes from `tasks/update`.
    pub(crate) async fn ask(self: &Arc<Self>, key: Option<&str>, question: Value) -> Option<Value> {
        let key = self.unique_key(key);
        let (tx, rx) = oneshot::channel();
        self.waiters.locked().insert(key.clone(), tx);
        if let Some(record) = self.change(|r| {
            r.input_requests.insert(key.clone(), question);
            r.status = TaskStatus::InputRequired;
            r.status_message = None;
        }) {
            self.save(record).await;
        }
        rx.await.ok()
    }

    fn unique_key(&self, given: Option<&str>) -> String {
        let mut keys = self.keys.locked();
        let base = match given {
            Some(k) => k.to_owned(),
            None => format!("input-{}", self.next_key.fetch_add(1, Ordering::Relaxed) + 1),
        };
        let mut key = base.clone();
        let mut n = 1;
        while keys.contains(&key) {
            n += 1;
            key = format!("{base}-{n}");
        }
        keys.insert(key.clone());
        key
    }

    /// 2026 era: the client's answers. Keys that are not outstanding are ignored; the answered ones leave
    /// `inputRequests` before this returns, and the task is `working` again once none is left.
    pub(crate) async fn answer(self: &Arc<Self>, responses: Map<String, Value>) {
        let answered: Vec<(oneshot::Sender<Value>, Value)> = {
            let mut waiters = self.waiters.locked();
            responses.into_iter().filter_map(|(k, v)| waiters.remove(&k).map(|tx| (tx, v))).collect()
        };
        if answered.is_empty() {
            return;
        }
        let outstanding: HashSet<String> = self.waiters.locked().keys().cloned().collect();
        if let Some(record) = self.change(|r| {
            r.input_requests.retain(|k, _| outstanding.contains(k));
            if r.input_requests.is_empty() {
                r.status = TaskStatus::Working;
            }
        }) {
            self.save(record).await;
        }
        for (tx, value) in answered {
            let _ = tx.send(value);
        }
    }
}

/// Why a request did not become a task.
pub(crate) enum Refused {
    /// The client has its most tasks running: it may try again when one ends.
    Running(Error),
    /// The store refused the task: it is full, or holds this client's share of it.
    Store(Error),
    /// Anything else (the random number generator failed).
    Other(Error),
}

impl From<Refused> for Error {
    fn from(refused: Refused) -> Error {
        match refused {
            Refused::Running(e) | Refused::Store(e) | Refused::Other(e) => e,
        }
    }
}

/// Starts the task a request may become (see [`TaskPlan`]): the record is created in the store, then the request
/// is answered with the task, and from then on the handler runs as the task. `Ok(None)` when the request is not one
/// that becomes a task; the task when it already is one.
pub(crate) async fn begin(request: &Arc<InFlight>) -> Result<Option<Arc<TaskRun>>, Refused> {
    if let Some(run) = request.task_run() {
        return Ok(Some(run));
    }
    let Some(plan) = request.task_plan.get().copied() else {
        return Ok(None);
    };
    let server = request.server().clone();
    let engine = server.tasks();
    let owner = Owner::of(request);
    if engine.running_for(&owner) >= engine.config.max_running {
        return Err(Refused::Running(Error::new(
            ErrorCode::OVERLOADED,
            format!(
                "too many tasks running for this client (the limit is {}); try again later",
                engine.config.max_running
            ),
        )));
    }
    let max_ttl = engine.config.max_ttl.as_millis() as u64;
    let ttl =
        plan.requested_ttl.or(plan.options.ttl_ms).unwrap_or(engine.config.ttl.as_millis() as u64).clamp(1, max_ttl);
    let now = now_ms();
    let expires_at = now.saturating_add(ttl);
    engine.reserve_stored(&owner.client, expires_at).map_err(Refused::Store)?;
    let record = TaskRecord {
        id: new_task_id().map_err(Refused::Other)?,
        tool: plan.tool.to_owned(),
        status: TaskStatus::Working,
        status_message: None,
        created_at_ms: now,
        updated_at_ms: now,
        ttl_ms: Some(ttl),
        poll_interval_ms: plan
            .options
            .poll_interval_ms
            .unwrap_or(engine.config.poll_interval.as_millis() as u64)
            .max(1),
        session: owner.session,
        subject: owner.subject,
        input_requests: Map::new(),
        outcome: None,
        seq: 0,
    };
    if let Err(e) = engine.store.create(record.clone()).await {
        engine.release_stored(&owner.client, expires_at);
        return Err(Refused::Store(store_error(e)));
    }
    let front = engine.fronts.of(request.meta.era);
    let session_sink = front.session_sink(&*request.peer);
    let run = Arc::new(TaskRun {
        id: record.id.clone(),
        front,
        client: owner.client,
        server: server.clone(),
        request: Arc::downgrade(request),
        record: Mutex::new(record.clone()),
        waiters: Mutex::new(HashMap::new()),
        keys: Mutex::new(HashSet::new()),
        next_key: AtomicU32::new(0),
        route: Mutex::new(None),
        session_sink,
        questions: Mutex::new(Vec::new()),
        done: watch::channel(false).0,
        over: CancellationToken::new(),
    });
    engine.table().insert(run.id.clone(), run.clone());
    let _ = request.task.set(run.clone());
    // From here a cancel of the request (or its stream closing) no longer reaches the handler: tasks/cancel does.
    request.peer.forget(request);
    let frame = front.create_result(&server, &request.id, &record);
    if !request.finish(frame) {
        // The request was cancelled while the task was being stored: the task is cancelled with it.
        request.out.close();
        run.cancel("the request that created the task was cancelled").await;
        return Ok(Some(run));
    }
    tracing::info!(task = %run.id, tool = %record.tool, ttl_ms = ttl, "task created");
    let expiry = run.clone();
    crate::base::cancel::cleanup_tasks().spawn(async move {
        tokio::select! {
            () = expiry.over.cancelled() => {}
            () = tokio::time::sleep(Duration::from_millis(ttl)) => {
                if let Some(record) = expiry.change(|r| {
                    r.status = TaskStatus::Failed;
                    r.status_message = Some("the task's TTL ran out before it finished".into());
                    r.outcome = Some(Err(Error::internal("the task's TTL ran out before it finished")));
                    r.input_requests.clear();
                }) {
                    expiry.save(record).await;
                    expiry.halt();
                }
            }
        }
    });
    Ok(Some(run))
}

impl crate::context::Context {
    /// Makes this call a task now, for a tool with `task = "optional"` or `"required"` and `defer_task`: the client
    /// gets the task at once, and this handler goes on running as it. Questions asked before it are ordinary
    /// questions of the request (in the 2026-07-28 era, `input_required` results, the handler running again with
    /// the answers); questions after it are the task's. A call that is already a task, or that cannot become one
    /// (its tool does not run as a task, or the client cannot take a task), goes on as it is.
    ///
    /// Fails when the task cannot be stored (the store is full or unreachable); the call then still answers in its
    /// request.
    ///
    /// ```
    /// # use mcp::{Context, Elicitation};
    /// #[derive(serde::Deserialize, schemars::JsonSchema)]
    /// struct Scope {
    ///     /// The directory to index.
    ///     path: String,
    /// }
    ///
    /// /// Indexes a directory the user chooses, in the background.
    /// #[mcp::tool(task = "required", defer_task)]
    /// async fn index(ctx: &Context) -> Result<String, mcp::ClientError> {
    ///     let Elicitation::Accept(scope) = ctx.elicit::<Scope>("What should be indexed?").await? else {
    ///         return Ok("nothing to do".into());
    ///     };
    ///     let _ = ctx.start_task().await; // the client gets its task id here
    ///     Ok(format!("indexed {}", scope.path))
    /// }
    /// ```
    pub async fn start_task(&self) -> Result<(), crate::Error> {
        begin(self.in_flight()).await.map(|_| ()).map_err(crate::Error::from)
    }

    /// [`Context::start_task`] for a plain `fn` handler.
    pub fn start_task_blocking(&self) -> Result<(), crate::Error> {
        let runtime = tokio::runtime::Handle::try_current()
            .map_err(|_| crate::Error::internal("start_task_blocking needs the server's runtime"))?;
        runtime.block_on(self.start_task())
    }
}

impl Server {
    /// The task engine.
    pub(crate) fn tasks(&self) -> &TaskEngine {
        self.inner.parts.get::<TaskEngine>().expect("every server has a task engine")
    }
}

impl crate::context::TaskRoute for TaskRun {
    fn id(&self) -> &str {
        &self.id
    }
    fn send(&self, frame: Frame, droppable: bool) {
        TaskRun::send(self, frame, droppable)
    }
    fn into_any(self: Arc<Self>) -> Arc<dyn std::any::Any + Send + Sync> {
        self
    }
}

impl InFlight {
    /// The task this request became, if it became one.
    pub(crate) fn task_run(&self) -> Option<Arc<TaskRun>> {
        let run = self.task.get()?.clone().into_any();
        Some(run.downcast().expect("a request's task is a TaskRun"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn timestamps_are_rfc_3339_in_utc() {
        assert_eq!(timestamp(0), "1970-01-01T00:00:00.000Z");
        assert_eq!(timestamp(1_764_583_200_123), "2025-12-01T10:00:00.123Z");
    }

    #[test]
    fn task_ids_are_128_random_bits() {
        let a = new_task_id().unwrap();
        let b = new_task_id().unwrap();
        assert_eq!(a.len(), 32);
        assert_ne!(a, b);
    }
}
