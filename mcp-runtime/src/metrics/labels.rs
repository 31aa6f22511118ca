//! The labels of the metrics, by the OpenTelemetry conventions for MCP: what each metric's series are told apart by,
//! and how a request's outcome becomes `error.type` and `rpc.response.status_code`.

use std::fmt;

use crate::base::name::Name;
use prometheus_client::encoding::{EncodeLabel, EncodeLabelSet, EncodeLabelValue, LabelSetEncoder, LabelValueEncoder};

/// The labels of `mcp_server_operation_duration_seconds`: the conventions' attributes, those that do not apply
/// left out (not written empty).
#[derive(Clone, Debug, Hash, PartialEq, Eq)]
pub(super) struct Operation {
    pub(super) mcp_method_name: &'static str,
    pub(super) gen_ai_tool_name: Option<Name>,
    pub(super) gen_ai_prompt_name: Option<Name>,
    pub(super) error_type: Option<ErrorType>,
    pub(super) rpc_response_status_code: Option<i32>,
    pub(super) mcp_protocol_version: &'static str,
    pub(super) network_transport: Transport,
}

impl EncodeLabelSet for Operation {
    fn encode(&self, encoder: &mut LabelSetEncoder) -> fmt::Result {
        ("mcp_method_name", self.mcp_method_name).encode(encoder.encode_label())?;
        if let Some(tool) = &self.gen_ai_tool_name {
            ("gen_ai_tool_name", tool.as_str()).encode(encoder.encode_label())?;
            ("gen_ai_operation_name", "execute_tool").encode(encoder.encode_label())?;
        }
        if let Some(prompt) = &self.gen_ai_prompt_name {
            ("gen_ai_prompt_name", prompt.as_str()).encode(encoder.encode_label())?;
        }
        if let Some(error) = self.error_type {
            ("error_type", error).encode(encoder.encode_label())?;
        }
        if let Some(code) = self.rpc_response_status_code {
            ("rpc_response_status_code", code).encode(encoder.encode_label())?;
        }
        ("mcp_protocol_version", self.mcp_protocol_version).encode(encoder.encode_label())?;
        ("network_transport", self.network_transport).encode(encoder.encode_label())
    }
}

/// A label set of `operations` by the addresses of its names (a method, a tool the server serves, `_OTHER`, a
/// protocol version), for `Inner::seen` (`metrics/mod.rs`). Two keys for one label set (the same name at two addresses) find the same
/// histogram; a name made at run time (a relayed tool's) is held by its entry, so that its address is not reused by
/// other text while the entry lives.
#[derive(Clone, Copy, Debug, Hash, PartialEq, Eq)]
pub(super) struct Key {
    pub(super) method: usize,
    pub(super) target: usize,
    pub(super) version: usize,
    pub(super) transport: Transport,
    pub(super) ended: Ended,
}

impl Key {
    pub(super) fn of(request: &Request, ended: Ended) -> Key {
        Key {
            method: request.method.as_ptr() as usize,
            target: request.target.as_ref().map_or(0, |t| t.as_ptr() as usize),
            version: request.version.as_ptr() as usize,
            transport: request.transport,
            ended,
        }
    }
}

/// The labels of `mcp_server_session_duration_seconds`.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub(super) struct SessionEnd {
    pub(super) mcp_protocol_version: &'static str,
    pub(super) network_transport: Transport,
}

/// The label of the gauges kept per protocol era.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub(super) struct Era {
    pub(super) mcp_protocol_version: &'static str,
}

/// The protocol versions of the two eras, as the metrics label them (from the eras, which sit above this module).
#[derive(Clone, Copy, Debug)]
pub(crate) struct Versions {
    /// The era of sessions (2025-11-25).
    pub sessions: &'static str,
    /// The era of self-contained requests (2026-07-28).
    pub stateless: &'static str,
}

/// The labels of `mcp_client_operation_duration_seconds`: the conventions' attributes of a client's request. The
/// tool or prompt is the one the program called (its own choice, not a peer's).
#[derive(Clone, Debug, Hash, PartialEq, Eq)]
pub(crate) struct ClientOperation {
    pub method: String,
    pub target: Option<String>,
    pub error_type: Option<String>,
    pub status_code: Option<i32>,
    pub peer: Peer,
}

/// The server a client talks to, as its metrics label it.
#[derive(Clone, Debug, Hash, PartialEq, Eq)]
pub(crate) struct Peer {
    pub version: String,
    pub transport: Transport,
    /// Over HTTP: the server's host and port.
    pub server: Option<(String, u16)>,
}

impl EncodeLabelSet for Peer {
    fn encode(&self, encoder: &mut LabelSetEncoder) -> fmt::Result {
        ("mcp_protocol_version", self.version.as_str()).encode(encoder.encode_label())?;
        ("network_transport", self.transport).encode(encoder.encode_label())?;
        if let Some((address, port)) = &self.server {
            ("server_address", address.as_str()).encode(encoder.encode_label())?;
            ("server_port", *port).encode(encoder.encode_label())?;
        }
        Ok(())
    }
}

impl EncodeLabelSet for ClientOperation {
    fn encode(&self, encoder: &mut LabelSetEncoder) -> fmt::Result {
        ("mcp_method_name", self.method.as_str()).encode(encoder.encode_label())?;
        match (self.method.as_str(), &self.target) {
            ("tools/call", Some(tool)) => {
                ("gen_ai_tool_name", tool.as_str()).encode(encoder.encode_label())?;
                ("gen_ai_operation_name", "execute_tool").encode(encoder.encode_label())?;
            }
            ("prompts/get", Some(prompt)) => ("gen_ai_prompt_name", prompt.as_str()).encode(encoder.encode_label())?,
            _ => {}
        }
        if let Some(error) = &self.error_type {
            ("error_type", error.as_str()).encode(encoder.encode_label())?;
        }
        if let Some(code) = self.status_code {
            ("rpc_response_status_code", code).encode(encoder.encode_label())?;
        }
        self.peer.encode(encoder)
    }
}

/// The label of `mcp_server_refusals_total`: which limit refused.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub(super) struct Refusal {
    pub(super) limit: &'static str,
}

/// The label of `mcp_server_tasks_ended_total`: the status a task ended in.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub(super) struct TaskEnd {
    pub(super) status: &'static str,
}

/// The label of `mcp_server_proxy_events_total`: what a mount's upstream sent that the proxy passed on.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub(super) struct Relayed {
    pub(super) kind: &'static str,
}

/// The labels of `mcp_server_requests_cancelled_total`.
#[derive(Clone, Debug, Hash, PartialEq, Eq)]
pub(super) struct Cancelled {
    pub(super) mcp_method_name: &'static str,
    pub(super) gen_ai_tool_name: Option<Name>,
    pub(super) mcp_protocol_version: &'static str,
}

impl EncodeLabelSet for Cancelled {
    fn encode(&self, encoder: &mut LabelSetEncoder) -> fmt::Result {
        ("mcp_method_name", self.mcp_method_name).encode(encoder.encode_label())?;
        if let Some(tool) = &self.gen_ai_tool_name {
            ("gen_ai_tool_name", tool.as_str()).encode(encoder.encode_label())?;
        }
        ("mcp_protocol_version", self.mcp_protocol_version).encode(encoder.encode_label())
    }
}

/// How a request reached the server: the conventions' `network.transport`.
#[derive(Clone, Copy, Debug, Hash, PartialEq, Eq)]
pub(crate) enum Transport {
    /// Over HTTP.
    Tcp,
    /// On stdio, or in the same process.
    Pipe,
}

impl Transport {
    /// `Tcp` for a request that came over HTTP, else `Pipe`.
    pub(crate) fn of(http: bool) -> Transport {
        if http {
            Transport::Tcp
        } else {
            Transport::Pipe
        }
    }
}

impl EncodeLabelValue for Transport {
    fn encode(&self, encoder: &mut LabelValueEncoder) -> fmt::Result {
        fmt::Write::write_str(encoder, if *self == Transport::Tcp { "tcp" } else { "pipe" })
    }
}

/// The conventions' `error.type` of a failed request.
#[derive(Clone, Copy, Debug, Hash, PartialEq, Eq)]
pub(super) enum ErrorType {
    /// A tool result with `isError: true`.
    Tool,
    /// A JSON-RPC error.
    Code(i32),
}

impl EncodeLabelValue for ErrorType {
    fn encode(&self, encoder: &mut LabelValueEncoder) -> fmt::Result {
        match self {
            ErrorType::Tool => fmt::Write::write_str(encoder, "tool_error"),
            ErrorType::Code(code) => EncodeLabelValue::encode(code, encoder),
        }
    }
}

/// How a request ended, as its metrics see it.
#[derive(Clone, Copy, Debug, Hash, PartialEq, Eq)]
pub(crate) enum Ended {
    /// Answered with a result; `tool_error`: a tool result with `isError`.
    Result { tool_error: bool },
    /// Answered with a JSON-RPC error of this code.
    Error(i32),
}

impl Ended {
    /// Whether a JSON-RPC error code says the caller's request was wrong (it could not be parsed, an unknown method,
    /// invalid params, an unknown resource): the conventions count those as no error of the server's.
    pub(crate) fn is_callers(code: i32) -> bool {
        matches!(code, -32700 | -32600 | -32601 | -32602 | -32002)
    }

    /// As one number, for [`Timing::ended`](super::timing::Timing::ended): never 0.
    pub(super) fn encode(self) -> u64 {
        match self {
            Ended::Result { tool_error } => 1 + u64::from(tool_error),
            Ended::Error(code) => 1 << 32 | u64::from(code as u32),
        }
    }

    pub(super) fn decode(n: u64) -> Option<Ended> {
        match n {
            0 => None,
            1 | 2 => Some(Ended::Result { tool_error: n == 2 }),
            _ => Some(Ended::Error(n as u32 as i32)),
        }
    }

    /// How a request answered with `result` ended (a result of no tool).
    pub(crate) fn of<T>(result: &Result<T, crate::wire::error::Error>) -> Ended {
        match result {
            Ok(_) => Ended::Result { tool_error: false },
            Err(e) => Ended::Error(e.code.0),
        }
    }

    /// The conventions' `error.type` and `rpc.response.status_code`. A server counts as its own errors the codes
    /// that are not the caller's mistake: a request it could not parse, an unknown method, invalid params and an
    /// unknown resource are the caller's, and set the status code only.
    pub(super) fn labels(self) -> (Option<ErrorType>, Option<i32>) {
        match self {
            Ended::Result { tool_error: false } => (None, None),
            Ended::Result { tool_error: true } => (Some(ErrorType::Tool), None),
            Ended::Error(code) if Ended::is_callers(code) => (None, Some(code)),
            Ended::Error(code) => (Some(ErrorType::Code(code)), Some(code)),
        }
    }
}

/// What a request is, as its metrics label it.
#[derive(Clone, Debug)]
pub(crate) struct Request {
    /// Its method.
    pub method: &'static str,
    /// The tool or prompt it runs, where it runs one: a name the server serves, or `_OTHER`.
    pub target: Option<Name>,
    /// Its era's protocol version.
    pub version: &'static str,
    pub transport: Transport,
}

impl Request {
    /// A request of the protocol `version` that came over HTTP (`http`), or stdio and in process.
    pub(crate) fn new(method: &'static str, target: Option<Name>, version: &'static str, http: bool) -> Request {
        Request { method, target, version, transport: Transport::of(http) }
    }

    pub(super) fn tool(&self) -> Option<Name> {
        self.target.clone().filter(|_| self.method == "tools/call")
    }

    pub(super) fn prompt(&self) -> Option<Name> {
        self.target.clone().filter(|_| self.method == "prompts/get")
    }
}
