#[mcp::tool]
fn order(ctx: &mut mcp::Context) {
    let _ = ctx;
}

fn main() {}
