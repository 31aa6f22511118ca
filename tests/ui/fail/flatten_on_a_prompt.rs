#[derive(serde::Deserialize, schemars::JsonSchema)]
struct Topic {
    subject: String,
}

/// Prompt arguments are strings, one per parameter.
#[mcp::prompt]
fn explain(#[mcp(flatten)] topic: Topic) -> String {
    topic.subject
}

fn main() {}
