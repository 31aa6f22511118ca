//! What a new user meets in the first hour and the first deployment (issue 22, the server's side): the server info
//! a builder reports, a server that serves nothing, the command line of `#[mcp::main]`, the Host/Origin guard over
//! a real socket, typed resource errors, and output to a closed pipe.

mod common;

use serde_json::json;

#[test]
fn name_alone_keeps_a_version() {
    let server = mcp::Server::builder().name("notes").build().unwrap();
    let info = &server.schema()["serverInfo"];
    assert_eq!(info["name"], "notes");
    assert_eq!(info["version"], mcp::DEFAULT_SERVER_VERSION, "{info}");

    let server = mcp::Server::builder().version("1.2.3").name("notes").build().unwrap();
    assert_eq!(server.schema()["serverInfo"], json!({ "name": "notes", "version": "1.2.3" }));

    // What #[mcp::main] does: the binary's info is the default; the builder's name overrides only the name.
    let server = mcp::Server::builder()
        .name("notes")
        .default_info(mcp::protocol::Implementation::new("notes-bin", "4.5.6"))
        .build()
        .unwrap();
    assert_eq!(server.schema()["serverInfo"], json!({ "name": "notes", "version": "4.5.6" }));
}
