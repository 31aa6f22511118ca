//! The 2026 HTTP header rules: `MCP-Protocol-Version`, `Mcp-Method`, `Mcp-Name` and `Mcp-Param-*` agree with the
//! body (-32020 otherwise), and the HTTP status of a 2026 error response. HTTP's own: stdio has no headers.

use std::borrow::Cow;

use base64::Engine;
use serde_json::value::RawValue;
use serde_json::Value;

use crate::era::v2026::{envelope_of, unsupported_version, META_VERSION, VERSIONS};
use crate::server::Server;
use crate::wire::envelope::{json_string, RawEnvelope};
use crate::wire::error::{Error, ErrorCode};

/// Checks a 2026 request's HTTP headers against its body, in the order the protocol's reference implementations
/// use: the version header present (-32020), the envelope complete (-32602), the version header equal to the
/// body's (-32020), the version served (-32022), then `Mcp-Method`, `Mcp-Name` and `Mcp-Param-*` (-32020).
pub(crate) fn check_http_headers(
    headers: &http::HeaderMap,
    method: &str,
    (params, envelope, arguments): (Option<&Value>, Option<&RawEnvelope>, Option<&RawValue>),
    server: &Server,
) -> Result<(), Error> {
    let header = |name: &http::HeaderName| -> Result<Option<&str>, Error> {
        let mut values = headers.get_all(name).iter();
        let first = values.next();
        // One value only: with two, a gateway could route on one and the server check the other.
        if values.next().is_some() {
            return Err(mismatch(format!("the {name} header appears more than once")));
        }
        match first {
            None => Ok(None),
            Some(v) => v
                .to_str()
                .map(|s| Some(s.trim_matches([' ', '\t'])))
                .map_err(|_| mismatch(format!("the {name} header holds characters that are not visible ASCII"))),
        }
    };
    let Some(version) = header(&MCP_PROTOCOL_VERSION)? else {
        return Err(mismatch("the MCP-Protocol-Version header is missing"));
    };
    let envelope = envelope_of(params, envelope)?;
    // The version as sent, a JSON string (one that is not is no version, and matches no header).
    let body_version = envelope.version().and_then(json_string).unwrap_or_default();
    if version != body_version {
        return Err(mismatch(format!(
            "the MCP-Protocol-Version header ({version:?}) does not match _meta.{META_VERSION} ({body_version:?})"
        )));
    }
    if !VERSIONS.contains(&version) {
        return Err(unsupported_version(version));
    }
    match header(&MCP_METHOD)? {
        None => return Err(mismatch("the Mcp-Method header is missing")),
        Some(m) if m != method => {
            return Err(mismatch(format!("the Mcp-Method header ({m:?}) does not match the method ({method:?})")))
        }
        Some(_) => {}
    }
    let name_key = match method {
        "tools/call" | "prompts/get" => Some("name"),
        "resources/read" => Some("uri"),
        // An extension's or a custom method's own (the Tasks extension's by task id).
        _ => server
            .inner
            .handlers()
            .extension_methods
            .get(method)
            .or_else(|| server.inner.handlers().methods.get(method))
            .and_then(|d| d.name_param),
    };
    if let Some(key) = name_key {
        let body = params.and_then(|p| p.get(key)).and_then(Value::as_str).unwrap_or_default();
        let Some(raw) = header(&MCP_NAME)? else {
            return Err(mismatch("the Mcp-Name header is missing"));
        };
        let given = decode_header_value(raw).map_err(|e| mismatch(format!("the Mcp-Name header: {e}")))?;
        if given != body {
            return Err(mismatch(format!("the Mcp-Name header ({given:?}) does not match the body ({body:?})")));
        }
    }
    if method == "tools/call" {
        check_param_headers(headers, (params, arguments), server)?;
    }
    Ok(())
}

/// The headers a 2026 request is routed by, parsed once (a lookup by `&str` parses the name every time).
static MCP_PROTOCOL_VERSION: http::HeaderName = http::HeaderName::from_static("mcp-protocol-version");
static MCP_METHOD: http::HeaderName = http::HeaderName::from_static("mcp-method");
static MCP_NAME: http::HeaderName = http::HeaderName::from_static("mcp-name");

fn mismatch(message: impl Into<String>) -> Error {
    Error::new(crate::wire::error::ErrorCode::HEADER_MISMATCH, message)
}

/// Whether a header's text is the same number as an argument: integers compared exactly (2^53 and 2^53 + 1 differ,
/// though they are one `f64`), `3` and `3.0` the same, other numbers as `f64`.
fn same_number(given: &str, n: &serde_json::Number) -> bool {
    if let (Ok(g), Some(v)) = (given.parse::<i64>(), n.as_i64()) {
        return g == v;
    }
    if let (Ok(g), Some(v)) = (given.parse::<u64>(), n.as_u64()) {
        return g == v;
    }
    // An integer on one side only: equal only if the other is that integer written with a fraction of zero.
    let integer = |text: &str| text.parse::<i128>().ok();
    match (integer(given), n.as_i64().map(i128::from).or_else(|| n.as_u64().map(i128::from))) {
        (Some(_), Some(_)) => false,
        (Some(g), None) => n.as_f64().is_some_and(|v| v.fract() == 0.0 && v.abs() < 9.0e15 && v as i128 == g),
        (None, Some(v)) => given.parse::<f64>().is_ok_and(|g| g.fract() == 0.0 && g.abs() < 9.0e15 && g as i128 == v),
        (None, None) => given.parse::<f64>().ok().zip(n.as_f64()).is_some_and(|(g, v)| g == v),
    }
}

/// A header value, with the `=?base64?…?=` form decoded (strict RFC 4648 with padding).
pub(crate) fn decode_header_value(raw: &str) -> Result<Cow<'_, str>, String> {
    let Some(encoded) = raw.strip_prefix("=?base64?").and_then(|r| r.strip_suffix("?=")) else {
        return Ok(Cow::Borrowed(raw));
    };
    let bytes = base64::engine::general_purpose::STANDARD
        .decode(encoded)
        .map_err(|e| format!("invalid Base64 in {raw:?}: {e}"))?;
    String::from_utf8(bytes).map(Cow::Owned).map_err(|_| format!("{raw:?} decodes to bytes that are not UTF-8"))
}

/// `Mcp-Param-*` headers of a tool call against the arguments they mirror.
fn check_param_headers(
    headers: &http::HeaderMap,
    (params, text): (Option<&Value>, Option<&RawValue>),
    server: &Server,
) -> Result<(), Error> {
    let Some(name) = params.and_then(|p| p.get("name")).and_then(Value::as_str) else { return Ok(()) };
    let registry = server.registry();
    let Some(mirrored) = registry.tool_headers(name) else { return Ok(()) };
    // Arguments kept as text are read as values here: only for a tool with mirrored parameters.
    let read = text.and_then(|t| serde_json::from_str::<Value>(t.get()).ok());
    let arguments = read.as_ref().or_else(|| params.and_then(|p| p.get("arguments")));
    for param in mirrored {
        let value = param.path.iter().try_fold(arguments, |v, key| Some(v?.get(key))).flatten();
        let header_name = format!("mcp-param-{}", param.header);
        if headers.get_all(header_name.as_str()).iter().nth(1).is_some() {
            return Err(mismatch(format!("the Mcp-Param-{} header appears more than once", param.header)));
        }
        let header = headers.get(header_name.as_str());
        // A header this tool recognises must hold visible ASCII, whether or not its argument is there.
        if header.is_some_and(|h| h.to_str().is_err()) {
            return Err(mismatch(format!("the Mcp-Param-{} header holds invalid characters", param.header)));
        }
        let value = match value {
            None | Some(Value::Null) => continue, // nothing to mirror; a header, if any, is not expected
            Some(v) => v,
        };
        let Some(header) = header else {
            return Err(mismatch(format!(
                "the Mcp-Param-{} header is missing; it must mirror the argument `{}`",
                param.header,
                param.path.join(".")
            )));
        };
        let raw = header
            .to_str()
            .map_err(|_| mismatch(format!("the Mcp-Param-{} header holds invalid characters", param.header)))?
            .trim_matches([' ', '\t']);
        let given =
            decode_header_value(raw).map_err(|e| mismatch(format!("the Mcp-Param-{} header: {e}", param.header)))?;
        let agrees = match value {
            Value::String(s) => given == *s,
            Value::Bool(b) => given == if *b { "true" } else { "false" },
            Value::Number(n) => same_number(&given, n),
            _ => false,
        };
        if !agrees {
            return Err(mismatch(format!(
                "the Mcp-Param-{} header ({given:?}) does not match the argument `{}` ({value})",
                param.header,
                param.path.join(".")
            )));
        }
    }
    Ok(())
}

/// The HTTP status of a 2026 error response.
pub(in crate::transport::http) fn http_status(code: ErrorCode) -> u16 {
    match code.0 {
        -32601 => 404,
        -32700 | -32600 | -32602 | -32020 | -32021 | -32022 => 400,
        _ => 200,
    }
}

#[cfg(test)]
mod tests {
    use super::{decode_header_value, same_number};

    #[test]
    fn header_numbers_are_compared_exactly_when_they_are_integers() {
        let n = |v: serde_json::Value| match v {
            serde_json::Value::Number(n) => n,
            _ => unreachable!(),
        };
        assert!(same_number("9007199254740992", &n(serde_json::json!(9007199254740992u64))));
        assert!(!same_number("9007199254740992", &n(serde_json::json!(9007199254740993u64))));
        assert!(!same_number("9223372036854775806", &n(serde_json::json!(i64::MAX))));
        assert!(same_number("-5", &n(serde_json::json!(-5))));
        assert!(same_number("3", &n(serde_json::json!(3.0))));
        assert!(same_number("3.0", &n(serde_json::json!(3))));
        assert!(same_number("2.5", &n(serde_json::json!(2.5))));
        assert!(!same_number("-1", &n(serde_json::json!(u64::MAX))));
    }

    #[test]
    fn header_values_decode_the_base64_form_strictly_and_take_lookalikes_literally() {
        assert_eq!(decode_header_value("=?base64?SGVsbG8=?=").as_deref(), Ok("Hello"));
        assert_eq!(decode_header_value("=?base64?SGVsbG8sIOS4lueVjA==?=").as_deref(), Ok("Hello, 世界"));
        assert!(decode_header_value("=?base64?SGVsbG8?=").is_err(), "missing padding");
        assert!(decode_header_value("=?base64?SGVs!!!bG8=?=").is_err(), "not the alphabet");
        assert!(decode_header_value("=?base64?/w==?=").is_err(), "not UTF-8");
        for literal in ["SGVsbG8=", "=?base64?SGVsbG8=", "=?BASE64?SGVsbG8=?=", "plain"] {
            assert_eq!(decode_header_value(literal).as_deref(), Ok(literal));
        }
    }
}
