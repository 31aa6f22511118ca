//! `scopes = [...]` on every kind of handler, read back from its definition.

/// Order a book.
#[mcp::tool(scopes = ["books:write"])]
fn order(title: String) -> String {
    title
}

/// Ask for a book.
#[mcp::prompt(scopes = ["books:read"])]
fn ask() -> String {
    "Which book?".into()
}

/// The catalogue.
#[mcp::resource(uri = "shop://catalogue", scopes = ["books:read"])]
fn catalogue() -> String {
    String::new()
}

/// A page of a book.
#[mcp::resource(uri = "shop://books/{title}", scopes = ["books:read", "books:pages"])]
fn page(title: String) -> String {
    title
}

/// Restock the shelves.
#[mcp::method(name = "shop/restock", scopes = ["books:admin"])]
fn restock() -> Result<(), mcp::Error> {
    Ok(())
}

fn main() {
    use mcp::handler::{MethodItem, PromptItem, ResourceItem, ToolItem};
    assert_eq!(<order as ToolItem>::DEF.scopes, ["books:write"]);
    assert_eq!(<ask as PromptItem>::DEF.scopes, ["books:read"]);
    assert_eq!(<catalogue as ResourceItem>::DEF.scopes, ["books:read"]);
    assert_eq!(<page as ResourceItem>::DEF.scopes, ["books:read", "books:pages"]);
    assert_eq!(<restock as MethodItem>::DEF.scopes, ["books:admin"]);
}
