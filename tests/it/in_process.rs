//! Servers built explicitly in the test process: the builder, the global registry (and its duplicate check), and two
//! sessions sharing one server over in-memory streams.

use crate::common;

use std::time::Duration;

use common::duplex::Stdio;
use mcp::handler::{MethodDef, MethodHandler};
use mcp::{BuildError, Context, Server, State};
use serde_json::{json, Value};

/// Long enough for a notification already sent to arrive over the pipe.
const QUIET: Duration = Duration::from_millis(300);

/// Say hi.
#[mcp::tool]
fn hi() -> &'static str {
    "hi"
}

/// Log one message at every level.
#[mcp::tool]
async fn chatty(ctx: &Context) -> &'static str {
    for level in ["debug", "info", "notice", "warning", "error", "critical", "alert", "emergency"] {
        ctx.log(level.parse().unwrap(), level);
    }
    "done"
}

/// Needs a `u64` counter in state.
struct Hits(std::sync::atomic::AtomicU64);

/// Counts hits.
#[mcp::tool]
fn hits(hits: &State<Hits>) -> String {
    hits.0.fetch_add(1, std::sync::atomic::Ordering::Relaxed).to_string()
}

/// A custom method that needs `Hits` too.
#[mcp::method(name = "test/hits")]
async fn hits_method(hits: &State<Hits>) -> mcp::Json<Value> {
    mcp::Json(json!({ "hits": hits.0.load(std::sync::atomic::Ordering::Relaxed) }))
}

mod first {
    /// One tool called `dup`.
    #[mcp::tool(name = "dup")]
    pub fn dup_a() {}
}

mod second {
    /// Another tool called `dup`.
    #[mcp::tool(name = "dup")]
    pub fn dup_b() {}
}

#[test]
fn the_builder_takes_tools_by_name_without_the_registry() {
    let server = Server::builder().name("explicit").version("1.2.3").tool::<hi>().build().unwrap();
    let list = server.tools_list();
    assert_eq!(list["tools"].as_array().unwrap().len(), 1);
    assert_eq!(list["tools"][0]["name"], "hi");
    assert_eq!(list["tools"][0]["inputSchema"], json!({"type": "object", "properties": {}}));
    // The same definition twice is one tool.
    let server = Server::builder().tool::<hi>().tool::<hi>().build().unwrap();
    assert_eq!(server.tools_list()["tools"].as_array().unwrap().len(), 1);
}

#[test]
fn duplicate_names_are_an_error_naming_both_places() {
    let err = Server::builder().tool::<first::dup_a>().tool::<second::dup_b>().build().unwrap_err();
    let BuildError::DuplicateTool { name, first, second } = &err else { panic!("{err:?}") };
    assert_eq!(name, "dup");
    assert!(first.starts_with("tests/it/in_process.rs:") && second.starts_with("tests/it/in_process.rs:"), "{err}");
    assert_ne!(first, second);
    let message = err.to_string();
    assert!(message.contains(first.as_str()) && message.contains(second.as_str()), "{message}");
    // The global registry holds every tool linked into this test binary: the duplicates, and tools other modules
    // make wrong on purpose (a bad schema, a bad header). Which refusal comes first is the linker's order of the
    // registrations, which changes with the modules linked; the duplicate itself is checked above.
    let registry = Server::from_registry().err();
    assert!(registry.is_some(), "the registry of this test binary holds duplicates: it must not build");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sessions_sharing_a_server_keep_their_own_log_level_and_notifications() {
    let server = Server::builder().tool::<chatty>().build().unwrap();
    let mut quiet = Stdio::open_with(&server, false, json!({})).await;
    let mut loud = Stdio::open_with(&server, false, json!({})).await;
    for s in [&quiet, &loud] {
        assert_eq!(s.initialized.as_ref().unwrap()["result"]["protocolVersion"], "2025-11-25");
    }
    quiet.call(2, "logging/setLevel", json!({"level": "critical"})).await;
    let (r, loud_notes) = loud.call_seen(3, "tools/call", json!({"name": "chatty"})).await;
    assert_eq!(r["result"]["content"][0]["text"], "done");
    let (_, quiet_notes) = quiet.call_seen(3, "tools/call", json!({"name": "chatty"})).await;
    assert_eq!(loud_notes.len(), 8, "{loud_notes:?}");
    let quiet_levels: Vec<_> = quiet_notes.iter().map(|m| m["params"]["level"].as_str().unwrap()).collect();
    assert_eq!(quiet_levels, ["critical", "alert", "emergency"]);
    // Nothing of one session leaked into the other afterwards either.
    assert!(loud.next(QUIET).await.is_none());
    assert!(quiet.next(QUIET).await.is_none());
}

#[test]
fn a_missing_state_type_is_reported_at_build_time_with_the_handler_and_the_type() {
    let err = Server::builder().tool::<hits>().build().unwrap_err();
    let BuildError::MissingState { kind, handler, type_name, location } = &err else { panic!("{err:?}") };
    assert_eq!((*kind, handler.as_str()), ("tool", "hits"));
    assert!(type_name.ends_with("Hits"), "{type_name}");
    assert!(location.starts_with("tests/it/in_process.rs:"), "{location}");
    assert!(err.to_string().contains("&State<"), "{err}");
    let err = Server::builder().method::<hits_method>().build().unwrap_err();
    assert!(matches!(&err, BuildError::MissingState { kind: "method", .. }), "{err:?}");
    let ok = Server::builder().state(Hits(0.into())).tool::<hits>().method::<hits_method>().build().unwrap();
    assert_eq!(ok.state_types().len(), 1);
}

#[test]
fn two_state_values_of_one_type_are_an_error() {
    let err = Server::builder().state(1u8).state(2u8).build().unwrap_err();
    assert_eq!(err, BuildError::DuplicateState { type_name: "u8" });
}

#[test]
fn a_custom_method_cannot_shadow_the_specification() {
    fn empty(_: &Context, _: mcp::__private::Arguments) -> Result<Value, mcp::Error> {
        Ok(json!({}))
    }
    for name in ["tools/call", "tools/anything", "notifications/x", "initialize", "ping", "resources/read"] {
        let def = MethodDef::new(name, MethodHandler::Blocking(empty), "here");
        let err = Server::builder().method_def(def).build().unwrap_err();
        assert!(matches!(err, BuildError::ReservedMethod { .. }), "{name}: {err:?}");
        assert!(err.to_string().contains(name), "{err}");
    }
    let ok = MethodDef::new("myapp/tools/call", MethodHandler::Blocking(empty), "here");
    Server::builder().method_def(ok).build().unwrap();
}

/// A resource to subscribe to.
#[mcp::resource(uri = "test://news")]
fn news() -> &'static str {
    "no news"
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn updates_reach_only_subscribed_sessions_and_list_changes_reach_every_session() {
    let server = Server::builder().tool::<hi>().tool::<chatty>().resource::<news>().build().unwrap();
    let mut reader = Stdio::open_with(&server, false, json!({})).await;
    let mut other = Stdio::open_with(&server, false, json!({})).await;
    let r = reader.call(2, "resources/subscribe", json!({"uri": "test://news"})).await;
    assert_eq!(r["result"], json!({}));

    server.notify_resource_updated("test://news");
    let got = reader.next(QUIET).await.expect("the subscriber hears of it");
    assert_eq!(
        got,
        json!({"jsonrpc": "2.0", "method": "notifications/resources/updated", "params": {"uri": "test://news"}})
    );
    assert!(other.next(QUIET).await.is_none(), "a session that did not subscribe hears nothing");

    assert!(server.set_tool_enabled("hi", false));
    for s in [&mut reader, &mut other] {
        let got = s.next(QUIET).await.expect("every session hears of a list change");
        assert_eq!(got["method"], "notifications/tools/list_changed");
        let list = s.call(3, "tools/list", json!({})).await;
        let names: Vec<_> = list["result"]["tools"].as_array().unwrap().iter().map(|t| t["name"].clone()).collect();
        assert_eq!(names, [json!("chatty")]);
    }
    assert!(!server.set_tool_enabled("no-such-tool", true));
}

/// A prompt added and removed while the server runs.
#[mcp::prompt]
fn late_prompt() -> &'static str {
    "late"
}

#[test]
fn on_start_gets_the_server_and_prompts_and_resources_come_and_go_while_it_runs() {
    let (tx, rx) = std::sync::mpsc::channel();
    let server = Server::builder().resource::<news>().on_start(move |server| tx.send(server).unwrap()).build().unwrap();
    let handle = rx.try_recv().expect("on_start ran during build");
    let registry_uris = |s: &Server| format!("{s:?}");

    assert!(handle.remove_resource("test://news"));
    assert!(!registry_uris(&server).contains("test://news"), "the change is visible through every handle");
    assert!(!handle.remove_resource("test://news"));
    server.add_resource(<news as mcp::handler::ResourceItem>::DEF.clone()).unwrap();
    assert!(registry_uris(&server).contains("test://news"));

    server.add_prompt(<late_prompt as mcp::handler::PromptItem>::DEF.clone()).unwrap();
    assert!(registry_uris(&server).contains("late_prompt"));
    assert!(server.set_prompt_enabled("late_prompt", false));
    assert!(server.remove_prompt("late_prompt"));
    assert!(!server.remove_prompt("late_prompt"));
}

/// Says it never asks the client anything, then asks.
fn two_faced(ctx: &Context, _: mcp::handler::Arguments) -> Result<mcp::CallToolResult, mcp::Error> {
    let answer = ctx.elicit_blocking::<Value>("Who are you?");
    Ok(mcp::CallToolResult::success(vec![mcp::Content::text(format!("{answer:?}"))]))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_tool_declared_unable_to_ask_is_held_to_it_and_a_macro_tool_without_context_declares_it() {
    use mcp::handler::ToolItem;
    assert!(!<hi as ToolItem>::DEF.can_ask, "no injected parameter: it cannot reach the Context");
    assert!(<chatty as ToolItem>::DEF.can_ask, "it takes the Context");
    assert!(<hits as ToolItem>::DEF.can_ask, "any injected parameter keeps it, the macro cannot tell more");

    let def = mcp::handler::ToolDef::new(
        "two_faced",
        || json!({"type": "object"}),
        || None,
        mcp::handler::ToolHandler::Blocking(two_faced),
        concat!(file!(), ":", line!()),
    )
    .cannot_ask();
    let server = Server::builder().tool::<hi>().tool_def(def).build().unwrap();
    // A 2026 client that declares elicitation.
    let mut session = Stdio::open_with(&server, true, json!({"elicitation": {"form": {}}})).await;
    let r = session.call(1, "tools/call", json!({"name": "hi", "arguments": {}})).await;
    assert_eq!(r["result"]["content"][0]["text"], "hi", "{r}");
    let r = session.call(2, "tools/call", json!({"name": "two_faced", "arguments": {}})).await;
    let text = r["result"]["content"][0]["text"].as_str().or(r["error"]["message"].as_str()).unwrap_or_default();
    assert!(text.contains("declared that it never asks"), "{r}");
}
