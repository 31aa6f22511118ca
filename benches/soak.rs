//! A soak harness: drives the testbed server over stdio and Streamable HTTP, in the 2025-11-25 era (sessions) and
//! the 2026-07-28 era (stateless requests), with a mix of plain calls, pipelined bursts, cancels, slow readers,
//! clients that disconnect mid-stream, panicking tools, floods, large answers and readers that stop reading, and
//! checks that every request that was not cancelled is answered exactly once, that no cancelled request is answered
//! (nor runs on to its end), and that the server's resident memory stays within a bound.
//!
//! Run with `cargo bench --bench soak`; options after `--`: `--seconds N` per run (default 60), `--warmup S` (3),
//! `--transport stdio|http|both`, `--era 2025|2026|both`, `--concurrency C` (4 clients), `--max-rss-growth-kib K`
//! (8192), `--seed X`, `--every S` (a progress line every S seconds), `--only OP,...` (keep some operations of the
//! mix, for a reproduction: echo, burst, cancel, spin, race, slow, disconnect, panic, flood, large, stuck, change).
//! `MCP_BENCH_SERVER=path` drives another build of the testbed. One run per transport × era, each against its own
//! server process; one summary line per run, then a verdict. The exit status is 1 on any lost, duplicated or
//! after-cancel response, any wrong answer, a server that does not exit cleanly, or RSS growth past the bound. The
//! growth is what the server holds, from the end of the warm-up to the end: at both ends nothing is in flight (at the
//! first, the workers pause and 2025 clients end their sessions; at the last, they are done and the stuck readers
//! closed), and the testbed's `trim` has given the allocator's free memory back; the line shows the untrimmed RSS
//! and its peak beside it. A check, not a benchmark: it reports no timings. All traffic goes to 127.0.0.1; every
//! wait is bounded.
//!
//! Per request it counts: sent; answered (once, with the right content); duplicated (a second response); answered
//! after its cancel (on the wire); ran on (a cancelled handler that finished anyway: the testbed's `SLEEP_DONE`
//! marker on stderr, the only evidence when a 2026 HTTP client cancels by closing its connection); unhonoured (a
//! cancel whose handler did not stop within 8 s, or whose 2025 stream stayed open); lost (no answer within 30 s).
//!
//! The mix: echo calls; on stdio, bursts of up to 48 requests in one write, and requests cancelled in the same
//! write (an answer or none, never two); sleeps cancelled just after they start (`notifications/cancelled` on stdio
//! and on a 2025 session, a dropped POST in 2026) and, but in 2026 HTTP, blocking `spin`s; slow readers (a progress
//! stream and a 256 KiB answer read with pauses; on stdio the one reader dawdles); disconnects (stdio: a separate
//! process whose client closes its pipes with a request in flight, which must exit cleanly and drop the request;
//! 2025 HTTP: a stream dropped after its first event and resumed with `Last-Event-ID`, which must deliver the
//! response once, or abandoned; 2026 HTTP: a stream dropped after its first event, which cancels); panicking async
//! and blocking tools, each answered with an error; floods before the first `.await` (`log_burst`: 20 000 logs of
//! 1 KB without yielding, sent in both eras, most dropped past the soft bound), whose answer must come, at most one a
//! second; 20 MiB answers (past the hard bound) to a client that reads them, checked for their length, at most one
//! every 4 s (on stdio neither overlaps a slow reader nor the other: one pipe more than the soft bound behind is,
//! by the server's rule, a client that stopped reading); on HTTP, readers that stop reading (one every 5 s, four at
//! most, from the end of the warm-up: a connection with a 4 KiB receive buffer whose response head is read and
//! nothing more; 2026: a `subscriptions/listen` for tool list changes and resources under `file:///soak/`; 2025: a
//! session subscribed to a resource, whose GET stream is the one not read), held to the end of the run and closed
//! before the last RSS sample, while changes (a 60 kB URI touched, or a tool disabled and enabled) keep coming: every
//! other operation keeps its deadline, and the server exits cleanly; and on 2025 HTTP a new session every 40
//! operations.

use std::collections::{HashMap, VecDeque};
use std::process::Stdio;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::{json, Map, Value};
use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};
use tokio::process::{Child, ChildStdin, ChildStdout, Command};
use tokio::sync::{oneshot, Notify};

/// How long a request that was not cancelled may take to be answered before it counts as lost.
const CALL_TIMEOUT: Duration = Duration::from_secs(30);
/// How long a sleep may take to start (its `SLEEP_START` marker) before it counts as lost.
const START_TIMEOUT: Duration = Duration::from_secs(10);
/// How long a cancelled handler may take to stop (or a cancelled stream to end).
const SETTLE: Duration = Duration::from_secs(8);
/// How long a cancelled sleep would run: well past any cancel, well inside [`SETTLE`].
const CANCELLED_SLEEP_MS: u64 = 5_000;
/// The size of the text of a slow reader's big echo.
const BIG_ECHO: usize = 256 * 1024;
/// A 2025 session is ended and a new one made after this many operations of its client.
const SESSION_OPS: u32 = 40;
/// A flood before the first `.await`: `log_burst` of this many lines of [`FLOOD_LINE`] bytes.
const FLOOD_LINES: u32 = 20_000;
const FLOOD_LINE: usize = 1_000;
/// The size of a large answer, in MiB (over the default hard bound of 16 MiB).
const LARGE_MIB: usize = 20;
/// How many readers that stop reading a run opens at most (each is held to the end of the run).
const MAX_STUCK: usize = 4;
/// The resources stuck readers watch (2026: the prefix; 2025: a subscription to [`big_uri`]).
const WATCHED: &str = "file:///soak/";
/// The size of the URI a change touches: each touch is that much more for a stuck reader.
const BIG_URI: usize = 60_000;
/// How many problem descriptions a run keeps for its report.
const PROBLEMS_KEPT: usize = 12;

const V2026_VERSION: &str = "2026-07-28";
const V2025_VERSION: &str = "2025-11-25";
const ACCEPT: &str = "application/json, text/event-stream";

// ---------------------------------------------------------------------------------------------------------------
// Options

#[derive(Clone, Copy, PartialEq, Eq)]
enum Transport {
    Stdio,
    Http,
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Era {
    V2025,
    V2026,
}

impl Transport {
    fn name(self) -> &'static str {
        match self {
            Transport::Stdio => "stdio",
            Transport::Http => "http",
        }
    }
}

impl Era {
    fn name(self) -> &'static str {
        match self {
            Era::V2025 => "2025",
            Era::V2026 => "2026",
        }
    }
}

struct Args {
    seconds: u64,
    warmup: u64,
    transports: Vec<Transport>,
    eras: Vec<Era>,
    concurrency: usize,
    max_rss_growth_kib: u64,
    seed: u64,
    /// `--only`: the operations to keep from each mix (all when empty).
    only: Vec<Op>,
    /// `--every S`: a progress line every S seconds (none when 0).
    every: u64,
}

fn usage(problem: &str) -> ! {
    eprintln!("soak: {problem}");
    eprintln!(
        "usage: cargo bench --bench soak -- [--seconds N] [--warmup S] [--transport stdio|http|both] \
         [--era 2025|2026|both] [--concurrency C] [--max-rss-growth-kib K] [--seed X] [--only OP,OP...] [--every S]"
    );
    std::process::exit(2)
}

fn parse_args() -> Args {
    let seed = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map(|d| d.as_nanos() as u64);
    let mut args = Args {
        seconds: 60,
        warmup: 3,
        transports: vec![Transport::Stdio, Transport::Http],
        eras: vec![Era::V2025, Era::V2026],
        concurrency: 4,
        max_rss_growth_kib: 8 * 1024,
        seed: seed.unwrap_or(1),
        only: Vec::new(),
        every: 0,
    };
    let mut it = std::env::args().skip(1);
    while let Some(option) = it.next() {
        let mut value = || it.next().unwrap_or_else(|| usage(&format!("{option} needs a value")));
        let number = |v: String| v.parse::<u64>().unwrap_or_else(|_| usage(&format!("{option}: not a number: {v}")));
        match option.as_str() {
            "--seconds" => args.seconds = number(value()),
            "--warmup" => args.warmup = number(value()),
            "--concurrency" => args.concurrency = number(value()).max(1) as usize,
            "--max-rss-growth-kib" => args.max_rss_growth_kib = number(value()),
            "--seed" => args.seed = number(value()),
            "--every" => args.every = number(value()),
            "--transport" => {
                args.transports = match value().as_str() {
                    "stdio" => vec![Transport::Stdio],
                    "http" => vec![Transport::Http],
                    "both" => vec![Transport::Stdio, Transport::Http],
                    other => usage(&format!("--transport {other}: stdio, http or both")),
                }
            }
            "--era" => {
                args.eras = match value().as_str() {
                    "2025" => vec![Era::V2025],
                    "2026" => vec![Era::V2026],
                    "both" => vec![Era::V2025, Era::V2026],
                    other => usage(&format!("--era {other}: 2025, 2026 or both")),
                }
            }
            "--only" => {
                for name in value().split(',') {
                    match OPS.iter().find(|(_, n)| *n == name) {
                        Some((op, _)) => args.only.push(*op),
                        None => usage(&format!("--only {name}: one of {}", OPS.map(|(_, n)| n).join(", "))),
                    }
                }
            }
            "--bench" => {} // cargo bench passes it
            other => usage(&format!("unknown option {other}")),
        }
    }
    args
}

/// xorshift64*: enough randomness to mix operations, and reproducible from `--seed`.
struct Rng(u64);

impl Rng {
    fn new(seed: u64) -> Rng {
        Rng(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1)
    }

    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }

    fn below(&mut self, n: u64) -> u64 {
        self.next() % n.max(1)
    }

    fn millis(&mut self, from: u64, to: u64) -> Duration {
        Duration::from_millis(from + self.below(to - from + 1))
    }
}

// ---------------------------------------------------------------------------------------------------------------
// What a run counts

#[derive(Clone, Copy, PartialEq, Eq, Hash)]
enum Op {
    Echo,
    Burst,
    Cancel,
    Spin,
    Race,
    Slow,
    Disconnect,
    Panic,
    Churn,
    Flood,
    Large,
    Stuck,
    Change,
}

const OPS: [(Op, &str); 13] = [
    (Op::Echo, "echo"),
    (Op::Burst, "burst"),
    (Op::Cancel, "cancel"),
    (Op::Spin, "spin"),
    (Op::Race, "race"),
    (Op::Slow, "slow"),
    (Op::Disconnect, "disconnect"),
    (Op::Panic, "panic"),
    (Op::Churn, "churn"),
    (Op::Flood, "flood"),
    (Op::Large, "large"),
    (Op::Stuck, "stuck"),
    (Op::Change, "change"),
];

/// How far apart (at least) a run starts the operations that are heavy for the server, and what it does instead
/// when one is not due (stdio disconnects start a process each).
fn spacing(transport: Transport, op: Op) -> Option<(Duration, Op)> {
    match (transport, op) {
        (Transport::Stdio, Op::Disconnect) => Some((Duration::from_secs(2), Op::Echo)),
        (_, Op::Flood) => Some((Duration::from_secs(1), Op::Echo)),
        (_, Op::Large) => Some((Duration::from_secs(4), Op::Echo)),
        (_, Op::Stuck) => Some((Duration::from_secs(5), Op::Change)),
        _ => None,
    }
}

/// The mix of a transport × era, by weight. Bursts and racing cancels need one ordered pipe (stdio); a 2026 HTTP
/// request cannot be seen to have started until it answers, so a `spin` (no start marker) is not cancelled there.
/// A reader that stops reading needs a second client beside the one that does (HTTP). Floods and large answers
/// are also spaced in time (see [`spacing`]), stuck readers limited in number ([`MAX_STUCK`]).
fn mix(transport: Transport, era: Era, only: &[Op]) -> Vec<(Op, u64)> {
    let all: &[(Op, u64)] = match (transport, era) {
        (Transport::Stdio, _) => &[
            (Op::Echo, 40),
            (Op::Burst, 12),
            (Op::Cancel, 12),
            (Op::Spin, 5),
            (Op::Race, 5),
            (Op::Slow, 5),
            (Op::Disconnect, 3),
            (Op::Panic, 10),
            (Op::Flood, 2),
            (Op::Large, 1),
        ],
        (Transport::Http, Era::V2025) => &[
            (Op::Echo, 50),
            (Op::Cancel, 12),
            (Op::Spin, 5),
            (Op::Slow, 5),
            (Op::Disconnect, 10),
            (Op::Panic, 10),
            (Op::Flood, 2),
            (Op::Large, 1),
            (Op::Stuck, 1),
            (Op::Change, 8),
        ],
        (Transport::Http, Era::V2026) => &[
            (Op::Echo, 55),
            (Op::Cancel, 15),
            (Op::Slow, 5),
            (Op::Disconnect, 8),
            (Op::Panic, 10),
            (Op::Flood, 2),
            (Op::Large, 1),
            (Op::Stuck, 1),
            (Op::Change, 8),
        ],
    };
    all.iter().filter(|(op, _)| only.is_empty() || only.contains(op)).copied().collect()
}

fn pick(rng: &mut Rng, mix: &[(Op, u64)]) -> Op {
    let total: u64 = mix.iter().map(|(_, w)| w).sum();
    let mut n = rng.below(total);
    for (op, w) in mix {
        if n < *w {
            return *op;
        }
        n -= w;
    }
    Op::Echo
}

#[derive(Default)]
struct Stats {
    /// Requests sent whose fate is checked (handshakes and racing cancels aside).
    sent: AtomicU64,
    answered: AtomicU64,
    cancelled: AtomicU64,
    duplicated: AtomicU64,
    /// Responses on the wire to a request after its cancel.
    after_cancel: AtomicU64,
    /// Cancelled handlers that ran to their end anyway (their `*_DONE` marker).
    ran_on: AtomicU64,
    unhonoured: AtomicU64,
    lost: AtomicU64,
    /// Answers that came after their request was counted lost.
    late: AtomicU64,
    /// Wrong answers, stray responses, unexpected statuses, transport errors, unclean exits.
    bad: AtomicU64,
    notifications: AtomicU64,
    /// Stdio: requests cancelled in the same write, answered or not (either is right; twice is not).
    raced_answered: AtomicU64,
    raced_silent: AtomicU64,
    /// 2025 HTTP: requests whose client went away mid-stream and never resumed.
    abandoned: AtomicU64,
    /// HTTP: readers that stopped reading, and the times the server found a client stuck (its log line).
    stuck: AtomicU64,
    cut_off: AtomicU64,
    ops: [AtomicU64; OPS.len()],
    problems: Mutex<Vec<String>>,
}

impl Stats {
    fn add(counter: &AtomicU64, n: u64) {
        counter.fetch_add(n, Ordering::Relaxed);
    }

    fn get(counter: &AtomicU64) -> u64 {
        counter.load(Ordering::Relaxed)
    }

    /// Counts a problem and keeps its description (the first few).
    fn problem(&self, counter: &AtomicU64, what: String) {
        Stats::add(counter, 1);
        let mut problems = self.problems.lock().unwrap();
        if problems.len() < PROBLEMS_KEPT {
            problems.push(what);
        }
    }

    fn op(&self, op: Op) {
        if let Some(i) = OPS.iter().position(|(o, _)| *o == op) {
            Stats::add(&self.ops[i], 1);
        }
    }
}

fn shorten(text: &str) -> String {
    if text.len() <= 300 {
        return text.to_owned();
    }
    let mut end = 300;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}… ({} bytes)", &text[..end], text.len())
}

// ---------------------------------------------------------------------------------------------------------------
// The testbed's stderr markers

const START: u8 = 1;
const DONE: u8 = 2;
const ABORTED: u8 = 4;
const SPIN_CANCELLED: u8 = 8;

/// The markers the testbed printed for the requests being watched, by request id.
#[derive(Default)]
struct Markers {
    seen: Mutex<HashMap<u64, u8>>,
    changed: Notify,
}

impl Markers {
    fn watch(&self, id: u64) {
        self.seen.lock().unwrap().insert(id, 0);
    }

    fn forget(&self, id: u64) {
        self.seen.lock().unwrap().remove(&id);
    }

    fn flags(&self, id: u64) -> u8 {
        self.seen.lock().unwrap().get(&id).copied().unwrap_or(0)
    }

    /// Notes a stderr line if it holds a marker (anywhere: other output may precede it on its line); says whether
    /// it did. (`SLEEP_START` also finds `STREAM_SLEEP_START`, which means the same.)
    fn note(&self, line: &str) -> bool {
        const KINDS: [(&str, u8); 5] = [
            ("SLEEP_START ", START),
            ("SLEEP_DONE ", DONE),
            ("SLEEP_ABORTED ", ABORTED),
            ("SPIN_CANCELLED ", SPIN_CANCELLED),
            ("CLEANUP_DONE ", 0),
        ];
        let Some((at, kind, flag)) = KINDS.iter().find_map(|(k, f)| line.find(k).map(|at| (at, k, *f))) else {
            return false;
        };
        let rest = &line[at + kind.len()..];
        let digits = &rest[..rest.find(|c: char| !c.is_ascii_digit()).unwrap_or(rest.len())];
        if let (Ok(id), true) = (digits.parse::<u64>(), flag != 0) {
            if let Some(flags) = self.seen.lock().unwrap().get_mut(&id) {
                *flags |= flag;
            }
            self.changed.notify_waiters();
        }
        true
    }

    /// Waits until one of the `mask` markers of `id` was printed, or `timeout`; returns the markers seen.
    async fn wait(&self, id: u64, mask: u8, timeout: Duration) -> u8 {
        let deadline = tokio::time::Instant::now() + timeout;
        loop {
            let changed = self.changed.notified();
            tokio::pin!(changed);
            changed.as_mut().enable();
            let flags = self.flags(id);
            if flags & mask != 0 {
                return flags;
            }
            if tokio::time::timeout_at(deadline, changed).await.is_err() {
                return self.flags(id);
            }
        }
    }
}

// ---------------------------------------------------------------------------------------------------------------
// A run: one server process, one transport, one era

struct Run {
    transport: Transport,
    era: Era,
    mix: Vec<(Op, u64)>,
    stats: Stats,
    markers: Markers,
    next_id: AtomicU64,
    /// The end of the warm-up, where the workers pause for the first memory sample (see [`Pause`]).
    warm_end: Instant,
    pause: Pause,
    deadline: Instant,
    /// Set when the server is gone: the workers stop.
    stopped: AtomicBool,
    /// When each spaced operation last started (see [`spacing`]).
    spaced: Mutex<HashMap<Op, Instant>>,
    /// Shared by operations that wait for markers, exclusive for panicking calls: the standard panic hook writes
    /// its report to stderr in pieces without the lock `eprintln!` takes, so a marker printed meanwhile can be
    /// split and missed.
    quiet: tokio::sync::RwLock<()>,
    /// Stdio: held by the operations that leave the one pipe behind by megabytes (a slow reader, a flood, a large
    /// answer), so that they never overlap: a client more than the soft bound behind when a frame would take it
    /// past the hard bound is, by the server's rule, one that stopped reading.
    heavy: tokio::sync::Mutex<()>,
    /// The readers that stopped reading, held open to the end of the run, and how many more it may open.
    stuck: Mutex<Vec<StuckReader>>,
    stuck_slots: AtomicUsize,
}

impl Run {
    fn id(&self) -> u64 {
        self.next_id.fetch_add(1, Ordering::Relaxed)
    }

    fn going(&self) -> bool {
        Instant::now() < self.deadline && !self.stopped.load(Ordering::Relaxed)
    }

    /// The operation to run for `op`: itself, or what replaces it when it is not due (a spaced operation too soon
    /// after the last, a stuck reader when the run has opened its share).
    fn due(&self, op: Op) -> Op {
        let Some((every, instead)) = spacing(self.transport, op) else { return op };
        // A reader that stops reading holds memory until the end of the run: none is open at the first sample.
        if op == Op::Stuck && !self.pause.is_over() {
            return instead;
        }
        let mut spaced = self.spaced.lock().unwrap();
        if spaced.get(&op).is_some_and(|last| last.elapsed() < every) {
            return instead;
        }
        let slot = || self.stuck_slots.fetch_update(Ordering::Relaxed, Ordering::Relaxed, |n| n.checked_sub(1));
        if op == Op::Stuck && slot().is_err() {
            return instead;
        }
        spaced.insert(op, Instant::now());
        op
    }

    /// A cancelled request's handler must stop (`want`: its abort marker) and never finish. `before`: the markers
    /// seen before the cancel was sent.
    async fn settle(&self, id: u64, want: u8, before: u8, already_unhonoured: bool) {
        let flags = self.markers.wait(id, want | DONE, SETTLE).await;
        if before & DONE != 0 {
            // It finished before its cancel went out (it started late, and that was counted).
        } else if flags & DONE != 0 {
            self.stats.problem(&self.stats.ran_on, format!("cancelled request {id} ran to its end anyway"));
        } else if flags & want == 0 && !already_unhonoured {
            self.stats
                .problem(&self.stats.unhonoured, format!("cancelled request {id} did not stop within {SETTLE:?}"));
        }
        self.markers.forget(id);
    }
}

/// The pause at the end of the warm-up: each worker parks between two operations (a 2025 HTTP client ends its
/// session first), so that the first memory sample, like the last, sees a server with nothing in flight.
#[derive(Default)]
struct Pause {
    parked: AtomicUsize,
    arrived: Notify,
    over: AtomicBool,
    resumed: Notify,
}

impl Pause {
    fn is_over(&self) -> bool {
        self.over.load(Ordering::SeqCst)
    }

    /// Parks a worker until the sample is taken.
    async fn park(&self) {
        let resumed = self.resumed.notified();
        tokio::pin!(resumed);
        resumed.as_mut().enable();
        self.parked.fetch_add(1, Ordering::SeqCst);
        self.arrived.notify_one();
        if !self.is_over() {
            resumed.await;
        }
    }

    /// A worker that ends before the pause (the run stopped) counts as parked.
    fn leave(&self) {
        self.parked.fetch_add(1, Ordering::SeqCst);
        self.arrived.notify_one();
    }

    /// Waits until `workers` workers are parked, or `within`; says whether they all are.
    async fn hold(&self, workers: usize, within: Duration) -> bool {
        let deadline = tokio::time::Instant::now() + within;
        while self.parked.load(Ordering::SeqCst) < workers {
            if tokio::time::timeout_at(deadline, self.arrived.notified()).await.is_err() {
                return false;
            }
        }
        true
    }

    /// Lets the parked workers go on (and any that come later pass).
    fn resume(&self) {
        self.over.store(true, Ordering::SeqCst);
        self.resumed.notify_waiters();
    }
}

/// How the soak reaches the server to call the testbed's `trim`: its stdio pipe, or a 2026 POST (no session).
enum Trimmer {
    Stdio(Arc<StdioConn>),
    Http(HttpClient),
}

/// Asks the server to give its allocator's free memory back (the testbed's `trim`), so that the RSS read next is
/// what the server holds rather than what its allocator keeps for later.
async fn trim(run: &Run, via: &Trimmer) -> Result<(), String> {
    let id = run.id();
    let deadline = Instant::now() + CALL_TIMEOUT;
    let answer = match via {
        Trimmer::Stdio(conn) => {
            let rx = conn.expect(id);
            conn.write(&format!("{}\n", call_body(run.era, id, "trim", json!({}), false))).await?;
            tokio::time::timeout_at(at(deadline), rx).await.ok().and_then(Result::ok)
        }
        Trimmer::Http(client) => {
            let response = client.send(&call_body(client.era, id, "trim", json!({}), false), deadline).await?;
            read_answer(response, id, deadline, Duration::ZERO).await.answer
        }
    };
    match answer {
        Some(answer) => {
            check(&Expect::Done, &answer).map_err(|e| format!("trim: {e}; got {}", shorten(&answer.to_string())))
        }
        None => Err(format!("trim: no answer within {CALL_TIMEOUT:?}")),
    }
}

/// A `tools/call` request of the era: a 2026 one carries its envelope in `_meta`.
fn call_body(era: Era, id: u64, tool: &str, arguments: Value, progress: bool) -> Value {
    let mut meta = Map::new();
    if progress {
        meta.insert("progressToken".into(), json!(id));
    }
    if era == Era::V2026 {
        add_envelope(&mut meta);
    }
    let mut params = json!({"name": tool, "arguments": arguments});
    if !meta.is_empty() {
        params["_meta"] = Value::Object(meta);
    }
    json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": params})
}

/// A flood or a large answer: the call, and on 2026 the envelope's log level, so that its logs are sent (2025 sends
/// every level until `logging/setLevel`).
fn heavy_body(era: Era, id: u64, op: Op) -> (Value, Expect) {
    let (tool, arguments, expect) = match op {
        Op::Flood => (
            "log_burst",
            json!({"count": FLOOD_LINES, "size": FLOOD_LINE}),
            Expect::Text(format!("burst {FLOOD_LINES}")),
        ),
        _ => ("large", json!({"mib": LARGE_MIB}), Expect::Length(LARGE_MIB << 20)),
    };
    let mut body = call_body(era, id, tool, arguments, false);
    if era == Era::V2026 {
        body["params"]["_meta"]["io.modelcontextprotocol/logLevel"] = json!("info");
    }
    (body, expect)
}

/// The URI a change touches: one under [`WATCHED`], [`BIG_URI`] bytes long.
fn big_uri() -> String {
    format!("{WATCHED}{}", "x".repeat(BIG_URI - WATCHED.len()))
}

/// The 2026 envelope: version, capabilities and client info.
fn add_envelope(meta: &mut Map<String, Value>) {
    meta.insert("io.modelcontextprotocol/protocolVersion".into(), json!(V2026_VERSION));
    meta.insert("io.modelcontextprotocol/clientCapabilities".into(), json!({}));
    meta.insert("io.modelcontextprotocol/clientInfo".into(), json!({"name": "soak", "version": "0"}));
}

fn initialize_body(id: u64) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "method": "initialize", "params": {
        "protocolVersion": V2025_VERSION, "capabilities": {}, "clientInfo": {"name": "soak", "version": "0"}}})
}

fn cancel_body(id: u64) -> Value {
    json!({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": id, "reason": "soak"}})
}

/// What a response must say.
enum Expect {
    Text(String),
    /// A text of this many bytes.
    Length(usize),
    /// A result, whatever it says.
    Done,
    Error,
}

fn check(expect: &Expect, answer: &Value) -> Result<(), String> {
    match expect {
        Expect::Text(text) => match answer["result"]["content"][0]["text"].as_str() {
            Some(got) if got == text => Ok(()),
            _ => Err(format!("expected the text {:?}", shorten(text))),
        },
        Expect::Length(n) => match answer["result"]["content"][0]["text"].as_str() {
            Some(got) if got.len() == *n => Ok(()),
            _ => Err(format!("expected a text of {n} bytes")),
        },
        Expect::Done if answer.get("result").is_some() && answer["result"]["isError"] != true => Ok(()),
        Expect::Done => Err("expected a result".into()),
        Expect::Error if answer.get("error").is_some() || answer["result"]["isError"] == true => Ok(()),
        Expect::Error => Err("a panicking tool must be answered with an error".into()),
    }
}

fn judge(run: &Run, id: u64, answer: &Value, expect: &Expect) {
    match check(expect, answer) {
        Ok(()) => Stats::add(&run.stats.answered, 1),
        Err(why) => {
            run.stats.problem(&run.stats.bad, format!("request {id}: {why}; got {}", shorten(&answer.to_string())))
        }
    }
}

fn is_response_to(message: &Value, id: u64) -> bool {
    message.get("method").is_none() && message.get("id").and_then(Value::as_u64) == Some(id)
}

fn echo_text(rng: &mut Rng) -> String {
    format!("soak {} {}", rng.next(), "·".repeat(rng.below(40) as usize))
}

fn big_text(rng: &mut Rng) -> String {
    let unit = format!("{:016x}", rng.next());
    unit.repeat(BIG_ECHO / unit.len())
}

/// The server's resident memory, from `/proc/PID/status`; `None` once the process is gone.
fn rss_kib(pid: u32) -> Option<u64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
}

fn at(instant: Instant) -> tokio::time::Instant {
    tokio::time::Instant::from_std(instant)
}

// ---------------------------------------------------------------------------------------------------------------
// The server process

struct ServerProcess {
    child: Child,
    pid: u32,
    /// The last lines of its stderr that were not markers or expected noise, for a crash report.
    tail: Arc<Mutex<VecDeque<String>>>,
}

/// The testbed (or, with `MCP_BENCH_SERVER=path`, another build of it).
fn testbed() -> Command {
    let mut command =
        Command::new(std::env::var_os("MCP_BENCH_SERVER").unwrap_or_else(|| env!("CARGO_BIN_EXE_testbed").into()));
    // No backtraces: a panic's report is written to stderr piece by piece, without the lock `eprintln!` takes.
    command.env("RUST_LOG", "info").env("RUST_BACKTRACE", "0").kill_on_drop(true);
    // The growth check looks for leaks, not for what glibc's allocator keeps of what the server freed. With its
    // default, glibc raises its mmap threshold (and with it the trim threshold) after each large buffer is freed, so
    // that the 20 MiB answers and 60 kB notifications of a run are later served from thread arenas whose free tops
    // (up to 64 MiB each) are never given back, not even by `malloc_trim`. A fixed threshold fixes the trim
    // threshold too (128 KiB); what the heaps still keep, free pages between live blocks, the testbed's `trim`
    // gives back before each sample (see `Memory`).
    command.env("MALLOC_MMAP_THRESHOLD_", "32768");
    command
}

/// Starts the testbed (on HTTP when `http`) with its stderr read into `run`'s markers; on HTTP also returns its URL.
async fn start_server(run: &Arc<Run>, http: bool) -> (ServerProcess, Option<ChildStdin>, Option<ChildStdout>, String) {
    let mut command = testbed();
    if http {
        command.args(["--http", "127.0.0.1:0"]).stdin(Stdio::null()).stdout(Stdio::null());
    } else {
        command.stdin(Stdio::piped()).stdout(Stdio::piped());
    }
    let mut child = command.stderr(Stdio::piped()).spawn().expect("spawn the testbed server");
    let pid = child.id().expect("a running child");
    let stderr = child.stderr.take().expect("piped stderr");
    let tail: Arc<Mutex<VecDeque<String>>> = Arc::default();
    let (address_tx, address_rx) = oneshot::channel::<String>();
    tokio::spawn({
        let (run, tail) = (run.clone(), tail.clone());
        async move {
            let mut address_tx = Some(address_tx);
            let mut lines = BufReader::new(stderr).lines();
            while let Ok(Some(line)) = lines.next_line().await {
                if run.markers.note(&line) {
                    continue;
                }
                if line.contains("a client stopped reading") {
                    Stats::add(&run.stats.cut_off, 1);
                }
                if let Some(address) = line.split("address=").nth(1) {
                    if let Some(tx) = address_tx.take() {
                        let _ = tx.send(address.split_whitespace().next().unwrap_or_default().to_owned());
                    }
                }
                const NOISE: [&str; 6] =
                    ["panicked at", "tool broke", "RUST_BACKTRACE", "handler panicked", "request cancelled", "soak"];
                if !NOISE.iter().any(|n| line.contains(n)) {
                    let mut tail = tail.lock().unwrap();
                    if tail.len() == 20 {
                        tail.pop_front();
                    }
                    tail.push_back(line);
                }
            }
        }
    });
    let url = if http {
        let address = tokio::time::timeout(Duration::from_secs(30), address_rx)
            .await
            .ok()
            .and_then(Result::ok)
            .expect("the server says where it listens");
        format!("http://{address}/mcp")
    } else {
        String::new()
    };
    let (stdin, stdout) = (child.stdin.take(), child.stdout.take());
    (ServerProcess { child, pid, tail }, stdin, stdout, url)
}

/// Waits (bounded) for the server to exit; says how it ended, `None` if cleanly.
async fn wait_exit(child: &mut Child, within: Duration) -> Option<String> {
    match tokio::time::timeout(within, child.wait()).await {
        Ok(Ok(status)) if status.success() => None,
        Ok(Ok(status)) => Some(format!("exited with {status}")),
        Ok(Err(e)) => Some(format!("could not be waited for: {e}")),
        Err(_) => {
            let _ = child.kill().await;
            Some(format!("did not exit within {within:?}"))
        }
    }
}

// ---------------------------------------------------------------------------------------------------------------
// Stdio: one pipe shared by every worker; one reader routes responses by id

/// A request's state on the stdio pipe.
const SENT: u8 = 1;
const ANSWERED: u8 = 2;
const CANCELLED: u8 = 3;
const GAVE_UP: u8 = 4;
const LATE: u8 = 5;
const RACE: u8 = 6;
const RACE_ANSWERED: u8 = 7;

#[derive(Default)]
struct Table {
    /// By id (ids are small and dense: one byte per request of the run).
    status: Vec<u8>,
    waiters: HashMap<u64, oneshot::Sender<Value>>,
}

impl Table {
    fn get(&self, id: u64) -> u8 {
        self.status.get(id as usize).copied().unwrap_or(0)
    }

    fn set(&mut self, id: u64, status: u8) {
        let i = id as usize;
        if self.status.len() <= i {
            self.status.resize(i + 1, 0);
        }
        self.status[i] = status;
    }
}

struct StdioConn {
    stdin: tokio::sync::Mutex<Option<ChildStdin>>,
    table: Mutex<Table>,
    /// The reader dawdles until then (a slow client).
    slow_until: Mutex<Instant>,
}

impl StdioConn {
    /// Registers a request about to be sent; its answer comes on the receiver.
    fn expect(&self, id: u64) -> oneshot::Receiver<Value> {
        let (tx, rx) = oneshot::channel();
        let mut table = self.table.lock().unwrap();
        table.set(id, SENT);
        table.waiters.insert(id, tx);
        rx
    }

    fn mark(&self, id: u64, status: u8) {
        self.table.lock().unwrap().set(id, status);
    }

    async fn write(&self, text: &str) -> Result<(), String> {
        let mut stdin = self.stdin.lock().await;
        let stdin = stdin.as_mut().ok_or("stdin is closed")?;
        stdin.write_all(text.as_bytes()).await.map_err(|e| format!("writing to the server: {e}"))?;
        stdin.flush().await.map_err(|e| format!("writing to the server: {e}"))
    }

    /// Sends `notifications/cancelled`; from the moment it is written, any response to `id` is one too many.
    async fn cancel(&self, id: u64) -> Result<(), String> {
        let mut stdin = self.stdin.lock().await;
        {
            let mut table = self.table.lock().unwrap();
            table.set(id, CANCELLED);
            table.waiters.remove(&id);
        }
        let stdin = stdin.as_mut().ok_or("stdin is closed")?;
        let line = format!("{}\n", cancel_body(id));
        stdin.write_all(line.as_bytes()).await.map_err(|e| format!("writing to the server: {e}"))?;
        stdin.flush().await.map_err(|e| format!("writing to the server: {e}"))
    }

    /// Waits for the answer to `id` until `deadline`, then judges it (or counts it lost).
    async fn answer(&self, run: &Run, id: u64, mut rx: oneshot::Receiver<Value>, deadline: Instant, expect: &Expect) {
        let answer = match tokio::time::timeout_at(at(deadline), &mut rx).await {
            Ok(Ok(answer)) => Some(answer),
            _ => {
                let mut table = self.table.lock().unwrap();
                if table.get(id) == SENT {
                    table.set(id, GAVE_UP);
                    table.waiters.remove(&id);
                    None
                } else {
                    // Answered just now.
                    drop(table);
                    rx.try_recv().ok()
                }
            }
        };
        match answer {
            Some(answer) => judge(run, id, &answer, expect),
            None => run.stats.problem(&run.stats.lost, format!("request {id}: no answer within {CALL_TIMEOUT:?}")),
        }
    }
}

/// Reads the server's stdout: routes each response to its waiter, and counts the ones that should not be.
async fn stdio_reader(stdout: ChildStdout, conn: Arc<StdioConn>, run: Arc<Run>) {
    let mut lines = BufReader::with_capacity(64 * 1024, stdout).lines();
    loop {
        let slow = *conn.slow_until.lock().unwrap() > Instant::now();
        if slow {
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        let line = match lines.next_line().await {
            Ok(Some(line)) => line,
            _ => break,
        };
        let message: Value = match serde_json::from_str(&line) {
            Ok(v) => v,
            Err(e) => {
                run.stats.problem(&run.stats.bad, format!("a stdout line that is not JSON ({e}): {}", shorten(&line)));
                continue;
            }
        };
        if message.get("method").is_some() {
            Stats::add(&run.stats.notifications, 1);
            continue;
        }
        let Some(id) = message.get("id").and_then(Value::as_u64) else {
            run.stats.problem(&run.stats.bad, format!("a response to no request of ours: {}", shorten(&line)));
            continue;
        };
        let mut table = conn.table.lock().unwrap();
        match table.get(id) {
            SENT => {
                table.set(id, ANSWERED);
                if let Some(waiter) = table.waiters.remove(&id) {
                    let _ = waiter.send(message);
                }
            }
            RACE => table.set(id, RACE_ANSWERED),
            GAVE_UP => {
                table.set(id, LATE);
                Stats::add(&run.stats.late, 1);
            }
            ANSWERED | LATE | RACE_ANSWERED => {
                drop(table);
                run.stats.problem(&run.stats.duplicated, format!("request {id} answered twice: {}", shorten(&line)));
            }
            CANCELLED => {
                drop(table);
                let what = format!("request {id} answered after its cancel: {}", shorten(&line));
                run.stats.problem(&run.stats.after_cancel, what);
            }
            _ => {
                drop(table);
                run.stats.problem(&run.stats.bad, format!("a response to an id never sent: {}", shorten(&line)));
            }
        }
    }
}

/// Registers and writes one call; returns what to wait for.
async fn stdio_send(
    run: &Run,
    conn: &StdioConn,
    tool: &str,
    arguments: Value,
    progress: bool,
) -> Option<(u64, oneshot::Receiver<Value>)> {
    let id = run.id();
    let rx = conn.expect(id);
    Stats::add(&run.stats.sent, 1);
    let line = format!("{}\n", call_body(run.era, id, tool, arguments, progress));
    match conn.write(&line).await {
        Ok(()) => Some((id, rx)),
        Err(e) => {
            run.stats.problem(&run.stats.bad, format!("request {id}: {e}"));
            run.stopped.store(true, Ordering::Relaxed);
            None
        }
    }
}

async fn stdio_call(run: &Run, conn: &StdioConn, tool: &str, arguments: Value, progress: bool, expect: Expect) {
    if let Some((id, rx)) = stdio_send(run, conn, tool, arguments, progress).await {
        conn.answer(run, id, rx, Instant::now() + CALL_TIMEOUT, &expect).await;
    }
}

async fn stdio_worker(run: Arc<Run>, conn: Arc<StdioConn>, mut rng: Rng) {
    let mix = &run.mix;
    let mut paused = false;
    while run.going() {
        if !paused && Instant::now() >= run.warm_end {
            paused = true;
            run.pause.park().await;
            continue;
        }
        let op = run.due(pick(&mut rng, mix));
        run.stats.op(op);
        match op {
            Op::Echo => {
                let text = echo_text(&mut rng);
                stdio_call(&run, &conn, "echo", json!({"text": text}), false, Expect::Text(text)).await;
            }
            Op::Burst => {
                // Many requests in one write; every one answered once.
                let mut lines = String::new();
                let mut waiting = Vec::new();
                for _ in 0..8 + rng.below(41) {
                    let (id, text) = (run.id(), echo_text(&mut rng));
                    lines.push_str(&call_body(run.era, id, "echo", json!({"text": text}), false).to_string());
                    lines.push('\n');
                    waiting.push((id, conn.expect(id), text));
                }
                Stats::add(&run.stats.sent, waiting.len() as u64);
                if let Err(e) = conn.write(&lines).await {
                    run.stats.problem(&run.stats.bad, format!("a burst: {e}"));
                    run.stopped.store(true, Ordering::Relaxed);
                    continue;
                }
                let deadline = Instant::now() + CALL_TIMEOUT;
                for (id, rx, text) in waiting {
                    conn.answer(&run, id, rx, deadline, &Expect::Text(text)).await;
                }
            }
            Op::Cancel | Op::Spin => {
                let _quiet = run.quiet.read().await;
                let id = run.id();
                run.markers.watch(id);
                conn.mark(id, SENT);
                let (tool, arguments) =
                    if op == Op::Cancel { ("sleep", json!({"ms": CANCELLED_SLEEP_MS})) } else { ("spin", json!({})) };
                Stats::add(&run.stats.sent, 1);
                let line = format!("{}\n", call_body(run.era, id, tool, arguments, false));
                if let Err(e) = conn.write(&line).await {
                    run.stats.problem(&run.stats.bad, format!("request {id}: {e}"));
                    run.markers.forget(id);
                    continue;
                }
                if op == Op::Cancel {
                    // Cancelled mid-way: once it started, a little later.
                    if run.markers.wait(id, START, START_TIMEOUT).await & START == 0 {
                        run.stats
                            .problem(&run.stats.lost, format!("sleep {id} did not start within {START_TIMEOUT:?}"));
                    }
                    tokio::time::sleep(rng.millis(0, 50)).await;
                } else {
                    tokio::time::sleep(rng.millis(10, 60)).await;
                }
                let before = run.markers.flags(id);
                if let Err(e) = conn.cancel(id).await {
                    run.stats.problem(&run.stats.bad, format!("cancelling {id}: {e}"));
                }
                Stats::add(&run.stats.cancelled, 1);
                run.settle(id, if op == Op::Cancel { ABORTED } else { SPIN_CANCELLED }, before, false).await;
            }
            Op::Race => {
                // A request and its cancel in one write: an answer or none, never two.
                let id = run.id();
                conn.mark(id, RACE);
                let text = echo_text(&mut rng);
                let lines =
                    format!("{}\n{}\n", call_body(run.era, id, "echo", json!({"text": text}), false), cancel_body(id));
                if let Err(e) = conn.write(&lines).await {
                    run.stats.problem(&run.stats.bad, format!("request {id}: {e}"));
                }
            }
            Op::Slow => {
                // The reader dawdles while a progress stream and a big answer come.
                let _heavy = run.heavy.lock().await;
                *conn.slow_until.lock().unwrap() = Instant::now() + rng.millis(200, 400);
                let big = big_text(&mut rng);
                let progress = stdio_send(&run, &conn, "progress", json!({}), true).await;
                let echo = stdio_send(&run, &conn, "echo", json!({"text": big}), false).await;
                let deadline = Instant::now() + CALL_TIMEOUT;
                if let Some((id, rx)) = progress {
                    conn.answer(&run, id, rx, deadline, &Expect::Text("reported".into())).await;
                }
                if let Some((id, rx)) = echo {
                    conn.answer(&run, id, rx, deadline, &Expect::Text(big)).await;
                }
            }
            Op::Disconnect => stdio_disconnect(&run).await,
            Op::Panic => {
                let _quiet = run.quiet.write().await;
                let tool = if rng.below(2) == 0 { "panic_async" } else { "panic_blocking" };
                stdio_call(&run, &conn, tool, json!({}), false, Expect::Error).await;
            }
            Op::Flood | Op::Large => {
                // Thousands of logs before the first `.await` (past the soft bound, dropped), or one answer past
                // the hard bound: the answer comes all the same.
                let _heavy = run.heavy.lock().await;
                let id = run.id();
                let rx = conn.expect(id);
                Stats::add(&run.stats.sent, 1);
                let (body, expect) = heavy_body(run.era, id, op);
                if let Err(e) = conn.write(&format!("{body}\n")).await {
                    run.stats.problem(&run.stats.bad, format!("request {id}: {e}"));
                    run.stopped.store(true, Ordering::Relaxed);
                    continue;
                }
                conn.answer(&run, id, rx, Instant::now() + CALL_TIMEOUT, &expect).await;
            }
            Op::Churn | Op::Stuck | Op::Change => {}
        }
    }
    if !paused {
        run.pause.leave();
    }
}

/// A client that goes away mid-stream: its own server process gets a request with a progress stream, then the end
/// of its input and a closed output. The process must cancel the request (its handler is dropped) and exit cleanly.
async fn stdio_disconnect(run: &Run) {
    let spawned = testbed().stdin(Stdio::piped()).stdout(Stdio::piped()).stderr(Stdio::piped()).spawn();
    let mut child = match spawned {
        Ok(c) => c,
        Err(e) => return run.stats.problem(&run.stats.bad, format!("spawning a testbed to disconnect from: {e}")),
    };
    let (mut stdin, stdout, stderr) = (child.stdin.take().unwrap(), child.stdout.take().unwrap(), child.stderr.take());
    let stderr_text = tokio::spawn(async move {
        let mut text = String::new();
        if let Some(stderr) = stderr {
            let mut lines = BufReader::new(stderr).lines();
            while let Ok(Some(line)) = lines.next_line().await {
                text.push_str(&line);
                text.push('\n');
            }
        }
        text
    });
    let mut out = String::new();
    if run.era == Era::V2025 {
        out.push_str(&format!("{}\n", initialize_body(0)));
        out.push_str("{\"jsonrpc\":\"2.0\",\"method\":\"notifications/initialized\"}\n");
    }
    let call = call_body(run.era, 1, "progress_then_sleep", json!({"ms": CANCELLED_SLEEP_MS}), true);
    out.push_str(&format!("{call}\n"));
    Stats::add(&run.stats.sent, 1);
    let mut lines = BufReader::new(stdout).lines();
    let wrote = stdin.write_all(out.as_bytes()).await.and(stdin.flush().await);
    let deadline = at(Instant::now() + START_TIMEOUT);
    let mut streaming = false;
    while wrote.is_ok() && !streaming {
        match tokio::time::timeout_at(deadline, lines.next_line()).await {
            Ok(Ok(Some(line))) => streaming = line.contains("notifications/progress"),
            _ => break,
        }
    }
    if !streaming {
        run.stats.problem(&run.stats.lost, "a stdio client saw no progress before disconnecting".into());
    }
    drop(stdin);
    drop(lines);
    Stats::add(&run.stats.cancelled, 1);
    let ended = wait_exit(&mut child, SETTLE * 2).await;
    let stderr = stderr_text.await.unwrap_or_default();
    if let Some(how) = ended {
        run.stats.problem(&run.stats.bad, format!("a stdio server whose client went away {how}: {}", shorten(&stderr)));
    }
    if stderr.contains("STREAM_SLEEP_DONE 1") {
        run.stats.problem(&run.stats.ran_on, "a disconnected stdio client's request ran to its end".into());
    } else if streaming && !stderr.contains("STREAM_SLEEP_ABORTED 1") {
        run.stats.problem(&run.stats.unhonoured, "a disconnected stdio client's request was not dropped".into());
    }
}

// ---------------------------------------------------------------------------------------------------------------
// HTTP: each worker is a client (a 2025 session, or stateless 2026 requests) on its own connections

/// An SSE response body, read event by event.
struct Sse {
    response: Option<reqwest::Response>,
    buffer: Vec<u8>,
    /// How much of `buffer` holds no event's end (a large event is scanned once, not on every chunk).
    scanned: usize,
    /// The id of the last event taken, for `Last-Event-ID`.
    last_id: Option<String>,
}

impl Sse {
    fn new(response: reqwest::Response) -> Sse {
        Sse { response: Some(response), buffer: Vec::new(), scanned: 0, last_id: None }
    }

    /// The next JSON-RPC message; `Ok(None)` when the stream ended; `Err` on a timeout or a transport error. With a
    /// `pace`, waits that long before each read from the connection (a slow reader).
    async fn next(&mut self, deadline: Instant, pace: Duration) -> Result<Option<Value>, String> {
        loop {
            while let Some(end) = self.buffer[self.scanned..].windows(2).position(|w| w == b"\n\n") {
                let end = self.scanned + end;
                self.scanned = 0;
                let raw: Vec<u8> = self.buffer.drain(..end + 2).collect();
                let raw = String::from_utf8_lossy(&raw);
                let mut data = String::new();
                for line in raw.lines() {
                    if let Some(id) = line.strip_prefix("id:") {
                        self.last_id = Some(id.trim().to_owned());
                    } else if let Some(d) = line.strip_prefix("data:") {
                        data.push_str(d.strip_prefix(' ').unwrap_or(d));
                    }
                }
                if data.trim().is_empty() {
                    continue; // a priming event or a keep-alive
                }
                return serde_json::from_str(&data).map(Some).map_err(|e| format!("an event that is not JSON: {e}"));
            }
            self.scanned = self.buffer.len().saturating_sub(1);
            let Some(response) = self.response.as_mut() else { return Ok(None) };
            if !pace.is_zero() {
                tokio::time::sleep(pace).await;
            }
            match tokio::time::timeout_at(at(deadline), response.chunk()).await {
                Err(_) => return Err("timed out".into()),
                Ok(Err(e)) => return Err(format!("the stream broke: {e}")),
                Ok(Ok(None)) => self.response = None,
                Ok(Ok(Some(chunk))) => self.buffer.extend_from_slice(&chunk),
            }
        }
    }
}

fn is_sse(response: &reqwest::Response) -> bool {
    response
        .headers()
        .get("content-type")
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.starts_with("text/event-stream"))
}

/// What came back for one request.
#[derive(Default)]
struct Answer {
    answer: Option<Value>,
    duplicates: Vec<Value>,
    strays: Vec<Value>,
    notifications: u64,
    /// Why it stopped short: a timeout, a broken stream, a stream left open after its response.
    error: Option<String>,
}

/// Reads a POST's answer (one JSON body or an SSE stream) up to the response to `id`, then on to the stream's end.
async fn read_answer(mut response: reqwest::Response, id: u64, deadline: Instant, pace: Duration) -> Answer {
    let mut out = Answer::default();
    if !is_sse(&response) {
        let mut body = Vec::new();
        loop {
            if !pace.is_zero() {
                tokio::time::sleep(pace).await;
            }
            match tokio::time::timeout_at(at(deadline), response.chunk()).await {
                Err(_) => {
                    out.error = Some("timed out reading the body".into());
                    return out;
                }
                Ok(Err(e)) => {
                    out.error = Some(format!("the body broke: {e}"));
                    return out;
                }
                Ok(Ok(None)) => break,
                Ok(Ok(Some(chunk))) => body.extend_from_slice(&chunk),
            }
        }
        if body.is_empty() {
            out.error = Some(format!("an empty {} answer", response.status()));
            return out;
        }
        match serde_json::from_slice::<Value>(&body) {
            Ok(v) if is_response_to(&v, id) => out.answer = Some(v),
            Ok(v) => out.strays.push(v),
            Err(e) => out.error = Some(format!("a {} body that is not JSON ({e})", response.status())),
        }
        return out;
    }
    let mut sse = Sse::new(response);
    let mut until = deadline;
    loop {
        match sse.next(until, pace).await {
            Ok(Some(m)) if m.get("method").is_some() => out.notifications += 1,
            Ok(Some(m)) if is_response_to(&m, id) && out.answer.is_none() => {
                out.answer = Some(m);
                // The response is the stream's last event.
                until = until.min(Instant::now() + SETTLE);
            }
            Ok(Some(m)) if is_response_to(&m, id) => out.duplicates.push(m),
            Ok(Some(m)) => out.strays.push(m),
            Ok(None) => return out,
            Err(e) if out.answer.is_some() => {
                out.error = Some(format!("the stream did not end after its response ({e})"));
                return out;
            }
            Err(e) => {
                out.error = Some(e);
                return out;
            }
        }
    }
}

fn judge_http(run: &Run, id: u64, got: Answer, expect: &Expect) {
    Stats::add(&run.stats.notifications, got.notifications);
    for d in &got.duplicates {
        run.stats.problem(&run.stats.duplicated, format!("request {id} answered twice: {}", shorten(&d.to_string())));
    }
    for s in &got.strays {
        run.stats.problem(&run.stats.bad, format!("request {id}'s stream carried {}", shorten(&s.to_string())));
    }
    match (&got.answer, got.error) {
        (Some(answer), None) => judge(run, id, answer, expect),
        (Some(answer), Some(e)) => {
            judge(run, id, answer, expect);
            run.stats.problem(&run.stats.bad, format!("request {id}: {e}"));
        }
        (None, e) => {
            let why = e.unwrap_or_else(|| "the stream ended without a response".into());
            run.stats.problem(&run.stats.lost, format!("request {id}: no answer: {why}"));
        }
    }
}

struct HttpClient {
    http: reqwest::Client,
    url: Arc<str>,
    era: Era,
    session: Option<String>,
}

impl HttpClient {
    /// A POST with the headers of the era: the session on 2025, the method and name headers on 2026.
    fn post(&self, body: &Value) -> reqwest::RequestBuilder {
        let mut r = self
            .http
            .post(&*self.url)
            .header("content-type", "application/json")
            .header("accept", ACCEPT)
            .body(body.to_string());
        match self.era {
            Era::V2025 => {
                r = r.header("mcp-protocol-version", V2025_VERSION);
                if let Some(s) = &self.session {
                    r = r.header("mcp-session-id", s);
                }
            }
            Era::V2026 => {
                r = r.header("mcp-protocol-version", V2026_VERSION);
                if let (Some(method), Some(_)) = (body["method"].as_str(), body.get("id")) {
                    r = r.header("mcp-method", method);
                    if let Some(name) = body["params"]["name"].as_str() {
                        r = r.header("mcp-name", name);
                    }
                }
            }
        }
        r
    }

    async fn send(&self, body: &Value, deadline: Instant) -> Result<reqwest::Response, String> {
        match tokio::time::timeout_at(at(deadline), self.post(body).send()).await {
            Err(_) => Err("no response headers in time".into()),
            Ok(Err(e)) => Err(format!("the POST failed: {e}")),
            Ok(Ok(r)) => Ok(r),
        }
    }

    /// Opens a 2025 session.
    async fn initialize(&mut self, run: &Run) -> Result<(), String> {
        self.session = None;
        let id = run.id();
        let deadline = Instant::now() + CALL_TIMEOUT;
        let response = self.send(&initialize_body(id), deadline).await?;
        if response.status() != 200 {
            return Err(format!("initialize: HTTP {}", response.status()));
        }
        self.session = response.headers().get("mcp-session-id").and_then(|v| v.to_str().ok()).map(str::to_owned);
        let got = read_answer(response, id, deadline, Duration::ZERO).await;
        if got.answer.as_ref().is_none_or(|a| a.get("result").is_none()) || self.session.is_none() {
            return Err(format!("initialize failed: {:?} {:?}", got.answer, got.error));
        }
        let initialized = json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
        let status = self.send(&initialized, deadline).await?.status();
        if status != 202 {
            return Err(format!("notifications/initialized: HTTP {status}"));
        }
        Ok(())
    }

    /// Ends the 2025 session.
    async fn end_session(&mut self) -> Result<(), String> {
        let Some(session) = self.session.take() else { return Ok(()) };
        let request = self
            .http
            .delete(&*self.url)
            .header("mcp-protocol-version", V2025_VERSION)
            .header("mcp-session-id", session)
            .send();
        match tokio::time::timeout(CALL_TIMEOUT, request).await {
            Ok(Ok(r)) if r.status() == 200 => Ok(()),
            Ok(Ok(r)) => Err(format!("DELETE: HTTP {}", r.status())),
            Ok(Err(e)) => Err(format!("DELETE failed: {e}")),
            Err(_) => Err("DELETE timed out".into()),
        }
    }

    /// One call that must be answered, read with `pace` between reads.
    async fn call(&self, run: &Run, tool: &str, arguments: Value, progress: bool, expect: Expect, pace: Duration) {
        let id = run.id();
        self.exchange(run, id, &call_body(self.era, id, tool, arguments, progress), expect, pace).await;
    }

    /// One request (`id`) that must be answered, read with `pace` between reads.
    async fn exchange(&self, run: &Run, id: u64, body: &Value, expect: Expect, pace: Duration) {
        Stats::add(&run.stats.sent, 1);
        let deadline = Instant::now() + CALL_TIMEOUT;
        let response = match self.send(body, deadline).await {
            Ok(r) => r,
            Err(e) => return run.stats.problem(&run.stats.lost, format!("request {id}: {e}")),
        };
        let got = read_answer(response, id, deadline, pace).await;
        judge_http(run, id, got, &expect);
    }

    /// 2025: a sleep (or a spin) cancelled with `notifications/cancelled` on the session while its stream is open;
    /// the stream must end with no response. 2026: a sleep whose POST is dropped once it started.
    async fn cancel(&self, run: &Run, rng: &mut Rng, spin: bool) {
        let _quiet = run.quiet.read().await;
        let id = run.id();
        run.markers.watch(id);
        let (tool, arguments) = if spin { ("spin", json!({})) } else { ("sleep", json!({"ms": CANCELLED_SLEEP_MS})) };
        let body = call_body(self.era, id, tool, arguments, false);
        Stats::add(&run.stats.sent, 1);
        let deadline = Instant::now() + CALL_TIMEOUT;
        if self.era == Era::V2026 {
            let pending = tokio::spawn(self.post(&body).send());
            if run.markers.wait(id, START, START_TIMEOUT).await & START == 0 {
                run.stats.problem(&run.stats.lost, format!("sleep {id} did not start within {START_TIMEOUT:?}"));
            }
            tokio::time::sleep(rng.millis(0, 50)).await;
            if pending.is_finished() {
                run.stats.problem(&run.stats.bad, format!("sleep {id} ended its POST before its cancel"));
            }
            let before = run.markers.flags(id);
            pending.abort();
            Stats::add(&run.stats.cancelled, 1);
            return run.settle(id, ABORTED, before, false).await;
        }
        let response = match self.send(&body, deadline).await {
            Ok(r) if r.status() == 200 && is_sse(&r) => r,
            Ok(r) => {
                run.markers.forget(id);
                let what = format!("request {id}: HTTP {} {:?}", r.status(), r.headers().get("content-type"));
                return run.stats.problem(&run.stats.bad, what);
            }
            Err(e) => {
                run.markers.forget(id);
                return run.stats.problem(&run.stats.lost, format!("request {id}: {e}"));
            }
        };
        let mut stream = Sse::new(response);
        if spin {
            tokio::time::sleep(rng.millis(10, 60)).await;
        } else {
            if run.markers.wait(id, START, START_TIMEOUT).await & START == 0 {
                run.stats.problem(&run.stats.lost, format!("sleep {id} did not start within {START_TIMEOUT:?}"));
            }
            tokio::time::sleep(rng.millis(0, 50)).await;
        }
        let before = run.markers.flags(id);
        match self.send(&cancel_body(id), deadline).await {
            Ok(r) if r.status() == 202 => {}
            Ok(r) => run.stats.problem(&run.stats.bad, format!("cancel of {id}: HTTP {}", r.status())),
            Err(e) => run.stats.problem(&run.stats.bad, format!("cancel of {id}: {e}")),
        }
        Stats::add(&run.stats.cancelled, 1);
        // The cancelled request's stream ends, with no response.
        let until = Instant::now() + SETTLE;
        let mut unhonoured = false;
        loop {
            match stream.next(until, Duration::ZERO).await {
                Ok(Some(m)) if is_response_to(&m, id) => {
                    let what = format!("request {id} answered after its cancel: {}", shorten(&m.to_string()));
                    run.stats.problem(&run.stats.after_cancel, what);
                }
                Ok(Some(_)) => {}
                Ok(None) => break,
                Err(e) => {
                    let what = format!("the stream of cancelled request {id} did not end: {e}");
                    run.stats.problem(&run.stats.unhonoured, what);
                    unhonoured = true;
                    break;
                }
            }
        }
        run.settle(id, if spin { SPIN_CANCELLED } else { ABORTED }, before, unhonoured).await;
    }

    /// A slow reader: a progress stream and a big answer, each read with pauses.
    async fn slow(&self, run: &Run, rng: &mut Rng) {
        let pace = rng.millis(10, 40);
        self.call(run, "progress", json!({}), true, Expect::Text("reported".into()), pace).await;
        let big = big_text(rng);
        self.call(run, "echo", json!({"text": big}), false, Expect::Text(big), rng.millis(5, 20)).await;
    }

    /// A flood before the first `.await` or a large answer (see [`heavy_body`]): the answer comes all the same.
    async fn heavy(&self, run: &Run, op: Op) {
        let id = run.id();
        let (body, expect) = heavy_body(self.era, id, op);
        self.exchange(run, id, &body, expect, Duration::ZERO).await;
    }

    /// A change for the stuck readers to miss: a resource update with a large URI under [`WATCHED`], or a tool
    /// disabled and enabled again (`add`, which the soak never calls: a tool the mix calls could be found disabled
    /// in between, as with the testbed's `flip_echo`).
    async fn change(&self, run: &Run, rng: &mut Rng) {
        if rng.below(3) > 0 {
            return self.call(run, "touch", json!({"uri": big_uri()}), false, Expect::Done, Duration::ZERO).await;
        }
        for enabled in [false, true] {
            let arguments = json!({"kind": "tool", "name": "add", "enabled": enabled});
            self.call(run, "toggle", arguments, false, Expect::Text("ok".into()), Duration::ZERO).await;
        }
    }

    /// A reader that stops reading, held to the end of the run (see [`StuckReader`]). 2026: a `subscriptions/listen`
    /// for tool list changes and the resources under [`WATCHED`]. 2025: a session of its own, subscribed to
    /// [`big_uri`], whose standalone (GET) stream is the one not read.
    async fn stuck(&self, run: &Run) {
        Stats::add(&run.stats.stuck, 1);
        let deadline = Instant::now() + CALL_TIMEOUT;
        let authority = self.url.trim_start_matches("http://").split('/').next().unwrap_or_default().to_owned();
        let (request, session) = match self.era {
            Era::V2026 => {
                let mut meta = Map::new();
                add_envelope(&mut meta);
                let params = json!({
                    "notifications": {"toolsListChanged": true, "resourceSubscriptions": [WATCHED]},
                    "_meta": meta,
                });
                let body =
                    json!({"jsonrpc": "2.0", "id": run.id(), "method": "subscriptions/listen", "params": params})
                        .to_string();
                let request = format!(
                    "POST /mcp HTTP/1.1\r\nHost: {authority}\r\nContent-Type: application/json\r\nAccept: {ACCEPT}\r\n\
                     Mcp-Protocol-Version: {V2026_VERSION}\r\nMcp-Method: subscriptions/listen\r\n\
                     Content-Length: {}\r\n\r\n{body}",
                    body.len()
                );
                (request, None)
            }
            Era::V2025 => {
                let mut own =
                    HttpClient { http: self.http.clone(), url: self.url.clone(), era: Era::V2025, session: None };
                if let Err(e) = own.initialize(run).await {
                    return run.stats.problem(&run.stats.bad, format!("a stuck reader's session: {e}"));
                }
                let id = run.id();
                let subscribe =
                    json!({"jsonrpc": "2.0", "id": id, "method": "resources/subscribe", "params": {"uri": big_uri()}});
                let subscribed = match own.send(&subscribe, deadline).await {
                    Ok(r) => {
                        read_answer(r, id, deadline, Duration::ZERO).await.answer.filter(|a| a.get("result").is_some())
                    }
                    Err(_) => None,
                };
                let session = own.session.take().unwrap_or_default();
                if subscribed.is_none() {
                    let _ = HttpClient { session: Some(session), ..own }.end_session().await;
                    return run.stats.problem(&run.stats.bad, "a stuck reader's session could not subscribe".into());
                }
                let request = format!(
                    "GET /mcp HTTP/1.1\r\nHost: {authority}\r\nAccept: text/event-stream\r\n\
                     Mcp-Protocol-Version: {V2025_VERSION}\r\nMcp-Session-Id: {session}\r\n\r\n"
                );
                (request, Some(session))
            }
        };
        match stuck_connection(&authority, request.as_bytes(), deadline).await {
            Ok(socket) => run.stuck.lock().unwrap().push(StuckReader { socket, session }),
            Err(e) => {
                run.stats.problem(&run.stats.bad, format!("a stuck reader: {e}"));
                if let Some(session) = session {
                    let _ = HttpClient {
                        http: self.http.clone(),
                        url: self.url.clone(),
                        era: Era::V2025,
                        session: Some(session),
                    }
                    .end_session()
                    .await;
                }
            }
        }
    }

    /// A client that drops its stream after the first event. 2025: the request goes on, and resuming the stream
    /// with `Last-Event-ID` must deliver its response exactly once. 2026: closing the stream cancels the request.
    async fn disconnect(&self, run: &Run, rng: &mut Rng) {
        let _quiet = if self.era == Era::V2026 { Some(run.quiet.read().await) } else { None };
        let id = run.id();
        // 2025: mostly a response due within a millisecond or two, so that it races the resuming GET.
        let ms = match self.era {
            Era::V2025 if rng.below(4) > 0 => rng.below(3),
            Era::V2025 => rng.below(20),
            Era::V2026 => CANCELLED_SLEEP_MS,
        };
        if self.era == Era::V2026 {
            run.markers.watch(id);
        }
        // 2025: one client in four goes away for good (its response is kept for a resume that never comes).
        let abandon = self.era == Era::V2025 && rng.below(4) == 0;
        let body = call_body(self.era, id, "progress_then_sleep", json!({"ms": ms}), true);
        Stats::add(if abandon { &run.stats.abandoned } else { &run.stats.sent }, 1);
        let deadline = Instant::now() + CALL_TIMEOUT;
        let mut stream = match self.send(&body, deadline).await {
            Ok(r) if r.status() == 200 && is_sse(&r) => Sse::new(r),
            Ok(r) => {
                run.markers.forget(id);
                return run.stats.problem(&run.stats.bad, format!("request {id}: HTTP {} and no stream", r.status()));
            }
            Err(e) => {
                run.markers.forget(id);
                return run.stats.problem(&run.stats.lost, format!("request {id}: {e}"));
            }
        };
        match stream.next(deadline, Duration::ZERO).await {
            Ok(Some(m)) if m["method"] == "notifications/progress" => {}
            other => {
                run.markers.forget(id);
                let what = format!("request {id}: expected a progress notification first, got {other:?}");
                return run.stats.problem(&run.stats.bad, what);
            }
        }
        let last_id = stream.last_id.take();
        let before = run.markers.flags(id);
        drop(stream);
        if self.era == Era::V2026 {
            Stats::add(&run.stats.cancelled, 1);
            return run.settle(id, ABORTED, before, false).await;
        }
        if abandon {
            return;
        }
        let (Some(last_id), Some(session)) = (last_id, &self.session) else {
            return run.stats.problem(&run.stats.bad, format!("request {id}: a 2025 event without an id"));
        };
        let resume = self
            .http
            .get(&*self.url)
            .header("accept", "text/event-stream")
            .header("mcp-protocol-version", V2025_VERSION)
            .header("mcp-session-id", session)
            .header("last-event-id", &last_id)
            .send();
        let response = match tokio::time::timeout_at(at(deadline), resume).await {
            Ok(Ok(r)) if r.status() == 200 => r,
            Ok(Ok(r)) => return run.stats.problem(&run.stats.bad, format!("resuming {id}: HTTP {}", r.status())),
            Ok(Err(e)) => return run.stats.problem(&run.stats.bad, format!("resuming {id}: {e}")),
            Err(_) => return run.stats.problem(&run.stats.lost, format!("resuming {id}: no response headers")),
        };
        let mut got = read_answer(response, id, deadline, Duration::ZERO).await;
        if let Some(e) = got.error.as_mut() {
            *e = format!("{e} (resumed after event {last_id}, {ms} ms sleep)");
        } else if got.answer.is_none() {
            got.error = Some(format!("the resumed stream (after event {last_id}, {ms} ms sleep) ended without it"));
        }
        judge_http(run, id, got, &Expect::Text(format!("slept {ms} ms")));
    }
}

/// A reader that stopped reading: a connection with a small receive buffer whose response head was read, and nothing
/// after it; on 2025 its own session. At the end of the run the connection is closed and the session ended.
struct StuckReader {
    socket: tokio::net::TcpStream,
    session: Option<String>,
}

/// Sends `request` on a connection with a small receive buffer and reads the response head (a 200 event stream),
/// and only what comes with it.
async fn stuck_connection(authority: &str, request: &[u8], deadline: Instant) -> Result<tokio::net::TcpStream, String> {
    let addr: std::net::SocketAddr = authority.parse().map_err(|e| format!("the address {authority}: {e}"))?;
    let socket = tokio::net::TcpSocket::new_v4().map_err(|e| format!("a socket: {e}"))?;
    socket.set_recv_buffer_size(4096).map_err(|e| format!("a small receive buffer: {e}"))?;
    let mut stream = match tokio::time::timeout_at(at(deadline), socket.connect(addr)).await {
        Ok(Ok(s)) => s,
        Ok(Err(e)) => return Err(format!("connecting: {e}")),
        Err(_) => return Err("connecting timed out".into()),
    };
    stream.write_all(request).await.map_err(|e| format!("writing the request: {e}"))?;
    let mut head = Vec::new();
    let mut chunk = [0; 512];
    let until = at(deadline.min(Instant::now() + START_TIMEOUT));
    while !head.windows(4).any(|w| w == b"\r\n\r\n") {
        match tokio::time::timeout_at(until, stream.read(&mut chunk)).await {
            Ok(Ok(0)) => return Err("the connection closed before its response head".into()),
            Ok(Ok(n)) => head.extend_from_slice(&chunk[..n]),
            Ok(Err(e)) => return Err(format!("reading the response head: {e}")),
            Err(_) => return Err(format!("no response head within {START_TIMEOUT:?}")),
        }
    }
    let head = String::from_utf8_lossy(&head).to_ascii_lowercase();
    if !head.starts_with("http/1.1 200") || !head.contains("content-type: text/event-stream") {
        return Err(format!("expected a 200 event stream: {}", shorten(&head)));
    }
    Ok(stream)
}

async fn http_worker(run: Arc<Run>, url: Arc<str>, mut rng: Rng) {
    let http = reqwest::Client::builder().pool_max_idle_per_host(8).build().expect("an HTTP client");
    let mut client = HttpClient { http, url, era: run.era, session: None };
    let mix = &run.mix;
    let mut ops_in_session = 0;
    let mut paused = false;
    while run.going() {
        if !paused && Instant::now() >= run.warm_end {
            paused = true;
            // 2025: the session ends first, so that what its event store keeps is not in the sample.
            if let Err(e) = client.end_session().await {
                run.stats.problem(&run.stats.bad, e);
            }
            ops_in_session = 0;
            run.pause.park().await;
            continue;
        }
        if run.era == Era::V2025 && (client.session.is_none() || ops_in_session >= SESSION_OPS) {
            if ops_in_session > 0 {
                run.stats.op(Op::Churn);
            }
            if let Err(e) = client.end_session().await {
                run.stats.problem(&run.stats.bad, e);
            }
            if let Err(e) = client.initialize(&run).await {
                run.stats.problem(&run.stats.bad, e);
                tokio::time::sleep(Duration::from_millis(200)).await;
                continue;
            }
            ops_in_session = 0;
        }
        ops_in_session += 1;
        let op = run.due(pick(&mut rng, mix));
        run.stats.op(op);
        match op {
            Op::Cancel => client.cancel(&run, &mut rng, false).await,
            Op::Spin => client.cancel(&run, &mut rng, true).await,
            Op::Slow => client.slow(&run, &mut rng).await,
            Op::Disconnect => client.disconnect(&run, &mut rng).await,
            Op::Flood | Op::Large => client.heavy(&run, op).await,
            Op::Change => client.change(&run, &mut rng).await,
            Op::Stuck => client.stuck(&run).await,
            Op::Panic => {
                let _quiet = run.quiet.write().await;
                let tool = if rng.below(2) == 0 { "panic_async" } else { "panic_blocking" };
                client.call(&run, tool, json!({}), false, Expect::Error, Duration::ZERO).await;
            }
            _ => {
                let text = echo_text(&mut rng);
                client.call(&run, "echo", json!({"text": text}), false, Expect::Text(text), Duration::ZERO).await;
            }
        }
    }
    if !paused {
        run.pause.leave();
    }
    if let Err(e) = client.end_session().await {
        run.stats.problem(&run.stats.bad, e);
    }
}

// ---------------------------------------------------------------------------------------------------------------
// Running

struct Report {
    label: String,
    failures: Vec<String>,
}

/// The server's resident memory in KiB: at the first sample (the end of the warm-up) and the last (after the
/// workers, stuck readers and sessions are gone), each read after the testbed's `trim` and before it; the peak in
/// between, as it was (untrimmed).
#[derive(Default)]
struct Memory {
    start: Option<u64>,
    start_untrimmed: Option<u64>,
    end: Option<u64>,
    end_untrimmed: Option<u64>,
    peak: u64,
    /// What went wrong while measuring (a pause not reached, a trim not answered).
    problems: Vec<String>,
}

async fn run_one(transport: Transport, era: Era, args: &Args, seed: u64) -> Report {
    let label = format!("{} {}", transport.name(), era.name());
    let mix = mix(transport, era, &args.only);
    if mix.is_empty() {
        println!("{label:<10} skipped: no operation of --only applies");
        return Report { label, failures: Vec::new() };
    }
    let started = Instant::now();
    let warm_end = started + Duration::from_secs(args.warmup);
    let run = Arc::new(Run {
        transport,
        era,
        mix,
        stats: Stats::default(),
        markers: Markers::default(),
        next_id: AtomicU64::new(1),
        warm_end,
        pause: Pause::default(),
        deadline: warm_end + Duration::from_secs(args.seconds),
        stopped: AtomicBool::new(false),
        spaced: Mutex::default(),
        quiet: tokio::sync::RwLock::new(()),
        heavy: tokio::sync::Mutex::new(()),
        stuck: Mutex::default(),
        stuck_slots: AtomicUsize::new(MAX_STUCK),
    });
    let (mut server, stdin, stdout, url) = start_server(&run, transport == Transport::Http).await;
    let mut workers = Vec::new();
    let mut conn = None;
    let mut failures = Vec::new();
    if transport == Transport::Stdio {
        let c = Arc::new(StdioConn {
            stdin: tokio::sync::Mutex::new(stdin),
            table: Mutex::default(),
            slow_until: Mutex::new(Instant::now()),
        });
        tokio::spawn(stdio_reader(stdout.expect("piped stdout"), c.clone(), run.clone()));
        if era == Era::V2025 {
            let id = run.id();
            let rx = c.expect(id);
            let handshake =
                format!("{}\n{{\"jsonrpc\":\"2.0\",\"method\":\"notifications/initialized\"}}\n", initialize_body(id));
            let answered = match c.write(&handshake).await {
                Ok(()) => tokio::time::timeout(CALL_TIMEOUT, rx).await.ok().and_then(Result::ok),
                Err(_) => None,
            };
            if answered.is_none_or(|a| a.get("result").is_none()) {
                failures.push("the stdio handshake failed".to_owned());
                run.stopped.store(true, Ordering::Relaxed);
            }
        }
        for w in 0..args.concurrency {
            workers.push(tokio::spawn(stdio_worker(run.clone(), c.clone(), Rng::new(seed ^ (w as u64 + 1)))));
        }
        conn = Some(c);
    } else {
        let url: Arc<str> = url.as_str().into();
        for w in 0..args.concurrency {
            workers.push(tokio::spawn(http_worker(run.clone(), url.clone(), Rng::new(seed ^ (w as u64 + 1)))));
        }
    }

    // Resident memory: at the end of the warm-up and at the end, each time with nothing in flight and the
    // allocator's free memory given back (what the server holds), and its peak in between.
    let trimmer = Arc::new(match &conn {
        Some(c) => Trimmer::Stdio(c.clone()),
        None => {
            let http = reqwest::Client::new();
            Trimmer::Http(HttpClient { http, url: url.as_str().into(), era: Era::V2026, session: None })
        }
    });
    let pid = server.pid;
    let sampling = Arc::new(AtomicBool::new(true));
    let sampler = tokio::spawn({
        let (sampling, run, label, every) = (sampling.clone(), run.clone(), label.clone(), args.every);
        let (trimmer, workers) = (trimmer.clone(), args.concurrency);
        async move {
            let mut memory = Memory::default();
            while Instant::now() < warm_end {
                if rss_kib(pid).is_none() {
                    // The server is gone: stop the workers rather than let them fail in a loop.
                    run.stopped.store(true, Ordering::Relaxed);
                    run.pause.resume();
                    return memory;
                }
                tokio::time::sleep(Duration::from_millis(250)).await;
            }
            if !run.pause.hold(workers, CALL_TIMEOUT).await {
                memory.problems.push(format!("not every worker paused within {CALL_TIMEOUT:?} for the first sample"));
            }
            memory.start_untrimmed = rss_kib(pid);
            if let Err(e) = trim(&run, &trimmer).await {
                memory.problems.push(e);
            }
            memory.start = rss_kib(pid);
            run.pause.resume();
            memory.peak = memory.start_untrimmed.unwrap_or(0);
            let mut next_line = Instant::now() + Duration::from_secs(every);
            while sampling.load(Ordering::Relaxed) {
                let Some(now) = rss_kib(pid) else {
                    run.stopped.store(true, Ordering::Relaxed);
                    break;
                };
                memory.peak = memory.peak.max(now);
                if every > 0 && Instant::now() >= next_line {
                    next_line += Duration::from_secs(every);
                    let s = &run.stats;
                    let problems = [&s.lost, &s.duplicated, &s.after_cancel, &s.ran_on, &s.unhonoured, &s.bad];
                    println!(
                        "  {label} at {:>5} s: sent {}, answered {}, cancelled {}, problems {}, RSS {now} KiB",
                        warm_end.elapsed().as_secs(),
                        Stats::get(&s.sent),
                        Stats::get(&s.answered),
                        Stats::get(&s.cancelled),
                        problems.iter().map(|c| Stats::get(c)).sum::<u64>(),
                    );
                }
                tokio::time::sleep(Duration::from_millis(250)).await;
            }
            memory
        }
    });
    for w in workers {
        let _ = w.await;
    }
    // The readers that stopped reading are closed (2025: their sessions ended): the server lets them go.
    let stuck = std::mem::take(&mut *run.stuck.lock().unwrap());
    if !stuck.is_empty() {
        let http = reqwest::Client::new();
        for reader in stuck {
            drop(reader.socket);
            let mut client = HttpClient { http: http.clone(), url: url.as_str().into(), era, session: reader.session };
            if let Err(e) = client.end_session().await {
                run.stats.problem(&run.stats.bad, format!("ending a stuck reader's session: {e}"));
            }
        }
    }
    // Late responses, duplicates and answers after a cancel still count while things settle.
    tokio::time::sleep(Duration::from_secs(1)).await;
    sampling.store(false, Ordering::Relaxed);
    let mut memory = sampler.await.unwrap_or_default();
    memory.end_untrimmed = rss_kib(pid);
    if memory.end_untrimmed.is_some() {
        if let Err(e) = trim(&run, &trimmer).await {
            memory.problems.push(e);
        }
    }
    memory.end = rss_kib(pid);

    // Stop the server as its client would: stdio by closing its input, HTTP by SIGTERM.
    let exit = if let Some(c) = &conn {
        c.stdin.lock().await.take();
        wait_exit(&mut server.child, Duration::from_secs(10)).await
    } else {
        // The shell's own `kill`: there may be no kill(1) binary.
        let _ = std::process::Command::new("sh").args(["-c", "kill -TERM \"$1\"", "sh", &pid.to_string()]).status();
        wait_exit(&mut server.child, Duration::from_secs(10)).await
    };
    if let Some(c) = &conn {
        let table = c.table.lock().unwrap();
        let raced = |s: u8| table.status.iter().filter(|&&x| x == s).count() as u64;
        Stats::add(&run.stats.raced_answered, raced(RACE_ANSWERED));
        Stats::add(&run.stats.raced_silent, raced(RACE));
    }

    let s = &run.stats;
    let g = Stats::get;
    let (sent, answered, cancelled, lost) = (g(&s.sent), g(&s.answered), g(&s.cancelled), g(&s.lost));
    let (dup, after, ran_on, unhonoured, bad) =
        (g(&s.duplicated), g(&s.after_cancel), g(&s.ran_on), g(&s.unhonoured), g(&s.bad));
    let rss = match (memory.start, memory.end) {
        (Some(a), Some(b)) => {
            let untrimmed = |v: Option<u64>| v.map_or("?".to_owned(), |v| v.to_string());
            format!(
                "RSS {a} -> {b} KiB ({:+} KiB; untrimmed {} -> {}, peak {})",
                b as i64 - a as i64,
                untrimmed(memory.start_untrimmed),
                untrimmed(memory.end_untrimmed),
                memory.peak
            )
        }
        _ => "RSS unknown (the server was gone)".to_owned(),
    };
    let ops: Vec<String> = OPS
        .iter()
        .enumerate()
        .filter(|(i, _)| g(&s.ops[*i]) > 0)
        .map(|(i, (_, name))| format!("{name} {}", g(&s.ops[i])))
        .collect();
    let raced = if transport == Transport::Stdio {
        format!(", raced {} ({} answered once)", g(&s.raced_answered) + g(&s.raced_silent), g(&s.raced_answered))
    } else if era == Era::V2025 {
        format!(", abandoned {}", g(&s.abandoned))
    } else {
        String::new()
    };
    let stuck = if g(&s.stuck) + g(&s.cut_off) > 0 {
        format!(", {} stuck readers ({} times a client was cut off at the hard bound)", g(&s.stuck), g(&s.cut_off))
    } else {
        String::new()
    };
    println!(
        "{label:<10} sent {sent:>6}  answered {answered:>6}  cancelled {cancelled:>5}  lost {lost}  duplicated {dup}  \
         after-cancel {after}  ran-on {ran_on}  unhonoured {unhonoured}  bad {bad}  late {}  |  {rss}  |  {}; \
         {} notifications{raced}{stuck}",
        g(&s.late),
        ops.join(", "),
        g(&s.notifications),
    );
    for (n, what) in
        [(lost, "lost"), (dup, "duplicated"), (after, "answered after a cancel"), (ran_on, "ran on after a cancel")]
            .into_iter()
            .chain([(unhonoured, "cancels unhonoured"), (bad, "bad answers or errors")])
    {
        if n > 0 {
            failures.push(format!("{n} {what}"));
        }
    }
    failures.extend(memory.problems.iter().map(|p| format!("measuring memory: {p}")));
    match (memory.start, memory.end) {
        (Some(a), Some(b)) if b.saturating_sub(a) > args.max_rss_growth_kib => {
            failures.push(format!("RSS grew by {} KiB, over the bound of {} KiB", b - a, args.max_rss_growth_kib))
        }
        (Some(_), Some(_)) => {}
        _ => failures.push("the server's RSS could not be read (did it die?)".into()),
    }
    if let Some(how) = exit {
        let tail: Vec<String> = server.tail.lock().unwrap().iter().cloned().collect();
        failures.push(format!("the server {how}; its last stderr lines:\n    {}", tail.join("\n    ")));
    }
    if !failures.is_empty() {
        for p in s.problems.lock().unwrap().iter() {
            println!("    {label}: {p}");
        }
    }
    Report { label, failures }
}

fn main() {
    let args = parse_args();
    println!(
        "soak: {} s per run after a {} s warm-up, concurrency {}, RSS bound {} KiB, seed {}",
        args.seconds, args.warmup, args.concurrency, args.max_rss_growth_kib, args.seed
    );
    let runtime = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().unwrap();
    let mut reports = Vec::new();
    for (i, &transport) in args.transports.iter().enumerate() {
        for (j, &era) in args.eras.iter().enumerate() {
            let seed = args.seed.wrapping_add((i * 2 + j) as u64 * 0x1000);
            reports.push(runtime.block_on(run_one(transport, era, &args, seed)));
        }
    }
    let failed: Vec<&Report> = reports.iter().filter(|r| !r.failures.is_empty()).collect();
    if failed.is_empty() {
        println!(
            "soak: PASS ({} runs: nothing lost, duplicated or answered after a cancel; RSS growth within {} KiB)",
            reports.len(),
            args.max_rss_growth_kib
        );
        return;
    }
    for r in &failed {
        println!("soak: FAIL {}: {}", r.label, r.failures.join("; "));
    }
    println!("soak: FAIL ({} of {} runs; seed {})", failed.len(), reports.len(), args.seed);
    runtime.shutdown_timeout(Duration::from_secs(1));
    std::process::exit(1);
}
