//! Cancellation, one behaviour over every transport and both eras, from one table of cases: a cancelled request is
//! never answered, an async handler is dropped (and its deferred cleanup runs), a blocking one sees its flag, and the
//! connection goes on serving. Each case cancels the way its transport and era do: `notifications/cancelled` (stdio,
//! 2025 HTTP sessions in SSE or JSON mode, stateless 2025 POSTs), or the client closing its POST (stateless 2025 and
//! 2026 HTTP). The testbed prints what its handlers saw on stderr (`SLEEP_START id`, `SLEEP_ABORTED id`,
//! `CLEANUP_DONE id`, `SPIN_CANCELLED id`). The edges of each mode are beside it: `stdio_cancellation.rs` (the
//! bookshop's shielded cleanup, reasons, races), `http.rs` (nested requests, dropped connections in session mode),
//! `http_2026.rs` (a stream closed after its first frame).

use crate::common;

use std::time::Duration;

use common::cases::{answers_among, Cancel, Era, Peer, Transport};
use serde_json::json;

/// Every way a request is cancelled.
const CASES: &[(Transport, Era, Cancel)] = &[
    (Transport::Stdio, Era::V2025, Cancel::Notification),
    (Transport::Stdio, Era::V2026, Cancel::Notification),
    (Transport::HttpSse, Era::V2025, Cancel::Notification),
    (Transport::HttpJson, Era::V2025, Cancel::Notification),
    (Transport::HttpStateless, Era::V2025, Cancel::Notification),
    (Transport::HttpStateless, Era::V2025, Cancel::Disconnect),
    (Transport::Http, Era::V2026, Cancel::Disconnect),
];

/// A cancelled request is never answered, on every transport and in both eras: its async handler is dropped and its
/// deferred cleanup runs, a blocking handler sees its flag, and the connection serves the next call.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cancelled_request_stops_its_handler_and_is_never_answered() {
    for &(transport, era, how) in CASES {
        let case = format!("{transport:?} {era:?} {how:?}");
        let mut peer = Peer::open(transport, era).await;
        let (sleepy, spinning) = (json!("sleepy"), json!(4242));

        peer.start(&sleepy, "sleep", json!({"ms": 60_000}));
        assert!(peer.wait_stderr("SLEEP_START \"sleepy\"").await, "{case}: {}", peer.stderr_text());
        peer.cancel(&sleepy, how).await;
        assert!(peer.wait_stderr("SLEEP_ABORTED \"sleepy\"").await, "{case}: {}", peer.stderr_text());
        assert!(peer.wait_stderr("CLEANUP_DONE \"sleepy\"").await, "{case}: its deferred cleanup ran");

        peer.start(&spinning, "spin", json!({}));
        // The blocking handler has started once its thread runs: give it that moment, then cancel.
        tokio::time::sleep(Duration::from_millis(200)).await;
        peer.cancel(&spinning, how).await;
        assert!(peer.wait_stderr("SPIN_CANCELLED 4242").await, "{case}: {}", peer.stderr_text());

        // The connection serves on; on stdio, what the server wrote before this answer is all it wrote for the
        // cancelled requests (it read their cancels first).
        let (answer, before) = peer.call(&json!("echo"), "echo", json!({"text": "still here"}), json!({})).await;
        assert_eq!(answer["result"]["content"][0]["text"], "still here", "{case}: {answer}");
        let ids = [sleepy, spinning];
        let mut answered = answers_among(&before, &ids);
        answered.extend(peer.answers_to(&ids).await);
        assert!(answered.is_empty(), "{case}: a cancelled request was answered: {answered:?}");
        assert!(!peer.stderr_text().contains("SLEEP_DONE"), "{case}");
    }
}
