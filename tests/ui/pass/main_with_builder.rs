#[mcp::tool]
fn hi() -> &'static str {
    "hi"
}

#[mcp::main]
async fn main() -> Result<mcp::ServerBuilder, std::io::Error> {
    Ok(mcp::Server::builder().tool::<hi>())
}
