#[mcp::prompt(complete(title = titles))]
fn review(title: String) -> String {
    title
}

fn titles(_: String) -> Vec<String> {
    Vec::new()
}

fn main() {}
