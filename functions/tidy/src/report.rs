//! The summary printed by `cargo test -p sundial-tidy -- --nocapture`: per crate, its production
//! files, code lines, files over 500 code lines, functions over 70, and the number of module
//! cycles (strongly connected components, SCCs) with their sizes, and the totals; each SCC's
//! files; the files over 500 code lines; the longest functions; each SCC's edges; the
//! stable-hash copies; and the hand-written ARN splitters (counted, not checked).

use crate::checks;
use crate::lex::Kind;
use crate::rust::RustFile;
use crate::workspace::{FnRecord, Sources, Workspace};
use std::fmt::Write;

/// Files over this many code lines are listed (the limit is higher: this is the warning).
pub const LARGE_FILE: usize = 500;
/// Functions over this many code lines are counted (TIGER_STYLE's 70).
pub const LONG_FN: usize = 70;

/// The whole report.
pub fn report(ws: &Workspace, src: &Sources) -> String {
    let rust = ws.rust_functions();
    let cdk = ws.ts_functions();
    let mut s = crate_table(ws, &rust);
    s += &cycle_files(ws);
    let _ = writeln!(s, "\nfiles over {LARGE_FILE} code lines:");
    let mut sizes = ws.file_sizes();
    sizes.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
    for (path, n) in sizes.iter().filter(|(_, n)| *n > LARGE_FILE) {
        let _ = writeln!(s, "  {n:>5}  {path}");
    }
    let _ = writeln!(s, "\nlongest Rust functions (code lines):");
    s += &top_functions(&rust, 20);
    let _ = writeln!(s, "\nCDK functions over {LONG_FN} code lines:");
    let long_cdk: Vec<FnRecord> = cdk.into_iter().filter(|f| f.span.code_lines > LONG_FN).collect();
    s += &top_functions(&long_cdk, usize::MAX);
    let _ = writeln!(s, "\nmodule cycles with the edges inside them:");
    for p in ws.packages.iter().filter(|p| !p.cycles().is_empty()) {
        let _ = write!(s, "{}\n{}", p.name, checks::describe_cycles(ws, &p.name));
    }
    let _ = writeln!(s, "\nstable-hash constants outside {}:", checks::HASH_HOME);
    for (path, lines) in checks::hash_copy_files(src) {
        let _ = writeln!(s, "  {path} lines {lines:?}");
    }
    let arn = arn_splitters(ws);
    let total: usize = arn.iter().map(|(_, n)| n).sum();
    let _ = writeln!(s, "\nhand-written ARN splitters in production Rust ({total}):");
    for (path, n) in arn {
        let _ = writeln!(s, "  {n:>3}  {path}");
    }
    let _ = writeln!(s, "\nsrc files no target reaches (test-only or undeclared):");
    for p in &ws.packages {
        for f in &p.unreached {
            let _ = writeln!(s, "  {f}");
        }
    }
    s
}

/// Per crate: files, code lines, files over [`LARGE_FILE`], functions over [`LONG_FN`], the
/// longest function, the number of SCCs and their sizes; then the totals.
fn crate_table(ws: &Workspace, rust: &[FnRecord]) -> String {
    let mut s = String::new();
    let _ = writeln!(
        s,
        "{:<22} {:>6} {:>6} {:>6} {:>6} {:>7} {:>5}  files per SCC",
        "crate", "files", "code", ">500", "fn>70", "longest", "SCCs"
    );
    let mut totals = [0usize; 5];
    for p in &ws.packages {
        let code: usize = p.files.iter().map(RustFile::code_lines).sum();
        let large = p.files.iter().filter(|f| f.code_lines() > LARGE_FILE).count();
        let fns: Vec<&FnRecord> = rust.iter().filter(|f| f.package == p.name).collect();
        let long = fns.iter().filter(|f| f.span.code_lines > LONG_FN).count();
        let top = checks::longest(fns.iter().copied()).map_or(0, |f| f.span.code_lines);
        let cycles = p.cycles();
        let sizes: Vec<String> = cycles.iter().map(|(_, c)| c.len().to_string()).collect();
        let sizes = if sizes.is_empty() { "-".to_string() } else { sizes.join("+") };
        let (n, name, sccs) = (p.files.len(), &p.name, cycles.len());
        let _ = writeln!(s, "{name:<22} {n:>6} {code:>6} {large:>6} {long:>6} {top:>7} {sccs:>5}  {sizes}");
        for (t, v) in totals.iter_mut().zip([n, code, large, long, sccs]) {
            *t += v;
        }
    }
    let [n, code, large, long, sccs] = totals;
    let _ = writeln!(s, "{:<22} {n:>6} {code:>6} {large:>6} {long:>6} {:>7} {sccs:>5}", "total", "");
    s
}

/// Per crate with module cycles: how many, and each one's files relative to its `src/`.
fn cycle_files(ws: &Workspace) -> String {
    let mut s = String::new();
    let _ = writeln!(s, "\nmodule cycles (SCCs of the file graph), per crate, files relative to src/:");
    let cycles = checks::current_cycles(ws);
    for p in &ws.packages {
        let of: Vec<&Vec<String>> = cycles.iter().filter(|(k, _)| *k == p.name).map(|(_, f)| f).collect();
        if !of.is_empty() {
            let _ = writeln!(s, "{}: {} SCC{}", p.name, of.len(), if of.len() == 1 { "" } else { "s" });
        }
        for files in of {
            let _ = writeln!(s, "  {:>3} files: {}", files.len(), files.join(", "));
        }
    }
    s
}

fn top_functions(fns: &[FnRecord], n: usize) -> String {
    let mut sorted: Vec<&FnRecord> = fns.iter().collect();
    sorted.sort_by(|a, b| b.span.code_lines.cmp(&a.span.code_lines).then(a.file.cmp(&b.file)));
    let mut s = String::new();
    for f in sorted.into_iter().take(n) {
        let physical = f.span.end_line - f.span.line + 1;
        let (code, name, file, line) = (f.span.code_lines, &f.span.name, &f.file, f.span.line);
        let _ = writeln!(s, "  {code:>4} ({physical:>4})  {name:<40} {file}:{line}");
    }
    s
}

const SPLITS: &[&str] = &["split", "splitn", "rsplit", "rsplitn", "split_once", "rsplit_once"];

/// Whether an identifier names an ARN (`arn`, `role_arn`, `queueArns`, `is_topic_arn`).
fn names_arn(ident: &str) -> bool {
    ident.contains("Arn") || ident.to_ascii_lowercase().split('_').any(|w| w == "arn" || w == "arns")
}

/// Per production file (outside an `arn.rs`), the calls that take an ARN apart by hand:
/// `strip_prefix("arn:…")`, and a `split`-family call on `':'`, `'/'` or a string with a `:`
/// in a function whose name, or a line up to three above, names an ARN.
pub fn arn_splitters(ws: &Workspace) -> Vec<(String, usize)> {
    let mut out = Vec::new();
    for f in ws.packages.iter().flat_map(|p| &p.files) {
        if f.path.ends_with("/arn.rs") || f.path.contains("/arn/") {
            continue;
        }
        let fns = f.functions();
        let mut n = 0;
        for i in 0..f.toks.len() {
            let call = f.ident(i).filter(|_| f.is(i + 1, "("));
            let Some(call) = call else { continue };
            let arg = f.toks.get(i + 2).map_or("", |t| t.text(&f.src));
            if call == "strip_prefix" && arg.starts_with("\"arn:") {
                n += 1;
                continue;
            }
            if !(SPLITS.contains(&call) && i > 0 && f.is(i - 1, ".")) {
                continue;
            }
            let close = f.matching(i + 1);
            let separator = (i + 2..close).any(|j| {
                let t = f.text(j);
                (f.toks[j].kind == Kind::Char && (t == "':'" || t == "'/'"))
                    || (f.toks[j].kind == Kind::Str && t.contains(':'))
            });
            let line = f.toks[i].line;
            let near = f.toks.iter().filter(|t| t.line + 3 >= line && t.line <= line).any(|t| {
                (t.kind == Kind::Ident && names_arn(t.text(&f.src))) || t.text(&f.src).starts_with("\"arn:")
            });
            let inside =
                fns.iter().filter(|s| s.line <= line && line <= s.end_line).any(|s| names_arn(&s.name));
            if separator && (near || inside) {
                n += 1;
            }
        }
        if n > 0 {
            out.push((f.path.clone(), n));
        }
    }
    out
}
