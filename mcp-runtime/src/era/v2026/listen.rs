//! `subscriptions/listen`: a stream of the notifications a client asked for (`Listener`, a hub subscriber).

use std::sync::Arc;

use serde_json::{json, Map, Value};

use super::round::{Round, NO_QUESTIONS_HERE};
use super::{stamp_server_info, META_SUBSCRIPTION_ID};
use crate::context::{InFlight, RequestMeta};
use crate::dispatch::{Connection, Origin};
use crate::server::hub::{Change, Subscriber};
use crate::wire::error::Error;
use crate::wire::jsonrpc::{Frame, RequestId};
/// What a listen stream asked for, as far as the server honours it.
#[derive(Clone, Debug, Default)]
pub(crate) struct Filter {
    tools: bool,
    prompts: bool,
    resources: bool,
    uris: Vec<String>,
    /// Tasks whose changes this stream follows (the Tasks extension).
    task_ids: Vec<String>,
    /// The keys of extensions' notifications this stream opted in to.
    extensions: Vec<String>,
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
        for key in &self.extensions {
            out.insert(key.clone(), true.into());
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
    fn tagged(&self, method: &str, mut params: Map<String, Value>) -> Frame {
        params.insert("_meta".into(), json!({ META_SUBSCRIPTION_ID: self.request.id }));
        Frame::notification(method, &Value::Object(params))
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
        let task = &super::tasks::detailed_2026(record);
        let subject = self.request.meta.http.as_ref().and_then(|h| h.auth.as_ref()).map(|a| a.subject.as_str());
        if record.subject.is_some() && record.subject.as_deref() != subject {
            return;
        }
        let Value::Object(params) = task.clone() else { return };
        self.request.send_if_open(self.tagged("notifications/tasks", params));
    }

    /// Whether the stream belongs to this connection.
    pub(crate) fn is_on(&self, conn: &dyn crate::context::Link) -> bool {
        std::ptr::addr_eq(Arc::as_ptr(&self.request.link), conn)
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
        self.request.link.forget(&self.request);
        self.request.finish(Frame::result(&self.request.id, &result));
        self.request.stop_quietly();
    }
}

pub(super) fn listen(
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
    let capabilities = &server.inner.served().capabilities;
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
    let task_ids = if server.inner.served().tasks_enabled { task_ids } else { Vec::new() };
    // An extension's notification, when the filter opts in with its key and the client declared the extension.
    let mut extensions: Vec<String> = server
        .inner
        .handlers()
        .notifications
        .values()
        .filter(|sent| flag(&sent.filter) && meta.client_supports(&["extensions", &sent.extension]))
        .map(|sent| sent.filter.clone())
        .collect();
    extensions.sort_unstable();
    extensions.dedup();
    let filter = Filter {
        task_ids,
        extensions,
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
    fn hear(&self, change: &Change) {
        match change {
            Change::ListChanged { list, .. } => self.list_changed(list.notification()),
            Change::ResourceUpdated { uri } => self.resource_updated(uri),
            Change::Task { record } => self.task_changed(record),
            Change::Notification { filter, method, params, .. } if self.filter.extensions.contains(filter) => {
                self.request.send_if_open(self.tagged(method, params.clone()));
            }
            Change::Notification { .. } => {}
            // A 2025 session's own.
            Change::TaskInput { .. }
            | Change::SessionChanged { .. }
            | Change::SessionEnded { .. }
            | Change::Cancelled { .. }
            | Change::Answered { .. } => {}
        }
    }

    fn end(&self, conn: Option<&dyn crate::context::Link>) {
        if conn.is_none_or(|c| self.is_on(c)) {
            self.finish();
        }
    }
}
