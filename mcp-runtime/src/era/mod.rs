//! The era fronts. Each turns an incoming request into one [`Request`](crate::dispatch::Request) shape with its
//! metadata, answers what only its era has, and hands the rest to the one dispatcher:
//!
//! - [`v2025`]: `initialize` and the session it starts (client info, log level, resource subscriptions), `ping`,
//!   `logging/setLevel`, `resources/subscribe`, and the client's answers to requests from the server.
//! - [`v2026`]: the stateless `_meta` envelope, `server/discover`, `subscriptions/listen`, `input_required`
//!   results with their sealed `requestState`, and the 2026 HTTP header rules.
//!
//! On stdio one connection serves both: a request whose `_meta` carries
//! `io.modelcontextprotocol/protocolVersion` (and `server/discover` or `subscriptions/listen`, which exist only in
//! the 2026 era) goes to the 2026 front; everything else to the 2025 session.

pub(crate) mod seal;
pub(crate) mod v2025;
pub(crate) mod v2026;
