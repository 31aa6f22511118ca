#[mcp::tool]
fn query(#[mcp(header = "Region")] region: String, #[mcp(header = "REGION")] fallback: String) -> String {
    format!("{region} {fallback}")
}

fn main() {}
