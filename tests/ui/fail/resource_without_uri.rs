#[mcp::resource(mime_type = "text/plain")]
fn catalog() -> String {
    String::new()
}

fn main() {}
