//! A real webhook receiver over HTTPS for the tests of webhook delivery (the MCP Events extension, SEP-3415):
//! `tests/python/webhook_receiver.py` in the interop venv ([`super::python::python`]), behind a fresh self-signed
//! certificate (rcgen) for `localhost` and `127.0.0.1`. It verifies each delivery's Standard Webhooks signature with
//! that project's own Python library (PyPI `standardwebhooks`), never with our code, records what it received and
//! answers as told (statuses per `webhook-id`, how to answer a verification envelope). Stopped when dropped.

use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::Value;

use super::install;

/// How long the receiver may take to listen, once the venv is made.
const START: Duration = Duration::from_secs(20);

/// How long [`WebhookReceiver::wait_for`] waits, and how often it looks.
const WAIT: Duration = Duration::from_secs(10);
const POLL: Duration = Duration::from_millis(50);

/// A running `webhook_receiver.py`.
pub struct WebhookReceiver {
    child: Child,
    /// Its port on 127.0.0.1.
    pub port: u16,
    /// Its certificate, PEM.
    certificate: String,
    /// Holds the certificate, its key and the port file; removed when dropped.
    dir: PathBuf,
    /// What it wrote to stderr so far (read by a thread of its own, so the pipe never fills).
    stderr: Arc<Mutex<Vec<u8>>>,
    /// A client that trusts its certificate, for `/_received` and `/_control`.
    http: reqwest::Client,
}

impl WebhookReceiver {
    /// Starts one that accepts deliveries signed with any of `secrets` (each `whsec_` and base64), and waits until
    /// it listens.
    pub fn start(secrets: &[&str]) -> WebhookReceiver {
        assert!(!secrets.is_empty(), "a webhook receiver needs a secret to verify deliveries with");
        let python = super::python::python();
        static NEXT: AtomicU64 = AtomicU64::new(0);
        let dir = install::target_dir().join(format!(
            "webhook-receiver-{}-{}",
            std::process::id(),
            NEXT.fetch_add(1, Ordering::Relaxed)
        ));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();

        let certified = rcgen::generate_simple_self_signed(vec!["localhost".to_owned(), "127.0.0.1".to_owned()])
            .expect("a self-signed certificate");
        let certificate = certified.cert.pem();
        let (cert, key, port_file) = (dir.join("cert.pem"), dir.join("key.pem"), dir.join("port"));
        std::fs::write(&cert, &certificate).unwrap();
        std::fs::write(&key, certified.signing_key.serialize_pem()).unwrap();

        let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/python/webhook_receiver.py");
        let mut command = Command::new(&python);
        command.arg(&script).arg("--cert").arg(&cert).arg("--key").arg(&key).arg("--port-file").arg(&port_file);
        for secret in secrets {
            command.args(["--secret", secret]);
        }
        let mut child = command
            .env("PYTHONUNBUFFERED", "1")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap_or_else(|e| panic!("could not start {}: {e}", script.display()));
        let stderr: Arc<Mutex<Vec<u8>>> = Arc::default();
        let mut pipe = child.stderr.take().unwrap();
        let sink = stderr.clone();
        std::thread::spawn(move || {
            let mut buffer = [0u8; 4096];
            while let Ok(n @ 1..) = pipe.read(&mut buffer) {
                sink.lock().unwrap().extend_from_slice(&buffer[..n]);
            }
        });
        let text = |stderr: &Arc<Mutex<Vec<u8>>>| String::from_utf8_lossy(&stderr.lock().unwrap()).into_owned();

        let deadline = Instant::now() + START;
        let port = loop {
            if let Some(port) = std::fs::read_to_string(&port_file).ok().and_then(|p| p.trim().parse::<u16>().ok()) {
                break port;
            }
            if let Some(status) = child.try_wait().unwrap() {
                // Let the reader thread take what the script wrote before it died.
                std::thread::sleep(Duration::from_millis(200));
                panic!("webhook_receiver.py exited ({status}) before listening; stderr:\n{}", text(&stderr));
            }
            if Instant::now() >= deadline {
                let _ = child.kill();
                let _ = child.wait();
                panic!("webhook_receiver.py did not listen within {START:?}; stderr:\n{}", text(&stderr));
            }
            std::thread::sleep(POLL);
        };

        let http = reqwest::Client::builder()
            .add_root_certificate(reqwest::Certificate::from_pem(certificate.as_bytes()).unwrap())
            .no_proxy()
            .timeout(WAIT)
            .build()
            .expect("a reqwest client");
        WebhookReceiver { child, port, certificate, dir, stderr, http }
    }

    /// `https://127.0.0.1:PORT{path}`: where to deliver (any path but `/_control` and `/_received`).
    pub fn url(&self, path: &str) -> String {
        format!("https://127.0.0.1:{}{path}", self.port)
    }

    /// Its certificate, PEM: what a server must trust to deliver here.
    pub fn certificate_pem(&self) -> String {
        self.certificate.clone()
    }

    /// What it wrote to stderr so far (its errors).
    pub fn stderr_text(&self) -> String {
        String::from_utf8_lossy(&self.stderr.lock().unwrap()).into_owned()
    }

    /// Every POST it received (but those to `/_control`), in order: each `{"path", "headers", "body", "raw",
    /// "verified", "status"}`, `headers` holding `webhook-id`, `webhook-timestamp`, `webhook-signature`,
    /// `x-mcp-subscription-id` and `content-type` (null where missing), `body` the parsed JSON or else the raw text,
    /// `status` what it answered.
    pub async fn received(&self) -> Vec<Value> {
        let response =
            self.http.get(self.url("/_received")).send().await.unwrap_or_else(|e| {
                panic!("GET /_received of the webhook receiver: {e}; stderr:\n{}", self.stderr_text())
            });
        let status = response.status();
        let text = response.text().await.expect("the body of /_received");
        assert!(status.is_success(), "GET /_received answered {status}: {text}");
        serde_json::from_str(&text).unwrap_or_else(|e| panic!("/_received is not a JSON list ({e}): {text}"))
    }

    /// Sets how it answers; `settings` is merged into what was set before. Keys: `"statuses": {"<webhook-id>": [500,
    /// 410, ...]}`, the statuses to answer in turn to the deliveries with that id (200 once they run out);
    /// `"challenge": "echo" | "wrong" | "status:NNN"`, how to answer a verification envelope (`echo` by default:
    /// its challenge back; `wrong`: `not-it`; else that status); `"default_status": NNN` (200 by default).
    pub async fn control(&self, settings: Value) {
        let response = self
            .http
            .post(self.url("/_control"))
            .header("content-type", "application/json")
            .body(settings.to_string())
            .send()
            .await
            .unwrap_or_else(|e| panic!("POST /_control of the webhook receiver: {e}; stderr:\n{}", self.stderr_text()));
        let status = response.status();
        assert_eq!(
            status,
            204,
            "POST /_control {settings} answered {status}: {}",
            response.text().await.unwrap_or_default()
        );
    }

    /// Polls [`received`](Self::received) until `check` holds for what was received, and returns that; panics
    /// naming `what` (and showing what was received) after 10 s.
    pub async fn wait_for(&self, what: &str, check: impl Fn(&[Value]) -> bool) -> Vec<Value> {
        self.wait_for_within(what, WAIT, check).await
    }

    /// [`wait_for`](Self::wait_for), for up to `within`.
    pub async fn wait_for_within(&self, what: &str, within: Duration, check: impl Fn(&[Value]) -> bool) -> Vec<Value> {
        let deadline = Instant::now() + within;
        loop {
            let received = self.received().await;
            if check(&received) {
                return received;
            }
            if Instant::now() >= deadline {
                panic!(
                    "the webhook receiver did not get {what} within {within:?}; received:\n{}\nstderr:\n{}",
                    serde_json::to_string_pretty(&received).unwrap(),
                    self.stderr_text()
                );
            }
            tokio::time::sleep(POLL).await;
        }
    }
}

impl Drop for WebhookReceiver {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}
