//! The bookshop's app (MCP Apps) in a real browser: the bookshop over HTTP; our client reads its app
//! (`ui://bookshop/holds`, `text/html;profile=mcp-app`) and finds it linked from `list_holds`; then headless
//! Chromium (Debian's, else the one npm's `@sparticuz/chromium` ships: tests/common/browser.rs; driven by Playwright
//! from the tests' Python venv) renders it in a sandboxed frame on a host
//! page of the test's own, which proxies the app's tool calls to the bookshop (tests/python/apps_browser.py): the
//! app shows the hold, a click on its button releases it through `cancel_hold`, and a hold made later appears by
//! itself. Screenshots for a person to look at are written under `target/apps-browser/`.

use crate::common;

use common::http::HttpServer;
use mcp::client::{Client, EraChoice};
use serde_json::json;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_bookshops_app_renders_its_holds_and_releases_one_in_chromium() {
    let shop = HttpServer::start_binary(common::example("bookshop"), &[]);
    let client = Client::builder().era(EraChoice::V2026).http(shop.url.clone()).await.unwrap();
    let tools = client.request("tools/list", json!({})).await.unwrap();
    let list_holds = tools["tools"].as_array().unwrap().iter().find(|t| t["name"] == "list_holds").cloned().unwrap();
    assert_eq!(list_holds["_meta"]["ui"]["resourceUri"], "ui://bookshop/holds", "{list_holds}");
    let read = client.request("resources/read", json!({"uri": "ui://bookshop/holds"})).await.unwrap();
    let contents = &read["contents"][0];
    assert_eq!(contents["mimeType"], "text/html;profile=mcp-app", "{read}");
    assert_eq!(contents["_meta"]["ui"]["prefersBorder"], true, "{read}");
    let html = contents["text"].as_str().unwrap();
    assert!(html.contains("ui/initialize"), "the app speaks to its host");

    let out = common::install::target_dir().join("apps-browser");
    std::fs::create_dir_all(&out).unwrap();
    let page = out.join("holds.html");
    std::fs::write(&page, html).unwrap();
    let url = shop.url.clone();
    let (page_arg, out_arg) = (page.clone(), out.clone());
    let printed = tokio::task::spawn_blocking(move || {
        let chromium = common::browser::chromium();
        eprintln!("the browser: {} ({})", chromium.executable.display(), chromium.source);
        let mut env = chromium.env;
        env.push(("MCP_TEST_CHROMIUM", chromium.executable.into_os_string()));
        let args = [url.as_ref(), page_arg.as_os_str(), out_arg.as_os_str()];
        common::python::run_script_with_env("apps_browser.py", &args, &env)
    })
    .await
    .unwrap();
    assert!(printed.contains("all ok"), "{printed}\n{}", shop.stderr_text());
    for shot in ["holds.png", "released.png", "followed.png"] {
        let size = std::fs::metadata(out.join(shot)).map(|m| m.len()).unwrap_or(0);
        assert!(size > 1000, "the screenshot {shot} was written ({size} bytes)");
    }
}
