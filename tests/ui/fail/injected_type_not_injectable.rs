#[mcp::tool]
fn order(title: &String) -> String {
    title.clone()
}

fn main() {}
