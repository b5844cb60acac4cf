//! TypeScript functions, brace-matched: `function name(…) {…}`, class methods and constructors,
//! and arrow functions assigned to a `const`/`let`/`var` or a class property. A function runs
//! from the line of its name to its closing brace; nested functions count in their parent too.

use crate::rust::FnSpan;
use crate::ts::{Kind, TsFile};

const MODIFIERS: &[&str] = &[
    "public",
    "private",
    "protected",
    "static",
    "readonly",
    "async",
    "abstract",
    "override",
    "declare",
    "accessor",
    "get",
    "set",
];

const KEYWORDS: &[&str] = &["if", "for", "while", "switch", "catch", "return", "function", "new", "typeof"];

/// Every function of `f` with a body.
pub fn functions(f: &TsFile) -> Vec<FnSpan> {
    let code = f.code();
    let mut spans: Vec<(String, usize, usize)> = Vec::new();
    for i in 0..f.toks.len() {
        if f.is(i, "function") {
            let at = if f.is(i + 1, "*") { i + 2 } else { i + 1 };
            if let Some(name) = f.ident(at) {
                if let Some(end) = callable_end(f, at + 1) {
                    spans.push((name.to_string(), at, end));
                }
            }
        } else if matches!(f.text(i), "const" | "let" | "var") && f.toks[i].kind == Kind::Ident {
            if let (Some(name), Some(end)) = (f.ident(i + 1), arrow_after_name(f, i + 2)) {
                spans.push((name.to_string(), i, end));
            }
        } else if f.is(i, "class") && !f.is(i + 1, ":") && !(i > 0 && f.is(i - 1, ".")) {
            class_members(f, i, &mut spans);
        }
    }
    spans
        .into_iter()
        .map(|(name, from, to)| {
            let (line, end_line) = (f.toks[from].line, f.toks[to].end_line);
            let code_lines = code.iter().take(end_line + 1).skip(line).filter(|&&c| c).count();
            FnSpan { name, line, end_line, code_lines }
        })
        .collect()
}

/// The methods, constructor and arrow properties of the class whose keyword is at `at`.
fn class_members(f: &TsFile, at: usize, spans: &mut Vec<(String, usize, usize)>) {
    let class = f.ident(at + 1).filter(|n| !matches!(*n, "extends" | "implements")).unwrap_or("(anonymous)");
    let Some(open) = (at + 1..f.toks.len()).find(|&j| f.is(j, "{")) else { return };
    let close = f.matching(open);
    let mut j = open + 1;
    while j < close {
        while f.is(j, "@") {
            j += 2;
            while f.is(j, ".") {
                j += 2;
            }
            if f.is(j, "(") {
                j = f.matching(j) + 1;
            }
        }
        while f.ident(j).is_some_and(|m| MODIFIERS.contains(&m))
            && (f.ident(j + 1).is_some() || f.is(j + 1, "[") || f.is(j + 1, "*"))
        {
            j += 1;
        }
        if f.is(j, "*") {
            j += 1;
        }
        let name_at = j;
        j = if f.is(j, "[") { f.matching(j) + 1 } else { j + 1 };
        if f.is(j, "?") || f.is(j, "!") {
            j += 1;
        }
        let name = format!("{class}.{}", f.text(name_at));
        if f.is(j, "(") || f.is(j, "<") {
            if let Some(end) = callable_end(f, j) {
                spans.push((name, name_at, end));
                j = end + 1;
                continue;
            }
        }
        if let Some(end) = arrow_after_name(f, j) {
            spans.push((name, name_at, end));
        }
        j = statement_end(f, j, close).max(name_at + 1);
    }
}

/// After a function's name: generics, parameters, return type and body; the body's `}`.
fn callable_end(f: &TsFile, mut j: usize) -> Option<usize> {
    if f.is(j, "<") {
        j = angle_end(f, j) + 1;
    }
    if !f.is(j, "(") {
        return None;
    }
    let open = body_open(f, f.matching(j) + 1)?;
    Some(f.matching(open))
}

/// From the token after a `)` (or a property name): an optional `: Type`, then the body `{`.
/// A `{` where a type is expected is an object type; one after a complete type is the body.
fn body_open(f: &TsFile, mut j: usize) -> Option<usize> {
    if !f.is(j, ":") {
        return f.is(j, "{").then_some(j);
    }
    let mut expecting = true;
    j += 1;
    while j < f.toks.len() {
        let t = f.text(j);
        match (f.toks[j].kind, t) {
            (Kind::Punct, "{") if !expecting => return Some(j),
            (Kind::Punct, "{" | "(" | "[") => {
                j = f.matching(j);
                expecting = false;
            }
            (Kind::Punct, "<") => {
                j = angle_end(f, j);
                expecting = false;
            }
            (Kind::Punct, ";" | "=" | "=>" | "}" | ")") => return None,
            (Kind::Punct, _) => expecting = true,
            (Kind::Ident, "keyof" | "typeof" | "readonly" | "infer" | "is" | "asserts") => expecting = true,
            _ => expecting = false,
        }
        j += 1;
    }
    None
}

fn angle_end(f: &TsFile, open: usize) -> usize {
    let mut depth = 0i32;
    for j in open..f.toks.len() {
        match f.text(j) {
            "<" => depth += 1,
            ">" => {
                depth -= 1;
                if depth == 0 {
                    return j;
                }
            }
            _ => {}
        }
    }
    f.toks.len() - 1
}

/// After a binding's name: `: Type = [async] (params)[: Type] => body` or `= [async] x => body`;
/// the last token of the body.
fn arrow_after_name(f: &TsFile, mut j: usize) -> Option<usize> {
    if f.is(j, ":") {
        j = (j..f.toks.len()).find(|&k| f.is(k, "=") || f.is(k, ";"))?;
    }
    if !f.is(j, "=") {
        return None;
    }
    j += 1;
    if f.is(j, "async") {
        j += 1;
    }
    if f.is(j, "<") {
        j = angle_end(f, j) + 1;
    }
    if f.is(j, "(") {
        j = f.matching(j) + 1;
        if f.is(j, ":") {
            j = (j..f.toks.len()).take_while(|&k| !f.is(k, ";")).find(|&k| f.is(k, "=>"))?;
        }
    } else if f.ident(j).is_some() && !KEYWORDS.contains(&f.text(j)) {
        j += 1;
    } else {
        return None;
    }
    if !f.is(j, "=>") {
        return None;
    }
    j += 1;
    if f.is(j, "{") {
        return Some(f.matching(j));
    }
    Some(statement_end(f, j, f.toks.len()).saturating_sub(1).max(j))
}

/// The index after the statement (or class member) starting at `from`: past its `;`, at an
/// unmatched closer or at `limit`, or at a line break after a complete expression.
fn statement_end(f: &TsFile, from: usize, limit: usize) -> usize {
    let mut depth = 0i32;
    let mut j = from;
    while j < limit {
        let t = f.text(j);
        let punct = f.toks[j].kind == Kind::Punct;
        match t {
            "(" | "[" | "{" if punct => depth += 1,
            ")" | "]" | "}" if punct && depth == 0 => return j,
            ")" | "]" | "}" if punct => depth -= 1,
            ";" | "," if punct && depth == 0 => return j + 1,
            _ => {}
        }
        let complete = !punct || matches!(t, ")" | "]" | "}");
        let next_line = f.toks.get(j + 1).is_some_and(|n| n.line > f.toks[j].end_line);
        let continues = f.toks.get(j + 1).is_some_and(|n| n.kind == Kind::Punct)
            && !matches!(f.text(j + 1), "(" | "[" | "{" | "}" | "@" | "*" | "#")
            || f.ident(j + 1).is_some_and(|n| matches!(n, "as" | "satisfies" | "in" | "instanceof"));
        if depth == 0 && complete && next_line && !continues {
            return j + 1;
        }
        j += 1;
    }
    limit
}
