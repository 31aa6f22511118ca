//! `mcp::client::auth` against a real socket: the project's own server behind a bearer check, and a small OAuth
//! authorization server in the same test (metadata, registration, authorization with PKCE, tokens with refresh), for
//! what the conformance suite does not look at: a token reused across calls, many calls challenged at once
//! authorizing once, an expired token refreshed without the user, the loopback helper end to end, and no token in
//! the runtime's logs.

use std::collections::HashSet;
use std::future::IntoFuture;
use std::sync::{Arc, Mutex};

use axum::body::Body;
use axum::extract::{Request, State};
use axum::http::{header, StatusCode};
use axum::response::{IntoResponse, Response};
use mcp::client::auth::OAuth;
use mcp::client::Client;
use serde_json::{json, Value};
use tokio::net::TcpListener;

/// Says hello.
#[mcp::tool]
fn hello() -> &'static str {
    "hello"
}

/// What the test authorization server knows and counts.
#[derive(Default)]
struct Books {
    base: String,
    valid: HashSet<String>,
    refresh: HashSet<String>,
    challenge: Option<String>,
    issued: usize,
    authorizations: usize,
    code_grants: usize,
    refresh_grants: usize,
}

#[derive(Clone)]
struct App {
    books: Arc<Mutex<Books>>,
    mcp: axum::Router,
}

fn json_response(status: StatusCode, value: Value) -> Response {
    (status, [(header::CONTENT_TYPE, "application/json")], value.to_string()).into_response()
}

fn form(body: &[u8]) -> Vec<(String, String)> {
    let query = format!("http://form/?{}", String::from_utf8_lossy(body));
    reqwest::Url::parse(&query).unwrap().query_pairs().into_owned().collect()
}

fn field<'a>(pairs: &'a [(String, String)], name: &str) -> Option<&'a str> {
    pairs.iter().find(|(k, _)| k == name).map(|(_, v)| v.as_str())
}

/// The whole test server: the resource's metadata and MCP endpoint, and the authorization server.
async fn serve(State(app): State<App>, request: Request) -> Response {
    let path = request.uri().path().to_owned();
    let base = app.books.lock().unwrap().base.clone();
    match path.as_str() {
        "/.well-known/oauth-protected-resource/mcp" => json_response(
            StatusCode::OK,
            json!({"resource": format!("{base}/mcp"), "authorization_servers": [base], "scopes_supported": ["books:read"]}),
        ),
        "/.well-known/oauth-authorization-server" => json_response(
            StatusCode::OK,
            json!({
                "issuer": base,
                "authorization_endpoint": format!("{base}/authorize"),
                "token_endpoint": format!("{base}/token"),
                "registration_endpoint": format!("{base}/register"),
                "code_challenge_methods_supported": ["S256"],
                "scopes_supported": ["books:read", "offline_access"],
                "authorization_response_iss_parameter_supported": true,
                "token_endpoint_auth_methods_supported": ["none"],
            }),
        ),
        "/register" => json_response(StatusCode::CREATED, json!({"client_id": "shopkeeper"})),
        "/authorize" => {
            let query = form(request.uri().query().unwrap_or_default().as_bytes());
            let mut books = app.books.lock().unwrap();
            books.authorizations += 1;
            books.challenge = field(&query, "code_challenge").map(str::to_owned);
            assert_eq!(field(&query, "resource"), Some(format!("{base}/mcp").as_str()));
            assert_eq!(field(&query, "scope"), Some("books:read offline_access"));
            let mut back = reqwest::Url::parse(field(&query, "redirect_uri").unwrap()).unwrap();
            back.query_pairs_mut()
                .append_pair("code", "the-code")
                .append_pair("state", field(&query, "state").unwrap())
                .append_pair("iss", &base);
            (StatusCode::FOUND, [(header::LOCATION, back.to_string())]).into_response()
        }
        "/token" => {
            let body = axum::body::to_bytes(request.into_body(), 1 << 20).await.unwrap();
            let pairs = form(&body);
            let mut books = app.books.lock().unwrap();
            match field(&pairs, "grant_type") {
                Some("authorization_code") => {
                    // PKCE itself is the conformance suite's to check; here both halves must be there.
                    if books.challenge.is_none() || field(&pairs, "code_verifier").is_none() {
                        return json_response(StatusCode::BAD_REQUEST, json!({"error": "invalid_grant"}));
                    }
                    books.code_grants += 1;
                }
                Some("refresh_token") => {
                    if !books.refresh.contains(field(&pairs, "refresh_token").unwrap_or_default()) {
                        return json_response(StatusCode::BAD_REQUEST, json!({"error": "invalid_grant"}));
                    }
                    books.refresh_grants += 1;
                }
                _ => return json_response(StatusCode::BAD_REQUEST, json!({"error": "unsupported_grant_type"})),
            }
            books.issued += 1;
            let (access, refresh) = (format!("at-secret-{}", books.issued), format!("rt-secret-{}", books.issued));
            books.valid.insert(access.clone());
            books.refresh.insert(refresh.clone());
            json_response(
                StatusCode::OK,
                json!({"access_token": access, "refresh_token": refresh, "token_type": "Bearer", "expires_in": 3600}),
            )
        }
        _ => {
            let token = request
                .headers()
                .get(header::AUTHORIZATION)
                .and_then(|v| v.to_str().ok())
                .and_then(|v| v.strip_prefix("Bearer "))
                .map(str::to_owned);
            let valid = token.is_some_and(|t| app.books.lock().unwrap().valid.contains(&t));
            if !valid {
                let challenge =
                    format!(r#"Bearer resource_metadata="{base}/.well-known/oauth-protected-resource/mcp""#);
                return (StatusCode::UNAUTHORIZED, [(header::WWW_AUTHENTICATE, challenge)], Body::empty())
                    .into_response();
            }
            tower::ServiceExt::oneshot(app.mcp.clone(), request).await.into_response()
        }
    }
}

/// Starts the test server; returns its base URL and its state.
async fn start() -> (String, Arc<Mutex<Books>>) {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base = format!("http://127.0.0.1:{}", listener.local_addr().unwrap().port());
    let books = Arc::new(Mutex::new(Books { base: base.clone(), ..Books::default() }));
    let server = mcp::Server::builder().tool::<hello>().build().unwrap();
    let app = App { books: books.clone(), mcp: server.http_router(mcp::HttpOptions::new()) };
    let router = axum::Router::new().fallback(serve).with_state(app);
    tokio::spawn(axum::serve(listener, router).into_future());
    (base, books)
}

/// The user's part for a server that approves at once: follow nothing, read the redirect.
async fn approve(url: reqwest::Url) -> mcp::client::auth::AuthorizeResult {
    let http = reqwest::Client::builder().redirect(reqwest::redirect::Policy::none()).build()?;
    let response = http.get(url).send().await?;
    Ok(response.headers().get("location").ok_or("no redirect")?.to_str()?.to_owned())
}

async fn connect(base: &str) -> Client {
    let oauth = OAuth::new("http://127.0.0.1:1/callback", approve).client_name("shopkeeper");
    Client::builder().auth(oauth).http(format!("{base}/mcp")).await.unwrap()
}

#[tokio::test]
async fn one_sign_in_serves_every_later_call() {
    let (base, books) = start().await;
    let client = connect(&base).await;
    for _ in 0..3 {
        assert_eq!(client.call_tool("hello", json!({})).await.unwrap().text(), Some("hello"));
    }
    let books = books.lock().unwrap();
    assert_eq!((books.authorizations, books.code_grants, books.refresh_grants), (1, 1, 0));
}

#[tokio::test]
async fn many_calls_challenged_at_once_authorize_once() {
    let (base, books) = start().await;
    let client = connect(&base).await;
    {
        // Every token and refresh token revoked: the next calls all meet a 401.
        let mut books = books.lock().unwrap();
        books.valid.clear();
        books.refresh.clear();
    }
    let calls: Vec<_> = (0..8)
        .map(|_| {
            let client = client.clone();
            tokio::spawn(async move { client.call_tool("hello", json!({})).await })
        })
        .collect();
    for call in calls {
        assert_eq!(call.await.unwrap().unwrap().text(), Some("hello"));
    }
    let books = books.lock().unwrap();
    assert_eq!(books.authorizations, 2, "one sign-in at the start, one for all eight calls");
}

#[tokio::test]
async fn an_expired_token_is_refreshed_without_the_user() {
    let (base, books) = start().await;
    let client = connect(&base).await;
    books.lock().unwrap().valid.clear(); // the access token expired; the refresh token still works
    assert_eq!(client.call_tool("hello", json!({})).await.unwrap().text(), Some("hello"));
    let books = books.lock().unwrap();
    assert_eq!((books.authorizations, books.code_grants, books.refresh_grants), (1, 1, 1));
}

#[tokio::test]
async fn the_loopback_helper_receives_the_browser() {
    let (base, books) = start().await;
    let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    // The "browser" follows the redirects, to the client's own listener.
    let oauth = OAuth::loopback(port, |url| {
        let url = url.clone();
        tokio::spawn(async move { reqwest::get(url).await.unwrap().text().await.unwrap() });
    });
    let client = Client::builder().auth(oauth).http(format!("{base}/mcp")).await.unwrap();
    assert_eq!(client.call_tool("hello", json!({})).await.unwrap().text(), Some("hello"));
    assert_eq!(books.lock().unwrap().authorizations, 1);
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

/// What the runtime logged in this test binary, from the first call on: a global subscriber (a thread's own default
/// misses events whose callsite another thread registered first).
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

#[tokio::test]
async fn no_token_reaches_the_runtimes_logs() {
    let captured = logs();
    let (base, books) = start().await;
    let client = connect(&base).await;
    books.lock().unwrap().valid.clear(); // and a refresh on the way
    client.call_tool("hello", json!({})).await.unwrap();
    let logs = String::from_utf8_lossy(&captured.0.lock().unwrap()).into_owned();
    assert!(logs.contains("authorized") && logs.contains("refreshed the access token"), "no log to look in:\n{logs}");
    assert!(!logs.contains("at-secret") && !logs.contains("rt-secret"), "a token in the logs:\n{logs}");
}
