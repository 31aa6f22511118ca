//! A real Prometheus for the tests that check what the server exports: Debian's `prometheus` (2.42 on bookworm) run
//! as a child of the test on a free loopback port, scraping the given targets' `/metrics` every second, its storage
//! in a fresh folder under `target/prometheus/`. Tests then ask it PromQL through its HTTP API, as a dashboard would:
//! what it stores is what a user's Prometheus would see of our text format, not what we think we wrote.
//!
//! The binary is the one on `PATH` (or `/usr/bin/prometheus`); when it is missing and the tests run as root with
//! `apt-get`, Debian's package `prometheus` is installed, once across test binaries (`install::once`, a stamp under
//! `target/`). Otherwise a test fails, naming the package to install: never skipped.
//!
//! The package's own service (systemd's, or the init script a `policy-rc.d` may let start) is never used: each
//! `Prometheus` is a process of its own with `--config.file`, `--storage.tsdb.path` and `--web.listen-address` on its
//! folder and port, so it neither reads `/etc/prometheus` nor writes `/var/lib/prometheus`, and runs as whoever runs
//! the tests (root included). Its log (stderr) goes to a file in its folder. It is killed when dropped; its folder is
//! removed then, unless the test failed (it keeps the configuration and the log it ran with).

use std::fs::File;
use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use serde_json::Value;

use super::install;

/// The `job` label of every series scraped (the one scrape job of the configuration).
pub const JOB: &str = "mcp";

/// How long `start` waits for `/-/ready`: a first start opens an empty TSDB, a matter of a second or two.
const READY_WITHIN: Duration = Duration::from_secs(30);

/// A port found free may be taken by another test before Prometheus binds it: that many tries.
const PORT_TRIES: usize = 3;

/// A running Prometheus; killed when dropped.
pub struct Prometheus {
    child: Child,
    port: u16,
    /// Its folder under `target/prometheus/`: `prometheus.yml`, `prometheus.log`, and the TSDB in `data/`.
    dir: PathBuf,
    /// The `host:port` it scrapes, as given to `start`.
    targets: Vec<String>,
    /// Just before it was spawned: a target's `lastScrape` must be later to count.
    started: SystemTime,
    http: reqwest::Client,
}

/// Why a start did not get to `/-/ready`.
enum NotReady {
    /// It exited: the port was taken under us (try another).
    PortTaken,
    /// It exited for another reason, or never answered: the message says which, with its log.
    Failed(String),
}

impl Prometheus {
    /// Starts Debian's prometheus on a free loopback port, scraping each `targets` entry (`127.0.0.1:PORT`, path
    /// `/metrics`) every 1 s (scrape interval, scrape timeout and evaluation interval all 1 s), with storage in a fresh
    /// folder under `target/prometheus/`; returns once its `/-/ready` answers 200. Panics with its log if it does not
    /// start within 30 s.
    ///
    /// It blocks the thread meanwhile (a second or two): a target served by a current-thread runtime on this thread
    /// misses the scrapes of that time, which `scraped` waits past.
    pub fn start(targets: &[String]) -> Prometheus {
        let binary = binary();
        for attempt in 1..=PORT_TRIES {
            let mut prometheus = Prometheus::spawn(&binary, targets);
            match prometheus.wait_ready(READY_WITHIN) {
                Ok(()) => return prometheus,
                Err(NotReady::PortTaken) if attempt < PORT_TRIES => continue,
                Err(NotReady::PortTaken) => {
                    panic!("prometheus found its port taken {PORT_TRIES} times:\n{}", prometheus.log_text())
                }
                Err(NotReady::Failed(why)) => panic!("{why}"),
            }
        }
        unreachable!("the last try returns or panics")
    }

    /// `http://127.0.0.1:PORT`.
    pub fn url(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }

    /// Runs an instant PromQL query through `/api/v1/query`; returns `data.result` (a JSON array: for a vector, one
    /// `{"metric": {labels}, "value": [time, "value"]}` per series). Panics naming the query and Prometheus's error on
    /// a non-success status.
    pub async fn query(&self, promql: &str) -> Value {
        let url = reqwest::Url::parse_with_params(&format!("{}/api/v1/query", self.url()), [("query", promql)])
            .unwrap_or_else(|e| panic!("a query URL for `{promql}`: {e}"));
        let (status, body) = self.get(url.as_str()).await;
        let answer: Value = serde_json::from_str(&body)
            .unwrap_or_else(|e| panic!("PromQL `{promql}`: prometheus answered {status} with no JSON ({e}): {body}"));
        if !status.is_success() || answer["status"] != "success" {
            panic!(
                "PromQL `{promql}` failed ({status}): {}: {}\n{}",
                answer["errorType"].as_str().unwrap_or("?"),
                answer["error"].as_str().unwrap_or(&body),
                self.log_text()
            );
        }
        answer["data"]["result"].clone()
    }

    /// Waits (up to `within`) until every target has been scraped successfully at least once since the start (in
    /// `/api/v1/targets`, each target `start` was given is there, and every active target has health `up` and a
    /// `lastScrape` after the start); panics with the targets' `lastError` and the log otherwise.
    ///
    /// Prometheus applies a new target list at most every 5 s, so the first scrape may take that long.
    pub async fn scraped(&self, within: Duration) {
        let deadline = Instant::now() + within;
        loop {
            let (status, body) = self.get(&format!("{}/api/v1/targets?state=active", self.url())).await;
            let answer: Value = serde_json::from_str(&body).unwrap_or(Value::Null);
            let active = answer["data"]["activeTargets"].as_array().cloned().unwrap_or_default();
            let waiting = self.not_yet_scraped(&active);
            if status.is_success() && waiting.is_empty() {
                return;
            }
            if Instant::now() >= deadline {
                panic!(
                    "prometheus did not scrape every target within {within:?}:\n{}\n/api/v1/targets ({status}): \
                     {body}\n{}",
                    waiting.join("\n"),
                    self.log_text()
                );
            }
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
    }

    /// Prometheus's own log so far (stderr), for failure messages.
    pub fn log(&self) -> String {
        std::fs::read_to_string(self.dir.join("prometheus.log")).unwrap_or_default()
    }

    /// Spawns one on a fresh port and folder, without waiting for it.
    fn spawn(binary: &Path, targets: &[String]) -> Prometheus {
        let port = super::redis::free_port();
        let dir = install::target_dir().join("prometheus").join(format!("{}-{port}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap_or_else(|e| panic!("could not create {}: {e}", dir.display()));
        let config = dir.join("prometheus.yml");
        std::fs::write(&config, configuration(targets))
            .unwrap_or_else(|e| panic!("could not write {}: {e}", config.display()));
        let log = File::create(dir.join("prometheus.log")).expect("create prometheus.log");
        let started = SystemTime::now();
        let child = Command::new(binary)
            .arg(format!("--config.file={}", config.display()))
            .arg(format!("--storage.tsdb.path={}", dir.join("data").display()))
            .arg(format!("--web.listen-address=127.0.0.1:{port}"))
            // Whatever a build takes as relative (upstream's defaults are `data/`, `consoles/`) lands here too.
            .current_dir(&dir)
            .stdin(Stdio::null())
            .stdout(log.try_clone().expect("clone the log file"))
            .stderr(log)
            .spawn()
            .unwrap_or_else(|e| panic!("could not start {}: {e}", binary.display()));
        let http = reqwest::Client::builder().timeout(Duration::from_secs(10)).build().expect("a reqwest client");
        Prometheus { child, port, dir, targets: targets.to_vec(), started, http }
    }

    /// Waits until `/-/ready` answers 200 (its TSDB open, its scrapes configured), or it exits.
    fn wait_ready(&mut self, within: Duration) -> Result<(), NotReady> {
        let deadline = Instant::now() + within;
        let address = SocketAddr::from(([127, 0, 0, 1], self.port));
        loop {
            if let Some(status) = self.exited() {
                let log = self.log();
                if log.contains("address already in use") {
                    return Err(NotReady::PortTaken);
                }
                return Err(NotReady::Failed(format!("prometheus exited at start ({status}):\n{}", self.log_text())));
            }
            if http_status(address, "/-/ready") == Some(200) {
                return Ok(());
            }
            if Instant::now() >= deadline {
                return Err(NotReady::Failed(format!(
                    "prometheus was not ready within {within:?}:\n{}",
                    self.log_text()
                )));
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// Its exit status, if it exited.
    fn exited(&mut self) -> Option<ExitStatus> {
        self.child.try_wait().unwrap_or_else(|e| panic!("could not check on prometheus: {e}"))
    }

    /// One line per target still waited for: missing from `active`, or not yet scraped successfully since the start.
    fn not_yet_scraped(&self, active: &[Value]) -> Vec<String> {
        let url = |target: &Value| target["scrapeUrl"].as_str().unwrap_or_default().to_owned();
        let missing = self
            .targets
            .iter()
            .filter(|t| !active.iter().any(|a| url(a) == format!("http://{t}/metrics")))
            .map(|t| format!("{t}: not among prometheus's active targets yet"));
        let started = self.started.duration_since(UNIX_EPOCH).expect("a clock after 1970").as_secs_f64();
        let unscraped = active
            .iter()
            .filter(|a| {
                let last = a["lastScrape"].as_str().and_then(unix_seconds).unwrap_or(0.0);
                a["health"] != "up" || last <= started
            })
            .map(|a| {
                format!(
                    "{}: health {}, last scrape {}, last error: {}",
                    url(a),
                    a["health"],
                    a["lastScrape"],
                    a["lastError"].as_str().unwrap_or("none")
                )
            });
        missing.chain(unscraped).collect()
    }

    /// A GET to Prometheus: its status and body; panics naming the URL and the log if it does not answer.
    async fn get(&self, url: &str) -> (reqwest::StatusCode, String) {
        let response = match self.http.get(url).send().await {
            Ok(response) => response,
            Err(e) => panic!("prometheus did not answer GET {url}: {e}\n{}", self.log_text()),
        };
        let status = response.status();
        let body = response.text().await.unwrap_or_else(|e| panic!("reading the answer to GET {url}: {e}"));
        (status, body)
    }

    /// The log with a header naming its folder (kept when a test fails), for failure messages.
    fn log_text(&self) -> String {
        format!("--- prometheus ({}) ---\n{}", self.dir.display(), self.log())
    }
}

impl Drop for Prometheus {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        // Kept when the test failed, for its configuration and log.
        if !std::thread::panicking() {
            let _ = std::fs::remove_dir_all(&self.dir);
        }
    }
}

/// `prometheus.yml`: every interval 1 s, so a test waits seconds, not the default minute; one job, `JOB`.
fn configuration(targets: &[String]) -> String {
    // A JSON array of strings is a YAML flow sequence: every address quoted.
    let targets = serde_json::to_string(targets).expect("targets as JSON");
    format!(
        "global:
  scrape_interval: 1s
  scrape_timeout: 1s
  evaluation_interval: 1s
scrape_configs:
  - job_name: {JOB}
    metrics_path: /metrics
    static_configs:
      - targets: {targets}
"
    )
}

/// The status of a plain HTTP/1.1 GET of `path` (no async runtime needed: `start` is synchronous), if it answers.
fn http_status(address: SocketAddr, path: &str) -> Option<u16> {
    let mut stream = TcpStream::connect_timeout(&address, Duration::from_secs(1)).ok()?;
    stream.set_read_timeout(Some(Duration::from_secs(2))).ok()?;
    let request = format!("GET {path} HTTP/1.1\r\nHost: {address}\r\nConnection: close\r\n\r\n");
    stream.write_all(request.as_bytes()).ok()?;
    let mut head = [0u8; 64];
    let read = stream.read(&mut head).ok()?;
    // `HTTP/1.1 200 OK`.
    String::from_utf8_lossy(&head[..read]).split_whitespace().nth(1)?.parse().ok()
}

/// Seconds since 1970 of an RFC 3339 time as Prometheus writes it (`2025-01-02T03:04:05.123456789Z`, or with an
/// offset such as `+02:00` in a local time zone); `None` if it is not one.
fn unix_seconds(stamp: &str) -> Option<f64> {
    let (date, rest) = stamp.split_once('T')?;
    let mut ymd = date.splitn(3, '-').map(str::parse::<i64>);
    let (year, month, day) = (ymd.next()?.ok()?, ymd.next()?.ok()?, ymd.next()?.ok()?);
    let (clock, offset) = match rest.strip_suffix('Z') {
        Some(clock) => (clock, 0),
        None => {
            let at = rest.rfind(['+', '-'])?;
            let (clock, zone) = rest.split_at(at);
            let (hours, minutes) = zone[1..].split_once(':')?;
            let seconds = hours.parse::<i64>().ok()? * 3600 + minutes.parse::<i64>().ok()? * 60;
            (clock, if zone.starts_with('-') { -seconds } else { seconds })
        }
    };
    let mut hms = clock.splitn(3, ':');
    let (hour, minute) = (hms.next()?.parse::<i64>().ok()?, hms.next()?.parse::<i64>().ok()?);
    let second: f64 = hms.next()?.parse().ok()?;
    let whole = days_from_civil(year, month, day) * 86_400 + hour * 3600 + minute * 60 - offset;
    Some(whole as f64 + second)
}

/// Days since 1970-01-01 of a date of the proleptic Gregorian calendar (Howard Hinnant's `days_from_civil`).
fn days_from_civil(year: i64, month: i64, day: i64) -> i64 {
    let year = if month <= 2 { year - 1 } else { year };
    let era = year.div_euclid(400);
    let year_of_era = year - era * 400;
    let day_of_year = (153 * ((month + 9) % 12) + 2) / 5 + day - 1;
    let day_of_era = year_of_era * 365 + year_of_era / 4 - year_of_era / 100 + day_of_year;
    era * 146_097 + day_of_era - 719_468
}

/// Where the program is: on `PATH`, else Debian's `/usr/bin/prometheus` (`PATH` may lack `/usr/bin` in a trimmed
/// environment).
fn find() -> Option<PathBuf> {
    let path = std::env::var_os("PATH").unwrap_or_default();
    std::env::split_paths(&path)
        .map(|dir| dir.join("prometheus"))
        .chain([PathBuf::from("/usr/bin/prometheus")])
        .find(|p| p.is_file())
}

/// Whether the tests run as root (`id -u` is 0): only then can they install the package.
fn running_as_root() -> bool {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    // `Uid: real effective saved fs`.
    status.lines().find_map(|l| l.strip_prefix("Uid:")).and_then(|ids| ids.split_whitespace().nth(1)) == Some("0")
}

/// The program's path, installing Debian's package first if it is missing and we may.
fn binary() -> PathBuf {
    if let Some(found) = find() {
        return found;
    }
    // An install that failed is not tried again by every test of this binary: they fail at once, saying why.
    static FAILED: std::sync::Mutex<Option<String>> = std::sync::Mutex::new(None);
    if let Some(why) = FAILED.lock().unwrap_or_else(|e| e.into_inner()).clone() {
        panic!("{why}");
    }
    let how = "`prometheus` is missing: install Debian's package `prometheus` (`apt-get install prometheus`), or run \
               the tests as root on a machine with apt-get, and they install it";
    let failed = |why: String| -> ! {
        *FAILED.lock().unwrap_or_else(|e| e.into_inner()) = Some(why.clone());
        panic!("{why}")
    };
    if !running_as_root() {
        failed(format!("{how} (not root here)"));
    }
    let Some(apt) = std::env::split_paths(&std::env::var_os("PATH").unwrap_or_default())
        .chain([PathBuf::from("/usr/bin")])
        .map(|dir| dir.join("apt-get"))
        .find(|p| p.is_file())
    else {
        failed(format!("{how} (no apt-get here)"))
    };
    let stamp = install::target_dir().join("prometheus.installed");
    // A stamp from an earlier install whose program is gone since: install again.
    if std::fs::read_to_string(&stamp).is_ok() && !stamp.with_extension("lock").exists() {
        let _ = std::fs::remove_file(&stamp);
    }
    let mut failure = None;
    install::once(&stamp, "apt-get install prometheus\n", || {
        if find().is_none() {
            failure = apt_install(&apt).err();
        }
    });
    match (find(), failure) {
        (Some(found), _) => found,
        (None, Some(why)) => failed(format!("{how}: {why}")),
        (None, None) => failed(format!("{how} (apt-get installed nothing that provides it)")),
    }
}

/// `apt-get install prometheus` without its recommends (prometheus-node-exporter); after `apt-get update` if the
/// package lists are too old or absent for it.
fn apt_install(apt: &Path) -> Result<(), String> {
    let install = ["install", "-y", "-qq", "--no-install-recommends", "prometheus"];
    install::apt_get(apt, &install).or_else(|first| {
        install::apt_get(apt, &["update", "-qq"])
            .and_then(|()| install::apt_get(apt, &install))
            .map_err(|e| format!("{first}\n{e}"))
    })
}
