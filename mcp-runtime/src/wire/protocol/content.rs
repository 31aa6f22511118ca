//! Content: the blocks a tool result or a prompt message is made of, the contents of a resource, and the
//! annotations either may carry.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

/// Who a piece of content is meant for.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Role {
    /// The human user.
    User,
    /// The model.
    Assistant,
}

/// Hints on how a client should use a piece of content.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct Annotations {
    /// Who it is for.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub audience: Option<Vec<Role>>,
    /// How important it is, from 0 (least) to 1 (most).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub priority: Option<f64>,
    /// When it last changed (ISO 8601).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_modified: Option<String>,
}

/// The contents of a resource: text, base64 text, or bytes (written as base64).
///
/// ```
/// use mcp::ResourceContents;
/// use serde_json::json;
///
/// let logo = ResourceContents::blob("files://logo.png", Some("image/png"), &[0x89, b'P', b'N', b'G']);
/// assert_eq!(logo.uri(), "files://logo.png");
/// assert_eq!(
///     serde_json::to_value(&logo).unwrap(),
///     json!({ "uri": "files://logo.png", "mimeType": "image/png", "blob": "iVBORw==" })
/// );
/// // Bytes are encoded as they are written, and read back as a blob.
/// let bytes = ResourceContents::Bytes {
///     uri: "files://logo.png".into(),
///     mime_type: Some("image/png".into()),
///     bytes: vec![0x89, b'P', b'N', b'G'],
///     meta: None,
/// };
/// let wire = serde_json::to_string(&bytes).unwrap();
/// assert_eq!(wire, serde_json::to_string(&logo).unwrap());
/// assert_eq!(serde_json::from_str::<ResourceContents>(&wire).unwrap(), logo);
/// ```
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum ResourceContents {
    /// Text contents.
    #[serde(rename_all = "camelCase")]
    Text {
        /// The resource's URI.
        uri: String,
        /// Its MIME type.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        mime_type: Option<String>,
        /// The text.
        text: String,
        /// Metadata of its own (`_meta`: an extension's, such as MCP Apps' `ui`).
        #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
        meta: Option<Map<String, Value>>,
    },
    /// Binary contents, base64-encoded.
    #[serde(rename_all = "camelCase")]
    Blob {
        /// The resource's URI.
        uri: String,
        /// Its MIME type.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        mime_type: Option<String>,
        /// The bytes, base64-encoded.
        blob: String,
        /// Metadata of its own (`_meta`: an extension's, such as MCP Apps' `ui`).
        #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
        meta: Option<Map<String, Value>>,
    },
    /// Binary contents held as bytes: written base64-encoded straight into the message, with no encoded copy kept.
    /// A resource function's `Vec<u8>` becomes this; on the wire it is a `blob`, and it reads back as
    /// [`ResourceContents::Blob`].
    #[serde(rename_all = "camelCase", skip_deserializing)]
    Bytes {
        /// The resource's URI.
        uri: String,
        /// Its MIME type.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        mime_type: Option<String>,
        /// The bytes.
        #[serde(rename = "blob", serialize_with = "base64_string")]
        bytes: Vec<u8>,
        /// Metadata of its own (`_meta`: an extension's, such as MCP Apps' `ui`).
        #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
        meta: Option<Map<String, Value>>,
    },
}

/// Writes bytes as a base64 string, a chunk at a time.
fn base64_string<S: serde::Serializer>(bytes: &[u8], serializer: S) -> Result<S::Ok, S::Error> {
    serializer.collect_str(&base64::display::Base64Display::new(bytes, &base64::engine::general_purpose::STANDARD))
}

impl ResourceContents {
    /// Text contents.
    pub fn text(uri: impl Into<String>, mime_type: Option<&str>, text: impl Into<String>) -> ResourceContents {
        ResourceContents::Text {
            uri: uri.into(),
            mime_type: mime_type.map(str::to_owned),
            text: text.into(),
            meta: None,
        }
    }

    /// Binary contents, base64-encoded here.
    pub fn blob(uri: impl Into<String>, mime_type: Option<&str>, bytes: &[u8]) -> ResourceContents {
        use base64::Engine;
        ResourceContents::Blob {
            uri: uri.into(),
            mime_type: mime_type.map(str::to_owned),
            blob: base64::engine::general_purpose::STANDARD.encode(bytes),
            meta: None,
        }
    }

    /// The same, with `_meta` (an extension's metadata, such as MCP Apps' `ui`).
    pub fn with_meta(mut self, meta: Map<String, Value>) -> ResourceContents {
        match &mut self {
            ResourceContents::Text { meta: m, .. }
            | ResourceContents::Blob { meta: m, .. }
            | ResourceContents::Bytes { meta: m, .. } => *m = Some(meta),
        }
        self
    }

    /// Its `_meta`, if it has one.
    pub fn meta(&self) -> Option<&Map<String, Value>> {
        match self {
            ResourceContents::Text { meta, .. }
            | ResourceContents::Blob { meta, .. }
            | ResourceContents::Bytes { meta, .. } => meta.as_ref(),
        }
    }

    /// The URI.
    pub fn uri(&self) -> &str {
        match self {
            ResourceContents::Text { uri, .. }
            | ResourceContents::Blob { uri, .. }
            | ResourceContents::Bytes { uri, .. } => uri,
        }
    }
}

/// One block of content in a tool result (or, later, a prompt message).
///
/// ```
/// use mcp::{Content, Role};
/// use mcp::protocol::{Annotations, ResourceContents};
/// use serde_json::json;
///
/// let text = Content::text("3 books found");
/// assert_eq!(serde_json::to_value(&text).unwrap(), json!({ "type": "text", "text": "3 books found" }));
///
/// let link = Content::resource_link("books://dune", "Dune");
/// assert_eq!(serde_json::to_value(&link).unwrap()["type"], "resource_link");
///
/// let mut for_user = Annotations::default();
/// for_user.audience = Some(vec![Role::User]);
/// let note = Content::embedded(ResourceContents::text("notes://1", Some("text/plain"), "Buy milk"))
///     .with_annotations(for_user);
/// assert_eq!(serde_json::to_value(&note).unwrap()["annotations"]["audience"], json!(["user"]));
/// ```
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
#[non_exhaustive]
pub enum Content {
    /// Text.
    Text {
        /// The text.
        text: String,
        /// Hints for the client.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        annotations: Option<Annotations>,
    },
    /// An image, base64-encoded.
    #[serde(rename_all = "camelCase")]
    Image {
        /// The bytes, base64-encoded.
        data: String,
        /// Its MIME type, such as `image/png`.
        mime_type: String,
        /// Hints for the client.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        annotations: Option<Annotations>,
    },
    /// Audio, base64-encoded.
    #[serde(rename_all = "camelCase")]
    Audio {
        /// The bytes, base64-encoded.
        data: String,
        /// Its MIME type, such as `audio/wav`.
        mime_type: String,
        /// Hints for the client.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        annotations: Option<Annotations>,
    },
    /// A link to a resource the client may read.
    #[serde(rename_all = "camelCase")]
    ResourceLink {
        /// The resource's URI.
        uri: String,
        /// Its name.
        name: String,
        /// A sentence about it.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        description: Option<String>,
        /// Its MIME type.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        mime_type: Option<String>,
        /// Hints for the client.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        annotations: Option<Annotations>,
    },
    /// A resource embedded whole.
    Resource {
        /// Its contents.
        resource: ResourceContents,
        /// Hints for the client.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        annotations: Option<Annotations>,
    },
}

impl Content {
    /// Text content.
    pub fn text(text: impl Into<String>) -> Content {
        Content::Text { text: text.into(), annotations: None }
    }

    /// An image, already base64-encoded.
    pub fn image(base64: impl Into<String>, mime_type: impl Into<String>) -> Content {
        Content::Image { data: base64.into(), mime_type: mime_type.into(), annotations: None }
    }

    /// A link to a resource.
    pub fn resource_link(uri: impl Into<String>, name: impl Into<String>) -> Content {
        Content::ResourceLink {
            uri: uri.into(),
            name: name.into(),
            description: None,
            mime_type: None,
            annotations: None,
        }
    }

    /// A resource embedded whole.
    pub fn embedded(resource: ResourceContents) -> Content {
        Content::Resource { resource, annotations: None }
    }

    /// The same content with annotations (audience, priority, last modified).
    pub fn with_annotations(mut self, value: Annotations) -> Content {
        match &mut self {
            Content::Text { annotations, .. }
            | Content::Image { annotations, .. }
            | Content::Audio { annotations, .. }
            | Content::ResourceLink { annotations, .. }
            | Content::Resource { annotations, .. } => *annotations = Some(value),
        }
        self
    }

    /// Audio, already base64-encoded.
    pub fn audio(base64: impl Into<String>, mime_type: impl Into<String>) -> Content {
        Content::Audio { data: base64.into(), mime_type: mime_type.into(), annotations: None }
    }
}

impl From<String> for Content {
    fn from(text: String) -> Content {
        Content::text(text)
    }
}

impl From<&str> for Content {
    fn from(text: &str) -> Content {
        Content::text(text)
    }
}
