#[mcp::tool(task = "sometimes")]
fn report() -> String {
    String::new()
}

fn main() {}
