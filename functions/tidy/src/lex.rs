//! A Rust lexer good enough to count and brace-match: comments are dropped, and strings
//! (including raw strings `r#"…"#`, byte and C strings) and char literals become one token each,
//! so a `{` or `//` inside them never reaches the brace matcher. A `'` starts a char literal
//! when a single (or escaped) char and a closing `'` follow, and a lifetime otherwise.

/// What a token is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    /// An identifier or keyword (`r#type` included).
    Ident,
    /// `'a`, `'static`, a loop label.
    Lifetime,
    /// A string literal of any kind, quotes and prefix included.
    Str,
    /// A char or byte literal.
    Char,
    /// A number literal, suffix included.
    Num,
    /// `::`, `->`, `=>`, `..` or a single punctuation character.
    Punct,
}

/// One token: its kind, byte range and the lines it spans (1-based).
#[derive(Clone, Copy, Debug)]
pub struct Token {
    pub kind: Kind,
    pub start: usize,
    pub end: usize,
    pub line: usize,
    pub end_line: usize,
}

impl Token {
    /// The token's text in `src`, the text it was lexed from.
    pub fn text<'a>(&self, src: &'a str) -> &'a str {
        &src[self.start..self.end]
    }

    /// Whether the token is the punctuation or identifier `s`.
    pub fn is(&self, src: &str, s: &str) -> bool {
        matches!(self.kind, Kind::Punct | Kind::Ident) && self.text(src) == s
    }
}

fn ident_char(c: u8) -> bool {
    c.is_ascii_alphanumeric() || c == b'_' || c >= 0x80
}

struct Lexer<'a> {
    b: &'a [u8],
    i: usize,
    line: usize,
    out: Vec<Token>,
}

impl Lexer<'_> {
    fn at(&self, k: usize) -> u8 {
        self.b.get(self.i + k).copied().unwrap_or(0)
    }

    /// Moves to `end`, counting the newlines passed.
    fn advance_to(&mut self, end: usize) {
        let end = end.min(self.b.len());
        self.line += self.b[self.i..end].iter().filter(|&&c| c == b'\n').count();
        self.i = end;
    }

    fn push(&mut self, kind: Kind, end: usize) {
        let (start, line) = (self.i, self.line);
        self.advance_to(end);
        self.out.push(Token { kind, start, end: self.i, line, end_line: self.line });
    }

    /// End of a quoted literal whose opening quote is at `open`, honouring `\` escapes.
    fn quoted_end(&self, open: usize, quote: u8) -> usize {
        let mut j = open + 1;
        while j < self.b.len() && self.b[j] != quote {
            j += if self.b[j] == b'\\' { 2 } else { 1 };
        }
        j + 1
    }

    /// End of a raw string whose `r` is at `r`, if one starts there (`r"…"`, `r#"…"#`).
    fn raw_end(&self, r: usize) -> Option<usize> {
        let mut j = r + 1;
        while self.b.get(j) == Some(&b'#') {
            j += 1;
        }
        if self.b.get(j) != Some(&b'"') {
            return None;
        }
        let hashes = j - r - 1;
        let mut k = j + 1;
        while k < self.b.len() {
            if self.b[k] == b'"'
                && self.b[k + 1..].iter().take(hashes).filter(|&&c| c == b'#').count() == hashes
            {
                return Some(k + 1 + hashes);
            }
            k += 1;
        }
        Some(self.b.len())
    }

    /// A string literal with an optional `b`/`c`/`r` prefix starting here, as its end.
    fn prefixed_literal(&self) -> Option<(Kind, usize)> {
        let (c0, c1) = (self.at(0), self.at(1));
        let prefix = if matches!(c0, b'b' | b'c') && c1 == b'r' { 2 } else { 1 };
        let raw_at = if c0 == b'r' { Some(self.i) } else { (prefix == 2).then_some(self.i + 1) };
        if let Some(r) = raw_at {
            return self.raw_end(r).map(|e| (Kind::Str, e));
        }
        match (c0, c1) {
            (b'b' | b'c', b'"') => Some((Kind::Str, self.quoted_end(self.i + 1, b'"'))),
            (b'b', b'\'') => Some((Kind::Char, self.quoted_end(self.i + 1, b'\''))),
            _ => None,
        }
    }

    /// At a `'`: a char literal or a lifetime.
    fn quote(&mut self) {
        if self.at(1) == b'\\' {
            let end = self.quoted_end(self.i, b'\'');
            return self.push(Kind::Char, end);
        }
        // The UTF-8 length of the char after the quote, from its first byte.
        let len = match self.at(1) {
            0xf0.. => 4,
            0xe0.. => 3,
            0xc0.. => 2,
            _ => 1,
        };
        if self.b.get(self.i + 1 + len) == Some(&b'\'') {
            return self.push(Kind::Char, self.i + 2 + len);
        }
        let mut j = self.i + 1;
        while j < self.b.len() && ident_char(self.b[j]) {
            j += 1;
        }
        self.push(Kind::Lifetime, j);
    }

    fn number(&mut self) {
        let hex = self.at(0) == b'0' && matches!(self.at(1), b'x' | b'o' | b'b');
        let mut j = self.i + 1;
        while j < self.b.len() {
            let c = self.b[j];
            let next = self.b.get(j + 1).copied().unwrap_or(0);
            let exponent_sign = !hex && matches!(c, b'+' | b'-') && matches!(self.b[j - 1], b'e' | b'E');
            if ident_char(c) || (c == b'.' && next.is_ascii_digit()) || exponent_sign {
                j += 1;
            } else {
                break;
            }
        }
        self.push(Kind::Num, j);
    }

    fn skip_block_comment(&mut self) {
        let mut depth = 0;
        let mut j = self.i;
        while j < self.b.len() {
            if self.b[j] == b'/' && self.b.get(j + 1) == Some(&b'*') {
                depth += 1;
                j += 2;
            } else if self.b[j] == b'*' && self.b.get(j + 1) == Some(&b'/') {
                depth -= 1;
                j += 2;
                if depth == 0 {
                    break;
                }
            } else {
                j += 1;
            }
        }
        self.advance_to(j);
    }

    fn step(&mut self) {
        let c = self.at(0);
        match c {
            b'\n' => self.advance_to(self.i + 1),
            _ if c.is_ascii_whitespace() => self.i += 1,
            b'/' if self.at(1) == b'/' => {
                let end =
                    self.b[self.i..].iter().position(|&c| c == b'\n').map_or(self.b.len(), |p| self.i + p);
                self.i = end;
            }
            b'/' if self.at(1) == b'*' => self.skip_block_comment(),
            b'"' => self.push(Kind::Str, self.quoted_end(self.i, b'"')),
            b'\'' => self.quote(),
            b'0'..=b'9' => self.number(),
            _ if ident_char(c) => {
                if let Some((kind, end)) = self.prefixed_literal() {
                    return self.push(kind, end);
                }
                let raw = c == b'r' && self.at(1) == b'#' && ident_char(self.at(2));
                let mut j = self.i + if raw { 2 } else { 1 };
                while j < self.b.len() && ident_char(self.b[j]) {
                    j += 1;
                }
                self.push(Kind::Ident, j);
            }
            _ => {
                let pair = [c, self.at(1)];
                let two = matches!(&pair, b"::" | b"->" | b"=>" | b"..");
                self.push(Kind::Punct, self.i + if two { 2 } else { 1 });
            }
        }
    }
}

/// The tokens of `src`, comments left out.
pub fn tokens(src: &str) -> Vec<Token> {
    let mut lx = Lexer { b: src.as_bytes(), i: 0, line: 1, out: Vec::new() };
    while lx.i < lx.b.len() {
        lx.step();
    }
    lx.out
}

/// The index of the token closing the bracket opened at `open` (`(`, `[` or `{`), counting all
/// three kinds; the last token if it is never closed.
pub fn matching(src: &str, toks: &[Token], open: usize) -> usize {
    let mut depth = 0i64;
    for (j, t) in toks.iter().enumerate().skip(open) {
        if t.kind != Kind::Punct {
            continue;
        }
        match t.text(src) {
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
    toks.len().saturating_sub(1)
}

/// The value of an integer literal (`0xCBF2_9CE4`, `1_000u64`), if it is one.
pub fn int_value(text: &str) -> Option<u128> {
    let t: String = text.chars().filter(|&c| c != '_').collect::<String>().to_ascii_lowercase();
    let (radix, digits) = match t.get(..2) {
        Some("0x") => (16, &t[2..]),
        Some("0o") => (8, &t[2..]),
        Some("0b") => (2, &t[2..]),
        _ => (10, t.as_str()),
    };
    let end = digits.find(|c: char| !c.is_digit(radix)).unwrap_or(digits.len());
    let suffix = &digits[end..];
    let known =
        ["", "n", "u8", "u16", "u32", "u64", "u128", "usize", "i8", "i16", "i32", "i64", "i128", "isize"];
    if end == 0 || !known.contains(&suffix) {
        return None;
    }
    u128::from_str_radix(&digits[..end], radix).ok()
}
