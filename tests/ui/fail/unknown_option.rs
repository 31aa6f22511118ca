#[mcp::tool(nmae = "a")]
fn order() {}

fn main() {}
