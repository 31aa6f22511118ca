#[mcp::main]
async fn main(args: mcp::Args, verbose: bool) {
    let _ = (args, verbose);
}
