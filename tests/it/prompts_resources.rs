//! Prompts, resources, templates, subscriptions, completion, pagination and list changes, over stdio, with every
//! message checked against the 2025-11-25 schema.

use crate::common;

use std::collections::BTreeSet;
use std::process::Command;
use std::time::Duration;

use common::{testbed, Server};
use serde_json::{json, Value};

fn ready() -> Server {
    let mut s = Server::spawn(testbed());
    s.initialize();
    s
}

fn find<'a>(list: &'a Value, key: &str, field: &str, value: &str) -> &'a Value {
    list[key].as_array().unwrap().iter().find(|x| x[field] == value).unwrap_or_else(|| panic!("no {value} in {list}"))
}

#[test]
fn capabilities_advertise_prompts_resources_subscriptions_and_completion() {
    let mut s = Server::spawn(testbed());
    let caps = s.initialize()["result"]["capabilities"].clone();
    assert_eq!(caps["prompts"], json!({"listChanged": true}));
    assert_eq!(caps["resources"], json!({"subscribe": true, "listChanged": true}));
    assert_eq!(caps["tools"], json!({"listChanged": true}));
    assert_eq!(caps["completions"], json!({}));
}

#[test]
fn prompts_are_listed_with_their_arguments_and_rendered() {
    let mut s = ready();
    let list = s.call("prompts/list", json!({}))["result"].clone();
    let greeting = find(&list, "prompts", "name", "greeting");
    assert_eq!(greeting["title"], "Greeting");
    assert_eq!(greeting["description"], "Greet someone, some number of times.");
    assert_eq!(greeting["icons"], json!([{"src": "https://example.com/wave.png"}]));
    assert_eq!(
        greeting["arguments"],
        json!([
            {"name": "name", "description": "Who to greet.", "required": true},
            {"name": "times", "description": "How many times (a number, sent as text).", "required": false},
        ])
    );

    let r = s.call("prompts/get", json!({"name": "greeting", "arguments": {"name": "Ada", "times": "2"}}));
    assert_eq!(
        r["result"],
        json!({"messages": [{"role": "user", "content": {"type": "text", "text": "Hello, Ada! Hello, Ada!"}}]})
    );
    let r = s.call("prompts/get", json!({"name": "conversation"}));
    let messages = r["result"]["messages"].as_array().unwrap();
    let kinds: Vec<_> = messages.iter().map(|m| m["content"]["type"].as_str().unwrap()).collect();
    assert_eq!(kinds, ["text", "image", "audio", "resource_link", "resource"]);
    assert_eq!(messages[0]["content"]["annotations"], json!({"audience": ["user"], "priority": 0.5}));
    assert_eq!(r["result"]["description"], "every kind of content");
}

#[test]
fn prompt_errors_name_what_is_wrong() {
    let mut s = ready();
    let unknown = s.call("prompts/get", json!({"name": "nope"}));
    assert_eq!(unknown["error"]["code"], -32602);
    assert!(unknown["error"]["message"].as_str().unwrap().contains("nope"));
    let missing = s.call("prompts/get", json!({"name": "greeting", "arguments": {}}));
    assert_eq!(missing["error"]["code"], -32602);
    assert_eq!(missing["error"]["message"], "missing required argument `name`");
    let bad = s.call("prompts/get", json!({"name": "greeting", "arguments": {"name": "A", "times": "many"}}));
    assert_eq!(bad["error"]["code"], -32602);
    assert!(bad["error"]["message"].as_str().unwrap().starts_with("invalid argument `times`"), "{bad}");
    let broken = s.call("prompts/get", json!({"name": "broken_prompt"}));
    assert_eq!(broken["error"], json!({"code": -32603, "message": "the prompt store is down"}));
}

#[test]
fn resources_and_templates_are_listed_and_read() {
    let mut s = ready();
    let list = s.call("resources/list", json!({}))["result"].clone();
    let uris: BTreeSet<_> = list["resources"].as_array().unwrap().iter().map(|r| r["uri"].as_str().unwrap()).collect();
    let expected = ["test://static", "test://bytes", "test://blob/1mib", "files:///docs/a.txt", "files:///docs/b.txt"];
    assert_eq!(uris, BTreeSet::from(expected));
    let static_text = find(&list, "resources", "uri", "test://static");
    assert_eq!(static_text["mimeType"], "text/plain");
    assert_eq!(static_text["size"], 5);
    assert_eq!(static_text["annotations"], json!({"audience": ["user"], "priority": 0.9}));

    let templates = s.call("resources/templates/list", json!({}))["result"].clone();
    let item = find(&templates, "resourceTemplates", "uriTemplate", "test://items/{id}");
    assert_eq!(item["name"], "item");
    assert_eq!(item["description"], "One item, by number.");

    let read = |s: &mut Server, uri: &str| s.call("resources/read", json!({"uri": uri}));
    assert_eq!(
        read(&mut s, "test://static")["result"],
        json!({"contents": [{"uri": "test://static", "mimeType": "text/plain", "text": "hello"}]})
    );
    assert_eq!(
        read(&mut s, "test://bytes")["result"]["contents"][0],
        json!({"uri": "test://bytes", "mimeType": "application/octet-stream", "blob": "AAEC/w=="})
    );
    assert_eq!(read(&mut s, "test://items/42")["result"]["contents"][0]["text"], r#"{"id":42}"#);
    assert_eq!(read(&mut s, "files:///docs/a.txt")["result"]["contents"][0]["text"], "contents of docs/a.txt");

    let missing = read(&mut s, "test://nothing");
    assert_eq!(missing["error"]["code"], -32002);
    assert_eq!(missing["error"]["data"], json!({"uri": "test://nothing"}));
    let bad_var = read(&mut s, "test://items/abc");
    assert_eq!(bad_var["error"]["code"], -32602);
    assert!(bad_var["error"]["message"].as_str().unwrap().contains("`id`"), "{bad_var}");
    let handler_error = read(&mut s, "files:///etc/passwd");
    assert_eq!(handler_error["error"]["message"], "no file etc/passwd");
}

#[test]
fn updates_go_only_to_subscribers_of_that_uri() {
    let mut s = ready();
    let updates = |s: &mut Server| -> Vec<String> {
        s.drain(Duration::from_millis(300))
            .into_iter()
            .filter(|m| m["method"] == "notifications/resources/updated")
            .map(|m| m["params"]["uri"].as_str().unwrap().to_owned())
            .collect()
    };
    s.call_tool("touch", json!({"uri": "test://static"}));
    assert!(updates(&mut s).is_empty(), "not subscribed yet");
    assert_eq!(s.call("resources/subscribe", json!({"uri": "test://static"}))["result"], json!({}));
    s.call_tool("touch", json!({"uri": "test://static"}));
    s.call_tool("touch", json!({"uri": "test://bytes"}));
    assert_eq!(updates(&mut s), ["test://static"]);
    assert_eq!(s.call("resources/unsubscribe", json!({"uri": "test://static"}))["result"], json!({}));
    s.call_tool("touch", json!({"uri": "test://static"}));
    assert!(updates(&mut s).is_empty());
    assert_eq!(s.call("resources/subscribe", json!({}))["error"]["code"], -32602);
}

#[test]
fn completion_for_prompt_arguments_and_template_variables() {
    let mut s = ready();
    let r = s.call(
        "completion/complete",
        json!({"ref": {"type": "ref/prompt", "name": "greeting"}, "argument": {"name": "name", "value": "A"}}),
    );
    assert_eq!(r["result"], json!({"completion": {"values": ["Ada", "Alan"], "total": 2, "hasMore": false}}));
    let r = s.call(
        "completion/complete",
        json!({"ref": {"type": "ref/resource", "uri": "test://items/{id}"}, "argument": {"name": "id", "value": ""}}),
    );
    let completion = &r["result"]["completion"];
    assert_eq!(completion["values"].as_array().unwrap().len(), 100);
    assert_eq!(completion["total"], 150);
    assert_eq!(completion["hasMore"], true);
    // An argument without a completion function completes to nothing.
    let r = s.call(
        "completion/complete",
        json!({"ref": {"type": "ref/prompt", "name": "greeting"}, "argument": {"name": "times", "value": "1"}}),
    );
    assert_eq!(r["result"]["completion"]["values"], json!([]));
    for bad in [
        json!({"ref": {"type": "ref/prompt", "name": "nope"}, "argument": {"name": "x", "value": ""}}),
        json!({"ref": {"type": "ref/prompt", "name": "greeting"}, "argument": {"name": "nope", "value": ""}}),
        json!({"ref": {"type": "ref/resource", "uri": "test://items/{id}"}, "argument": {"name": "nope", "value": ""}}),
        json!({"ref": {"type": "ref/other"}, "argument": {"name": "x", "value": ""}}),
    ] {
        assert_eq!(s.call("completion/complete", bad.clone())["error"]["code"], -32602, "{bad}");
    }
}

#[test]
fn every_list_paginates_with_opaque_cursors() {
    let mut command = Command::new(testbed());
    command.env("TESTBED_PAGE_SIZE", "2");
    let mut s = Server::spawn_with(command);
    s.initialize();
    for (method, key) in [
        ("tools/list", "tools"),
        ("prompts/list", "prompts"),
        ("resources/list", "resources"),
        ("resources/templates/list", "resourceTemplates"),
    ] {
        let mut seen = Vec::new();
        let mut cursor: Option<String> = None;
        let mut pages = 0;
        loop {
            let params = match &cursor {
                Some(c) => json!({"cursor": c}),
                None => json!({}),
            };
            let r = s.call(method, params);
            let page = &r["result"];
            let items = page[key].as_array().unwrap_or_else(|| panic!("{method}: {r}"));
            assert!(items.len() <= 2, "{method}: {page}");
            seen.extend(items.iter().map(|i| i.to_string()));
            pages += 1;
            match page.get("nextCursor").and_then(Value::as_str) {
                Some(next) => cursor = Some(next.to_owned()),
                None => break,
            }
        }
        let unique: BTreeSet<_> = seen.iter().collect();
        assert_eq!(unique.len(), seen.len(), "{method}: an item was listed twice");
        assert!(pages >= 2 || seen.len() <= 2, "{method}: {} items in {pages} pages", seen.len());
    }
    let r = s.call("tools/list", json!({"cursor": "not-a-cursor"}));
    assert_eq!(r["error"]["code"], -32602);
    let first = s.call("prompts/list", json!({}));
    let prompts_cursor = first["result"]["nextCursor"].as_str().unwrap().to_owned();
    assert_eq!(
        s.call("tools/list", json!({"cursor": prompts_cursor}))["error"]["code"],
        -32602,
        "cursors are per list"
    );
}

#[test]
fn disabling_and_enabling_sends_list_changed_and_hides_the_item() {
    let mut s = ready();
    let changed = |s: &mut Server| -> Vec<String> {
        s.drain(Duration::from_millis(300))
            .into_iter()
            .filter_map(|m| m["method"].as_str().filter(|m| m.ends_with("list_changed")).map(str::to_owned))
            .collect()
    };
    let listed = |s: &mut Server, method: &str, key: &str, field: &str, value: &str| {
        let r = s.call(method, json!({}));
        r["result"][key].as_array().unwrap().iter().any(|x| x[field] == value)
    };

    assert_eq!(
        s.call_tool("toggle", json!({"kind": "tool", "name": "greet", "enabled": false}))["isError"],
        Value::Null
    );
    assert_eq!(changed(&mut s), ["notifications/tools/list_changed"]);
    assert!(!listed(&mut s, "tools/list", "tools", "name", "greet"));
    assert_eq!(s.call("tools/call", json!({"name": "greet", "arguments": {"name": "x"}}))["error"]["code"], -32602);
    s.call_tool("toggle", json!({"kind": "tool", "name": "greet", "enabled": true}));
    assert_eq!(changed(&mut s), ["notifications/tools/list_changed"]);
    assert!(listed(&mut s, "tools/list", "tools", "name", "greet"));

    s.call_tool("toggle", json!({"kind": "prompt", "name": "greeting", "enabled": false}));
    assert_eq!(changed(&mut s), ["notifications/prompts/list_changed"]);
    assert!(!listed(&mut s, "prompts/list", "prompts", "name", "greeting"));
    assert_eq!(s.call("prompts/get", json!({"name": "greeting", "arguments": {"name": "x"}}))["error"]["code"], -32602);

    s.call_tool("toggle", json!({"kind": "resource", "name": "test://static", "enabled": false}));
    assert_eq!(changed(&mut s), ["notifications/resources/list_changed"]);
    assert!(!listed(&mut s, "resources/list", "resources", "uri", "test://static"));
    assert_eq!(s.call("resources/read", json!({"uri": "test://static"}))["error"]["code"], -32002);

    assert_eq!(s.call_tool("reload_echo", json!({}))["content"][0]["text"], "reloaded");
    assert_eq!(changed(&mut s), ["notifications/tools/list_changed", "notifications/tools/list_changed"]);
    assert_eq!(s.call_tool("echo", json!({"text": "back"}))["content"][0]["text"], "back");
}
