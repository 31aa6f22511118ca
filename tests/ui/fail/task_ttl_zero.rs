#[mcp::tool(task = "optional", task_ttl_ms = 0)]
fn report() -> String {
    String::new()
}

fn main() {}
