// An emitted event's function is its match rule: a plain `fn`.

/// A book was sold.
#[mcp::event(name = "book.sold")]
async fn sold(book: &serde_json::Value) -> bool {
    let _ = book;
    true
}

fn main() {}
