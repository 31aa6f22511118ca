// An emitted event's function takes the payload last, by reference: this one has none.

/// A book is back in stock.
#[mcp::event(name = "book.restocked")]
fn restocked(isbn: String) -> bool {
    let _ = isbn;
    true
}

fn main() {}
