#[mcp::tool]
fn order((title, copies): (String, u32)) -> String {
    format!("{copies} x {title}")
}

fn main() {}
