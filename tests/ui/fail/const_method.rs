#[mcp::method(name = "shop/size")]
const fn size() {}

fn main() {}
