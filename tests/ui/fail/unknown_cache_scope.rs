#[mcp::resource(uri = "books://catalog", cache_scope = "everyone")]
fn catalog() -> String {
    String::new()
}

fn main() {}
