#[mcp::resource(uri = "users://{id}/profile")]
fn profile(user: String) -> String {
    user
}

fn main() {}
