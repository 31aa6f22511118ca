//! The Grafana dashboard (`deploy/grafana-dashboard.json`) against what the server really exports. Its shape: every
//! panel has a unique id, a title, a description, a place on the grid (no two overlap) and the `${datasource}`
//! variable as its data source (a row, a full-width title over the panels below it, has a unique id, a title and
//! its place); every variable a query uses is defined (before it, for the variables' own queries); every selector
//! names a metric the server exports and filters on `$job` and `$instance` (and on `$era` and `$tool` where the
//! metric has those labels). Then its queries: the testbed started with `--metrics` and `--redis` (a real
//! `redis-server`, `common::redis`), scraped by a real Prometheus (Debian's, `common::prometheus`), gets calls of
//! both eras (successes, a tool's failure, a server error, an unknown tool, a cancelled call, a 2025 session that
//! ends), twice, so that every rate has an increase to see, then a task run to completion; each panel's PromQL, with
//! the variables as Grafana substitutes them with "All" selected, must parse, evaluate and return data, and the key
//! panels the right data: each tool's calls, `fail`'s `tool_error`, the p99 of `sleep` within the bucket its calls
//! fell in, the completed task, Redis up and without errors.

use crate::common;

use std::collections::{BTreeMap, BTreeSet};
use std::time::{Duration, Instant};

use common::http::HttpServer;
use common::prometheus::Prometheus;
use common::redis::RedisServer;
use mcp::client::{Client, EraChoice, Started};
use serde_json::{json, Value};

/// The dashboard as shipped: a change to it rebuilds this test.
const DASHBOARD: &str = include_str!("../../deploy/grafana-dashboard.json");

/// Every metric the server exports (`mcp-runtime/src/metrics/`, as Prometheus stores the OpenMetrics names: a
/// counter's with `_total`), and Prometheus's own `up`: a query naming anything else shows nothing, silently. Not
/// `mcp_server_proxy_events_total`, which only a server with mounts exports: the testbed has none, so a panel on it
/// could not be seen to show data here.
const METRICS: &[&str] = &[
    "mcp_server_operation_duration_seconds_bucket",
    "mcp_server_operation_duration_seconds_sum",
    "mcp_server_operation_duration_seconds_count",
    "mcp_server_session_duration_seconds_bucket",
    "mcp_server_session_duration_seconds_sum",
    "mcp_server_session_duration_seconds_count",
    "mcp_server_requests_in_flight",
    "mcp_server_sessions_open",
    "mcp_server_requests_cancelled_total",
    "mcp_server_streams_open",
    "mcp_server_refusals_total",
    "mcp_server_info",
    "mcp_server_outbound_queued_bytes",
    "mcp_server_tasks_running",
    "mcp_server_tasks_ended_total",
    "mcp_server_redis_up",
    "mcp_server_redis_errors_total",
    "mcp_server_redis_reconnects_total",
    "up",
];

/// The metrics labelled `mcp_protocol_version`: their selectors must follow the `$era` variable.
const BY_ERA: &[&str] = &[
    "mcp_server_operation_duration",
    "mcp_server_session_duration",
    "mcp_server_sessions_open",
    "mcp_server_requests_cancelled",
    "mcp_server_streams_open",
];

/// The units the panels use: one per kind of quantity, so that panels side by side read alike.
const UNITS: &[&str] = &["reqps", "s", "percentunit", "short", "bytes"];

/// What Grafana puts for its built-in interval variables, as the brief of the dashboard's queries assumes: a rate
/// window of a minute holds many scrapes at the test's 1 s interval.
const BUILT_INS: &[(&str, &str)] = &[("__rate_interval", "1m"), ("__interval", "15s")];

/// The two eras' protocol versions, as the metrics label them.
const ERAS: [&str; 2] = ["2025-11-25", "2026-07-28"];

/// The tool calls each round makes in each era (the cancelled one is not answered, so not among them).
const CALLS_PER_ERA: usize = 7;

/// How long Prometheus may take to show what the calls did: a scrape (every 1 s) for a count to hold them, two
/// after an increase for a rate to see it.
const SHOWN_WITHIN: Duration = Duration::from_secs(20);

fn dashboard() -> Value {
    serde_json::from_str(DASHBOARD).expect("deploy/grafana-dashboard.json is JSON")
}

fn panels(dashboard: &Value) -> &Vec<Value> {
    dashboard["panels"].as_array().expect("the dashboard has panels")
}

/// A row: a full-width title that groups the panels below it (up to the next row), with no query of its own.
fn is_row(panel: &Value) -> bool {
    panel["type"] == "row"
}

fn variables(dashboard: &Value) -> &Vec<Value> {
    dashboard["templating"]["list"].as_array().expect("the dashboard has templating variables")
}

/// The names of the dashboard's templating variables, in their order.
fn variable_names(dashboard: &Value) -> Vec<String> {
    variables(dashboard).iter().map(|v| v["name"].as_str().expect("a variable has a name").to_owned()).collect()
}

/// A variable's query, in either form Grafana stores it (a string, or the Prometheus editor's `{"query": ...}`).
fn variable_query(variable: &Value) -> &str {
    variable["query"].as_str().or(variable["query"]["query"].as_str()).expect("a query variable has a query")
}

/// `text` with every variable replaced as Grafana does with "All" selected (`.*` for each of `defined`; the
/// built-in intervals by `BUILT_INS`), in each form Grafana takes: `$name`, `${name}`, `${name:format}`,
/// `[[name]]`. An error names a variable that is neither. (`$job` and `$instance` have no All value of their own:
/// Grafana puts the alternation of the values they offer, MCP jobs only, which `.*` covers here, where Prometheus
/// scrapes the testbed alone.)
fn substitute(text: &str, defined: &[String]) -> Result<String, String> {
    let value = |name: &str| -> Result<&str, String> {
        if let Some((_, v)) = BUILT_INS.iter().find(|(n, _)| *n == name) {
            return Ok(v);
        }
        if defined.iter().any(|d| d == name) {
            return Ok(".*");
        }
        Err(format!("`{text}` uses the variable `{name}`, which is not defined (defined: {defined:?})"))
    };
    let mut out = String::new();
    let mut rest = text;
    while let Some(at) = rest.find(['$', '[']) {
        out.push_str(&rest[..at]);
        let tail = &rest[at..];
        let (name, used) = if let Some(braced) = tail.strip_prefix("${") {
            let end = braced.find('}').ok_or_else(|| format!("`{text}`: an unclosed `${{`"))?;
            (braced[..end].split(':').next().unwrap_or_default(), end + 3)
        } else if let Some(bracketed) = tail.strip_prefix("[[") {
            let end = bracketed.find("]]").ok_or_else(|| format!("`{text}`: an unclosed `[[`"))?;
            (bracketed[..end].split(':').next().unwrap_or_default(), end + 4)
        } else if let Some(bare) = tail.strip_prefix('$') {
            let end = bare.find(|c: char| !(c.is_ascii_alphanumeric() || c == '_')).unwrap_or(bare.len());
            (&bare[..end], end + 1)
        } else {
            // A PromQL range (`[5m]`), not a variable.
            out.push('[');
            rest = &tail[1..];
            continue;
        };
        out.push_str(value(name)?);
        rest = &tail[used..];
    }
    out.push_str(rest);
    Ok(out)
}

/// One selector of a PromQL expression: the metric's name (empty for a bare `{...}`) and its label matchers (the
/// text between its braces).
#[derive(Debug)]
struct Selector {
    metric: String,
    matchers: String,
}

/// The PromQL keywords followed by a parenthesised list of label names, not a function's arguments.
const LABEL_LISTS: &[&str] = &["by", "without", "on", "ignoring", "group_left", "group_right"];

/// The PromQL words that are operators or modifiers, not metric names.
const KEYWORDS: &[&str] = &["and", "or", "unless", "bool", "offset", "atan2"];

/// PromQL's aggregations: words that may come before their `by (...)` list rather than their parenthesis.
const AGGREGATIONS: &[&str] =
    &["sum", "min", "max", "avg", "group", "stddev", "stdvar", "count", "count_values", "bottomk", "topk", "quantile"];

/// The index of the `close` that ends what `chars[open]` opens, past any string in between (a label value may hold
/// anything).
fn closing(chars: &[char], open: usize, close: char) -> usize {
    let mut i = open + 1;
    while i < chars.len() && chars[i] != close {
        if chars[i] == '"' || chars[i] == '\'' || chars[i] == '`' {
            i = end_of_string(chars, i);
        }
        i += 1;
    }
    i
}

/// The index of the quote that ends the string `chars[start]` opens.
fn end_of_string(chars: &[char], start: usize) -> usize {
    let quote = chars[start];
    let mut i = start + 1;
    while i < chars.len() && chars[i] != quote {
        i += if chars[i] == '\\' { 2 } else { 1 };
    }
    i
}

/// Every selector of `expr` (a dashboard's, variables and all): a word that is no function (followed by `(`), no
/// keyword, no label of a `by (...)` list, no number and not within a string, range or selector is a metric name.
fn selectors(expr: &str) -> Vec<Selector> {
    let chars: Vec<char> = expr.chars().collect();
    let word_char = |c: char| c.is_ascii_alphanumeric() || c == '_' || c == ':';
    let mut found = Vec::new();
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        if c == '"' || c == '\'' || c == '`' {
            i = end_of_string(&chars, i) + 1;
        } else if c == '[' {
            i = closing(&chars, i, ']') + 1;
        } else if c == '{' {
            let end = closing(&chars, i, '}');
            found.push(Selector { metric: String::new(), matchers: chars[i + 1..end].iter().collect() });
            i = end + 1;
        } else if c.is_ascii_digit() || c == '.' {
            // A number (0.99, 1e3) or a duration.
            while i < chars.len() && (word_char(chars[i]) || chars[i] == '.') {
                i += 1;
            }
        } else if word_char(c) {
            let start = i;
            while i < chars.len() && word_char(chars[i]) {
                i += 1;
            }
            let word: String = chars[start..i].iter().collect();
            let mut next = i;
            while next < chars.len() && chars[next].is_whitespace() {
                next += 1;
            }
            match chars.get(next) {
                Some('(') if LABEL_LISTS.contains(&word.as_str()) => i = closing(&chars, next, ')') + 1,
                Some('(') => {}
                _ if [KEYWORDS, AGGREGATIONS, LABEL_LISTS].iter().any(|list| list.contains(&word.as_str())) => {}
                Some('{') => {
                    let end = closing(&chars, next, '}');
                    found.push(Selector { metric: word, matchers: chars[next + 1..end].iter().collect() });
                    i = end + 1;
                }
                _ => found.push(Selector { metric: word, matchers: String::new() }),
            }
        } else {
            i += 1;
        }
    }
    found
}

/// What is wrong with one selector of a panel's query, if anything.
fn selector_faults(title: &str, expr: &str, selector: &Selector) -> Vec<String> {
    let mut faults = Vec::new();
    let Selector { metric, matchers } = selector;
    if !METRICS.contains(&metric.as_str()) {
        faults.push(format!("{title}: `{expr}` selects `{metric}`, which the server does not export"));
    }
    let required = [
        ("job=~\"$job\"", true),
        ("instance=~\"$instance\"", true),
        ("mcp_protocol_version=~\"$era\"", BY_ERA.iter().any(|m| metric.starts_with(m))),
        ("gen_ai_tool_name=~\"$tool\"", matchers.contains("mcp_method_name=\"tools/call\"")),
    ];
    for (matcher, needed) in required {
        if needed && !matchers.contains(matcher) {
            faults.push(format!("{title}: `{metric}{{{matchers}}}` lacks `{matcher}`"));
        }
    }
    faults
}

/// The dashboard's shape: what Grafana needs to import it with a Prometheus chosen then, and what keeps it usable
/// (every panel explained, placed, on the chosen data source; every query on exported metrics, filtered by the
/// variables). Every fault is listed at once.
#[test]
fn the_dashboard_is_well_formed() {
    let dashboard = dashboard();
    let mut faults = Vec::new();
    let mut fault = |ok: bool, what: String| {
        if !ok {
            faults.push(what);
        }
    };
    fault(dashboard["schemaVersion"] == 39, format!("schemaVersion {}, not 39", dashboard["schemaVersion"]));
    let inputs = dashboard["__inputs"].as_array().cloned().unwrap_or_default();
    fault(
        inputs
            .iter()
            .any(|i| i["name"] == "DS_PROMETHEUS" && i["type"] == "datasource" && i["pluginId"] == "prometheus"),
        format!("no DS_PROMETHEUS data source input to choose at import: {inputs:?}"),
    );

    // The variables: each query's variables defined before it, as Grafana resolves them in order.
    let names = variable_names(&dashboard);
    for (n, variable) in variables(&dashboard).iter().enumerate() {
        let name = &names[n];
        if variable["type"] == "datasource" {
            fault(variable["query"] == "prometheus", format!("variable {name}: a data source of type prometheus"));
            fault(
                variable["current"]["value"] == "${DS_PROMETHEUS}",
                format!("variable {name}: the data source chosen at import (${{DS_PROMETHEUS}}) as its current value"),
            );
            continue;
        }
        fault(variable["type"] == "query", format!("variable {name}: of type {}, not query", variable["type"]));
        fault(
            variable["datasource"]["uid"] == "${datasource}",
            format!("variable {name}: data source {}, not ${{datasource}}", variable["datasource"]),
        );
        if let Err(e) = substitute(variable_query(variable), &names[..n]) {
            fault(false, format!("variable {name}: {e}"));
        }
    }
    for name in ["datasource", "job", "instance", "era", "tool"] {
        fault(names.iter().any(|n| n == name), format!("no variable `{name}`"));
    }
    for variable in variables(&dashboard).iter().filter(|v| v["name"] == "era" || v["name"] == "tool") {
        let name = &variable["name"];
        fault(variable["multi"] == true, format!("variable {name}: not multi-valued"));
        fault(variable["includeAll"] == true, format!("variable {name}: no All"));
        // All must keep the series that lack the label too: on a metric without it, `=~"(a|b)"` matches nothing.
        fault(variable["allValue"] == ".*", format!("variable {name}: All is not `.*`"));
    }

    // The panels.
    let mut ids = BTreeSet::new();
    let mut places: Vec<(String, [i64; 4])> = Vec::new();
    for panel in panels(&dashboard) {
        let title = panel["title"].as_str().unwrap_or_default().to_owned();
        fault(!title.is_empty(), format!("a panel without a title: {}", panel["id"]));
        fault(
            ids.insert(panel["id"].as_i64().unwrap_or(-1)),
            format!("{title}: id {} missing or not unique", panel["id"]),
        );
        let grid = &panel["gridPos"];
        let place = ["x", "y", "w", "h"].map(|k| grid[k].as_i64().unwrap_or(-1));
        let [x, y, w, h] = place;
        for (other, [ox, oy, ow, oh]) in &places {
            let overlap = x < ox + ow && *ox < x + w && y < oy + oh && *oy < y + h;
            fault(!overlap, format!("{title}: gridPos {grid} overlaps {other}'s"));
        }
        places.push((title.clone(), place));
        if is_row(panel) {
            // Open, its panels follow it in the list (a collapsed row would hold them, out of the checks' sight).
            fault(x == 0 && y >= 0 && w == 24 && h == 1, format!("{title}: a row's gridPos {grid}, not full width"));
            fault(panel["collapsed"] == false, format!("{title}: a collapsed row"));
            fault(
                panel["panels"].as_array().is_some_and(Vec::is_empty),
                format!("{title}: a row holding panels of its own"),
            );
            fault(panel.get("targets").is_none(), format!("{title}: a row with queries"));
            continue;
        }
        // Long enough to say what the panel shows and what to do about it.
        let description = panel["description"].as_str().unwrap_or_default();
        fault(description.len() >= 100, format!("{title}: a description too short to say what to do: {description:?}"));
        fault(panel["type"] == "timeseries" || panel["type"] == "stat", format!("{title}: of type {}", panel["type"]));
        let unit = panel["fieldConfig"]["defaults"]["unit"].as_str().unwrap_or_default();
        fault(UNITS.contains(&unit), format!("{title}: unit {unit:?}, not one of {UNITS:?}"));
        fault(
            panel["datasource"]["uid"] == "${datasource}",
            format!("{title}: data source {}, not ${{datasource}}", panel["datasource"]),
        );
        fault(
            x >= 0 && y >= 0 && w > 0 && h > 0 && x + w <= 24,
            format!("{title}: gridPos {grid} is not within the 24 columns"),
        );
        let targets = panel["targets"].as_array().cloned().unwrap_or_default();
        fault(!targets.is_empty(), format!("{title}: no query"));
        let mut refs = BTreeSet::new();
        for target in &targets {
            let expr = target["expr"].as_str().unwrap_or_default();
            fault(refs.insert(target["refId"].to_string()), format!("{title}: refId {} twice", target["refId"]));
            fault(
                target["datasource"]["uid"] == "${datasource}",
                format!("{title}: a query on {}, not ${{datasource}}", target["datasource"]),
            );
            if let Err(e) = substitute(expr, &names) {
                fault(false, format!("{title}: {e}"));
            }
            let found = selectors(expr);
            fault(!found.is_empty(), format!("{title}: `{expr}` selects no metric"));
            for selector_fault in found.iter().flat_map(|s| selector_faults(&title, expr, s)) {
                fault(false, selector_fault);
            }
        }
    }
    assert!(faults.is_empty(), "deploy/grafana-dashboard.json:\n{}", faults.join("\n"));
}

/// The selector checks catch what they are for: a misspelt metric, a missing filter, a bare selector; and see past
/// functions, `by` lists, strings and ranges.
#[test]
fn the_selector_check_finds_a_query_that_would_show_nothing() {
    let expr = "histogram_quantile(0.99, sum by (le, mcp_method_name) (rate(\
                mcp_server_operation_duration_seconds_bucket{job=~\"$job\", instance=~\"$instance\", \
                mcp_protocol_version=~\"$era\", mcp_method_name=\"tools/call\", gen_ai_tool_name=~\"$tool\"}\
                [$__rate_interval]))) or on() vector(0)";
    let found = selectors(expr);
    assert_eq!(found.len(), 1, "{found:?}");
    assert!(selector_faults("ok", expr, &found[0]).is_empty(), "{:?}", selector_faults("ok", expr, &found[0]));
    let bad = "sum(rate(mcp_server_operation_duration_count{job=~\"$job\"}[1m])) / sum(mcp_server_sessions_open) \
               + count({instance=~\"$instance\"})";
    let faults: Vec<String> = selectors(bad).iter().flat_map(|s| selector_faults("bad", bad, s)).collect();
    let text = faults.join("\n");
    for expected in [
        "selects `mcp_server_operation_duration_count`",
        "lacks `instance=~\"$instance\"`",
        "`mcp_server_sessions_open{}` lacks `job=~\"$job\"`",
        "`mcp_server_sessions_open{}` lacks `mcp_protocol_version=~\"$era\"`",
        "selects ``",
    ] {
        assert!(text.contains(expected), "no fault `{expected}` in:\n{text}");
    }
    assert_eq!(
        substitute("x[$__rate_interval] ${job:regex} [[era]] $tool", &["job".into(), "era".into(), "tool".into()]),
        Ok("x[1m] .* .* .*".into())
    );
    assert!(substitute("x{a=~\"$nope\"}", &[]).unwrap_err().contains("`nope`"));
}

/// A query's series, each as its labels' values (those of `labels`, joined by a space) and its value.
fn series(result: &Value, labels: &[&str]) -> BTreeMap<String, f64> {
    let rows = result.as_array().map(Vec::as_slice).unwrap_or_default();
    rows.iter()
        .map(|s| {
            let key: Vec<&str> = labels.iter().map(|l| s["metric"][l].as_str().unwrap_or_default()).collect();
            let value = s["value"][1].as_str().and_then(|v| v.parse().ok()).unwrap_or(f64::NAN);
            (key.join(" "), value)
        })
        .collect()
}

/// One value of a query's result, by its labels' values (`series`).
fn value(results: &BTreeMap<(String, String), Value>, title: &str, target: &str, labels: &[&str], key: &str) -> f64 {
    let result = &results[&(title.to_owned(), target.to_owned())];
    series(result, labels).get(key).copied().unwrap_or(f64::NAN)
}

/// The calls of one round in one era: successes, a tool's failure, a server error (a panic), an unknown tool, and
/// a call cancelled by its client (a 300 ms timeout on a 10 s sleep); then the client closes (a 2025 session ends).
async fn round(url: &str, era: EraChoice) {
    let client = Client::builder().era(era).http(url).await.unwrap();
    for _ in 0..3 {
        client.call_tool("sleep", json!({"ms": 30})).await.unwrap();
    }
    client.call_tool("echo", json!({"text": "hi"})).await.unwrap();
    assert!(client.call_tool("fail", json!({"reason": "no"})).await.unwrap().is_error(), "fail is a tool error");
    assert!(client.call_tool("panic_async", json!({})).await.is_err(), "a panic is a JSON-RPC error");
    assert!(client.call_tool("no-such-tool", json!({})).await.is_err(), "an unknown tool is refused");
    let cancelled = client.call_tool("sleep", json!({"ms": 10_000})).timeout(Duration::from_millis(300)).await;
    assert!(cancelled.is_err(), "the long sleep is cancelled by its timeout");
    client.close().await;
}

/// Everything a failure needs: Prometheus's log and the server's stderr.
fn logs(prometheus: &Prometheus, server: &HttpServer) -> String {
    format!("--- prometheus log ---\n{}\n--- server stderr ---\n{}", prometheus.log(), server.stderr_text())
}

/// Waits until Prometheus has scraped every call so far: the tool calls answered, the calls cancelled and the
/// sessions ended that the rounds made (a scrape after the last of them).
async fn wait_scraped(prometheus: &Prometheus, server: &HttpServer, rounds: usize) {
    let expected = [
        (
            "sum(mcp_server_operation_duration_seconds_count{mcp_method_name=\"tools/call\"})",
            rounds * CALLS_PER_ERA * 2,
        ),
        ("sum(mcp_server_requests_cancelled_total)", rounds * 2),
        ("sum(mcp_server_session_duration_seconds_count)", rounds),
    ];
    let deadline = Instant::now() + SHOWN_WITHIN;
    for (query, n) in expected {
        loop {
            let result = prometheus.query(query).await;
            if result[0]["value"][1].as_str().and_then(|v| v.parse().ok()) == Some(n) {
                break;
            }
            assert!(
                Instant::now() < deadline,
                "after {rounds} round(s), `{query}` is {result}, not {n}\n{}",
                logs(prometheus, server)
            );
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
    }
}

/// Runs every panel's queries (variables substituted; a row has none); their results by panel title and refId. A
/// query Prometheus cannot parse or evaluate panics (`Prometheus::query`), naming it.
async fn run_panels(prometheus: &Prometheus, dashboard: &Value) -> BTreeMap<(String, String), Value> {
    let names = variable_names(dashboard);
    let mut results = BTreeMap::new();
    for panel in panels(dashboard).iter().filter(|p| !is_row(p)) {
        let title = panel["title"].as_str().unwrap().to_owned();
        for target in panel["targets"].as_array().unwrap() {
            let expr = substitute(target["expr"].as_str().unwrap(), &names).unwrap();
            let result = prometheus.query(&expr).await;
            results.insert((title.clone(), target["refId"].as_str().unwrap().to_owned()), result);
        }
    }
    results
}

/// What the panels must show after the two rounds and the task, on the instance scraped at `target`; every
/// mismatch, or none.
fn panel_faults(results: &BTreeMap<(String, String), Value>, target: &str) -> Vec<String> {
    let mut faults = Vec::new();
    // Every query of every panel shows something: the calls exercise each one.
    for ((title, target), result) in results {
        if result.as_array().is_none_or(Vec::is_empty) {
            faults.push(format!("{title} ({target}): no data"));
        }
    }
    let mut expect = |title: &str, target: &str, labels: &[&str], key: &str, ok: fn(f64) -> bool, what: &str| {
        let v = value(results, title, target, labels, key);
        if !ok(v) {
            let all = series(&results[&(title.to_owned(), target.to_owned())], labels);
            faults.push(format!("{title} ({target}): `{key}` is {v}, expected {what}; all series: {all:?}"));
        }
    };
    let positive: fn(f64) -> bool = |v| v > 0.0;
    let tool = &["gen_ai_tool_name"][..];
    for name in ["echo", "fail", "sleep", "panic_async", "_OTHER"] {
        expect("Calls per second by tool", "A", tool, name, positive, "calls");
    }
    let by_type = &["gen_ai_tool_name", "error_type"][..];
    expect("Errors per second by tool and error type", "A", by_type, "panic_async -32603", positive, "a server error");
    expect("Errors per second by tool and error type", "B", by_type, "fail tool_error", positive, "a tool error");
    let one: fn(f64) -> bool = |v| v == 1.0;
    let zero: fn(f64) -> bool = |v| v == 0.0;
    expect("Error ratio by tool", "A", tool, "fail", one, "1 (every call fails)");
    expect("Error ratio by tool", "A", tool, "panic_async", one, "1 (every call fails)");
    expect("Error ratio by tool", "A", tool, "echo", zero, "0 (no call fails)");
    expect("Error ratio by tool", "A", tool, "sleep", zero, "0 (no call fails)");
    let refused = &["mcp_method_name", "gen_ai_tool_name", "rpc_response_status_code"][..];
    let caller = "Rejected requests per second (caller mistakes)";
    expect(caller, "A", refused, "tools/call _OTHER -32602", positive, "the unknown tool's calls");
    // Calls of 30 ms fall in the bucket (20 ms, 50 ms], or (50 ms, 100 ms] on a loaded machine.
    let sleep_bucket: fn(f64) -> bool = |v| (0.02..=0.1).contains(&v);
    expect("Latency by tool (p50, p99)", "A", tool, "sleep", sleep_bucket, "within 20 ms to 100 ms");
    expect("Latency by tool (p50, p99)", "B", tool, "sleep", sleep_bucket, "within 20 ms to 100 ms");
    let method = &["mcp_method_name"][..];
    let finite: fn(f64) -> bool = |v| v.is_finite() && v > 0.0;
    expect("Latency by method (p50, p99)", "B", method, "tools/call", finite, "a duration");
    expect("Requests per second by method", "A", method, "tools/call", positive, "calls");
    let era = &["mcp_protocol_version"][..];
    for version in ERAS {
        expect("Calls per second by era (stacked)", "A", era, version, positive, "calls");
    }
    let cancelled = &["mcp_method_name", "gen_ai_tool_name"][..];
    expect("Cancelled requests per second by tool", "A", cancelled, "tools/call sleep", positive, "cancels");
    expect("Open sessions by era", "A", era, "2025-11-25", zero, "0 (every session ended)");
    expect("Session duration (p50, p99)", "B", era, "2025-11-25", finite, "a duration");
    expect("Instances up", "A", &[], "", one, "1 (up)");
    let status = &["status"][..];
    expect("Tasks ended per second by status", "A", status, "completed", positive, "the task completed");
    expect("Tasks running by status", "A", status, "working", zero, "0 (the task ended)");
    expect("Tasks running by status", "A", status, "input_required", zero, "0 (no task asked anything)");
    let instance = &["instance"][..];
    expect("Bytes waiting for slow readers", "A", instance, target, zero, "0 (every client read everything)");
    expect("Redis up", "A", instance, target, one, "1 (up)");
    let redis = "Redis errors and reconnects per second";
    expect(redis, "A", instance, target, zero, "0 (Redis answered every command)");
    expect(redis, "B", instance, target, zero, "0 (Redis never went away)");
    faults
}

/// Runs a task to completion (`task_sleep`, asked for as a task by a 2026 client) and waits until Prometheus has
/// scraped its end, after the rounds: their exact counts of tool calls do not include it.
async fn run_a_task(url: &str, prometheus: &Prometheus, server: &HttpServer) {
    let client = Client::builder().era(EraChoice::V2026).tasks().http(url).await.expect("a 2026 client with tasks");
    let started = client.call_tool_as_task("task_sleep", json!({"ms": 100}), None).await.expect("task_sleep starts");
    let Started::Task(task) = started else {
        panic!("task_sleep answered at once, not as a task\n{}", logs(prometheus, server))
    };
    let mut statuses = Vec::new();
    let done = task.wait_with(|s| statuses.push(s.status.clone())).await.expect("the task ends");
    assert_eq!(done.text(), Some("slept 100 ms"), "{statuses:?}");
    assert_eq!(statuses.last().map(String::as_str), Some("completed"), "{statuses:?}");
    client.close().await;
    let query = "sum(mcp_server_tasks_ended_total{status=\"completed\"})";
    let deadline = Instant::now() + SHOWN_WITHIN;
    loop {
        let result = prometheus.query(query).await;
        if result[0]["value"][1].as_str() == Some("1") {
            break;
        }
        assert!(Instant::now() < deadline, "`{query}` is {result}, not 1\n{}", logs(prometheus, server));
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

/// The variables' queries (Grafana's `label_values(selector, label)`) as PromQL: the values each variable offers.
async fn variable_values(prometheus: &Prometheus, dashboard: &Value) -> BTreeMap<String, BTreeSet<String>> {
    let names = variable_names(dashboard);
    let mut values = BTreeMap::new();
    for variable in variables(dashboard).iter().filter(|v| v["type"] == "query") {
        let query = substitute(variable_query(variable), &names).unwrap();
        let inner = query
            .strip_prefix("label_values(")
            .and_then(|q| q.strip_suffix(')'))
            .unwrap_or_else(|| panic!("variable {}: `{query}` is not label_values(selector, label)", variable["name"]));
        let (selector, label) = inner.rsplit_once(',').unwrap();
        let result = prometheus.query(&format!("count by ({label}) ({selector})")).await;
        let found = series(&result, &[label.trim()]).into_keys().collect();
        values.insert(variable["name"].as_str().unwrap().to_owned(), found);
    }
    values
}

/// The dashboard's queries on a real Prometheus scraping the testbed: every one runs, the variables offer what the
/// server exported, and the key panels show the calls made, once each rate has seen an increase (the calls twice,
/// a scrape between: a series the first round creates starts at its first count, which no rate counts; the tasks
/// ended by status exist at 0 from the start, so the one task's end is an increase). The testbed shares its state
/// on a real Redis (`--redis`, which needs `MCP_REQUEST_STATE_KEY`), for the Redis panels to show it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_panel_shows_the_calls_of_both_eras_on_a_real_prometheus() {
    let dashboard = dashboard();
    let redis = tokio::task::spawn_blocking(RedisServer::start).await.expect("redis-server starts");
    let server = HttpServer::start_with_env(
        &["--metrics", "127.0.0.1:0", "--redis", &redis.url()],
        &[("MCP_REQUEST_STATE_KEY", common::shops::REQUEST_STATE_KEY)],
    );
    let target = server.metrics_address().await;
    let targets = [target.clone()];
    let prometheus = tokio::task::spawn_blocking(move || Prometheus::start(&targets)).await.unwrap();
    prometheus.scraped(Duration::from_secs(30)).await;
    for rounds in 1..=2 {
        for era in [EraChoice::V2025, EraChoice::V2026] {
            round(&server.url, era).await;
        }
        wait_scraped(&prometheus, &server, rounds).await;
    }
    run_a_task(&server.url, &prometheus, &server).await;

    let values = variable_values(&prometheus, &dashboard).await;
    let offers = |name: &str, expected: &[&str]| {
        let missing: Vec<&&str> = expected.iter().filter(|e| !values[name].contains(**e)).collect();
        assert!(
            missing.is_empty(),
            "variable {name} offers {:?}, not {missing:?}\n{}",
            values[name],
            logs(&prometheus, &server)
        );
    };
    offers("job", &[common::prometheus::JOB]);
    offers("instance", &[&target]);
    offers("era", &ERAS);
    offers("tool", &["echo", "fail", "sleep", "panic_async", "_OTHER"]);

    // A rate needs two samples after an increase: poll, briefly, until the panels show it.
    let deadline = Instant::now() + SHOWN_WITHIN;
    loop {
        let results = run_panels(&prometheus, &dashboard).await;
        let faults = panel_faults(&results, &target);
        if faults.is_empty() {
            break;
        }
        if Instant::now() >= deadline {
            let shown: Vec<String> = results.iter().map(|((t, r), v)| format!("{t} ({r}): {v}")).collect();
            panic!(
                "the panels do not show the calls within {SHOWN_WITHIN:?}:\n{}\n--- every result ---\n{}\n{}",
                faults.join("\n"),
                shown.join("\n"),
                logs(&prometheus, &server)
            );
        }
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
}
