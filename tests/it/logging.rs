//! Logging, one behaviour over every transport and both eras, from one table of cases: a handler's log messages
//! reach the client at the level it asked for and above, each era asking its own way (2025-11-25: the session's
//! `logging/setLevel`; 2026-07-28: the request's `_meta` `logLevel`), before the answer and with the logger's name.
//! Without a level a 2025 session gets every message and a 2026 request none. Stateless 2025 HTTP has no session to
//! keep a level in, and JSON mode no room for messages beside the answer.

use crate::common;

use common::cases::{Era, Peer, Transport};
use common::v2026::META_LOG_LEVEL;
use serde_json::{json, Value};

/// Every transport that carries a request's log messages, in each era it serves.
const CASES: &[(Transport, Era)] = &[
    (Transport::Stdio, Era::V2025),
    (Transport::Stdio, Era::V2026),
    (Transport::HttpSse, Era::V2025),
    (Transport::Http, Era::V2026),
];

/// The levels of the log messages among `messages`, in order.
fn levels(messages: &[Value]) -> Vec<String> {
    messages
        .iter()
        .filter(|m| m["method"] == "notifications/message")
        .inspect(|m| assert_eq!(m["params"]["logger"], "testbed", "{m}"))
        .map(|m| m["params"]["level"].as_str().unwrap().to_owned())
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn log_messages_reach_the_client_at_the_level_it_asked_for() {
    const ALL: [&str; 8] = ["debug", "info", "notice", "warning", "error", "critical", "alert", "emergency"];
    for &(transport, era) in CASES {
        let case = format!("{transport:?} {era:?}");
        let mut peer = Peer::open(transport, era).await;

        let (answer, before) = peer.call(&json!(1), "log_all", json!({}), json!({})).await;
        assert!(answer["result"].is_object(), "{case}: {answer}");
        let unset: &[&str] = match era {
            Era::V2025 => &ALL,
            Era::V2026 => &[],
        };
        assert_eq!(levels(&before), unset, "{case}: no level asked for");

        let meta = match era {
            Era::V2025 => {
                let (set, _) = peer.exchange(&json!(2), "logging/setLevel", json!({"level": "warning"})).await;
                assert_eq!(set["result"], json!({}), "{case}: {set}");
                json!({})
            }
            Era::V2026 => json!({META_LOG_LEVEL: "warning"}),
        };
        let (answer, before) = peer.call(&json!(3), "log_all", json!({}), meta).await;
        assert!(answer["result"].is_object(), "{case}: {answer}");
        assert_eq!(levels(&before), &ALL[3..], "{case}: warning and above");
    }
}
