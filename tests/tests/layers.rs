//! The crate graph is the architecture (docs/architecture.md): this test reads it from
//! `cargo metadata` and fails when a crate imports one above it, when a pure crate (or the
//! typed client) pulls an AWS SDK service crate, or when a Lambda binary links the offline
//! tooling. The compiler already forbids cycles; this holds the *order* of the layers. It also
//! holds the crate graph drawn in docs/architecture.md to the one the manifests declare.

use serde_json::Value;
use std::collections::{BTreeMap, BTreeSet};
use std::process::Command;

/// Layer of each workspace crate: a crate may depend (normal dependencies) only on crates of a
/// strictly lower layer.
const LAYERS: &[(&str, u32)] = &[
    ("sundial-hash", 0),
    ("sundial-throughput", 0),
    // The planted-bug switch: compiled to nothing unless a build turns its `on` feature on.
    ("sundial-mutants", 0),
    ("sundial-simaws", 1),
    ("sundial-schedule", 1),
    ("sundial-model", 2),
    ("sundial-capacity", 2),
    ("sundial-api-types", 3),
    ("sundial-store", 3),
    ("sundial-core", 4),
    ("sundial-idempotency", 4),
    ("sundial-client", 5),
    ("sundial-testkit", 5),
    ("sundial-tick", 6),
    ("sundial-worker", 6),
    ("sundial-api", 7),
    ("sundial-sim", 7),
    ("sundial-testfn", 6),
    ("sundial-chaos", 8),
    ("sundial-cli", 8),
    ("sundial-tests", 9),
    ("settlement-example", 9),
    // Tooling without sundial dependencies, at the top so that nothing may depend on it.
    ("sundial-tidy", 9),
];

/// Crates that must compile without any AWS SDK service crate (their whole normal closure).
const NO_AWS_SDK: &[&str] = &[
    "sundial-hash",
    "sundial-mutants",
    "sundial-throughput",
    "sundial-schedule",
    "sundial-model",
    "sundial-capacity",
    "sundial-api-types",
    "sundial-client",
];

/// The Lambda binaries, which must not link the offline tooling or the test instrumentation.
const LAMBDAS: &[&str] = &["sundial-tick", "sundial-worker", "sundial-api"];

struct Graph {
    /// package id -> name
    names: BTreeMap<String, String>,
    /// package id -> ids of its normal (non-dev, non-build) dependencies
    normal: BTreeMap<String, Vec<String>>,
    workspace: BTreeSet<String>,
    /// package id -> names of its optional dependencies (off unless a feature asks for them;
    /// the metadata's resolve unifies features over the whole workspace, so a feature the CLI
    /// turns on would otherwise count against the client)
    optional: BTreeMap<String, BTreeSet<String>>,
    /// Every normal dependency a workspace crate's manifest declares on another workspace crate:
    /// (crate, dependency, optional).
    declared: BTreeSet<(String, String, bool)>,
}

fn graph() -> Graph {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    // This machine's platform only: the other platforms' crates are not downloaded, and
    // `--offline` keeps the test off the network.
    let rustc = Command::new("rustc").arg("-vV").output().unwrap_or_else(|e| panic!("rustc -vV: {e}"));
    let host = String::from_utf8_lossy(&rustc.stdout)
        .lines()
        .find_map(|l| l.strip_prefix("host: ").map(str::to_string))
        .unwrap_or_else(|| panic!("rustc -vV names no host"));
    let out = Command::new(cargo)
        .current_dir(&root)
        .args(["metadata", "--format-version", "1", "--offline", "--filter-platform", &host])
        .output()
        .unwrap_or_else(|e| panic!("cargo metadata: {e}"));
    assert!(out.status.success(), "cargo metadata: {}", String::from_utf8_lossy(&out.stderr));
    let v: Value = serde_json::from_slice(&out.stdout).unwrap_or_else(|e| panic!("metadata JSON: {e}"));
    let names = v["packages"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|p| {
            (
                p["id"].as_str().unwrap_or_default().to_string(),
                p["name"].as_str().unwrap_or_default().to_string(),
            )
        })
        .collect();
    let optional = v["packages"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|p| {
            let opt = p["dependencies"]
                .as_array()
                .into_iter()
                .flatten()
                .filter(|d| d["optional"].as_bool() == Some(true))
                .filter_map(|d| d["name"].as_str().map(str::to_string))
                .collect();
            (p["id"].as_str().unwrap_or_default().to_string(), opt)
        })
        .collect();
    let workspace: BTreeSet<String> = v["workspace_members"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|m| m.as_str().map(str::to_string))
        .collect();
    let members: BTreeSet<String> = v["packages"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|p| p["id"].as_str().is_some_and(|id| workspace.contains(id)))
        .filter_map(|p| p["name"].as_str().map(str::to_string))
        .collect();
    let declared = v["packages"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|p| p["name"].as_str().is_some_and(|n| members.contains(n)))
        .flat_map(|p| {
            let name = p["name"].as_str().unwrap_or_default().to_string();
            p["dependencies"]
                .as_array()
                .into_iter()
                .flatten()
                .filter(|d| d["kind"].is_null())
                .filter(|d| d["name"].as_str().is_some_and(|n| members.contains(n)))
                .map(move |d| {
                    let dep = d["name"].as_str().unwrap_or_default().to_string();
                    (name.clone(), dep, d["optional"].as_bool() == Some(true))
                })
        })
        .collect();
    let mut normal = BTreeMap::new();
    for node in v["resolve"]["nodes"].as_array().into_iter().flatten() {
        let deps = node["deps"]
            .as_array()
            .into_iter()
            .flatten()
            .filter(|d| d["dep_kinds"].as_array().into_iter().flatten().any(|k| k["kind"].is_null()))
            .filter_map(|d| d["pkg"].as_str().map(str::to_string))
            .collect();
        normal.insert(node["id"].as_str().unwrap_or_default().to_string(), deps);
    }
    Graph { names, normal, workspace, optional, declared }
}

impl Graph {
    fn id_of(&self, name: &str) -> String {
        self.workspace
            .iter()
            .find(|id| self.names.get(*id).map(String::as_str) == Some(name))
            .unwrap_or_else(|| panic!("{name} is not a workspace member"))
            .clone()
    }

    /// Names of every crate in `name`'s normal-dependency closure with its default features
    /// (its own optional dependencies left out).
    fn closure(&self, name: &str) -> BTreeSet<String> {
        let root = self.id_of(name);
        let skip = self.optional.get(&root).cloned().unwrap_or_default();
        let mut seen = BTreeSet::new();
        let mut stack = vec![root.clone()];
        while let Some(id) = stack.pop() {
            for d in self.normal.get(&id).into_iter().flatten() {
                if id == root && skip.contains(&self.names[d]) {
                    continue;
                }
                if seen.insert(d.clone()) {
                    stack.push(d.clone());
                }
            }
        }
        seen.into_iter().filter_map(|id| self.names.get(&id).cloned()).collect()
    }
}

fn layer(name: &str) -> Option<u32> {
    LAYERS.iter().find(|(n, _)| *n == name).map(|(_, l)| *l)
}

#[test]
fn every_workspace_crate_has_a_layer_and_imports_only_lower_ones() {
    let g = graph();
    let mut wrong = Vec::new();
    for id in &g.workspace {
        let name = &g.names[id];
        let Some(own) = layer(name) else {
            wrong.push(format!("{name} has no layer in tests/tests/layers.rs (and docs/architecture.md)"));
            continue;
        };
        for d in g.normal.get(id).into_iter().flatten() {
            let dep = &g.names[d];
            if let Some(l) = layer(dep) {
                if l >= own {
                    wrong.push(format!("{name} (layer {own}) imports {dep} (layer {l})"));
                }
            }
        }
    }
    assert!(wrong.is_empty(), "layering broken:\n{}", wrong.join("\n"));
}

#[test]
fn the_pure_crates_and_the_client_compile_no_aws_sdk() {
    let g = graph();
    for name in NO_AWS_SDK {
        let sdk: Vec<String> = g.closure(name).into_iter().filter(|n| n.starts_with("aws-sdk-")).collect();
        assert!(sdk.is_empty(), "{name} pulls {sdk:?}");
    }
    // The model is pure, and the planes are not: the check can tell them apart.
    assert!(g.closure("sundial-core").contains("aws-sdk-dynamodb"));
    assert!(g.closure("sundial-cli").contains("aws-config"), "the CLI turns the credential chain on");
}

#[test]
fn no_lambda_links_the_offline_tooling() {
    let g = graph();
    for name in LAMBDAS {
        let c = g.closure(name);
        assert!(!c.contains("sundial-capacity"), "{name} links the capacity model");
        assert!(!c.contains("sundial-testkit"), "{name} links the test instrumentation by default");
        assert!(!c.contains("sundial-chaos") && !c.contains("sundial-tests"), "{name} links test tooling");
        assert!(!c.contains("sundial-simaws"), "{name} links the simulated AWS");
        assert!(!c.contains("sundial-sim"), "{name} links the simulator");
    }
    // The simulated AWS sits at the bottom: the SDK and the stable hashes, nothing of Sundial.
    let sim: Vec<String> =
        g.closure("sundial-simaws").into_iter().filter(|c| c.starts_with("sundial-")).collect();
    assert_eq!(sim, ["sundial-hash"], "sundial-simaws imports Sundial crates");
    assert!(g.closure("sundial-cli").contains("sundial-capacity"));
    // The instrumentation is there to be linked: by the tests, and by a Lambda built with
    // `iam-record` (an optional dependency, so absent from its default closure).
    assert!(g.closure("sundial-tests").contains("sundial-testkit"));
    for name in LAMBDAS {
        assert!(
            g.optional.get(&g.id_of(name)).is_some_and(|o| o.contains("sundial-testkit")),
            "{name}: iam-record"
        );
    }
}

/// The crate graph of docs/architecture.md: its nodes' labels and its arrows as (from, to,
/// dotted), by label. `a[sundial-a] --> b` is an arrow, `a -. feature .-> b` a dotted one, and a
/// node is named by its label wherever one of its lines gives it.
fn drawn_graph() -> (BTreeSet<String>, BTreeSet<(String, String, bool)>) {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../docs/architecture.md");
    let doc = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let block = doc
        .split("```mermaid")
        .nth(1)
        .and_then(|rest| rest.split("```").next())
        .unwrap_or_else(|| panic!("docs/architecture.md has no mermaid block"));
    let mut labels: BTreeMap<String, String> = BTreeMap::new();
    let mut node = |s: &str| -> String {
        let s = s.trim();
        match s.split_once('[') {
            Some((id, label)) => {
                let label = label.trim_end_matches(']').to_string();
                labels.insert(id.trim().to_string(), label);
                id.trim().to_string()
            }
            None => s.to_string(),
        }
    };
    let mut ids = BTreeSet::new();
    let mut arrows = Vec::new();
    for line in block.lines().map(str::trim) {
        if line.is_empty() || line.starts_with("graph ") || line.starts_with("%%") {
            continue;
        }
        let edge = if let Some((from, to)) = line.split_once("-->") {
            Some((from, to, false))
        } else if let (Some((from, _)), Some((_, to))) = (line.split_once("-."), line.split_once(".->")) {
            Some((from, to, true))
        } else {
            None
        };
        match edge {
            Some((from, to, dotted)) => {
                let (from, to) = (node(from), node(to));
                ids.extend([from.clone(), to.clone()]);
                arrows.push((from, to, dotted));
            }
            None => {
                ids.insert(node(line));
            }
        }
    }
    let label = |id: &String| {
        labels.get(id).cloned().unwrap_or_else(|| panic!("docs/architecture.md: node {id} has no [label]"))
    };
    let nodes = ids.iter().map(label).collect();
    let arrows = arrows.iter().map(|(f, t, d)| (label(f), label(t), *d)).collect();
    (nodes, arrows)
}

#[test]
fn the_architecture_doc_draws_the_declared_graph() {
    let g = graph();
    let (nodes, drawn) = drawn_graph();
    let show = |(from, to, optional): &(String, String, bool)| {
        if *optional {
            format!("{from} -. optional .-> {to}")
        } else {
            format!("{from} --> {to}")
        }
    };
    let mut wrong: Vec<String> = g
        .declared
        .difference(&drawn)
        .map(|e| format!("missing from the doc: {}", show(e)))
        .chain(drawn.difference(&g.declared).map(|e| format!("not a dependency: {}", show(e))))
        .collect();
    for id in &g.workspace {
        if !nodes.contains(&g.names[id]) {
            wrong.push(format!("missing from the doc: the crate {}", g.names[id]));
        }
    }
    assert!(
        wrong.is_empty(),
        "docs/architecture.md's crate graph differs from the manifests (normal dependencies, \
         dotted when optional):\n{}",
        wrong.join("\n")
    );
}
