#[mcp::tool]
fn order<T: ToString>(title: T) -> String {
    title.to_string()
}

fn main() {}
