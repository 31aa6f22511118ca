#[derive(serde::Deserialize, schemars::JsonSchema)]
struct Size {
    width: u32,
}

/// A header mirrors one property; a flattened struct is many.
#[mcp::tool]
fn resize(#[mcp(flatten, header = "Size")] size: Size) -> String {
    size.width.to_string()
}

fn main() {}
