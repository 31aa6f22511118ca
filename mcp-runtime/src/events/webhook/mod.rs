//! Webhook delivery (SEP-3415, the `webhooks` feature): `events/subscribe` registers an `https` endpoint, and the
//! server POSTs each event there, signed by the Standard Webhooks scheme with the client's `whsec_` secret, for as
//! long as the client refreshes the subscription; `events/unsubscribe` ends it at once.
//!
//! - A subscription is keyed on `(principal, url, name, arguments)` (the arguments as canonical JSON): subscribing
//!   again with the same key refreshes it (a new TTL, the new secret, the last one still signing for a minute), and
//!   its `id` is derived from the key. Only an authenticated caller may subscribe (-32024 otherwise).
//! - The TTL: the client suggests (`ttlMs`), the server grants within [`Webhooks::ttl`] (`refreshBefore`); a request
//!   for no expiry gets the longest finite grant, since subscriptions are kept in memory (or in Redis).
//! - The endpoint is verified before the first delivery: a signed `verification` envelope whose challenge it must
//!   echo (once per principal and URL, for [`Webhooks::verification_ttl`]), unless its URL starts with a prefix of
//!   [`Webhooks::verified_prefix`], or its origin's well-known document covers it ([`well_known`]). A failure is
//!   -32027 with `data.reason`.
//! - Deliveries, one at a time per subscription and in order: each event with the cursor after it (everything
//!   before it was acknowledged or given up on), retried with backoff ([`Webhooks::retries`]) on anything but `2xx`,
//!   `410` and `413` (those two are final); a gap in the buffer is a `gap` envelope; a removed type a `terminated`
//!   one. Every attempt is signed again with a fresh timestamp.
//! - The SSRF guard ([`deliver`]): `https` only, no redirects, and the address is checked at each connection, after
//!   resolution, against the ranges that are not globally routable (loopback, private, link-local, ...), unless
//!   [`Webhooks::allow_address`] lets one through.
//! - On a server shared through Redis ([`shared`]), the subscriptions live in Redis: any instance answers
//!   `events/subscribe` and `events/unsubscribe`, and one instance at a time delivers each, holding its lease; when
//!   that instance dies, another takes the subscription over from its stored watermark.

mod deliver;
mod run;
#[cfg(feature = "redis")]
mod shared;
mod subscribe;
mod suspend;
mod well_known;

use std::collections::HashMap;
use std::net::IpAddr;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime};

use serde_json::{json, Value};
use tokio_util::sync::CancellationToken;

use super::Entry;
use crate::base::sync::Unpoisoned;
use crate::wire::error::{Error, ErrorCode};
use deliver::Sender;
#[cfg(feature = "redis")]
pub(crate) use shared::share;
pub(super) use subscribe::{subscribe, unsubscribe};

/// How the Events extension delivers webhooks: the TTLs it grants, its limits, its retries, the SSRF guard's
/// allow-list and the endpoints it trusts. Give it to [`Events::webhooks`](super::Events::webhooks).
#[derive(Clone, Debug)]
pub struct Webhooks {
    pub(crate) default_ttl: Duration,
    pub(crate) max_ttl: Duration,
    pub(crate) min_ttl: Duration,
    pub(crate) per_principal: usize,
    pub(crate) total: usize,
    pub(crate) attempts: u32,
    pub(crate) first_retry: Duration,
    pub(crate) timeout: Duration,
    pub(crate) allowed: Vec<IpAddr>,
    pub(crate) verified: Vec<String>,
    pub(crate) verification_ttl: Duration,
    pub(crate) verifications_per_host: u32,
    pub(crate) verification_window: Duration,
    pub(crate) well_known: bool,
    pub(crate) suspension: Option<suspend::Suspension>,
    pub(crate) roots: Vec<Vec<u8>>,
}

impl Default for Webhooks {
    fn default() -> Self {
        Webhooks::new()
    }
}

impl Webhooks {
    /// The TTL granted when the client suggests none: one hour.
    pub const DEFAULT_TTL: Duration = Duration::from_secs(60 * 60);
    /// The longest TTL granted: one day (also the grant of a request for no expiry).
    pub const DEFAULT_MAX_TTL: Duration = Duration::from_secs(24 * 60 * 60);
    /// The shortest TTL granted (a shorter suggestion is raised to it): one minute.
    pub const DEFAULT_MIN_TTL: Duration = Duration::from_secs(60);
    /// How many subscriptions one principal may hold: 100.
    pub const DEFAULT_PER_PRINCIPAL: usize = 100;
    /// How many subscriptions the server holds: 10 000.
    pub const DEFAULT_TOTAL: usize = 10_000;
    /// How many times one event is tried: 5.
    pub const DEFAULT_ATTEMPTS: u32 = 5;
    /// The wait before the first retry, doubled before each next one: 10 s (10 s, 20 s, 40 s, 80 s: about 2.5 min).
    pub const DEFAULT_FIRST_RETRY: Duration = Duration::from_secs(10);
    /// How long one POST may take: 5 s.
    pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(5);
    /// How long a verified endpoint stays verified for its principal: one day.
    pub const DEFAULT_VERIFICATION_TTL: Duration = Duration::from_secs(24 * 60 * 60);
    /// How many verification handshakes one instance sends to one host per
    /// [`DEFAULT_VERIFICATION_WINDOW`](Webhooks::DEFAULT_VERIFICATION_WINDOW): 10.
    pub const DEFAULT_VERIFICATIONS_PER_HOST: u32 = 10;
    /// The window [`DEFAULT_VERIFICATIONS_PER_HOST`](Webhooks::DEFAULT_VERIFICATIONS_PER_HOST) counts in: one minute.
    pub const DEFAULT_VERIFICATION_WINDOW: Duration = Duration::from_secs(60);

    /// The failure rate over which a subscription is suspended: 95 %.
    pub const DEFAULT_SUSPEND_RATE: f64 = 0.95;
    /// The attempts a failure rate is taken from at least: 100.
    pub const DEFAULT_SUSPEND_ATTEMPTS: u32 = 100;
    /// The rolling window the attempts are counted in: one hour.
    pub const DEFAULT_SUSPEND_WINDOW: Duration = Duration::from_secs(60 * 60);

    /// The defaults.
    pub fn new() -> Webhooks {
        Webhooks {
            default_ttl: Webhooks::DEFAULT_TTL,
            max_ttl: Webhooks::DEFAULT_MAX_TTL,
            min_ttl: Webhooks::DEFAULT_MIN_TTL,
            per_principal: Webhooks::DEFAULT_PER_PRINCIPAL,
            total: Webhooks::DEFAULT_TOTAL,
            attempts: Webhooks::DEFAULT_ATTEMPTS,
            first_retry: Webhooks::DEFAULT_FIRST_RETRY,
            timeout: Webhooks::DEFAULT_TIMEOUT,
            allowed: Vec::new(),
            verified: Vec::new(),
            verification_ttl: Webhooks::DEFAULT_VERIFICATION_TTL,
            verifications_per_host: Webhooks::DEFAULT_VERIFICATIONS_PER_HOST,
            verification_window: Webhooks::DEFAULT_VERIFICATION_WINDOW,
            well_known: true,
            suspension: Some(suspend::Suspension {
                rate: Webhooks::DEFAULT_SUSPEND_RATE,
                min_attempts: Webhooks::DEFAULT_SUSPEND_ATTEMPTS,
                window: Webhooks::DEFAULT_SUSPEND_WINDOW,
            }),
            roots: Vec::new(),
        }
    }

    /// The TTL granted when the client suggests none, and the longest granted.
    pub fn ttl(mut self, default: Duration, max: Duration) -> Webhooks {
        self.max_ttl = max.max(Duration::from_secs(1));
        self.default_ttl = default.clamp(self.min_ttl.min(self.max_ttl), self.max_ttl);
        self
    }

    /// The shortest TTL granted: a shorter suggestion is raised to it (the SEP's floor against refresh storms).
    pub fn min_ttl(mut self, min: Duration) -> Webhooks {
        self.min_ttl = min;
        self
    }

    /// How many subscriptions one principal may hold, and the server in all; past either, `events/subscribe` is
    /// refused with -32025 (`data.limit: "subscriptions"`).
    pub fn max_subscriptions(mut self, per_principal: usize, total: usize) -> Webhooks {
        self.per_principal = per_principal;
        self.total = total;
        self
    }

    /// How many times one event is tried (at least once), and the wait before the first retry (doubled before each
    /// next one). An event still refused after that is given up on.
    pub fn retries(mut self, attempts: u32, first_retry: Duration) -> Webhooks {
        self.attempts = attempts.max(1);
        self.first_retry = first_retry;
        self
    }

    /// When a subscription's delivery is suspended (SEP-3415's suspension): when more than `failure_rate` (0.95 by
    /// default) of at least `min_attempts` (100) delivery attempts in a rolling `window` (one hour) failed (a `410`
    /// or `413`, which refuses one event and not the endpoint, is not counted). A
    /// suspended subscription is not delivered until its client refreshes it: the event it was trying waits, the
    /// refresh answers `deliveryStatus.active: false` and reactivates it, and delivery resumes with that event. A
    /// client that stops refreshing lets it expire at its TTL.
    pub fn suspend_after(mut self, failure_rate: f64, min_attempts: u32, window: Duration) -> Webhooks {
        let window = window.max(Duration::from_millis(1));
        self.suspension = Some(suspend::Suspension { rate: failure_rate, min_attempts, window });
        self
    }

    /// Never suspends a subscription: a failing endpoint is tried for every event, as [`Webhooks::retries`] says,
    /// until the subscription expires.
    pub fn never_suspend(mut self) -> Webhooks {
        self.suspension = None;
        self
    }

    /// How long one POST may take before it counts as failed (`timeout`).
    pub fn timeout(mut self, timeout: Duration) -> Webhooks {
        self.timeout = timeout;
        self
    }

    /// Lets deliveries reach this address although it is not globally routable (a loopback or private address):
    /// for tests and internal deployments. Every other such address is refused, whatever name resolves to it.
    pub fn allow_address(mut self, address: IpAddr) -> Webhooks {
        self.allowed.push(address);
        self
    }

    /// Endpoints whose URL starts with `prefix` are trusted without the verification handshake (the SEP's
    /// allow-list: receivers the operator registered out of band).
    pub fn verified_prefix(mut self, prefix: impl Into<String>) -> Webhooks {
        self.verified.push(prefix.into());
        self
    }

    /// Whether an endpoint is verified by its origin's document (on by default): before the challenge, the server
    /// reads `/.well-known/mcp-webhook-receiver.json` at the callback URL's origin (SEP-3415's receiver-published
    /// document, `{"receivers": ["/hooks/"]}`: the path prefixes there that take MCP webhooks), through the SSRF
    /// guard, and a URL under one of its prefixes is verified without a challenge POST. The document is kept per
    /// origin as its `Cache-Control` allows (five minutes without one, a day at most); an origin without one is
    /// asked again after a minute. `false`: only the challenge (and [`Webhooks::verified_prefix`]).
    pub fn well_known(mut self, read: bool) -> Webhooks {
        self.well_known = read;
        self
    }

    /// How long a handshake keeps an endpoint verified for its principal (one day by default).
    pub fn verification_ttl(mut self, ttl: Duration) -> Webhooks {
        self.verification_ttl = ttl;
        self
    }

    /// How many verification handshakes this instance POSTs to one host (the URL's host name or address) in each
    /// window of `per`; past that, `events/subscribe` for an unverified endpoint on that host is refused with -32025
    /// (`data.limit: "verifications"`) until the window ends. The SEP's rate limit per destination, so that
    /// subscriptions with many URLs or secrets cannot make the server flood a host with challenges. Endpoints
    /// already verified, and refreshes, are not counted.
    pub fn verification_rate(mut self, per_host: u32, per: Duration) -> Webhooks {
        self.verifications_per_host = per_host.max(1);
        self.verification_window = per;
        self
    }

    /// Trusts the certificate authority in `pem` for the endpoints' TLS, beside the platform's roots (an internal
    /// CA, a test's self-signed certificate).
    pub fn root_certificate(mut self, pem: impl Into<Vec<u8>>) -> Webhooks {
        self.roots.push(pem.into());
        self
    }
}

/// The webhook subscriptions of a server, and how it reaches their endpoints.
pub(crate) struct Registry {
    pub(crate) settings: Webhooks,
    sender: Sender,
    /// The subscriptions this instance delivers.
    subs: Mutex<HashMap<String, Arc<Sub>>>,
    /// `(principal, url)` verified, until when.
    verified: Mutex<HashMap<(String, String), Instant>>,
    /// The receivers' well-known documents read lately.
    documents: well_known::Documents,
    /// Where the subscriptions live on a server shared through Redis.
    #[cfg(feature = "redis")]
    shared: std::sync::OnceLock<shared::Shared>,
}

/// One subscription.
pub(crate) struct Sub {
    pub id: String,
    pub principal: String,
    pub url: String,
    pub name: String,
    pub arguments: Value,
    /// Its type, as it was when the delivery started.
    pub entry: Arc<Entry>,
    pub state: Mutex<State>,
    /// Ends its delivery loop: unsubscribed, expired, its type removed, or (shared) delivered by another instance.
    pub stop: CancellationToken,
    /// Tells the loop its expiry moved.
    pub refreshed: tokio::sync::Notify,
    /// Tells a suspended loop that its client refreshed the subscription.
    pub resumed: tokio::sync::Notify,
    /// Ends it with a `terminated` envelope ([`Emitter::terminate`](crate::events::Emitter::terminate)).
    pub ended: Arc<crate::events::hooks::Termination>,
}

/// What changes while a subscription lives.
pub(crate) struct State {
    pub secret: String,
    /// The secret it had before the last refresh changed it, still signing until then.
    pub previous: Option<(String, Instant)>,
    pub expires: Instant,
    /// The expiry as Redis holds it (ms since the Unix epoch), on a server shared through Redis: a refresh on any
    /// instance changes it.
    #[cfg(feature = "redis")]
    pub expires_ms: u64,
    /// The cursor after everything delivered or given up on: safe for the client to keep.
    pub watermark: Option<String>,
    pub last_delivery_at: Option<SystemTime>,
    pub last_error: Option<String>,
    pub failed_since: Option<SystemTime>,
    /// Its recent delivery attempts, which decide a suspension.
    pub outcomes: suspend::Outcomes,
    /// Since when its delivery is suspended, until a refresh.
    pub suspended_since: Option<SystemTime>,
}

impl Sub {
    /// Subscription `id` of `principal` to `entry`'s type with `arguments`, delivered to `url`.
    fn new(
        id: String,
        (principal, url): (String, String),
        arguments: Value,
        entry: Arc<Entry>,
        state: State,
    ) -> Arc<Sub> {
        Arc::new(Sub {
            id,
            principal,
            url,
            name: entry.def.name.clone(),
            arguments,
            entry,
            state: Mutex::new(state),
            stop: CancellationToken::new(),
            refreshed: tokio::sync::Notify::new(),
            resumed: tokio::sync::Notify::new(),
            ended: Default::default(),
        })
    }
}

impl Sub {
    /// What its type's hooks are told of it.
    pub(crate) fn subscribed(&self) -> crate::events::Subscribed {
        crate::events::Subscribed {
            id: self.id.clone(),
            name: self.name.clone(),
            arguments: self.arguments.clone(),
            principal: Some(self.principal.clone()),
            delivery: crate::events::Delivery::Webhook,
        }
    }
}

impl State {
    fn new(secret: String, expires: Instant, watermark: Option<String>) -> State {
        State {
            secret,
            previous: None,
            expires,
            #[cfg(feature = "redis")]
            expires_ms: 0,
            watermark,
            last_delivery_at: None,
            last_error: None,
            failed_since: None,
            outcomes: suspend::Outcomes::new(Instant::now()),
            suspended_since: None,
        }
    }
}

/// How long a replaced secret keeps signing beside the new one.
const ROTATION_GRACE: Duration = Duration::from_secs(60);

impl Registry {
    pub(crate) fn new(settings: Webhooks) -> Result<Registry, String> {
        let sender = Sender::new(&settings)?;
        Ok(Registry {
            settings,
            sender,
            subs: Mutex::default(),
            verified: Mutex::default(),
            documents: well_known::Documents::default(),
            #[cfg(feature = "redis")]
            shared: std::sync::OnceLock::new(),
        })
    }

    fn get(&self, id: &str) -> Option<Arc<Sub>> {
        self.subs.locked().get(id).cloned()
    }

    pub(crate) fn remove(&self, sub: &Sub) {
        let mut subs = self.subs.locked();
        if subs.get(&sub.id).is_some_and(|s| std::ptr::eq(Arc::as_ptr(s), sub)) {
            subs.remove(&sub.id);
        }
        sub.stop.cancel();
    }

    /// Ends subscription `id` with `error` (a `terminated` envelope, then it is forgotten): here if this instance
    /// delivers it, else, on a shared server, by whichever instance does (it reads it back within a tick).
    /// `false` if it does not exist.
    pub(crate) async fn terminate(&self, id: &str, error: Error) -> bool {
        if let Some(sub) = self.get(id) {
            sub.ended.end(error);
            return true;
        }
        #[cfg(feature = "redis")]
        if let Some(shared) = self.shared.get() {
            return shared.terminate(id, &error).await;
        }
        false
    }

    /// Refuses a new subscription past the limits, given how many the principal holds and the server in all.
    fn admit(&self, mine: usize, all: usize) -> Result<(), Error> {
        if mine >= self.settings.per_principal {
            Err(exhausted(self.settings.per_principal))
        } else if all >= self.settings.total {
            Err(exhausted(self.settings.total))
        } else {
            Ok(())
        }
    }

    /// How many subscriptions `principal` holds here, and this instance in all.
    fn held(&self, principal: &str) -> (usize, usize) {
        let subs = self.subs.locked();
        (subs.values().filter(|s| s.principal == principal).count(), subs.len())
    }

    /// Writes what changed as `sub` was delivered where the other instances read it (on a shared server).
    async fn persist(&self, sub: &Sub) {
        #[cfg(feature = "redis")]
        if let Some(shared) = self.shared.get() {
            shared.persist(sub).await;
        }
        #[cfg(not(feature = "redis"))]
        let _ = sub;
    }

    /// The server shuts down: every subscription delivered here stops, and on a shared server its lease is let go
    /// at once, so another instance takes it over at its next look (within a second) instead of when the lease
    /// lapses. An event in flight is posted again by that instance, under the same `webhook-id`.
    pub(crate) async fn shut_down(&self) {
        let subs: Vec<Arc<Sub>> = self.subs.locked().values().cloned().collect();
        for sub in subs {
            sub.stop.cancel();
            self.ended(&sub, false).await;
        }
    }

    /// `sub`'s delivery ended here: forgotten, and on a shared server removed for good (`for_good`: it expired, or
    /// its type is gone) or let go for another instance to take over.
    async fn ended(&self, sub: &Sub, for_good: bool) {
        self.remove(sub);
        #[cfg(feature = "redis")]
        if let Some(shared) = self.shared.get() {
            shared.ended(sub, for_good).await;
        }
        #[cfg(not(feature = "redis"))]
        let _ = for_good;
    }

    /// The TTL granted for a suggestion: absent → the default; `null` (no expiry) → the longest; else clamped.
    fn grant(&self, suggested: Option<&Value>) -> Result<Duration, Error> {
        let s = &self.settings;
        match suggested {
            None => Ok(s.default_ttl),
            Some(Value::Null) => Ok(s.max_ttl),
            Some(v) => v
                .as_u64()
                .map(|ms| Duration::from_millis(ms).clamp(s.min_ttl.min(s.max_ttl), s.max_ttl))
                .ok_or_else(|| Error::invalid_params("`ttlMs` must be a number of milliseconds, or null")),
        }
    }

    /// Whether `(principal, url)` is verified: allow-listed, or a handshake that has not expired.
    fn is_verified(&self, principal: &str, url: &str) -> bool {
        if self.settings.verified.iter().any(|prefix| url.starts_with(prefix.as_str())) {
            return true;
        }
        let key = (principal.to_owned(), url.to_owned());
        let mut verified = self.verified.locked();
        match verified.get(&key) {
            Some(until) if *until > Instant::now() => true,
            Some(_) => {
                verified.remove(&key);
                false
            }
            None => false,
        }
    }

    /// Verifies the endpoint at `url` of subscription `id`, which signs with `secret`: its origin's well-known
    /// document covers it ([`Webhooks::well_known`]), or it echoes the challenge.
    async fn confirm(&self, url: &str, id: &str, secret: &str) -> Result<(), Error> {
        if self.settings.well_known && self.documents.cover(&self.sender, url).await {
            return Ok(());
        }
        self.sender.verify(url, id, secret).await
    }

    fn mark_verified(&self, principal: &str, url: &str) {
        let mut verified = self.verified.locked();
        let now = Instant::now();
        verified.retain(|_, until| *until > now);
        verified.insert((principal.to_owned(), url.to_owned()), now + self.settings.verification_ttl);
    }
}

/// The error of a subscription past a limit.
fn exhausted(max: usize) -> Error {
    Error::new(
        ErrorCode::RESOURCE_EXHAUSTED,
        format!("no more webhook subscriptions here (at most {max}); unsubscribe one, or let one expire"),
    )
    .with_data(json!({ "limit": "subscriptions", "max": max }))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ttls_are_clamped_and_no_expiry_gets_the_longest() {
        let r = Registry::new(Webhooks::new()).unwrap();
        assert_eq!(r.grant(None).unwrap(), Webhooks::DEFAULT_TTL);
        assert_eq!(r.grant(Some(&Value::Null)).unwrap(), Webhooks::DEFAULT_MAX_TTL);
        assert_eq!(r.grant(Some(&json!(1))).unwrap(), Webhooks::DEFAULT_MIN_TTL);
        assert_eq!(r.grant(Some(&json!(u64::MAX))).unwrap(), Webhooks::DEFAULT_MAX_TTL);
        assert!(r.grant(Some(&json!("soon"))).is_err());
    }
}
