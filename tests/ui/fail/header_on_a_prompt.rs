#[mcp::prompt]
fn greet(#[mcp(header = "Name")] name: String) -> String {
    name
}

fn main() {}
