/// `#[mcp(flatten)]` needs a struct with named fields; a number has none.
#[mcp::tool]
fn resize(#[mcp(flatten)] width: u32) -> String {
    width.to_string()
}

fn main() {}
