#[mcp::prompt]
fn greet(ctx: mcp::Context, name: String) -> String {
    let _ = ctx;
    format!("Hello, {name}")
}

fn main() {}
