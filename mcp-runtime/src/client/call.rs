//! One call: a future that sends its request, waits for the response (answering `input_required` rounds in the
//! 2026 era), and cancels the request on the wire if it is dropped first or its timeout runs out.

use std::future::{Future, IntoFuture};
use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;

use serde_json::{json, Map, Value};
use tokio::sync::Notify;

use super::{Client, Error, Inner, Link, ProgressSink};
use crate::base::sync::Unpoisoned;
use crate::context::Era;
use crate::wire::jsonrpc::{self, RequestId};

/// A progress notification of a call.
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub struct Progress {
    /// How far along (it only grows).
    pub progress: f64,
    /// Out of how much, if known.
    pub total: Option<f64>,
    /// What is happening.
    pub message: Option<String>,
}

impl Progress {
    pub(crate) fn from_params(params: &Value) -> Progress {
        Progress {
            progress: params["progress"].as_f64().unwrap_or_default(),
            total: params["total"].as_f64(),
            message: params["message"].as_str().map(str::to_owned),
        }
    }
}

/// A request to the server, to configure and then `.await`. Dropping it (or the future it becomes) cancels the
/// request: the server gets `notifications/cancelled` (or, in 2026-era HTTP, its stream closes).
///
/// ```no_run
/// use std::time::Duration;
///
/// use mcp::client::{Client, Error};
/// use serde_json::json;
///
/// # #[allow(dead_code)]
/// # async fn run(client: Client) -> Result<(), Error> {
/// let rebuilt = client
///     .call_tool("rebuild_index", json!({ "titles": ["Dune", "Emma"] }))
///     .on_progress(|p| println!("{} of {:?}: {}", p.progress, p.total, p.message.unwrap_or_default()))
///     .idle_timeout(Duration::from_secs(5)) // each progress notification restarts it
///     .await?;
/// println!("{}", rebuilt.text().unwrap_or_default());
///
/// // Cancelling is dropping: here the first of the call and Ctrl-C wins, and the loser is dropped.
/// tokio::select! {
///     done = client.call_tool("export", json!({})).timeout(Duration::from_secs(60)) => println!("{:?}", done?.text()),
///     _ = tokio::signal::ctrl_c() => println!("cancelled"),
/// }
///
/// // Any method, with keys of your own in `_meta`.
/// let stock = client.request("bookshop/stock", json!({})).meta(json!({ "example.com/trace": "t-1" })).await?;
/// println!("{stock}");
/// # Ok(()) }
/// # fn main() {}
/// ```
#[must_use = "a call does nothing until it is awaited"]
pub struct Call<T = Value> {
    client: Client,
    method: String,
    params: Value,
    progress: Option<Arc<dyn Fn(Progress) + Send + Sync>>,
    timeout: Option<Duration>,
    reset_on_progress: bool,
    /// The era to speak, before the handshake has decided it.
    era: Option<Era>,
    /// An id taken beforehand (a listen request, whose id tags its notifications).
    id: Option<RequestId>,
    /// What answers the server's questions during this call, instead of the client's handlers.
    questions: Option<Questions>,
    /// What hears the notifications of this call's own HTTP stream.
    hearer: Option<Hearer>,
    map: Box<dyn FnOnce(Value) -> T + Send>,
}

/// What hears the notifications that come on one call's own HTTP stream: [`Call::on_notification`].
pub(crate) type Hearer = Arc<dyn Fn(&str, &Value) + Send + Sync>;

/// What answers a server's questions (its method and params) during one call: [`Call::on_question`].
pub(crate) type Questions =
    Arc<dyn Fn(String, Value) -> Pin<Box<dyn Future<Output = Result<Value, crate::Error>> + Send>> + Send + Sync>;

impl Call<Value> {
    pub(crate) fn new(client: Client, method: &str, params: Value) -> Call<Value> {
        Call {
            client,
            method: method.to_owned(),
            params,
            progress: None,
            timeout: None,
            reset_on_progress: false,
            era: None,
            id: None,
            questions: None,
            hearer: None,
            map: Box::new(|v| v),
        }
    }

    /// Sends the (first) request under this id.
    pub(crate) fn with_id(mut self, id: RequestId) -> Call<Value> {
        self.id = Some(id);
        self
    }

    /// A handshake request: one request in a given era, no rounds.
    pub(crate) fn raw(client: Client, method: &str, params: Value, era: Option<Era>) -> Call<Value> {
        let mut call = Call::new(client, method, params);
        call.era = era;
        call
    }

    pub(crate) fn map<U>(self, f: impl FnOnce(Value) -> U + Send + 'static) -> Call<U> {
        Call {
            client: self.client,
            method: self.method,
            params: self.params,
            progress: self.progress,
            timeout: self.timeout,
            reset_on_progress: self.reset_on_progress,
            era: self.era,
            id: self.id,
            questions: self.questions,
            hearer: self.hearer,
            map: Box::new(f),
        }
    }

    /// Sends the request once and waits for its response (no `input_required` rounds).
    pub(crate) async fn send_once(self) -> Result<Value, Error> {
        let era = self.era.unwrap_or_else(|| self.client.inner.era());
        let sent = Sent::new(&self, era);
        sent.run(self.params.clone(), self.id.clone()).await
    }
}

impl<T> Call<T> {
    /// Calls `f` with each progress notification of this call (it asks for progress with a token).
    pub fn on_progress(mut self, f: impl Fn(Progress) + Send + Sync + 'static) -> Self {
        self.progress = Some(Arc::new(f));
        self
    }

    /// Gives up (and cancels the request) if no response comes within `timeout`.
    pub fn timeout(mut self, timeout: Duration) -> Self {
        self.timeout = Some(timeout);
        self
    }

    /// Like [`Call::timeout`], but each progress notification starts the timeout again: a call that keeps
    /// reporting progress may run as long as it needs.
    pub fn idle_timeout(mut self, timeout: Duration) -> Self {
        self.timeout = Some(timeout);
        self.reset_on_progress = true;
        self
    }

    /// Answers the questions the server asks during this call (`elicitation/create`, `sampling/createMessage`,
    /// `roots/list`: their method and params) with `f` instead of the client's handlers — what a proxy does to
    /// hand each question to the caller it is relaying for. In the 2026 era, the questions of this call's
    /// `input_required` results; in the 2025 era, the requests the server sends on this call's HTTP stream, and,
    /// over stdio or in process (where nothing says which call asks), a request that comes while this is the only
    /// call in flight that answers its own (with several, the request is refused, saying why). The client's
    /// capabilities are still what its builder declared ([`ClientBuilder::on_elicitation`](super::ClientBuilder)...).
    pub fn on_question<F, Fut>(mut self, f: F) -> Self
    where
        F: Fn(String, Value) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<Value, crate::Error>> + Send + 'static,
    {
        self.questions = Some(Arc::new(move |method, params| Box::pin(f(method, params))));
        self
    }

    /// Hears the notifications (other than progress, see [`Call::on_progress`]) that come on this call's own HTTP
    /// stream — its log messages, say — instead of the client's notification handler. Over stdio and in process
    /// nothing says which call a notification is of: they go to the client's handler.
    pub fn on_notification(mut self, f: impl Fn(&str, &Value) + Send + Sync + 'static) -> Self {
        self.hearer = Some(Arc::new(f));
        self
    }

    /// Adds keys to the request's `params._meta`.
    pub fn meta(mut self, meta: Value) -> Self {
        if let (Value::Object(params), Value::Object(meta)) = (&mut self.params, meta) {
            let target = params.entry("_meta").or_insert_with(|| Value::Object(Map::new()));
            if let Value::Object(target) = target {
                target.extend(meta);
            }
        }
        self
    }
}

impl<T: Send + 'static> IntoFuture for Call<T> {
    type Output = Result<T, Error>;
    type IntoFuture = Pin<Box<dyn Future<Output = Result<T, Error>> + Send>>;

    fn into_future(self) -> Self::IntoFuture {
        Box::pin(async move {
            let era = self.era.unwrap_or_else(|| self.client.inner.era());
            let v2026 = era == Era::V2026;
            let sent = Sent::new(&self, era);
            let mut params = self.params.clone();
            let mut rounds = 0;
            let mut id = self.id.clone();
            loop {
                let result = sent.run(params.clone(), id.take()).await?;
                if v2026 && result["resultType"] == "task" && self.method == "tools/call" {
                    let result = super::task::follow(&self.client, result).await?;
                    return Ok((self.map)(result));
                }
                if !(v2026 && result["resultType"] == "input_required") {
                    return Ok((self.map)(result));
                }
                rounds += 1;
                if rounds > self.client.inner.max_rounds {
                    return Err(Error::TooManyRounds(self.client.inner.max_rounds));
                }
                params = next_round(&self.client.inner, self.questions.as_ref(), params, &result).await?;
            }
        })
    }
}

/// The retry of an `input_required` result: the questions answered by the registered handlers, the state echoed.
async fn next_round(
    inner: &Inner,
    answerer: Option<&Questions>,
    params: Value,
    result: &Value,
) -> Result<Value, Error> {
    let Value::Object(mut params) = params else {
        return Err(Error::Usage("params must be an object".into()));
    };
    let mut answers = Map::new();
    if let Some(questions) = result["inputRequests"].as_object() {
        for (key, question) in questions {
            let method = question["method"].as_str().unwrap_or_default();
            let asked = question.get("params").cloned().unwrap_or(Value::Null);
            let answer = match answerer {
                Some(answer) => answer(method.to_owned(), asked).await,
                None => inner.answer(method, asked).await,
            };
            match answer {
                Ok(answer) => {
                    answers.insert(key.clone(), answer);
                }
                Err(e) => {
                    return Err(Error::Protocol(format!(
                        "the server asked `{method}` (inputRequests.{key}), which this client cannot answer: {}",
                        e.message
                    )))
                }
            }
        }
    }
    params.insert("inputResponses".into(), Value::Object(answers));
    match result.get("requestState") {
        Some(state) => params.insert("requestState".into(), state.clone()),
        None => params.remove("requestState"),
    };
    Ok(Value::Object(params))
}

/// What every round of a call shares.
struct Sent {
    inner: Arc<Inner>,
    method: String,
    progress: Option<Arc<dyn Fn(Progress) + Send + Sync>>,
    timeout: Option<Duration>,
    reset_on_progress: bool,
    era: Era,
    questions: Option<Questions>,
    hearer: Option<Hearer>,
}

impl Sent {
    fn new<T>(call: &Call<T>, era: Era) -> Sent {
        Sent {
            inner: call.client.inner.clone(),
            method: call.method.clone(),
            progress: call.progress.clone(),
            timeout: call.timeout,
            reset_on_progress: call.reset_on_progress,
            era,
            questions: call.questions.clone(),
            hearer: call.hearer.clone(),
        }
    }

    /// One request and its response; in the 2026 era a -32022 (unsupported version) naming 2026-07-28 among the
    /// supported ones is tried once more (a server may refuse a first request to see the client retry).
    async fn run(&self, params: Value, id: Option<RequestId>) -> Result<Value, Error> {
        let span = self.span(&params);
        let metered = self.inner.metrics.as_ref().map(|(metrics, _)| {
            let target = params.get("name").and_then(Value::as_str).map(str::to_owned);
            (metrics, target, std::time::Instant::now())
        });
        let outcome = tracing::Instrument::instrument(self.run_retried(params, id), span.clone()).await;
        if !span.is_disabled() {
            record_outcome(&span, &outcome);
        }
        if let Some((metrics, target, sent)) = metered {
            let (error_type, status_code) = match error_type(&outcome) {
                Some((error, code)) => (Some(error), code),
                None => (None, None),
            };
            let labels = crate::metrics::ClientOperation {
                method: self.method.clone(),
                target,
                error_type,
                status_code,
                peer: self.inner.peer(),
            };
            metrics.client_call(&labels, sent.elapsed());
        }
        outcome
    }

    /// The tracing span of a call, by the OpenTelemetry conventions for MCP: a `CLIENT` span named
    /// `{mcp.method.name} {target}` (target the tool or prompt), with the method, the request's id, the tool or
    /// prompt, the protocol version, the transport and (over HTTP) the server's address and port. The trace context
    /// the client puts in `_meta` is this span's, so the server's span is its child. Its target is
    /// `mcp::client::request`, at info.
    fn span(&self, params: &Value) -> tracing::Span {
        use tracing::field::Empty;
        let span = tracing::info_span!(
            target: "mcp::client::request",
            "mcp.client.request",
            otel.name = Empty,
            otel.kind = "client",
            otel.status_code = Empty,
            mcp.method.name = self.method.as_str(),
            jsonrpc.request.id = Empty,
            gen_ai.tool.name = Empty,
            gen_ai.operation.name = Empty,
            gen_ai.prompt.name = Empty,
            mcp.protocol.version = Empty,
            network.transport = Empty,
            server.address = Empty,
            server.port = Empty,
            error.type = Empty,
            rpc.response.status_code = Empty,
        );
        if span.is_disabled() {
            return span;
        }
        let target = params.get("name").and_then(Value::as_str);
        match (self.method.as_str(), target) {
            ("tools/call", Some(tool)) => {
                span.record("otel.name", format!("tools/call {tool}"));
                span.record("gen_ai.tool.name", tool);
                span.record("gen_ai.operation.name", "execute_tool");
            }
            ("prompts/get", Some(prompt)) => {
                span.record("otel.name", format!("prompts/get {prompt}"));
                span.record("gen_ai.prompt.name", prompt);
            }
            (method, _) => {
                span.record("otel.name", method);
            }
        }
        if let Some(session) = self.inner.session.get() {
            span.record("mcp.protocol.version", session.version.as_str());
        }
        match &self.inner.link {
            Link::Stdio(_) => {
                span.record("network.transport", "pipe");
            }
            Link::Http(http) => {
                span.record("network.transport", "tcp");
                if let Ok(url) = reqwest::Url::parse(http.url()) {
                    if let Some(host) = url.host_str() {
                        span.record("server.address", host);
                    }
                    if let Some(port) = url.port_or_known_default() {
                        span.record("server.port", port);
                    }
                }
            }
        }
        span
    }

    async fn run_retried(&self, params: Value, id: Option<RequestId>) -> Result<Value, Error> {
        match self.run_once(params.clone(), id).await {
            Err(Error::Rpc(e)) if self.era == Era::V2026 && e.code.0 == -32022 => {
                let supported = e.data.as_ref().and_then(|d| d["supported"].as_array());
                if supported.is_some_and(|s| s.iter().any(|v| v == super::VERSION_2026)) {
                    return self.run_once(params, None).await;
                }
                Err(Error::Rpc(e))
            }
            other => other,
        }
    }

    async fn run_once(&self, params: Value, id: Option<RequestId>) -> Result<Value, Error> {
        let inner = &self.inner;
        let id = id.unwrap_or_else(|| inner.next_id());
        tracing::Span::current().record("jsonrpc.request.id", tracing::field::display(&id));
        let mut params = match params {
            Value::Object(p) => p,
            Value::Null => Map::new(),
            other => return Err(Error::Usage(format!("params must be an object: {other}"))),
        };
        let mut meta = match params.remove("_meta") {
            Some(Value::Object(m)) => m,
            _ => Map::new(),
        };
        if self.era == Era::V2026 || self.method == "server/discover" {
            for (k, v) in inner.envelope() {
                meta.entry(k).or_insert(v);
            }
        }
        // The caller's trace context, so the server's span joins the caller's trace.
        #[cfg(feature = "opentelemetry")]
        crate::otel::inject_current(&mut meta);
        let reset = Arc::new(Notify::new());
        let token = (self.progress.is_some() || self.reset_on_progress).then(|| format!("progress-{id}"));
        if let Some(token) = &token {
            meta.insert("progressToken".into(), token.clone().into());
            let sink = ProgressSink { callback: self.progress.clone(), reset: reset.clone() };
            inner.progress.locked().insert(token.clone(), sink);
        }
        if !meta.is_empty() {
            params.insert("_meta".into(), Value::Object(meta));
        }
        let params = Value::Object(params);
        // The deadline counts from here: waiting for room in the write queue is part of the call.
        let mut deadline = self.timeout.map(|t| tokio::time::Instant::now() + t);
        let mut rx = inner.wait_for(id.clone())?;
        // The server's requests during this call (2025 era) and its stream's notifications go to the call's own
        // handlers, while it waits; most calls have none, and register nothing.
        let questions = self.questions.clone().filter(|_| self.era == Era::V2025);
        let _own = (questions.is_some() || self.hearer.is_some())
            .then(|| OwnHandlers::new(inner, &id, questions, self.hearer.clone()));
        let mut guard =
            Pending { inner: inner.clone(), id: id.clone(), token, era: self.era, armed: true, sent: false };
        let frame = jsonrpc::encode_request(&id, &self.method, &params);
        match &inner.link {
            Link::Stdio(stdio) => match deadline {
                None => stdio.send(frame).await,
                Some(at) => {
                    tokio::select! {
                        () = stdio.send(frame) => {}
                        // The connection ended while the frame waited: its error is in `rx`.
                        outcome = &mut rx => return outcome.unwrap_or(Err(Error::Closed)),
                        // Never written: nothing to cancel (the guard only forgets the call).
                        () = tokio::time::sleep_until(at) => return Err(Error::Timeout(self.timeout.unwrap_or_default())),
                    }
                }
            },
            Link::Http(http) => http.request(inner, &id, &self.method, &params, frame, self.era),
        }
        guard.sent = true;
        let outcome = match (self.timeout, deadline.as_mut()) {
            (Some(timeout), Some(deadline)) => loop {
                tokio::select! {
                    outcome = &mut rx => break outcome,
                    () = tokio::time::sleep_until(*deadline) => return Err(Error::Timeout(timeout)), // the guard cancels
                    () = reset.notified(), if self.reset_on_progress => *deadline = tokio::time::Instant::now() + timeout,
                }
            },
            _ => rx.await,
        };
        guard.armed = false;
        match outcome {
            Ok(result) => result,
            Err(_) => Err(Error::Closed),
        }
    }
}

/// What a call in flight handles itself, registered under its request id while it waits: its questions (2025 era:
/// the server's requests come apart from the call) and its own stream's notifications.
struct OwnHandlers {
    inner: Arc<Inner>,
    id: RequestId,
}

impl OwnHandlers {
    fn new(inner: &Arc<Inner>, id: &RequestId, questions: Option<Questions>, hearer: Option<Hearer>) -> OwnHandlers {
        if let Some(questions) = questions {
            inner.askers.locked().insert(id.clone(), questions);
        }
        if let Some(hearer) = hearer {
            inner.hearers.locked().insert(id.clone(), hearer);
        }
        OwnHandlers { inner: inner.clone(), id: id.clone() }
    }
}

impl Drop for OwnHandlers {
    fn drop(&mut self) {
        self.inner.askers.locked().remove(&self.id);
        self.inner.hearers.locked().remove(&self.id);
    }
}

/// A request on the wire. Dropped before its response, it cancels the request.
struct Pending {
    inner: Arc<Inner>,
    id: RequestId,
    token: Option<String>,
    era: Era,
    armed: bool,
    /// Whether the request went out (a request that never left the queue has nothing to cancel).
    sent: bool,
}

impl Drop for Pending {
    fn drop(&mut self) {
        if let Some(token) = &self.token {
            self.inner.progress.locked().remove(token);
        }
        let waiting = self.inner.pending.locked().remove(&self.id).is_some();
        if !self.armed {
            if let Link::Http(http) = &self.inner.link {
                http.finished(&self.id);
            }
            return;
        }
        if !waiting || !self.sent {
            return;
        }
        let cancel = jsonrpc::encode_notification(
            "notifications/cancelled",
            &json!({ "requestId": self.id, "reason": "the client stopped waiting" }),
        );
        match &self.inner.link {
            Link::Stdio(stdio) => stdio.try_send(cancel),
            // 2026: closing the request's stream is the cancel; 2025: the stream stays, the notification cancels.
            Link::Http(http) => http.cancel(&self.id, (self.era == Era::V2025).then_some(cancel)),
        }
    }
}

/// Records a call's failure on its span: `error.type` (the JSON-RPC code, `tool_error` for a tool's result with
/// `isError`, else the kind of failure: `timeout`, `closed`, `transport`, `_OTHER`), `rpc.response.status_code`, and an
/// error status. On the client every JSON-RPC error is one, as the conventions say.
fn record_outcome(span: &tracing::Span, outcome: &Result<Value, Error>) {
    let Some((error_type, code)) = error_type(outcome) else { return };
    if let Some(code) = code {
        span.record("rpc.response.status_code", tracing::field::display(code));
    }
    span.record("error.type", error_type.as_str());
    span.record("otel.status_code", "error");
}

/// A failed call's `error.type`, and its JSON-RPC code if it has one; `None` for a success.
fn error_type(outcome: &Result<Value, Error>) -> Option<(String, Option<i32>)> {
    Some(match outcome {
        Ok(result) if result.get("isError") == Some(&Value::Bool(true)) => ("tool_error".to_owned(), None),
        Ok(_) => return None,
        Err(Error::Rpc(e)) => (e.code.0.to_string(), Some(e.code.0)),
        Err(Error::Timeout(_)) => ("timeout".to_owned(), None),
        Err(Error::Closed) => ("closed".to_owned(), None),
        Err(Error::Transport(_)) => ("transport".to_owned(), None),
        Err(_) => ("_OTHER".to_owned(), None),
    })
}
