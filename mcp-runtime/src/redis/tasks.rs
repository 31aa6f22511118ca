//! [`RedisTaskStore`]: task records in Redis, each a JSON string under `{prefix}:task:{id}` that expires with its
//! TTL; a session's tasks in a sorted set by creation order; the live tasks of all instances counted in another,
//! scored by when each expires; each client's tasks in two more, for the per-client limits over all instances: its
//! stored tasks by when each expires, its running ones by when its instance's lease on it runs out (a task whose
//! instance died stops counting then), left once over. Creating and updating are Lua scripts, so the store's two
//! rules (a terminal status is final; writes ordered by `seq`) and its bounds hold across instances.

use ::redis::Script;

use super::Redis;
use crate::base::future::BoxFuture;
use crate::store::task::{ClientTasks, StoreError, TaskPage, TaskRecord, TaskStore};

/// The task store on a Redis ([`Redis::task_store`]).
#[derive(Clone)]
pub struct RedisTaskStore {
    redis: Redis,
    max_tasks: usize,
    create: Script,
    update: Script,
}

/// KEYS: the record, the live set, the session's set (or none), the serial counter, the client's stored and running
/// sets (or none). ARGV: the record (JSON), its id, when it expires (ms since the epoch; 0: never), now, the bound,
/// its lease (ms since the epoch; 0: none). Returns 1, or 0 when full.
const CREATE: &str = r#"
redis.call('ZREMRANGEBYSCORE', KEYS[2], '-inf', ARGV[4])
if redis.call('ZCARD', KEYS[2]) >= tonumber(ARGV[5]) then return 0 end
local expires = tonumber(ARGV[3])
if expires > 0 then
  redis.call('SET', KEYS[1], ARGV[1], 'PXAT', expires)
  redis.call('ZADD', KEYS[2], expires, ARGV[2])
else
  redis.call('SET', KEYS[1], ARGV[1])
  redis.call('ZADD', KEYS[2], '+inf', ARGV[2])
end
if KEYS[3] ~= '' then
  -- The session's set lives as long as its longest-lived task.
  local ttl = redis.call('PTTL', KEYS[3])
  local serial = redis.call('INCR', KEYS[4])
  redis.call('ZADD', KEYS[3], serial, ARGV[2])
  if expires == 0 then
    redis.call('PERSIST', KEYS[3])
  elseif ttl ~= -1 and ttl < expires - tonumber(ARGV[4]) then
    redis.call('PEXPIREAT', KEYS[3], expires)
  end
end
if KEYS[5] ~= '' then
  local ttl = redis.call('PTTL', KEYS[5])
  local lease = tonumber(ARGV[6])
  if expires > 0 then
    redis.call('ZADD', KEYS[5], expires, ARGV[2])
  else
    redis.call('ZADD', KEYS[5], '+inf', ARGV[2])
  end
  if lease > 0 then
    redis.call('ZADD', KEYS[6], lease, ARGV[2])
  elseif expires > 0 then
    redis.call('ZADD', KEYS[6], expires, ARGV[2])
  else
    redis.call('ZADD', KEYS[6], '+inf', ARGV[2])
  end
  -- The client's sets live as long as its longest-lived task.
  if expires == 0 then
    redis.call('PERSIST', KEYS[5])
    redis.call('PERSIST', KEYS[6])
  elseif ttl ~= -1 and ttl < expires - tonumber(ARGV[4]) then
    redis.call('PEXPIREAT', KEYS[5], expires)
    redis.call('PEXPIREAT', KEYS[6], expires)
  end
end
return 1
"#;

/// KEYS: the record, the client's running set (or none). ARGV: the new record (JSON), its status, its seq, its lease
/// (ms since the epoch; 0: none), its id. Returns 1 when written; 0 when the stored record is gone, terminal, or has
/// a `seq` at or above this one's.
const UPDATE: &str = r#"
local stored = redis.call('GET', KEYS[1])
if not stored then return 0 end
local record = cjson.decode(stored)
local status = record['status']
if status == 'completed' or status == 'failed' or status == 'cancelled' then return 0 end
if tonumber(record['seq']) >= tonumber(ARGV[3]) then return 0 end
redis.call('SET', KEYS[1], ARGV[1], 'KEEPTTL')
if KEYS[2] ~= '' then
  local now = ARGV[2]
  if now == 'completed' or now == 'failed' or now == 'cancelled' then
    redis.call('ZREM', KEYS[2], ARGV[5])
  elseif tonumber(ARGV[4]) > 0 then
    redis.call('ZADD', KEYS[2], 'XX', tonumber(ARGV[4]), ARGV[5])
  end
end
return 1
"#;

impl RedisTaskStore {
    pub(super) fn new(redis: &Redis, max_tasks: usize) -> RedisTaskStore {
        RedisTaskStore { redis: redis.clone(), max_tasks, create: Script::new(CREATE), update: Script::new(UPDATE) }
    }

    fn record_key(&self, id: &str) -> String {
        self.redis.key(&format!("task:{id}"))
    }

    fn session_key(&self, session: &str) -> String {
        self.redis.key(&format!("tasks:{session}"))
    }

    /// The client's stored and running sets.
    fn client_keys(&self, client: &str) -> (String, String) {
        (self.redis.key(&format!("client-tasks:{client}")), self.redis.key(&format!("client-running:{client}")))
    }

    fn unavailable(&self, e: ::redis::RedisError) -> StoreError {
        self.redis.unavailable(e)
    }
}

impl std::fmt::Debug for RedisTaskStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RedisTaskStore").field("redis", &self.redis).field("max_tasks", &self.max_tasks).finish()
    }
}

fn parse(text: Option<String>) -> Option<TaskRecord> {
    let record: TaskRecord = serde_json::from_str(&text?).ok()?;
    // Redis forgets it at its expiry, to the millisecond; this covers the clocks of two machines disagreeing.
    let live = record.expires_at_ms().is_none_or(|at| at > crate::base::now_ms());
    live.then_some(record)
}

impl TaskStore for RedisTaskStore {
    fn create(&self, record: TaskRecord) -> BoxFuture<'_, Result<(), StoreError>> {
        Box::pin(async move {
            let json = serde_json::to_string(&record).map_err(|e| StoreError::Unavailable(e.to_string()))?;
            let session = record.session.as_deref().map(|s| self.session_key(s)).unwrap_or_default();
            let (stored, running) = record.client.as_deref().map(|c| self.client_keys(c)).unwrap_or_default();
            let mut redis = self.redis.commands();
            let created: i64 = self
                .create
                .key(self.record_key(&record.id))
                .key(self.redis.key("tasks-live"))
                .key(session)
                .key(self.redis.key("tasks-serial"))
                .key(stored)
                .key(running)
                .arg(json)
                .arg(&record.id)
                .arg(record.expires_at_ms().unwrap_or(0))
                .arg(crate::base::now_ms())
                .arg(self.max_tasks)
                .arg(record.lease_until_ms.unwrap_or(0))
                .invoke_async(&mut redis)
                .await
                .map_err(|e| self.unavailable(e))?;
            match created {
                1 => Ok(()),
                _ => Err(StoreError::Full { limit: self.max_tasks }),
            }
        })
    }

    fn get<'a>(&'a self, id: &'a str) -> BoxFuture<'a, Result<Option<TaskRecord>, StoreError>> {
        Box::pin(async move {
            let mut redis = self.redis.commands();
            let text: Option<String> = ::redis::cmd("GET")
                .arg(self.record_key(id))
                .query_async(&mut redis)
                .await
                .map_err(|e| self.unavailable(e))?;
            Ok(parse(text))
        })
    }

    fn update(&self, record: TaskRecord) -> BoxFuture<'_, Result<bool, StoreError>> {
        Box::pin(async move {
            let json = serde_json::to_string(&record).map_err(|e| StoreError::Unavailable(e.to_string()))?;
            let mut redis = self.redis.commands();
            let running = record.client.as_deref().map(|c| self.client_keys(c).1).unwrap_or_default();
            let written: i64 = self
                .update
                .key(self.record_key(&record.id))
                .key(running)
                .arg(json)
                .arg(record.status.as_str())
                .arg(record.seq)
                .arg(record.lease_until_ms.unwrap_or(0))
                .arg(&record.id)
                .invoke_async(&mut redis)
                .await
                .map_err(|e| self.unavailable(e))?;
            Ok(written == 1)
        })
    }

    fn list<'a>(
        &'a self,
        session: &'a str,
        cursor: Option<&'a str>,
        limit: usize,
    ) -> BoxFuture<'a, Result<Option<TaskPage>, StoreError>> {
        Box::pin(async move {
            let start = match cursor {
                None => 0,
                Some(c) => match c.parse::<u64>() {
                    Ok(serial) => serial,
                    Err(_) => return Ok(None),
                },
            };
            let limit = limit.max(1);
            let key = self.session_key(session);
            let mut redis = self.redis.commands();
            let mut page = TaskPage::default();
            let mut from = start.to_string();
            // Expired tasks are skipped (and forgotten): read on until the page is full or the set ends.
            loop {
                let batch: Vec<(String, f64)> = ::redis::cmd("ZRANGE")
                    .arg(&key)
                    .arg(&from)
                    .arg("+inf")
                    .arg("BYSCORE")
                    .arg("LIMIT")
                    .arg(0)
                    .arg(limit + 1)
                    .arg("WITHSCORES")
                    .query_async(&mut redis)
                    .await
                    .map_err(|e| self.unavailable(e))?;
                if batch.is_empty() {
                    return Ok(Some(page));
                }
                let keys: Vec<String> = batch.iter().map(|(id, _)| self.record_key(id)).collect();
                let texts: Vec<Option<String>> =
                    ::redis::cmd("MGET").arg(&keys).query_async(&mut redis).await.map_err(|e| self.unavailable(e))?;
                let mut gone = Vec::new();
                for ((id, serial), text) in batch.iter().zip(texts) {
                    match parse(text) {
                        Some(record) if page.tasks.len() < limit => page.tasks.push(record),
                        Some(_) => {
                            page.next_cursor = Some((*serial as u64).to_string());
                            return Ok(Some(page));
                        }
                        None => gone.push(id.clone()),
                    }
                }
                if !gone.is_empty() {
                    let _: Result<i64, _> = ::redis::cmd("ZREM").arg(&key).arg(&gone).query_async(&mut redis).await;
                }
                let last = batch.last().map(|(_, s)| *s as u64).unwrap_or(start);
                if batch.len() <= limit {
                    return Ok(Some(page));
                }
                from = (last + 1).to_string();
            }
        })
    }

    fn client_tasks<'a>(&'a self, client: &'a str) -> BoxFuture<'a, Result<Option<ClientTasks>, StoreError>> {
        Box::pin(async move {
            let (stored, running) = self.client_keys(client);
            let now = crate::base::now_ms();
            let mut redis = self.redis.commands();
            let (stored, running): (usize, usize) = ::redis::pipe()
                .cmd("ZREMRANGEBYSCORE")
                .arg(&stored)
                .arg("-inf")
                .arg(now)
                .ignore()
                .cmd("ZCARD")
                .arg(&stored)
                .cmd("ZREMRANGEBYSCORE")
                .arg(&running)
                .arg("-inf")
                .arg(now)
                .ignore()
                .cmd("ZCARD")
                .arg(&running)
                .query_async(&mut redis)
                .await
                .map_err(|e| self.unavailable(e))?;
            Ok(Some(ClientTasks::new(running, stored)))
        })
    }
}
