//! `#[mcp::event]`: event types declared on ordinary Rust functions. An emitted type's function is its match rule
//! (its owned parameters the subscription's arguments, its last parameter the payload), a checked type's reads the
//! upstream from the cursor; the schemas come from the types and doc comments; `Events::registered()` finds them.

use std::time::Duration;

use mcp::client::{Client, Delivery, EraChoice, EventItem as Item, EventSubscription};
use mcp::events::{Check, Checked, Events, Occurrence};
use serde_json::{json, Value};

/// A book is back in stock.
#[mcp::event(name = "book.restocked")]
fn restocked(
    /// Only this book; every book if absent.
    isbn: Option<String>,
    /// At least this many copies.
    min_copies: Option<u32>,
    book: &Restocked,
) -> bool {
    isbn.is_none_or(|isbn| isbn == book.isbn) && min_copies.is_none_or(|n| book.copies >= n)
}

/// A book back in stock.
#[derive(serde::Serialize, serde::Deserialize, schemars::JsonSchema)]
struct Restocked {
    /// Its ISBN.
    isbn: String,
    /// How many copies came in.
    copies: u32,
}

/// Orders placed since the cursor: one per position, as an upstream with its own history.
#[mcp::event(name = "order.placed", payload = Order, delivery = [poll])]
async fn order_placed(
    /// Only orders of this shop.
    shop: String,
    check: Check,
) -> Result<Checked, mcp::Error> {
    let at: u64 = match check.cursor.as_deref() {
        None => return Ok(Checked::new(vec![], Some("0".into()))),
        Some(c) => c.parse().map_err(|_| mcp::Error::invalid_params("a cursor this shop did not give"))?,
    };
    let order = Occurrence::new(format!("{shop}-{}", at + 1), json!({ "shop": shop, "number": at + 1 }));
    Ok(Checked::new(vec![order], Some((at + 1).to_string())))
}

/// An order.
#[derive(serde::Serialize, schemars::JsonSchema)]
struct Order {
    shop: String,
    number: u64,
}

async fn client(events: Events) -> (Client, mcp::events::Emitter) {
    let emitter = events.emitter();
    let server = mcp::Server::builder().extension(events).build().unwrap();
    (Client::builder().era(EraChoice::V2026).in_process(server).await.unwrap(), emitter)
}

#[tokio::test]
async fn declared_types_are_listed_with_schemas_from_their_rust_types() {
    let (client, _) = client(Events::new().event_of::<restocked>().event_of::<order_placed>()).await;
    let listed = client.request("events/list", json!({})).await.unwrap();
    let types = listed["events"].as_array().unwrap();
    let book = types.iter().find(|t| t["name"] == "book.restocked").unwrap();
    assert_eq!(book["description"], "A book is back in stock.");
    assert_eq!(book["inputSchema"]["properties"]["isbn"]["description"], "Only this book; every book if absent.");
    assert!(book["inputSchema"].get("required").is_none_or(|r| r.as_array().unwrap().is_empty()), "{book}");
    assert_eq!(book["payloadSchema"]["properties"]["copies"]["description"], "How many copies came in.");
    assert_eq!(book["delivery"], json!(["poll", "push"]));
    let orders = types.iter().find(|t| t["name"] == "order.placed").unwrap();
    assert_eq!(orders["delivery"], json!(["poll"]));
    assert_eq!(orders["inputSchema"]["required"], json!(["shop"]));
    assert!(orders["payloadSchema"]["properties"]["number"].is_object(), "{orders}");
}

#[tokio::test]
async fn an_emitted_types_function_is_its_match_rule() {
    let (client, emitter) = client(Events::new().event_of::<restocked>()).await;
    let sub = EventSubscription::new("book.restocked")
        .arguments(json!({"isbn": "978-1", "min_copies": 2}))
        .delivery(Delivery::Push);
    let mut stream = client.subscribe_events(sub).await.unwrap();
    emitter.emit_of::<restocked>(Restocked { isbn: "978-1".into(), copies: 1 }).unwrap();
    emitter.emit_of::<restocked>(Restocked { isbn: "978-2".into(), copies: 5 }).unwrap();
    emitter.emit_of::<restocked>(Restocked { isbn: "978-1".into(), copies: 3 }).unwrap();
    match tokio::time::timeout(Duration::from_secs(5), stream.next()).await.unwrap() {
        Some(Item::Event(event)) => assert_eq!(event.data, json!({"isbn": "978-1", "copies": 3})),
        other => panic!("{other:?}"),
    }

    // Arguments the function does not take, or of the wrong type, are refused.
    for wrong in [json!({"colour": "red"}), json!({"min_copies": "two"})] {
        let polled = client.request("events/poll", json!({"name": "book.restocked", "arguments": wrong})).await;
        let e = polled.expect_err("refused");
        assert!(e.to_string().contains("-32602") || e.to_string().contains("argument"), "{e}");
    }
}

#[tokio::test]
async fn a_checked_types_function_reads_from_the_cursor() {
    let (client, _) = client(Events::registered()).await;
    let poll = |cursor: Value| {
        client.request("events/poll", json!({"name": "order.placed", "arguments": {"shop": "north"}, "cursor": cursor}))
    };
    let first = poll(Value::Null).await.unwrap();
    assert_eq!(first["cursor"], "0");
    let next = poll(first["cursor"].clone()).await.unwrap();
    assert_eq!(next["events"][0]["eventId"], "north-1");
    assert_eq!(next["events"][0]["data"], json!({"shop": "north", "number": 1}));
    let refused = client.request("events/poll", json!({"name": "order.placed", "arguments": {}, "cursor": "0"})).await;
    assert!(refused.is_err(), "`shop` is required");
}
