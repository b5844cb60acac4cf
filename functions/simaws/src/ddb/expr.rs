//! DynamoDB's expression language, parsed: condition (and filter and key condition) expressions,
//! update expressions and projections, with `#name` / `:value` placeholders resolved at parse
//! time. Evaluation lives in [`super::eval`].

use super::value::Av;
use crate::error::ApiError;
use std::cell::RefCell;
use std::collections::{BTreeMap, BTreeSet};

/// One step of a document path: a map key (or top-level attribute) or a list index.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) enum Elem {
    Attr(String),
    Index(usize),
}

pub(crate) type Path = Vec<Elem>;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Op {
    Eq,
    Ne,
    Lt,
    Le,
    Gt,
    Ge,
}

/// A value a condition compares.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Operand {
    Path(Path),
    Value(Av),
    Size(Path),
}

#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Cond {
    Cmp(Operand, Op, Operand),
    Between(Operand, Operand, Operand),
    In(Operand, Vec<Operand>),
    And(Box<Cond>, Box<Cond>),
    Or(Box<Cond>, Box<Cond>),
    Not(Box<Cond>),
    Exists(Path),
    NotExists(Path),
    Type(Path, Operand),
    BeginsWith(Operand, Operand),
    Contains(Operand, Operand),
}

/// An operand of a `SET` action.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum SetOp {
    Path(Path),
    Value(Av),
    IfNotExists(Path, Box<SetOp>),
    ListAppend(Box<SetOp>, Box<SetOp>),
}

#[derive(Debug, Clone, PartialEq)]
pub(crate) enum SetVal {
    One(SetOp),
    Plus(SetOp, SetOp),
    Minus(SetOp, SetOp),
}

/// A parsed update expression.
#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) struct Update {
    pub(crate) set: Vec<(Path, SetVal)>,
    pub(crate) remove: Vec<Path>,
    pub(crate) add: Vec<(Path, Av)>,
    pub(crate) delete: Vec<(Path, Av)>,
}

/// A request's `ExpressionAttributeNames` / `Values`, and which of them its expressions used:
/// DynamoDB refuses a request that supplies one no expression uses.
#[derive(Debug, Default)]
pub(crate) struct Placeholders {
    names: BTreeMap<String, String>,
    values: BTreeMap<String, Av>,
    used_names: RefCell<BTreeSet<String>>,
    used_values: RefCell<BTreeSet<String>>,
}

impl Placeholders {
    pub(crate) fn from_request(req: &serde_json::Value) -> Result<Placeholders, ApiError> {
        let mut p = Placeholders::default();
        if let Some(n) = req.get("ExpressionAttributeNames").and_then(|v| v.as_object()) {
            for (k, v) in n {
                let v = v
                    .as_str()
                    .ok_or_else(|| ApiError::validation("ExpressionAttributeNames values must be strings"))?;
                p.names.insert(k.clone(), v.to_string());
            }
        }
        if let Some(n) = req.get("ExpressionAttributeValues").and_then(|v| v.as_object()) {
            for (k, v) in n {
                p.values.insert(k.clone(), Av::from_json(v)?);
            }
        }
        Ok(p)
    }

    fn name(&self, ph: &str) -> Result<String, ApiError> {
        self.used_names.borrow_mut().insert(ph.to_string());
        self.names.get(ph).cloned().ok_or_else(|| {
            ApiError::validation(format!(
                "Value provided in ExpressionAttributeNames unused in expressions or an expression attribute name was used that was not defined: attribute name: {ph}"
            ))
        })
    }

    fn value(&self, ph: &str) -> Result<Av, ApiError> {
        self.used_values.borrow_mut().insert(ph.to_string());
        self.values.get(ph).cloned().ok_or_else(|| {
            ApiError::validation(format!(
                "Invalid expression: An expression attribute value used in expression is not defined; attribute value: {ph}"
            ))
        })
    }

    /// After every expression of the request is parsed: all supplied placeholders were used.
    pub(crate) fn check_all_used(&self) -> Result<(), ApiError> {
        let used = self.used_names.borrow();
        if let Some(k) = self.names.keys().find(|k| !used.contains(*k)) {
            return Err(ApiError::validation(format!(
                "Value provided in ExpressionAttributeNames unused in expressions: keys: {{{k}}}"
            )));
        }
        let used = self.used_values.borrow();
        if let Some(k) = self.values.keys().find(|k| !used.contains(*k)) {
            return Err(ApiError::validation(format!(
                "Value provided in ExpressionAttributeValues unused in expressions: keys: {{{k}}}"
            )));
        }
        Ok(())
    }
}

#[derive(Debug, Clone, PartialEq)]
enum Tok {
    Word(String),
    Name(String),
    Value(String),
    Int(usize),
    LParen,
    RParen,
    LBrack,
    RBrack,
    Comma,
    Dot,
    Cmp(Op),
    Plus,
    Minus,
}

fn lex(s: &str, what: &str) -> Result<Vec<Tok>, ApiError> {
    let err = |m: String| ApiError::validation(format!("Invalid {what}: {m}"));
    let b = s.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    let word = |i: usize| {
        let mut j = i;
        while j < b.len() && (b[j].is_ascii_alphanumeric() || b[j] == b'_' || b[j] == b'-' && j > i) {
            j += 1;
        }
        j
    };
    while i < b.len() {
        let c = b[i];
        let (tok, next) = match c {
            b' ' | b'\t' | b'\n' | b'\r' => {
                i += 1;
                continue;
            }
            b'(' => (Tok::LParen, i + 1),
            b')' => (Tok::RParen, i + 1),
            b'[' => (Tok::LBrack, i + 1),
            b']' => (Tok::RBrack, i + 1),
            b',' => (Tok::Comma, i + 1),
            b'.' => (Tok::Dot, i + 1),
            b'+' => (Tok::Plus, i + 1),
            b'-' => (Tok::Minus, i + 1),
            b'=' => (Tok::Cmp(Op::Eq), i + 1),
            b'<' if b.get(i + 1) == Some(&b'>') => (Tok::Cmp(Op::Ne), i + 2),
            b'<' if b.get(i + 1) == Some(&b'=') => (Tok::Cmp(Op::Le), i + 2),
            b'<' => (Tok::Cmp(Op::Lt), i + 1),
            b'>' if b.get(i + 1) == Some(&b'=') => (Tok::Cmp(Op::Ge), i + 2),
            b'>' => (Tok::Cmp(Op::Gt), i + 1),
            b'#' | b':' => {
                let j = word(i + 1);
                if j == i + 1 {
                    return Err(err(format!("Syntax error; token: \"{}\", near: \"{s}\"", c as char)));
                }
                let t = s[i..j].to_string();
                (if c == b'#' { Tok::Name(t) } else { Tok::Value(t) }, j)
            }
            c if c.is_ascii_digit() => {
                let mut j = i;
                while j < b.len() && b[j].is_ascii_digit() {
                    j += 1;
                }
                (Tok::Int(s[i..j].parse().map_err(|_| err(format!("bad list index near: \"{s}\"")))?), j)
            }
            c if c.is_ascii_alphabetic() || c == b'_' => {
                let mut j = i;
                while j < b.len() && (b[j].is_ascii_alphanumeric() || b[j] == b'_') {
                    j += 1;
                }
                (Tok::Word(s[i..j].to_string()), j)
            }
            _ => return Err(err(format!("Syntax error; token: \"{}\", near: \"{s}\"", c as char))),
        };
        out.push(tok);
        i = next;
    }
    Ok(out)
}

struct Parser<'a> {
    toks: Vec<Tok>,
    pos: usize,
    ph: &'a Placeholders,
    what: &'static str,
    text: &'a str,
}

impl<'a> Parser<'a> {
    fn new(text: &'a str, what: &'static str, ph: &'a Placeholders) -> Result<Parser<'a>, ApiError> {
        if text.trim().is_empty() {
            return Err(ApiError::validation(format!("Invalid {what}: The expression can not be empty;")));
        }
        Ok(Parser { toks: lex(text, what)?, pos: 0, ph, what, text })
    }

    fn err(&self, m: &str) -> ApiError {
        let near = self.toks.get(self.pos).map(|t| format!("{t:?}")).unwrap_or_else(|| "<end>".into());
        ApiError::validation(format!(
            "Invalid {}: Syntax error; {m}; token: {near}, expression: \"{}\"",
            self.what, self.text
        ))
    }

    fn peek(&self) -> Option<&Tok> {
        self.toks.get(self.pos)
    }

    fn keyword(&self, k: &str) -> bool {
        matches!(self.peek(), Some(Tok::Word(w)) if w.eq_ignore_ascii_case(k))
    }

    fn eat(&mut self, t: &Tok) -> bool {
        if self.peek() == Some(t) {
            self.pos += 1;
            true
        } else {
            false
        }
    }

    fn expect(&mut self, t: Tok) -> Result<(), ApiError> {
        if self.eat(&t) {
            Ok(())
        } else {
            Err(self.err(&format!("expected {t:?}")))
        }
    }

    fn done(&self) -> Result<(), ApiError> {
        match self.peek() {
            None => Ok(()),
            Some(_) => Err(self.err("unexpected token")),
        }
    }

    fn path(&mut self) -> Result<Path, ApiError> {
        let mut p = vec![Elem::Attr(self.path_name()?)];
        loop {
            if self.eat(&Tok::Dot) {
                p.push(Elem::Attr(self.path_name()?));
            } else if self.eat(&Tok::LBrack) {
                match self.peek().cloned() {
                    Some(Tok::Int(n)) => {
                        self.pos += 1;
                        p.push(Elem::Index(n));
                    }
                    _ => return Err(self.err("expected a list index")),
                }
                self.expect(Tok::RBrack)?;
            } else {
                return Ok(p);
            }
        }
    }

    fn path_name(&mut self) -> Result<String, ApiError> {
        match self.peek().cloned() {
            Some(Tok::Name(n)) => {
                self.pos += 1;
                self.ph.name(&n)
            }
            Some(Tok::Word(w)) => {
                self.pos += 1;
                Ok(w)
            }
            _ => Err(self.err("expected an attribute name")),
        }
    }

    fn value(&mut self) -> Result<Av, ApiError> {
        match self.peek().cloned() {
            Some(Tok::Value(v)) => {
                self.pos += 1;
                self.ph.value(&v)
            }
            _ => Err(self.err("expected an expression attribute value")),
        }
    }

    fn is_call(&self, f: &str) -> bool {
        self.keyword(f) && self.toks.get(self.pos + 1) == Some(&Tok::LParen)
    }

    fn operand(&mut self) -> Result<Operand, ApiError> {
        if self.is_call("size") {
            self.pos += 2;
            let p = self.path()?;
            self.expect(Tok::RParen)?;
            return Ok(Operand::Size(p));
        }
        if matches!(self.peek(), Some(Tok::Value(_))) {
            return Ok(Operand::Value(self.value()?));
        }
        Ok(Operand::Path(self.path()?))
    }

    fn or(&mut self) -> Result<Cond, ApiError> {
        let mut c = self.and()?;
        while self.keyword("OR") {
            self.pos += 1;
            c = Cond::Or(Box::new(c), Box::new(self.and()?));
        }
        Ok(c)
    }

    fn and(&mut self) -> Result<Cond, ApiError> {
        let mut c = self.not()?;
        while self.keyword("AND") {
            self.pos += 1;
            c = Cond::And(Box::new(c), Box::new(self.not()?));
        }
        Ok(c)
    }

    fn not(&mut self) -> Result<Cond, ApiError> {
        if self.keyword("NOT") {
            self.pos += 1;
            return Ok(Cond::Not(Box::new(self.not()?)));
        }
        self.primary()
    }

    fn primary(&mut self) -> Result<Cond, ApiError> {
        if self.eat(&Tok::LParen) {
            let c = self.or()?;
            self.expect(Tok::RParen)?;
            return Ok(c);
        }
        for f in ["attribute_exists", "attribute_not_exists", "attribute_type", "begins_with", "contains"] {
            if self.is_call(f) {
                self.pos += 2;
                return self.function(f);
            }
        }
        let a = self.operand()?;
        match self.peek().cloned() {
            Some(Tok::Cmp(op)) => {
                self.pos += 1;
                Ok(Cond::Cmp(a, op, self.operand()?))
            }
            Some(Tok::Word(w)) if w.eq_ignore_ascii_case("BETWEEN") => {
                self.pos += 1;
                let lo = self.operand()?;
                if !self.keyword("AND") {
                    return Err(self.err("expected AND in BETWEEN"));
                }
                self.pos += 1;
                Ok(Cond::Between(a, lo, self.operand()?))
            }
            Some(Tok::Word(w)) if w.eq_ignore_ascii_case("IN") => {
                self.pos += 1;
                self.expect(Tok::LParen)?;
                let mut list = vec![self.operand()?];
                while self.eat(&Tok::Comma) {
                    list.push(self.operand()?);
                }
                self.expect(Tok::RParen)?;
                if list.len() > 100 {
                    return Err(self.err("IN takes at most 100 operands"));
                }
                Ok(Cond::In(a, list))
            }
            _ => Err(self.err("expected a comparator, BETWEEN or IN")),
        }
    }

    fn function(&mut self, f: &str) -> Result<Cond, ApiError> {
        let c = match f {
            "attribute_exists" => Cond::Exists(self.path()?),
            "attribute_not_exists" => Cond::NotExists(self.path()?),
            "attribute_type" => {
                let p = self.path()?;
                self.expect(Tok::Comma)?;
                Cond::Type(p, self.operand()?)
            }
            _ => {
                let a = self.operand()?;
                self.expect(Tok::Comma)?;
                let b = self.operand()?;
                if f == "begins_with" {
                    Cond::BeginsWith(a, b)
                } else {
                    Cond::Contains(a, b)
                }
            }
        };
        self.expect(Tok::RParen)?;
        Ok(c)
    }

    fn set_op(&mut self) -> Result<SetOp, ApiError> {
        if self.is_call("if_not_exists") {
            self.pos += 2;
            let p = self.path()?;
            self.expect(Tok::Comma)?;
            let v = self.set_op()?;
            self.expect(Tok::RParen)?;
            return Ok(SetOp::IfNotExists(p, Box::new(v)));
        }
        if self.is_call("list_append") {
            self.pos += 2;
            let a = self.set_op()?;
            self.expect(Tok::Comma)?;
            let b = self.set_op()?;
            self.expect(Tok::RParen)?;
            return Ok(SetOp::ListAppend(Box::new(a), Box::new(b)));
        }
        if matches!(self.peek(), Some(Tok::Value(_))) {
            return Ok(SetOp::Value(self.value()?));
        }
        Ok(SetOp::Path(self.path()?))
    }

    fn set_val(&mut self) -> Result<SetVal, ApiError> {
        let a = self.set_op()?;
        if self.eat(&Tok::Plus) {
            return Ok(SetVal::Plus(a, self.set_op()?));
        }
        if self.eat(&Tok::Minus) {
            return Ok(SetVal::Minus(a, self.set_op()?));
        }
        Ok(SetVal::One(a))
    }

    fn update(&mut self) -> Result<Update, ApiError> {
        let mut u = Update::default();
        let mut seen = BTreeSet::new();
        while let Some(Tok::Word(w)) = self.peek().cloned() {
            let clause = w.to_ascii_uppercase();
            if !matches!(clause.as_str(), "SET" | "REMOVE" | "ADD" | "DELETE") {
                break;
            }
            if !seen.insert(clause.clone()) {
                return Err(ApiError::validation(format!(
                    "Invalid UpdateExpression: The \"{clause}\" section can only be used once in an update expression;"
                )));
            }
            self.pos += 1;
            loop {
                match clause.as_str() {
                    "SET" => {
                        let p = self.path()?;
                        self.expect(Tok::Cmp(Op::Eq))?;
                        u.set.push((p, self.set_val()?));
                    }
                    "REMOVE" => u.remove.push(self.path()?),
                    "ADD" => u.add.push((self.path()?, self.value()?)),
                    _ => u.delete.push((self.path()?, self.value()?)),
                }
                if !self.eat(&Tok::Comma) {
                    break;
                }
            }
        }
        if seen.is_empty() {
            return Err(self.err("expected SET, REMOVE, ADD or DELETE"));
        }
        self.done()?;
        Ok(u)
    }
}

/// Parses a condition, filter or key condition expression.
pub(crate) fn condition(text: &str, what: &'static str, ph: &Placeholders) -> Result<Cond, ApiError> {
    let mut p = Parser::new(text, what, ph)?;
    let c = p.or()?;
    p.done()?;
    Ok(c)
}

/// Parses an update expression.
pub(crate) fn update(text: &str, ph: &Placeholders) -> Result<Update, ApiError> {
    Parser::new(text, "UpdateExpression", ph)?.update()
}

/// Parses a projection expression.
pub(crate) fn projection(text: &str, ph: &Placeholders) -> Result<Vec<Path>, ApiError> {
    let mut p = Parser::new(text, "ProjectionExpression", ph)?;
    let mut out = vec![p.path()?];
    while p.eat(&Tok::Comma) {
        out.push(p.path()?);
    }
    p.done()?;
    Ok(out)
}

/// `a.b[2]` as DynamoDB prints a path in its messages.
pub(crate) fn show(p: &Path) -> String {
    let mut s = String::new();
    for (i, e) in p.iter().enumerate() {
        match e {
            Elem::Attr(a) if i == 0 => s.push_str(a),
            Elem::Attr(a) => {
                s.push('.');
                s.push_str(a);
            }
            Elem::Index(n) => s.push_str(&format!("[{n}]")),
        }
    }
    s
}
