//! The real reverse proxies users deploy in front of several instances: Debian's nginx (1.22) and HAProxy (2.6), run
//! as children of the test on a free loopback port, each with the configuration the repository ships in `deploy/`
//! (`nginx.conf`, `nginx-minimal.conf`, `haproxy.cfg`) in which only the addresses are replaced: the one it listens
//! on (`127.0.0.1:8000` there) and the three instances' (`127.0.0.1:8001`, `:8002`, `:8003`). Every placeholder must
//! be found, so the shipped files cannot drift from what the tests run.
//!
//! The binaries are the ones on `PATH` (or in `/usr/sbin`); when one is missing and the tests run as root with
//! `apt-get`, Debian's packages (`nginx`, `haproxy`) are installed, once across test binaries (`install::once`, a
//! stamp under `target/`). Otherwise a test fails, naming the package to install: never skipped.
//!
//! nginx runs in the foreground (`-g 'daemon off;'`) with `-p`/`-c` on a folder of its own under `target/proxies/`
//! (pid file, error log, access log, every temp path), never `/etc/nginx` or port 80: a main configuration written
//! by the test (one worker, an access log recording `$upstream_addr` for each request) includes the shipped file.
//! HAProxy runs with `-db` (foreground), its log (`log stdout`) to a file in its folder. Both are stopped when dropped.

use std::fs::File;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use super::install;

/// Which proxy, with which shipped configuration.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    /// nginx with `deploy/nginx.conf`: the configuration we recommend.
    Nginx,
    /// nginx with `deploy/nginx-minimal.conf`: an upstream group and a `proxy_pass`, nothing else.
    NginxMinimal,
    /// HAProxy with `deploy/haproxy.cfg`.
    Haproxy,
}

impl Kind {
    /// The shipped configuration, relative to the repository's root.
    pub fn shipped(self) -> &'static str {
        match self {
            Kind::Nginx => "deploy/nginx.conf",
            Kind::NginxMinimal => "deploy/nginx-minimal.conf",
            Kind::Haproxy => "deploy/haproxy.cfg",
        }
    }

    /// Whether the configuration sets `X-Forwarded-For` (the instances behind it then run with `--trust-forwarded`,
    /// as deploying.md says).
    pub fn forwards_the_client(self) -> bool {
        matches!(self, Kind::Nginx | Kind::Haproxy)
    }
}

/// The address the shipped files listen on, replaced by the test's port.
const LISTEN: &str = "127.0.0.1:8000";
/// The instances' addresses in the shipped files, replaced by the test's instances, in order.
const UPSTREAMS: [&str; 3] = ["127.0.0.1:8001", "127.0.0.1:8002", "127.0.0.1:8003"];

/// A running proxy; stopped when dropped.
pub struct Proxy {
    pub kind: Kind,
    /// `http://127.0.0.1:PORT/mcp`.
    pub url: String,
    /// `127.0.0.1:PORT`.
    pub authority: String,
    child: Option<Child>,
    /// Its folder under `target/proxies/` (configuration, logs, pid file, temp files).
    dir: PathBuf,
    /// The instances, in the order of the shipped file's servers.
    upstreams: Vec<String>,
    /// HAProxy's server names (`mcp1`, ...), each with its instance's index.
    server_names: Vec<(String, usize)>,
}

/// One request as the proxy logged it (when it ended: a stream still open is not there yet).
#[derive(Clone, Debug)]
pub struct Logged {
    /// The instance that answered (its index), if any did: after retries, the last one tried.
    pub upstream: Option<usize>,
    /// Every instance tried, in order (nginx; HAProxy logs only the last).
    pub tried: Vec<usize>,
    pub status: u16,
    pub method: String,
    pub path: String,
    /// The whole log line.
    pub line: String,
}

impl Proxy {
    /// Starts a proxy of `kind` in front of `upstreams` (three `host:port`), and waits until it listens.
    pub fn start(kind: Kind, upstreams: &[String]) -> Proxy {
        assert_eq!(upstreams.len(), UPSTREAMS.len(), "the shipped configurations name three instances");
        let port = super::redis::free_port();
        let authority = format!("127.0.0.1:{port}");
        let dir = install::target_dir().join("proxies").join(format!(
            "{}-{}-{port}",
            match kind {
                Kind::Nginx => "nginx",
                Kind::NginxMinimal => "nginx-minimal",
                Kind::Haproxy => "haproxy",
            },
            std::process::id()
        ));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let shipped = Path::new(env!("CARGO_MANIFEST_DIR")).join(kind.shipped());
        let text = std::fs::read_to_string(&shipped).unwrap_or_else(|e| panic!("{}: {e}", shipped.display()));
        let config = with_addresses(kind.shipped(), &text, &authority, upstreams);
        // HAProxy's `server NAME ADDRESS ...` lines: which name is which instance.
        let server_names = config
            .lines()
            .filter_map(|l| {
                let mut words = l.split_whitespace();
                (words.next()? == "server").then_some(())?;
                let (name, address) = (words.next()?, words.next()?);
                Some((name.to_owned(), upstreams.iter().position(|u| u == address)?))
            })
            .collect();
        let mut proxy = Proxy {
            kind,
            url: format!("http://{authority}/mcp"),
            authority,
            child: None,
            dir,
            upstreams: upstreams.to_vec(),
            server_names,
        };
        let dir = &proxy.dir;
        let child = match kind {
            Kind::Nginx | Kind::NginxMinimal => {
                std::fs::write(dir.join("mcp.conf"), config).unwrap();
                for temp in ["client_body", "proxy", "fastcgi", "uwsgi", "scgi"] {
                    std::fs::create_dir_all(dir.join(format!("{temp}_temp"))).unwrap();
                }
                std::fs::write(dir.join("nginx-main.conf"), nginx_main(dir)).unwrap();
                Command::new(binary(Tool::Nginx))
                    .arg("-p")
                    .arg(format!("{}/", dir.display()))
                    .arg("-c")
                    .arg(dir.join("nginx-main.conf"))
                    .arg("-e")
                    .arg(dir.join("error.log"))
                    .args(["-g", "daemon off;"])
                    .stdin(Stdio::null())
                    .stdout(File::create(dir.join("stdout.log")).unwrap())
                    .stderr(File::create(dir.join("stderr.log")).unwrap())
                    .spawn()
                    .unwrap_or_else(|e| panic!("could not start nginx: {e}"))
            }
            Kind::Haproxy => {
                std::fs::write(dir.join("haproxy.cfg"), config).unwrap();
                Command::new(binary(Tool::Haproxy))
                    .arg("-db")
                    .arg("-f")
                    .arg(dir.join("haproxy.cfg"))
                    .stdin(Stdio::null())
                    .stdout(File::create(dir.join("stdout.log")).unwrap())
                    .stderr(File::create(dir.join("stderr.log")).unwrap())
                    .spawn()
                    .unwrap_or_else(|e| panic!("could not start haproxy: {e}"))
            }
        };
        proxy.child = Some(child);
        proxy.wait_listening(Duration::from_secs(20));
        proxy
    }

    fn wait_listening(&mut self, within: Duration) {
        let deadline = Instant::now() + within;
        loop {
            if let Some(status) = self.child.as_mut().and_then(|c| c.try_wait().unwrap()) {
                panic!("{:?} exited at start ({status}):\n{}", self.kind, self.log_text());
            }
            if std::net::TcpStream::connect(&self.authority).is_ok() {
                return;
            }
            assert!(
                Instant::now() < deadline,
                "{:?} did not listen within {within:?}:\n{}",
                self.kind,
                self.log_text()
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// The proxy's process id (nginx: its master's).
    pub fn pid(&self) -> Option<u32> {
        self.child.as_ref().map(Child::id)
    }

    /// Everything the proxy wrote: its request log (nginx's access log, HAProxy's stdout), its error log and stderr;
    /// for failure messages. They name its folder, which a failed test leaves in place (with the configuration it
    /// ran).
    pub fn log_text(&self) -> String {
        let read = |name: &str| std::fs::read_to_string(self.dir.join(name)).unwrap_or_default();
        let mut text = format!("--- {:?} ({}) ---\n", self.kind, self.dir.display());
        for name in ["access.log", "stdout.log", "error.log", "stderr.log"] {
            let content = read(name);
            if !content.trim().is_empty() {
                text.push_str(&format!("--- {name} ---\n{content}\n"));
            }
        }
        text
    }

    /// The requests logged so far, in the order they ended.
    pub fn logged(&self) -> Vec<Logged> {
        match self.kind {
            Kind::Nginx | Kind::NginxMinimal => {
                let log = std::fs::read_to_string(self.dir.join("access.log")).unwrap_or_default();
                log.lines().filter_map(|l| self.nginx_line(l)).collect()
            }
            Kind::Haproxy => {
                let log = std::fs::read_to_string(self.dir.join("stdout.log")).unwrap_or_default();
                log.lines().filter_map(|l| self.haproxy_line(l)).collect()
            }
        }
    }

    /// The instance (its index) that answered each request to the MCP endpoint logged so far, in the order they
    /// ended (requests no instance answered left out).
    pub fn sent(&self) -> Vec<usize> {
        self.logged().iter().filter(|l| l.path.starts_with("/mcp")).filter_map(|l| l.upstream).collect()
    }

    /// `$upstream_addr $status $request_method $request_uri "$http_mcp_method" $request_time` (nginx_main's format).
    /// `$upstream_addr` lists every instance tried (`a, b`), `-` when none was.
    fn nginx_line(&self, line: &str) -> Option<Logged> {
        // The addresses are separated by ", " (and " : " across upstream groups): the fields after them are fixed.
        let head = line.split(" \"").next().unwrap_or(line);
        let words: Vec<&str> = head.split_whitespace().collect();
        if words.len() < 4 {
            return None;
        }
        let (addresses, fields) = words.split_at(words.len() - 3);
        let tried: Vec<usize> = addresses
            .iter()
            .map(|a| a.trim_end_matches(','))
            .filter_map(|a| self.upstreams.iter().position(|u| u == a))
            .collect();
        Some(Logged {
            upstream: tried.last().copied(),
            tried,
            status: fields[0].parse().unwrap_or(0),
            method: fields[1].to_owned(),
            path: fields[2].to_owned(),
            line: line.to_owned(),
        })
    }

    /// HAProxy's `option httplog`: `client [date] frontend backend/server timers status bytes ... "METHOD path
    /// HTTP/1.1"`; the server is `<NOSRV>` when none answered.
    fn haproxy_line(&self, line: &str) -> Option<Logged> {
        let words: Vec<&str> = line.split_whitespace().collect();
        let server = words.iter().find_map(|w| w.strip_prefix("mcp/"))?;
        let at = words.iter().position(|w| w.starts_with("mcp/"))?;
        let status = words.get(at + 2)?.parse().ok()?;
        let request = line.split_once('"').map(|(_, r)| r.trim_end_matches('"')).unwrap_or_default();
        let mut request = request.split_whitespace();
        let upstream = self.server_names.iter().find(|(name, _)| name == server).map(|(_, i)| *i);
        Some(Logged {
            upstream,
            tried: upstream.into_iter().collect(),
            status,
            method: request.next().unwrap_or_default().to_owned(),
            path: request.next().unwrap_or_default().to_owned(),
            line: line.to_owned(),
        })
    }

    /// Stops the proxy (nginx: SIGTERM to its master, which stops its worker; HAProxy: SIGTERM) and waits for it.
    pub fn stop(&mut self) {
        let Some(mut child) = self.child.take() else { return };
        let workers = children_of(child.id());
        signal("-TERM", child.id());
        let deadline = Instant::now() + Duration::from_secs(5);
        while child.try_wait().ok().flatten().is_none() && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(10));
        }
        let _ = child.kill();
        let _ = child.wait();
        // A worker whose master was killed would keep the port: never leave one behind.
        for worker in workers {
            if Path::new(&format!("/proc/{worker}")).exists() {
                signal("-KILL", worker);
            }
        }
    }
}

impl Drop for Proxy {
    fn drop(&mut self) {
        self.stop();
        // Kept when the test failed, for its logs.
        if !std::thread::panicking() {
            let _ = std::fs::remove_dir_all(&self.dir);
        }
    }
}

fn signal(signal: &str, pid: u32) {
    let _ = Command::new("kill").args([signal, &pid.to_string()]).stderr(Stdio::null()).status();
}

/// The processes whose parent is `pid` (nginx's workers).
fn children_of(pid: u32) -> Vec<u32> {
    let Ok(entries) = std::fs::read_dir("/proc") else { return Vec::new() };
    entries
        .filter_map(|e| e.ok()?.file_name().to_str()?.parse::<u32>().ok())
        .filter(|child| {
            let stat = std::fs::read_to_string(format!("/proc/{child}/stat")).unwrap_or_default();
            // `pid (comm) state ppid ...`: the fields after the command's closing parenthesis.
            stat.rsplit_once(')').and_then(|(_, rest)| rest.split_whitespace().nth(1)?.parse::<u32>().ok()) == Some(pid)
        })
        .collect()
}

/// The shipped configuration with its listen address and its three instances' addresses replaced, each placeholder
/// asserted to be there (once), so that the shipped file and the tests cannot drift apart.
fn with_addresses(name: &str, text: &str, listen: &str, upstreams: &[String]) -> String {
    let placeholders: Vec<(&str, &str)> = std::iter::once((LISTEN, listen))
        .chain(UPSTREAMS.iter().copied().zip(upstreams.iter().map(String::as_str)))
        .collect();
    // Through markers first, so that an address put in cannot be taken for a placeholder after it.
    let mut config = text.to_owned();
    for (i, (placeholder, _)) in placeholders.iter().enumerate() {
        let found = config.matches(placeholder).count();
        assert_eq!(found, 1, "{name} names {placeholder} {found} times, not once: the tests replace it");
        config = config.replace(placeholder, &format!("\u{0}{i}\u{0}"));
    }
    for (i, (_, address)) in placeholders.iter().enumerate() {
        config = config.replace(&format!("\u{0}{i}\u{0}"), address);
    }
    config
}

/// nginx's main configuration around the shipped file: one worker in the foreground, everything it writes in `dir`.
fn nginx_main(dir: &Path) -> String {
    let dir = dir.display();
    // As root, nginx runs its worker as `nobody` (Debian: `www-data`) unless told, which could not write its temp
    // files here.
    let user = if running_as_root() { "user root;\n" } else { "" };
    format!(
        "{user}worker_processes 1;
pid {dir}/nginx.pid;
error_log {dir}/error.log info;
events {{
    worker_connections 1024;
}}
http {{
    client_body_temp_path {dir}/client_body_temp;
    proxy_temp_path {dir}/proxy_temp;
    fastcgi_temp_path {dir}/fastcgi_temp;
    uwsgi_temp_path {dir}/uwsgi_temp;
    scgi_temp_path {dir}/scgi_temp;
    # The instance each request went to (every one tried, after retries), read by Proxy::logged.
    log_format upstreams '$upstream_addr $status $request_method $request_uri \"$http_mcp_method\" $request_time';
    access_log {dir}/access.log upstreams;
    include {dir}/mcp.conf;
}}
"
    )
}

#[derive(Clone, Copy)]
enum Tool {
    Nginx,
    Haproxy,
}

impl Tool {
    fn program(self) -> &'static str {
        match self {
            Tool::Nginx => "nginx",
            Tool::Haproxy => "haproxy",
        }
    }

    /// The Debian package that ships it.
    fn package(self) -> &'static str {
        match self {
            Tool::Nginx => "nginx",
            Tool::Haproxy => "haproxy",
        }
    }
}

/// Where a program is: on `PATH`, else in the sbin folders (`PATH` may lack them for a user other than root).
fn find(program: &str) -> Option<PathBuf> {
    let path = std::env::var_os("PATH").unwrap_or_default();
    std::env::split_paths(&path)
        .chain(["/usr/sbin", "/usr/local/sbin", "/sbin"].map(PathBuf::from))
        .map(|dir| dir.join(program))
        .find(|p| p.is_file())
}

fn running_as_root() -> bool {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    // `Uid: real effective saved fs`.
    status.lines().find_map(|l| l.strip_prefix("Uid:")).and_then(|ids| ids.split_whitespace().nth(1)) == Some("0")
}

/// The program's path, installing Debian's packages for both proxies first if either is missing.
fn binary(tool: Tool) -> PathBuf {
    if let Some(found) = find(tool.program()) {
        return found;
    }
    // An install that failed is not tried again by every test of this binary: they fail at once, saying why.
    static FAILED: std::sync::Mutex<Option<String>> = std::sync::Mutex::new(None);
    if let Some(why) = FAILED.lock().unwrap().clone() {
        panic!("{why}");
    }
    let how = format!(
        "`{}` is missing: install Debian's package `{}` (`apt-get install {}`), or run the tests as root on a machine \
         with apt-get, and they install it",
        tool.program(),
        tool.package(),
        tool.package()
    );
    let failed = |why: String| -> ! {
        *FAILED.lock().unwrap() = Some(why.clone());
        panic!("{why}")
    };
    if !running_as_root() {
        failed(format!("{how} (not root here)"));
    }
    let Some(apt) = find("apt-get") else { failed(format!("{how} (no apt-get here)")) };
    let stamp = install::target_dir().join("proxies.installed");
    // A stamp from an earlier install whose programs are gone since: install again.
    if std::fs::read_to_string(&stamp).is_ok() && !stamp.with_extension("lock").exists() {
        let _ = std::fs::remove_file(&stamp);
    }
    let mut failure = None;
    install::once(&stamp, "apt-get install nginx haproxy\n", || {
        let missing: Vec<&str> =
            [Tool::Nginx, Tool::Haproxy].iter().filter(|t| find(t.program()).is_none()).map(|t| t.package()).collect();
        if missing.is_empty() {
            return;
        }
        // `apt-get update` once, then the packages; each waits up to 2 min for another apt's lock.
        let run = |args: &[&str]| install::apt_get(&apt, args);
        let installed = run(&["update", "-qq"])
            .and_then(|()| run(&[&["install", "-y", "-qq", "--no-install-recommends"][..], &missing[..]].concat()));
        failure = installed.err();
    });
    match (find(tool.program()), failure) {
        (Some(found), _) => found,
        (None, Some(why)) => failed(format!("{how}: {why}")),
        (None, None) => failed(format!("{how} (apt-get installed nothing that provides it)")),
    }
}
