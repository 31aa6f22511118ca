//! A real OpenTelemetry collector for the tests of OTLP export: Arize Phoenix (PyPI `arize-phoenix`, pinned in
//! `tests/python/phoenix-requirements.txt`), which takes OTLP over HTTP/protobuf at `/v1/traces` on its port and
//! answers what it stored at `/v1/projects/default/spans`. Debian has no OpenTelemetry collector and bookworm's
//! Prometheus (2.42) no OTLP receiver; Phoenix decodes what the OpenTelemetry SDK's exporter sends, so what the tests
//! read is what a collector made of our export, not what we think we sent.
//!
//! Installed on first use into its own venv, `target/phoenix-venv` (once across test binaries, `install::once`); run
//! as a child of the test on a free loopback port, its database in a fresh folder, its log in a file there; killed
//! when dropped.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;

use super::install;

/// How long `start` waits for `/healthz`: about 12 s on a 2-core machine (it opens its database and migrates it).
const READY_WITHIN: Duration = Duration::from_secs(90);

/// The venv's `phoenix`, installing the venv first if needed.
fn phoenix() -> PathBuf {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let requirements = root.join("tests/python/phoenix-requirements.txt");
    let wanted = std::fs::read_to_string(&requirements).expect("phoenix-requirements.txt");
    let venv = install::target_dir().join("phoenix-venv");
    install::once(&install::target_dir().join("phoenix-venv.installed"), &wanted, || {
        let _ = std::fs::remove_dir_all(&venv);
        let python = std::env::var("PYTHON").unwrap_or_else(|_| "python3".into());
        let ok = |c: &mut Command| {
            let out = c.output().unwrap_or_else(|e| panic!("could not run {c:?}: {e}"));
            assert!(out.status.success(), "{c:?} failed:\n{}", String::from_utf8_lossy(&out.stderr));
        };
        ok(Command::new(python).arg("-m").arg("venv").arg(&venv));
        ok(Command::new(venv.join("bin/python"))
            .args(["-m", "pip", "install", "--quiet", "--disable-pip-version-check", "-r"])
            .arg(&requirements));
    });
    venv.join("bin/phoenix")
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port()
}

/// A running Phoenix; killed when dropped.
pub struct Phoenix {
    child: Child,
    port: u16,
    dir: PathBuf,
    http: reqwest::Client,
}

impl Phoenix {
    /// Starts Phoenix on free loopback ports (HTTP, and gRPC which the tests do not use), its database in a fresh
    /// folder under `target/phoenix/`; returns once `/healthz` answers 200. Panics with its log if it does not.
    pub fn start() -> Phoenix {
        let binary = phoenix();
        // A port found free may be taken by another test before Phoenix binds it: then it exits, and another pair
        // of ports is tried.
        for _ in 0..3 {
            if let Some(phoenix) = Phoenix::try_start(&binary) {
                return phoenix;
            }
        }
        panic!("phoenix could not bind a free port in 3 tries");
    }

    /// One start on fresh ports: `None` when its port was taken under it.
    fn try_start(binary: &Path) -> Option<Phoenix> {
        let (port, grpc) = (free_port(), free_port());
        let dir = install::target_dir().join("phoenix").join(format!("{}-{port}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let log = std::fs::File::create(dir.join("phoenix.log")).unwrap();
        let child = Command::new(binary)
            .arg("serve")
            .env("PHOENIX_WORKING_DIR", &dir)
            .env("PHOENIX_HOST", "127.0.0.1")
            .env("PHOENIX_PORT", port.to_string())
            .env("PHOENIX_GRPC_PORT", grpc.to_string())
            .env("PHOENIX_TELEMETRY_ENABLED", "false")
            .stdin(Stdio::null())
            .stdout(log.try_clone().unwrap())
            .stderr(log)
            .spawn()
            .expect("start phoenix");
        let mut phoenix = Phoenix { child, port, dir, http: reqwest::Client::new() };
        let deadline = Instant::now() + READY_WITHIN;
        loop {
            let ready = std::net::TcpStream::connect(("127.0.0.1", port)).is_ok_and(|mut s| {
                use std::io::{Read, Write};
                let _ = s.set_read_timeout(Some(Duration::from_secs(2)));
                let asked = s.write_all(b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n");
                let mut answer = String::new();
                asked.is_ok() && s.read_to_string(&mut answer).is_ok() && answer.starts_with("HTTP/1.1 200")
            });
            if ready {
                return Some(phoenix);
            }
            if let Ok(Some(status)) = phoenix.child.try_wait() {
                let log = phoenix.log();
                if log.to_lowercase().contains("address already in use") {
                    return None;
                }
                panic!("phoenix exited ({status}) before it was ready:\n{log}");
            }
            assert!(Instant::now() < deadline, "phoenix not ready within {READY_WITHIN:?}:\n{}", phoenix.log());
            std::thread::sleep(Duration::from_millis(250));
        }
    }

    /// What a program's `OTEL_EXPORTER_OTLP_ENDPOINT` is set to (the exporter adds `/v1/traces`).
    pub fn endpoint(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }

    /// Its log so far.
    pub fn log(&self) -> String {
        std::fs::read_to_string(self.dir.join("phoenix.log")).unwrap_or_default()
    }

    /// Every span it stored (newest first), as its REST API gives them: `name`, `context.{trace_id,span_id}`,
    /// `parent_id`, `status_code`, `attributes` (flat, dotted keys).
    pub async fn spans(&self) -> Vec<Value> {
        let url = format!("http://127.0.0.1:{}/v1/projects/default/spans?limit=1000", self.port);
        let answer = match self.http.get(&url).send().await {
            Ok(r) if r.status().is_success() => {
                serde_json::from_slice::<Value>(&r.bytes().await.unwrap_or_default()).unwrap_or_default()
            }
            // No span yet: the project is made by the first export.
            _ => Value::Null,
        };
        answer["data"].as_array().cloned().unwrap_or_default()
    }

    /// The first span `found` picks, once Phoenix has it (within `within`); panics with its log otherwise.
    pub async fn span(&self, what: &str, within: Duration, found: impl Fn(&Value) -> bool) -> Value {
        let deadline = Instant::now() + within;
        loop {
            let spans = self.spans().await;
            if let Some(span) = spans.iter().find(|s| found(s)) {
                return span.clone();
            }
            assert!(
                Instant::now() < deadline,
                "phoenix has no span for {what} within {within:?}; it has:\n{spans:#?}\n{}",
                self.log()
            );
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
    }
}

impl Drop for Phoenix {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        if !std::thread::panicking() {
            let _ = std::fs::remove_dir_all(&self.dir);
        }
    }
}
