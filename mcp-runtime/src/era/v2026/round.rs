//! Input-required results: a handler's questions to the client as one round (`Round`), and the `requestState`
//! that carries the answers so far, sealed and bound to the request.

use std::sync::Mutex;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use base64::Engine;
use serde_json::value::RawValue;
use serde_json::{json, Map, Value};
use sha2::{Digest, Sha256};

use super::{stamp, stamp_server_info, MISSING_CAPABILITY};
use crate::base::sync::Unpoisoned;
use crate::context::{InFlight, RequestEra, RequestMeta};
use crate::server::Server;
use crate::wire::error::Error;
use crate::wire::protocol::LogLevel;

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
    fn session(&self, _link: &dyn crate::context::Link) -> Option<String> {
        None
    }
    fn result_prefix<'a>(&self, link: &'a dyn crate::context::Link) -> Option<&'a str> {
        Some(&crate::server::of(link).inner.v2026().result_prefix)
    }
    fn decorate(
        &self,
        link: &dyn crate::context::Link,
        result: Value,
        hints: Option<crate::wire::protocol::CacheHint>,
    ) -> Value {
        stamp(crate::server::of(link), result, hints)
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
pub(super) const NO_QUESTIONS_HERE: &str =
    "the 2026-07-28 protocol allows no questions: only tools/call, prompts/get and \
                                 resources/read can return input_required results";
/// Why a round cannot ask: the tool's.
pub(super) const NO_QUESTIONS_DECLARED: &str = "the tool declared that it never asks (`ToolDef::cannot_ask`)";

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
    pub(super) fn plain(log_level: Option<LogLevel>, no_questions: &'static str) -> Round {
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
    pub(super) fn for_request(
        server: &Server,
        tool: Option<&crate::handler::tool::ToolDef>,
        method: &str,
        (params, text): (&mut Map<String, Value>, Option<&RawValue>),
        meta: &RequestMeta,
        log_level: Option<LogLevel>,
    ) -> Result<Round, Error> {
        if !matches!(method, "tools/call" | "prompts/get" | "resources/read") {
            return Ok(Round::plain(log_level, NO_QUESTIONS_HERE));
        }
        let responses = params.remove("inputResponses");
        let state = params.remove("requestState");
        // A tool that cannot ask needs no copy of its arguments for a state it will never be bound to.
        if responses.is_none() && state.is_none() && tool.is_some_and(|def| !def.can_ask) {
            return Ok(Round::plain(log_level, NO_QUESTIONS_DECLARED));
        }
        let target = if method == "resources/read" { params.get("uri") } else { params.get("name") };
        let target = target.and_then(Value::as_str).unwrap_or_default().to_owned();
        let arguments = match text {
            Some(text) => serde_json::from_str(text.get()).unwrap_or_default(),
            None => params.get("arguments").cloned().unwrap_or(Value::Null),
        };
        let principal = meta.http.as_ref().and_then(|h| h.auth.as_deref()).map(crate::auth::AuthInfo::principal);
        let target = Target { method: method.to_owned(), target, arguments, principal };
        let mut answers = Map::new();
        let mut carried = None;
        match state {
            None | Some(Value::Null) => {}
            Some(Value::String(sealed)) => {
                let opened = match server.inner.v2026().sealer.try_open(&sealed) {
                    Ok(bytes) => serde_json::from_slice::<SealedState>(&bytes).ok(),
                    Err(crate::base::seal::Unopened::UnknownKey(id)) => {
                        return Err(Error::invalid_params(format!(
                            "invalid requestState: it was sealed with key {id}, which this server instance does not \
                             have: every instance needs the same MCP_REQUEST_STATE_KEY list (the first key seals, \
                             all open)"
                        )))
                    }
                    Err(crate::base::seal::Unopened::Invalid) => None,
                };
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
    let Some(round) = crate::era::round(&request.era) else {
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
        x: Some(now_millis() + server.inner.v2026().request_state_ttl.as_millis() as u64),
        a: answers,
        s: inner.carry.take().or_else(|| round.carried.clone()),
    };
    let sealed =
        server.inner.v2026().sealer.seal(&serde_json::to_vec(&state).map_err(|e| Error::internal(e.to_string()))?);
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

/// How long a `requestState` stays valid by default.
pub const DEFAULT_REQUEST_STATE_TTL: Duration = Duration::from_secs(10 * 60);
