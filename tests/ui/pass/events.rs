// Event types declared with `#[mcp::event]`: emitted (with arguments, flattened ones too) and checked.

use mcp::events::{Check, Checked, Events};

#[derive(serde::Deserialize, schemars::JsonSchema)]
struct Filter {
    /// A shelf.
    shelf: Option<String>,
}

/// A book back in stock.
#[derive(serde::Serialize, serde::Deserialize, schemars::JsonSchema)]
struct Restocked {
    isbn: String,
}

/// A book is back in stock.
#[mcp::event(name = "book.restocked", delivery = [poll, push, webhook])]
fn restocked(isbn: Option<String>, #[mcp(flatten)] filter: Filter, book: &Restocked) -> bool {
    let _ = filter.shelf;
    isbn.is_none_or(|i| i == book.isbn)
}

/// Anything at all.
#[mcp::event]
fn anything(_: &serde_json::Value) -> bool {
    true
}

/// Orders since the cursor.
#[mcp::event(name = "order.placed", payload = Restocked)]
async fn orders(shop: String, check: Check) -> Result<Checked, mcp::Error> {
    let _ = shop;
    Ok(Checked::new(vec![], check.cursor))
}

fn main() {
    let events = Events::new().event_of::<restocked>().event_of::<anything>().event_of::<orders>();
    let _ = events.emitter().emit_of::<restocked>(Restocked { isbn: "1".into() });
    let _ = Events::registered();
}
