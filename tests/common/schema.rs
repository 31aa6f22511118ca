//! Validation of what a server writes against `../shared/spec/2025-11-25/schema.json`.

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::{Mutex, OnceLock};

use serde_json::{json, Value};

/// The schema file of a protocol version, from the `shared/` folder beside the repository.
pub fn schema_path(version: &str) -> PathBuf {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let candidates = [root.join("../shared/spec"), root.join("shared/spec")];
    let dir = candidates
        .iter()
        .find(|p| p.exists())
        .unwrap_or_else(|| panic!("the MCP JSON Schemas are missing: expected ../shared/spec next to the repository"));
    dir.join(version).join("schema.json")
}

struct Validators {
    document: Value,
    compiled: Mutex<HashMap<String, &'static jsonschema::Validator>>,
}

fn validators() -> &'static Validators {
    static V: OnceLock<Validators> = OnceLock::new();
    V.get_or_init(|| {
        let path = schema_path("2025-11-25");
        let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        Validators { document: serde_json::from_str(&text).unwrap(), compiled: Mutex::default() }
    })
}

/// Validates `instance` against the definition `name` of the 2025-11-25 schema.
pub fn validate(name: &str, instance: &Value) -> Result<(), String> {
    let v = validators();
    let validator = {
        let mut compiled = v.compiled.lock().unwrap();
        *compiled.entry(name.to_owned()).or_insert_with(|| {
            assert!(v.document["$defs"].get(name).is_some(), "no definition {name} in the schema");
            let schema = json!({
                "$schema": v.document["$schema"],
                "$defs": v.document["$defs"],
                "$ref": format!("#/$defs/{name}"),
            });
            Box::leak(Box::new(jsonschema::validator_for(&schema).expect("the official schema compiles")))
        })
    };
    let errors: Vec<String> =
        validator.iter_errors(instance).map(|e| format!("{e} at {}", e.instance_path())).collect();
    if errors.is_empty() {
        Ok(())
    } else {
        Err(format!("{instance} is not a valid {name}: {}", errors.join("; ")))
    }
}

/// The result definition for a request method.
fn result_definition(method: &str) -> Option<&'static str> {
    Some(match method {
        "initialize" => "InitializeResult",
        "tools/list" => "ListToolsResult",
        "tools/call" => "CallToolResult",
        "prompts/list" => "ListPromptsResult",
        "prompts/get" => "GetPromptResult",
        "resources/list" => "ListResourcesResult",
        "resources/templates/list" => "ListResourceTemplatesResult",
        "resources/read" => "ReadResourceResult",
        "completion/complete" => "CompleteResult",
        "ping" | "logging/setLevel" | "resources/subscribe" | "resources/unsubscribe" => "EmptyResult",
        _ => return None,
    })
}

/// Validates one message a server wrote; `method` is the method of the request it answers, if known.
pub fn check_server_message(message: &Value, method: Option<&str>) -> Result<(), String> {
    if message.get("method").is_some() {
        if message.get("id").is_some() {
            return validate("ServerRequest", message).and(validate("JSONRPCRequest", message));
        }
        return validate("ServerNotification", message);
    }
    if message.get("error").is_some() {
        return validate("JSONRPCErrorResponse", message);
    }
    validate("JSONRPCResultResponse", message)?;
    match method.and_then(result_definition) {
        Some(def) => validate(def, &message["result"]),
        None => Ok(()),
    }
}
