/// Order a book.
#[mcp::tool(scopes = ["books write"])]
fn order() {}

fn main() {}
