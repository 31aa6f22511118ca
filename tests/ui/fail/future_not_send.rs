use std::rc::Rc;

#[mcp::tool]
async fn order(title: String) -> String {
    let shared = Rc::new(title);
    tokio::task::yield_now().await;
    shared.to_string()
}

fn main() {}
