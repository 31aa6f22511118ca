struct Db;

#[mcp::tool]
fn count(db: mcp::State<Db>, table: String) -> String {
    let _ = db;
    table
}

fn main() {}
