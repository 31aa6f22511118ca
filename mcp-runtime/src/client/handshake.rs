//! The handshake: `server/discover` (2026-07-28) or `initialize` (2025-11-25), as the era choice says, and what the
//! server told about itself ([`Negotiated`]).

use std::sync::Arc;
use std::time::Duration;

use serde_json::json;

use super::{Call, Client, EraChoice, Error, Link, Negotiated, META_SERVER_INFO, VERSION_2025, VERSION_2026};
use crate::context::Era;
use crate::wire::protocol::Implementation;

impl Client {
    /// The handshake, within `timeout`.
    pub(super) async fn handshake_within(&self, timeout: Duration) -> Result<(), Error> {
        match tokio::time::timeout(timeout, self.handshake()).await {
            Ok(outcome) => outcome,
            Err(_) => Err(Error::Timeout(timeout)),
        }
    }

    async fn handshake(&self) -> Result<(), Error> {
        let era = match self.inner.choice {
            EraChoice::V2025 => Era::V2025,
            EraChoice::V2026 => Era::V2026,
            EraChoice::Auto => match self.discover().await {
                Ok(found) => {
                    let _ = self.inner.session.set(found);
                    return Ok(());
                }
                // A server that answers, but not `server/discover`, speaks 2025; a broken connection is an error.
                Err(Error::Rpc(_) | Error::Protocol(_)) => Era::V2025,
                Err(e) => return Err(e),
            },
        };
        let session = match era {
            Era::V2026 => self.discover().await?,
            Era::V2025 => self.initialize().await?,
        };
        let _ = self.inner.session.set(session);
        if era == Era::V2025 {
            if let Some(level) = self.inner.log_level {
                self.set_log_level(level).await?;
            }
        }
        Ok(())
    }

    /// `server/discover`: 2026 if the server offers it.
    pub(super) async fn discover(&self) -> Result<Negotiated, Error> {
        let params = json!({ "_meta": self.inner.envelope() });
        let result = Call::raw(self.clone(), "server/discover", params, Some(Era::V2026)).send_once().await?;
        let versions = result["supportedVersions"].as_array().cloned().unwrap_or_default();
        if !versions.iter().any(|v| v == VERSION_2026) {
            return Err(Error::Protocol(format!("the server does not offer {VERSION_2026}: {versions:?}")));
        }
        let server_info = serde_json::from_value(result["_meta"][META_SERVER_INFO].clone())
            .unwrap_or_else(|_| Implementation::new("unknown", "0"));
        Ok(Negotiated {
            era: Era::V2026,
            version: VERSION_2026.into(),
            server_info,
            capabilities: result["capabilities"].clone(),
            instructions: result["instructions"].as_str().map(str::to_owned),
        })
    }

    async fn initialize(&self) -> Result<Negotiated, Error> {
        let params = json!({
            "protocolVersion": VERSION_2025,
            "capabilities": self.inner.capabilities,
            "clientInfo": self.inner.info,
        });
        let result = Call::raw(self.clone(), "initialize", params, Some(Era::V2025)).send_once().await?;
        let version = result["protocolVersion"].as_str().unwrap_or(VERSION_2025).to_owned();
        if Era::of_version(&version) != Some(Era::V2025) {
            return Err(Error::Protocol(format!(
                "the server chose protocol version {version:?}, which this client does not speak"
            )));
        }
        if let Link::Http(http) = &self.inner.link {
            http.set_version(&version);
        }
        self.inner.notify("notifications/initialized", json!({}));
        if let Link::Http(http) = &self.inner.link {
            http.open_standalone_stream(Arc::downgrade(&self.inner)).await;
        }
        Ok(Negotiated {
            era: Era::V2025,
            version,
            server_info: serde_json::from_value(result["serverInfo"].clone())
                .unwrap_or_else(|_| Implementation::new("unknown", "0")),
            capabilities: result["capabilities"].clone(),
            instructions: result["instructions"].as_str().map(str::to_owned),
        })
    }
}
