//! The 2026-07-28 front: stateless requests. Each carries its protocol version and the client's capabilities in
//! `params._meta`; nothing is remembered between requests except what the client brings back (`requestState`).
//!
//! - The envelope is checked (missing keys: -32602; an unsupported version: -32022 with `supported` and
//!   `requested`), then the request is described as a [`RequestMeta`] and handed to the dispatcher.
//! - `server/discover` and `subscriptions/listen` are answered here; the methods the 2026 era removed
//!   (`initialize`, `ping`, `logging/setLevel`, `resources/subscribe|unsubscribe`) are unknown methods.
//! - A handler's questions to the client (`ctx.elicit`, `ctx.sample`, `ctx.list_roots`) become an `input_required`
//!   result: the questions in `inputRequests`, and the answers so far, the handler's own round state and what the
//!   state is bound to (method, target, a digest of the arguments, an expiry, the caller) sealed in
//!   `requestState`. The client's retry runs the handler again, and this time the questions have answers.
//! - Results carry `resultType` and the server's info; cacheable ones carry `ttlMs` and `cacheScope`.
//! - On HTTP the standard headers (`MCP-Protocol-Version`, `Mcp-Method`, `Mcp-Name`, `Mcp-Param-*`) must agree
//!   with the body: -32020 otherwise.

use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use base64::Engine;
use serde_json::{json, Map, Value};
use sha2::{Digest, Sha256};

use crate::base::sync::Unpoisoned;
use crate::context::{ClientInfo, Era, InFlight, RequestEra, RequestMeta};
use crate::dispatch::{self, respond, Connection, Origin, Request};
use crate::server::hub::{Change, Subscriber};
use crate::server::Server;
use crate::wire::error::{Error, ErrorCode};
use crate::wire::jsonrpc::{self, RequestId};
use crate::wire::protocol::{Implementation, LogLevel};

/// The protocol version of this era.
pub const PROTOCOL_VERSION: &str = "2026-07-28";

/// The versions a request's `_meta` may name (older versions are served through `initialize`).
pub(crate) const STATELESS_VERSIONS: &[&str] = &[PROTOCOL_VERSION];

/// `_meta` keys of the 2026 envelope.
pub(crate) const META_VERSION: &str = "io.modelcontextprotocol/protocolVersion";
pub(crate) const META_CAPABILITIES: &str = "io.modelcontextprotocol/clientCapabilities";
pub(crate) const META_CLIENT_INFO: &str = "io.modelcontextprotocol/clientInfo";
pub(crate) const META_LOG_LEVEL: &str = "io.modelcontextprotocol/logLevel";
pub(crate) use crate::wire::protocol::META_SERVER_INFO;
pub(crate) const META_SUBSCRIPTION_ID: &str = "io.modelcontextprotocol/subscriptionId";

/// -32020: an HTTP header disagrees with the body, or a required one is missing.
pub const HEADER_MISMATCH: ErrorCode = ErrorCode(-32020);
pub use crate::wire::error::MISSING_CAPABILITY;
/// -32022: the request names a protocol version the server does not serve statelessly.
pub const UNSUPPORTED_VERSION: ErrorCode = ErrorCode(-32022);

/// Whether a request belongs to the 2026 era: its `_meta` holds a key of the 2026 envelope (a protocol version,
/// client capabilities or client info: one without the version is a malformed 2026 envelope, answered -32602
/// naming what is missing), or its method exists only in this era.
pub(crate) fn is_modern(method: &str, params: Option<&Value>) -> bool {
    let meta = params.and_then(|p| p.get("_meta"));
    matches!(method, "server/discover" | "subscriptions/listen")
        || [META_VERSION, META_CAPABILITIES, META_CLIENT_INFO].iter().any(|k| meta.and_then(|m| m.get(*k)).is_some())
}

/// What the envelope of a request said.
struct Envelope {
    version: String,
    client: Arc<ClientInfo>,
    log_level: Option<LogLevel>,
    meta: Map<String, Value>,
}

/// The `_meta` of a request, or -32602 naming what is missing.
fn meta_of(params: Option<&Value>) -> Result<&Map<String, Value>, Error> {
    static EMPTY: std::sync::OnceLock<Map<String, Value>> = std::sync::OnceLock::new();
    let meta = match params {
        None | Some(Value::Null) => EMPTY.get_or_init(Map::new),
        Some(Value::Object(p)) => match p.get("_meta") {
            None => EMPTY.get_or_init(Map::new),
            Some(Value::Object(m)) => m,
            Some(_) => return Err(Error::invalid_params("`params._meta` must be an object")),
        },
        Some(_) => return Err(Error::invalid_params("`params` must be an object")),
    };
    require_envelope_keys(meta)?;
    Ok(meta)
}

/// -32602 naming the required envelope keys `_meta` lacks.
fn require_envelope_keys(meta: &Map<String, Value>) -> Result<(), Error> {
    let missing: Vec<&str> = [META_VERSION, META_CAPABILITIES].into_iter().filter(|k| !meta.contains_key(*k)).collect();
    if missing.is_empty() {
        return Ok(());
    }
    Err(Error::invalid_params(format!(
        "invalid params: a 2026-07-28 request carries its envelope in `params._meta`; missing: {}",
        missing.join(", ")
    ))
    .with_data(json!({ "missing": missing })))
}

/// -32022 for a version this server does not serve statelessly.
fn unsupported_version(requested: &str) -> Error {
    Error::new(UNSUPPORTED_VERSION, format!("unsupported protocol version {requested:?}"))
        .with_data(json!({ "supported": STATELESS_VERSIONS, "requested": requested }))
}

/// Reads the envelope out of `_meta`: its keys go into their own fields, and what is left is the request's own
/// `_meta` (a progress token, trace context, ...).
fn envelope(meta: Map<String, Value>) -> Result<Envelope, Error> {
    require_envelope_keys(&meta)?;
    // One pass over `_meta` (removing each key would search and rebalance the map four times).
    let (mut version, mut capabilities, mut info, mut level, mut own) = (None, None, None, None, Map::new());
    for (key, value) in meta {
        match key.as_str() {
            META_VERSION => version = Some(value),
            META_CAPABILITIES => capabilities = Some(value),
            META_CLIENT_INFO => info = Some(value),
            META_LOG_LEVEL => level = Some(value),
            _ => {
                own.insert(key, value);
            }
        }
    }
    let version = match version {
        Some(Value::String(v)) => v,
        _ => return Err(Error::invalid_params(format!("`_meta[\"{META_VERSION}\"]` must be a string"))),
    };
    if !STATELESS_VERSIONS.contains(&version.as_str()) {
        return Err(unsupported_version(&version));
    }
    let capabilities = match capabilities {
        Some(c @ Value::Object(_)) => c,
        _ => return Err(Error::invalid_params(format!("`_meta[\"{META_CAPABILITIES}\"]` must be an object"))),
    };
    let info = match info {
        None | Some(Value::Null) => Implementation::new("unknown", "0"),
        Some(v) => serde_json::from_value(v)
            .map_err(|e| Error::invalid_params(format!("`_meta[\"{META_CLIENT_INFO}\"]`: {e}")))?,
    };
    let log_level = match level {
        None | Some(Value::Null) => None,
        Some(Value::String(l)) => Some(l.parse::<LogLevel>().map_err(Error::invalid_params)?),
        Some(other) => return Err(Error::invalid_params(format!("invalid log level {other}"))),
    };
    Ok(Envelope { version, client: Arc::new(ClientInfo { info, capabilities }), log_level, meta: own })
}

/// Serves one 2026-era request on a connection (the stdio process's, or one made for an HTTP request).
pub(crate) fn handle(conn: &Arc<Connection>, id: RequestId, method: String, params: Option<Value>, origin: &Origin) {
    if let Err(e) = serve(conn, id.clone(), method, params, origin) {
        respond(origin, &id, Err::<(), _>(e));
    }
}

fn serve(
    conn: &Arc<Connection>,
    id: RequestId,
    method: String,
    params: Option<Value>,
    origin: &Origin,
) -> Result<(), Error> {
    let mut params = match params {
        None | Some(Value::Null) => Map::new(),
        Some(Value::Object(p)) => p,
        Some(_) => return Err(Error::invalid_params("`params` must be an object")),
    };
    let meta = match params.remove("_meta") {
        None | Some(Value::Null) => Map::new(),
        Some(Value::Object(m)) => m,
        Some(_) => return Err(Error::invalid_params("`params._meta` must be an object")),
    };
    let envelope = envelope(meta)?;
    let server = conn.server();
    let own_meta = (!envelope.meta.is_empty()).then_some(envelope.meta);
    let mut meta = RequestMeta::new(Era::V2026, envelope.version.into(), Some(envelope.client)).with_meta(own_meta);
    meta.log_level = envelope.log_level;
    meta.http = origin.http.clone();
    match method.as_str() {
        "server/discover" => {
            respond(origin, &id, Ok(&server.inner.discover));
            Ok(())
        }
        "subscriptions/listen" => listen(conn, id, &params, meta, origin),
        // The 2026 era removed these; and nothing else is served beyond what both eras share.
        "initialize" | "ping" | "logging/setLevel" | "resources/subscribe" | "resources/unsubscribe" => {
            Err(Error::method_not_found(&method))
        }
        _ => {
            let round = Round::for_request(server, &method, &mut params, &meta, envelope.log_level)?;
            let request = Request { id, method: method.clone(), params, meta, era: Arc::new(round) };
            match dispatch::dispatch(conn, request, origin) {
                Some(()) => Ok(()),
                None => Err(Error::method_not_found(&method)),
            }
        }
    }
}

/// The result of `server/discover`, computed once per server.
pub(crate) fn discover_result(
    info: &Implementation,
    capabilities: &Value,
    instructions: Option<&str>,
    cache: crate::wire::protocol::CacheHint,
) -> Value {
    let mut versions: Vec<&str> = STATELESS_VERSIONS.to_vec();
    versions.extend(crate::wire::protocol::SUPPORTED_PROTOCOL_VERSIONS);
    let mut result = json!({
        "resultType": "complete",
        "supportedVersions": versions,
        "capabilities": capabilities,
        "ttlMs": cache.ttl_ms,
        "cacheScope": cache.scope.as_str(),
        "_meta": { META_SERVER_INFO: info },
    });
    if let Some(instructions) = instructions {
        result["instructions"] = Value::String(instructions.to_owned());
    }
    result
}

/// `resultType`, the server's info and the caching hints (if any), merged into a result.
pub(crate) fn stamp(server: &Server, mut result: Value, hints: Option<crate::wire::protocol::CacheHint>) -> Value {
    if let Value::Object(map) = &mut result {
        map.insert("resultType".into(), Value::String("complete".into()));
        stamp_server_info(server, map);
        if let Some(cache) = hints {
            map.insert("ttlMs".into(), cache.ttl_ms.into());
            map.insert("cacheScope".into(), cache.scope.as_str().into());
        }
    }
    result
}

/// The fields every 2026 result starts with, as JSON members: `"resultType":"complete","_meta":{serverInfo}`.
pub(crate) fn result_prefix(info: &Value) -> String {
    format!(r#""resultType":"complete","_meta":{{"{META_SERVER_INFO}":{info}}}"#)
}

pub(crate) fn stamp_server_info(server: &Server, map: &mut Map<String, Value>) {
    crate::wire::protocol::stamp_server_info(&server.inner.info_value, map)
}

// ---------------------------------------------------------------------------------------------------------------
// Input-required results

/// What a sealed `requestState` is bound to: the request it belongs to.
#[derive(Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
struct Binding {
    /// The method.
    m: String,
    /// Its target: the tool or prompt name, or the URI.
    t: String,
    /// SHA-256 of the arguments, base64url.
    d: String,
    /// The authenticated caller, when there is one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    p: Option<String>,
}

/// The contents of a sealed `requestState`.
#[derive(serde::Serialize, serde::Deserialize)]
struct SealedState {
    #[serde(flatten)]
    binding: Binding,
    /// Expiry, seconds since the Unix epoch (states sealed before `x` was written).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    e: Option<u64>,
    /// Expiry, milliseconds since the Unix epoch (so a sub-second TTL is kept as given).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    x: Option<u64>,
    /// The answers given in earlier rounds, by question key.
    a: Map<String, Value>,
    /// The handler's own state, carried across rounds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    s: Option<Value>,
}

/// One run of a 2026 handler: the answers it can use, and the questions it asked that have none yet.
pub(crate) struct Round {
    pub log_level: Option<LogLevel>,
    /// What a sealed state of this request is bound to; where questions are not allowed (lists, completion,
    /// custom methods, a tool declared unable to ask), why not.
    target: Result<Target, &'static str>,
    answers: Map<String, Value>,
    carried: Option<Value>,
    inner: Mutex<RoundInner>,
    /// Wakes the dispatcher when the handler asked something (a stored permit if it is not waiting yet).
    interrupt: tokio::sync::Notify,
}

impl RequestEra for Round {
    fn log_enabled(&self, level: LogLevel) -> bool {
        self.log_level.is_some_and(|min| level >= min)
    }
    fn interrupt(&self) -> Option<&tokio::sync::Notify> {
        Some(&self.interrupt)
    }
    fn was_interrupted(&self) -> bool {
        Round::was_interrupted(self)
    }
    fn session(&self, _peer: &dyn crate::context::Peer) -> Option<String> {
        None
    }
    fn result_prefix<'a>(&self, peer: &'a dyn crate::context::Peer) -> Option<&'a str> {
        Some(&crate::server::of(peer).inner.result_prefix)
    }
    fn decorate(
        &self,
        peer: &dyn crate::context::Peer,
        result: Value,
        hints: Option<crate::wire::protocol::CacheHint>,
    ) -> Value {
        stamp(crate::server::of(peer), result, hints)
    }
    fn task_plan(
        &self,
        _tasks_enabled: bool,
        tool: &'static str,
        options: crate::wire::task::TaskOptions,
        _params: &Map<String, Value>,
        meta: &RequestMeta,
    ) -> Result<Option<crate::context::TaskPlan>, Error> {
        super::task_plan_2026(tool, options, meta)
    }
    fn interrupted_result(&self, request: &InFlight) -> Result<Value, Error> {
        interrupted_result(request)
    }
    fn as_any(&self) -> &(dyn std::any::Any + Send + Sync) {
        self
    }
}

#[derive(Default)]
struct RoundInner {
    next: u32,
    /// Questions that had an answer: only those answers are carried to the next round.
    used: Vec<String>,
    asked: Map<String, Value>,
    failure: Option<Error>,
    carry: Option<Value>,
}

/// Why a round cannot ask: the method's.
const NO_QUESTIONS_HERE: &str = "the 2026-07-28 protocol allows no questions: only tools/call, prompts/get and \
                                 resources/read can return input_required results";
/// Why a round cannot ask: the tool's.
const NO_QUESTIONS_DECLARED: &str = "the tool declared that it never asks (`ToolDef::cannot_ask`)";

fn now_millis() -> u64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map(|d| d.as_millis() as u64).unwrap_or_default()
}

/// The request a round belongs to; its digest is computed only when a state is opened or sealed.
struct Target {
    method: String,
    target: String,
    arguments: Value,
    principal: Option<String>,
}

impl Target {
    fn binding(&self) -> Binding {
        Binding {
            m: self.method.clone(),
            t: self.target.clone(),
            d: digest(&self.arguments),
            p: self.principal.clone(),
        }
    }
}

fn digest(value: &Value) -> String {
    let bytes = serde_json::to_vec(value).unwrap_or_default();
    base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(Sha256::digest(&bytes))
}

impl Round {
    /// A round that cannot ask anything, and why.
    fn plain(log_level: Option<LogLevel>, no_questions: &'static str) -> Round {
        Round {
            log_level,
            target: Err(no_questions),
            answers: Map::new(),
            carried: None,
            inner: Mutex::new(RoundInner::default()),
            interrupt: tokio::sync::Notify::new(),
        }
    }

    /// Reads `inputResponses` and `requestState` from a request that may ask questions (`tools/call`,
    /// `prompts/get`, `resources/read`): a state that does not open, belongs to another request or has expired is
    /// -32602.
    fn for_request(
        server: &Server,
        method: &str,
        params: &mut Map<String, Value>,
        meta: &RequestMeta,
        log_level: Option<LogLevel>,
    ) -> Result<Round, Error> {
        if !matches!(method, "tools/call" | "prompts/get" | "resources/read") {
            return Ok(Round::plain(log_level, NO_QUESTIONS_HERE));
        }
        let responses = params.remove("inputResponses");
        let state = params.remove("requestState");
        if responses.is_none() && state.is_none() && method == "tools/call" {
            let name = params.get("name").and_then(Value::as_str).unwrap_or_default();
            // A tool that cannot ask needs no copy of its arguments for a state it will never be bound to.
            if server.registry().tool(name).is_some_and(|def| !def.can_ask) {
                return Ok(Round::plain(log_level, NO_QUESTIONS_DECLARED));
            }
        }
        let target = if method == "resources/read" { params.get("uri") } else { params.get("name") };
        let target = target.and_then(Value::as_str).unwrap_or_default().to_owned();
        let arguments = params.get("arguments").cloned().unwrap_or(Value::Null);
        let principal = meta.http.as_ref().and_then(|h| h.auth.as_ref()).map(crate::auth::AuthInfo::principal);
        let target = Target { method: method.to_owned(), target, arguments, principal };
        let mut answers = Map::new();
        let mut carried = None;
        match state {
            None | Some(Value::Null) => {}
            Some(Value::String(sealed)) => {
                let opened =
                    server.inner.sealer.open(&sealed).and_then(|b| serde_json::from_slice::<SealedState>(&b).ok());
                let Some(opened) = opened else {
                    return Err(Error::invalid_params("invalid requestState: it failed its integrity check"));
                };
                if opened.binding != target.binding() {
                    return Err(Error::invalid_params(
                        "invalid requestState: it belongs to another request (method, target, arguments or caller differ)",
                    ));
                }
                let expires_ms = opened.x.or(opened.e.map(|e| e.saturating_mul(1000))).unwrap_or(0);
                if expires_ms < now_millis() {
                    return Err(Error::invalid_params("invalid requestState: it has expired; call again without it"));
                }
                answers = opened.a;
                carried = opened.s;
            }
            Some(_) => return Err(Error::invalid_params("`requestState` must be a string")),
        }
        match responses {
            None => {}
            Some(Value::Object(given)) => answers.extend(given),
            Some(_) => return Err(Error::invalid_params("`inputResponses` must be an object of answers by key")),
        }
        Ok(Round {
            log_level,
            target: Ok(target),
            answers,
            carried,
            inner: Mutex::new(RoundInner::default()),
            interrupt: tokio::sync::Notify::new(),
        })
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, RoundInner> {
        self.inner.locked()
    }

    /// Whether `interrupted` has been signalled: a question was asked, or the round failed.
    pub(crate) fn was_interrupted(&self) -> bool {
        let inner = self.lock();
        !inner.asked.is_empty() || inner.failure.is_some()
    }

    /// The key of the next question: the one given, or `input-N` in the order the handler asks.
    pub(crate) fn key(&self, given: Option<&str>) -> String {
        let mut inner = self.lock();
        inner.next += 1;
        match given {
            Some(k) => k.to_owned(),
            None => format!("input-{}", inner.next),
        }
    }

    /// The answer to question `key`, or (no answer yet) the question is recorded and the handler interrupted.
    pub(crate) fn ask(&self, key: &str, method: &str, params: Value) -> Option<Value> {
        if let Err(why) = &self.target {
            self.fail(Error::internal(format!("a handler asked the client (`{method}`) where {why}")));
            return None;
        }
        if let Some(answer) = self.answers.get(key) {
            self.lock().used.push(key.to_owned());
            return Some(answer.clone());
        }
        let mut request = json!({ "method": method });
        if !params.is_null() {
            request["params"] = params;
        }
        self.lock().asked.insert(key.to_owned(), request);
        self.interrupt.notify_one();
        None
    }

    /// Ends the round with an error instead of questions (a capability the request did not declare, an answer
    /// that does not fit).
    pub(crate) fn fail(&self, error: Error) {
        self.lock().failure.get_or_insert(error);
        self.interrupt.notify_one();
    }

    /// The handler's own state, as the previous round left it.
    pub(crate) fn carried(&self) -> Option<&Value> {
        self.carried.as_ref()
    }

    /// Sets the handler's own state for the next round.
    pub(crate) fn carry(&self, value: Value) {
        self.lock().carry = Some(value);
    }
}

/// The response of an interrupted 2026 handler: its error, or an `input_required` result.
pub(crate) fn interrupted_result(request: &InFlight) -> Result<Value, Error> {
    let Some(round) = super::round(&request.era) else {
        return Err(Error::internal("interrupted outside the 2026 era"));
    };
    let mut inner = round.lock();
    if let Some(failure) = inner.failure.take() {
        return Err(failure);
    }
    let Ok(binding) = round.target.as_ref().map(Target::binding) else {
        return Err(Error::internal("a question where none is allowed"));
    };
    let server = request.server();
    // Only answers the handler used are carried: not the client's extra keys, not what is asked again.
    let answers: Map<String, Value> = round
        .answers
        .iter()
        .filter(|(k, _)| inner.used.contains(k) && !inner.asked.contains_key(*k))
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect();
    let state = SealedState {
        binding,
        e: None,
        x: Some(now_millis() + server.inner.request_state_ttl.as_millis() as u64),
        a: answers,
        s: inner.carry.take().or_else(|| round.carried.clone()),
    };
    let sealed = server.inner.sealer.seal(&serde_json::to_vec(&state).map_err(|e| Error::internal(e.to_string()))?);
    let mut result = Map::new();
    result.insert("resultType".into(), "input_required".into());
    result.insert("inputRequests".into(), Value::Object(std::mem::take(&mut inner.asked)));
    result.insert("requestState".into(), Value::String(sealed));
    stamp_server_info(server, &mut result);
    Ok(Value::Object(result))
}

/// -32021 for a capability the request did not declare, with the capability as a `ClientCapabilities` object.
pub(crate) fn missing_capability(path: &[&str]) -> Error {
    // `elicitation: {}` is how a client declares form mode.
    let path = if path == ["elicitation", "form"] { &path[..1] } else { path };
    let mut required = json!({});
    for key in path.iter().rev() {
        required = json!({ *key: required });
    }
    Error::new(
        MISSING_CAPABILITY,
        format!("this request needs the client capability `{}`, which it did not declare", path.join(".")),
    )
    .with_data(json!({ "requiredCapabilities": required }))
}

// ---------------------------------------------------------------------------------------------------------------
// subscriptions/listen

/// What a listen stream asked for, as far as the server honours it.
#[derive(Clone, Debug, Default)]
pub(crate) struct Filter {
    tools: bool,
    prompts: bool,
    resources: bool,
    uris: Vec<String>,
    /// Tasks whose changes this stream follows (the Tasks extension).
    task_ids: Vec<String>,
}

impl Filter {
    fn to_value(&self) -> Value {
        let mut out = Map::new();
        if self.tools {
            out.insert("toolsListChanged".into(), true.into());
        }
        if self.prompts {
            out.insert("promptsListChanged".into(), true.into());
        }
        if self.resources {
            out.insert("resourcesListChanged".into(), true.into());
        }
        if !self.uris.is_empty() {
            out.insert("resourceSubscriptions".into(), self.uris.clone().into());
        }
        if !self.task_ids.is_empty() {
            out.insert("taskIds".into(), self.task_ids.clone().into());
        }
        Value::Object(out)
    }
}

/// An open `subscriptions/listen` stream.
pub(crate) struct Listener {
    request: Arc<InFlight>,
    filter: Filter,
}

impl Listener {
    fn tagged(&self, method: &str, mut params: Map<String, Value>) -> String {
        params.insert("_meta".into(), json!({ META_SUBSCRIPTION_ID: self.request.id }));
        jsonrpc::encode_notification(method, &Value::Object(params))
    }

    /// Sends a list change if this stream asked for it.
    pub(crate) fn list_changed(&self, method: &str) {
        let wanted = match method {
            "notifications/tools/list_changed" => self.filter.tools,
            "notifications/prompts/list_changed" => self.filter.prompts,
            "notifications/resources/list_changed" => self.filter.resources,
            _ => false,
        };
        if wanted {
            self.request.send_if_open(self.tagged(method, Map::new()));
        }
    }

    /// Sends a resource update if this stream watches the URI (or a resource it is part of).
    pub(crate) fn resource_updated(&self, uri: &str) {
        let watched = self.filter.uris.iter().any(|w| {
            uri == w || uri.strip_prefix(w.as_str()).is_some_and(|rest| w.ends_with('/') || rest.starts_with('/'))
        });
        if watched {
            let mut params = Map::new();
            params.insert("uri".into(), uri.into());
            self.request.send_if_open(self.tagged("notifications/resources/updated", params));
        }
    }

    /// Sends a task's new state if this stream follows the task (and, for a task with an owner, is its owner).
    pub(crate) fn task_changed(&self, record: &crate::task::TaskRecord) {
        if !self.filter.task_ids.contains(&record.id) {
            return;
        }
        let task = &crate::task::methods::detailed_2026(record);
        let subject = self.request.meta.http.as_ref().and_then(|h| h.auth.as_ref()).map(|a| a.subject.as_str());
        if record.subject.is_some() && record.subject.as_deref() != subject {
            return;
        }
        let Value::Object(params) = task.clone() else { return };
        self.request.send_if_open(self.tagged("notifications/tasks", params));
    }

    /// Whether the stream belongs to this connection.
    pub(crate) fn is_on(&self, conn: &dyn crate::context::Peer) -> bool {
        std::ptr::addr_eq(Arc::as_ptr(&self.request.peer), conn)
    }

    /// Ends the stream from the server's side: the listen request gets its result.
    pub(crate) fn finish(&self) {
        let server = self.request.server();
        let mut result = Map::new();
        result.insert("resultType".into(), "complete".into());
        stamp_server_info(server, &mut result);
        if let Some(Value::Object(meta)) = result.get_mut("_meta") {
            meta.insert(META_SUBSCRIPTION_ID.into(), serde_json::to_value(&self.request.id).unwrap_or_default());
        }
        self.request.peer.forget(&self.request);
        self.request.finish(jsonrpc::encode_result(&self.request.id, &result));
        self.request.stop_quietly();
    }
}

fn listen(
    conn: &Arc<Connection>,
    id: RequestId,
    params: &Map<String, Value>,
    meta: RequestMeta,
    origin: &Origin,
) -> Result<(), Error> {
    let Some(Value::Object(asked)) = params.get("notifications") else {
        return Err(Error::invalid_params("`subscriptions/listen` needs a `notifications` filter object"));
    };
    let server = conn.server();
    let capabilities = &server.inner.capabilities;
    let flag = |key: &str| asked.get(key).and_then(Value::as_bool).unwrap_or(false);
    let uris: Vec<String> = match asked.get("resourceSubscriptions") {
        None | Some(Value::Null) => Vec::new(),
        Some(Value::Array(uris)) => uris.iter().filter_map(|u| u.as_str().map(str::to_owned)).collect(),
        Some(_) => return Err(Error::invalid_params("`resourceSubscriptions` must be an array of URIs")),
    };
    let task_ids: Vec<String> = match asked.get("taskIds") {
        None | Some(Value::Null) => Vec::new(),
        Some(Value::Array(ids)) => ids.iter().filter_map(|u| u.as_str().map(str::to_owned)).collect(),
        Some(_) => return Err(Error::invalid_params("`taskIds` must be an array of task ids")),
    };
    if asked.contains_key("taskIds") && !meta.client_supports(&["extensions", crate::task::EXTENSION]) {
        return Err(crate::task::methods::extension_required());
    }
    let task_ids = if server.inner.tasks_enabled { task_ids } else { Vec::new() };
    let filter = Filter {
        task_ids,
        tools: flag("toolsListChanged") && capabilities.get("tools").is_some(),
        prompts: flag("promptsListChanged") && capabilities.get("prompts").is_some(),
        resources: flag("resourcesListChanged") && capabilities.get("resources").is_some(),
        uris: if capabilities.get("resources").is_some() { uris } else { Vec::new() },
    };
    let log_level = meta.log_level;
    let request = Arc::new(InFlight::new(
        id,
        meta,
        conn.clone(),
        origin.sink.clone(),
        Arc::new(Round::plain(log_level, NO_QUESTIONS_HERE)),
    ));
    conn.register(&request)?;
    let listener = Arc::new(Listener { request: request.clone(), filter });
    // The acknowledgement comes first: the listener is registered only once it has been sent.
    let mut ack = Map::new();
    ack.insert("notifications".into(), listener.filter.to_value());
    request.send_if_open(listener.tagged("notifications/subscriptions/acknowledged", ack));
    let subscriber: std::sync::Weak<dyn Subscriber> = Arc::downgrade(&listener) as _;
    server.subscribe(subscriber);
    crate::base::cancel::cleanup_tasks().spawn(async move {
        listener.request.token.cancelled().await;
        drop(listener);
    });
    Ok(())
}

/// A listen stream hears what its filter asked for; it ends with its result when its connection ends or the server
/// stops.
impl Subscriber for Listener {
    fn hear(&self, change: Change<'_>) {
        match change {
            Change::ListChanged(method) => self.list_changed(method),
            Change::ResourceUpdated(uri) => self.resource_updated(uri),
            Change::Task(record) => self.task_changed(record),
        }
    }

    fn end(&self, conn: Option<&dyn crate::context::Peer>) {
        if conn.is_none_or(|c| self.is_on(c)) {
            self.finish();
        }
    }
}

// ---------------------------------------------------------------------------------------------------------------
// HTTP headers

/// Checks a 2026 request's HTTP headers against its body, in the order the protocol's reference implementations
/// use: the version header present (-32020), the envelope complete (-32602), the version header equal to the
/// body's (-32020), the version served (-32022), then `Mcp-Method`, `Mcp-Name` and `Mcp-Param-*` (-32020).
pub(crate) fn check_http_headers(
    headers: &http::HeaderMap,
    method: &str,
    params: Option<&Value>,
    server: &Server,
) -> Result<(), Error> {
    let header = |name: &http::HeaderName| -> Result<Option<&str>, Error> {
        let mut values = headers.get_all(name).iter();
        let first = values.next();
        // One value only: with two, a gateway could route on one and the server check the other.
        if values.next().is_some() {
            return Err(mismatch(format!("the {name} header appears more than once")));
        }
        match first {
            None => Ok(None),
            Some(v) => v
                .to_str()
                .map(|s| Some(s.trim_matches([' ', '\t'])))
                .map_err(|_| mismatch(format!("the {name} header holds characters that are not visible ASCII"))),
        }
    };
    let Some(version) = header(&MCP_PROTOCOL_VERSION)? else {
        return Err(mismatch("the MCP-Protocol-Version header is missing"));
    };
    let meta = meta_of(params)?;
    let body_version = meta.get(META_VERSION).and_then(Value::as_str).unwrap_or_default();
    if version != body_version {
        return Err(mismatch(format!(
            "the MCP-Protocol-Version header ({version:?}) does not match _meta.{META_VERSION} ({body_version:?})"
        )));
    }
    if !STATELESS_VERSIONS.contains(&version) {
        return Err(unsupported_version(version));
    }
    match header(&MCP_METHOD)? {
        None => return Err(mismatch("the Mcp-Method header is missing")),
        Some(m) if m != method => {
            return Err(mismatch(format!("the Mcp-Method header ({m:?}) does not match the method ({method:?})")))
        }
        Some(_) => {}
    }
    let name_key = match method {
        "tools/call" | "prompts/get" => Some("name"),
        "resources/read" => Some("uri"),
        // The Tasks extension routes its methods by task id.
        "tasks/get" | "tasks/update" | "tasks/cancel" if server.inner.tasks_enabled => Some("taskId"),
        _ => None,
    };
    if let Some(key) = name_key {
        let body = params.and_then(|p| p.get(key)).and_then(Value::as_str).unwrap_or_default();
        let Some(raw) = header(&MCP_NAME)? else {
            return Err(mismatch("the Mcp-Name header is missing"));
        };
        let given = decode_header_value(raw).map_err(|e| mismatch(format!("the Mcp-Name header: {e}")))?;
        if given != body {
            return Err(mismatch(format!("the Mcp-Name header ({given:?}) does not match the body ({body:?})")));
        }
    }
    if method == "tools/call" {
        check_param_headers(headers, params, server)?;
    }
    Ok(())
}

/// The headers a 2026 request is routed by, parsed once (a lookup by `&str` parses the name every time).
static MCP_PROTOCOL_VERSION: http::HeaderName = http::HeaderName::from_static("mcp-protocol-version");
static MCP_METHOD: http::HeaderName = http::HeaderName::from_static("mcp-method");
static MCP_NAME: http::HeaderName = http::HeaderName::from_static("mcp-name");

fn mismatch(message: impl Into<String>) -> Error {
    Error::new(HEADER_MISMATCH, message)
}

/// Whether a header's text is the same number as an argument: integers compared exactly (2^53 and 2^53 + 1 differ,
/// though they are one `f64`), `3` and `3.0` the same, other numbers as `f64`.
fn same_number(given: &str, n: &serde_json::Number) -> bool {
    if let (Ok(g), Some(v)) = (given.parse::<i64>(), n.as_i64()) {
        return g == v;
    }
    if let (Ok(g), Some(v)) = (given.parse::<u64>(), n.as_u64()) {
        return g == v;
    }
    // An integer on one side only: equal only if the other is that integer written with a fraction of zero.
    let integer = |text: &str| text.parse::<i128>().ok();
    match (integer(given), n.as_i64().map(i128::from).or_else(|| n.as_u64().map(i128::from))) {
        (Some(_), Some(_)) => false,
        (Some(g), None) => n.as_f64().is_some_and(|v| v.fract() == 0.0 && v.abs() < 9.0e15 && v as i128 == g),
        (None, Some(v)) => given.parse::<f64>().is_ok_and(|g| g.fract() == 0.0 && g.abs() < 9.0e15 && g as i128 == v),
        (None, None) => given.parse::<f64>().ok().zip(n.as_f64()).is_some_and(|(g, v)| g == v),
    }
}

/// A header value, with the `=?base64?…?=` form decoded (strict RFC 4648 with padding).
pub(crate) fn decode_header_value(raw: &str) -> Result<String, String> {
    let Some(encoded) = raw.strip_prefix("=?base64?").and_then(|r| r.strip_suffix("?=")) else {
        return Ok(raw.to_owned());
    };
    let bytes = base64::engine::general_purpose::STANDARD
        .decode(encoded)
        .map_err(|e| format!("invalid Base64 in {raw:?}: {e}"))?;
    String::from_utf8(bytes).map_err(|_| format!("{raw:?} decodes to bytes that are not UTF-8"))
}

/// `Mcp-Param-*` headers of a tool call against the arguments they mirror.
fn check_param_headers(headers: &http::HeaderMap, params: Option<&Value>, server: &Server) -> Result<(), Error> {
    let Some(name) = params.and_then(|p| p.get("name")).and_then(Value::as_str) else { return Ok(()) };
    let registry = server.registry();
    let Some(mirrored) = registry.tool_headers(name) else { return Ok(()) };
    let arguments = params.and_then(|p| p.get("arguments"));
    for param in mirrored {
        let value = param.path.iter().try_fold(arguments, |v, key| Some(v?.get(key))).flatten();
        let header_name = format!("mcp-param-{}", param.header);
        if headers.get_all(header_name.as_str()).iter().nth(1).is_some() {
            return Err(mismatch(format!("the Mcp-Param-{} header appears more than once", param.header)));
        }
        let header = headers.get(header_name.as_str());
        // A header this tool recognises must hold visible ASCII, whether or not its argument is there.
        if header.is_some_and(|h| h.to_str().is_err()) {
            return Err(mismatch(format!("the Mcp-Param-{} header holds invalid characters", param.header)));
        }
        let value = match value {
            None | Some(Value::Null) => continue, // nothing to mirror; a header, if any, is not expected
            Some(v) => v,
        };
        let Some(header) = header else {
            return Err(mismatch(format!(
                "the Mcp-Param-{} header is missing; it must mirror the argument `{}`",
                param.header,
                param.path.join(".")
            )));
        };
        let raw = header
            .to_str()
            .map_err(|_| mismatch(format!("the Mcp-Param-{} header holds invalid characters", param.header)))?
            .trim_matches([' ', '\t']);
        let given =
            decode_header_value(raw).map_err(|e| mismatch(format!("the Mcp-Param-{} header: {e}", param.header)))?;
        let agrees = match value {
            Value::String(s) => given == *s,
            Value::Bool(b) => given == if *b { "true" } else { "false" },
            Value::Number(n) => same_number(&given, n),
            _ => false,
        };
        if !agrees {
            return Err(mismatch(format!(
                "the Mcp-Param-{} header ({given:?}) does not match the argument `{}` ({value})",
                param.header,
                param.path.join(".")
            )));
        }
    }
    Ok(())
}

/// The HTTP status of a 2026 error response.
pub(crate) fn http_status(code: ErrorCode) -> u16 {
    match code.0 {
        -32601 => 404,
        -32700 | -32600 | -32602 | -32020 | -32021 | -32022 => 400,
        _ => 200,
    }
}

/// How long a `requestState` stays valid by default.
pub const DEFAULT_REQUEST_STATE_TTL: Duration = Duration::from_secs(10 * 60);

#[cfg(test)]
mod tests {
    use super::*;
    use crate::dispatch::ResultKind;

    #[test]
    fn header_numbers_are_compared_exactly_when_they_are_integers() {
        let n = |v: serde_json::Value| match v {
            serde_json::Value::Number(n) => n,
            _ => unreachable!(),
        };
        assert!(same_number("9007199254740992", &n(serde_json::json!(9007199254740992u64))));
        assert!(!same_number("9007199254740992", &n(serde_json::json!(9007199254740993u64))));
        assert!(!same_number("9223372036854775806", &n(serde_json::json!(i64::MAX))));
        assert!(same_number("-5", &n(serde_json::json!(-5))));
        assert!(same_number("3", &n(serde_json::json!(3.0))));
        assert!(same_number("3.0", &n(serde_json::json!(3))));
        assert!(same_number("2.5", &n(serde_json::json!(2.5))));
        assert!(!same_number("-1", &n(serde_json::json!(u64::MAX))));
    }

    #[test]
    fn complete_results_are_stamped_in_one_pass_and_stay_valid_json() {
        let server = Server::builder().name("enc").version("1").build().unwrap();
        let id = RequestId::Number(7);
        let frame = |result: &Value, kind| -> Value {
            let hints = (kind != ResultKind::Plain).then_some(server.inner.cache);
            let prefix = &server.inner.result_prefix;
            let text = jsonrpc::encode_result_stamped(&id, result, prefix, hints, |v| stamp(&server, v, hints));
            serde_json::from_str(&text).unwrap_or_else(|e| panic!("{e}: {text}"))
        };
        let r = frame(&json!({"content": [{"type": "text", "text": "hi"}]}), ResultKind::Plain);
        assert_eq!(r["id"], 7);
        assert_eq!(r["result"]["resultType"], "complete");
        assert_eq!(r["result"]["content"][0]["text"], "hi");
        assert_eq!(r["result"]["_meta"][META_SERVER_INFO]["name"], "enc");
        // An empty result: only the stamped fields.
        let r = frame(&json!({}), ResultKind::Plain);
        assert_eq!(r["result"].as_object().unwrap().len(), 2, "{r}");
        // Caching hints on cacheable results.
        let r = frame(&json!({"contents": []}), ResultKind::Read);
        assert!(r["result"]["ttlMs"].is_number() && r["result"]["cacheScope"].is_string(), "{r}");
        // A result with a `_meta` of its own is merged, not duplicated.
        let r = frame(&json!({"content": [], "_meta": {"mine": 1}}), ResultKind::Plain);
        assert_eq!(r["result"]["_meta"]["mine"], 1);
        assert_eq!(r["result"]["_meta"][META_SERVER_INFO]["name"], "enc");
    }

    #[test]
    fn header_values_decode_the_base64_form_strictly_and_take_lookalikes_literally() {
        assert_eq!(decode_header_value("=?base64?SGVsbG8=?=").as_deref(), Ok("Hello"));
        assert_eq!(decode_header_value("=?base64?SGVsbG8sIOS4lueVjA==?=").as_deref(), Ok("Hello, 世界"));
        assert!(decode_header_value("=?base64?SGVsbG8?=").is_err(), "missing padding");
        assert!(decode_header_value("=?base64?SGVs!!!bG8=?=").is_err(), "not the alphabet");
        assert!(decode_header_value("=?base64?/w==?=").is_err(), "not UTF-8");
        for literal in ["SGVsbG8=", "=?base64?SGVsbG8=", "=?BASE64?SGVsbG8=?=", "plain"] {
            assert_eq!(decode_header_value(literal).as_deref(), Ok(literal));
        }
    }

    #[test]
    fn missing_capability_names_it_as_a_capabilities_object() {
        let e = missing_capability(&["sampling", "tools"]);
        assert_eq!(e.code, MISSING_CAPABILITY);
        assert_eq!(e.data, Some(json!({ "requiredCapabilities": { "sampling": { "tools": {} } } })));
    }

    #[test]
    fn the_envelope_needs_version_and_capabilities_and_a_served_version() {
        let meta = |m: Value| match m {
            Value::Object(m) => m,
            _ => unreachable!(),
        };
        let missing = envelope(meta(json!({ META_VERSION: "2026-07-28" }))).err().unwrap();
        assert_eq!(missing.code, ErrorCode::INVALID_PARAMS);
        assert!(missing.message.contains(META_CAPABILITIES), "{}", missing.message);
        let old = envelope(meta(json!({ META_VERSION: "2025-11-25", META_CAPABILITIES: {} }))).err().unwrap();
        assert_eq!(old.code, UNSUPPORTED_VERSION);
        assert_eq!(old.data.unwrap()["requested"], "2025-11-25");
        let bad_level =
            envelope(meta(json!({ META_VERSION: "2026-07-28", META_CAPABILITIES: {}, META_LOG_LEVEL: "loud" })));
        assert_eq!(bad_level.err().unwrap().code, ErrorCode::INVALID_PARAMS);
        let ok = envelope(meta(json!({ META_VERSION: "2026-07-28", META_CAPABILITIES: {"roots": {}} }))).ok();
        assert!(ok.is_some_and(|e| e.log_level.is_none() && e.client.capabilities["roots"] == json!({})));
    }
}
