//! The task engine: the store, the tasks this instance runs, the limits per client; and who may see a task.

use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Mutex};

use super::front::{TaskFront, TaskFronts};
use super::{now_ms, StoreError, TaskRecord, TaskRun, TaskSettings, TaskStore};
use crate::base::sync::Unpoisoned;
use crate::context::InFlight;
use crate::server::hub::{Change, Subscriber};
use crate::wire::error::{Error, ErrorCode};

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
        let session = front.owner_session(&*request.link, subject.as_deref());
        let client = match (&subject, &session, http.and_then(|h| h.peer)) {
            (Some(s), _, _) => format!("principal:{s}"),
            (None, Some(session), _) => session.clone(),
            (None, None, Some(peer)) => format!("peer:{peer}"),
            (None, None, None) => request.link.connection_key(),
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
    pub config: TaskSettings,
    running: Arc<Running>,
    /// The tasks this instance stored for each client, with when each expires (milliseconds since the epoch), oldest
    /// first: what [`TaskSettings::max_stored`] counts. A client's entry goes once none of its tasks is left.
    stored: Mutex<HashMap<String, VecDeque<u64>>>,
    /// What a task does in each era.
    pub fronts: TaskFronts,
}

impl TaskEngine {
    pub(crate) fn new(store: Arc<dyn TaskStore>, config: TaskSettings, fronts: TaskFronts) -> TaskEngine {
        let running = Arc::new(Running(Mutex::new(HashMap::new())));
        TaskEngine { store, config, running, stored: Mutex::new(HashMap::new()), fronts }
    }

    /// Counts one more stored task for `client`, expiring at `expires_at`; refuses when the client has its most.
    pub(super) fn reserve_stored(&self, client: &str, expires_at: u64) -> Result<(), Error> {
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
    pub(super) fn release_stored(&self, client: &str, expires_at: u64) {
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

    pub(super) fn table(&self) -> std::sync::MutexGuard<'_, HashMap<String, Arc<TaskRun>>> {
        self.running.0.locked()
    }

    /// What hears the changes other instances make to the tasks this instance runs, for the server's list of them
    /// ([`ScaleOut::elsewhere`](crate::server::ScaleOut::elsewhere)); it lives as long as the engine.
    pub(crate) fn elsewhere(&self) -> std::sync::Weak<dyn Subscriber> {
        let running: Arc<dyn Subscriber> = self.running.clone();
        Arc::downgrade(&running)
    }

    /// A task this instance runs.
    pub(crate) fn running(&self, id: &str) -> Option<Arc<TaskRun>> {
        self.table().get(id).cloned()
    }

    /// A task's record, if the caller may see it: unknown, expired and other callers' tasks alike are -32602.
    pub(crate) async fn find(&self, id: &str, owner: &Owner, front: &dyn TaskFront) -> Result<TaskRecord, Error> {
        let record = self.store.get(id).await.map_err(store_error)?;
        match record {
            Some(r) if owner.may_see(&r, front) => Ok(self.orphaned(r).await),
            _ => Err(Error::invalid_params(format!(
                "no task {id:?}: it is unknown, has expired, or belongs to another client"
            ))),
        }
    }

    /// A record whose task is not over, is not run here, and whose lease ran out (with a second's grace, for
    /// clocks that disagree) has lost the instance that ran it: it is failed now, saying so (its followers learn it
    /// at their next poll: no instance runs it to tell them). Any other record comes back as it is.
    pub(crate) async fn orphaned(&self, record: TaskRecord) -> TaskRecord {
        let lapsed = record.lease_until_ms.is_some_and(|until| until.saturating_add(1_000) < now_ms());
        if record.status.is_terminal() || !lapsed || self.running(&record.id).is_some() {
            return record;
        }
        let mut failed = record.clone();
        let why = "the instance that ran this task stopped before it finished (its lease ran out)";
        failed.status = super::TaskStatus::Failed;
        failed.status_message = Some(why.into());
        failed.outcome = Some(Err(Error::internal(why)));
        failed.input_requests.clear();
        failed.seq += 1;
        failed.updated_at_ms = now_ms();
        match self.store.update(failed.clone()).await {
            Ok(true) => {
                tracing::warn!(task = %record.id, "a task lost its instance: failed");
                failed
            }
            // Another instance got there first, or the task ended meanwhile: the store has the word.
            _ => self.store.get(&record.id).await.ok().flatten().unwrap_or(record),
        }
    }

    /// Cancels the tasks running on a connection that is going away (its 2025 session ended, or stdio closed).
    pub(crate) fn cancel_on(&self, conn: &dyn crate::context::Link, reason: &str) {
        let runs: Vec<_> = self.table().values().filter(|r| r.is_on(conn)).cloned().collect();
        for run in runs {
            run.stop(reason);
        }
    }

    /// The connections (by address) with a task running on them: a 2025 session with one is not idle.
    #[cfg(feature = "http")]
    pub(crate) fn connections_running(&self) -> std::collections::HashSet<*const ()> {
        self.table().values().filter_map(|r| r.request.upgrade()).map(|r| Arc::as_ptr(&r.link) as *const ()).collect()
    }

    /// Cancels every running task (the server is stopping).
    #[cfg(feature = "http")]
    pub(crate) fn cancel_all(&self, reason: &str) {
        let runs: Vec<_> = self.table().values().cloned().collect();
        for run in runs {
            run.stop(reason);
        }
    }

    /// How many tasks this instance runs that are `working`, and how many `input_required` (for the metrics).
    pub(crate) fn running_by_status(&self) -> [u64; 2] {
        let mut counts = [0, 0];
        for run in self.table().values() {
            match run.status() {
                super::TaskStatus::InputRequired => counts[1] += 1,
                _ => counts[0] += 1,
            }
        }
        counts
    }

    pub(super) fn running_for(&self, owner: &Owner) -> usize {
        self.table().values().filter(|r| r.client == owner.client).count()
    }
}

/// The tasks this instance runs, by id; what hears another instance's changes to them.
struct Running(Mutex<HashMap<String, Arc<TaskRun>>>);

impl Subscriber for Running {
    /// Another instance changed a task this instance runs: a record that is over (a cancel written there) stops the
    /// handler at once, as a cancel here would; the input a client gave there goes to the handler's question here.
    fn hear(&self, change: &Change) {
        let run = |id: &str| self.0.locked().get(id).cloned();
        match change {
            Change::Task { record } if record.status.is_terminal() => {
                if let Some(run) = run(&record.id) {
                    run.ended_elsewhere((**record).clone());
                }
            }
            Change::TaskInput { task, responses } => {
                if let Some(run) = run(task) {
                    let responses = responses.clone();
                    tokio::spawn(async move { run.answer(responses).await });
                }
            }
            _ => {}
        }
    }
}

pub(crate) fn store_error(e: StoreError) -> Error {
    match e {
        StoreError::Full { .. } => Error::new(ErrorCode::OVERLOADED, e.to_string()),
        StoreError::Unavailable(_) => Error::internal(e.to_string()),
    }
}
