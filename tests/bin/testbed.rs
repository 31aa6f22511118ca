//! A server with one tool per behaviour the integration tests check. Markers on stderr let a test see what happened
//! inside the process.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use mcp::{CallToolResult, Content, Context, LogLevel, State};

/// One kind of state: a counter.
#[derive(Default)]
struct Counter(AtomicU64);

/// Another kind of state: configuration.
struct Config {
    greeting: String,
}

/// Count, from an async tool, greeting with the configured word.
#[mcp::tool]
async fn count(counter: &State<Counter>, config: &State<Config>) -> String {
    tokio::task::yield_now().await;
    format!("{} {}", config.greeting, counter.0.fetch_add(1, Ordering::SeqCst) + 1)
}

/// Count, from a plain function.
#[mcp::tool]
fn count_blocking(counter: &State<Counter>, ctx: &Context) -> String {
    let greeting = &ctx.state::<Config>().expect("configured").greeting;
    format!("{greeting} {}", counter.0.fetch_add(1, Ordering::SeqCst) + 1)
}

#[derive(serde::Deserialize, schemars::JsonSchema)]
struct Pair {
    a: i64,
    b: i64,
}

/// A custom method with typed params: `{"pair": {"a": 1, "b": 2}, "scale": 10}` answers `{"sum": 30}`.
#[mcp::method(name = "testbed/sum")]
fn sum(pair: Pair, scale: Option<i64>) -> Result<mcp::Json<serde_json::Value>, mcp::Error> {
    let total =
        (pair.a + pair.b).checked_mul(scale.unwrap_or(1)).ok_or_else(|| mcp::Error::invalid_params("overflow"))?;
    Ok(mcp::Json(serde_json::json!({ "sum": total })))
}

/// A custom async method that waits `ms`; prints `WAIT_ABORTED id` when dropped by a cancel.
#[mcp::method(name = "testbed/wait")]
async fn wait(ms: u64, counter: &State<Counter>, ctx: &Context) -> mcp::Json<serde_json::Value> {
    struct Aborted(String, bool);
    impl Drop for Aborted {
        fn drop(&mut self) {
            if !self.1 {
                eprintln!("WAIT_ABORTED {}", self.0);
            }
        }
    }
    let mut guard = Aborted(ctx.request_id().to_string(), false);
    eprintln!("WAIT_START {}", guard.0);
    tokio::time::sleep(Duration::from_millis(ms)).await;
    guard.1 = true;
    mcp::Json(serde_json::json!({ "waited": ms, "count": counter.0.load(Ordering::SeqCst) }))
}

/// Echo the text back.
#[mcp::tool]
async fn echo(text: String) -> String {
    text
}

/// Echo the text back, from a plain function.
#[mcp::tool]
fn echo_blocking(text: String) -> String {
    text
}

/// Greet someone.
#[mcp::tool]
fn greet(
    /// Who to greet.
    name: String,
    /// The greeting (default "Hello").
    greeting: Option<String>,
) -> String {
    format!("{}, {name}!", greeting.as_deref().unwrap_or("Hello"))
}

/// Sleep for `ms` milliseconds, then answer; prints `SLEEP_START id`, then `SLEEP_DONE id` or `SLEEP_ABORTED id`
/// on stderr.
#[mcp::tool]
async fn sleep(ms: u64, ctx: &Context) -> String {
    struct Dropped(String, bool);
    impl Drop for Dropped {
        fn drop(&mut self) {
            if !self.1 {
                eprintln!("SLEEP_ABORTED {}", self.0);
            }
        }
    }
    let mut guard = Dropped(ctx.request_id().to_string(), false);
    eprintln!("SLEEP_START {}", guard.0);
    let _cleanup = mcp::defer(Duration::from_secs(2), {
        let id = ctx.request_id().to_string();
        async move {
            tokio::time::sleep(Duration::from_millis(50)).await;
            eprintln!("CLEANUP_DONE {id}");
        }
    });
    tokio::time::sleep(Duration::from_millis(ms)).await;
    guard.1 = true;
    eprintln!("SLEEP_DONE {}", guard.0);
    format!("slept {ms} ms")
}

/// Spin until cancelled (checking the flag), then print `SPIN_CANCELLED id`.
#[mcp::tool]
fn spin(ctx: &Context) -> Result<String, mcp::Cancelled> {
    let id = ctx.request_id().to_string();
    loop {
        if let Err(c) = ctx.check_cancelled() {
            eprintln!("SPIN_CANCELLED {id}");
            return Err(c);
        }
        std::thread::sleep(Duration::from_millis(5));
    }
}

/// Sleep `ms` without ever checking for cancellation, then print `STUBBORN_DONE id`.
#[mcp::tool]
fn stubborn(ms: u64, ctx: &Context) -> String {
    std::thread::sleep(Duration::from_millis(ms));
    eprintln!("STUBBORN_DONE {}", ctx.request_id());
    "finished anyway".into()
}

/// Panic (async).
#[mcp::tool]
async fn panic_async() -> String {
    panic!("the async tool broke")
}

/// Panic (plain fn).
#[mcp::tool]
fn panic_blocking() -> String {
    panic!("the blocking tool broke")
}

/// Log one message at every level.
#[mcp::tool]
fn log_all(ctx: &Context) {
    for level in LogLevel::ALL {
        ctx.log_to(level, Some("testbed"), format!("a {level} message"));
    }
}

/// Report progress 1, 2, 1 (ignored: backwards), 3, then keep reporting from a task after returning.
#[mcp::tool]
async fn progress(ctx: &Context) -> String {
    for p in [1.0, 2.0, 1.0, 3.0] {
        ctx.report_progress(p, Some(3.0), None);
    }
    let late = ctx.clone();
    tokio::spawn(async move {
        for i in 0..20 {
            tokio::time::sleep(Duration::from_millis(5)).await;
            late.report_progress(4.0 + f64::from(i), None, Some("too late"));
            late.info("too late");
        }
    });
    "reported".into()
}

#[derive(serde::Serialize, schemars::JsonSchema)]
struct Sum {
    /// The sum.
    total: i64,
}

/// Add numbers; structured output.
#[mcp::tool(title = "Adder", read_only, idempotent, open_world = false)]
fn add(numbers: Vec<i64>) -> mcp::Json<Sum> {
    mcp::Json(Sum { total: numbers.iter().sum() })
}

/// Fail with a readable error.
#[mcp::tool]
fn fail(reason: String) -> Result<String, String> {
    Err(format!("failed because {reason}"))
}

/// Two content blocks.
#[mcp::tool]
fn two_blocks() -> Vec<Content> {
    vec![Content::text("one"), Content::image("aGVsbG8=", "image/png")]
}

/// A full result.
#[mcp::tool(name = "full-result")]
fn full_result() -> CallToolResult {
    CallToolResult::success(vec![Content::text("full")])
}

// ---- tasks ----

/// Prints `name id` on stderr when dropped unfinished (`TASK_ABORTED id`).
struct Marker(String, bool);

impl Drop for Marker {
    fn drop(&mut self) {
        if !self.1 {
            eprintln!("TASK_ABORTED {}", self.0);
        }
    }
}

/// Sleep `ms` in steps of 50 ms, reporting progress and logging; a task when the client asks. Prints `TASK_START
/// id`, then `TASK_DONE id` or `TASK_ABORTED id` (and `TASK_CLEANUP id` from its deferred cleanup) on stderr, where
/// `id` is the task's id (the request's outside a task).
#[mcp::tool(task = "optional", task_poll_ms = 50)]
async fn task_sleep(ms: u64, ctx: &Context) -> String {
    let id = ctx.task_id().map(str::to_owned).unwrap_or_else(|| ctx.request_id().to_string());
    let mut marker = Marker(id.clone(), false);
    eprintln!("TASK_START {id}");
    let _cleanup = mcp::defer(Duration::from_secs(2), {
        let id = id.clone();
        async move {
            tokio::time::sleep(Duration::from_millis(20)).await;
            eprintln!("TASK_CLEANUP {id}");
        }
    });
    let steps = ms.div_ceil(50).max(1);
    for step in 0..steps {
        ctx.report_progress(step as f64, Some(steps as f64), None);
        ctx.info(format!("step {step}"));
        tokio::time::sleep(Duration::from_millis(ms / steps)).await;
    }
    marker.1 = true;
    eprintln!("TASK_DONE {id}");
    format!("slept {ms} ms")
}

/// Like `task_sleep`, as a plain `fn` that checks its flag every 10 ms (prints `TASK_STOPPED id` when it sees it).
#[mcp::tool(task = "optional", task_poll_ms = 50)]
fn task_sleep_blocking(ms: u64, ctx: &Context) -> Result<String, mcp::Cancelled> {
    let id = ctx.task_id().map(str::to_owned).unwrap_or_else(|| ctx.request_id().to_string());
    eprintln!("TASK_START {id}");
    let start = std::time::Instant::now();
    while start.elapsed() < Duration::from_millis(ms) {
        if ctx.is_cancelled() {
            eprintln!("TASK_STOPPED {id}");
            return Err(mcp::Cancelled);
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    eprintln!("TASK_DONE {id}");
    Ok(format!("slept {ms} ms"))
}

#[derive(serde::Deserialize, schemars::JsonSchema)]
struct Approval {
    /// Whether it is approved.
    approve: bool,
}

/// Asks the client to approve `what`, always as a task, then answers with the decision.
#[mcp::tool(task = "required", task_poll_ms = 50)]
async fn task_approve(what: String, ctx: &Context) -> Result<String, mcp::ask::AskError> {
    Ok(match ctx.elicit::<Approval>(&format!("Approve {what}?")).await? {
        mcp::ask::Elicitation::Accept(Approval { approve: true }) => format!("{what}: approved"),
        mcp::ask::Elicitation::Accept(_) => format!("{what}: refused"),
        _ => format!("{what}: no answer"),
    })
}

/// `task_approve` as a plain `fn`.
#[mcp::tool(task = "required", task_poll_ms = 50)]
fn task_approve_blocking(what: String, ctx: &Context) -> Result<String, mcp::ask::AskError> {
    Ok(match ctx.elicit_blocking::<Approval>(&format!("Approve {what}?"))? {
        mcp::ask::Elicitation::Accept(Approval { approve: true }) => format!("{what}: approved"),
        mcp::ask::Elicitation::Accept(_) => format!("{what}: refused"),
        _ => format!("{what}: no answer"),
    })
}

/// Fails with a tool error, as a task when asked.
#[mcp::tool(task = "optional", task_poll_ms = 50)]
async fn task_fail(reason: String) -> Result<String, String> {
    Err(reason)
}

#[derive(serde::Deserialize, schemars::JsonSchema)]
struct Who {
    /// A name.
    name: String,
}

/// Asks for a name as an ordinary request (2026: input-required rounds), then runs as a task.
#[mcp::tool(task = "required", defer_task, task_poll_ms = 50)]
async fn task_after_question(ctx: &Context) -> Result<String, mcp::ask::AskError> {
    let name = match ctx.ask("who").elicit::<Who>("Who is it for?").await? {
        mcp::ask::Elicitation::Accept(Who { name }) => name,
        _ => "nobody".into(),
    };
    let before = ctx.task_id().is_some();
    let _ = ctx.start_task().await;
    tokio::time::sleep(Duration::from_millis(100)).await;
    Ok(format!("for {name} (a task before start_task: {before}; after: {})", ctx.task_id().is_some()))
}

/// The testbed's own options, beside the framework's.
struct Options {
    greeting: String,
}

impl mcp::FromArgs for Options {
    const OPTIONS: &'static [mcp::ArgSpec] =
        &[mcp::ArgSpec::value("--greeting", "WORD", "The word `count` greets with (default hello)")];

    fn from_args(args: mcp::Args) -> Result<Self, String> {
        Ok(Options { greeting: args.value("--greeting").unwrap_or("hello").to_owned() })
    }
}

#[mcp::main]
async fn main(options: Options) -> Result<mcp::ServerBuilder, String> {
    // Start-up: what a real server does when it opens its database pool.
    if let Ok(reason) = std::env::var("TESTBED_FAIL_STARTUP") {
        tokio::time::sleep(Duration::from_millis(10)).await;
        return Err(format!("could not open the database: {reason}"));
    }
    // An option of the program's own, beside the framework's (`--greeting hi`).
    let greeting = options.greeting;
    let mut builder =
        mcp::Server::builder().registered().state(Counter::default()).state(Config { greeting }).on_shutdown(async {
            tokio::time::sleep(Duration::from_millis(50)).await;
            eprintln!("SHUTDOWN_HOOK_RAN");
        });
    if let Some(limit) = std::env::var("TESTBED_MAX_MESSAGE_BYTES").ok().and_then(|v| v.parse().ok()) {
        builder = builder.max_message_bytes(limit);
    }
    // Middleware for the benchmarks' figure of the new paths: `timeout` (tower's, 30 s) and `limit` (tower's
    // concurrency limit, 1,024), in the order named (`TESTBED_LAYERS=timeout,limit`).
    for layer in std::env::var("TESTBED_LAYERS").unwrap_or_default().split(',').filter(|l| !l.is_empty()) {
        builder = match layer {
            "timeout" => builder.layer(mcp::tower::timeout::TimeoutLayer::new(Duration::from_secs(30))),
            "limit" => builder.layer(mcp::tower::limit::ConcurrencyLimitLayer::new(1024)),
            other => panic!("TESTBED_LAYERS: unknown layer {other:?} (timeout, limit)"),
        };
    }
    if let Some(size) = std::env::var("TESTBED_PAGE_SIZE").ok().and_then(|v| v.parse().ok()) {
        builder = builder.page_size(size);
    }
    if let Some(limit) = std::env::var("TESTBED_MAX_IN_FLIGHT").ok().and_then(|v| v.parse().ok()) {
        builder = builder.max_in_flight(limit);
    }
    let mut tasks = mcp::TaskSettings::new();
    if let Some(ms) = std::env::var("TESTBED_TASK_TTL_MS").ok().and_then(|v| v.parse().ok()) {
        tasks = tasks.ttl(Duration::from_millis(ms));
    }
    if let Some(n) = std::env::var("TESTBED_MAX_RUNNING_TASKS").ok().and_then(|v| v.parse().ok()) {
        tasks = tasks.max_running(n);
    }
    if let Some(n) = std::env::var("TESTBED_MAX_TASKS_PER_CLIENT").ok().and_then(|v| v.parse().ok()) {
        tasks = tasks.max_per_client(n);
    }
    builder = builder.tasks(tasks);
    // `soft,hard` or `soft,hard,max_frame`, in bytes.
    if let Some(limits) = std::env::var("TESTBED_OUTBOUND").ok().and_then(|v| {
        let mut parts = v.split(',').map(|p| p.parse::<usize>().ok());
        let limits = mcp::OutboundLimits::new(parts.next()??, parts.next()??);
        Some(match parts.next() {
            Some(max) => limits.with_max_frame_bytes(max?),
            None => limits,
        })
    }) {
        builder = builder.outbound_limits(limits);
    }
    Ok(builder)
}

/// A custom method that breaks the rule that results are objects.
#[mcp::method(name = "testbed/not-an-object")]
fn not_an_object() -> mcp::Json<u32> {
    mcp::Json(7)
}

/// What the request's metadata says: protocol version, client, `_meta`.
#[mcp::tool]
fn whoami(ctx: &Context) -> mcp::Json<serde_json::Value> {
    let meta = ctx.meta();
    let client = meta.client.as_ref().expect("initialized");
    mcp::Json(serde_json::json!({
        "protocolVersion": &*meta.protocol_version,
        "client": client.info.name,
        "clientVersion": client.info.version,
        "capabilities": client.capabilities,
        "meta": meta.meta,
        "progressToken": meta.progress_token,
    }))
}

/// A structured result that is not an object: sent as `{"result": …}`.
#[mcp::tool]
fn primes() -> mcp::Json<Vec<u32>> {
    mcp::Json(vec![2, 3, 5, 7])
}

// ---- prompts ----

/// Greet someone, some number of times.
#[mcp::prompt(title = "Greeting", icon = "https://example.com/wave.png", complete(name = complete_names))]
fn greeting(
    /// Who to greet.
    name: String,
    /// How many times (a number, sent as text).
    times: Option<u32>,
) -> String {
    vec![format!("Hello, {name}!"); times.unwrap_or(1) as usize].join(" ")
}

fn complete_names(typed: &str) -> Vec<String> {
    ["Ada", "Alan", "Grace"].into_iter().filter(|n| n.starts_with(typed)).map(String::from).collect()
}

/// A conversation with every kind of content.
#[mcp::prompt]
async fn conversation() -> mcp::GetPromptResult {
    use mcp::{Annotations, PromptMessage, ResourceContents, Role};
    let mut annotations = Annotations::default();
    annotations.audience = Some(vec![Role::User]);
    annotations.priority = Some(0.5);
    mcp::GetPromptResult::new(vec![
        PromptMessage::user(Content::text("look").with_annotations(annotations)),
        PromptMessage::user(Content::image("aGVsbG8=", "image/png")),
        PromptMessage::user(Content::audio("aGVsbG8=", "audio/wav")),
        PromptMessage::assistant(Content::resource_link("test://static", "static")),
        PromptMessage::assistant(Content::embedded(ResourceContents::text("test://static", Some("text/plain"), "hi"))),
    ])
    .with_description("every kind of content")
}

/// A prompt that fails.
#[mcp::prompt]
fn broken_prompt() -> Result<String, mcp::Error> {
    Err(mcp::Error::internal("the prompt store is down"))
}

// ---- resources ----

/// A fixed text resource.
#[mcp::resource(uri = "test://static", mime_type = "text/plain", audience = "user", priority = 0.9, size = 5)]
fn static_text() -> &'static str {
    "hello"
}

/// A fixed binary resource.
#[mcp::resource(uri = "test://bytes", mime_type = "application/octet-stream")]
async fn bytes() -> Vec<u8> {
    vec![0, 1, 2, 255]
}

/// 1 MiB of deterministic binary data (`benches/blob.rs` reads it, base64 on the wire): built once, copied for
/// each read, so that a read costs what the framework does with it.
#[mcp::resource(uri = "test://blob/1mib", mime_type = "application/octet-stream")]
async fn blob_1mib() -> Vec<u8> {
    static BLOB: std::sync::LazyLock<Vec<u8>> =
        std::sync::LazyLock::new(|| (0..1u32 << 20).map(|i| (i * 31 % 251) as u8).collect());
    BLOB.clone()
}

/// One item, by number.
#[mcp::resource(uri = "test://items/{id}", mime_type = "application/json", complete(id = complete_ids))]
fn item(id: u32) -> String {
    serde_json::json!({ "id": id }).to_string()
}

fn complete_ids(typed: &str) -> Vec<String> {
    (0..150).map(|i| i.to_string()).filter(|i| i.starts_with(typed)).collect()
}

/// Files, by path; listed at run time.
#[mcp::resource(uri = "files:///{+path}", mime_type = "text/plain", list = list_files)]
fn file(path: String) -> Result<String, String> {
    match path.as_str() {
        "docs/a.txt" | "docs/b.txt" => Ok(format!("contents of {path}")),
        _ => Err(format!("no file {path}")),
    }
}

fn list_files(_: &Context) -> Vec<mcp::Resource> {
    ["docs/a.txt", "docs/b.txt"]
        .into_iter()
        .map(|p| mcp::Resource::new(format!("files:///{p}"), p).with_mime_type("text/plain"))
        .collect()
}

/// Announce that a resource changed.
#[mcp::tool]
fn touch(uri: String, ctx: &Context) {
    ctx.notify_resource_updated(&uri);
}

/// Enable or disable a tool, prompt or resource (`kind`: tool, prompt or resource).
#[mcp::tool]
fn toggle(kind: String, name: String, enabled: bool, ctx: &Context) -> Result<String, String> {
    let server = ctx.server();
    let found = match kind.as_str() {
        "tool" => server.set_tool_enabled(&name, enabled),
        "prompt" => server.set_prompt_enabled(&name, enabled),
        "resource" => server.set_resource_enabled(&name, enabled),
        _ => return Err(format!("unknown kind {kind}")),
    };
    if found {
        Ok("ok".into())
    } else {
        Err(format!("no {kind} {name}"))
    }
}

/// Disable and enable the `echo` tool `times` times: a list change each time.
#[mcp::tool]
fn flip_echo(times: u32, ctx: &Context) -> String {
    for i in 0..times {
        ctx.server().set_tool_enabled("echo", i % 2 == 1);
    }
    format!("flipped {times}")
}

/// Remove the `echo` tool and add it back.
#[mcp::tool]
fn reload_echo(ctx: &Context) -> Result<String, String> {
    let server = ctx.server();
    if !server.remove_tool("echo") {
        return Err("echo was not there".into());
    }
    server.add_tool(<echo as mcp::handler::ToolItem>::DEF.clone()).map_err(|e| e.to_string())?;
    Ok("reloaded".into())
}

// ---- requests to the client ----

/// Who the user is, as a form.
#[derive(serde::Deserialize, schemars::JsonSchema)]
struct Person {
    /// Your name.
    name: String,
    /// Your age, if you like.
    age: Option<u32>,
}

/// Ask the user who they are (form elicitation).
#[mcp::tool]
async fn ask_name(ctx: &Context) -> Result<String, mcp::ask::AskError> {
    Ok(match ctx.elicit::<Person>("Who are you?").await? {
        mcp::ask::Elicitation::Accept(p) => format!("Hello, {} ({:?})", p.name, p.age),
        mcp::ask::Elicitation::Decline => "declined".into(),
        mcp::ask::Elicitation::Cancel => "cancelled".into(),
    })
}

/// Ask the user to open a URL (URL elicitation).
#[mcp::tool]
async fn ask_url(ctx: &Context) -> Result<String, mcp::ask::AskError> {
    let action = ctx.elicit_url("Please sign in", "https://example.com/login", "login-1").await?;
    Ok(format!("{action:?}"))
}

/// Ask the client's model to summarize.
#[mcp::tool]
async fn summarize(text: String, ctx: &Context) -> Result<String, mcp::ask::AskError> {
    let request =
        mcp::ask::SamplingRequest::new(vec![mcp::ask::SamplingMessage::user(format!("Summarize: {text}"))], 100);
    let answer = ctx.sample(request).await?;
    Ok(format!("{} said: {}", answer.model, answer.text().unwrap_or("?")))
}

/// List the client's roots.
#[mcp::tool]
async fn roots(ctx: &Context) -> Result<String, mcp::ask::AskError> {
    let roots = ctx.list_roots().await?;
    Ok(roots.iter().map(|r| r.uri.as_str()).collect::<Vec<_>>().join(","))
}

/// Elicit, then keep waiting; prints `NESTED_ABORTED id` when dropped.
#[mcp::tool]
async fn nested(ctx: &Context) -> Result<String, mcp::ask::AskError> {
    struct Aborted(String, bool);
    impl Drop for Aborted {
        fn drop(&mut self) {
            if !self.1 {
                eprintln!("NESTED_ABORTED {}", self.0);
            }
        }
    }
    let mut guard = Aborted(ctx.request_id().to_string(), false);
    let first = ctx.elicit_with_schema("first", serde_json::json!({"type": "object", "properties": {}})).await?;
    let _ = first;
    tokio::time::sleep(Duration::from_secs(30)).await;
    guard.1 = true;
    Ok("done".into())
}

/// Log `step i` then sleep `ms`, `n` times; then answer.
#[mcp::tool]
async fn slow_steps(n: u32, ms: u64, ctx: &Context) -> String {
    for i in 0..n {
        ctx.info(format!("step {i}"));
        tokio::time::sleep(Duration::from_millis(ms)).await;
    }
    format!("{n} steps")
}

// ---- the 2026-07-28 era ----

/// Ask the user who they are, from a plain function (blocking form elicitation: in the 2026 era the question goes
/// back in an input_required result).
#[mcp::tool]
fn ask_name_blocking(ctx: &Context) -> Result<String, mcp::ask::AskError> {
    Ok(match ctx.elicit_blocking::<Person>("Who are you?")? {
        mcp::ask::Elicitation::Accept(p) => format!("Hello, {} ({:?}), from a thread", p.name, p.age),
        mcp::ask::Elicitation::Decline => "declined".into(),
        mcp::ask::Elicitation::Cancel => "cancelled".into(),
    })
}

/// A favourite colour, as a form.
#[derive(serde::Deserialize, schemars::JsonSchema)]
struct Colour {
    /// Your favourite colour.
    colour: String,
}

/// Two questions in two rounds (keys `name`, then `colour`); counts the rounds before the last in its round state.
#[mcp::tool]
async fn interview(topic: String, ctx: &Context) -> Result<String, mcp::ask::AskError> {
    let rounds: u32 = ctx.round_state().unwrap_or(0);
    ctx.set_round_state(&(rounds + 1));
    let name = match ctx.ask("name").elicit::<Person>("Who are you?").await? {
        mcp::ask::Elicitation::Accept(p) => p.name,
        _ => "someone".into(),
    };
    let colour = match ctx.ask("colour").elicit::<Colour>(&format!("{name}, your favourite colour?")).await? {
        mcp::ask::Elicitation::Accept(c) => c.colour,
        _ => "no colour".into(),
    };
    Ok(format!("{name} likes {colour} ({topic}); earlier rounds: {rounds}"))
}

/// Run somewhere: 2026-07-28 HTTP clients mirror the arguments in `Mcp-Param-Region`, `Mcp-Param-Shard` and
/// `Mcp-Param-Dry-Run`.
#[mcp::tool]
fn regional(
    /// Where to run.
    #[mcp(header = "Region")]
    region: String,
    /// On which shard.
    #[mcp(header = "Shard")]
    shard: Option<i64>,
    /// Whether to pretend only.
    #[mcp(header = "Dry-Run")]
    dry_run: Option<bool>,
) -> String {
    format!("region={region} shard={shard:?} dry_run={dry_run:?}")
}

/// Report progress once, then sleep `ms` milliseconds; prints `STREAM_SLEEP_START id`, then `STREAM_SLEEP_DONE id`
/// or `STREAM_SLEEP_ABORTED id` on stderr.
#[mcp::tool]
async fn progress_then_sleep(ms: u64, ctx: &Context) -> String {
    struct Dropped(String, bool);
    impl Drop for Dropped {
        fn drop(&mut self) {
            if !self.1 {
                eprintln!("STREAM_SLEEP_ABORTED {}", self.0);
            }
        }
    }
    let mut guard = Dropped(ctx.request_id().to_string(), false);
    ctx.report_progress(1.0, None, Some("started"));
    eprintln!("STREAM_SLEEP_START {}", guard.0);
    tokio::time::sleep(Duration::from_millis(ms)).await;
    guard.1 = true;
    eprintln!("STREAM_SLEEP_DONE {}", guard.0);
    format!("slept {ms} ms")
}

/// Introduce the user, once they said who they are (asks with the key `who`).
#[mcp::prompt]
async fn introduction(ctx: &Context) -> Result<String, mcp::ask::AskError> {
    Ok(match ctx.ask("who").elicit::<Person>("Who are you?").await? {
        mcp::ask::Elicitation::Accept(p) => format!("Please welcome {}.", p.name),
        _ => "Please welcome our guest.".into(),
    })
}

/// A yes or no, as a form.
#[derive(serde::Deserialize, schemars::JsonSchema)]
struct Confirm {
    /// Whether to go ahead.
    ok: bool,
}

/// A note, readable once the user confirms (asks with the key `confirm`).
#[mcp::resource(uri = "test://guarded/{name}", mime_type = "text/plain")]
async fn guarded(name: String, ctx: &Context) -> Result<String, String> {
    match ctx.ask("confirm").elicit::<Confirm>(&format!("Read the note {name}?")).await {
        Ok(mcp::ask::Elicitation::Accept(Confirm { ok: true })) => Ok(format!("the note {name}")),
        Ok(_) => Err(format!("not confirmed: {name} stays closed")),
        Err(e) => Err(e.to_string()),
    }
}

/// `mib` MiB of text, after a log line and a yield (so that an HTTP answer is a stream).
#[mcp::tool]
async fn large(mib: usize, ctx: &Context) -> String {
    ctx.info("making a large answer");
    tokio::task::yield_now().await;
    "x".repeat(mib << 20)
}

/// Give the allocator's free memory back to the system, then answer `trimmed` (or `kept`, where the allocator is not
/// glibc's). A memory check that follows sees what the server holds, not what its allocator keeps for later (the
/// soak's growth check).
#[mcp::tool]
fn trim() -> String {
    if release_free_memory() { "trimmed" } else { "kept" }.into()
}

/// glibc's `malloc_trim(0)`: the free pages between live blocks, in every arena, go back to the system (by itself the
/// allocator gives back only the free top of a heap, past its trim threshold).
#[cfg(all(target_os = "linux", target_env = "gnu"))]
fn release_free_memory() -> bool {
    extern "C" {
        fn malloc_trim(pad: usize) -> std::ffi::c_int;
    }
    // SAFETY: `malloc_trim` takes no pointer and may be called from any thread at any time.
    unsafe { malloc_trim(0) };
    true
}

#[cfg(not(all(target_os = "linux", target_env = "gnu")))]
fn release_free_memory() -> bool {
    false
}

/// Log `count` messages of `size` bytes each without ever yielding, then return.
#[mcp::tool]
async fn log_burst(count: u32, size: usize, ctx: &Context) -> String {
    let line = "x".repeat(size);
    for _ in 0..count {
        ctx.info(&line);
    }
    format!("burst {count}")
}

/// Log `count` messages of `size` bytes each, as fast as it can, then print `FLOOD_DONE`.
#[mcp::tool]
async fn log_flood(count: u32, size: usize, ctx: &Context) -> String {
    let line = "x".repeat(size);
    for i in 0..count {
        ctx.info(&line);
        if i % 256 == 0 {
            tokio::task::yield_now().await;
        }
    }
    eprintln!("FLOOD_DONE");
    format!("logged {count}")
}

/// End the process at once with exit status 3, as a crash would (a proxy's upstream dying mid-session).
#[mcp::tool]
fn exit_now() -> String {
    eprintln!("EXITING");
    std::process::exit(3)
}
