//! A server with every fixture the official MCP conformance suite calls, for both protocol eras from one endpoint:
//! tools of each content kind, logging, progress, errors, sampling and elicitation; static, binary and templated
//! resources; prompts with arguments, images and embedded resources; completion; and for 2026-07-28 the
//! input-required (multi round-trip) tools and prompt, a capability check, list-change triggers for
//! `subscriptions/listen`, a parameter mirrored in an `Mcp-Param-Region` header, and the task fixtures of the Tasks
//! extension (`greet`, `slow_compute`, `failing_job`, `protocol_error_job`, `confirm_delete`, `multi_input`,
//! `test_tool_with_task`), which run as 2025-11-25 tasks too; and two skills of the Skills extension (SEP-2640),
//! from the tree under `examples/skills`, for its `sep-2640-*` scenarios.
//!
//! `cargo run --example everything -- --http 127.0.0.1:3001` serves it at `http://127.0.0.1:3001/mcp` for
//! `npx @modelcontextprotocol/conformance@0.2.0-alpha.12 server --url http://127.0.0.1:3001/mcp --requirements
//! 2026-07-28` (or `2025-11-25`).

use std::time::Duration;

use mcp::handler::{Arguments, ToolDef, ToolHandler};
use mcp::{CallToolResult, Content, Context, PromptMessage, ResourceContents, TaskOptions, TaskSupport};
use serde_json::{json, Value};

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
    let request = mcp::ask::SamplingRequest::new(vec![mcp::ask::SamplingMessage::user(prompt)], 100);
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

fn action_name(action: mcp::ask::ElicitAction) -> &'static str {
    match action {
        mcp::ask::ElicitAction::Accept => "accept",
        mcp::ask::ElicitAction::Decline => "decline",
        mcp::ask::ElicitAction::Cancel => "cancel",
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

// ---- 2026-07-28: self-contained requests, input-required results, subscriptions ----

/// Needs the client's sampling capability: without it the request fails with -32021 (2026-07-28)
#[mcp::tool]
async fn test_missing_capability(ctx: &Context) -> String {
    let request = mcp::ask::SamplingRequest::new(vec![mcp::ask::SamplingMessage::user("Say something")], 10);
    match ctx.sample(request).await {
        Ok(answer) => format!("Success: {}", answer.text().unwrap_or_default()),
        Err(e) => format!("Sampling not supported: {e}"),
    }
}

#[derive(serde::Deserialize, schemars::JsonSchema)]
struct Proceed {
    /// Whether to go on.
    proceed: bool,
}

/// Asks the user through elicitation, which in 2026-07-28 is an input_required result, never a request on the stream
#[mcp::tool]
async fn test_streaming_elicitation(ctx: &Context) -> String {
    match ctx.ask("proceed").elicit::<Proceed>("Continue streaming?").await {
        Ok(mcp::ask::Elicitation::Accept(Proceed { proceed: true })) => "Streaming complete".into(),
        Ok(_) => "Streaming stopped".into(),
        Err(e) => format!("Elicitation not supported: {e}"),
    }
}

/// Logs at info and debug; a 2026-07-28 request sees the logs only if its _meta asks for a log level
#[mcp::tool]
fn test_logging_tool(ctx: &Context) -> &'static str {
    ctx.info("the logging tool runs");
    ctx.debug("a detail");
    "Logging evaluated"
}

/// Announces a change of the tool list (to 2025 sessions and to 2026 listeners that asked for it)
#[mcp::tool]
fn test_trigger_tool_change(ctx: &Context) -> &'static str {
    ctx.server().set_tool_enabled("test_simple_text", true);
    "Mutation triggered"
}

/// Announces a change of the prompt list
#[mcp::tool]
fn test_trigger_prompt_change(ctx: &Context) -> &'static str {
    ctx.server().set_prompt_enabled("test_simple_prompt", true);
    "Mutation triggered"
}

#[derive(serde::Deserialize, schemars::JsonSchema)]
struct Name {
    /// Your name.
    name: String,
}

/// Asks for the user's name (key `user_name`), then greets them
#[mcp::tool]
async fn test_input_required_result_elicitation(ctx: &Context) -> String {
    match ctx.ask("user_name").elicit::<Name>("What is your name?").await {
        Ok(mcp::ask::Elicitation::Accept(Name { name })) => format!("Hello, {name}!"),
        Ok(_) => "No name given.".into(),
        Err(e) => format!("Elicitation not supported: {e}"),
    }
}

/// Asks the client's model a question (key `capital_question`)
#[mcp::tool]
async fn test_input_required_result_sampling(ctx: &Context) -> String {
    let question = mcp::ask::SamplingMessage::user("What is the capital of France?");
    match ctx.ask("capital_question").sample(mcp::ask::SamplingRequest::new(vec![question], 100)).await {
        Ok(answer) => format!("The model said: {}", answer.text().unwrap_or_default()),
        Err(e) => format!("Sampling not supported: {e}"),
    }
}

/// Asks for the client's roots (key `client_roots`)
#[mcp::tool]
async fn test_input_required_result_list_roots(ctx: &Context) -> String {
    match ctx.ask("client_roots").list_roots().await {
        Ok(roots) => format!("Roots: {}", roots.iter().map(|r| r.uri.as_str()).collect::<Vec<_>>().join(", ")),
        Err(e) => format!("Roots not supported: {e}"),
    }
}

#[derive(serde::Deserialize, schemars::JsonSchema)]
struct Confirmation {
    /// Whether it is confirmed.
    ok: bool,
}

/// Carries its own state across rounds in requestState: the answer says `state-ok` when it came back intact
#[mcp::tool]
async fn test_input_required_result_request_state(ctx: &Context) -> String {
    let carried: Option<String> = ctx.round_state();
    ctx.set_round_state(&"state-ok");
    match ctx.ask("confirm").elicit::<Confirmation>("Please confirm").await {
        Ok(mcp::ask::Elicitation::Accept(Confirmation { ok })) => {
            format!("confirmed={ok}, {}", carried.as_deref().unwrap_or("state-missing"))
        }
        Ok(_) => "not confirmed".into(),
        Err(e) => format!("Elicitation not supported: {e}"),
    }
}

/// Asks three questions in one round: an elicitation, a sampling request and the roots
#[mcp::tool]
async fn test_input_required_result_multiple_inputs(ctx: &Context) -> String {
    let greeting = mcp::ask::SamplingRequest::new(vec![mcp::ask::SamplingMessage::user("Generate a greeting")], 50);
    let (name, greeting, roots) = tokio::join!(
        ctx.ask("user_name").elicit::<Name>("What is your name?"),
        ctx.ask("greeting").sample(greeting),
        ctx.ask("client_roots").list_roots(),
    );
    let name = match name {
        Ok(mcp::ask::Elicitation::Accept(Name { name })) => name,
        _ => "someone".into(),
    };
    let greeting = greeting.ok().and_then(|g| g.text().map(str::to_owned)).unwrap_or_default();
    let roots = roots.map(|r| r.len()).unwrap_or_default();
    format!("{greeting} {name} ({roots} roots)")
}

#[derive(serde::Deserialize, schemars::JsonSchema)]
struct Color {
    /// Your favourite colour.
    color: String,
}

/// Two rounds: the name first, then the favourite colour
#[mcp::tool]
async fn test_input_required_result_multi_round(ctx: &Context) -> String {
    let Ok(mcp::ask::Elicitation::Accept(Name { name })) =
        ctx.ask("step1").elicit::<Name>("Step 1: What is your name?").await
    else {
        return "No name given.".into();
    };
    let Ok(mcp::ask::Elicitation::Accept(Color { color })) =
        ctx.ask("step2").elicit::<Color>("Step 2: What is your favorite color?").await
    else {
        return format!("{name} kept their colour to themselves.");
    };
    format!("{name} likes {color}.")
}

/// Its requestState is sealed: a changed one is refused with -32602
#[mcp::tool]
async fn test_input_required_result_tampered_state(ctx: &Context) -> String {
    match ctx.ask("confirm").elicit::<Confirmation>("Please confirm").await {
        Ok(mcp::ask::Elicitation::Accept(Confirmation { ok })) => format!("confirmed={ok}"),
        Ok(_) => "not confirmed".into(),
        Err(e) => format!("Elicitation not supported: {e}"),
    }
}

/// Asks only what the request's capabilities allow: elicitation, else sampling, else roots
#[mcp::tool]
async fn test_input_required_result_capabilities(ctx: &Context) -> String {
    if ctx.client_supports(&["elicitation"]) {
        return match ctx.ask("user_name").elicit::<Name>("What is your name?").await {
            Ok(mcp::ask::Elicitation::Accept(Name { name })) => format!("Hello, {name}!"),
            _ => "No name given.".into(),
        };
    }
    if ctx.client_supports(&["sampling"]) {
        let question = mcp::ask::SamplingMessage::user("Suggest a name");
        return match ctx.ask("name_suggestion").sample(mcp::ask::SamplingRequest::new(vec![question], 20)).await {
            Ok(answer) => format!("Hello, {}!", answer.text().unwrap_or("stranger")),
            Err(e) => format!("Sampling failed: {e}"),
        };
    }
    match ctx.ask("client_roots").list_roots().await {
        Ok(roots) => format!("{} roots", roots.len()),
        Err(_) => "The client can be asked nothing.".into(),
    }
}

/// Echoes a region that 2026-07-28 HTTP clients also send in the Mcp-Param-Region header
#[mcp::tool]
fn test_header_param(
    /// Where to run
    #[mcp(header = "Region")]
    region: String,
    /// What to run
    query: Option<String>,
) -> String {
    format!("region={region} query={}", query.unwrap_or_default())
}

/// A tool whose input schema is written by hand in JSON Schema 2020-12 (`$schema`, `$defs`,
/// `additionalProperties`), kept as written.
fn json_schema_2020_12_input() -> Value {
    json!({
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "type": "object",
        "$defs": {
            "address": {
                "$anchor": "addressDef",
                "type": "object",
                "properties": { "street": { "type": "string" }, "city": { "type": "string" } },
            },
        },
        "properties": {
            "name": { "type": "string" },
            "address": { "$ref": "#/$defs/address" },
            "contactMethod": { "type": "string", "enum": ["phone", "email"] },
            "phone": { "type": "string" },
            "email": { "type": "string" },
        },
        "allOf": [{ "anyOf": [{ "required": ["phone"] }, { "required": ["email"] }] }],
        "if": { "properties": { "contactMethod": { "const": "phone" } }, "required": ["contactMethod"] },
        "then": { "required": ["phone"] },
        "else": { "required": ["email"] },
        "additionalProperties": false,
    })
}

fn json_schema_2020_12_call(_: &Context, args: Arguments) -> Result<CallToolResult, mcp::Error> {
    Ok(CallToolResult::success(vec![Content::text(format!(
        "JSON Schema 2020-12 tool called with: {}",
        Value::Object(args.into_map())
    ))]))
}

fn empty_input() -> Value {
    json!({ "type": "object", "properties": {} })
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
        meta: None,
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

#[derive(serde::Deserialize, schemars::JsonSchema)]
struct PromptContext {
    /// The context to use.
    context: String,
}

/// A prompt that asks the user for its context first (key `user_context`)
#[mcp::prompt(title = "Prompt With An Input-Required Result")]
async fn test_input_required_result_prompt(ctx: &Context) -> Result<String, mcp::Error> {
    match ctx.ask("user_context").elicit::<PromptContext>("What context should the prompt use?").await {
        Ok(mcp::ask::Elicitation::Accept(PromptContext { context })) => Ok(format!("Use this context: {context}")),
        Ok(_) => Ok("Use no particular context.".into()),
        Err(e) => Err(mcp::Error::invalid_params(e.to_string())),
    }
}

/// A prompt that includes image content
#[mcp::prompt(title = "Prompt With Image")]
fn test_prompt_with_image() -> Vec<PromptMessage> {
    vec![
        PromptMessage::user(Content::image(IMAGE, "image/png")),
        PromptMessage::user("Please analyze the image above."),
    ]
}

// ---- tasks ----

/// Says what this server is. (It also sorts first in `tools/list`, where the header-validation scenario takes the
/// first tool and calls it with no arguments and no capabilities: a task tool there would answer -32021.)
#[mcp::tool(read_only)]
fn about() -> &'static str {
    "The MCP conformance fixtures, served by the mcp Rust framework."
}

/// Greets someone, at once (never a task)
#[mcp::tool]
fn greet(
    /// Who to greet.
    name: String,
) -> String {
    format!("Hello, {name}!")
}

/// Computes for a while: a task when the client can take one
#[mcp::tool(task = "optional", task_poll_ms = 200)]
async fn slow_compute(
    /// How long to compute, in seconds.
    seconds: u64,
    /// A label for the result.
    label: Option<String>,
    ctx: &Context,
) -> String {
    for second in 0..seconds {
        ctx.report_progress(second as f64, Some(seconds as f64), None);
        tokio::time::sleep(Duration::from_secs(1)).await;
    }
    format!("Computed {} in {seconds}s", label.as_deref().unwrap_or("something"))
}

/// Fails with a tool error after a second (always a task)
#[mcp::tool(task = "required", task_poll_ms = 200)]
async fn failing_job() -> Result<String, String> {
    tokio::time::sleep(Duration::from_secs(1)).await;
    Err("job failed".into())
}

/// Fails with a protocol error (a task that ends `failed`)
fn protocol_error_job(_: &Context, _: Arguments) -> Result<CallToolResult, mcp::Error> {
    std::thread::sleep(Duration::from_millis(300));
    Err(mcp::Error::internal("protocol_error_job failed on purpose"))
}

#[derive(serde::Deserialize, schemars::JsonSchema)]
struct DeleteConfirmation {
    /// Whether to delete it.
    confirm: bool,
}

/// Asks for confirmation, as a task, before deleting a file
#[mcp::tool(task = "required", task_poll_ms = 200)]
async fn confirm_delete(
    /// The file to delete.
    filename: String,
    ctx: &Context,
) -> String {
    match ctx.elicit::<DeleteConfirmation>(&format!("Delete {filename}?")).await {
        Ok(mcp::ask::Elicitation::Accept(DeleteConfirmation { confirm: true })) => format!("Deleted {filename}"),
        Ok(_) => format!("Kept {filename}"),
        Err(e) => format!("Could not ask: {e}"),
    }
}

#[derive(serde::Deserialize, schemars::JsonSchema)]
struct Part {
    /// A name for this part.
    #[serde(default)]
    name: Option<String>,
    /// Whether to go ahead.
    #[serde(default)]
    confirm: Option<bool>,
}

/// Asks two questions at once, as a task
#[mcp::tool(task = "required", task_poll_ms = 200)]
async fn multi_input(ctx: &Context) -> String {
    let (first, second) = tokio::join!(ctx.elicit::<Part>("First part?"), ctx.elicit::<Part>("Second part?"));
    let name = |part: Result<mcp::ask::Elicitation<Part>, mcp::ask::AskError>| match part {
        Ok(mcp::ask::Elicitation::Accept(Part { name, confirm })) => {
            format!(
                "{} ({})",
                name.unwrap_or_default(),
                if confirm == Some(true) { "confirmed" } else { "unconfirmed" }
            )
        }
        _ => "none".into(),
    };
    format!("Got {} and {}", name(first), name(second))
}

/// Asks for the user's name first (input-required rounds, key `user_name`), then works on it as a task
#[mcp::tool(task = "required", defer_task, task_poll_ms = 200)]
async fn test_tool_with_task(ctx: &Context) -> String {
    let name = match ctx.ask("user_name").elicit::<Name>("What is your name?").await {
        Ok(mcp::ask::Elicitation::Accept(Name { name })) => name,
        Ok(_) => "nobody".into(),
        Err(e) => return format!("Elicitation not supported: {e}"),
    };
    if let Err(e) = ctx.start_task().await {
        return format!("Could not start the task: {e}");
    }
    tokio::time::sleep(Duration::from_millis(300)).await;
    format!("Hello, {name}! (from task {})", ctx.task_id().unwrap_or("-"))
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
    let protocol_error_tool = ToolDef::new(
        "protocol_error_job",
        empty_input,
        no_output_schema,
        ToolHandler::Blocking(protocol_error_job),
        concat!(file!(), ":", line!()),
    )
    .description("Fails with a protocol error (a task that ends `failed`)")
    .task(TaskOptions::new(TaskSupport::Required).poll_interval_ms(200));
    mcp::Server::builder()
        .info(mcp::Implementation::new("mcp-conformance-test-server", "1.0.0"))
        .registered()
        .tool_def(json_schema_tool)
        .tool_def(protocol_error_tool)
        // The Skills extension (SEP-2640), from the tree under examples/skills: `pdf-processing` (with a
        // `references` folder) and `acme/billing/refunds` (a skill under a longer path).
        .extension(mcp::skills::Skills::new().dir(concat!(env!("CARGO_MANIFEST_DIR"), "/examples/skills")))
}
