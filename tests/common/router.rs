//! A 2025 client that calls a server's router as a tower service, in this process, with no socket between them. A
//! test that waits on the server's own timers (idle expiry, say) runs it on paused Tokio time: nothing waits for the
//! kernel, so the clock moves only when every task waits on a timer, and the test's hour takes no time at all.

use axum::body::Body;
use axum::http::{Request, Response, StatusCode};
use serde_json::{json, Value};
use tower::ServiceExt;

use super::http::{notification, request};

pub struct Client {
    pub app: axum::Router,
    pub path: String,
    pub session: Option<String>,
}

impl Client {
    pub fn new(app: axum::Router, path: &str) -> Client {
        Client { app, path: path.to_owned(), session: None }
    }

    fn builder(&self, method: &str) -> axum::http::request::Builder {
        let mut r = Request::builder()
            .method(method)
            .uri(&self.path)
            .header("host", "localhost")
            .header("accept", "application/json, text/event-stream")
            .header("mcp-protocol-version", "2025-11-25");
        if let Some(s) = &self.session {
            r = r.header("mcp-session-id", s);
        }
        r
    }

    /// A POST with the headers a conforming client sends; the response as the router gave it.
    pub async fn send(&self, body: &Value) -> Response<Body> {
        let post = self.builder("POST").header("content-type", "application/json").body(Body::from(body.to_string()));
        self.app.clone().oneshot(post.unwrap()).await.unwrap()
    }

    /// Opens the standalone GET stream; the response's body is the stream (it stays open while it is held).
    pub async fn get(&self) -> Response<Body> {
        self.app.clone().oneshot(self.builder("GET").body(Body::empty()).unwrap()).await.unwrap()
    }

    /// Initializes, keeping the session id.
    pub async fn initialize(&mut self) -> Value {
        let init = request(
            0,
            "initialize",
            json!({"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "router-tests", "version": "0"}}),
        );
        let response = self.send(&init).await;
        if response.status() != StatusCode::OK {
            let bytes = axum::body::to_bytes(response.into_body(), usize::MAX).await.unwrap();
            panic!("initialize: {}", String::from_utf8_lossy(&bytes));
        }
        self.session = response.headers().get("mcp-session-id").map(|v| v.to_str().unwrap().to_owned());
        let result = answer(response, 0).await;
        assert_eq!(self.send(&notification("notifications/initialized", json!({}))).await.status(), 202);
        result
    }

    /// Sends a request and returns its response (the POST's stream is read to its end).
    pub async fn call(&self, id: i64, method: &str, params: Value) -> Value {
        let response = self.send(&request(id, method, params)).await;
        assert_eq!(response.status(), StatusCode::OK, "{method}");
        answer(response, id).await
    }
}

/// The JSON-RPC response with this id in a POST's answer: one JSON body, or an SSE stream read to its end.
pub async fn answer(response: Response<Body>, id: i64) -> Value {
    let bytes = axum::body::to_bytes(response.into_body(), usize::MAX).await.unwrap();
    let text = String::from_utf8(bytes.to_vec()).unwrap();
    let messages: Vec<Value> = match serde_json::from_str(&text) {
        Ok(one) => vec![one],
        Err(_) => text
            .lines()
            .filter_map(|line| line.strip_prefix("data:"))
            .filter_map(|data| serde_json::from_str(data.trim_start()).ok())
            .collect(),
    };
    messages
        .into_iter()
        .find(|m| m["id"] == json!(id) && (m.get("result").is_some() || m.get("error").is_some()))
        .unwrap_or_else(|| panic!("no response to {id} in {text:?}"))
}
