#[mcp::prompt]
fn review(title: String) -> impl Into<String> {
    title
}

fn main() {}
