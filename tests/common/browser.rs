//! A Chromium for the browser tests, found or brought the way `redis.rs` brings a Redis, so that the README's test
//! command passes on a fresh machine:
//!
//! 1. Debian's `chromium` when it is installed (`/usr/lib/chromium/chromium`, or `chromium` on `PATH`);
//! 2. else Debian's package installed by the test itself, when it runs as root with `apt-get`;
//! 3. else the Chromium that npm's `@sparticuz/chromium` ships inside its package (a headless build with the few
//!    libraries it needs), unpacked under `target/chromium-bundled` on first use: no root needed, and no download
//!    from outside a registry.
//!
//! Only when all of these fail is it an error, naming each way to provide one. `MCP_TEST_BROWSER` chooses a way:
//! `system` (Debian's only, installing it if it can), `bundled` (the npm one only: `.ci/run` runs the browser test
//! once so, to keep the path of a machine without root tried on every submission), or unset for the order above.

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::Command;

use super::install;

/// The npm package that ships a Chromium in its tarball, pinned.
const BUNDLED: &str = "@sparticuz/chromium@153.0.0";

/// A Chromium to launch: its executable and the environment it needs.
pub struct Chromium {
    pub executable: PathBuf,
    /// Where it came from: `system` or `bundled`, for the test's log.
    pub source: &'static str,
    /// Variables the bundled build needs (its libraries, its fonts); empty for Debian's.
    pub env: Vec<(&'static str, OsString)>,
}

/// A Chromium, found, installed or unpacked as the module doc says.
pub fn chromium() -> Chromium {
    let choice = std::env::var("MCP_TEST_BROWSER").unwrap_or_default();
    let mut tried = Vec::new();
    if choice != "bundled" {
        match system().or_else(|| install_system(&mut tried)) {
            Some(executable) => return Chromium { executable, source: "system", env: Vec::new() },
            None if choice == "system" => fail(&tried),
            None => {}
        }
    } else {
        tried.push("Debian's chromium: not looked for (MCP_TEST_BROWSER=bundled)".to_owned());
    }
    match bundled() {
        Ok(chromium) => chromium,
        Err(why) => {
            tried.push(format!("npm's {BUNDLED}, unpacked under target/chromium-bundled: {why}"));
            fail(&tried)
        }
    }
}

fn fail(tried: &[String]) -> ! {
    panic!(
        "no Chromium for the browser test. Tried:\n- {}\nProvide one: install Debian's `chromium` package \
         (`apt-get install chromium`), or let the test unpack npm's {BUNDLED} (needs `npm` and `tar` on PATH), or \
         set MCP_TEST_BROWSER=system|bundled to choose.",
        tried.join("\n- ")
    )
}

/// Debian's Chromium, if installed: the real binary, else the wrapper on `PATH`.
fn system() -> Option<PathBuf> {
    let on_path = |name: &str| {
        std::env::var_os("PATH").iter().flat_map(std::env::split_paths).map(|dir| dir.join(name)).find(|p| p.is_file())
    };
    [Some(PathBuf::from("/usr/lib/chromium/chromium")), on_path("chromium"), on_path("chromium-browser")]
        .into_iter()
        .flatten()
        .find(|p| p.is_file())
}

/// Installs Debian's package when this runs as root with `apt-get` (once across test binaries); its path if that
/// worked. What was tried goes into `tried`.
fn install_system(tried: &mut Vec<String>) -> Option<PathBuf> {
    let root = Command::new("id").arg("-u").output().is_ok_and(|o| String::from_utf8_lossy(&o.stdout).trim() == "0");
    let apt = Path::new("/usr/bin/apt-get").is_file();
    if !(root && apt) {
        tried
            .push(format!("Debian's chromium: not installed, and not installable here (root: {root}, apt-get: {apt})"));
        return None;
    }
    let mut failure = None;
    install::once(&install::target_dir().join("chromium-apt.tried"), "chromium\n", || {
        let update = Command::new("apt-get").args(["update", "-qq"]).output();
        let out = Command::new("apt-get")
            .args(["install", "-y", "-qq", "chromium"])
            .env("DEBIAN_FRONTEND", "noninteractive")
            .output();
        match (update, out) {
            (_, Ok(out)) if out.status.success() => {}
            (_, Ok(out)) => failure = Some(String::from_utf8_lossy(&out.stderr).trim().to_owned()),
            (_, Err(e)) => failure = Some(e.to_string()),
        }
    });
    let found = system();
    if found.is_none() {
        let why = failure.unwrap_or_else(|| "an earlier attempt did not install it".to_owned());
        tried.push(format!("Debian's chromium: `apt-get install chromium` failed: {why}"));
    }
    found
}

/// npm's Chromium, unpacked under `target/chromium-bundled` on first use.
fn bundled() -> Result<Chromium, String> {
    let target = install::target_dir();
    let packages = target.join("browser-tools");
    let dir = target.join("chromium-bundled");
    let mut failure = None;
    install::once(&target.join("chromium-bundled.installed"), &format!("{BUNDLED}\n"), || {
        if let Err(e) = unpack(&packages, &dir) {
            failure = Some(e);
        }
    });
    if let Some(e) = failure {
        return Err(e);
    }
    let executable = dir.join("chromium");
    if !executable.is_file() {
        return Err(format!(
            "{} is missing (remove target/chromium-bundled.installed to unpack again)",
            executable.display()
        ));
    }
    let libraries = std::env::join_paths([dir.join("lib"), dir.clone()]).map_err(|e| e.to_string())?;
    Ok(Chromium {
        executable,
        source: "bundled",
        env: vec![("LD_LIBRARY_PATH", libraries), ("FONTCONFIG_PATH", dir.into_os_string())],
    })
}

/// Installs the package with npm into `packages`, then unpacks its brotli-compressed browser, libraries, graphics
/// and fonts into `dir` (Node's zlib decompresses; `tar` unpacks), with a fontconfig file naming the fonts there.
fn unpack(packages: &Path, dir: &Path) -> Result<(), String> {
    let manifest = format!(
        "{{\"name\": \"mcp-browser-tools\", \"private\": true, \"description\": \"A Chromium for the browser test, \
         from the npm registry\", \"dependencies\": {{\"@sparticuz/chromium\": \"{}\"}}}}\n",
        BUNDLED.rsplit_once('@').map_or("", |(_, v)| v)
    );
    let installed = std::panic::catch_unwind(|| super::node::npm_install(packages, &manifest));
    if installed.is_err() {
        return Err("`npm install` failed (its output is above)".to_owned());
    }
    let _ = std::fs::remove_dir_all(dir);
    std::fs::create_dir_all(dir).map_err(|e| e.to_string())?;
    let bin = packages.join("node_modules/@sparticuz/chromium/bin");
    let script = r#"
        const [bin, out] = process.argv.slice(1);
        const fs = require("fs"), path = require("path"), zlib = require("zlib");
        for (const name of fs.readdirSync(bin).filter(n => n.endsWith(".br"))) {
            const data = zlib.brotliDecompressSync(fs.readFileSync(path.join(bin, name)));
            fs.writeFileSync(path.join(out, name.slice(0, -3)), data, { mode: 0o755 });
        }
    "#;
    run(Command::new("node").arg("-e").arg(script).arg(&bin).arg(dir))?;
    for entry in std::fs::read_dir(dir).map_err(|e| e.to_string())?.flatten() {
        let path = entry.path();
        if path.extension().is_some_and(|e| e == "tar") {
            run(Command::new("tar").arg("-xf").arg(&path).arg("-C").arg(dir))?;
            let _ = std::fs::remove_file(&path);
        }
    }
    let fonts = format!(
        "<?xml version=\"1.0\"?>\n<!DOCTYPE fontconfig SYSTEM \"fonts.dtd\">\n<fontconfig>\n  <dir>{}</dir>\n  \
         <cachedir>{}</cachedir>\n</fontconfig>\n",
        dir.join("fonts").display(),
        dir.join("fonts-cache").display()
    );
    std::fs::write(dir.join("fonts.conf"), fonts).map_err(|e| e.to_string())
}

fn run(command: &mut Command) -> Result<(), String> {
    let out = command.output().map_err(|e| format!("could not run {command:?}: {e}"))?;
    if out.status.success() {
        Ok(())
    } else {
        Err(format!("{command:?} failed: {}", String::from_utf8_lossy(&out.stderr).trim()))
    }
}
