//! Extensions (`ServerBuilder::extension`): an extension's entry under `capabilities.extensions` in `initialize`
//! and `server/discover`, its methods with typed parameters in both eras, what its `setup` adds (a tool, a layer),
//! the client's declaration as a handler sees it, names that would shadow the specification refused — and the Tasks
//! extension, which the server adds the same way.

use crate::common;

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use common::duplex::Stdio;
use mcp::extension::{Declaration, Extension, NotificationDef};
use mcp::handler::{MethodDef, MethodItem};
use mcp::middleware::{Next, Request};
use mcp::tower::{self, ServiceExt};
use mcp::{BuildError, Context, Era, Server, ServerBuilder};
use serde_json::{json, Value};

const AUDIT: &str = "com.example/audit";

/// Record an audit entry.
#[mcp::method(name = "com.example.audit/record")]
async fn record(
    /// What happened.
    event: String,
    /// How bad it was, 0 to 9.
    severity: Option<u8>,
) -> mcp::Json<Value> {
    mcp::Json(json!({ "recorded": event, "severity": severity.unwrap_or(0) }))
}

/// Whether the client declared the audit extension, and with what.
#[mcp::tool]
fn audit_declared(ctx: &Context) -> String {
    ctx.meta().client_extension(AUDIT).map_or("not declared".to_owned(), |settings| settings.to_string())
}

/// The audit extension: settings in both eras, one method, one tool and a layer that counts tool calls.
struct Audit {
    calls: Arc<AtomicUsize>,
}

impl Extension for Audit {
    fn id(&self) -> &str {
        AUDIT
    }
    fn declare(&self, era: Era) -> Declaration {
        Declaration::settings(json!({ "retentionDays": 30, "era": if era == Era::V2025 { "2025" } else { "2026" } }))
    }
    fn methods(&self) -> Vec<MethodDef> {
        vec![record::DEF.clone()]
    }
    fn setup(&self, builder: ServerBuilder) -> ServerBuilder {
        let calls = self.calls.clone();
        builder.tool::<audit_declared>().layer(tower::layer::layer_fn(move |inner: Next| {
            let calls = calls.clone();
            tower::util::BoxCloneSyncService::new(tower::service_fn(move |request: Request| {
                if request.method() == "tools/call" {
                    calls.fetch_add(1, Ordering::SeqCst);
                }
                inner.clone().oneshot(request)
            }))
        }))
    }
}

/// Sleep a little, as a task when the client can.
#[mcp::tool(task = "optional")]
async fn nap() -> &'static str {
    "rested"
}

fn audited() -> (Server, Arc<AtomicUsize>) {
    let calls = Arc::new(AtomicUsize::new(0));
    (Server::builder().extension(Audit { calls: calls.clone() }).build().unwrap(), calls)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_extension_is_listed_in_both_eras_and_its_typed_methods_and_setup_serve_both() {
    let (server, calls) = audited();
    let declared = json!({"extensions": {AUDIT: {"level": "full"}}});
    // 2025: listed in `initialize`.
    let mut s = Stdio::open_with(&server, false, declared.clone()).await;
    let init = s.initialized.clone().unwrap();
    assert_eq!(init["result"]["capabilities"]["extensions"][AUDIT], json!({"retentionDays": 30, "era": "2025"}));
    common::schema::check_server_message(&init, Some("initialize")).unwrap();
    // 2026: listed in `server/discover`.
    let mut m = Stdio::open_with(&server, true, declared).await;
    let discovered = m.call(1, "server/discover", json!({})).await;
    assert_eq!(
        discovered["result"]["capabilities"]["extensions"][AUDIT],
        json!({"retentionDays": 30, "era": "2026"}),
        "{discovered}"
    );
    common::schema::check_v2026_message(&discovered, Some("server/discover")).unwrap();
    for session in [&mut s, &mut m] {
        let recorded = session.call(2, "com.example.audit/record", json!({"event": "login", "severity": 3})).await;
        assert_eq!(recorded["result"]["recorded"], "login", "{recorded}");
        assert_eq!(recorded["result"]["severity"], 3, "{recorded}");
        // Typed parameters: a wrong type is -32602 naming the parameter.
        let wrong = session.call(3, "com.example.audit/record", json!({"event": 7})).await;
        assert_eq!(wrong["error"]["code"], -32602, "{wrong}");
        assert!(wrong["error"]["message"].as_str().unwrap().contains("event"), "{wrong}");
        // The tool its setup added sees what the client declared.
        let seen = session.call(4, "tools/call", json!({"name": "audit_declared", "arguments": {}})).await;
        assert_eq!(seen["result"]["content"][0]["text"], r#"{"level":"full"}"#, "{seen}");
    }
    assert_eq!(calls.load(Ordering::SeqCst), 2, "the layer its setup added saw both calls");
    // A client that did not declare it.
    let mut plain = Stdio::open_with(&server, true, json!({})).await;
    let seen = plain.call(1, "tools/call", json!({"name": "audit_declared", "arguments": {}})).await;
    assert_eq!(seen["result"]["content"][0]["text"], "not declared", "{seen}");
}

/// An extension with the given identifier and methods.
struct Named(&'static str, Vec<MethodDef>);

impl Extension for Named {
    fn id(&self) -> &str {
        self.0
    }
    fn methods(&self) -> Vec<MethodDef> {
        self.1.clone()
    }
}

fn method(name: &'static str) -> MethodDef {
    fn nothing(_: &Context, _: mcp::__private::Arguments) -> Result<Value, mcp::Error> {
        Ok(json!({}))
    }
    MethodDef::new(name, mcp::handler::MethodHandler::Blocking(nothing), "here")
}

fn refusal(builder: ServerBuilder) -> String {
    match builder.build() {
        Err(e @ BuildError::BadExtension { .. }) => e.to_string(),
        Err(e) => panic!("another error: {e}"),
        Ok(_) => panic!("built"),
    }
}

#[test]
fn extension_names_that_would_shadow_the_specification_or_each_other_are_refused() {
    for core in ["tools/call", "initialize", "server/discover", "notifications/progress"] {
        let message = refusal(Server::builder().extension(Named("com.example/x", vec![method(core)])));
        assert!(message.contains(core) && message.contains("shadow"), "{message}");
    }
    let message = refusal(Server::builder().extension(Named("audit", vec![])));
    assert!(message.contains("needs a prefix"), "{message}");
    let message =
        refusal(Server::builder().extension(Named("com.example/a", vec![])).extension(Named("com.example/a", vec![])));
    assert!(message.contains("two extensions"), "{message}");
    let message = refusal(
        Server::builder()
            .extension(Named("com.example/a", vec![method("x/run")]))
            .extension(Named("com.example/b", vec![method("x/run")])),
    );
    assert!(message.contains("x/run") && message.contains("already"), "{message}");
    // Tasks is an extension too: with a tool that can run as a task, its methods are taken.
    let message = refusal(Server::builder().tool::<nap>().extension(Named("com.example/t", vec![method("tasks/get")])));
    assert!(message.contains("tasks/get"), "{message}");
    // A method of its own namespace, under any prefix, is fine.
    Server::builder().extension(Named("com.example/x", vec![method("x/run")])).build().unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tasks_come_through_the_extension_api_as_a_2025_capability_and_a_2026_extension() {
    let server = Server::builder().tool::<nap>().extension(Audit { calls: Arc::default() }).build().unwrap();
    let s = Stdio::open_with(&server, false, json!({})).await;
    let capabilities = &s.initialized.as_ref().unwrap()["result"]["capabilities"];
    assert!(capabilities["tasks"]["requests"]["tools"]["call"].is_object(), "{capabilities}");
    assert!(capabilities["extensions"].get("io.modelcontextprotocol/tasks").is_none(), "{capabilities}");
    assert!(capabilities["extensions"].get(AUDIT).is_some(), "{capabilities}");
    let mut m = Stdio::open_with(&server, true, json!({"extensions": {"io.modelcontextprotocol/tasks": {}}})).await;
    let discovered = m.call(1, "server/discover", json!({})).await;
    let extensions = &discovered["result"]["capabilities"]["extensions"];
    assert_eq!(extensions["io.modelcontextprotocol/tasks"], json!({}), "{discovered}");
    assert!(extensions.get(AUDIT).is_some(), "{discovered}");
    assert!(discovered["result"]["capabilities"].get("tasks").is_none(), "{discovered}");
    // Its methods are served: a 2026 call becomes a task, which `tasks/get` reads.
    let created = m.call(2, "tools/call", json!({"name": "nap", "arguments": {}})).await;
    assert_eq!(created["result"]["resultType"], "task", "{created}");
    let id = created["result"]["taskId"].as_str().expect("a task id").to_owned();
    let got = m.call(3, "tasks/get", json!({"taskId": id})).await;
    assert!(got.get("result").is_some(), "{got}");
    // Without a task tool there is no Tasks extension, and its methods are not found.
    let (server, _) = audited();
    let mut m = Stdio::open_with(&server, true, json!({})).await;
    let discovered = m.call(1, "server/discover", json!({})).await;
    assert!(discovered["result"]["capabilities"]["extensions"].get("io.modelcontextprotocol/tasks").is_none());
    let missing = m.call(2, "tasks/get", json!({"taskId": "x"})).await;
    assert_eq!(missing["error"]["code"], -32601, "{missing}");
}

/// What the receipts hook keeps of a call it claims.
struct Receipt {
    tool: mcp::Name,
    refuse_at_begin: bool,
}

/// A hook on `tools/call`: it claims calls that ask for a receipt (`"receipt": true` beside `arguments`), refuses
/// a receipt for a tool that cannot give one or for a secret (`"text": "secret"` in the arguments), and counts the
/// claimed calls it began (one that asks `"receipt": "late"` it refuses when it begins).
struct Receipts {
    begun: Arc<AtomicUsize>,
}

impl mcp::hook::ToolCallHook for Receipts {
    fn claim(&self, call: &mcp::hook::ToolCall<'_>) -> Result<Option<mcp::hook::Claim>, mcp::Error> {
        let refuse_at_begin = match call.params.get("receipt") {
            Some(Value::Bool(true)) => false,
            Some(Value::String(s)) if s == "late" => true,
            _ => return Ok(None),
        };
        if call.tool.name == "nap" {
            return Err(mcp::Error::invalid_params("nap gives no receipts"));
        }
        // The arguments, which a tool call keeps as the text it was sent as, read as values.
        if call.arguments.as_map().get("text") == Some(&json!("secret")) {
            return Err(mcp::Error::invalid_params("no receipts for secrets"));
        }
        Ok(Some(Box::new(Receipt { tool: call.tool.name.clone(), refuse_at_begin })))
    }

    fn begin<'a>(&'a self, ctx: &'a Context) -> mcp::handler::BoxFuture<'a, Result<(), mcp::Error>> {
        Box::pin(async move {
            if ctx.claim::<Receipt>().is_some_and(|r| r.refuse_at_begin) {
                return Err(mcp::Error::invalid_params("the receipt printer is out of paper"));
            }
            self.begun.fetch_add(1, Ordering::SeqCst);
            Ok(())
        })
    }
}

struct ReceiptExtension(Arc<AtomicUsize>);

impl Extension for ReceiptExtension {
    fn id(&self) -> &str {
        "com.example/receipts"
    }
    fn tool_call_hook(&self) -> Option<Arc<dyn mcp::hook::ToolCallHook>> {
        Some(Arc::new(Receipts { begun: self.0.clone() }))
    }
}

/// Echo the text back, with the receipt the hook claimed, if any.
#[mcp::tool]
async fn stamped(text: String, ctx: &Context) -> String {
    match ctx.claim::<Receipt>() {
        Some(receipt) => format!("{text} (receipt for {})", receipt.tool),
        None => text,
    }
}

/// An extension's hook on `tools/call`, beside the Tasks extension's: it claims the calls it takes up (the handler
/// reads the claim), leaves the others, refuses a call before anything runs or when it begins, in both eras; a
/// task call is still the Tasks hook's.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_extensions_hook_claims_refuses_and_begins_tool_calls_in_both_eras() {
    let begun = Arc::new(AtomicUsize::new(0));
    let server =
        Server::builder().tool::<stamped>().tool::<nap>().extension(ReceiptExtension(begun.clone())).build().unwrap();
    let tasks = json!({"extensions": {"io.modelcontextprotocol/tasks": {}}});
    let mut s = Stdio::open_with(&server, false, tasks.clone()).await;
    let mut m = Stdio::open_with(&server, true, tasks).await;
    for (era, session) in [("2025", &mut s), ("2026", &mut m)] {
        let claimed = session
            .call(1, "tools/call", json!({"name": "stamped", "arguments": {"text": "hi"}, "receipt": true}))
            .await;
        assert_eq!(claimed["result"]["content"][0]["text"], "hi (receipt for stamped)", "{era}: {claimed}");
        let plain = session.call(2, "tools/call", json!({"name": "stamped", "arguments": {"text": "hi"}})).await;
        assert_eq!(plain["result"]["content"][0]["text"], "hi", "{era}: {plain}");
        // A 2025 call of `nap` without `task` is not a task: the receipts hook is asked, and refuses it. A 2026 one
        // is a task (the client declared the extension, and the server decides): the Tasks hook, asked first, has it.
        let refused = session.call(3, "tools/call", json!({"name": "nap", "arguments": {}, "receipt": true})).await;
        if era == "2025" {
            assert_eq!(refused["error"]["code"], -32602, "{era}: {refused}");
            assert_eq!(refused["error"]["message"], "nap gives no receipts", "{era}: {refused}");
        } else {
            assert_eq!(refused["result"]["resultType"], "task", "{era}: {refused}");
        }
        let late = session
            .call(4, "tools/call", json!({"name": "stamped", "arguments": {"text": "hi"}, "receipt": "late"}))
            .await;
        assert_eq!(late["error"]["message"], "the receipt printer is out of paper", "{era}: {late}");
        let secret = session
            .call(6, "tools/call", json!({"name": "stamped", "arguments": {"text": "secret"}, "receipt": true}))
            .await;
        assert_eq!(secret["error"]["message"], "no receipts for secrets", "{era}: {secret}");
    }
    assert_eq!(begun.load(Ordering::SeqCst), 2, "one claimed call began in each era");
    // A task call is the Tasks hook's, which is asked first.
    let task = s.call(5, "tools/call", json!({"name": "nap", "arguments": {}, "task": {}})).await;
    assert!(task["result"]["task"]["taskId"].is_string(), "{task}");
    let task = m.call(5, "tools/call", json!({"name": "nap", "arguments": {}})).await;
    assert_eq!(task["result"]["resultType"], "task", "{task}");
}

/// What the acks hook got of the calls it took over: the handler's text, or `None` for one that was stopped.
type Outcomes = Arc<std::sync::Mutex<Vec<Option<Result<String, String>>>>>;

/// A hook that takes calls over: a call that asks for an ack (`"ack": true` beside `arguments`) is answered
/// `"accepted"` at once, and what its handler returns later is kept.
struct Acks {
    outcomes: Outcomes,
}

impl mcp::hook::ToolCallHook for Acks {
    fn claim(&self, call: &mcp::hook::ToolCall<'_>) -> Result<Option<mcp::hook::Claim>, mcp::Error> {
        Ok((call.params.get("ack") == Some(&Value::Bool(true))).then(|| Box::new(()) as mcp::hook::Claim))
    }

    fn begin<'a>(&'a self, ctx: &'a Context) -> mcp::handler::BoxFuture<'a, Result<(), mcp::Error>> {
        Box::pin(async move {
            assert!(ctx.answer_early(json!({"content": [{"type": "text", "text": "accepted"}]})));
            assert!(!ctx.answer_early(json!({})), "a call is taken over once");
            Ok(())
        })
    }

    fn finish<'a>(
        &'a self,
        _ctx: &'a Context,
        outcome: Option<Result<Value, mcp::Error>>,
    ) -> mcp::handler::BoxFuture<'a, ()> {
        let outcome = outcome.map(|r| r.map(|v| v["content"][0]["text"].as_str().unwrap_or_default().to_owned()));
        self.outcomes.lock().unwrap().push(outcome.map(|r| r.map_err(|e| e.message)));
        Box::pin(std::future::ready(()))
    }
}

struct AckExtension(Outcomes);

impl Extension for AckExtension {
    fn id(&self) -> &str {
        "com.example/acks"
    }
    fn tool_call_hook(&self) -> Option<Arc<dyn mcp::hook::ToolCallHook>> {
        Some(Arc::new(Acks { outcomes: self.0.clone() }))
    }
}

/// Lets `gated` go on, once per call.
static GATE: tokio::sync::Semaphore = tokio::sync::Semaphore::const_new(0);

/// Waits until the test opens the gate, then echoes the text back.
#[mcp::tool]
async fn gated(text: String) -> String {
    GATE.acquire().await.unwrap().forget();
    text
}

/// A hook takes a call over: the client is answered at once, before the handler ends, and the handler's result goes
/// to the hook's `finish`; a call the hook does not claim is answered by its handler; in both eras.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_hook_answers_a_call_early_and_gets_its_outcome() {
    let outcomes = Outcomes::default();
    let server = Server::builder().tool::<gated>().extension(AckExtension(outcomes.clone())).build().unwrap();
    for v2026 in [false, true] {
        let era = if v2026 { "2026" } else { "2025" };
        let mut s = Stdio::open_with(&server, v2026, json!({})).await;
        let acked =
            s.call(1, "tools/call", json!({"name": "gated", "arguments": {"text": "later"}, "ack": true})).await;
        assert_eq!(acked["result"]["content"][0]["text"], "accepted", "{era}: {acked}");
        if v2026 {
            assert_eq!(acked["result"]["resultType"], "complete", "{acked}");
        }
        assert!(outcomes.lock().unwrap().is_empty(), "{era}: the handler waits at the gate");
        GATE.add_permits(1);
        for _ in 0..500 {
            if !outcomes.lock().unwrap().is_empty() {
                break;
            }
            tokio::time::sleep(std::time::Duration::from_millis(10)).await;
        }
        assert_eq!(outcomes.lock().unwrap().drain(..).collect::<Vec<_>>(), [Some(Ok("later".to_owned()))], "{era}");
        assert!(s.silent(1, std::time::Duration::from_millis(200)).await, "{era}: no second answer");

        // Not claimed: the handler answers.
        GATE.add_permits(1);
        let plain = s.call(2, "tools/call", json!({"name": "gated", "arguments": {"text": "now"}})).await;
        assert_eq!(plain["result"]["content"][0]["text"], "now", "{era}: {plain}");
        assert!(outcomes.lock().unwrap().is_empty(), "{era}");
    }
}

/// Says hello.
#[mcp::tool]
fn hello_meta() -> String {
    "hello".into()
}

/// A note with an interface of its own.
#[mcp::resource(uri = "ui://notes/view", mime_type = "text/html;profile=mcp-app")]
fn note_view() -> mcp::ReadResourceResult {
    let ui = json!({"ui": {"prefersBorder": true}});
    let contents = mcp::ResourceContents::text("ui://notes/view", Some("text/html;profile=mcp-app"), "<p>hi</p>")
        .with_meta(ui.as_object().unwrap().clone());
    mcp::ReadResourceResult::new(vec![contents])
}

/// Describes the program's tools in their `_meta`, as an extension that links tools to something of its own does.
struct Describer;

impl mcp::extension::Extension for Describer {
    fn id(&self) -> &str {
        "com.example/describer"
    }

    fn setup(&self, builder: mcp::ServerBuilder) -> mcp::ServerBuilder {
        // It sees the program's tools, and adds to their `_meta`.
        let names: Vec<mcp::Name> = builder.tool_defs().iter().map(|t| t.name.clone()).collect();
        let mut builder = builder;
        for name in names {
            let meta = json!({"com.example/described": name});
            builder = builder.tool_meta(name, meta.as_object().unwrap().clone());
        }
        let ui = json!({"ui": {"csp": {"connectDomains": []}}});
        builder.resource_meta("ui://notes/view", ui.as_object().unwrap().clone())
    }
}

/// Tools and resources carry `_meta`: their definitions' own (`ToolDef::meta`), what an extension's `setup` adds
/// after seeing the program's tools, and a resource's contents' own; one that is not a JSON object is a build error.
#[tokio::test]
async fn tools_and_resources_carry_meta_their_own_and_an_extensions() {
    let def = <hello_meta as mcp::handler::ToolItem>::DEF.clone().meta(r#"{"ui": {"resourceUri": "ui://notes/view"}}"#);
    let server = mcp::Server::builder().tool_def(def).resource::<note_view>().extension(Describer).build().unwrap();
    let tool = &server.tools_list()["tools"][0];
    assert_eq!(tool["_meta"]["ui"]["resourceUri"], "ui://notes/view", "{tool}");
    assert_eq!(tool["_meta"]["com.example/described"], "hello_meta", "{tool}");
    let client = mcp::client::Client::builder().in_process(server.clone()).await.unwrap();
    let listed = client.request("resources/list", json!({})).await.unwrap();
    assert_eq!(listed["resources"][0]["_meta"]["ui"]["csp"], json!({"connectDomains": []}), "{listed}");
    let read = client.request("resources/read", json!({"uri": "ui://notes/view"})).await.unwrap();
    assert_eq!(read["contents"][0]["_meta"]["ui"]["prefersBorder"], true, "{read}");

    let bad = <hello_meta as mcp::handler::ToolItem>::DEF.clone().meta("[1]");
    let Err(refused) = mcp::Server::builder().tool_def(bad).build() else {
        panic!("a `_meta` that is no object is refused")
    };
    assert!(matches!(refused, mcp::BuildError::BadMeta { .. }), "{refused}");
    assert!(refused.to_string().contains("hello_meta"), "{refused}");
}

/// Look a ticket up.
#[mcp::method(name = "com.example.tickets/get")]
async fn ticket_get(
    /// The ticket.
    id: String,
) -> mcp::Json<Value> {
    mcp::Json(json!({ "ticket": id }))
}

/// An extension whose method a gateway routes by its `id`, as `tools/call` by its tool.
struct Tickets;

impl Extension for Tickets {
    fn id(&self) -> &str {
        "com.example/tickets"
    }
    fn methods(&self) -> Vec<MethodDef> {
        vec![ticket_get::DEF.clone().routed_by("id")]
    }
}

/// A 2026 HTTP request of an extension method routed by a parameter carries it in `Mcp-Name`: without the header,
/// or with another value, it is refused as a core method's would be; with it, served.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_extension_method_names_its_mcp_name_parameter() {
    let server = Server::builder().extension(Tickets).build().unwrap();
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/mcp", listener.local_addr().unwrap());
    tokio::spawn(server.serve_http_on(listener, mcp::HttpOptions::new()));
    let client = common::http::Client { http: reqwest::Client::new(), url, session: None };
    let body = common::v2026::request(1, "com.example.tickets/get", json!({"id": "T-7"}), json!({}));
    let missing = client.v2026_send(&body).await;
    assert_eq!(missing.status(), 400);
    assert!(missing.text().await.unwrap().contains("Mcp-Name header is missing"));
    let other = client.v2026_send_with(&body, &[("Mcp-Name", Some("T-8"))]).await;
    assert_eq!(other.status(), 400);
    let named = client.v2026_send_with(&body, &[("Mcp-Name", Some("T-7"))]).await;
    let text = named.text().await.unwrap();
    assert!(text.contains(r#""ticket":"T-7""#), "{text}");
}

const BELL: &str = "com.example/bell";
const RANG: &str = "notifications/com.example.bell/rang";
const RANG_KEY: &str = "com.example.bell/rang";

/// Ring the bell: every listening client that declared the bell hears it.
#[mcp::tool]
fn ring(ctx: &Context, times: u32) -> String {
    ctx.server().notify(RANG, json!({ "times": times })).unwrap();
    "rung".to_owned()
}

/// An extension with a notification of its own, sent by its tool.
struct Bell;

impl Extension for Bell {
    fn id(&self) -> &str {
        BELL
    }
    fn notifications(&self) -> Vec<NotificationDef> {
        vec![NotificationDef::new(RANG, RANG_KEY)]
    }
    fn setup(&self, builder: ServerBuilder) -> ServerBuilder {
        builder.tool::<ring>()
    }
}

/// The next notification of this method within a short wait, skipping others.
async fn heard(session: &mut Stdio, method: &str) -> Option<Value> {
    while let Some(m) = session.next(std::time::Duration::from_millis(500)).await {
        if m["method"] == method {
            return Some(m);
        }
    }
    None
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_extensions_notification_reaches_the_clients_that_declared_it_in_both_eras_and_on_every_instance() {
    let hub = mcp::hub::LocalHub::new();
    let one = Server::builder().extension(Bell).change_hub(hub.clone()).build().unwrap();
    let two = Server::builder().extension(Bell).change_hub(hub).build().unwrap();
    let declared = json!({"extensions": {BELL: {}}});
    // On instance two: a 2025 session that declared the bell, one that did not, and 2026 listen streams.
    let mut s2025 = Stdio::open_with(&two, false, declared.clone()).await;
    let mut undeclared = Stdio::open_with(&two, false, json!({})).await;
    let mut s2026 = Stdio::open_with(&two, true, declared.clone()).await;
    s2026
        .request(10, "subscriptions/listen", json!({"notifications": {RANG_KEY: true, "toolsListChanged": true}}))
        .await;
    let ack = heard(&mut s2026, "notifications/subscriptions/acknowledged").await.expect("an acknowledgement");
    assert_eq!(ack["params"]["notifications"][RANG_KEY], true, "the key is honoured: {ack}");
    common::schema::check_v2026_message(&ack, None).unwrap();
    // A 2026 stream that did not opt in, and one whose client did not declare the extension.
    let mut quiet = Stdio::open_with(&two, true, declared).await;
    quiet.request(11, "subscriptions/listen", json!({"notifications": {"toolsListChanged": true}})).await;
    heard(&mut quiet, "notifications/subscriptions/acknowledged").await.expect("an acknowledgement");
    let mut stranger = Stdio::open_with(&two, true, json!({})).await;
    stranger.request(12, "subscriptions/listen", json!({"notifications": {RANG_KEY: true}})).await;
    let ack = heard(&mut stranger, "notifications/subscriptions/acknowledged").await.expect("an acknowledgement");
    assert_eq!(ack["params"]["notifications"], json!({}), "not honoured without the extension: {ack}");

    // The tool runs on instance one.
    let mut caller = Stdio::open(&one, false).await;
    let rung = caller.call(1, "tools/call", json!({"name": "ring", "arguments": {"times": 3}})).await;
    assert_eq!(rung["result"]["content"][0]["text"], "rung", "{rung}");

    let note = heard(&mut s2025, RANG).await.expect("the 2025 session that declared the bell hears it");
    assert_eq!(note["params"], json!({"times": 3}), "{note}");
    // Not one of the specification's notifications: a JSON-RPC notification of its schema.
    common::schema::validate("JSONRPCNotification", &note).unwrap();
    let note = heard(&mut s2026, RANG).await.expect("the 2026 stream that opted in hears it");
    assert_eq!(note["params"]["times"], 3, "{note}");
    assert_eq!(note["params"]["_meta"]["io.modelcontextprotocol/subscriptionId"], 10, "tagged with its stream: {note}");
    common::schema::validate_2026("JSONRPCNotification", &note).unwrap();
    assert!(heard(&mut undeclared, RANG).await.is_none(), "a 2025 client that did not declare the bell");
    assert!(heard(&mut quiet, RANG).await.is_none(), "a 2026 stream that did not opt in");
    assert!(heard(&mut stranger, RANG).await.is_none(), "a 2026 client that did not declare the bell");
}

#[test]
fn notify_and_declarations_name_what_is_wrong() {
    let server = Server::builder().extension(Bell).build().unwrap();
    let undeclared = server.notify("notifications/com.example.bell/unknown", json!({})).unwrap_err().to_string();
    assert!(
        undeclared.contains("no extension declares") && undeclared.contains("Extension::notifications"),
        "{undeclared}"
    );
    let not_object = server.notify(RANG, json!([1])).unwrap_err().to_string();
    assert!(not_object.contains("JSON object"), "{not_object}");
    server.notify(RANG, Value::Null).expect("no params is fine");

    struct Noisy(&'static str, &'static str);
    impl Extension for Noisy {
        fn id(&self) -> &str {
            "com.example/noisy"
        }
        fn notifications(&self) -> Vec<NotificationDef> {
            vec![NotificationDef::new(self.0, self.1)]
        }
    }
    for (method, key, expected) in [
        ("notifications/tools/list_changed", "k", "the specification's"),
        ("com.example.noisy/rang", "k", "starts with `notifications/`"),
        ("notifications/com.example.noisy/rang", "taskIds", "listen filter key"),
        ("notifications/com.example.noisy/rang", "", "listen filter key"),
    ] {
        let message = refusal(Server::builder().extension(Noisy(method, key)));
        assert!(message.contains(expected), "{method} {key}: {message}");
    }
    let message =
        refusal(Server::builder().extension(Bell).extension(Named("com.example/other", vec![])).extension(BellAgain));
    assert!(message.contains("another extension has already"), "{message}");

    struct Capable;
    impl Extension for Capable {
        fn id(&self) -> &str {
            "com.example/capable"
        }
        fn declare(&self, era: Era) -> Declaration {
            match era {
                Era::V2025 => Declaration::none().with_capability("tools", json!({})),
                _ => Declaration::settings(json!({})),
            }
        }
    }
    let message = refusal(Server::builder().extension(Capable));
    assert!(message.contains("capability `tools`") && message.contains("Declaration::settings"), "{message}");
}

/// A second extension that declares the bell's notification.
struct BellAgain;

impl Extension for BellAgain {
    fn id(&self) -> &str {
        "com.example/bell-again"
    }
    fn notifications(&self) -> Vec<NotificationDef> {
        vec![NotificationDef::new(RANG, "com.example.bell/again")]
    }
}
