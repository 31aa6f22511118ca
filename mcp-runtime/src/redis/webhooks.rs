//! [`RedisWebhooks`]: the Events extension's webhook subscriptions in Redis, so that any instance answers
//! `events/subscribe` and `events/unsubscribe` for them, and exactly one instance at a time delivers each.
//!
//! - A subscription is a hash, `{prefix}:webhooks:{id}`, that expires with it (`PEXPIREAT` at its expiry, moved by
//!   each refresh). Its fields: `principal`, `url`, `name`, `arguments` (JSON), `secret`, `previous` and
//!   `previous_until` (the secret a refresh replaced, signing beside the new one until then, milliseconds since the
//!   Unix epoch), `expires`, `watermark` (the cursor after everything delivered or given up on), the delivery
//!   status (`delivered_at`, `error`, `failed_since`, `suspended_since`) and, for a checked type, `caller` (JSON: who subscribed, as
//!   the server verified them, without their token), whom its checks are called for on any instance, and
//!   `terminated` (JSON: the error an instance that does not deliver it ended it with, for the one that does).
//! - Two sorted sets, scored by expiry, index the live ones: `{prefix}:webhooks:index` (every subscription, for the
//!   server's limit and for the instances looking for one to deliver) and `{prefix}:webhooks:principal:{hash}` (one
//!   principal's, for its limit, which expires with its last subscription, so that no key stays behind for a
//!   principal gone). Creation checks both limits and writes everything in one script.
//! - The instance that delivers a subscription holds its lease, `{prefix}:webhooks:{id}:lease` (its own id, with a
//!   TTL it renews while it delivers). An instance that dies stops renewing; once the lease lapses, another instance
//!   claims it and goes on from the stored watermark.
//! - A verified endpoint is `{prefix}:webhooks:verified:{hash}` (of the principal and URL), with the verification's
//!   TTL.

use std::collections::HashMap;
use std::time::Duration;

use ::redis::{AsyncCommands, Script};
use sha2::{Digest, Sha256};

use super::Redis;
use crate::store::task::StoreError;

/// Creates a subscription unless it exists, within the limits, with its lease held by the instance creating it.
/// KEYS: the hash, the index, the principal's index, the lease. ARGV: id, now, expiry (ms), the limit per
/// principal, the limit in all, the instance, the lease's TTL (ms), then the hash's fields and values. Returns 1
/// (created), 0 (it exists: refresh it), -1 (the principal's limit), -2 (the server's).
const CREATE: &str = r"
redis.call('ZREMRANGEBYSCORE', KEYS[2], '-inf', ARGV[2])
redis.call('ZREMRANGEBYSCORE', KEYS[3], '-inf', ARGV[2])
if redis.call('EXISTS', KEYS[1]) == 1 then return 0 end
if redis.call('ZCARD', KEYS[3]) >= tonumber(ARGV[4]) then return -1 end
if redis.call('ZCARD', KEYS[2]) >= tonumber(ARGV[5]) then return -2 end
redis.call('HSET', KEYS[1], unpack(ARGV, 8))
redis.call('PEXPIREAT', KEYS[1], ARGV[3])
redis.call('SET', KEYS[4], ARGV[6], 'PX', ARGV[7])
redis.call('ZADD', KEYS[2], ARGV[3], ARGV[1])
redis.call('ZADD', KEYS[3], ARGV[3], ARGV[1])
local last = redis.call('ZRANGE', KEYS[3], -1, -1, 'WITHSCORES')
redis.call('PEXPIREAT', KEYS[3], last[2])
return 1
";

/// Refreshes a subscription: its new expiry, and its new secret (the old one signing until the grace's end).
/// KEYS: the hash, the index, the principal's index. ARGV: id, secret, expiry, grace's end (ms). Returns the
/// hash's fields after, or nothing if it does not exist.
const REFRESH: &str = r"
if redis.call('EXISTS', KEYS[1]) == 0 then return false end
local old = redis.call('HGET', KEYS[1], 'secret')
if old ~= ARGV[2] then
  redis.call('HSET', KEYS[1], 'secret', ARGV[2], 'previous', old, 'previous_until', ARGV[4])
end
redis.call('HSET', KEYS[1], 'expires', ARGV[3])
redis.call('PEXPIREAT', KEYS[1], ARGV[3])
redis.call('ZADD', KEYS[2], ARGV[3], ARGV[1])
redis.call('ZADD', KEYS[3], ARGV[3], ARGV[1])
local last = redis.call('ZRANGE', KEYS[3], -1, -1, 'WITHSCORES')
redis.call('PEXPIREAT', KEYS[3], last[2])
return redis.call('HGETALL', KEYS[1])
";

/// Renews a lease held by this instance and reads the subscription. KEYS: the lease, the hash. ARGV: this
/// instance, the lease's TTL (ms). Returns the hash's fields, or nothing if the lease is another's or lapsed, or the
/// subscription is gone (then the lease is let go).
const RENEW: &str = r"
if redis.call('GET', KEYS[1]) ~= ARGV[1] then return false end
if redis.call('EXISTS', KEYS[2]) == 0 then
  redis.call('DEL', KEYS[1])
  return false
end
redis.call('PEXPIRE', KEYS[1], ARGV[2])
return redis.call('HGETALL', KEYS[2])
";

/// Claims a free lease of a live subscription. KEYS: the lease, the hash. ARGV: this instance, the TTL (ms).
/// Returns the hash's fields, or nothing.
const CLAIM: &str = r"
if redis.call('EXISTS', KEYS[2]) == 0 then return false end
if not redis.call('SET', KEYS[1], ARGV[1], 'NX', 'PX', ARGV[2]) then return false end
return redis.call('HGETALL', KEYS[2])
";

/// Lets a lease go if this instance holds it. KEYS: the lease. ARGV: this instance.
const RELEASE: &str = r"
if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end
return 0
";

/// Writes fields of a subscription that still exists (and deletes those given empty). KEYS: the hash. ARGV: fields
/// and values.
const UPDATE: &str = r"
if redis.call('EXISTS', KEYS[1]) == 0 then return 0 end
for i = 1, #ARGV, 2 do
  if ARGV[i + 1] == '' then
    redis.call('HDEL', KEYS[1], ARGV[i])
  else
    redis.call('HSET', KEYS[1], ARGV[i], ARGV[i + 1])
  end
end
return 1
";

/// A subscription as Redis keeps it.
#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) struct StoredWebhook {
    pub principal: String,
    pub url: String,
    pub name: String,
    /// JSON.
    pub arguments: String,
    pub secret: String,
    /// The replaced secret and until when (ms since the Unix epoch) it signs too.
    pub previous: Option<(String, u64)>,
    /// Milliseconds since the Unix epoch.
    pub expires_ms: u64,
    pub watermark: Option<String>,
    pub delivered_at_ms: Option<u64>,
    pub error: Option<String>,
    pub failed_since_ms: Option<u64>,
    /// Since when its delivery is suspended (ms since the Unix epoch), until a refresh.
    pub suspended_since_ms: Option<u64>,
    /// JSON: the caller who subscribed, as the server verified them (no token), for a checked type's checks on
    /// whichever instance delivers it.
    pub caller: Option<String>,
    /// JSON: the error it was terminated with, by an instance that does not deliver it, for the one that does.
    pub terminated: Option<String>,
}

impl StoredWebhook {
    fn fields(&self) -> Vec<(&'static str, String)> {
        let mut fields = vec![
            ("principal", self.principal.clone()),
            ("url", self.url.clone()),
            ("name", self.name.clone()),
            ("arguments", self.arguments.clone()),
            ("secret", self.secret.clone()),
            ("expires", self.expires_ms.to_string()),
        ];
        if let Some((previous, until)) = &self.previous {
            fields.push(("previous", previous.clone()));
            fields.push(("previous_until", until.to_string()));
        }
        if let Some(caller) = &self.caller {
            fields.push(("caller", caller.clone()));
        }
        fields.extend(self.status());
        fields
    }

    /// The fields that change as it is delivered: empty ones are deleted by [`RedisWebhooks::update`].
    pub(crate) fn status(&self) -> Vec<(&'static str, String)> {
        let text = |n: Option<u64>| n.map(|n| n.to_string()).unwrap_or_default();
        vec![
            ("watermark", self.watermark.clone().unwrap_or_default()),
            ("delivered_at", text(self.delivered_at_ms)),
            ("error", self.error.clone().unwrap_or_default()),
            ("failed_since", text(self.failed_since_ms)),
            ("suspended_since", text(self.suspended_since_ms)),
        ]
    }

    /// Read back from `HGETALL`: `None` if a field it needs is missing.
    fn read(mut fields: HashMap<String, String>) -> Option<StoredWebhook> {
        let number = |fields: &HashMap<String, String>, name: &str| fields.get(name).and_then(|v| v.parse().ok());
        let previous = match (fields.remove("previous"), number(&fields, "previous_until")) {
            (Some(secret), Some(until)) => Some((secret, until)),
            _ => None,
        };
        Some(StoredWebhook {
            expires_ms: number(&fields, "expires")?,
            delivered_at_ms: number(&fields, "delivered_at"),
            failed_since_ms: number(&fields, "failed_since"),
            suspended_since_ms: number(&fields, "suspended_since"),
            principal: fields.remove("principal")?,
            url: fields.remove("url")?,
            name: fields.remove("name")?,
            arguments: fields.remove("arguments")?,
            secret: fields.remove("secret")?,
            previous,
            watermark: fields.remove("watermark"),
            error: fields.remove("error"),
            caller: fields.remove("caller"),
            terminated: fields.remove("terminated"),
        })
    }
}

/// Why a subscription was not created.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Refused {
    /// It exists already (subscribed meanwhile): refresh it.
    Exists,
    /// The principal holds as many as it may.
    PerPrincipal,
    /// The server holds as many as it may.
    Total,
}

/// The webhook subscriptions on a Redis.
#[derive(Clone)]
pub(crate) struct RedisWebhooks {
    redis: Redis,
    create: Script,
    refresh: Script,
    renew: Script,
    claim: Script,
    release: Script,
    update: Script,
}

fn hashed(parts: &[&str]) -> String {
    let mut digest = Sha256::new();
    for part in parts {
        digest.update(part.as_bytes());
        digest.update([0]);
    }
    digest.finalize()[..12].iter().map(|b| format!("{b:02x}")).collect()
}

fn millis(d: Duration) -> u64 {
    d.as_millis().try_into().unwrap_or(u64::MAX)
}

type Fields = Option<HashMap<String, String>>;

impl RedisWebhooks {
    pub(crate) fn new(redis: &Redis) -> RedisWebhooks {
        RedisWebhooks {
            redis: redis.clone(),
            create: Script::new(CREATE),
            refresh: Script::new(REFRESH),
            renew: Script::new(RENEW),
            claim: Script::new(CLAIM),
            release: Script::new(RELEASE),
            update: Script::new(UPDATE),
        }
    }

    fn key(&self, id: &str) -> String {
        self.redis.key(&format!("webhooks:{id}"))
    }

    fn lease_key(&self, id: &str) -> String {
        self.redis.key(&format!("webhooks:{id}:lease"))
    }

    fn index_key(&self) -> String {
        self.redis.key("webhooks:index")
    }

    fn principal_key(&self, principal: &str) -> String {
        self.redis.key(&format!("webhooks:principal:{}", hashed(&[principal])))
    }

    fn verified_key(&self, principal: &str, url: &str) -> String {
        self.redis.key(&format!("webhooks:verified:{}", hashed(&[principal, url])))
    }

    fn failed(&self, e: impl std::fmt::Display) -> StoreError {
        self.redis.unavailable(e)
    }

    /// How many live subscriptions `principal` holds, and the server in all, at `now_ms`.
    pub(crate) async fn counts(&self, principal: &str, now_ms: u64) -> Result<(usize, usize), StoreError> {
        let after = format!("({now_ms}");
        let (mine, all): (usize, usize) = ::redis::pipe()
            .cmd("ZCOUNT")
            .arg(self.principal_key(principal))
            .arg(&after)
            .arg("+inf")
            .cmd("ZCOUNT")
            .arg(self.index_key())
            .arg(&after)
            .arg("+inf")
            .query_async(&mut self.redis.commands())
            .await
            .map_err(|e| self.failed(e))?;
        Ok((mine, all))
    }

    /// Creates subscription `id` within the limits, its lease held by `me` for `lease`.
    pub(crate) async fn create(
        &self,
        (id, sub): (&str, &StoredWebhook),
        now_ms: u64,
        (per_principal, total): (usize, usize),
        (me, lease): (&str, Duration),
    ) -> Result<Result<(), Refused>, StoreError> {
        let mut invocation = self.create.key(self.key(id));
        invocation.key(self.index_key()).key(self.principal_key(&sub.principal)).key(self.lease_key(id));
        invocation.arg(id).arg(now_ms).arg(sub.expires_ms).arg(per_principal).arg(total);
        invocation.arg(me).arg(millis(lease));
        for (field, value) in sub.fields().into_iter().filter(|(_, v)| !v.is_empty()) {
            invocation.arg(field).arg(value);
        }
        let created: i64 = invocation.invoke_async(&mut self.redis.commands()).await.map_err(|e| self.failed(e))?;
        Ok(match created {
            1 => Ok(()),
            0 => Err(Refused::Exists),
            -1 => Err(Refused::PerPrincipal),
            _ => Err(Refused::Total),
        })
    }

    /// Refreshes subscription `id` (see [`REFRESH`]); `None` if it does not live.
    pub(crate) async fn refresh(
        &self,
        id: &str,
        principal: &str,
        secret: &str,
        expires_ms: u64,
        grace_until_ms: u64,
    ) -> Result<Option<StoredWebhook>, StoreError> {
        let mut invocation = self.refresh.key(self.key(id));
        invocation.key(self.index_key()).key(self.principal_key(principal));
        invocation.arg(id).arg(secret).arg(expires_ms).arg(grace_until_ms);
        let fields: Fields = invocation.invoke_async(&mut self.redis.commands()).await.map_err(|e| self.failed(e))?;
        Ok(fields.and_then(StoredWebhook::read))
    }

    /// Removes subscription `id`; whether it lived.
    pub(crate) async fn remove(&self, id: &str, principal: &str) -> Result<bool, StoreError> {
        let (removed,): (u64,) = ::redis::pipe()
            .cmd("DEL")
            .arg(self.key(id))
            .cmd("DEL")
            .arg(self.lease_key(id))
            .ignore()
            .cmd("ZREM")
            .arg(self.index_key())
            .arg(id)
            .ignore()
            .cmd("ZREM")
            .arg(self.principal_key(principal))
            .arg(id)
            .ignore()
            .query_async(&mut self.redis.commands())
            .await
            .map_err(|e| self.failed(e))?;
        Ok(removed > 0)
    }

    /// Writes the fields that change as it is delivered (see [`StoredWebhook::status`]), or its termination, if it
    /// still lives: whether it did.
    pub(crate) async fn update(&self, id: &str, fields: &[(&'static str, String)]) -> Result<bool, StoreError> {
        let mut invocation = self.update.key(self.key(id));
        for (field, value) in fields {
            invocation.arg(*field).arg(value);
        }
        let written: i64 = invocation.invoke_async(&mut self.redis.commands()).await.map_err(|e| self.failed(e))?;
        Ok(written == 1)
    }

    /// The live subscriptions at `now_ms` whose lease nobody holds.
    pub(crate) async fn unclaimed(&self, now_ms: u64) -> Result<Vec<String>, StoreError> {
        let mut redis = self.redis.commands();
        let ids: Vec<String> =
            redis.zrangebyscore(self.index_key(), format!("({now_ms}"), "+inf").await.map_err(|e| self.failed(e))?;
        if ids.is_empty() {
            return Ok(ids);
        }
        let leases: Vec<String> = ids.iter().map(|id| self.lease_key(id)).collect();
        let held: Vec<Option<String>> = redis.mget(&leases).await.map_err(|e| self.failed(e))?;
        Ok(ids.into_iter().zip(held).filter(|(_, held)| held.is_none()).map(|(id, _)| id).collect())
    }

    /// Claims the lease of subscription `id` for `me`, for `ttl`: the subscription, if it was free.
    pub(crate) async fn claim(&self, id: &str, me: &str, ttl: Duration) -> Result<Option<StoredWebhook>, StoreError> {
        let mut invocation = self.claim.key(self.lease_key(id));
        invocation.key(self.key(id)).arg(me).arg(millis(ttl));
        let fields: Fields = invocation.invoke_async(&mut self.redis.commands()).await.map_err(|e| self.failed(e))?;
        Ok(fields.and_then(StoredWebhook::read))
    }

    /// Renews `me`'s lease of subscription `id` for `ttl`: the subscription as it is now, or `None` if the lease is
    /// no longer `me`'s or the subscription is gone.
    pub(crate) async fn renew(&self, id: &str, me: &str, ttl: Duration) -> Result<Option<StoredWebhook>, StoreError> {
        let mut invocation = self.renew.key(self.lease_key(id));
        invocation.key(self.key(id)).arg(me).arg(millis(ttl));
        let fields: Fields = invocation.invoke_async(&mut self.redis.commands()).await.map_err(|e| self.failed(e))?;
        Ok(fields.and_then(StoredWebhook::read))
    }

    /// Lets `me`'s lease of subscription `id` go, so that another instance claims it at once.
    pub(crate) async fn release(&self, id: &str, me: &str) -> Result<(), StoreError> {
        let mut invocation = self.release.key(self.lease_key(id));
        invocation.arg(me);
        let _: i64 = invocation.invoke_async(&mut self.redis.commands()).await.map_err(|e| self.failed(e))?;
        Ok(())
    }

    /// Whether `url` is verified for `principal`.
    pub(crate) async fn is_verified(&self, principal: &str, url: &str) -> Result<bool, StoreError> {
        self.redis.commands().exists(self.verified_key(principal, url)).await.map_err(|e| self.failed(e))
    }

    /// Records that `url` is verified for `principal`, for `ttl`.
    pub(crate) async fn mark_verified(&self, principal: &str, url: &str, ttl: Duration) -> Result<(), StoreError> {
        let key = self.verified_key(principal, url);
        let _: () = self.redis.commands().pset_ex(key, 1, millis(ttl)).await.map_err(|e| self.failed(e))?;
        Ok(())
    }
}
