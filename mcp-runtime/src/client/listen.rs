//! Following changes: `subscriptions/listen` in the 2026 era, and in the 2025 era the session's list-changed
//! notifications plus `resources/subscribe` for each URI. Either way a [`Subscription`] yields the notifications
//! asked for; dropping it ends the listen request (or unsubscribes).

use std::sync::atomic::{AtomicU64, Ordering};

use serde_json::{json, Value};
use tokio::sync::mpsc;

use super::{Client, Error};

/// How many notifications a subscription holds before it drops new ones (a reader that does not keep up).
const BUFFER: usize = 256;

/// What to follow.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
#[must_use]
pub struct ListenFilter {
    tools: bool,
    prompts: bool,
    resources: bool,
    uris: Vec<String>,
    task_ids: Vec<String>,
    events: bool,
}

impl ListenFilter {
    /// Nothing yet.
    pub fn new() -> ListenFilter {
        ListenFilter::default()
    }

    /// Changes of the tool list.
    pub fn tools(mut self) -> Self {
        self.tools = true;
        self
    }

    /// Changes of the prompt list.
    pub fn prompts(mut self) -> Self {
        self.prompts = true;
        self
    }

    /// Changes of the resource list.
    pub fn resources(mut self) -> Self {
        self.resources = true;
        self
    }

    /// Updates of a resource.
    pub fn resource(mut self, uri: impl Into<String>) -> Self {
        self.uris.push(uri.into());
        self
    }

    /// Changes of the event types (2026 era, the Events extension: `notifications/events/list_changed`, after which
    /// [`Client::list_events`] lists them again).
    pub fn events(mut self) -> Self {
        self.events = true;
        self
    }

    /// Changes of a task (2026 era, the Tasks extension).
    pub fn task(mut self, id: impl Into<String>) -> Self {
        self.task_ids.push(id.into());
        self
    }

    fn wants(&self, method: &str, params: &Value) -> bool {
        match method {
            "notifications/tools/list_changed" => self.tools,
            "notifications/prompts/list_changed" => self.prompts,
            "notifications/resources/list_changed" => self.resources,
            "notifications/events/list_changed" => self.events,
            "notifications/resources/updated" => {
                params["uri"].as_str().is_some_and(|uri| self.uris.iter().any(|u| u == uri))
            }
            "notifications/tasks/status" | "notifications/tasks" => {
                params["taskId"].as_str().is_some_and(|id| self.task_ids.iter().any(|t| t == id))
            }
            _ => false,
        }
    }
}

/// A notification: its method and params.
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub struct Notification {
    /// `notifications/tools/list_changed`, `notifications/resources/updated`, ...
    pub method: String,
    /// Its params.
    pub params: Value,
}

/// Notifications as they come. Dropping it stops listening.
#[derive(Debug)]
pub struct Subscription {
    rx: mpsc::Receiver<Notification>,
    key: u64,
    client: Client,
    /// 2026: the listen request, running until dropped.
    request: Option<tokio::task::JoinHandle<()>>,
    /// 2025: the URIs subscribed to, unsubscribed on drop.
    subscribed: Vec<String>,
    /// What the server said it will send (2026), or what was asked (2025).
    pub acknowledged: Value,
}

/// A subscription's way in, in the client's table.
pub(crate) struct Feed {
    filter: ListenFilter,
    /// 2026: the listen request's id, which tags its notifications.
    tag: Option<Value>,
    tx: mpsc::Sender<Notification>,
}

impl Feed {
    /// The way in of a stream whose notifications name `tag` (its request's id) in `_meta`.
    pub(crate) fn tagged(tag: Value, tx: mpsc::Sender<Notification>) -> Feed {
        Feed { filter: ListenFilter::default(), tag: Some(tag), tx }
    }

    /// Hands a notification over if it is this subscription's; `true` if taken.
    pub(crate) fn offer(&self, method: &str, params: &Value) -> bool {
        let tagged = params["_meta"]["io.modelcontextprotocol/subscriptionId"].clone();
        let mine = match &self.tag {
            Some(tag) => *tag == tagged,
            None => tagged.is_null() && self.filter.wants(method, params),
        };
        if mine && self.tx.try_send(Notification { method: method.to_owned(), params: params.clone() }).is_err() {
            tracing::warn!(method, "a subscription is not being read: a notification was dropped");
        }
        mine
    }
}

static KEYS: AtomicU64 = AtomicU64::new(1);

/// A key of the client's table of routes, unique in the process.
pub(crate) fn route_key() -> u64 {
    KEYS.fetch_add(1, Ordering::Relaxed)
}

impl Client {
    /// Follows changes: 2026 — a `subscriptions/listen` request (its acknowledgement first); 2025 — the session's
    /// notifications of the kinds asked for, and `resources/subscribe` for each URI.
    pub async fn listen(&self, filter: ListenFilter) -> Result<Subscription, Error> {
        let (tx, rx) = mpsc::channel(BUFFER);
        let key = KEYS.fetch_add(1, Ordering::Relaxed);
        if !self.is_2026() {
            for uri in &filter.uris {
                self.subscribe(uri).await?;
            }
            let acknowledged = json!({
                "toolsListChanged": filter.tools, "promptsListChanged": filter.prompts,
                "resourcesListChanged": filter.resources, "resourceSubscriptions": filter.uris,
            });
            let subscribed = filter.uris.clone();
            self.inner.routes().insert(key, Feed { filter, tag: None, tx });
            return Ok(Subscription { rx, key, client: self.clone(), request: None, subscribed, acknowledged });
        }
        let mut asked = serde_json::Map::new();
        asked.insert("toolsListChanged".into(), filter.tools.into());
        asked.insert("promptsListChanged".into(), filter.prompts.into());
        asked.insert("resourcesListChanged".into(), filter.resources.into());
        if !filter.uris.is_empty() {
            asked.insert("resourceSubscriptions".into(), filter.uris.clone().into());
        }
        if filter.events {
            asked.insert("eventsListChanged".into(), true.into());
        }
        let mut params = json!({ "notifications": asked });
        if !filter.task_ids.is_empty() {
            params["notifications"]["taskIds"] = filter.task_ids.clone().into();
        }
        // An extension's notification comes to a client that declares the extension.
        let mut extensions: Vec<&str> = Vec::new();
        if !filter.task_ids.is_empty() {
            extensions.push(crate::task::EXTENSION);
        }
        if filter.events {
            extensions.push(crate::wire::events::EXTENSION);
        }
        if !extensions.is_empty() {
            params["_meta"] = json!({ super::META_CAPABILITIES: self.inner.capabilities_with(&extensions) });
        }
        // The request's id tags its notifications: it is taken now, so the route is in place before the request
        // goes out.
        let id = self.inner.next_id();
        self.inner.routes().insert(key, Feed { filter, tag: Some(serde_json::to_value(&id).unwrap_or_default()), tx });
        let call = self.request("subscriptions/listen", params).with_id(id);
        let inner = std::sync::Arc::downgrade(&self.inner);
        let request = tokio::spawn(async move {
            let _ = call.await;
            // The stream ended (the server's final result): so does the subscription.
            if let Some(inner) = inner.upgrade() {
                inner.routes().remove(&key);
            }
        });
        let mut subscription = Subscription {
            rx,
            key,
            client: self.clone(),
            request: Some(request),
            subscribed: Vec::new(),
            acknowledged: Value::Null,
        };
        match subscription.next().await {
            Some(ack) if ack.method == "notifications/subscriptions/acknowledged" => {
                subscription.acknowledged = ack.params["notifications"].clone();
                Ok(subscription)
            }
            Some(other) => Err(Error::Protocol(format!(
                "a listen stream must start with its acknowledgement, not {}",
                other.method
            ))),
            None => Err(Error::Closed),
        }
    }
}

impl Subscription {
    /// The next notification; `None` once the stream ended (the server stopped, or the connection closed).
    pub async fn next(&mut self) -> Option<Notification> {
        self.rx.recv().await
    }
}

impl Drop for Subscription {
    fn drop(&mut self) {
        self.client.inner.routes().remove(&self.key);
        if let Some(request) = self.request.take() {
            request.abort(); // drops the listen call: the request is cancelled
        }
        if !self.subscribed.is_empty() {
            let client = self.client.clone();
            let uris = std::mem::take(&mut self.subscribed);
            tokio::spawn(async move {
                for uri in uris {
                    let _ = client.request("resources/unsubscribe", json!({ "uri": uri })).await;
                }
            });
        }
    }
}
