//! `#[mcp(flatten)]`: a struct whose fields are the tool's top-level arguments, its schema the input schema (merged
//! with the other parameters'), read from the whole argument object; and the errors when it cannot work.

use crate::common;

use common::duplex::Stdio;
use mcp::{BuildError, Context, Server};
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{json, Value};

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

#[tokio::test]
async fn calls_read_the_struct_from_the_whole_argument_object() {
    let server = Server::builder().tool::<print>().tool::<print_to>().method::<print_method>().build().unwrap();
    let mut s = Stdio::open_with(&server, false, json!({})).await;
    let call = |name: &str, arguments: Value| json!({"name": name, "arguments": arguments});
    let r = s.call(1, "tools/call", call("print", json!({"document": "a.pdf", "priority": 3}))).await;
    assert_eq!(r["result"]["content"][0]["text"], "a.pdf x1 duplex=None priority=Some(3)", "{r}");

    let r = s.call(2, "tools/call", call("print", json!({"document": "b.pdf", "copies": 2, "duplex": true}))).await;
    assert_eq!(r["result"]["content"][0]["text"], "b.pdf x2 duplex=Some(true) priority=None", "{r}");

    // Each struct sees its own fields: `Destination` denies unknown fields, and reads beside the job.
    let r = s.call(3, "tools/call", call("print_to", json!({"document": "c.pdf", "printer": "lobby"}))).await;
    assert_eq!(r["result"]["content"][0]["text"], "c.pdf x1 to lobby", "{r}");

    // A missing required field is a tool error naming it, as for any argument (the model can correct its call).
    let r = s.call(4, "tools/call", call("print", json!({"copies": 2}))).await;
    assert_eq!(r["result"]["isError"], true, "{r}");
    assert_eq!(r["result"]["content"][0]["text"], "invalid arguments: missing field `document`", "{r}");

    // A wrong type, too.
    let r = s.call(5, "tools/call", call("print", json!({"document": "d.pdf", "copies": "many"}))).await;
    assert_eq!(r["result"]["isError"], true, "{r}");
    let text = r["result"]["content"][0]["text"].as_str().unwrap();
    assert!(text.starts_with("invalid arguments: invalid type: string \"many\""), "{text}");

    let r = s.call(6, "test/print", json!({"document": "e.pdf", "copies": 4})).await;
    assert_eq!(r["result"], json!({"document": "e.pdf", "copies": 4}), "{r}");
}
