//! Questions from the server to the client, asked through a handler's [`Context`]: elicitation (form and URL mode),
//! sampling and roots. Each is checked against the capabilities the client declared before anything is sent.
//!
//! In the 2025 era a question is a request to the client, cancelled with the request that made it (the client gets a
//! `notifications/cancelled` for it). In the 2026 era it is an entry of an `input_required` result: the handler stops,
//! and runs again when the client retries with the answers; a capability the request did not declare ends it with
//! -32021.

use std::fmt;

use serde::de::DeserializeOwned;
use serde::Serialize;
use serde_json::Value;

use crate::context::Context;
use crate::era::v2026::Round;
use crate::wire::error::Error;

mod elicitation;
mod roots;
mod sampling;
mod send;

pub use elicitation::{ElicitAction, ElicitResult, Elicitation};
pub use roots::Root;
pub use sampling::{SamplingMessage, SamplingRequest, SamplingResult};

/// Why a question to the client (elicitation, sampling, roots: what a handler [`Ask`]s through its `Context`) did not
/// produce a result. Not to be confused with `mcp::client::Error`, an error of this crate's client.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum AskError {
    /// The request that made it was cancelled; the client was told to stop.
    Cancelled,
    /// The client did not declare the capability this needs; nothing was sent.
    Unsupported {
        /// The capability, such as `elicitation` or `sampling.tools`.
        capability: &'static str,
    },
    /// The client answered with an error.
    Rejected(Error),
    /// The client's answer could not be read.
    InvalidResponse(String),
    /// The connection ended before an answer came.
    Disconnected,
    /// 2026 era: the question went to the client in an `input_required` result. The handler is stopped (an async
    /// one never sees this; a blocking one returns it with `?`) and runs again when the client retries with the
    /// answer.
    InputRequired,
}

impl fmt::Display for AskError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            AskError::Cancelled => f.write_str("the request was cancelled"),
            AskError::Unsupported { capability } => {
                write!(f, "the client does not support `{capability}` (it did not declare the capability)")
            }
            AskError::Rejected(e) => write!(f, "the client answered with an error: {}", e.message),
            AskError::InvalidResponse(why) => write!(f, "the client's answer could not be read: {why}"),
            AskError::Disconnected => f.write_str("the client disconnected before answering"),
            AskError::InputRequired => {
                f.write_str("the question was sent to the client in an input_required result; the handler runs again with the answer")
            }
        }
    }
}

impl std::error::Error for AskError {}

impl From<crate::Cancelled> for AskError {
    fn from(_: crate::Cancelled) -> AskError {
        AskError::Cancelled
    }
}

/// A question to the client: its method, its params, and the capability it needs.
struct Question {
    method: &'static str,
    params: Value,
    capability: &'static [&'static str],
}

/// Questions to the client under a key the handler chooses: `ctx.ask("user_name").elicit::<Name>(..)`.
///
/// In the 2026 era the key names the question in the `input_required` result's `inputRequests` and the answer in
/// the client's `inputResponses`; without one, questions are numbered in the order the handler asks them
/// (`input-1`, `input-2`, ...). In the 2025 era the key is not sent anywhere.
#[derive(Clone, Copy)]
pub struct Ask<'a> {
    ctx: &'a Context,
    key: Option<&'a str>,
}

impl Context {
    /// Whether the client declared a capability (`&["sampling", "tools"]`): in the 2025 era at `initialize`, in the
    /// 2026 era on this request.
    pub fn client_supports(&self, capability: &[&str]) -> bool {
        self.meta().client_supports(capability)
    }

    /// Questions to the client under the key `key` (see [`Ask`]).
    pub fn ask<'a>(&'a self, key: &'a str) -> Ask<'a> {
        Ask { ctx: self, key: Some(key) }
    }

    fn unkeyed(&self) -> Ask<'_> {
        Ask { ctx: self, key: None }
    }

    /// Sends a request to the client and waits for its result (2025 era). Fails with [`AskError::Cancelled`]
    /// (and tells the client) when this handler's request is cancelled; if the waiting future is dropped, the client
    /// is told too. In the 2026 era servers send no requests: `elicitation/create`, `sampling/createMessage` and
    /// `roots/list` become questions of an `input_required` result, anything else is
    /// [`AskError::Unsupported`].
    pub async fn request_client(&self, method: &str, params: Value) -> Result<Value, AskError> {
        // No params is an empty object on the wire (JSON-RPC has no `"params": null`).
        let params = if params.is_null() { Value::Object(serde_json::Map::new()) } else { params };
        if self.round().is_some() {
            let (method, capability): (&'static str, &'static [&'static str]) = match method {
                "elicitation/create" => ("elicitation/create", &["elicitation"]),
                "sampling/createMessage" => ("sampling/createMessage", &["sampling"]),
                "roots/list" => ("roots/list", &["roots"]),
                _ => return Err(AskError::Unsupported { capability: "requests to the client (2026-07-28)" }),
            };
            return self.unkeyed().run(Question { method, params, capability }, Ok).await;
        }
        self.send_request(method, params).await
    }

    fn round(&self) -> Option<&Round> {
        crate::era::round(&self.in_flight().era)
    }

    /// The handler's own state, as the previous round of this request left it (2026 era: carried, sealed, in
    /// `requestState`). `None` in the first round, in the 2025 era, or if it does not deserialize as `T`.
    pub fn round_state<T: DeserializeOwned>(&self) -> Option<T> {
        self.round()?.carried().and_then(|v| T::deserialize(v).ok())
    }

    /// Sets the state the next round of this request starts with (see [`Context::round_state`]). It travels sealed
    /// in `requestState`, so keep it small. Does nothing in the 2025 era, where the handler simply keeps running.
    pub fn set_round_state<T: Serialize>(&self, value: &T) {
        if let (Some(round), Ok(value)) = (self.round(), serde_json::to_value(value)) {
            round.carry(value);
        }
    }
}

fn parse<T: DeserializeOwned>(value: Value) -> Result<T, String> {
    serde_json::from_value(value).map_err(|e| e.to_string())
}
