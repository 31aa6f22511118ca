//! State parameters and custom methods compile, on async and plain functions.

use std::sync::Mutex;

use mcp::{Context, State};

struct Db(Mutex<Vec<String>>);

#[mcp::tool]
async fn add(title: String, db: &State<Db>, ctx: &Context) {
    let _ = ctx.request_id();
    db.0.lock().unwrap().push(title);
}

#[mcp::method(name = "shop/titles")]
fn titles(db: &State<Db>) -> mcp::Json<std::collections::BTreeMap<String, Vec<String>>> {
    mcp::Json([("titles".to_owned(), db.0.lock().unwrap().clone())].into())
}

#[mcp::method]
async fn shop_clear(db: &State<Db>) -> Result<(), mcp::Error> {
    db.0.lock().unwrap().clear();
    Ok(())
}

fn main() {
    let server = mcp::Server::builder()
        .state(Db(Mutex::new(Vec::new())))
        .tool::<add>()
        .method::<titles>()
        .method::<shop_clear>()
        .build()
        .unwrap();
    let _ = server;
}
