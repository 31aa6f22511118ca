//! The official Python SDK for interop tests: a venv under `target/py-venv`, made on first use from
//! `tests/python/requirements.txt` (and remade when that file changes).

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use super::install;

fn run(command: &mut Command) -> Output {
    let out = command.output().unwrap_or_else(|e| panic!("could not run {command:?}: {e}"));
    assert!(
        out.status.success(),
        "{command:?} failed:\n{}\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

/// The venv's python, installing the venv first if needed. Safe to call from several tests at once.
pub fn python() -> PathBuf {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let requirements = root.join("tests/python/requirements.txt");
    let wanted = std::fs::read_to_string(&requirements).expect("requirements.txt");
    let venv = install::target_dir().join("py-venv");
    let python = venv.join("bin/python");
    install::once(&install::target_dir().join("py-venv.installed"), &wanted, || {
        let _ = std::fs::remove_dir_all(&venv);
        let system_python = std::env::var("PYTHON").unwrap_or_else(|_| "python3".into());
        run(Command::new(system_python).arg("-m").arg("venv").arg(&venv));
        run(Command::new(&python)
            .args(["-m", "pip", "install", "--quiet", "--disable-pip-version-check", "-r"])
            .arg(&requirements));
    });
    python
}

/// Runs a script of `tests/python` with the venv's python; panics with its output unless it succeeds.
pub fn run_script(script: &str, args: &[&std::ffi::OsStr]) -> String {
    run_script_with_env(script, args, &[])
}

/// [`run_script`] with these variables set for the script.
pub fn run_script_with_env(script: &str, args: &[&std::ffi::OsStr], env: &[(&str, std::ffi::OsString)]) -> String {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let out = Command::new(python())
        .arg(root.join("tests/python").join(script))
        .args(args)
        .env("PYTHONUNBUFFERED", "1")
        .envs(env.iter().map(|(k, v)| (k, v)))
        .output()
        .expect("run python");
    let text = format!("{}\n{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    assert!(out.status.success(), "{script} failed:\n{text}");
    text
}
