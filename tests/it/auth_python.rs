//! The official Python SDK (PyPI `mcp` 2.3) as an OAuth client of the bookshop served with `--auth-issuer` and
//! `--auth-resource`: its own `OAuthClientProvider` finds the authorization server from the 401, registers itself
//! dynamically at panva's oidc-provider (`tests/common/oidc.rs`), runs the authorization code flow with PKCE
//! (`tests/python/oauth_client.py` plays the user's browser), and calls the tools over Streamable HTTP in both
//! eras; a call whose tool needs a scope the token lacks is `403 insufficient_scope`, and the SDK steps up, which
//! the authorization server grants to a pre-registered client but refuses to the client the SDK registered
//! (it registers with the scope of its first authorization only).

use crate::common;

use common::http::HttpServer;
use common::oidc::{self, Config, Provider};
use serde_json::{json, Value};

const TOOLS: [&str; 5] = ["cancel_hold", "list_holds", "order_book", "rebuild_index", "search_status"];

/// What `oauth_client.py` saw, running `scenario` in `era` against `shop` as `client` (`dynamic`: registered by
/// the SDK).
async fn python(shop: &HttpServer, era: &str, scenario: &str, client: &str) -> Value {
    let args = [shop.url.clone(), era.to_owned(), scenario.to_owned(), client.to_owned()];
    let out = tokio::task::spawn_blocking(move || {
        let args: Vec<&std::ffi::OsStr> = args.iter().map(|a| a.as_ref()).collect();
        common::python::run_script("oauth_client.py", &args)
    })
    .await
    .unwrap();
    assert!(out.contains("all ok"), "{out}");
    let line = out.lines().find_map(|l| l.strip_prefix("SUMMARY ")).unwrap_or_else(|| panic!("no summary:\n{out}"));
    serde_json::from_str(line).unwrap_or_else(|e| panic!("summary is not JSON ({e}): {line}"))
}

/// The query parameters of a URL.
fn query(url: &str) -> Value {
    let url = reqwest::Url::parse(url).unwrap();
    url.query_pairs().map(|(k, v)| (k.into_owned(), Value::String(v.into_owned()))).collect()
}

fn scopes(token: &Value) -> Vec<&str> {
    token["scope"].as_str().unwrap_or_default().split_whitespace().collect()
}

/// The requests of the MCP endpoint among the exchanges, `(JSON-RPC method, status, challenge)`.
fn mcp_exchanges<'a>(summary: &'a Value, url: &str) -> Vec<(&'a str, u64, &'a str)> {
    summary["exchanges"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["url"] == url && e["method"] == "POST")
        .map(|e| {
            (
                e["rpc"].as_str().unwrap_or_default(),
                e["status"].as_u64().unwrap(),
                e["challenge"].as_str().unwrap_or_default(),
            )
        })
        .collect()
}

/// What every scenario ends with: the tools listed, `list_holds` and `order_book` answered, a JWT from the provider
/// for this resource, for the harness's user and the client the SDK registered, with `books:write`; the order's
/// hold released by the server once the call ended.
async fn assert_ordered(summary: &Value, provider: &Provider, shop: &HttpServer, era: &str) {
    assert!(summary.get("failure").is_none(), "{summary}");
    assert_eq!(summary["tools"], json!(TOOLS), "{summary}");
    assert_eq!(summary["results"]["list_holds"], json!([]), "{summary}");
    assert_eq!(summary["results"]["order_book"], "Ordered \"Dune\".", "{summary}");
    let version = if era == "legacy" { "2025-11-25" } else { era };
    assert_eq!(summary["protocol_version"], version, "{summary}");
    let token = &summary["token"];
    assert_eq!(token["iss"], provider.issuer());
    assert_eq!(token["aud"], shop.url.as_str());
    assert_eq!(token["sub"], oidc::ACCOUNT);
    assert_eq!(token["client_id"], summary["client_id"]);
    assert!(scopes(token).contains(&"books:write"), "{token}");
    // The handler ran to its end with this principal: its shielded cleanup released the hold.
    assert!(
        shop.wait_stderr("released hold on \"Dune\"", std::time::Duration::from_secs(5)).await,
        "{}",
        shop.stderr_text()
    );
}

/// The first request's 401 names every scope the bookshop's handlers need (the connection's own request needs none,
/// and the bookshop sets no initial scopes), so the SDK asks for them (and `offline_access`, which the provider
/// supports): one authorization, and `order_book` needs no step-up.
async fn upfront(era: &str) {
    let provider = Provider::start(Config::default());
    let shop = oidc::bookshop(&provider);
    let summary = python(&shop, era, "upfront", "dynamic").await;
    assert_ordered(&summary, &provider, &shop, era).await;
    assert_eq!(summary["registrations"], 1, "one dynamic registration: {summary}");
    assert_eq!(summary["authorizations"], 1, "{summary}");
    let authorization = query(summary["authorization_urls"][0].as_str().unwrap());
    assert_eq!(authorization["resource"], shop.url.as_str(), "RFC 8707: {authorization}");
    assert_eq!(authorization["scope"], "books:admin books:write offline_access", "{authorization}");
    assert_eq!(authorization["code_challenge_method"], "S256", "{authorization}");
    assert_eq!(authorization["client_id"], summary["client_id"], "{authorization}");
    let mut token_scopes = scopes(&summary["token"]);
    token_scopes.sort();
    assert_eq!(token_scopes, ["books:admin", "books:write"], "{summary}");
    // The SDK's first request, unauthenticated, met the challenge; after the flow it was sent again.
    let metadata = shop.url.replace("/mcp", "/.well-known/oauth-protected-resource/mcp");
    let exchanges = mcp_exchanges(&summary, &shop.url);
    let first = if era == "legacy" { "initialize" } else { "tools/list" };
    // The bookshop offers DPoP beside Bearer (tests/it/auth_dpop.rs); this SDK signs in with a bearer token.
    let scope = "scope=\"books:admin books:write\"";
    let challenge = format!(
        "Bearer resource_metadata=\"{metadata}\", {scope}, DPoP resource_metadata=\"{metadata}\", {scope}, {DPOP_ALGS}"
    );
    assert_eq!(exchanges[0], (first, 401, challenge.as_str()), "{summary}");
    assert_eq!(exchanges[1], (first, 200, ""), "{summary}");
    assert!(exchanges.iter().all(|e| e.1 < 400 || e == &exchanges[0]), "one challenge only: {exchanges:?}");
}

/// The `algs` of the bookshop's `DPoP` challenge.
const DPOP_ALGS: &str = "algs=\"ES256 ES384 RS256 RS384 RS512 PS256 PS384 PS512 EdDSA\"";

/// The first request is a call of `rebuild_index`, whose 401 names `books:admin`: the first token has that scope
/// only (the provider grants every scope the client asks for).
fn assert_first_authorization_for_books_admin(summary: &Value, shop: &HttpServer) {
    assert_eq!(summary["results"]["rebuild_index"], "Indexed 0 books.", "{summary}");
    assert_eq!(scopes(&summary["first_token"]), ["books:admin"], "{summary}");
    let first = query(summary["authorization_urls"][0].as_str().unwrap());
    assert_eq!(first["scope"], "books:admin offline_access", "{first}");
    let metadata = shop.url.replace("/mcp", "/.well-known/oauth-protected-resource/mcp");
    let exchanges = mcp_exchanges(summary, &shop.url);
    assert_eq!(
        exchanges[0],
        (
            "tools/call",
            401,
            format!(
                "Bearer resource_metadata=\"{metadata}\", scope=\"books:admin\", DPoP resource_metadata=\"{metadata}\", \
                 scope=\"books:admin\", {DPOP_ALGS}"
            )
            .as_str()
        ),
        "{summary}"
    );
}

/// `order_book` with the first token is `403 insufficient_scope` naming `books:write`, and the SDK authorizes
/// again for the union of the scopes (SEP-2350), with the client it has.
fn assert_stepped_up_on_403(summary: &Value, shop: &HttpServer) {
    assert_eq!(summary["authorizations"], 2, "{summary}");
    let second = query(summary["authorization_urls"][1].as_str().unwrap());
    // In the order of the union: the earlier request's scopes first, on one connection; after a restart, the
    // scopes the stored token was granted, then the challenge's (with `offline_access`).
    let mut asked = second["scope"].as_str().unwrap().split(' ').collect::<Vec<_>>();
    asked.sort();
    assert_eq!(asked, ["books:admin", "books:write", "offline_access"], "{second}");
    assert_eq!(second["resource"], shop.url.as_str(), "{second}");
    assert_eq!(second["client_id"], summary["client_id"], "{second}");
    let metadata = shop.url.replace("/mcp", "/.well-known/oauth-protected-resource/mcp");
    let exchanges = mcp_exchanges(summary, &shop.url);
    let refused: Vec<_> = exchanges.iter().filter(|e| e.1 == 403).collect();
    assert_eq!(refused.len(), 1, "{exchanges:?}");
    assert_eq!(refused[0].0, "tools/call");
    assert!(refused[0].2.contains("error=\"insufficient_scope\""), "{}", refused[0].2);
    assert!(refused[0].2.contains("scope=\"books:write\""), "{}", refused[0].2);
    assert!(refused[0].2.contains(&format!("resource_metadata=\"{metadata}\"")), "{}", refused[0].2);
}

/// With the pre-registered public client `APP` (which may ask for any scope), the step-up is granted, and the
/// call retried with the new token succeeds; in the 2025 era on a session opened with the first token.
async fn step_up(era: &str) {
    let provider = Provider::start(Config::default());
    let shop = oidc::bookshop(&provider);
    let summary = python(&shop, era, "stepup", oidc::APP).await;
    assert_ordered(&summary, &provider, &shop, era).await;
    assert_eq!(summary["client_id"], oidc::APP);
    assert_eq!(summary["registrations"], 0, "{summary}");
    assert_first_authorization_for_books_admin(&summary, &shop);
    assert_stepped_up_on_403(&summary, &shop);
    let mut token_scopes = scopes(&summary["token"]);
    token_scopes.sort();
    assert_eq!(token_scopes, ["books:admin", "books:write"], "{summary}");
    let exchanges = mcp_exchanges(&summary, &shop.url);
    let after = exchanges.iter().skip_while(|e| e.1 != 403).nth(1);
    assert_eq!(after.map(|e| (e.0, e.1)), Some(("tools/call", 200)), "the call retried: {exchanges:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn python_oauth_client_authorizes_up_front_and_orders_in_the_2025_era() {
    upfront("legacy").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn python_oauth_client_authorizes_up_front_and_orders_in_the_2026_era() {
    upfront("2026-07-28").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn python_oauth_client_steps_up_on_403_insufficient_scope_in_the_2025_era() {
    step_up("legacy").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn python_oauth_client_steps_up_on_403_insufficient_scope_in_the_2026_era() {
    step_up("2026-07-28").await;
}

/// The SDK registers its client with the scope of its first authorization (RFC 7591 `scope`: what the client may
/// ask for), so the provider refuses the step-up's wider scope with `invalid_scope`: a dynamically registered
/// Python client cannot step up at oidc-provider, which enforces the registered scope. The server's side is as it
/// should be (the 403 and its challenge); the era does not matter (the refusal is the authorization server's).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn python_oauth_clients_dynamic_registration_holds_its_first_scope_so_its_step_up_is_refused() {
    let provider = Provider::start(Config::default());
    let shop = oidc::bookshop(&provider);
    let summary = python(&shop, "2026-07-28", "stepup", "dynamic").await;
    assert_eq!(summary["registrations"], 1, "{summary}");
    assert_eq!(summary["registered_scope"], "books:admin offline_access", "{summary}");
    assert_first_authorization_for_books_admin(&summary, &shop);
    assert_stepped_up_on_403(&summary, &shop);
    assert_eq!(summary["refusals"][0]["error"], "invalid_scope", "{summary}");
    assert_eq!(summary["refusals"][0]["scope"], "books:write", "{summary}");
    let failure = summary["failure"][0].as_str().unwrap_or_default();
    assert!(failure.contains("error=invalid_scope"), "{summary}");
    assert!(summary["results"].get("order_book").is_none(), "{summary}");
    assert_eq!(scopes(&summary["token"]), ["books:admin"], "the first token is all it has: {summary}");
}
