//! The server as an OAuth 2.1 resource server, against a real authorization server (panva's oidc-provider, started
//! on loopback by `tests/common/oidc.rs`): the Protected Resource Metadata, 401 and 403 challenges in both eras and
//! both HTTP modes, JWT verification (expired, another audience, another issuer, a tampered signature, `alg: none`,
//! HMAC signed with the public key, an unknown `kid`, a flood of them, a rotated key), introspection of opaque
//! tokens, sessions bound to their principal, and what handlers see of the caller. The bookshop example with
//! `--auth-issuer` and `--auth-resource` is tested in `bookshop_with_auth_*`.

use crate::auth_tools;
use crate::common;

use std::time::Duration;

use auth_tools::{order, whoami};
use common::http::{v2026_headers, Body};
use common::oidc::{self, forge_jwt, Config, Provider};
use mcp::auth::{Authorization, Introspection};
use serde_json::{json, Value};

/// Rebuild everything.
#[mcp::tool(scopes = ["books:admin", "books:write"])]
fn rebuild() -> String {
    "rebuilt".into()
}

/// A server of these tools with `auth` on a free loopback port; its endpoint's URL, which is also the resource.
async fn serve(auth: impl FnOnce(String) -> Authorization, stateless: bool) -> String {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/mcp", listener.local_addr().unwrap());
    let server = mcp::Server::builder()
        .tool::<whoami>()
        .tool::<order>()
        .tool::<rebuild>()
        .authorization(auth(url.clone()))
        .build()
        .unwrap();
    tokio::spawn(server.serve_http_on(listener, mcp::HttpOptions::new().stateless(stateless)));
    url
}

/// JWTs from `provider` for the resource at `url`, with no leeway and a short cooldown, so expiry and rotation
/// show within a test.
fn jwt(provider: &Provider) -> impl FnOnce(String) -> Authorization + '_ {
    move |url| Authorization::jwt(provider.issuer(), url).leeway(Duration::ZERO).jwks_cooldown(Duration::from_secs(1))
}

fn http() -> reqwest::Client {
    reqwest::Client::builder().timeout(Duration::from_secs(20)).build().unwrap()
}

/// A 2025-11-25 POST with `token`, in `session` if any.
async fn post(url: &str, token: Option<&str>, session: Option<&str>, body: &Value) -> reqwest::Response {
    let mut request = http()
        .post(url)
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream")
        .header("mcp-protocol-version", "2025-11-25")
        .body(body.to_string());
    if let Some(token) = token {
        request = request.bearer_auth(token);
    }
    if let Some(session) = session {
        request = request.header("mcp-session-id", session);
    }
    request.send().await.unwrap()
}

/// A 2026-07-28 POST with `token`.
async fn v2026_post(url: &str, token: Option<&str>, body: &Value) -> reqwest::Response {
    let mut request = http().post(url).body(body.to_string());
    for (name, value) in v2026_headers(body) {
        request = request.header(name, value);
    }
    if let Some(token) = token {
        request = request.bearer_auth(token);
    }
    request.send().await.unwrap()
}

fn initialize() -> Value {
    json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "auth-tests", "version": "0"}}})
}

fn call(id: i64, tool: &str, arguments: Value) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": {"name": tool, "arguments": arguments}})
}

/// A 2026 `tools/call`, with the `_meta` every 2026 request carries.
fn v2026_call(id: i64, tool: &str, arguments: Value) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": {"name": tool, "arguments": arguments,
        "_meta": {"io.modelcontextprotocol/protocolVersion": "2026-07-28",
                  "io.modelcontextprotocol/clientInfo": {"name": "auth-tests", "version": "0"},
                  "io.modelcontextprotocol/clientCapabilities": {}}}})
}

/// A 2026 `tools/list` (it needs no scope).
fn v2026_list() -> Value {
    json!({"jsonrpc": "2.0", "id": 2, "method": "tools/list", "params": {
        "_meta": {"io.modelcontextprotocol/protocolVersion": "2026-07-28",
                  "io.modelcontextprotocol/clientInfo": {"name": "auth-tests", "version": "0"},
                  "io.modelcontextprotocol/clientCapabilities": {}}}})
}

/// Opens a 2025 session with `token`; its id.
async fn open_session(url: &str, token: &str) -> String {
    let response = post(url, Some(token), None, &initialize()).await;
    assert_eq!(response.status(), 200, "{:?}", response.text().await);
    let session = response.headers()["mcp-session-id"].to_str().unwrap().to_owned();
    Body::of(response).await.response(&json!(0), "initialize").await;
    let initialized = json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
    assert_eq!(post(url, Some(token), Some(&session), &initialized).await.status(), 202);
    session
}

/// The answer to a request with this id in a 200 response (JSON or SSE).
async fn answer(response: reqwest::Response, id: i64) -> Value {
    assert_eq!(response.status(), 200);
    Body::of(response).await.response(&json!(id), "request").await
}

fn challenge(response: &reqwest::Response) -> String {
    response.headers().get("www-authenticate").map(|v| v.to_str().unwrap().to_owned()).unwrap_or_default()
}

fn text_of(answer: &Value) -> String {
    answer["result"]["content"][0]["text"].as_str().unwrap_or_default().to_owned()
}

async fn token(provider: &Provider, scope: &str, resource: &str) -> String {
    provider.client_credentials_token(oidc::SERVICE, oidc::SECRET, scope, resource).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_protected_resource_metadata_names_the_resource_its_issuer_and_every_scope() {
    let provider = Provider::start(Config::default());
    let url = serve(jwt(&provider), false).await;
    let origin = url.trim_end_matches("/mcp");
    for path in ["/.well-known/oauth-protected-resource/mcp", "/.well-known/oauth-protected-resource"] {
        let response = http().get(format!("{origin}{path}")).send().await.unwrap();
        assert_eq!(response.status(), 200, "{path}");
        let metadata: Value = serde_json::from_str(&response.text().await.unwrap()).unwrap();
        assert_eq!(metadata["resource"], url.as_str());
        assert_eq!(metadata["authorization_servers"], json!([provider.issuer()]));
        assert_eq!(metadata["scopes_supported"], json!(["books:admin", "books:write"]));
        assert_eq!(metadata["bearer_methods_supported"], json!(["header"]));
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_request_without_a_token_is_401_with_a_challenge_naming_the_metadata_in_both_eras_and_modes() {
    let provider = Provider::start(Config::default());
    for stateless in [false, true] {
        let url = serve(jwt(&provider), stateless).await;
        let metadata = url.replace("/mcp", "/.well-known/oauth-protected-resource/mcp");
        let response = post(&url, None, None, &initialize()).await;
        assert_eq!(response.status(), 401);
        // Both schemes are offered: bearer tokens, and DPoP-bound ones with their proofs (tests/it/auth_dpop.rs). A
        // request that needs no scope names every scope the server's handlers need (no initial scopes are set).
        let algs = "ES256 ES384 RS256 RS384 RS512 PS256 PS384 PS512 EdDSA";
        let scope = "scope=\"books:admin books:write\"";
        assert_eq!(
            challenge(&response),
            format!(
                "Bearer resource_metadata=\"{metadata}\", {scope}, DPoP resource_metadata=\"{metadata}\", {scope}, \
                 algs=\"{algs}\""
            )
        );
        // The same in the 2026 era, for a list.
        let response = v2026_post(&url, None, &v2026_list()).await;
        assert_eq!(response.status(), 401);
        assert!(challenge(&response).contains(scope), "{}", challenge(&response));
        // The challenge of a call names the scopes its tool needs.
        let response = post(&url, None, None, &call(1, "order", json!({"title": "Dune"}))).await;
        assert_eq!(response.status(), 401);
        assert!(challenge(&response).contains("scope=\"books:write\""), "{}", challenge(&response));
        let response = v2026_post(&url, None, &v2026_call(1, "rebuild", json!({}))).await;
        assert_eq!(response.status(), 401);
        assert!(challenge(&response).contains("scope=\"books:admin books:write\""), "{}", challenge(&response));
        let body: Value = serde_json::from_str(&response.text().await.unwrap()).unwrap();
        assert!(body["error"]["message"].as_str().unwrap().contains("access token"), "{body}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn initial_scopes_are_what_a_401_asks_for_when_the_request_needs_none() {
    let provider = Provider::start(Config::default());
    let url = serve(|url| jwt(&provider)(url).initial_scopes(["books:read"]), false).await;
    let response = post(&url, None, None, &initialize()).await;
    assert_eq!(response.status(), 401);
    assert!(challenge(&response).contains("scope=\"books:read\""), "{}", challenge(&response));
    // A call that needs more names what it needs.
    let response = post(&url, None, None, &call(1, "order", json!({"title": "Dune"}))).await;
    assert!(challenge(&response).contains("scope=\"books:write\""), "{}", challenge(&response));
    let metadata = http().get(url.replace("/mcp", "/.well-known/oauth-protected-resource/mcp")).send().await.unwrap();
    let metadata: Value = serde_json::from_str(&metadata.text().await.unwrap()).unwrap();
    assert_eq!(metadata["scopes_supported"], json!(["books:admin", "books:read", "books:write"]));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_valid_token_reaches_the_handler_as_its_principal_and_never_as_a_header() {
    let provider = Provider::start(Config::default());
    for stateless in [false, true] {
        let url = serve(jwt(&provider), stateless).await;
        let token = token(&provider, "books:read", &url).await;
        let whoami: Value = if stateless {
            let response = post(&url, Some(&token), None, &call(1, "whoami", json!({}))).await;
            serde_json::from_str(&text_of(&answer(response, 1).await)).unwrap()
        } else {
            let session = open_session(&url, &token).await;
            let response = post(&url, Some(&token), Some(&session), &call(1, "whoami", json!({}))).await;
            serde_json::from_str(&text_of(&answer(response, 1).await)).unwrap()
        };
        assert_eq!(whoami["subject"], oidc::SERVICE);
        assert_eq!(whoami["client_id"], oidc::SERVICE);
        assert_eq!(whoami["issuer"], provider.issuer());
        assert_eq!(whoami["scopes"], json!(["books:read"]));
        assert_eq!(whoami["sees_authorization_header"], false);
        // The 2026 era, the same.
        let response = v2026_post(&url, Some(&token), &v2026_call(2, "whoami", json!({}))).await;
        let whoami: Value = serde_json::from_str(&text_of(&answer(response, 2).await)).unwrap();
        assert_eq!(
            (whoami["subject"].as_str(), whoami["sees_authorization_header"].as_bool()),
            (Some(oidc::SERVICE), Some(false))
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_token_without_the_tools_scope_is_403_insufficient_scope_and_a_stepped_up_token_continues_the_session() {
    let provider = Provider::start(Config::default());
    let url = serve(jwt(&provider), false).await;
    let reader = token(&provider, "books:read", &url).await;
    let session = open_session(&url, &reader).await;
    let response = post(&url, Some(&reader), Some(&session), &call(1, "rebuild", json!({}))).await;
    assert_eq!(response.status(), 403);
    let challenge = challenge(&response);
    assert!(challenge.contains("error=\"insufficient_scope\""), "{challenge}");
    assert!(challenge.contains("scope=\"books:admin books:write\""), "every scope the tool needs: {challenge}");
    assert!(challenge.contains("resource_metadata=\""), "{challenge}");
    // Step up: a new token of the same client with the scopes; the session goes on.
    let writer = token(&provider, "books:read books:write books:admin", &url).await;
    let response = post(&url, Some(&writer), Some(&session), &call(2, "rebuild", json!({}))).await;
    assert_eq!(text_of(&answer(response, 2).await), "rebuilt");
    // 2026: the same refusal.
    let response = v2026_post(&url, Some(&reader), &v2026_call(3, "order", json!({"title": "Emma"}))).await;
    assert_eq!(response.status(), 403);
    let response = v2026_post(&url, Some(&writer), &v2026_call(4, "order", json!({"title": "Emma"}))).await;
    assert_eq!(text_of(&answer(response, 4).await), "ordered Emma");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_tokens_are_401_invalid_token() {
    let provider = Provider::start(Config::default());
    let stranger = Provider::start(Config::default());
    let url = serve(jwt(&provider), true).await;
    let good = token(&provider, "books:read", &url).await;
    let (header, _) = oidc::decode_jwt(&good);
    let mut bad: Vec<(&str, String)> = vec![
        ("another audience", token(&provider, "books:read", "https://elsewhere.example/mcp").await),
        ("another issuer", token(&stranger, "books:read", &url).await),
        ("a tampered payload", forge_jwt(&good, |_, payload| payload["scope"] = json!("books:admin"))),
        ("alg none", {
            let forged = forge_jwt(&good, |header, _| *header = json!({"alg": "none", "typ": "at+jwt"}));
            format!("{}.", forged.rsplit_once('.').unwrap().0)
        }),
        ("not a JWT", "opaque-garbage".into()),
    ];
    // HMAC signed with the issuer's public key as the secret: the classic confusion.
    let jwks = provider.jwks().await;
    let rsa = jwks["keys"].as_array().unwrap().iter().find(|k| k["kty"] == "RSA").unwrap();
    let mut hs = jsonwebtoken::Header::new(jsonwebtoken::Algorithm::HS256);
    hs.kid = header["kid"].as_str().map(str::to_owned);
    let (_, claims) = oidc::decode_jwt(&good);
    let secret = serde_json::to_vec(rsa).unwrap();
    bad.push((
        "HS256 with the public key",
        jsonwebtoken::encode(&hs, &claims, &jsonwebtoken::EncodingKey::from_secret(&secret)).unwrap(),
    ));
    for (what, token) in &bad {
        let response = post(&url, Some(token), None, &call(1, "whoami", json!({}))).await;
        assert_eq!(response.status(), 401, "{what}");
        let challenge = challenge(&response);
        assert!(challenge.contains("error=\"invalid_token\""), "{what}: {challenge}");
    }
    // Expired: a 2 s token, after 3 s (no leeway on this server).
    let short = provider.client_credentials_token(oidc::SHORT_LIVED, oidc::SECRET, "books:read", &url).await;
    let response = post(&url, Some(&short), None, &call(1, "whoami", json!({}))).await;
    assert_eq!(response.status(), 200, "fresh");
    tokio::time::sleep(Duration::from_millis(3200)).await;
    let response = post(&url, Some(&short), None, &call(2, "whoami", json!({}))).await;
    assert_eq!(response.status(), 401);
    assert!(challenge(&response).contains("expired"), "{}", challenge(&response));
    // A token in the query string, or another scheme, is refused too.
    let response = http()
        .post(format!("{url}?access_token={good}"))
        .body(call(3, "whoami", json!({})).to_string())
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 401);
    let response = http()
        .post(&url)
        .header("authorization", "Basic dXNlcjpwYXNz")
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream")
        .body(call(3, "whoami", json!({})).to_string())
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 401);
    assert!(challenge(&response).contains("invalid_request"), "{}", challenge(&response));
    // And the good one still works.
    let response = post(&url, Some(&good), None, &call(4, "whoami", json!({}))).await;
    assert_eq!(response.status(), 200);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_unknown_kid_fetches_the_keys_once_per_cooldown_and_a_rotated_key_is_accepted() {
    let provider = Provider::start(Config::default());
    let url = serve(jwt(&provider), true).await;
    let good = token(&provider, "books:read", &url).await;
    assert_eq!(post(&url, Some(&good), None, &call(1, "whoami", json!({}))).await.status(), 200);
    let fetched = provider.jwks_requests().await;
    assert_eq!(fetched, 1, "the keys are fetched once for the first token");
    // A flood of tokens naming keys the issuer does not publish: one fetch in the cooldown, however many.
    let mut flood = Vec::new();
    for i in 0..40 {
        let forged = forge_jwt(&good, |header, _| header["kid"] = json!(format!("made-up-{i}")));
        let url = url.clone();
        flood.push(tokio::spawn(async move {
            post(&url, Some(&forged), None, &call(1, "whoami", json!({}))).await.status()
        }));
    }
    for status in flood {
        assert_eq!(status.await.unwrap(), 401);
    }
    let after_flood = provider.jwks_requests().await;
    assert!(after_flood <= fetched + 1, "the flood fetched the keys {} times", after_flood - fetched);
    // The issuer rotates its keys; after the cooldown, a token signed with the new key is accepted.
    provider.rotate_keys().await;
    tokio::time::sleep(Duration::from_millis(1100)).await;
    let rotated = token(&provider, "books:read", &url).await;
    assert_ne!(oidc::decode_jwt(&rotated).0["kid"], oidc::decode_jwt(&good).0["kid"]);
    assert_eq!(post(&url, Some(&rotated), None, &call(2, "whoami", json!({}))).await.status(), 200);
    // The old key is gone from the key set now: its tokens are refused.
    assert_eq!(post(&url, Some(&good), None, &call(3, "whoami", json!({}))).await.status(), 401);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_session_is_bound_to_its_principal_for_post_get_and_delete() {
    let provider = Provider::start(Config::default());
    let url = serve(jwt(&provider), false).await;
    let ada = token(&provider, "books:read", &url).await;
    let other = provider.client_credentials_token(oidc::ES256_SERVICE, oidc::SECRET, "books:read", &url).await;
    assert_eq!(oidc::decode_jwt(&other).0["alg"], "ES256", "an ECDSA token verifies too");
    let session = open_session(&url, &ada).await;
    let response = post(&url, Some(&other), Some(&session), &call(1, "whoami", json!({}))).await;
    assert_eq!(response.status(), 403, "another principal's token on this session");
    let get = |token: Option<String>| {
        let (url, session) = (url.clone(), session.clone());
        async move {
            let mut request = http()
                .get(&url)
                .header("accept", "text/event-stream")
                .header("mcp-protocol-version", "2025-11-25")
                .header("mcp-session-id", &session);
            if let Some(token) = token {
                request = request.bearer_auth(token);
            }
            request.send().await.unwrap().status()
        }
    };
    assert_eq!(get(None).await, 401);
    assert_eq!(get(Some(other.clone())).await, 403);
    assert_eq!(get(Some(ada.clone())).await, 200);
    let delete = |token: Option<&str>| {
        let mut request =
            http().delete(&url).header("mcp-protocol-version", "2025-11-25").header("mcp-session-id", &session);
        if let Some(token) = token {
            request = request.bearer_auth(token);
        }
        request.send()
    };
    assert_eq!(delete(None).await.unwrap().status(), 401);
    assert_eq!(delete(Some(&other)).await.unwrap().status(), 403);
    assert_eq!(delete(Some(&ada)).await.unwrap().status(), 200);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn opaque_tokens_are_introspected() {
    let provider = Provider::start(Config::default());
    let introspection = provider.discovery().await["introspection_endpoint"].as_str().unwrap().to_owned();
    let url = serve(
        |url| {
            Authorization::new(url).authorization_server(provider.issuer()).introspection(Introspection::new(
                introspection,
                oidc::OPAQUE_SERVICE,
                oidc::SECRET,
            ))
        },
        true,
    )
    .await;
    let opaque =
        provider.client_credentials_token(oidc::OPAQUE_SERVICE, oidc::SECRET, "books:read books:write", &url).await;
    assert_ne!(opaque.split('.').count(), 3, "an opaque token");
    let response = post(&url, Some(&opaque), None, &call(1, "order", json!({"title": "Dune"}))).await;
    assert_eq!(text_of(&answer(response, 1).await), "ordered Dune");
    let response = post(&url, Some("not-a-token-the-issuer-made"), None, &call(2, "whoami", json!({}))).await;
    assert_eq!(response.status(), 401);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn lists_can_hide_what_the_callers_scopes_cannot_use() {
    let provider = Provider::start(Config::default());
    let url = serve(|url| jwt(&provider)(url).hide_unauthorized(true), true).await;
    let names = |answer: Value| -> Vec<String> {
        answer["result"]["tools"].as_array().unwrap().iter().map(|t| t["name"].as_str().unwrap().to_owned()).collect()
    };
    let list = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list"});
    let reader = token(&provider, "books:read", &url).await;
    assert_eq!(names(answer(post(&url, Some(&reader), None, &list).await, 1).await), ["whoami"]);
    let writer = token(&provider, "books:write", &url).await;
    assert_eq!(names(answer(post(&url, Some(&writer), None, &list).await, 1).await), ["order", "whoami"]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_visibility_rule_by_scope_hides_a_tool_from_lists_and_calls() {
    let provider = Provider::start(Config::default());
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/mcp", listener.local_addr().unwrap());
    let server = mcp::Server::builder()
        .tool::<whoami>()
        .tool::<order>()
        .authorization(jwt(&provider)(url.clone()))
        .visible(|caller: &mcp::visibility::Caller, item: &mcp::visibility::Item| {
            item.name() != "order" || caller.has_scope("books:write")
        })
        .build()
        .unwrap();
    tokio::spawn(server.serve_http_on(listener, mcp::HttpOptions::new().stateless(true)));
    let names = |answer: Value| -> Vec<String> {
        answer["result"]["tools"].as_array().unwrap().iter().map(|t| t["name"].as_str().unwrap().to_owned()).collect()
    };
    let list = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list"});
    let reader = token(&provider, "books:read", &url).await;
    assert_eq!(names(answer(post(&url, Some(&reader), None, &list).await, 1).await), ["whoami"]);
    // Hidden: the unknown-tool error, not a 403 that would tell the caller it exists.
    let hidden = post(&url, Some(&reader), None, &call(2, "order", json!({"title": "Dune"}))).await;
    let hidden = answer(hidden, 2).await;
    assert_eq!(hidden["error"]["code"], -32602, "{hidden}");
    assert!(hidden["error"]["message"].as_str().unwrap().contains("unknown tool"), "{hidden}");
    // The same in the 2026 era: the error as that era answers it (400 for -32602).
    let hidden = v2026_post(&url, Some(&reader), &v2026_call(4, "order", json!({"title": "Dune"}))).await;
    assert_eq!(hidden.status(), 400);
    let hidden: Value = serde_json::from_str(&hidden.text().await.unwrap()).unwrap();
    assert!(hidden["error"]["message"].as_str().unwrap().contains("unknown tool"), "{hidden}");
    let writer = token(&provider, "books:read books:write", &url).await;
    assert_eq!(names(answer(post(&url, Some(&writer), None, &list).await, 1).await), ["order", "whoami"]);
    let ordered = answer(post(&url, Some(&writer), None, &call(3, "order", json!({"title": "Dune"}))).await, 3).await;
    assert!(ordered.get("result").is_some(), "{ordered}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_session_whose_token_gains_scopes_is_told_its_lists_changed() {
    let provider = Provider::start(Config::default());
    let url = serve(|url| jwt(&provider)(url).hide_unauthorized(true), false).await;
    let reader = token(&provider, "books:read", &url).await;
    let session = open_session(&url, &reader).await;
    let stream = http()
        .get(&url)
        .header("accept", "text/event-stream")
        .header("mcp-protocol-version", "2025-11-25")
        .header("mcp-session-id", &session)
        .bearer_auth(&reader)
        .send()
        .await
        .unwrap();
    assert_eq!(stream.status(), 200);
    let mut stream = Body::of(stream).await;
    // The next message on the stream (its priming event, with no data, is not one).
    async fn message(stream: &mut Body, within: Duration) -> Option<Value> {
        loop {
            let event = stream.next_event(within).await?;
            if !event.data.is_empty() {
                return Some(serde_json::from_str(&event.data).unwrap());
            }
        }
    }
    let list = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list"});
    let same = answer(post(&url, Some(&reader), Some(&session), &list).await, 1).await;
    assert_eq!(same["result"]["tools"].as_array().unwrap().len(), 1, "{same}");
    assert_eq!(message(&mut stream, Duration::from_millis(300)).await, None, "the same scopes change nothing");
    // A step-up: the next request's token grants more, and the session's client hears its lists changed.
    let writer = token(&provider, "books:read books:write", &url).await;
    let more = answer(post(&url, Some(&writer), Some(&session), &list).await, 1).await;
    assert_eq!(more["result"]["tools"].as_array().unwrap().len(), 2, "{more}");
    let heard = message(&mut stream, Duration::from_secs(5)).await.expect("list_changed on the standalone stream");
    assert_eq!(heard["method"], "notifications/tools/list_changed", "{heard}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_issuer_that_cannot_be_reached_is_503_not_401() {
    let url = serve(|url| Authorization::jwt("http://127.0.0.1:9", url), true).await;
    let provider = Provider::start(Config::default());
    let token = token(&provider, "books:read", &url).await;
    let forged = forge_jwt(&token, |_, payload| payload["iss"] = json!("http://127.0.0.1:9"));
    let response = post(&url, Some(&forged), None, &call(1, "whoami", json!({}))).await;
    assert_eq!(response.status(), 503);
    assert!(response.headers().contains_key("retry-after"));
}

#[test]
fn an_authorization_that_cannot_be_enforced_is_refused_at_build() {
    let build = |auth: Authorization| mcp::Server::builder().tool::<whoami>().authorization(auth).build();
    let err = build(Authorization::jwt("http://login.example.com", "https://books.example.com/mcp")).unwrap_err();
    assert!(err.to_string().contains("https"), "{err}");
    let err = build(Authorization::new("https://books.example.com/mcp")).unwrap_err();
    assert!(err.to_string().contains("issuer"), "{err}");
    let err = build(Authorization::jwt("https://login.example.com", "books.example.com")).unwrap_err();
    assert!(err.to_string().contains("absolute"), "{err}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bookshop_with_auth_needs_books_write_to_order_and_books_admin_to_rebuild() {
    let provider = Provider::start(Config::default());
    let shop = oidc::bookshop(&provider);
    let url = shop.url.clone();
    let metadata = http().get(url.replace("/mcp", "/.well-known/oauth-protected-resource/mcp")).send().await.unwrap();
    let metadata: Value = serde_json::from_str(&metadata.text().await.unwrap()).unwrap();
    assert_eq!(metadata["scopes_supported"], json!(["books:admin", "books:write"]));
    assert_eq!(post(&url, None, None, &initialize()).await.status(), 401);
    let reader = token(&provider, "books:read", &url).await;
    let session = open_session(&url, &reader).await;
    let response = post(&url, Some(&reader), Some(&session), &call(1, "list_holds", json!({}))).await;
    assert_ne!(answer(response, 1).await["result"]["isError"], true);
    for (tool, scope) in
        [("order_book", "books:write"), ("cancel_hold", "books:write"), ("rebuild_index", "books:admin")]
    {
        let response =
            post(&url, Some(&reader), Some(&session), &call(2, tool, json!({"title": "Dune", "titles": []}))).await;
        assert_eq!(response.status(), 403, "{tool}");
        assert!(challenge(&response).contains(&format!("scope=\"{scope}\"")), "{tool}: {}", challenge(&response));
    }
    let admin = token(&provider, "books:read books:admin", &url).await;
    let response = post(&url, Some(&admin), Some(&session), &call(3, "rebuild_index", json!({"titles": []}))).await;
    assert_eq!(response.status(), 200, "{}", shop.stderr_text());
    // The 2026 era on the same endpoint.
    assert_eq!(v2026_post(&url, None, &v2026_call(4, "list_holds", json!({}))).await.status(), 401);
    let response = v2026_post(&url, Some(&reader), &v2026_call(5, "list_holds", json!({}))).await;
    assert_ne!(answer(response, 5).await["result"]["isError"], true);
    drop(shop);
}
