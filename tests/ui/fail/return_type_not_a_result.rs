struct Receipt;

#[mcp::tool]
fn order(title: String) -> Receipt {
    let _ = title;
    Receipt
}

fn main() {}
