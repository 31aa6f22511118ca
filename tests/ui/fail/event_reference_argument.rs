// An event's arguments are owned: the only reference is an emitted type's payload, last.

/// A book moved.
#[mcp::event(name = "book.moved")]
fn moved(shelf: &str, book: &serde_json::Value) -> bool {
    let _ = (shelf, book);
    true
}

fn main() {}
