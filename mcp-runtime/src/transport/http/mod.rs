//! Streamable HTTP: one endpoint serves both eras. This file is the endpoint and what every request passes
//! through alike (Host and Origin, authorization, the body read and parsed); [`crate::era::of`] then decides the
//! request's era, and its front serves it:
//!
//! - [`v2025`] (2025-11-25 sessions): POST carries client messages, answered by an SSE stream (or one JSON body
//!   when the response is ready at once, or always, by configuration); GET opens the session's standalone stream;
//!   DELETE ends the session. Sessions have random ids; every stream's events are kept in an event store so a
//!   client whose stream dropped resumes with `Last-Event-ID` and loses nothing. Its stateless mode makes every
//!   POST a session of its own.
//! - [`v2026`] (2026-07-28): every POST stands alone, its headers checked against its body; GET and DELETE are 405.

// Handlers return axum's `Response` as their error, as axum code does.
#![allow(clippy::result_large_err)]

mod auth;
mod closing;
mod connections;
mod first_poll;
mod guards;
mod health;
mod options;
mod serve;
mod v2025;
mod v2026;

pub use options::HttpOptions;

#[cfg(feature = "fuzzing")]
pub(crate) use v2026::headers::{check_http_headers, decode_header_value};

use std::net::{IpAddr, SocketAddr};
use std::sync::Arc;
use std::time::Duration;

use axum::body::Body;
use axum::extract::State as AxumState;
use axum::http::{header, HeaderMap, HeaderName, HeaderValue, Method, StatusCode};
use axum::response::{IntoResponse, Response};

use crate::auth::AuthInfo;
use crate::base::body::{read_body, BodyRead};
use crate::context::{Era, HttpRequest};
use crate::server::Server;
use crate::wire::error::ErrorCode;
use crate::wire::jsonrpc::{Frame, Incoming};
use guards::{accepts, check_origin, error_response, plain, RefusedNames};

pub(crate) use crate::wire::protocol::{SESSION_HEADER, VERSION_HEADER};
/// The same two names parsed once: a lookup by `&str` parses and validates the name every time.
static SESSION_NAME: HeaderName = HeaderName::from_static(SESSION_HEADER);
static VERSION_NAME: HeaderName = HeaderName::from_static(VERSION_HEADER);
/// `X-Accel-Buffering`, sent `no` on every SSE answer: nginx then passes its events on as they come, whatever its
/// `proxy_buffering` says (with buffering on, a question to the client or a progress event would wait in nginx's
/// buffer until the stream ended).
static ACCEL_BUFFERING: HeaderName = HeaderName::from_static("x-accel-buffering");

/// The timer of an open stream's keep-alive comments: the first one `every` from now.
fn keep_alive_timer(every: Duration) -> tokio::time::Interval {
    let mut timer = tokio::time::interval_at(tokio::time::Instant::now() + every, every);
    // A stream that was busy does not owe the comments it skipped.
    timer.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    timer
}

/// The answer of a draining server to what it no longer takes (a session it could not share, a new stream): 503
/// with `Retry-After`, so that the client, or the balancer in front, tries again elsewhere.
fn draining(state: &HttpState, what: &str) -> Response {
    state.refused("draining");
    let mut response = guards::error_response(
        StatusCode::SERVICE_UNAVAILABLE,
        ErrorCode::OVERLOADED,
        format!("this server instance is stopping and takes no new {what}: try again (another instance)"),
    );
    response.headers_mut().insert(header::RETRY_AFTER, HeaderValue::from_static("1"));
    response
}

impl HttpState {
    /// Counts a refusal at `limit` in the server's metrics, if it has some.
    pub(super) fn refused(&self, limit: &'static str) {
        if let Some(metrics) = self.server.inner.metrics() {
            metrics.refused(limit);
        }
    }

    /// The server was told to stop and drains.
    fn is_draining(&self) -> bool {
        self.stopping.load(std::sync::atomic::Ordering::Relaxed)
    }
}

/// A keep-alive comment: an SSE line a client ignores.
const KEEP_ALIVE_COMMENT: &[u8] = b":\n\n";

/// `Content-Type: application/json`, the value made without a copy (a `&str` header value is copied into a new
/// buffer on every response).
fn json_type() -> HeaderValue {
    HeaderValue::from_static("application/json")
}

/// A frame as one JSON body, with its status: the frame's text is the body as it is, without a copy.
fn json_body(status: StatusCode, frame: Frame) -> Response {
    let mut response = Response::new(Body::from(frame.into_text()));
    *response.status_mut() = status;
    response.headers_mut().insert(header::CONTENT_TYPE, json_type());
    response
}

/// What the endpoint serves with: the server, the options, and each era's own state.
struct HttpState {
    server: Server,
    options: HttpOptions,
    /// The 2025 sessions, and the stateless mode's requests.
    sessions: v2025::Sessions,
    /// The 2026 requests whose POST waits for its answer (cancelled when the server stops).
    waiting: v2026::Waiting,
    /// The Host and Origin values refused so far, each logged once.
    refused: RefusedNames,
    /// The server was asked to stop: the readiness check says so.
    stopping: std::sync::atomic::AtomicBool,
    /// Since when the readiness check has found the shared Redis unreachable, without an answer since.
    #[cfg_attr(not(feature = "redis"), allow(dead_code))]
    redis_down_since: std::sync::Mutex<Option<std::time::Instant>>,
}

async fn endpoint(AxumState(state): AxumState<Arc<HttpState>>, request: axum::extract::Request) -> Response {
    let socket = request.extensions().get::<axum::extract::ConnectInfo<SocketAddr>>().map(|c| c.0.ip());
    serve_request(&state, request, socket).await
}

/// A request to the endpoint, from the router (`endpoint`) or straight from the connection (`serve_http_on`, for
/// a request to the endpoint's path, skips the router). `socket` is the address of the connection's peer.
async fn serve_request(state: &Arc<HttpState>, request: axum::extract::Request, socket: Option<IpAddr>) -> Response {
    let (parts, body) = request.into_parts();
    let (method, mut headers) = (parts.method, parts.headers);
    if let Err(r) = check_origin(&state.options, &state.refused, &headers, parts.uri.authority().map(|a| a.as_str())) {
        return r;
    }
    let query = parts.uri.query();
    // The path the client called, what a DPoP proof's `htu` names (or the resource's path): with the prefix of a
    // `Router::nest` the endpoint is mounted under, which axum keeps in `OriginalUri`.
    let path = parts.extensions.get::<axum::extract::OriginalUri>().map_or(parts.uri.path(), |u| u.0.path());
    // Without the server's own authorization, a layer in front may have said who is calling.
    let mut auth = parts.extensions.get::<AuthInfo>().cloned().map(Arc::new);
    if let Some((guard, refusal)) = state.server.inner.auth().zip(crate::auth::Guard::token_in_query(query)) {
        return auth::refused(guard, &refusal);
    }
    if let (Some(guard), false) = (state.server.inner.auth(), method == Method::POST) {
        // A POST is checked once its body says what it asks for (its scopes); the rest at once.
        match auth::admit(state, guard, &mut headers, (method.as_str(), path, query), &[]).await {
            Ok(admitted) => auth = Some(admitted),
            Err(refused) => return refused,
        }
    }
    match method {
        Method::POST => {
            let forwarded = state.options.trust_forwarded.then(|| guards::forwarded_for(&headers)).flatten();
            let peer = forwarded.or(socket);
            post(state, headers, (path, query), body, auth, peer).await
        }
        // GET and DELETE belong to the 2025 sessions: the 2026 era has neither.
        Method::GET => v2025::get(state, headers, auth).await,
        Method::DELETE => v2025::delete(state, headers, auth).await,
        _ => (StatusCode::METHOD_NOT_ALLOWED, [(header::ALLOW, "GET, POST, DELETE")]).into_response(),
    }
}

/// A POST: the body read and parsed, the caller admitted (its scopes are known once the body says what it asks
/// for), then the request goes to its era's front.
async fn post(
    state: &Arc<HttpState>,
    mut headers: HeaderMap,
    (path, query): (&str, Option<&str>),
    body: Body,
    auth: Option<Arc<AuthInfo>>,
    peer: Option<std::net::IpAddr>,
) -> Response {
    if let Some(refused) = refused_media(&headers) {
        return refused;
    }
    let bytes = match read_post_body(state, &headers, body).await {
        Ok(bytes) => bytes,
        Err(refused) => return refused,
    };
    let message = match Incoming::parse(&bytes) {
        Ok(m) => m,
        Err(rejected) => {
            let body = Frame::error(rejected.id.as_ref(), &rejected.error);
            return json_body(StatusCode::BAD_REQUEST, body);
        }
    };
    // The one place a POST's era is decided (the body's envelope, else its version header).
    let era = crate::era::of(&message, headers.get(&VERSION_NAME).and_then(|v| v.to_str().ok()));
    let auth = match state.server.inner.auth() {
        Some(guard) => match admit_post(state, guard, &message, era, &mut headers, (path, query), peer).await {
            Ok(admitted) => Some(admitted),
            Err(refused) => return refused,
        },
        None => auth,
    };
    let http = Arc::new(HttpRequest { headers, auth, peer });
    match era {
        Era::V2026 => v2026::post(state, message, http).await,
        Era::V2025 => v2025::post(state, message, http).await,
    }
}

/// A POST that does not accept both answers' types, or whose body is not JSON: its refusal.
fn refused_media(headers: &HeaderMap) -> Option<Response> {
    if !accepts(headers, &["application/json", "text/event-stream"]) {
        return Some(plain(
            StatusCode::NOT_ACCEPTABLE,
            "not acceptable: the client must accept both application/json and text/event-stream",
        ));
    }
    let json_content = headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.split(';').next().unwrap_or_default().trim().eq_ignore_ascii_case("application/json"));
    if !json_content {
        return Some(plain(
            StatusCode::UNSUPPORTED_MEDIA_TYPE,
            "unsupported media type: the body must be application/json",
        ));
    }
    None
}

/// Reads a POST's body within the size limit and the time it is given; `Err`: the answer that says why not.
async fn read_post_body(state: &HttpState, headers: &HeaderMap, body: Body) -> Result<axum::body::Bytes, Response> {
    let limit = state.options.max_body_bytes.unwrap_or(state.server.inner.limits().max_message_bytes);
    // A client that waits for `100 Continue` before sending a declared length over the limit is refused at once,
    // before it uploads anything. (One that sends without waiting is read on, so it sees the answer.)
    let declared =
        headers.get(header::CONTENT_LENGTH).and_then(|v| v.to_str().ok()).and_then(|v| v.parse::<u64>().ok());
    let waits = headers.get(header::EXPECT).is_some_and(|v| v.as_bytes().eq_ignore_ascii_case(b"100-continue"));
    let over_limit = || {
        error_response(
            StatusCode::PAYLOAD_TOO_LARGE,
            ErrorCode::INVALID_REQUEST,
            format!("the request body is over the limit of {limit} bytes"),
        )
    };
    if waits && declared.is_some_and(|n| n > limit as u64) {
        return Err(over_limit());
    }
    match read_body(body, limit, declared, state.options.body_read_timeout).await {
        BodyRead::Whole(bytes) => Ok(bytes),
        BodyRead::TooLarge => Err(over_limit()),
        BodyRead::TimedOut => Err(error_response(
            StatusCode::REQUEST_TIMEOUT,
            ErrorCode::INVALID_REQUEST,
            format!("the request body did not arrive within {:?}", state.options.body_read_timeout),
        )),
        BodyRead::Broken => {
            Err(error_response(StatusCode::BAD_REQUEST, ErrorCode::INVALID_REQUEST, "the request body broke off"))
        }
    }
}

/// Admits a POST's caller through the guard, with the scopes what it asks for needs; `Err`: the refusal.
async fn admit_post(
    state: &Arc<HttpState>,
    guard: &crate::auth::Guard,
    message: &Incoming,
    era: Era,
    headers: &mut HeaderMap,
    (path, query): (&str, Option<&str>),
    peer: Option<std::net::IpAddr>,
) -> Result<Arc<AuthInfo>, Response> {
    let needed = match message {
        Incoming::Request { method, params, .. } => state.server.scopes_needed(method, params.as_ref()),
        _ => &[],
    };
    // With visibility rules, an item hidden from the caller is unknown to them, whatever its scopes: the token is
    // checked first, then whether they may see it, and only then its scopes (a 403 would tell them it exists). The
    // rules see the token here, not yet the client's info.
    if !needed.is_empty() && state.server.inner.served().visibility.is_set() {
        if let Incoming::Request { id, method, params, .. } = message {
            let mut probe = headers.clone();
            let admitted = auth::admit(state, guard, &mut probe, ("POST", path, query), &[]).await?;
            let mut meta = crate::context::RequestMeta::new(era, Arc::from(""), None);
            meta.http = Some(Arc::new(HttpRequest { headers: HeaderMap::new(), auth: Some(admitted), peer }));
            if let Some(unknown) = state.server.hidden_error(&meta, method, params.as_ref()) {
                // As the era answers that error: 200 in 2025-11-25; by its code in 2026-07-28.
                let status = match era {
                    Era::V2025 => StatusCode::OK,
                    Era::V2026 => StatusCode::from_u16(v2026::headers::http_status(unknown.code))
                        .unwrap_or(StatusCode::BAD_REQUEST),
                };
                return Err(json_body(status, Frame::error(Some(id), &unknown)));
            }
        }
    }
    auth::admit(state, guard, headers, ("POST", path, query), needed).await
}
