#[mcp::tool(name = "order book")]
fn order() {}

fn main() {}
