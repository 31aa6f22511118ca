//! Node 22 and the official conformance suite, installed from the npm registry under `target/node-tools` on first
//! use (and again when `tests/node/package.json` changes).

use std::path::{Path, PathBuf};
use std::process::Command;

use super::install;

/// The `node_modules/.bin` folder holding `node` (22) and `conformance`.
pub fn tools() -> PathBuf {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let manifest = std::fs::read_to_string(root.join("tests/node/package.json")).expect("tests/node/package.json");
    let dir = install::target_dir().join("node-tools");
    install::once(&install::target_dir().join("node-tools.installed"), &manifest, || npm_install(&dir, &manifest));
    dir.join("node_modules/.bin")
}

/// Writes `manifest` as `dir/package.json` and runs `npm install` there (under [`install::once`]'s lock).
pub fn npm_install(dir: &Path, manifest: &str) {
    std::fs::create_dir_all(dir).unwrap();
    std::fs::write(dir.join("package.json"), manifest).unwrap();
    let out = Command::new("npm")
        .args(["install", "--no-audit", "--no-fund", "--loglevel=error"])
        .current_dir(dir)
        .output()
        .expect("npm (Node's package manager) must be on PATH");
    assert!(
        out.status.success(),
        "npm install in {} failed:\n{}\n{}",
        dir.display(),
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}

/// `PATH` with the tools first, so `#!/usr/bin/env node` finds Node 22.
pub fn path_with_tools(bin: &Path) -> std::ffi::OsString {
    let mut paths = vec![bin.to_path_buf()];
    paths.extend(std::env::split_paths(&std::env::var_os("PATH").unwrap_or_default()));
    std::env::join_paths(paths).unwrap()
}

/// A script of `tests/node`, copied next to the installed packages (ES modules resolve packages from the script's
/// own folder, not from `NODE_PATH`).
pub fn script(name: &str) -> PathBuf {
    let bin = tools();
    let dir = bin.parent().and_then(Path::parent).expect("node-tools").to_path_buf();
    let source = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/node").join(name);
    let target = dir.join(name);
    std::fs::copy(&source, &target).unwrap_or_else(|e| panic!("copy {}: {e}", source.display()));
    target
}

/// Runs the conformance suite's CLI (`@modelcontextprotocol/conformance`, installed by [`tools`]) with these
/// arguments, from the temporary folder; what it printed and how it exited.
pub fn conformance(args: &[&str]) -> std::process::Output {
    let bin = tools();
    std::process::Command::new(bin.join("conformance"))
        .args(args)
        .env("PATH", path_with_tools(&bin))
        .current_dir(std::env::temp_dir())
        .output()
        .expect("run the conformance suite")
}
