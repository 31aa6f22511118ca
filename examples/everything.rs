//! A server with every fixture the official MCP conformance suite calls: tools of each content kind, logging,
//! progress, errors, sampling and elicitation; static, binary and templated resources; prompts with arguments,
//! images and embedded resources; completion.
//!
//! `cargo run --example everything -- --http 127.0.0.1:3001` serves it at `http://127.0.0.1:3001/mcp` for
//! `npx @modelcontextprotocol/conformance server --url http://127.0.0.1:3001/mcp`.

use std::time::Duration;

use mcp::{CallToolResult, Content, Context, PromptMessage, ResourceContents, ToolDef, ToolHandler};
use serde_json::{json, Map, Value};

/// A 1x1 red PNG.
const IMAGE: &str = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8DwHwAFBQIAX8jx0gAAAABJRU5ErkJggg==";
/// A minimal WAV file.
const AUDIO: &str = "UklGRiYAAABXQVZFZm10IBAAAAABAAEAQB8AAAB9AAACABAAZGF0YQIAAAA=";

// ---- tools ----

/// Tests simple text content response
#[mcp::tool]
fn test_simple_text() -> &'static str {
    "This is a simple text response for testing."
}

/// Tests image content response
#[mcp::tool]
fn test_image_content() -> Content {
    Content::image(IMAGE, "image/png")
}

/// Tests audio content response
#[mcp::tool]
fn test_audio_content() -> Content {
    Content::audio(AUDIO, "audio/wav")
}

/// Tests embedded resource content response
#[mcp::tool]
fn test_embedded_resource() -> Content {
    Content::embedded(ResourceContents::text(
        "test://embedded-resource",
        Some("text/plain"),
        "This is an embedded resource content.",
    ))
}

/// Tests response with multiple content types (text, image, resource)
#[mcp::tool]
fn test_multiple_content_types() -> Vec<Content> {
    vec![
        Content::text("Multiple content types test:"),
        Content::image(IMAGE, "image/png"),
        Content::embedded(ResourceContents::text(
            "test://mixed-content-resource",
            Some("application/json"),
            json!({"test": "data", "value": 123}).to_string(),
        )),
    ]
}

/// Tests tool that emits log messages during execution
#[mcp::tool]
async fn test_tool_with_logging(ctx: &Context) -> &'static str {
    for (i, message) in
        ["Tool execution started", "Tool processing data", "Tool execution completed"].iter().enumerate()
    {
        if i > 0 {
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        ctx.info(message);
    }
    "Tool with logging executed successfully"
}

/// Tests tool that reports progress notifications
#[mcp::tool]
async fn test_tool_with_progress(ctx: &Context) -> String {
    for (i, step) in [0.0, 50.0, 100.0].into_iter().enumerate() {
        if i > 0 {
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        ctx.report_progress(step, Some(100.0), Some(&format!("Completed step {step} of 100")));
    }
    ctx.meta().progress_token.as_ref().map(|t| t.to_string().trim_matches('"').to_owned()).unwrap_or_else(|| "0".into())
}

/// Tests error response handling
#[mcp::tool]
fn test_error_handling() -> Result<String, String> {
    Err("This tool intentionally returns an error for testing".into())
}

/// Tests server-initiated sampling (LLM completion request)
#[mcp::tool]
async fn test_sampling(
    /// The prompt to send to the LLM
    prompt: String,
    ctx: &Context,
) -> String {
    let request = mcp::SamplingRequest::new(vec![mcp::SamplingMessage::user(prompt)], 100);
    match ctx.sample(request).await {
        Ok(answer) => format!("LLM response: {}", answer.text().unwrap_or("No response")),
        Err(e) => format!("Sampling not supported or error: {e}"),
    }
}

/// Tests server-initiated elicitation (user input request)
#[mcp::tool]
async fn test_elicitation(
    /// The message to show the user
    message: String,
    ctx: &Context,
) -> String {
    let schema = json!({
        "type": "object",
        "properties": { "response": { "type": "string", "description": "User's response" } },
        "required": ["response"],
    });
    elicit_and_report(ctx, "User response", &message, schema).await
}

fn action_name(action: mcp::ElicitAction) -> &'static str {
    match action {
        mcp::ElicitAction::Accept => "accept",
        mcp::ElicitAction::Decline => "decline",
        mcp::ElicitAction::Cancel => "cancel",
    }
}

/// Elicits, and says what came back: `{label}: action=..., content=...`.
async fn elicit_and_report(ctx: &Context, label: &str, message: &str, schema: Value) -> String {
    match ctx.elicit_with_schema(message, schema).await {
        Ok(answer) => format!(
            "{label}: action={}, content={}",
            action_name(answer.action),
            Value::Object(answer.content.unwrap_or_default())
        ),
        Err(e) => format!("Elicitation not supported or error: {e}"),
    }
}

/// Tests elicitation with default values per SEP-1034
#[mcp::tool]
async fn test_elicitation_sep1034_defaults(ctx: &Context) -> String {
    let schema = json!({
        "type": "object",
        "properties": {
            "name": { "type": "string", "description": "User name", "default": "John Doe" },
            "age": { "type": "integer", "description": "User age", "default": 30 },
            "score": { "type": "number", "description": "User score", "default": 95.5 },
            "status": { "type": "string", "description": "User status", "enum": ["active", "inactive", "pending"], "default": "active" },
            "verified": { "type": "boolean", "description": "Verification status", "default": true },
        },
        "required": [],
    });
    elicit_and_report(ctx, "Elicitation completed", "Please review and update the form fields with defaults", schema)
        .await
}

/// Tests elicitation with enum schema improvements per SEP-1330
#[mcp::tool]
async fn test_elicitation_sep1330_enums(ctx: &Context) -> String {
    let schema = json!({
        "type": "object",
        "properties": {
            "untitledSingle": { "type": "string", "description": "Select one option", "enum": ["option1", "option2", "option3"] },
            "titledSingle": {
                "type": "string",
                "description": "Select one option with titles",
                "oneOf": [
                    { "const": "value1", "title": "First Option" },
                    { "const": "value2", "title": "Second Option" },
                    { "const": "value3", "title": "Third Option" },
                ],
            },
            "legacyEnum": {
                "type": "string",
                "description": "Select one option (legacy)",
                "enum": ["opt1", "opt2", "opt3"],
                "enumNames": ["Option One", "Option Two", "Option Three"],
            },
            "untitledMulti": {
                "type": "array",
                "description": "Select multiple options",
                "minItems": 1,
                "maxItems": 3,
                "items": { "type": "string", "enum": ["option1", "option2", "option3"] },
            },
            "titledMulti": {
                "type": "array",
                "description": "Select multiple options with titles",
                "minItems": 1,
                "maxItems": 3,
                "items": {
                    "anyOf": [
                        { "const": "value1", "title": "First Choice" },
                        { "const": "value2", "title": "Second Choice" },
                        { "const": "value3", "title": "Third Choice" },
                    ],
                },
            },
        },
        "required": [],
    });
    elicit_and_report(ctx, "Elicitation completed", "Please select options from the enum fields", schema).await
}

/// A tool whose input schema is written by hand in JSON Schema 2020-12 (`$schema`, `$defs`,
/// `additionalProperties`), kept as written.
fn json_schema_2020_12_input() -> Value {
    json!({
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "type": "object",
        "$defs": {
            "address": { "type": "object", "properties": { "street": { "type": "string" }, "city": { "type": "string" } } },
        },
        "properties": { "name": { "type": "string" }, "address": { "$ref": "#/$defs/address" } },
        "additionalProperties": false,
    })
}

fn json_schema_2020_12_call(_: &Context, args: Map<String, Value>) -> Result<CallToolResult, mcp::Error> {
    Ok(CallToolResult::success(vec![Content::text(format!(
        "JSON Schema 2020-12 tool called with: {}",
        Value::Object(args)
    ))]))
}

fn no_output_schema() -> Option<Value> {
    None
}

// ---- resources ----

/// A static text resource for testing
#[mcp::resource(
    uri = "test://static-text",
    name = "static-text",
    title = "Static Text Resource",
    mime_type = "text/plain"
)]
fn static_text() -> &'static str {
    "This is the content of the static text resource."
}

/// A static binary resource (image) for testing
#[mcp::resource(
    uri = "test://static-binary",
    name = "static-binary",
    title = "Static Binary Resource",
    mime_type = "image/png"
)]
fn static_binary() -> mcp::ReadResourceResult {
    mcp::ReadResourceResult::new(vec![ResourceContents::Blob {
        uri: "test://static-binary".into(),
        mime_type: Some("image/png".into()),
        blob: IMAGE.into(),
    }])
}

/// A resource template with parameter substitution
#[mcp::resource(
    uri = "test://template/{id}/data",
    name = "template",
    title = "Resource Template",
    mime_type = "application/json"
)]
fn template(id: String) -> String {
    json!({ "id": id, "templateTest": true, "data": format!("Data for ID: {id}") }).to_string()
}

/// A resource that auto-updates every 3 seconds
#[mcp::resource(
    uri = "test://watched-resource",
    name = "watched-resource",
    title = "Watched Resource",
    mime_type = "text/plain"
)]
fn watched_resource() -> &'static str {
    "Watched resource content"
}

// ---- prompts ----

/// A simple prompt without arguments
#[mcp::prompt(title = "Simple Test Prompt")]
fn test_simple_prompt() -> &'static str {
    "This is a simple prompt for testing."
}

/// A prompt with required arguments
#[mcp::prompt(title = "Prompt With Arguments")]
fn test_prompt_with_arguments(
    /// First test argument
    arg1: String,
    /// Second test argument
    arg2: String,
) -> String {
    format!("Prompt with arguments: arg1='{arg1}', arg2='{arg2}'")
}

/// A prompt that includes an embedded resource
#[mcp::prompt(title = "Prompt With Embedded Resource")]
fn test_prompt_with_embedded_resource(
    /// URI of the resource to embed
    #[allow(non_snake_case)]
    resourceUri: String,
) -> Vec<PromptMessage> {
    vec![
        PromptMessage::user(Content::embedded(ResourceContents::text(
            resourceUri,
            Some("text/plain"),
            "Embedded resource content for testing.",
        ))),
        PromptMessage::user("Please process the embedded resource above."),
    ]
}

/// A prompt that includes image content
#[mcp::prompt(title = "Prompt With Image")]
fn test_prompt_with_image() -> Vec<PromptMessage> {
    vec![
        PromptMessage::user(Content::image(IMAGE, "image/png")),
        PromptMessage::user("Please analyze the image above."),
    ]
}

#[mcp::main]
async fn main() -> mcp::ServerBuilder {
    let json_schema_tool = ToolDef::new(
        "json_schema_2020_12_tool",
        json_schema_2020_12_input,
        no_output_schema,
        ToolHandler::Blocking(json_schema_2020_12_call),
        concat!(file!(), ":", line!()),
    )
    .description("Tool with JSON Schema 2020-12 features for conformance testing (SEP-1613)");
    mcp::Server::builder()
        .info(mcp::Implementation::new("mcp-conformance-test-server", "1.0.0"))
        .registered()
        .tool_def(json_schema_tool)
}
