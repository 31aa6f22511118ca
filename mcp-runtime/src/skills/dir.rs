//! Skills from a directory tree: each folder with a `SKILL.md` is a skill, with every file under it. The tree is
//! read whole when the extension is made, so nothing on disk is looked at again while the server runs (a file or a
//! symlink swapped afterwards changes nothing served). Symlinks are followed only to what is inside the tree.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use super::catalog::check_segments;
use super::Skill;

/// How deep a tree may go: 32 folders.
const MAX_DEPTH: usize = 32;

/// The skills of the tree at `root`.
pub(super) fn read(root: &Path) -> Result<Vec<Skill>, String> {
    let shown = root.display();
    let canonical = root.canonicalize().map_err(|e| format!("the skills directory {shown} cannot be read: {e}"))?;
    if !canonical.is_dir() {
        return Err(format!("the skills directory {shown} is not a directory"));
    }
    let mut files = BTreeMap::new();
    walk(&canonical, &canonical, "", 0, &mut files)?;
    // Each folder with a SKILL.md is a skill; its files are every file under it (those of skills inside it too).
    let mut skills = Vec::new();
    for skill_md in files.keys().filter(|p| *p == "SKILL.md" || p.ends_with("/SKILL.md")) {
        let folder = skill_md.strip_suffix("SKILL.md").unwrap_or_default().trim_end_matches('/');
        if folder.is_empty() {
            return Err(format!(
                "{}: a SKILL.md at the top of the skills directory has no folder, so no name: put each skill in a \
                 folder named after it",
                canonical.join("SKILL.md").display()
            ));
        }
        let prefix = format!("{folder}/");
        let mut skill = Skill {
            path: Some(folder.to_owned()),
            files: BTreeMap::new(),
            origin: canonical.join(skill_md).display().to_string(),
        };
        for (path, bytes) in files.range(prefix.clone()..).take_while(|(p, _)| p.starts_with(&prefix)) {
            skill.files.insert(path[prefix.len()..].to_owned(), bytes.clone());
        }
        skills.push(skill);
    }
    Ok(skills)
}

fn walk(
    root: &Path,
    dir: &Path,
    relative: &str,
    depth: usize,
    files: &mut BTreeMap<String, Arc<[u8]>>,
) -> Result<(), String> {
    if depth > MAX_DEPTH {
        return Err(format!("{}: the skills directory is more than {MAX_DEPTH} folders deep", dir.display()));
    }
    let entries = std::fs::read_dir(dir).map_err(|e| format!("{}: cannot be read: {e}", dir.display()))?;
    let mut names: Vec<(String, PathBuf)> = Vec::new();
    for entry in entries {
        let entry = entry.map_err(|e| format!("{}: cannot be read: {e}", dir.display()))?;
        let path = entry.path();
        let Some(name) = entry.file_name().to_str().map(str::to_owned) else {
            return Err(format!("{}: the name is not UTF-8", path.display()));
        };
        if name.starts_with('.') {
            continue;
        }
        check_segments(&name, &path.display().to_string())?;
        names.push((name, path));
    }
    names.sort();
    for (name, path) in names {
        let child = if relative.is_empty() { name.clone() } else { format!("{relative}/{name}") };
        // A symlink is followed only to a place inside the tree.
        let target = path.canonicalize().map_err(|e| format!("{}: cannot be followed: {e}", path.display()))?;
        if !target.starts_with(root) {
            return Err(format!(
                "{}: a symlink to {}, outside the skills directory {}: only what is inside it is served",
                path.display(),
                target.display(),
                root.display()
            ));
        }
        if target.is_dir() {
            walk(root, &target, &child, depth + 1, files)?;
        } else {
            let bytes = std::fs::read(&target).map_err(|e| format!("{}: cannot be read: {e}", path.display()))?;
            files.insert(child, Arc::from(bytes));
        }
    }
    Ok(())
}
