//! What the Events extension (SEP-3415) puts on the wire that both sides name: its identifier and its delivery
//! modes.

/// The Events extension's identifier, the key of its settings under `capabilities.extensions`.
pub const EXTENSION: &str = "io.modelcontextprotocol/events";

/// How the events of a type reach a client: the modes an [`EventType`](crate::events::EventType) offers, listed in its `delivery`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Delivery {
    /// `events/poll`: the client asks, with its cursor, at the interval the server suggests.
    Poll,
    /// `events/stream`: a request held open, on which the server sends each event as a notification.
    Push,
    /// `events/subscribe`: the server POSTs each event, signed, to an `https` endpoint the client names, for as long
    /// as the client refreshes the subscription.
    Webhook,
}

impl Delivery {
    /// The mode's name on the wire (`poll`, `push`, `webhook`).
    pub fn as_str(self) -> &'static str {
        match self {
            Delivery::Poll => "poll",
            Delivery::Push => "push",
            Delivery::Webhook => "webhook",
        }
    }

    /// The mode of a name on the wire.
    pub fn from_name(name: &str) -> Option<Delivery> {
        match name {
            "poll" => Some(Delivery::Poll),
            "push" => Some(Delivery::Push),
            "webhook" => Some(Delivery::Webhook),
            _ => None,
        }
    }
}
