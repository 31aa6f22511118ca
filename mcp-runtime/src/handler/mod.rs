//! What generated code emits and the runtime runs: the definitions of tools, prompts, resources and custom methods,
//! the conversion of their return values, and the URI templates resources match.

pub(crate) mod args;
pub(crate) mod method;
pub(crate) mod prompt;
pub(crate) mod resource;
pub(crate) mod result;
pub(crate) mod schema;
pub(crate) mod tool;
pub(crate) mod uri_template;
