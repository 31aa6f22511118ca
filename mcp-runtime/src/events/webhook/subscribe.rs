//! `events/subscribe` and `events/unsubscribe`: what a request asks is checked here (the caller's principal, the
//! `https` URL, the `whsec_` secret, the TTL, the type and its arguments), then the subscription is refreshed or
//! created, in this instance's memory or, on a server shared through Redis, in Redis ([`super::shared`]).

use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime};

use serde::Deserialize;
use serde_json::{json, Value};
use sha2::{Digest, Sha256};

use super::run::{self, Start};
use super::{Registry, State, Sub, ROTATION_GRACE};
use crate::base::sync::Unpoisoned;
use crate::context::Context;
use crate::events::def::{Check, Delivery, Source};
use crate::events::hooks::{self, Ending};
use crate::events::methods::{hub, in_2026, start, subscription_of, Subscription};
use crate::events::{canonical, timestamp, Entry, Hub, Subscribed};
use crate::handler::tool::Arguments;
use crate::wire::error::{Error, ErrorCode};

/// `events/subscribe`'s `delivery`.
#[derive(Deserialize)]
struct Target {
    #[serde(default)]
    mode: Option<String>,
    url: String,
    #[serde(default)]
    secret: Option<String>,
}

/// What an `events/subscribe` asks, checked.
pub(super) struct Asked {
    pub id: String,
    pub principal: String,
    pub url: String,
    pub secret: String,
    pub granted: Duration,
    pub sub: Subscription,
    pub entry: Arc<Entry>,
    pub arguments: Value,
}

impl Asked {
    /// What its type's lifecycle hooks are told.
    pub(super) fn subscribed(&self) -> Subscribed {
        Subscribed {
            id: self.id.clone(),
            name: self.sub.name.clone(),
            arguments: self.arguments.clone(),
            principal: Some(self.principal.clone()),
            delivery: Delivery::Webhook,
        }
    }
}

/// `events/subscribe`.
pub(in crate::events) async fn subscribe(ctx: &Context, args: Arguments) -> Result<Value, Error> {
    in_2026(ctx, "events/subscribe")?;
    let hub = hub(ctx)?;
    let registry = registry(&hub)?;
    let asked = asked(&hub, &registry, ctx, args)?;
    // Asked on every subscribe, a refresh too (SEP-3415: a refresh after access was revoked is refused); a refusal
    // that ends a subscription ends the live one.
    if let Err(e) = hooks::authorized(&asked.entry, &asked.subscribed()).await {
        if hooks::ends_subscription(&e) {
            registry.terminate(&asked.id, e.clone()).await;
        }
        return Err(e);
    }
    #[cfg(feature = "redis")]
    if let Some(shared) = registry.shared.get() {
        return super::shared::subscribe(&hub, &registry, shared, asked, ctx).await;
    }
    if let Some(live) = registry.get(&asked.id).filter(|s| !s.stop.is_cancelled()) {
        return Ok(refresh(&live, asked.secret, asked.granted));
    }
    let (mine, all) = registry.held(&asked.principal);
    registry.admit(mine, all)?;
    if !registry.is_verified(&asked.principal, &asked.url) {
        registry.confirm(&asked.url, &asked.id, &asked.secret).await?;
        registry.mark_verified(&asked.principal, &asked.url);
    }
    let (start, cursor, truncated, ending) = begin(&hub, &asked, ctx).await?;
    let state = State::new(asked.secret.clone(), Instant::now() + asked.granted, cursor.clone());
    let granted = asked.granted;
    let created = Sub::new(asked.id, (asked.principal, asked.url), asked.arguments, asked.entry, state);
    registry.subs.locked().insert(created.id.clone(), created.clone());
    tokio::spawn(run::deliver(hub.clone(), registry.clone(), created.clone(), start, ending));
    Ok(created_answer(&created.id, granted, cursor, truncated))
}

fn registry(hub: &Hub) -> Result<Arc<Registry>, Error> {
    hub.webhooks.get().cloned().ok_or_else(|| {
        Error::new(ErrorCode::UNSUPPORTED, "this server does not deliver webhooks (Events::webhooks)")
            .with_data(json!({ "feature": "deliveryMode", "value": "webhook" }))
    })
}

/// Reads and checks what `events/subscribe` asks.
fn asked(hub: &Hub, registry: &Registry, ctx: &Context, args: Arguments) -> Result<Asked, Error> {
    let mut args = args.into_map();
    let target = args.remove("delivery").ok_or_else(|| Error::invalid_params("`delivery` is required"))?;
    let ttl = args.remove("ttlMs");
    let target: Target = serde_json::from_value(target)
        .map_err(|e| Error::invalid_params(format!("`delivery` must be {{mode, url, secret}}: {e}")))?;
    if target.mode.as_deref().is_some_and(|m| m != "webhook") {
        return Err(Error::invalid_params("`delivery.mode` must be \"webhook\""));
    }
    let (sub, entry) = subscription_of(hub, Value::Object(args), "events/subscribe", Delivery::Webhook)?;
    let principal = principal(ctx)?;
    check_url(&target.url)?;
    let secret = check_secret(target.secret.as_deref())?;
    let granted = registry.grant(ttl.as_ref())?;
    let arguments = sub.arguments();
    let id = derive_id(&principal, &target.url, &sub.name, &arguments);
    Ok(Asked { id, principal, url: target.url, secret, granted, sub, entry, arguments })
}

/// A new subscription's start: its type's `on_subscribe`, then where its delivery starts.
pub(super) async fn begin(
    hub: &Arc<Hub>,
    asked: &Asked,
    ctx: &Context,
) -> Result<(Start, Option<String>, bool, Ending), Error> {
    let ending = hooks::started(&asked.entry, asked.subscribed()).await?;
    let (start, cursor, truncated) = starting_point(hub, &asked.entry, &asked.sub, ctx).await?;
    Ok((start, cursor, truncated, ending))
}

/// The answer to a subscription just created.
pub(super) fn created_answer(id: &str, granted: Duration, cursor: Option<String>, truncated: bool) -> Value {
    json!({
        "id": id,
        "refreshBefore": timestamp(SystemTime::now() + granted),
        "cursor": cursor,
        "truncated": truncated,
    })
}

/// The answer to a subscription refreshed: its watermark and how its deliveries go.
pub(super) fn refreshed_answer(
    id: &str,
    granted: Duration,
    watermark: Option<&str>,
    (last_delivery, last_error, failed_since, active): (Option<SystemTime>, Option<&str>, Option<SystemTime>, bool),
) -> Value {
    let mut status = json!({
        "active": active,
        "lastDeliveryAt": last_delivery.map(timestamp),
        "lastError": last_error,
    });
    if let Some(since) = failed_since {
        status["failedSince"] = json!(timestamp(since));
    }
    json!({
        "id": id,
        "refreshBefore": timestamp(SystemTime::now() + granted),
        "cursor": watermark,
        "truncated": false,
        "deliveryStatus": status,
    })
}

/// A live subscription subscribed again: a new TTL and secret, delivery reactivated.
fn refresh(live: &Sub, secret: String, granted: Duration) -> Value {
    let mut state = live.state.locked();
    if state.secret != secret {
        let old = std::mem::replace(&mut state.secret, secret);
        state.previous = Some((old, Instant::now() + ROTATION_GRACE));
    }
    state.expires = Instant::now() + granted;
    // A suspended subscription answers `active: false`, and this refresh reactivates it.
    let suspended = state.suspended_since.is_some();
    let status = (state.last_delivery_at, state.last_error.as_deref(), state.failed_since, !suspended);
    let result = refreshed_answer(&live.id, granted, state.watermark.as_deref(), status);
    drop(state);
    live.refreshed.notify_one();
    if suspended {
        live.resumed.notify_one();
    }
    result
}

/// Where a new subscription's delivery starts: for an emitted type the buffer position (and its cursor), for a
/// checked type the cursor its first check gave; and whether events were skipped.
async fn starting_point(
    hub: &Hub,
    entry: &Entry,
    sub: &Subscription,
    ctx: &Context,
) -> Result<(Start, Option<String>, bool), Error> {
    match (&entry.def.source, &entry.buffer) {
        (Source::Emitted { .. }, Some(buffer)) => {
            let (after, skipped) = start(hub, buffer, sub.cursor.as_deref()).await?;
            let bounds = hub.settings().bounds;
            // Delivery starts at the first event the buffer holds after the cursor that is not older than
            // `maxAgeMs` (the SEP: from whichever is later): the ones before it are skipped, and the answer says so.
            let read = buffer.read(bounds, after, sub.floor(), 1, |_| true);
            let from = read.events.first().map_or(read.position, |first| first.position - 1);
            let truncated = skipped || read.truncated;
            Ok((Start::Buffer { after: from, gap: false }, Some(hub.cursor(from)), truncated))
        }
        (Source::Checked(check), _) => {
            let first = check(Check {
                context: ctx.clone(),
                arguments: sub.arguments(),
                cursor: sub.cursor.clone(),
                max_age: sub.max_age(),
                max_events: hub.settings().max_events,
            })
            .await?;
            let (cursor, truncated) = (first.cursor.clone(), first.truncated);
            let from = sub.cursor.clone();
            let start = Start::Checked { first: Box::new(first), context: ctx.clone(), from, gap: false };
            Ok((start, cursor, truncated))
        }
        (Source::Emitted { .. }, None) => Err(Error::internal("an emitted event type without its buffer")),
    }
}

/// `events/unsubscribe`.
pub(in crate::events) async fn unsubscribe(ctx: &Context, args: Arguments) -> Result<Value, Error> {
    in_2026(ctx, "events/unsubscribe")?;
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
    let local = registry.get(&id);
    #[cfg(feature = "redis")]
    let found = match registry.shared.get() {
        Some(shared) => shared.remove(&id, &principal).await? || local.is_some(),
        None => local.is_some(),
    };
    #[cfg(not(feature = "redis"))]
    let found = local.is_some();
    if let Some(sub) = local {
        registry.remove(&sub);
    }
    if found {
        return Ok(json!({}));
    }
    Err(Error::new(
        ErrorCode::NOT_FOUND,
        format!("no webhook subscription to `{name}` with these arguments delivers to {url:?} for this caller"),
    )
    .with_data(json!({ "kind": "subscription" })))
}

/// The subscription's id: derived from its key, stable across refreshes and restarts.
fn derive_id(principal: &str, url: &str, name: &str, arguments: &Value) -> String {
    let key = json!([principal, url, name, canonical(arguments)]).to_string();
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
    crate::events::methods::principal(ctx).ok_or_else(|| {
        Error::new(
            ErrorCode::FORBIDDEN,
            "webhook subscriptions need an authenticated caller (SEP-3415); this request carries no principal",
        )
        .with_data(json!({ "reason": "unauthenticated" }))
    })
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
        assert_eq!(canonical(&json!({"b": [1, {"d": 1, "c": 2}], "a": null})), r#"{"a":null,"b":[1,{"c":2,"d":1}]}"#);
    }
}
