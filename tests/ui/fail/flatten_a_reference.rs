#[derive(serde::Deserialize, schemars::JsonSchema)]
struct Size {
    width: u32,
}

/// A reference parameter is injected, not read from the arguments.
#[mcp::tool]
fn resize(#[mcp(flatten)] size: &Size) -> String {
    size.width.to_string()
}

fn main() {}
