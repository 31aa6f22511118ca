#[derive(serde::Deserialize, schemars::JsonSchema)]
struct Size {
    width: u32,
    height: u32,
}

/// Two parameters flattening the same struct would give `width` and `height` twice.
#[mcp::tool]
fn resize(#[mcp(flatten)] from: Size, #[mcp(flatten)] to: Size) -> String {
    format!("{}x{} -> {}x{}", from.width, from.height, to.width, to.height)
}

fn main() {}
