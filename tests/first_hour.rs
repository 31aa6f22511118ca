//! What a new user meets in the first hour and the first deployment (issue 22, the server's side): the server info
//! a builder reports, a server that serves nothing, the command line of `#[mcp::main]`, the Host/Origin guard over
//! a real socket, typed resource errors, and output to a closed pipe.

mod common;

use serde_json::json;

#[test]
fn name_alone_keeps_a_version() {
    let server = mcp::Server::builder().name("notes").build().unwrap();
    let info = &server.schema()["serverInfo"];
    assert_eq!(info["name"], "notes");
    assert_eq!(info["version"], mcp::DEFAULT_SERVER_VERSION, "{info}");

    let server = mcp::Server::builder().version("1.2.3").name("notes").build().unwrap();
    assert_eq!(server.schema()["serverInfo"], json!({ "name": "notes", "version": "1.2.3" }));

    // What #[mcp::main] does: the binary's info is the default; the builder's name overrides only the name.
    let server = mcp::Server::builder()
        .name("notes")
        .default_info(mcp::protocol::Implementation::new("notes-bin", "4.5.6"))
        .build()
        .unwrap();
    assert_eq!(server.schema()["serverInfo"], json!({ "name": "notes", "version": "4.5.6" }));
}

/// The `bare` binary: nothing registered.
fn bare() -> std::path::PathBuf {
    std::path::PathBuf::from(env!("CARGO_BIN_EXE_bare"))
}

/// Runs `bare` with these arguments and stdin closed; its exit status, stdout and stderr.
fn run_bare(args: &[&str], env: &[(&str, &str)]) -> (std::process::ExitStatus, String, String) {
    let out = std::process::Command::new(bare())
        .args(args)
        .envs(env.iter().copied())
        .stdin(std::process::Stdio::null())
        .output()
        .expect("run bare");
    (out.status, String::from_utf8_lossy(&out.stdout).into_owned(), String::from_utf8_lossy(&out.stderr).into_owned())
}

#[test]
fn an_empty_server_says_so_on_stdio() {
    let (status, _, stderr) = run_bare(&[], &[]);
    assert!(status.success(), "{stderr}");
    assert!(stderr.contains("WARN") && stderr.contains("serves nothing"), "{stderr}");
    assert!(stderr.contains("use your_library as _;") && stderr.contains("#[mcp::main]"), "{stderr}");
    assert_eq!(stderr.matches("serves nothing").count(), 1, "{stderr}");
}

#[test]
fn a_server_with_tools_does_not_warn() {
    let (_, _, stderr) = {
        let out = std::process::Command::new(common::testbed())
            .stdin(std::process::Stdio::null())
            .output()
            .expect("run the testbed");
        (out.status, (), String::from_utf8_lossy(&out.stderr).into_owned())
    };
    assert!(!stderr.contains("serves nothing"), "{stderr}");
}

#[test]
fn list_tools_into_a_closed_pipe_exits_quietly() {
    // The reading end closes before the program writes (`--list-tools | head -0`, or `head` that read enough).
    for flag in ["--list-tools", "--schema", "--help", "--version"] {
        let mut child = std::process::Command::new(common::testbed())
            .arg(flag)
            .stdin(std::process::Stdio::null())
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .expect("spawn the testbed");
        drop(child.stdout.take());
        let out = child.wait_with_output().expect("wait");
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(!stderr.contains("panicked") && !stderr.contains("Broken pipe"), "{flag}: {stderr}");
        assert!(out.status.success(), "{flag}: {:?} {stderr}", out.status);
    }
}

#[test]
fn a_start_up_error_is_printed_once() {
    let out = std::process::Command::new(common::testbed())
        .env("TESTBED_FAIL_STARTUP", "unable to open database file")
        .env("RUST_LOG", "info")
        .stdin(std::process::Stdio::null())
        .output()
        .expect("run the testbed");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert_eq!(stderr.matches("unable to open database file").count(), 1, "{stderr}");
    assert!(stderr.contains("error: start-up failed: could not open the database"), "{stderr}");
}

#[tokio::test]
async fn the_request_state_key_warning_only_when_a_handler_can_ask() {
    use std::time::Duration;
    // The testbed's tools ask (elicitation, sampling): a random key is worth a warning.
    let asking = common::http::HttpServer::start(&[]);
    assert!(asking.wait_stderr("MCP_REQUEST_STATE_KEY", Duration::from_secs(10)).await, "{}", asking.stderr_text());
    // Nothing here can ask: no warning about a key nobody uses.
    let quiet = common::http::HttpServer::start_binary(bare(), &[]);
    assert!(quiet.wait_stderr("serves nothing", Duration::from_secs(10)).await, "{}", quiet.stderr_text());
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert!(!quiet.stderr_text().contains("MCP_REQUEST_STATE_KEY"), "{}", quiet.stderr_text());
}

#[test]
fn a_typo_in_an_option_is_refused_naming_it() {
    let (status, _, stderr) = run_bare(&["--htpp", "8000"], &[]);
    assert_eq!(status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("unknown option `--htpp`; did you mean `--http`?"), "{stderr}");
    assert!(!stderr.contains("OPTIONS db="), "the body must not run: {stderr}");

    let (status, _, stderr) = run_bare(&["--dbb", "x.db"], &[]);
    assert_eq!(status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("did you mean `--db`?"), "{stderr}");

    let (status, _, stderr) = run_bare(&["--frobnicate"], &[]);
    assert_eq!(status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("unknown option `--frobnicate`; see --help"), "{stderr}");

    let (status, _, stderr) = run_bare(&["notes.db"], &[]);
    assert_eq!(status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("unexpected argument `notes.db`"), "{stderr}");

    // A declared option without its value, or a flag with one.
    let (status, _, stderr) = run_bare(&["--db"], &[]);
    assert_eq!(status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("`--db` needs a value, such as PATH"), "{stderr}");
    let (status, _, stderr) = run_bare(&["--verbose=yes"], &[]);
    assert_eq!(status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("`--verbose` takes no value"), "{stderr}");

    // The program's own refusal is a usage error too.
    let (status, _, stderr) = run_bare(&["--db="], &[]);
    assert_eq!(status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("error: `--db` needs a file name"), "{stderr}");
}

#[test]
fn declared_options_reach_the_program_and_the_help() {
    let (status, _, stderr) = run_bare(&["--db", "x.db", "--verbose"], &[]);
    assert!(status.success(), "{stderr}");
    assert!(stderr.contains("OPTIONS db=x.db verbose=true"), "{stderr}");
    let (status, _, stderr) = run_bare(&["--db=y.db"], &[]);
    assert!(status.success(), "{stderr}");
    assert!(stderr.contains("OPTIONS db=y.db verbose=false"), "{stderr}");

    let (status, help, _) = run_bare(&["--help"], &[]);
    assert!(status.success());
    assert!(help.contains("PROGRAM OPTIONS:"), "{help}");
    assert!(help.contains("--db PATH") && help.contains("The database file (default notes.db)"), "{help}");
    assert!(help.contains("--verbose") && help.contains("--allow-host NAME"), "{help}");
    assert!(help.contains("MCP_ALLOW_HOST"), "{help}");
}
