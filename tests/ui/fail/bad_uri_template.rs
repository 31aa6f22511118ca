#[mcp::resource(uri = "users://{id,name}")]
fn profile(id: String) -> String {
    id
}

fn main() {}
