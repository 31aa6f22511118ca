//! The OAuth harness against the real provider (panva's oidc-provider, `tests/common/oidc.rs`): discovery, JWT
//! access tokens for a resource, short lifetimes, key rotation, the JWKS fetch counter, dynamic registration,
//! introspection, and the auto-approved code flow with PKCE.

use crate::common;

use std::time::{SystemTime, UNIX_EPOCH};

use common::oidc::{self, decode_jwt, Config, Pkce, Provider};
use serde_json::{json, Value};

const RESOURCE: &str = "http://127.0.0.1:8765/mcp";
const BOOKS: &str = oidc::BOOKS_SCOPES;

fn now() -> u64 {
    SystemTime::now().duration_since(UNIX_EPOCH).unwrap().as_secs()
}

fn scopes(payload: &Value) -> Vec<&str> {
    payload["scope"].as_str().unwrap_or_default().split_whitespace().collect()
}

#[tokio::test]
async fn discovery_names_the_issuer_its_jwks_and_pkce() {
    let provider = Provider::start(Config::default());
    let discovery = provider.discovery().await;
    assert_eq!(discovery["issuer"], provider.issuer());
    assert!(provider.issuer().starts_with("http://127.0.0.1:"), "{}", provider.issuer());
    assert_eq!(discovery["jwks_uri"], provider.url("/jwks"));
    assert_eq!(discovery["code_challenge_methods_supported"], json!(["S256"]));
    assert_eq!(discovery["response_types_supported"], json!(["code"]));
    assert_eq!(discovery["authorization_response_iss_parameter_supported"], true);
    for endpoint in ["token_endpoint", "registration_endpoint", "introspection_endpoint", "authorization_endpoint"] {
        assert!(discovery[endpoint].as_str().is_some_and(|e| e.starts_with(provider.issuer())), "{endpoint}");
    }
    let grants = discovery["grant_types_supported"].as_array().unwrap();
    assert!(grants.contains(&json!("client_credentials")), "{grants:?}");
    let supported = discovery["scopes_supported"].as_array().unwrap();
    assert!(supported.contains(&json!("books:admin")), "{supported:?}");
    assert_eq!(provider.requests("/.well-known/openid-configuration").await, 0, "the harness's own look");

    // RFC 8414's path too, where an MCP client looks first.
    let rfc8414 = provider.url("/.well-known/oauth-authorization-server");
    let text = reqwest::get(&rfc8414).await.unwrap().text().await.unwrap();
    let metadata: Value = serde_json::from_str(&text).unwrap();
    assert_eq!(metadata["issuer"], provider.issuer());
    assert_eq!(metadata["token_endpoint"], provider.url("/token"));
    assert_eq!(provider.requests("/.well-known/oauth-authorization-server").await, 1);
}

#[tokio::test]
async fn client_credentials_give_a_jwt_for_the_resource() {
    let provider = Provider::start(Config::default());
    let token =
        provider.client_credentials_token(oidc::SERVICE, oidc::SECRET, "books:read books:write", RESOURCE).await;
    let (header, payload) = decode_jwt(&token);
    assert_eq!(header["alg"], "RS256");
    assert_eq!(header["typ"], "at+jwt");
    assert_eq!(payload["iss"], provider.issuer());
    assert_eq!(payload["aud"], RESOURCE);
    assert_eq!(payload["client_id"], oidc::SERVICE);
    assert_eq!(scopes(&payload), ["books:read", "books:write"]);
    let exp = payload["exp"].as_u64().unwrap();
    assert!(exp > now() + 3000 && exp <= now() + 3601, "exp {exp}, now {}", now());
    let kids = provider.kids().await;
    assert!(kids.contains(&header["kid"].as_str().unwrap().to_owned()), "{} not in {kids:?}", header["kid"]);

    // Another audience, a subset of the scopes, ES256: each from the same provider.
    let other = "http://127.0.0.1:8766/other";
    let token = provider.client_credentials_token(oidc::SERVICE, oidc::SECRET, "books:read", other).await;
    let (_, payload) = decode_jwt(&token);
    assert_eq!(payload["aud"], other);
    assert_eq!(scopes(&payload), ["books:read"]);
    let token = provider.client_credentials_token(oidc::ES256_SERVICE, oidc::SECRET, "books:admin", RESOURCE).await;
    let (header, payload) = decode_jwt(&token);
    assert_eq!(header["alg"], "ES256");
    assert!(kids.contains(&header["kid"].as_str().unwrap().to_owned()));
    assert_eq!(scopes(&payload), ["books:admin"]);

    // A scope the provider does not know is dropped, not refused (one the client was not given is refused: see the
    // registration test); no scope asked, none given.
    let token =
        provider.client_credentials_token(oidc::SERVICE, oidc::SECRET, "books:delete books:read", RESOURCE).await;
    assert_eq!(scopes(&decode_jwt(&token).1), ["books:read"]);
    let token = provider.client_credentials_token(oidc::SERVICE, oidc::SECRET, "", RESOURCE).await;
    assert!(decode_jwt(&token).1.get("scope").is_none());
    // And a wrong secret.
    let (status, body) = provider
        .token_request(&[("grant_type", "client_credentials"), ("resource", RESOURCE)], Some((oidc::SERVICE, "nope")))
        .await;
    assert_eq!(status, 401, "{body}");
    assert_eq!(body["error"], "invalid_client");
}

#[tokio::test]
async fn short_lived_tokens_expire_within_their_ttl() {
    let provider = Provider::start(Config::default());
    let before = now();
    let body = provider.client_credentials(oidc::SHORT_LIVED, oidc::SECRET, "books:read", RESOURCE).await;
    assert_eq!(body["expires_in"], oidc::SHORT_TTL);
    let (_, payload) = decode_jwt(body["access_token"].as_str().unwrap());
    let exp = payload["exp"].as_u64().unwrap();
    assert!(exp >= before + oidc::SHORT_TTL && exp <= now() + oidc::SHORT_TTL, "exp {exp}, before {before}");
    assert_eq!(payload["exp"].as_u64().unwrap() - payload["iat"].as_u64().unwrap(), oidc::SHORT_TTL);

    // A lifetime for every token of a provider, and one for a resource.
    let short = "http://127.0.0.1:8767/short";
    let provider =
        Provider::start(Config::default().access_token_ttl(60).resource(short, json!({"access_token_ttl": 1})));
    let (_, payload) =
        decode_jwt(&provider.client_credentials_token(oidc::SERVICE, oidc::SECRET, BOOKS, RESOURCE).await);
    assert_eq!(payload["exp"].as_u64().unwrap() - payload["iat"].as_u64().unwrap(), 60);
    assert_eq!(scopes(&payload), ["books:read", "books:write", "books:admin"]);
    let (_, payload) = decode_jwt(&provider.client_credentials_token(oidc::SERVICE, oidc::SECRET, BOOKS, short).await);
    assert_eq!(payload["exp"].as_u64().unwrap() - payload["iat"].as_u64().unwrap(), 1);
}

#[tokio::test]
async fn rotation_changes_the_kids_and_new_tokens_use_them() {
    let provider = Provider::start(Config::default());
    let old = provider.kids().await;
    assert_eq!(old.len(), 2, "{old:?}");
    let algs: Vec<Value> = provider.jwks().await["keys"].as_array().unwrap().iter().map(|k| k["alg"].clone()).collect();
    assert_eq!(algs, [json!("RS256"), json!("ES256")]);
    let jwks = provider.jwks().await;
    assert!(jwks["keys"].as_array().unwrap().iter().all(|k| k.get("d").is_none()), "private parts published");
    let before = provider.client_credentials_token(oidc::SERVICE, oidc::SECRET, "", RESOURCE).await;

    let new = provider.rotate_keys().await;
    assert_eq!(provider.kids().await, new);
    assert!(new.iter().all(|k| !old.contains(k)), "{old:?} -> {new:?}");
    let after = provider.client_credentials_token(oidc::SERVICE, oidc::SECRET, "", RESOURCE).await;
    assert_eq!(decode_jwt(&after).0["kid"].as_str().unwrap(), new[0]);
    assert!(!new.contains(&decode_jwt(&before).0["kid"].as_str().unwrap().to_owned()));
    let es = provider.client_credentials_token(oidc::ES256_SERVICE, oidc::SECRET, "", RESOURCE).await;
    assert_eq!(decode_jwt(&es).0["kid"].as_str().unwrap(), new[1]);

    // Retaining the old keys: the new ones sign, the old ones stay published.
    let all = provider.rotate_keys_retaining_old().await;
    assert_eq!(all.len(), 4);
    assert_eq!(&all[2..], &new[..]);
    assert_eq!(provider.kids().await, all);
    let token = provider.client_credentials_token(oidc::SERVICE, oidc::SECRET, "", RESOURCE).await;
    assert_eq!(decode_jwt(&token).0["kid"].as_str().unwrap(), all[0]);

    // Clients, registered and configured, survive a rotation.
    let (status, registered) = provider.register(service_metadata()).await;
    assert_eq!(status, 201, "{registered}");
    provider.rotate_keys().await;
    let id = registered["client_id"].as_str().unwrap();
    let secret = registered["client_secret"].as_str().unwrap();
    provider.client_credentials_token(id, secret, "books:read", RESOURCE).await;
}

#[tokio::test]
async fn the_stats_count_jwks_fetches() {
    let provider = Provider::start(Config::default());
    assert_eq!(provider.stats().await, json!({"jwks_requests": 0, "requests": {}, "grants": {}}));
    provider.jwks().await; // the harness's own look does not count
    provider.discovery().await;
    provider.client_credentials_token(oidc::SERVICE, oidc::SECRET, "", RESOURCE).await;
    assert_eq!(provider.jwks_requests().await, 0);
    assert_eq!(provider.grants("client_credentials").await, 1);
    let jwks_uri = provider.discovery().await["jwks_uri"].as_str().unwrap().to_owned();
    let http = reqwest::Client::new();
    for _ in 0..3 {
        let response = http.get(&jwks_uri).send().await.unwrap();
        assert!(response.status().is_success());
    }
    assert_eq!(provider.jwks_requests().await, 3);
    provider.rotate_keys().await;
    http.get(&jwks_uri).send().await.unwrap();
    assert_eq!(provider.jwks_requests().await, 4, "the count survives a rotation");
}

fn service_metadata() -> Value {
    json!({
        "client_name": "registered service",
        "grant_types": ["client_credentials"],
        "response_types": [],
        "redirect_uris": [],
        "token_endpoint_auth_method": "client_secret_basic",
        "scope": "books:read",
    })
}

#[tokio::test]
async fn dynamic_registration_registers_clients_that_work() {
    let provider = Provider::start(Config::default());
    let (status, client) = provider.register(service_metadata()).await;
    assert_eq!(status, 201, "{client}");
    let id = client["client_id"].as_str().unwrap();
    let secret = client["client_secret"].as_str().unwrap();
    assert!(client["registration_access_token"].is_string(), "{client}");
    let token = provider.client_credentials_token(id, secret, "books:read", RESOURCE).await;
    assert_eq!(decode_jwt(&token).1["client_id"], id);
    let (status, body) = provider
        .token_request(
            &[("grant_type", "client_credentials"), ("scope", "books:write"), ("resource", RESOURCE)],
            Some((id, secret)),
        )
        .await;
    assert_eq!(status, 400, "a scope it did not register: {body}");

    // A public client of the code flow, as an MCP client registers itself, then uses.
    let (status, app) = provider
        .register(json!({
            "client_name": "registered app",
            "application_type": "native",
            "redirect_uris": ["http://127.0.0.1:33333/callback"],
            "grant_types": ["authorization_code", "refresh_token"],
            "response_types": ["code"],
            "token_endpoint_auth_method": "none",
        }))
        .await;
    assert_eq!(status, 201, "{app}");
    assert!(app.get("client_secret").is_none(), "{app}");
    let id = app["client_id"].as_str().unwrap();
    let body = provider.code_flow(id, "http://127.0.0.1:33333/callback", "books:write", RESOURCE).await;
    assert_eq!(scopes(&decode_jwt(body["access_token"].as_str().unwrap()).1), ["books:write"]);

    // What the provider refuses: a web redirect URI that is not one (RFC 7591 invalid_redirect_uri).
    let (status, body) = provider.register(json!({"redirect_uris": ["not a uri"]})).await;
    assert_eq!(status, 400, "{body}");
    assert_eq!(body["error"], "invalid_redirect_uri");
}

#[tokio::test]
async fn opaque_tokens_introspect() {
    let provider = Provider::start(Config::default());
    let token = provider.client_credentials_token(oidc::OPAQUE_SERVICE, oidc::SECRET, "books:read", RESOURCE).await;
    assert_eq!(token.split('.').count(), 1, "opaque: {token}");
    let (status, body) = provider.introspect(oidc::SERVICE, oidc::SECRET, &token).await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["active"], true, "{body}");
    assert_eq!(body["aud"], RESOURCE);
    assert_eq!(body["scope"], "books:read");
    assert_eq!(body["client_id"], oidc::OPAQUE_SERVICE);
    let (_, body) = provider.introspect(oidc::SERVICE, oidc::SECRET, "not-a-token").await;
    assert_eq!(body, json!({"active": false}));
}

#[tokio::test]
async fn the_code_flow_is_approved_and_exchanges_for_a_jwt() {
    let provider = Provider::start(Config::default());
    // Any port matches the loopback redirect URI of a native client.
    let redirect_uri = "http://127.0.0.1:40123/callback";
    let pkce = Pkce::new();
    let url = provider.authorization_url(oidc::APP, redirect_uri, "books:read books:write", RESOURCE, &pkce, "s-1");
    let redirect = provider.authorize(&url).await.unwrap();
    assert!(redirect.url.as_str().starts_with(&format!("{redirect_uri}?")), "{}", redirect.url);
    assert_eq!(redirect.param("state").as_deref(), Some("s-1"));
    assert_eq!(redirect.param("iss").as_deref(), Some(provider.issuer()));
    let code = redirect.code();

    // The code needs its verifier.
    let (status, body) = provider.exchange_code(oidc::APP, redirect_uri, &code, &Pkce::new().verifier, RESOURCE).await;
    assert_eq!(status, 400, "{body}");
    assert_eq!(body["error"], "invalid_grant");
    // That try did not spend it (oidc-provider consumes a code only when it is exchanged); a code is used once.
    let (status, body) = provider.exchange_code(oidc::APP, redirect_uri, &code, &pkce.verifier, RESOURCE).await;
    assert_eq!(status, 200, "{body}");
    let (again, _) = provider.exchange_code(oidc::APP, redirect_uri, &code, &pkce.verifier, RESOURCE).await;
    assert_eq!(again, 400, "a code exchanged twice");
    assert_eq!(body["token_type"], "Bearer");
    let (header, payload) = decode_jwt(body["access_token"].as_str().unwrap());
    assert_eq!(header["typ"], "at+jwt");
    assert!(provider.kids().await.contains(&header["kid"].as_str().unwrap().to_owned()));
    assert_eq!(payload["iss"], provider.issuer());
    assert_eq!(payload["aud"], RESOURCE);
    assert_eq!(payload["sub"], oidc::ACCOUNT);
    assert_eq!(payload["client_id"], oidc::APP);
    assert_eq!(scopes(&payload), ["books:read", "books:write"]);

    // PKCE is required: an authorization request without a challenge goes back with an error.
    let url = url.split("&code_challenge=").next().unwrap().to_owned() + "&state=s-2";
    let redirect = provider.authorize(&url).await.unwrap();
    assert_eq!(redirect.param("error").as_deref(), Some("invalid_request"), "{}", redirect.url);

    // A redirect URI the client did not register is not redirected to: the provider shows an error page.
    let other = provider.authorization_url(oidc::APP, "http://evil.example/cb", "books:read", RESOURCE, &pkce, "s");
    let page = provider.authorize(&other).await.unwrap_err();
    assert!(page.contains("400"), "{page}");

    // A token request that does not name the resource again gets a token for the one it was granted; with openid
    // in the scope, an opaque token for userinfo instead (oidc-provider's rule).
    for (scope, jwt) in [("books:read", true), ("openid books:read", false)] {
        let url = provider.authorization_url(oidc::APP, redirect_uri, scope, RESOURCE, &pkce, "s-3");
        let code = provider.authorize(&url).await.unwrap().code();
        let form = [
            ("grant_type", "authorization_code"),
            ("client_id", oidc::APP),
            ("redirect_uri", redirect_uri),
            ("code", &code),
            ("code_verifier", &pkce.verifier),
        ];
        let (status, body) = provider.token_request(&form, None).await;
        assert_eq!(status, 200, "{body}");
        let token = body["access_token"].as_str().unwrap();
        if jwt {
            assert_eq!(decode_jwt(token).1["aud"], RESOURCE, "{body}");
        } else {
            assert_eq!(token.split('.').count(), 1, "{body}");
            assert!(body["id_token"].is_string(), "{body}");
        }
    }

    // The whole flow in one call. A refresh token comes to a client allowed the grant, offline_access or not (which
    // oidc-provider drops without prompt=consent).
    let body = provider.code_flow(oidc::APP, redirect_uri, "books:admin offline_access", RESOURCE).await;
    assert_eq!(scopes(&decode_jwt(body["access_token"].as_str().unwrap()).1), ["books:admin"]);
    let refresh = body["refresh_token"].as_str().expect("a refresh token");
    let (status, body) = provider
        .token_request(
            &[
                ("grant_type", "refresh_token"),
                ("client_id", oidc::APP),
                ("refresh_token", refresh),
                ("resource", RESOURCE),
            ],
            None,
        )
        .await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(decode_jwt(body["access_token"].as_str().unwrap()).1["aud"], RESOURCE);
    // The grants counted are those granted: four codes exchanged (not the one without its verifier, nor the one
    // exchanged twice) and one refresh.
    assert_eq!(provider.grants("authorization_code").await, 4);
    assert_eq!(provider.grants("refresh_token").await, 1);
}

#[tokio::test]
async fn a_browser_keeps_its_session() {
    let provider = Provider::start(Config::default().account("alice"));
    let mut browser = provider.browser();
    let redirect_uri = "http://127.0.0.1:40124/callback";
    for state in ["one", "two"] {
        let pkce = Pkce::new();
        let url = provider.authorization_url(oidc::APP, redirect_uri, "books:read", RESOURCE, &pkce, state);
        let redirect = browser.authorize(&url).await.unwrap();
        assert_eq!(redirect.param("state").as_deref(), Some(state));
        let (status, body) =
            provider.exchange_code(oidc::APP, redirect_uri, &redirect.code(), &pkce.verifier, RESOURCE).await;
        assert_eq!(status, 200, "{body}");
        assert_eq!(decode_jwt(body["access_token"].as_str().unwrap()).1["sub"], "alice");
    }
    // The second needed no login (the session cookie), but consent again: oidc-provider asks a native client's
    // user every time (its redirect URI could be another app's).
    assert_eq!(provider.requests("/token").await, 2);
    let stats = provider.stats().await;
    let interactions = stats["requests"].as_object().unwrap().keys().filter(|p| p.starts_with("/interaction/")).count();
    let log = provider.stderr_text();
    assert_eq!(interactions, 3, "login and consent, then consent: {stats}\n{log}");
    assert_eq!(log.matches(": login (").count(), 1, "{log}");
    assert!(log.contains(": consent (native_client_prompt): approved"), "{log}");

    // A user who says no.
    let pkce = Pkce::new();
    let url = provider.authorization_url(oidc::APP, redirect_uri, "books:read", RESOURCE, &pkce, "three");
    let redirect = provider.browser().denying().authorize(&url).await.unwrap();
    assert_eq!(redirect.param("error").as_deref(), Some("access_denied"), "{}", redirect.url);
    assert_eq!(redirect.param("state").as_deref(), Some("three"));
    assert_eq!(redirect.param("code"), None);
}

#[test]
fn forged_tokens_keep_the_old_signature() {
    let token = "eyJhbGciOiJSUzI1NiJ9.eyJhdWQiOiJhIn0.c2ln";
    let forged = oidc::forge_jwt(token, |header, payload| {
        header["kid"] = json!("unknown");
        payload["aud"] = json!("b");
    });
    let (header, payload) = decode_jwt(&forged);
    assert_eq!(header, json!({"alg": "RS256", "kid": "unknown"}));
    assert_eq!(payload, json!({"aud": "b"}));
    assert!(forged.ends_with(".c2ln"));
}

#[test]
#[should_panic(expected = "client_secret is mandatory property")]
fn a_client_the_provider_refuses_fails_the_start() {
    // A client is confidential by default (client_secret_basic): one without a secret is refused.
    Provider::start(Config::new().client(json!({"client_id": "no-secret", "grant_types": ["client_credentials"]})));
}
