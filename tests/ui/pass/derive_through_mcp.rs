//! Deriving `Deserialize` and `JsonSchema` through `mcp::serde` and `mcp::schemars`, for a program with neither as a
//! dependency of its own; and types of the user's that are merely named `State` or `Context` are ordinary arguments.

#[derive(mcp::serde::Deserialize, mcp::schemars::JsonSchema)]
#[serde(crate = "mcp::serde")]
#[schemars(crate = "mcp::schemars")]
struct Filter {
    /// The tag to look for.
    tag: String,
    limit: Option<u32>,
}

#[mcp::tool]
fn search(filter: Filter, #[mcp(flatten)] more: More) -> String {
    format!("{} {:?} {}", filter.tag, filter.limit, more.verbose)
}

#[derive(mcp::serde::Deserialize, mcp::schemars::JsonSchema)]
#[serde(crate = "mcp::serde")]
#[schemars(crate = "mcp::schemars")]
struct More {
    verbose: bool,
}

mod mine {
    /// A conversation's context, as a model would send it: not `mcp::Context`.
    #[derive(mcp::serde::Deserialize, mcp::schemars::JsonSchema)]
    #[serde(crate = "mcp::serde")]
    #[schemars(crate = "mcp::schemars")]
    pub struct Context {
        pub text: String,
    }

    /// A US state.
    #[derive(mcp::serde::Deserialize, mcp::schemars::JsonSchema)]
    #[serde(crate = "mcp::serde")]
    #[schemars(crate = "mcp::schemars")]
    pub struct State<T> {
        pub name: T,
    }
}

#[mcp::tool]
fn summarize(context: mine::Context, state: mine::State<String>) -> String {
    format!("{} {}", context.text, state.name)
}

#[mcp::prompt]
fn brief(context: String) -> String {
    context
}

fn main() {
    let server = mcp::Server::builder().tool::<search>().tool::<summarize>().prompt::<brief>().build().unwrap();
    let tools = server.tools_list();
    assert_eq!(tools["tools"][0]["inputSchema"]["properties"]["filter"]["$ref"], "#/$defs/Filter");
}
