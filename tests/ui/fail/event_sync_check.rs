// A checked event's function reads its upstream: `async fn`.

/// Orders placed since the cursor.
#[mcp::event(name = "order.placed")]
fn orders(check: mcp::events::Check) -> Result<mcp::events::Checked, mcp::Error> {
    let _ = check;
    Ok(mcp::events::Checked::default())
}

fn main() {}
