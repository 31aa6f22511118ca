//! Validation of what a server writes against the official JSON Schema of its era, committed in the repository
//! (`tests/schema/README.md` says where each came from): `tests/schema/2025-11-25/schema.json` for messages of the
//! 2025 era, `tests/schema/2026-07-28/schema.json` for messages of the 2026 era.

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::{Mutex, OnceLock};

use serde_json::{json, Value};

/// The schema file of a protocol version, `tests/schema/<version>/schema.json`; a missing file fails naming the path
/// it looked in.
pub fn schema_path(version: &str) -> PathBuf {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/schema").join(version).join("schema.json");
    assert!(
        path.is_file(),
        "the official MCP JSON Schema of {version} is missing: expected {} (tests/schema/README.md says where it comes from)",
        path.display()
    );
    path
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
    validate_in(validators(), name, instance)
}

fn validate_in(v: &'static Validators, name: &str, instance: &Value) -> Result<(), String> {
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
        "tasks/get" => "GetTaskResult",
        "tasks/result" => "GetTaskPayloadResult",
        "tasks/list" => "ListTasksResult",
        "tasks/cancel" => "CancelTaskResult",
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
    // A task-augmented call answers with the task (`CreateTaskResult`, which the schema's result unions omit).
    if method == Some("tools/call") && message["result"].get("task").is_some() {
        return validate("CreateTaskResult", &message["result"]);
    }
    match method.and_then(result_definition) {
        Some(def) => validate(def, &message["result"]),
        None => Ok(()),
    }
}

/// Checks a task as the Tasks extension (`io.modelcontextprotocol/tasks`) writes it, which the core 2026-07-28
/// schema does not define: `taskId`, `status`, RFC 3339 `createdAt` and `lastUpdatedAt`, `ttlMs` (an integer or
/// null, always present), `pollIntervalMs` (an integer when present), and none of the 2025 names; with `detailed`
/// (`tasks/get`, `notifications/tasks`), the member its status calls for.
pub fn check_extension_task(task: &Value, detailed: bool) -> Result<(), String> {
    let fail = |why: &str| Err(format!("not a task of the Tasks extension ({why}): {task}"));
    let status = task["status"].as_str().unwrap_or_default();
    if task["taskId"].as_str().is_none_or(str::is_empty) {
        return fail("taskId");
    }
    if !["working", "input_required", "completed", "failed", "cancelled"].contains(&status) {
        return fail("status");
    }
    for key in ["createdAt", "lastUpdatedAt"] {
        let stamp = task[key].as_str().unwrap_or_default();
        let shape = stamp.len() >= 20 && stamp.as_bytes()[4] == b'-' && stamp.as_bytes()[10] == b'T';
        if !shape {
            return fail(key);
        }
    }
    if !(task.get("ttlMs").is_some_and(|t| t.is_null() || t.as_u64().is_some_and(|t| t > 0))) {
        return fail("ttlMs");
    }
    if task.get("pollIntervalMs").is_some_and(|p| p.as_u64().is_none_or(|p| p == 0)) {
        return fail("pollIntervalMs");
    }
    if task.get("ttl").is_some() || task.get("pollInterval").is_some() || task.get("requestState").is_some() {
        return fail("a 2025 field or requestState");
    }
    let has = |key: &str| task.get(key).is_some();
    let members_fit = if detailed {
        match status {
            "input_required" => task["inputRequests"].is_object() && !has("result") && !has("error"),
            "completed" => task["result"].is_object() && !has("error") && !has("inputRequests"),
            "failed" => {
                task["error"]["code"].is_i64()
                    && task["error"]["message"].is_string()
                    && !has("result")
                    && !has("inputRequests")
            }
            _ => !has("result") && !has("error") && !has("inputRequests"),
        }
    } else {
        !has("result") && !has("error") && !has("inputRequests")
    };
    if !members_fit {
        return fail("the members of its status");
    }
    if let Some(result) = task.get("result") {
        validate_2026("CallToolResult", result)?;
    }
    Ok(())
}

/// Checks a message of the Events extension (`io.modelcontextprotocol/events`, SEP-3415), which no official JSON
/// Schema defines yet (the SEP is a draft; its working group's repository publishes none): the shapes the SEP gives,
/// checked by hand as [`check_extension_task`] checks tasks. A notification (`notifications/events/*`, each naming its
/// stream in `_meta`), or the result of `events/list` or `events/poll` (`method`).
/// A webhook delivery's body (SEP-3415): an `EventOccurrence` with its cursor, or a control envelope (`gap`,
/// `terminated`, `verification`).
#[allow(dead_code)]
pub fn check_webhook_body(body: &Value) -> Result<(), String> {
    let fits = match body["type"].as_str() {
        None => {
            body["eventId"].as_str().is_some_and(|id| !id.is_empty())
                && body["name"].is_string()
                && body["timestamp"].is_string()
                && body["data"].is_object()
                && body.get("cursor").is_none_or(|c| c.is_null() || c.is_string())
        }
        Some("gap") => body.get("cursor").is_none_or(|c| c.is_null() || c.is_string()),
        Some("terminated") => body["error"]["code"].is_i64() && body["error"]["message"].is_string(),
        Some("verification") => body["challenge"].as_str().is_some_and(|c| !c.is_empty()),
        Some(_) => false,
    };
    if fits {
        Ok(())
    } else {
        Err(format!("not a webhook body of SEP-3415: {body}"))
    }
}

pub fn check_extension_event(message: &Value, method: Option<&str>) -> Result<(), String> {
    let fail = |why: &str| Err(format!("not a message of the Events extension ({why}): {message}"));
    let is_cursor = |v: Option<&Value>| v.is_none_or(|c| c.is_null() || c.is_string());
    let is_stamp =
        |v: &Value| v.as_str().is_some_and(|s| s.len() >= 20 && s.as_bytes()[4] == b'-' && s.as_bytes()[10] == b'T');
    let occurrence_fits = |o: &Value| {
        o["eventId"].as_str().is_some_and(|id| !id.is_empty())
            && o["name"].is_string()
            && is_stamp(&o["timestamp"])
            && o["data"].is_object()
    };
    let error_fits = |e: &Value| e["code"].is_i64() && e["message"].is_string();
    if let Some(m) = message["method"].as_str() {
        validate_2026("JSONRPCNotification", message)?;
        let params = &message["params"];
        let id = &params["_meta"]["io.modelcontextprotocol/subscriptionId"];
        if !(id.is_string() || id.is_i64()) {
            return fail("the stream's subscriptionId in _meta");
        }
        let fits = match m {
            "notifications/events/active" => is_cursor(params.get("cursor")) && params["truncated"].is_boolean(),
            "notifications/events/event" => occurrence_fits(params) && is_cursor(params.get("cursor")),
            "notifications/events/heartbeat" => is_cursor(params.get("cursor")),
            // On a `subscriptions/listen` stream, whose id it names.
            "notifications/events/list_changed" => true,
            "notifications/events/error" | "notifications/events/terminated" => error_fits(&params["error"]),
            _ => return fail("an unknown notification"),
        };
        return if fits { Ok(()) } else { fail("its params") };
    }
    let result = &message["result"];
    validate_2026("Result", result)?;
    if result["resultType"] != "complete" {
        return fail("resultType");
    }
    let fits = match method {
        Some("events/list") => result["events"].as_array().is_some_and(|types| {
            types.iter().all(|t| {
                let modes = t["delivery"].as_array();
                t["name"].is_string()
                    && modes.is_some_and(|m| {
                        !m.is_empty()
                            && m.iter().all(|d| ["poll", "push", "webhook"].contains(&d.as_str().unwrap_or("")))
                    })
                    && t["inputSchema"].is_object()
                    && t["payloadSchema"].is_object()
            })
        }),
        Some("events/poll") => {
            result["events"]
                .as_array()
                .is_some_and(|events| events.iter().all(|o| occurrence_fits(o) && o.get("cursor").is_none()))
                && is_cursor(result.get("cursor"))
                && result["truncated"].is_boolean()
                && result["hasMore"].is_boolean()
                && result.get("nextPollMs").is_none_or(Value::is_u64)
        }
        Some("events/stream") => result["_meta"]["io.modelcontextprotocol/subscriptionId"] == message["id"],
        Some("events/subscribe") => {
            let status = result.get("deliveryStatus");
            result["id"].is_string()
                && (result["refreshBefore"].is_null() || is_stamp(&result["refreshBefore"]))
                && is_cursor(result.get("cursor"))
                && result["truncated"].is_boolean()
                && status.is_none_or(|s| {
                    s["active"].is_boolean()
                        && s.get("lastError").is_none_or(|e| {
                            e.is_null()
                                || [
                                    "connection_refused",
                                    "timeout",
                                    "tls_error",
                                    "http_4xx",
                                    "http_5xx",
                                    "challenge_failed",
                                ]
                                .contains(&e.as_str().unwrap_or(""))
                        })
                })
        }
        Some("events/unsubscribe") => {
            result.as_object().is_some_and(|o| o.keys().all(|k| k == "resultType" || k == "_meta"))
        }
        _ => true,
    };
    if fits {
        Ok(())
    } else {
        fail("its result")
    }
}

// ---- 2026-07-28 ----

fn v2026_validators() -> &'static Validators {
    static V: OnceLock<Validators> = OnceLock::new();
    V.get_or_init(|| {
        let path = schema_path("2026-07-28");
        let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        Validators { document: serde_json::from_str(&text).unwrap(), compiled: Mutex::default() }
    })
}

/// Validates `instance` against the definition `name` of the 2026-07-28 schema.
pub fn validate_2026(name: &str, instance: &Value) -> Result<(), String> {
    validate_in(v2026_validators(), name, instance)
}

/// The 2026 result definition for a request method, and whether the method may answer `input_required`
/// (only `tools/call`, `prompts/get` and `resources/read` may).
fn v2026_result_definition(method: &str) -> (&'static str, bool) {
    match method {
        "server/discover" => ("DiscoverResult", false),
        "tools/list" => ("ListToolsResult", false),
        "tools/call" => ("CallToolResult", true),
        "prompts/list" => ("ListPromptsResult", false),
        "prompts/get" => ("GetPromptResult", true),
        "resources/list" => ("ListResourcesResult", false),
        "resources/templates/list" => ("ListResourceTemplatesResult", false),
        "resources/read" => ("ReadResourceResult", true),
        "completion/complete" => ("CompleteResult", false),
        "subscriptions/listen" => ("SubscriptionsListenResult", false),
        _ => ("Result", false),
    }
}

/// The definition of a server notification of the 2026 schema, by method (`notifications/progress` →
/// `ProgressNotification`).
fn v2026_notification_definition(method: &str) -> Option<&'static str> {
    static BY_METHOD: OnceLock<HashMap<String, &'static str>> = OnceLock::new();
    let by_method = BY_METHOD.get_or_init(|| {
        let defs = v2026_validators().document["$defs"].as_object().expect("$defs");
        let mut map = HashMap::new();
        for (name, def) in defs {
            if let (true, Some(m)) = (name.ends_with("Notification"), def["properties"]["method"]["const"].as_str()) {
                map.insert(m.to_owned(), &*Box::leak(name.clone().into_boxed_str()));
            }
        }
        map
    });
    by_method.get(method).copied()
}

/// Validates one message a server wrote for a 2026-07-28 request (its response, or a notification of it); `method`
/// is the method of the request it answers, if known. Beyond the schema it checks what the schema cannot say: the
/// server sends no requests, `resultType` is `complete` or `input_required` (the latter only where allowed, with
/// `inputRequests` or `requestState`, bare requests, and no caching hints), retired and undefined reserved error codes
/// are not used, and a `subscriptions/listen` result names its own id.
pub fn check_v2026_message(message: &Value, method: Option<&str>) -> Result<(), String> {
    if let Some(m) = message.get("method") {
        if message.get("id").is_some() {
            return Err(format!("a server request in the 2026-07-28 era, which forbids them: {message}"));
        }
        let m = m.as_str().unwrap_or_default();
        if m == "notifications/tasks" {
            validate_2026("JSONRPCNotification", message)?;
            return check_extension_task(&message["params"], true);
        }
        if m.starts_with("notifications/events/") {
            return check_extension_event(message, method);
        }
        let def = v2026_notification_definition(m)
            .ok_or_else(|| format!("{m} is not a notification of the 2026-07-28 schema: {message}"))?;
        return validate_2026("ServerNotification", message).and(validate_2026(def, message));
    }
    if let Some(error) = message.get("error") {
        let code = error.get("code").and_then(Value::as_i64);
        if matches!(code, Some(-32002 | -32042)) {
            return Err(format!("a retired error code (the 2026-07-28 era must not emit it): {message}"));
        }
        // The Events extension's codes (SEP-3415, provisional) on its own methods.
        let events_code = method.is_some_and(|m| m.starts_with("events/")) && matches!(code, Some(-32027..=-32023));
        if code.is_some_and(|c| (-32099..=-32023).contains(&c)) && !events_code {
            return Err(format!("a code the MCP spec reserves and has not defined: {message}"));
        }
        let def = match code {
            Some(-32020) => "HeaderMismatchError",
            Some(-32021) => "MissingRequiredClientCapabilityError",
            Some(-32022) => "UnsupportedProtocolVersionError",
            _ => "JSONRPCErrorResponse",
        };
        return validate_2026("JSONRPCErrorResponse", message).and(validate_2026(def, message));
    }
    validate_2026("JSONRPCResultResponse", message)?;
    let result = &message["result"];
    let (def, may_ask) = method.map(v2026_result_definition).unwrap_or(("Result", true));
    match result.get("resultType").and_then(Value::as_str) {
        Some("input_required") => {
            if !may_ask {
                return Err(format!("an input_required result to {method:?}, which may not ask: {message}"));
            }
            validate_2026("InputRequiredResult", result)?;
            if result.get("inputRequests").is_none() && result.get("requestState").is_none() {
                return Err(format!("an input_required result with neither inputRequests nor requestState: {message}"));
            }
            if result.get("ttlMs").is_some() || result.get("cacheScope").is_some() {
                return Err(format!("an input_required result with caching hints: {message}"));
            }
            let questions = result.get("inputRequests").and_then(Value::as_object);
            if questions.is_some_and(|q| q.values().any(|r| r.get("id").is_some() || r.get("jsonrpc").is_some())) {
                return Err(format!("inputRequests are bare requests, without id or jsonrpc: {message}"));
            }
        }
        // The Tasks extension: a call answered with a task, and the tasks/* methods.
        Some("task") if method.is_none_or(|m| m == "tools/call") => {
            validate_2026("Result", result)?;
            check_extension_task(result, false)?;
        }
        Some("complete") if method == Some("tasks/get") => {
            validate_2026("Result", result)?;
            check_extension_task(result, true)?;
        }
        Some("complete") if matches!(method, Some("tasks/update" | "tasks/cancel")) => {
            let extra: Vec<&String> = result
                .as_object()
                .into_iter()
                .flatten()
                .map(|(k, _)| k)
                .filter(|k| *k != "resultType" && *k != "_meta")
                .collect();
            if !extra.is_empty() {
                return Err(format!("a tasks/update or tasks/cancel acknowledgement is empty: {message}"));
            }
        }
        Some("complete") if method.is_some_and(|m| m.starts_with("events/")) => check_extension_event(message, method)?,
        Some("complete") => validate_2026(def, result)?,
        _ => {
            return Err(format!("resultType must be \"complete\", \"input_required\" or (a call) \"task\": {message}"))
        }
    }
    if method == Some("subscriptions/listen")
        && result["_meta"]["io.modelcontextprotocol/subscriptionId"] != message["id"]
    {
        return Err(format!("a subscriptions/listen result must name its own id as subscriptionId: {message}"));
    }
    Ok(())
}
