#[mcp::method(name = "shop/count")]
fn count() -> u32 {
    3
}

fn main() {}
