//! A proxy toward an upstream that wants authorization speaks to it as itself: `Upstream::oauth` with a machine
//! client's credentials, against a real authorization server (oidc-provider). The caller's token is never passed on.

use crate::auth_tools;
use crate::common;

use std::time::Duration;

use auth_tools::whoami;
use common::oidc::{self, Config, Provider};
use mcp::auth::Authorization;
use mcp::client::auth::OAuth;
use mcp::client::{Client, EraChoice};
use mcp::compose::{Mount, Upstream};
use serde_json::{json, Value};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_proxy_reaches_a_protected_upstream_with_its_own_credentials() {
    let provider = Provider::start(Config::default());
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/mcp", listener.local_addr().unwrap());
    let protected = mcp::Server::builder()
        .tool::<whoami>()
        .authorization(Authorization::jwt(provider.issuer(), url.clone()).leeway(Duration::ZERO))
        .build()
        .unwrap();
    tokio::spawn(protected.serve_http_on(listener, mcp::HttpOptions::new()));

    // Without credentials the upstream refuses the proxy, and the proxy says why, naming it.
    let anonymous = Upstream::http(url.clone());
    let refused = anonymous.connect().await.unwrap_err();
    assert!(format!("{refused}").contains("401") || format!("{refused:?}").contains("Auth"), "{refused:?}");

    for era in [EraChoice::V2025, EraChoice::V2026] {
        let oauth = OAuth::client_credentials(oidc::SERVICE).client_secret(oidc::SECRET);
        let upstream = Upstream::http(url.clone()).era(era).oauth(oauth);
        upstream.connect().await.unwrap();
        let server = mcp::Server::builder().compose(Mount::new("books", upstream)).build().unwrap();
        let caller = Client::builder().in_process(server).await.unwrap();
        let who = caller.call_tool("books_whoami", json!({})).await.unwrap();
        let who: Value = serde_json::from_str(who.text().unwrap()).unwrap();
        assert_eq!(who["client_id"], oidc::SERVICE, "the upstream sees the proxy's own identity: {who}");
    }
}
