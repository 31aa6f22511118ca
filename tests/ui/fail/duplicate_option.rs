#[mcp::tool(name = "a", name = "b")]
fn order() {}

fn main() {}
