//! Requests from the server to the client, made through a handler's [`Context`]: elicitation (form and URL mode),
//! sampling and roots. Each is checked against the capabilities the client declared before anything is sent, and
//! each is cancelled with the request that made it: the client gets a `notifications/cancelled` for it.

use std::fmt;
use std::sync::Arc;

use schemars::JsonSchema;
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use serde_json::{json, Map, Value};

use crate::context::{Context, RequestState};
use crate::wire::error::Error;
use crate::wire::jsonrpc::{self, RequestId};
use crate::wire::protocol::Role;

/// Why a request to the client did not produce a result.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum ClientError {
    /// The request that made it was cancelled; the client was told to stop.
    Cancelled,
    /// The client did not declare the capability this needs; nothing was sent.
    Unsupported {
        /// The capability, such as `elicitation` or `sampling.tools`.
        capability: &'static str,
    },
    /// The client answered with an error.
    Rejected(Error),
    /// The client's answer could not be read.
    InvalidResponse(String),
    /// The connection ended before an answer came.
    Disconnected,
}

impl fmt::Display for ClientError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ClientError::Cancelled => f.write_str("the request was cancelled"),
            ClientError::Unsupported { capability } => {
                write!(f, "the client does not support `{capability}` (it did not declare the capability)")
            }
            ClientError::Rejected(e) => write!(f, "the client answered with an error: {}", e.message),
            ClientError::InvalidResponse(why) => write!(f, "the client's answer could not be read: {why}"),
            ClientError::Disconnected => f.write_str("the client disconnected before answering"),
        }
    }
}

impl std::error::Error for ClientError {}

impl From<crate::Cancelled> for ClientError {
    fn from(_: crate::Cancelled) -> ClientError {
        ClientError::Cancelled
    }
}

/// What the user did with an elicitation.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ElicitAction {
    /// Submitted (form mode: with content).
    Accept,
    /// Said no.
    Decline,
    /// Dismissed it without choosing.
    Cancel,
}

/// The answer to a form elicitation whose schema was given by hand.
#[derive(Clone, Debug, PartialEq, Deserialize)]
#[non_exhaustive]
pub struct ElicitResult {
    /// What the user did.
    pub action: ElicitAction,
    /// The submitted values, when accepted.
    #[serde(default)]
    pub content: Option<Map<String, Value>>,
}

/// The answer to a typed form elicitation.
#[derive(Clone, Debug, PartialEq)]
pub enum Elicitation<T> {
    /// Submitted, with the values.
    Accept(T),
    /// Said no.
    Decline,
    /// Dismissed it without choosing.
    Cancel,
}

/// A message for sampling.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct SamplingMessage {
    /// Who says it.
    pub role: Role,
    /// What is said: a content block (or, with tools, a list of them).
    pub content: Value,
}

impl SamplingMessage {
    /// A text message from the user.
    pub fn user(text: impl Into<String>) -> SamplingMessage {
        SamplingMessage { role: Role::User, content: json!({ "type": "text", "text": text.into() }) }
    }

    /// A text message from the assistant.
    pub fn assistant(text: impl Into<String>) -> SamplingMessage {
        SamplingMessage { role: Role::Assistant, content: json!({ "type": "text", "text": text.into() }) }
    }
}

/// A `sampling/createMessage` request.
#[derive(Clone, Debug, Serialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct SamplingRequest {
    /// The conversation.
    pub messages: Vec<SamplingMessage>,
    /// The most tokens to generate.
    pub max_tokens: u32,
    /// A system prompt.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub system_prompt: Option<String>,
    /// Sampling temperature.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub temperature: Option<f64>,
    /// Tools the model may call (needs the client's `sampling.tools`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tools: Option<Vec<Value>>,
    /// How the model should choose tools.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tool_choice: Option<Value>,
}

impl SamplingRequest {
    /// A request with these messages and a token budget.
    pub fn new(messages: Vec<SamplingMessage>, max_tokens: u32) -> SamplingRequest {
        SamplingRequest { messages, max_tokens, system_prompt: None, temperature: None, tools: None, tool_choice: None }
    }

    /// Sets the system prompt.
    pub fn system_prompt(mut self, prompt: impl Into<String>) -> Self {
        self.system_prompt = Some(prompt.into());
        self
    }

    /// Offers tools (JSON `Tool` objects) to the model.
    pub fn tools(mut self, tools: Vec<Value>) -> Self {
        self.tools = Some(tools);
        self
    }
}

/// The client's answer to `sampling/createMessage`.
#[derive(Clone, Debug, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct SamplingResult {
    /// Who speaks (the assistant).
    pub role: Role,
    /// What it said: a content block, or a list of them.
    pub content: Value,
    /// The model that answered.
    pub model: String,
    /// Why it stopped.
    #[serde(default)]
    pub stop_reason: Option<String>,
}

impl SamplingResult {
    /// The text of the answer, if it is text.
    pub fn text(&self) -> Option<&str> {
        self.content.get("text").and_then(Value::as_str)
    }
}

/// A root the client exposes.
#[derive(Clone, Debug, PartialEq, Deserialize)]
#[non_exhaustive]
pub struct Root {
    /// A `file://` URI.
    pub uri: String,
    /// Its name.
    #[serde(default)]
    pub name: Option<String>,
}

/// Sends `notifications/cancelled` for a request to the client if it is dropped before its answer arrives.
struct Pending {
    request: Arc<RequestState>,
    id: Option<RequestId>,
}

impl Drop for Pending {
    fn drop(&mut self) {
        let Some(id) = self.id.take() else { return };
        if self.request.session.forget_outgoing(&id) {
            let frame = jsonrpc::encode_notification(
                "notifications/cancelled",
                &json!({ "requestId": id, "reason": "the server request that needed it was cancelled" }),
            );
            // The request's own stream: it is where the client saw the request.
            self.request.out.send(frame);
            tracing::debug!(%id, "cancelled a request to the client");
        }
    }
}

impl Context {
    fn capability(&self, path: &[&str]) -> bool {
        let Some(client) = &self.meta().client else { return false };
        let mut v = &client.capabilities;
        for key in path {
            match v.get(key) {
                Some(next) if !next.is_null() => v = next,
                _ => return false,
            }
        }
        true
    }

    /// Sends a request to the client and waits for its result. Fails with [`ClientError::Cancelled`] (and tells the
    /// client) when this handler's request is cancelled; if the waiting future is dropped, the client is told too.
    pub async fn request_client(&self, method: &str, params: Value) -> Result<Value, ClientError> {
        self.check_cancelled()?;
        let request = self.request_state();
        let (id, answer) = request.session.register_outgoing();
        let mut pending = Pending { request: request.clone(), id: Some(id.clone()) };
        if !request.send_if_open(jsonrpc::encode_request(&id, method, &params)) {
            return Err(ClientError::Cancelled);
        }
        let outcome = tokio::select! {
            biased;
            answer = answer => answer,
            () = request.token.cancelled() => return Err(ClientError::Cancelled), // `pending` tells the client
        };
        pending.id = None;
        match outcome {
            Ok(Ok(result)) => Ok(result),
            Ok(Err(error)) => Err(match serde_json::from_value::<Error>(error.clone()) {
                Ok(e) => ClientError::Rejected(e),
                Err(_) => ClientError::InvalidResponse(error.to_string()),
            }),
            Err(_) => Err(ClientError::Disconnected),
        }
    }

    /// Asks the user to fill in a form whose fields are `T`'s (form-mode elicitation). `T`'s JSON Schema must be a
    /// flat object of strings, numbers, booleans and enums, as the protocol requires; doc comments become field
    /// descriptions and `#[serde(default)]` values become defaults.
    pub async fn elicit<T: DeserializeOwned + JsonSchema>(&self, message: &str) -> Result<Elicitation<T>, ClientError> {
        let schema = elicitation_schema::<T>();
        let answer = self.elicit_with_schema(message, schema).await?;
        match answer.action {
            ElicitAction::Accept => {
                let content = Value::Object(answer.content.unwrap_or_default());
                serde_json::from_value(content)
                    .map(Elicitation::Accept)
                    .map_err(|e| ClientError::InvalidResponse(format!("the submitted form does not fit: {e}")))
            }
            ElicitAction::Decline => Ok(Elicitation::Decline),
            ElicitAction::Cancel => Ok(Elicitation::Cancel),
        }
    }

    /// Form-mode elicitation with a schema written by hand (`requestedSchema`).
    pub async fn elicit_with_schema(&self, message: &str, schema: Value) -> Result<ElicitResult, ClientError> {
        if !self.capability(&["elicitation"]) {
            return Err(ClientError::Unsupported { capability: "elicitation" });
        }
        let mut params = json!({ "message": message, "requestedSchema": schema });
        if &*self.meta().protocol_version >= "2025-11-25" {
            params["mode"] = "form".into();
        }
        let result = self.request_client("elicitation/create", params).await?;
        serde_json::from_value(result).map_err(|e| ClientError::InvalidResponse(e.to_string()))
    }

    /// URL-mode elicitation: asks the user to visit `url` (for credentials or payment that must not pass through the
    /// client). Needs the client's `elicitation.url` capability.
    pub async fn elicit_url(
        &self,
        message: &str,
        url: &str,
        elicitation_id: &str,
    ) -> Result<ElicitAction, ClientError> {
        if !self.capability(&["elicitation", "url"]) {
            return Err(ClientError::Unsupported { capability: "elicitation.url" });
        }
        let params = json!({ "mode": "url", "message": message, "url": url, "elicitationId": elicitation_id });
        let result = self.request_client("elicitation/create", params).await?;
        let answer: ElicitResult =
            serde_json::from_value(result).map_err(|e| ClientError::InvalidResponse(e.to_string()))?;
        Ok(answer.action)
    }

    /// Asks the client's model for a completion (`sampling/createMessage`). Offering tools needs `sampling.tools`.
    pub async fn sample(&self, request: SamplingRequest) -> Result<SamplingResult, ClientError> {
        if !self.capability(&["sampling"]) {
            return Err(ClientError::Unsupported { capability: "sampling" });
        }
        if request.tools.is_some() && !self.capability(&["sampling", "tools"]) {
            return Err(ClientError::Unsupported { capability: "sampling.tools" });
        }
        let params = serde_json::to_value(&request).map_err(|e| ClientError::InvalidResponse(e.to_string()))?;
        let result = self.request_client("sampling/createMessage", params).await?;
        serde_json::from_value(result).map_err(|e| ClientError::InvalidResponse(e.to_string()))
    }

    /// The client's roots (`roots/list`).
    pub async fn list_roots(&self) -> Result<Vec<Root>, ClientError> {
        if !self.capability(&["roots"]) {
            return Err(ClientError::Unsupported { capability: "roots" });
        }
        let result = self.request_client("roots/list", json!({})).await?;
        #[derive(Deserialize)]
        struct Roots {
            roots: Vec<Root>,
        }
        serde_json::from_value::<Roots>(result)
            .map(|r| r.roots)
            .map_err(|e| ClientError::InvalidResponse(e.to_string()))
    }
}

/// The `requestedSchema` for `T`: a flat object schema in the restricted subset elicitation allows (each property a
/// string, number, integer, boolean or enum; optional fields are simply not `required`).
pub(crate) fn elicitation_schema<T: JsonSchema>() -> Value {
    let generator = schemars::generate::SchemaSettings::draft2020_12()
        .with(|s| {
            s.inline_subschemas = true;
            s.meta_schema = None;
        })
        .for_deserialize()
        .into_generator();
    let schema = generator.into_root_schema_for::<T>().to_value();
    let mut out = Map::new();
    out.insert("type".into(), "object".into());
    let properties: Map<String, Value> = schema
        .get("properties")
        .and_then(Value::as_object)
        .map(|p| p.iter().map(|(k, v)| (k.clone(), primitive(v.clone()))).collect())
        .unwrap_or_default();
    out.insert("properties".into(), Value::Object(properties));
    if let Some(required) = schema.get("required") {
        out.insert("required".into(), required.clone());
    }
    Value::Object(out)
}

/// One property, brought into the elicitation subset: `["T", "null"]` becomes `T`, an `anyOf` with `null` becomes its
/// other branch, and keywords the subset has no room for (`format`s other than email, uri, date and date-time) go.
fn primitive(schema: Value) -> Value {
    let Value::Object(mut o) = schema else { return schema };
    if let Some(Value::Array(branches)) = o.get("anyOf").cloned() {
        let non_null: Vec<Value> = branches.into_iter().filter(|b| b.get("type") != Some(&json!("null"))).collect();
        if non_null.len() == 1 {
            o.remove("anyOf");
            if let Value::Object(inner) = primitive(non_null.into_iter().next().unwrap_or_default()) {
                for (k, v) in inner {
                    o.entry(k).or_insert(v);
                }
            }
        }
    }
    if let Some(Value::Array(types)) = o.get("type").cloned() {
        let non_null: Vec<Value> = types.into_iter().filter(|t| t != "null").collect();
        if let [one] = non_null.as_slice() {
            o.insert("type".into(), one.clone());
        }
    }
    if let Some(Value::Array(values)) = o.get("enum").cloned() {
        o.insert("enum".into(), Value::Array(values.into_iter().filter(|v| !v.is_null()).collect()));
    }
    let keep_format = o.get("type") == Some(&json!("string"))
        && matches!(o.get("format").and_then(Value::as_str), Some("email" | "uri" | "date" | "date-time"));
    if !keep_format {
        o.remove("format");
    }
    Value::Object(o)
}
