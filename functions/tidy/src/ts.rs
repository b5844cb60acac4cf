//! A TypeScript/JavaScript lexer for counting: comments are dropped; strings, template literals
//! (with their `${…}` code, nested templates included) and regex literals become one token each,
//! so their braces and slashes never reach the brace matcher.

/// What a token is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    Ident,
    /// A string, template or regex literal.
    Str,
    Num,
    /// `=>`, `?.` or a single punctuation character.
    Punct,
}

/// One token with its byte range and the lines it spans (1-based).
#[derive(Clone, Copy, Debug)]
pub struct Token {
    pub kind: Kind,
    pub start: usize,
    pub end: usize,
    pub line: usize,
    pub end_line: usize,
}

/// A lexed TypeScript or JavaScript file.
pub struct TsFile {
    pub path: String,
    pub src: String,
    pub toks: Vec<Token>,
}

impl TsFile {
    pub fn new(path: &str, src: &str) -> TsFile {
        let starts: Vec<usize> =
            std::iter::once(0).chain(src.match_indices('\n').map(|(i, _)| i + 1)).collect();
        let line_of = |at: usize| starts.partition_point(|&s| s <= at);
        let (raw, _) = lex(src.as_bytes(), 0, false);
        let toks = raw
            .into_iter()
            .map(|(kind, start, end)| Token {
                kind,
                start,
                end,
                line: line_of(start),
                end_line: line_of(end.saturating_sub(1).max(start)),
            })
            .collect();
        TsFile { path: path.to_string(), src: src.to_string(), toks }
    }

    pub fn text(&self, i: usize) -> &str {
        self.toks.get(i).map_or("", |t| &self.src[t.start..t.end])
    }

    pub fn is(&self, i: usize, s: &str) -> bool {
        self.toks.get(i).is_some_and(|t| t.kind != Kind::Str) && self.text(i) == s
    }

    pub fn ident(&self, i: usize) -> Option<&str> {
        self.toks.get(i).filter(|t| t.kind == Kind::Ident).map(|t| &self.src[t.start..t.end])
    }

    /// `code[line]`: whether that line holds a token.
    pub fn code(&self) -> Vec<bool> {
        let mut code = vec![false; self.src.lines().count() + 2];
        for t in &self.toks {
            for c in code.iter_mut().take(t.end_line + 1).skip(t.line) {
                *c = true;
            }
        }
        code
    }

    pub fn code_lines(&self) -> usize {
        self.code().iter().filter(|&&c| c).count()
    }

    /// The index of the token closing the bracket opened at `open`.
    pub fn matching(&self, open: usize) -> usize {
        let mut depth = 0i32;
        for j in open..self.toks.len() {
            if self.toks[j].kind != Kind::Punct {
                continue;
            }
            match self.text(j) {
                "(" | "[" | "{" => depth += 1,
                ")" | "]" | "}" => {
                    depth -= 1;
                    if depth == 0 {
                        return j;
                    }
                }
                _ => {}
            }
        }
        self.toks.len().saturating_sub(1)
    }
}

fn ident_char(c: u8) -> bool {
    c.is_ascii_alphanumeric() || c == b'_' || c == b'$' || c >= 0x80
}

/// Keywords after which a `/` starts a regex rather than a division.
const BEFORE_REGEX: &[&str] = &[
    "return",
    "typeof",
    "instanceof",
    "in",
    "of",
    "new",
    "delete",
    "void",
    "throw",
    "case",
    "do",
    "else",
    "yield",
    "await",
];

type Raw = (Kind, usize, usize);

/// Lexes from `i`; with `close`, stops after the `}` that closes a `${` (returning its end).
fn lex(b: &[u8], mut i: usize, close: bool) -> (Vec<Raw>, usize) {
    let mut out: Vec<Raw> = Vec::new();
    let mut depth = 0usize;
    while i < b.len() {
        let c = b[i];
        let next = b.get(i + 1).copied().unwrap_or(0);
        if c.is_ascii_whitespace() {
            i += 1;
        } else if c == b'/' && next == b'/' {
            i = b[i..].iter().position(|&c| c == b'\n').map_or(b.len(), |p| i + p);
        } else if c == b'/' && next == b'*' {
            i = find(b, i + 2, b"*/").map_or(b.len(), |p| p + 2);
        } else if c == b'"' || c == b'\'' {
            let end = quoted_end(b, i, c);
            out.push((Kind::Str, i, end));
            i = end;
        } else if c == b'`' {
            let end = template_end(b, i);
            out.push((Kind::Str, i, end));
            i = end;
        } else if c == b'/' && regex_allowed(b, &out) {
            let end = regex_end(b, i).unwrap_or(i + 1);
            out.push((if end > i + 1 { Kind::Str } else { Kind::Punct }, i, end));
            i = end;
        } else if c.is_ascii_digit() {
            let mut j = i + 1;
            while j < b.len()
                && (ident_char(b[j]) || (b[j] == b'.' && b.get(j + 1).is_some_and(u8::is_ascii_digit)))
            {
                j += 1;
            }
            out.push((Kind::Num, i, j));
            i = j;
        } else if ident_char(c) || c == b'#' {
            let mut j = i + 1;
            while j < b.len() && ident_char(b[j]) {
                j += 1;
            }
            out.push((Kind::Ident, i, j));
            i = j;
        } else {
            if close && c == b'}' && depth == 0 {
                return (out, i + 1);
            }
            match c {
                b'{' => depth += 1,
                b'}' => depth = depth.saturating_sub(1),
                _ => {}
            }
            let two = (c == b'=' && next == b'>') || (c == b'?' && next == b'.' && !next_is_digit(b, i + 2));
            let end = i + if two { 2 } else { 1 };
            out.push((Kind::Punct, i, end));
            i = end;
        }
    }
    (out, b.len())
}

fn next_is_digit(b: &[u8], i: usize) -> bool {
    b.get(i).is_some_and(u8::is_ascii_digit)
}

fn find(b: &[u8], from: usize, pat: &[u8]) -> Option<usize> {
    b.get(from..)?.windows(pat.len()).position(|w| w == pat).map(|p| from + p)
}

fn quoted_end(b: &[u8], open: usize, quote: u8) -> usize {
    let mut j = open + 1;
    while j < b.len() && b[j] != quote && b[j] != b'\n' {
        j += if b[j] == b'\\' { 2 } else { 1 };
    }
    (j + 1).min(b.len())
}

/// The end of the template literal opened at `open`, its `${…}` parts lexed as code.
fn template_end(b: &[u8], open: usize) -> usize {
    let mut j = open + 1;
    while j < b.len() {
        match b[j] {
            b'\\' => j += 2,
            b'`' => return j + 1,
            b'$' if b.get(j + 1) == Some(&b'{') => j = lex(b, j + 2, true).1,
            _ => j += 1,
        }
    }
    b.len()
}

fn regex_allowed(b: &[u8], out: &[Raw]) -> bool {
    let Some(&(kind, start, end)) = out.last() else { return true };
    let text = std::str::from_utf8(&b[start..end]).unwrap_or("");
    match kind {
        Kind::Punct => !matches!(text, ")" | "]" | "}"),
        Kind::Ident => BEFORE_REGEX.contains(&text),
        Kind::Str | Kind::Num => false,
    }
}

/// The end of a regex literal at `open` (flags included), or `None` if the line ends first.
fn regex_end(b: &[u8], open: usize) -> Option<usize> {
    let mut j = open + 1;
    let mut class = false;
    while j < b.len() {
        match b[j] {
            b'\n' => return None,
            b'\\' => j += 1,
            b'[' => class = true,
            b']' => class = false,
            b'/' if !class => {
                j += 1;
                while j < b.len() && b[j].is_ascii_alphabetic() {
                    j += 1;
                }
                return Some(j);
            }
            _ => {}
        }
        j += 1;
    }
    None
}
