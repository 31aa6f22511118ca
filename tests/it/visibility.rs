//! Per-caller visibility (`ServerBuilder::visible`, `include_tags`, `exclude_tags`, `Server::visibility_changed`):
//! a hidden tool, prompt, resource or template is not listed, not callable (the unknown-tool error), not readable and
//! not completable, for the callers a rule hides it from and no one else, in both eras; tags from the attributes;
//! mounted servers' items too; and a change of what a rule reads told to every client.

use crate::common;

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use mcp::client::{Client, EraChoice, ListenFilter};
use mcp::visibility::{Caller, Item};
use mcp::Server;
use serde_json::{json, Value};

/// Reset the shop.
#[mcp::tool(tags = ["admin"])]
fn reset() -> String {
    "reset".into()
}

/// Say hello.
#[mcp::tool(tags = ["public"])]
fn hello() -> String {
    "hello".into()
}

/// Count the stock.
#[mcp::tool]
fn stock() -> String {
    "42".into()
}

/// The audit report.
#[mcp::prompt(tags = ["admin"], complete(month = months))]
fn audit(
    /// Which month.
    month: String,
) -> String {
    format!("Audit {month}")
}

fn months(typed: &str) -> Vec<String> {
    ["january", "february"].into_iter().filter(|m| m.starts_with(typed)).map(String::from).collect()
}

/// The ledger.
#[mcp::resource(uri = "shop://ledger", tags = ["admin"])]
fn ledger() -> String {
    "all the money".into()
}

/// A day of the ledger.
#[mcp::resource(uri = "shop://ledger/{day}", tags = ["admin"])]
fn ledger_day(day: String) -> String {
    format!("the money of {day}")
}

fn is_admin(caller: &Caller) -> bool {
    caller.client().is_some_and(|c| c.info.name == "admin-console")
}

fn shop() -> Server {
    Server::builder()
        .tool::<reset>()
        .tool::<hello>()
        .tool::<stock>()
        .prompt::<audit>()
        .resource::<ledger>()
        .resource::<ledger_day>()
        .visible(|caller: &Caller, item: &Item| !item.tags().contains(&"admin") || is_admin(caller))
        .build()
        .unwrap()
}

async fn client(server: &Server, era: EraChoice, name: &str) -> Client {
    Client::builder().name(name).era(era).in_process(server.clone()).await.unwrap()
}

fn names(list: &Value, key: &str, field: &str) -> Vec<String> {
    list[key].as_array().unwrap().iter().map(|t| t[field].as_str().unwrap().to_owned()).collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_hidden_item_is_not_listed_called_read_or_completed_by_those_it_is_hidden_from() {
    let server = shop();
    for era in [EraChoice::V2025, EraChoice::V2026] {
        let admin = client(&server, era, "admin-console").await;
        let visitor = client(&server, era, "visitor").await;

        let tools = admin.request("tools/list", json!({})).await.unwrap();
        assert_eq!(names(&tools, "tools", "name"), ["hello", "reset", "stock"], "{era:?}");
        let tools = visitor.request("tools/list", json!({})).await.unwrap();
        assert_eq!(names(&tools, "tools", "name"), ["hello", "stock"], "{era:?}");
        if era == EraChoice::V2025 {
            common::schema::check_server_message(
                &json!({"jsonrpc": "2.0", "id": 1, "result": tools}),
                Some("tools/list"),
            )
            .unwrap();
        }

        assert_eq!(admin.call_tool("reset", json!({})).await.unwrap().text(), Some("reset"));
        let hidden = visitor.call_tool("reset", json!({})).await.unwrap_err();
        let unknown = visitor.call_tool("no_such_tool", json!({})).await.unwrap_err();
        let said = |e: &mcp::client::Error| format!("{e}").replace("reset", "X").replace("no_such_tool", "X");
        assert_eq!(said(&hidden), said(&unknown), "hidden is answered as unknown: {hidden}");

        let prompts = visitor.request("prompts/list", json!({})).await.unwrap();
        assert!(names(&prompts, "prompts", "name").is_empty(), "{prompts}");
        let got = visitor.get_prompt("audit", json!({"month": "may"})).await.unwrap_err();
        assert!(format!("{got}").contains("unknown prompt"), "{got}");
        assert_eq!(
            admin.get_prompt("audit", json!({"month": "may"})).await.unwrap()["messages"][0]["content"]["text"],
            "Audit may"
        );

        let completion = |who: &Client| who.complete(json!({"type": "ref/prompt", "name": "audit"}), "month", "j");
        let completed = completion(&admin).await.unwrap();
        assert_eq!(completed["completion"]["values"], json!(["january"]));
        let refused = completion(&visitor).await.unwrap_err();
        assert!(format!("{refused}").contains("unknown prompt"), "{refused}");
        let template = json!({"type": "ref/resource", "uri": "shop://ledger/{day}"});
        assert!(visitor.complete(template, "day", "m").await.is_err());

        let resources = visitor.request("resources/list", json!({})).await.unwrap();
        assert!(resources["resources"].as_array().unwrap().is_empty(), "{resources}");
        let templates = visitor.request("resources/templates/list", json!({})).await.unwrap();
        assert!(templates["resourceTemplates"].as_array().unwrap().is_empty(), "{templates}");
        assert!(visitor.read_resource("shop://ledger").await.is_err());
        assert!(visitor.read_resource("shop://ledger/monday").await.is_err());
        let read = admin.read_resource("shop://ledger/monday").await.unwrap();
        assert_eq!(read["contents"][0]["text"], "the money of monday");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tag_filters_hide_from_everyone() {
    let only_public =
        Server::builder().tool::<reset>().tool::<hello>().tool::<stock>().include_tags(&["public"]).build().unwrap();
    let no_admin =
        Server::builder().tool::<reset>().tool::<hello>().tool::<stock>().exclude_tags(&["admin"]).build().unwrap();
    for era in [EraChoice::V2025, EraChoice::V2026] {
        let c = client(&only_public, era, "anyone").await;
        assert_eq!(c.list_tools().await.unwrap().iter().map(|t| t.name.clone()).collect::<Vec<_>>(), ["hello"]);
        assert!(c.call_tool("stock", json!({})).await.is_err());
        let c = client(&no_admin, era, "admin-console").await;
        assert_eq!(
            c.list_tools().await.unwrap().iter().map(|t| t.name.clone()).collect::<Vec<_>>(),
            ["hello", "stock"]
        );
        assert!(c.call_tool("reset", json!({})).await.is_err());
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_mounted_servers_items_follow_the_rules_and_a_change_is_told_to_every_client() {
    let stockroom = Server::builder().tool::<stock>().tool::<reset>().build().unwrap();
    let open = Arc::new(AtomicBool::new(false));
    let rule = open.clone();
    let server = Server::builder()
        .tool::<hello>()
        .mount("room", stockroom)
        .visible(move |_, item| !item.name().starts_with("room_") || rule.load(Ordering::SeqCst))
        .build()
        .unwrap();
    for era in [EraChoice::V2025, EraChoice::V2026] {
        open.store(false, Ordering::SeqCst);
        let c = client(&server, era, "anyone").await;
        let listed = |c: &Client| {
            let c = c.clone();
            async move {
                c.list::<mcp::client::Tool>().fresh().await.unwrap().iter().map(|t| t.name.clone()).collect::<Vec<_>>()
            }
        };
        assert_eq!(listed(&c).await, ["hello"]);
        assert!(c.call_tool("room_stock", json!({})).await.is_err());
        let mut changes = c.listen(ListenFilter::new().tools()).await.unwrap();
        open.store(true, Ordering::SeqCst);
        server.visibility_changed();
        let heard = tokio::time::timeout(Duration::from_secs(5), changes.next()).await.expect("list_changed").unwrap();
        assert_eq!(heard.method, "notifications/tools/list_changed");
        assert_eq!(listed(&c).await, ["hello", "room_reset", "room_stock"]);
        assert_eq!(c.call_tool("room_stock", json!({})).await.unwrap().text(), Some("42"));
    }
}
