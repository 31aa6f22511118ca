#[derive(schemars::JsonSchema)]
struct Order {
    title: String,
}

#[mcp::tool]
fn order(order: Order) -> String {
    order.title
}

fn main() {}
