//! The file-level module graph of one crate target (a `lib.rs`, `main.rs` or `bin/*.rs` root).
//!
//! The module tree comes from the root's `mod x;` declarations (`x.rs` or `x/mod.rs`, inline
//! `mod x { … }` belonging to their file), so a file declared only under `#[cfg(test)]` is not
//! in it. An edge is a path in production code that names an item of another file: `use`
//! trees, inline `crate::`/`self::`/`super::`/`$crate::` paths, paths that start with a child
//! module's name, and the path strings of attributes (`with = "crate::x::f"`). A path that names
//! an item a module re-exports (`pub use`, globs included) is followed to the file that defines
//! it, up to four steps; a path that leaves the crate is no edge. Declaring a child (`mod x;`) is
//! not an edge, nor is re-exporting what a module below defines (`pub use child::X;` in a
//! `mod.rs`, `pub(crate)` or `self::` alike): using one of its items in the parent's own code is,
//! as is a private `use child::X;` (attribute paths too, `schema_with = crate::openapi::f`).

use crate::lex::Kind;
use crate::rust::RustFile;
use crate::scc;
use std::collections::{BTreeMap, BTreeSet};

/// `from` uses `to`: the path `via` at `from`'s line `line`.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct Edge {
    pub from: String,
    pub to: String,
    pub line: usize,
    pub via: String,
}

/// One target's files, edges and cycles (strongly connected components of more than one file).
pub struct Graph {
    pub root: String,
    pub files: Vec<String>,
    pub edges: Vec<Edge>,
    pub cycles: Vec<Vec<String>>,
}

struct Module {
    file: usize,
    /// Token range of its items, and their brace depth.
    range: (usize, usize),
    depth: usize,
}

struct UseItem {
    segs: Vec<String>,
    alias: Option<String>,
    glob: bool,
    line: usize,
}

impl UseItem {
    fn name(&self) -> Option<&str> {
        let last = self.segs.iter().rev().find(|s| *s != "self")?;
        Some(self.alias.as_deref().unwrap_or(last)).filter(|n| *n != "_")
    }
}

const DEFS: &[&str] = &["fn", "struct", "enum", "trait", "type", "const", "static", "union", "mod"];
/// Follow a re-export at most this many steps.
const MAX_HOPS: usize = 4;

struct Tree<'a> {
    files: &'a [RustFile],
    mods: BTreeMap<Vec<String>, Module>,
    /// Per file: brace depth at each token (a `{` and its `}` share their outer depth).
    depth: BTreeMap<usize, Vec<usize>>,
    defs: BTreeMap<Vec<String>, BTreeSet<String>>,
    /// Per module: its module-level `use` items (what it re-exports).
    uses: BTreeMap<Vec<String>, Vec<UseItem>>,
}

/// The graph of the target rooted at `files[root]`.
pub fn graph(files: &[RustFile], root: usize) -> Graph {
    let tree = Tree::build(files, root);
    let reached: BTreeSet<usize> = tree.mods.values().map(|m| m.file).collect();
    let mut edges = Vec::new();
    for &fi in &reached {
        tree.file_edges(fi, &mut edges);
    }
    edges.sort();
    edges.dedup();
    let names: Vec<String> = reached.iter().map(|&fi| files[fi].path.clone()).collect();
    let index = |p: &str| names.iter().position(|n| n == p);
    let mut adj = vec![Vec::new(); names.len()];
    for e in &edges {
        if let (Some(a), Some(b)) = (index(&e.from), index(&e.to)) {
            adj[a].push(b);
        }
    }
    let cycles = scc::cycles(names.len(), &adj)
        .into_iter()
        .map(|c| c.into_iter().map(|v| names[v].clone()).collect())
        .collect();
    Graph { root: files[root].path.clone(), files: names, edges, cycles }
}

fn dir_of(path: &str) -> &str {
    path.rfind('/').map_or("", |i| &path[..i])
}

impl<'a> Tree<'a> {
    fn build(files: &'a [RustFile], root: usize) -> Tree<'a> {
        let by_path: BTreeMap<&str, usize> =
            files.iter().enumerate().map(|(i, f)| (f.path.as_str(), i)).collect();
        let mut t = Tree {
            files,
            mods: BTreeMap::new(),
            depth: BTreeMap::new(),
            defs: BTreeMap::new(),
            uses: BTreeMap::new(),
        };
        let mut stack = vec![(root, Vec::new(), dir_of(&files[root].path).to_string())];
        while let Some((fi, path, dir)) = stack.pop() {
            if t.depth.contains_key(&fi) {
                continue;
            }
            let f = &files[fi];
            t.depth.insert(fi, depths(f));
            t.mods.insert(path.clone(), Module { file: fi, range: (0, f.toks.len()), depth: 0 });
            for i in 0..f.toks.len() {
                let Some(name) = f.ident(i + 1).filter(|_| f.is(i, "mod")) else { continue };
                let scope = t.scope_of(fi, i);
                let mut child = scope.clone();
                child.push(name.to_string());
                if f.is(i + 2, "{") {
                    let depth = t.depth[&fi][i + 2] + 1;
                    t.mods.insert(child, Module { file: fi, range: (i + 3, f.matching(i + 2)), depth });
                } else if f.is(i + 2, ";") {
                    let sub = std::iter::once(dir.as_str())
                        .chain(scope[path.len()..].iter().map(String::as_str))
                        .chain([name])
                        .filter(|s| !s.is_empty())
                        .collect::<Vec<_>>()
                        .join("/");
                    let found = [format!("{sub}.rs"), format!("{sub}/mod.rs")]
                        .into_iter()
                        .find_map(|p| by_path.get(p.as_str()).copied());
                    if let Some(fj) = found {
                        stack.push((fj, child, sub));
                    }
                }
            }
        }
        t.index_items();
        t
    }

    /// The module whose items include token `i` of file `fi`: the innermost inline module
    /// around it, or the file's own.
    fn scope_of(&self, fi: usize, i: usize) -> Vec<String> {
        self.mods
            .iter()
            .filter(|(_, m)| m.file == fi && m.range.0 <= i && i < m.range.1.max(m.range.0 + 1))
            .max_by_key(|(p, _)| p.len())
            .map(|(p, _)| p.clone())
            .unwrap_or_default()
    }

    /// Fills `defs` and `uses` with every module's module-level items.
    fn index_items(&mut self) {
        let files = self.files;
        let reached: Vec<usize> = self.depth.keys().copied().collect();
        for fi in reached {
            let f = &files[fi];
            for i in 0..f.toks.len() {
                let name = if f.is(i, "macro_rules") && f.is(i + 1, "!") {
                    f.ident(i + 2)
                } else if DEFS.iter().any(|d| f.is(i, d)) {
                    f.ident(i + 1)
                } else if f.is(i, "use") && !f.is(i + 1, "<") {
                    let scope = self.scope_of(fi, i);
                    if self.depth[&fi][i] == self.mods[&scope].depth {
                        let mut items = Vec::new();
                        self.use_tree(fi, i + 1, Vec::new(), &mut items);
                        self.uses.entry(scope).or_default().extend(items);
                    }
                    continue;
                } else {
                    None
                };
                let Some(name) = name else { continue };
                let scope = self.scope_of(fi, i);
                if self.depth[&fi][i] == self.mods[&scope].depth {
                    self.defs.entry(scope).or_default().insert(name.to_string());
                }
            }
        }
    }

    /// Parses the use tree at `i` under `prefix` into `out`; the index after it.
    fn use_tree(&self, fi: usize, mut i: usize, prefix: Vec<String>, out: &mut Vec<UseItem>) -> usize {
        let f = &self.files[fi];
        let mut segs = prefix;
        loop {
            if f.is(i, "{") {
                let close = f.matching(i);
                let mut j = i + 1;
                while j < close {
                    j = self.use_tree(fi, j, segs.clone(), out);
                    if f.is(j, ",") {
                        j += 1;
                    }
                }
                return close + 1;
            }
            let line = f.toks.get(i).map_or(0, |t| t.line);
            if f.is(i, "*") {
                out.push(UseItem { segs, alias: None, glob: true, line });
                return i + 1;
            }
            if f.is(i, "::") && segs.is_empty() {
                segs.push("::".into());
                i += 1;
                continue;
            }
            if f.is(i, "$") && f.is(i + 1, "crate") {
                i += 1;
            }
            let Some(name) = f.ident(i) else { return i + 1 };
            segs.push(name.to_string());
            i += 1;
            if f.is(i, "::") {
                i += 1;
                continue;
            }
            let alias = if f.is(i, "as") { f.ident(i + 1).map(str::to_string) } else { None };
            i += if f.is(i, "as") { 2 } else { 0 };
            out.push(UseItem { segs, alias, glob: false, line });
            return i;
        }
    }

    fn is_child(&self, scope: &[String], name: &str) -> bool {
        let mut p = scope.to_vec();
        p.push(name.to_string());
        self.mods.contains_key(&p)
    }

    /// Walks `segs` from `scope` through the module tree: the module reached and the rest of
    /// the path, or `None` for a path that does not start in this crate.
    fn walk<'s>(&self, scope: &[String], segs: &'s [String]) -> Option<(Vec<String>, &'s [String])> {
        let first = segs.first()?.as_str();
        let (mut cur, mut rest) = match first {
            "crate" => (Vec::new(), &segs[1..]),
            "self" => (scope.to_vec(), &segs[1..]),
            "super" => (scope.to_vec(), segs),
            _ if self.is_child(scope, first) => (scope.to_vec(), segs),
            _ => return None,
        };
        while let Some(s) = rest.first() {
            if s == "super" {
                cur.pop()?;
            } else if s != "self" && self.is_child(&cur, s) {
                cur.push(s.clone());
            } else if s != "self" {
                break;
            }
            rest = &rest[1..];
        }
        Some((cur, rest))
    }

    /// The file that defines what `segs` names from `scope`.
    fn target(&self, scope: &[String], segs: &[String], hops: usize) -> Option<usize> {
        let (module, rest) = self.walk(scope, segs)?;
        match rest.first() {
            None => Some(self.mods[&module].file),
            Some(item) => self.item_file(&module, item, hops),
        }
    }

    /// The file defining `item` as seen from `module`, following its re-exports.
    fn item_file(&self, module: &[String], item: &str, hops: usize) -> Option<usize> {
        let own = self.mods[module].file;
        if hops >= MAX_HOPS || self.defs.get(module).is_some_and(|d| d.contains(item)) {
            return Some(own);
        }
        let uses = self.uses.get(module).map_or(&[][..], Vec::as_slice);
        if let Some(u) = uses.iter().find(|u| !u.glob && u.name() == Some(item)) {
            return self.target(module, &u.segs, hops + 1);
        }
        for g in uses.iter().filter(|u| u.glob) {
            let Some((gm, rest)) = self.walk(module, &g.segs) else { continue };
            let named = |m: &Vec<String>| {
                self.defs.get(m).is_some_and(|d| d.contains(item))
                    || self.uses.get(m).is_some_and(|u| u.iter().any(|u| u.name() == Some(item)))
            };
            if rest.is_empty() && gm != module && named(&gm) {
                return self.item_file(&gm, item, hops + 1);
            }
        }
        Some(own)
    }

    fn push_edge(&self, fi: usize, scope: &[String], segs: &[String], line: usize, out: &mut Vec<Edge>) {
        let Some(to) = self.target(scope, segs, 0).filter(|&to| to != fi) else { return };
        let (from, to) = (self.files[fi].path.clone(), self.files[to].path.clone());
        out.push(Edge { from, to, line, via: segs.join("::") });
    }

    /// The edges of the `use` item at token `at` of file `fi`; the index after its tree. A
    /// re-export (`pub use`, `pub(crate) use`, …) of what a module below its own defines is no
    /// edge: a path through it is followed to the defining file, but exporting a child's item
    /// does not make the parent depend on the child.
    fn use_edges(&self, fi: usize, at: usize, reexport: bool, out: &mut Vec<Edge>) -> usize {
        let mut items = Vec::new();
        let end = self.use_tree(fi, at + 1, Vec::new(), &mut items);
        let scope = self.scope_of(fi, at);
        for u in items {
            let below = |m: &Vec<String>| m.len() > scope.len() && m.starts_with(&scope);
            if reexport && self.walk(&scope, &u.segs).is_some_and(|(m, _)| below(&m)) {
                continue;
            }
            self.push_edge(fi, &scope, &u.segs, u.line, out);
        }
        end
    }

    /// The edges out of file `fi`.
    fn file_edges(&self, fi: usize, out: &mut Vec<Edge>) {
        let f = &self.files[fi];
        let mut i = 0;
        while i < f.toks.len() {
            let line = f.toks[i].line;
            if f.is(i, "use") && !f.is(i + 1, "<") {
                i = self.use_edges(fi, i, false, out);
            } else if f.is(i, "pub") {
                let after = if f.is(i + 1, "(") { f.matching(i + 1) + 1 } else { i + 1 };
                let reexport = f.is(after, "use") && !f.is(after + 1, "<");
                i = if reexport { self.use_edges(fi, after, true, out) } else { after };
            } else if f.is(i, "mod") {
                i += 2;
            } else if let Some((segs, end)) = self.path_at(fi, i) {
                self.push_edge(fi, &self.scope_of(fi, i), &segs, line, out);
                i = end;
            } else {
                if let Some(segs) = path_string(f.text(i)).filter(|_| f.toks[i].kind == Kind::Str) {
                    self.push_edge(fi, &self.scope_of(fi, i), &segs, line, out);
                }
                i += 1;
            }
        }
    }

    /// A path starting at token `i` that may name an item of this crate: its segments and the
    /// index after it.
    fn path_at(&self, fi: usize, i: usize) -> Option<(Vec<String>, usize)> {
        let f = &self.files[fi];
        if i > 0 && (f.is(i - 1, "::") || f.is(i - 1, ".")) {
            return None;
        }
        let start = if f.is(i, "$") && f.is(i + 1, "crate") { i + 1 } else { i };
        let first = f.ident(start)?;
        if !f.is(start + 1, "::") {
            return None;
        }
        let ours = matches!(first, "crate" | "self" | "super") || self.is_child(&self.scope_of(fi, i), first);
        if !ours {
            return None;
        }
        let mut segs = vec![first.to_string()];
        let mut j = start + 1;
        while f.is(j, "::") {
            let Some(s) = f.ident(j + 1) else { break };
            segs.push(s.to_string());
            j += 2;
        }
        Some((segs, j))
    }
}

/// The segments of a string literal that is a whole `crate::`/`self::`/`super::` path.
fn path_string(lit: &str) -> Option<Vec<String>> {
    let inner = lit.strip_prefix('"')?.strip_suffix('"')?;
    let segs: Vec<String> = inner.split("::").map(str::to_string).collect();
    let ident = |s: &String| !s.is_empty() && s.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
    (segs.len() > 1 && matches!(segs[0].as_str(), "crate" | "self" | "super") && segs.iter().all(ident))
        .then_some(segs)
}

fn depths(f: &RustFile) -> Vec<usize> {
    let mut d = 0usize;
    f.toks
        .iter()
        .enumerate()
        .map(|(i, _)| {
            if f.is(i, "}") {
                d = d.saturating_sub(1);
            }
            let here = d;
            if f.is(i, "{") {
                d += 1;
            }
            here
        })
        .collect()
}
