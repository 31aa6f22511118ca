//! The command line: `--flag value` or `--flag=value`, a few short forms, and `--` before a stdio server's command.

use std::path::PathBuf;
use std::time::Duration;

use crate::cancel;
use crate::proto::{self, Era};

/// A phase of a run.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Phase {
    Seq,
    Pipeline,
    Load,
    Cancel,
}

/// What both transports take.
pub struct Common {
    pub era: Era,
    pub phases: Vec<Phase>,
    pub tool: String,
    pub text: String,
    pub probe: cancel::Settings,
    pub server_log: Option<PathBuf>,
}

impl Common {
    pub fn has(&self, phase: Phase) -> bool {
        self.phases.contains(&phase)
    }
}

pub struct Stdio {
    pub common: Common,
    pub calls: u64,
    pub warmup: u64,
    pub pipeline: usize,
    pub command: Vec<String>,
}

pub struct Http {
    pub common: Common,
    pub url: String,
    pub concurrency: usize,
    pub duration: Duration,
    pub warmup: Duration,
    pub threads: usize,
    pub server_pid: Option<u32>,
    pub raw: bool,
}

/// The `--label` of a command line, for the error line of a command line that does not parse.
pub fn label_of(argv: &[String]) -> Option<String> {
    let mut it = argv.iter().take_while(|a| *a != "--");
    while let Some(a) = it.next() {
        if a == "--label" {
            return it.next().cloned();
        }
        if let Some(v) = a.strip_prefix("--label=") {
            return Some(v.to_owned());
        }
    }
    None
}

/// Flags and their values, in order; the words after `--`.
struct Flags {
    pairs: Vec<(String, Option<String>)>,
    rest: Vec<String>,
}

/// The flags that take no value.
const SWITCHES: &[&str] = &["--raw"];

impl Flags {
    fn split(argv: &[String]) -> Result<Flags, String> {
        let mut pairs = Vec::new();
        let mut it = argv.iter();
        let mut rest = Vec::new();
        while let Some(a) = it.next() {
            if a == "--" {
                rest = it.cloned().collect();
                break;
            }
            let name = match a.as_str() {
                "-c" => "--concurrency".to_owned(),
                "-d" => "--duration".to_owned(),
                s if s.starts_with("--") => s.to_owned(),
                s => return Err(format!("unexpected argument {s:?} (a server's command goes after --)")),
            };
            if let Some((n, v)) = name.split_once('=') {
                pairs.push((n.to_owned(), Some(v.to_owned())));
            } else if SWITCHES.contains(&name.as_str()) {
                pairs.push((name, None));
            } else {
                let v = it.next().ok_or_else(|| format!("{name} needs a value"))?;
                pairs.push((name, Some(v.clone())));
            }
        }
        Ok(Flags { pairs, rest })
    }

    /// Take a flag's last value out.
    fn take(&mut self, name: &str) -> Option<String> {
        let mut found = None;
        self.pairs.retain(|(n, v)| {
            if n == name {
                found = Some(v.clone().unwrap_or_default());
                false
            } else {
                true
            }
        });
        found
    }

    fn switch(&mut self, name: &str) -> bool {
        self.take(name).is_some()
    }

    fn number<T: std::str::FromStr>(&mut self, name: &str, default: T) -> Result<T, String> {
        match self.take(name) {
            None => Ok(default),
            Some(v) => v.parse().map_err(|_| format!("{name}: not a number: {v:?}")),
        }
    }

    fn seconds(&mut self, name: &str, default: f64) -> Result<Duration, String> {
        let s: f64 = self.number(name, default)?;
        Duration::try_from_secs_f64(s).map_err(|_| format!("{name}: not a duration: {s}"))
    }

    /// What is left must be nothing.
    fn done(self) -> Result<(), String> {
        match self.pairs.first() {
            None => Ok(()),
            Some((n, _)) => Err(format!("unknown option {n}")),
        }
    }

    fn common(&mut self, default_phases: &str, allowed: &[Phase]) -> Result<Common, String> {
        self.take("--label");
        let era = Era::parse(&self.take("--era").unwrap_or_else(|| "2025".into()))?;
        let phases = self
            .take("--phases")
            .unwrap_or_else(|| default_phases.into())
            .split(',')
            .filter(|p| !p.is_empty())
            .map(|p| {
                let phase = match p {
                    "seq" => Phase::Seq,
                    "pipeline" => Phase::Pipeline,
                    "load" => Phase::Load,
                    "cancel" => Phase::Cancel,
                    _ => return Err(format!("--phases: unknown phase {p:?}")),
                };
                if allowed.contains(&phase) { Ok(phase) } else { Err(format!("--phases: {p} is not a phase here")) }
            })
            .collect::<Result<Vec<_>, _>>()?;
        let text_size = match self.take("--text-size") {
            None => None,
            Some(v) => Some(v.parse().map_err(|_| format!("--text-size: not a number: {v:?}"))?),
        };
        let text = proto::echo_text(self.take("--text"), text_size);
        let probe = cancel::Settings {
            sleep_ms: self.number("--cancel-sleep-ms", 10_000)?,
            delay_ms: self.number("--cancel-delay-ms", 100)?,
            grace_ms: self.number("--cancel-grace-ms", 1_000)?,
            done_marker: self.take("--stderr-marker"),
            abort_marker: self.take("--abort-marker"),
            tool: self.take("--sleep-tool").unwrap_or_else(|| "sleep".into()),
        };
        Ok(Common {
            era,
            phases,
            tool: self.take("--tool").unwrap_or_else(|| "echo".into()),
            text,
            probe,
            server_log: self.take("--server-log").map(PathBuf::from),
        })
    }
}

impl Stdio {
    pub fn parse(argv: &[String]) -> Result<Stdio, String> {
        let mut f = Flags::split(argv)?;
        let common = f.common("seq,pipeline", &[Phase::Seq, Phase::Pipeline, Phase::Cancel])?;
        let out = Stdio {
            common,
            calls: f.number("--calls", 2000)?,
            warmup: f.number("--warmup", 500)?,
            pipeline: f.number("--pipeline", 32)?.max(1),
            command: std::mem::take(&mut f.rest),
        };
        f.done()?;
        if out.command.is_empty() {
            return Err("stdio: the server's command goes after --".into());
        }
        Ok(out)
    }
}

impl Http {
    pub fn parse(argv: &[String]) -> Result<Http, String> {
        let mut f = Flags::split(argv)?;
        let common = f.common("load", &[Phase::Load, Phase::Cancel])?;
        let out = Http {
            common,
            url: f.take("--url").ok_or("http: --url is required")?,
            concurrency: f.number("--concurrency", 4)?.max(1),
            duration: f.seconds("--duration", 10.0)?,
            warmup: f.seconds("--warmup-secs", 1.0)?,
            threads: f.number("--threads", 1)?.max(1),
            server_pid: match f.take("--server-pid") {
                None => None,
                Some(p) => Some(p.parse().map_err(|_| format!("--server-pid: not a pid: {p:?}"))?),
            },
            raw: f.switch("--raw"),
        };
        if !f.rest.is_empty() {
            return Err("http: no command after -- (start the server yourself, pass --server-pid)".into());
        }
        f.done()?;
        Ok(out)
    }
}
