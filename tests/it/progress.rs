//! Progress, one behaviour over every transport and both eras, from one table of cases: a request with a
//! `progressToken` gets `notifications/progress` with its token, increasing (a report that goes backwards is
//! dropped) and before its answer; none after the answer (the testbed's `progress` tool keeps reporting from a task
//! once it returned); and a request without a token gets none. JSON mode, where an answer is one body, has no room
//! for them. Progress from a task is in `tasks_2025.rs`; the client's side in `client.rs`.

use crate::common;

use std::time::Duration;

use common::cases::{Era, Peer, Transport};
use serde_json::{json, Value};

/// Every transport that carries a request's progress, in each era it serves.
const CASES: &[(Transport, Era)] = &[
    (Transport::Stdio, Era::V2025),
    (Transport::Stdio, Era::V2026),
    (Transport::HttpSse, Era::V2025),
    (Transport::HttpStateless, Era::V2025),
    (Transport::Http, Era::V2026),
];

fn progress_of<'a>(messages: &'a [Value], token: &str) -> Vec<&'a Value> {
    messages
        .iter()
        .filter(|m| m["method"] == "notifications/progress" && m["params"]["progressToken"] == token)
        .collect()
}

/// Progress reaches the client with its token, increasing and before the answer, and never after it; without a
/// token there is none.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn progress_reaches_the_client_before_the_answer_and_never_after_it() {
    for &(transport, era) in CASES {
        let case = format!("{transport:?} {era:?}");
        let mut peer = Peer::open(transport, era).await;

        let (answer, before) = peer.call(&json!(1), "progress", json!({}), json!({"progressToken": "p-1"})).await;
        assert_eq!(answer["result"]["content"][0]["text"], "reported", "{case}: {answer}");
        let seen = progress_of(&before, "p-1");
        let values: Vec<f64> = seen.iter().map(|m| m["params"]["progress"].as_f64().unwrap()).collect();
        assert_eq!(values, [1.0, 2.0, 3.0], "{case}: increasing, before the answer: {before:?}");
        assert!(seen.iter().all(|m| m["params"]["total"] == 3.0), "{case}: {seen:?}");

        // The tool goes on reporting for 100 ms after it returned: none of it reaches the client.
        let after = peer.later(Duration::from_millis(300));
        assert!(progress_of(&after, "p-1").is_empty(), "{case}: progress after the answer: {after:?}");

        let (answer, before) = peer.call(&json!(2), "progress", json!({}), json!({})).await;
        assert_eq!(answer["result"]["content"][0]["text"], "reported", "{case}: {answer}");
        let after = peer.later(Duration::from_millis(300));
        let any: Vec<_> = before.iter().chain(&after).filter(|m| m["method"] == "notifications/progress").collect();
        assert!(any.is_empty(), "{case}: no token, no progress: {any:?}");
    }
}
