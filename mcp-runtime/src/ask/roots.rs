//! Roots: the `file://` roots the client exposes (`roots/list`).

use serde::Deserialize;
use serde_json::{json, Value};

use super::{parse, Ask, AskError, Question};
use crate::context::Context;

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

impl Context {
    /// The client's roots (`roots/list`).
    pub async fn list_roots(&self) -> Result<Vec<Root>, AskError> {
        self.unkeyed().list_roots().await
    }

    /// [`Context::list_roots`] for a plain `fn` handler.
    pub fn list_roots_blocking(&self) -> Result<Vec<Root>, AskError> {
        self.unkeyed().list_roots_blocking()
    }
}

impl Ask<'_> {
    fn roots(&self) -> Question {
        let params = if self.ctx.round().is_some() { Value::Null } else { json!({}) };
        Question { method: "roots/list", params, capability: &["roots"] }
    }

    /// See [`Context::list_roots`].
    pub async fn list_roots(self) -> Result<Vec<Root>, AskError> {
        self.run(self.roots(), parse_roots).await
    }

    /// See [`Context::list_roots_blocking`].
    pub fn list_roots_blocking(self) -> Result<Vec<Root>, AskError> {
        self.run_blocking(self.roots(), parse_roots)
    }
}

fn parse_roots(value: Value) -> Result<Vec<Root>, String> {
    #[derive(Deserialize)]
    struct Roots {
        roots: Vec<Root>,
    }
    parse::<Roots>(value).map(|r| r.roots)
}
