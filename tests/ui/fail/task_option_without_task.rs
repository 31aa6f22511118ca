#[mcp::tool(defer_task)]
fn report() -> String {
    String::new()
}

fn main() {}
