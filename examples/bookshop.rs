//! The bookshop: an MCP server over stdio whose tools show cancellation, shielded cleanup, progress and logging.
//!
//! Run it with `cargo run --example bookshop`, then speak JSON-RPC on stdin, or point an MCP client at that command.
//!
//! - `order_book(title)` holds a copy, waits 30 s for "payment", and releases the hold in a shielded async cleanup
//!   on every exit: cancel the call and `list_holds()` is empty again a moment later.
//! - `rebuild_index(titles)` is a plain `fn`: it takes search offline, indexes one book a second, reports progress,
//!   stops between books when cancelled, and puts search back online on every exit.

use std::collections::BTreeSet;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Mutex;
use std::time::Duration;

use mcp::Context;

/// The titles on hold. (A later version keeps this in server state instead of a global.)
static HOLDS: Mutex<BTreeSet<String>> = Mutex::new(BTreeSet::new());
/// Whether search is online; `rebuild_index` takes it offline while it runs.
static SEARCH_ONLINE: AtomicBool = AtomicBool::new(true);

fn holds() -> std::sync::MutexGuard<'static, BTreeSet<String>> {
    HOLDS.lock().unwrap_or_else(|e| e.into_inner())
}

/// Releasing a hold is a round trip to the warehouse: it must `.await`.
async fn release_hold(title: String) {
    tokio::time::sleep(Duration::from_millis(100)).await;
    holds().remove(&title);
    eprintln!("released hold on {title:?}");
}

/// Hold a copy of a book while the customer pays for it.
#[mcp::tool(destructive = false)]
async fn order_book(
    /// The book's title.
    title: String,
    ctx: &Context,
) -> String {
    holds().insert(title.clone());
    // Runs on every exit (return, error, panic or cancellation), shielded from the cancel, bounded to 5 s.
    let _release = mcp::defer(Duration::from_secs(5), release_hold(title.clone()));
    ctx.info(format!("holding {title:?} until payment arrives"));
    tokio::time::sleep(Duration::from_secs(30)).await; // waiting for payment
    format!("Ordered {title:?}.")
}

/// Puts search back online when dropped: on return, on `?`, on panic.
struct SearchOffline;

impl SearchOffline {
    fn start() -> SearchOffline {
        SEARCH_ONLINE.store(false, Ordering::SeqCst);
        SearchOffline
    }
}

impl Drop for SearchOffline {
    fn drop(&mut self) {
        SEARCH_ONLINE.store(true, Ordering::SeqCst);
        eprintln!("search back online");
    }
}

/// Take search offline and rebuild its index, one book at a time.
#[mcp::tool]
fn rebuild_index(
    /// The titles to index.
    titles: Vec<String>,
    ctx: &Context,
) -> Result<String, mcp::Cancelled> {
    let _offline = SearchOffline::start();
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
fn list_holds() -> mcp::Json<Holds> {
    mcp::Json(Holds {
        holds: holds().iter().cloned().collect(),
    })
}

/// Say whether search is online or offline (offline while the index is rebuilt).
#[mcp::tool(read_only)]
fn search_status() -> &'static str {
    if SEARCH_ONLINE.load(Ordering::SeqCst) {
        "online"
    } else {
        "offline"
    }
}

#[mcp::main]
async fn main() -> mcp::ServerBuilder {
    mcp::Server::builder()
        .registered_tools()
        .instructions("A bookshop: order books by title, and rebuild the search index.")
}
