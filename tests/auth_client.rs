//! `mcp::client` signs in to the bookshop served with authorization (`--auth-issuer`, `--auth-resource`), against
//! a real authorization server (panva's oidc-provider on loopback, `tests/common/oidc.rs`), in both eras: it
//! discovers the resource's metadata from the 401, the issuer's metadata, registers itself, sends the user through
//! authorization code with PKCE (the harness's browser, which signs in and consents), and calls. One sign-in serves
//! many calls, concurrent ones too. Against a server that asks for less at first (`initial_scopes`), a tool that
//! needs `books:write` is 403 `insufficient_scope` and the client steps up with the union of scopes and retries, in
//! the same session.

mod common;

use std::sync::{Arc, Mutex};

use common::oidc::{self, Config, Provider};
use mcp::client::auth::OAuth;
use mcp::client::{Client, EraChoice};
use serde_json::json;

/// The user's part, done by the harness's browser (one per test, so its sign-in cookie is kept): every
/// authorization URL the client asked the user to open, in order.
fn user(provider: &Provider) -> (OAuth, Arc<Mutex<Vec<reqwest::Url>>>) {
    let asked: Arc<Mutex<Vec<reqwest::Url>>> = Arc::default();
    let browser = Arc::new(tokio::sync::Mutex::new(provider.browser()));
    let seen = asked.clone();
    let oauth = OAuth::new("http://127.0.0.1:8976/callback", move |url| {
        seen.lock().unwrap().push(url.clone());
        let browser = browser.clone();
        async move {
            let landed = browser.lock().await.authorize(url.as_str()).await?;
            Ok(landed.url.to_string())
        }
    })
    .client_name("auth-client-test");
    (oauth, asked)
}

fn param(url: &reqwest::Url, name: &str) -> Option<String> {
    url.query_pairs().find(|(k, _)| k == name).map(|(_, v)| v.into_owned())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn our_client_signs_in_to_the_bookshop_with_pkce_once_for_many_calls_in_both_eras() {
    let provider = Provider::start(Config::default());
    let shop = oidc::bookshop(&provider);
    for era in [EraChoice::Legacy, EraChoice::Modern] {
        let (oauth, asked) = user(&provider);
        let decline = |_| async { Ok(json!({"action": "decline"})) };
        let builder = Client::builder().era(era).auth(oauth).on_elicitation(decline);
        let client = builder.http(shop.url.clone()).await.unwrap_or_else(|e| {
            panic!(
                "{era:?}: sign-in failed: {e}\nbookshop:\n{}\nprovider:\n{}",
                shop.stderr_text(),
                provider.stderr_text()
            )
        });
        let tools = client.list_tools().await.unwrap();
        assert!(tools.iter().any(|t| t.name == "order_book"), "{era:?}");
        for _ in 0..5 {
            let holds = client.call_tool("list_holds", json!({})).await.unwrap();
            assert!(!holds.is_error(), "{era:?}: {holds:?}");
        }
        let signed_in = asked.lock().unwrap().len();
        assert_eq!(signed_in, 1, "{era:?}: one sign-in for the handshake, a list and five calls");
        let first = asked.lock().unwrap()[0].clone();
        assert_eq!(param(&first, "code_challenge_method").as_deref(), Some("S256"), "{first}");
        assert_eq!(param(&first, "resource").as_deref(), Some(shop.url.as_str()), "{first}");

        // The first 401 named no scope, so the client asked for the resource's scopes_supported: books:write is
        // among them, and cancel_hold (which needs it) goes through without another sign-in.
        let scope = param(&first, "scope").unwrap_or_default();
        assert!(scope.split(' ').any(|s| s == "books:write"), "{era:?}: {scope}");
        let answer = client.call_tool("cancel_hold", json!({"title": "Dune"})).await.unwrap();
        assert!(answer.text().is_some_and(|t| t.contains("hold on \"Dune\"")), "{era:?}: {answer:?}");
        assert_eq!(asked.lock().unwrap().len(), 1, "{era:?}");
        client.close().await;
    }
    drop(shop);
}

/// Order a book.
#[mcp::tool(scopes = ["books:write"])]
fn order(title: String) -> String {
    format!("ordered {title}")
}

/// What is on the shelves.
#[mcp::tool]
fn shelves() -> String {
    "Dune, Emma".into()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_403_insufficient_scope_sends_the_user_back_once_for_the_union_of_scopes() {
    let provider = Provider::start(Config::default());
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/mcp", listener.local_addr().unwrap());
    let auth = mcp::auth::Authorization::jwt(provider.issuer(), url.clone()).initial_scopes(["books:read"]);
    let server = mcp::Server::builder().tool::<order>().tool::<shelves>().authorization(auth).build().unwrap();
    tokio::spawn(server.serve_http_on(listener, mcp::HttpOptions::new()));
    for era in [EraChoice::Legacy, EraChoice::Modern] {
        let (oauth, asked) = user(&provider);
        let client = Client::builder().era(era).auth(oauth).http(url.clone()).await.unwrap();
        assert_eq!(client.call_tool("shelves", json!({})).await.unwrap().text(), Some("Dune, Emma"));
        let first = asked.lock().unwrap()[0].clone();
        let scope = param(&first, "scope").unwrap_or_default();
        assert!(scope.split(' ').any(|s| s == "books:read"), "{era:?}: the challenge's scope: {first}");
        assert!(!scope.split(' ').any(|s| s == "books:write"), "{era:?}: only the challenge's scope: {first}");
        let ordered = client
            .call_tool("order", json!({"title": "Dune"}))
            .await
            .unwrap_or_else(|e| panic!("{era:?}: the step-up failed: {e}\nprovider:\n{}", provider.stderr_text()));
        assert_eq!(ordered.text(), Some("ordered Dune"), "{era:?}");
        let asked = asked.lock().unwrap().clone();
        assert_eq!(asked.len(), 2, "{era:?}: one step-up");
        let scopes: Vec<String> = param(&asked[1], "scope").unwrap_or_default().split(' ').map(str::to_owned).collect();
        assert!(scopes.contains(&"books:read".into()) && scopes.contains(&"books:write".into()), "{era:?}: {scopes:?}");
        assert_eq!(client.call_tool("order", json!({"title": "Emma"})).await.unwrap().text(), Some("ordered Emma"));
        client.close().await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrent_calls_share_one_sign_in() {
    let provider = Provider::start(Config::default());
    let shop = oidc::bookshop(&provider);
    let (oauth, asked) = user(&provider);
    let client = Client::builder().era(EraChoice::Modern).auth(oauth).http(shop.url.clone()).await.unwrap();
    let calls: Vec<_> = (0..16)
        .map(|_| {
            let client = client.clone();
            tokio::spawn(async move { client.call_tool("list_holds", json!({})).await.map(|r| r.is_error()) })
        })
        .collect();
    for call in calls {
        assert!(!call.await.unwrap().unwrap());
    }
    assert_eq!(asked.lock().unwrap().len(), 1, "the handshake signed in; sixteen calls at once reused it");
    client.close().await;
}
