//! The HTTP edge of authorization: the Protected Resource Metadata (RFC 9728) routes, and the check every request
//! of the MCP endpoint passes before anything reads it further (POST after its body is parsed, so a refusal can
//! name the scopes the request needs; GET and DELETE at once). A refusal is `401` or `403` with its
//! `WWW-Authenticate` challenge, or `503` when the token could not be checked now.

use std::sync::Arc;

use axum::extract::State as AxumState;
use axum::http::{header, HeaderMap, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::Router;

use super::{error_response, json_type, HttpState};
use crate::auth::{AuthInfo, Guard, ProofHeader, Refusal, Request};
use crate::wire::error::ErrorCode;

/// The metadata routes, when the server verifies tokens: the path form for the resource's path and for the
/// endpoint's (when they differ), and the root form.
pub(super) fn metadata_routes(mut router: Router<Arc<HttpState>>, state: &Arc<HttpState>) -> Router<Arc<HttpState>> {
    let Some(guard) = state.server.inner.auth() else { return router };
    let mut paths = vec![guard.metadata_path.clone(), "/.well-known/oauth-protected-resource".to_owned()];
    let endpoint_form = format!("/.well-known/oauth-protected-resource{}", state.options.path.trim_end_matches('/'));
    if !paths.contains(&endpoint_form) {
        paths.push(endpoint_form);
    }
    for path in paths {
        router = router.route(&path, get(metadata));
    }
    router
}

async fn metadata(AxumState(state): AxumState<Arc<HttpState>>) -> Response {
    let Some(guard) = state.server.inner.auth() else { return StatusCode::NOT_FOUND.into_response() };
    let body = guard.metadata(state.server.scopes_required(), &state.server.inner.served().info.name);
    (
        StatusCode::OK,
        [(header::CONTENT_TYPE, json_type()), (header::CACHE_CONTROL, HeaderValue::from_static("max-age=300"))],
        body.to_string(),
    )
        .into_response()
}

/// The `DPoP` request header (RFC 9449 §4.1).
static DPOP: header::HeaderName = header::HeaderName::from_static("dpop");

/// Checks a request's token (and, for the `DPoP` scheme, its proof, for `method` and `path`): its principal (the
/// `Authorization` and `DPoP` headers then taken out of `headers`, so no handler sees the token), or the refusal
/// to answer. A `401` names the scopes the request needs; for one that needs none (`initialize`, a list, GET),
/// the server's `initial_scopes`, else every scope its handlers need, so that a client signs in with what using
/// the server takes (the specification's servers SHOULD name them; a client reads them before `scopes_supported`).
pub(super) async fn admit(
    state: &HttpState,
    guard: &Guard,
    headers: &mut HeaderMap,
    (method, path, query): (&str, &str, Option<&str>),
    needed: &[&str],
) -> Result<Arc<AuthInfo>, Response> {
    let presented = headers.get(header::AUTHORIZATION).map(HeaderValue::as_bytes);
    let dpop_scheme = presented.is_some_and(|v| v.len() > 5 && v[..5].eq_ignore_ascii_case(b"dpop "));
    let proof = || {
        let mut values = headers.get_all(&DPOP).iter();
        match (values.next(), values.next()) {
            (None, _) => ProofHeader::Missing,
            (Some(one), None) => ProofHeader::One(one.as_bytes()),
            (Some(_), Some(_)) => ProofHeader::Many,
        }
    };
    let admitted = guard.admit(presented, proof, Request { method, path, query }, needed).await;
    headers.remove(header::AUTHORIZATION);
    if dpop_scheme {
        headers.remove(&DPOP);
    }
    admitted.map_err(|mut refusal| {
        if let Refusal::Unauthorized { scopes, .. } = &mut refusal {
            if scopes.is_empty() {
                scopes.extend(state.server.scopes_required().into_iter().map(str::to_owned));
            }
        }
        refused(guard, &refusal)
    })
}

/// The answer to a refused request.
pub(super) fn refused(guard: &Guard, refusal: &Refusal) -> Response {
    let (status, code) = match refusal {
        Refusal::Unauthorized { .. } => (StatusCode::UNAUTHORIZED, ErrorCode::INVALID_REQUEST),
        Refusal::InsufficientScope { .. } => (StatusCode::FORBIDDEN, ErrorCode::INVALID_REQUEST),
        Refusal::Unavailable(_) => (StatusCode::SERVICE_UNAVAILABLE, ErrorCode::INTERNAL_ERROR),
    };
    let mut response = error_response(status, code, refusal.message());
    if let Some(challenge) = refusal.challenge(guard).and_then(|c| HeaderValue::from_str(&c).ok()) {
        response.headers_mut().insert(header::WWW_AUTHENTICATE, challenge);
    }
    if status == StatusCode::SERVICE_UNAVAILABLE {
        response.headers_mut().insert(header::RETRY_AFTER, HeaderValue::from_static("5"));
    }
    response
}
