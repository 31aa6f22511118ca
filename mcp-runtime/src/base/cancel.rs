//! Cooperative cancellation helpers: the [`Cancelled`] error and [`defer`], shielded async cleanup.

use std::fmt;
use std::future::Future;
use std::sync::OnceLock;
use std::time::Duration;

use tokio_util::task::TaskTracker;

/// The request was cancelled. Returned by [`Context::check_cancelled`](crate::Context::check_cancelled) so a plain
/// `fn` can stop with `?`; nothing is sent to the client for a cancelled request.
///
/// ```
/// /// Check `n` items, stopping early if the client cancels.
/// #[mcp::tool]
/// fn check(n: u64, ctx: &mcp::Context) -> Result<String, mcp::Cancelled> {
///     for _ in 0..n {
///         ctx.check_cancelled()?; // one atomic load
///     }
///     Ok(format!("checked {n}"))
/// }
///
/// assert_eq!(mcp::Cancelled.to_string(), "the request was cancelled");
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Cancelled;

impl fmt::Display for Cancelled {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("the request was cancelled")
    }
}

impl std::error::Error for Cancelled {}

/// Cleanup tasks started by [`defer`] guards; shutdown waits for them (bounded) before the process exits.
pub(crate) fn cleanup_tasks() -> &'static TaskTracker {
    static TASKS: OnceLock<TaskTracker> = OnceLock::new();
    TASKS.get_or_init(TaskTracker::new)
}

/// Runs `cleanup` when the returned guard is dropped: on return, on error, on panic, and when the handler's future is
/// dropped because its request was cancelled.
///
/// The cleanup runs as a task of its own, so it is shielded: cancelling the request does not cancel it. It is bounded:
/// after `timeout` it is dropped, with a warning. The server waits for pending cleanups before it exits.
///
/// ```
/// use std::time::Duration;
///
/// async fn release(title: String) { let _ = title; /* an async call to the warehouse */ }
///
/// /// Hold a book while the customer pays.
/// #[mcp::tool]
/// async fn hold(title: String) -> String {
///     let _release = mcp::defer(Duration::from_secs(5), release(title.clone()));
///     // … `.await`s that may be cancelled …
///     format!("held {title}")
/// }
/// ```
///
/// The guard must be bound to a name (`_release`, not `_`), or it is dropped, and the cleanup started, at once.
/// Outside a Tokio runtime the cleanup cannot be spawned; it is then dropped with an error in the log.
#[must_use = "the cleanup runs when this guard is dropped; bind it to a name such as `_cleanup`"]
pub fn defer<F>(timeout: Duration, cleanup: F) -> Defer
where
    F: Future<Output = ()> + Send + 'static,
{
    Defer { pending: Some((timeout, Box::pin(cleanup))), handle: tokio::runtime::Handle::try_current().ok() }
}

/// The guard returned by [`defer`]. Dropping it starts the cleanup; [`Defer::cancel`] disarms it.
///
/// ```
/// use std::time::Duration;
///
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() {
/// let (done, ran) = tokio::sync::oneshot::channel();
/// let guard = mcp::defer(Duration::from_secs(1), async move { let _ = done.send(()); });
/// drop(guard); // starts the cleanup
/// ran.await.unwrap();
///
/// let (done, ran) = tokio::sync::oneshot::channel::<()>();
/// mcp::defer(Duration::from_secs(1), async move { let _ = done.send(()); }).cancel();
/// assert!(ran.await.is_err()); // the cleanup was dropped unrun, and its sender with it
/// # }
/// ```
pub struct Defer {
    pending: Option<(Duration, crate::base::future::BoxFuture<'static, ()>)>,
    handle: Option<tokio::runtime::Handle>,
}

impl Defer {
    /// Disarms the guard: the cleanup will not run.
    pub fn cancel(mut self) {
        self.pending = None;
    }
}

impl fmt::Debug for Defer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Defer").field("armed", &self.pending.is_some()).finish()
    }
}

impl Drop for Defer {
    fn drop(&mut self) {
        let Some((timeout, cleanup)) = self.pending.take() else {
            return;
        };
        let handle = match self.handle.take().or_else(|| tokio::runtime::Handle::try_current().ok()) {
            Some(h) => h,
            None => {
                tracing::error!("mcp::defer: no Tokio runtime to run the cleanup on; it was dropped");
                return;
            }
        };
        let tasks = cleanup_tasks();
        tasks.spawn_on(
            async move {
                if tokio::time::timeout(timeout, cleanup).await.is_err() {
                    tracing::warn!(?timeout, "mcp::defer: cleanup did not finish in time and was dropped");
                }
            },
            &handle,
        );
    }
}
