//! Task limits are per client: no client can exhaust them for the others. A client is its authenticated principal,
//! else its 2025 session, else (2026 era) its peer address. Over HTTP against the testbed, with clients on two
//! loopback addresses.

use crate::common;

use std::net::{IpAddr, Ipv4Addr};

use common::http::{Client, HttpServer};
use serde_json::{json, Value};

fn tasks() -> Value {
    json!({"elicitation": {}, "extensions": {"io.modelcontextprotocol/tasks": {}}})
}

/// A client whose connections come from `address` (any address of 127.0.0.0/8 reaches the server).
fn client_from(server: &HttpServer, address: Ipv4Addr) -> Client {
    let http = reqwest::Client::builder().local_address(IpAddr::V4(address)).build().unwrap();
    Client { http, url: format!("http://{}/mcp", server.authority()), session: None }
}

/// A 2026 `tools/call` declaring the Tasks extension: the whole response.
async fn call(client: &Client, id: i64, name: &str, arguments: Value) -> Value {
    let (_, answer, _) =
        client.v2026_exchange(id, "tools/call", json!({"name": name, "arguments": arguments}), tasks()).await;
    answer
}

fn task_id(answer: &Value) -> String {
    assert_eq!(answer["result"]["resultType"], "task", "{answer}");
    answer["result"]["taskId"].as_str().unwrap().to_owned()
}

fn error_code(answer: &Value) -> i64 {
    answer["error"]["code"].as_i64().unwrap_or_else(|| panic!("not an error: {answer}"))
}

/// `TaskSettings::max_running` holds for unauthenticated 2026 clients (counted by peer address), a cancelled task frees its
/// slot, and another client is not refused. (2026 requests without a principal were not counted at all: one client
/// ran 10 000 tasks.)
#[tokio::test]
async fn running_tasks_are_limited_per_client_and_a_cancelled_one_frees_its_slot() {
    let server = HttpServer::start_with_env(&[], &[("TESTBED_MAX_RUNNING_TASKS", "3")]);
    let one = client_from(&server, Ipv4Addr::new(127, 0, 0, 1));
    let mut ids = Vec::new();
    for id in 0..3 {
        ids.push(task_id(&call(&one, id, "task_approve", json!({"what": "x"})).await));
    }
    let refused = call(&one, 3, "task_approve", json!({"what": "x"})).await;
    assert_eq!(error_code(&refused), -31000, "{refused}");
    assert!(refused["error"]["message"].as_str().unwrap().contains("the limit is 3"), "{refused}");
    // Another client has its own limit.
    let other = client_from(&server, Ipv4Addr::new(127, 0, 0, 2));
    task_id(&call(&other, 5, "task_approve", json!({"what": "x"})).await);
    // Cancelling one of the first client's tasks frees its slot.
    let (_, cancelled, _) = one.v2026_exchange(6, "tasks/cancel", json!({"taskId": ids[0]}), tasks()).await;
    assert!(cancelled.get("result").is_some(), "{cancelled}");
    task_id(&call(&one, 7, "task_approve", json!({"what": "x"})).await);
}

/// The task store is shared, but each client may fill only its share: once one client has its most tasks stored
/// (finished ones are kept for their TTL), its task calls are refused, optional-task tools run as plain calls, and
/// every other client's tasks still start. (One client used to fill the 10 000-task store in 0.6 s and lock
/// everyone out for the task TTL.)
#[tokio::test]
async fn one_client_cannot_fill_the_task_store_for_the_others() {
    let server = HttpServer::start_with_env(&[], &[("TESTBED_MAX_TASKS_PER_CLIENT", "5")]);
    let greedy = client_from(&server, Ipv4Addr::new(127, 0, 0, 1));
    for id in 0..5 {
        task_id(&call(&greedy, id, "task_fail", json!({"reason": "quick"})).await);
    }
    let refused = call(&greedy, 5, "task_approve", json!({"what": "x"})).await;
    assert_eq!(error_code(&refused), -31000, "{refused}");
    assert!(refused["error"]["message"].as_str().unwrap().contains("5 tasks stored"), "{refused}");
    let plain = call(&greedy, 6, "task_fail", json!({"reason": "as a plain call"})).await;
    assert_eq!(plain["result"]["isError"], true, "the optional-task tool ran without a task: {plain}");
    let other = client_from(&server, Ipv4Addr::new(127, 0, 0, 3));
    task_id(&call(&other, 7, "task_approve", json!({"what": "x"})).await);
    task_id(&call(&other, 8, "task_fail", json!({"reason": "mine"})).await);
}
