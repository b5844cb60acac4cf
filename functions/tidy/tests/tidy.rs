//! Tidy on the real tree: reads the repository's sources and holds the limits of the crate's
//! header. Every limit here only goes down: each constant equals today's worst case, and each
//! list of known exceptions fails once an entry is no longer needed.
//!
//! `cargo test -p sundial-tidy -- --nocapture` prints the figures (per crate: files, code lines,
//! files over 500 code lines, functions over 70, module cycles with their edges; the longest
//! functions; hash copies; hand-written ARN splitters).

use std::path::Path;
use std::sync::OnceLock;
use sundial_tidy::workspace::{self, FnRecord, Sources, Workspace};
use sundial_tidy::{checks, report};

/// Code lines (comments and blank lines left out) a production file may hold: Rust `src/`
/// without test code, the CDK's `infra/lib/**/*.ts`, the console's `functions/api/console/**/*.js`.
const MAX_FILE_CODE_LINES: usize = 700;

/// Files over [`MAX_FILE_CODE_LINES`] today, each with its code lines as a ceiling that only
/// goes down; an entry leaves the list once its file is within the limit.
const KNOWN_LONG_FILES: &[(&str, usize)] = &[("infra/lib/sundial-scheduler.ts", 1568)];

/// The longest function (code lines, `fn` line to closing brace) of the shipped crates. Lower it
/// when the longest function shrinks; the test says when and to what.
const MAX_FN_LINES_SHIPPED: usize = 147;
/// The same for the tooling: simulators, chaos, test kit and harness, the example, tidy.
const MAX_FN_LINES_TOOLING: usize = 230;
/// The same for the CDK TypeScript (`infra/lib`): functions, methods, constructors and arrow
/// functions bound to a name.
const MAX_FN_LINES_CDK: usize = 421;

/// The crates whose code ships in the scheduler, its API client and its toolkit.
const SHIPPED: &[&str] = &[
    "sundial-hash",
    "sundial-schedule",
    "sundial-model",
    "sundial-store",
    "sundial-throughput",
    "sundial-capacity",
    "sundial-core",
    "sundial-tick",
    "sundial-worker",
    "sundial-api",
    "sundial-api-types",
    "sundial-client",
    "sundial-cli",
    "sundial-idempotency",
];

/// The crates that test, simulate or show the shipped ones.
const TOOLING: &[&str] = &[
    "sundial-sim",
    "sundial-simaws",
    "sundial-chaos",
    "sundial-testkit",
    "sundial-testfn",
    "sundial-tests",
    "settlement-example",
    "sundial-tidy",
];

/// TEMPORARY: the crates whose module cycles are tolerated while they are being broken. A crate
/// not listed must have none; a listed crate whose cycles are gone must be removed from the list.
const KNOWN_CYCLES: &[&str] = &[
    "sundial-api",
    "sundial-api-types",
    "sundial-capacity",
    "sundial-chaos",
    "sundial-client",
    "sundial-core",
    "sundial-model",
    "sundial-schedule",
    "sundial-sim",
    "sundial-simaws",
];

/// TEMPORARY: files outside `functions/hash/src/` that still write a stable-hash constant.
const KNOWN_HASH_COPIES: &[&str] = &["functions/model/src/event.rs"];

fn tree() -> &'static (Sources, Workspace) {
    static TREE: OnceLock<(Sources, Workspace)> = OnceLock::new();
    TREE.get_or_init(|| {
        let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
        let src = Sources::load(&root).unwrap_or_else(|e| panic!("reading {}: {e}", root.display()));
        let ws = workspace::analyse(&src);
        assert!(ws.packages.len() > 20, "found only {} workspace crates", ws.packages.len());
        (src, ws)
    })
}

#[track_caller]
fn assert_none(what: &str, violations: Vec<String>) {
    assert!(violations.is_empty(), "{what}:\n{}", violations.join("\n"));
}

#[test]
fn every_crate_is_shipped_or_tooling() {
    let (_, ws) = tree();
    assert_none("crate groups", checks::ungrouped(ws, &[("SHIPPED", SHIPPED), ("TOOLING", TOOLING)]));
}

#[test]
fn production_files_stay_within_the_code_line_limit() {
    let (_, ws) = tree();
    assert!(!ws.ts.is_empty() && !ws.js.is_empty(), "no CDK TypeScript or console JavaScript found");
    assert_none("files too long", checks::long_files(ws, MAX_FILE_CODE_LINES, KNOWN_LONG_FILES));
}

#[test]
fn functions_stay_within_their_ratchet() {
    let (_, ws) = tree();
    let rust = ws.rust_functions();
    let of =
        |group: &'static [&'static str]| rust.iter().filter(move |f| group.contains(&f.package.as_str()));
    let cdk: Vec<FnRecord> = ws.ts_functions();
    let mut v = checks::fn_ratchet(of(SHIPPED), MAX_FN_LINES_SHIPPED, "MAX_FN_LINES_SHIPPED");
    v.extend(checks::fn_ratchet(of(TOOLING), MAX_FN_LINES_TOOLING, "MAX_FN_LINES_TOOLING"));
    v.extend(checks::fn_ratchet(&cdk, MAX_FN_LINES_CDK, "MAX_FN_LINES_CDK"));
    assert_none("function length", v);
}

#[test]
fn no_crate_has_a_module_cycle() {
    let (_, ws) = tree();
    assert_none("module cycles", checks::cycles(ws, KNOWN_CYCLES));
}

#[test]
fn the_stable_hashes_are_written_once() {
    let (src, _) = tree();
    assert_none("stable-hash copies", checks::hash_copies(src, KNOWN_HASH_COPIES));
}

#[test]
fn report() {
    let (src, ws) = tree();
    println!("{}", report::report(ws, src));
}
