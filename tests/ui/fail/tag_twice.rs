/// Reset the shop.
#[mcp::tool(tags = ["admin", "admin"])]
fn reset() {}

fn main() {}
