//! A task this instance runs (TaskRun): its record and how it changes, the way back to its handler, and where its
//! messages and questions go (the task's stream in the 2025 era, `inputRequests` in the 2026 era).

use std::collections::{HashMap, HashSet};
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, Mutex, Weak};

use serde_json::{json, Map, Value};
use tokio::sync::{oneshot, watch};
use tokio_util::sync::CancellationToken;

use super::front::TaskFront;
use super::{now_ms, related_meta, TaskRecord, TaskStatus};
use crate::base::sink::Sink;
use crate::base::sync::Unpoisoned;
use crate::context::InFlight;
use crate::server::Server;
use crate::wire::error::Error;
use crate::wire::jsonrpc::Frame;

/// A task this instance runs: its record as this instance last wrote it, the questions waiting for answers, and the
/// way back to the handler.
pub(crate) struct TaskRun {
    pub id: String,
    /// What the task does as its era has it.
    pub front: &'static dyn TaskFront,
    /// The client whose limits it counts against ([`Owner::client`](super::Owner::client)).
    pub(super) client: String,
    pub(super) server: Server,
    pub(super) request: Weak<InFlight>,
    pub(super) record: Mutex<TaskRecord>,
    /// 2026 era: the handler's questions waiting for `tasks/update`, by key.
    pub(super) waiters: Mutex<HashMap<String, oneshot::Sender<Value>>>,
    /// 2026 era: every key used, so none is used twice in the task's life.
    pub(super) keys: Mutex<HashSet<String>>,
    pub(super) next_key: AtomicU32,
    /// 2025 era: a `tasks/result` request waiting on this task; its stream carries the task's messages.
    pub(super) route: Mutex<Option<Sink>>,
    /// The session's own route (2025: stdio, or the standalone GET stream); none where a task has no stream.
    pub(super) session_sink: Option<Sink>,
    /// 2025 era: the handler's requests to the client that wait for an answer (sent again on a `tasks/result`
    /// stream when one attaches: the client may not have been listening when they were first sent).
    pub(super) questions: Mutex<Vec<(crate::wire::jsonrpc::RequestId, Frame)>>,
    /// Becomes `true` once the task is over and its record written.
    pub(super) done: watch::Sender<bool>,
    /// Cancelled once the task is over (stops its TTL timer).
    pub(super) over: CancellationToken,
}

impl TaskRun {
    fn lock(&self) -> std::sync::MutexGuard<'_, TaskRecord> {
        self.record.locked()
    }

    /// Its status as this instance last wrote it.
    pub(super) fn status(&self) -> super::TaskStatus {
        self.lock().status
    }

    pub(super) fn is_on(&self, conn: &dyn crate::context::Link) -> bool {
        self.request.upgrade().is_some_and(|r| std::ptr::addr_eq(Arc::as_ptr(&r.link), conn))
    }

    /// Applies a change to a live record (none once it is terminal) and returns the record to store.
    pub(super) fn change(&self, f: impl FnOnce(&mut TaskRecord)) -> Option<TaskRecord> {
        let mut record = self.lock();
        if record.status.is_terminal() {
            return None;
        }
        f(&mut record);
        record.seq += 1;
        record.updated_at_ms = now_ms();
        Some(record.clone())
    }

    /// Renews the task's lease in the store: only the lease and `seq` change, and nobody is told (a renewal is no
    /// news). A store that refuses it holds a terminal record (another instance ended the task): the handler stops.
    pub(super) async fn renew_lease(self: &Arc<Self>, lease: std::time::Duration) {
        let record = {
            let mut record = self.lock();
            if record.status.is_terminal() {
                return;
            }
            record.lease_until_ms = Some(now_ms().saturating_add(lease.as_millis() as u64));
            record.seq += 1;
            record.clone()
        };
        match self.server.tasks().store.update(record).await {
            Ok(true) => {}
            Ok(false) => {
                if let Ok(Some(stored)) = self.server.tasks().store.get(&self.id).await {
                    if stored.status.is_terminal() {
                        self.ended_elsewhere(stored);
                    }
                }
            }
            Err(e) => tracing::warn!(task = %self.id, error = %e, "could not renew a task's lease"),
        }
    }

    /// Writes a changed record to the store and tells whoever watches the task. If the store holds a terminal
    /// record already (another instance cancelled it), the handler stops.
    pub(super) async fn save(self: &Arc<Self>, record: TaskRecord) -> bool {
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
    /// Another instance ended the task (a cancel written there): its record is taken as it is, and the handler
    /// stops, as when a write here finds the stored record already over.
    pub(crate) fn ended_elsewhere(&self, record: TaskRecord) {
        *self.lock() = record;
        self.halt();
    }

    pub(super) fn halt(&self) {
        if let Some(request) = self.request.upgrade() {
            request.stop_quietly();
        }
    }

    /// Marks the task over: out of the running table, its watchers woken.
    fn close(&self) {
        self.over.cancel();
        let removed = self.server.tasks().table().remove(&self.id).is_some();
        if let (true, Some(metrics)) = (removed, self.server.inner.metrics()) {
            let status = self.lock().status;
            metrics.task_ended(if status.is_terminal() { status.as_str() } else { "cancelled" });
        }
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
