#[mcp::method(name = "resources/list")]
fn my_resources() {}

fn main() {}
