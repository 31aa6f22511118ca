//! What a tool function may return ([`IntoToolResult`]), and structured results with their output schema
//! ([`Json`]).

use std::borrow::Cow;
use std::fmt::Display;

use schemars::JsonSchema;
use serde::Serialize;
use serde_json::Value;

use super::schema::schema_settings;
use crate::wire::protocol::{CallToolResult, Content};

/// The values a tool function may return.
///
/// Text-like values become one text content block; [`Json<T>`] becomes structured content with an output schema
/// (and a text copy); `Content`, `Vec<Content>` and [`CallToolResult`] are sent as they are; `Result<T, E>` with
/// `E: Display` turns `Err` into an `isError: true` result whose text is the error's message.
///
/// A type of your own can be returned once it says how it is sent:
///
/// ```
/// use mcp::handler::IntoToolResult;
/// use mcp::{CallToolResult, Content};
///
/// /// A receipt, sent as two text blocks.
/// struct Receipt {
///     order: u64,
///     total_cents: u64,
/// }
///
/// impl IntoToolResult for Receipt {
///     fn into_tool_result(self) -> CallToolResult {
///         CallToolResult::success(vec![
///             Content::text(format!("order {}", self.order)),
///             Content::text(format!("total {:.2}", self.total_cents as f64 / 100.0)),
///         ])
///     }
/// }
///
/// /// Place an order.
/// #[mcp::tool]
/// fn order(title: String) -> Result<Receipt, String> {
///     if title.is_empty() {
///         return Err("no title given".into()); // an `isError: true` result with this text
///     }
///     Ok(Receipt { order: 7, total_cents: 1250 })
/// }
///
/// let result = Receipt { order: 7, total_cents: 1250 }.into_tool_result();
/// assert_eq!(result.content[1], Content::text("total 12.50"));
/// let failed = Err::<Receipt, _>("no title given").into_tool_result();
/// assert_eq!(failed.is_error, Some(true));
/// # let _ = mcp::Server::builder().tool::<order>().build().unwrap();
/// ```
#[diagnostic::on_unimplemented(
    message = "`{Self}` cannot be returned from an MCP tool",
    label = "this return type does not convert into a tool result",
    note = "return a `String`, `&str`, `mcp::Json<T>`, `mcp::Content`, `Vec<mcp::Content>`, `mcp::CallToolResult`, `()`, or a `Result<T, E>` of one of them with `E: Display`"
)]
pub trait IntoToolResult {
    /// Converts the value into a result.
    fn into_tool_result(self) -> CallToolResult;

    /// The output schema of this return type, if it is structured. Called once per server.
    fn output_schema() -> Option<Value> {
        None
    }
}

impl IntoToolResult for String {
    fn into_tool_result(self) -> CallToolResult {
        CallToolResult::success(vec![Content::text(self)])
    }
}

impl IntoToolResult for &str {
    fn into_tool_result(self) -> CallToolResult {
        CallToolResult::success(vec![Content::text(self)])
    }
}

impl IntoToolResult for Cow<'_, str> {
    fn into_tool_result(self) -> CallToolResult {
        CallToolResult::success(vec![Content::text(self)])
    }
}

impl IntoToolResult for () {
    fn into_tool_result(self) -> CallToolResult {
        CallToolResult::success(Vec::new())
    }
}

impl IntoToolResult for Content {
    fn into_tool_result(self) -> CallToolResult {
        CallToolResult::success(vec![self])
    }
}

impl IntoToolResult for Vec<Content> {
    fn into_tool_result(self) -> CallToolResult {
        CallToolResult::success(self)
    }
}

impl IntoToolResult for CallToolResult {
    fn into_tool_result(self) -> CallToolResult {
        self
    }
}

impl<T: IntoToolResult, E: Display> IntoToolResult for Result<T, E> {
    fn into_tool_result(self) -> CallToolResult {
        match self {
            Ok(v) => v.into_tool_result(),
            Err(e) => CallToolResult::error(e.to_string()),
        }
    }

    fn output_schema() -> Option<Value> {
        T::output_schema()
    }
}

/// A structured tool result: serialized into `structuredContent` (and a text copy in `content`), with `T`'s JSON
/// Schema as the tool's `outputSchema`.
///
/// MCP requires structured content to be a JSON object. A `T` that serializes to something else (a number, a list)
/// is sent as `{"result": …}`, and its output schema says so.
///
/// ```
/// use mcp::handler::IntoToolResult;
/// use mcp::Json;
/// use serde_json::json;
///
/// #[derive(serde::Serialize, schemars::JsonSchema)]
/// struct Weather { celsius: f64 }
///
/// /// Current weather.
/// #[mcp::tool]
/// fn weather(city: String) -> Json<Weather> {
///     # let _ = city;
///     Json(Weather { celsius: 21.5 })
/// }
///
/// let server = mcp::Server::builder().tool::<weather>().build().unwrap();
/// let tool = &server.tools_list()["tools"][0];
/// assert_eq!(tool["outputSchema"]["properties"]["celsius"]["type"], "number");
///
/// let result = Json(Weather { celsius: 21.5 }).into_tool_result();
/// assert_eq!(result.structured_content, Some(json!({ "celsius": 21.5 })));
/// let result = Json(vec![1, 2]).into_tool_result(); // not an object: wrapped
/// assert_eq!(result.structured_content, Some(json!({ "result": [1, 2] })));
/// ```
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Json<T>(pub T);

impl<T: Serialize + JsonSchema> IntoToolResult for Json<T> {
    fn into_tool_result(self) -> CallToolResult {
        match serde_json::to_value(&self.0) {
            Ok(value) => {
                let text = value.to_string();
                // MCP's structured content is an object: anything else is wrapped as `{"result": …}`, as the
                // output schema says (see `output_schema`).
                let structured = if value.is_object() { value } else { serde_json::json!({ "result": value }) };
                CallToolResult::success(vec![Content::text(text)]).with_structured(structured)
            }
            Err(e) => CallToolResult::error(format!("could not serialize the tool's result: {e}")),
        }
    }

    fn output_schema() -> Option<Value> {
        let mut generator = schema_settings().for_serialize().into_generator();
        let mut schema = generator.root_schema_for::<T>().to_value();
        let Value::Object(root) = &mut schema else { return None };
        root.remove("title");
        match root.get("type") {
            Some(Value::String(t)) if t == "object" => {}
            // A value that may or may not be an object (`serde_json::Value`, an untagged enum): objects are sent as
            // they are, anything else wrapped as `{"result": …}`; both are objects.
            None => {
                root.insert("type".into(), "object".into());
            }
            // Never an object: always wrapped, and so is the schema.
            Some(_) => {
                let defs = root.remove("$defs");
                let dialect = root.remove("$schema");
                let inner = std::mem::take(root);
                root.insert("type".into(), "object".into());
                root.insert("properties".into(), serde_json::json!({ "result": inner }));
                root.insert("required".into(), serde_json::json!(["result"]));
                if let Some(d) = dialect {
                    root.insert("$schema".into(), d);
                }
                if let Some(d) = defs {
                    root.insert("$defs".into(), d);
                }
            }
        }
        Some(schema)
    }
}
