//! Tidy on the real tree: reads the repository's sources and holds the limits of the crate's
//! header. Every limit here only goes down: each ratchet equals today's worst case, and each
//! list of known exceptions fails once an entry is no longer needed.
//!
//! The ratchets (`MAX_FN_LINES_*`, `KNOWN_LONG_FILES`, `KNOWN_CYCLES`, `KNOWN_HASH_COPIES`) are
//! all in `ratchets.rs`, which this test writes: with `TIDY_PRINT_RATCHETS=1` the test
//! `print_ratchets` prints the file for today's tree between a BEGIN and an END line, so it can be
//! regenerated in one step:
//!
//! ```sh
//! TIDY_PRINT_RATCHETS=1 cargo test -q -p sundial-tidy --test tidy print_ratchets \
//!   | sed -n '/^----- BEGIN/,/^----- END/{//!p}' > /tmp/ratchets.rs \
//!   && test -s /tmp/ratchets.rs && cp /tmp/ratchets.rs functions/tidy/tests/tidy/ratchets.rs
//! ```
//!
//! The file is `#[rustfmt::skip]`: its layout is the printer's, an entry of `KNOWN_CYCLES` a line.
//!
//! `cargo test -p sundial-tidy -- --nocapture` prints the figures (per crate: files, code lines,
//! files over 500 code lines, functions over 70, module cycles; each crate's cycles with their
//! files and edges; the longest functions; hash copies; hand-written ARN splitters).

#[rustfmt::skip]
mod ratchets;

use ratchets::*;
use std::path::Path;
use std::sync::OnceLock;
use sundial_tidy::workspace::{self, FnRecord, Sources, Workspace};
use sundial_tidy::{checks, report};

/// Code lines (comments and blank lines left out) a production file may hold: Rust `src/`
/// without test code, the CDK's `infra/lib/**/*.ts`, the console's `functions/api/console/**/*.js`.
const MAX_FILE_CODE_LINES: usize = 700;

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
    // Linked into model, store and core; compiled to nothing without the `mutants` feature.
    "sundial-mutants",
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

fn tree() -> &'static (Sources, Workspace) {
    static TREE: OnceLock<(Sources, Workspace)> = OnceLock::new();
    TREE.get_or_init(|| {
        // The checkout being tested, read when the test runs: cargo reuses a build across
        // checkouts that share a target directory (CI's clone and a working tree), and a path
        // fixed at compile time would then read the other checkout.
        let crate_dir = std::env::var_os("CARGO_MANIFEST_DIR")
            .map_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).to_path_buf(), Into::into);
        let root = crate_dir.join("../..");
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

/// A function-length ratchet: its constant's name, doc comment and value, and the functions it
/// holds.
struct FnGroup {
    name: &'static str,
    doc: &'static str,
    max: usize,
    fns: Vec<FnRecord>,
}

fn fn_groups(ws: &Workspace) -> [FnGroup; 3] {
    let rust = ws.rust_functions();
    let of = |group: &[&str]| rust.iter().filter(|f| group.contains(&f.package.as_str())).cloned().collect();
    [
        FnGroup {
            name: "MAX_FN_LINES_SHIPPED",
            doc: "/// The longest function (code lines, `fn` line to closing brace) of the shipped crates. Lower\n\
                  /// it when the longest function shrinks; the test says when and to what.\n",
            max: MAX_FN_LINES_SHIPPED,
            fns: of(SHIPPED),
        },
        FnGroup {
            name: "MAX_FN_LINES_TOOLING",
            doc: "/// The same for the tooling: simulators, chaos, test kit and harness, the example, tidy.\n",
            max: MAX_FN_LINES_TOOLING,
            fns: of(TOOLING),
        },
        FnGroup {
            name: "MAX_FN_LINES_CDK",
            doc: "/// The same for the CDK TypeScript (`infra/lib`): functions, methods, constructors and arrow\n\
                  /// functions bound to a name.\n",
            max: MAX_FN_LINES_CDK,
            fns: ws.ts_functions(),
        },
    ]
}

#[test]
fn functions_stay_within_their_ratchet() {
    let (_, ws) = tree();
    let v = fn_groups(ws).iter().flat_map(|g| checks::fn_ratchet(&g.fns, g.max, g.name)).collect();
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

/// `ratchets.rs` as it would be for today's tree.
fn ratchets_rs(ws: &Workspace, src: &Sources) -> String {
    let mut s = String::from(RATCHETS_HEADER);
    s += "/// Files over MAX_FILE_CODE_LINES (main.rs) today, each with its code lines as a ceiling that\n";
    s += "/// only goes down; an entry leaves the list once its file is within the limit.\n";
    s += "pub(crate) const KNOWN_LONG_FILES: &[(&str, usize)] = &[\n";
    for (path, n) in ws.file_sizes().iter().filter(|(_, n)| *n > MAX_FILE_CODE_LINES) {
        s += &format!("    ({path:?}, {n}),\n");
    }
    s += "];\n";
    for g in fn_groups(ws) {
        let top = checks::longest(&g.fns).map_or(0, |f| f.span.code_lines);
        s += &format!("\n{}pub(crate) const {}: usize = {top};\n", g.doc, g.name);
    }
    s += "\n/// TEMPORARY: the module cycles tolerated while they are being broken, each a crate and the\n";
    s += "/// files (relative to its `src/`) of one strongly connected component of its module graph.\n";
    s += "/// Any other cycle fails, as does one of these grown by a file; an entry whose cycle shrank or\n";
    s += "/// is gone fails until it is replaced or removed.\n";
    s += "pub(crate) const KNOWN_CYCLES: &[KnownCycle] = &[\n";
    for (krate, files) in checks::current_cycles(ws) {
        s += &checks::cycle_entry("    ", &krate, &files);
    }
    s += "];\n\n";
    s += "/// TEMPORARY: files outside `functions/hash/src/` that still write a stable-hash constant.\n";
    s += "pub(crate) const KNOWN_HASH_COPIES: &[&str] = &[\n";
    for path in checks::hash_copy_files(src).keys() {
        s += &format!("    {path:?},\n");
    }
    s + "];\n"
}

const RATCHETS_HEADER: &str = "\
//! The ratchets of the tidy test, each today's worst case: it only goes down, and the test says
//! when one must come down and to what. Written by `TIDY_PRINT_RATCHETS=1 cargo test -q -p
//! sundial-tidy --test tidy print_ratchets` (the lines between BEGIN and END), so regenerating
//! them is replacing this file; `main.rs` says how in one command.

use sundial_tidy::checks::KnownCycle;

";

/// With `TIDY_PRINT_RATCHETS=1`, prints `ratchets.rs` for today's tree (to stdout itself, so
/// that it shows without `--nocapture`).
#[test]
fn print_ratchets() {
    use std::io::Write;
    if std::env::var("TIDY_PRINT_RATCHETS").as_deref() != Ok("1") {
        return;
    }
    let (src, ws) = tree();
    let text = ratchets_rs(ws, src);
    let block = format!("----- BEGIN functions/tidy/tests/tidy/ratchets.rs -----\n{text}----- END -----\n");
    std::io::stdout().lock().write_all(block.as_bytes()).unwrap_or_else(|e| panic!("stdout: {e}"));
}

#[test]
fn report() {
    let (src, ws) = tree();
    println!("{}", report::report(ws, src));
}
