//! The Skills extension on the client (`io.modelcontextprotocol/skills`, SEP-2640; the `skills` feature): the
//! server's skills listed ([`Client::list_skills`], [`Client::get_skill`]), and a skill's files read only when they
//! are needed and only once verified against the skill's entry ([`Client::load_skill`], [`Client::read_skill_file`]).

use std::collections::HashSet;

use base64::Engine;
use serde::Deserialize;
use serde_json::{json, Map, Value};

use super::{Client, Error};
use crate::wire::skills::{self, SkillEntry, SkillError, SkillFile, EXTENSION};

/// How many pages of `skills/list` [`Client::list_skills`] reads before it gives up on a server that never ends.
const MAX_PAGES: usize = 256;

/// What a folder of a skill's tree holds, from [`Client::read_skill_folder`].
#[derive(Clone, Debug, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct FolderEntry {
    /// Its URI (`skill://pdf/references`).
    pub uri: String,
    /// Its name, the last segment of its URI.
    #[serde(default)]
    pub name: String,
    /// Its MIME type: `inode/directory` for a folder.
    #[serde(default)]
    pub mime_type: Option<String>,
}

impl FolderEntry {
    /// Whether it is a folder (its MIME type is `inode/directory`), to read with [`Client::read_skill_folder`].
    pub fn is_folder(&self) -> bool {
        self.mime_type.as_deref() == Some(skills::DIRECTORY_MIME)
    }
}

/// A skill's `SKILL.md`, read by [`Client::load_skill`] and verified against the skill's entry: the size and digest
/// the entry lists, and the front matter the entry holds.
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub struct LoadedSkill {
    /// The URI of its `SKILL.md`.
    pub uri: String,
    /// Its front matter, parsed from the `SKILL.md` (it says what the entry's does).
    pub frontmatter: Map<String, Value>,
    /// The whole `SKILL.md`, its front matter included.
    pub text: String,
    /// Where the body starts in `text`.
    body: usize,
}

impl LoadedSkill {
    /// Its name (the front matter's).
    pub fn name(&self) -> &str {
        self.frontmatter.get("name").and_then(Value::as_str).unwrap_or_default()
    }

    /// Its description (the front matter's).
    pub fn description(&self) -> &str {
        self.frontmatter.get("description").and_then(Value::as_str).unwrap_or_default()
    }

    /// Its instructions: the `SKILL.md` after the front matter.
    pub fn body(&self) -> &str {
        self.text.get(self.body..).unwrap_or_default()
    }
}

/// A file of a skill, read by [`Client::read_skill_file`] and verified: its entry lists it, with this size and
/// digest.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct SkillFileContent {
    /// Its URI.
    pub uri: String,
    /// Its MIME type, if the server gave one.
    pub mime_type: Option<String>,
    /// Its bytes (a `text` content as UTF-8, a `blob` decoded).
    pub bytes: Vec<u8>,
}

impl SkillFileContent {
    /// Its bytes as text, if they are UTF-8.
    pub fn text(&self) -> Option<&str> {
        std::str::from_utf8(&self.bytes).ok()
    }
}

impl Client {
    /// The server's settings of the Skills extension (`{"directoryRead": true}`, say), if it declared the extension
    /// in its capabilities (`initialize` in the 2025 era, `server/discover` in the 2026 era).
    pub fn server_skills(&self) -> Option<&Map<String, Value>> {
        self.server_capabilities()["extensions"][EXTENSION].as_object()
    }

    /// Every skill the server lists: every page of `skills/list` (at most 256; a cursor the server gave before ends
    /// the list). No file is read. An entry that is not one (no `resources`, say) is left out, with a warning, as is
    /// a second entry of one URI. Refused, without a request, when the server did not declare the extension.
    pub async fn list_skills(&self) -> Result<Vec<SkillEntry>, Error> {
        self.require_skills("skills/list")?;
        let mut skills = Vec::new();
        let mut uris = HashSet::new();
        let mut cursors = HashSet::new();
        let mut cursor: Option<String> = None;
        for _ in 0..MAX_PAGES {
            let params = match &cursor {
                Some(cursor) => json!({ "cursor": cursor }),
                None => json!({}),
            };
            let result = self.request("skills/list", params).await?;
            let page = result["skills"]
                .as_array()
                .ok_or_else(|| Error::Protocol("a skills/list result without a `skills` array".into()))?;
            for raw in page {
                match entry(raw) {
                    Ok(skill) if uris.insert(skill.uri.clone()) => skills.push(skill),
                    Ok(skill) => tracing::warn!(uri = %skill.uri, "left out a second skills/list entry of one URI"),
                    Err(why) => tracing::warn!(error = %why, "left out a skills/list entry"),
                }
            }
            match result["nextCursor"].as_str().filter(|next| !next.is_empty()) {
                None => return Ok(skills),
                Some(next) if !cursors.insert(next.to_owned()) => {
                    tracing::warn!(cursor = next, "skills/list gave a cursor it gave before; the list ends there");
                    return Ok(skills);
                }
                Some(next) => cursor = Some(next.to_owned()),
            }
        }
        Err(Error::Protocol(format!("skills/list went on past {MAX_PAGES} pages")))
    }

    /// One skill, by the URI of its `SKILL.md` (`skills/get`): its entry, as [`Client::list_skills`] gives them
    /// (the way to refresh an entry whose files no longer verify). No file is read. Refused, without a request,
    /// when the server did not declare the extension.
    pub async fn get_skill(&self, uri: &str) -> Result<SkillEntry, Error> {
        self.require_skills("skills/get")?;
        let result = self.request("skills/get", json!({ "uri": uri })).await?;
        let skill = entry(&result["skill"]).map_err(|why| Error::Protocol(format!("skills/get of {uri}: {why}")))?;
        if skill.uri != uri {
            return Err(Error::Protocol(format!("skills/get of {uri} answered with the skill {}", skill.uri)));
        }
        Ok(skill)
    }

    /// Loads a skill: reads its `SKILL.md` now (`resources/read`; nothing is read before), and verifies it against
    /// `entry`: its size (the bytes of a `text` as UTF-8, or of a decoded `blob`), then its digest, then its front
    /// matter, key by key. Any difference is an [`Error::Skill`] that names it, and the content is not used.
    ///
    /// The entry itself must be one to load: a valid name, which is its URI's last folder, and its `SKILL.md`
    /// among its files; an entry whose files are `"dynamic"` lists none, so it is refused
    /// ([`SkillError::Unlisted`]): nothing of it could be verified.
    ///
    /// ```
    /// use mcp::client::{Client, Error, SkillFiles};
    /// use mcp::skills::{Skill, Skills};
    ///
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), Error> {
    /// let pdf = Skill::new("---\nname: pdf-processing\ndescription: Fill PDF forms.\n---\n\nSee references/FORMS.md.\n")
    ///     .file("references/FORMS.md", "Field names.\n");
    /// let server = mcp::Server::builder().extension(Skills::new().skill(pdf)).build().unwrap();
    /// let client = Client::in_process(server).await?;
    /// // Listing reads no file: only the entries (front matter, every file's digest and size).
    /// let skills = client.list_skills().await?;
    /// let entry = skills.iter().find(|s| s.name() == "pdf-processing").unwrap();
    /// // Loading reads the SKILL.md now, and checks its size, its digest and its front matter against the entry.
    /// match client.load_skill(entry).await {
    ///     Ok(skill) => assert_eq!(skill.body(), "\nSee references/FORMS.md.\n"),
    ///     Err(Error::Skill(why)) => {
    ///         eprintln!("not loaded: {why}"); // not what the entry lists: not used
    ///         return Ok(());
    ///     }
    ///     Err(e) => return Err(e),
    /// }
    /// // A file the skill refers to, when it is needed: only one its entry lists, and only as listed.
    /// if let SkillFiles::Listed(files) = &entry.resources {
    ///     for file in files.iter().filter(|f| f.uri != entry.uri) {
    ///         let content = client.read_skill_file(entry, &file.uri).await?;
    ///         assert_eq!(content.text(), Some("Field names.\n"));
    ///     }
    /// }
    /// let unlisted = client.read_skill_file(entry, "skill://pdf-processing/secret.md").await;
    /// assert!(matches!(unlisted, Err(Error::Skill(_))));
    /// # Ok(()) }
    /// ```
    pub async fn load_skill(&self, entry: &SkillEntry) -> Result<LoadedSkill, Error> {
        let file = loadable(entry).map_err(Error::Skill)?;
        let result = self.read_resource(&entry.uri).await?;
        verify_skill_md(entry, file, &result.raw)
    }

    /// Reads a file of a skill now (`resources/read`), only if `entry` lists `uri`, and verifies its size, then its
    /// digest, against the entry. An unlisted file ([`SkillError::Unlisted`]: nothing is read) or a difference is
    /// an [`Error::Skill`], and the content is not used.
    pub async fn read_skill_file(&self, entry: &SkillEntry, uri: &str) -> Result<SkillFileContent, Error> {
        let file = entry.file(uri).ok_or_else(|| Error::Skill(SkillError::Unlisted(uri.to_owned())))?;
        let result = self.read_resource(uri).await?;
        verify_file(file, &result.raw)
    }

    /// Fails a `skills/*` request to a server that did not declare the extension.
    /// A folder of a skill's tree (`resources/directory/read`): every page of what it holds, each entry a file or a
    /// folder ([`FolderEntry::is_folder`]). Refused, without a request, when the server did not declare the Skills
    /// extension with `directoryRead`.
    pub async fn read_skill_folder(&self, uri: &str) -> Result<Vec<FolderEntry>, Error> {
        let method = "resources/directory/read";
        self.require_skills(method)?;
        if self.server_skills().and_then(|s| s.get("directoryRead")).and_then(Value::as_bool) != Some(true) {
            return Err(Error::Protocol(format!(
                "the server did not declare `directoryRead` in its Skills settings, so {method} is not asked"
            )));
        }
        let (mut entries, mut cursors, mut cursor) = (Vec::new(), HashSet::new(), None::<String>);
        for _ in 0..MAX_PAGES {
            let mut params = json!({ "uri": uri });
            if let Some(cursor) = &cursor {
                params["cursor"] = json!(cursor);
            }
            let result = self.request(method, params).await?;
            let page = result["resources"]
                .as_array()
                .ok_or_else(|| Error::Protocol(format!("a {method} result without a `resources` array")))?;
            for raw in page {
                match FolderEntry::deserialize(raw) {
                    Ok(entry) => entries.push(entry),
                    Err(why) => tracing::warn!(error = %why, "left out a {method} entry"),
                }
            }
            match result["nextCursor"].as_str().filter(|next| !next.is_empty()) {
                None => return Ok(entries),
                Some(next) if !cursors.insert(next.to_owned()) => return Ok(entries),
                Some(next) => cursor = Some(next.to_owned()),
            }
        }
        Err(Error::Protocol(format!("{method} went on past {MAX_PAGES} pages")))
    }

    fn require_skills(&self, method: &str) -> Result<(), Error> {
        match self.server_skills() {
            Some(_) => Ok(()),
            None => Err(Error::Protocol(format!(
                "the server did not declare the Skills extension ({EXTENSION}) in its capabilities, so {method} is not \
                 asked"
            ))),
        }
    }
}

/// A skill entry read from JSON.
fn entry(raw: &Value) -> Result<SkillEntry, String> {
    if raw.is_null() {
        return Err("no skill".into());
    }
    SkillEntry::deserialize(raw).map_err(|e| format!("not a skill entry ({e}): {raw}"))
}

/// Checks that `entry` can be loaded before anything is read: its name follows the rule and is the last folder of
/// its URI (`skill://…/<name>/SKILL.md`), and it lists its `SKILL.md` (whose listing is returned).
fn loadable(entry: &SkillEntry) -> Result<&SkillFile, SkillError> {
    skills::check_name(entry.name())?;
    let path = entry.uri.split_once("://").map_or(entry.uri.as_str(), |(_, path)| path);
    let segments: Vec<&str> = path.split('/').filter(|s| !s.is_empty()).collect();
    if !matches!(segments.as_slice(), [.., name, "SKILL.md"] if *name == entry.name()) {
        return Err(SkillError::Name(format!(
            "the skill `{}` has the URI {}, which does not end with /{}/SKILL.md",
            entry.name(),
            entry.uri,
            entry.name()
        )));
    }
    entry.file(&entry.uri).ok_or_else(|| SkillError::Unlisted(entry.uri.clone()))
}

/// The content of `uri` in a `resources/read` result (the item of that URI, else the first): its bytes and MIME
/// type.
fn content(uri: &str, result: &Value) -> Result<(Vec<u8>, Option<String>), Error> {
    let contents = result["contents"].as_array().map(Vec::as_slice).unwrap_or_default();
    let item = contents
        .iter()
        .find(|c| c["uri"] == uri)
        .or_else(|| contents.first())
        .ok_or_else(|| Error::Protocol(format!("resources/read of {uri} returned no contents")))?;
    let mime_type = item["mimeType"].as_str().map(str::to_owned);
    if let Some(text) = item["text"].as_str() {
        return Ok((text.as_bytes().to_vec(), mime_type));
    }
    let Some(blob) = item["blob"].as_str() else {
        return Err(Error::Protocol(format!("resources/read of {uri} returned neither a text nor a blob")));
    };
    let bytes = base64::engine::general_purpose::STANDARD
        .decode(blob)
        .map_err(|e| Error::Protocol(format!("resources/read of {uri} returned a blob that is not base64: {e}")))?;
    Ok((bytes, mime_type))
}

/// A file as `file` lists it: its size, then its digest.
fn verify_file(file: &SkillFile, result: &Value) -> Result<SkillFileContent, Error> {
    let (bytes, mime_type) = content(&file.uri, result)?;
    file.verify(&bytes).map_err(Error::Skill)?;
    Ok(SkillFileContent { uri: file.uri.clone(), mime_type, bytes })
}

/// A `SKILL.md` as `entry` has it: its size and digest as `file` (its listing) says, then its front matter.
fn verify_skill_md(entry: &SkillEntry, file: &SkillFile, result: &Value) -> Result<LoadedSkill, Error> {
    let verified = verify_file(file, result)?;
    let text = String::from_utf8(verified.bytes)
        .map_err(|_| Error::Skill(SkillError::Frontmatter(format!("{} is not UTF-8 text", entry.uri))))?;
    let frontmatter = skills::frontmatter(&text).map_err(|e| match e {
        SkillError::Frontmatter(why) => Error::Skill(SkillError::Frontmatter(format!("{}: {why}", entry.uri))),
        other => Error::Skill(other),
    })?;
    skills::same_frontmatter(&entry.frontmatter, &frontmatter)
        .map_err(|key| Error::Skill(SkillError::FrontmatterMismatch { uri: entry.uri.clone(), key }))?;
    let body = body_start(&text);
    Ok(LoadedSkill { uri: entry.uri.clone(), frontmatter, text, body })
}

/// Where the body of a `SKILL.md` with front matter starts: after its closing `---` line.
fn body_start(text: &str) -> usize {
    let bom = if text.starts_with('\u{feff}') { '\u{feff}'.len_utf8() } else { 0 };
    let mut at = bom;
    for (i, line) in text[bom..].split_inclusive('\n').enumerate() {
        at += line.len();
        if i > 0 && line.trim_end_matches(['\n', '\r']).trim_end_matches([' ', '\t']) == "---" {
            return at;
        }
    }
    0
}

#[cfg(test)]
mod tests {
    use serde_json::{json, Value};

    use super::{body_start, entry, loadable, verify_file, verify_skill_md, SkillEntry};
    use crate::client::Error;
    use crate::wire::skills::{digest, SkillError, SkillFiles};

    const SKILL_MD: &str =
        "---\nname: pdf-processing\ndescription: Extract, fill, and assemble PDF documents\n---\n\nSkill body.\n";
    const FORMS: &str = "Supporting content.\n";

    /// The entry of the conformance suite's verify-* scenarios.
    fn honest() -> SkillEntry {
        entry(&json!({
            "uri": "skill://pdf-processing/SKILL.md",
            "frontmatter": {"name": "pdf-processing", "description": "Extract, fill, and assemble PDF documents"},
            "resources": [
                {"uri": "skill://pdf-processing/SKILL.md",
                 "digest": "sha256:a6d5f1f48af94923633d597c756194482fe5d48f74e49eb54bc9ee7c4902d5ba", "size": 97},
                {"uri": "skill://pdf-processing/references/FORMS.md",
                 "digest": "sha256:8548b03927f40d7dc404fa49636c29e6b73df011d0764d69a6fc4f8ae06c6a12", "size": 20},
            ],
        }))
        .unwrap()
    }

    fn read(uri: &str, text: &str) -> Value {
        json!({"contents": [{"uri": uri, "mimeType": "text/markdown", "text": text}]})
    }

    fn load(entry: &SkillEntry, text: &str) -> Result<super::LoadedSkill, Error> {
        let file = loadable(entry).map_err(Error::Skill)?;
        verify_skill_md(entry, file, &read(&entry.uri, text))
    }

    #[test]
    fn an_honest_skill_md_loads_with_its_front_matter_and_body() {
        let skill = load(&honest(), SKILL_MD).unwrap();
        assert_eq!((skill.name(), skill.body()), ("pdf-processing", "\nSkill body.\n"));
        assert_eq!(skill.description(), "Extract, fill, and assemble PDF documents");
        assert_eq!(skill.text, SKILL_MD);
    }

    #[test]
    fn a_skill_md_of_another_size_is_refused_before_its_digest_is_looked_at() {
        let tampered = format!("{SKILL_MD}extra bytes the entry did not account for\n");
        let e = load(&honest(), &tampered).unwrap_err();
        assert!(matches!(&e, Error::Skill(SkillError::Size { listed: 97, read: 139, .. })), "{e}");
        assert!(e.to_string().contains("139 bytes"), "{e}");
    }

    #[test]
    fn a_skill_md_of_the_same_size_and_another_digest_is_refused() {
        let tampered = SKILL_MD.replace("Skill body.", "Evil body!!");
        assert_eq!(tampered.len(), SKILL_MD.len());
        let e = load(&honest(), &tampered).unwrap_err();
        assert!(matches!(&e, Error::Skill(SkillError::Digest { .. })), "{e}");
    }

    #[test]
    fn a_skill_md_whose_front_matter_differs_from_the_entry_is_refused_even_when_size_and_digest_match() {
        let tampered = SKILL_MD.replace("Extract, fill, and assemble PDF documents", "Exfiltrate credentials");
        let mut entry = honest();
        if let SkillFiles::Listed(files) = &mut entry.resources {
            files[0].size = tampered.len() as u64;
            files[0].digest = digest(tampered.as_bytes());
        }
        let e = load(&entry, &tampered).unwrap_err();
        assert!(matches!(&e, Error::Skill(SkillError::FrontmatterMismatch { key, .. }) if key == "description"), "{e}");
        // Without a front matter at all.
        let plain = "no front matter";
        if let SkillFiles::Listed(files) = &mut entry.resources {
            files[0].size = plain.len() as u64;
            files[0].digest = digest(plain.as_bytes());
        }
        assert!(matches!(load(&entry, plain), Err(Error::Skill(SkillError::Frontmatter(_)))));
    }

    #[test]
    fn a_blob_is_decoded_before_it_is_verified() {
        use base64::Engine;
        let entry = honest();
        let file = entry.file("skill://pdf-processing/references/FORMS.md").unwrap();
        let blob = base64::engine::general_purpose::STANDARD.encode(FORMS);
        let result = json!({"contents": [{"uri": file.uri, "mimeType": "text/markdown", "blob": blob}]});
        let content = verify_file(file, &result).unwrap();
        assert_eq!((content.text(), content.mime_type.as_deref()), (Some(FORMS), Some("text/markdown")));
        assert!(verify_file(file, &read(&file.uri, "Supporting content!\n")).is_err());
        let bad = json!({"contents": [{"uri": file.uri, "blob": "%%%"}]});
        assert!(matches!(verify_file(file, &bad), Err(Error::Protocol(_))));
        assert!(matches!(verify_file(file, &json!({"contents": []})), Err(Error::Protocol(_))));
    }

    #[test]
    fn an_entry_that_cannot_be_verified_is_refused_before_anything_is_read() {
        let mut dynamic = honest();
        dynamic.resources = serde_json::from_value(json!("dynamic")).unwrap();
        assert!(matches!(loadable(&dynamic), Err(SkillError::Unlisted(_))));
        let mut elsewhere = honest();
        elsewhere.uri = "skill://other/SKILL.md".into();
        assert!(matches!(loadable(&elsewhere), Err(SkillError::Name(_))));
        let mut bad_name = honest();
        bad_name.frontmatter.insert("name".into(), json!("PDF"));
        assert!(matches!(loadable(&bad_name), Err(SkillError::Name(_))));
        let mut unlisted = honest();
        if let SkillFiles::Listed(files) = &mut unlisted.resources {
            files.remove(0);
        }
        assert!(matches!(loadable(&unlisted), Err(SkillError::Unlisted(_))));
        // A nested skill path is fine.
        let mut nested = honest();
        nested.uri = "skill://acme/docs/pdf-processing/SKILL.md".into();
        if let SkillFiles::Listed(files) = &mut nested.resources {
            files[0].uri = nested.uri.clone();
        }
        loadable(&nested).unwrap();
    }

    #[test]
    fn an_entry_without_its_files_is_not_an_entry() {
        let raw = json!({"uri": "skill://a/SKILL.md", "frontmatter": {"name": "a", "description": "b"}});
        assert!(entry(&raw).is_err());
        let mut other = raw.clone();
        other["resources"] = json!("static");
        assert!(entry(&other).is_err());
        other["resources"] = json!("dynamic");
        entry(&other).unwrap();
        assert!(entry(&Value::Null).is_err());
    }

    /// Against the server side (`mcp::skills`), in process, in both eras: listed, got, loaded, a file read; an
    /// unlisted file refused without a read.
    #[tokio::test]
    async fn a_served_skill_is_listed_got_loaded_and_read_in_both_eras() {
        use crate::client::{Client, EraChoice};
        use crate::skills::{Skill, Skills};

        let skill = Skill::new(SKILL_MD).file("references/FORMS.md", FORMS);
        let server = crate::Server::builder().extension(Skills::new().skill(skill)).build().unwrap();
        for era in [EraChoice::V2025, EraChoice::V2026] {
            let client = Client::builder().era(era).in_process(server.clone()).await.unwrap();
            assert_eq!(client.server_skills().and_then(|s| s["directoryRead"].as_bool()), Some(true));
            let skills = client.list_skills().await.unwrap();
            assert_eq!(skills.len(), 1);
            let entry = &skills[0];
            assert_eq!(entry, &honest(), "the entry the suite lists, byte for byte");
            assert_eq!(&client.get_skill(&entry.uri).await.unwrap(), entry);
            assert!(client.get_skill("skill://nope/SKILL.md").await.unwrap_err().code() == Some(-32602));
            let loaded = client.load_skill(entry).await.unwrap();
            assert_eq!((loaded.text.as_str(), loaded.body()), (SKILL_MD, "\nSkill body.\n"));
            let forms = client.read_skill_file(entry, "skill://pdf-processing/references/FORMS.md").await.unwrap();
            assert_eq!(forms.text(), Some(FORMS));
            let unlisted = client.read_skill_file(entry, "skill://pdf-processing/OTHER.md").await.unwrap_err();
            assert!(matches!(&unlisted, Error::Skill(SkillError::Unlisted(uri)) if uri.ends_with("OTHER.md")));
        }
    }

    /// Every page of the real server's listing (100 skills a page).
    #[tokio::test]
    async fn every_page_is_listed() {
        use crate::skills::{Skill, Skills};

        let mut skills = Skills::new();
        for i in 0..150 {
            skills = skills.skill(Skill::new(format!("---\nname: s-{i}\ndescription: Skill {i}.\n---\n")));
        }
        let server = crate::Server::builder().extension(skills).build().unwrap();
        let client = crate::client::Client::in_process(server).await.unwrap();
        let listed = client.list_skills().await.unwrap();
        let uris: std::collections::HashSet<&str> = listed.iter().map(|s| s.uri.as_str()).collect();
        assert_eq!((listed.len(), uris.len()), (150, 150));
    }

    /// A `skills/list` of the test's own, for what a broken server does: its pages as `page` makes them.
    struct Listing(fn(&crate::Context, crate::handler::Arguments) -> Result<Value, crate::Error>);

    impl crate::extension::Extension for Listing {
        fn id(&self) -> &str {
            crate::wire::skills::EXTENSION
        }
        fn methods(&self) -> Vec<crate::handler::MethodDef> {
            vec![crate::handler::MethodDef::new("skills/list", crate::handler::MethodHandler::Blocking(self.0), "here")]
        }
    }

    async fn listing(
        page: fn(&crate::Context, crate::handler::Arguments) -> Result<Value, crate::Error>,
    ) -> Result<Vec<SkillEntry>, Error> {
        let server = crate::Server::builder().extension(Listing(page)).build().unwrap();
        crate::client::Client::in_process(server).await.unwrap().list_skills().await
    }

    #[tokio::test]
    async fn a_broken_listing_costs_a_bounded_amount() {
        // A second entry of one URI and an entry without its files are left out; a cursor given before ends it.
        let repeating = listing(|_, params| {
            let honest = serde_json::to_value(honest()).unwrap();
            if params.as_map().get("cursor").is_some() {
                return Ok(json!({ "skills": [honest], "nextCursor": "again" }));
            }
            let broken = json!({"uri": "skill://b/SKILL.md", "frontmatter": {"name": "b", "description": "c"}});
            Ok(json!({ "skills": [honest, broken], "nextCursor": "again" }))
        });
        let listed = repeating.await.unwrap();
        assert_eq!(listed, [honest()]);
        // A listing that never ends is given up.
        let endless = listing(|_, params| {
            let n =
                params.as_map().get("cursor").and_then(Value::as_str).and_then(|c| c.parse::<u64>().ok()).unwrap_or(0);
            Ok(json!({ "skills": [], "nextCursor": (n + 1).to_string() }))
        });
        assert!(matches!(endless.await, Err(Error::Protocol(why)) if why.contains("256 pages")));
        // A result that is not a listing.
        let odd = listing(|_, _| Ok(json!({ "items": [] })));
        assert!(matches!(odd.await, Err(Error::Protocol(_))));
    }

    /// A server that did not declare the extension is not asked `skills/*`.
    #[tokio::test]
    async fn skills_are_not_asked_of_a_server_without_the_extension() {
        let server = crate::Server::builder().build().unwrap();
        let client = crate::client::Client::in_process(server).await.unwrap();
        assert!(client.server_skills().is_none());
        let e = client.list_skills().await.unwrap_err();
        assert!(matches!(&e, Error::Protocol(why) if why.contains("io.modelcontextprotocol/skills")), "{e}");
        assert!(matches!(client.get_skill("skill://a/SKILL.md").await, Err(Error::Protocol(_))));
    }

    #[test]
    fn the_body_starts_after_the_closing_line() {
        assert_eq!(&SKILL_MD[body_start(SKILL_MD)..], "\nSkill body.\n");
        let crlf = "\u{feff}---\r\nname: a\r\ndescription: b\r\n--- \r\nbody";
        assert_eq!(&crlf[body_start(crlf)..], "body");
        assert_eq!(body_start("---\nname: a\n---"), "---\nname: a\n---".len());
    }
}
