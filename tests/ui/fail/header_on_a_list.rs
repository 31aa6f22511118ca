#[mcp::tool]
fn query(#[mcp(header = "Regions")] regions: Vec<String>) -> String {
    regions.join(",")
}

fn main() {}
