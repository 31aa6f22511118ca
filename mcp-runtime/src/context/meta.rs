//! What a handler reads of its request: [`RequestMeta`], its [`Era`], the HTTP request and the client.

use std::sync::Arc;

use serde_json::{Map, Value};

use crate::auth::AuthInfo;
use crate::wire::protocol::{Implementation, LogLevel};

/// The metadata of one request, as the handler sees it.
///
/// In the 2025 era the session fills it in from the `initialize` handshake; a 2026-07-28 request fills it in from its
/// own `_meta`. A handler reads the same value either way.
#[derive(Clone, Debug)]
#[non_exhaustive]
pub struct RequestMeta {
    /// The era of the request: a 2025-11-25 session, or a stateless 2026-07-28 request.
    pub era: Era,
    /// The protocol version in force for this request.
    pub protocol_version: Arc<str>,
    /// The client's name, version and capabilities, if it said them.
    pub client: Option<Arc<ClientInfo>>,
    /// The request's `params._meta`: untouched in the 2025 era; in the 2026 era without the envelope's keys
    /// (`io.modelcontextprotocol/protocolVersion`, `clientCapabilities`, `clientInfo`, `logLevel`), which the other
    /// fields hold. `None` when nothing is left.
    pub meta: Option<Map<String, Value>>,
    /// The request's progress token, if it asked for progress.
    pub progress_token: Option<Value>,
    /// For `resources/read`: the URI being read.
    pub resource_uri: Option<Arc<str>>,
    /// On HTTP: the request's headers, and who is calling if an auth layer said so.
    pub http: Option<Arc<HttpRequest>>,
    /// 2026 era: the log level the request asked for (`io.modelcontextprotocol/logLevel`); no logs without one.
    pub log_level: Option<LogLevel>,
    /// For `resources/read` of a resource with its own caching hints.
    pub(crate) cache: Option<crate::wire::protocol::CacheHint>,
}

impl RequestMeta {
    pub(crate) fn new(era: Era, protocol_version: Arc<str>, client: Option<Arc<ClientInfo>>) -> RequestMeta {
        RequestMeta {
            era,
            protocol_version,
            client,
            meta: None,
            progress_token: None,
            resource_uri: None,
            http: None,
            log_level: None,
            cache: None,
        }
    }

    /// Keeps the request's `_meta`, and reads its progress token.
    pub(crate) fn with_meta(mut self, meta: Option<Map<String, Value>>) -> RequestMeta {
        self.progress_token = meta
            .as_ref()
            .and_then(|m| m.get("progressToken"))
            .filter(|t| t.is_string() || t.is_i64() || t.is_u64())
            .cloned();
        self.meta = meta;
        self
    }

    /// The settings the client declared for an extension (`capabilities.extensions.<id>`), if it declared it.
    pub fn client_extension(&self, id: &str) -> Option<&Value> {
        self.client.as_ref()?.capabilities.get("extensions")?.get(id).filter(|v| !v.is_null())
    }

    /// Whether the client declared a capability, given as a path (`["sampling", "tools"]`).
    pub fn client_supports(&self, path: &[&str]) -> bool {
        let Some(client) = &self.client else { return false };
        let mut v = &client.capabilities;
        for key in path {
            match v.get(key) {
                Some(next) if !next.is_null() => v = next,
                _ => return false,
            }
        }
        true
    }
}

/// Which protocol era serves a request.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Era {
    /// 2025-11-25 (and 2025-06-18, 2025-03-26): `initialize`, a session, requests from the server to the client.
    V2025,
    /// 2026-07-28: stateless; each request carries its version and the client's capabilities in `_meta`, and
    /// questions to the client are `input_required` results.
    V2026,
}

impl Era {
    /// The era a protocol version belongs to: the 2025 era's `2025-11-25`, `2025-06-18` and `2025-03-26`, the 2026
    /// era's `2026-07-28`; `None` for a version neither speaks. The one map from versions to eras, which the
    /// server (the era of a request) and the client (the era it negotiated) both read.
    ///
    /// ```
    /// use mcp::Era;
    ///
    /// assert_eq!(Era::of_version("2025-06-18"), Some(Era::V2025));
    /// assert_eq!(Era::of_version("2026-07-28"), Some(Era::V2026));
    /// assert_eq!(Era::of_version("2024-11-05"), None);
    /// ```
    pub fn of_version(version: &str) -> Option<Era> {
        let version = version.trim();
        if crate::wire::protocol::SUPPORTED_PROTOCOL_VERSIONS.contains(&version) {
            Some(Era::V2025)
        } else if version == crate::wire::protocol::VERSION_2026 {
            Some(Era::V2026)
        } else {
            None
        }
    }

    /// The protocol version that names the era: the constants, not a copy of them.
    pub(crate) fn name(self) -> &'static str {
        match self {
            Era::V2025 => crate::wire::protocol::VERSION_2025,
            Era::V2026 => crate::wire::protocol::VERSION_2026,
        }
    }

    /// A resource's error as this era spells it: the 2026 era has no -32002, its "not found" is -32602 (SEP-2164).
    pub(crate) fn resource_error(self, mut error: crate::wire::error::Error) -> crate::wire::error::Error {
        if self == Era::V2026 && error.code == crate::wire::error::ErrorCode::RESOURCE_NOT_FOUND {
            error.code = crate::wire::error::ErrorCode::INVALID_PARAMS;
        }
        error
    }
}

/// What a handler sees of the HTTP request that carried its message.
#[derive(Clone, Debug, Default)]
#[non_exhaustive]
pub struct HttpRequest {
    /// The request's headers (without `Authorization` when the server verified its token: handlers never see
    /// the token).
    pub headers: http::HeaderMap,
    /// The caller: verified by the server's [`Authorization`](crate::auth::Authorization), or put in the request's
    /// extensions as an [`AuthInfo`] by a layer in front of the endpoint. Shared: the verifier's cache and every
    /// handler of the request hold the same one.
    pub auth: Option<Arc<AuthInfo>>,
    /// The address of the client that sent it, when the server knows it (`serve_http` always does; a router mounted
    /// elsewhere when it is served with axum's `ConnectInfo`): the connection's peer, or with
    /// [`HttpOptions::trust_forwarded`](crate::HttpOptions::trust_forwarded) the address the balancer in front
    /// forwarded (`Forwarded`, else `X-Forwarded-For`). It is the request span's `client.address`.
    pub peer: Option<std::net::IpAddr>,
}

/// What a client said about itself.
#[derive(Clone, Debug)]
#[non_exhaustive]
pub struct ClientInfo {
    /// Its name and version.
    pub info: Implementation,
    /// Its capabilities, as sent.
    pub capabilities: Value,
}

/// The 2026 clients a server has seen lately, by the text of their envelope: a client sends the same capabilities
/// and info with every request, and each request of a client seen before shares what was read the first time
/// instead of reading it again. The same text always reads the same, so sharing it is safe; a text with other
/// whitespace is a client seen anew. At most [`KnownClients::MAX`], the oldest forgotten first.
#[derive(Default)]
pub(crate) struct KnownClients {
    seen: std::sync::Mutex<Vec<KnownClient>>,
}

struct KnownClient {
    capabilities: Box<str>,
    info: Option<Box<str>>,
    client: Arc<ClientInfo>,
}

impl KnownClients {
    /// How many clients are remembered.
    pub(crate) const MAX: usize = 32;

    /// The client whose envelope holds `capabilities` and `info` (as JSON text), read by `read` if it is new.
    pub(crate) fn get_or_read<E>(
        &self,
        capabilities: &str,
        info: Option<&str>,
        read: impl FnOnce() -> Result<ClientInfo, E>,
    ) -> Result<Arc<ClientInfo>, E> {
        use crate::base::sync::Unpoisoned;
        let known = |k: &&KnownClient| &*k.capabilities == capabilities && k.info.as_deref() == info;
        if let Some(k) = self.seen.locked().iter().rev().find(known) {
            return Ok(k.client.clone());
        }
        let client = Arc::new(read()?);
        let mut seen = self.seen.locked();
        // Another request of the same client may have read it meanwhile: one entry per client.
        if let Some(k) = seen.iter().rev().find(known) {
            return Ok(k.client.clone());
        }
        if seen.len() >= Self::MAX {
            seen.remove(0);
        }
        seen.push(KnownClient {
            capabilities: capabilities.into(),
            info: info.map(Into::into),
            client: client.clone(),
        });
        Ok(client)
    }
}
