#[mcp::prompt]
fn review<T: ToString>(title: T) -> String {
    title.to_string()
}

fn main() {}
