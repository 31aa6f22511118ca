//! Sessions (2025-11-25): an HTTP session, who holds it, and the transport's shared state (sessions, limits).

use super::*;

pub(super) struct HttpSession {
    pub(super) session: Arc<Session>,
    pub(super) store: Arc<dyn EventStore>,
    pub(super) standalone: Arc<Route>,
    /// The bytes waiting unread for this session, over all its streams: past the soft bound, its new POSTs wait.
    pub(super) outbound: Arc<Backlog>,
    /// POSTs refused so far because the client did not read (logged at powers of two).
    pub(super) refused: AtomicU64,
    /// Streams by name, for `Last-Event-ID` resumption.
    pub(super) routes: Mutex<HashMap<String, Weak<Route>>>,
    pub(super) next_stream: AtomicU64,
    pub(super) last_seen: Mutex<Instant>,
    /// Streams (request streams and the standalone one) a client is reading.
    pub(super) open_streams: AtomicU64,
    /// The principal that opened it, when requests are authenticated: only it may use the session.
    pub(super) owner: Option<String>,
    /// The address of the client that opened it (when the server knows it): at the cap, the holder of the most
    /// sessions (its principal, else this address) gives one up first.
    pub(super) peer: Option<std::net::IpAddr>,
}

/// Who holds a session, for sharing the cap: its principal, else the address of the client that opened it.
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub(super) enum Holder<'a> {
    Principal(&'a str),
    Address(Option<std::net::IpAddr>),
}

impl HttpSession {
    pub(super) fn touch(&self) {
        *self.last_seen.locked() = Instant::now();
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
        let name = format!("s{}", self.next_stream.fetch_add(1, Ordering::Relaxed));
        let limits = self.session.connection().server().inner.outbound;
        let route = Route::new(name.clone(), self.store.clone(), limits, Some(self.outbound.clone()));
        let mut routes = self.routes.locked();
        routes.retain(|_, r| r.strong_count() > 0);
        routes.insert(name, Arc::downgrade(&route));
        route
    }

    /// Forgets a finished stream's route (its events stay in the store, for a replay).
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

pub(super) struct HttpState {
    pub(super) server: Server,
    pub(super) options: HttpOptions,
    pub(super) sessions: Mutex<HashMap<String, Arc<HttpSession>>>,
    /// Stateless mode: which session serves a request, by caller and id, so that a `notifications/cancelled` finds
    /// the request of the client that sent it and no other. Entries leave when their POST ends.
    pub(super) stateless_requests: Mutex<StatelessTable>,
    pub(super) next_stateless: AtomicU64,
    /// The 2026 requests whose POST waits for its answer (cancelled when the server stops).
    pub(super) waiting: v2026::Waiting,
    /// Makes each session's event store (sharing one total by default).
    pub(super) event_stores: Arc<dyn EventStoreFactory>,
    /// The Host and Origin values refused so far, each logged once.
    pub(super) refused: RefusedNames,
}

impl HttpState {
    pub(super) fn session(&self, id: &str) -> Option<Arc<HttpSession>> {
        self.sessions.locked().get(id).cloned()
    }

    pub(super) fn new_store(&self) -> Arc<dyn EventStore> {
        self.event_stores.create()
    }

    /// Ends every session, stateless ones too (the server is stopping): their requests are cancelled and their
    /// streams end.
    pub(super) fn end_all_sessions(&self, reason: &str) {
        let ended: Vec<Arc<HttpSession>> = self.sessions.locked().drain().map(|(_, s)| s).collect();
        for s in ended {
            s.end(reason);
        }
        // Stateless mode: each request has a session of its own, which only the table of cancels lists.
        let stateless: Vec<Arc<Session>> =
            self.stateless_requests.locked().values().flatten().filter_map(|(_, s)| s.upgrade()).collect();
        for session in stateless {
            session.cancel_all(reason);
        }
    }

    pub(super) fn end_idle_sessions(&self) {
        let timeout = self.options.session_idle_timeout;
        let ended: Vec<Arc<HttpSession>> = {
            let mut sessions = self.sessions.locked();
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
            let mut sessions = self.sessions.locked();
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
                true
            }
            None => false,
        }
    }
}

/// 128 random bits from the operating system's CSPRNG, as hex.
pub(super) fn new_session_id() -> String {
    let mut bytes = [0u8; 16];
    if let Err(e) = getrandom::fill(&mut bytes) {
        // Without randomness there are no safe session ids: refuse to make one guessable.
        panic!("the operating system's random number generator failed: {e}");
    }
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}
