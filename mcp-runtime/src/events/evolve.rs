//! Whether a replaced event type's schemas changed compatibly (SEP-3415's schema evolution): fields and enum values
//! may be added, annotations (descriptions, titles, examples, defaults) may change; anything else a subscription
//! relied on may not. A change that breaks ends the type's subscriptions with -32026 (`Unsupported`,
//! `data.reason: "schema_changed"`), so that their clients list again and subscribe against the new descriptor.
//!
//! The check is conservative: a change it cannot show to be additive counts as breaking. The cost of a false alarm
//! is a resubscription; the cost of a missed one is a client reading payloads its schema does not describe.

use serde_json::{json, Map, Value};

use super::def::EventType;
use crate::wire::error::{Error, ErrorCode};

/// Which schema of a type: it decides which way a `required` list may move.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Role {
    /// `inputSchema`: arguments accepted before must still be accepted, so nothing may become required.
    Input,
    /// `payloadSchema`: what a subscriber could count on must still be there, so nothing may stop being required.
    Payload,
}

/// The error that ends the subscriptions of `old` when `new` replaces it, if its schemas changed incompatibly:
/// -32026 with `data: {"feature": "inputSchema" | "payloadSchema", "reason": "schema_changed"}`.
pub(crate) fn changed_incompatibly(old: &EventType, new: &EventType) -> Option<Error> {
    let (feature, why) =
        breaking(&old.input_schema, &new.input_schema, Role::Input).map(|why| ("inputSchema", why)).or_else(|| {
            breaking(&old.payload_schema, &new.payload_schema, Role::Payload).map(|why| ("payloadSchema", why))
        })?;
    let message = format!(
        "event type `{}` changed its {feature} incompatibly ({why}): list the event types again and subscribe anew",
        new.name
    );
    Some(
        Error::new(ErrorCode::UNSUPPORTED, message)
            .with_data(json!({ "feature": feature, "reason": "schema_changed" })),
    )
}

/// Keywords that describe and constrain nothing.
const ANNOTATIONS: &[&str] =
    &["description", "title", "examples", "default", "$comment", "deprecated", "readOnly", "writeOnly"];

/// Where `new` breaks what `old` promised, as a JSON pointer into the schema with what changed; `None` when the
/// change is additive (or there is none).
pub(crate) fn breaking(old: &Value, new: &Value, role: Role) -> Option<String> {
    at(old, new, role, "")
}

fn at(old: &Value, new: &Value, role: Role, path: &str) -> Option<String> {
    if old == new {
        return None;
    }
    let (Value::Object(old), Value::Object(new)) = (old, new) else {
        return Some(format!("{} changed", shown(path)));
    };
    for (key, was) in old {
        if ANNOTATIONS.contains(&key.as_str()) {
            continue;
        }
        let here = format!("{path}/{key}");
        let Some(now) = new.get(key) else {
            return Some(format!("{} was removed", shown(&here)));
        };
        let broken = match key.as_str() {
            "properties" | "$defs" | "definitions" | "patternProperties" => members(was, now, role, &here),
            "items" | "additionalProperties" | "not" => at(was, now, role, &here),
            "required" => required(was, now, role, &here),
            "enum" => widened(was, now, &here),
            _ => (was != now).then(|| format!("{} changed", shown(&here))),
        };
        if broken.is_some() {
            return broken;
        }
    }
    added(old, new, role, path)
}

/// Keywords only the new schema has: new members and annotations are additive; a new constraint is not.
fn added(old: &Map<String, Value>, new: &Map<String, Value>, role: Role, path: &str) -> Option<String> {
    for (key, now) in new {
        if old.contains_key(key) || ANNOTATIONS.contains(&key.as_str()) {
            continue;
        }
        let additive = match key.as_str() {
            "properties" | "$defs" | "definitions" => true,
            "required" => role == Role::Payload || now.as_array().is_some_and(Vec::is_empty),
            _ => false,
        };
        if !additive {
            return Some(format!("{} was added", shown(&format!("{path}/{key}"))));
        }
    }
    None
}

/// Each named schema of the old one is still there and changed additively; new names are additive.
fn members(was: &Value, now: &Value, role: Role, path: &str) -> Option<String> {
    let (Value::Object(was), Value::Object(now)) = (was, now) else {
        return (was != now).then(|| format!("{} changed", shown(path)));
    };
    was.iter().find_map(|(name, schema)| match now.get(name) {
        Some(changed) => at(schema, changed, role, &format!("{path}/{name}")),
        None => Some(format!("{} was removed", shown(&format!("{path}/{name}")))),
    })
}

fn names(list: &Value) -> Vec<&str> {
    list.as_array().map(|items| items.iter().filter_map(Value::as_str).collect()).unwrap_or_default()
}

fn required(was: &Value, now: &Value, role: Role, path: &str) -> Option<String> {
    let (was, now) = (names(was), names(now));
    let moved = match role {
        Role::Input => now.iter().find(|name| !was.contains(name)).map(|name| format!("`{name}` became required")),
        Role::Payload => was.iter().find(|name| !now.contains(name)).map(|name| format!("`{name}` became optional")),
    };
    moved.map(|what| format!("{what} at {}", shown(path)))
}

/// An enum may gain values, not lose them.
fn widened(was: &Value, now: &Value, path: &str) -> Option<String> {
    let (Some(was), Some(now)) = (was.as_array(), now.as_array()) else {
        return (was != now).then(|| format!("{} changed", shown(path)));
    };
    was.iter().find(|value| !now.contains(value)).map(|value| format!("{} lost the value {value}", shown(path)))
}

fn shown(path: &str) -> &str {
    if path.is_empty() {
        "the schema"
    } else {
        path
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn schema() -> Value {
        json!({
            "type": "object",
            "properties": {
                "isbn": { "type": "string", "description": "The book" },
                "copies": { "type": "integer", "minimum": 0 },
                "shelf": { "enum": ["front", "back"] }
            },
            "required": ["isbn"]
        })
    }

    fn changed(edit: impl FnOnce(&mut Value)) -> Value {
        let mut new = schema();
        edit(&mut new);
        new
    }

    #[test]
    fn additions_and_annotations_are_additive() {
        let new = changed(|s| {
            s["properties"]["note"] = json!({ "type": "string" });
            s["properties"]["isbn"]["description"] = json!("The book's ISBN");
            s["properties"]["shelf"]["enum"] = json!(["front", "back", "window"]);
            s["title"] = json!("Restock");
            s["$defs"] = json!({ "Shelf": { "type": "string" } });
        });
        for role in [Role::Input, Role::Payload] {
            assert_eq!(breaking(&schema(), &new, role), None);
            assert_eq!(breaking(&schema(), &schema(), role), None);
        }
    }

    #[test]
    fn removals_retypes_narrowing_and_new_constraints_break() {
        let cases: Vec<(Value, &str)> = vec![
            (
                changed(|s| {
                    s["properties"].as_object_mut().unwrap().remove("copies");
                }),
                "/properties/copies was removed",
            ),
            (changed(|s| s["properties"]["copies"]["type"] = json!("string")), "/properties/copies/type"),
            (changed(|s| s["properties"]["shelf"]["enum"] = json!(["front"])), "lost the value \"back\""),
            (changed(|s| s["properties"]["isbn"]["maxLength"] = json!(13)), "/properties/isbn/maxLength was added"),
            (changed(|s| s["additionalProperties"] = json!(false)), "/additionalProperties was added"),
            (json!(true), "the schema changed"),
        ];
        for (new, said) in cases {
            for role in [Role::Input, Role::Payload] {
                let why = breaking(&schema(), &new, role).expect("a breaking change");
                assert!(why.contains(said), "{role:?}: {why}");
            }
        }
    }

    #[test]
    fn required_may_grow_in_a_payload_and_shrink_in_the_input() {
        let more = changed(|s| s["required"] = json!(["isbn", "copies"]));
        assert!(breaking(&schema(), &more, Role::Input).unwrap().contains("`copies` became required"));
        assert_eq!(breaking(&schema(), &more, Role::Payload), None);
        let fewer = changed(|s| s["required"] = json!([]));
        assert_eq!(breaking(&schema(), &fewer, Role::Input), None);
        assert!(breaking(&schema(), &fewer, Role::Payload).unwrap().contains("`isbn` became optional"));
        let first = json!({ "type": "object" });
        assert!(breaking(&first, &schema(), Role::Input).unwrap().contains("/required was added"));
        assert_eq!(breaking(&first, &schema(), Role::Payload), None);
    }
}
