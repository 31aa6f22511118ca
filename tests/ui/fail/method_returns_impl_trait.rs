#[mcp::method(name = "shop/stock")]
fn stock(title: String) -> impl Into<serde_json::Value> {
    title
}

fn main() {}
