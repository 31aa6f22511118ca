#[mcp::prompt(complete(genre = genres))]
fn review(title: String) -> String {
    title
}

fn genres(_: &str) -> Vec<String> {
    Vec::new()
}

fn main() {}
