//! The 2025-11-25 front: `initialize` starts a session, which holds what the client said about itself, its log
//! level and its resource subscriptions. Requests are served from the `initialize` response on (before it, only
//! `ping` and `logging/setLevel`); methods both eras share go to the dispatcher with metadata from the session.

use std::collections::HashSet;
use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex, OnceLock};

use serde::Deserialize;
use serde_json::{json, Map, Value};

use crate::base::sync::Unpoisoned;
use crate::context::{ClientInfo, Era, RequestMeta};
use crate::dispatch::{self, respond, Connection, Origin, Request, Sink};
use crate::era::SessionLog;
use crate::handler::tool::ToolDef;
use crate::server::hub::{Change, Subscriber};
use crate::server::Server;
use crate::store::task::{TaskRecord, TaskStatus};
use crate::task::front::TaskFront;
use crate::task::TaskPlan;
use crate::wire::envelope::RawEnvelope;
use crate::wire::error::{Error, ErrorCode};
use crate::wire::jsonrpc::Frame;
use crate::wire::jsonrpc::{self, Incoming, RequestId};
use crate::wire::protocol::{InitializeParams, LogLevel, SUPPORTED_PROTOCOL_VERSIONS, VERSION_2025};
use crate::wire::task::TaskSupport;
use serde_json::value::RawValue;

/// What the transport does with a session whose record changed.
type OnChanged = Box<dyn Fn(&Session) + Send + Sync>;

/// One 2025 session: a stdio process, or an HTTP session id. Its connection serves 2026-era requests too.
pub(crate) struct Session {
    conn: Arc<Connection>,
    /// Set once `initialize` has been answered.
    client: OnceLock<(Arc<str>, Arc<ClientInfo>)>,
    log_level: Arc<SessionLog>,
    /// URIs this session subscribed to with `resources/subscribe`.
    subscriptions: Mutex<HashSet<String>>,
    /// What the transport does when the session ends on another instance (DELETE there): closes its streams.
    on_ended: OnceLock<Box<dyn Fn() + Send + Sync>>,
    /// What the transport does when the session's record changes (its log level, its subscriptions): stores it.
    on_changed: OnceLock<OnChanged>,
    /// Set once the session ended on another instance: the transport forgets its copy.
    ended: std::sync::atomic::AtomicBool,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct CancelledParams {
    request_id: Option<RequestId>,
    #[serde(default)]
    reason: Option<String>,
}

impl Session {
    pub(crate) fn new(server: Server, out: Sink) -> Arc<Session> {
        let session = Arc::new(Session {
            conn: Connection::new(server, out),
            client: OnceLock::new(),
            log_level: Arc::default(),
            subscriptions: Mutex::new(HashSet::new()),
            on_ended: OnceLock::new(),
            on_changed: OnceLock::new(),
            ended: false.into(),
        });
        let subscriber: std::sync::Weak<dyn Subscriber> = Arc::downgrade(&session) as _;
        session.conn.server().subscribe(subscriber);
        session
    }

    /// A session another instance opened, rebuilt from its record: initialized, with the client's info, log level
    /// and subscriptions as they were (never by replaying `initialize`).
    #[cfg(feature = "http")]
    pub(crate) fn restore(
        server: Server,
        out: Sink,
        id: &str,
        record: crate::store::session::SessionRecord,
    ) -> Arc<Session> {
        let session = Session::new(server, out);
        session.conn.set_session_id(id);
        let client = ClientInfo { info: record.client_info, capabilities: record.capabilities };
        let _ = session.client.set((record.protocol_version.into(), Arc::new(client)));
        if let Some(level) = record.log_level {
            session.log_level.level.store(level as u8, Ordering::Relaxed);
        }
        session.subscriptions.locked().extend(record.subscriptions);
        session
    }

    /// The session's record, for the session store: `None` before `initialize` was answered.
    #[cfg(feature = "http")]
    pub(crate) fn record(&self, owner: Option<String>) -> Option<crate::store::session::SessionRecord> {
        let (version, client) = self.client.get()?;
        let level = self.log_level.level.load(Ordering::Relaxed);
        Some(crate::store::session::SessionRecord {
            protocol_version: version.to_string(),
            client_info: client.info.clone(),
            capabilities: client.capabilities.clone(),
            log_level: LogLevel::ALL.get(usize::from(level)).copied(),
            subscriptions: self.subscriptions.locked().iter().cloned().collect(),
            owner,
        })
    }

    /// What to do when the session ends on another instance.
    #[cfg(feature = "http")]
    pub(crate) fn on_ended(&self, f: impl Fn() + Send + Sync + 'static) {
        let _ = self.on_ended.set(Box::new(f));
    }

    /// What to do when the session's record changes.
    #[cfg(feature = "http")]
    pub(crate) fn on_changed(&self, f: impl Fn(&Session) + Send + Sync + 'static) {
        let _ = self.on_changed.set(Box::new(f));
    }

    fn changed(&self) {
        if let Some(f) = self.on_changed.get() {
            f(self);
        }
    }

    /// The session's key when other instances may serve it too (the server has a change hub): where a message
    /// this instance cannot place is sent on.
    fn shared_key(&self) -> Option<String> {
        self.conn.server().inner.scale_out().hub.as_ref()?;
        self.conn.session_key()
    }

    fn is_session(&self, key: &str) -> bool {
        self.conn.session_key().is_some_and(|k| k == key)
    }

    /// Whether the session ended on another instance.
    #[cfg(feature = "http")]
    pub(crate) fn has_ended(&self) -> bool {
        self.ended.load(Ordering::Relaxed)
    }

    /// Marks a session as initialized without a handshake (stateless 2025 HTTP: every request is its own session).
    #[cfg(feature = "http")]
    pub(crate) fn preinitialize(&self, version: &str) {
        let version = SUPPORTED_PROTOCOL_VERSIONS.iter().find(|v| **v == version).copied().unwrap_or(VERSION_2025);
        let client =
            ClientInfo { info: crate::wire::protocol::Implementation::new("unknown", "0"), capabilities: json!({}) };
        let _ = self.client.set((version.into(), Arc::new(client)));
        self.conn.set_stateless();
    }

    pub(crate) fn connection(&self) -> &Arc<Connection> {
        &self.conn
    }

    /// Whether `initialize` was answered: only then does the session get list-changed notifications.
    pub(crate) fn is_initialized(&self) -> bool {
        self.client.get().is_some()
    }

    pub(crate) fn is_subscribed(&self, uri: &str) -> bool {
        self.subscriptions.locked().contains(uri)
    }

    /// Sends a notification that belongs to no request.
    pub(crate) fn notify(&self, method: &str, params: &Value) {
        self.conn.send(Frame::notification(method, params));
    }

    /// Cancels everything in flight.
    pub(crate) fn cancel_all(&self, reason: &str) {
        self.conn.cancel_all(reason)
    }

    /// Cancels one request.
    #[cfg(feature = "http")]
    pub(crate) fn cancel(&self, id: &RequestId, reason: Option<&str>) {
        self.conn.cancel(id, reason);
    }

    /// Answers a message that could not be parsed.
    pub(crate) fn reject(&self, id: Option<&RequestId>, error: &Error) {
        self.conn.reject(id, error)
    }

    /// Handles one incoming message of the 2025 era, replying on the session's own sink. Called in arrival order;
    /// never blocks: long work is spawned.
    pub(crate) fn handle(self: &Arc<Self>, message: Incoming) {
        let origin = Origin { sink: self.conn.sink().clone(), http: None };
        self.handle_routed(message, &origin)
    }

    /// Handles one incoming message of the 2025 era ([`crate::era::of`] decided) whose replies (and, for a request,
    /// everything the request sends) go to `origin`. Notifications and responses of either era come here: a
    /// stdio connection's cancels and answers are its session's.
    pub(crate) fn handle_routed(self: &Arc<Self>, message: Incoming, origin: &Origin) {
        // This era reads `_meta` as it was sent (a 2026 notification on stdio comes here with its envelope).
        let restore = |params: &mut Option<Value>, envelope: Option<RawEnvelope>| {
            if let Some(envelope) = envelope {
                jsonrpc::restore_params(params, &envelope);
            }
        };
        match message {
            Incoming::Request { id, method, mut params, envelope, arguments } => {
                restore(&mut params, envelope);
                self.handle_request(id, method, (params, arguments), origin)
            }
            Incoming::Notification { method, mut params, envelope } => {
                restore(&mut params, envelope);
                self.handle_notification(&method, params)
            }
            Incoming::Response { id, outcome } => {
                // Not ours: another instance serving this session may have asked.
                if let (Some(outcome), Some(session)) = (self.conn.answer_outgoing(&id, outcome), self.shared_key()) {
                    self.conn.server().publish(Change::Answered { session, request: id, outcome });
                }
            }
        }
    }

    /// A request: its `params`, and a `tools/call`'s `arguments` kept as text.
    fn handle_request(
        self: &Arc<Self>,
        id: RequestId,
        method: String,
        (params, arguments): (Option<Value>, Option<Box<RawValue>>),
        origin: &Origin,
    ) {
        // What this front answers itself goes through the server's layers (if any) as every request does.
        let front =
            |method: &'static str, params: Option<Value>, answer: Box<dyn FnOnce(Option<Value>) -> _ + Send>| {
                // What the layers see of the request: only read when there are layers.
                let seen = if self.conn.server().inner.handlers().layers.is_some() { params.clone() } else { None };
                let request = || {
                    let mut arguments = match seen {
                        Some(Value::Object(p)) => p,
                        _ => Map::new(),
                    };
                    let meta = self.request_meta(take_meta(&mut arguments));
                    let era: crate::context::EraState = self.log_level.clone();
                    (arguments, meta, era)
                };
                dispatch::answer_front(&self.conn, origin, (id.clone(), method), request, move || answer(params));
            };
        match method.as_str() {
            "initialize" => {
                let session = self.clone();
                front("initialize", params, Box::new(move |params| session.initialize(params)));
            }
            "ping" => front("ping", params, Box::new(|_| Ok(json!({})))),
            _ if self.client.get().is_none() && method != "logging/setLevel" => respond(
                origin,
                &id,
                Err::<(), _>(Error::new(
                    ErrorCode::INVALID_REQUEST,
                    format!("`{method}` before `initialize`: the client must initialize the session first"),
                )),
            ),
            "logging/setLevel" => {
                let session = self.clone();
                front("logging/setLevel", params, Box::new(move |params| session.set_level(params)));
            }
            "resources/subscribe" | "resources/unsubscribe" => {
                let subscribe = method == "resources/subscribe";
                let session = self.clone();
                let name = if subscribe { "resources/subscribe" } else { "resources/unsubscribe" };
                front(
                    name,
                    params,
                    Box::new(move |params| {
                        uri_param(params).map(|uri| {
                            let mut subscriptions = session.subscriptions.locked();
                            if subscribe {
                                subscriptions.insert(uri);
                            } else {
                                subscriptions.remove(&uri);
                            }
                            drop(subscriptions);
                            session.changed();
                            json!({})
                        })
                    }),
                );
            }
            _ => {
                let mut params = match jsonrpc::params_object(params) {
                    Ok(p) => p,
                    Err(e) => return respond(origin, &id, Err::<(), _>(e)),
                };
                let meta = self.request_meta(take_meta(&mut params));
                let era = self.log_level.clone();
                let request = Request { id: id.clone(), method, params, arguments, meta, era, tool: None };
                let method_name = request.method.clone();
                if dispatch::dispatch(&self.conn, request, origin).is_none() {
                    respond(origin, &id, Err::<(), _>(Error::method_not_found(&method_name)));
                }
            }
        }
    }

    fn handle_notification(&self, method: &str, params: Option<Value>) {
        match method {
            "notifications/cancelled" => {
                let Some(p) = params.and_then(|p| CancelledParams::deserialize(p).ok()) else {
                    tracing::debug!("ignoring a malformed notifications/cancelled");
                    return;
                };
                let Some(id) = p.request_id else { return };
                if !self.conn.cancel(&id, p.reason.as_deref()) {
                    // Not in flight here: another instance serving this session may run it.
                    if let Some(session) = self.shared_key() {
                        self.conn.server().publish(Change::Cancelled { session, request: id, reason: p.reason });
                    }
                }
            }
            // Requests are served from the `initialize` response on; the notification changes nothing here.
            "notifications/initialized" => {}
            _ => tracing::debug!(method, "ignoring notification"),
        }
    }

    fn initialize(&self, params: Option<Value>) -> Result<Value, Error> {
        let params: InitializeParams = serde_json::from_value(params.unwrap_or(Value::Null))
            .map_err(|e| Error::invalid_params(format!("invalid `initialize` params: {e}")))?;
        // A 2025 handshake is answered with a 2025 version, whatever newer one the client asked for.
        let version = SUPPORTED_PROTOCOL_VERSIONS
            .iter()
            .find(|v| **v == params.protocol_version)
            .copied()
            .unwrap_or(VERSION_2025);
        let client = ClientInfo { info: params.client_info, capabilities: params.capabilities };
        if self.client.set((version.into(), Arc::new(client))).is_err() {
            return Err(Error::new(ErrorCode::INVALID_REQUEST, "the session is already initialized"));
        }
        let inner = &self.conn.server().inner;
        let mut result = json!({
            "protocolVersion": version,
            "capabilities": inner.served().capabilities,
            "serverInfo": inner.served().info,
        });
        // Without a session (stateless HTTP) a task cannot be told to be the caller's, so none would be listed: the
        // server does not declare `tasks/list` there (an authenticated caller still gets its own tasks).
        if self.conn.session_key().is_none() {
            if let Some(tasks) = result["capabilities"].get_mut("tasks").and_then(Value::as_object_mut) {
                tasks.remove("list");
            }
        }
        if let Some(instructions) = &inner.served().instructions {
            result["instructions"] = Value::String(instructions.clone());
        }
        Ok(result)
    }

    fn set_level(&self, params: Option<Value>) -> Result<Value, Error> {
        let params = jsonrpc::params_object(params)?;
        let level = params
            .get("level")
            .and_then(Value::as_str)
            .ok_or_else(|| Error::invalid_params("`logging/setLevel` needs a `level`"))?;
        let level: LogLevel = level.parse().map_err(Error::invalid_params)?;
        self.log_level.level.store(level as u8, Ordering::Relaxed);
        self.changed();
        Ok(json!({}))
    }

    fn request_meta(&self, meta: Option<Map<String, Value>>) -> RequestMeta {
        let (version, client) = match self.client.get() {
            Some((v, c)) => (v.clone(), Some(c.clone())),
            None => (VERSION_2025.into(), None),
        };
        RequestMeta::new(Era::V2025, version, client).with_meta(meta)
    }
}

impl Session {
    /// Whether the client declared an extension in its `initialize` (`capabilities.extensions.<id>`).
    fn client_declared(&self, extension: &str) -> bool {
        self.client.get().is_some_and(|(_, client)| {
            client.capabilities.get("extensions").and_then(|listed| listed.get(extension)).is_some()
        })
    }
}

/// Takes `_meta` out of a request's params.
pub(crate) fn take_meta(params: &mut Map<String, Value>) -> Option<Map<String, Value>> {
    match params.remove("_meta") {
        Some(Value::Object(m)) => Some(m),
        _ => None,
    }
}

/// The `uri` of a subscribe or unsubscribe request.
fn uri_param(params: Option<Value>) -> Result<String, Error> {
    match jsonrpc::params_object(params)?.remove("uri") {
        Some(Value::String(uri)) => Ok(uri),
        _ => Err(Error::invalid_params("a string `uri` is required")),
    }
}

/// A 2025 session hears list changes once initialized, and updates of the resources it subscribed to.
impl Subscriber for Session {
    fn hear(&self, change: &Change) {
        match change {
            Change::ListChanged { list, .. } if self.is_initialized() => self.notify(list.notification(), &json!({})),
            Change::ResourceUpdated { uri } if self.is_subscribed(uri) => {
                self.notify("notifications/resources/updated", &json!({ "uri": uri }))
            }
            Change::Notification { extension, method, params, .. }
                if self.is_initialized() && self.client_declared(extension) =>
            {
                self.notify(method, &Value::Object(params.clone()))
            }
            Change::SessionChanged { session, record } if self.is_session(session) => {
                let level = record.log_level.map_or(crate::era::LOG_LEVEL_UNSET, |l| l as u8);
                self.log_level.level.store(level, Ordering::Relaxed);
                *self.subscriptions.locked() = record.subscriptions.iter().cloned().collect();
            }
            Change::Cancelled { session, request, reason } if self.is_session(session) => {
                self.conn.cancel(request, reason.as_deref());
            }
            Change::Answered { session, request, outcome } if self.is_session(session) => {
                let _ = self.conn.answer_outgoing(request, outcome.clone());
            }
            Change::SessionEnded { session } if self.is_session(session) => {
                self.ended.store(true, Ordering::Relaxed);
                self.cancel_all("the session was ended on another instance");
                if let Some(f) = self.on_ended.get() {
                    f();
                }
            }
            _ => {}
        }
    }

    fn stop(&self, reason: &str) {
        self.cancel_all(reason)
    }
}

// ---------------------------------------------------------------------------------------------------------------
// Tasks

/// A task as the 2025-11-25 protocol has it: it belongs to its session, its messages and questions are streamed on
/// the session (or a waiting `tasks/result`), and a tool's error fails it.
pub(crate) struct Tasks2025;

impl TaskFront for Tasks2025 {
    /// When the call asks (`task`) and the tool allows it.
    fn plan(
        &self,
        tool: &ToolDef,
        params: &Map<String, Value>,
        _meta: &RequestMeta,
    ) -> Result<Option<TaskPlan>, Error> {
        let (options, tool) = (tool.task, &tool.name);
        let plan =
            |requested_ttl| Some(TaskPlan { tool: tool.clone(), options: options.deferred(false), requested_ttl });
        match (params.get("task"), options.support) {
            (Some(Value::Object(_)), TaskSupport::Forbidden) => Err(Error::new(
                ErrorCode::METHOD_NOT_FOUND,
                format!("tool {tool:?} does not run as a task (its execution.taskSupport is \"forbidden\"): call it without `task`"),
            )),
            (Some(Value::Object(task)), _) => Ok(plan(task.get("ttl").and_then(Value::as_u64))),
            (Some(_), _) => Err(Error::invalid_params("`task` must be an object (`{\"ttl\": milliseconds}`)")),
            (None, TaskSupport::Required) => Err(Error::new(
                ErrorCode::METHOD_NOT_FOUND,
                format!("tool {tool:?} runs only as a task (its execution.taskSupport is \"required\"): call it with `task`"),
            )),
            (None, _) => Ok(None),
        }
    }
    fn owner_session(&self, link: &dyn crate::context::Link, subject: Option<&str>) -> Option<String> {
        link.session_key().or_else(|| subject.map(|s| format!("principal:{s}")))
    }
    fn sees(&self, recorded: Option<&str>, session: Option<&str>) -> bool {
        recorded.is_none() || recorded == session
    }
    fn session_sink(&self, link: &dyn crate::context::Link) -> Option<Sink> {
        Some(link.sink().clone())
    }
    fn tool_error_fails(&self) -> bool {
        true
    }
    fn asks_as_requests(&self) -> bool {
        true
    }
    fn announce(&self, _server: &Server, session: Option<&Sink>, record: &TaskRecord) {
        if let Some(session) = session {
            session.send_droppable(Frame::notification("notifications/tasks/status", &task_2025(record)));
        }
    }
    fn create_result(&self, _server: &Server, id: &RequestId, record: &TaskRecord) -> Frame {
        Frame::result(id, &json!({ "task": task_2025(record) }))
    }
    fn gate(&self, method: &str, _ctx: &crate::context::Context) -> Result<(), Error> {
        match method {
            // Questions to the client are requests of the task's own in this era: nothing to update.
            "tasks/update" => Err(Error::method_not_found(method)),
            _ => Ok(()),
        }
    }
    fn task(&self, record: &TaskRecord) -> Value {
        task_2025(record)
    }
    fn cancel_finished(&self, record: &TaskRecord) -> Result<Value, Error> {
        Err(crate::task::front::terminal(record))
    }
    fn cancel_done(&self, after: &TaskRecord, cancelled: bool) -> Result<Value, Error> {
        if cancelled || after.status == TaskStatus::Cancelled {
            Ok(task_2025(after))
        } else {
            Err(crate::task::front::terminal(after))
        }
    }
}

/// A task as the 2025-11-25 protocol writes it (`Task`).
pub(crate) fn task_2025(record: &TaskRecord) -> Value {
    let mut task = crate::task::methods::common(record);
    task.insert("ttl".into(), record.ttl_ms.map_or(Value::Null, Value::from));
    task.insert("pollInterval".into(), record.poll_interval_ms.into());
    Value::Object(task)
}
