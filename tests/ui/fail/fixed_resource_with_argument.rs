#[mcp::resource(uri = "books://catalog")]
fn catalog(shelf: String) -> String {
    shelf
}

fn main() {}
