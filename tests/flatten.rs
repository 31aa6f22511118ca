//! `#[mcp(flatten)]`: a struct whose fields are the tool's top-level arguments, its schema the input schema (merged
//! with the other parameters'), read from the whole argument object; and the errors when it cannot work.

use std::time::Duration;

use mcp::{BuildError, Context, Server};
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{json, Value};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};

/// A print job, as an existing application already defines it.
#[derive(Deserialize, JsonSchema)]
struct Job {
    /// The document to print.
    document: String,
    /// How many copies.
    #[serde(default = "one")]
    copies: u32,
    /// Double-sided.
    duplex: Option<bool>,
}

fn one() -> u32 {
    1
}

/// Where it goes; denies unknown fields, so it must not see the job's.
#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct Destination {
    printer: String,
}

/// Queue a print job.
#[mcp::tool]
fn print(#[mcp(flatten)] job: Job, priority: Option<u8>) -> String {
    format!("{} x{} duplex={:?} priority={:?}", job.document, job.copies, job.duplex, priority)
}

/// Queue a print job to a printer, asynchronously.
#[mcp::tool]
async fn print_to(#[mcp(flatten)] job: Job, #[mcp(flatten)] to: Destination, ctx: &Context) -> String {
    let _ = ctx;
    format!("{} x{} to {}", job.document, job.copies, to.printer)
}

/// A custom method takes a flattened struct too.
#[mcp::method(name = "test/print")]
async fn print_method(#[mcp(flatten)] job: Job) -> mcp::Json<Value> {
    mcp::Json(json!({ "document": job.document, "copies": job.copies }))
}

#[derive(Deserialize, JsonSchema)]
struct Copies {
    /// Clashes with `Job::copies`.
    copies: u32,
}

/// Two flattened structs with a field of the same name.
#[mcp::tool]
fn clashing(#[mcp(flatten)] job: Job, #[mcp(flatten)] more: Copies) -> String {
    (job.copies + more.copies).to_string()
}

/// A flattened field and a parameter of the same name.
#[mcp::tool]
fn clashing_with_a_parameter(#[mcp(flatten)] job: Job, document: String) {
    let _ = (job, document);
}

#[derive(Deserialize, JsonSchema)]
enum Mode {
    Draft,
    Final,
}

/// An enum has no named fields to spread.
#[mcp::tool]
fn flattened_enum(#[mcp(flatten)] mode: Mode) {
    let _ = mode;
}

#[test]
fn the_input_schema_is_the_structs_fields_beside_the_other_parameters() {
    let server = Server::builder().tool::<print>().tool::<print_to>().build().unwrap();
    let list = server.tools_list();
    let schema = &list["tools"][0]["inputSchema"];
    assert_eq!(list["tools"][0]["name"], "print");
    assert_eq!(schema["type"], "object");
    let properties = schema["properties"].as_object().unwrap();
    let mut names: Vec<&str> = properties.keys().map(String::as_str).collect();
    names.sort_unstable();
    assert_eq!(names, ["copies", "document", "duplex", "priority"], "{schema}");
    assert_eq!(properties["document"]["description"], "The document to print.");
    assert_eq!(properties["document"]["type"], "string");
    // Required: what the struct requires (not the defaulted or optional fields), and no optional parameter.
    assert_eq!(schema["required"], json!(["document"]), "{schema}");
    let both = &list["tools"][1]["inputSchema"];
    let mut required: Vec<&str> = both["required"].as_array().unwrap().iter().filter_map(Value::as_str).collect();
    required.sort_unstable();
    assert_eq!(required, ["document", "printer"], "{both}");
}

#[test]
fn a_field_given_twice_is_a_build_error_naming_it_and_both_origins() {
    let err = Server::builder().tool::<clashing>().build().unwrap_err();
    let BuildError::BadInputSchema { name, why } = &err else { panic!("{err:?}") };
    assert_eq!(name, "clashing");
    assert!(why.contains("`copies`") && why.contains("`job`") && why.contains("`more`"), "{why}");
    let err = Server::builder().tool::<clashing_with_a_parameter>().build().unwrap_err();
    let message = err.to_string();
    assert!(
        message.contains("`document`") && message.contains("a parameter of its own") && message.contains("`job`"),
        "{message}"
    );
}

#[test]
fn a_flattened_type_without_named_fields_is_a_build_error() {
    let err = Server::builder().tool::<flattened_enum>().build().unwrap_err();
    let message = err.to_string();
    assert!(message.contains("flattened_enum") && message.contains("`mode`") && message.contains("Mode"), "{message}");
    assert!(message.contains("not an object with named fields"), "{message}");
}

/// One 2025-11-25 session over an in-memory pipe.
async fn session(server: &Server) -> (tokio::io::WriteHalf<tokio::io::DuplexStream>, impl FnMut() -> Reader) {
    let (client, server_end) = tokio::io::duplex(1 << 16);
    let (server_read, server_write) = tokio::io::split(server_end);
    tokio::spawn(server.clone().serve_streams(server_read, server_write));
    let (read, write) = tokio::io::split(client);
    let lines = std::sync::Arc::new(tokio::sync::Mutex::new(BufReader::new(read).lines()));
    (write, move || Reader(lines.clone()))
}

struct Reader(
    std::sync::Arc<tokio::sync::Mutex<tokio::io::Lines<BufReader<tokio::io::ReadHalf<tokio::io::DuplexStream>>>>>,
);

impl Reader {
    async fn response(self, id: i64) -> Value {
        let mut lines = self.0.lock().await;
        loop {
            let line = tokio::time::timeout(Duration::from_secs(5), lines.next_line()).await.unwrap().unwrap().unwrap();
            let message: Value = serde_json::from_str(&line).unwrap();
            if message["id"] == id {
                return message;
            }
        }
    }
}

#[tokio::test]
async fn calls_read_the_struct_from_the_whole_argument_object() {
    let server = Server::builder().tool::<print>().tool::<print_to>().method::<print_method>().build().unwrap();
    let (mut to_server, mut reader) = session(&server).await;
    let mut send = async |message: Value| to_server.write_all(format!("{message}\n").as_bytes()).await.unwrap();
    send(json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}}))
    .await;
    reader().response(0).await;
    send(json!({"jsonrpc": "2.0", "method": "notifications/initialized"})).await;

    let call = |id: i64, name: &str, arguments: Value| json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": {"name": name, "arguments": arguments}});
    send(call(1, "print", json!({"document": "a.pdf", "priority": 3}))).await;
    let r = reader().response(1).await;
    assert_eq!(r["result"]["content"][0]["text"], "a.pdf x1 duplex=None priority=Some(3)", "{r}");

    send(call(2, "print", json!({"document": "b.pdf", "copies": 2, "duplex": true}))).await;
    let r = reader().response(2).await;
    assert_eq!(r["result"]["content"][0]["text"], "b.pdf x2 duplex=Some(true) priority=None", "{r}");

    // Each struct sees its own fields: `Destination` denies unknown fields, and reads beside the job.
    send(call(3, "print_to", json!({"document": "c.pdf", "printer": "lobby"}))).await;
    let r = reader().response(3).await;
    assert_eq!(r["result"]["content"][0]["text"], "c.pdf x1 to lobby", "{r}");

    // A missing required field is a tool error naming it, as for any argument (the model can correct its call).
    send(call(4, "print", json!({"copies": 2}))).await;
    let r = reader().response(4).await;
    assert_eq!(r["result"]["isError"], true, "{r}");
    assert_eq!(r["result"]["content"][0]["text"], "invalid arguments: missing field `document`", "{r}");

    // A wrong type, too.
    send(call(5, "print", json!({"document": "d.pdf", "copies": "many"}))).await;
    let r = reader().response(5).await;
    assert_eq!(r["result"]["isError"], true, "{r}");
    let text = r["result"]["content"][0]["text"].as_str().unwrap();
    assert!(text.starts_with("invalid arguments: invalid type: string \"many\""), "{text}");

    send(json!({"jsonrpc": "2.0", "id": 6, "method": "test/print", "params": {"document": "e.pdf", "copies": 4}}))
        .await;
    let r = reader().response(6).await;
    assert_eq!(r["result"], json!({"document": "e.pdf", "copies": 4}), "{r}");
}
