//! mcpload: a load generator for MCP servers, over stdio or Streamable HTTP, in the 2025-11-25 or the 2026-07-28
//! era. Each run prints one JSON line on stdout (on failure `{"label": ..., "error": ...}` and exit status 1);
//! progress and diagnostics go to stderr.

mod args;
mod cancel;
mod http;
mod markers;
mod proto;
mod raw;
mod stats;
mod stdio;

use serde_json::{Map, Value, json};

const USAGE: &str = "\
usage: mcpload stdio [options] -- SERVER [ARGS...]
       mcpload http --url http://127.0.0.1:PORT/mcp [options]

common options
  --label S              copied into the output line
  --era 2025|2026        protocol revision [2025]
  --phases LIST          stdio: seq,pipeline,cancel [seq,pipeline]; http: load,cancel [load]
  --tool NAME            the echo tool [echo]
  --text S | --text-size N
                         the text each echo call sends [hello]
  --cancel-sleep-ms N    cancellation probe: the sleep(ms) asked for [10000]
  --cancel-delay-ms N    ... cancelled this long after it was sent [100]
  --cancel-grace-ms N    ... listened to this long after the sleep would have ended [1000]
  --sleep-tool NAME      ... the sleep tool [sleep]
  --stderr-marker S      the line a sleep handler that ran to its end prints on stderr (e.g. SLEEP_DONE)
  --abort-marker S       the line a dropped sleep handler prints (e.g. SLEEP_ABORTED)
  --server-log PATH      stdio: where the server's stderr is written; http: the server's log, followed

stdio options
  --calls N              measured calls of each of seq and pipeline [2000]
  --warmup N             unmeasured sequential calls first [500]
  --pipeline K           calls in flight in the pipeline phase [32]

http options (http:// on the loopback interface only)
  -c, --concurrency N    sessions, one connection each, closed loop [4]
  -d, --duration S       measured seconds [10]
  --warmup-secs S        unmeasured seconds first [1]
  --threads N            load generator worker threads [1]
  --server-pid PID       read the server's CPU time and memory from /proc
  --raw                  the load phase over raw keep-alive HTTP/1.1 connections instead of reqwest
";

fn main() {
    let argv: Vec<String> = std::env::args().skip(1).collect();
    let label = args::label_of(&argv);
    let result = match argv.first().map(String::as_str) {
        Some("stdio") => args::Stdio::parse(&argv[1..]).and_then(stdio::run),
        Some("http") => args::Http::parse(&argv[1..]).and_then(http::run),
        Some("-h" | "--help") => {
            print!("{USAGE}");
            return;
        }
        _ => Err(format!("expected a subcommand, stdio or http\n\n{USAGE}")),
    };
    match result {
        Ok(mut line) => {
            let mut head = Map::new();
            head.insert("mcpload".into(), env!("CARGO_PKG_VERSION").into());
            head.insert("label".into(), label.map_or(Value::Null, Value::from));
            head.append(&mut line);
            println!("{}", Value::Object(head));
        }
        Err(error) => {
            eprintln!("mcpload: {error}");
            println!("{}", json!({"mcpload": env!("CARGO_PKG_VERSION"), "label": label, "error": error}));
            std::process::exit(1);
        }
    }
}
