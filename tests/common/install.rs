//! Tools the tests install on first use under `target/` (a Python venv, Node packages): one installer at a time
//! across test binaries, and a stamp that records what was installed, so a change of the pinned list reinstalls.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// The cargo target directory (the test binary is `target/debug/deps/<name>`).
pub fn target_dir() -> PathBuf {
    let exe = std::env::current_exe().expect("test binary path");
    exe.ancestors().nth(3).expect("target dir").to_path_buf()
}

/// Runs `install` unless `stamp` already holds `wanted`, holding a lock directory meanwhile; then writes the stamp.
pub fn once(stamp: &Path, wanted: &str, install: impl FnOnce()) {
    let ready = || std::fs::read_to_string(stamp).ok().as_deref() == Some(wanted);
    if ready() {
        return;
    }
    let lock = stamp.with_extension("lock");
    if let Some(parent) = lock.parent() {
        std::fs::create_dir_all(parent).unwrap();
    }
    let deadline = Instant::now() + Duration::from_secs(600);
    while std::fs::create_dir(&lock).is_err() {
        assert!(Instant::now() < deadline, "waited too long for {} (remove it if stale)", lock.display());
        std::thread::sleep(Duration::from_millis(200));
        if ready() {
            return;
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
        install();
        std::fs::write(stamp, wanted).expect("write the install stamp");
    }
}

/// Runs `apt-get ARGS` non-interactively, waiting up to 2 min for another apt's lock; its output when it fails.
pub fn apt_get(apt: &Path, args: &[&str]) -> Result<(), String> {
    let out = Command::new(apt)
        .args(["-o", "DPkg::Lock::Timeout=120"])
        .args(args)
        .env("DEBIAN_FRONTEND", "noninteractive")
        .stdin(Stdio::null())
        .output()
        .map_err(|e| format!("could not run apt-get: {e}"))?;
    if out.status.success() {
        return Ok(());
    }
    Err(format!(
        "`apt-get {}` failed:\n{}\n{}",
        args.join(" "),
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    ))
}
