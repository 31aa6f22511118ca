//! Sessions (2025-11-25): an HTTP session, who holds it, and the sessions of the endpoint (the cap, idle expiry).

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, Weak};
use tokio::time::Instant;

use super::stateless::StatelessTable;
use super::streams::Route;
use crate::base::backlog::Backlog;
use crate::base::sync::Unpoisoned;
use crate::dispatch::FrameSink;
use crate::era::v2025::Session;
use crate::store::{EventStore, EventStoreFactory};
use crate::transport::http::HttpState;

pub(super) struct HttpSession {
    pub(super) session: Arc<Session>,
    pub(super) store: Arc<dyn EventStore>,
    /// The same store when it also writes to the server's event log (for a resume on another instance).
    pub(super) logged: Option<Arc<super::resume::LoggedStore>>,
    /// What this instance's stream names start with when there is an event log (unique over the instances);
    /// empty without one.
    pub(super) tag: Arc<str>,
    pub(super) standalone: Arc<Route>,
    /// The bytes waiting unread for this session, over all its streams: past the soft bound, its new POSTs wait.
    pub(super) outbound: Arc<Backlog>,
    /// POSTs refused so far because the client did not read (logged at powers of two).
    pub(super) refused: AtomicU64,
    /// Streams by name, for `Last-Event-ID` resumption.
    pub(super) routes: Mutex<HashMap<String, Weak<Route>>>,
    pub(super) next_stream: AtomicU64,
    pub(super) last_seen: Mutex<Instant>,
    /// When the session store last heard the session was used (it is told at most every quarter of the idle
    /// timeout, off the request's path).
    pub(super) last_stored: Mutex<Instant>,
    /// Streams (request streams and the standalone one) a client is reading.
    pub(super) open_streams: AtomicU64,
    /// The principal that opened it, when requests are authenticated: only it may use the session.
    pub(super) owner: Option<String>,
    /// The address of the client that opened it (when the server knows it): at the cap, the holder of the most
    /// sessions (its principal, else this address) gives one up first.
    pub(super) peer: Option<std::net::IpAddr>,
    /// The scopes of the token of its last request, when what a caller sees depends on them: a change (a step-up)
    /// tells the client its lists changed.
    pub(super) scopes: Mutex<Option<Vec<String>>>,
    /// With metrics: the session is counted open until this is dropped, which records how long it lasted.
    pub(super) _timing: Option<crate::metrics::SessionTiming>,
}

/// Who holds a session, for sharing the cap: its principal, else the address of the client that opened it.
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub(super) enum Holder<'a> {
    Principal(&'a str),
    Address(Option<std::net::IpAddr>),
}

impl HttpSession {
    /// Notes the scopes of a request's token, when the server's lists depend on them (visibility rules, or
    /// `hide_unauthorized`): new scopes after others (a step-up) tell this session's client that its lists changed,
    /// so that it lists what it may see now.
    pub(super) fn saw_scopes(&self, server: &crate::Server, auth: Option<&crate::auth::AuthInfo>) {
        let inner = &server.inner;
        let by_token =
            inner.served().visibility.is_set() || inner.auth().is_some_and(crate::auth::Guard::hides_unauthorized);
        if !by_token {
            return;
        }
        let now = auth.map(|a| {
            let mut scopes = a.scopes.clone();
            scopes.sort_unstable();
            scopes
        });
        let before = std::mem::replace(&mut *self.scopes.locked(), now.clone());
        if before.is_some() && before != now && self.session.is_initialized() {
            for list in ["tools", "prompts", "resources"] {
                self.session.notify(&format!("notifications/{list}/list_changed"), &serde_json::json!({}));
            }
        }
    }

    pub(super) fn touch(&self) {
        *self.last_seen.locked() = Instant::now();
    }

    /// Tells the session store the session was used, if it was not told lately.
    pub(super) fn touch_stored(&self, state: &HttpState) {
        let Some(store) = state.server.inner.scale_out().session_store.clone() else { return };
        let idle = state.options.session_idle_timeout;
        {
            let mut last = self.last_stored.locked();
            if last.elapsed() < idle / 4 {
                return;
            }
            *last = Instant::now();
        }
        let Some(key) = self.session.connection().session_key() else { return };
        tokio::spawn(async move {
            if let Err(e) = store.touch(&key, idle).await {
                tracing::warn!(error = %e, "could not tell the session store a session was used");
            }
        });
    }

    pub(super) fn holder(&self) -> Holder<'_> {
        match &self.owner {
            Some(principal) => Holder::Principal(principal),
            None => Holder::Address(self.peer),
        }
    }

    /// Whether work in flight or an open stream keeps the session alive.
    pub(super) fn is_busy(&self) -> bool {
        self.open_streams.load(Ordering::Relaxed) > 0 || self.session.connection().is_busy()
    }

    /// Ends the session (it has left the map): its requests and tasks are cancelled, its streams end.
    pub(super) fn end(&self, reason: &str) {
        self.session.cancel_all(reason);
        self.standalone.close();
    }

    pub(super) fn new_route(&self) -> Arc<Route> {
        let name = format!("{}s{}", self.tag, self.next_stream.fetch_add(1, Ordering::Relaxed));
        let limits = self.session.connection().server().inner.limits().outbound;
        let route = Route::new(name.clone(), self.store.clone(), limits, Some(self.outbound.clone()));
        let mut routes = self.routes.locked();
        routes.retain(|_, r| r.strong_count() > 0);
        routes.insert(name, Arc::downgrade(&route));
        route
    }

    /// Forgets a finished stream's route (its events stay in the store, for a replay).
    /// The session has its key (once `initialize` succeeded, or from the start when another instance opened it):
    /// its events go to the event log from now on.
    pub(super) fn set_log_key(&self, key: String) {
        if let Some(logged) = &self.logged {
            logged.set_key(key);
        }
    }

    pub(super) fn forget_route(&self, name: &str) {
        let mut routes = self.routes.locked();
        routes.remove(name);
        if routes.is_empty() {
            routes.shrink_to_fit();
        }
    }

    pub(super) fn route(&self, name: &str) -> Option<Arc<Route>> {
        if name == self.standalone.name {
            return Some(self.standalone.clone());
        }
        self.routes.locked().get(name).and_then(Weak::upgrade)
    }
}

/// The 2025 sessions of one endpoint, by id, and the stateless mode's requests in flight.
pub(in crate::transport::http) struct Sessions {
    live: Mutex<HashMap<String, Arc<HttpSession>>>,
    /// Stateless mode: which session serves a request, by caller and id, so that a `notifications/cancelled` finds
    /// the request of the client that sent it and no other. Entries leave when their POST ends.
    pub(super) stateless: Mutex<StatelessTable>,
    pub(super) next_stateless: AtomicU64,
    /// Makes each session's event store (sharing one total by default).
    event_stores: Arc<dyn EventStoreFactory>,
}

impl Sessions {
    pub(in crate::transport::http) fn new(event_stores: Arc<dyn EventStoreFactory>) -> Sessions {
        Sessions {
            live: Mutex::new(HashMap::new()),
            stateless: Mutex::new(HashMap::new()),
            next_stateless: AtomicU64::new(1),
            event_stores,
        }
    }

    pub(super) fn get(&self, id: &str) -> Option<Arc<HttpSession>> {
        self.live.locked().get(id).cloned()
    }

    pub(super) fn insert(&self, id: String, session: Arc<HttpSession>) {
        self.live.locked().insert(id, session);
    }

    /// Inserts a session unless one of that id is there already; returns the one kept.
    pub(super) fn insert_new(&self, id: &str, session: Arc<HttpSession>) -> Arc<HttpSession> {
        self.live.locked().entry(id.to_owned()).or_insert(session).clone()
    }

    pub(super) fn remove(&self, id: &str) -> Option<Arc<HttpSession>> {
        self.live.locked().remove(id)
    }

    pub(super) fn count(&self) -> usize {
        self.live.locked().len()
    }

    pub(super) fn new_store(&self) -> Arc<dyn EventStore> {
        self.event_stores.create()
    }
}

impl HttpState {
    pub(in crate::transport::http) fn end_all_sessions(&self, reason: &str) {
        let ended: Vec<Arc<HttpSession>> = self.sessions.live.locked().drain().map(|(_, s)| s).collect();
        for s in ended {
            s.end(reason);
        }
        // Stateless mode: each request has a session of its own, which only the table of cancels lists.
        let stateless: Vec<Arc<Session>> =
            self.sessions.stateless.locked().values().flatten().filter_map(|(_, s)| s.upgrade()).collect();
        for session in stateless {
            session.cancel_all(reason);
        }
    }

    /// The server is draining: every session's standalone (GET) stream ends, so that its client reconnects, to
    /// another instance (the sessions go on: their requests are served until the drain ends).
    pub(in crate::transport::http) fn end_standalone_streams(&self) {
        let sessions: Vec<Arc<HttpSession>> = self.sessions.live.locked().values().cloned().collect();
        for s in sessions {
            s.standalone.lock().live = None;
        }
    }

    pub(in crate::transport::http) fn end_idle_sessions(&self) {
        let timeout = self.options.session_idle_timeout;
        let ended: Vec<Arc<HttpSession>> = {
            let mut sessions = self.sessions.live.locked();
            let idle: Vec<String> = sessions
                .iter()
                .filter(|(_, s)| {
                    // Work in flight and open streams keep a session alive; its idle time starts when they end.
                    if s.is_busy() {
                        s.touch();
                        return false;
                    }
                    s.last_seen.locked().elapsed() > timeout
                })
                .map(|(k, _)| k.clone())
                .collect();
            idle.iter().filter_map(|k| sessions.remove(k)).collect()
        };
        for s in ended {
            tracing::info!("ending an idle session");
            s.end("the session expired");
        }
    }

    /// At the session cap: ends the idle session (no request in flight, no open stream, no task running) unused
    /// longest, taken from the holder (principal, else client address) with the most sessions, as idle expiry
    /// would end it; false when no session is idle. A scan of every session, only when the cap is reached.
    pub(super) fn reclaim_idle_session(&self) -> bool {
        let with_tasks = self.server.tasks().connections_running();
        let reclaimed = {
            let mut sessions = self.sessions.live.locked();
            let victim = {
                let mut held: HashMap<Holder<'_>, usize> = HashMap::new();
                for s in sessions.values() {
                    *held.entry(s.holder()).or_default() += 1;
                }
                sessions
                    .iter()
                    .filter(|(_, s)| {
                        !s.is_busy() && !with_tasks.contains(&(Arc::as_ptr(s.session.connection()) as *const ()))
                    })
                    .max_by_key(|(_, s)| (held[&s.holder()], std::cmp::Reverse(*s.last_seen.locked())))
                    .map(|(id, _)| id.clone())
            };
            victim.and_then(|id| sessions.remove(&id))
        };
        match reclaimed {
            Some(s) => {
                tracing::info!(
                    max_sessions = self.options.max_sessions,
                    peer = ?s.peer,
                    "ending the session idle longest to make room for a new one"
                );
                s.end("the session was ended to make room for a new one (the server has its most sessions)");
                // Ended everywhere, so that the count over every instance goes down.
                if let Some(key) = s.session.connection().session_key() {
                    if let Some(store) = self.server.inner.scale_out().session_store.clone() {
                        let server = self.server.clone();
                        tokio::spawn(async move {
                            let _ = store.remove(&key).await;
                            server.publish(crate::server::hub::Change::SessionEnded { session: key });
                        });
                    }
                }
                true
            }
            None => false,
        }
    }
}

/// 128 random bits from the operating system's CSPRNG, as hex.
pub(super) fn new_session_id() -> String {
    // Without randomness there are no safe session ids: refuse to make one guessable.
    crate::base::random_id().unwrap_or_else(|e| panic!("{e}"))
}
