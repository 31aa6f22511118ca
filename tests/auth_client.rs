//! `mcp::client` signs in to the bookshop served with authorization (`--auth-issuer`, `--auth-resource`), against
//! a real authorization server (panva's oidc-provider on loopback, `tests/common/oidc.rs`), in both eras: it
//! discovers the resource's metadata from the 401, the issuer's metadata, registers itself, sends the user through
//! authorization code with PKCE (the harness's browser, which signs in and consents), and calls. One sign-in serves
//! many calls, concurrent ones too. Against a server that asks for less at first (`initial_scopes`), a tool that
//! needs `books:write` is 403 `insufficient_scope` and the client steps up with the union of scopes and retries, in
//! the same session. An access token that expired, or is about to, is refreshed with the refresh token before the
//! call goes (the server answers no 401), without the user, once for many calls at once; tokens kept from an earlier
//! client are refreshed on the 401 they meet; `OAuth::loopback` receives the browser on its own listener; and no
//! token reaches the runtime's logs.

mod common;

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use common::oidc::{self, Config, Provider};
use mcp::client::auth::{MemoryTokenStore, OAuth, TokenStore, Tokens};
use mcp::client::{Client, EraChoice};
use reqwest::Url;
use serde_json::json;

/// What the user was asked and did, in order: the authorization URLs the client asked the user to open, and the
/// redirects the browser was sent back with.
#[derive(Clone, Default)]
struct User {
    asked: Arc<Mutex<Vec<Url>>>,
    landed: Arc<Mutex<Vec<Url>>>,
}

impl User {
    fn asked(&self) -> Vec<Url> {
        self.asked.lock().unwrap().clone()
    }

    fn landed(&self) -> Vec<Url> {
        self.landed.lock().unwrap().clone()
    }
}

/// The user's part, done by the harness's browser (one per call, so its sign-in cookie is kept).
fn user(provider: &Provider) -> (OAuth, User) {
    let user = User::default();
    let browser = Arc::new(tokio::sync::Mutex::new(provider.browser()));
    let seen = user.clone();
    let oauth = OAuth::new("http://127.0.0.1:8976/callback", move |url| {
        seen.asked.lock().unwrap().push(url.clone());
        let (browser, seen) = (browser.clone(), seen.clone());
        async move {
            let landed = browser.lock().await.authorize(url.as_str()).await?;
            seen.landed.lock().unwrap().push(landed.url.clone());
            Ok(landed.url.to_string())
        }
    })
    .client_name("auth-client-test");
    (oauth, user)
}

fn param(url: &reqwest::Url, name: &str) -> Option<String> {
    url.query_pairs().find(|(k, _)| k == name).map(|(_, v)| v.into_owned())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn our_client_signs_in_to_the_bookshop_with_pkce_once_for_many_calls_in_both_eras() {
    let provider = Provider::start(Config::default());
    let shop = oidc::bookshop(&provider);
    for era in [EraChoice::V2025, EraChoice::V2026] {
        let (oauth, user) = user(&provider);
        let client = oidc::sign_in(era, oauth, &shop, &provider).await;
        let tools = client.list_tools().await.unwrap();
        assert!(tools.iter().any(|t| t.name == "order_book"), "{era:?}");
        for _ in 0..5 {
            let holds = client.call_tool("list_holds", json!({})).await.unwrap();
            assert!(!holds.is_error(), "{era:?}: {holds:?}");
        }
        assert_eq!(user.asked().len(), 1, "{era:?}: one sign-in for the handshake, a list and five calls");
        let first = user.asked()[0].clone();
        assert_eq!(param(&first, "code_challenge_method").as_deref(), Some("S256"), "{first}");
        assert_eq!(param(&first, "resource").as_deref(), Some(shop.url.as_str()), "{first}");

        // The first 401 named no scope, so the client asked for the resource's scopes_supported: books:write is
        // among them, and cancel_hold (which needs it) goes through without another sign-in.
        let scope = param(&first, "scope").unwrap_or_default();
        assert!(scope.split(' ').any(|s| s == "books:write"), "{era:?}: {scope}");
        let answer = client.call_tool("cancel_hold", json!({"title": "Dune"})).await.unwrap();
        assert!(answer.text().is_some_and(|t| t.contains("hold on \"Dune\"")), "{era:?}: {answer:?}");
        assert_eq!(user.asked().len(), 1, "{era:?}");
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
    for era in [EraChoice::V2025, EraChoice::V2026] {
        let (oauth, user) = user(&provider);
        let client = Client::builder().era(era).auth(oauth).http(url.clone()).await.unwrap();
        assert_eq!(client.call_tool("shelves", json!({})).await.unwrap().text(), Some("Dune, Emma"));
        let first = user.asked()[0].clone();
        let scope = param(&first, "scope").unwrap_or_default();
        assert!(scope.split(' ').any(|s| s == "books:read"), "{era:?}: the challenge's scope: {first}");
        assert!(!scope.split(' ').any(|s| s == "books:write"), "{era:?}: only the challenge's scope: {first}");
        let ordered = client
            .call_tool("order", json!({"title": "Dune"}))
            .await
            .unwrap_or_else(|e| panic!("{era:?}: the step-up failed: {e}\nprovider:\n{}", provider.stderr_text()));
        assert_eq!(ordered.text(), Some("ordered Dune"), "{era:?}");
        let asked = user.asked();
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
    let (oauth, user) = user(&provider);
    let client = Client::builder().era(EraChoice::V2026).auth(oauth).http(shop.url.clone()).await.unwrap();
    let calls: Vec<_> = (0..16)
        .map(|_| {
            let client = client.clone();
            tokio::spawn(async move { client.call_tool("list_holds", json!({})).await.map(|r| r.is_error()) })
        })
        .collect();
    for call in calls {
        assert!(!call.await.unwrap().unwrap());
    }
    assert_eq!(user.asked().len(), 1, "the handshake signed in; sixteen calls at once reused it");
    client.close().await;
}

/// Says hello.
#[mcp::tool]
fn hello() -> &'static str {
    "hello"
}

/// Our server at `url` with authorization by `provider`, its `books:read` advertised, checking `exp` to the second
/// (no leeway, so that a token of a short lifetime is refused soon after it expires).
fn strict(provider: &Provider, url: &str) -> mcp::Server {
    let auth =
        mcp::auth::Authorization::jwt(provider.issuer(), url).scopes_supported(["books:read"]).leeway(Duration::ZERO);
    mcp::Server::builder().tool::<hello>().authorization(auth).build().unwrap()
}

/// The [`strict`] server on loopback; its URL.
async fn strict_server(provider: &Provider) -> String {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/mcp", listener.local_addr().unwrap());
    tokio::spawn(strict(provider, &url).serve_http_on(listener, mcp::HttpOptions::new()));
    url
}

/// The [`strict`] server on loopback, behind a count of the 401s it answers; its URL and the count.
async fn counted_server(provider: &Provider) -> (String, Arc<AtomicUsize>) {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/mcp", listener.local_addr().unwrap());
    let refused = Arc::new(AtomicUsize::new(0));
    let count = refused.clone();
    let counting = move |request: axum::extract::Request, next: axum::middleware::Next| {
        let count = count.clone();
        async move {
            let response = next.run(request).await;
            if response.status() == axum::http::StatusCode::UNAUTHORIZED {
                count.fetch_add(1, Ordering::SeqCst);
            }
            response
        }
    };
    let app = strict(provider, &url).http_router(mcp::HttpOptions::new()).layer(axum::middleware::from_fn(counting));
    tokio::spawn(async move { axum::serve(listener, app).await });
    (url, refused)
}

/// Waits until the access token of `tokens` (a JWT) is past its `exp`, to the second.
async fn outlive(tokens: &Tokens) {
    let exp = oidc::decode_jwt(&tokens.access_token).1["exp"].as_u64().expect("exp");
    while SystemTime::now().duration_since(UNIX_EPOCH).unwrap().as_secs() <= exp {
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// The HTTP status the server answers a 2025-11-25 `initialize` with `token` as the bearer token.
async fn status_with(url: &str, token: &str) -> u16 {
    let initialize = json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "auth-client", "version": "0"}}});
    let response = reqwest::Client::new()
        .post(url)
        .bearer_auth(token)
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream")
        .header("mcp-protocol-version", "2025-11-25")
        .body(initialize.to_string())
        .send()
        .await
        .unwrap();
    response.status().as_u16()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_expired_access_token_is_refreshed_without_the_user() {
    let provider = Provider::start(Config::default().access_token_ttl(2));
    let url = strict_server(&provider).await;
    for era in [EraChoice::V2025, EraChoice::V2026] {
        let store = Arc::new(MemoryTokenStore::default());
        let (oauth, user) = user(&provider);
        let client = Client::builder().era(era).auth(oauth.token_store(store.clone())).http(url.clone()).await.unwrap();
        assert_eq!(client.call_tool("hello", json!({})).await.unwrap().text(), Some("hello"), "{era:?}");
        let expired = store.tokens(&url).expect("tokens after the sign-in");
        assert!(expired.refresh_token.is_some(), "{era:?}: the client registered for refresh tokens and got one");
        outlive(&expired).await;
        assert_eq!(status_with(&url, &expired.access_token).await, 401, "{era:?}: the server refuses it now");

        let refreshed_before = provider.grants("refresh_token").await;
        assert_eq!(client.call_tool("hello", json!({})).await.unwrap().text(), Some("hello"), "{era:?}");
        assert_eq!(provider.grants("refresh_token").await, refreshed_before + 1, "{era:?}: one refresh grant");
        let fresh = store.tokens(&url).unwrap();
        assert_ne!(fresh.access_token, expired.access_token, "{era:?}");
        assert_eq!(status_with(&url, &fresh.access_token).await, 200, "{era:?}: the new token is good");
        assert_eq!(user.asked().len(), 1, "{era:?}: the user signed in once, before the token expired");
        client.close().await;
    }
    assert_eq!(provider.grants("authorization_code").await, 2, "a code per era, none for a refresh");
    assert_eq!(provider.requests("/auth").await, 2);
}

/// Calls `hello` eight times at once, and checks that every call is answered.
async fn hello_eight_at_once(client: &Client, what: &str) {
    let calls: Vec<_> = (0..8)
        .map(|_| {
            let client = client.clone();
            tokio::spawn(async move { client.call_tool("hello", json!({})).await })
        })
        .collect();
    for call in calls {
        assert_eq!(call.await.unwrap().unwrap().text(), Some("hello"), "{what}");
    }
}

/// The client refreshes an access token before the server would refuse it: one that expires within the margin
/// (halfway through the life of this provider's 6 s tokens) while the server still takes it, then one that expired,
/// for eight calls at once with one refresh grant; the server answers none of them 401. A client that starts with
/// tokens kept by an earlier one knows no authorization server yet: its expired token meets a 401, which refreshes it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_expiring_access_token_is_refreshed_before_the_server_refuses_it() {
    let provider = Provider::start(Config::default().access_token_ttl(6));
    let (url, refused) = counted_server(&provider).await;
    let now = || SystemTime::now().duration_since(UNIX_EPOCH).unwrap().as_secs();
    for era in [EraChoice::V2025, EraChoice::V2026] {
        let store = Arc::new(MemoryTokenStore::default());
        let (oauth, user) = user(&provider);
        let oauth = oauth.token_store(store.clone());
        let client = Client::builder().era(era).auth(oauth.clone()).http(url.clone()).await.unwrap();
        assert_eq!(client.call_tool("hello", json!({})).await.unwrap().text(), Some("hello"), "{era:?}");
        assert!(refused.load(Ordering::SeqCst) > 0, "{era:?}: the handshake met a 401 and signed in");

        // Within 3 s of its expiry, and still good.
        let expiring = store.tokens(&url).unwrap();
        let expires_at = expiring.expires_at.expect("expires_in in the token response");
        while now() + 3 < expires_at {
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        let before = (refused.load(Ordering::SeqCst), provider.grants("refresh_token").await);
        assert_eq!(status_with(&url, &expiring.access_token).await, 200, "{era:?}: the server still takes it");
        assert_eq!(client.call_tool("hello", json!({})).await.unwrap().text(), Some("hello"), "{era:?}");
        let after = (refused.load(Ordering::SeqCst), provider.grants("refresh_token").await);
        assert_eq!(after, (before.0, before.1 + 1), "{era:?}: (401s, refresh grants): a refresh ahead, no 401");
        assert_ne!(store.tokens(&url).unwrap().access_token, expiring.access_token, "{era:?}");

        // Expired, for eight calls at once.
        let expired = store.tokens(&url).unwrap();
        outlive(&expired).await;
        assert_eq!(status_with(&url, &expired.access_token).await, 401, "{era:?}: the server refuses it now");
        let before = (refused.load(Ordering::SeqCst), provider.grants("refresh_token").await);
        hello_eight_at_once(&client, &format!("{era:?}")).await;
        let after = (refused.load(Ordering::SeqCst), provider.grants("refresh_token").await);
        assert_eq!(after, (before.0, before.1 + 1), "{era:?}: (401s, refresh grants): one refresh ahead, no 401");
        client.close().await;

        // A client with the tokens an earlier one kept: a 401 first, then the refresh.
        let kept = store.tokens(&url).unwrap();
        outlive(&kept).await;
        let before = (refused.load(Ordering::SeqCst), provider.grants("refresh_token").await);
        let client = Client::builder().era(era).auth(oauth).http(url.clone()).await.unwrap();
        assert_eq!(client.call_tool("hello", json!({})).await.unwrap().text(), Some("hello"), "{era:?}");
        let after = (refused.load(Ordering::SeqCst), provider.grants("refresh_token").await);
        assert_eq!(after, (before.0 + 1, before.1 + 1), "{era:?}: (401s, refresh grants): a 401, then a refresh");
        assert_eq!(user.asked().len(), 1, "{era:?}: the user signed in once");
        client.close().await;
    }
}

/// Eight calls at once after the access token expired get one new token for all of them: one refresh (before they
/// go) where the client holds a refresh token, else one new sign-in after their 401s (the calls that waited for it
/// use it).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn calls_challenged_at_once_get_one_new_token() {
    let provider = Provider::start(Config::default().access_token_ttl(2));
    let url = strict_server(&provider).await;
    for refresh in [true, false] {
        let store = Arc::new(MemoryTokenStore::default());
        let (oauth, user) = user(&provider);
        let oauth = oauth.refresh_tokens(refresh).token_store(store.clone());
        let client = Client::builder().era(EraChoice::V2026).auth(oauth).http(url.clone()).await.unwrap();
        assert_eq!(client.call_tool("hello", json!({})).await.unwrap().text(), Some("hello"));
        let expired = store.tokens(&url).unwrap();
        assert_eq!(expired.refresh_token.is_some(), refresh, "a refresh token only when asked for");
        outlive(&expired).await;

        let before = (provider.grants("refresh_token").await, provider.grants("authorization_code").await);
        let asked_before = user.asked().len();
        hello_eight_at_once(&client, &format!("refresh tokens: {refresh}")).await;
        let refreshed = provider.grants("refresh_token").await - before.0;
        let signed_in = provider.grants("authorization_code").await - before.1;
        let asked = user.asked().len() - asked_before;
        let expected = if refresh { (1, 0, 0) } else { (0, 1, 1) };
        assert_eq!((refreshed, signed_in, asked), expected, "refresh tokens: {refresh}: (refreshes, codes, sign-ins)");
        client.close().await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_loopback_helper_receives_the_browsers_redirect() {
    let provider = Provider::start(Config::default());
    let shop = oidc::bookshop(&provider);
    let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    // The browser: the harness's, signing in and consenting, then following the last redirect to the client's own
    // listener. What it saw comes back on `visits`: the URL it was given, where it landed, and the page there.
    let browser = Arc::new(tokio::sync::Mutex::new(provider.browser()));
    let (opened, mut visits) = tokio::sync::mpsc::unbounded_channel();
    let oauth = OAuth::loopback(port, move |url| {
        let (url, browser, opened) = (url.clone(), browser.clone(), opened.clone());
        tokio::spawn(async move {
            let visit = async {
                let landed = browser.lock().await.authorize(url.as_str()).await?.url;
                let http = reqwest::Client::builder().no_proxy().build().unwrap();
                let page = http.get(landed.clone()).send().await.map_err(|e| format!("GET {landed}: {e}"))?;
                let status = page.status().as_u16();
                Ok::<_, String>((url, landed, status, page.text().await.unwrap_or_default()))
            };
            let _ = opened.send(visit.await);
        });
    })
    .client_name("auth-client-loopback");
    let client = Client::builder().auth(oauth).http(shop.url.clone()).await.unwrap_or_else(|e| {
        panic!("sign-in failed: {e}\nbookshop:\n{}\nprovider:\n{}", shop.stderr_text(), provider.stderr_text())
    });
    let holds = client.call_tool("list_holds", json!({})).await.unwrap();
    assert!(!holds.is_error(), "{holds:?}");

    let (asked, landed, status, page) = visits.recv().await.unwrap().unwrap_or_else(|e| panic!("the browser: {e}"));
    let redirect_uri = format!("http://127.0.0.1:{port}/callback");
    assert_eq!(param(&asked, "redirect_uri").as_deref(), Some(redirect_uri.as_str()), "{asked}");
    assert!(landed.as_str().starts_with(&format!("{redirect_uri}?")), "{landed}");
    assert!(param(&landed, "code").is_some() && param(&landed, "state") == param(&asked, "state"), "{landed}");
    assert_eq!((status, page.contains("Signed in")), (200, true), "the listener's page: {page}");
    assert!(visits.try_recv().is_err(), "the browser was sent once");
    assert_eq!(provider.requests("/auth").await, 1);
    assert_eq!(provider.grants("authorization_code").await, 1);
    client.close().await;
}

/// A `tracing` writer into a shared buffer.
#[derive(Clone, Default)]
struct Captured(Arc<Mutex<Vec<u8>>>);

impl std::io::Write for Captured {
    fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(bytes);
        Ok(bytes.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// Everything the runtime (client and server) logged at trace level in this test binary from the first call on: a
/// global subscriber (a thread's own default misses events whose callsite another thread registered first).
fn logs() -> &'static Captured {
    static LOGS: std::sync::OnceLock<Captured> = std::sync::OnceLock::new();
    LOGS.get_or_init(|| {
        let captured = Captured::default();
        let writer = captured.clone();
        let subscriber = tracing_subscriber::fmt()
            .with_env_filter("mcp=trace")
            .with_writer(move || writer.clone())
            .with_ansi(false)
            .finish();
        tracing::subscriber::set_global_default(subscriber).expect("the only subscriber of this binary");
        captured
    })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn no_token_reaches_the_runtimes_logs() {
    let captured = logs();
    let provider = Provider::start(Config::default().access_token_ttl(2));
    let url = strict_server(&provider).await;
    let store = Arc::new(MemoryTokenStore::default());
    let (oauth, user) = user(&provider);
    let client = Client::builder().auth(oauth.token_store(store.clone())).http(url.clone()).await.unwrap();
    client.call_tool("hello", json!({})).await.unwrap();
    let first = store.tokens(&url).unwrap();
    outlive(&first).await;
    client.call_tool("hello", json!({})).await.unwrap(); // a refresh on the way
    let second = store.tokens(&url).unwrap();
    assert_ne!(first.access_token, second.access_token, "refreshed");
    client.close().await;

    let logs = String::from_utf8_lossy(&captured.0.lock().unwrap()).into_owned();
    // Something to look in: this test's sign-in and refresh were logged.
    let logged = |message: &str, field: &str| {
        logs.lines().any(|l| l.contains(message) && l.split_whitespace().any(|word| word == field))
    };
    assert!(logged("authorized", &format!("resource={url}")), "no sign-in in the logs:\n{logs}");
    let issuer = format!("issuer={}", provider.issuer());
    assert!(logged("refreshed the access token", &issuer), "no refresh in the logs:\n{logs}");
    let code = param(&user.landed()[0], "code").expect("a code");
    let mut secrets = vec![("the authorization code", code)];
    for (which, tokens) in [("first", &first), ("second", &second)] {
        // A JWT whole, and its signature alone (a token cut short in a log would still carry it).
        let signature = tokens.access_token.rsplit('.').next().unwrap().to_owned();
        secrets.push((which, tokens.access_token.clone()));
        secrets.push((which, signature));
        secrets.extend(tokens.refresh_token.clone().map(|t| (which, t)));
    }
    assert_eq!(secrets.len(), 7, "two access tokens, two refresh tokens");
    for (which, secret) in secrets {
        assert!(!logs.contains(&secret), "{which}: {secret} is in the logs:\n{logs}");
    }
}
