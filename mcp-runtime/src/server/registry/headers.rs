//! Tool parameters mirrored in HTTP headers (`x-mcp-header` in an input schema, 2026-07-28): read from the schema
//! and checked when a tool is registered.

use serde_json::Value;

/// A tool parameter mirrored in an HTTP header (`x-mcp-header` in its schema).
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct ParamHeader {
    /// The property path in `arguments`.
    pub path: Vec<String>,
    /// The header's name after `Mcp-Param-`, lowercase.
    pub header: String,
}

/// The `x-mcp-header` annotations of an input schema, checked as the 2026-07-28 protocol requires: each on a
/// `string`, `integer` or `boolean` property reached from the root through `properties` alone, named with HTTP token
/// characters, unique without regard to case.
pub(crate) fn param_headers(schema: &Value) -> Result<Vec<ParamHeader>, String> {
    fn walk(schema: &Value, path: &mut Vec<String>, out: &mut Vec<ParamHeader>) -> Result<(), String> {
        let Some(properties) = schema.get("properties").and_then(Value::as_object) else { return Ok(()) };
        for (name, property) in properties {
            path.push(name.clone());
            if let Some(header) = property.get("x-mcp-header") {
                let header = header
                    .as_str()
                    .ok_or_else(|| format!("`x-mcp-header` of `{}` must be a string", path.join(".")))?;
                crate::handler::tool::check_header_name(header)?;
                let types: Vec<&str> = match property.get("type") {
                    Some(Value::String(t)) => vec![t.as_str()],
                    Some(Value::Array(ts)) => ts.iter().filter_map(Value::as_str).filter(|t| *t != "null").collect(),
                    _ => Vec::new(),
                };
                if !matches!(types.as_slice(), ["string"] | ["integer"] | ["boolean"]) {
                    return Err(format!(
                        "`x-mcp-header` on `{}`: only string, integer and boolean parameters can be mirrored in a header",
                        path.join(".")
                    ));
                }
                let lower = header.to_ascii_lowercase();
                if out.iter().any(|h| h.header == lower) {
                    return Err(format!("two parameters are mirrored in the header Mcp-Param-{header}"));
                }
                out.push(ParamHeader { path: path.clone(), header: lower });
            }
            walk(property, path, out)?;
            path.pop();
        }
        Ok(())
    }
    let mut out = Vec::new();
    walk(schema, &mut Vec::new(), &mut out)?;
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn x_mcp_header_is_read_through_properties_and_checked() {
        let schema = json!({"type": "object", "properties": {
            "region": {"type": "string", "x-mcp-header": "Region"},
            "config": {"type": "object", "properties": {"shard": {"type": ["integer", "null"], "x-mcp-header": "Shard"}}},
            "query": {"type": "string"},
        }});
        let headers = param_headers(&schema).unwrap();
        assert_eq!(headers.len(), 2);
        assert!(headers.contains(&ParamHeader { path: vec!["region".into()], header: "region".into() }));
        assert!(headers.contains(&ParamHeader { path: vec!["config".into(), "shard".into()], header: "shard".into() }));
        let refused = [
            json!({"properties": {"a": {"type": "number", "x-mcp-header": "A"}}}),
            json!({"properties": {"a": {"type": "array", "x-mcp-header": "A"}}}),
            json!({"properties": {"a": {"type": "string", "x-mcp-header": "A B"}}}),
            json!({"properties": {"a": {"type": "string", "x-mcp-header": ""}}}),
            json!({"properties": {"a": {"type": "string", "x-mcp-header": "A"}, "b": {"type": "string", "x-mcp-header": "a"}}}),
        ];
        for schema in refused {
            assert!(param_headers(&schema).is_err(), "{schema}");
        }
    }
}
