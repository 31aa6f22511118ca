//! The runtime's layers import one way. This reads the `crate::` paths of `mcp-runtime/src` (a name the crate root
//! re-exports, `crate::Server`, counts as the module it comes from) and checks the import graph of its top-level
//! modules:
//! - every module sits in one of [`LAYERS`] and imports only modules of the layers below its own;
//! - the floor (`base`, `wire`, `otel`) imports nothing above it: `base` nothing at all, `wire` (the protocol's
//!   types and its frames' encoders) only `base` (the frame itself);
//! - no import closes a cycle that is not already recorded below as debt: a new one fails, naming its file and line;
//! - every recorded edge still exists: when a change removes one, the list here shrinks with it, until no cycle is
//!   left and the list is empty.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// The layers, top to bottom: a module may import only modules of the layers below its own. A new top-level module
/// must be placed here.
const LAYERS: &[&[&str]] = &[
    &["entry", "skills", "apps", "events"],
    // `mcp::extension`: the Extension API's public names, re-exported from `builder`.
    &["extension"],
    &["transport", "builder"],
    &["compose"],
    &["ask", "redis", "client"],
    &["era"],
    &["dispatch"],
    &["task"],
    &["server"],
    &["hook"],
    &["store", "middleware"],
    // What a handler is made of, its `Arguments` among them, which middleware layers read.
    &["handler"],
    &["context"],
    &["auth", "metrics"],
    &["wire", "otel"],
    &["base"],
];

/// The floor: modules that import no other top-level module of the crate but the ones named beside them.
const FLOOR: &[(&str, &[&str])] = &[("base", &[]), ("wire", &["base"]), ("otel", &[])];

/// The imports that still close a cycle, `(from, to)`: none. A change that needs one has to say why here.
const CYCLE_DEBT: &[(&str, &str)] = &[];

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

/// The top-level module a file belongs to.
fn module_of(src: &Path, file: &Path) -> String {
    let first = file.strip_prefix(src).unwrap().components().next().unwrap();
    first.as_os_str().to_string_lossy().trim_end_matches(".rs").to_owned()
}

/// The file's code without comments, and without its `#[cfg(test)]` tail (tests may import anything).
fn code_of(text: &str) -> String {
    let text = match text.find("#[cfg(test)]") {
        Some(i) => &text[..i],
        None => text,
    };
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while !rest.is_empty() {
        if let Some(after) = rest.strip_prefix("//") {
            let end = after.find('\n').unwrap_or(after.len());
            rest = &after[end..];
        } else if let Some(after) = rest.strip_prefix("/*") {
            let end = after.find("*/").map(|i| i + 2).unwrap_or(after.len());
            out.extend(after[..end].chars().filter(|&c| c == '\n'));
            rest = &after[end..];
        } else {
            let c = rest.chars().next().unwrap();
            out.push(c);
            rest = &rest[c.len_utf8()..];
        }
    }
    out
}

fn ident_at(text: &str) -> &str {
    let end = text.find(|c: char| !(c.is_alphanumeric() || c == '_')).unwrap_or(text.len());
    &text[..end]
}

/// What the crate root re-exports (`pub use server::{Server, ServerBuilder};` in lib.rs), name -> module: a path
/// through the root (`crate::Server`) depends on the module the item lives in as much as `crate::server::Server`.
fn root_exports(lib: &str, modules: &BTreeSet<String>) -> BTreeMap<String, String> {
    let mut names = BTreeMap::new();
    for statement in lib.split(';') {
        let Some(at) = statement.find("pub use ") else { continue };
        let path = statement[at + "pub use ".len()..].trim_start();
        let first = ident_at(path);
        // `pub use wire::protocol;` makes `protocol` a root path of its own.
        let module = if first == "protocol" { "wire" } else { first };
        if !modules.contains(module) {
            continue;
        }
        let mut rest = &path[first.len()..];
        while let Some(i) = rest.find(|c: char| c.is_alphanumeric() || c == '_') {
            let name = ident_at(&rest[i..]);
            if !modules.contains(name) && name != "as" && name != "self" {
                names.insert(name.to_owned(), module.to_owned());
            }
            rest = &rest[i + name.len()..];
        }
    }
    names
}

/// Every top-level module a file names through `crate::`, with the line of its first mention; a name the crate
/// root re-exports counts as the module it comes from.
fn imports(code: &str, modules: &BTreeSet<String>, exports: &BTreeMap<String, String>) -> BTreeMap<String, usize> {
    let module_of_name = |name: &str| -> Option<String> {
        if modules.contains(name) {
            Some(name.to_owned())
        } else {
            exports.get(name).cloned()
        }
    };
    let mut found = BTreeMap::new();
    let line_of = |at: usize| code[..at].matches('\n').count() + 1;
    for (at, _) in code.match_indices("crate::") {
        let after = &code[at + "crate::".len()..];
        if let Some(group) = after.strip_prefix('{') {
            // `crate::{a::x, b::{y, z}}`: the first segment of each path at the group's top level.
            let mut depth = 0;
            let mut start = true;
            for (i, c) in group.char_indices() {
                match c {
                    '{' => depth += 1,
                    '}' if depth == 0 => break,
                    '}' => depth -= 1,
                    ',' if depth == 0 => start = true,
                    c if start && (c.is_alphanumeric() || c == '_') => {
                        if let Some(module) = module_of_name(ident_at(&group[i..])) {
                            found.entry(module).or_insert_with(|| line_of(at));
                        }
                        start = false;
                    }
                    _ => {}
                }
            }
        } else {
            if let Some(module) = module_of_name(ident_at(after)) {
                found.entry(module).or_insert_with(|| line_of(at));
            }
        }
    }
    found
}

/// The strongly connected components of more than one module (Tarjan).
fn cycles(edges: &BTreeMap<String, BTreeMap<String, String>>) -> Vec<BTreeSet<String>> {
    struct Walk<'a> {
        edges: &'a BTreeMap<String, BTreeMap<String, String>>,
        index: BTreeMap<&'a str, usize>,
        low: BTreeMap<&'a str, usize>,
        stack: Vec<&'a str>,
        found: Vec<BTreeSet<String>>,
    }
    fn visit<'a>(w: &mut Walk<'a>, v: &'a str) {
        let n = w.index.len();
        w.index.insert(v, n);
        w.low.insert(v, n);
        w.stack.push(v);
        let edges = w.edges;
        for to in edges.get(v).into_iter().flat_map(|m| m.keys()) {
            let to = to.as_str();
            if !w.index.contains_key(to) {
                visit(w, to);
                let low = w.low[v].min(w.low[to]);
                w.low.insert(v, low);
            } else if w.stack.contains(&to) {
                let low = w.low[v].min(w.index[to]);
                w.low.insert(v, low);
            }
        }
        if w.low[v] == w.index[v] {
            let mut component = BTreeSet::new();
            while let Some(top) = w.stack.pop() {
                component.insert(top.to_owned());
                if top == v {
                    break;
                }
            }
            if component.len() > 1 {
                w.found.push(component);
            }
        }
    }
    let mut walk = Walk { edges, index: BTreeMap::new(), low: BTreeMap::new(), stack: Vec::new(), found: Vec::new() };
    for v in edges.keys() {
        if !walk.index.contains_key(v.as_str()) {
            visit(&mut walk, v);
        }
    }
    walk.found
}

#[test]
fn the_runtime_layers_import_one_way() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("mcp-runtime/src");
    let mut files = Vec::new();
    rust_files(&src, &mut files);
    files.sort();
    let modules: BTreeSet<String> =
        files.iter().map(|f| module_of(&src, f)).filter(|m| m != "lib" && m != "main").collect();
    let exports = root_exports(&code_of(&std::fs::read_to_string(src.join("lib.rs")).unwrap()), &modules);
    // from -> to -> where (file:line)
    let mut edges: BTreeMap<String, BTreeMap<String, String>> = BTreeMap::new();
    for file in &files {
        let from = module_of(&src, file);
        if from == "lib" {
            continue;
        }
        let code = code_of(&std::fs::read_to_string(file).unwrap());
        for (to, line) in imports(&code, &modules, &exports) {
            if to != from {
                let place = format!("{}:{line}", file.strip_prefix(&src).unwrap().display());
                edges.entry(from.clone()).or_default().entry(to).or_insert(place);
            }
        }
        edges.entry(from).or_default();
    }
    let mut problems = Vec::new();
    for (floor, below) in FLOOR {
        for (to, place) in edges.get(*floor).into_iter().flatten().filter(|(to, _)| !below.contains(&to.as_str())) {
            problems
                .push(format!("the floor module `{floor}` imports `{to}` ({place}): it may import nothing above it"));
        }
    }
    let layer = |module: &str| LAYERS.iter().position(|l| l.contains(&module));
    for (from, imported) in &edges {
        let Some(at) = layer(from) else {
            problems
                .push(format!("the module `{from}` is in no layer: place it in LAYERS in tests/it/module_graph.rs"));
            continue;
        };
        for (to, place) in imported {
            if layer(to).is_some_and(|below| below <= at) {
                problems.push(format!(
                    "`{from}` imports `{to}` ({place}), which is not below it in LAYERS: move what it needs down, or \
                     reverse the dependency"
                ));
            }
        }
    }
    let debt: BTreeSet<(String, String)> = CYCLE_DEBT.iter().map(|(a, b)| (a.to_string(), b.to_string())).collect();
    let found = cycles(&edges);
    for component in &found {
        for from in component {
            for (to, place) in &edges[from] {
                if component.contains(to) && !debt.contains(&(from.clone(), to.clone())) {
                    problems.push(format!(
                        "`{from}` imports `{to}` ({place}), which closes an import cycle among {component:?}: \
                         move what both need below them (into `base`, say), or reverse the dependency"
                    ));
                }
            }
        }
    }
    let in_cycle = |from: &String, to: &String| found.iter().any(|c| c.contains(from) && c.contains(to));
    for (from, to) in &debt {
        if !edges.get(from).is_some_and(|m| m.contains_key(to)) || !in_cycle(from, to) {
            problems.push(format!(
                "`{from}` -> `{to}` closes no cycle any more: remove (\"{from}\", \"{to}\") from CYCLE_DEBT in \
                 tests/it/module_graph.rs"
            ));
        }
    }
    assert!(problems.is_empty(), "the runtime's import graph:\n- {}", problems.join("\n- "));
}
