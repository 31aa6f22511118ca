//! The client the official conformance suite drives (`conformance client --command ...`): it reads the scenario from
//! `MCP_CONFORMANCE_SCENARIO`, the protocol version from `MCP_CONFORMANCE_PROTOCOL_VERSION` (2025-11-25: initialize
//! and a session; 2026-07-28: self-contained requests) and extra inputs from `MCP_CONFORMANCE_CONTEXT`, takes the server's
//! URL as its last argument, and does what the scenario asks through `mcp::client`.
//!
//! `npx @modelcontextprotocol/conformance@0.2.0-alpha.12 client --command target/debug/examples/conformance_client
//! --requirements 2026-07-28` (or `2025-11-25`). In the `auth/*` scenarios the client authorizes with
//! [`mcp::client::auth::OAuth`]: the user's part is a GET of the authorization URL whose redirect is not followed
//! but read (the suite's authorization server approves at once), with the credentials the scenario's context gives.
//! In the `sep-2640-client-*` scenarios (Skills) it lists skills without reading them, then loads the first through
//! `Client::load_skill` and reads its other files only if its SKILL.md verifies.

use std::process::ExitCode;

use mcp::client::auth::OAuth;
use mcp::client::{Client, EraChoice, Error, SkillFiles, Tool};
use serde_json::{json, Map, Value};

/// Accepts an elicitation with every field's default filled in (SEP-1034): what a user who just presses "OK" sends.
async fn accept_defaults(params: Value) -> Result<Value, mcp::Error> {
    let mut content = Map::new();
    if let Some(properties) = params["requestedSchema"]["properties"].as_object() {
        for (name, property) in properties {
            if let Some(default) = property.get("default") {
                content.insert(name.clone(), default.clone());
            }
        }
    }
    Ok(json!({ "action": "accept", "content": content }))
}

/// Arguments for a tool the scenario does not spell out: a placeholder for each required string, integer or boolean.
fn placeholder_arguments(tool: &Tool) -> Value {
    let mut args = Map::new();
    let schema = &tool.input_schema;
    for name in schema["required"].as_array().into_iter().flatten().filter_map(Value::as_str) {
        let value = match schema["properties"][name]["type"].as_str() {
            Some("integer" | "number") => json!(1),
            Some("boolean") => json!(true),
            _ if name == "region" => json!("us-west1"),
            _ => json!("x"),
        };
        args.insert(name.to_owned(), value);
    }
    Value::Object(args)
}

/// The Client ID Metadata Document URL the suite's authorization servers accept as a client id.
const CLIENT_METADATA_URL: &str = "https://conformance-test.local/client-metadata.json";

/// The user's part of the authorization code flow, for a server that approves at once: GET the authorization URL
/// without following its redirect, and return where it points.
async fn approve(url: reqwest::Url) -> mcp::client::auth::AuthorizeResult {
    let http = reqwest::Client::builder().redirect(reqwest::redirect::Policy::none()).build()?;
    let response = http.get(url).send().await?;
    let location = response
        .headers()
        .get("location")
        .ok_or_else(|| format!("the authorization endpoint answered {} without a redirect", response.status()))?;
    Ok(location.to_str()?.to_owned())
}

/// The authorization of an `auth/*` scenario: the grant it tests, with the credentials its context holds.
fn oauth(scenario: &str, context: &Value) -> Result<OAuth, Error> {
    let text = |key: &str| context[key].as_str().unwrap_or_default().to_owned();
    let oauth = match scenario {
        "auth/client-credentials-jwt" => OAuth::client_credentials(text("client_id"))
            .private_key_jwt(text("private_key_pem"), &text("signing_algorithm"))?,
        "auth/client-credentials-basic" => {
            OAuth::client_credentials(text("client_id")).client_secret(text("client_secret"))
        }
        "auth/wif-jwt-bearer" => OAuth::jwt_bearer(text("client_id"), text("valid_jwt")),
        "auth/enterprise-managed-authorization" => OAuth::enterprise(
            text("client_id"),
            text("idp_token_endpoint"),
            text("idp_client_id"),
            text("idp_id_token"),
        )
        .client_secret(text("client_secret")),
        _ => {
            let mut oauth = OAuth::new("http://localhost:3000/callback", approve)
                .client_name("mcp-rust-conformance-client")
                .client_metadata_url(CLIENT_METADATA_URL);
            if let Some(id) = context["client_id"].as_str() {
                oauth = oauth.client_id(id);
                if let Some(secret) = context["client_secret"].as_str() {
                    oauth = oauth.client_secret(secret);
                }
                if let Some(issuer) = context["issuer"].as_str() {
                    oauth = oauth.issuer(issuer);
                }
            }
            oauth
        }
    };
    Ok(oauth)
}

async fn run(scenario: &str, client: &Client, context: &Value) -> Result<(), Error> {
    if scenario.starts_with("auth/") {
        // What the suite's authorization scenarios serve: a tool list and one tool; authorization happens on the way.
        client.list_tools().await?;
        client.call_tool("test-tool", json!({})).await?;
        return Ok(());
    }
    match scenario {
        "tools_call" => {
            client.list_tools().await?;
            client.call_tool("add_numbers", json!({"a": 2, "b": 3})).await?;
        }
        "elicitation-sep1034-client-defaults" => {
            client.list_tools().await?;
            client.call_tool("test_client_elicitation_defaults", json!({})).await?;
        }
        "sse-retry" => {
            client.list_tools().await?;
            client.call_tool("test_reconnection", json!({})).await?;
        }
        "json-schema-2020-12-preservation" => {
            let tools = client.list_tools().await?;
            let schema = tools
                .iter()
                .find(|t| t.name == "json_schema_2020_12_tool")
                .map(|t| t.input_schema.clone())
                .ok_or_else(|| Error::Protocol("no json_schema_2020_12_tool".into()))?;
            // The schema as the client holds it, sent back untouched.
            client.call_tool("json_schema_echo", json!({ "schema": schema })).await?;
        }
        "sep-2322-client-request-state" => {
            client.list_tools().await?;
            for tool in
                ["test_mrtr_echo_state", "test_mrtr_unrelated", "test_mrtr_no_state", "test_mrtr_no_result_type"]
            {
                client.call_tool(tool, json!({})).await?;
            }
        }
        "http-standard-headers" => {
            for tool in client.list_tools().await? {
                client.call_tool(&tool.name, json!({})).await?;
            }
            for resource in client.list_resources().await? {
                client.read_resource(&resource.uri).await?;
            }
            for prompt in client.list_prompts().await? {
                client.get_prompt(&prompt.name, json!({})).await?;
            }
        }
        "http-custom-headers" => {
            client.list_tools().await?;
            for call in context["toolCalls"].as_array().into_iter().flatten() {
                client.call_tool(call["name"].as_str().unwrap_or_default(), call["arguments"].clone()).await?;
            }
        }
        "http-invalid-tool-headers" => {
            // The client leaves out tools whose x-mcp-header annotations are invalid; it calls the rest.
            for tool in client.list_tools().await? {
                client.call_tool(&tool.name, placeholder_arguments(&tool)).await?;
            }
        }
        // Skills (SEP-2640): listing reads no file.
        "sep-2640-client-no-prefetch" => {
            client.list_skills().await?;
        }
        // Load the first skill; only if its SKILL.md verifies, read its other files (each verified too).
        "sep-2640-client-verify-digest" | "sep-2640-client-verify-size" | "sep-2640-client-verify-frontmatter" => {
            let skills = client.list_skills().await?;
            let entry = skills.first().ok_or_else(|| Error::Protocol("the server lists no skill".into()))?;
            match client.load_skill(entry).await {
                Ok(skill) => println!("loaded the skill {} ({})", skill.name(), skill.uri),
                // The right outcome for a tampered skill: refused, and nothing more of it read.
                Err(Error::Skill(why)) => {
                    println!("{why}");
                    return Ok(());
                }
                Err(e) => return Err(e),
            }
            if let SkillFiles::Listed(files) = &entry.resources {
                for file in files.iter().filter(|f| f.uri != entry.uri) {
                    let content = client.read_skill_file(entry, &file.uri).await?;
                    println!("read {} ({} bytes, verified)", content.uri, content.bytes.len());
                }
            }
        }
        // initialize, request-metadata, json-schema-ref-no-deref, and anything else: connect and list.
        _ => {
            client.list_tools().await?;
        }
    }
    Ok(())
}

#[tokio::main]
async fn main() -> ExitCode {
    let Some(url) = std::env::args().skip(1).last() else {
        eprintln!("usage: conformance_client URL (with MCP_CONFORMANCE_SCENARIO set)");
        return ExitCode::from(2);
    };
    let scenario = std::env::var("MCP_CONFORMANCE_SCENARIO").unwrap_or_default();
    let version = std::env::var("MCP_CONFORMANCE_PROTOCOL_VERSION").unwrap_or_else(|_| "2025-11-25".into());
    let context: Value =
        std::env::var("MCP_CONFORMANCE_CONTEXT").ok().and_then(|c| serde_json::from_str(&c).ok()).unwrap_or_default();
    let era = if version == mcp::protocol::VERSION_2026 { EraChoice::V2026 } else { EraChoice::V2025 };
    let mut builder = Client::builder();
    if scenario.starts_with("auth/") {
        match oauth(&scenario, &context) {
            Ok(oauth) => builder = builder.auth(oauth),
            Err(e) => {
                eprintln!("{scenario}: {e}");
                return ExitCode::FAILURE;
            }
        }
    }
    let client = builder
        .name("mcp-rust-conformance-client")
        .era(era)
        .on_elicitation(accept_defaults)
        .on_sampling(|_| async {
            Ok(json!({"role": "assistant", "content": {"type": "text", "text": "ok"}, "model": "conformance"}))
        })
        .on_roots(|_| async { Ok(json!({"roots": []})) })
        .http(url)
        .await;
    let client = match client {
        Ok(c) => c,
        Err(e) => {
            eprintln!("{scenario}: could not connect: {e}");
            return ExitCode::FAILURE;
        }
    };
    let outcome = run(&scenario, &client, &context).await;
    client.close().await;
    match outcome {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("{scenario}: {e}");
            ExitCode::FAILURE
        }
    }
}
