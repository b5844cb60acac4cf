//! Probes: each check run on a small synthetic tree, to show it fails when it should and
//! passes when it should (a check that never fails checks nothing).

use crate::checks;
use crate::rust::RustFile;
use crate::ts::TsFile;
use crate::tsfn;
use crate::workspace::{analyse, FnRecord, Sources, Workspace};

/// A workspace of one crate `c` (in folder `c/`) holding `files` (paths under `c/src/`).
fn one_crate(files: &[(&str, &str)]) -> (Sources, Workspace) {
    let mut pairs = vec![
        ("Cargo.toml".to_string(), "[workspace]\nmembers = [\n    \"c\",\n]\n".to_string()),
        ("c/Cargo.toml".to_string(), "[package]\nname = \"c\"\nversion = \"0.1.0\"\n".to_string()),
    ];
    pairs.extend(files.iter().map(|(p, t)| (format!("c/src/{p}"), t.to_string())));
    let src = Sources { files: pairs.into_iter().collect() };
    let ws = analyse(&src);
    (src, ws)
}

/// `n` code lines of constants.
fn code(n: usize) -> String {
    (0..n).map(|i| format!("pub const C{i}: u32 = {i};\n")).collect()
}

fn record(name: &str, code_lines: usize) -> FnRecord {
    let span = crate::rust::FnSpan { name: name.into(), line: 1, end_line: code_lines, code_lines };
    FnRecord { package: "c".into(), file: "c/src/lib.rs".into(), span }
}

#[test]
fn a_file_of_701_code_lines_fails_and_700_passes() {
    let (_, ws) = one_crate(&[("lib.rs", &code(701))]);
    let v = checks::long_files(&ws, 700, &[]);
    assert_eq!(v, ["c/src/lib.rs: 701 code lines, over the limit of 700"]);
    let (_, ws) = one_crate(&[("lib.rs", &code(700))]);
    assert!(checks::long_files(&ws, 700, &[]).is_empty());
}

#[test]
fn comments_and_blank_lines_are_not_code() {
    let comments: String = (0..50).map(|i| format!("/// Doc comment {i}.\n\n// {{ a brace\n")).collect();
    let block = "/* a block\n   comment { over\n   lines */\n";
    let (_, ws) = one_crate(&[("lib.rs", &format!("//! Header.\n{comments}{block}{}", code(700)))]);
    assert_eq!(ws.file_sizes(), [("c/src/lib.rs".to_string(), 700)]);
    assert!(checks::long_files(&ws, 700, &[]).is_empty());
}

#[test]
fn test_code_is_not_production() {
    let lib = format!(
        "{}\n#[cfg(test)]\nmod tests {{\n{}}}\n#[cfg(all(test, feature = \"x\"))]\nfn probe() {{\n}}\n#[cfg(test)]\nmod more;\n",
        code(700),
        code(20)
    );
    let (_, ws) = one_crate(&[("lib.rs", &lib), ("more.rs", &code(900))]);
    assert!(checks::long_files(&ws, 700, &[]).is_empty(), "{:?}", ws.file_sizes());
    assert_eq!(ws.packages[0].unreached, ["c/src/more.rs"]);
    // `not(test)` and `any(test, …)` are production.
    let (_, ws) =
        one_crate(&[("lib.rs", "#[cfg(not(test))]\nfn a() {\n}\n#[cfg(any(test, unix))]\nfn b() {}\n")]);
    assert_eq!(ws.file_sizes()[0].1, 5);
}

#[test]
fn a_tolerated_file_may_only_shrink_and_then_leaves_the_list() {
    let (_, ws) = one_crate(&[("lib.rs", &code(800))]);
    assert!(checks::long_files(&ws, 700, &[("c/src/lib.rs", 800)]).is_empty());
    let v = checks::long_files(&ws, 700, &[("c/src/lib.rs", 799)]);
    assert_eq!(v, ["c/src/lib.rs: 800 code lines, over its tolerated ceiling of 799"]);
    let v = checks::long_files(&ws, 700, &[("c/src/lib.rs", 900)]);
    assert_eq!(v, ["c/src/lib.rs: 800 code lines: lower its tolerated ceiling from 900 to 800"]);
    let (_, ws) = one_crate(&[("lib.rs", &code(700))]);
    let v = checks::long_files(&ws, 700, &[("c/src/lib.rs", 800)]);
    assert!(v[0].contains("remove it from the tolerated files"), "{v:?}");
}

#[test]
fn a_function_one_line_over_its_constant_fails() {
    let body: String = (0..68).map(|i| format!("    let _x{i} = {i};\n")).collect();
    let src = format!("pub fn long() {{\n{body}}}\n\npub fn short() {{\n    // a comment is not code\n}}\n");
    let (_, ws) = one_crate(&[("lib.rs", &src)]);
    let fns = ws.rust_functions();
    assert_eq!(fns[0].span.code_lines, 70);
    assert_eq!(fns[1].span.code_lines, 2);
    assert!(checks::fn_ratchet(&fns, 70, "MAX").is_empty());
    let v = checks::fn_ratchet(&fns, 69, "MAX_FN_LINES_SHIPPED");
    assert_eq!(v, ["c/src/lib.rs:1: fn long is 70 code lines, over MAX_FN_LINES_SHIPPED = 69"]);
}

#[test]
fn a_constant_above_the_longest_function_must_be_lowered() {
    let fns = [record("a", 40), record("b", 147)];
    assert!(checks::fn_ratchet(&fns, 147, "MAX_FN_LINES_SHIPPED").is_empty());
    let v = checks::fn_ratchet(&fns, 148, "MAX_FN_LINES_SHIPPED");
    assert_eq!(v.len(), 1);
    assert!(v[0].starts_with("MAX_FN_LINES_SHIPPED must be lowered to 147"), "{v:?}");
}

#[test]
fn braces_in_strings_chars_and_comments_do_not_end_a_function() {
    let src = r####"
impl Thing<'_> {
    fn tricky(&self) -> usize {
        let a = "{ // not a comment";
        let b = r#"}" still inside "# ; r"{";
        let c = '{';
        let d = b'}';
        let e = '\'';
        let f: &'static str = "\"}";
        /* } nested /* } */ */
        // }
        let _ = (a, b, c, d, e, f);
        match self.0 { 'x: loop { break 'x 1; } }
    }
}

fn after() {}
"####;
    let f = RustFile::new("x.rs", src);
    let fns = f.functions();
    let names: Vec<(&str, usize, usize)> =
        fns.iter().map(|s| (s.name.as_str(), s.line, s.end_line)).collect();
    assert_eq!(names, [("Thing::tricky", 3, 14), ("after", 17, 17)]);
    assert_eq!(fns[0].code_lines, 10);
}

#[test]
fn lifetimes_are_not_char_literals() {
    let f = RustFile::new(
        "x.rs",
        "fn f<'a, 'b: 'a>(x: &'a str, _y: &'b str) -> &'a str {\n    x\n}\nfn g() {}\n",
    );
    let lines: Vec<usize> = f.functions().iter().map(|s| s.code_lines).collect();
    assert_eq!(lines, [3, 1]);
}

#[test]
fn two_files_that_use_each_other_are_a_cycle() {
    let (_, ws) = one_crate(&[
        ("lib.rs", "pub mod a;\npub mod b;\n"),
        ("a.rs", "use crate::b::X;\npub struct Y;\npub fn f(_: X) {}\n"),
        ("b.rs", "pub struct X;\npub fn g(_: crate::a::Y) {}\n"),
    ]);
    let v = checks::cycles(&ws, &[]);
    assert_eq!(v.len(), 1, "{v:?}");
    assert!(v[0].contains("2 files"), "{v:?}");
    assert!(v[0].contains("c/src/a.rs:1 uses c/src/b.rs via `crate::b::X`"), "{v:?}");
    assert!(v[0].contains("c/src/b.rs:2 uses c/src/a.rs via `crate::a::Y`"), "{v:?}");
    assert!(v[0].starts_with("c: module cycle of 2 files (a new cycle): a.rs, b.rs\n"), "{v:?}");
}

/// A model-like crate: `a` and `b` use each other; `extra` adds `c.rs` and `d.rs` and their uses.
fn model_like(extra: &[(&str, &str)], a_uses: &str) -> (Sources, Workspace) {
    let lib = "pub mod a;\npub mod b;\npub mod c;\npub mod d;\npub mod keys;\n";
    let a = format!("pub struct A;\npub fn f(_: crate::b::B) {{\n    {a_uses}\n}}\n");
    let mut files = vec![
        ("lib.rs", lib.to_string()),
        ("a.rs", a),
        ("b.rs", "pub struct B(pub crate::a::A, pub crate::keys::Key);\n".to_string()),
        ("keys.rs", "pub struct Key;\n".to_string()),
    ];
    for name in ["c.rs", "d.rs"] {
        let text = extra.iter().find(|(p, _)| *p == name).map_or("pub struct Z;\n", |(_, t)| t);
        files.push((name, text.to_string()));
    }
    let files: Vec<(&str, &str)> = files.iter().map(|(p, t)| (*p, t.as_str())).collect();
    one_crate(&files)
}

#[test]
fn the_tolerated_cycles_are_an_exact_ratchet() {
    const AB: &[checks::KnownCycle] = &[("c", &["a.rs", "b.rs"])];
    // The tolerated {a, b} passes.
    let (_, ws) = model_like(&[], "");
    assert!(checks::cycles(&ws, AB).is_empty(), "{:?}", checks::cycles(&ws, AB));
    assert_eq!(
        checks::current_cycles(&ws),
        [("c".to_string(), vec!["a.rs".to_string(), "b.rs".to_string()])]
    );
    // A new cycle {c, d} in the same crate fails, naming its files and the edges closing it.
    let cd = [
        ("c.rs", "pub struct Z(pub crate::d::W);\n"),
        ("d.rs", "pub struct W;\npub fn g(_: crate::c::Z) {}\n"),
    ];
    let (_, ws) = model_like(&cd, "");
    let v = checks::cycles(&ws, AB);
    assert_eq!(v.len(), 1, "{v:?}");
    assert!(v[0].starts_with("c: module cycle of 2 files (a new cycle): c.rs, d.rs\n"), "{v:?}");
    assert!(v[0].contains("c/src/c.rs:1 uses c/src/d.rs via `crate::d::W`"), "{v:?}");
    assert!(v[0].contains("c/src/d.rs:2 uses c/src/c.rs via `crate::c::Z`"), "{v:?}");
    // {a, b} grown to {a, b, c} fails, with the edges that are not inside {a, b}.
    let (_, ws) = model_like(&[("c.rs", "pub struct Z(pub crate::b::B);\n")], "let _ = crate::c::Z;");
    let v = checks::cycles(&ws, AB);
    assert_eq!(v.len(), 1, "{v:?}");
    assert!(
        v[0].starts_with("c: module cycle of 3 files (grows a tolerated cycle by c.rs): a.rs, b.rs, c.rs")
    );
    assert!(v[0].contains("c/src/a.rs:3 uses c/src/c.rs via `crate::c::Z`"), "{v:?}");
    assert!(v[0].contains("c/src/c.rs:1 uses c/src/b.rs via `crate::b::B`"), "{v:?}");
    assert!(!v[0].contains("c/src/a.rs:2 uses c/src/b.rs"), "{v:?}");
    // Tolerating {a, b, c} passes the smaller {a, b} of another tree, but the entry must shrink.
    let (_, ws) = model_like(&[], "");
    let v = checks::cycles(&ws, &[("c", &["a.rs", "b.rs", "c.rs"])]);
    assert_eq!(
        v,
        ["KNOWN_CYCLES: this cycle of c has shrunk, replace its entry\n    (\"c\", &[\"a.rs\", \"b.rs\", \"c.rs\"]),\n  \
          by\n    (\"c\", &[\"a.rs\", \"b.rs\"]),\n"]
    );
    // A tolerated cycle that is gone must leave the list, as must an entry for no crate.
    let (_, ws) = model_like(&[], "");
    let v = checks::cycles(&ws, &[("c", &["a.rs", "b.rs"]), ("c", &["c.rs", "d.rs"]), ("gone", &["x.rs"])]);
    assert_eq!(
        v,
        [
            "KNOWN_CYCLES: this cycle of c is gone, remove its entry:\n    (\"c\", &[\"c.rs\", \"d.rs\"]),\n",
            "KNOWN_CYCLES lists gone (x.rs), which is not a workspace crate",
        ]
    );
}

#[test]
fn a_cycle_through_a_mod_rs_and_across_folders_is_found() {
    let (_, ws) = one_crate(&[
        ("lib.rs", "pub mod exec;\npub mod plan;\n"),
        ("exec/mod.rs", "pub mod target;\npub struct Run;\n"),
        ("exec/target/mod.rs", "pub mod lambda;\n"),
        ("exec/target/lambda.rs", "use crate::plan::Step;\npub struct Lambda;\n"),
        ("plan/mod.rs", "pub mod step;\npub use step::Step;\n"),
        ("plan/step.rs", "pub struct Step(super::super::exec::Run);\n"),
    ]);
    let cycles = ws.packages[0].cycles();
    let files: Vec<&Vec<String>> = cycles.iter().map(|(_, c)| *c).collect();
    // lambda → plan/step (through plan/mod.rs's re-export), step → exec/mod.rs: no cycle yet.
    assert!(files.is_empty(), "{files:?}");
    let (_, ws) = one_crate(&[
        ("lib.rs", "pub mod exec;\npub mod plan;\n"),
        ("exec/mod.rs", "pub mod target;\npub struct Run(target::lambda::Lambda);\n"),
        ("exec/target/mod.rs", "pub mod lambda;\n"),
        ("exec/target/lambda.rs", "use crate::plan::Step;\npub struct Lambda;\n"),
        ("plan/mod.rs", "pub mod step;\npub use step::Step;\n"),
        ("plan/step.rs", "pub struct Step(super::super::exec::Run);\n"),
    ]);
    let v = checks::cycles(&ws, &[]);
    assert_eq!(v.len(), 1, "{v:?}");
    for f in ["c/src/exec/mod.rs", "c/src/exec/target/lambda.rs", "c/src/plan/step.rs"] {
        assert!(v[0].contains(f), "{f} missing: {v:?}");
    }
    assert!(v[0].contains("3 files"), "{v:?}");
}

#[test]
fn declaring_a_child_is_not_using_it_and_test_code_is_left_out() {
    let (_, ws) = one_crate(&[
        (
            "lib.rs",
            "pub mod a;\npub const LIMIT: u32 = 3;\n#[cfg(test)]\nmod tests {\n    use crate::a::f;\n}\n",
        ),
        ("a.rs", "pub fn f() -> u32 {\n    crate::LIMIT\n}\n"),
    ]);
    assert!(checks::cycles(&ws, &[]).is_empty());
    let (_, ws) = one_crate(&[
        ("lib.rs", "pub mod a;\npub const LIMIT: u32 = 3;\npub fn g() -> u32 {\n    a::f()\n}\n"),
        ("a.rs", "pub fn f() -> u32 {\n    crate::LIMIT\n}\n"),
    ]);
    assert_eq!(checks::cycles(&ws, &[]).len(), 1);
}

#[test]
fn re_exporting_a_child_is_not_using_it() {
    // A mod.rs that only re-exports its child, which uses the mod.rs's `Shared`: no cycle, in
    // every spelling of the re-export; a path through it still reaches the child.
    for export in ["pub use child::X;", "pub use self::child::X;", "pub(crate) use child::{X};"] {
        let (_, ws) = one_crate(&[
            ("lib.rs", "pub mod m;\npub mod user;\n"),
            ("m/mod.rs", &format!("mod child;\n{export}\npub struct Shared;\n")),
            ("m/child.rs", "pub struct X(pub super::Shared);\n"),
            ("user.rs", "pub fn f(_: crate::m::X) {}\n"),
        ]);
        assert!(checks::cycles(&ws, &[]).is_empty(), "{export}: {:?}", checks::cycles(&ws, &[]));
        let edges: Vec<(&str, &str)> =
            ws.packages[0].graphs[0].edges.iter().map(|e| (e.from.as_str(), e.to.as_str())).collect();
        assert_eq!(edges, [("c/src/m/child.rs", "c/src/m/mod.rs"), ("c/src/user.rs", "c/src/m/child.rs")]);
    }
    // The mod.rs's own code calling into the child, a private `use` of the child's item it then
    // uses, or an attribute path naming it: each is an edge, and closes the cycle.
    for parent in [
        "mod child;\npub struct Shared;\npub fn g() {\n    child::f();\n}\n",
        "mod child;\nuse child::f;\npub struct Shared;\npub fn g() {\n    f();\n}\n",
        "mod child;\npub struct Shared;\n#[schema(schema_with = crate::m::child::f)]\npub struct S;\n",
        "mod child;\npub struct Shared;\n#[serde(with = \"self::child::f\")]\npub struct S;\n",
    ] {
        let (_, ws) = one_crate(&[
            ("lib.rs", "pub mod m;\n"),
            ("m/mod.rs", parent),
            ("m/child.rs", "pub fn f() {\n    let _ = super::Shared;\n}\n"),
        ]);
        let v = checks::cycles(&ws, &[]);
        assert_eq!(v.len(), 1, "{parent}: {v:?}");
        assert!(v[0].contains("module cycle of 2 files (a new cycle): m/child.rs, m/mod.rs"), "{v:?}");
    }
    // A re-export of a sibling's item is still an edge to the sibling.
    let (_, ws) = one_crate(&[
        ("lib.rs", "pub mod a;\npub mod b;\n"),
        ("a.rs", "pub use crate::b::X;\npub struct Y;\n"),
        ("b.rs", "pub struct X(pub crate::a::Y);\n"),
    ]);
    assert_eq!(checks::cycles(&ws, &[]).len(), 1);
}

#[test]
fn paths_that_leave_the_crate_and_attribute_strings_are_read_right() {
    let (_, ws) = one_crate(&[
        ("lib.rs", "pub use other_crate as model;\npub mod a;\npub mod b;\n"),
        ("a.rs", "use crate::model::Thing;\n#[serde(with = \"crate::b::codec\")]\npub struct A;\n"),
        ("b.rs", "pub fn codec() {}\npub fn g() { let _ = crate::a::A; }\n"),
    ]);
    let g = &ws.packages[0].graphs[0];
    let edges: Vec<(&str, &str)> = g.edges.iter().map(|e| (e.from.as_str(), e.to.as_str())).collect();
    assert_eq!(edges, [("c/src/a.rs", "c/src/b.rs"), ("c/src/b.rs", "c/src/a.rs")]);
}

#[test]
fn binaries_are_targets_of_their_own() {
    let (_, ws) = one_crate(&[
        ("lib.rs", "pub mod a;\n"),
        ("a.rs", "pub fn f() {}\n"),
        ("bin/tool/main.rs", "mod cli;\nfn main() { cli::run() }\n"),
        ("bin/tool/cli.rs", "pub fn run() { crate::main() }\n"),
    ]);
    let p = &ws.packages[0];
    assert_eq!(p.graphs.len(), 2);
    assert!(p.unreached.is_empty(), "{:?}", p.unreached);
    assert_eq!(p.cycles().len(), 1);
}

#[test]
fn stable_hash_copies_are_found_in_any_spelling() {
    let fnv = format!("0x{}_u64", "CBF2_9CE4_8422_2325");
    let splitmix = format!("0x{}", "bf58476d1ce4e5b9");
    let (src, _) = one_crate(&[
        ("lib.rs", &format!("pub const A: u64 = {fnv};\n// {splitmix} in a comment is no copy\n")),
        ("b.rs", &format!("pub const B: u64 = {splitmix};\n")),
    ]);
    let found: Vec<String> = checks::hash_copy_files(&src).into_keys().collect();
    assert_eq!(found, ["c/src/b.rs", "c/src/lib.rs"]);
    let v = checks::hash_copies(&src, &["c/src/lib.rs", "c/src/gone.rs"]);
    assert_eq!(v.len(), 2, "{v:?}");
    assert!(v[0].starts_with("c/src/b.rs (lines [1]) writes a stable-hash constant"));
    assert_eq!(v[1], "c/src/gone.rs holds no stable-hash copy any more: remove it from KNOWN_HASH_COPIES");
}

#[test]
fn typescript_functions_are_brace_matched_past_regexes_and_templates() {
    let src = r#"
export class Stack extends Construct {
  private readonly x: string;
  private readonly handlers = { a: 1 };

  constructor(scope: Construct, id: string) {
    super(scope, id);
    const re = /^[{]+\/}$/.test(id);
    const t = `${id.map((c) => { return `}${c}`; })}{`;
    // }
    const inner = (a: number): { b: number } => {
      return { b: a };
    };
  }

  public get name(): string {
    return '}';
  }

  private pool(p: { a: string }): Omit<Pool, 'q'> {
    return p.a / 2 > 1 ? {} : {};
  }
}

export function capacityProps(c: Cap | undefined): { read: number } {
  return { read: 1 };
}

const shortArrow = (x: number) => x + 1;
"#;
    let f = TsFile::new("infra/lib/x.ts", src);
    let spans: Vec<(String, usize, usize)> =
        tsfn::functions(&f).into_iter().map(|s| (s.name, s.line, s.end_line)).collect();
    let want = [
        ("inner", 11, 13),
        ("Stack.constructor", 6, 14),
        ("Stack.name", 16, 18),
        ("Stack.pool", 20, 22),
        ("capacityProps", 25, 27),
        ("shortArrow", 29, 29),
    ];
    let want: Vec<(String, usize, usize)> = want.iter().map(|(n, a, b)| (n.to_string(), *a, *b)).collect();
    let mut spans = spans;
    spans.sort_by_key(|s| s.1);
    let mut want = want;
    want.sort_by_key(|s| s.1);
    assert_eq!(spans, want);
    assert_eq!(f.code_lines(), 22);
}

#[test]
fn a_tree_on_disk_is_read_like_the_repository() {
    let root = std::env::temp_dir().join(format!("sundial-tidy-probe-{}", std::process::id()));
    let write = |rel: &str, text: &str| {
        let path = root.join(rel);
        std::fs::create_dir_all(path.parent().unwrap_or(&root)).unwrap_or_else(|e| panic!("{e}"));
        std::fs::write(path, text).unwrap_or_else(|e| panic!("{e}"));
    };
    write("Cargo.toml", "[workspace]\nmembers = [\"functions/c\"]\n");
    write("functions/c/Cargo.toml", "[package]\nname = \"c\"\n");
    write("functions/c/src/lib.rs", "pub mod target;\npub struct Y;\n");
    write("functions/c/src/target/mod.rs", &format!("use crate::Y;\n{}", code(701)));
    write("functions/c/tests/t.rs", &code(2000));
    write("infra/lib/big.ts", &"export const x = 1;\n".repeat(701));
    write("functions/api/console/ui.js", "// only a comment\n");
    let src = Sources::load(&root).unwrap_or_else(|e| panic!("{e}"));
    std::fs::remove_dir_all(&root).unwrap_or_else(|e| panic!("{e}"));
    let ws = analyse(&src);
    let v = checks::long_files(&ws, 700, &[]);
    assert_eq!(
        v,
        [
            "functions/c/src/target/mod.rs: 702 code lines, over the limit of 700",
            "infra/lib/big.ts: 701 code lines, over the limit of 700",
        ]
    );
    assert_eq!(ws.js.len(), 1);
}
