//! Elicitation: asking the user to fill in a form (its schema from a type, or written by hand) or to visit a URL.

use schemars::JsonSchema;
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use serde_json::{json, Map, Value};

use super::{parse, Ask, AskError, Question};
use crate::context::Context;

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
///
/// [`Context::elicit`](crate::Context::elicit) asks the user to fill in the fields of `T` (its schema is the
/// form) and answers with what they did:
///
/// ```
/// use mcp::Context;
/// use mcp::ask::Elicitation;
///
/// #[derive(serde::Deserialize, schemars::JsonSchema)]
/// struct Shipping {
///     /// Where to send the book.
///     address: String,
///     /// Gift-wrap it?
///     gift: Option<bool>,
/// }
///
/// /// Order a book, asking where to send it.
/// #[mcp::tool]
/// async fn order(title: String, ctx: &Context) -> Result<String, mcp::ask::AskError> {
///     Ok(match ctx.elicit::<Shipping>(&format!("Where should {title:?} go?")).await? {
///         Elicitation::Accept(Shipping { address, gift }) => {
///             format!("Sending {title:?} to {address}{}.", if gift == Some(true) { ", wrapped" } else { "" })
///         }
///         Elicitation::Decline => "Order not placed.".to_owned(),
///         Elicitation::Cancel => "Order abandoned.".to_owned(),
///     })
/// }
/// # let _ = mcp::Server::builder().tool::<order>().build().unwrap();
/// ```
#[derive(Clone, Debug, PartialEq)]
pub enum Elicitation<T> {
    /// Submitted, with the values.
    Accept(T),
    /// Said no.
    Decline,
    /// Dismissed it without choosing.
    Cancel,
}

impl Context {
    /// Asks the user to fill in a form whose fields are `T`'s (form-mode elicitation). `T`'s JSON Schema must be a
    /// flat object of strings, numbers, booleans and enums, as the protocol requires; doc comments become field
    /// descriptions and `#[serde(default)]` values become defaults.
    ///
    /// In the 2026 era the question goes back as an `input_required` result and the handler stops here; the
    /// client's retry runs it again, and this time the call returns the answer. Code before it runs twice.
    pub async fn elicit<T: DeserializeOwned + JsonSchema>(&self, message: &str) -> Result<Elicitation<T>, AskError> {
        self.unkeyed().elicit(message).await
    }

    /// [`Context::elicit`] for a plain `fn` handler: blocks its thread until the answer comes (2025) or returns
    /// [`AskError::InputRequired`] at once (2026), which the handler returns with `?`.
    pub fn elicit_blocking<T: DeserializeOwned + JsonSchema>(&self, message: &str) -> Result<Elicitation<T>, AskError> {
        self.unkeyed().elicit_blocking(message)
    }

    /// Form-mode elicitation with a schema written by hand (`requestedSchema`).
    pub async fn elicit_with_schema(&self, message: &str, schema: Value) -> Result<ElicitResult, AskError> {
        self.unkeyed().elicit_with_schema(message, schema).await
    }

    /// URL-mode elicitation: asks the user to visit `url` (for credentials or payment that must not pass through the
    /// client). Needs the client's `elicitation.url` capability.
    pub async fn elicit_url(&self, message: &str, url: &str, elicitation_id: &str) -> Result<ElicitAction, AskError> {
        self.unkeyed().elicit_url(message, url, elicitation_id).await
    }
}

impl Ask<'_> {
    fn form(&self, message: &str, schema: Value) -> Question {
        let mut params = json!({ "message": message, "requestedSchema": schema });
        let version = &*self.ctx.meta().protocol_version;
        if self.ctx.round().is_none() && version >= "2025-11-25" {
            params["mode"] = "form".into();
        }
        Question { method: "elicitation/create", params, capability: &["elicitation", "form"] }
    }

    /// See [`Context::elicit`].
    pub async fn elicit<T: DeserializeOwned + JsonSchema>(self, message: &str) -> Result<Elicitation<T>, AskError> {
        self.run(self.form(message, elicitation_schema::<T>()), typed_elicitation::<T>).await
    }

    /// See [`Context::elicit_blocking`].
    pub fn elicit_blocking<T: DeserializeOwned + JsonSchema>(self, message: &str) -> Result<Elicitation<T>, AskError> {
        self.run_blocking(self.form(message, elicitation_schema::<T>()), typed_elicitation::<T>)
    }

    /// See [`Context::elicit_with_schema`].
    pub async fn elicit_with_schema(self, message: &str, schema: Value) -> Result<ElicitResult, AskError> {
        self.run(self.form(message, schema), parse::<ElicitResult>).await
    }

    /// See [`Context::elicit_url`]. The 2026 era has no elicitation ids: `elicitation_id` is sent in the 2025 era
    /// only.
    pub async fn elicit_url(self, message: &str, url: &str, elicitation_id: &str) -> Result<ElicitAction, AskError> {
        let mut params = json!({ "mode": "url", "message": message, "url": url });
        if self.ctx.round().is_none() {
            params["elicitationId"] = elicitation_id.into();
        }
        let question = Question { method: "elicitation/create", params, capability: &["elicitation", "url"] };
        self.run(question, |v| parse::<ElicitResult>(v).map(|a| a.action)).await
    }
}

fn typed_elicitation<T: DeserializeOwned>(value: Value) -> Result<Elicitation<T>, String> {
    let answer: ElicitResult = parse(value)?;
    match answer.action {
        ElicitAction::Accept => {
            let content = Value::Object(answer.content.unwrap_or_default());
            serde_json::from_value(content)
                .map(Elicitation::Accept)
                .map_err(|e| format!("the submitted form does not fit: {e}"))
        }
        ElicitAction::Decline => Ok(Elicitation::Decline),
        ElicitAction::Cancel => Ok(Elicitation::Cancel),
    }
}

/// The `requestedSchema` for `T`: a flat object schema in the restricted subset elicitation allows (each property a
/// string, number, integer, boolean or enum; optional fields are simply not `required`).
fn elicitation_schema<T: JsonSchema>() -> Value {
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
    crate::handler::tool::without_null(&mut o);
    let keep_format = o.get("type") == Some(&json!("string"))
        && matches!(o.get("format").and_then(Value::as_str), Some("email" | "uri" | "date" | "date-time"));
    if !keep_format {
        o.remove("format");
    }
    Value::Object(o)
}
