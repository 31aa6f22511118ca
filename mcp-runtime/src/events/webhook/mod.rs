//! Webhook delivery (SEP-3415, the `webhooks` feature): `events/subscribe` registers an `https` endpoint, and the
//! server POSTs each event there, signed by the Standard Webhooks scheme with the client's `whsec_` secret, for as
//! long as the client refreshes the subscription; `events/unsubscribe` ends it at once.
//!
//! - A subscription is keyed on `(principal, url, name, arguments)` (the arguments as canonical JSON): subscribing
//!   again with the same key refreshes it (a new TTL, the new secret, the last one still signing for a minute), and
//!   its `id` is derived from the key. Only an authenticated caller may subscribe (-32024 otherwise).
//! - The TTL: the client suggests (`ttlMs`), the server grants within [`Webhooks::ttl`] (`refreshBefore`); a request
//!   for no expiry gets the longest finite grant, since subscriptions are kept in memory.
//! - The endpoint is verified before the first delivery: a signed `verification` envelope whose challenge it must
//!   echo (once per principal and URL, for [`Webhooks::verification_ttl`]), unless its URL starts with a prefix of
//!   [`Webhooks::verified_prefix`]. A failure is -32027 with `data.reason`.
//! - Deliveries, one at a time per subscription and in order: each event with the cursor after it (everything
//!   before it was acknowledged or given up on), retried with backoff ([`Webhooks::retries`]) on anything but `2xx`,
//!   `410` and `413` (those two are final); a gap in the buffer is a `gap` envelope; a removed type a `terminated`
//!   one. Every attempt is signed again with a fresh timestamp.
//! - The SSRF guard ([`deliver`]): `https` only, no redirects, and the address is checked at each connection, after
//!   resolution, against the ranges that are not globally routable (loopback, private, link-local, ...), unless
//!   [`Webhooks::allow_address`] lets one through.

mod deliver;
mod run;

use std::collections::HashMap;
use std::net::IpAddr;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime};

use serde::Deserialize;
use serde_json::{json, Value};
use sha2::{Digest, Sha256};
use tokio_util::sync::CancellationToken;

use super::def::{Delivery, Source};
use super::methods::{hub, not_found, start, subscription_of, Subscription};
use super::{Entry, Hub};
use crate::base::sync::Unpoisoned;
use crate::context::Context;
use crate::handler::tool::Arguments;
use crate::wire::error::{Error, ErrorCode};
use deliver::Sender;

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

    /// How long a handshake keeps an endpoint verified for its principal (one day by default).
    pub fn verification_ttl(mut self, ttl: Duration) -> Webhooks {
        self.verification_ttl = ttl;
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
    subs: Mutex<HashMap<String, Arc<Sub>>>,
    /// `(principal, url)` verified, until when.
    verified: Mutex<HashMap<(String, String), Instant>>,
}

/// One subscription.
pub(crate) struct Sub {
    pub id: String,
    pub principal: String,
    pub url: String,
    pub name: String,
    pub arguments: Value,
    pub state: Mutex<State>,
    /// Ends its delivery loop: unsubscribed, expired, or its type removed.
    pub stop: CancellationToken,
    /// Tells the loop its expiry moved.
    pub refreshed: tokio::sync::Notify,
}

/// What changes while a subscription lives.
pub(crate) struct State {
    pub secret: String,
    /// The secret it had before the last refresh changed it, still signing until then.
    pub previous: Option<(String, Instant)>,
    pub expires: Instant,
    /// The cursor after everything delivered or given up on: safe for the client to keep.
    pub watermark: Option<String>,
    pub last_delivery_at: Option<SystemTime>,
    pub last_error: Option<&'static str>,
    pub failed_since: Option<SystemTime>,
}

/// How long a replaced secret keeps signing beside the new one.
const ROTATION_GRACE: Duration = Duration::from_secs(60);

/// `events/subscribe`'s `delivery`.
#[derive(Deserialize)]
struct Target {
    #[serde(default)]
    mode: Option<String>,
    url: String,
    #[serde(default)]
    secret: Option<String>,
}

impl Registry {
    pub(crate) fn new(settings: Webhooks) -> Result<Registry, String> {
        let sender = Sender::new(&settings)?;
        Ok(Registry { settings, sender, subs: Mutex::default(), verified: Mutex::default() })
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

    /// Refuses a new subscription past the limits.
    fn admit(&self, principal: &str) -> Result<(), Error> {
        let subs = self.subs.locked();
        let mine = subs.values().filter(|s| s.principal == principal).count();
        let (limit, max) = if mine >= self.settings.per_principal {
            ("subscriptions", self.settings.per_principal)
        } else if subs.len() >= self.settings.total {
            ("subscriptions", self.settings.total)
        } else {
            return Ok(());
        };
        Err(Error::new(
            ErrorCode::RESOURCE_EXHAUSTED,
            format!("no more webhook subscriptions here (at most {max}); unsubscribe one, or let one expire"),
        )
        .with_data(json!({ "limit": limit, "max": max })))
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

    fn mark_verified(&self, principal: &str, url: &str) {
        let mut verified = self.verified.locked();
        let now = Instant::now();
        verified.retain(|_, until| *until > now);
        verified.insert((principal.to_owned(), url.to_owned()), now + self.settings.verification_ttl);
    }
}

/// The subscription's id: derived from its key, stable across refreshes and restarts.
fn derive_id(principal: &str, url: &str, name: &str, arguments: &Value) -> String {
    let key = json!([principal, url, name, super::canonical(arguments)]).to_string();
    let digest = Sha256::digest(key.as_bytes());
    let hex: String = digest[..8].iter().map(|b| format!("{b:02x}")).collect();
    format!("sub_{hex}")
}

/// Checks a callback URL: `https`, with a host, and no credentials in it.
fn check_url(url: &str) -> Result<reqwest::Url, Error> {
    let parsed = reqwest::Url::parse(url)
        .map_err(|e| Error::invalid_params(format!("`delivery.url` {url:?} is not a URL: {e}")))?;
    if parsed.scheme() != "https" {
        return Err(Error::invalid_params(format!("`delivery.url` must be an https URL (SEP-3415), not {url:?}")));
    }
    if parsed.host().is_none() || !parsed.username().is_empty() || parsed.password().is_some() {
        return Err(Error::invalid_params(format!("`delivery.url` {url:?} must name a host, and no credentials")));
    }
    Ok(parsed)
}

/// Checks a signing secret: `whsec_` and the base64 of 24 to 64 bytes.
fn check_secret(secret: Option<&str>) -> Result<String, Error> {
    use base64::Engine as _;
    let secret = secret.ok_or_else(|| Error::invalid_params("`delivery.secret` is required (a whsec_ secret)"))?;
    let bytes = secret
        .strip_prefix("whsec_")
        .and_then(|b64| base64::engine::general_purpose::STANDARD.decode(b64).ok())
        .filter(|bytes| (24..=64).contains(&bytes.len()));
    match bytes {
        Some(_) => Ok(secret.to_owned()),
        None => Err(Error::invalid_params(
            "`delivery.secret` must be `whsec_` followed by the base64 of 24 to 64 random bytes (Standard Webhooks)",
        )),
    }
}

/// The caller's principal: webhook subscriptions need one (-32024 otherwise).
fn principal(ctx: &Context) -> Result<String, Error> {
    let auth = ctx.meta().http.as_ref().and_then(|http| http.auth.as_ref());
    auth.map(|auth| auth.principal()).ok_or_else(|| {
        Error::new(
            ErrorCode::FORBIDDEN,
            "webhook subscriptions need an authenticated caller (SEP-3415); this request carries no principal",
        )
        .with_data(json!({ "reason": "unauthenticated" }))
    })
}

fn registry(hub: &Hub) -> Result<Arc<Registry>, Error> {
    hub.webhooks.get().cloned().ok_or_else(|| {
        Error::new(ErrorCode::UNSUPPORTED, "this server does not deliver webhooks (Events::webhooks)")
            .with_data(json!({ "feature": "deliveryMode", "value": "webhook" }))
    })
}

/// `events/subscribe`.
pub(super) async fn subscribe(ctx: &Context, args: Arguments) -> Result<Value, Error> {
    super::methods::in_2026(ctx, "events/subscribe")?;
    let hub = hub(ctx)?;
    let registry = registry(&hub)?;
    if hub.is_shared() {
        return Err(Error::new(
            ErrorCode::UNSUPPORTED,
            "webhook delivery is not offered on a server shared through Redis yet: subscribe by poll or push",
        )
        .with_data(json!({ "feature": "deliveryMode", "value": "webhook" })));
    }
    let mut args = args.into_map();
    let target = args.remove("delivery").ok_or_else(|| Error::invalid_params("`delivery` is required"))?;
    let ttl = args.remove("ttlMs");
    let target: Target = serde_json::from_value(target)
        .map_err(|e| Error::invalid_params(format!("`delivery` must be {{mode, url, secret}}: {e}")))?;
    if target.mode.as_deref().is_some_and(|m| m != "webhook") {
        return Err(Error::invalid_params("`delivery.mode` must be \"webhook\""));
    }
    let (sub, entry) = subscription_of(&hub, Value::Object(args), "events/subscribe", Delivery::Webhook)?;
    let principal = principal(ctx)?;
    check_url(&target.url)?;
    let secret = check_secret(target.secret.as_deref())?;
    let granted = registry.grant(ttl.as_ref())?;
    let arguments = sub.arguments();
    let id = derive_id(&principal, &target.url, &sub.name, &arguments);
    if let Some(live) = registry.get(&id).filter(|s| !s.stop.is_cancelled()) {
        return Ok(refresh(&live, secret, granted));
    }
    registry.admit(&principal)?;
    if !registry.is_verified(&principal, &target.url) {
        registry.sender.verify(&target.url, &id, &secret).await?;
        registry.mark_verified(&principal, &target.url);
    }
    let subscribed = super::Subscribed {
        id: id.clone(),
        name: sub.name.clone(),
        arguments: arguments.clone(),
        principal: Some(principal.clone()),
        delivery: Delivery::Webhook,
    };
    let ending = super::hooks::started(&entry, subscribed).await?;
    let (start, cursor, truncated) = starting_point(&hub, &entry, &sub, ctx).await?;
    let state = State {
        secret,
        previous: None,
        expires: Instant::now() + granted,
        watermark: cursor.clone(),
        last_delivery_at: None,
        last_error: None,
        failed_since: None,
    };
    let created = Arc::new(Sub {
        id: id.clone(),
        principal,
        url: target.url,
        name: sub.name.clone(),
        arguments,
        state: Mutex::new(state),
        stop: CancellationToken::new(),
        refreshed: tokio::sync::Notify::new(),
    });
    registry.subs.locked().insert(id.clone(), created.clone());
    tokio::spawn(run::deliver(hub.clone(), registry.clone(), entry, created, start, ctx.clone(), ending));
    Ok(json!({
        "id": id,
        "refreshBefore": super::timestamp(SystemTime::now() + granted),
        "cursor": cursor,
        "truncated": truncated,
    }))
}

/// A live subscription subscribed again: a new TTL and secret, delivery reactivated.
fn refresh(live: &Sub, secret: String, granted: Duration) -> Value {
    let mut state = live.state.locked();
    if state.secret != secret {
        let old = std::mem::replace(&mut state.secret, secret);
        state.previous = Some((old, Instant::now() + ROTATION_GRACE));
    }
    state.expires = Instant::now() + granted;
    let status = json!({
        "active": true,
        "lastDeliveryAt": state.last_delivery_at.map(super::timestamp),
        "lastError": state.last_error,
    });
    let mut status = status;
    if let Some(since) = state.failed_since {
        status["failedSince"] = json!(super::timestamp(since));
    }
    let result = json!({
        "id": live.id,
        "refreshBefore": super::timestamp(SystemTime::now() + granted),
        "cursor": state.watermark,
        "truncated": false,
        "deliveryStatus": status,
    });
    drop(state);
    live.refreshed.notify_one();
    result
}

/// Where a new subscription's delivery starts: for an emitted type the buffer position (and its cursor), for a
/// checked type the cursor its first check gave; and whether events were skipped.
async fn starting_point(
    hub: &Hub,
    entry: &Entry,
    sub: &Subscription,
    ctx: &Context,
) -> Result<(run::Start, Option<String>, bool), Error> {
    match (&entry.def.source, &entry.buffer) {
        (Source::Emitted { .. }, Some(buffer)) => {
            let (after, skipped) = start(hub, buffer, sub.cursor.as_deref()).await?;
            let bounds = hub.settings().bounds;
            let read = buffer.read(bounds, after, sub.floor(), usize::MAX, |_| false);
            let truncated = skipped || read.truncated;
            Ok((run::Start::Buffer(read.start), Some(hub.cursor(read.start)), truncated))
        }
        (Source::Checked(check), _) => {
            let first = check(super::def::Check {
                context: ctx.clone(),
                arguments: sub.arguments(),
                cursor: sub.cursor.clone(),
                max_age: sub.max_age(),
                max_events: hub.settings().max_events,
            })
            .await?;
            let (cursor, truncated) = (first.cursor.clone(), first.truncated);
            Ok((run::Start::Checked(Box::new(first)), cursor, truncated))
        }
        (Source::Emitted { .. }, None) => Err(Error::internal("an emitted event type without its buffer")),
    }
}

/// `events/unsubscribe`.
pub(super) async fn unsubscribe(ctx: &Context, args: Arguments) -> Result<Value, Error> {
    super::methods::in_2026(ctx, "events/unsubscribe")?;
    let hub = hub(ctx)?;
    let registry = registry(&hub)?;
    let map = args.into_map();
    let name = map.get("name").and_then(Value::as_str).ok_or_else(|| Error::invalid_params("`name` is required"))?;
    let url = map
        .get("delivery")
        .and_then(|d| d.get("url"))
        .and_then(Value::as_str)
        .ok_or_else(|| Error::invalid_params("`delivery.url` is required"))?;
    let arguments = map.get("arguments").cloned().filter(|a| !a.is_null()).unwrap_or_else(|| json!({}));
    let principal = principal(ctx)?;
    let id = derive_id(&principal, url, name, &arguments);
    match registry.get(&id) {
        Some(sub) => {
            registry.remove(&sub);
            Ok(json!({}))
        }
        None => Err(Error::new(
            ErrorCode::NOT_FOUND,
            format!("no webhook subscription to `{name}` with these arguments delivers to {url:?} for this caller"),
        )
        .with_data(json!({ "kind": "subscription" }))),
    }
}

/// The error that ends a subscription whose type was removed.
pub(super) fn gone(name: &str) -> Error {
    not_found(name)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn secrets_are_whsec_and_24_to_64_bytes() {
        use base64::Engine as _;
        let of = |n: usize| format!("whsec_{}", base64::engine::general_purpose::STANDARD.encode(vec![7u8; n]));
        assert!(check_secret(Some(&of(24))).is_ok());
        assert!(check_secret(Some(&of(64))).is_ok());
        assert!(check_secret(Some(&of(23))).is_err());
        assert!(check_secret(Some(&of(65))).is_err());
        assert!(check_secret(Some("secret")).is_err());
        assert!(check_secret(None).is_err());
    }

    #[test]
    fn callback_urls_are_https_with_a_host_and_no_credentials() {
        assert!(check_url("https://hooks.example.com/a").is_ok());
        assert!(check_url("http://hooks.example.com/a").is_err());
        assert!(check_url("https://user:pw@hooks.example.com/a").is_err());
        assert!(check_url("hooks.example.com").is_err());
    }

    #[test]
    fn ids_follow_the_key() {
        let a = derive_id("alice", "https://h/x", "t", &json!({"a": 1}));
        assert_eq!(a, derive_id("alice", "https://h/x", "t", &json!({"a": 1})));
        assert_ne!(a, derive_id("bob", "https://h/x", "t", &json!({"a": 1})));
        assert_ne!(a, derive_id("alice", "https://h/x", "t", &json!({"a": 2})));
        assert!(a.starts_with("sub_") && a.len() == 20);
        assert_eq!(
            super::super::canonical(&json!({"b": [1, {"d": 1, "c": 2}], "a": null})),
            r#"{"a":null,"b":[1,{"c":2,"d":1}]}"#
        );
    }

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
