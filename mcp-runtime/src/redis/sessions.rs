//! [`RedisSessionStore`]: 2025 sessions in Redis, each record a JSON string under `{prefix}:session:{key}` that
//! expires after the idle timeout unless the session is used; `{prefix}:sessions` scores every session by when it
//! expires, for the session cap over all instances.

use std::time::Duration;

use super::Redis;
use crate::base::future::BoxFuture;
use crate::store::session::{SessionRecord, SessionStore};
use crate::store::task::StoreError;

/// The session store on a Redis ([`Redis::session_store`]).
#[derive(Clone, Debug)]
pub struct RedisSessionStore {
    redis: Redis,
}

impl RedisSessionStore {
    pub(super) fn new(redis: &Redis) -> RedisSessionStore {
        RedisSessionStore { redis: redis.clone() }
    }

    fn key(&self, key: &str) -> String {
        self.redis.key(&format!("session:{key}"))
    }

    fn unavailable(&self, e: ::redis::RedisError) -> StoreError {
        self.redis.unavailable(e)
    }
}

/// When a session used now expires (milliseconds since the Unix epoch).
fn expiry(idle: Duration) -> u64 {
    crate::base::now_ms().saturating_add(millis(idle))
}

/// Milliseconds, at least one (Redis refuses an expiry of zero).
fn millis(idle: Duration) -> u64 {
    (idle.as_millis() as u64).max(1)
}

impl SessionStore for RedisSessionStore {
    fn save<'a>(
        &'a self,
        key: &'a str,
        record: &'a SessionRecord,
        idle: Duration,
    ) -> BoxFuture<'a, Result<(), StoreError>> {
        Box::pin(async move {
            let json = serde_json::to_string(record).map_err(|e| StoreError::Unavailable(e.to_string()))?;
            let mut redis = self.redis.commands();
            let _: () = ::redis::pipe()
                .cmd("SET")
                .arg(self.key(key))
                .arg(json)
                .arg("PX")
                .arg(millis(idle))
                .ignore()
                .cmd("ZADD")
                .arg(self.redis.key("sessions"))
                .arg(expiry(idle))
                .arg(key)
                .ignore()
                .query_async(&mut redis)
                .await
                .map_err(|e| self.unavailable(e))?;
            Ok(())
        })
    }

    fn load<'a>(&'a self, key: &'a str) -> BoxFuture<'a, Result<Option<SessionRecord>, StoreError>> {
        Box::pin(async move {
            let mut redis = self.redis.commands();
            let text: Option<String> = ::redis::cmd("GET")
                .arg(self.key(key))
                .query_async(&mut redis)
                .await
                .map_err(|e| self.unavailable(e))?;
            Ok(text.and_then(|t| serde_json::from_str(&t).ok()))
        })
    }

    fn touch<'a>(&'a self, key: &'a str, idle: Duration) -> BoxFuture<'a, Result<(), StoreError>> {
        Box::pin(async move {
            let mut redis = self.redis.commands();
            let _: () = ::redis::pipe()
                .cmd("PEXPIRE")
                .arg(self.key(key))
                .arg(millis(idle))
                .ignore()
                .cmd("ZADD")
                .arg(self.redis.key("sessions"))
                .arg("XX")
                .arg(expiry(idle))
                .arg(key)
                .ignore()
                .query_async(&mut redis)
                .await
                .map_err(|e| self.unavailable(e))?;
            Ok(())
        })
    }

    fn remove<'a>(&'a self, key: &'a str) -> BoxFuture<'a, Result<(), StoreError>> {
        Box::pin(async move {
            let mut redis = self.redis.commands();
            let _: () = ::redis::pipe()
                .cmd("DEL")
                .arg(self.key(key))
                .ignore()
                .cmd("ZREM")
                .arg(self.redis.key("sessions"))
                .arg(key)
                .ignore()
                .query_async(&mut redis)
                .await
                .map_err(|e| self.unavailable(e))?;
            Ok(())
        })
    }

    fn count(&self) -> BoxFuture<'_, Result<usize, StoreError>> {
        Box::pin(async move {
            let mut redis = self.redis.commands();
            let (_, live): (i64, usize) = ::redis::pipe()
                .cmd("ZREMRANGEBYSCORE")
                .arg(self.redis.key("sessions"))
                .arg("-inf")
                .arg(crate::base::now_ms())
                .cmd("ZCARD")
                .arg(self.redis.key("sessions"))
                .query_async(&mut redis)
                .await
                .map_err(|e| self.unavailable(e))?;
            Ok(live)
        })
    }
}
