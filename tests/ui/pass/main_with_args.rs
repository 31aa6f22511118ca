// `main` takes the program's own options; the framework's subscriber is turned off (the program would install its
// own at the top of the body).
#[mcp::main(tracing = false)]
async fn main(args: mcp::Args) -> Result<mcp::ServerBuilder, String> {
    let db = args.value("--db-url").unwrap_or("sqlite::memory:").to_owned();
    Ok(mcp::Server::builder().registered().instructions(format!("backed by {db}")))
}
