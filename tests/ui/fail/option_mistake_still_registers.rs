// A mistake in the options alone still expands the handler (with the default options): the one error is the
// option's, not a second one where the program registers the tool.
#[mcp::tool(read_onli)]
fn order() -> String {
    String::new()
}

fn main() {
    let _ = mcp::Server::builder().tool::<order>();
}
