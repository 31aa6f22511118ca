//! The `x-mcp-header` annotations of tools (2026 era): which arguments a tool mirrors in `Mcp-Param-*` headers, and
//! a value's form as a header (`=?base64?…?=` where it cannot be one as it is).

use base64::Engine;
use serde_json::Value;

/// A tool parameter mirrored in a header: the argument's path, and the header's name (after `Mcp-Param-`).
pub(super) type HeaderParam = (Vec<String>, String);

/// A value as a header: as it is when it can be (visible ASCII and inner spaces), else `=?base64?…?=`.
pub(super) fn header_value(value: &str) -> String {
    let looks_encoded = value.starts_with("=?") && value.ends_with("?=");
    let plain = value.bytes().all(|b| b == b' ' || (0x21..=0x7e).contains(&b))
        && !value.starts_with(' ')
        && !value.ends_with(' ')
        && !looks_encoded;
    if plain {
        value.to_owned()
    } else {
        format!("=?base64?{}?=", base64::engine::general_purpose::STANDARD.encode(value))
    }
}

/// The `x-mcp-header` parameters of a tool's input schema: the argument's path and the header's name; or why the
/// annotations break the rules (an empty name or one that is not an HTTP token, a type other than string, integer or
/// boolean, a name used twice regardless of case), which makes the tool unusable.
pub(super) fn header_params(schema: &Value) -> Result<Vec<HeaderParam>, String> {
    fn walk(schema: &Value, path: &mut Vec<String>, out: &mut Vec<HeaderParam>, ok: &mut Option<String>) {
        let Some(properties) = schema.get("properties").and_then(Value::as_object) else { return };
        for (name, property) in properties {
            path.push(name.clone());
            if let Some(header) = property.get("x-mcp-header") {
                let valid_type = match property.get("type") {
                    Some(Value::String(t)) => matches!(t.as_str(), "string" | "integer" | "boolean"),
                    Some(Value::Array(types)) => types
                        .iter()
                        .filter(|t| *t != "null")
                        .all(|t| matches!(t.as_str(), Some("string" | "integer" | "boolean"))),
                    _ => false,
                };
                match header.as_str() {
                    Some(h) if valid_type && is_token(h) => out.push((path.clone(), h.to_owned())),
                    Some(h) if !valid_type => {
                        ok.get_or_insert(format!(
                            "`{}` (header {h:?}) is not a string, integer or boolean",
                            path.join(".")
                        ));
                    }
                    other => {
                        ok.get_or_insert(format!(
                            "`{}` has an x-mcp-header that is not an HTTP token: {other:?}",
                            path.join(".")
                        ));
                    }
                }
            }
            walk(property, path, out, ok);
            path.pop();
        }
    }
    let mut out = Vec::new();
    let mut broken = None;
    walk(schema, &mut Vec::new(), &mut out, &mut broken);
    if let Some(why) = broken {
        return Err(why);
    }
    let mut names: Vec<String> = out.iter().map(|(_, h)| h.to_ascii_lowercase()).collect();
    names.sort();
    if let Some(twice) = names.windows(2).find(|w| w[0] == w[1]) {
        return Err(format!("the header name {:?} is used twice (names are compared without case)", twice[0]));
    }
    Ok(out)
}

fn is_token(name: &str) -> bool {
    !name.is_empty() && name.bytes().all(|b| b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b))
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::{header_params, header_value};

    #[test]
    fn header_values_use_base64_only_where_needed() {
        assert_eq!(header_value("us-west1"), "us-west1");
        assert_eq!(header_value("a b"), "a b");
        assert_eq!(header_value(""), "", "an empty value is sent empty");
        assert_eq!(header_value("line1\nline2"), "=?base64?bGluZTEKbGluZTI=?=");
        assert_eq!(header_value("\tindented"), "=?base64?CWluZGVudGVk?=");
        assert_eq!(header_value(" padded "), "=?base64?IHBhZGRlZCA=?=");
        assert_eq!(header_value("Hello, 世界"), "=?base64?SGVsbG8sIOS4lueVjA==?=");
        assert_eq!(header_value("=?base64?literal?="), "=?base64?PT9iYXNlNjQ/bGl0ZXJhbD89?=");
    }

    #[test]
    fn invalid_header_annotations_make_a_tool_send_none() {
        let good = json!({"properties": {"region": {"type": "string", "x-mcp-header": "Region"}}});
        assert_eq!(header_params(&good), Ok(vec![(vec!["region".to_owned()], "Region".to_owned())]));
        let bad = json!({"properties": {"a": {"type": "string", "x-mcp-header": "A B"}, "b": {"type": "string", "x-mcp-header": "B"}}});
        assert!(header_params(&bad).is_err());
        let clash = json!({"properties": {"a": {"type": "string", "x-mcp-header": "X"}, "b": {"type": "string", "x-mcp-header": "x"}}});
        assert!(header_params(&clash).is_err());
        let number = json!({"properties": {"score": {"type": "number", "x-mcp-header": "Score"}}});
        assert!(header_params(&number).is_err());
        let empty = json!({"properties": {"v": {"type": "string", "x-mcp-header": ""}}});
        assert!(header_params(&empty).is_err());
    }
}
