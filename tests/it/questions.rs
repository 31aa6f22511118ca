//! Questions to the client, one behaviour over every transport and both eras, from one table of cases: a handler's
//! question (here a form elicitation) reaches the client the way its era carries it, and the client's answer reaches
//! the handler. In the 2025-11-25 era it is a request of the server's, on stdout or on the POST's SSE stream, which
//! the client answers with a response; in 2026-07-28 it is an `input_required` result, and the client calls again
//! with `inputResponses` and the sealed `requestState`. The kinds of question (URL elicitation, sampling, roots),
//! their capability checks and their cancellation are in `client_requests.rs`, `stdio_2026.rs` and `http_2026.rs`.

use crate::common;

use std::time::Duration;

use common::cases::{Era, Peer, Transport};
use common::http::{request, Body};
use serde_json::{json, Value};

const WAIT: Duration = Duration::from_secs(10);

/// Every transport and era a handler asks the client from.
const CASES: &[(Transport, Era)] = &[
    (Transport::Stdio, Era::V2025),
    (Transport::Stdio, Era::V2026),
    (Transport::HttpSse, Era::V2025),
    (Transport::Http, Era::V2026),
];

/// What the client declares: form elicitation.
fn elicitation() -> Value {
    json!({"elicitation": {"form": {}}})
}

/// Calls `ask_name`, checks the question it asks, answers it with `answer` (an elicitation result), and returns the
/// call's final response.
async fn ask_name(peer: &mut Peer, id: i64, answer: Value) -> Value {
    let call = json!({"name": "ask_name", "arguments": {}});
    let check = |question: &Value| {
        assert_eq!(question["method"], "elicitation/create", "{question}");
        assert_eq!(question["params"]["message"], "Who are you?", "{question}");
        assert_eq!(question["params"]["requestedSchema"]["properties"]["name"]["type"], "string", "{question}");
    };
    match peer {
        Peer::Stdio(s, Era::V2025) => {
            s.request_with_id(json!(id), "tools/call", call);
            let question = s.server_request("elicitation/create");
            check(&question);
            s.send(json!({"jsonrpc": "2.0", "id": question["id"], "result": answer}));
            s.response(&json!(id))
        }
        Peer::Http { client, era: Era::V2025, .. } => {
            let mut body = Body::of(client.send(&request(id, "tools/call", call)).await).await;
            let question = loop {
                let message = body.next_message(WAIT).await.expect("the question on the call's stream");
                if message.get("id").is_some() && message.get("method").is_some() {
                    break message;
                }
            };
            check(&question);
            let response = json!({"jsonrpc": "2.0", "id": question["id"], "result": answer});
            assert_eq!(client.send(&response).await.status(), 202);
            body.response(&json!(id), "tools/call").await
        }
        Peer::Stdio(_, Era::V2026) | Peer::Http { era: Era::V2026, .. } => {
            let first = v2026_call(peer, id, call.clone()).await;
            let result = &first["result"];
            assert_eq!(result["resultType"], "input_required", "{first}");
            let questions = result["inputRequests"].as_object().expect("inputRequests");
            assert_eq!(questions.len(), 1, "{first}");
            let (key, question) = questions.iter().next().unwrap();
            check(question);
            let mut retry = call;
            retry["inputResponses"] = json!({key.as_str(): answer});
            retry["requestState"] = result["requestState"].clone();
            v2026_call(peer, id + 1000, retry).await
        }
    }
}

/// A 2026 `tools/call` that declares elicitation: its response.
async fn v2026_call(peer: &mut Peer, id: i64, params: Value) -> Value {
    match peer {
        Peer::Stdio(s, _) => s.v2026_call_with("tools/call", params, elicitation()),
        Peer::Http { client, .. } => client.v2026_exchange(id, "tools/call", params, elicitation()).await.1,
    }
}

/// A handler's question reaches the client and its answer the handler, accepted or declined, in every case.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_handlers_question_reaches_the_client_and_its_answer_the_handler() {
    for &(transport, era) in CASES {
        let case = format!("{transport:?} {era:?}");
        let mut peer = Peer::open_with(transport, era, &[], elicitation()).await;
        let accepted = ask_name(&mut peer, 1, json!({"action": "accept", "content": {"name": "Ada", "age": 36}})).await;
        assert_eq!(accepted["result"]["content"][0]["text"], "Hello, Ada (Some(36))", "{case}: {accepted}");
        let declined = ask_name(&mut peer, 2, json!({"action": "decline"})).await;
        assert_eq!(declined["result"]["content"][0]["text"], "declined", "{case}: {declined}");
    }
}
