//! The sources the checks read, as an in-memory set of `(path, text)` (loaded from the
//! repository, or written by a probe), and what they are: the workspace's crates with their
//! production files and module graphs, the CDK TypeScript and the console's JavaScript.

use crate::modgraph::{self, Graph};
use crate::rust::{FnSpan, RustFile};
use crate::ts::TsFile;
use crate::tsfn;
use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

/// The CDK library: every `.ts` file under it (declarations `.d.ts` left out).
pub const TS_DIR: &str = "infra/lib/";
/// The API's web console: every `.js` file under it.
pub const JS_DIR: &str = "functions/api/console/";

/// Repository-relative path (with `/`) to text.
#[derive(Default)]
pub struct Sources {
    pub files: BTreeMap<String, String>,
}

impl Sources {
    pub fn from_pairs(pairs: &[(&str, &str)]) -> Sources {
        Sources { files: pairs.iter().map(|(p, t)| (p.to_string(), t.to_string())).collect() }
    }

    /// Reads the root `Cargo.toml`, every file a member crate's directory holds that the checks
    /// read (`Cargo.toml`, `.rs`), and the TypeScript and JavaScript of [`TS_DIR`], [`JS_DIR`].
    pub fn load(root: &Path) -> std::io::Result<Sources> {
        let mut s = Sources::default();
        let manifest = std::fs::read_to_string(root.join("Cargo.toml"))?;
        for dir in members(&manifest) {
            s.read_dir(root, &dir, &|p| p.ends_with(".rs") || p.ends_with("/Cargo.toml"))?;
        }
        s.files.insert("Cargo.toml".into(), manifest);
        s.read_dir(root, TS_DIR.trim_end_matches('/'), &|p| p.ends_with(".ts") && !p.ends_with(".d.ts"))?;
        s.read_dir(root, JS_DIR.trim_end_matches('/'), &|p| p.ends_with(".js"))?;
        Ok(s)
    }

    fn read_dir(&mut self, root: &Path, rel: &str, keep: &dyn Fn(&str) -> bool) -> std::io::Result<()> {
        let Ok(entries) = std::fs::read_dir(root.join(rel)) else { return Ok(()) };
        for entry in entries {
            let entry = entry?;
            let name = entry.file_name().to_string_lossy().to_string();
            let path = format!("{rel}/{name}");
            if entry.file_type()?.is_dir() {
                // A build directory holds a `CACHEDIR.TAG`; a source folder may be called `target`.
                let build = name == "target" && root.join(&path).join("CACHEDIR.TAG").exists();
                if !(name.starts_with('.') || name == "node_modules" || build) {
                    self.read_dir(root, &path, keep)?;
                }
            } else if keep(&path) {
                self.files.insert(path.clone(), std::fs::read_to_string(root.join(&path))?);
            }
        }
        Ok(())
    }
}

/// The `members` of a workspace manifest.
pub fn members(manifest: &str) -> Vec<String> {
    let Some(start) = manifest.find("members") else { return Vec::new() };
    let rest = &manifest[start..];
    let list = &rest[rest.find('[').unwrap_or(0)..rest.find(']').unwrap_or(rest.len())];
    list.split('"').skip(1).step_by(2).map(str::to_string).collect()
}

/// The `[package]` name of a crate manifest.
pub fn package_name(manifest: &str) -> Option<String> {
    let package = &manifest[manifest.find("[package]")?..];
    let line = package.lines().find(|l| l.trim_start().starts_with("name") && l.contains('='))?;
    Some(line.split('"').nth(1)?.to_string())
}

/// One workspace crate.
pub struct Package {
    pub name: String,
    pub dir: String,
    /// Its production files: under `src/`, reached from a target root by declarations that are
    /// not under `#[cfg(test)]`.
    pub files: Vec<RustFile>,
    /// One module graph per target (`lib.rs`, `main.rs`, `bin/*.rs`).
    pub graphs: Vec<Graph>,
    /// Files under `src/` that no root reaches (test-only modules, or not declared at all).
    pub unreached: Vec<String>,
}

impl Package {
    /// `path` relative to the crate's `src/` (unchanged if it is not under it).
    pub fn rel<'a>(&self, path: &'a str) -> &'a str {
        path.strip_prefix(&self.dir).and_then(|p| p.strip_prefix("/src/")).unwrap_or(path)
    }

    /// Every cycle of every target, each once.
    pub fn cycles(&self) -> Vec<(&Graph, &Vec<String>)> {
        let mut seen = BTreeSet::new();
        let mut out = Vec::new();
        for g in &self.graphs {
            for c in &g.cycles {
                if seen.insert(c.clone()) {
                    out.push((g, c));
                }
            }
        }
        out
    }
}

/// A function of a file of a crate (`infra` for the CDK).
#[derive(Clone, Debug)]
pub struct FnRecord {
    pub package: String,
    pub file: String,
    pub span: FnSpan,
}

/// The sources sorted into what the checks measure.
pub struct Workspace {
    pub packages: Vec<Package>,
    pub ts: Vec<TsFile>,
    pub js: Vec<TsFile>,
}

/// Sorts `src` into crates, CDK TypeScript and console JavaScript.
pub fn analyse(src: &Sources) -> Workspace {
    let members = src.files.get("Cargo.toml").map(|m| members(m)).unwrap_or_default();
    let packages = members.iter().map(|dir| package(src, dir)).collect();
    let under = |dir: &str, ext: &str| -> Vec<TsFile> {
        let files = src.files.iter().filter(|(p, _)| p.starts_with(dir) && p.ends_with(ext));
        files.filter(|(p, _)| !p.ends_with(".d.ts")).map(|(p, t)| TsFile::new(p, t)).collect()
    };
    Workspace { packages, ts: under(TS_DIR, ".ts"), js: under(JS_DIR, ".js") }
}

fn package(src: &Sources, dir: &str) -> Package {
    let manifest = src.files.get(&format!("{dir}/Cargo.toml"));
    let name = manifest.and_then(|m| package_name(m)).unwrap_or_else(|| dir.to_string());
    let prefix = format!("{dir}/src/");
    let all: Vec<RustFile> = src
        .files
        .iter()
        .filter(|(p, _)| p.starts_with(&prefix) && p.ends_with(".rs"))
        .map(|(p, t)| RustFile::new(p, t))
        .collect();
    let is_root = |p: &str| {
        let rel = &p[prefix.len()..];
        let bin = rel.strip_prefix("bin/");
        rel == "lib.rs"
            || rel == "main.rs"
            || bin.is_some_and(|b| !b.contains('/') || b.matches('/').count() == 1 && b.ends_with("/main.rs"))
    };
    let graphs: Vec<Graph> =
        (0..all.len()).filter(|&i| is_root(&all[i].path)).map(|i| modgraph::graph(&all, i)).collect();
    let reached: BTreeSet<&str> = graphs.iter().flat_map(|g| g.files.iter().map(String::as_str)).collect();
    let unreached =
        all.iter().filter(|f| !reached.contains(f.path.as_str())).map(|f| f.path.clone()).collect();
    let reached: BTreeSet<String> = reached.into_iter().map(str::to_string).collect();
    let files = all.into_iter().filter(|f| reached.contains(&f.path)).collect();
    Package { name, dir: dir.to_string(), files, graphs, unreached }
}

impl Workspace {
    pub fn package(&self, name: &str) -> Option<&Package> {
        self.packages.iter().find(|p| p.name == name)
    }

    /// Every function of the production Rust.
    pub fn rust_functions(&self) -> Vec<FnRecord> {
        let mut out = Vec::new();
        for p in &self.packages {
            for f in &p.files {
                for span in f.functions() {
                    out.push(FnRecord { package: p.name.clone(), file: f.path.clone(), span });
                }
            }
        }
        out
    }

    /// Every function of the CDK TypeScript (package `infra`).
    pub fn ts_functions(&self) -> Vec<FnRecord> {
        let mut out = Vec::new();
        for f in &self.ts {
            for span in tsfn::functions(f) {
                out.push(FnRecord { package: "infra".into(), file: f.path.clone(), span });
            }
        }
        out
    }

    /// Every production file with its code lines: Rust, then TypeScript, then JavaScript.
    pub fn file_sizes(&self) -> Vec<(String, usize)> {
        let rust =
            self.packages.iter().flat_map(|p| p.files.iter().map(|f| (f.path.clone(), f.code_lines())));
        let web = self.ts.iter().chain(&self.js).map(|f| (f.path.clone(), f.code_lines()));
        rust.chain(web).collect()
    }
}
