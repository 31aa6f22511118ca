//! MCP Apps (`mcp::apps`, `io.modelcontextprotocol/ui`): an app is a `ui://` resource of HTML
//! (`text/html;profile=mcp-app`) with its `_meta.ui`, linked from the tools it is the interface of; served in both
//! eras; what a server refuses to build. The bookshop's app in a real browser is `tests/it/apps_browser.rs`.

use mcp::apps::{App, Apps};
use mcp::client::{Client, EraChoice};
use serde_json::json;

/// List the titles on hold.
#[mcp::tool]
fn list_holds() -> String {
    "Dune".into()
}

/// Release a hold (the app's button).
#[mcp::tool]
fn release(title: String) -> String {
    format!("released {title}")
}

fn page() -> String {
    "<!doctype html><p>made</p>".into()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_app_is_a_ui_resource_linked_from_its_tools_in_both_eras() {
    let holds = App::html("ui://shop/holds", "<!doctype html><p>holds</p>")
        .name("Holds")
        .description("The titles on hold.")
        .csp(&["https://api.example.com"], &[])
        .prefers_border(true)
        .for_tool("list_holds")
        .app_only_tool("release");
    let made = App::from_fn("ui://shop/made", page);
    let server = mcp::Server::builder()
        .tool::<list_holds>()
        .tool::<release>()
        .extension(Apps::new().app(holds).app(made))
        .build()
        .unwrap();
    for era in [EraChoice::V2025, EraChoice::V2026] {
        let client = Client::builder().era(era).in_process(server.clone()).await.unwrap();
        let tools = client.request("tools/list", json!({})).await.unwrap();
        let by_name =
            |name: &str| tools["tools"].as_array().unwrap().iter().find(|t| t["name"] == name).cloned().unwrap();
        let list = by_name("list_holds");
        assert_eq!(list["_meta"]["ui"]["resourceUri"], "ui://shop/holds", "{list}");
        assert_eq!(list["_meta"]["ui/resourceUri"], "ui://shop/holds", "the flat key of earlier hosts");
        assert!(list["_meta"]["ui"].get("visibility").is_none());
        let release = by_name("release");
        assert_eq!(release["_meta"]["ui"]["visibility"], json!(["app"]), "{release}");
        // An app-only tool is still served.
        let released = client.call_tool("release", json!({"title": "Dune"})).await.unwrap();
        assert_eq!(released.text(), Some("released Dune"));

        let listed = client.request("resources/list", json!({})).await.unwrap();
        let entry = listed["resources"].as_array().unwrap().iter().find(|r| r["uri"] == "ui://shop/holds").cloned();
        let entry = entry.unwrap_or_else(|| panic!("the app in resources/list: {listed}"));
        assert_eq!(entry["mimeType"], "text/html;profile=mcp-app");
        assert_eq!(entry["name"], "Holds");
        assert_eq!(entry["_meta"]["ui"]["prefersBorder"], true, "{entry}");
        let read = client.request("resources/read", json!({"uri": "ui://shop/holds"})).await.unwrap();
        let contents = &read["contents"][0];
        assert_eq!(contents["mimeType"], "text/html;profile=mcp-app");
        assert_eq!(contents["text"], "<!doctype html><p>holds</p>");
        assert_eq!(contents["_meta"]["ui"]["csp"]["connectDomains"], json!(["https://api.example.com"]));
        let made = client.request("resources/read", json!({"uri": "ui://shop/made"})).await.unwrap();
        assert_eq!(made["contents"][0]["text"], page());

        // The same through the client's typed helpers, as a host would.
        let typed = client.list_tools().await.unwrap();
        let tool = |name: &str| typed.iter().find(|t| t.name == name).unwrap();
        assert_eq!(tool("list_holds").app(), Some("ui://shop/holds"));
        assert!(!tool("list_holds").app_only());
        assert!(tool("release").app_only(), "hidden from the model");
        let app = client.read_app(tool("list_holds").app().unwrap()).await.unwrap();
        assert_eq!(app.html, "<!doctype html><p>holds</p>");
        assert_eq!(app.ui["csp"]["connectDomains"], json!(["https://api.example.com"]));
        let not_an_app = client.read_app("ui://shop/nowhere").await.unwrap_err();
        assert!(format!("{not_an_app}").contains("nowhere"), "{not_an_app}");
    }
}

#[test]
fn bad_apps_are_build_errors_naming_what_is_wrong() {
    let refused = |apps: Apps| match mcp::Server::builder().tool::<list_holds>().extension(apps).build() {
        Err(e) => e.to_string(),
        Ok(_) => panic!("built"),
    };
    let scheme = refused(Apps::new().app(App::html("https://shop/holds", "")));
    assert!(scheme.contains("ui:// URI"), "{scheme}");
    let tool = refused(Apps::new().app(App::html("ui://shop/holds", "").for_tool("nope")));
    assert!(tool.contains("`nope`"), "{tool}");
    let file = refused(Apps::new().app(App::file("ui://shop/holds", "/no/such/page.html")));
    assert!(file.contains("/no/such/page.html"), "{file}");
}
