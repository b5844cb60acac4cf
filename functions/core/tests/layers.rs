//! Layers inside `sundial-core`, held by a test: the crate graph keeps the crates in order
//! (`tests/tests/layers.rs`), but inside one crate nothing stops an arrow going up. This reads
//! every source file of the crate and fails when
//! - a top-level module imports one that comes later in [`ORDER`] (the planes sit on the
//!   shared modules, never the other way), or
//! - two files of one folder import each other, directly or through other files of the folder
//!   (a cycle the compiler accepts and a reader cannot untangle).
//!
//! The lower crates (`sundial_model`, `sundial_store`, ...) are named by their own paths and sit
//! below every module here, so they are not edges; a `crate::` path names a module of [`ORDER`]
//! (or an item the crate root re-exports from one, `crate::Ctx`), and the crate root re-exports
//! no other crate.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// Top-level modules, lowest first. A module may import only modules before it.
const ORDER: &[&str] = &[
    "telemetry",
    "metrics",
    "config",
    "access",
    "aws",
    "context",
    "missed",
    "schedules",
    "execution",
    "reconcile",
    "trigger",
    "control",
];

fn src() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("src")
}

/// The crate root's `pub use module::Item;` lines, as item -> module (`Ctx` -> `context`).
fn root_items() -> BTreeMap<String, String> {
    let lib = std::fs::read_to_string(src().join("lib.rs")).unwrap_or_default();
    lib.lines()
        .filter_map(|l| l.trim().strip_prefix("pub use ")?.strip_suffix(';'))
        .filter_map(|p| p.split_once("::"))
        .filter(|(module, item)| !module.starts_with("sundial_") && !item.contains(['{', ':', ' ']))
        .map(|(module, item)| (item.to_string(), module.to_string()))
        .collect()
}

fn files(dir: &Path, out: &mut Vec<PathBuf>) {
    for e in std::fs::read_dir(dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display())).flatten() {
        let p = e.path();
        if p.is_dir() {
            files(&p, out);
        } else if p.extension().is_some_and(|x| x == "rs") {
            out.push(p);
        }
    }
}

/// The production text of a file: its unit-test module and comment lines left out.
fn production(path: &Path) -> String {
    let text = std::fs::read_to_string(path).unwrap_or_default();
    let text = match text.find("\n#[cfg(test)]\nmod tests") {
        Some(i) => &text[..i],
        None => &text[..],
    };
    text.lines().filter(|l| !l.trim_start().starts_with("//")).collect::<Vec<_>>().join("\n")
}

/// Every `crate::a::b...` path in `text`, as its segments.
fn crate_paths(text: &str) -> Vec<Vec<String>> {
    let mut out = Vec::new();
    let mut rest = text;
    while let Some(i) = rest.find("crate::") {
        rest = &rest[i + "crate::".len()..];
        let path: String =
            rest.chars().take_while(|c| c.is_alphanumeric() || *c == '_' || *c == ':').collect();
        out.push(path.split("::").filter(|s| !s.is_empty()).map(str::to_string).collect());
    }
    // `use crate::{a::.., b};` groups
    let mut rest = text;
    while let Some(i) = rest.find("use crate::{") {
        rest = &rest[i + "use crate::{".len()..];
        let group = &rest[..rest.find("};").unwrap_or(0)];
        for item in group.split(',') {
            let p: Vec<String> = item.trim().split("::").map(|s| s.trim().to_string()).collect();
            if p.first().is_some_and(|s| !s.is_empty()) {
                out.push(p);
            }
        }
    }
    out
}

fn module_of(path: &Path) -> String {
    let rel = path.strip_prefix(src()).unwrap_or(path);
    let first =
        rel.components().next().map(|c| c.as_os_str().to_string_lossy().to_string()).unwrap_or_default();
    first.trim_end_matches(".rs").to_string()
}

#[test]
fn top_level_modules_import_only_lower_ones() {
    let mut all = Vec::new();
    files(&src(), &mut all);
    let rank = |m: &str| ORDER.iter().position(|o| *o == m);
    let items = root_items();
    let mut wrong = Vec::new();
    for f in &all {
        let module = module_of(f);
        if module == "lib" {
            continue;
        }
        let Some(own) = rank(&module) else {
            wrong.push(format!("module {module} has no place in ORDER (functions/core/tests/layers.rs)"));
            continue;
        };
        for p in crate_paths(&production(f)) {
            let target = items.get(&p[0]).unwrap_or(&p[0]);
            if *target == module {
                continue;
            }
            match rank(target) {
                Some(r) if r < own => {}
                _ => wrong.push(format!("{}: {module} imports crate::{}", f.display(), p.join("::"))),
            }
        }
    }
    wrong.sort();
    wrong.dedup();
    assert!(wrong.is_empty(), "upward imports inside sundial-core:\n{}", wrong.join("\n"));
}

#[test]
fn the_crate_root_re_exports_no_other_crate() {
    let lib = std::fs::read_to_string(src().join("lib.rs")).unwrap_or_default();
    let wrong: Vec<&str> = lib.lines().filter(|l| l.trim_start().starts_with("pub use sundial_")).collect();
    assert!(
        wrong.is_empty(),
        "sundial-core re-exports a lower crate (its callers name it themselves):\n{}",
        wrong.join("\n")
    );
    assert_eq!(root_items().get("Ctx").map(String::as_str), Some("context"));
}

#[test]
fn no_two_files_of_a_folder_import_each_other() {
    let mut all = Vec::new();
    files(&src(), &mut all);
    // folder -> file stem -> sibling stems it names (`super::x`, `crate::<folder path>::x`)
    let mut graph: BTreeMap<PathBuf, BTreeMap<String, BTreeSet<String>>> = BTreeMap::new();
    for f in &all {
        let dir = f.parent().map(Path::to_path_buf).unwrap_or_default();
        let stem = f.file_stem().map(|s| s.to_string_lossy().to_string()).unwrap_or_default();
        if stem == "mod" || stem == "lib" {
            continue;
        }
        let folder: Vec<String> = dir
            .strip_prefix(src())
            .map(|r| r.components().map(|c| c.as_os_str().to_string_lossy().to_string()).collect())
            .unwrap_or_default();
        let text = production(f);
        let mut named = BTreeSet::new();
        let mut rest = text.as_str();
        while let Some(i) = rest.find("super::") {
            rest = &rest[i + "super::".len()..];
            let name: String = rest.chars().take_while(|c| c.is_alphanumeric() || *c == '_').collect();
            named.insert(name);
        }
        for p in crate_paths(&text) {
            if p.len() > folder.len() && p[..folder.len()] == folder[..] {
                named.insert(p[folder.len()].clone());
            }
        }
        named.remove(&stem);
        graph.entry(dir).or_default().insert(stem, named);
    }
    let mut cycles = Vec::new();
    for (dir, nodes) in &graph {
        // A depth-first search for a back edge among the folder's own files.
        fn visit(
            n: &str,
            nodes: &BTreeMap<String, BTreeSet<String>>,
            state: &mut BTreeMap<String, u8>,
            stack: &mut Vec<String>,
            found: &mut Vec<String>,
        ) {
            state.insert(n.to_string(), 1);
            stack.push(n.to_string());
            for m in nodes.get(n).into_iter().flatten().filter(|m| nodes.contains_key(*m)) {
                match state.get(m).copied().unwrap_or(0) {
                    0 => visit(m, nodes, state, stack, found),
                    1 => {
                        let from = stack.iter().position(|s| s == m).unwrap_or(0);
                        found.push(format!("{} -> {m}", stack[from..].join(" -> ")));
                    }
                    _ => {}
                }
            }
            stack.pop();
            state.insert(n.to_string(), 2);
        }
        let mut state = BTreeMap::new();
        let mut found = Vec::new();
        for n in nodes.keys() {
            if state.get(n).copied().unwrap_or(0) == 0 {
                visit(n, nodes, &mut state, &mut Vec::new(), &mut found);
            }
        }
        for c in found {
            cycles.push(format!("{}: {c}", dir.display()));
        }
    }
    assert!(cycles.is_empty(), "files that import each other inside sundial-core:\n{}", cycles.join("\n"));
}
