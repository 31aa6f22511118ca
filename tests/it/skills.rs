//! The Skills extension (SEP-2640, `mcp::skills`): skills from code and from a directory tree, served in both eras
//! (`skills/list`, `skills/get`, `resources/read`, `resources/list`, `resources/directory/read`); what a server
//! refuses to build (a bad SKILL.md, a name outside the rule, a symlink out of the tree, an unsafe file name, a
//! skill past the limits), each naming the file and the rule; and the conformance suite's three server scenarios,
//! run by name in both eras against `examples/everything.rs`, with their checks run.

use crate::common;

use common::http::HttpServer;
use mcp::client::{Client, EraChoice};
use mcp::skills::{Skill, Skills};
use serde_json::json;

const SKILL_MD: &str =
    "---\nname: recommending-a-book\ndescription: Recommend a book.\nversion: 1.0\n---\n\nRead references/GENRES.md.\n";

fn server(skills: Skills) -> mcp::Server {
    mcp::Server::builder().extension(skills).build().unwrap()
}

async fn client(server: &mcp::Server, era: EraChoice) -> Client {
    Client::builder().era(era).in_process(server.clone()).await.unwrap()
}

/// A skill from code is listed, got, and read, with a digest and a size per file, in both eras.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_skill_from_code_is_listed_got_and_read_in_both_eras() {
    let genres = "Science fiction, history.\n";
    let server = server(Skills::new().skill(Skill::new(SKILL_MD).file("references/GENRES.md", genres)));
    let uri = "skill://recommending-a-book/SKILL.md";
    for era in [EraChoice::V2025, EraChoice::V2026] {
        let client = client(&server, era).await;
        let listed = client.request("skills/list", json!({})).await.unwrap();
        let entry = &listed["skills"][0];
        assert_eq!(entry["uri"], uri, "{listed}");
        assert_eq!(entry["frontmatter"]["name"], "recommending-a-book");
        assert_eq!(entry["frontmatter"]["version"].as_f64(), Some(1.0));
        let files = entry["resources"].as_array().unwrap();
        assert_eq!(files[0]["uri"], uri, "the SKILL.md first");
        assert_eq!(files[0]["size"], SKILL_MD.len());
        assert_eq!(files[0]["digest"], mcp::skills::digest(SKILL_MD.as_bytes()));
        assert_eq!(files[1]["uri"], "skill://recommending-a-book/references/GENRES.md");
        assert_eq!(files[1]["size"], genres.len());
        assert!(listed.get("ttlMs").is_some() && listed.get("cacheScope").is_some(), "{listed}");

        let got = client.request("skills/get", json!({"uri": uri})).await.unwrap();
        assert_eq!(&got["skill"], entry);
        assert!(got.get("nextCursor").is_none());
        let unknown = client.request("skills/get", json!({"uri": "skill://nope/SKILL.md"})).await.unwrap_err();
        assert!(unknown.to_string().contains("-32602") || format!("{unknown:?}").contains("-32602"), "{unknown:?}");

        let read = client.request("resources/read", json!({"uri": uri})).await.unwrap();
        assert_eq!(read["contents"][0]["text"], SKILL_MD, "{read}");
        assert_eq!(read["contents"][0]["mimeType"], "text/markdown");

        let resources = client.request("resources/list", json!({})).await.unwrap();
        let listed_md = resources["resources"].as_array().unwrap().iter().find(|r| r["uri"] == uri).cloned();
        let listed_md = listed_md.unwrap_or_else(|| panic!("SKILL.md in resources/list: {resources}"));
        assert_eq!(listed_md["name"], "recommending-a-book");
        assert_eq!(listed_md["description"], "Recommend a book.");

        let root = client.request("resources/directory/read", json!({"uri": "skill://recommending-a-book"})).await;
        let root = root.unwrap();
        let children: Vec<(String, String)> = root["resources"]
            .as_array()
            .unwrap()
            .iter()
            .map(|c| (c["uri"].as_str().unwrap().to_owned(), c["mimeType"].as_str().unwrap().to_owned()))
            .collect();
        assert_eq!(
            children,
            [
                ("skill://recommending-a-book/SKILL.md".to_owned(), "text/markdown".to_owned()),
                ("skill://recommending-a-book/references".to_owned(), "inode/directory".to_owned()),
            ]
        );
        let not_a_folder = client.request("resources/directory/read", json!({"uri": uri})).await.unwrap_err();
        assert!(format!("{not_a_folder:?}").contains("-32602"), "{not_a_folder:?}");
    }
    let caps = server.schema()["capabilities"].clone();
    assert_eq!(caps["extensions"]["io.modelcontextprotocol/skills"], json!({"directoryRead": true}), "{caps}");
    assert!(caps.get("resources").is_some(), "{caps}");
}

/// A skills tree on disk: each folder with a SKILL.md is a skill, under its path.
#[test]
fn a_directory_tree_is_served_under_its_paths() {
    let root = TempDir::new();
    let write = |path: &str, text: &str| {
        let path = root.path().join(path);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, text).unwrap();
    };
    write("pdf/SKILL.md", "---\nname: pdf\ndescription: PDFs.\n---\n");
    write("pdf/references/FORMS.md", "forms\n");
    write("pdf/.hidden", "left out\n");
    write("acme/billing/refunds/SKILL.md", "---\nname: refunds\ndescription: Refunds.\n---\n");
    let server = server(Skills::new().dir(root.path()));
    let rt = tokio::runtime::Runtime::new().unwrap();
    rt.block_on(async {
        let client = client(&server, EraChoice::V2026).await;
        let listed = client.request("skills/list", json!({})).await.unwrap();
        let uris: Vec<&str> = listed["skills"].as_array().unwrap().iter().map(|s| s["uri"].as_str().unwrap()).collect();
        assert_eq!(uris, ["skill://acme/billing/refunds/SKILL.md", "skill://pdf/SKILL.md"]);
        let pdf: Vec<&str> =
            listed["skills"][1]["resources"].as_array().unwrap().iter().map(|f| f["uri"].as_str().unwrap()).collect();
        assert_eq!(pdf, ["skill://pdf/SKILL.md", "skill://pdf/references/FORMS.md"], "dotfiles are left out");
        let acme = client.request("resources/directory/read", json!({"uri": "skill://acme"})).await.unwrap();
        assert_eq!(acme["resources"][0]["uri"], "skill://acme/billing");
        assert_eq!(acme["resources"][0]["mimeType"], "inode/directory");
        // The client's typed read, through each level.
        let top = client.read_skill_folder("skill://acme").await.unwrap();
        assert_eq!(top.len(), 1);
        assert!(top[0].is_folder() && top[0].name == "billing", "{top:?}");
        let refunds = client.read_skill_folder("skill://acme/billing/refunds").await.unwrap();
        assert_eq!(refunds.len(), 1);
        assert!(!refunds[0].is_folder() && refunds[0].uri == "skill://acme/billing/refunds/SKILL.md", "{refunds:?}");
        let pdf = client.read_skill_folder("skill://pdf/references").await.unwrap();
        assert_eq!(pdf[0].mime_type.as_deref(), Some("text/markdown"), "{pdf:?}");
        let not_a_folder = client.read_skill_folder("skill://pdf/SKILL.md").await.unwrap_err();
        assert!(format!("{not_a_folder:?}").contains("not a folder"), "{not_a_folder:?}");
    });
}

/// What a server refuses to build, each naming the file and the rule.
#[test]
fn bad_skills_are_build_errors_naming_the_file_and_the_rule() {
    let refused = |skills: Skills| match mcp::Server::builder().extension(skills).build() {
        Err(e) => e.to_string(),
        Ok(_) => panic!("built"),
    };
    let no_front = refused(Skills::new().skill(Skill::new("# no front matter")));
    assert!(no_front.contains("must begin with a `---` line"), "{no_front}");
    let bad_name = refused(Skills::new().skill(Skill::new("---\nname: Bad_Name\ndescription: d\n---\n")));
    assert!(bad_name.contains("`Bad_Name`") && bad_name.contains("lowercase"), "{bad_name}");
    let no_description = refused(Skills::new().skill(Skill::new("---\nname: a\n---\n")));
    assert!(no_description.contains("`description`"), "{no_description}");
    let elsewhere = refused(Skills::new().skill(Skill::new("---\nname: a\ndescription: d\n---\n").at("acme/b")));
    assert!(elsewhere.contains("last segment"), "{elsewhere}");
    let too_many = (0..mcp::skills::MAX_FILES)
        .fold(Skill::new("---\nname: a\ndescription: d\n---\n"), |s, i| s.file(format!("f{i}.txt"), "x"));
    let too_many = refused(Skills::new().skill(too_many));
    assert!(too_many.contains("more than 512"), "{too_many}");
    let too_big = refused(
        Skills::new().skill(Skill::new("---\nname: a\ndescription: d\n---\n").file("big.bin", vec![0u8; 17 << 20])),
    );
    assert!(too_big.contains("16 MiB"), "{too_big}");

    let tree = |setup: &dyn Fn(&std::path::Path)| {
        let root = TempDir::new();
        std::fs::create_dir_all(root.path().join("a")).unwrap();
        std::fs::write(root.path().join("a/SKILL.md"), "---\nname: a\ndescription: d\n---\n").unwrap();
        setup(root.path());
        let message = refused(Skills::new().dir(root.path()));
        (root, message)
    };
    let (root, message) =
        tree(&|root| std::fs::write(root.join("a/SKILL.md"), "---\nname: b\ndescription: d\n---\n").unwrap());
    assert!(message.contains(&root.path().join("a/SKILL.md").display().to_string()), "names the file: {message}");
    assert!(message.contains("last segment"), "{message}");
    let outside = TempDir::new();
    std::fs::write(outside.path().join("secret.txt"), "secret").unwrap();
    let target = outside.path().join("secret.txt");
    let (_root, message) = tree(&|root| std::os::unix::fs::symlink(&target, root.join("a/link.txt")).unwrap());
    assert!(message.contains("outside the skills directory") && message.contains("link.txt"), "{message}");
    let (_root, message) = tree(&|root| std::fs::write(root.join("a/%2e%2e"), "x").unwrap());
    assert!(message.contains("%2e%2e") && message.contains("no `%`"), "{message}");
    let (_root, message) = tree(&|root| std::fs::write(root.join("a/two words.md"), "x").unwrap());
    assert!(message.contains("two words.md"), "{message}");
    // A symlink inside the tree is followed.
    let root = TempDir::new();
    std::fs::create_dir_all(root.path().join("a")).unwrap();
    std::fs::write(root.path().join("a/SKILL.md"), "---\nname: a\ndescription: d\n---\n").unwrap();
    std::fs::write(root.path().join("a/real.md"), "real").unwrap();
    std::os::unix::fs::symlink(root.path().join("a/real.md"), root.path().join("a/alias.md")).unwrap();
    mcp::Server::builder().extension(Skills::new().dir(root.path())).build().unwrap();
    let missing = refused(Skills::new().dir("/no/such/skills"));
    assert!(missing.contains("/no/such/skills"), "{missing}");
}

/// Runs the conformance suite's CLI with these arguments; its output, once it succeeded.
fn conformance(args: &[&str]) -> String {
    let out = common::node::conformance(args);
    let text = format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    assert!(out.status.success(), "{args:?} failed:\n{text}");
    text
}

/// The three server scenarios of the extension, by name, in both eras: each passes with its checks run (a check
/// skipped means "not declared", which would prove nothing).
#[test]
fn the_everything_server_passes_the_sep_2640_skills_scenarios_in_both_eras() {
    let server = HttpServer::start_binary(common::example("everything"), &[]);
    for era in [&[][..], &["--spec-version", "2025-11-25", "--force"][..]] {
        for (scenario, must_run) in [
            (
                "sep-2640-skills-enumeration",
                &[
                    "sep-2640-skills-list-implemented",
                    "sep-2640-resources-complete",
                    "sep-2640-skills-get-unknown-uri-invalid-params",
                    "sep-2640-entry-frontmatter-identical",
                ][..],
            ),
            (
                "sep-2640-skills-manifest",
                &[
                    "sep-2640-skillmd-mimetype",
                    "sep-2640-final-segment-equals-name",
                    "sep-2640-skillmd-metadata-name",
                    "sep-2640-skillmd-metadata-description",
                ][..],
            ),
            (
                "sep-2640-skills-directory",
                &[
                    "sep-2640-directory-read-method-registered",
                    "sep-2640-directory-read-subdir-mimetype",
                    "sep-2640-directory-read-invalid-params",
                ][..],
            ),
        ] {
            let mut args = vec!["server", "--url", server.url.as_str(), "--scenario", scenario, "--verbose"];
            args.extend_from_slice(era);
            let text = conformance(&args);
            let results = text.lines().find(|l| l.contains("Passed: ")).unwrap_or_default().to_owned();
            assert!(results.contains(" 0 failed, 0 warnings"), "{scenario} {era:?}: {results}\n{text}");
            println!("{scenario} {era:?}: {results}");
            for check in must_run {
                let ran = text.contains(&format!("\"id\": \"{check}\""))
                    && !checks_with_status(&text, check).iter().any(|s| s != "SUCCESS");
                assert!(ran, "{scenario} {era:?}: the check {check} did not run and succeed\n{text}");
            }
        }
    }
}

/// The statuses the verbose output gives the check `id`.
fn checks_with_status(text: &str, id: &str) -> Vec<String> {
    let needle = format!("\"id\": \"{id}\"");
    text.match_indices(&needle)
        .filter_map(|(at, _)| {
            let rest = &text[at..];
            let status = rest.split("\"status\": \"").nth(1)?;
            Some(status.split('"').next()?.to_owned())
        })
        .collect()
}

/// A folder of its own under the system's temporary folder, removed when dropped.
struct TempDir(std::path::PathBuf);

impl TempDir {
    fn new() -> TempDir {
        static NEXT: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
        let n = NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let path = std::env::temp_dir().join(format!("mcp-skills-test-{}-{n}", std::process::id()));
        let _ = std::fs::remove_dir_all(&path);
        std::fs::create_dir_all(&path).unwrap();
        TempDir(path)
    }

    fn path(&self) -> &std::path::Path {
        &self.0
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// The bookshop publishes its skill over stdio in both eras: `recommending-a-book`, whose reference file reads back
/// with the digest its entry lists.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_bookshop_publishes_its_skill() {
    for era in [EraChoice::V2025, EraChoice::V2026] {
        let command = tokio::process::Command::new(common::example("bookshop"));
        let client = Client::builder().era(era).stdio(command).await.unwrap();
        let listed = client.request("skills/list", json!({})).await.unwrap();
        let entry = &listed["skills"][0];
        assert_eq!(entry["uri"], "skill://recommending-a-book/SKILL.md", "{listed}");
        let shelves = "skill://recommending-a-book/references/SHELVES.md";
        let file = entry["resources"].as_array().unwrap().iter().find(|f| f["uri"] == shelves).cloned();
        let file = file.unwrap_or_else(|| panic!("SHELVES.md listed: {entry}"));
        let read = client.request("resources/read", json!({"uri": shelves})).await.unwrap();
        let text = read["contents"][0]["text"].as_str().unwrap();
        assert_eq!(file["digest"], mcp::skills::digest(text.as_bytes()));
        assert!(text.contains("Dune"), "{text}");
    }
}
