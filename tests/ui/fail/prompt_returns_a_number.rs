#[mcp::prompt]
fn review(title: String) -> u32 {
    title.len() as u32
}

fn main() {}
