//! The webhook receiver of the harness (`tests/common/webhooks.rs`), on its own, without our server: deliveries
//! signed here by hand the Standard Webhooks way (HMAC-SHA256 of `{id}.{timestamp}.{body}` under the secret's
//! bytes) are taken by the project's own Python library, with either configured secret; a wrong signature or a stale
//! timestamp is refused (401); `statuses` answers a delivery id's first attempts as told; a verification envelope's
//! challenge is echoed, or answered wrongly when told; and everything is recorded, in order, as received.

use std::time::{SystemTime, UNIX_EPOCH};

use base64::Engine as _;
use hmac::{Hmac, Mac};
use serde_json::{json, Value};
use sha2::Sha256;

use crate::common::webhooks::WebhookReceiver;

const SECRET: &str = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw";
const OTHER_SECRET: &str = "whsec_c2Vjb25kLXNlY3JldC1vZi10aGUtcmVjZWl2ZXI=";

/// `v1,` and the base64 of HMAC-SHA256(the secret's bytes, `{id}.{timestamp}.{body}`): a Standard Webhooks signature.
fn sign(secret: &str, id: &str, timestamp: u64, body: &str) -> String {
    let key = base64::engine::general_purpose::STANDARD
        .decode(secret.strip_prefix("whsec_").expect("a whsec_ secret"))
        .expect("a base64 secret");
    let mut mac = Hmac::<Sha256>::new_from_slice(&key).unwrap();
    mac.update(format!("{id}.{timestamp}.{body}").as_bytes());
    format!("v1,{}", base64::engine::general_purpose::STANDARD.encode(mac.finalize().into_bytes()))
}

fn now() -> u64 {
    SystemTime::now().duration_since(UNIX_EPOCH).unwrap().as_secs()
}

/// POSTs `body` to `url` with these Standard Webhooks headers; returns the status and the parsed answer.
async fn deliver(
    http: &reqwest::Client,
    url: &str,
    id: &str,
    timestamp: u64,
    signature: &str,
    body: &Value,
) -> (u16, Value) {
    let response = http
        .post(url)
        .header("content-type", "application/json")
        .header("webhook-id", id)
        .header("webhook-timestamp", timestamp.to_string())
        .header("webhook-signature", signature)
        .header("x-mcp-subscription-id", "sub-1")
        .body(body.to_string())
        .send()
        .await
        .unwrap();
    let status = response.status().as_u16();
    let text = response.text().await.unwrap();
    (status, serde_json::from_str(&text).unwrap_or_else(|e| panic!("a {status} answer that is not JSON ({e}): {text}")))
}

#[tokio::test]
async fn verifies_with_the_standard_webhooks_library_and_answers_as_told() {
    let receiver = WebhookReceiver::start(&[SECRET, OTHER_SECRET]);
    let http = reqwest::Client::builder()
        .add_root_certificate(reqwest::Certificate::from_pem(receiver.certificate_pem().as_bytes()).unwrap())
        .no_proxy()
        .build()
        .unwrap();
    let url = receiver.url("/hooks/books");
    // The certificate names localhost too.
    assert_eq!(url, format!("https://127.0.0.1:{}/hooks/books", receiver.port));
    let by_name = format!("https://localhost:{}/hooks/books", receiver.port);

    // A delivery signed right, with either secret: 200, recorded as verified.
    let event = json!({"type": "event", "name": "book.restocked", "data": {"isbn": "978-0"}});
    let body = event.to_string();
    let t = now();
    assert_eq!(deliver(&http, &url, "msg_1", t, &sign(SECRET, "msg_1", t, &body), &event).await, (200, json!({})));
    let signature = sign(OTHER_SECRET, "msg_2", t, &body);
    assert_eq!(deliver(&http, &by_name, "msg_2", t, &signature, &event).await, (200, json!({})));

    // Signed with a secret it does not know, or over another body, or too long ago: 401.
    let wrong = sign("whsec_bm90LXRoZS1yZWNlaXZlcnMtc2VjcmV0", "msg_3", t, &body);
    assert_eq!(deliver(&http, &url, "msg_3", t, &wrong, &event).await.0, 401);
    let other_body = sign(SECRET, "msg_4", t, "{}");
    assert_eq!(deliver(&http, &url, "msg_4", t, &other_body, &event).await.0, 401);
    let stale = t - 3600;
    assert_eq!(deliver(&http, &url, "msg_5", stale, &sign(SECRET, "msg_5", stale, &body), &event).await.0, 401);

    // `statuses`: the first attempt of msg_6 gets 500, the second 410, then 200; others are untouched.
    receiver.control(json!({"statuses": {"msg_6": [500, 410]}})).await;
    let signature = sign(SECRET, "msg_6", t, &body);
    for expected in [500, 410, 200, 200] {
        assert_eq!(deliver(&http, &url, "msg_6", t, &signature, &event).await, (expected, json!({})));
    }
    assert_eq!(deliver(&http, &url, "msg_7", t, &sign(SECRET, "msg_7", t, &body), &event).await.0, 200);

    // A verification envelope: its challenge echoed; then, told `wrong`, `not-it`; then, told a status, that status.
    let envelope = json!({"type": "verification", "challenge": "c-8f3a"});
    let envelope_text = envelope.to_string();
    let signature = sign(SECRET, "msg_8", t, &envelope_text);
    assert_eq!(deliver(&http, &url, "msg_8", t, &signature, &envelope).await, (200, json!({"challenge": "c-8f3a"})));
    receiver.control(json!({"challenge": "wrong"})).await;
    assert_eq!(deliver(&http, &url, "msg_8", t, &signature, &envelope).await, (200, json!({"challenge": "not-it"})));
    receiver.control(json!({"challenge": "status:503"})).await;
    assert_eq!(deliver(&http, &url, "msg_8", t, &signature, &envelope).await.0, 503);
    // An unsigned envelope is refused before its challenge is looked at.
    assert_eq!(deliver(&http, &url, "msg_9", t, "v1,AAAA", &envelope).await.0, 401);

    // `default_status` answers what no `statuses` entry names.
    receiver.control(json!({"default_status": 202})).await;
    assert_eq!(deliver(&http, &url, "msg_10", t, &sign(SECRET, "msg_10", t, &body), &event).await.0, 202);

    // Without any of the headers, and not JSON: 401.
    let response = http.post(&url).body("plain text").send().await.unwrap();
    assert_eq!(response.status(), 401);

    // Everything is recorded in order, as received (`/_control` is not).
    let received = receiver.wait_for("the 16 deliveries", |r| r.len() == 16).await;
    let summary: Vec<(&str, bool, u64)> = received[..15]
        .iter()
        .map(|r| {
            (
                r["headers"]["webhook-id"].as_str().unwrap(),
                r["verified"].as_bool().unwrap(),
                r["status"].as_u64().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        summary,
        [
            ("msg_1", true, 200),
            ("msg_2", true, 200),
            ("msg_3", false, 401),
            ("msg_4", false, 401),
            ("msg_5", false, 401),
            ("msg_6", true, 500),
            ("msg_6", true, 410),
            ("msg_6", true, 200),
            ("msg_6", true, 200),
            ("msg_7", true, 200),
            ("msg_8", true, 200),
            ("msg_8", true, 200),
            ("msg_8", true, 503),
            ("msg_9", false, 401),
            ("msg_10", true, 202),
        ]
    );
    let first = &received[0];
    assert_eq!(first["path"], "/hooks/books");
    assert_eq!(first["body"], event);
    assert_eq!(first["raw"], body);
    assert_eq!(first["headers"]["webhook-timestamp"], t.to_string());
    assert_eq!(first["headers"]["webhook-signature"], sign(SECRET, "msg_1", t, &body));
    assert_eq!(first["headers"]["x-mcp-subscription-id"], "sub-1");
    assert_eq!(first["headers"]["content-type"], "application/json");
    assert_eq!(received[10]["body"], envelope);
    let bare = &received[15];
    assert_eq!((bare["verified"].clone(), bare["status"].clone()), (json!(false), json!(401)));
    assert_eq!((bare["body"].clone(), bare["raw"].clone()), (json!("plain text"), json!("plain text")));
    let no_headers = json!({"webhook-id": null, "webhook-timestamp": null, "webhook-signature": null,
        "x-mcp-subscription-id": null, "content-type": null});
    assert_eq!(bare["headers"], no_headers);
    assert!(receiver.stderr_text().is_empty(), "the receiver wrote errors:\n{}", receiver.stderr_text());
}
