// `delivery = [...]` names the SEP's modes only.

/// A book is back in stock.
#[mcp::event(name = "book.restocked", delivery = [poll, carrier_pigeon])]
fn restocked(book: &serde_json::Value) -> bool {
    let _ = book;
    true
}

fn main() {}
