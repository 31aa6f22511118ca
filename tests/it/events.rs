//! The Events extension (SEP-3415, `mcp::events`): declared in `server/discover` only (a 2025 session gets -32601),
//! `events/list` paginated with each type's schemas from its Rust types, `events/poll` from now and from a cursor
//! (matching, `maxEvents` and `hasMore`, `maxAgeMs` and `truncated`, a cursor of another process), `events/stream`
//! on stdio and on Streamable HTTP (the confirmation, events with their cursors, heartbeats, a gap, the end on
//! cancel or on closing the response, the stream cap), a checked type in both modes (a transient error, a
//! terminating one), what `emit` refuses, and streams that neither the in-flight cap nor a timeout layer touches.
//! Messages are read raw, as a client would see them.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use crate::common;

use common::duplex::Stdio;
use mcp::events::{Checked, Delivery, Emitter, EventType, Events, Occurrence};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{json, Value};

/// Which books to hear about.
#[derive(Deserialize, JsonSchema)]
#[allow(dead_code)]
struct Watch {
    /// Only this book; every book if absent.
    isbn: Option<String>,
}

/// A book back in stock.
#[derive(Serialize, Deserialize, JsonSchema)]
struct Restocked {
    isbn: String,
    copies: u32,
}

fn restocked() -> EventType {
    EventType::emitted("book.restocked")
        .description("A book is back in stock.")
        .arguments::<Watch>()
        .payload::<Restocked>()
        .matching(|watch: &Watch, book: &Restocked| watch.isbn.as_ref().is_none_or(|isbn| *isbn == book.isbn))
}

fn server_with(events: Events) -> (mcp::Server, Emitter) {
    let emitter = events.emitter();
    (mcp::Server::builder().extension(events).build().unwrap(), emitter)
}

fn book(isbn: &str, copies: u32) -> Restocked {
    Restocked { isbn: isbn.into(), copies }
}

fn code(response: &Value) -> i64 {
    response["error"]["code"].as_i64().unwrap_or_else(|| panic!("an error: {response}"))
}

/// The next notification of this method, skipping others.
async fn next_of(stdio: &mut Stdio, method: &str, wait: Duration) -> Option<Value> {
    let deadline = tokio::time::Instant::now() + wait;
    loop {
        let left = deadline.saturating_duration_since(tokio::time::Instant::now());
        let message = stdio.next(left).await?;
        common::schema::check_v2026_message(&message, Some("events/stream")).unwrap();
        if message["method"] == method {
            return Some(message);
        }
    }
}

#[tokio::test]
async fn events_are_a_2026_extension_and_a_2025_session_has_no_events_methods() {
    let (server, _) = server_with(Events::new().event(restocked()));
    let mut modern = Stdio::open(&server, true).await;
    let discovered = modern.call(1, "server/discover", json!({})).await;
    assert_eq!(
        discovered["result"]["capabilities"]["extensions"]["io.modelcontextprotocol/events"],
        json!({"listChanged": true})
    );

    let mut legacy = Stdio::open(&server, false).await;
    let caps = &legacy.initialized.as_ref().unwrap()["result"]["capabilities"];
    assert!(caps.get("extensions").and_then(|e| e.get("io.modelcontextprotocol/events")).is_none(), "{caps}");
    for method in ["events/list", "events/poll", "events/stream"] {
        let answer = legacy.call(2, method, json!({"name": "book.restocked"})).await;
        assert_eq!(code(&answer), -32601, "{method}: {answer}");
    }
}

#[tokio::test]
async fn events_list_describes_each_type_from_its_rust_types_a_page_at_a_time() {
    let mut events = Events::new().event(restocked().delivery(&[Delivery::Poll]).meta(json!({"shop": "north"})));
    for n in 0..150 {
        events = events.event(EventType::emitted(format!("zz.filler{n:03}")));
    }
    let (server, _) = server_with(events);
    let mut stdio = Stdio::open(&server, true).await;
    let first = stdio.call(1, "events/list", json!({})).await;
    common::schema::check_v2026_message(&first, Some("events/list")).unwrap();
    let listed = first["result"]["events"].as_array().unwrap();
    assert_eq!(listed.len(), 100);
    let book = &listed[0];
    assert_eq!(book["name"], "book.restocked");
    assert_eq!(book["description"], "A book is back in stock.");
    assert_eq!(book["delivery"], json!(["poll"]));
    assert_eq!(book["inputSchema"]["type"], "object");
    assert_eq!(book["inputSchema"]["properties"]["isbn"]["description"], "Only this book; every book if absent.");
    assert_eq!(book["payloadSchema"]["required"], json!(["isbn", "copies"]));
    assert_eq!(book["_meta"]["shop"], "north");
    assert_eq!(first["result"]["resultType"], "complete", "{first}");
    assert_eq!(listed[1]["delivery"], json!(["poll", "push"]));
    let cursor = first["result"]["nextCursor"].as_str().unwrap().to_owned();
    let second = stdio.call(2, "events/list", json!({"cursor": cursor})).await;
    assert_eq!(second["result"]["events"].as_array().unwrap().len(), 51);
    assert!(second["result"].get("nextCursor").is_none());
    let bad = stdio.call(3, "events/list", json!({"cursor": "nope"})).await;
    assert_eq!(code(&bad), -32602);
}

#[tokio::test]
async fn a_poll_starts_from_now_and_replays_from_its_cursor_what_its_arguments_match() {
    let (server, emitter) = server_with(Events::new().event(restocked()).next_poll(Duration::from_millis(2500)));
    let mut stdio = Stdio::open(&server, true).await;
    emitter.emit("book.restocked", book("before", 1)).unwrap();

    let watch = json!({"isbn": "978-1"});
    let start =
        stdio.call(1, "events/poll", json!({"name": "book.restocked", "arguments": watch, "cursor": null})).await;
    let start = &start["result"];
    assert_eq!(start["events"], json!([]), "from now: nothing replayed");
    assert_eq!((start["truncated"].clone(), start["hasMore"].clone()), (json!(false), json!(false)));
    assert_eq!(start["nextPollMs"], 2500);
    assert_eq!(start["resultType"], "complete");
    let cursor = start["cursor"].as_str().unwrap().to_owned();

    let first = emitter.emit("book.restocked", book("978-1", 2)).unwrap();
    emitter.emit("book.restocked", book("978-2", 5)).unwrap();
    emitter.emit_with_id("book.restocked", "upstream-7", book("978-1", 4)).unwrap();
    let poll = |id, cursor: &str, more: Value| {
        let mut params = json!({"name": "book.restocked", "arguments": {"isbn": "978-1"}, "cursor": cursor});
        params.as_object_mut().unwrap().extend(more.as_object().unwrap().clone());
        (id, params)
    };
    let (id, params) = poll(2, &cursor, json!({}));
    let answer = stdio.call(id, "events/poll", params).await;
    common::schema::check_v2026_message(&answer, Some("events/poll")).unwrap();
    let got = answer["result"].clone();
    let events = got["events"].as_array().unwrap();
    assert_eq!(events.len(), 2, "only the matching ones: {got}");
    assert_eq!(events[0]["eventId"], first);
    assert_eq!(events[0]["name"], "book.restocked");
    assert_eq!(events[0]["data"], json!({"isbn": "978-1", "copies": 2}));
    assert!(events[0]["timestamp"].as_str().unwrap().ends_with('Z'), "{got}");
    assert!(events[0].get("cursor").is_none(), "a poll's cursor is the response's");
    assert_eq!(events[1]["eventId"], "upstream-7");
    let after = got["cursor"].as_str().unwrap().to_owned();

    // maxEvents: a batch, hasMore, then the rest at once.
    let (id, params) = poll(3, &cursor, json!({"maxEvents": 1}));
    let one = stdio.call(id, "events/poll", params).await["result"].clone();
    assert_eq!((one["events"].as_array().unwrap().len(), one["hasMore"].clone()), (1, json!(true)), "{one}");
    let (id, params) = poll(4, one["cursor"].as_str().unwrap(), json!({"maxEvents": 1}));
    let two = stdio.call(id, "events/poll", params).await["result"].clone();
    assert_eq!(two["events"][0]["eventId"], "upstream-7", "{two}");

    // Nothing new since: an empty answer, and the cursor stays.
    let (id, params) = poll(5, &after, json!({}));
    let quiet = stdio.call(id, "events/poll", params).await["result"].clone();
    assert_eq!((quiet["events"].clone(), quiet["cursor"].clone()), (json!([]), json!(after)));

    // A cursor of another process: what the buffer holds, flagged as a gap; text that is no cursor: -32602.
    let (id, params) = poll(6, "0.0", json!({}));
    let other = stdio.call(id, "events/poll", params).await["result"].clone();
    assert_eq!(other["truncated"], true, "{other}");
    assert_eq!(other["events"].as_array().unwrap().len(), 2);
    let (id, params) = poll(7, "not a cursor", json!({}));
    assert_eq!(code(&stdio.call(id, "events/poll", params).await), -32602);
}

#[tokio::test]
async fn a_poll_is_refused_with_the_seps_errors() {
    let (server, _) = server_with(
        Events::new()
            .event(restocked().delivery(&[Delivery::Push]))
            .event(EventType::emitted("shop.opened").delivery(&[Delivery::Poll])),
    );
    let mut stdio = Stdio::open(&server, true).await;
    let unknown = stdio.call(1, "events/poll", json!({"name": "nope"})).await;
    common::schema::check_v2026_message(&unknown, Some("events/poll")).unwrap();
    assert_eq!(code(&unknown), -32023);
    assert_eq!(unknown["error"]["data"]["kind"], "event");
    let push_only = stdio.call(2, "events/poll", json!({"name": "book.restocked"})).await;
    assert_eq!(code(&push_only), -32026);
    assert_eq!(push_only["error"]["data"], json!({"feature": "deliveryMode", "value": "poll"}));
    let poll_only = stdio.call(3, "events/stream", json!({"name": "shop.opened"})).await;
    assert_eq!(poll_only["error"]["data"], json!({"feature": "deliveryMode", "value": "push"}), "{poll_only}");

    let (server, _) = server_with(Events::new().event(restocked()));
    let mut stdio = Stdio::open(&server, true).await;
    let wrong = stdio.call(4, "events/poll", json!({"name": "book.restocked", "arguments": {"isbn": 5}})).await;
    assert_eq!(code(&wrong), -32602);
    assert!(wrong["error"]["message"].as_str().unwrap().contains("inputSchema"), "{wrong}");
    let no_name = stdio.call(5, "events/poll", json!({})).await;
    assert_eq!(code(&no_name), -32602);
}

/// A push stream hears its heartbeat however busy its type is with events for other subscriptions: its quiet time
/// counts from what it was sent, not from the last change of the type (which used to put the heartbeat off for as
/// long as others' events kept coming, so a client took the stream for dead).
#[tokio::test]
async fn a_push_stream_beats_while_its_type_is_busy_with_events_for_others() {
    let (server, emitter) = server_with(Events::new().event(restocked()).heartbeat(Duration::from_millis(300)));
    let mut stdio = Stdio::open(&server, true).await;
    stdio.request(1, "events/stream", json!({"name": "book.restocked", "arguments": {"isbn": "978-1"}})).await;
    next_of(&mut stdio, "notifications/events/active", Duration::from_secs(5)).await.unwrap();
    let busy = tokio::spawn(async move {
        for copies in 0.. {
            emitter.emit("book.restocked", book("978-2", copies)).unwrap();
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    });
    let beat = next_of(&mut stdio, "notifications/events/heartbeat", Duration::from_secs(3)).await;
    busy.abort();
    let beat = beat.expect("a heartbeat while others' events keep coming");
    assert!(beat["params"]["cursor"].is_string(), "{beat}");
}

/// `maxAgeMs` without a cursor is ignored, as the SEP says: a check function is not asked for an age it would have
/// to ignore; with a cursor it is.
#[tokio::test]
async fn a_check_is_given_max_age_only_with_a_cursor() {
    let asked = Arc::new(std::sync::Mutex::new(Vec::new()));
    let seen = asked.clone();
    let aged = EventType::checked("aged", move |check| {
        seen.lock().unwrap().push((check.cursor.clone(), check.max_age));
        async { Ok(Checked::new(vec![], Some("1".into()))) }
    });
    let (server, _) = server_with(Events::new().event(aged));
    let mut stdio = Stdio::open(&server, true).await;
    stdio.call(1, "events/poll", json!({"name": "aged", "maxAgeMs": 1000})).await;
    stdio.call(2, "events/poll", json!({"name": "aged", "cursor": "1", "maxAgeMs": 1000})).await;
    let asked = asked.lock().unwrap().clone();
    assert_eq!(asked, [(None, None), (Some("1".to_owned()), Some(Duration::from_secs(1)))]);
}

/// A type delivered by webhook only, on a server that delivers no webhooks, would offer no mode (the SEP wants a
/// non-empty subset): the server is not built, and the error says what to do.
#[test]
fn a_type_delivered_by_webhook_only_needs_webhooks() {
    let hooked = EventType::emitted("hooked").delivery(&[Delivery::Webhook]);
    let built = mcp::Server::builder().extension(Events::new().event(hooked)).build();
    let error = built.expect_err("the server is not built").to_string();
    assert!(error.contains("`hooked`") && error.contains("Events::webhooks"), "{error}");
}

#[tokio::test]
async fn max_age_skips_older_events_and_says_so() {
    let (server, emitter) = server_with(Events::new().event(restocked()));
    let mut stdio = Stdio::open(&server, true).await;
    let start = stdio.call(1, "events/poll", json!({"name": "book.restocked"})).await;
    let cursor = start["result"]["cursor"].as_str().unwrap().to_owned();
    emitter.emit("book.restocked", book("old", 1)).unwrap();
    tokio::time::sleep(Duration::from_millis(300)).await;
    emitter.emit("book.restocked", book("new", 1)).unwrap();
    let got = stdio.call(2, "events/poll", json!({"name": "book.restocked", "cursor": cursor, "maxAgeMs": 150})).await;
    let got = &got["result"];
    assert_eq!(got["truncated"], true, "{got}");
    assert_eq!(got["events"].as_array().unwrap().len(), 1);
    assert_eq!(got["events"][0]["data"]["isbn"], "new");
}

#[tokio::test]
async fn a_push_stream_on_stdio_confirms_delivers_beats_and_ends_when_cancelled() {
    let events = Events::new().event(restocked()).heartbeat(Duration::from_millis(200));
    let (server, emitter) = server_with(events);
    let mut stdio = Stdio::open(&server, true).await;
    stdio.request(7, "events/stream", json!({"name": "book.restocked", "arguments": {"isbn": "978-1"}})).await;
    stdio.request(8, "events/stream", json!({"name": "book.restocked"})).await;
    let mut active = Vec::new();
    for _ in 0..2 {
        let note = next_of(&mut stdio, "notifications/events/active", Duration::from_secs(5)).await.unwrap();
        assert_eq!(note["params"]["truncated"], false);
        assert!(note["params"]["cursor"].is_string(), "{note}");
        active.push(note["params"]["_meta"]["io.modelcontextprotocol/subscriptionId"].clone());
    }
    active.sort_by_key(|id| id.as_i64());
    assert_eq!(active, [json!(7), json!(8)]);

    let id = emitter.emit("book.restocked", book("978-1", 3)).unwrap();
    emitter.emit("book.restocked", book("978-9", 1)).unwrap();
    let mut seen: Vec<(i64, String)> = Vec::new();
    while seen.len() < 3 {
        let note = next_of(&mut stdio, "notifications/events/event", Duration::from_secs(5)).await.unwrap();
        let stream = note["params"]["_meta"]["io.modelcontextprotocol/subscriptionId"].as_i64().unwrap();
        assert!(note["params"]["cursor"].is_string(), "{note}");
        seen.push((stream, note["params"]["data"]["isbn"].as_str().unwrap().to_owned()));
    }
    seen.sort();
    assert_eq!(seen, [(7, "978-1".to_owned()), (8, "978-1".to_owned()), (8, "978-9".to_owned())]);
    let _ = id;

    let beat = next_of(&mut stdio, "notifications/events/heartbeat", Duration::from_secs(5)).await.unwrap();
    assert!(beat["params"]["cursor"].is_string(), "{beat}");

    // Cancelled: no more events on it, and no answer (the other stream goes on).
    stdio.send(json!({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 7}})).await;
    tokio::time::sleep(Duration::from_millis(100)).await;
    emitter.emit("book.restocked", book("978-1", 9)).unwrap();
    let mut streams = Vec::new();
    let until = tokio::time::Instant::now() + Duration::from_millis(700);
    while let Some(note) = stdio.next(until.saturating_duration_since(tokio::time::Instant::now())).await {
        assert!(note.get("id").is_none(), "a cancelled stream is not answered: {note}");
        if note["method"] == "notifications/events/event" {
            streams.push(note["params"]["_meta"]["io.modelcontextprotocol/subscriptionId"].clone());
        }
    }
    assert_eq!(streams, [json!(8)]);
}

#[tokio::test]
async fn a_push_stream_resumes_from_its_cursor_and_says_when_events_were_lost() {
    let events = Events::new().event(restocked()).buffer(Duration::from_secs(600), 2);
    let (server, emitter) = server_with(events);
    let mut stdio = Stdio::open(&server, true).await;
    let start = stdio.call(1, "events/poll", json!({"name": "book.restocked"})).await;
    let cursor = start["result"]["cursor"].as_str().unwrap().to_owned();
    for n in 0..3 {
        emitter.emit("book.restocked", book(&format!("b{n}"), n)).unwrap();
    }
    stdio.request(2, "events/stream", json!({"name": "book.restocked", "cursor": cursor})).await;
    let active = next_of(&mut stdio, "notifications/events/active", Duration::from_secs(5)).await.unwrap();
    assert_eq!(active["params"]["truncated"], true, "the buffer kept 2 of 3: {active}");
    let mut isbns = Vec::new();
    for _ in 0..2 {
        let note = next_of(&mut stdio, "notifications/events/event", Duration::from_secs(5)).await.unwrap();
        isbns.push(note["params"]["data"]["isbn"].as_str().unwrap().to_owned());
    }
    assert_eq!(isbns, ["b1", "b2"]);
}

#[tokio::test]
async fn push_streams_pass_no_timeout_layer_and_leave_the_in_flight_cap_to_other_requests() {
    #[mcp::tool]
    fn ping_tool() -> String {
        "pong".into()
    }
    let events = Events::new().event(restocked()).heartbeat(Duration::from_millis(150));
    let emitter = events.emitter();
    let server = mcp::Server::builder()
        .extension(events)
        .tool::<ping_tool>()
        .max_in_flight(2)
        .layer(tower::timeout::TimeoutLayer::new(Duration::from_millis(100)))
        .build()
        .unwrap();
    let mut stdio = Stdio::open(&server, true).await;
    for id in 1..=3 {
        stdio.request(id, "events/stream", json!({"name": "book.restocked"})).await;
    }
    for _ in 0..3 {
        next_of(&mut stdio, "notifications/events/active", Duration::from_secs(5)).await.unwrap();
    }
    tokio::time::sleep(Duration::from_millis(400)).await;
    let call = stdio.call(10, "tools/call", json!({"name": "ping_tool", "arguments": {}})).await;
    assert_eq!(call["result"]["content"][0]["text"], "pong", "three streams and the cap of 2: {call}");
    emitter.emit("book.restocked", book("after-the-timeout", 1)).unwrap();
    let mut got = 0;
    while got < 3 {
        let note = next_of(&mut stdio, "notifications/events/event", Duration::from_secs(5)).await;
        assert!(note.is_some(), "every stream outlived the 100 ms timeout layer");
        got += 1;
    }
}

/// The next SSE message of a response's stream.
async fn next(body: &mut common::http::Body) -> Value {
    loop {
        let event = body.next_event(Duration::from_secs(5)).await.expect("an SSE event");
        if !event.data.is_empty() {
            let message: Value = serde_json::from_str(&event.data).unwrap();
            common::schema::check_v2026_message(&message, Some("events/stream")).unwrap();
            return message;
        }
    }
}

#[tokio::test]
async fn a_push_stream_over_http_is_sse_and_closing_it_frees_its_place() {
    let events = Events::new().event(restocked()).max_streams(1).heartbeat(Duration::from_millis(200));
    let (server, emitter) = server_with(events);
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/mcp", listener.local_addr().unwrap());
    tokio::spawn(server.serve_http_on(listener, mcp::HttpOptions::default()));
    let client = common::http::Client { http: reqwest::Client::new(), url, session: None };

    let stream = common::v2026::request(1, "events/stream", json!({"name": "book.restocked"}), json!({}));
    let response = client.v2026_send(&stream).await;
    assert_eq!(response.status(), 200);
    let mut body = common::http::Body::of(response).await;
    let active = next(&mut body).await;
    assert_eq!(active["method"], "notifications/events/active", "{active}");
    assert_eq!(active["params"]["_meta"]["io.modelcontextprotocol/subscriptionId"], 1);
    emitter.emit("book.restocked", book("978-1", 1)).unwrap();
    let event = next(&mut body).await;
    assert_eq!(event["method"], "notifications/events/event", "{event}");
    assert_eq!(event["params"]["data"]["isbn"], "978-1");
    let beat = next(&mut body).await;
    assert_eq!(beat["method"], "notifications/events/heartbeat", "{beat}");

    // The one place is taken: a second stream is refused with the SEP's ResourceExhausted.
    let second = common::v2026::request(2, "events/stream", json!({"name": "book.restocked"}), json!({}));
    let refused: Value = serde_json::from_str(&client.v2026_send(&second).await.text().await.unwrap()).unwrap();
    assert_eq!(refused["error"]["code"], -32025, "{refused}");
    assert_eq!(refused["error"]["data"]["limit"], "streams");

    // Closing the first ends it and frees its place.
    drop(body);
    let mut admitted = false;
    for _ in 0..50 {
        tokio::time::sleep(Duration::from_millis(50)).await;
        let third = common::v2026::request(3, "events/stream", json!({"name": "book.restocked"}), json!({}));
        let response = client.v2026_send(&third).await;
        if response.headers()["content-type"].to_str().unwrap().starts_with("text/event-stream") {
            admitted = true;
            break;
        }
    }
    assert!(admitted, "the closed stream's place was given back");
}

#[tokio::test]
async fn a_checked_type_answers_polls_and_feeds_a_stream_from_its_check_function() {
    let upstream = Arc::new(AtomicU64::new(0));
    let failing = Arc::new(AtomicU64::new(0));
    let (up, fail) = (upstream.clone(), failing.clone());
    let orders = EventType::checked("order.placed", move |check| {
        let (up, fail) = (up.clone(), fail.clone());
        async move {
            match fail.load(Ordering::SeqCst) {
                1 => return Err(mcp::Error::internal("the upstream answered 503")),
                2 => return Err(mcp::Error::new(mcp::ErrorCode::FORBIDDEN, "access revoked")),
                _ => {}
            }
            let head = up.load(Ordering::SeqCst);
            let Some(cursor) = check.cursor else { return Ok(Checked::new(vec![], Some(head.to_string()))) };
            let from: u64 = cursor.parse().map_err(|_| mcp::Error::invalid_params("not a cursor of ours"))?;
            let events =
                (from + 1..=head).map(|n| Occurrence::new(format!("order-{n}"), json!({"order": n}))).collect();
            Ok(Checked::new(events, Some(head.to_string())))
        }
    });
    let events = Events::new().event(orders).next_poll(Duration::from_millis(50)).heartbeat(Duration::from_secs(60));
    let (server, emitter) = server_with(events);
    assert!(matches!(emitter.emit("order.placed", json!({})), Err(mcp::events::EmitError::NotEmitted(_))));
    let mut stdio = Stdio::open(&server, true).await;

    let start = stdio.call(1, "events/poll", json!({"name": "order.placed"})).await;
    assert_eq!(start["result"]["cursor"], "0", "{start}");
    upstream.store(2, Ordering::SeqCst);
    let got = stdio.call(2, "events/poll", json!({"name": "order.placed", "cursor": "0"})).await["result"].clone();
    assert_eq!(got["events"].as_array().unwrap().len(), 2, "{got}");
    assert_eq!(got["events"][1]["eventId"], "order-2");
    assert_eq!(got["cursor"], "2");
    assert_eq!(got["nextPollMs"], 50);

    stdio.request(3, "events/stream", json!({"name": "order.placed", "cursor": "2"})).await;
    let active = next_of(&mut stdio, "notifications/events/active", Duration::from_secs(5)).await.unwrap();
    assert_eq!(active["params"]["cursor"], "2");
    upstream.store(3, Ordering::SeqCst);
    let event = next_of(&mut stdio, "notifications/events/event", Duration::from_secs(5)).await.unwrap();
    assert_eq!((event["params"]["eventId"].clone(), event["params"]["cursor"].clone()), (json!("order-3"), json!("3")));

    failing.store(1, Ordering::SeqCst);
    let error = next_of(&mut stdio, "notifications/events/error", Duration::from_secs(5)).await.unwrap();
    assert_eq!(error["params"]["error"]["code"], -32603, "{error}");
    failing.store(2, Ordering::SeqCst);
    let ended = next_of(&mut stdio, "notifications/events/terminated", Duration::from_secs(5)).await.unwrap();
    assert_eq!(ended["params"]["error"]["code"], -32024, "{ended}");
    let last = stdio.response(3).await;
    assert_eq!(last["result"]["_meta"]["io.modelcontextprotocol/subscriptionId"], 3, "{last}");
}

#[test]
fn emit_refuses_what_it_cannot_deliver_and_two_types_of_one_name_do_not_build() {
    let events = Events::new().event(restocked());
    let emitter = events.emitter();
    assert!(matches!(emitter.emit("nope", json!({})), Err(mcp::events::EmitError::UnknownType(_))));
    let not_object = emitter.emit("book.restocked", json!([1])).unwrap_err();
    assert!(not_object.to_string().contains("JSON object"), "{not_object}");
    let twice = Events::new().event(restocked()).event(restocked());
    let e = mcp::Server::builder().extension(twice).build().unwrap_err();
    assert!(e.to_string().contains("book.restocked"), "{e}");
}

#[tokio::test]
async fn types_added_and_removed_while_serving_are_announced_and_a_removed_types_streams_end() {
    let (server, emitter) = server_with(Events::new().event(restocked()));
    // A client that understands the extension says so in its capabilities: only it hears `list_changed`.
    let understands = json!({"extensions": {"io.modelcontextprotocol/events": {}}});
    let mut stdio = Stdio::open_with(&server, true, understands).await;
    let discovered = stdio.call(1, "server/discover", json!({})).await;
    assert_eq!(
        discovered["result"]["capabilities"]["extensions"]["io.modelcontextprotocol/events"]["listChanged"],
        true
    );
    stdio.request(2, "subscriptions/listen", json!({"notifications": {"eventsListChanged": true}})).await;
    let ack = next_of(&mut stdio, "notifications/subscriptions/acknowledged", Duration::from_secs(5)).await.unwrap();
    assert_eq!(ack["params"]["notifications"]["eventsListChanged"], true, "{ack}");
    stdio.request(3, "events/stream", json!({"name": "book.restocked"})).await;
    next_of(&mut stdio, "notifications/events/active", Duration::from_secs(5)).await.unwrap();

    emitter.add_type(EventType::emitted("shop.opened"));
    let changed = next_of(&mut stdio, "notifications/events/list_changed", Duration::from_secs(5)).await.unwrap();
    assert_eq!(changed["params"]["_meta"]["io.modelcontextprotocol/subscriptionId"], 2, "{changed}");
    let listed = stdio.call(4, "events/list", json!({})).await;
    let names: Vec<&str> =
        listed["result"]["events"].as_array().unwrap().iter().map(|t| t["name"].as_str().unwrap()).collect();
    assert_eq!(names, ["book.restocked", "shop.opened"]);

    // A replaced emitted type keeps its buffer and its streams.
    emitter.add_type(restocked().description("A book is back in stock, now with more words."));
    next_of(&mut stdio, "notifications/events/list_changed", Duration::from_secs(5)).await.unwrap();
    emitter.emit("book.restocked", book("978-5", 5)).unwrap();
    let event = next_of(&mut stdio, "notifications/events/event", Duration::from_secs(5)).await.unwrap();
    assert_eq!(event["params"]["data"]["isbn"], "978-5");

    assert!(emitter.remove_type("book.restocked"));
    assert!(!emitter.remove_type("book.restocked"));
    let ended = next_of(&mut stdio, "notifications/events/terminated", Duration::from_secs(5)).await.unwrap();
    assert_eq!(ended["params"]["error"]["code"], -32023, "{ended}");
    assert_eq!(ended["params"]["error"]["data"]["kind"], "event");
    let last = stdio.response(3).await;
    common::schema::check_v2026_message(&last, Some("events/stream")).unwrap();
    let poll = stdio.call(5, "events/poll", json!({"name": "book.restocked"})).await;
    assert_eq!(code(&poll), -32023);
}

#[tokio::test]
async fn a_transform_shapes_each_subscriptions_payload_in_polls_and_streams_alike() {
    /// What a subscriber asks of the payload.
    #[derive(Deserialize, JsonSchema)]
    struct Shape {
        /// Leave the number of copies out.
        #[serde(default)]
        redact: bool,
    }
    #[derive(Serialize, Deserialize)]
    struct Stock {
        isbn: String,
        copies: Option<u32>,
    }
    let stock = EventType::emitted("book.stock").arguments::<Shape>().transform(|shape: &Shape, stock: Stock| {
        if shape.redact {
            Stock { copies: None, ..stock }
        } else {
            stock
        }
    });
    let (server, emitter) = server_with(Events::new().event(stock));
    let mut stdio = Stdio::open(&server, true).await;
    let start = stdio.call(1, "events/poll", json!({"name": "book.stock"})).await;
    let cursor = start["result"]["cursor"].clone();
    stdio.request(2, "events/stream", json!({"name": "book.stock", "arguments": {"redact": true}})).await;
    next_of(&mut stdio, "notifications/events/active", Duration::from_secs(5)).await.unwrap();
    emitter.emit("book.stock", json!({"isbn": "978-6", "copies": 4})).unwrap();
    let pushed = next_of(&mut stdio, "notifications/events/event", Duration::from_secs(5)).await.unwrap();
    assert_eq!(pushed["params"]["data"], json!({"isbn": "978-6", "copies": null}), "{pushed}");
    let plain = stdio.call(3, "events/poll", json!({"name": "book.stock", "cursor": cursor})).await;
    assert_eq!(plain["result"]["events"][0]["data"], json!({"isbn": "978-6", "copies": 4}), "{plain}");
    let redacted = stdio
        .call(4, "events/poll", json!({"name": "book.stock", "cursor": cursor, "arguments": {"redact": true}}))
        .await;
    assert_eq!(redacted["result"]["events"][0]["data"]["copies"], Value::Null, "{redacted}");
}

mod client {
    //! The client's side: `list_events`, and subscriptions that run the loops (poll and push, in process and over
    //! HTTP), keep their cursor, report gaps, hand each event over once, and keep their pace against a server
    //! that asks for a tight loop or goes silent.

    use super::*;
    use mcp::client::{Client, EraChoice, EventItem, EventSubscription, MemoryCursors};

    async fn in_process(server: &mcp::Server) -> Client {
        Client::builder().era(EraChoice::V2026).in_process(server.clone()).await.unwrap()
    }

    /// A client that listens for the event types (`ListenFilter::events`: `eventsListChanged`, the extension
    /// declared) hears them change, and lists them again.
    #[tokio::test]
    async fn a_client_listening_for_event_types_hears_them_change() {
        let (server, emitter) = server_with(Events::new().event(restocked()));
        let client = in_process(&server).await;
        let mut changes = client.listen(mcp::client::ListenFilter::new().events()).await.unwrap();
        assert_eq!(changes.acknowledged["eventsListChanged"], true, "{}", changes.acknowledged);
        emitter.add_type(EventType::emitted("book.reviewed"));
        let heard = tokio::time::timeout(Duration::from_secs(5), changes.next()).await.unwrap().unwrap();
        assert_eq!(heard.method, "notifications/events/list_changed");
        assert_eq!(client.list_events().await.unwrap().len(), 2);
    }

    /// The SEP forbids `events/*` to a server that did not declare the extension: the client sends none, and says
    /// why.
    #[tokio::test]
    async fn a_client_sends_no_events_request_to_a_server_without_events() {
        let server = mcp::Server::builder().name("no-events").build().unwrap();
        let client = in_process(&server).await;
        let refused = client.list_events().await.unwrap_err();
        let why = format!("{refused}");
        assert!(matches!(refused, mcp::client::Error::Usage(_)), "{refused:?}");
        assert!(why.contains("io.modelcontextprotocol/events"), "{why}");
        let sub = client.subscribe_events(EventSubscription::new("anything").delivery(Delivery::Poll)).await;
        assert!(matches!(sub, Err(mcp::client::Error::Usage(_))), "{:?}", sub.err());
    }

    async fn next_event(stream: &mut mcp::client::EventStream) -> mcp::client::ReceivedEvent {
        loop {
            let item = tokio::time::timeout(Duration::from_secs(5), stream.next()).await.expect("an event in time");
            match item.expect("the subscription goes on") {
                EventItem::Event(event) => return event,
                EventItem::Gap | EventItem::Error(_) => continue,
                other => panic!("{other:?}"),
            }
        }
    }

    /// A type that cannot replay (null cursors) has no position to have advanced past: its `truncated` is no gap
    /// (the SEP has clients ignore it), in poll and push. A type offered by webhook only is no poll for a client
    /// without a receiver: the subscription is refused naming what it needs.
    #[tokio::test]
    async fn a_type_without_replay_reports_no_gap_and_a_webhook_only_type_asks_for_a_receiver() {
        let unreplayable = EventType::checked("feed.live", |_check| async {
            Ok(Checked::new(vec![Occurrence::new("live-1", json!({"n": 1}))], None).truncated())
        });
        let hooked = EventType::emitted("hook.only").delivery(&[Delivery::Webhook]);
        let events = Events::new().event(unreplayable).event(hooked).next_poll(Duration::from_millis(20));
        let (server, _) = server_with(events.webhooks(mcp::events::Webhooks::new()));
        let client = in_process(&server).await;
        for mode in [Delivery::Poll, Delivery::Push] {
            let sub = EventSubscription::new("feed.live").delivery(mode).poll_floor(Duration::from_millis(20));
            let mut stream = client.subscribe_events(sub).await.unwrap();
            let first = tokio::time::timeout(Duration::from_secs(5), stream.next()).await.expect("in time");
            assert!(matches!(&first, Some(EventItem::Event(e)) if e.event_id == "live-1"), "{mode:?}: {first:?}");
            let more = tokio::time::timeout(Duration::from_millis(300), stream.next()).await;
            assert!(more.is_err(), "{mode:?}: nothing more, no gap: {more:?}");
        }
        let refused = client.subscribe_events(EventSubscription::new("hook.only")).await.unwrap_err();
        assert!(matches!(refused, mcp::client::Error::Usage(_)), "{refused:?}");
        assert!(refused.to_string().contains("webhook only"), "{refused}");
    }

    #[tokio::test]
    async fn list_events_reads_every_page_typed() {
        let mut events = Events::new().event(restocked().delivery(&[Delivery::Poll]));
        for n in 0..120 {
            events = events.event(EventType::emitted(format!("zz.{n:03}")));
        }
        let (server, _) = server_with(events);
        let types = in_process(&server).await.list_events().await.unwrap();
        assert_eq!(types.len(), 121);
        assert_eq!(types[0].name, "book.restocked");
        assert_eq!(types[0].delivery, [Delivery::Poll]);
        assert_eq!(types[0].description.as_deref(), Some("A book is back in stock."));
        assert_eq!(types[0].payload_schema["required"], json!(["isbn", "copies"]));
    }

    #[tokio::test]
    async fn a_poll_subscription_delivers_matching_events_and_starts_again_from_its_kept_cursor() {
        let (server, emitter) = server_with(Events::new().event(restocked()).next_poll(Duration::from_millis(20)));
        let client = in_process(&server).await;
        let cursors = Arc::new(MemoryCursors::default());
        let sub = EventSubscription::new("book.restocked")
            .arguments(json!({"isbn": "978-1"}))
            .delivery(Delivery::Poll)
            .poll_floor(Duration::from_millis(20))
            .cursors(cursors.clone());
        let mut stream = client.subscribe_events(sub.clone()).await.unwrap();
        assert_eq!(stream.delivery, Delivery::Poll);
        emitter.emit("book.restocked", book("978-2", 1)).unwrap();
        emitter.emit("book.restocked", book("978-1", 2)).unwrap();
        assert_eq!(next_event(&mut stream).await.data, json!({"isbn": "978-1", "copies": 2}));
        drop(stream);

        // Away for a while; back with the same cursors: what happened meanwhile comes first.
        tokio::time::sleep(Duration::from_millis(100)).await;
        emitter.emit("book.restocked", book("978-1", 7)).unwrap();
        let mut again = client.subscribe_events(sub).await.unwrap();
        assert_eq!(next_event(&mut again).await.data["copies"], 7);
    }

    #[tokio::test]
    async fn a_push_subscription_follows_the_stream_in_process_and_over_http() {
        let events = Events::new().event(restocked()).heartbeat(Duration::from_millis(100));
        let (server, emitter) = server_with(events);
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}/mcp", listener.local_addr().unwrap());
        tokio::spawn(server.clone().serve_http_on(listener, mcp::HttpOptions::default()));
        let over_http = Client::builder().era(EraChoice::V2026).http(url.clone()).await.unwrap();
        for client in [in_process(&server).await, over_http] {
            let sub = EventSubscription::new("book.restocked").heartbeat(Duration::from_millis(100));
            let mut stream = client.subscribe_events(sub).await.unwrap();
            assert_eq!(stream.delivery, Delivery::Push, "push is chosen when the type offers it");
            let id = emitter.emit("book.restocked", book("978-3", 3)).unwrap();
            let event = next_event(&mut stream).await;
            assert_eq!((event.event_id, event.name), (id, "book.restocked".to_owned()));
            // Heartbeats keep it alive well past twice their interval.
            tokio::time::sleep(Duration::from_millis(500)).await;
            emitter.emit("book.restocked", book("978-4", 4)).unwrap();
            assert_eq!(next_event(&mut stream).await.data["isbn"], "978-4");
        }
    }

    /// A TCP relay the test can break: it drops every connection it carries and refuses new ones until healed. A
    /// stand-in for a network that fails, which no real component lets a test switch off and on at a given moment.
    struct Relay {
        address: std::net::SocketAddr,
        broken: Arc<std::sync::atomic::AtomicBool>,
        carried: Arc<std::sync::Mutex<tokio::task::JoinSet<()>>>,
    }

    impl Relay {
        async fn to(back: std::net::SocketAddr) -> Relay {
            let front = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
            let address = front.local_addr().unwrap();
            let broken = Arc::new(std::sync::atomic::AtomicBool::new(false));
            let carried = Arc::new(std::sync::Mutex::new(tokio::task::JoinSet::new()));
            let (b, c) = (broken.clone(), carried.clone());
            tokio::spawn(async move {
                while let Ok((mut inbound, _)) = front.accept().await {
                    if b.load(Ordering::SeqCst) {
                        continue; // dropped: refused
                    }
                    c.lock().unwrap().spawn(async move {
                        if let Ok(mut out) = tokio::net::TcpStream::connect(back).await {
                            let _ = tokio::io::copy_bidirectional(&mut inbound, &mut out).await;
                        }
                    });
                }
            });
            Relay { address, broken, carried }
        }

        fn set_broken(&self, broken: bool) {
            self.broken.store(broken, Ordering::SeqCst);
            if broken {
                self.carried.lock().unwrap().abort_all();
            }
        }
    }

    #[tokio::test]
    async fn a_poll_subscription_outlives_a_broken_connection_and_goes_on_from_its_cursor() {
        let (server, emitter) = server_with(Events::new().event(restocked()).next_poll(Duration::from_millis(30)));
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let back = listener.local_addr().unwrap();
        tokio::spawn(server.serve_http_on(listener, mcp::HttpOptions::default()));
        let relay = Relay::to(back).await;
        let url = format!("http://{}/mcp", relay.address);
        let client = Client::builder().era(EraChoice::V2026).http(url).await.unwrap();
        let sub =
            EventSubscription::new("book.restocked").delivery(Delivery::Poll).poll_floor(Duration::from_millis(30));
        let mut stream = client.subscribe_events(sub).await.unwrap();
        emitter.emit("book.restocked", book("before", 1)).unwrap();
        assert_eq!(next_event(&mut stream).await.data["isbn"], "before");

        relay.set_broken(true);
        emitter.emit("book.restocked", book("during", 2)).unwrap();
        tokio::time::sleep(Duration::from_millis(300)).await;
        relay.set_broken(false);
        assert_eq!(next_event(&mut stream).await.data["isbn"], "during", "polled again from its cursor");
        assert!(stream.ended().is_none());
    }

    #[tokio::test]
    async fn errors_of_the_subscription_come_back_from_subscribe() {
        let (server, _) = server_with(Events::new().event(restocked().delivery(&[Delivery::Poll])));
        let client = in_process(&server).await;
        let unknown = client.subscribe_events(EventSubscription::new("nope").delivery(Delivery::Poll)).await;
        assert!(format!("{:?}", unknown.unwrap_err()).contains("-32023"));
        let push = client.subscribe_events(EventSubscription::new("book.restocked").delivery(Delivery::Push)).await;
        assert!(format!("{:?}", push.unwrap_err()).contains("-32026"));
        let bad = EventSubscription::new("book.restocked").arguments(json!({"isbn": 1}));
        assert!(format!("{:?}", client.subscribe_events(bad).await.unwrap_err()).contains("-32602"));
    }

    /// A checked type whose check function counts its calls and answers with `next_poll`.
    fn counted(calls: Arc<AtomicU64>, next_poll: Duration) -> EventType {
        EventType::checked("tick", move |_check| {
            let calls = calls.clone();
            async move {
                let n = calls.fetch_add(1, Ordering::SeqCst);
                Ok(Checked::new(vec![], Some(n.to_string())).next_poll(next_poll))
            }
        })
    }

    // On paused time: the server and the client are in process, and the test waits on their own timers only.
    #[tokio::test(start_paused = true)]
    async fn a_poll_loop_keeps_its_floor_against_a_server_that_asks_for_a_tight_loop() {
        let calls = Arc::new(AtomicU64::new(0));
        let (server, _) = server_with(Events::new().event(counted(calls.clone(), Duration::ZERO)));
        let client = in_process(&server).await;
        let sub = EventSubscription::new("tick").delivery(Delivery::Poll).poll_floor(Duration::from_millis(200));
        let stream = client.subscribe_events(sub).await.unwrap();
        tokio::time::sleep(Duration::from_millis(1000)).await;
        let polls = calls.load(Ordering::SeqCst);
        assert!((5..=6).contains(&polls), "one poll per 200 ms floor in a second, not a tight loop: {polls}");
        drop(stream);
    }

    #[tokio::test(start_paused = true)]
    async fn a_silent_push_stream_is_opened_again_from_its_cursor() {
        let calls = Arc::new(AtomicU64::new(0));
        let events =
            Events::new().event(counted(calls.clone(), Duration::from_secs(60))).heartbeat(Duration::from_secs(60));
        let (server, _) = server_with(events);
        let client = in_process(&server).await;
        let sub = EventSubscription::new("tick").delivery(Delivery::Push).heartbeat(Duration::from_millis(100));
        let stream = client.subscribe_events(sub).await.unwrap();
        tokio::time::sleep(Duration::from_millis(1200)).await;
        let opened = calls.load(Ordering::SeqCst);
        assert!(opened >= 2, "a stream silent for twice its heartbeat is opened again: {opened} opens");
        drop(stream);
    }

    #[tokio::test]
    async fn a_subscription_the_server_ends_says_why() {
        let forbidden = Arc::new(AtomicU64::new(0));
        let gate = forbidden.clone();
        let revoked = EventType::checked("revoked", move |_check| {
            let gate = gate.clone();
            async move {
                if gate.load(Ordering::SeqCst) == 1 {
                    return Err(mcp::Error::new(mcp::ErrorCode::FORBIDDEN, "access revoked"));
                }
                Ok(Checked::new(vec![], Some("0".into())))
            }
        });
        let (server, _) = server_with(Events::new().event(revoked).next_poll(Duration::from_millis(30)));
        let client = in_process(&server).await;
        let mut stream =
            client.subscribe_events(EventSubscription::new("revoked").heartbeat(Duration::from_secs(5))).await.unwrap();
        forbidden.store(1, Ordering::SeqCst);
        let end = tokio::time::timeout(Duration::from_secs(5), stream.next()).await.unwrap();
        assert!(end.is_none(), "{end:?}");
        assert_eq!(stream.ended().map(|e| e.code), Some(mcp::ErrorCode::FORBIDDEN));
    }
}

/// The bookshop (examples/bookshop.rs) over stdio: `book.back_on_shelf` is listed, and a push stream for "Dune"
/// hears of it when an order of Dune is cancelled and its hold released.
#[test]
fn the_bookshop_tells_a_subscriber_when_a_book_is_back_on_the_shelf() {
    let mut shop = common::Server::spawn(common::example("bookshop"));
    let listed = shop.v2026_call("events/list", json!({}));
    assert_eq!(listed["result"]["events"][0]["name"], "book.back_on_shelf", "{listed}");
    let watch = json!({"name": "book.back_on_shelf", "arguments": {"title": "Dune"}});
    shop.v2026_request_with_id(json!("shelf"), "events/stream", watch, json!({}));
    shop.wait_for("the stream's confirmation", |m| m["method"] == "notifications/events/active");
    let order =
        shop.v2026_request("tools/call", json!({"name": "order_book", "arguments": {"title": "Dune"}}), json!({}));
    std::thread::sleep(Duration::from_millis(300));
    shop.cancel(&order, "changed my mind");
    let event = shop.wait_for("the event", |m| m["method"] == "notifications/events/event");
    assert_eq!(event["params"]["data"], json!({"title": "Dune"}), "{event}");
    assert_eq!(event["params"]["_meta"]["io.modelcontextprotocol/subscriptionId"], "shelf");
}
