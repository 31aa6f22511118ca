//! Every supported shape of tool compiles.

use std::collections::HashMap;

use mcp::{CallToolResult, Content, Context};

#[derive(serde::Deserialize, schemars::JsonSchema)]
enum Format {
    Paperback,
    Hardcover,
}

#[derive(serde::Deserialize, schemars::JsonSchema)]
struct Address {
    street: String,
    city: String,
}

#[derive(serde::Serialize, schemars::JsonSchema)]
struct Receipt {
    total: f64,
}

/// Everything at once.
#[mcp::tool(name = "order-book", title = "Order", description = "Order a book.", read_only = false, destructive, idempotent = false, open_world)]
async fn order(
    /// The title.
    r#title: String,
    format: Format,
    address: Option<Address>,
    copies: Vec<u32>,
    tags: HashMap<String, String>,
    ctx: &Context,
) -> Result<mcp::Json<Receipt>, String> {
    let _ = (title, format, address, copies, tags, ctx.is_cancelled());
    Ok(mcp::Json(Receipt { total: 1.0 }))
}

#[mcp::tool]
fn nothing() {}

#[mcp::tool]
fn content() -> Vec<Content> {
    vec![Content::text("a")]
}

#[mcp::tool]
fn full(mut n: i32) -> CallToolResult {
    n += 1;
    CallToolResult::success(vec![Content::text(n.to_string())])
}

#[mcp::tool]
fn cancellable(ctx: &mcp::Context) -> Result<&'static str, mcp::Cancelled> {
    ctx.check_cancelled()?;
    Ok("ok")
}

mod renamed {
    pub use mcp as my_mcp;
}

#[mcp::tool(crate = "renamed::my_mcp")]
fn through_a_renamed_path() -> String {
    String::new()
}

/// Arguments mirrored in `Mcp-Param-*` headers: strings, integers, booleans, optional or not.
#[mcp::tool]
fn mirrored(
    #[mcp(header = "Region")] region: String,
    #[mcp(header = "Shard-Id")] shard: u32,
    #[mcp(header = "dry_run")] dry_run: Option<bool>,
    query: String,
) -> String {
    format!("{region} {shard} {dry_run:?} {query}")
}

fn main() {
    let server = mcp::Server::builder()
        .tool::<mirrored>()
        .tool::<order>()
        .tool::<nothing>()
        .tool::<content>()
        .tool::<full>()
        .tool::<cancellable>()
        .tool::<through_a_renamed_path>()
        .build()
        .unwrap();
    let _ = server;
    // The function itself stays callable.
    let _ = full(1);
}
