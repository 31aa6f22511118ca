//! The conventions' four histograms in OpenTelemetry too (feature `opentelemetry`): `mcp.server.operation.duration`,
//! `mcp.server.session.duration`, `mcp.client.operation.duration` and `mcp.client.session.duration`, under their
//! OpenTelemetry names and dotted attributes, recorded beside the Prometheus ones into the instruments of a `Meter`
//! ([`Metrics::export_to`](super::Metrics::export_to)), which the program's meter provider exports (OTLP, with
//! `#[mcp::main]`). The runtime's own state (`mcp_server_*` gauges and counters) stays in Prometheus's format.

use opentelemetry::metrics::{Histogram, Meter};
use opentelemetry::KeyValue;

use super::labels::{ClientOperation, ErrorType, Operation, Peer, SessionEnd, Transport};

/// The instruments, made once from the program's meter.
pub(crate) struct Instruments {
    server_operations: Histogram<f64>,
    server_sessions: Histogram<f64>,
    client_operations: Histogram<f64>,
    client_sessions: Histogram<f64>,
}

fn histogram(meter: &Meter, name: &'static str, description: &'static str, buckets: &[f64]) -> Histogram<f64> {
    meter.f64_histogram(name).with_unit("s").with_description(description).with_boundaries(buckets.to_vec()).build()
}

impl Instruments {
    pub(crate) fn new(meter: &Meter) -> Instruments {
        let (operations, sessions) = (&super::BUCKETS[..], &super::SESSION_BUCKETS[..]);
        Instruments {
            server_operations: histogram(
                meter,
                "mcp.server.operation.duration",
                "The duration of each request the server answered, from its arrival to its answer",
                operations,
            ),
            server_sessions: histogram(meter, "mcp.server.session.duration", "The duration of each session", sessions),
            client_operations: histogram(
                meter,
                "mcp.client.operation.duration",
                "The duration of each request the client sent, from its sending to its answer",
                operations,
            ),
            client_sessions: histogram(
                meter,
                "mcp.client.session.duration",
                "The duration of each connection of the client to a server",
                sessions,
            ),
        }
    }

    /// The attributes of a server operation: what a series of `mcp_server_operation_duration_seconds` has.
    pub(crate) fn operation_attributes(labels: &Operation) -> Vec<KeyValue> {
        let mut attributes = vec![KeyValue::new("mcp.method.name", labels.mcp_method_name)];
        if let Some(tool) = &labels.gen_ai_tool_name {
            attributes.push(KeyValue::new("gen_ai.tool.name", value(tool)));
            attributes.push(KeyValue::new("gen_ai.operation.name", "execute_tool"));
        }
        if let Some(prompt) = &labels.gen_ai_prompt_name {
            attributes.push(KeyValue::new("gen_ai.prompt.name", value(prompt)));
        }
        if let Some(error) = labels.error_type {
            attributes.push(KeyValue::new("error.type", error_type(error)));
        }
        if let Some(code) = labels.rpc_response_status_code {
            attributes.push(KeyValue::new("rpc.response.status_code", code.to_string()));
        }
        attributes.push(KeyValue::new("mcp.protocol.version", labels.mcp_protocol_version));
        attributes.push(KeyValue::new("network.transport", transport(labels.network_transport)));
        attributes
    }

    pub(crate) fn server_operation(&self, seconds: f64, attributes: &[KeyValue]) {
        self.server_operations.record(seconds, attributes);
    }

    pub(crate) fn server_session(&self, seconds: f64, labels: &SessionEnd) {
        let attributes = [
            KeyValue::new("mcp.protocol.version", labels.mcp_protocol_version),
            KeyValue::new("network.transport", transport(labels.network_transport)),
        ];
        self.server_sessions.record(seconds, &attributes);
    }

    pub(crate) fn client_operation(&self, seconds: f64, labels: &ClientOperation) {
        let mut attributes = vec![KeyValue::new("mcp.method.name", labels.method.clone())];
        match (labels.method.as_str(), &labels.target) {
            ("tools/call", Some(tool)) => {
                attributes.push(KeyValue::new("gen_ai.tool.name", tool.clone()));
                attributes.push(KeyValue::new("gen_ai.operation.name", "execute_tool"));
            }
            ("prompts/get", Some(prompt)) => attributes.push(KeyValue::new("gen_ai.prompt.name", prompt.clone())),
            _ => {}
        }
        if let Some(error) = &labels.error_type {
            attributes.push(KeyValue::new("error.type", error.clone()));
        }
        if let Some(code) = labels.status_code {
            attributes.push(KeyValue::new("rpc.response.status_code", code.to_string()));
        }
        peer(&mut attributes, &labels.peer);
        self.client_operations.record(seconds, &attributes);
    }

    pub(crate) fn client_session(&self, seconds: f64, labels: &Peer) {
        let mut attributes = Vec::with_capacity(4);
        peer(&mut attributes, labels);
        self.client_sessions.record(seconds, &attributes);
    }
}

fn peer(attributes: &mut Vec<KeyValue>, peer: &Peer) {
    attributes.push(KeyValue::new("mcp.protocol.version", peer.version.clone()));
    attributes.push(KeyValue::new("network.transport", transport(peer.transport)));
    if let Some((address, port)) = &peer.server {
        attributes.push(KeyValue::new("server.address", address.clone()));
        attributes.push(KeyValue::new("server.port", i64::from(*port)));
    }
}

/// A name as an attribute's value: a literal as it is, a name made at run time copied.
fn value(name: &crate::base::name::Name) -> opentelemetry::Value {
    match name.literal() {
        Some(literal) => literal.into(),
        None => name.to_string().into(),
    }
}

fn transport(transport: Transport) -> &'static str {
    if transport == Transport::Tcp {
        "tcp"
    } else {
        "pipe"
    }
}

fn error_type(error: ErrorType) -> String {
    match error {
        ErrorType::Tool => "tool_error".to_owned(),
        ErrorType::Code(code) => code.to_string(),
    }
}
