//! A program that registers nothing: what a user gets when the linker dropped a library's tools.

#[mcp::main]
async fn main() {}
