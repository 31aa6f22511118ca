//! The tools the authorization tests serve (`tests/it/auth_server.rs`, `tests/it/auth_dpop.rs`), in a module of their
//! own that the test crate includes by path: a `#[mcp::tool]` registers itself for `Server::from_registry`, so it
//! stays out of the harness (`tests/common`) that the other test binaries include as well.

use serde_json::json;

/// Who is calling and how, as the handler sees it.
#[mcp::tool]
pub fn whoami(ctx: &mcp::Context) -> String {
    let http = ctx.meta().http.as_ref().expect("over HTTP");
    let auth = http.auth.as_ref();
    json!({
        "subject": auth.map(|a| a.subject.clone()),
        "issuer": auth.and_then(|a| a.issuer.clone()),
        "client_id": auth.and_then(|a| a.client_id.clone()),
        "scopes": auth.map(|a| a.scopes.clone()),
        "jkt": auth.and_then(|a| a.claims.get("cnf")).and_then(|c| c.get("jkt")).cloned(),
        "sees_authorization_header": http.headers.contains_key("authorization"),
        "sees_dpop_header": http.headers.contains_key("dpop"),
    })
    .to_string()
}

/// Order a book.
#[mcp::tool(scopes = ["books:write"])]
pub fn order(title: String) -> String {
    format!("ordered {title}")
}
