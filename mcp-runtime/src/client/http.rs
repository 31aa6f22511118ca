//! The Streamable HTTP transport of the client (reqwest). Each request is a POST whose answer is JSON or an SSE
//! stream, read by a task of its own that hands every message to the client; that task is the request's stream, and
//! aborting it closes the connection (the 2026 era's cancel).
//!
//! 2025 era: the session id from `initialize` on every message, the standalone GET stream for what belongs to no
//! request, a request's stream resumed with `Last-Event-ID` after its `retry:` delay when it ends early, and DELETE
//! on close. 2026 era: `Mcp-Method`, `Mcp-Name` and the `Mcp-Param-*` headers of the tool's `x-mcp-header`
//! parameters (in the `=?base64?…?=` form where a value cannot be a header as it is).

use std::collections::HashMap;
use std::sync::{Arc, Mutex, Weak};
use std::time::Duration;

use reqwest::header::{HeaderMap, HeaderName, HeaderValue};
use serde_json::Value;
use tokio::sync::{mpsc, Semaphore};
use tokio::task::AbortHandle;

use super::body::{http_error, read_body, read_prefix, SseReader, ERROR_BODY};
use super::headers::header_value;
use super::{Error, Inner, TransportError, TransportErrorKind};
use crate::base::sync::Unpoisoned;
use crate::wire::jsonrpc::RequestId;

/// How many times a request's stream is resumed before the request fails.
const MAX_RESUMES: usize = 5;
/// The delay before resuming a stream when the server gave no `retry:`.
const DEFAULT_RETRY: Duration = Duration::from_millis(1000);
/// How many notifications and answers to the server may wait to be posted; past that one is dropped (with a
/// warning), as on stdio.
const POST_QUEUE: usize = 1024;
/// How many of them are posted at once.
const POSTING: usize = 16;

/// What the builder sets for HTTP.
pub(crate) struct Options {
    /// The caller's own client, if any.
    pub(crate) client: Option<reqwest::Client>,
    /// Headers sent on every request.
    pub(crate) headers: Vec<(String, String)>,
    /// The longest JSON body or SSE event accepted.
    pub(crate) frame_limit: usize,
    /// OAuth authorization, if the client does it.
    pub(crate) auth: Option<super::auth::OAuth>,
}

pub(crate) struct Http {
    shared: Arc<Shared>,
    /// Notifications and answers waiting to be posted.
    posts: mpsc::Sender<String>,
    /// The reader of each request's stream.
    readers: Mutex<HashMap<RequestId, AbortHandle>>,
    standalone: Mutex<Option<AbortHandle>>,
}

impl Http {
    pub(crate) fn new(url: String, options: Options) -> Result<Http, Error> {
        let config = |context: String| Error::Transport(TransportError::new(TransportErrorKind::Config, context));
        if let Err(e) = reqwest::Url::parse(&url) {
            return Err(Error::Transport(
                TransportError::new(TransportErrorKind::Config, format!("{url:?} is not a URL")).source(e),
            ));
        }
        let mut headers = HeaderMap::new();
        for (name, value) in options.headers {
            let Ok(header) = HeaderName::from_bytes(name.as_bytes()) else {
                return Err(config(format!("{name:?} is not a header name")));
            };
            let Ok(value) = HeaderValue::from_str(&value) else {
                return Err(config(format!("the value of the header {name} is not a header value")));
            };
            headers.append(header, value);
        }
        let client = match options.client {
            Some(client) => client,
            None => reqwest::Client::builder()
                .tcp_nodelay(true)
                .build()
                .map_err(|e| Error::Transport(TransportError::from_reqwest("could not build the HTTP client", e)))?,
        };
        let auth = match options.auth {
            Some(config) => Some(super::auth::Authorizer::new(config, &url)?),
            None => None,
        };
        let shared = Arc::new(Shared {
            client,
            auth,
            url,
            headers,
            frame_limit: options.frame_limit,
            session: Mutex::new(None),
            version: Mutex::new(None),
        });
        let (posts, queue) = mpsc::channel(POST_QUEUE);
        tokio::spawn(post_loop(shared.clone(), queue));
        Ok(Http { shared, posts, readers: Mutex::new(HashMap::new()), standalone: Mutex::new(None) })
    }

    /// The endpoint's URL.
    pub(crate) fn url(&self) -> &str {
        &self.shared.url
    }

    pub(crate) fn set_version(&self, version: &str) {
        *self.shared.version.locked() = Some(version.to_owned());
    }

    fn session_headers(&self, request: reqwest::RequestBuilder) -> reqwest::RequestBuilder {
        self.shared.session_headers(request)
    }

    fn post(&self) -> reqwest::RequestBuilder {
        self.shared.post()
    }

    /// Sends a request; its answer (and whatever comes on its stream) goes to `inner`.
    pub(crate) fn request(
        &self,
        inner: &Arc<Inner>,
        id: &RequestId,
        method: &str,
        params: &Value,
        frame: String,
        era: crate::context::Era,
    ) {
        let mut request = self.post();
        if era == crate::context::Era::V2026 {
            request = request.header("mcp-protocol-version", super::VERSION_2026).header("mcp-method", method);
            let name = match method {
                "tools/call" | "prompts/get" => params["name"].as_str(),
                "resources/read" => params["uri"].as_str(),
                "tasks/get" | "tasks/update" | "tasks/cancel" => params["taskId"].as_str(),
                _ => None,
            };
            if let Some(name) = name {
                request = request.header("mcp-name", header_value(name));
            }
            if method == "tools/call" {
                let tool = params["name"].as_str().unwrap_or_default();
                let headers = inner.tool_headers.locked().get(tool).cloned();
                for (path, header) in headers.unwrap_or_default() {
                    let mut value = &params["arguments"];
                    for key in &path {
                        value = &value[key.as_str()];
                    }
                    let text = match value {
                        Value::String(s) => header_value(s),
                        Value::Number(n) => n.to_string(),
                        Value::Bool(b) => b.to_string(),
                        _ => continue,
                    };
                    request = request.header(format!("mcp-param-{header}"), text);
                }
            }
        } else {
            request = self.session_headers(request);
        }
        let request = request.body(frame);
        let weak = Arc::downgrade(inner);
        let id_for_task = id.clone();
        let initialize = method == "initialize";
        let http = self.shared.clone();
        let task = tokio::spawn(async move {
            let id = id_for_task;
            let outcome = match http.send(request).await {
                Ok(response) => {
                    if initialize {
                        if let Some(session) = response.headers().get("mcp-session-id").and_then(|v| v.to_str().ok()) {
                            *http.session.locked() = Some(session.to_owned());
                        }
                    }
                    read_response(&http, response, &weak, Some(&id)).await
                }
                Err(e) => Err(e),
            };
            if let (Err(e), Some(inner)) = (outcome, weak.upgrade()) {
                inner.fail(&id, e);
            }
        });
        self.readers.locked().insert(id.clone(), task.abort_handle());
    }

    /// The request got its response: its reader ends by itself.
    pub(crate) fn finished(&self, id: &RequestId) {
        self.readers.locked().remove(id);
    }

    /// Cancels a request: its stream is closed, and (2025) the notification sent.
    pub(crate) fn cancel(&self, id: &RequestId, notification: Option<String>) {
        if let Some(reader) = self.readers.locked().remove(id) {
            reader.abort();
        }
        if let Some(frame) = notification {
            self.post_message(frame);
        }
    }

    /// Posts a notification or a response (the server answers 202), in the order given, at most [`POSTING`] at
    /// once; dropped with a warning when [`POST_QUEUE`] already wait.
    pub(crate) fn post_message(&self, frame: String) {
        if let Err(mpsc::error::TrySendError::Full(_)) = self.posts.try_send(frame) {
            tracing::warn!("the server is not taking messages fast enough: a notification or answer was dropped");
        }
    }

    /// 2025 era: the standalone GET stream, for what the server sends outside any request; resumed while it lasts.
    /// Returns once the first GET has its answer (or failed), so that what the server sends right after is heard.
    pub(crate) async fn open_standalone_stream(&self, inner: Weak<Inner>) {
        let http = self.shared.clone();
        let (opened, wait) = tokio::sync::oneshot::channel::<()>();
        let mut opened = Some(opened);
        let task = tokio::spawn(async move {
            let mut last_event: Option<String> = None;
            let mut retry = DEFAULT_RETRY;
            for _ in 0..1000 {
                let mut request = http.session_headers(http.get());
                if let Some(id) = &last_event {
                    request = request.header("last-event-id", id);
                }
                let Ok(response) = http.send(request).await else { return };
                if let Some(opened) = opened.take() {
                    let _ = opened.send(());
                }
                if !response.status().is_success() {
                    return; // 405: the server offers no standalone stream; 404: the session is gone
                }
                let mut reader = SseReader::new(response, http.frame_limit);
                while let Some(event) = reader.next().await {
                    let event = match event {
                        Ok(event) => event,
                        Err(e) => {
                            tracing::error!(error = %e, "skipped an event of the standalone stream");
                            continue;
                        }
                    };
                    if let Some(id) = event.id {
                        last_event = Some(id);
                    }
                    if let Some(r) = event.retry {
                        retry = r;
                    }
                    let Some(inner) = inner.upgrade() else { return };
                    if let Ok(message) = serde_json::from_str(&event.data) {
                        inner.receive(message);
                    }
                }
                tokio::time::sleep(retry).await;
            }
        });
        *self.standalone.locked() = Some(task.abort_handle());
        let _ = tokio::time::timeout(Duration::from_secs(5), wait).await;
    }

    /// Stops the standalone stream and every request's reader: no answer reaches the client after this.
    pub(crate) fn stop_readers(&self) {
        if let Some(standalone) = self.standalone.locked().take() {
            standalone.abort();
        }
        for (_, reader) in self.readers.locked().drain() {
            reader.abort();
        }
    }

    /// Ends the 2025 session, if there is one (`DELETE`).
    pub(crate) async fn end_session(&self) {
        let session = self.shared.session.locked().take();
        if let Some(session) = session {
            // With the token held, but no authorization for it: closing never asks a user to sign in.
            let _ = self.shared.send_as_is(self.shared.delete().header("mcp-session-id", session)).await;
        }
    }
}

impl Drop for Http {
    fn drop(&mut self) {
        self.stop_readers();
    }
}

/// What the transport and its reader tasks share: the HTTP client, the endpoint, the caller's headers, the 2025
/// session.
struct Shared {
    client: reqwest::Client,
    /// OAuth authorization, if the client does it.
    auth: Option<super::auth::Authorizer>,
    url: String,
    headers: HeaderMap,
    frame_limit: usize,
    session: Mutex<Option<String>>,
    version: Mutex<Option<String>>,
}

/// Posts what [`Http::post_message`] queued, [`POSTING`] at a time.
async fn post_loop(http: Arc<Shared>, mut queue: mpsc::Receiver<String>) {
    let room = Arc::new(Semaphore::new(POSTING));
    while let Some(frame) = queue.recv().await {
        let Ok(permit) = room.clone().acquire_owned().await else { return };
        let request = http.session_headers(http.post()).body(frame);
        let http = http.clone();
        tokio::spawn(async move {
            match http.send(request).await {
                Ok(r) if r.status().is_success() => {}
                Ok(r) => tracing::debug!(status = %r.status(), "the server refused a notification or response"),
                Err(e) => tracing::debug!(error = %e, "could not post a notification or response"),
            }
            drop(permit);
        });
    }
}

/// How many times one request is sent again after a 401 that the client answered with a new token.
const MAX_REAUTHORIZATIONS: usize = 2;

impl Shared {
    /// Sends a request, with the bearer token when the client authorizes (refreshed first if it is about to
    /// expire); a 401 (or a 403 `insufficient_scope`) is handed to the authorizer and the request sent again with
    /// what it got.
    async fn send(&self, request: reqwest::RequestBuilder) -> Result<reqwest::Response, Error> {
        self.send_authorized(request, true).await
    }

    /// Sends a request with the token held, if any, and takes its answer as it is.
    async fn send_as_is(&self, request: reqwest::RequestBuilder) -> Result<reqwest::Response, Error> {
        self.send_authorized(request, false).await
    }

    async fn send_authorized(
        &self,
        request: reqwest::RequestBuilder,
        reauthorize: bool,
    ) -> Result<reqwest::Response, Error> {
        let failed = |e| Error::Transport(TransportError::from_reqwest("the request failed", e));
        let Some(auth) = &self.auth else { return request.send().await.map_err(failed) };
        if reauthorize {
            auth.refresh_ahead(&self.client).await;
        }
        let mut step_ups = 0;
        let mut reauthorized = 0;
        let mut nonces = 0;
        loop {
            let Some(attempt) = request.try_clone() else { return request.send().await.map_err(failed) };
            let mut attempt = attempt.build().map_err(failed)?;
            let token = auth.bearer();
            if let Some((authorization, proof)) = auth.authorization(attempt.method().as_str(), attempt.url())? {
                let headers = attempt.headers_mut();
                let value = |text: String| {
                    HeaderValue::from_str(&text).map_err(|_| {
                        Error::Auth(super::AuthError::token("the access token is not a valid header value"))
                    })
                };
                headers.insert(reqwest::header::AUTHORIZATION, value(authorization)?);
                if let Some(proof) = proof {
                    headers.insert("dpop", value(proof)?);
                }
            }
            let url = attempt.url().clone();
            let response = self.client.execute(attempt).await.map_err(failed)?;
            let status = response.status();
            let insufficient =
                status == reqwest::StatusCode::FORBIDDEN && super::auth::insufficient_scope(response.headers());
            if !reauthorize || (status != reqwest::StatusCode::UNAUTHORIZED && !insufficient) {
                return Ok(response);
            }
            if status == reqwest::StatusCode::UNAUTHORIZED
                && nonces < 2
                && auth.nonce_challenge(&url, response.headers())
            {
                nonces += 1;
                continue;
            }
            if status == reqwest::StatusCode::UNAUTHORIZED {
                reauthorized += 1;
                if reauthorized > MAX_REAUTHORIZATIONS {
                    return Err(Error::Auth(super::AuthError::token(
                        "the server refuses the token the authorization server just issued (HTTP 401 again): the \
                         two disagree about the resource, the audience or the issuer",
                    )));
                }
            }
            auth.challenged(&self.client, status, response.headers(), token.as_deref(), &mut step_ups).await?;
        }
    }

    fn post(&self) -> reqwest::RequestBuilder {
        self.client
            .post(&self.url)
            .headers(self.headers.clone())
            .header("content-type", "application/json")
            .header("accept", "application/json, text/event-stream")
    }

    fn get(&self) -> reqwest::RequestBuilder {
        self.client.get(&self.url).headers(self.headers.clone()).header("accept", "text/event-stream")
    }

    fn delete(&self) -> reqwest::RequestBuilder {
        self.client.delete(&self.url).headers(self.headers.clone())
    }

    fn session_headers(&self, mut request: reqwest::RequestBuilder) -> reqwest::RequestBuilder {
        if let Some(session) = self.session.locked().clone() {
            request = request.header("mcp-session-id", session);
        }
        if let Some(version) = self.version.locked().clone() {
            request = request.header("mcp-protocol-version", version);
        }
        request
    }
}

/// Reads one POST's answer: a JSON body, or an SSE stream resumed with `Last-Event-ID` (2025 era) until the
/// response to `id` came.
async fn read_response(
    http: &Shared,
    response: reqwest::Response,
    inner: &Weak<Inner>,
    id: Option<&RequestId>,
) -> Result<(), Error> {
    let status = response.status();
    let content_type =
        response.headers().get("content-type").and_then(|v| v.to_str().ok()).unwrap_or_default().to_owned();
    if status == reqwest::StatusCode::ACCEPTED {
        // Right for a notification or an answer; for a request still waiting, the server ended it without an
        // answer (it cancelled it, stopping): the call fails rather than wait for ever.
        if !answered(inner, id) {
            return Err(Error::Transport(TransportError::new(
                TransportErrorKind::Io,
                "the server ended the request without answering it (HTTP 202, no body): it may be stopping",
            )));
        }
        return Ok(());
    }
    if content_type.starts_with("application/json") {
        return read_json(http, response, inner, id).await;
    }
    if !content_type.starts_with("text/event-stream") {
        return Err(http_error(status, &read_prefix(response).await));
    }
    read_stream(http, response, inner, id).await
}

/// Whether the request `id` was answered (or there is none to wait for, or no client left to wait).
fn answered(inner: &Weak<Inner>, id: Option<&RequestId>) -> bool {
    match (id, inner.upgrade()) {
        (Some(id), Some(inner)) => !inner.pending.locked().contains_key(id),
        _ => true,
    }
}

/// A JSON body: the message it holds, received; one that answered nothing (an HTTP error in some other shape, such
/// as an OAuth 401) fails the call.
async fn read_json(
    http: &Shared,
    response: reqwest::Response,
    inner: &Weak<Inner>,
    id: Option<&RequestId>,
) -> Result<(), Error> {
    let status = response.status();
    let bytes = read_body(response, http.frame_limit).await?;
    let message: Value = match serde_json::from_slice(&bytes) {
        Ok(message) => message,
        Err(_) if !status.is_success() => return Err(http_error(status, &bytes)),
        Err(e) => return Err(Error::Protocol(format!("HTTP {status}: an answer that is not JSON ({e})"))),
    };
    let Some(client) = inner.upgrade() else { return Ok(()) };
    client.receive(message);
    drop(client);
    if !answered(inner, id) {
        if status.is_success() {
            let text = String::from_utf8_lossy(&bytes[..bytes.len().min(ERROR_BODY)]).into_owned();
            return Err(Error::Protocol(format!("HTTP {status}: a JSON answer to another request: {text}")));
        }
        return Err(http_error(status, &bytes));
    }
    Ok(())
}

/// An SSE stream, read until the response to `id` came; one that ends before it is resumed with `Last-Event-ID`
/// (2025 era), after the server's delay, at most [`MAX_RESUMES`] times.
async fn read_stream(
    http: &Shared,
    response: reqwest::Response,
    inner: &Weak<Inner>,
    id: Option<&RequestId>,
) -> Result<(), Error> {
    let mut reader = SseReader::new(response, http.frame_limit);
    let mut last_event: Option<String> = None;
    let mut retry = DEFAULT_RETRY;
    let mut resumes = 0;
    loop {
        while let Some(event) = reader.next().await {
            let event = event?;
            if let Some(event_id) = event.id {
                last_event = Some(event_id);
            }
            if let Some(r) = event.retry {
                retry = r;
            }
            if event.data.is_empty() {
                continue;
            }
            let Some(client) = inner.upgrade() else { return Ok(()) };
            match serde_json::from_str(&event.data) {
                Ok(message) => client.receive_on(message, id),
                Err(e) => tracing::warn!(error = %e, "an SSE event that is not JSON"),
            }
            drop(client);
            // Its response came: a stream the server keeps open (a resumed one) is not this request's any more.
            if answered(inner, id) {
                return Ok(());
            }
        }
        if answered(inner, id) {
            return Ok(());
        }
        // The stream ended before the response: resume it where it stopped, after the server's delay.
        let Some(last) = last_event.clone() else {
            return Err(Error::Transport(TransportError::new(
                TransportErrorKind::Io,
                "the request's stream ended before its response: the server (or, behind a balancer, its instance) \
                 stopped, or the connection broke; whether the request took effect is unknown",
            )));
        };
        resumes += 1;
        if resumes > MAX_RESUMES {
            return Err(Error::Transport(TransportError::new(
                TransportErrorKind::Io,
                format!("the request's stream ended {MAX_RESUMES} times without its response"),
            )));
        }
        tokio::time::sleep(retry).await;
        let request = http.session_headers(http.get()).header("last-event-id", last);
        let response = http.send(request).await?;
        if !response.status().is_success() {
            let status = response.status();
            return Err(http_error(status, &read_prefix(response).await));
        }
        reader = SseReader::new(response, http.frame_limit);
    }
}
