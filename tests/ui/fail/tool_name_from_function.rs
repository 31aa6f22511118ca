// The name comes from the function, and `é` is not one of MCP's tool name characters.
#[mcp::tool]
fn café() -> String {
    String::new()
}

fn main() {}
