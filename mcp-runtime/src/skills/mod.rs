//! The Skills extension (`io.modelcontextprotocol/skills`, SEP-2640; the `skills` feature): a server publishes
//! skills — a `SKILL.md` with YAML front matter, and the files it refers to — that a host loads when it needs them.
//!
//! [`Skills`] is the extension, built on the public [`Extension`] API and nothing else: skills from a directory tree
//! ([`Skills::dir`]: each folder with a `SKILL.md` is a skill) or from code ([`Skill`], with `include_str!` or
//! `include_bytes!` for embedded files). Everything is read and checked when the server is built (a bad `SKILL.md`,
//! a name outside the rule, a symlink out of the tree, a percent-encoded or otherwise unsafe file name, a skill past
//! the limits: a [`BuildError`](crate::BuildError) naming the file and the rule), and served from memory.
//!
//! What the server serves:
//! - `skills/list` (paginated) and `skills/get`: each skill's entry, with its front matter and every file with its
//!   digest and size;
//! - every file as a resource, `skill://<skill path>/<file path>`, read with `resources/read` and listed by
//!   `resources/list` (a `SKILL.md` with its skill's name and description, `text/markdown`);
//! - `resources/directory/read` (declared as `directoryRead`): the direct children of a folder, folders as
//!   `inode/directory`;
//! - the extension, declared in `initialize` (2025-11-25) and `server/discover` (2026-07-28).
//!
//! ```
//! use mcp::skills::{Skill, Skills};
//!
//! let recommending = Skill::new(
//!     "---\nname: recommending-a-book\ndescription: Recommend a book from the shop's catalogue.\n---\n\n\
//!      Read references/GENRES.md, then ask what the reader liked last.\n",
//! )
//! .file("references/GENRES.md", "Science fiction, history, poetry.\n");
//! let server = mcp::Server::builder().extension(Skills::new().skill(recommending)).build().unwrap();
//! let caps = &server.schema()["capabilities"];
//! assert_eq!(caps["extensions"]["io.modelcontextprotocol/skills"]["directoryRead"], true);
//! ```
//!
//! The client side is [`Client::list_skills`](crate::client::Client) and its verified loading of a skill.

mod catalog;
mod dir;
mod methods;

pub use crate::wire::skills::{
    check_name, digest, frontmatter, same_frontmatter, DynamicFiles, SkillEntry, SkillError, SkillFile, SkillFiles,
    DIRECTORY_MIME, EXTENSION, MAX_BYTES, MAX_DESCRIPTION, MAX_FILES, MAX_NAME,
};

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;

use serde_json::json;

use crate::base::sync::Unpoisoned;
use crate::builder::extension::{Declaration, Extension};
use crate::builder::ServerBuilder;
use crate::context::Era;
use crate::handler::method::MethodDef;
use catalog::Catalog;

/// One skill from code: its `SKILL.md` and its other files, by their path in the skill's folder.
#[derive(Clone, Debug)]
pub struct Skill {
    /// Its path under `skill://` (the last segment is its name); `None`: its name.
    path: Option<String>,
    files: BTreeMap<String, Arc<[u8]>>,
    /// Where it came from, for errors.
    origin: String,
}

impl Skill {
    /// A skill whose `SKILL.md` is `skill_md`; it is served at `skill://<name>/SKILL.md`, its name taken from the
    /// front matter (checked when the server is built).
    pub fn new(skill_md: impl Into<String>) -> Skill {
        let mut files = BTreeMap::new();
        files.insert("SKILL.md".to_owned(), Arc::from(skill_md.into().into_bytes()));
        Skill { path: None, files, origin: "a skill made in code".into() }
    }

    /// Serves it under a longer path, `skill://<path>/SKILL.md` (`acme/billing/refunds`): the last segment must be
    /// its name.
    pub fn at(mut self, path: impl Into<String>) -> Skill {
        self.path = Some(path.into());
        self
    }

    /// Adds a file at `path` in the skill's folder (`references/FORMS.md`), text or bytes.
    pub fn file(mut self, path: impl Into<String>, contents: impl Into<Vec<u8>>) -> Skill {
        self.files.insert(path.into(), Arc::from(contents.into()));
        self
    }
}

/// The Skills extension: add it with [`ServerBuilder::extension`](crate::ServerBuilder::extension).
#[derive(Debug)]
pub struct Skills {
    skills: Vec<Skill>,
    /// What reading a directory found wrong, reported when the server is built.
    errors: Vec<String>,
    directory_read: bool,
    /// Why the catalog `setup` built is not one to serve, for `check` to report.
    refused: std::sync::Mutex<Option<String>>,
}

impl Default for Skills {
    fn default() -> Self {
        Skills::new()
    }
}

impl Skills {
    /// No skills yet; `resources/directory/read` served.
    pub fn new() -> Skills {
        Skills { skills: Vec::new(), errors: Vec::new(), directory_read: true, refused: Default::default() }
    }

    /// Adds a skill made in code.
    pub fn skill(mut self, skill: Skill) -> Skills {
        self.skills.push(skill);
        self
    }

    /// Adds every skill of the tree at `root`: each folder with a `SKILL.md` is a skill, served under its path from
    /// `root` (`root/pdf-processing/SKILL.md` is `skill://pdf-processing/SKILL.md`), with every file under its
    /// folder. The tree is read now, whole, into memory; files and folders whose names start with `.` are left out.
    /// Refused when the server is built, naming the file: a symlink to anything outside the tree, a name that is
    /// not made of `A-Z a-z 0-9 - . _ ~` (a percent-encoded name, a space, `..`), a tree that cannot be read.
    pub fn dir(mut self, root: impl AsRef<Path>) -> Skills {
        match dir::read(root.as_ref()) {
            Ok(skills) => self.skills.extend(skills),
            Err(e) => self.errors.push(e),
        }
        self
    }

    /// Whether to serve `resources/directory/read` (and declare `directoryRead`); on unless turned off.
    pub fn directory_read(mut self, on: bool) -> Skills {
        self.directory_read = on;
        self
    }

    fn catalog(&self) -> Result<Catalog, String> {
        if let Some(e) = self.errors.first() {
            return Err(e.clone());
        }
        Catalog::build(&self.skills)
    }
}

impl Extension for Skills {
    fn id(&self) -> &str {
        EXTENSION
    }

    fn declare(&self, _era: Era) -> Declaration {
        Declaration::settings(if self.directory_read { json!({ "directoryRead": true }) } else { json!({}) })
    }

    fn methods(&self) -> Vec<MethodDef> {
        methods::defs(self.directory_read)
    }

    fn check(&self) -> Result<(), String> {
        match self.refused.locked().take() {
            Some(why) => Err(why),
            None => Ok(()),
        }
    }

    fn setup(&self, builder: ServerBuilder) -> ServerBuilder {
        // A catalog that does not build is reported by `check`, which runs next; nothing is served meanwhile.
        let catalog = self.catalog().unwrap_or_else(|why| {
            *self.refused.locked() = Some(why);
            Catalog::default()
        });
        builder.state(Arc::new(catalog)).resource_def(methods::files())
    }
}
