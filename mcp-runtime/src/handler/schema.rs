//! A tool's input schema: written by hand, or built from the parameters' types ([`ObjectSchema`], what the
//! generated glue calls once per server), and why types make none ([`SchemaError`]).

use schemars::generate::SchemaSettings;
use schemars::{JsonSchema, SchemaGenerator};
use serde::de::DeserializeOwned;
use serde_json::{Map, Value};

pub(crate) fn schema_settings() -> SchemaSettings {
    SchemaSettings::draft2020_12()
}

/// Where a tool's input schema comes from. Called once per server, when the tool is added.
#[derive(Clone, Copy)]
pub enum InputSchema {
    /// A schema written by hand.
    Given(fn() -> Value),
    /// A schema built from types ([`ObjectSchema::finish`]), or why they make none.
    Built(fn() -> Result<Value, SchemaError>),
}

impl InputSchema {
    /// The schema, or why there is none.
    pub fn build(self) -> Result<Value, SchemaError> {
        match self {
            InputSchema::Given(f) => Ok(f()),
            InputSchema::Built(f) => f(),
        }
    }
}

/// Why the types of a tool's parameters make no input schema: a flattened type without named fields, an argument
/// given twice. Building the server reports it as [`BuildError::BadInputSchema`](crate::BuildError::BadInputSchema).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SchemaError {
    problems: Vec<String>,
}

impl std::fmt::Display for SchemaError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.problems.join("; "))
    }
}

impl std::error::Error for SchemaError {}

/// Builds the input schema of a tool one parameter at a time; the generated glue calls it once per server.
///
/// A hand-written [`ToolDef`](crate::handler::ToolDef) can use it too, in its input schema's function ([`ToolDef::built`](crate::handler::ToolDef::built) with
/// [`InputSchema::Built`]):
///
/// ```
/// fn input_schema() -> Result<serde_json::Value, mcp::handler::SchemaError> {
///     let mut schema = mcp::handler::ObjectSchema::new();
///     schema.property::<String>("city", Some("Where."));
///     schema.property::<Option<u32>>("days", None); // accepts null: optional
///     schema.finish()
/// }
///
/// let schema = input_schema().unwrap();
/// assert_eq!(schema["properties"]["city"]["description"], "Where.");
/// assert_eq!(schema["required"], serde_json::json!(["city"]));
/// ```
pub struct ObjectSchema {
    generator: SchemaGenerator,
    properties: Map<String, Value>,
    required: Vec<Value>,
    /// Where each property came from, for the error when two give the same one: `None` for a parameter of its own,
    /// the flattened parameter's name otherwise.
    origins: std::collections::BTreeMap<String, Option<String>>,
    /// What makes this schema unusable (a flattened type without named fields, a property given twice).
    problems: Vec<String>,
}

impl Default for ObjectSchema {
    fn default() -> Self {
        ObjectSchema::new()
    }
}

impl ObjectSchema {
    /// An object schema with no properties.
    pub fn new() -> ObjectSchema {
        ObjectSchema {
            generator: schema_settings().for_deserialize().into_generator(),
            properties: Map::new(),
            required: Vec::new(),
            origins: Default::default(),
            problems: Vec::new(),
        }
    }

    /// Records that `origin` (a parameter, or a flattened parameter's field) gives the property `name`; false, with
    /// a problem noted, when another already does.
    fn claim(&mut self, name: &str, origin: Option<&str>) -> bool {
        let describe = |origin: Option<&str>| match origin {
            Some(param) => format!("a field of the flattened parameter `{param}`"),
            None => "a parameter of its own".to_owned(),
        };
        if let Some(first) = self.origins.get(name) {
            self.problems.push(format!(
                "the argument `{name}` is given twice, by {} and by {}: rename one (`#[serde(rename = \"...\")]` on a field)",
                describe(first.as_deref()),
                describe(origin)
            ));
            return false;
        }
        self.origins.insert(name.to_owned(), origin.map(str::to_owned));
        true
    }

    /// Adds the fields of the struct `T` as top-level properties (`#[mcp(flatten)] param: T`), with their
    /// descriptions and which of them are required. `T`'s schema must be an object with named properties: anything
    /// else (an enum, a map, a scalar) is a problem the server reports when it is built.
    pub fn flatten<T: JsonSchema + DeserializeOwned>(&mut self, param: &str) {
        let schema = T::json_schema(&mut self.generator).to_value();
        let properties = match (schema.get("type").and_then(Value::as_str), schema.get("properties")) {
            (Some("object"), Some(Value::Object(properties))) => properties,
            _ => {
                self.problems.push(format!(
                    "the flattened parameter `{param}` has type `{}`, whose schema is not an object with named fields (a struct with named fields deriving `Deserialize` and `JsonSchema` is): {schema}",
                    std::any::type_name::<T>()
                ));
                return;
            }
        };
        let required: Vec<&str> =
            schema.get("required").and_then(Value::as_array).into_iter().flatten().filter_map(Value::as_str).collect();
        for (name, property) in properties {
            if !self.claim(name, Some(param)) {
                continue;
            }
            self.properties.insert(name.clone(), property.clone());
            if required.contains(&name.as_str()) {
                self.required.push(Value::String(name.clone()));
            }
        }
    }

    /// Adds a property of type `T`. It is required unless `T` accepts `null` (as `Option<U>` does), which is also
    /// what a missing argument is read as.
    pub fn property<T: JsonSchema + DeserializeOwned>(&mut self, name: &str, description: Option<&str>) {
        if !self.claim(name, None) {
            return;
        }
        let mut schema = self.generator.subschema_for::<T>().to_value();
        if let (Some(d), Value::Object(o)) = (description, &mut schema) {
            // Beside a `$ref` too: siblings of `$ref` are allowed in 2020-12.
            o.insert("description".into(), Value::String(d.to_owned()));
        }
        self.properties.insert(name.to_owned(), schema);
        if serde_json::from_value::<T>(Value::Null).is_err() {
            self.required.push(Value::String(name.to_owned()));
        }
    }

    /// Marks the property `name` as mirrored in the HTTP header `Mcp-Param-{header}` (`x-mcp-header`). An optional
    /// argument's `"type": ["integer", "null"]` becomes `"type": "integer"` (it stays optional by not being
    /// required): the protocol allows the annotation only on a string, integer or boolean property, and clients
    /// (the official Python SDK among them) drop a tool whose annotated property has a list of types.
    pub fn mirror_in_header(&mut self, name: &str, header: &str) {
        if let Some(Value::Object(property)) = self.properties.get_mut(name) {
            without_null(property);
            property.insert("x-mcp-header".into(), Value::String(header.to_owned()));
        }
    }

    /// The finished schema: `{"type":"object","properties":…,"required":…,"$defs":…}`; or, when the types make
    /// none (a flattened type without named fields, a property given twice), why.
    pub fn finish(mut self) -> Result<Value, SchemaError> {
        if !self.problems.is_empty() {
            return Err(SchemaError { problems: self.problems });
        }
        let mut o = Map::new();
        o.insert("type".into(), "object".into());
        o.insert("properties".into(), Value::Object(self.properties));
        if !self.required.is_empty() {
            o.insert("required".into(), Value::Array(self.required));
        }
        let defs = self.generator.take_definitions(true);
        if !defs.is_empty() {
            o.insert("$defs".into(), Value::Object(defs));
        }
        Ok(Value::Object(o))
    }
}

/// Takes `null` out of one schema: `"type": ["T", "null"]` becomes `"type": "T"`, an `anyOf` of one schema and
/// `{"type": "null"}` becomes that schema (its keywords beside the ones already there, such as a description), and
/// `null` leaves an `enum`.
pub(crate) fn without_null(o: &mut Map<String, Value>) {
    let is_null = |b: &Value| b.get("type").and_then(Value::as_str) == Some("null");
    if let Some(Value::Array(branches)) = o.get("anyOf") {
        if branches.iter().any(is_null) {
            let mut rest: Vec<Value> = branches.iter().filter(|b| !is_null(b)).cloned().collect();
            if rest.len() == 1 {
                o.remove("anyOf");
                if let Some(Value::Object(mut inner)) = rest.pop() {
                    without_null(&mut inner);
                    for (k, v) in inner {
                        o.entry(k).or_insert(v);
                    }
                }
            } else {
                o.insert("anyOf".into(), Value::Array(rest));
            }
        }
    }
    if let Some(Value::Array(types)) = o.get("type") {
        let mut rest: Vec<Value> = types.iter().filter(|t| *t != "null").cloned().collect();
        let single = if rest.len() == 1 { rest.pop() } else { None };
        o.insert("type".into(), single.unwrap_or(Value::Array(rest)));
    }
    if let Some(Value::Array(values)) = o.get_mut("enum") {
        values.retain(|v| !v.is_null());
    }
}

/// The portable form of an input schema (the default; see `ServerBuilder::nullable_options`): a property that is not
/// `required` does not also accept `null`, at the top and in every object schema inside (struct arguments, `$defs`).
/// Some clients and model providers reject `"type": [..., "null"]`; optional is said by `required` alone.
pub(crate) fn portable_options(schema: &mut Value) {
    let Value::Object(o) = schema else { return };
    let required: Vec<String> = o
        .get("required")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
        .map(str::to_owned)
        .collect();
    if let Some(Value::Object(properties)) = o.get_mut("properties") {
        for (name, property) in properties.iter_mut() {
            if !required.contains(name) {
                if let Value::Object(p) = property {
                    without_null(p);
                }
            }
            portable_options(property);
        }
    }
    // The other places a subschema sits.
    for key in ["$defs", "definitions", "patternProperties", "dependentSchemas"] {
        if let Some(Value::Object(map)) = o.get_mut(key) {
            map.values_mut().for_each(portable_options);
        }
    }
    for key in ["anyOf", "oneOf", "allOf", "prefixItems"] {
        if let Some(Value::Array(list)) = o.get_mut(key) {
            list.iter_mut().for_each(portable_options);
        }
    }
    for key in ["items", "additionalProperties", "not", "if", "then", "else", "contains", "unevaluatedProperties"] {
        if let Some(sub) = o.get_mut(key) {
            portable_options(sub);
        }
    }
}
