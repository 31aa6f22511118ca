//! A real OAuth 2.1 authorization server for the tests: panva's oidc-provider (`tests/node/oidc/package.json`,
//! installed under `target/node-oidc` on first use) run by the Node 22 of [`super::node::tools`] on a loopback port,
//! configured by each test. Around it, what a test asks of it: access tokens of every kind (for a resource, short
//! lived, signed RS256 or ES256, opaque), key rotation, the count of JWKS fetches, dynamic registration,
//! introspection, and a user-agent that follows the code flow's redirects to the client's redirect URI.
//!
//! `tests/node/oidc_provider.mjs` documents the configuration it reads, which [`Config`] writes.

use std::collections::HashMap;
use std::hash::{BuildHasher, Hasher};
use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::{mpsc, Arc, Mutex};
use std::time::Duration;

use base64::Engine as _;
use reqwest::header::{COOKIE, LOCATION, SET_COOKIE};
use reqwest::Url;
use serde_json::{json, Value};
use sha2::{Digest, Sha256};

use super::http::HttpServer;
use super::{install, node};

/// The confidential client of [`Config::default`] (client credentials, every `books:` scope).
pub const SERVICE: &str = "books-service";
/// Its secret, and that of the other confidential clients of [`Config::default`].
pub const SECRET: &str = "books-secret";
/// A confidential client of [`Config::default`] whose access tokens live [`SHORT_TTL`] seconds.
pub const SHORT_LIVED: &str = "books-short-lived";
/// The lifetime of [`SHORT_LIVED`]'s access tokens, in seconds.
pub const SHORT_TTL: u64 = 2;
/// A confidential client of [`Config::default`] whose access tokens are signed ES256 (the others', RS256).
pub const ES256_SERVICE: &str = "books-es256";
/// A confidential client of [`Config::default`] whose access tokens are opaque (for introspection).
pub const OPAQUE_SERVICE: &str = "books-opaque";
/// The public client of [`Config::default`]: authorization code with PKCE, refresh tokens, and [`REDIRECT_URI`]
/// (a native client's loopback redirect URI, so any port matches it, RFC 8252).
pub const APP: &str = "books-app";
/// The redirect URI registered for [`APP`]; `http://127.0.0.1:PORT/callback` matches it for any `PORT`.
pub const REDIRECT_URI: &str = "http://127.0.0.1/callback";
/// Every `books:` scope.
pub const BOOKS_SCOPES: &str = "books:read books:write books:admin";
/// The account the auto-approved login signs in (the `sub` of tokens of the code flow), unless configured.
pub const ACCOUNT: &str = "harness-user";

/// What the provider knows: scopes, clients, resources, lifetimes. [`Config::default`] is the books setup above;
/// [`Config::new`] has no client.
#[derive(Clone, Debug)]
pub struct Config {
    value: Value,
}

impl Config {
    /// Scopes `openid offline_access`, no client, tokens of an hour.
    pub fn new() -> Config {
        Config { value: json!({"scopes": ["openid", "offline_access"], "clients": [], "resources": {}}) }
    }

    /// The scopes the provider knows (every one but `openid` and `offline_access` is a scope of any resource that
    /// [`Config::resource`] does not say otherwise of).
    pub fn scopes(mut self, scopes: &str) -> Config {
        self.value["scopes"] = json!(scopes.split_whitespace().collect::<Vec<_>>());
        self
    }

    /// The lifetime of access tokens whose client or resource does not set one.
    pub fn access_token_ttl(mut self, seconds: u64) -> Config {
        self.value["access_token_ttl"] = json!(seconds);
        self
    }

    /// The account the auto-approved login signs in.
    pub fn account(mut self, account: &str) -> Config {
        self.value["account"] = json!(account);
        self
    }

    /// A client, as oidc-provider's client metadata, plus the harness's `access_token_ttl` (seconds),
    /// `access_token_alg` (`RS256`, `ES256`) and `access_token_format` (`jwt`, `opaque`) for its access tokens.
    pub fn client(mut self, metadata: Value) -> Config {
        self.value["clients"].as_array_mut().expect("clients").push(metadata);
        self
    }

    /// A confidential client of the client credentials grant, allowed `scope`; `extra` is merged into its metadata.
    pub fn confidential_client(self, id: &str, secret: &str, scope: &str, extra: Value) -> Config {
        let mut metadata = json!({
            "client_id": id,
            "client_secret": secret,
            "grant_types": ["client_credentials"],
            "response_types": [],
            "redirect_uris": [],
            "scope": scope,
        });
        merge(&mut metadata, extra);
        self.client(metadata)
    }

    /// A public native client of the authorization code grant (PKCE, refresh tokens) with this redirect URI.
    pub fn public_client(self, id: &str, redirect_uri: &str) -> Config {
        self.client(json!({
            "client_id": id,
            "application_type": "native",
            "token_endpoint_auth_method": "none",
            "grant_types": ["authorization_code", "refresh_token"],
            "response_types": ["code"],
            "redirect_uris": [redirect_uri],
        }))
    }

    /// Settings of one resource indicator: `scope` (what tokens for it may carry), `audience`, `access_token_ttl`,
    /// `access_token_alg`, `access_token_format`. A resource not configured is accepted with every scope.
    pub fn resource(mut self, indicator: &str, settings: Value) -> Config {
        self.value["resources"][indicator] = settings;
        self
    }

    /// DPoP (RFC 9449) at the token endpoint: listed in the metadata, and access tokens bound to the key of the
    /// token request's proof (`cnf.jkt`, `token_type: DPoP`). Off unless set.
    pub fn dpop(mut self) -> Config {
        self.value["dpop"] = json!(true);
        self
    }

    /// The provider's signing keys (private JWKs with `kid` and `alg`) instead of generated ones.
    pub fn jwks(mut self, jwks: Value) -> Config {
        self.value["jwks"] = jwks;
        self
    }
}

impl Default for Config {
    /// The books setup: scopes `openid offline_access books:read books:write books:admin`; [`SERVICE`],
    /// [`SHORT_LIVED`], [`ES256_SERVICE`] and [`OPAQUE_SERVICE`] (secret [`SECRET`], every `books:` scope);
    /// [`APP`] at [`REDIRECT_URI`].
    fn default() -> Config {
        Config::new()
            .scopes(&format!("openid offline_access {BOOKS_SCOPES}"))
            .confidential_client(SERVICE, SECRET, BOOKS_SCOPES, json!({}))
            .confidential_client(SHORT_LIVED, SECRET, BOOKS_SCOPES, json!({"access_token_ttl": SHORT_TTL}))
            .confidential_client(ES256_SERVICE, SECRET, BOOKS_SCOPES, json!({"access_token_alg": "ES256"}))
            .confidential_client(OPAQUE_SERVICE, SECRET, BOOKS_SCOPES, json!({"access_token_format": "opaque"}))
            .public_client(APP, REDIRECT_URI)
    }
}

fn merge(into: &mut Value, extra: Value) {
    if let (Some(into), Value::Object(extra)) = (into.as_object_mut(), extra) {
        into.extend(extra);
    }
}

/// A running oidc-provider, killed on drop.
pub struct Provider {
    child: Child,
    /// Held open: the provider exits when it closes, should this process die without dropping it.
    _stdin: ChildStdin,
    issuer: String,
    http: reqwest::Client,
    stderr: Arc<Mutex<Vec<String>>>,
}

/// The provider's stdout holds one line, this, once it listens.
#[derive(serde::Deserialize)]
struct Ready {
    issuer: String,
}

/// The folder where oidc-provider is installed, with the provider's script beside its `node_modules`.
fn installed() -> std::path::PathBuf {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let manifest =
        std::fs::read_to_string(root.join("tests/node/oidc/package.json")).expect("tests/node/oidc/package.json");
    let script = std::fs::read_to_string(root.join("tests/node/oidc_provider.mjs")).expect("oidc_provider.mjs");
    let dir = install::target_dir().join("node-oidc");
    // The script is part of what is installed, so it is copied under the lock, not while another test runs it.
    let wanted = format!("{manifest}\n{script}");
    install::once(&install::target_dir().join("node-oidc.installed"), &wanted, || {
        node::npm_install(&dir, &manifest);
        std::fs::write(dir.join("oidc_provider.mjs"), &script).unwrap();
    });
    dir
}

impl Provider {
    /// Starts a provider on a free loopback port and waits until it listens.
    pub fn start(config: Config) -> Provider {
        let bin = node::tools();
        let dir = installed();
        let mut child = Command::new(bin.join("node"))
            .arg(dir.join("oidc_provider.mjs"))
            .arg(config.value.to_string())
            .current_dir(&dir)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("spawn node oidc_provider.mjs");
        let stdin = child.stdin.take().unwrap();
        let stdout = child.stdout.take().unwrap();
        let stderr = child.stderr.take().unwrap();
        let lines: Arc<Mutex<Vec<String>>> = Arc::default();
        let lines_w = lines.clone();
        let stderr_reader = std::thread::spawn(move || {
            for line in BufReader::new(stderr).lines() {
                let Ok(line) = line else { break };
                lines_w.lock().unwrap().push(line);
            }
        });
        let (tx, rx) = mpsc::channel();
        std::thread::spawn(move || {
            let mut lines = BufReader::new(stdout).lines();
            if let Some(Ok(line)) = lines.next() {
                let _ = tx.send(line);
            }
            // Drain the rest, so that the provider never blocks on a full pipe.
            for _ in lines {}
        });
        let line = rx.recv_timeout(Duration::from_secs(30)).unwrap_or_else(|e| {
            let what = match e {
                mpsc::RecvTimeoutError::Timeout => "did not listen within 30 s",
                mpsc::RecvTimeoutError::Disconnected => "exited before it listened",
            };
            let _ = child.kill();
            let status = child.wait();
            let _ = stderr_reader.join();
            panic!("oidc-provider {what} ({status:?}); stderr:\n{}", lines.lock().unwrap().join("\n"))
        });
        let ready: Ready = serde_json::from_str(&line)
            .unwrap_or_else(|e| panic!("oidc-provider's first line is not its ready line ({e}): {line}"));
        let http = reqwest::Client::builder()
            .redirect(reqwest::redirect::Policy::none())
            .timeout(Duration::from_secs(10))
            .build()
            .unwrap();
        Provider { child, _stdin: stdin, issuer: ready.issuer, http, stderr: lines }
    }

    /// The issuer identifier, `http://127.0.0.1:PORT` (no trailing slash), which tokens carry as `iss`.
    pub fn issuer(&self) -> &str {
        &self.issuer
    }

    /// A URL on the provider's origin.
    pub fn url(&self, path: &str) -> String {
        format!("{}{path}", self.issuer)
    }

    /// What the provider wrote to stderr so far.
    pub fn stderr_text(&self) -> String {
        self.stderr.lock().unwrap().join("\n")
    }

    async fn get_json(&self, path: &str) -> Value {
        let response = self.http.get(self.url(path)).header("x-harness-uncounted", "1").send().await.unwrap();
        let status = response.status();
        let text = response.text().await.unwrap();
        assert!(status.is_success(), "GET {path}: {status} {text}");
        serde_json::from_str(&text).unwrap_or_else(|e| panic!("GET {path}: not JSON ({e}): {text}"))
    }

    /// Sends a form to an endpoint of the provider, with HTTP Basic client authentication when `basic` is given;
    /// returns the status and the JSON body.
    pub async fn post_form(&self, path: &str, form: &[(&str, &str)], basic: Option<(&str, &str)>) -> (u16, Value) {
        let mut request = self
            .http
            .post(self.url(path))
            .header("content-type", "application/x-www-form-urlencoded")
            .body(encode_form(form));
        if let Some((id, secret)) = basic {
            // RFC 6749 2.3.1: the id and secret are form-encoded before they are joined.
            request = request.basic_auth(encode_component(id), Some(encode_component(secret)));
        }
        let response = request.send().await.unwrap();
        let status = response.status().as_u16();
        let text = response.text().await.unwrap();
        let body = serde_json::from_str(&text).unwrap_or_else(|e| panic!("POST {path}: not JSON ({e}): {text}"));
        (status, body)
    }

    /// The discovery document (`/.well-known/openid-configuration`; oidc-provider serves the same at RFC 8414's
    /// `/.well-known/oauth-authorization-server`).
    pub async fn discovery(&self) -> Value {
        self.get_json("/.well-known/openid-configuration").await
    }

    /// The JWKS the provider publishes at `jwks_uri`, fetched without counting in [`Provider::jwks_requests`].
    pub async fn jwks(&self) -> Value {
        self.get_json("/jwks").await
    }

    /// The `kid`s of [`Provider::jwks`].
    pub async fn kids(&self) -> Vec<String> {
        let jwks = self.jwks().await;
        jwks["keys"].as_array().unwrap().iter().map(|k| k["kid"].as_str().unwrap().to_owned()).collect()
    }

    /// The token endpoint with a `DPoP` proof header (RFC 9449 §5): `form` with client authentication `basic`; the
    /// status and the JSON answer, error or not.
    pub async fn dpop_token_request(&self, form: &[(&str, &str)], basic: (&str, &str), proof: &str) -> (u16, Value) {
        let response = self
            .http
            .post(self.url("/token"))
            .header("content-type", "application/x-www-form-urlencoded")
            .header("dpop", proof)
            .basic_auth(encode_component(basic.0), Some(encode_component(basic.1)))
            .body(encode_form(form))
            .send()
            .await
            .unwrap();
        let status = response.status().as_u16();
        let text = response.text().await.unwrap();
        (status, serde_json::from_str(&text).unwrap_or_else(|e| panic!("POST /token: not JSON ({e}): {text}")))
    }

    /// The token endpoint: `form` with client authentication `basic`; the status and the JSON answer, error or not.
    pub async fn token_request(&self, form: &[(&str, &str)], basic: Option<(&str, &str)>) -> (u16, Value) {
        self.post_form("/token", form, basic).await
    }

    /// A client credentials grant for `resource`; the token response. Panics unless it succeeds. The token carries
    /// the scopes asked for (space-separated) that the client and the resource allow; none if `scope` is empty;
    /// a scope the provider does not know is dropped, one the client is not allowed is an `invalid_scope` error.
    pub async fn client_credentials(&self, client_id: &str, secret: &str, scope: &str, resource: &str) -> Value {
        let mut form = vec![("grant_type", "client_credentials"), ("resource", resource)];
        if !scope.is_empty() {
            form.push(("scope", scope));
        }
        let (status, body) = self.token_request(&form, Some((client_id, secret))).await;
        assert_eq!(status, 200, "client credentials of {client_id} for {resource}: {body}");
        body
    }

    /// The access token of [`Provider::client_credentials`]: a JWT whose `aud` is `resource` (unless the client's
    /// or the resource's format is opaque).
    pub async fn client_credentials_token(&self, client_id: &str, secret: &str, scope: &str, resource: &str) -> String {
        let body = self.client_credentials(client_id, secret, scope, resource).await;
        body["access_token"].as_str().expect("access_token").to_owned()
    }

    /// New signing keys (RS256 and ES256); the old ones are no longer published. Returns the new `kid`s.
    pub async fn rotate_keys(&self) -> Vec<String> {
        self.rotate(json!({})).await
    }

    /// New signing keys that sign from now on, with the old ones still published after them. Returns every `kid`.
    pub async fn rotate_keys_retaining_old(&self) -> Vec<String> {
        self.rotate(json!({"retain": true})).await
    }

    async fn rotate(&self, body: Value) -> Vec<String> {
        let response = self.http.post(self.url("/__harness/rotate")).body(body.to_string()).send().await.unwrap();
        assert!(response.status().is_success(), "rotate: {}", response.status());
        let answer: Value = serde_json::from_str(&response.text().await.unwrap()).unwrap();
        answer["kids"].as_array().unwrap().iter().map(|k| k.as_str().unwrap().to_owned()).collect()
    }

    /// The harness's counters: `{"jwks_requests": N, "requests": {"/token": N, ...}, "grants": {...}}`, requests
    /// by path but for the harness's own, and successful token requests by `grant_type`.
    pub async fn stats(&self) -> Value {
        self.get_json("/__harness/stats").await
    }

    /// How many requests came to this path (`/token`, `/reg`, `/auth`, `/.well-known/openid-configuration`), but
    /// for the harness's own.
    pub async fn requests(&self, path: &str) -> u64 {
        self.stats().await["requests"][path].as_u64().unwrap_or(0)
    }

    /// How many token requests of this `grant_type` (`authorization_code`, `refresh_token`, `client_credentials`)
    /// the token endpoint granted.
    pub async fn grants(&self, grant_type: &str) -> u64 {
        self.stats().await["grants"][grant_type].as_u64().unwrap_or(0)
    }

    /// How many times the JWKS was fetched from `jwks_uri` (by anyone but [`Provider::jwks`]); the count goes on
    /// across key rotations.
    pub async fn jwks_requests(&self) -> u64 {
        self.stats().await["jwks_requests"].as_u64().expect("jwks_requests")
    }

    /// Dynamic client registration (RFC 7591), open to anyone; the status and the registered client's metadata.
    pub async fn register(&self, metadata: Value) -> (u16, Value) {
        let response = self
            .http
            .post(self.url("/reg"))
            .header("content-type", "application/json")
            .body(metadata.to_string())
            .send()
            .await
            .unwrap();
        let status = response.status().as_u16();
        let text = response.text().await.unwrap();
        (status, serde_json::from_str(&text).unwrap_or_else(|e| panic!("POST /reg: not JSON ({e}): {text}")))
    }

    /// Token introspection (RFC 7662) by a confidential client. oidc-provider refuses JWTs here (it stores only
    /// opaque tokens): introspect tokens of a client or resource whose format is `opaque`.
    pub async fn introspect(&self, client_id: &str, secret: &str, token: &str) -> (u16, Value) {
        self.post_form("/token/introspection", &[("token", token)], Some((client_id, secret))).await
    }

    /// The authorization URL of a code flow with PKCE (S256) for `resource`.
    pub fn authorization_url(
        &self,
        client_id: &str,
        redirect_uri: &str,
        scope: &str,
        resource: &str,
        pkce: &Pkce,
        state: &str,
    ) -> String {
        let url = Url::parse_with_params(
            &self.url("/auth"),
            [
                ("response_type", "code"),
                ("client_id", client_id),
                ("redirect_uri", redirect_uri),
                ("scope", scope),
                ("resource", resource),
                ("code_challenge", &pkce.challenge),
                ("code_challenge_method", "S256"),
                ("state", state),
            ],
        )
        .unwrap();
        url.into()
    }

    /// A fresh user-agent (no cookies) that follows `authorization_url` to the client's redirect URI: see
    /// [`Browser::authorize`].
    pub async fn authorize(&self, authorization_url: &str) -> Result<Redirect, String> {
        self.browser().authorize(authorization_url).await
    }

    /// A user-agent with a cookie jar of its own, on the provider's origin (its session outlives one flow).
    pub fn browser(&self) -> Browser {
        Browser { http: self.http.clone(), origin: origin(&self.issuer), cookies: HashMap::new(), deny: false }
    }

    /// Exchanges an authorization code (with its PKCE verifier, for `resource`) at the token endpoint as a public
    /// client; the status and the JSON answer.
    pub async fn exchange_code(
        &self,
        client_id: &str,
        redirect_uri: &str,
        code: &str,
        verifier: &str,
        resource: &str,
    ) -> (u16, Value) {
        let form = [
            ("grant_type", "authorization_code"),
            ("client_id", client_id),
            ("redirect_uri", redirect_uri),
            ("code", code),
            ("code_verifier", verifier),
            ("resource", resource),
        ];
        self.token_request(&form, None).await
    }

    /// A whole code flow of a public client, as its user would see it approved: the token response.
    pub async fn code_flow(&self, client_id: &str, redirect_uri: &str, scope: &str, resource: &str) -> Value {
        let pkce = Pkce::new();
        let state = Pkce::new().verifier;
        let url = self.authorization_url(client_id, redirect_uri, scope, resource, &pkce, &state);
        let redirect = self.authorize(&url).await.unwrap_or_else(|e| panic!("authorization: {e}"));
        assert_eq!(redirect.param("state").as_deref(), Some(state.as_str()), "state of {}", redirect.url);
        let (status, body) =
            self.exchange_code(client_id, redirect_uri, &redirect.code(), &pkce.verifier, resource).await;
        assert_eq!(status, 200, "code exchange: {body}");
        body
    }
}

impl Drop for Provider {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The bookshop example served with authorization (`--auth-issuer` this provider, `--auth-resource` its own
/// `/mcp`), on a loopback port chosen first (the resource names it).
pub fn bookshop(provider: &Provider) -> HttpServer {
    let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let address = format!("127.0.0.1:{port}");
    let resource = format!("http://{address}/mcp");
    HttpServer::start_binary(
        super::example("bookshop"),
        &["--http", &address, "--auth-issuer", provider.issuer(), "--auth-resource", &resource],
    )
}

/// Our client of the bookshop `shop` in `era`, signed in with `oauth` (elicitations declined); a sign-in that fails
/// panics with what the bookshop and the provider logged.
pub async fn sign_in(
    era: mcp::client::EraChoice,
    oauth: mcp::client::auth::OAuth,
    shop: &HttpServer,
    provider: &Provider,
) -> mcp::client::Client {
    let decline = |_| async { Ok(json!({"action": "decline"})) };
    let builder = mcp::client::Client::builder().era(era).auth(oauth).on_elicitation(decline);
    builder.http(shop.url.clone()).await.unwrap_or_else(|e| {
        panic!("{era:?}: sign-in failed: {e}\nbookshop:\n{}\nprovider:\n{}", shop.stderr_text(), provider.stderr_text())
    })
}

/// A user-agent for the code flow: follows redirects on the provider's origin with the cookies it set, and stops
/// at the first redirect away from it, the client's redirect URI (not requested: the test hands it to its client).
pub struct Browser {
    http: reqwest::Client,
    origin: String,
    cookies: HashMap<String, String>,
    deny: bool,
}

/// Where the provider sent the user-agent: the client's redirect URI with `code`, `state` and `iss`, or `error`.
#[derive(Clone, Debug)]
pub struct Redirect {
    pub url: Url,
}

impl Redirect {
    /// A query parameter of the redirect.
    pub fn param(&self, name: &str) -> Option<String> {
        self.url.query_pairs().find(|(k, _)| k == name).map(|(_, v)| v.into_owned())
    }

    /// The authorization code; panics if the redirect carries an error instead.
    pub fn code(&self) -> String {
        self.param("code").unwrap_or_else(|| panic!("no code in the redirect {}", self.url))
    }
}

impl Browser {
    /// This user-agent's user refuses the prompts instead: the client gets `error=access_denied`.
    pub fn denying(mut self) -> Browser {
        self.deny = true;
        self
    }

    /// Follows `url` through the provider's redirects (its login and consent prompts are approved by the harness)
    /// until a redirect leaves the provider's origin, and returns it; `Err` with the status and page where the
    /// provider answered with a page instead (an unknown client, a redirect URI it refuses).
    pub async fn authorize(&mut self, url: &str) -> Result<Redirect, String> {
        let mut url = Url::parse(url).map_err(|e| format!("{url}: {e}"))?;
        for _ in 0..20 {
            let mut request = self.http.get(url.clone());
            if !self.cookies.is_empty() {
                let header: Vec<String> = self.cookies.iter().map(|(k, v)| format!("{k}={v}")).collect();
                request = request.header(COOKIE, header.join("; "));
            }
            let response = request.send().await.map_err(|e| format!("GET {url}: {e}"))?;
            for set in response.headers().get_all(SET_COOKIE) {
                self.store_cookie(set.to_str().unwrap_or_default());
            }
            let status = response.status();
            if !status.is_redirection() {
                let page = response.text().await.unwrap_or_default();
                return Err(format!("GET {url}: {status}\n{page}"));
            }
            let location = response.headers().get(LOCATION).and_then(|l| l.to_str().ok()).unwrap_or_default();
            let mut next = url.join(location).map_err(|e| format!("{url}: bad Location {location:?}: {e}"))?;
            if origin(next.as_str()) != self.origin {
                return Ok(Redirect { url: next });
            }
            if self.deny && next.path().starts_with("/interaction/") {
                next.query_pairs_mut().append_pair("decision", "deny");
            }
            url = next;
        }
        Err(format!("more than 20 redirects, the last to {url}"))
    }

    fn store_cookie(&mut self, set_cookie: &str) {
        let mut attributes = set_cookie.split(';').map(str::trim);
        let Some((name, value)) = attributes.next().and_then(|pair| pair.split_once('=')) else { return };
        let expired = attributes.any(|a| {
            let a = a.to_ascii_lowercase();
            a == "max-age=0" || a.starts_with("expires=") && a.contains("1970")
        });
        if expired || value.is_empty() {
            self.cookies.remove(name);
        } else {
            self.cookies.insert(name.to_owned(), value.to_owned());
        }
    }
}

fn origin(url: &str) -> String {
    Url::parse(url).map(|u| u.origin().ascii_serialization()).unwrap_or_default()
}

/// A PKCE verifier and its S256 challenge (RFC 7636).
#[derive(Clone, Debug)]
pub struct Pkce {
    pub verifier: String,
    pub challenge: String,
}

impl Pkce {
    /// A fresh random verifier (64 hex digits).
    pub fn new() -> Pkce {
        let verifier: String = (0..4).map(|_| format!("{:016x}", random_u64())).collect();
        let challenge = base64url(&Sha256::digest(verifier.as_bytes()));
        Pkce { verifier, challenge }
    }
}

/// A random number from the standard library's per-process hash keys and a counter (no `rand` in the tests).
fn random_u64() -> u64 {
    static COUNTER: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    let mut hasher = std::collections::hash_map::RandomState::new().build_hasher();
    hasher.write_u64(COUNTER.fetch_add(1, std::sync::atomic::Ordering::Relaxed));
    hasher.write_u128(std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_nanos());
    hasher.finish()
}

fn base64url(bytes: &[u8]) -> String {
    base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(bytes)
}

/// The header and payload of a JWT, decoded without verifying anything.
pub fn decode_jwt(token: &str) -> (Value, Value) {
    let parts: Vec<&str> = token.split('.').collect();
    assert_eq!(parts.len(), 3, "a JWT has three parts: {token}");
    let part = |s: &str| -> Value {
        let bytes = base64::engine::general_purpose::URL_SAFE_NO_PAD.decode(s).expect("base64url");
        serde_json::from_slice(&bytes).expect("JSON")
    };
    (part(parts[0]), part(parts[1]))
}

/// A JWT with its header and payload edited and the original signature kept, which no longer matches: a forged
/// token (another `aud`, a later `exp`, an unknown `kid`, `alg: none`) for a resource server to refuse.
pub fn forge_jwt(token: &str, edit: impl FnOnce(&mut Value, &mut Value)) -> String {
    let (mut header, mut payload) = decode_jwt(token);
    edit(&mut header, &mut payload);
    let signature = token.rsplit('.').next().unwrap();
    format!("{}.{}.{signature}", base64url(header.to_string().as_bytes()), base64url(payload.to_string().as_bytes()))
}

/// `application/x-www-form-urlencoded`.
fn encode_form(pairs: &[(&str, &str)]) -> String {
    let mut url = Url::parse("http://form.invalid/").unwrap();
    url.query_pairs_mut().extend_pairs(pairs);
    url.query().unwrap_or_default().to_owned()
}

fn encode_component(s: &str) -> String {
    let encoded = encode_form(&[("", s)]);
    encoded.trim_start_matches('=').to_owned()
}
