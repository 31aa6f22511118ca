//! A client of the bookshop: starts it, rebuilds its search index with a progress bar, and cancels cleanly on
//! Ctrl-C (the bookshop puts search back online, and says so).
//!
//! `cargo build --example bookshop && cargo run --example client` (or pass another server command:
//! `cargo run --example client -- path/to/server args...`). Add `--2025` to speak 2025-11-25 only.

use std::time::Duration;

use indicatif::{ProgressBar, ProgressStyle};
use mcp::client::{Client, EraChoice};
use serde_json::json;

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut args: Vec<String> = std::env::args().skip(1).collect();
    let only_2025 = args.iter().any(|a| a == "--2025");
    args.retain(|a| a != "--2025");
    let command = match args.split_first() {
        Some((program, rest)) => {
            let mut c = tokio::process::Command::new(program);
            c.args(rest);
            c
        }
        None => {
            // The bookshop beside this example's own binary (target/debug/examples/).
            let me = std::env::current_exe()?;
            let bookshop = me.with_file_name(format!("bookshop{}", std::env::consts::EXE_SUFFIX));
            if !bookshop.exists() {
                return Err(
                    format!("{} is missing: run `cargo build --example bookshop` first", bookshop.display()).into()
                );
            }
            tokio::process::Command::new(bookshop)
        }
    };
    // The server's stderr is copied to ours by the client (and its end kept, should the server exit).
    let era = if only_2025 { EraChoice::V2025 } else { EraChoice::Auto };
    let client = Client::builder().name("bookshop-client").era(era).stdio(command).await?;
    println!(
        "connected to {} {} ({})",
        client.server_info().name,
        client.server_info().version,
        client.protocol_version()
    );

    let titles = ["Dune", "Emma", "Middlemarch", "Moby-Dick"];
    let bar = ProgressBar::new(titles.len() as u64);
    bar.set_style(ProgressStyle::with_template("{bar:30} {pos}/{len} {msg}")?);
    let progress = bar.clone();
    let rebuild = client
        .call_tool("rebuild_index", json!({ "titles": titles }))
        .on_progress(move |p| {
            progress.set_position(p.progress as u64);
            if let Some(message) = p.message {
                progress.set_message(message);
            }
        })
        .idle_timeout(Duration::from_secs(10));
    tokio::select! {
        result = rebuild => {
            bar.finish();
            println!("{}", result?.text().unwrap_or_default());
        }
        _ = tokio::signal::ctrl_c() => {
            // Leaving the select dropped the call: the bookshop got its cancel.
            bar.abandon_with_message("cancelled");
        }
    }
    // Search comes back online either way: a cancelled rebuild stops before its next book (it checks between books).
    let mut status = String::new();
    for _ in 0..30 {
        status = client.call_tool("search_status", json!({})).await?.text().unwrap_or_default().to_owned();
        if status == "online" {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    println!("search is {status}");
    client.close().await;
    Ok(())
}
