//! One Rust file as production code: its tokens without the items under `#[cfg(test)]` (or any
//! `cfg` that needs `test`), its code lines, and its functions brace-matched from the `fn` line
//! to the closing brace.

use crate::lex::{self, Kind, Token};

/// A Rust source file reduced to its production code.
pub struct RustFile {
    pub path: String,
    pub src: String,
    /// Tokens outside `#[cfg(test)]` items; empty when the file is `#![cfg(test)]`.
    pub toks: Vec<Token>,
    /// `code[line]`: whether that (1-based) line holds a production token.
    pub code: Vec<bool>,
}

/// A function: where it starts and ends, and how many code lines it spans.
#[derive(Clone, Debug)]
pub struct FnSpan {
    /// `Type::name` inside an `impl` or `trait`, else `name`.
    pub name: String,
    pub line: usize,
    pub end_line: usize,
    pub code_lines: usize,
}

impl RustFile {
    pub fn new(path: &str, src: &str) -> RustFile {
        let all = lex::tokens(src);
        let toks = production(src, &all);
        let lines = src.lines().count() + 2;
        let mut code = vec![false; lines];
        for t in &toks {
            code.iter_mut().take(t.end_line + 1).skip(t.line).for_each(|c| *c = true);
        }
        RustFile { path: path.to_string(), src: src.to_string(), toks, code }
    }

    /// Code lines in the whole file.
    pub fn code_lines(&self) -> usize {
        self.code.iter().filter(|&&c| c).count()
    }

    /// Code lines from `from` to `to`, both included.
    pub fn code_between(&self, from: usize, to: usize) -> usize {
        self.code.iter().take(to + 1).skip(from).filter(|&&c| c).count()
    }

    pub fn text(&self, i: usize) -> &str {
        self.toks[i].text(&self.src)
    }

    pub fn is(&self, i: usize, s: &str) -> bool {
        self.toks.get(i).is_some_and(|t| t.is(&self.src, s))
    }

    pub fn ident(&self, i: usize) -> Option<&str> {
        self.toks.get(i).filter(|t| t.kind == Kind::Ident).map(|t| t.text(&self.src))
    }

    pub fn matching(&self, open: usize) -> usize {
        lex::matching(&self.src, &self.toks, open)
    }

    /// Every function with a body.
    pub fn functions(&self) -> Vec<FnSpan> {
        let owners = self.owners();
        let mut out = Vec::new();
        for i in 0..self.toks.len() {
            let Some(name) = self.ident(i + 1).filter(|_| self.is(i, "fn")) else { continue };
            let Some(open) = self.body_open(i + 2) else { continue };
            let close = self.matching(open);
            let owner = owners.iter().filter(|(_, o, c)| *o < i && i < *c).max_by_key(|(_, o, _)| *o);
            let name = owner.map_or(name.to_string(), |(ty, _, _)| format!("{ty}::{name}"));
            let (line, end_line) = (self.toks[i].line, self.toks[close].end_line);
            out.push(FnSpan { name, line, end_line, code_lines: self.code_between(line, end_line) });
        }
        out
    }

    /// The `{` opening the body of the item whose header starts at `from`, or `None` when a `;`
    /// comes first (a declaration without a body).
    pub fn body_open(&self, from: usize) -> Option<usize> {
        let mut depth = 0i32;
        for j in from..self.toks.len() {
            match self.text(j) {
                "(" | "[" => depth += 1,
                ")" | "]" => depth -= 1,
                "{" if depth == 0 => return Some(j),
                ";" | "}" if depth == 0 => return None,
                _ => {}
            }
        }
        None
    }

    /// `impl` and `trait` blocks: the type (or trait) they are for, and their braces.
    fn owners(&self) -> Vec<(String, usize, usize)> {
        let mut out = Vec::new();
        for i in 0..self.toks.len() {
            let kw = self.text(i);
            if self.toks[i].kind != Kind::Ident || !(kw == "impl" || kw == "trait") {
                continue;
            }
            let item_level = kw == "trait"
                || i == 0
                || matches!(self.text(i - 1), "}" | ";" | "{" | "]" | "unsafe" | "default");
            let Some(open) = self.body_open(i + 1).filter(|_| item_level) else { continue };
            let name = if kw == "trait" {
                self.ident(i + 1).map(str::to_string)
            } else {
                self.impl_type(i + 1, open)
            };
            if let Some(name) = name {
                out.push((name, open, self.matching(open)));
            }
        }
        out
    }

    /// The self type's last identifier in an `impl` header `toks[from..open]`.
    fn impl_type(&self, from: usize, open: usize) -> Option<String> {
        let generics_end = if self.is(from, "<") { self.angle_end(from) + 1 } else { from };
        let mut start = generics_end;
        let mut angle = 0i32;
        for j in generics_end..open {
            match self.text(j) {
                "<" => angle += 1,
                ">" => angle -= 1,
                "for" if angle == 0 => start = j + 1,
                "where" if angle == 0 => break,
                _ => {}
            }
        }
        let mut name = None;
        for j in start..open {
            match (self.toks[j].kind, self.text(j)) {
                (Kind::Ident, "dyn" | "mut" | "where") => break,
                (Kind::Ident, t) => name = Some(t.to_string()),
                (Kind::Lifetime, _) | (_, "&" | "::") => {}
                _ => break,
            }
        }
        name
    }

    /// The index of the `>` closing the `<` at `open`.
    fn angle_end(&self, open: usize) -> usize {
        let mut depth = 0i32;
        for j in open..self.toks.len() {
            match self.text(j) {
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
        self.toks.len() - 1
    }
}

/// Drops the tokens of every item, field, statement or expression under a `cfg` that needs
/// `test`; all of them if the file opens with `#![cfg(test)]`.
fn production(src: &str, all: &[Token]) -> Vec<Token> {
    let mut keep = Vec::with_capacity(all.len());
    let mut i = 0;
    while i < all.len() {
        let inner = all[i].is(src, "#") && all.get(i + 1).is_some_and(|t| t.is(src, "!"));
        let open = if inner { i + 2 } else { i + 1 };
        if all[i].is(src, "#") && all.get(open).is_some_and(|t| t.is(src, "[")) {
            let close = lex::matching(src, all, open);
            if cfg_needs_test(src, &all[open + 1..close]) {
                // `#![cfg(test)]` before any item makes the whole file test code; inside an
                // inline module it is left alone (counted as production: the safe side).
                let at_top = !all[..i].iter().any(|t| t.is(src, "{"));
                if inner && at_top {
                    return Vec::new();
                }
                if inner {
                    keep.push(all[i]);
                    i += 1;
                    continue;
                }
                i = item_end(src, all, close + 1);
                continue;
            }
        }
        keep.push(all[i]);
        i += 1;
    }
    keep
}

/// Whether an attribute's tokens (inside `#[…]`) are a `cfg` that holds only under `test`.
fn cfg_needs_test(src: &str, attr: &[Token]) -> bool {
    let words: Vec<&str> = attr.iter().map(|t| t.text(src)).collect();
    if words.first() != Some(&"cfg") || words.get(1) != Some(&"(") {
        return false;
    }
    needs_test(&words, &mut 2)
}

/// Reads one cfg predicate at `words[*i]` and says whether it requires `test`.
fn needs_test(words: &[&str], i: &mut usize) -> bool {
    let head = words.get(*i).copied().unwrap_or("");
    *i += 1;
    if words.get(*i) == Some(&"=") {
        *i += 2;
        return false;
    }
    if words.get(*i) != Some(&"(") {
        return head == "test";
    }
    *i += 1;
    let mut parts = Vec::new();
    while *i < words.len() && words[*i] != ")" {
        parts.push(needs_test(words, i));
        if words.get(*i) == Some(&",") {
            *i += 1;
        }
    }
    *i += 1;
    match head {
        "all" => parts.iter().any(|&p| p),
        "any" => !parts.is_empty() && parts.iter().all(|&p| p),
        _ => false,
    }
}

const ITEM_KEYWORDS: &[&str] = &[
    "fn",
    "impl",
    "struct",
    "enum",
    "trait",
    "mod",
    "use",
    "const",
    "static",
    "type",
    "union",
    "extern",
    "unsafe",
    "async",
    "macro_rules",
    "let",
];

/// The index just past the item (or field, statement, expression) starting at `from`, its
/// further attributes included.
fn item_end(src: &str, all: &[Token], from: usize) -> usize {
    let mut k = from;
    while all.get(k).is_some_and(|t| t.is(src, "#")) && all.get(k + 1).is_some_and(|t| t.is(src, "[")) {
        k = lex::matching(src, all, k + 1) + 1;
    }
    let mut lead = k;
    if all.get(lead).is_some_and(|t| t.is(src, "pub")) {
        lead += 1;
        if all.get(lead).is_some_and(|t| t.is(src, "(")) {
            lead = lex::matching(src, all, lead) + 1;
        }
    }
    let lead_word = all.get(lead).map_or("", |t| t.text(src));
    let item = ITEM_KEYWORDS.contains(&lead_word);
    let until_semicolon = matches!(lead_word, "const" | "static" | "type" | "let" | "use");
    let mut depth = 0i32;
    for j in k..all.len() {
        let t = all[j].text(src);
        if all[j].kind != Kind::Punct {
            continue;
        }
        match t {
            "(" | "[" | "{" => depth += 1,
            ")" | "]" | "}" if depth == 0 => return j,
            ")" | "]" | "}" => {
                depth -= 1;
                if depth == 0 && t == "}" && !until_semicolon {
                    let comma = !item && all.get(j + 1).is_some_and(|n| n.is(src, ","));
                    return j + 1 + usize::from(comma);
                }
            }
            ";" if depth == 0 => return j + 1,
            "," if depth == 0 && !item => return j + 1,
            _ => {}
        }
    }
    all.len()
}
