//! Webhook subscriptions on a server shared through Redis ([`RedisWebhooks`]): any instance answers
//! `events/subscribe` and `events/unsubscribe`, and one instance at a time delivers each subscription.
//!
//! - The instance that creates a subscription holds its lease from the start, and delivers it. It renews the lease every
//!   [`TICK`], reading the subscription back as it does: a refresh on another instance (a new TTL, a rotated
//!   secret) reaches it within a tick, and an unsubscribe or an expiry ends its delivery.
//! - After each event accepted (or given up on), the watermark is written to Redis with the delivery status, so
//!   `deliveryStatus` reads the same on every instance.
//! - Every instance looks each [`TICK`] for live subscriptions whose lease nobody holds (their instance died, or
//!   stopped), claims them, and delivers them from the stored watermark, after a `gap` envelope if the events
//!   after it are no longer kept. A lease lapses [`LEASE`] after its last renewal.
//! - Each event is delivered once per subscription with one exception: an event whose POST was accepted just as its
//!   instance died, before the watermark after it was written, is posted again by the next instance, under the same
//!   `webhook-id` (the event's id), which the Standard Webhooks scheme gives receivers to drop a repeat by.
//! - A checked type's subscription keeps its caller in Redis (who the server verified, not their token). The
//!   instance that creates it calls the checks with the subscriber's request context; an instance that takes it
//!   over calls them with a context of its own for that caller (`era::v2026::detached_context`: no stream, no
//!   questions), from the watermark, which is the upstream's cursor.

use std::collections::HashMap;
use std::sync::{Arc, Weak};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use serde_json::{json, Value};

use super::run::{self, Start};
use super::subscribe::{begin, created_answer, refreshed_answer, Asked};
use super::{exhausted, Registry, State, Sub, ROTATION_GRACE};
use crate::auth::AuthInfo;
use crate::base::sync::Unpoisoned;
use crate::context::Context;
use crate::events::def::{Check, Checked, Delivery, Source};
use crate::events::{hooks, methods, Hub, Subscribed};
use crate::redis::webhooks::{RedisWebhooks, Refused, StoredWebhook};
use crate::redis::Redis;
use crate::wire::error::Error;

/// How long a lease lasts after its last renewal: how soon another instance takes over a dead one's subscriptions.
const LEASE: Duration = Duration::from_secs(5);

/// How often a lease is renewed (and the subscription read back), and how often each instance looks for
/// subscriptions nobody delivers.
const TICK: Duration = Duration::from_secs(1);

/// How many subscriptions one instance takes over in one tick: a started instance does not take them all.
const CLAIMS_PER_TICK: usize = 64;

/// How long a subscription this instance could not take over is left to the others before it tries again.
const NOT_HERE_FOR: Duration = Duration::from_secs(60);

/// Where a shared server's webhook subscriptions live, and this instance's name in their leases.
pub(crate) struct Shared {
    store: RedisWebhooks,
    me: String,
}

/// Keeps `registry`'s subscriptions in `redis`, and starts looking for subscriptions to take over.
pub(crate) fn share(hub: &Arc<Hub>, registry: &Arc<Registry>, redis: &Redis) {
    let Ok(runtime) = tokio::runtime::Handle::try_current() else { return };
    let shared = Shared { store: RedisWebhooks::new(redis), me: crate::events::random_id() };
    if registry.shared.set(shared).is_ok() {
        runtime.spawn(take_over(Arc::downgrade(hub), Arc::downgrade(registry)));
    }
}

fn now_ms() -> u64 {
    ms_of(SystemTime::now())
}

fn ms_of(at: SystemTime) -> u64 {
    at.duration_since(UNIX_EPOCH).map_or(0, millis)
}

fn millis(d: Duration) -> u64 {
    d.as_millis().try_into().unwrap_or(u64::MAX)
}

fn time_of(ms: u64) -> SystemTime {
    UNIX_EPOCH + Duration::from_millis(ms)
}

/// The instant of a time in milliseconds since the Unix epoch (now, if it is past).
fn instant_of(ms: u64) -> Instant {
    Instant::now() + Duration::from_millis(ms.saturating_sub(now_ms()))
}

fn unavailable(e: impl std::fmt::Display) -> Error {
    Error::internal(format!("the webhook subscriptions are kept in Redis, which failed: {e}; try again"))
}

/// `events/subscribe` on a shared server.
pub(super) async fn subscribe(
    hub: &Arc<Hub>,
    registry: &Arc<Registry>,
    shared: &Shared,
    asked: Asked,
    ctx: &Context,
) -> Result<Value, Error> {
    if let Some(refreshed) = shared.refresh(registry, &asked).await? {
        return Ok(refreshed);
    }
    let (mine, all) = shared.store.counts(&asked.principal, now_ms()).await.map_err(unavailable)?;
    registry.admit(mine, all)?;
    shared.verify(registry, &asked).await?;
    let (start, cursor, truncated, ending) = begin(hub, &asked, ctx).await?;
    // The TTL runs from now, after the handshake: the answer's `refreshBefore` is the same time.
    let now = now_ms();
    let record = StoredWebhook {
        principal: asked.principal.clone(),
        url: asked.url.clone(),
        name: asked.sub.name.clone(),
        arguments: asked.arguments.to_string(),
        secret: asked.secret.clone(),
        expires_ms: now.saturating_add(millis(asked.granted)),
        watermark: cursor.clone(),
        caller: matches!(asked.entry.def.source, Source::Checked(_)).then(|| caller_of(ctx)).flatten(),
        ..StoredWebhook::default()
    };
    let limits = (registry.settings.per_principal, registry.settings.total);
    let created = shared.store.create((&asked.id, &record), now, limits, (&shared.me, LEASE)).await;
    match created.map_err(unavailable)? {
        Ok(()) => {}
        // Subscribed meanwhile by the same key (on another instance): this one is a refresh.
        Err(Refused::Exists) => {
            let refreshed = shared.refresh(registry, &asked).await?;
            return refreshed.ok_or_else(|| Error::internal("the webhook subscription vanished; try again"));
        }
        Err(Refused::PerPrincipal) => return Err(exhausted(registry.settings.per_principal)),
        Err(Refused::Total) => return Err(exhausted(registry.settings.total)),
    }
    // Created with its lease held here: delivered here.
    let answer = created_answer(&asked.id, asked.granted, cursor, truncated);
    let state = state_of(&record);
    let sub = Sub::new(asked.id, (asked.principal, asked.url), asked.arguments, asked.entry, state);
    deliver(hub, registry, sub, start, ending);
    Ok(answer)
}

impl Shared {
    /// Refreshes a live subscription in Redis (and here, if this instance delivers it): the answer, or `None` if
    /// it does not live.
    async fn refresh(&self, registry: &Registry, asked: &Asked) -> Result<Option<Value>, Error> {
        let now = now_ms();
        let expires = now.saturating_add(millis(asked.granted));
        let grace = now.saturating_add(millis(ROTATION_GRACE));
        let refreshed = self.store.refresh(&asked.id, &asked.principal, &asked.secret, expires, grace).await;
        let Some(stored) = refreshed.map_err(unavailable)? else { return Ok(None) };
        if let Some(live) = registry.get(&asked.id) {
            sync(&live, &stored);
        }
        let suspended = stored.suspended_since_ms.is_some();
        let status = (
            stored.delivered_at_ms.map(time_of),
            stored.error.as_deref(),
            stored.failed_since_ms.map(time_of),
            !suspended,
        );
        Ok(Some(refreshed_answer(&asked.id, asked.granted, stored.watermark.as_deref(), status)))
    }

    /// Verifies the endpoint unless it is allow-listed or was verified for this principal (on any instance).
    async fn verify(&self, registry: &Registry, asked: &Asked) -> Result<(), Error> {
        if registry.is_verified(&asked.principal, &asked.url) {
            return Ok(());
        }
        if self.store.is_verified(&asked.principal, &asked.url).await.map_err(unavailable)? {
            return Ok(());
        }
        registry.confirm(&asked.url, &asked.id, &asked.secret).await?;
        let ttl = registry.settings.verification_ttl;
        self.store.mark_verified(&asked.principal, &asked.url, ttl).await.map_err(unavailable)
    }

    /// `events/unsubscribe`: whether it lived.
    pub(super) async fn remove(&self, id: &str, principal: &str) -> Result<bool, Error> {
        self.store.remove(id, principal).await.map_err(unavailable)
    }

    /// Marks subscription `id` terminated with `error`, for the instance that delivers it (or the next one to
    /// claim it) to end it: whether it exists.
    pub(super) async fn terminate(&self, id: &str, error: &Error) -> bool {
        let text = serde_json::to_string(error).unwrap_or_default();
        match self.store.update(id, &[("terminated", text)]).await {
            Ok(found) => found,
            Err(e) => {
                tracing::warn!(subscription = %id, error = %e, "a webhook subscription's termination could not reach Redis");
                false
            }
        }
    }

    /// Writes `sub`'s watermark and delivery status.
    pub(super) async fn persist(&self, sub: &Sub) {
        let record = {
            let state = sub.state.locked();
            StoredWebhook {
                watermark: state.watermark.clone(),
                delivered_at_ms: state.last_delivery_at.map(ms_of),
                error: state.last_error.clone(),
                failed_since_ms: state.failed_since.map(ms_of),
                suspended_since_ms: state.suspended_since.map(ms_of),
                ..StoredWebhook::default()
            }
        };
        if let Err(e) = self.store.update(&sub.id, &record.status()).await {
            tracing::warn!(subscription = %sub.id, error = %e, "a webhook's watermark could not be kept in Redis");
        }
    }

    /// `sub`'s delivery ended here: removed for good, or its lease let go for another instance.
    pub(super) async fn ended(&self, sub: &Sub, for_good: bool) {
        let done = match for_good {
            true => self.store.remove(&sub.id, &sub.principal).await.map(|_| ()),
            false => self.store.release(&sub.id, &self.me).await,
        };
        if let Err(e) = done {
            tracing::warn!(subscription = %sub.id, error = %e, "a webhook subscription's end could not reach Redis");
        }
    }
}

/// What a subscription read from Redis changes here.
fn state_of(stored: &StoredWebhook) -> State {
    let mut state = State::new(stored.secret.clone(), expiry(stored), stored.watermark.clone());
    state.expires_ms = stored.expires_ms;
    state.previous = stored.previous.clone().map(|(secret, until)| (secret, instant_of(until)));
    state.last_delivery_at = stored.delivered_at_ms.map(time_of);
    state.last_error = stored.error.clone();
    state.failed_since = stored.failed_since_ms.map(time_of);
    state
}

/// When this instance stops delivering a subscription on its own: a lease after its expiry in Redis, whose passing
/// the lease's renewal sees first.
fn expiry(stored: &StoredWebhook) -> Instant {
    instant_of(stored.expires_ms) + LEASE
}

/// The error a subscription was terminated with on another instance, if it was.
fn terminated(stored: &StoredWebhook) -> Option<Error> {
    stored.terminated.as_deref().and_then(|text| serde_json::from_str(text).ok())
}

/// A refresh read back: the secrets and the expiry; or its termination.
fn sync(sub: &Sub, stored: &StoredWebhook) {
    if let Some(error) = terminated(stored) {
        sub.ended.end(error);
    }
    let mut state = sub.state.locked();
    state.secret = stored.secret.clone();
    state.previous = stored.previous.clone().map(|(secret, until)| (secret, instant_of(until)));
    // Moved by a refresh (on any instance): compared as Redis holds it, not as the instant it maps to here.
    let moved = state.expires_ms != stored.expires_ms;
    state.expires = expiry(stored);
    state.expires_ms = stored.expires_ms;
    let suspended = state.suspended_since.is_some();
    drop(state);
    if moved {
        sub.refreshed.notify_one();
        // Refreshed on another instance: a suspended delivery resumes.
        if suspended {
            sub.resumed.notify_one();
        }
    }
}

/// Starts delivering `sub` here, and renewing its lease while it is delivered.
fn deliver(hub: &Arc<Hub>, registry: &Arc<Registry>, sub: Arc<Sub>, start: Start, ending: hooks::Ending) {
    registry.subs.locked().insert(sub.id.clone(), sub.clone());
    tokio::spawn(renew(Arc::downgrade(registry), sub.clone()));
    tokio::spawn(run::deliver(hub.clone(), registry.clone(), sub, start, ending));
}

/// Renews `sub`'s lease every tick, and reads the subscription back, until its delivery ends; ends it when the
/// lease is lost, the subscription is gone, or Redis has not answered for a lease's time (another instance may
/// deliver it by then).
async fn renew(registry: Weak<Registry>, sub: Arc<Sub>) {
    let mut renewed = Instant::now();
    loop {
        tokio::select! {
            () = sub.stop.cancelled() => return,
            () = tokio::time::sleep(TICK) => {}
        }
        let Some(registry) = registry.upgrade() else { return sub.stop.cancel() };
        let Some(shared) = registry.shared.get() else { return };
        match shared.store.renew(&sub.id, &shared.me, LEASE).await {
            Ok(Some(stored)) => {
                renewed = Instant::now();
                sync(&sub, &stored);
            }
            Ok(None) => return sub.stop.cancel(),
            Err(e) if renewed.elapsed() >= LEASE => {
                tracing::warn!(subscription = %sub.id, error = %e, "a webhook's lease could not be renewed; its delivery stops here");
                return sub.stop.cancel();
            }
            Err(_) => {}
        }
    }
}

/// Every tick, claims the live subscriptions nobody delivers and delivers them here.
async fn take_over(hub: Weak<Hub>, registry: Weak<Registry>) {
    let mut tick = tokio::time::interval(TICK);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    // The subscriptions this instance could not take over (a type it does not know, during a rollout of a new
    // version), left to the others until then: said once, not claimed and let go every tick.
    let mut not_here: HashMap<String, Instant> = HashMap::new();
    loop {
        tick.tick().await;
        let (Some(hub), Some(registry)) = (hub.upgrade(), registry.upgrade()) else { return };
        let Some(shared) = registry.shared.get() else { return };
        let unclaimed = match shared.store.unclaimed(now_ms()).await {
            Ok(ids) => ids,
            Err(e) => {
                tracing::debug!(error = %e, "could not look for webhook subscriptions to deliver");
                continue;
            }
        };
        let now = Instant::now();
        not_here.retain(|_, until| *until > now);
        let candidates: Vec<String> = unclaimed
            .into_iter()
            .filter(|id| registry.get(id).is_none() && !not_here.contains_key(id))
            .take(CLAIMS_PER_TICK)
            .collect();
        for id in candidates {
            match shared.store.claim(&id, &shared.me, LEASE).await {
                Ok(Some(stored)) => {
                    let known = hub.entry(&stored.name).is_some();
                    if let Err(e) = resume(&hub, &registry, id.clone(), stored).await {
                        let _ = shared.store.release(&id, &shared.me).await;
                        if known {
                            tracing::warn!(subscription = %id, error = %e, "a webhook subscription could not be taken over");
                        } else {
                            tracing::warn!(
                                subscription = %id,
                                error = %e,
                                "a webhook subscription of a type this instance does not know is left to the others"
                            );
                            not_here.insert(id, now + NOT_HERE_FOR);
                        }
                    }
                }
                Ok(None) => {}
                Err(e) => tracing::debug!(subscription = %id, error = %e, "could not claim a webhook subscription"),
            }
        }
    }
}

/// Delivers here a subscription claimed from Redis, from its watermark.
async fn resume(hub: &Arc<Hub>, registry: &Arc<Registry>, id: String, stored: StoredWebhook) -> Result<(), Error> {
    let entry = hub.entry(&stored.name).ok_or_else(|| methods::not_found(&stored.name))?;
    let arguments: Value = serde_json::from_str(&stored.arguments).unwrap_or_else(|_| json!({}));
    let subscribed = Subscribed {
        id: id.clone(),
        name: stored.name.clone(),
        arguments: arguments.clone(),
        principal: Some(stored.principal.clone()),
        delivery: Delivery::Webhook,
    };
    // Terminated while nobody delivered it, or its caller's access is refused now: only the `terminated` envelope
    // is posted.
    let refused = match terminated(&stored) {
        Some(error) => Some(error),
        None => match hooks::authorized(&entry, &subscribed).await {
            Err(e) if hooks::ends_subscription(&e) => Some(e),
            refused => refused.map(|()| None)?,
        },
    };
    if let Some(error) = refused {
        let sub = Sub::new(id, (stored.principal.clone(), stored.url.clone()), arguments, entry, state_of(&stored));
        sub.ended.end(error);
        deliver(hub, registry, sub, Start::Ended, hooks::Ending::none());
        return Ok(());
    }
    let start = match (&entry.def.source, &entry.buffer) {
        (Source::Emitted { .. }, Some(buffer)) => {
            let (after, gap) = methods::start(hub, buffer, stored.watermark.as_deref()).await?;
            Start::Buffer { after, gap }
        }
        (Source::Checked(check), _) => {
            // Checked for the caller who subscribed, from the watermark; bounded, as the lease is not renewed
            // until delivery starts.
            let server = hub.server.get().and_then(Weak::upgrade).map(|inner| crate::Server { inner });
            let server = server.ok_or_else(|| Error::internal("the server is gone"))?;
            let caller = stored.caller.as_deref().and_then(caller_from).map(Arc::new);
            let context = crate::era::v2026::detached_context(&server, caller);
            let asked = Check {
                context: context.clone(),
                arguments: arguments.clone(),
                cursor: stored.watermark.clone(),
                max_age: None,
                max_events: run::BATCH,
            };
            // A first check that fails (or outlasts half a lease) is no first batch: the delivery loop checks again
            // at its pace, and ends the subscription as it would on an error that ends one.
            let first = match tokio::time::timeout(LEASE / 2, check(asked)).await {
                Ok(Ok(first)) => first,
                failed => {
                    tracing::debug!(subscription = %id, ?failed, "a webhook's first check after a takeover failed");
                    Checked::new(Vec::new(), stored.watermark.clone())
                }
            };
            let gap = first.truncated;
            Start::Checked { first: Box::new(first), context, from: stored.watermark.clone(), gap }
        }
        (Source::Emitted { .. }, None) => return Err(Error::internal("an emitted event type without its buffer")),
    };
    let ending = hooks::started(&entry, subscribed).await?;
    tracing::info!(subscription = %id, watermark = ?stored.watermark, "a webhook subscription is delivered here now");
    let state = state_of(&stored);
    let sub = Sub::new(id, (stored.principal, stored.url), arguments, entry, state);
    deliver(hub, registry, sub, start, ending);
    Ok(())
}

/// The caller of a request as Redis keeps it for a checked type's subscription: who the server verified, not
/// their token.
fn caller_of(ctx: &Context) -> Option<String> {
    let auth = ctx.meta().http.as_ref()?.auth.as_ref()?;
    let caller = json!({
        "subject": auth.subject,
        "scopes": auth.scopes,
        "claims": auth.claims,
        "issuer": auth.issuer,
        "clientId": auth.client_id,
        "expiresAt": auth.expires_at,
    });
    Some(caller.to_string())
}

/// The caller [`caller_of`] kept.
fn caller_from(text: &str) -> Option<AuthInfo> {
    let caller: Value = serde_json::from_str(text).ok()?;
    let text = |name: &str| caller[name].as_str().map(str::to_owned);
    Some(AuthInfo {
        subject: text("subject")?,
        scopes: serde_json::from_value(caller["scopes"].clone()).unwrap_or_default(),
        claims: caller["claims"].clone(),
        issuer: text("issuer"),
        client_id: text("clientId"),
        expires_at: caller["expiresAt"].as_u64(),
    })
}
