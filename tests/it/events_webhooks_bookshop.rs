//! The bookshop's `book.back_on_shelf` by webhook, as a user deploys it: three bookshop processes
//! (`--redis --webhooks --auth-issuer ...`) on a real `redis-server` behind a real nginx with the shipped
//! configuration, a real OAuth server (`oidc-provider`) issuing the subscriber's token, and a receiver that checks
//! every POST with the Standard Webhooks project's own Python library. The instance delivering the subscription is
//! killed with SIGKILL (nothing drains, no lease is let go): another takes the subscription over within its lease,
//! and the receiver hears every book back on the shelf, each once. The instances have a proxy in their environment
//! (`HTTPS_PROXY`), which deliveries do not use.

use std::collections::HashMap;
use std::time::Duration;

use crate::common;
use crate::events_webhooks::{deliveries, Caller, SECRET};

use common::oidc::{self, Config, Provider};
use common::proxy::Kind;
use common::shops::{eventually, holds, Shops, WAIT};
use common::webhooks::WebhookReceiver;
use mcp::client::{Client, EraChoice};
use serde_json::{json, Value};

/// The shop's titles, each ordered and dropped once a round: four books back on the shelf.
const TITLES: [&str; 4] = ["Dune", "Emma", "Middlemarch", "Moby-Dick"];

/// What the bookshops take tokens for (any identifier the provider accepts; the instances share it).
const RESOURCE: &str = "https://bookshop.example/mcp";

/// The events delivered so far: `(eventId, title)`, in the order they arrived.
fn delivered(received: &[Value]) -> Vec<(String, String)> {
    deliveries(received)
        .iter()
        .map(|d| {
            let body = &d["body"];
            (body["eventId"].as_str().unwrap().to_owned(), body["data"]["title"].as_str().unwrap().to_owned())
        })
        .collect()
}

/// Orders every title at once through the proxy, waits until all four are held, then drops the orders: each
/// instance running one cancels it, and its cleanup releases the hold, which emits `book.back_on_shelf`.
async fn order_and_drop_every_title(shops: &Shops, client: &Client) {
    let orders: Vec<_> = TITLES
        .iter()
        .map(|title| {
            let (client, title) = (client.clone(), title.to_string());
            tokio::spawn(async move {
                client.call_tool("order_book", json!({"title": title})).timeout(Duration::from_secs(40)).await
            })
        })
        .collect();
    eventually("every title is on hold", shops, async || holds(client).await.len() == TITLES.len()).await;
    for order in orders {
        order.abort();
    }
}

/// Waits until the receiver has heard of every title `rounds` times over; what it received.
async fn heard(receiver: &WebhookReceiver, shops: &Shops, rounds: usize) -> Vec<Value> {
    let what = format!("{rounds} rounds of books back on the shelf");
    let deadline = std::time::Instant::now() + WAIT + Duration::from_secs(10);
    loop {
        let received = receiver.received().await;
        let mut distinct: HashMap<String, String> = HashMap::new();
        for (id, title) in delivered(&received) {
            distinct.insert(id, title);
        }
        if TITLES.iter().all(|t| distinct.values().filter(|v| v == t).count() >= rounds) {
            return received;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "{what}: heard {:?}\nreceiver:\n{}\nshops:\n{}",
            delivered(&received),
            receiver.stderr_text(),
            shops.stderr()
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_bookshops_webhook_outlives_the_instance_delivering_it_killed_behind_nginx() {
    let provider = tokio::task::spawn_blocking(|| Provider::start(Config::default())).await.unwrap();
    let receiver = tokio::task::spawn_blocking(|| WebhookReceiver::start(&[SECRET])).await.unwrap();
    let ca = common::install::target_dir().join(format!("bookshop-webhook-ca-{}.pem", std::process::id()));
    std::fs::write(&ca, receiver.certificate_pem()).unwrap();
    let ca_path = ca.to_str().unwrap().to_owned();
    let flags = [
        "--auth-issuer",
        provider.issuer(),
        "--auth-resource",
        RESOURCE,
        "--webhooks",
        "--webhook-allow",
        "127.0.0.1",
        "--webhook-ca",
        &ca_path,
    ];
    // A proxy in the environment (a dead one) is not used: through it, only the proxy's address would pass the SSRF
    // guard, and it would connect anywhere.
    let env = [("HTTPS_PROXY", "http://127.0.0.1:9")];
    let mut shops = Shops::behind_with_env(Kind::Nginx, &flags, &env).await;
    let token =
        provider.client_credentials_token(oidc::SERVICE, oidc::SECRET, "books:read books:write", RESOURCE).await;

    // Subscribed through the first instance, which therefore delivers it.
    let hook = receiver.url("/hooks/shelf");
    let first = Caller::new(&shops.instances[0].url, Some(&token));
    let subscribed = first.subscribe(&hook, SECRET, json!({}), json!({"name": "book.back_on_shelf"})).await;
    let id = subscribed["result"]["id"].as_str().unwrap_or_else(|| panic!("{subscribed}\n{}", shops.stderr()));
    let id = id.to_owned();

    let client = Client::builder()
        .era(EraChoice::V2026)
        .header("authorization", format!("Bearer {token}"))
        .http(shops.url().to_owned())
        .await
        .unwrap_or_else(|e| panic!("through nginx: {e}\n{}", shops.stderr()));

    // A round delivered by the first instance; then it is killed, and a round is emitted while its lease runs out.
    order_and_drop_every_title(&shops, &client).await;
    heard(&receiver, &shops, 1).await;
    common::shops::kill(&shops.instances[0], "-KILL");
    assert!(shops.instances[0].wait_exit(Duration::from_secs(10)).is_some(), "instance 0 outlived SIGKILL");
    order_and_drop_every_title(&shops, &client).await;
    let received = heard(&receiver, &shops, 2).await;

    // Every book back on the shelf, each event once; the one exception is an event whose POST the receiver accepted
    // just as its instance died, before the instance wrote its watermark: the next posts it again, under the same
    // `webhook-id`, which is what Standard Webhooks gives a receiver to drop the repeat by.
    let got = delivered(&received);
    let mut seen: HashMap<&str, usize> = HashMap::new();
    for (event, _) in &got {
        *seen.entry(event).or_default() += 1;
    }
    assert_eq!(seen.len(), 2 * TITLES.len(), "two rounds of every title: {got:?}");
    let repeated: Vec<&&str> = seen.iter().filter(|(_, n)| **n > 1).map(|(e, _)| e).collect();
    assert!(repeated.len() <= 1 && seen.values().all(|n| *n <= 2), "a repeat at most, of one event: {got:?}");
    for event in repeated {
        let posts: Vec<&Value> =
            deliveries(&received).into_iter().filter(|d| d["body"]["eventId"] == **event).collect();
        assert_eq!(posts[0]["headers"]["webhook-id"], posts[1]["headers"]["webhook-id"], "{posts:?}");
        let position = got.iter().position(|(e, _)| e == *event).unwrap();
        assert!(position < TITLES.len(), "only an event of the round the dead instance delivered: {got:?}");
    }
    for d in deliveries(&received) {
        assert_eq!(d["verified"], true, "{d}");
        assert_eq!(d["headers"]["x-mcp-subscription-id"], id.as_str(), "{d}");
        common::schema::check_webhook_body(&d["body"]).unwrap();
    }
    let taken_over =
        |i: usize| shops.instances[i].stderr_text().contains("a webhook subscription is delivered here now");
    assert!(taken_over(1) || taken_over(2), "a survivor took the subscription over:\n{}", shops.stderr());
    shops.assert_nothing_panicked();
    let verifications = received.iter().filter(|r| r["body"]["type"] == "verification").count();
    assert_eq!(verifications, 1, "taken over, not verified again");

    // The subscription is still one: a refresh through nginx (any survivor) answers with its id.
    let through_nginx = Caller::new(shops.url(), Some(&token));
    let refreshed = through_nginx.subscribe(&hook, SECRET, json!({}), json!({"name": "book.back_on_shelf"})).await;
    assert_eq!(refreshed["result"]["id"], id.as_str(), "{refreshed}");
    let _ = std::fs::remove_file(&ca);
}
