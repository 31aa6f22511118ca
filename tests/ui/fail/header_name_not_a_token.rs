#[mcp::tool]
fn query(#[mcp(header = "Data Region")] region: String) -> String {
    region
}

fn main() {}
