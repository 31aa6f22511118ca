//! What a [`Skills`](super::Skills) extension serves, built once when the server is built: every skill's entry (as
//! `skills/list` gives it), every file by its URI, and every folder's children, for `resources/directory/read`.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::sync::Arc;

use serde_json::Value;

use super::Skill;
use crate::wire::skills::{
    check_name, frontmatter, SkillEntry, SkillFile, SkillFiles, MAX_BYTES, MAX_DESCRIPTION, MAX_FILES,
};

/// One file to serve.
pub(super) struct File {
    pub bytes: Arc<[u8]>,
    pub mime: &'static str,
    /// What `resources/list` says of it.
    pub name: String,
    pub description: Option<String>,
}

#[derive(Default)]
pub(super) struct Catalog {
    /// The skills by their `SKILL.md`'s URI, in URI order; each with its entry as JSON.
    pub skills: BTreeMap<String, (SkillEntry, Value)>,
    pub files: BTreeMap<String, File>,
    /// Each folder's direct children: (URI, is a folder).
    pub dirs: HashMap<String, BTreeSet<(String, bool)>>,
}

/// The MIME type of a file, by its extension.
fn mime(path: &str) -> &'static str {
    let ext = path.rsplit_once('.').map(|(_, e)| e.to_ascii_lowercase()).unwrap_or_default();
    match ext.as_str() {
        "md" | "markdown" => "text/markdown",
        "txt" => "text/plain",
        "json" => "application/json",
        "yaml" | "yml" => "application/yaml",
        "html" | "htm" => "text/html",
        "csv" => "text/csv",
        "py" => "text/x-python",
        "sh" => "text/x-shellscript",
        "js" => "text/javascript",
        "png" => "image/png",
        "jpg" | "jpeg" => "image/jpeg",
        "pdf" => "application/pdf",
        _ => "application/octet-stream",
    }
}

/// A path's segments are each made of URI-safe characters (unreserved, RFC 3986), none `.` or `..`.
pub(super) fn check_segments(path: &str, what: &str) -> Result<(), String> {
    for segment in path.split('/') {
        let safe = !segment.is_empty()
            && segment != "."
            && segment != ".."
            && segment.bytes().all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.' | b'_' | b'~'));
        if !safe {
            return Err(format!(
                "{what} `{path}`: each segment must be made of `A-Z a-z 0-9 - . _ ~` (no `%`, no space, not `.` or \
                 `..`), so that its URI needs no encoding"
            ));
        }
    }
    Ok(())
}

impl Catalog {
    pub(super) fn build(skills: &[Skill]) -> Result<Catalog, String> {
        let mut catalog = Catalog::default();
        for skill in skills {
            catalog.add(skill)?;
        }
        Ok(catalog)
    }

    fn add(&mut self, skill: &Skill) -> Result<(), String> {
        let origin = &skill.origin;
        let skill_md = skill.files.get("SKILL.md").ok_or_else(|| format!("{origin}: a skill needs a SKILL.md"))?;
        let text = std::str::from_utf8(skill_md).map_err(|_| format!("{origin}: SKILL.md is not UTF-8 text"))?;
        let front = frontmatter(text).map_err(|e| format!("{origin}: SKILL.md: {e}"))?;
        let name = front["name"].as_str().unwrap_or_default().to_owned();
        check_name(&name).map_err(|e| format!("{origin}: SKILL.md: {e}"))?;
        let description = front["description"].as_str().unwrap_or_default().to_owned();
        if description.chars().count() > MAX_DESCRIPTION {
            return Err(format!("{origin}: SKILL.md: the description is longer than {MAX_DESCRIPTION} characters"));
        }
        if let Some(Value::Object(metadata)) = front.get("metadata") {
            if let Some(key) = metadata.keys().find(|k| k.starts_with("io.modelcontextprotocol/")) {
                return Err(format!("{origin}: SKILL.md: the metadata key `{key}` is reserved for the protocol"));
            }
        }
        let path = skill.path.clone().unwrap_or_else(|| name.clone());
        check_segments(&path, &format!("{origin}: the skill path"))?;
        if path.rsplit('/').next() != Some(name.as_str()) {
            return Err(format!(
                "{origin}: the skill is named `{name}` in its front matter, but served at `{path}`: the last segment \
                 of a skill's path must be its name"
            ));
        }
        if skill.files.len() > MAX_FILES {
            return Err(format!("{origin}: the skill `{name}` has {} files, more than {MAX_FILES}", skill.files.len()));
        }
        let total: u64 = skill.files.values().map(|b| b.len() as u64).sum();
        if total > MAX_BYTES {
            return Err(format!("{origin}: the skill `{name}` holds {total} bytes, more than {MAX_BYTES} (16 MiB)"));
        }
        let root = format!("skill://{path}");
        let uri = format!("{root}/SKILL.md");
        if self.skills.contains_key(&uri) {
            return Err(format!("{origin}: two skills are served at {uri}"));
        }
        // The SKILL.md first, then the other files in path order.
        let mut listed = vec![SkillFile::of(&uri, skill_md)];
        for (file, bytes) in &skill.files {
            check_segments(file, &format!("{origin}: the file"))?;
            let file_uri = format!("{root}/{file}");
            if file != "SKILL.md" {
                listed.push(SkillFile::of(&file_uri, bytes));
            }
            let (file_name, description) = if file == "SKILL.md" {
                (name.clone(), Some(description.clone()))
            } else {
                (file.rsplit('/').next().unwrap_or(file).to_owned(), None)
            };
            self.files.insert(
                file_uri.clone(),
                File { bytes: bytes.clone(), mime: mime(file), name: file_name, description: description.clone() },
            );
            self.link(&file_uri, false);
        }
        let entry = SkillEntry { uri: uri.clone(), frontmatter: front, resources: SkillFiles::Listed(listed) };
        let json = serde_json::to_value(&entry).map_err(|e| e.to_string())?;
        self.skills.insert(uri, (entry, json));
        Ok(())
    }

    /// Records `uri` as a child of its folder, and each folder up to the authority as a child of its own.
    fn link(&mut self, uri: &str, is_dir: bool) {
        let Some((parent, _)) = uri.rsplit_once('/') else { return };
        if parent.len() <= "skill://".len() {
            return;
        }
        let fresh = !self.dirs.contains_key(parent);
        self.dirs.entry(parent.to_owned()).or_default().insert((uri.to_owned(), is_dir));
        if fresh {
            let parent = parent.to_owned();
            self.link(&parent, true);
        }
    }

    /// A page of `items` from `cursor` (an index), and the next page's cursor.
    pub(super) fn page<T: Clone>(
        items: &[T],
        cursor: Option<&str>,
        size: usize,
    ) -> Result<(Vec<T>, Option<String>), ()> {
        let start = match cursor {
            None => 0,
            Some(c) => c.parse::<usize>().map_err(|_| ())?,
        };
        if start > items.len() {
            return Err(());
        }
        let end = (start + size).min(items.len());
        let next = (end < items.len()).then(|| end.to_string());
        Ok((items[start..end].to_vec(), next))
    }

    /// A file's descriptor for `resources/list`.
    pub(super) fn descriptor(uri: &str, file: &File) -> crate::wire::protocol::Resource {
        let mut resource = crate::wire::protocol::Resource::new(uri, file.name.clone());
        resource.description = file.description.clone();
        resource.mime_type = Some(file.mime.to_owned());
        resource.size = Some(file.bytes.len() as u64);
        resource
    }
}
