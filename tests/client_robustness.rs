//! `mcp::client` against hostile or broken servers. Over HTTP: HTTPS with a self-signed certificate the test
//! trusts, headers on every request and a readable 401, and transport errors that say what failed.

use std::sync::Arc;
use std::time::Duration;

use mcp::client::{Client, EraChoice, Error, TransportErrorKind};
use serde_json::json;
use tokio::net::TcpListener;

// ---------------------------------------------------------------------------------------------------------------
// HTTPS, headers, transport errors, over the project's own server

/// Says hello.
#[mcp::tool]
fn hello() -> &'static str {
    "hello"
}

fn router() -> axum::Router {
    let server = mcp::Server::builder().tool::<hello>().build().unwrap();
    server.http_router(mcp::HttpOptions::new())
}

/// Serves `app` over TLS with a fresh self-signed certificate for `localhost`; returns the port and the
/// certificate (PEM) to trust.
async fn serve_tls(app: axum::Router) -> (u16, String) {
    let certified = rcgen::generate_simple_self_signed(vec!["localhost".to_owned()]).unwrap();
    let pem = certified.cert.pem();
    let key = tokio_rustls::rustls::pki_types::PrivatePkcs8KeyDer::from(certified.signing_key.serialize_der()).into();
    let config = tokio_rustls::rustls::ServerConfig::builder()
        .with_no_client_auth()
        .with_single_cert(vec![certified.cert.der().clone()], key)
        .unwrap();
    let acceptor = tokio_rustls::TlsAcceptor::from(Arc::new(config));
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    tokio::spawn(async move {
        while let Ok((socket, _)) = listener.accept().await {
            let acceptor = acceptor.clone();
            let app = app.clone();
            tokio::spawn(async move {
                let Ok(tls) = acceptor.accept(socket).await else { return };
                let service = hyper::service::service_fn(move |request: hyper::Request<hyper::body::Incoming>| {
                    tower::ServiceExt::oneshot(app.clone(), request.map(axum::body::Body::new))
                });
                let _ = hyper::server::conn::http1::Builder::new()
                    .serve_connection(hyper_util::rt::TokioIo::new(tls), service)
                    .await;
            });
        }
    });
    (port, pem)
}

fn trusting(pem: &str) -> reqwest::Client {
    reqwest::Client::builder()
        .add_root_certificate(reqwest::Certificate::from_pem(pem.as_bytes()).unwrap())
        .build()
        .unwrap()
}

#[tokio::test]
async fn https_with_a_trusted_self_signed_certificate_works_in_both_eras() {
    let (port, pem) = serve_tls(router()).await;
    for era in [EraChoice::Modern, EraChoice::Legacy] {
        let client = Client::builder()
            .era(era)
            .http_client(trusting(&pem))
            .http(format!("https://localhost:{port}/mcp"))
            .await
            .unwrap_or_else(|e| panic!("{era:?}: {e}"));
        let hello = client.call_tool("hello", json!({})).await.unwrap();
        assert_eq!(hello.text(), Some("hello"), "{era:?}");
    }
    // Untrusted, the certificate is a TLS error, told apart from the others.
    let untrusted = Client::builder().http(format!("https://localhost:{port}/mcp")).await.unwrap_err();
    let Error::Transport(e) = &untrusted else { panic!("{untrusted:?}") };
    assert_eq!(e.kind(), TransportErrorKind::Tls, "{e}");
    assert!(std::error::Error::source(e).is_some(), "the source chain is kept");
    assert!(e.to_string().to_lowercase().contains("certificate"), "{e}");
}

#[tokio::test]
async fn transport_errors_say_what_failed() {
    // Nothing listens on a port just freed.
    let port = TcpListener::bind("127.0.0.1:0").await.unwrap().local_addr().unwrap().port();
    let refused = Client::builder().http(format!("http://127.0.0.1:{port}/mcp")).await.unwrap_err();
    assert!(matches!(&refused, Error::Transport(e) if e.kind() == TransportErrorKind::Connect), "{refused:?}");
    let dns = Client::builder().http("http://no-such-host.invalid/mcp").await.unwrap_err();
    assert!(matches!(&dns, Error::Transport(e) if e.kind() == TransportErrorKind::Dns), "{dns:?}");
    let bad = Client::builder().header("bad header", "x").http("http://127.0.0.1:1/mcp").await.unwrap_err();
    assert!(matches!(&bad, Error::Transport(e) if e.kind() == TransportErrorKind::Config), "{bad:?}");
    // A listener that never answers, with the caller's own client and its timeout.
    let silent = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = silent.local_addr().unwrap();
    let http = reqwest::Client::builder().timeout(Duration::from_millis(300)).build().unwrap();
    let timeout = Client::builder().http_client(http).http(format!("http://{addr}/mcp")).await.unwrap_err();
    assert!(matches!(&timeout, Error::Transport(e) if e.kind() == TransportErrorKind::Timeout), "{timeout:?}");
    drop(silent);
}

/// An authorization layer in front of the endpoint: `Authorization: Bearer x`, or 401.
async fn bearer(request: axum::extract::Request, next: axum::middleware::Next) -> axum::response::Response {
    use axum::response::IntoResponse;
    let authorized = request.headers().get("authorization").is_some_and(|v| v == "Bearer x");
    if !authorized {
        return (axum::http::StatusCode::UNAUTHORIZED, "missing or wrong bearer token").into_response();
    }
    next.run(request).await
}

#[tokio::test]
async fn a_header_reaches_the_server_on_every_request_and_a_401_is_readable() {
    let app = router().layer(axum::middleware::from_fn(bearer));
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, app).await });
    let url = format!("http://{addr}/mcp");

    let refused = Client::builder().http(&url).await.unwrap_err();
    assert_eq!(refused, Error::Http { status: 401, body: "missing or wrong bearer token".into() });
    assert!(refused.to_string().contains("401 Unauthorized: missing or wrong bearer token"), "{refused}");

    for era in [EraChoice::Modern, EraChoice::Legacy] {
        // 2025: initialize, the standalone GET, the notifications and the DELETE all carry it.
        let client = Client::builder().era(era).header("Authorization", "Bearer x").http(&url).await.unwrap();
        let hello = client.call_tool("hello", json!({})).await.unwrap();
        assert_eq!(hello.text(), Some("hello"), "{era:?}");
        assert!(client.list_tools().await.unwrap().iter().any(|t| t["name"] == "hello"));
        client.close().await;
    }
}
