//! Node 22 and the official conformance suite, installed from the npm registry under `target/node-tools` on first
//! use (and again when `tests/node/package.json` changes).

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

fn target_dir() -> PathBuf {
    let exe = std::env::current_exe().expect("test binary path");
    exe.ancestors().nth(3).expect("target dir").to_path_buf()
}

/// The `node_modules/.bin` folder holding `node` (22) and `conformance`.
pub fn tools() -> PathBuf {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let manifest = std::fs::read_to_string(root.join("tests/node/package.json")).expect("tests/node/package.json");
    let dir = target_dir().join("node-tools");
    let bin = dir.join("node_modules/.bin");
    let stamp = dir.join("package.installed");
    let ready = || std::fs::read_to_string(&stamp).ok().as_deref() == Some(manifest.as_str());
    if ready() {
        return bin;
    }
    let lock = target_dir().join("node-tools.lock");
    let deadline = Instant::now() + Duration::from_secs(600);
    while std::fs::create_dir(&lock).is_err() {
        assert!(Instant::now() < deadline, "waited too long for {} (remove it if stale)", lock.display());
        std::thread::sleep(Duration::from_millis(200));
        if ready() {
            return bin;
        }
    }
    struct Unlock(PathBuf);
    impl Drop for Unlock {
        fn drop(&mut self) {
            let _ = std::fs::remove_dir(&self.0);
        }
    }
    let _unlock = Unlock(lock);
    if !ready() {
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join("package.json"), &manifest).unwrap();
        let out = Command::new("npm")
            .args(["install", "--no-audit", "--no-fund", "--loglevel=error"])
            .current_dir(&dir)
            .output()
            .expect("npm (Node's package manager) must be on PATH");
        assert!(
            out.status.success(),
            "npm install failed:\n{}\n{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        std::fs::write(&stamp, &manifest).unwrap();
    }
    bin
}

/// `PATH` with the tools first, so `#!/usr/bin/env node` finds Node 22.
pub fn path_with_tools(bin: &Path) -> std::ffi::OsString {
    let mut paths = vec![bin.to_path_buf()];
    paths.extend(std::env::split_paths(&std::env::var_os("PATH").unwrap_or_default()));
    std::env::join_paths(paths).unwrap()
}
