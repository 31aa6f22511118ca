/// Order a book.
#[mcp::tool(scopes = ["books:write", "books:write"])]
fn order() {}

fn main() {}
