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
