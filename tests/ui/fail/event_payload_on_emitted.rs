// An emitted type's payload type is its function's last parameter, not an option.

/// A book was sold.
#[mcp::event(name = "book.sold", payload = String)]
fn sold(book: &serde_json::Value) -> bool {
    let _ = book;
    true
}

fn main() {}
