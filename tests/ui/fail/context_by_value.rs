use mcp::Context;

#[mcp::tool]
async fn slow(ctx: Context, steps: u32) -> String {
    let _ = ctx;
    steps.to_string()
}

fn main() {}
