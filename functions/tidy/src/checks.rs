//! The checks, as pure functions from what was measured to a list of violations (empty when
//! the tree passes). Each message names the file, what was counted and the limit.

use crate::lex::{self, Kind};
use crate::modgraph::{Edge, Graph};
use crate::ts;
use crate::workspace::{FnRecord, Package, Sources, Workspace};
use std::collections::{BTreeMap, BTreeSet};

/// Files over `limit` code lines. A file in `tolerated` may stay over it for now, up to its
/// ceiling, which only goes down: a file that shrank must have its ceiling lowered, and one back
/// under the limit must leave the list.
pub fn long_files(ws: &Workspace, limit: usize, tolerated: &[(&str, usize)]) -> Vec<String> {
    let sizes = ws.file_sizes();
    let mut out = Vec::new();
    for (path, n) in &sizes {
        match tolerated.iter().find(|(p, _)| p == path) {
            None if *n > limit => out.push(format!("{path}: {n} code lines, over the limit of {limit}")),
            Some((_, ceiling)) if n > ceiling => {
                out.push(format!("{path}: {n} code lines, over its tolerated ceiling of {ceiling}"))
            }
            Some(_) if *n <= limit => out.push(format!(
                "{path}: {n} code lines, within the limit of {limit}: remove it from the tolerated files"
            )),
            Some((_, ceiling)) if n < ceiling => {
                out.push(format!("{path}: {n} code lines: lower its tolerated ceiling from {ceiling} to {n}"))
            }
            _ => {}
        }
    }
    for (path, _) in tolerated.iter().filter(|(p, _)| !sizes.iter().any(|(s, _)| s == p)) {
        out.push(format!("{path}: tolerated over the limit but not found: remove it from the list"));
    }
    out
}

/// The longest function of `fns`, if any.
pub fn longest<'a>(fns: impl IntoIterator<Item = &'a FnRecord>) -> Option<&'a FnRecord> {
    fns.into_iter().max_by_key(|f| f.span.code_lines)
}

/// Functions over `max` code lines, and the ratchet: `max` above the longest function must be
/// lowered to it.
pub fn fn_ratchet<'a>(
    fns: impl IntoIterator<Item = &'a FnRecord>,
    max: usize,
    constant: &str,
) -> Vec<String> {
    let fns: Vec<&FnRecord> = fns.into_iter().collect();
    let mut out: Vec<String> = fns
        .iter()
        .filter(|f| f.span.code_lines > max)
        .map(|f| {
            let (file, line, name, n) = (&f.file, f.span.line, &f.span.name, f.span.code_lines);
            format!("{file}:{line}: fn {name} is {n} code lines, over {constant} = {max}")
        })
        .collect();
    let top = longest(fns.iter().copied()).map_or(0, |f| f.span.code_lines);
    if top < max {
        out.push(format!("{constant} must be lowered to {top} (the longest function is {top} code lines)"));
    }
    out
}

/// Every workspace crate belongs to exactly one of `groups`.
pub fn ungrouped(ws: &Workspace, groups: &[(&str, &[&str])]) -> Vec<String> {
    let mut out = Vec::new();
    for p in &ws.packages {
        let of: Vec<&str> =
            groups.iter().filter(|(_, g)| g.contains(&p.name.as_str())).map(|(n, _)| *n).collect();
        if of.len() != 1 {
            out.push(format!("{} is in {} groups {of:?}: put it in exactly one", p.name, of.len()));
        }
    }
    for (group, names) in groups {
        for n in names.iter().filter(|n| ws.package(n).is_none()) {
            out.push(format!("{group} lists {n}, which is not a workspace crate"));
        }
    }
    out
}

/// A tolerated module cycle: a crate and the files of one strongly connected component of its
/// module graph, as paths relative to the crate's `src/`, sorted.
pub type KnownCycle<'a> = (&'a str, &'a [&'a str]);

/// Every crate's cycles today as [`KnownCycle`]s would list them: the crate, then the component's
/// files relative to its `src/`, sorted; in order of crate name, then files.
pub fn current_cycles(ws: &Workspace) -> Vec<(String, Vec<String>)> {
    let mut out = Vec::new();
    for p in &ws.packages {
        for (_, c) in p.cycles() {
            let mut files: Vec<String> = c.iter().map(|f| p.rel(f).to_string()).collect();
            files.sort();
            out.push((p.name.clone(), files));
        }
    }
    out.sort();
    out
}

/// One entry of `KNOWN_CYCLES` as a line of Rust (`indent` before it), as the list holds it.
pub fn cycle_entry(indent: &str, krate: &str, files: &[String]) -> String {
    let files: Vec<String> = files.iter().map(|f| format!("{f:?}")).collect();
    format!("{indent}({krate:?}, &[{}]),\n", files.join(", "))
}

/// Module cycles against the exact list of tolerated ones, a ratchet: a cycle passes only if it
/// is one of `known` or lies inside one (a new cycle, in any crate, and a tolerated one grown by
/// a file fail, naming the edges that close it), and each entry of `known` must still be exactly
/// one of today's cycles (one that shrank, split or is gone must be replaced or removed; the
/// message gives the new entry).
pub fn cycles(ws: &Workspace, known: &[KnownCycle]) -> Vec<String> {
    let mut out = Vec::new();
    for p in &ws.packages {
        let listed: Vec<BTreeSet<&str>> =
            known.iter().filter(|(k, _)| *k == p.name).map(|(_, f)| f.iter().copied().collect()).collect();
        let current: Vec<(&Graph, BTreeSet<&str>)> =
            p.cycles().into_iter().map(|(g, c)| (g, c.iter().map(|f| p.rel(f)).collect())).collect();
        for (g, c) in &current {
            if listed.iter().any(|l| c.is_subset(l)) {
                continue;
            }
            let files: Vec<&str> = c.iter().copied().collect();
            let grown = listed.iter().filter(|l| !l.is_disjoint(c)).max_by_key(|l| l.intersection(c).count());
            let what = match grown {
                Some(l) => {
                    let added: Vec<&str> = c.difference(l).copied().collect();
                    format!("grows a tolerated cycle by {}", added.join(", "))
                }
                None => "a new cycle".to_string(),
            };
            let closing = edges_outside(g, p, c, &listed);
            out.push(format!(
                "{}: module cycle of {} files ({what}): {}\n  edges not inside a tolerated cycle:\n{closing}",
                p.name,
                c.len(),
                files.join(", ")
            ));
        }
        for l in &listed {
            if current.iter().any(|(_, c)| c == l)
                || current.iter().any(|(_, c)| !c.is_disjoint(l) && !c.is_subset(l))
            {
                continue;
            }
            let old: Vec<String> = l.iter().map(|f| f.to_string()).collect();
            let entry = cycle_entry("    ", &p.name, &old);
            let parts: Vec<Vec<String>> = current
                .iter()
                .filter(|(_, c)| c.is_subset(l))
                .map(|(_, c)| c.iter().map(|f| f.to_string()).collect())
                .collect();
            if parts.is_empty() {
                out.push(format!(
                    "KNOWN_CYCLES: this cycle of {} is gone, remove its entry:\n{entry}",
                    p.name
                ));
            } else {
                let new: String = parts.iter().map(|c| cycle_entry("    ", &p.name, c)).collect();
                out.push(format!(
                    "KNOWN_CYCLES: this cycle of {} has shrunk, replace its entry\n{entry}  by\n{new}",
                    p.name
                ));
            }
        }
    }
    for (n, files) in known.iter().filter(|(n, _)| ws.package(n).is_none()) {
        out.push(format!("KNOWN_CYCLES lists {n} ({}), which is not a workspace crate", files.join(", ")));
    }
    out
}

/// The edges inside cycle `c` (files relative to `src/`) of graph `g` whose two ends are not in
/// one tolerated cycle of `listed`, one line per pair of files as [`describe_cycles`] writes them.
fn edges_outside(g: &Graph, p: &Package, c: &BTreeSet<&str>, listed: &[BTreeSet<&str>]) -> String {
    let closes = |e: &&Edge| {
        let (from, to) = (p.rel(&e.from), p.rel(&e.to));
        c.contains(from) && c.contains(to) && !listed.iter().any(|l| l.contains(from) && l.contains(to))
    };
    edge_lines(g.edges.iter().filter(closes))
}

/// `A uses B via path (line)`, one line per pair of files with the first path and how many more.
fn edge_lines<'a>(edges: impl Iterator<Item = &'a Edge>) -> String {
    let mut pairs: BTreeMap<(&str, &str), Vec<&Edge>> = BTreeMap::new();
    for e in edges {
        pairs.entry((&e.from, &e.to)).or_default().push(e);
    }
    let mut s = String::new();
    for ((from, to), es) in pairs {
        let more = if es.len() > 1 { format!(" (+{} more)", es.len() - 1) } else { String::new() };
        s += &format!("    {from}:{} uses {to} via `{}`{more}\n", es[0].line, es[0].via);
    }
    s
}

/// Each cycle of crate `name`: its files (relative to `src/`), then the edges inside it.
pub fn describe_cycles(ws: &Workspace, name: &str) -> String {
    let Some(p) = ws.package(name) else { return String::new() };
    let mut s = String::new();
    for (g, c) in p.cycles() {
        let mut files: Vec<&str> = c.iter().map(|f| p.rel(f)).collect();
        files.sort();
        s += &format!("  {} files (target {}): {}\n", c.len(), p.rel(&g.root), files.join(", "));
        s += &edge_lines(g.edges.iter().filter(|e| c.contains(&e.from) && c.contains(&e.to)));
    }
    s
}

/// FNV-1a 64's offset basis and prime, and SplitMix64's increment and multipliers, as hex digits
/// (written as text so that this file holds no copy of them).
const HASH_CONSTANTS: &[&str] =
    &["cbf29ce484222325", "100000001b3", "9e3779b97f4a7c15", "bf58476d1ce4e5b9", "94d049bb133111eb"];
/// The one place the stable hashes may be written.
pub const HASH_HOME: &str = "functions/hash/src/";

/// Every file outside [`HASH_HOME`] whose code (not comments) writes a stable-hash constant,
/// with the lines.
pub fn hash_copy_files(src: &Sources) -> BTreeMap<String, Vec<usize>> {
    let wanted: Vec<u128> = HASH_CONSTANTS.iter().filter_map(|h| u128::from_str_radix(h, 16).ok()).collect();
    let mut out: BTreeMap<String, Vec<usize>> = BTreeMap::new();
    for (path, text) in src.files.iter().filter(|(p, _)| !p.starts_with(HASH_HOME)) {
        let numbers: Vec<(usize, &str)> = if path.ends_with(".rs") {
            let toks = lex::tokens(text);
            toks.iter().filter(|t| t.kind == Kind::Num).map(|t| (t.line, t.text(text))).collect()
        } else if path.ends_with(".ts") || path.ends_with(".js") {
            let f = ts::TsFile::new(path, text);
            let nums = f.toks.iter().filter(|t| t.kind == ts::Kind::Num);
            nums.map(|t| (t.line, &text[t.start..t.end])).collect()
        } else {
            continue;
        };
        let mut lines: Vec<usize> = numbers
            .into_iter()
            .filter(|(_, n)| lex::int_value(n).is_some_and(|v| wanted.contains(&v)))
            .map(|(l, _)| l)
            .collect();
        lines.dedup();
        if !lines.is_empty() {
            out.insert(path.clone(), lines);
        }
    }
    out
}

/// Copies of the stable hashes outside [`HASH_HOME`], except in the files of `known`, which must
/// still hold one (a file whose copy is gone must leave the list).
pub fn hash_copies(src: &Sources, known: &[&str]) -> Vec<String> {
    let found = hash_copy_files(src);
    let mut out = Vec::new();
    for (path, lines) in &found {
        if !known.contains(&path.as_str()) {
            out.push(format!(
                "{path} (lines {lines:?}) writes a stable-hash constant: use sundial-hash ({HASH_HOME})"
            ));
        }
    }
    for k in known.iter().filter(|k| !found.contains_key(**k)) {
        out.push(format!("{k} holds no stable-hash copy any more: remove it from KNOWN_HASH_COPIES"));
    }
    out
}
