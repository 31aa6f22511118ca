#[mcp::main]
fn main() {}
