//! An HTTPS server for a test: an axum router served over TLS with a fresh self-signed certificate. Standalone (its
//! own `use`s only), so a test binary without the rest of `common` includes it by `#[path]`.

use std::sync::Arc;

/// Serves `app` over TLS on 127.0.0.1 with a fresh self-signed certificate for `names` (`127.0.0.1`, `localhost`);
/// returns the port and the certificate (PEM) to trust.
pub async fn serve_tls(app: axum::Router, names: &[&str]) -> (u16, String) {
    let names = names.iter().map(|n| n.to_string()).collect::<Vec<_>>();
    let certified = rcgen::generate_simple_self_signed(names).unwrap();
    let pem = certified.cert.pem();
    let key = tokio_rustls::rustls::pki_types::PrivatePkcs8KeyDer::from(certified.signing_key.serialize_der()).into();
    let config = tokio_rustls::rustls::ServerConfig::builder()
        .with_no_client_auth()
        .with_single_cert(vec![certified.cert.der().clone()], key)
        .unwrap();
    let acceptor = tokio_rustls::TlsAcceptor::from(Arc::new(config));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    tokio::spawn(async move {
        while let Ok((socket, _)) = listener.accept().await {
            let (acceptor, app) = (acceptor.clone(), app.clone());
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
