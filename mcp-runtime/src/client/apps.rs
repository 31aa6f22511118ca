//! MCP Apps on the client (`io.modelcontextprotocol/ui`): which app a listed tool declares ([`Tool::app`]), whether
//! the model may see it ([`Tool::app_only`]), and an app's page read and checked ([`Client::read_app`]), for a host
//! that renders apps.

use serde_json::{Map, Value};

use super::items::Tool;
use super::{Client, Error};
use crate::wire::apps::MIME_TYPE;

/// An app's page, read by [`Client::read_app`]: its HTML and what its `_meta.ui` asks of the host.
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub struct AppPage {
    /// The app's `ui://` URI.
    pub uri: String,
    /// The page, to render in a sandboxed frame.
    pub html: String,
    /// Its `_meta.ui` (`csp`, `permissions`, `domain`, `prefersBorder`) as the read contents carry it; empty when
    /// they have none.
    pub ui: Map<String, Value>,
}

impl Tool {
    /// The `ui://` URI of the app this tool is the interface of (`_meta.ui.resourceUri`, or the flat
    /// `_meta["ui/resourceUri"]` of earlier hosts), if it has one.
    pub fn app(&self) -> Option<&str> {
        let meta = self.meta.as_ref()?;
        meta.get("ui")
            .and_then(|ui| ui.get("resourceUri"))
            .or_else(|| meta.get("ui/resourceUri"))
            .and_then(Value::as_str)
    }

    /// Whether the tool is for its app only (`_meta.ui.visibility` without `"model"`): a host leaves it out of what
    /// the model sees, and lets the app call it.
    pub fn app_only(&self) -> bool {
        let visibility = self.meta.as_ref().and_then(|m| m.get("ui")).and_then(|ui| ui.get("visibility"));
        match visibility.and_then(Value::as_array) {
            Some(visibility) => !visibility.iter().any(|v| v == "model"),
            None => false,
        }
    }
}

impl Client {
    /// An app's page (`resources/read` of its `ui://` URI), checked: one contents of the MCP Apps MIME type
    /// (`text/html;profile=mcp-app`) with text. An `Err` names what the server sent instead.
    pub async fn read_app(&self, uri: &str) -> Result<AppPage, Error> {
        if !uri.starts_with("ui://") {
            return Err(Error::Protocol(format!("{uri} is not an app's URI: an app is a `ui://` resource")));
        }
        let read = self.read_resource(uri).await?;
        let contents = read.raw["contents"].as_array().map(Vec::as_slice).unwrap_or_default();
        let page = contents.iter().find(|c| c["uri"] == uri).or(contents.first());
        let Some(page) = page else {
            return Err(Error::Protocol(format!("the read of {uri} has no contents")));
        };
        if page["mimeType"] != MIME_TYPE {
            return Err(Error::Protocol(format!(
                "{uri} is {}, not an app's page ({MIME_TYPE})",
                page["mimeType"].as_str().unwrap_or("of no MIME type")
            )));
        }
        let Some(html) = page["text"].as_str() else {
            return Err(Error::Protocol(format!("the page of {uri} is not text")));
        };
        let ui = page["_meta"]["ui"].as_object().cloned().unwrap_or_default();
        Ok(AppPage { uri: uri.to_owned(), html: html.to_owned(), ui })
    }
}
