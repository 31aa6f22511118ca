//! Prompts and resources of every supported shape compile.

use mcp::{Context, GetPromptResult, PromptMessage, ReadResourceResult, ResourceContents, State};

struct Library;

/// A prompt.
#[mcp::prompt(name = "ask", title = "Ask", icon = "https://example.com/a.png", complete(topic = topics))]
async fn ask(topic: String, depth: Option<u8>, ctx: &Context, _lib: &State<Library>) -> Vec<PromptMessage> {
    let _ = ctx.is_cancelled();
    vec![PromptMessage::user(format!("{topic} {depth:?}"))]
}

fn topics(_: &str) -> Vec<String> {
    vec!["rust".into()]
}

#[mcp::prompt]
fn plain() -> Result<GetPromptResult, String> {
    Ok(GetPromptResult::new(vec![]))
}

#[mcp::resource(uri = "lib://readme", mime_type = "text/markdown", size = 10, audience = "user, assistant", priority = 0.5)]
fn readme() -> &'static str {
    "# readme"
}

#[mcp::resource(uri = "lib://logo")]
async fn logo(_lib: &State<Library>) -> Vec<u8> {
    vec![1, 2, 3]
}

#[mcp::resource(uri = "lib://{shelf}/{+path}", list = list_books, complete(shelf = shelves))]
fn book(shelf: String, path: String, ctx: &Context) -> Result<ReadResourceResult, mcp::Error> {
    let uri = ctx.meta().resource_uri.clone().unwrap_or_default();
    let _ = (shelf, path);
    Ok(ReadResourceResult::new(vec![ResourceContents::text(&*uri, None, "text")]))
}

fn list_books(_: &Context) -> Vec<mcp::Resource> {
    vec![mcp::Resource::new("lib://a/b", "b")]
}

fn shelves(_: &str) -> Vec<String> {
    vec![]
}

fn main() {
    let server = mcp::Server::builder()
        .state(Library)
        .prompt::<ask>()
        .prompt::<plain>()
        .resource::<readme>()
        .resource::<logo>()
        .resource::<book>()
        .build()
        .unwrap();
    let _ = server;
}
