//! `UriTemplate::parse` and `UriTemplate::matches` (mcp-runtime/src/handler/uri_template.rs). The input is lines:
//! a template, a URI, then values to expand the template with.
//!
//! - The parser accepts exactly the templates of its grammar (literals, `{name}` and `{+name}` with names of
//!   letters, digits and `_`, no name twice, no two variables in a row, no stray brace), checked against a model.
//! - A match binds every variable, in order, to a non-empty value; `{name}` never to one with `/ ? # &`; and (for a
//!   URI without `%`, where decoding changes nothing) the values expand back to the URI.
//! - Expanding the template with values, the URI matches and binds those values, whenever each value is followed by
//!   the first occurrence of the literal after it. (The matcher cuts a value at that first occurrence, so a value
//!   that contains its following literal may go unmatched: `files:///{+path}/raw` does not match
//!   `files:///a/raw/b/raw`.)

#![no_main]

use libfuzzer_sys::fuzz_target;
use mcp::handler::UriTemplate;

#[derive(Debug)]
enum Part<'a> {
    Literal(&'a str),
    Var { name: &'a str, reserved: bool },
}

/// The grammar of the templates the runtime supports.
fn model(source: &str) -> Option<Vec<Part<'_>>> {
    let mut parts = Vec::new();
    let mut rest = source;
    while !rest.is_empty() {
        if let Some(expr) = rest.strip_prefix('{') {
            let close = expr.find('}')?;
            let (name, reserved) = match expr[..close].strip_prefix('+') {
                Some(name) => (name, true),
                None => (&expr[..close], false),
            };
            let legal = !name.is_empty() && name.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_');
            let after_var = matches!(parts.last(), Some(Part::Var { .. }));
            let twice = parts.iter().any(|p| matches!(p, Part::Var { name: n, .. } if *n == name));
            if !legal || after_var || twice {
                return None;
            }
            parts.push(Part::Var { name, reserved });
            rest = &expr[close + 1..];
        } else {
            let end = rest.find('{').unwrap_or(rest.len());
            if rest[..end].contains('}') {
                return None;
            }
            parts.push(Part::Literal(&rest[..end]));
            rest = &rest[end..];
        }
    }
    Some(parts)
}

const FORBIDDEN: [char; 4] = ['/', '?', '#', '&'];

fn expand(parts: &[Part<'_>], values: &[String]) -> String {
    let mut values = values.iter();
    parts
        .iter()
        .map(|p| match p {
            Part::Literal(l) => l,
            Part::Var { .. } => values.next().expect("a value per variable").as_str(),
        })
        .collect()
}

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else { return };
    let mut lines = text.split('\n');
    let source = lines.next().unwrap_or_default();
    let uri = lines.next().unwrap_or_default();
    let given: Vec<&str> = lines.collect();

    let parsed = UriTemplate::parse(source);
    let parts = model(source);
    assert_eq!(parsed.is_ok(), parts.is_some(), "parse({source:?}) = {parsed:?}, the grammar says {parts:?}");
    let (Ok(template), Some(parts)) = (parsed, parts) else { return };
    assert_eq!(template.as_str(), source);
    let names: Vec<&str> = template.variables().collect();
    let reserved: Vec<bool> =
        parts.iter().filter_map(|p| if let Part::Var { reserved, .. } = p { Some(*reserved) } else { None }).collect();
    let model_names: Vec<&str> =
        parts.iter().filter_map(|p| if let Part::Var { name, .. } = p { Some(*name) } else { None }).collect();
    assert_eq!(names, model_names);

    if let Some(bound) = template.matches(uri) {
        let bound_names: Vec<&str> = bound.iter().map(|(n, _)| n.as_str()).collect();
        assert_eq!(bound_names, names, "{source:?} against {uri:?}");
        assert!(bound.iter().all(|(_, v)| !v.is_empty()), "{source:?} against {uri:?}: an empty value in {bound:?}");
        if !uri.contains('%') {
            for ((_, value), reserved) in bound.iter().zip(&reserved) {
                assert!(*reserved || !value.contains(FORBIDDEN), "{source:?} against {uri:?}: {value:?}");
            }
            let values: Vec<String> = bound.into_iter().map(|(_, v)| v).collect();
            assert_eq!(expand(&parts, &values), uri, "{source:?}: the values bound do not expand back to the URI");
        }
    }

    if given.is_empty() || names.is_empty() {
        return;
    }
    // Values that need no percent-encoding: no `%`, and for `{name}` none of / ? # &.
    let values: Vec<String> = reserved
        .iter()
        .enumerate()
        .map(|(i, reserved)| {
            let v: String =
                given[i % given.len()].chars().filter(|c| *c != '%' && (*reserved || !FORBIDDEN.contains(c))).collect();
            if v.is_empty() {
                "x".to_owned()
            } else {
                v
            }
        })
        .collect();
    let expanded = expand(&parts, &values);
    let mut values_iter = values.iter();
    let unambiguous = parts.windows(2).all(|w| match w {
        [Part::Var { .. }, Part::Literal(next)] => {
            let value = values_iter.next().expect("a value per variable");
            format!("{value}{next}").find(next) == Some(value.len())
        }
        [Part::Var { .. }, _] => {
            values_iter.next();
            true
        }
        _ => true,
    });
    let got = template.matches(&expanded);
    if unambiguous {
        let want: Vec<(String, String)> = names.iter().map(|n| n.to_string()).zip(values).collect();
        assert_eq!(got, Some(want), "{source:?} expanded to {expanded:?}");
    } else if let Some(bound) = got {
        let values: Vec<String> = bound.into_iter().map(|(_, v)| v).collect();
        assert_eq!(expand(&parts, &values), expanded, "{source:?}: the values bound do not expand back to the URI");
    }
});
