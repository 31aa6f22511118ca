//! The liveness and readiness checks a balancer or an orchestrator asks (`GET /healthz`, `GET /readyz` by
//! default, [`HttpOptions::liveness_path`](super::HttpOptions::liveness_path)): routes of their own beside the
//! endpoint, so they pass no `Host` or `Origin` check (a Kubernetes probe names the pod's address) and no
//! authorization, and cost a request no more than a few lines.

use std::sync::atomic::Ordering;
use std::sync::Arc;

use axum::extract::State as AxumState;
use axum::http::{header, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::Router;

use super::HttpState;

/// How long the readiness check waits for a shared server's Redis to answer.
#[cfg(feature = "redis")]
const REDIS_WITHIN: std::time::Duration = std::time::Duration::from_secs(1);

/// Adds the checks the options name to `router`.
pub(super) fn routes(mut router: Router<Arc<HttpState>>, state: &HttpState) -> Router<Arc<HttpState>> {
    if let Some(path) = state.options.liveness_path.as_ref().filter(|p| **p != state.options.path) {
        router = router.route(path, get(live));
    }
    if let Some(path) = state.options.readiness_path.as_ref().filter(|p| **p != state.options.path) {
        router = router.route(path, get(ready));
    }
    router
}

fn text(status: StatusCode, body: String) -> Response {
    let mut response = (status, body).into_response();
    response.headers_mut().insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    response
}

/// The process serves.
async fn live() -> Response {
    text(StatusCode::OK, "ok\n".to_owned())
}

/// It can serve: it is not stopping, and its Redis answers when it shares state through one.
async fn ready(AxumState(state): AxumState<Arc<HttpState>>) -> Response {
    match not_ready(&state).await {
        None => text(StatusCode::OK, "ready\n".to_owned()),
        Some(why) => text(StatusCode::SERVICE_UNAVAILABLE, format!("not ready: {why}\n")),
    }
}

async fn not_ready(state: &HttpState) -> Option<String> {
    if state.stopping.load(Ordering::Relaxed) {
        return Some("the server is stopping".to_owned());
    }
    #[cfg(feature = "redis")]
    if let Some(redis) = state.server.inner.state().get::<crate::redis::Redis>() {
        let answered = redis.ping(REDIS_WITHIN).await;
        let mut down_since = state.redis_down_since.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        match answered {
            Ok(()) => *down_since = None,
            Err(e) => {
                let since = *down_since.get_or_insert_with(std::time::Instant::now);
                if since.elapsed() >= state.options.redis_grace {
                    return Some(format!("{e} (for {}s)", since.elapsed().as_secs()));
                }
            }
        }
    }
    None
}
