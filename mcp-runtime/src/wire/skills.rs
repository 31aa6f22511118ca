//! The Skills extension's wire format (`io.modelcontextprotocol/skills`, SEP-2640), shared by the server
//! ([`mcp::skills`](crate::skills)) and the client: a skill's entry (its `SKILL.md` URI, its front matter, and every
//! file with its digest and size), the rules its name and files follow, and how a `SKILL.md`'s front matter is read.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

/// The extension's identifier.
pub const EXTENSION: &str = "io.modelcontextprotocol/skills";
/// How many files one skill may have, its `SKILL.md` included (the specification's limit).
pub const MAX_FILES: usize = 512;
/// How many bytes one skill's files may hold together: 16 MiB.
pub const MAX_BYTES: u64 = 16 << 20;
/// The longest name a skill may have.
pub const MAX_NAME: usize = 64;
/// The longest description a skill may have.
pub const MAX_DESCRIPTION: usize = 1024;
/// The MIME type of a directory in `resources/directory/read`.
pub const DIRECTORY_MIME: &str = "inode/directory";

/// One file of a skill, as its entry lists it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct SkillFile {
    /// Its URI (`skill://<skill path>/<file path>`).
    pub uri: String,
    /// `sha256:` and the lowercase hex SHA-256 of its bytes.
    pub digest: String,
    /// Its length in bytes.
    pub size: u64,
}

impl SkillFile {
    /// The entry of a file of `bytes` at `uri`.
    pub fn of(uri: impl Into<String>, bytes: &[u8]) -> SkillFile {
        SkillFile { uri: uri.into(), digest: digest(bytes), size: bytes.len() as u64 }
    }

    /// Whether `bytes` are this file's: the same length, then the same digest.
    pub fn verify(&self, bytes: &[u8]) -> Result<(), SkillError> {
        if bytes.len() as u64 != self.size {
            return Err(SkillError::Size { uri: self.uri.clone(), listed: self.size, read: bytes.len() as u64 });
        }
        let read = digest(bytes);
        if read != self.digest {
            return Err(SkillError::Digest { uri: self.uri.clone(), listed: self.digest.clone(), read });
        }
        Ok(())
    }
}

/// A skill's files: every one listed, or `"dynamic"` for content made when read (no stable digests).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(untagged)]
#[non_exhaustive]
pub enum SkillFiles {
    /// Every file, the `SKILL.md` first.
    Listed(Vec<SkillFile>),
    /// Made when read: nothing to verify against (hosts may refuse such a skill).
    Dynamic(DynamicFiles),
}

/// The `"dynamic"` marker.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum DynamicFiles {
    /// `"dynamic"`.
    #[serde(rename = "dynamic")]
    Dynamic,
}

/// A skill, as `skills/list` and `skills/get` give it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct SkillEntry {
    /// The URI of its `SKILL.md` (`skill://<skill path>/SKILL.md`; the last segment of the path is its name).
    pub uri: String,
    /// Its `SKILL.md`'s front matter, as JSON.
    pub frontmatter: Map<String, Value>,
    /// Its files.
    pub resources: SkillFiles,
}

impl SkillEntry {
    /// Its name (the front matter's).
    pub fn name(&self) -> &str {
        self.frontmatter.get("name").and_then(Value::as_str).unwrap_or_default()
    }

    /// Its description (the front matter's).
    pub fn description(&self) -> &str {
        self.frontmatter.get("description").and_then(Value::as_str).unwrap_or_default()
    }

    /// The URI of its folder: its `SKILL.md`'s without `/SKILL.md`.
    pub fn root(&self) -> &str {
        self.uri.strip_suffix("/SKILL.md").unwrap_or(&self.uri)
    }

    /// The listed file at `uri`; `None` when the entry does not list it (or lists no file: `"dynamic"`).
    pub fn file(&self, uri: &str) -> Option<&SkillFile> {
        match &self.resources {
            SkillFiles::Listed(files) => files.iter().find(|f| f.uri == uri),
            SkillFiles::Dynamic(_) => None,
        }
    }
}

/// Why a skill, or one of its files, is not what it should be.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum SkillError {
    /// A name outside the rule (1 to 64 of `a-z 0-9 -`, no `-` first, last or twice in a row).
    Name(String),
    /// A `SKILL.md` without a front matter the specification takes, or with a rule broken.
    Frontmatter(String),
    /// Too many files, or too many bytes.
    TooLarge(String),
    /// A file of another length than listed.
    Size {
        /// The file.
        uri: String,
        /// What its entry says.
        listed: u64,
        /// What was read.
        read: u64,
    },
    /// A file of another digest than listed.
    Digest {
        /// The file.
        uri: String,
        /// What its entry says.
        listed: String,
        /// What was read.
        read: String,
    },
    /// A `SKILL.md` whose front matter differs from its entry's.
    FrontmatterMismatch {
        /// The `SKILL.md`.
        uri: String,
        /// The first key that differs.
        key: String,
    },
    /// A file the skill's entry does not list.
    Unlisted(String),
}

impl std::fmt::Display for SkillError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            SkillError::Name(why) | SkillError::Frontmatter(why) | SkillError::TooLarge(why) => f.write_str(why),
            SkillError::Size { uri, listed, read } => {
                write!(f, "{uri} is {read} bytes, but its skill's entry lists {listed}: it is not used")
            }
            SkillError::Digest { uri, listed, read } => {
                write!(f, "{uri} has the digest {read}, but its skill's entry lists {listed}: it is not used")
            }
            SkillError::FrontmatterMismatch { uri, key } => write!(
                f,
                "the front matter of {uri} differs from its skill's entry at `{key}`: the skill is not loaded"
            ),
            SkillError::Unlisted(uri) => write!(f, "{uri} is not among the files its skill's entry lists"),
        }
    }
}

impl std::error::Error for SkillError {}

/// `sha256:` and the lowercase hex SHA-256 of `bytes`.
pub fn digest(bytes: &[u8]) -> String {
    use sha2::Digest;
    format!("sha256:{}", crate::base::hex(&sha2::Sha256::digest(bytes)))
}

/// Checks a skill's name: 1 to 64 characters of `a-z 0-9 -`, no `-` first or last, no `--`.
pub fn check_name(name: &str) -> Result<(), SkillError> {
    let fail = |why: &str| Err(SkillError::Name(format!("the skill name `{name}` {why}")));
    if name.is_empty() || name.len() > MAX_NAME {
        return fail("must have 1 to 64 characters");
    }
    if !name.bytes().all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-') {
        return fail("may hold only lowercase letters, digits and `-`");
    }
    if name.starts_with('-') || name.ends_with('-') || name.contains("--") {
        return fail("may not start or end with `-`, nor hold `--`");
    }
    Ok(())
}

/// The front matter of a `SKILL.md`: the YAML between its first two `---` lines, as JSON (YAML 1.2 core schema,
/// as the specification's hosts read it), with a non-empty `name` and `description`.
pub fn frontmatter(text: &str) -> Result<Map<String, Value>, SkillError> {
    let fail = |why: String| Err(SkillError::Frontmatter(why));
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    let Some(rest) = text.strip_prefix("---\n").or_else(|| text.strip_prefix("---\r\n")) else {
        return fail("a SKILL.md must begin with a `---` line and YAML front matter".into());
    };
    // The closing `---` line (spaces or tabs may follow it).
    let mut yaml_end = None;
    let mut at = 0;
    for line in rest.split_inclusive('\n') {
        if line.trim_end_matches(['\n', '\r']).trim_end_matches([' ', '\t']) == "---" {
            yaml_end = Some(at);
            break;
        }
        at += line.len();
    }
    let Some(end) = yaml_end else {
        return fail("the front matter of a SKILL.md must end with a `---` line".into());
    };
    let docs = match yaml_rust2::YamlLoader::load_from_str(&rest[..end]) {
        Ok(docs) => docs,
        Err(e) => return fail(format!("the front matter is not YAML: {e}")),
    };
    let Some(Value::Object(map)) = docs.first().map(to_json) else {
        return fail("the front matter must be a YAML mapping".into());
    };
    for key in ["name", "description"] {
        match map.get(key) {
            Some(Value::String(s)) if !s.is_empty() => {}
            _ => return fail(format!("the front matter needs a non-empty `{key}`")),
        }
    }
    Ok(map)
}

/// A YAML value as JSON: integers and reals as numbers, keys as strings.
fn to_json(yaml: &yaml_rust2::Yaml) -> Value {
    use yaml_rust2::Yaml;
    match yaml {
        Yaml::Real(text) => match text.parse::<f64>() {
            Ok(f) => serde_json::Number::from_f64(f).map_or(Value::Null, Value::Number),
            Err(_) => match text.to_ascii_lowercase().as_str() {
                ".inf" | "+.inf" | "-.inf" | ".nan" => Value::Null,
                _ => Value::String(text.clone()),
            },
        },
        Yaml::Integer(i) => Value::from(*i),
        Yaml::String(s) => Value::String(s.clone()),
        Yaml::Boolean(b) => Value::Bool(*b),
        Yaml::Array(items) => Value::Array(items.iter().map(to_json).collect()),
        Yaml::Hash(hash) => Value::Object(
            hash.iter()
                .map(|(k, v)| {
                    let key = match to_json(k) {
                        Value::String(s) => s,
                        other => other.to_string(),
                    };
                    (key, to_json(v))
                })
                .collect(),
        ),
        Yaml::Alias(_) | Yaml::Null | Yaml::BadValue => Value::Null,
    }
}

/// Whether two front matters say the same: key by key (a missing key is `null`), numbers by value (`1` and
/// `1.0` are one number, as in JavaScript). `Err` names the first key that differs.
pub fn same_frontmatter(a: &Map<String, Value>, b: &Map<String, Value>) -> Result<(), String> {
    fn same(a: &Value, b: &Value) -> bool {
        match (a, b) {
            (Value::Number(x), Value::Number(y)) => x.as_f64() == y.as_f64(),
            (Value::Array(x), Value::Array(y)) => x.len() == y.len() && x.iter().zip(y).all(|(x, y)| same(x, y)),
            (Value::Object(x), Value::Object(y)) => x
                .keys()
                .chain(y.keys())
                .all(|k| same(x.get(k).unwrap_or(&Value::Null), y.get(k).unwrap_or(&Value::Null))),
            _ => a == b,
        }
    }
    for key in a.keys().chain(b.keys()) {
        if !same(a.get(key).unwrap_or(&Value::Null), b.get(key).unwrap_or(&Value::Null)) {
            return Err(key.clone());
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_follow_the_rule() {
        for good in ["pdf-processing", "a", "a1-b2", &"x".repeat(64)] {
            assert!(check_name(good).is_ok(), "{good}");
        }
        for bad in ["", "-a", "a-", "a--b", "A", "a_b", "a b", "é", &"x".repeat(65), "a%2e"] {
            assert!(check_name(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn front_matter_is_read_as_yaml_1_2() {
        let text = "---\nname: pdf-processing\ndescription: Extract PDFs\nversion: 1.0\ncount: 3\nflag: yes\n\
                    metadata:\n  author: me\n---\n\nBody.\n";
        let map = frontmatter(text).unwrap();
        assert_eq!(map["name"], "pdf-processing");
        assert_eq!(map["version"].as_f64(), Some(1.0));
        assert_eq!(map["count"], 3);
        assert_eq!(map["flag"], "yes", "YAML 1.2: `yes` is a string");
        assert_eq!(map["metadata"]["author"], "me");
        assert!(frontmatter("no front matter").is_err());
        assert!(frontmatter("---\nname: a\n").is_err(), "unclosed");
        assert!(frontmatter("---\nname: a\n---\n").is_err(), "no description");
        frontmatter("\u{feff}---\r\nname: a\r\ndescription: b\r\n--- \r\nbody").unwrap();
    }

    #[test]
    fn front_matters_compare_key_by_key_and_numbers_by_value() {
        let a = frontmatter("---\nname: a\ndescription: b\nversion: 1.0\n---\n").unwrap();
        let mut b = a.clone();
        b.insert("version".into(), Value::from(1));
        same_frontmatter(&a, &b).unwrap();
        b.insert("description".into(), Value::from("c"));
        assert_eq!(same_frontmatter(&a, &b), Err("description".into()));
        b.insert("description".into(), Value::from("b"));
        b.insert("extra".into(), Value::Null);
        assert!(same_frontmatter(&a, &b).is_ok(), "a missing key is null");
    }

    #[test]
    fn files_verify_size_then_digest() {
        let file = SkillFile::of("skill://a/SKILL.md", b"hello");
        assert_eq!(file.digest, "sha256:2cf24dba5fb0a30e26e83b2ac5b9e29e1b161e5c1fa7425e73043362938b9824");
        file.verify(b"hello").unwrap();
        assert!(matches!(file.verify(b"hello!"), Err(SkillError::Size { .. })));
        assert!(matches!(file.verify(b"jello"), Err(SkillError::Digest { .. })));
    }
}
