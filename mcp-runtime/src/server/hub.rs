//! The change hub: what the server tells the clients that listen for changes, on this instance and on the others.
//!
//! The server publishes a [`Change`] (a list changed, a resource was updated, a task moved on). Each era's front
//! registers what listens on this instance (a 2025 session, a 2026 `subscriptions/listen` stream) as a
//! `Subscriber` in the server's `Subscribers`, and decides for itself what its client hears of a change and how it
//! is written. So the server knows neither eras nor transports.
//!
//! A server that runs as several instances (behind a load balancer) also has a [`ChangeHub`]: the instances tell
//! each other through it what changed, so that a client listening on one hears what a request on another changed.
//! Every change crosses: resource updates, task status, and list changes, with the registry edit behind a list
//! change (a tool enabled, disabled, removed or added by a request on one instance), which every other instance
//! applies to its own registry itself, once; an instance drops its own echoes by their [`InstanceId`]. Without a
//! hub (the default) a server is one instance, and changes stay in it. [`LocalHub`] connects the servers of one
//! process (tests, in-process composition); `mcp::redis` has one over Redis.

use std::sync::{Arc, Mutex, Weak};

use serde::{Deserialize, Serialize};

use serde_json::Value;

use crate::base::sync::Unpoisoned;
use crate::context::Link;
use crate::store::task::TaskRecord;
use crate::wire::jsonrpc::RequestId;

/// A list a client can be told has changed.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum List {
    /// `tools/list`.
    Tools,
    /// `prompts/list`.
    Prompts,
    /// `resources/list` and `resources/templates/list`.
    Resources,
}

impl List {
    /// The notification that says so (`notifications/tools/list_changed`, ...).
    pub fn notification(self) -> &'static str {
        match self {
            List::Tools => "notifications/tools/list_changed",
            List::Prompts => "notifications/prompts/list_changed",
            List::Resources => "notifications/resources/list_changed",
        }
    }
}

/// What changed in a list: the registry edit that each instance applies to its own registry. `name` is a tool's or
/// prompt's name, or a resource's URI (or a template's URI template).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "edit", rename_all = "snake_case")]
#[non_exhaustive]
pub enum Edit {
    /// Enabled or disabled.
    Enabled {
        /// Which one.
        name: String,
        /// Enabled (`true`) or disabled.
        enabled: bool,
    },
    /// Removed.
    Removed {
        /// Which one.
        name: String,
    },
    /// Added. Another instance adds it too when its program has a definition of that name linked in (a
    /// `#[mcp::tool]`, `#[mcp::prompt]` or `#[mcp::resource]` of the binary, registered or not): the instances run
    /// the same program. A definition built at run time by hand exists only where it was built; the others log a
    /// warning and list only their own.
    Added {
        /// Which one.
        name: String,
    },
}

/// Something that changed on the server, for the clients that listen. Owned and serializable, so that it can cross
/// to other instances.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "change", rename_all = "snake_case")]
#[non_exhaustive]
pub enum Change {
    /// A list changed; `edit` is what changed in it, when an edit of the registry did (`None`: a list that is not
    /// this registry's changed).
    ListChanged {
        /// Which list.
        list: List,
        /// The registry edit, which every instance applies.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        edit: Option<Edit>,
    },
    /// A resource changed: clients subscribed to it hear `notifications/resources/updated`.
    ResourceUpdated {
        /// The resource's URI.
        uri: String,
    },
    /// A task's record changed: its followers hear its status; the instance running it stops it if it was
    /// cancelled elsewhere.
    Task {
        /// The record as it is now.
        record: Box<TaskRecord>,
    },
    /// 2026 answers (`tasks/update`) to the questions of a task that reached an instance that does not run it: the
    /// one that runs it hands them to the handler.
    TaskInput {
        /// The task's id.
        task: String,
        /// The answers, by the key of the question each answers.
        responses: serde_json::Map<String, Value>,
    },
    /// An extension's notification ([`Server::notify`](crate::Server::notify)): the clients that declared the
    /// extension hear it (in 2026, the listen streams whose filter set `filter`).
    Notification {
        /// The extension's identifier.
        extension: String,
        /// The notification's key in a 2026 listen filter.
        filter: String,
        /// The notification's method.
        method: String,
        /// Its params.
        params: serde_json::Map<String, Value>,
    },
    /// A 2025 session's record changed on one instance (its log level, its subscriptions): every instance's copy
    /// takes it.
    SessionChanged {
        /// The session's key.
        session: String,
        /// The record as it is now.
        record: Box<crate::store::session::SessionRecord>,
    },
    /// A 2025 session ended (DELETE on one instance): every instance ends its copy.
    SessionEnded {
        /// The session's key (a digest of its id, as its [`SessionStore`](crate::store::SessionStore) record is keyed).
        session: String,
    },
    /// A session's `notifications/cancelled` reached an instance that does not run the request: the one that runs
    /// it cancels it.
    Cancelled {
        /// The session's key.
        session: String,
        /// The request's id.
        request: RequestId,
        /// Why, as the client said.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        reason: Option<String>,
    },
    /// A client's answer to a request of the server's (elicitation, sampling, roots) reached an instance that did
    /// not send the request: the one that did hands it to the handler waiting for it.
    Answered {
        /// The session's key.
        session: String,
        /// The id of the server's request.
        request: RequestId,
        /// The result, or the error.
        outcome: Result<Value, Value>,
    },
}

/// The instance a change was made on: random for each server built, so that an instance knows its own echoes.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(transparent)]
pub struct InstanceId(String);

impl InstanceId {
    /// A new random id (128 bits, hex).
    pub(crate) fn random() -> InstanceId {
        InstanceId(crate::base::random_id().unwrap_or_else(|e| panic!("{e}")))
    }

    /// The id as text.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

/// A change as it travels between instances: what changed, and where.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct Published {
    /// The instance that made the change.
    pub instance: InstanceId,
    /// What changed.
    pub change: Change,
}

/// Where a hub hands the changes of other instances to this one ([`ChangeHub::start`]). Cheap to clone.
#[derive(Clone)]
pub struct Inbox {
    deliver: Arc<dyn Fn(Published) + Send + Sync>,
    open: Arc<dyn Fn() -> bool + Send + Sync>,
}

impl Inbox {
    pub(crate) fn new(
        deliver: impl Fn(Published) + Send + Sync + 'static,
        open: impl Fn() -> bool + Send + Sync + 'static,
    ) -> Inbox {
        Inbox { deliver: Arc::new(deliver), open: Arc::new(open) }
    }

    /// Whether the server is still there: once it is dropped, a hub may stop delivering to it.
    pub fn is_open(&self) -> bool {
        (self.open)()
    }

    /// Hands over a change published by an instance: this one drops its own echoes, applies the registry edit (if
    /// any) and tells its listeners. Cheap and never blocking: call it from the task that receives.
    pub fn deliver(&self, published: Published) {
        (self.deliver)(published)
    }
}

impl std::fmt::Debug for Inbox {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Inbox")
    }
}

/// How the instances of one server tell each other what changed ([`ServerBuilder::change_hub`]).
///
/// [`publish`](ChangeHub::publish) is called on the path of the change itself (a tool call that enabled a tool, a
/// task's status written): it must not block, only queue. [`start`](ChangeHub::start) is called once, when the
/// server is built, with the [`Inbox`] to hand every change of the other instances to; a hub that also hands back
/// this instance's own changes is fine (they are dropped by their [`InstanceId`]). Delivery is at most once: a
/// change lost while the hub is cut off from its peers is lost (clients see it at their next list).
///
/// [`ServerBuilder::change_hub`]: crate::ServerBuilder::change_hub
pub trait ChangeHub: Send + Sync + 'static {
    /// Sends a change made on this instance to the others.
    fn publish(&self, published: &Published);
    /// Starts handing the other instances' changes to `inbox`.
    fn start(&self, inbox: Inbox);
}

/// A hub for the servers of one process: what one publishes, the others hear. Clone it into each server's builder.
///
/// ```
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() {
/// /// Say hello.
/// #[mcp::tool]
/// fn hello() -> String {
///     "Hello!".into()
/// }
///
/// let hub = mcp::hub::LocalHub::new();
/// let one = mcp::Server::builder().tool::<hello>().change_hub(hub.clone()).build().unwrap();
/// let two = mcp::Server::builder().tool::<hello>().change_hub(hub).build().unwrap();
/// one.set_tool_enabled("hello", false); // on `one`, and so on `two`
/// assert_eq!(two.tools_list()["tools"], serde_json::json!([]));
/// # }
/// ```
#[derive(Clone, Default)]
pub struct LocalHub {
    inboxes: Arc<Mutex<Vec<Inbox>>>,
}

impl LocalHub {
    /// A hub with no server on it yet.
    pub fn new() -> LocalHub {
        LocalHub::default()
    }
}

impl std::fmt::Debug for LocalHub {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LocalHub").field("servers", &self.inboxes.locked().len()).finish()
    }
}

impl ChangeHub for LocalHub {
    fn publish(&self, published: &Published) {
        let inboxes = self.inboxes.locked().clone();
        for inbox in inboxes {
            inbox.deliver(published.clone());
        }
    }

    fn start(&self, inbox: Inbox) {
        self.inboxes.locked().push(inbox);
    }
}

/// What listens for changes on this instance: a 2025 session, a 2026 listen stream.
pub(crate) trait Subscriber: Send + Sync {
    /// A change: the subscriber tells its client, if the client asked for it.
    fn hear(&self, change: &Change);

    /// Ends what this subscriber streams, cleanly (a 2026 listen stream gets its result), if it belongs to `conn`
    /// (or whatever its connection, with `None`).
    fn end(&self, conn: Option<&dyn Link>) {
        let _ = conn;
    }

    /// The server is stopping: cancel what is in flight. (The HTTP transport stops its subscribers; a stdio
    /// session is stopped by its own shutdown.)
    #[cfg_attr(not(feature = "http"), allow(dead_code))]
    fn stop(&self, reason: &str) {
        let _ = reason;
    }
}

/// The subscribers of this instance, held weakly (a subscriber that is gone is forgotten).
#[derive(Default)]
pub(crate) struct Subscribers {
    subscribers: Mutex<Vec<Weak<dyn Subscriber>>>,
}

impl Subscribers {
    /// Registers a subscriber for as long as it lives.
    pub(crate) fn subscribe(&self, subscriber: Weak<dyn Subscriber>) {
        let mut subscribers = self.subscribers.locked();
        subscribers.retain(|s| s.strong_count() > 0);
        subscribers.push(subscriber);
    }

    /// Every live subscriber.
    pub(crate) fn all(&self) -> Vec<Arc<dyn Subscriber>> {
        let mut subscribers = self.subscribers.locked();
        subscribers.retain(|s| s.strong_count() > 0);
        subscribers.iter().filter_map(Weak::upgrade).collect()
    }

    /// Tells every subscriber of a change.
    pub(crate) fn hear(&self, change: &Change) {
        for subscriber in self.all() {
            subscriber.hear(change);
        }
    }
}
