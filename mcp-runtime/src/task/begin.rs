//! How a request becomes a task: the limits checked, the record stored, the request answered with the task, its TTL
//! timer started; and `Context::start_task`, for a handler that decides when.

use std::collections::{HashMap, HashSet};
use std::sync::atomic::AtomicU32;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::Map;
use tokio::sync::watch;
use tokio_util::sync::CancellationToken;

use super::{now_ms, store_error, Owner, TaskEngine, TaskRecord, TaskRun, TaskStatus};
use crate::context::InFlight;
use crate::wire::error::{Error, ErrorCode};

/// 128 random bits, hex.
fn new_task_id() -> Result<String, Error> {
    crate::base::random_id().map_err(Error::internal)
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

/// Starts the task a request may become (see [`TaskPlan`](super::TaskPlan)): the record is created in the store,
/// then the request is answered with the task, and from then on the handler runs as the task. `Ok(None)` when the
/// request is not one that becomes a task; the task when it already is one.
pub(crate) async fn begin(request: &Arc<InFlight>) -> Result<Option<Arc<TaskRun>>, Refused> {
    if let Some(run) = request.task_run() {
        return Ok(Some(run));
    }
    let Some(plan) = crate::hook::claimed(request).and_then(|c| c.claim.downcast_ref::<super::TaskPlan>()).cloned()
    else {
        return Ok(None);
    };
    let server = request.server().clone();
    let engine = server.tasks();
    let owner = Owner::of(request);
    let Admitted { ttl, now, expires_at, counted_here } = admit(engine, &owner, &plan).await?;
    let record = TaskRecord {
        id: new_task_id().map_err(Refused::Other)?,
        tool: plan.tool.to_string(),
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
        lease_until_ms: Some(now.saturating_add(engine.config.lease.as_millis() as u64)),
        client: Some(owner.client.clone()),
    };
    if let Err(e) = engine.store.create(record.clone()).await {
        if counted_here {
            engine.release_stored(&owner.client, expires_at);
        }
        return Err(Refused::Store(store_error(e)));
    }
    let front = engine.fronts.of(request.meta.era);
    let run = new_run(request, &record, owner.client, &server);
    engine.table().insert(run.id.clone(), run.clone());
    let _ = request.task.set(run.clone());
    // The Tasks hook has taken the call over: the handler's outcome goes to its `finish`, into the task.
    if let Some(claimed) = crate::hook::claimed(request) {
        claimed.take();
    }
    // From here a cancel of the request (or its stream closing) no longer reaches the handler: tasks/cancel does.
    request.link.forget(request);
    let frame = front.create_result(&server, &request.id, &record);
    if !request.finish(frame) {
        // The request was cancelled while the task was being stored: the task is cancelled with it.
        request.out.close();
        run.cancel("the request that created the task was cancelled").await;
        return Ok(Some(run));
    }
    tracing::info!(task = %run.id, tool = %record.tool, ttl_ms = ttl, "task created");
    keep(&run, engine.config.lease, ttl);
    Ok(Some(run))
}

/// The run of a task just stored, for the request that created it.
fn new_run(
    request: &Arc<InFlight>,
    record: &TaskRecord,
    client: String,
    server: &crate::server::Server,
) -> Arc<TaskRun> {
    let front = server.tasks().fronts.of(request.meta.era);
    Arc::new(TaskRun {
        id: record.id.clone(),
        front,
        client,
        server: server.clone(),
        request: Arc::downgrade(request),
        record: Mutex::new(record.clone()),
        waiters: Mutex::new(HashMap::new()),
        keys: Mutex::new(HashSet::new()),
        next_key: AtomicU32::new(0),
        route: Mutex::new(None),
        session_sink: front.session_sink(&*request.link),
        questions: Mutex::new(Vec::new()),
        done: watch::channel(false).0,
        over: CancellationToken::new(),
    })
}

/// Keeps a created task: renews its lease at a third of its length while it runs, and fails it when its TTL ends
/// before it finished.
fn keep(run: &Arc<TaskRun>, lease: Duration, ttl: u64) {
    let expiry = run.clone();
    crate::base::cancel::cleanup_tasks().spawn(async move {
        // The lease is renewed at a third of its length while the task runs.
        let mut renew = tokio::time::interval_at(tokio::time::Instant::now() + lease / 3, lease / 3);
        let until = tokio::time::sleep(Duration::from_millis(ttl));
        tokio::pin!(until);
        loop {
            tokio::select! {
                () = expiry.over.cancelled() => return,
                _ = renew.tick() => expiry.renew_lease(lease).await,
                () = &mut until => break,
            }
        }
        // The TTL ran out before the task finished.
        if let Some(record) = expiry.change(|r| {
            r.status = TaskStatus::Failed;
            r.status_message = Some("the task's TTL ran out before it finished".into());
            r.outcome = Some(Err(Error::internal("the task's TTL ran out before it finished")));
            r.input_requests.clear();
        }) {
            expiry.save(record).await;
            expiry.halt();
        }
    });
}

/// What [`admit`] grants a new task: its TTL, its creation time and its end, and whether this instance counts it
/// among the client's stored tasks (the store does not count by client).
struct Admitted {
    ttl: u64,
    now: u64,
    expires_at: u64,
    counted_here: bool,
}

/// Whether the client may have one more task (the `TaskSettings` limits on running and stored tasks), and its TTL.
async fn admit(engine: &TaskEngine, owner: &Owner, plan: &super::TaskPlan) -> Result<Admitted, Refused> {
    // Over every instance when the store counts by client; else the tasks this instance started.
    let shared = match engine.store.client_tasks(&owner.client).await {
        Ok(counts) => counts,
        Err(e) => {
            tracing::warn!(error = %e, "the task store could not count the client's tasks: this instance's count is used");
            None
        }
    };
    let running = shared.map_or_else(|| engine.running_for(owner), |counts| counts.running);
    if running >= engine.config.max_running {
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
    match shared {
        Some(counts) if counts.stored >= engine.config.max_stored => {
            return Err(Refused::Store(Error::new(
                ErrorCode::OVERLOADED,
                format!(
                    "this client has {} tasks stored, the most it may have (running, or finished and kept for their \
                     TTL); try again once one has expired",
                    engine.config.max_stored
                ),
            )));
        }
        Some(_) => {}
        None => engine.reserve_stored(&owner.client, expires_at).map_err(Refused::Store)?,
    }
    Ok(Admitted { ttl, now, expires_at, counted_here: shared.is_none() })
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
    /// # use mcp::ask::Elicitation;
    /// # use mcp::Context;
    /// #[derive(serde::Deserialize, schemars::JsonSchema)]
    /// struct Scope {
    ///     /// The directory to index.
    ///     path: String,
    /// }
    ///
    /// /// Indexes a directory the user chooses, in the background.
    /// #[mcp::tool(task = "required", defer_task)]
    /// async fn index(ctx: &Context) -> Result<String, mcp::ask::AskError> {
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

    /// [`Context::start_task`](crate::Context::start_task) for a plain `fn` handler.
    pub fn start_task_blocking(&self) -> Result<(), crate::Error> {
        let runtime = tokio::runtime::Handle::try_current()
            .map_err(|_| crate::Error::internal("start_task_blocking needs the server's runtime"))?;
        runtime.block_on(self.start_task())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn task_ids_are_128_random_bits() {
        let a = new_task_id().unwrap();
        let b = new_task_id().unwrap();
        assert_eq!(a.len(), 32);
        assert_ne!(a, b);
    }
}
