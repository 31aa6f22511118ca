//! Counting a phase: latencies, outcomes, and the CPU time and memory of the processes, read from /proc.

use std::time::Duration;

use serde_json::{Map, Value, json};

use crate::proto::Outcome;

/// The calls of one phase (or one session of it).
#[derive(Default)]
pub struct Tally {
    /// Round-trip times of the calls counted, in nanoseconds.
    pub latencies_ns: Vec<u64>,
    /// How many calls ended with each [`Outcome`], in the order of `Outcome::ALL`.
    pub outcomes: [u64; Outcome::ALL.len()],
}

impl Tally {
    pub fn with_capacity(n: usize) -> Tally {
        Tally { latencies_ns: Vec::with_capacity(n), ..Tally::default() }
    }

    pub fn record(&mut self, outcome: Outcome, latency: Duration) {
        self.outcomes[outcome as usize] += 1;
        if outcome == Outcome::Ok {
            self.latencies_ns.push(latency.as_nanos() as u64);
        }
    }

    pub fn merge(&mut self, other: Tally) {
        self.latencies_ns.extend(other.latencies_ns);
        for (a, b) in self.outcomes.iter_mut().zip(other.outcomes) {
            *a += b;
        }
    }

    pub fn ok(&self) -> u64 {
        self.outcomes[Outcome::Ok as usize]
    }

    pub fn errors(&self) -> u64 {
        self.outcomes.iter().sum::<u64>() - self.ok()
    }

    /// The phase's JSON object: successful calls, calls/s over `elapsed`, latency percentiles, outcomes, and the
    /// CPU time both processes spent over the same window (when known).
    pub fn report(mut self, elapsed: Duration, cpu: Option<CpuWindow>) -> Map<String, Value> {
        self.latencies_ns.sort_unstable();
        let calls = self.ok();
        let secs = elapsed.as_secs_f64();
        let mut out = Map::new();
        out.insert("calls".into(), calls.into());
        out.insert("errors".into(), self.errors().into());
        out.insert("elapsed_s".into(), round(secs, 4).into());
        out.insert("calls_per_s".into(), round(if secs > 0.0 { calls as f64 / secs } else { 0.0 }, 1).into());
        out.insert("lat_us".into(), percentiles(&self.latencies_ns));
        let outcomes: Map<String, Value> =
            Outcome::ALL.iter().map(|o| (o.name().to_owned(), self.outcomes[*o as usize].into())).collect();
        out.insert("outcomes".into(), outcomes.into());
        if let Some(cpu) = cpu {
            for (key, secs) in [("server", cpu.server_s), ("client", cpu.client_s)] {
                let Some(secs) = secs else { continue };
                out.insert(format!("{key}_cpu_s"), round(secs, 3).into());
                let per_call = if calls > 0 { Value::from(round(secs * 1e6 / calls as f64, 2)) } else { Value::Null };
                out.insert(format!("{key}_cpu_us_per_call"), per_call);
            }
        }
        out
    }
}

/// Percentiles of sorted nanoseconds, in microseconds.
fn percentiles(sorted: &[u64]) -> Value {
    if sorted.is_empty() {
        return json!({"n": 0});
    }
    let at = |q: f64| {
        let i = ((sorted.len() as f64 * q).ceil() as usize).clamp(1, sorted.len()) - 1;
        round(sorted[i] as f64 / 1e3, 1)
    };
    let mean = sorted.iter().sum::<u64>() as f64 / sorted.len() as f64 / 1e3;
    json!({
        "n": sorted.len(),
        "min": round(sorted[0] as f64 / 1e3, 1),
        "mean": round(mean, 1),
        "p50": at(0.50),
        "p90": at(0.90),
        "p99": at(0.99),
        "p999": at(0.999),
        "max": round(sorted[sorted.len() - 1] as f64 / 1e3, 1),
    })
}

pub fn round(x: f64, digits: i32) -> f64 {
    let m = 10f64.powi(digits);
    (x * m).round() / m
}

/// Clock ticks per second of /proc/PID/stat's times: USER_HZ, 100 on Linux.
const TICKS_PER_S: f64 = 100.0;

/// The CPU time (user + system, every thread) a process has used so far; `None` for this process.
pub fn cpu_seconds(pid: Option<u32>) -> Option<f64> {
    let path = match pid {
        Some(pid) => format!("/proc/{pid}/stat"),
        None => "/proc/self/stat".to_owned(),
    };
    let stat = std::fs::read_to_string(path).ok()?;
    // The command name is in parentheses and may hold spaces: the fields we want come after the last ')'.
    let rest = &stat[stat.rfind(')')? + 1..];
    let fields: Vec<&str> = rest.split_whitespace().collect();
    // utime and stime are fields 14 and 15 of the line, the 12th and 13th after the name.
    let utime: f64 = fields.get(11)?.parse().ok()?;
    let stime: f64 = fields.get(12)?.parse().ok()?;
    Some((utime + stime) / TICKS_PER_S)
}

/// CPU time read at both ends of a measured window.
#[derive(Clone, Copy)]
pub struct CpuMark {
    server: Option<f64>,
    client: Option<f64>,
}

#[derive(Clone, Copy)]
pub struct CpuWindow {
    pub server_s: Option<f64>,
    pub client_s: Option<f64>,
}

impl CpuMark {
    pub fn now(server: Option<u32>) -> CpuMark {
        CpuMark { server: server.and_then(|pid| cpu_seconds(Some(pid))), client: cpu_seconds(None) }
    }

    pub fn since(self, start: CpuMark) -> CpuWindow {
        let diff = |a: Option<f64>, b: Option<f64>| Some(a? - b?);
        CpuWindow { server_s: diff(self.server, start.server), client_s: diff(self.client, start.client) }
    }
}

/// A process's peak and current resident memory, and its thread count, from /proc/PID/status.
pub fn memory(pid: u32) -> Value {
    let Ok(status) = std::fs::read_to_string(format!("/proc/{pid}/status")) else {
        return Value::Null;
    };
    let field = |name: &str| -> Value {
        status
            .lines()
            .find_map(|l| l.strip_prefix(name))
            .and_then(|rest| rest.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
            .map_or(Value::Null, Value::from)
    };
    json!({"vmhwm_kb": field("VmHWM:"), "vmrss_kb": field("VmRSS:"), "threads": field("Threads:")})
}
