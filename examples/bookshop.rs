//! The bookshop: an MCP server over stdio (or `--http ADDR`) whose tools show cancellation, shielded cleanup,
//! progress, logging, shared state and questions to the customer. It serves clients of both protocol eras,
//! 2025-11-25 and 2026-07-28, from the same binary and the same handlers.
//!
//! Run it with `cargo run --example bookshop`, then speak JSON-RPC on stdin, or point an MCP client at that command.
//!
//! - `order_book(title)` holds a copy, waits 30 s for "payment", and releases the hold in a shielded async cleanup
//!   on every exit: cancel the call and `list_holds()` is empty again a moment later.
//! - `rebuild_index(titles)` is a plain `fn`: it takes search offline, indexes one book a second, reports progress,
//!   stops between books when cancelled, and puts search back online on every exit.
//! - The holds and the search status live in server state (`&State<Shop>`), not in globals. Started with
//!   `--redis URL` (every instance with the same `MCP_REQUEST_STATE_KEY`), the holds live in that Redis instead, in
//!   a set every instance of the shop shares, and a hold's changes reach the subscribers of every instance; search
//!   status stays each instance's own.
//! - `cancel_hold(title)` asks the customer to confirm (elicitation) before it releases a hold: a request to the
//!   client in the 2025 era, an `input_required` result in the 2026 era; the same code serves both.
//! - Resources: `bookshop://holds` (JSON, announced to subscribers whenever it changes) and the template
//!   `bookshop://books/{title}/pages/{page}`, whose titles complete. A prompt, `recommend`, asks for a book.
//! - A skill (the Skills extension, `mcp::skills`): `recommending-a-book`, with `references/SHELVES.md`, embedded in
//!   the binary, listed by `skills/list` and read as `skill://recommending-a-book/...` resources.
//! - An app (MCP Apps, `mcp::apps`): `ui://bookshop/holds`, the interface of `list_holds` in hosts that render apps
//!   (examples/bookshop-app/holds.html): it lists the holds, releases one through the host, and follows changes.
//! - An event (the Events extension, `mcp::events`, 2026-07-28 clients): `book.back_on_shelf`, declared with
//!   `#[mcp::event]` on its match rule and emitted whenever a hold is released, to every subscription whose `title`
//!   argument is that book's (or absent); clients poll it (`events/poll`) or hold a push stream (`events/stream`);
//!   with `--redis`, on every instance. With `--webhooks` it is delivered by signed webhooks too
//!   (`events/subscribe`, for callers with a token: `--auth-issuer`), to https receivers on public addresses;
//!   `--webhook-allow IP` and `--webhook-ca FILE` let it reach a receiver on a private address with a certificate of
//!   its own (tests, internal deployments). With `--redis`, one instance delivers each subscription, and another
//!   takes it over if that one dies.
//! - With `--http ADDR --auth-issuer URL --auth-resource URL` it is an OAuth resource server: every request needs a
//!   bearer JWT from that issuer for that resource; `order_book` and `cancel_hold` need the scope `books:write`,
//!   `rebuild_index` needs `books:admin` (a token without it gets `403 insufficient_scope`, and the client steps
//!   up), everything else a valid token only.

use std::collections::BTreeSet;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use mcp::events::Emitter;
use mcp::redis::driver::AsyncCommands;
use mcp::{Context, PromptMessage, State};

/// The books on the shelves.
const TITLES: [&str; 4] = ["Dune", "Emma", "Middlemarch", "Moby-Dick"];

/// The holds resource; subscribers hear when it changes.
const HOLDS_URI: &str = "bookshop://holds";

/// The shop's shared state.
#[derive(Clone, Default)]
struct Shop {
    /// The titles on hold, when no Redis keeps them.
    holds: Arc<Mutex<BTreeSet<String>>>,
    /// Whether search is online; `rebuild_index` takes it offline while it runs.
    search_online: Arc<AtomicBool>,
}

impl Shop {
    /// Where the holds are: in the Redis the server shares with its other instances (`--redis`), else here.
    fn holds(&self, ctx: &Context) -> HoldStore {
        match ctx.state::<mcp::redis::Redis>() {
            Some(redis) => HoldStore::Redis {
                connection: redis.connection(),
                key: format!("{}:bookshop:holds", redis.key_prefix()),
            },
            None => HoldStore::Memory(self.holds.clone()),
        }
    }
}

/// The titles on hold: a set in this process, or a Redis set. Cloning it clones the handles, so a cleanup task can
/// own one.
#[derive(Clone)]
enum HoldStore {
    Memory(Arc<Mutex<BTreeSet<String>>>),
    Redis { connection: mcp::redis::driver::aio::ConnectionManager, key: String },
}

/// Why the holds could not be read or changed (Redis did not answer).
type HoldError = String;

fn redis_error(e: mcp::redis::driver::RedisError) -> HoldError {
    format!("the holds are out of reach: {e}")
}

impl HoldStore {
    fn memory(set: &Mutex<BTreeSet<String>>) -> std::sync::MutexGuard<'_, BTreeSet<String>> {
        set.lock().unwrap_or_else(|e| e.into_inner())
    }

    async fn insert(&self, title: &str) -> Result<(), HoldError> {
        match self {
            HoldStore::Memory(set) => {
                HoldStore::memory(set).insert(title.to_owned());
                Ok(())
            }
            HoldStore::Redis { connection, key } => {
                connection.clone().sadd::<_, _, ()>(key, title).await.map_err(redis_error)
            }
        }
    }

    /// Whether the title was on hold.
    async fn remove(&self, title: &str) -> Result<bool, HoldError> {
        match self {
            HoldStore::Memory(set) => Ok(HoldStore::memory(set).remove(title)),
            HoldStore::Redis { connection, key } => {
                let removed: u64 = connection.clone().srem(key, title).await.map_err(redis_error)?;
                Ok(removed > 0)
            }
        }
    }

    /// The titles on hold, in order.
    async fn list(&self) -> Result<Vec<String>, HoldError> {
        match self {
            HoldStore::Memory(set) => Ok(HoldStore::memory(set).iter().cloned().collect()),
            HoldStore::Redis { connection, key } => {
                let mut titles: Vec<String> = connection.clone().smembers(key).await.map_err(redis_error)?;
                titles.sort();
                Ok(titles)
            }
        }
    }

    /// Releasing a hold is a round trip to the warehouse: it must `.await`.
    async fn release(self, title: String, server: mcp::Server, shelf: Option<Emitter>) {
        tokio::time::sleep(Duration::from_millis(100)).await;
        match self.remove(&title).await {
            Ok(released) => {
                if released {
                    back_on_shelf(shelf.as_ref(), &title);
                }
                server.notify_resource_updated(HOLDS_URI);
                eprintln!("released hold on {title:?}");
            }
            Err(e) => eprintln!("could not release the hold on {title:?}: {e}"),
        }
    }
}

/// Hold a copy of a book while the customer pays for it.
#[mcp::tool(destructive = false, scopes = ["books:write"])]
async fn order_book(
    /// The book's title.
    title: String,
    shop: &State<Shop>,
    ctx: &Context,
) -> Result<String, HoldError> {
    let holds = shop.holds(ctx);
    // Runs on every exit (return, error, panic or cancellation), shielded from the cancel, bounded to 5 s. Armed
    // before the hold is taken: a cancel that lands while `insert` waits for Redis's answer (the hold written, the
    // reply not yet read) must release it too. Releasing a hold never taken removes nothing and tells no one.
    let shelf = ctx.state::<Emitter>().cloned();
    let release = holds.clone().release(title.clone(), ctx.server().clone(), shelf);
    let _release = mcp::defer(Duration::from_secs(5), release);
    holds.insert(&title).await?;
    // The shop's own log (stderr; `--log-format json` for a pipeline): inside the request's span, so with
    // `RUST_LOG=info` it names the request, its trace, and the client's address.
    tracing::info!(%title, "a book held");
    ctx.notify_resource_updated(HOLDS_URI);
    ctx.info(format!("holding {title:?} until payment arrives"));
    tokio::time::sleep(Duration::from_secs(30)).await; // waiting for payment
    Ok(format!("Ordered {title:?}."))
}

/// A book back on the shelf: its hold was released.
#[derive(serde::Serialize, serde::Deserialize, schemars::JsonSchema)]
struct BackOnShelf {
    /// The book's title.
    title: String,
}

/// A book is back on the shelf: its hold was released.
#[mcp::event(name = "book.back_on_shelf")]
fn book_back_on_shelf(
    /// Only this title; every title if absent.
    title: Option<String>,
    book: &BackOnShelf,
) -> bool {
    title.is_none_or(|t| t == book.title)
}

/// Tells the subscribers of `book.back_on_shelf` that `title` is back.
fn back_on_shelf(shelf: Option<&Emitter>, title: &str) {
    let back = BackOnShelf { title: title.to_owned() };
    if let Some(Err(e)) = shelf.map(|s| s.emit_of::<book_back_on_shelf>(back)) {
        eprintln!("could not tell of {title:?} back on the shelf: {e}");
    }
}

#[derive(serde::Deserialize, schemars::JsonSchema)]
struct Confirm {
    /// Release the hold?
    confirm: bool,
}

/// Release the hold on a book, once the customer confirms.
///
/// In the 2025 era the confirmation is an `elicitation/create` request to the client; in the 2026 era it is an
/// `input_required` result, and the client's retry runs this function again with the answer.
#[mcp::tool(destructive, scopes = ["books:write"])]
async fn cancel_hold(
    /// The book's title.
    title: String,
    shop: &State<Shop>,
    ctx: &Context,
) -> Result<String, HoldError> {
    let question = format!("Release the hold on {title:?}?");
    Ok(match ctx.ask("confirm").elicit::<Confirm>(&question).await {
        Ok(mcp::ask::Elicitation::Accept(Confirm { confirm: true })) => {
            let released = shop.holds(ctx).remove(&title).await?;
            if released {
                back_on_shelf(ctx.state::<Emitter>(), &title);
                ctx.notify_resource_updated(HOLDS_URI);
                format!("Released the hold on {title:?}.")
            } else {
                format!("Released nothing: {title:?} was not on hold.")
            }
        }
        Ok(_) => format!("Kept the hold on {title:?}."),
        Err(e) => format!("Kept the hold on {title:?}: {e}."),
    })
}

/// Puts search back online when dropped: on return, on `?`, on panic.
struct SearchOffline<'a>(&'a AtomicBool);

impl<'a> SearchOffline<'a> {
    fn start(online: &'a AtomicBool) -> SearchOffline<'a> {
        online.store(false, Ordering::SeqCst);
        eprintln!("search offline");
        SearchOffline(online)
    }
}

impl Drop for SearchOffline<'_> {
    fn drop(&mut self) {
        self.0.store(true, Ordering::SeqCst);
        eprintln!("search back online");
    }
}

/// Take search offline and rebuild its index, one book at a time. Runs as a task when the client asks for one
/// (2025-11-25: `task` in the call; 2026-07-28: the Tasks extension declared): the call returns at once, and the
/// client polls the task, sees its progress, or cancels it.
#[mcp::tool(task = "optional", scopes = ["books:admin"])]
fn rebuild_index(
    /// The titles to index.
    titles: Vec<String>,
    shop: &State<Shop>,
    ctx: &Context,
) -> Result<String, mcp::Cancelled> {
    let _offline = SearchOffline::start(&shop.search_online);
    let total = titles.len() as f64;
    for (i, title) in titles.iter().enumerate() {
        ctx.check_cancelled()?; // one atomic load
        ctx.report_progress(i as f64, Some(total), Some(&format!("indexing {title:?}")));
        std::thread::sleep(Duration::from_secs(1)); // indexing one book
    }
    ctx.report_progress(total, Some(total), Some("done"));
    Ok(format!("Indexed {} books.", titles.len()))
}

#[derive(serde::Serialize, schemars::JsonSchema)]
struct Holds {
    /// Titles currently on hold, in order.
    holds: Vec<String>,
}

/// List the titles on hold.
#[mcp::tool(read_only)]
async fn list_holds(shop: &State<Shop>, ctx: &Context) -> Result<mcp::Json<Holds>, HoldError> {
    Ok(mcp::Json(Holds { holds: shop.holds(ctx).list().await? }))
}

/// Say whether search is online or offline (offline while the index is rebuilt).
#[mcp::tool(read_only)]
fn search_status(shop: &State<Shop>) -> &'static str {
    if shop.search_online.load(Ordering::SeqCst) {
        "online"
    } else {
        "offline"
    }
}

/// The titles on hold, as JSON.
#[mcp::resource(uri = "bookshop://holds", mime_type = "application/json")]
async fn holds_resource(shop: &State<Shop>, ctx: &Context) -> Result<String, HoldError> {
    Ok(serde_json::json!({ "holds": shop.holds(ctx).list().await? }).to_string())
}

/// One page of a book.
#[mcp::resource(
    uri = "bookshop://books/{title}/pages/{page}",
    mime_type = "text/plain",
    complete(title = complete_title),
    ttl_ms = 3_600_000,
    cache_scope = "public"
)]
fn book_page(
    /// The book's title.
    title: String,
    /// The page, from 1.
    page: u32,
) -> Result<String, String> {
    if !TITLES.contains(&title.as_str()) {
        return Err(format!("the shop has no book called {title:?}"));
    }
    if page == 0 {
        return Err("pages start at 1".into());
    }
    Ok(format!("{title}, page {page}: It was a dark and stormy night..."))
}

/// The titles that start with what was typed.
fn complete_title(typed: &str) -> Vec<String> {
    TITLES.iter().filter(|t| t.to_lowercase().starts_with(&typed.to_lowercase())).map(|t| t.to_string()).collect()
}

/// Ask for a book recommendation.
#[mcp::prompt(title = "Recommend a book", complete(genre = complete_genre))]
fn recommend(
    /// The genre to pick from.
    genre: String,
    /// The reader's mood, if it matters.
    mood: Option<String>,
) -> Vec<PromptMessage> {
    let mood = mood.map(|m| format!(" I am in a {m} mood.")).unwrap_or_default();
    vec![
        PromptMessage::user(format!("Recommend a {genre} book from the shop.{mood}")),
        PromptMessage::assistant(format!("Here is what the shop has: {}.", TITLES.join(", "))),
    ]
}

/// The genres that start with what was typed.
fn complete_genre(typed: &str) -> Vec<String> {
    ["classic", "fantasy", "science fiction"].into_iter().filter(|g| g.starts_with(typed)).map(String::from).collect()
}

/// The bookshop's own options; the rest (`--http`, `--redis`, `--auth-issuer`, ...) are `#[mcp::main]`'s.
struct Options {
    /// How `book.back_on_shelf` is delivered by webhooks, when it is.
    webhooks: Option<mcp::events::Webhooks>,
}

impl mcp::FromArgs for Options {
    const OPTIONS: &'static [mcp::ArgSpec] = &[
        mcp::ArgSpec::flag("--webhooks", "Deliver book.back_on_shelf by signed webhooks too (events/subscribe)"),
        mcp::ArgSpec::value(
            "--webhook-allow",
            "IP",
            "With --webhooks: let deliveries reach this private or loopback address (repeatable)",
        ),
        mcp::ArgSpec::value(
            "--webhook-ca",
            "FILE",
            "With --webhooks: trust this PEM root certificate for receivers, beside the system's",
        ),
    ];

    fn from_args(args: mcp::Args) -> Result<Self, String> {
        let (allowed, ca) = (args.values("--webhook-allow"), args.value("--webhook-ca"));
        if !args.flag("--webhooks") {
            if !allowed.is_empty() || ca.is_some() {
                return Err("--webhook-allow and --webhook-ca need --webhooks".into());
            }
            return Ok(Options { webhooks: None });
        }
        let mut webhooks = mcp::events::Webhooks::new();
        for address in allowed {
            let ip = address.parse().map_err(|e| format!("--webhook-allow {address:?}: not an IP address ({e})"))?;
            webhooks = webhooks.allow_address(ip);
        }
        if let Some(file) = ca {
            let pem = std::fs::read(file).map_err(|e| format!("--webhook-ca {file:?}: {e}"))?;
            webhooks = webhooks.root_certificate(pem);
        }
        Ok(Options { webhooks: Some(webhooks) })
    }
}

#[mcp::main]
async fn main(options: Options) -> mcp::ServerBuilder {
    let shop = Shop { search_online: Arc::new(AtomicBool::new(true)), ..Shop::default() };
    let mut events = mcp::events::Events::new().event_of::<book_back_on_shelf>();
    if let Some(webhooks) = options.webhooks {
        events = events.webhooks(webhooks);
    }
    mcp::Server::builder()
        .registered()
        .state(shop)
        .instructions("A bookshop: order books by title, and rebuild the search index.")
        // A skill (the Skills extension), embedded in the binary: how to recommend a book, with a reference file.
        .extension(mcp::skills::Skills::new().skill(
            mcp::skills::Skill::new(include_str!("bookshop-skills/recommending-a-book/SKILL.md")).file(
                "references/SHELVES.md",
                include_str!("bookshop-skills/recommending-a-book/references/SHELVES.md"),
            ),
        ))
        // An app (MCP Apps) for the holds: hosts that render apps show it with `list_holds`; it releases a hold by
        // calling `cancel_hold` through the host, and follows changes.
        .extension(
            mcp::apps::Apps::new().app(
                mcp::apps::App::html("ui://bookshop/holds", include_str!("bookshop-app/holds.html"))
                    .name("Holds")
                    .description("The books on hold, with a button to release each.")
                    .prefers_border(true)
                    .for_tool("list_holds"),
            ),
        )
        // An event (the Events extension, 2026-07-28): a book back on the shelf, by poll or push (and webhooks with
        // `--webhooks`).
        .extension(events)
        .on_shutdown(async { eprintln!("bookshop closed") })
}
