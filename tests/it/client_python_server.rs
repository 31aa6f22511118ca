//! `mcp::client` against a server built with the official Python SDK (PyPI `mcp` 2.3, `MCPServer`;
//! `tests/python/server.py`), over stdio and Streamable HTTP, in both eras (2025-11-25 pinned with
//! `EraChoice::V2025`, 2026-07-28 with `EraChoice::V2026`, and what `EraChoice::Auto` picks): lists, a tool call,
//! progress, a prompt, a resource, elicitation answered by the client's handler, and cancellation (a timeout, and a
//! dropped call) observed by the Python handler.
//!
//! The SDK serves both eras on both transports: on stdio the first request decides the connection's era
//! (`mcp/server/runner.py::serve_dual_era_loop`); on HTTP each POST whose `MCP-Protocol-Version` names no handshake
//! version goes to the single-exchange 2026 entry (`streamable_http_manager.py`). Cancellation reaches the handler in
//! all four: `notifications/cancelled` on stdio (both eras) and in the 2025 HTTP session, and closing the POST's
//! stream in 2026 HTTP (`_streamable_http_modern.py` watches for `http.disconnect` and cancels the handler's scope).
//!
//! Where the SDK differs by era: `ctx.elicit` sends a server-to-client request, which the SDK refuses to send in the
//! 2026-07-28 era on either transport (a modern stdio connection holds a `NotifyOnlyOutbound` and a
//! `_NoServerRequestsDispatchContext`, see `runner.py::_serve_modern_stream`; a modern HTTP POST a
//! `TransportContext(can_send_request=False)`, see `_streamable_http_modern.py`): it raises `NoBackChannelError`, an
//! `MCPError` (-32600) that answers the call as a JSON-RPC error. The SDK's cross-era elicitation is a
//! `Resolve(...)` dependency returning `Elicit(...)` (`mcp/server/mcpserver/resolve.py`): a request mid-call in 2025,
//! an `input_required` round in 2026. Both tools are tested in every combination.

use crate::common;

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{mpsc, Arc, Mutex};
use std::time::{Duration, Instant};

use mcp::client::{Client, ClientBuilder, EraChoice, Error};
use serde_json::{json, Value};

/// How long the server may take to show it noticed a cancel.
const WAIT: Duration = Duration::from_secs(5);

#[derive(Clone, Copy, Debug)]
enum Transport {
    Stdio,
    Http,
}

const COMBOS: [(Transport, EraChoice); 4] = [
    (Transport::Stdio, EraChoice::V2025),
    (Transport::Stdio, EraChoice::V2026),
    (Transport::Http, EraChoice::V2025),
    (Transport::Http, EraChoice::V2026),
];

fn script() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/python/server.py")
}

/// The Python server, reached by the client, and what it printed on stderr.
enum Target {
    /// The client spawned it; its stderr goes to this file.
    Stdio(PathBuf),
    /// A process serving HTTP; its stderr lines, read by a thread.
    Http { child: Child, url: String, stderr: Arc<Mutex<Vec<String>>> },
}

impl Drop for Target {
    fn drop(&mut self) {
        match self {
            Target::Stdio(path) => {
                let _ = std::fs::remove_file(path);
            }
            Target::Http { child, .. } => {
                let _ = child.kill();
                let _ = child.wait();
            }
        }
    }
}

impl Target {
    /// Starts `server.py http 0` and waits for the address it prints.
    fn http() -> Target {
        let mut child = std::process::Command::new(common::python::python())
            .arg(script())
            .args(["http", "0"])
            .env("PYTHONUNBUFFERED", "1")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .expect("spawn the Python server");
        let stderr: Arc<Mutex<Vec<String>>> = Arc::default();
        let lines = stderr.clone();
        let pipe = child.stderr.take().unwrap();
        let (tx, rx) = mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(pipe).lines() {
                let Ok(line) = line else { break };
                if let Some(url) = line.strip_prefix("listening on ") {
                    let _ = tx.send(url.to_owned());
                }
                lines.lock().unwrap().push(line);
            }
        });
        let url = rx.recv_timeout(Duration::from_secs(30)).unwrap_or_else(|_| {
            let _ = child.kill();
            panic!("the Python server did not say where it listens: {}", stderr.lock().unwrap().join("\n"))
        });
        Target::Http { child, url, stderr }
    }

    fn stderr(&self) -> String {
        match self {
            Target::Stdio(path) => std::fs::read_to_string(path).unwrap_or_default(),
            Target::Http { stderr, .. } => stderr.lock().unwrap().join("\n"),
        }
    }

    async fn wait_stderr(&self, needle: &str, within: Duration) -> bool {
        let deadline = Instant::now() + within;
        while Instant::now() < deadline {
            if self.stderr().contains(needle) {
                return true;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        false
    }
}

/// The elicitation questions the client's handler was asked (their params).
type Asked = Arc<Mutex<Vec<Value>>>;

fn builder(era: EraChoice, asked: &Asked) -> ClientBuilder {
    let asked = asked.clone();
    Client::builder().name("rust-client-python-interop").era(era).on_elicitation(move |params: Value| {
        asked.lock().unwrap().push(params);
        async { Ok(json!({"action": "accept", "content": {"name": "Ada"}})) }
    })
}

async fn connect(transport: Transport, era: EraChoice) -> (Client, Target, Asked) {
    let asked = Asked::default();
    let builder = builder(era, &asked);
    let python = tokio::task::spawn_blocking(common::python::python).await.unwrap();
    match transport {
        Transport::Stdio => {
            static NEXT: AtomicUsize = AtomicUsize::new(0);
            let n = NEXT.fetch_add(1, Ordering::Relaxed);
            let path = std::env::temp_dir().join(format!("mcp-python-server-{}-{n}.log", std::process::id()));
            let mut command = tokio::process::Command::new(python);
            command.arg(script()).arg("stdio").env("PYTHONUNBUFFERED", "1");
            // The client pipes the child's stderr; each line goes to the file.
            let file = Mutex::new(std::fs::File::create(&path).unwrap());
            let builder = builder.on_stderr(move |line| {
                use std::io::Write;
                let _ = writeln!(file.lock().unwrap(), "{line}");
            });
            let target = Target::Stdio(path);
            let client = builder
                .stdio(command)
                .await
                .unwrap_or_else(|e| panic!("connect over stdio ({era:?}): {e}\n{}", target.stderr()));
            (client, target, asked)
        }
        Transport::Http => {
            let target = Target::http();
            let Target::Http { url, .. } = &target else { unreachable!() };
            let client = builder
                .http(url.clone())
                .await
                .unwrap_or_else(|e| panic!("connect over HTTP ({era:?}): {e}\n{}", target.stderr()));
            (client, target, asked)
        }
    }
}

#[tokio::test]
async fn auto_picks_the_2026_era_and_a_pinned_era_is_kept() {
    for transport in [Transport::Stdio, Transport::Http] {
        let (auto, _target, _) = connect(transport, EraChoice::Auto).await;
        assert!(auto.era() == mcp::Era::V2026, "{transport:?}: Auto finds server/discover");
        assert_eq!(auto.protocol_version(), "2026-07-28", "{transport:?}");
        assert_eq!(auto.server_info().name, "python-interop", "{transport:?}");
        assert!(auto.server_capabilities()["tools"].is_object(), "{transport:?}: {}", auto.server_capabilities());
        let sum = auto.call_tool("add", json!({"a": 20, "b": 22})).await.unwrap();
        assert_eq!(sum.text(), Some("42"), "{transport:?}");
        // Any method, through `request`.
        let prompts = auto.request("prompts/list", json!({})).await.unwrap();
        assert_eq!(prompts["prompts"][0]["name"], "greet", "{transport:?}: {prompts}");

        let (v2026, _target, _) = connect(transport, EraChoice::V2026).await;
        assert!(v2026.era() == mcp::Era::V2026, "{transport:?}");
        assert_eq!(v2026.protocol_version(), "2026-07-28", "{transport:?}");

        let (legacy, _target, _) = connect(transport, EraChoice::V2025).await;
        assert!(legacy.era() == mcp::Era::V2025, "{transport:?}");
        assert_eq!(legacy.protocol_version(), "2025-11-25", "{transport:?}");
        assert_eq!(legacy.server_info().name, "python-interop", "{transport:?}");
        assert!(legacy.server_capabilities()["prompts"].is_object(), "{transport:?}");
        legacy.close().await;
    }
}

#[tokio::test]
async fn lists_a_tool_call_a_prompt_and_a_resource_in_every_combination() {
    for (transport, era) in COMBOS {
        let why = format!("{transport:?} {era:?}");
        let (client, target, _) = connect(transport, era).await;

        let tools = client.list_tools().await.unwrap_or_else(|e| panic!("{why}: {e}"));
        let mut listed: Vec<&str> = tools.iter().map(|t| t.name.as_str()).collect();
        listed.sort_unstable();
        assert_eq!(listed, ["add", "ask_name", "ask_name_resolved", "slow"], "{why}");
        let add = tools.iter().find(|t| t.name == "add").unwrap();
        assert_eq!(add.input_schema["required"], json!(["a", "b"]), "{why}: {:?}", add.raw());

        let sum = client.call_tool("add", json!({"a": 2, "b": 3})).await.unwrap_or_else(|e| panic!("{why}: {e}"));
        assert!(!sum.is_error(), "{why}: {:?}", sum.raw);
        assert_eq!(sum.text(), Some("5"), "{why}: {:?}", sum.raw);
        assert_eq!(sum.structured(), Some(&json!({"result": 5})), "{why}");
        #[derive(serde::Deserialize)]
        struct Sum {
            result: i64,
        }
        assert_eq!(sum.json::<Sum>().unwrap().result, 5, "{why}");

        // A bad argument is the tool's error (the SDK validates against the input schema).
        let bad = client.call_tool("add", json!({"a": "two", "b": 3})).await;
        match bad {
            Ok(result) => assert!(result.is_error(), "{why}: {:?}", result.raw),
            Err(e) => assert_eq!(e.code(), Some(-32602), "{why}: {e}"),
        }

        let prompts = client.list_prompts().await.unwrap_or_else(|e| panic!("{why}: {e}"));
        assert_eq!(prompts.iter().map(|p| p.name.as_str()).collect::<Vec<_>>(), ["greet"], "{why}");
        assert_eq!(prompts[0].arguments[0].name, "name", "{why}: {:?}", prompts[0].raw());
        let prompt = client.get_prompt("greet", json!({"name": "Ada"})).await.unwrap_or_else(|e| panic!("{why}: {e}"));
        assert_eq!(prompt["messages"][0]["role"], "user", "{why}: {prompt}");
        assert_eq!(prompt["messages"][0]["content"]["text"], "Hello, Ada!", "{why}: {prompt}");

        let resources = client.list_resources().await.unwrap_or_else(|e| panic!("{why}: {e}"));
        assert!(resources.iter().any(|r| r.uri == "test://hello"), "{why}: {resources:?}");
        let read = client.read_resource("test://hello").await.unwrap_or_else(|e| panic!("{why}: {e}"));
        assert_eq!(read["contents"][0]["uri"], "test://hello", "{why}: {read}");
        assert_eq!(read["contents"][0]["text"], "hello", "{why}: {read}");
        let missing = client.read_resource("test://nothing").await.unwrap_err();
        assert!(missing.code().is_some(), "{why}: an RPC error, not {missing:?}");

        let unknown = client.call_tool("no_such_tool", json!({})).await;
        match unknown {
            Ok(result) => assert!(result.is_error(), "{why}: {:?}", result.raw),
            Err(e) => assert!(e.code().is_some(), "{why}: {e:?}"),
        }
        client.close().await;
        drop(target);
    }
}

#[tokio::test]
async fn progress_reaches_the_callback_in_every_combination() {
    for (transport, era) in COMBOS {
        let why = format!("{transport:?} {era:?}");
        let (client, target, _) = connect(transport, era).await;
        let seen = Arc::new(Mutex::new(Vec::new()));
        let record = seen.clone();
        let result = client
            .call_tool("slow", json!({"seconds": 0.5}))
            .on_progress(move |p| record.lock().unwrap().push((p.progress, p.total, p.message)))
            .timeout(Duration::from_secs(10))
            .await
            .unwrap_or_else(|e| panic!("{why}: {e}\n{}", target.stderr()));
        assert_eq!(result.text(), Some("slept 0.5 s"), "{why}: {:?}", result.raw);
        let seen = seen.lock().unwrap().clone();
        let values: Vec<f64> = seen.iter().map(|(p, _, _)| *p).collect();
        assert_eq!(values, [1.0, 2.0, 3.0, 4.0, 5.0], "{why}: {seen:?}");
        assert!(seen.iter().all(|(_, total, _)| *total == Some(5.0)), "{why}: {seen:?}");
        assert_eq!(seen[0].2.as_deref(), Some("step 1 of 5"), "{why}");
        // The server logs after it answered: wait for the line rather than race its stderr reader.
        assert!(target.wait_stderr("SLOW_DONE 0.5", WAIT).await, "{why}: {}", target.stderr());
    }
}

#[tokio::test]
async fn elicitation_is_answered_by_the_handler() {
    for (transport, era) in COMBOS {
        let why = format!("{transport:?} {era:?}");
        let (client, target, asked) = connect(transport, era).await;

        // Through a resolver: the SDK asks in either era (2025: `elicitation/create` mid-call; 2026: an
        // `input_required` result the client answers and retries).
        let resolved = client.call_tool("ask_name_resolved", json!({})).await.unwrap_or_else(|e| panic!("{why}: {e}"));
        assert_eq!(resolved.text(), Some("Hello, Ada"), "{why}: {:?}\n{}", resolved.raw, target.stderr());
        {
            let asked = asked.lock().unwrap();
            assert_eq!(asked.len(), 1, "{why}: {asked:?}");
            assert_eq!(asked[0]["message"], "What is your name?", "{why}");
            assert_eq!(asked[0]["requestedSchema"]["properties"]["name"]["type"], "string", "{why}: {}", asked[0]);
            assert_eq!(asked[0]["requestedSchema"]["required"], json!(["name"]), "{why}");
        }
        asked.lock().unwrap().clear();

        // With `ctx.elicit`: a server-to-client request, which the SDK sends only in the 2025 era.
        let direct = client.call_tool("ask_name", json!({})).await;
        match era {
            EraChoice::V2025 => {
                let direct = direct.unwrap_or_else(|e| panic!("{why}: {e}"));
                assert_eq!(direct.text(), Some("Hello, Ada"), "{why}: {:?}", direct.raw);
                assert_eq!(asked.lock().unwrap().len(), 1, "{why}");
            }
            _ => {
                // NoBackChannelError is an MCPError (INVALID_REQUEST), so it is the call's JSON-RPC error, not a
                // tool result with isError; the client was never asked.
                let error = direct.unwrap_err();
                assert_eq!(error.code(), Some(-32600), "{why}: {error}");
                assert!(error.to_string().contains("no back-channel"), "{why}: {error}");
                assert!(asked.lock().unwrap().is_empty(), "{why}");
            }
        }
    }
}

#[tokio::test]
async fn a_timeout_cancels_the_python_handler() {
    for (transport, era) in COMBOS {
        let why = format!("{transport:?} {era:?}");
        let (client, target, _) = connect(transport, era).await;
        let started = Instant::now();
        let outcome = client.call_tool("slow", json!({"seconds": 30})).timeout(Duration::from_millis(300)).await;
        assert!(matches!(outcome, Err(Error::Timeout(_))), "{why}: {outcome:?}");
        assert!(started.elapsed() < Duration::from_secs(2), "{why}: {:?}", started.elapsed());
        assert!(
            target.wait_stderr("SLOW_CANCELLED", WAIT).await,
            "{why}: the Python handler was not cancelled:\n{}",
            target.stderr()
        );
        // The connection goes on.
        let sum = client.call_tool("add", json!({"a": 1, "b": 1})).await.unwrap_or_else(|e| panic!("{why}: {e}"));
        assert_eq!(sum.text(), Some("2"), "{why}");
        assert!(!target.stderr().contains("SLOW_DONE"), "{why}");
    }
}

#[tokio::test]
async fn dropping_a_call_cancels_the_python_handler() {
    for (transport, era) in COMBOS {
        let why = format!("{transport:?} {era:?}");
        let (client, target, _) = connect(transport, era).await;
        let caller = client.clone();
        let call = tokio::spawn(async move { caller.call_tool("slow", json!({"seconds": 30})).await });
        assert!(target.wait_stderr("SLOW_START", WAIT).await, "{why}: {}", target.stderr());
        call.abort();
        assert!(call.await.unwrap_err().is_cancelled(), "{why}");
        assert!(
            target.wait_stderr("SLOW_CANCELLED", WAIT).await,
            "{why}: dropping the call did not cancel the Python handler:\n{}",
            target.stderr()
        );
        let sum = client.call_tool("add", json!({"a": 2, "b": 2})).await.unwrap_or_else(|e| panic!("{why}: {e}"));
        assert_eq!(sum.text(), Some("4"), "{why}");
    }
}
