//! The cost of authorization per call: `JwtVerifier::verify` on an RS256 access token, the first time a token is
//! seen (its signature checked against the issuer's cached keys) and again (the verified-token cache: a lookup by
//! the token), against no verification at all. The issuer is an in-process axum app serving RFC 8414
//! metadata and a JWKS with one RSA-2048 key (generated for this benchmark; its private half below signs the
//! tokens): what is measured is the resource server's side only.
//!
//! Then the same per call over Streamable HTTP: one client making sequential 2026-07-28 `tools/call`s (one POST
//! each) to the same server with and without authorization (the token verified once, then from the cache), in
//! alternating rounds, the servers on a thread of their own: the difference in that thread's CPU time per call is what
//! authorization costs the server (the wall time is printed too).
//!
//! Run with `cargo bench --bench auth` (optionally `-- --tokens N`). A benchmark, not a test: compare runs from one
//! sitting.

use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use mcp::auth::{Authorization, JwtVerifier, TokenVerifier};
use serde_json::json;

/// Says the text back.
#[mcp::tool]
fn echo(text: String) -> String {
    text
}

/// Serves `echo` over HTTP on a free loopback port, with authorization made for its URL if given; returns the URL.
async fn serve(auth: Option<&dyn Fn(&str) -> Authorization>) -> String {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/mcp", listener.local_addr().unwrap());
    let mut builder = mcp::Server::builder().tool::<echo>();
    if let Some(auth) = auth {
        builder = builder.authorization(auth(&url));
    }
    tokio::spawn(builder.build().unwrap().serve_http_on(listener, mcp::HttpOptions::new()));
    url
}

/// Starts the server without authorization and the one with it (trusting `issuer`) on a thread of their own, with
/// a runtime of its own; returns their URLs and the thread's id.
fn serve_on_a_thread(issuer: String) -> (String, String, u32) {
    let (started, urls) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
        runtime.block_on(async move {
            let plain = serve(None).await;
            let guarded = serve(Some(&move |url: &str| Authorization::jwt(issuer.clone(), url))).await;
            started.send((plain, guarded, thread_id())).unwrap();
            std::future::pending::<()>().await
        })
    });
    urls.recv().unwrap()
}

/// The calling thread's id (Linux).
fn thread_id() -> u32 {
    let link = std::fs::read_link("/proc/thread-self").expect("/proc/thread-self (Linux)");
    link.file_name().and_then(|n| n.to_str()).and_then(|n| n.parse().ok()).expect("a thread id")
}

/// Nanoseconds thread `tid` of this process has run on a CPU (its `schedstat`).
fn cpu_ns(tid: u32) -> u64 {
    let stat = std::fs::read_to_string(format!("/proc/self/task/{tid}/schedstat")).expect("schedstat");
    stat.split_whitespace().next().and_then(|n| n.parse().ok()).expect("a CPU time")
}

/// Microseconds per call of `calls` sequential 2026 `tools/call`s to `url`, with `token` as a bearer token if given:
/// the wall time, and the CPU time of the server's thread `server`.
async fn calls_per(client: &reqwest::Client, url: &str, token: Option<&str>, calls: usize, server: u32) -> (f64, f64) {
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "echo",
        "arguments": {"text": "x"}, "_meta": {"io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {},
        "io.modelcontextprotocol/clientInfo": {"name": "bench", "version": "1"}}}})
    .to_string();
    let (started, cpu) = (Instant::now(), cpu_ns(server));
    for _ in 0..calls {
        let mut request = client
            .post(url)
            .header("content-type", "application/json")
            .header("accept", "application/json, text/event-stream")
            .header("mcp-protocol-version", "2026-07-28")
            .header("mcp-method", "tools/call")
            .header("mcp-name", "echo")
            .body(body.clone());
        if let Some(token) = token {
            request = request.bearer_auth(token);
        }
        let response = request.send().await.unwrap();
        assert_eq!(response.status(), 200, "{}", response.text().await.unwrap_or_default());
        response.bytes().await.unwrap();
    }
    let wall = started.elapsed().as_secs_f64() * 1e6 / calls as f64;
    (wall, (cpu_ns(server) - cpu) as f64 / 1e3 / calls as f64)
}

fn median(mut values: Vec<f64>) -> f64 {
    values.sort_by(f64::total_cmp);
    values[values.len() / 2]
}

/// A key for this benchmark only (RSA-2048, PKCS#8).
const PRIVATE_KEY: &str = "-----BEGIN PRIVATE KEY-----
MIIEvwIBADANBgkqhkiG9w0BAQEFAASCBKkwggSlAgEAAoIBAQDiX4Umkh1LMODB
IBW7RmiqJg+aHrRh0Kbcg+ouRuw7GflwKDOCJS8Qy8k9SGNc9ZRoKWV/r4Ngpd03
OMmiJFS7vuNDrKdn8rB6ND5vDC+dXANvjz6UJ6uApFRUZ3Ao+uJI03eMXiV0naJ5
y6ciO9qEZGoTNekQK/YktFQsg+VxRgcaDFk+qpb+JDPqGCIWMPejoa0ZYQSPsKln
u6HM9BSrnCJUHHU97vwUDcuiVBNwEt02seDGYxk8qsWvquZB9b41MAHp+7S+3J+5
SC3uslhYnAkmIZ4ZKZ5dDmpKdnDQG9EsiKxWF0rCCFV23X9HXtktqZih+tZ5B8yH
Kei8jtVvAgMBAAECggEACLzTPGArwdgrvniVg3wsMJrgfIN5OJn8F7XiOPVjS28m
DzvO5SlGX9mJYD8fGO/ZfG+LSB4HPFF+MHXAZcINWaruRbwpJHjU4/4zBZ23aI5W
7vGV/ylpDPp8liIZ+CEwQufo4jcv2XpMYQFzoDZe4pVuwEgTCLl8Vqx1pxCo6EAk
hJdAgvBHaSEZuxAXHvsPS8khwQC1ezKRRCoMTjPJcm79UgIE5ynKTQ/KhvnUDcn9
3/MyQURyFHOwZNAyc8Ub8U+cG9wUW+In3YkDrU9Hdte205vi/P7Owc9T6gewOLJl
4FvO9A8S0KzKNdrQDyUEPARQCjt6LdsGq1xA379AzQKBgQDzdlYeafuoOTIXgGRX
ukmaaOGIGY1+pUIjPXOlK/FtcjhXuIiLXOyBGZbAjjUAFIqrPyk1vPb6LcPBgSEl
byna+48X2OowIVkGi6ljJz7AxZ41t2vs8fUWGdKnWCVItwM0bvRhP1l/nQZv8bnu
OYNSpFBy+Pu6jkI/LG53+Odn7QKBgQDuB+QEx/+G1Was463kFFYM6HyfU6zh98NM
/EafqVPf6fnGMzoztwfrtvuGD9Ftvx7pkDM6Ux8g0S6Gappm7o8J2N0R29cHlyXs
Lu5jUY0BWGlf4lJoxyyvpWsSrIF+gelpSwXtfbSUgSKNHJh6z59OXcx9Bqxojf0Z
EZgMAc6PSwKBgQC3D93FVK+TWB5gKXxJspsxbXdXnM8V0TEfyk8wfRA12VKgMvMI
x0BV+mWuN7+GZeu2w/E6pPGYP90XnP7NZP61171KkyHUOt7z2wPsuE+pJ27EuTx/
l5dPnO8WQWMXf/T68grzLG0hVXLHrZy+kaQ6+a48JRcyuVD6q3AM6a0mKQKBgQCW
zQj4vnx0v948ykHwrbGWm/PYPPrabk2dCHb10CEDSwijOPE2sk6iV1sipALatKqw
7lqGKQMfl2cSYZdQfvLAGlR0bALfHDM6XsFIyvG6WHjp9kifeRAmd3ZOblvb+hIW
UyF+RJWTP/zTyboQlFkpHOPgkcnIs6wVpb/eW4ax4QKBgQDYj9Gds8xEo3kqog20
glF6SRKmuc3zLimWyj+wW+axhj/JHQofAdQVuGFa+Q4JVP7bT3uA2bJAJSAHX59F
xE9TkzKw5LxAOB3RTJJM2Ae+iwxBJ3/Qjd51eqBEGe1RNHEnkMYBpW73lrZcuE8f
MwfyzMI+G8CIDK8IPF63kwwVAg==
-----END PRIVATE KEY-----";
/// Its public modulus, base64url.
const MODULUS: &str = "4l-FJpIdSzDgwSAVu0ZoqiYPmh60YdCm3IPqLkbsOxn5cCgzgiUvEMvJPUhjXPWUaCllf6-DYKXdNzjJoiRUu77jQ6ynZ_KwejQ-bwwvnVwDb48-lCergKRUVGdwKPriSNN3jF4ldJ2iecunIjvahGRqEzXpECv2JLRULIPlcUYHGgxZPqqW_iQz6hgiFjD3o6GtGWEEj7CpZ7uhzPQUq5wiVBx1Pe78FA3LolQTcBLdNrHgxmMZPKrFr6rmQfW-NTAB6fu0vtyfuUgt7rJYWJwJJiGeGSmeXQ5qSnZw0BvRLIisVhdKwghVdt1_R17ZLamYofrWeQfMhynovI7Vbw";

fn tokens_arg() -> usize {
    let mut args = std::env::args().skip(1);
    while let Some(a) = args.next() {
        if a == "--tokens" {
            return args.next().and_then(|v| v.parse().ok()).expect("a number after --tokens");
        }
    }
    2000
}

#[tokio::main(flavor = "current_thread")]
async fn main() {
    let tokens = tokens_arg();
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let issuer = format!("http://{}", listener.local_addr().unwrap());
    let metadata = json!({"issuer": issuer, "jwks_uri": format!("{issuer}/jwks")}).to_string();
    let jwks =
        json!({"keys": [{"kty": "RSA", "kid": "bench", "use": "sig", "alg": "RS256", "n": MODULUS, "e": "AQAB"}]})
            .to_string();
    let app = axum::Router::new()
        .route("/.well-known/oauth-authorization-server", axum::routing::get(move || async move { metadata }))
        .route("/jwks", axum::routing::get(move || async move { jwks }));
    tokio::spawn(async move { axum::serve(listener, app).await });

    let resource = "https://books.example.com/mcp";
    let verifier = JwtVerifier::new(issuer.clone(), resource).unwrap();
    let key = jsonwebtoken::EncodingKey::from_rsa_pem(PRIVATE_KEY.as_bytes()).unwrap();
    let mut header = jsonwebtoken::Header::new(jsonwebtoken::Algorithm::RS256);
    header.kid = Some("bench".into());
    header.typ = Some("at+jwt".into());
    let exp = SystemTime::now().duration_since(UNIX_EPOCH).unwrap().as_secs() + 3600;
    let signed: Vec<String> = (0..tokens)
        .map(|i| {
            let claims = json!({"iss": issuer, "aud": resource, "sub": format!("user-{i}"), "client_id": "bench",
                "scope": "books:read books:write", "exp": exp, "iat": exp - 3600, "jti": format!("{i}")});
            jsonwebtoken::encode(&header, &claims, &key).unwrap()
        })
        .collect();
    // The keys are fetched once, outside the measurement.
    verifier.verify(&signed[0]).await.expect("the first token verifies");

    let per = |elapsed: Duration, n: usize| elapsed.as_secs_f64() * 1e6 / n as f64;
    let started = Instant::now();
    for token in &signed[1..] {
        verifier.verify(token).await.expect("verifies");
    }
    let first_time = per(started.elapsed(), tokens - 1);
    let started = Instant::now();
    for _ in 0..tokens {
        verifier.verify(&signed[1]).await.expect("verifies");
    }
    let cached = per(started.elapsed(), tokens);
    println!("auth: {tokens} RS256 access tokens (RSA-2048), keys cached");
    println!("auth: a token seen for the first time: {first_time:.1} µs per verification (signature checked)");
    println!("auth: a token seen again:              {cached:.1} µs per verification (verified-token cache)");

    // Over HTTP: the same server with and without authorization, alternating rounds, both served by one thread of
    // their own so that its CPU time is the servers' alone.
    let (plain, guarded, server_thread) = serve_on_a_thread(issuer.clone());
    let claims = json!({"iss": issuer, "aud": guarded, "sub": "bench", "client_id": "bench", "exp": exp,
        "iat": exp - 3600});
    let token = jsonwebtoken::encode(&header, &claims, &key).unwrap();
    let client = reqwest::Client::new();
    calls_per(&client, &plain, None, 200, server_thread).await;
    calls_per(&client, &guarded, Some(&token), 200, server_thread).await;
    let (mut without, mut with) = (Vec::new(), Vec::new());
    for _ in 0..5 {
        without.push(calls_per(&client, &plain, None, tokens, server_thread).await);
        with.push(calls_per(&client, &guarded, Some(&token), tokens, server_thread).await);
    }
    let median_of = |rounds: &[(f64, f64)], pick: fn(&(f64, f64)) -> f64| median(rounds.iter().map(pick).collect());
    let (wall_without, wall_with) = (median_of(&without, |r| r.0), median_of(&with, |r| r.0));
    let (cpu_without, cpu_with) = (median_of(&without, |r| r.1), median_of(&with, |r| r.1));
    println!("auth: over HTTP, {tokens} sequential 2026 tools/call per round, 5 rounds (medians):");
    println!(
        "auth:   server CPU per call: without authorization {cpu_without:.1} µs, with a bearer JWT {cpu_with:.1} µs: {:+.1} µs",
        cpu_with - cpu_without
    );
    println!(
        "auth:   wall time per call:  without authorization {wall_without:.1} µs, with a bearer JWT {wall_with:.1} µs: {:+.1} µs",
        wall_with - wall_without
    );
}
