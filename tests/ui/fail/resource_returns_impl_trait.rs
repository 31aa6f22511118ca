#[mcp::resource(uri = "books://catalog")]
fn catalog() -> impl Into<String> {
    "Dune"
}

fn main() {}
