//! The public API of `mcp` (every feature), listed from rustdoc's JSON by the `public-api` crate (cargo-public-api's
//! library; blanket, auto-trait and derived impls left out), against the committed listing
//! `mcp-runtime/public-api.txt`: a change to the public face is a diff in review, made on purpose.
//!
//! rustdoc's JSON output is unstable: the one stable toolchain of the machine gives it with `RUSTC_BOOTSTRAP=1`, for
//! this one `cargo rustdoc`, in a target directory of its own (`target/public-api`). To accept a change:
//! `MCP_BLESS_API=1 cargo test --test it public_api::`, and commit the listing.

use std::collections::BTreeSet;
use std::path::Path;
use std::process::Command;

#[test]
fn the_public_api_is_the_committed_listing() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let target = root.join("target/public-api");
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let out = Command::new(cargo)
        .args(["rustdoc", "-q", "-p", "mcp-runtime", "--all-features", "--locked", "--target-dir"])
        .arg(&target)
        .args(["--", "-Z", "unstable-options", "--output-format", "json"])
        .env("RUSTC_BOOTSTRAP", "1")
        .env_remove("RUSTDOCFLAGS")
        .current_dir(root)
        .output()
        .expect("run cargo rustdoc");
    assert!(out.status.success(), "cargo rustdoc failed:\n{}", String::from_utf8_lossy(&out.stderr));
    let api = public_api::Builder::from_rustdoc_json(target.join("doc/mcp.json"))
        .omit_blanket_impls(true)
        .omit_auto_trait_impls(true)
        .omit_auto_derived_impls(true)
        .build()
        .expect("read rustdoc's JSON");
    let now = api.to_string();
    let listing = root.join("mcp-runtime/public-api.txt");
    if std::env::var_os("MCP_BLESS_API").is_some() {
        std::fs::write(&listing, &now).expect("write the listing");
        return;
    }
    let committed = std::fs::read_to_string(&listing).unwrap_or_default();
    if now != committed {
        let (was, is): (BTreeSet<&str>, BTreeSet<&str>) = (committed.lines().collect(), now.lines().collect());
        let removed: Vec<&str> = was.difference(&is).copied().collect();
        let added: Vec<&str> = is.difference(&was).copied().collect();
        panic!(
            "the public API changed; if on purpose, run `MCP_BLESS_API=1 cargo test --test it public_api::` and commit \
             mcp-runtime/public-api.txt\n\nremoved:\n{}\n\nadded:\n{}",
            removed.join("\n"),
            added.join("\n")
        );
    }
}
